//! The encode pipeline, HF `tokenizers` semantics:
//! added tokens (raw) -> normalizer -> added tokens (normalized) -> pre-tokenizer -> BPE model
//! -> truncation -> post-processor -> padding, and the way back (decoders).
//!
//! Loaded from the text of an HF `tokenizer.json` (the supported subset; anything else is an error
//! that names the section and the type, e.g. "unsupported decoder type 'Metaspace'").
//!
//! Offsets are byte offsets into the ORIGINAL text (the Python binding converts them to chars).
//! How a token's offsets are found, step by step:
//! 1. the model reports each token's range in the word (bytes of the word string, or raw bytes on
//!    the byte-level fast path);
//! 2. for ByteLevel, a range of mapped chars is a range of raw bytes of the piece; it is widened to
//!    whole chars, because HF aligns every byte of a char to the whole char (so two tokens that
//!    split one multi-byte char both report the whole char). The prefix space that
//!    `add_prefix_space` inserts is aligned to the first char of the text;
//! 3. the normalizer's alignment maps normalized bytes back to original bytes
//!    (see `normalize.rs` for how compositions and removals align).
//!
//! Known differences from HF (all outside typical text; the parity tests skip or document them):
//! - Unicode data: our normalizers use Unicode 16 tables, HF's are older, so chars assigned or
//!   re-categorised since (e.g. U+11D3A, U+1715 became marks) can normalize differently;
//! - `single_word` tests word chars with Rust's `char::is_alphanumeric` plus marks, `_` and joiners,
//!   an approximation of HF's regex `\w`;
//! - `sequence_ids` of overflowing parts: HF reports 0 for every token there (it drops the ranges
//!   when truncating), we report the real 0 / 1 / None;
//! - dropout draws from our seeded RNG (HF's is not seedable), so only its distribution compares;
//! - where HF panics (truncation stride >= the room left), we return an error;
//! - `Precompiled` cuts text into grapheme clusters with `unicode-segmentation`, as HF; its Unicode tables may be newer than HF's build's.
//!
//! Supported components: normalizers of `normalize.rs`; pre-tokenizers of `pretok.rs` (a Sequence
//! of one is unwrapped; longer ones as `PreTokenizer::sequence` allows) or none; models of `model.rs` (BPE, WordPiece, Unigram);
//! post-processors of `postprocess.rs`; decoders of `decode.rs`. Single sequences and pairs.
//! Unigram models and the Metaspace pre-tokenizer take the word loop of `tokenizer/ranged.rs`.
//!
//! Performance notes (profiled with `perf` on gutenberg_en_20M, byte-level BPE 32k)
//! - `encode_ids` (the ids-only path) never builds offsets, token strings or alignments, and on
//!   byte-level models feeds raw piece bytes straight into the model's thread-local word cache;
//!   the remaining cost is the pre-tokenizer scan plus one hash lookup per piece.
//! - Batches run on rayon's pool in tasks of at least `BATCH_GRAIN` texts (corpus lines are
//!   short; one task per line spent more time in rayon than in BPE). Nothing is shared mutably: the
//!   word caches are thread-local.
//! - Token strings are table indices (see `encoding.rs`), so an Encoding costs seven flat vectors
//!   and no per-token allocation.
//! - On the Python side (py/tokenizer.rs) the input strings are read in place, Encodings convert
//!   fields lazily, and the cyclic GC is paused while id lists are built: before that change,
//!   generational collections triggered by the new lists took half of `encode_batch_ids`.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::added::{AddedToken, AddedVocab, Piece};
use crate::batch_text::BatchText;
use crate::bpe::encode::{BpeModel, BpeOptions, Sym, PRELOAD_FROM_BYTES};
use crate::decode::Decoder;
use crate::encoding::{Direction, Encoding, Padding, TokenTable, Truncation, EXTRA_BIT};
use crate::model::Model;
use crate::normalize::Normalizer;
use crate::parallel::parallel_allowed;
use crate::postprocess::{get_bool, PostProcessor, TemplatePiece};
use crate::pretok::PreTokenizer;

mod ranged;
pub mod sentencepiece;

// ==== Tokenizer ====

/// The full pipeline.
#[derive(Debug, Clone)]
pub struct Tokenizer {
    normalizer: Option<Normalizer>,
    pre_tokenizer: Option<PreTokenizer>,
    model: Model,
    post: Option<PostProcessor>,
    decoder: Option<Decoder>,
    added: AddedVocab,
    /// Token-table index of every added token.
    added_index: Vec<u32>,
    /// Template special tokens resolved to (id, token index), by name.
    template_idx: HashMap<String, Vec<(u32, u32)>>,
    table: Arc<TokenTable>,
    /// Leading/trailing "space" chars (Ġ or whitespace) per table entry, for ByteLevel trimming.
    trim_counts: Arc<Vec<(u16, u16)>>,
    special_contents: std::collections::HashSet<String>,
    truncation: Option<Truncation>,
    padding: Option<Padding>,
    /// Token index of the pad token.
    pad_index: u32,
    /// Special ids the post-processor puts before and after a single sequence, when it is a plain
    /// frame (None: the ids-only path must run the full pipeline).
    single_frame: Option<(Vec<u32>, Vec<u32>)>,
    fast_bytes: bool,
}

/// `items.map(f)` on rayon's pool (in tasks of at least `BATCH_GRAIN` items), or on this thread in a
/// forked child or with a one-thread pool ([`crate::parallel::parallel_useful`]).
fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync + Send) -> Vec<R> {
    if crate::parallel::parallel_useful() {
        par_map_chunks(items, |chunk| chunk.iter().map(&f).collect::<Vec<R>>()).into_iter().flatten().collect()
    } else {
        items.iter().map(f).collect()
    }
}

/// `f` over consecutive chunks of `BATCH_GRAIN` items, in parallel when that can help.
fn par_map_chunks<T: Sync, R: Send>(items: &[T], f: impl Fn(&[T]) -> R + Sync + Send) -> Vec<R> {
    if crate::parallel::parallel_useful() {
        let chunks: Vec<&[T]> = items.chunks(BATCH_GRAIN).collect();
        crate::parallel::claim_map(chunks.len(), rayon::current_num_threads() - 1, |i| f(chunks[i]))
    } else {
        items.chunks(BATCH_GRAIN).map(f).collect()
    }
}

/// Smallest number of texts a rayon task handles: lines are short, and per-task overhead would
/// otherwise dominate.
const BATCH_GRAIN: usize = 64;

/// Smallest part of one long text encoded on its own (see `words_ids`). The parts are taken one by one
/// by the calling thread and the pool's other threads ([`crate::parallel::claim_map`]), each part against
/// its thread's word cache; words one thread computed reach the others through the shared word cache
/// (`bpe/shared_words.rs`). When the parts went to the pool's workers alone, two threads lost to one on
/// 0.3 MB (86-111 MB/s against 138-146, session 40): a worker asleep woke late, and the parts often ran
/// one after the other on a single worker. With the caller taking parts from the start, a fresh 0.3 MB
/// English slice at two threads took 2.34 ms (median) against 3.08 (cl100k, 64 MB written before each
/// call; benchmarks/RESULTS.md, session 42).
const PAR_PART_BYTES: usize = 32 * 1024;

/// `text` cut into parts of about `target` bytes, each cut right after a `\n` that has a printable
/// ASCII char (not `/` after it) or a CJK ideograph on both sides. For the pre-tokenizers of
/// [`PreTokenizer::cuts_after_newline`] every piece of the whole text then lies in one part and each
/// part gives the same pieces alone: no alternative of those patterns lets a newline join a letter,
/// digit or punctuation after it (the optional word prefix excludes `\r \n`, the space prefix is a
/// space), and with a non-space before it the newline ends its piece both inside the text
/// (`\s*[\r\n]`, `\s+`, or the `[\r\n]*` tail of punctuation) and at the end of a part (`\s++$`,
/// `\s+(?!\S)`, the same tail). A part with no such newline stays whole.
fn newline_cuts(text: &str, target: usize) -> Vec<&str> {
    let b = text.as_bytes();
    let graphic = |c: u8| (0x21..=0x7e).contains(&c);
    let cjk_lead = |c: u8| (0xe4..=0xe9).contains(&c); // U+4000..U+9FFF: CJK ideographs (3 bytes)
    let mut parts = Vec::new();
    let mut start = 0;
    while text.len() - start > target + target / 2 {
        let from = start + target;
        let cut = memchr::memchr_iter(b'\n', &b[from..]).map(|i| from + i).find(|&i| {
            let before = graphic(b[i - 1]) || (i >= 3 && cjk_lead(b[i - 3]) && b[i - 1] >= 0x80);
            // Not `/`: o200k's punctuation alternative takes `[\r\n/]*` after it.
            let after = b.get(i + 1).is_some_and(|&c| (graphic(c) && c != b'/') || cjk_lead(c));
            before && after
        });
        match cut {
            Some(i) => {
                parts.push(&text[start..i + 1]);
                start = i + 1;
            }
            None => break,
        }
    }
    parts.push(&text[start..]);
    parts
}

/// Numbers the batch calls that preload the BPE tables ([`Tokenizer::preload_once`]); 0 is never used.
static BATCH_CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

thread_local! {
    /// The batch call this thread last preloaded the BPE tables for.
    static PRELOADED_FOR: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Byte length of the first char of `t` (0 when empty).
fn first_char_len(t: &str) -> usize {
    t.chars().next().map_or(0, |c| c.len_utf8())
}

fn floor_boundary(t: &str, mut i: usize) -> usize {
    if i >= t.len() {
        return t.len();
    }
    while i > 0 && !t.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// End of the char that contains byte `i`.
fn char_end_at(t: &str, i: usize) -> usize {
    if i >= t.len() {
        return t.len();
    }
    let mut j = i + 1;
    while j < t.len() && !t.is_char_boundary(j) {
        j += 1;
    }
    j
}

fn count_space_chars(s: &str) -> (u16, u16) {
    let is_sp = |c: &char| *c == '\u{120}' || c.is_whitespace();
    let lead = s.chars().take_while(is_sp).count() as u16;
    let trail = s.chars().rev().take_while(is_sp).count() as u16;
    (lead, trail)
}

fn parse_direction(v: Option<&Value>) -> Result<Direction, String> {
    match v.and_then(|x| x.as_str()) {
        None => Ok(Direction::Right),
        Some(s) => Direction::parse(s),
    }
}

/// One chunk of an ids-only batch: (all ids of its texts, id count per text).
pub type FlatChunk = (Vec<u32>, Vec<u32>);

impl Tokenizer {
    /// Parses the text of an HF tokenizer.json.
    pub fn from_json_str(s: &str) -> Result<Self, String> {
        let v: Value = serde_json::from_str(s).map_err(|e| format!("tokenizer.json: invalid JSON: {e}"))?;
        Self::from_json(&v)
    }

    pub fn from_json(v: &Value) -> Result<Self, String> {
        Self::from_json_with(v, None)
    }

    /// Like [`Self::from_json`], with the model's data (vocab, merges) given apart from the
    /// document, whose model section then only supplies the options (see `io/`).
    pub fn from_parts(skeleton: &str, data: crate::io::ModelData) -> Result<Self, String> {
        let v: Value =
            serde_json::from_str(skeleton).map_err(|e| format!("tokenizer.json: invalid JSON: {e}"))?;
        Self::from_json_with(&v, Some(data))
    }

    fn from_json_with(v: &Value, data: Option<crate::io::ModelData>) -> Result<Self, String> {
        let section = |k: &str| v.get(k).filter(|x| !x.is_null());
        let normalizer = section("normalizer").map(Normalizer::from_json).transpose()?;
        let pre_tokenizer = match section("pre_tokenizer").map(PreTokenizer::from_json).transpose()? {
            Some(PreTokenizer::Sequence(v)) if v.is_empty() => None,
            other => other,
        };
        let model_v = section("model").ok_or("tokenizer.json: missing 'model'")?;
        let model = match data {
            None => Model::from_json(model_v)?,
            Some(d) => Model::from_options_and_data(model_v, d)?,
        };
        let post = section("post_processor").map(PostProcessor::from_json).transpose()?;
        let decoder = section("decoder").map(Decoder::from_json).transpose()?;
        let added: Vec<AddedToken> = match section("added_tokens") {
            None => Vec::new(),
            Some(a) => a
                .as_array()
                .ok_or("added_tokens must be a list")?
                .iter()
                .map(AddedToken::from_json)
                .collect::<Result<_, _>>()?,
        };
        let mut tok = Tokenizer::new(model, normalizer, pre_tokenizer, post, decoder, added)?;
        if let Some(t) = section("truncation") {
            let max_length =
                t.get("max_length").and_then(|x| x.as_u64()).ok_or("truncation: missing max_length")? as usize;
            tok.set_truncation(Some(Truncation {
                max_length,
                stride: t.get("stride").and_then(|x| x.as_u64()).unwrap_or(0) as usize,
                direction: parse_direction(t.get("direction"))?,
                strategy: t.get("strategy").and_then(|x| x.as_str()).unwrap_or("LongestFirst").to_string(),
            }))?;
        }
        if let Some(p) = section("padding") {
            let length = match p.get("strategy") {
                Some(Value::String(s)) if s == "BatchLongest" => None,
                Some(Value::Object(o)) => Some(
                    o.get("Fixed")
                        .and_then(|x| x.as_u64())
                        .ok_or("padding: strategy must be BatchLongest or {Fixed: n}")? as usize,
                ),
                None => None,
                Some(other) => return Err(format!("padding: unsupported strategy {other}")),
            };
            tok.set_padding(Some(Padding {
                length,
                direction: parse_direction(p.get("direction"))?,
                pad_to_multiple_of: p.get("pad_to_multiple_of").and_then(|x| x.as_u64()).map(|x| x as usize),
                pad_id: p.get("pad_id").and_then(|x| x.as_u64()).unwrap_or(0) as u32,
                pad_type_id: p.get("pad_type_id").and_then(|x| x.as_u64()).unwrap_or(0) as u32,
                pad_token: p.get("pad_token").and_then(|x| x.as_str()).unwrap_or("[PAD]").to_string(),
            }));
        }
        Ok(tok)
    }

    pub fn new(
        model: impl Into<Model>,
        normalizer: Option<Normalizer>,
        pre_tokenizer: Option<PreTokenizer>,
        post: Option<PostProcessor>,
        decoder: Option<Decoder>,
        added_tokens: Vec<AddedToken>,
    ) -> Result<Self, String> {
        let model: Model = model.into();
        // The model's table when it keeps one (shared until a string must be added: `intern`
        // copies it then), else the model's tokens copied.
        let mut strings: Arc<TokenTable> = match model.token_table() {
            Some(t) => t.clone(),
            None => Arc::new(TokenTable {
                strings: (0..model.id_bound()).map(|i| model.id_to_token(i as u32).unwrap_or("").to_string()).collect(),
            }),
        };
        let intern = |strings: &mut Arc<TokenTable>, id: u32, s: &str| -> u32 {
            if strings.strings.get(id as usize).is_some_and(|t| t == s) {
                return id;
            }
            let table = Arc::make_mut(strings);
            table.strings.push(s.to_string());
            (table.strings.len() - 1) as u32
        };
        let added_index: Vec<u32> = added_tokens.iter().map(|t| intern(&mut strings, t.id, &t.content)).collect();
        let mut template_idx = HashMap::new();
        let mut collect_specials = |p: &PostProcessor, strings: &mut Arc<TokenTable>| {
            let mut stack = vec![p];
            while let Some(p) = stack.pop() {
                match p {
                    PostProcessor::Template { specials, .. } => {
                        for (name, (ids, toks)) in specials {
                            let v: Vec<(u32, u32)> =
                                ids.iter().zip(toks).map(|(&id, t)| (id, intern(strings, id, t))).collect();
                            template_idx.insert(name.clone(), v);
                        }
                    }
                    PostProcessor::Bert { sep, cls } | PostProcessor::Roberta { sep, cls, .. } => {
                        for (t, id) in [sep, cls] {
                            let idx = intern(strings, *id, t);
                            template_idx.insert(t.clone(), vec![(*id, idx)]);
                        }
                    }
                    PostProcessor::Sequence(v) => stack.extend(v.iter()),
                    PostProcessor::ByteLevel { .. } => {}
                }
            }
        };
        if let Some(p) = &post {
            collect_specials(p, &mut strings);
        }
        let trim_counts = strings.strings.iter().map(|s| count_space_chars(s)).collect();
        let special_contents = added_tokens.iter().filter(|t| t.special).map(|t| t.content.clone()).collect();
        let fast_bytes = pre_tokenizer.as_ref().is_some_and(PreTokenizer::is_byte_level) && model.has_byte_fast_path();
        let added = AddedVocab::new(added_tokens, normalizer.as_ref());
        let single_frame = post.as_ref().map_or(Some((Vec::new(), Vec::new())), single_frame);
        Ok(Tokenizer {
            normalizer,
            pre_tokenizer,
            model,
            post,
            decoder,
            added,
            added_index,
            template_idx,
            table: strings,
            trim_counts: Arc::new(trim_counts),
            special_contents,
            truncation: None,
            padding: None,
            pad_index: 0,
            single_frame,
            fast_bytes,
        })
    }

    // ---- configuration ----

    pub fn set_truncation(&mut self, t: Option<Truncation>) -> Result<(), String> {
        if let Some(t) = &t {
            let k = t.strategy.to_ascii_lowercase().replace('_', "");
            if !matches!(k.as_str(), "longestfirst" | "onlyfirst" | "onlysecond") {
                return Err(format!("unknown truncation strategy {:?}", t.strategy));
            }
        }
        self.truncation = t;
        Ok(())
    }

    pub fn truncation(&self) -> Option<&Truncation> {
        self.truncation.as_ref()
    }

    pub fn set_padding(&mut self, p: Option<Padding>) {
        if let Some(p) = &p {
            // Intern the pad string once so padded encodings need no extra strings (the table is
            // copied only when it is shared and a string must be added).
            let table = &self.table;
            self.pad_index = if table.get(p.pad_id) == p.pad_token && (p.pad_id as usize) < table.strings.len() {
                p.pad_id
            } else if let Some(i) = table.strings.iter().position(|s| s == &p.pad_token) {
                i as u32
            } else {
                let table = Arc::make_mut(&mut self.table);
                table.strings.push(p.pad_token.clone());
                Arc::make_mut(&mut self.trim_counts).push(count_space_chars(&p.pad_token));
                (table.strings.len() - 1) as u32
            };
        }
        self.padding = p;
    }

    pub fn padding(&self) -> Option<&Padding> {
        self.padding.as_ref()
    }

    pub fn set_dropout(&mut self, p: Option<f32>, seed: u64) -> Result<(), String> {
        self.model.set_dropout(p, seed)
    }

    pub fn model(&self) -> &Model {
        &self.model
    }

    pub fn table(&self) -> &Arc<TokenTable> {
        &self.table
    }

    // ---- vocabulary ----

    pub fn token_to_id(&self, t: &str) -> Option<u32> {
        self.added.tokens.iter().find(|a| a.content == t).map(|a| a.id).or_else(|| self.model.token_to_id(t))
    }

    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.added.id_to_token(id).map(|a| a.content.clone()).or_else(|| self.model.id_to_token(id).map(String::from))
    }

    /// Vocab size including added tokens that are not in the model's vocab (HF's default).
    pub fn vocab_size(&self) -> usize {
        self.model.vocab_size() + self.added.tokens.iter().filter(|a| self.model.id_to_token(a.id).is_none()).count()
    }

    // ---- encoding ----

    /// Encodes one text: ids, tokens, byte offsets, masks; truncation/post-processing/padding
    /// as configured.
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Encoding, String> {
        self.encode_pair(text, None, add_special_tokens)
    }

    /// Encodes a text and an optional second text (offsets of the pair's tokens index into the
    /// pair; their `seq` is 1 and their type id 1 before the post-processor runs, as in HF).
    pub fn encode_pair(&self, text: &str, pair: Option<&str>, add_special_tokens: bool) -> Result<Encoding, String> {
        let ea = self.encode_plain(text)?;
        let eb = match pair {
            Some(p) => {
                let mut e = self.encode_plain(p)?;
                e.type_ids.iter_mut().for_each(|t| *t = 1);
                e.set_seq(1);
                Some(e)
            }
            None => None,
        };
        self.post_process([text, pair.unwrap_or("")], ea, eb, add_special_tokens)
    }

    /// Encodes (text, pair) inputs in parallel, then pads the batch as configured.
    pub fn encode_batch_pairs(
        &self,
        inputs: &[(&str, Option<&str>)],
        add_special_tokens: bool,
    ) -> Result<Vec<Encoding>, String> {
        let mut out: Vec<Encoding> = par_map(inputs, |(a, b)| self.encode_pair(a, *b, add_special_tokens))
            .into_iter()
            .collect::<Result<_, _>>()?;
        if let Some(p) = &self.padding {
            self.pad_batch(p, &mut out);
        }
        Ok(out)
    }

    /// Encodes a batch in parallel, then pads it as configured (to the longest or to a length).
    pub fn encode_batch<S: AsRef<str> + Sync>(
        &self,
        texts: &[S],
        add_special_tokens: bool,
    ) -> Result<Vec<Encoding>, String> {
        let mut out: Vec<Encoding> =
            par_map(texts, |t| self.encode(t.as_ref(), add_special_tokens)).into_iter().collect::<Result<_, _>>()?;
        if let Some(p) = &self.padding {
            self.pad_batch(p, &mut out);
        }
        Ok(out)
    }

    fn pad_batch(&self, p: &Padding, encs: &mut [Encoding]) {
        if encs.is_empty() {
            return;
        }
        let mut target = match p.length {
            Some(n) => n,
            None => encs.iter().map(|e| e.len()).max().unwrap_or(0),
        };
        target = round_up(target, p.pad_to_multiple_of);
        for e in encs {
            e.pad(target, p.pad_id, p.pad_type_id, self.pad_index, p.direction);
        }
    }

    /// Ids only: the fast path (no offsets, no token strings, no alignment).
    pub fn encode_ids(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>, String> {
        let mut ids = Vec::with_capacity(text.len() / 3 + 4);
        self.encode_ids_into(text, add_special_tokens, &mut ids)?;
        Ok(ids)
    }

    /// Appends the ids of `text` to `out` (the ids-only path; the full path when truncation or
    /// padding is configured or the post-processor is not a plain frame of special tokens).
    pub fn encode_ids_into(&self, text: &str, add_special_tokens: bool, out: &mut Vec<u32>) -> Result<(), String> {
        const NO_FRAME: &(Vec<u32>, Vec<u32>) = &(Vec::new(), Vec::new());
        let frame = match (&self.post, add_special_tokens) {
            (Some(_), true) => self.single_frame.as_ref(),
            _ => Some(NO_FRAME),
        };
        let frame = match frame {
            Some(f) if self.truncation.is_none() && self.padding.is_none() && !self.needs_original_offsets() => f,
            _ => {
                out.extend(self.encode(text, add_special_tokens)?.ids);
                return Ok(());
            }
        };
        out.extend_from_slice(&frame.0);
        let mut salt = 0u64;
        let push_text = |t: &str, ids: &mut Vec<u32>, salt: &mut u64| -> Result<(), String> {
            let normalized;
            let t: &str = match &self.normalizer {
                Some(n) => {
                    normalized = n.normalize_str(t);
                    &normalized
                }
                None => t,
            };
            if self.added.has_normalized() {
                for p in self.added.split_normalized(t) {
                    match p {
                        Piece::Token(_, _, i) => ids.push(self.added.tokens[i].id),
                        Piece::Text(s, e) => self.words_ids(&t[s..e], ids, salt)?,
                    }
                }
                Ok(())
            } else {
                self.words_ids(t, ids, salt)
            }
        };
        if self.added.has_raw() {
            for p in self.added.split_raw(text) {
                match p {
                    Piece::Token(_, _, i) => out.push(self.added.tokens[i].id),
                    Piece::Text(s, e) => push_text(&text[s..e], out, &mut salt)?,
                }
            }
        } else {
            push_text(text, out, &mut salt)?;
        }
        out.extend_from_slice(&frame.1);
        Ok(())
    }

    /// Ids-only batch, in parallel.
    pub fn encode_batch_ids<S: AsRef<str> + Sync>(
        &self,
        texts: &[S],
        add_special_tokens: bool,
    ) -> Result<Vec<Vec<u32>>, String> {
        if self.padding.is_some() {
            return Ok(self.encode_batch(texts, add_special_tokens)?.into_iter().map(|e| e.ids).collect());
        }
        let preload = self.batch_preload_token(texts);
        par_map(texts, |t| {
            self.preload_once(preload);
            self.encode_ids(t.as_ref(), add_special_tokens)
        })
        .into_iter()
        .collect()
    }

    /// Ids-only batch as flat chunks: for each chunk of consecutive texts, (all ids, id count per
    /// text). One allocation per chunk instead of one per text.
    pub fn encode_batch_ids_flat<S: BatchText>(
        &self,
        texts: &[S],
        add_special_tokens: bool,
    ) -> Result<Vec<FlatChunk>, String> {
        if self.padding.is_some() {
            let mut scratch = Vec::new();
            let mut owned = Vec::with_capacity(texts.len());
            for t in texts {
                owned.push(t.with_utf8(&mut scratch, str::to_owned).map_err(|e| e.to_string())?);
            }
            let encs = self.encode_batch(&owned, add_special_tokens)?;
            let lens = encs.iter().map(|e| e.len() as u32).collect();
            return Ok(vec![(encs.into_iter().flat_map(|e| e.ids).collect(), lens)]);
        }
        let preload = self.batch_preload_token(texts);
        par_map_chunks(texts, |chunk| {
            self.preload_once(preload);
            self.encode_ids_chunk(chunk, add_special_tokens)
        })
        .into_iter()
        .collect()
    }

    /// For a batch of many short texts, each too short to preload the BPE tables itself
    /// ([`crate::bpe::encode::RawPieces::preload`]): a token that [`Self::preload_once`] takes to
    /// preload them once on each thread that encodes part of this batch call, when the batch has
    /// [`PRELOAD_FROM_BYTES`] in all; 0 (nothing to preload) otherwise. Each thread preloads when it
    /// starts its first share rather than in a broadcast first: waking every worker for the preload
    /// and waiting for the last would add a wake-up to the call.
    fn batch_preload_token<S: BatchText>(&self, texts: &[S]) -> u64 {
        let bytes: usize = texts.iter().map(BatchText::len_hint).sum();
        if !self.fast_bytes || !matches!(self.model, Model::Bpe(_)) || texts.len() < 2 || bytes < PRELOAD_FROM_BYTES {
            return 0;
        }
        BATCH_CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// Preloads the BPE tables on this thread unless it already did for the batch call `token`.
    #[inline]
    fn preload_once(&self, token: u64) {
        if token == 0 {
            return;
        }
        PRELOADED_FOR.with(|done| {
            if done.get() != token {
                done.set(token);
                if let Model::Bpe(m) = &self.model {
                    m.with_raw_pieces(|enc| enc.preload());
                }
            }
        });
    }

    /// The ids of consecutive texts on this thread: all ids back to back, and the count per text.
    /// Without batch padding (see [`Self::pads_batch`]) a chunk's ids are those of its texts alone,
    /// so a batch may be encoded chunk by chunk in any order. A text that is not UTF-8 yet is made so
    /// here, on the encoding thread (see [`BatchText`]).
    pub fn encode_ids_chunk<S: BatchText>(&self, chunk: &[S], add_special_tokens: bool) -> Result<FlatChunk, String> {
        let total: usize = chunk.iter().map(BatchText::len_hint).sum();
        let mut ids = Vec::with_capacity(total / 3 + 8);
        let mut lens = Vec::with_capacity(chunk.len());
        let mut scratch = Vec::new();
        for t in chunk {
            let before = ids.len();
            t.with_utf8(&mut scratch, |s| self.encode_ids_into(s, add_special_tokens, &mut ids))
                .map_err(|e| e.to_string())??;
            lens.push((ids.len() - before) as u32);
        }
        Ok((ids, lens))
    }

    /// Whether a batch's encodings depend on each other (padding to the batch's longest), so that
    /// the batch must be encoded whole rather than chunk by chunk.
    pub fn pads_batch(&self) -> bool {
        self.padding.is_some()
    }

    /// Model ids of the words of one (normalized) text piece.
    fn words_ids(&self, t: &str, ids: &mut Vec<u32>, salt: &mut u64) -> Result<(), String> {
        let mut err: Option<String> = None;
        match &self.pre_tokenizer {
            Some(PreTokenizer::General(items)) => {
                for piece in crate::pretok::aligned::pre_tokenize(items, t, &|o| o == 0) {
                    *salt += 1;
                    self.model.tokenize_with(&piece.text, *salt, |s| ids.extend(s.iter().map(|x| x.0)))?;
                }
            }
            Some(p) if self.fast_bytes => {
                // A long text on several threads: cut where every piece is the same as in the whole
                // text (`newline_cuts`), each part against its thread's cache, the ids joined in order.
                // Only without dropout (the raw-pieces path is there): dropout's salts count pieces.
                if t.len() >= 2 * PAR_PART_BYTES
                    && parallel_allowed()
                    && rayon::current_num_threads() > 1
                    && p.cuts_after_newline()
                    && self.model.with_raw_pieces(|_| ()).is_some()
                {
                    let threads = rayon::current_num_threads();
                    let parts = newline_cuts(t, (t.len() / (4 * threads)).max(PAR_PART_BYTES));
                    if parts.len() > 1 {
                        let done: Vec<Vec<u32>> = crate::parallel::claim_map(parts.len(), threads - 1, |i| {
                            let part = parts[i];
                            let mut v = Vec::with_capacity(part.len() / 3 + 8);
                            self.model.with_raw_pieces(|enc| {
                                enc.encode_text(part, &mut v, |sink| {
                                    p.for_each_raw_piece(part, |raw| sink.push(raw.as_bytes()))
                                })
                            });
                            v
                        });
                        ids.reserve(done.iter().map(Vec::len).sum());
                        for v in done {
                            ids.extend_from_slice(&v);
                        }
                        return Ok(());
                    }
                }
                // The whole text against this thread's cache, borrowed once (no dropout: salts unused).
                let done = self.model.with_raw_pieces(|enc| {
                    enc.encode_text(t, ids, |sink| p.for_each_raw_piece(t, |raw| sink.push(raw.as_bytes())))
                });
                if done.is_none() {
                    p.for_each_raw_piece(t, |raw| {
                        *salt += 1;
                        if let Err(e) = self.model.tokenize_raw_bytes_with(raw.as_bytes(), *salt, |s| {
                            ids.extend(s.iter().map(|x| x.0))
                        }) {
                            err.get_or_insert(e.to_string());
                        }
                    })
                }
            }
            // WordPiece: the text's words against this thread's word cache, borrowed once (no salts:
            // WordPiece has no dropout).
            Some(p) if !p.is_byte_level() && matches!(self.model, Model::WordPiece(_)) => {
                if let Model::WordPiece(m) = &self.model {
                    m.with_words(|words| {
                        p.for_each_raw_piece(t, |raw| {
                            if let Err(e) = words.tokenize_with(raw, |s| ids.extend(s.iter().map(|x| x.0))) {
                                err.get_or_insert(e.to_string());
                            }
                        })
                    });
                }
            }
            Some(p) => {
                let byte_level = p.is_byte_level();
                p.for_each_raw_piece(t, |raw| {
                    *salt += 1;
                    let mapped;
                    let w: &str = if byte_level {
                        mapped = p.map_piece(raw);
                        &mapped
                    } else {
                        raw
                    };
                    if let Err(e) = self.model.tokenize_with(w, *salt, |s| ids.extend(s.iter().map(|x| x.0))) {
                        err.get_or_insert(e.to_string());
                    }
                })
            }
            None => {
                *salt += 1;
                self.model.tokenize_with(t, *salt, |s| ids.extend(s.iter().map(|x| x.0))).map_err(|e| e.to_string())?
            }
        }
        err.map_or(Ok(()), Err)
    }

    /// Tokens with byte offsets into `text`, type id 0, no post-processing.
    fn encode_plain(&self, text: &str) -> Result<Encoding, String> {
        let mut enc = Encoding::with_capacity(text.len() / 3 + 4);
        let mut salt = 0u64;
        if self.added.has_raw() {
            for p in self.added.split_raw(text) {
                match p {
                    Piece::Token(s, e, i) => self.push_added(&mut enc, i, &text[s..e], (s, e)),
                    Piece::Text(s, e) => self.encode_segment(text, s, e, &mut enc, &mut salt)?,
                }
            }
        } else {
            self.encode_segment(text, 0, text.len(), &mut enc, &mut salt)?;
        }
        Ok(enc)
    }

    /// Pushes a matched added token. HF reports the MATCHED text as the token string (the normalized
    /// slice for normalized tokens, whitespace included for lstrip/rstrip), not the token's content.
    fn push_added(&self, enc: &mut Encoding, i: usize, matched: &str, offsets: (usize, usize)) {
        let tok = &self.added.tokens[i];
        let idx = if matched == tok.content { self.added_index[i] } else { enc.push_extra(matched) };
        enc.push(tok.id, idx, offsets, 0, false);
    }

    /// Normalizes `text[s..e]`, splits it by normalized added tokens and encodes the words.
    fn encode_segment(&self, text: &str, s: usize, e: usize, enc: &mut Encoding, salt: &mut u64) -> Result<(), String> {
        let seg = &text[s..e];
        match &self.normalizer {
            None => {
                let map = |lo: usize, hi: usize| (s + lo, s + hi);
                self.encode_normalized(seg, &map, enc, salt)
            }
            Some(n) => {
                let (norm, align) = n.normalize_with_alignment(seg);
                let map = |lo: usize, hi: usize| -> (usize, usize) {
                    if align.is_empty() {
                        return (s, s);
                    }
                    if lo >= hi {
                        let p = align.get(lo).map_or(e - s, |a| a.0);
                        return (s + p, s + p);
                    }
                    let a = align[lo.min(align.len() - 1)].0;
                    let b = align[(hi - 1).min(align.len() - 1)].1;
                    (s + a, s + b)
                };
                self.encode_normalized(&norm, &map, enc, salt)
            }
        }
    }

    fn encode_normalized(
        &self,
        norm: &str,
        map: &dyn Fn(usize, usize) -> (usize, usize),
        enc: &mut Encoding,
        salt: &mut u64,
    ) -> Result<(), String> {
        if self.added.has_normalized() {
            for p in self.added.split_normalized(norm) {
                match p {
                    Piece::Token(a, b, i) => self.push_added(enc, i, &norm[a..b], map(a, b)),
                    Piece::Text(a, b) => self.encode_words(&norm[a..b], a, map, enc, salt)?,
                }
            }
            Ok(())
        } else {
            self.encode_words(norm, 0, map, enc, salt)
        }
    }

    /// Pre-tokenizes and runs the model on `t` (= normalized[base..]); offsets go through `map`.
    fn encode_words(
        &self,
        t: &str,
        base: usize,
        map: &dyn Fn(usize, usize) -> (usize, usize),
        enc: &mut Encoding,
        salt: &mut u64,
    ) -> Result<(), String> {
        if let Some(PreTokenizer::General(items)) = &self.pre_tokenizer {
            return self.encode_words_general(items, t, base, map, enc, salt);
        }
        if self.needs_ranges() {
            return self.encode_words_ranged(t, base, map, enc, salt);
        }
        let mut err: Option<String> = None;
        let mut syms: Vec<Sym> = Vec::new();
        let mut ranges: Vec<(u32, usize, usize)> = Vec::new();
        match &self.pre_tokenizer {
            // A ByteLevel, or a Sequence ending in one without a prefix space (see `PreTokenizer::sequence`).
            Some(p) if p.is_byte_level() => {
                let add_prefix_space = matches!(p, PreTokenizer::ByteLevel { add_prefix_space: true, .. });
                let inserted = add_prefix_space && !t.is_empty() && !t.starts_with(' ');
                let first_len = first_char_len(t);
                let mut first = true;
                p.for_each_raw_piece_with_offsets(t, |raw, (ps, _pe)| {
                    *salt += 1;
                    let shifted = inserted && first;
                    first = false;
                    syms.clear();
                    // Each token as a range of raw bytes of the piece (= mapped chars).
                    ranges.clear();
                    let r = if self.fast_bytes {
                        let r = self.model.tokenize_raw_bytes(raw.as_bytes(), *salt, &mut syms);
                        let mut a = 0usize;
                        for &(id, len) in &syms {
                            ranges.push((id, a, a + len as usize));
                            a += len as usize;
                        }
                        r
                    } else {
                        // General path: HF's lengths are bytes of the mapped string, counted from
                        // the start of the word even when chars were dropped (no unk); each mapped
                        // byte belongs to one mapped char, i.e. one raw byte.
                        let mapped = p.map_piece(raw);
                        let r = self.model.tokenize_into(&mapped, *salt, &mut syms);
                        let mut char_of_byte = vec![0usize; mapped.len()];
                        for (ci, (bi, ch)) in mapped.char_indices().enumerate() {
                            for k in 0..ch.len_utf8() {
                                char_of_byte[bi + k] = ci;
                            }
                        }
                        let last = mapped.len().saturating_sub(1);
                        let mut pos = 0usize;
                        for &(id, len) in &syms {
                            let end = pos + len as usize;
                            if mapped.is_empty() || len == 0 {
                                ranges.push((id, 0, 0));
                            } else {
                                let a = char_of_byte[pos.min(last)];
                                let b = char_of_byte[(end - 1).min(last)] + 1;
                                ranges.push((id, a, b));
                            }
                            pos = end;
                        }
                        r
                    };
                    if let Err(e) = r {
                        err.get_or_insert(e.to_string());
                        return;
                    }
                    let byte_at = |k: usize| -> Option<usize> {
                        if shifted {
                            k.checked_sub(1).map(|x| ps + x)
                        } else {
                            Some(ps + k)
                        }
                    };
                    let n_raw = raw.len();
                    for &(id, a, b) in &ranges {
                        let b = b.min(n_raw);
                        let lo = byte_at(a).map_or(0, |x| floor_boundary(t, x));
                        let hi = if b <= a { lo } else { byte_at(b - 1).map_or(first_len, |x| char_end_at(t, x)) };
                        enc.push(id, id, map(base + lo, base + hi.max(lo)), 0, false);
                    }
                })
            }
            Some(p) => p.for_each_raw_piece_with_offsets(t, |raw, (ps, _)| {
                *salt += 1;
                syms.clear();
                if let Err(e) = self.model.tokenize_into(raw, *salt, &mut syms) {
                    err.get_or_insert(e.to_string());
                    return;
                }
                push_syms(enc, &syms, raw.len(), |lo, hi| map(base + ps + lo, base + ps + hi));
            }),
            None => {
                *salt += 1;
                self.model.tokenize_into(t, *salt, &mut syms).map_err(|e| e.to_string())?;
                push_syms(enc, &syms, t.len(), |lo, hi| map(base + lo, base + hi));
            }
        }
        err.map_or(Ok(()), Err)
    }

    // ---- post-processing ----

    /// HF `Tokenizer::post_process`: truncation (reserving room for the special tokens), the
    /// post-processor over the list of encodings, merging, then padding.
    fn post_process(
        &self,
        texts: [&str; 2],
        mut ea: Encoding,
        mut eb: Option<Encoding>,
        add_special_tokens: bool,
    ) -> Result<Encoding, String> {
        if let Some(t) = &self.truncation {
            let n_added = match (&self.post, add_special_tokens) {
                (Some(p), true) => p.added_tokens(eb.is_some()),
                _ => 0,
            };
            truncate_encodings(&mut ea, eb.as_mut(), t, t.max_length.saturating_sub(n_added))?;
        }
        let single = eb.is_none();
        let mut encs = vec![ea];
        encs.extend(eb);
        let mut enc = match &self.post {
            Some(p) => {
                let encs = self.process_encodings(p, texts, encs, add_special_tokens);
                merge_all(encs)
            }
            None if single => encs.pop().unwrap_or_default(),
            None => merge_all(encs),
        };
        if let Some(p) = &self.padding {
            let target = round_up(p.length.unwrap_or(enc.len()), p.pad_to_multiple_of);
            enc.pad(target, p.pad_id, p.pad_type_id, self.pad_index, p.direction);
        }
        Ok(enc)
    }

    /// HF `PostProcessor::process_encodings` for each supported processor.
    fn process_encodings(
        &self,
        p: &PostProcessor,
        texts: [&str; 2],
        mut encs: Vec<Encoding>,
        add_special: bool,
    ) -> Vec<Encoding> {
        match p {
            PostProcessor::ByteLevel { trim_offsets, add_prefix_space } => {
                if *trim_offsets {
                    for e in &mut encs {
                        self.trim_offsets(texts, e, *add_prefix_space);
                    }
                }
                encs
            }
            PostProcessor::Sequence(v) => {
                v.iter().fold(encs, |acc, p| self.process_encodings(p, texts, acc, add_special))
            }
            PostProcessor::Template { single, pair, .. } => {
                let template = if encs.len() == 2 { pair } else { single };
                let mut out = Vec::with_capacity(template.len());
                for piece in template {
                    match piece {
                        TemplatePiece::Sequence { b, type_id } => {
                            if let Some(e) = encs.get(usize::from(*b)) {
                                let mut e = e.clone();
                                // HF sets the type ids of the main part only, not of overflowing parts.
                                e.type_ids.iter_mut().for_each(|t| *t = *type_id);
                                out.push(e);
                            }
                        }
                        TemplatePiece::Special { id, type_id } => {
                            if add_special {
                                let mut e = Encoding::default();
                                for &(tid, tidx) in self.template_idx.get(id).map_or(&[][..], |v| v.as_slice()) {
                                    e.push(tid, tidx, (0, 0), *type_id, true);
                                }
                                out.push(e);
                            }
                        }
                    }
                }
                out
            }
            PostProcessor::Bert { sep, cls } => {
                if !add_special {
                    return encs;
                }
                let (cls, sep) = (self.special(&cls.0, cls.1), self.special(&sep.0, sep.1));
                encs.into_iter()
                    .enumerate()
                    .map(|(i, e)| {
                        if i == 0 {
                            wrap(e, Some(cls), sep, |t| t.to_vec(), 0)
                        } else {
                            wrap(e, None, sep, |t| t.to_vec(), 1)
                        }
                    })
                    .collect()
            }
            PostProcessor::Roberta { sep, cls, trim_offsets, add_prefix_space } => {
                if *trim_offsets {
                    for e in &mut encs {
                        self.trim_offsets(texts, e, *add_prefix_space);
                    }
                }
                if !add_special {
                    return encs;
                }
                let (cls, sep) = (self.special(&cls.0, cls.1), self.special(&sep.0, sep.1));
                encs.into_iter()
                    .enumerate()
                    .map(|(i, e)| {
                        if i == 0 {
                            wrap(e, Some(cls), sep, |t| t.to_vec(), 0)
                        } else {
                            // RoBERTa's second part is `</s> B </s>`, all type id 0.
                            wrap(e, Some(sep), sep, |t| vec![0; t.len()], 0)
                        }
                    })
                    .collect()
            }
        }
    }

    /// (id, token index) of a Bert/Roberta special token.
    fn special(&self, name: &str, id: u32) -> (u32, u32) {
        self.template_idx.get(name).and_then(|v| v.first().copied()).unwrap_or((id, id))
    }

    /// HF ByteLevel `process_offsets`: offsets skip the leading/trailing spaces (`Ġ`) of tokens.
    /// HF counts in chars; we step over chars of the original text, which is the same thing.
    fn trim_offsets(&self, texts: [&str; 2], enc: &mut Encoding, add_prefix_space: bool) {
        for o in &mut enc.overflowing {
            self.trim_offsets(texts, o, add_prefix_space);
        }
        for i in 0..enc.len() {
            let t = enc.tokens[i];
            let (mut lead, trail) = match self.trim_counts.get(t as usize) {
                Some(&c) if t & EXTRA_BIT == 0 => c,
                _ => count_space_chars(enc.token_str(&self.table, i)),
            };
            if lead == 0 && trail == 0 {
                continue;
            }
            let text = if enc.seq[i] == 1 { texts[1] } else { texts[0] };
            let (mut s, mut e) = enc.offsets[i];
            if lead > 0 {
                if (i == 0 || s == 0) && add_prefix_space && lead == 1 {
                    lead = 0;
                }
                let ns = text
                    .get(s..)
                    .map_or(s, |rest| s + rest.char_indices().nth(lead as usize).map_or(rest.len(), |(k, _)| k));
                s = ns.min(e);
            }
            if trail > 0 {
                if let Some(before) = text.get(..e) {
                    // HF: only when the end (in chars) is at least `trail`.
                    if let Some((k, _)) = before.char_indices().rev().nth(trail as usize - 1) {
                        e = k.max(s);
                    }
                }
            }
            enc.offsets[i] = (s, e);
        }
    }

    // ---- decoding ----

    /// The token string `decode` reads for `id` (an added token's content first), if any.
    pub(crate) fn decode_token(&self, id: u32) -> Option<&str> {
        self.added.id_to_token(id).map(|a| a.content.as_str()).or_else(|| self.model.id_to_token(id))
    }

    /// One more than the largest id `decode_token` may know: the model's ids and the added ones.
    pub(crate) fn id_bound(&self) -> usize {
        let added = self.added.tokens.iter().map(|a| a.id as usize + 1).max().unwrap_or(0);
        self.model.vocab_size().max(added)
    }

    pub(crate) fn decoder(&self) -> Option<&Decoder> {
        self.decoder.as_ref()
    }

    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> String {
        let tokens: Vec<&str> = ids
            .iter()
            .filter_map(|&id| {
                let t = self.decode_token(id)?;
                if skip_special_tokens && self.special_contents.contains(t) {
                    return None;
                }
                Some(t)
            })
            .collect();
        // The decoders that map each token on its own and concatenate go without a String per token.
        if let Some(out) = self.decoder.as_ref().and_then(|d| d.decode_concat(&tokens)) {
            return out;
        }
        let tokens: Vec<String> = tokens.into_iter().map(str::to_string).collect();
        match &self.decoder {
            Some(d) => d.decode_chain(tokens).concat(),
            None => tokens.join(" "),
        }
    }

    pub fn decode_batch(&self, ids: &[Vec<u32>], skip_special_tokens: bool) -> Vec<String> {
        par_map(ids, |v| self.decode(v, skip_special_tokens))
    }

    pub fn pre_tokenizer(&self) -> Option<&PreTokenizer> {
        self.pre_tokenizer.as_ref()
    }
}

/// The (prefix, suffix) special ids a processor adds around a single sequence.
fn single_frame(p: &PostProcessor) -> Option<(Vec<u32>, Vec<u32>)> {
    match p {
        PostProcessor::ByteLevel { .. } => Some((Vec::new(), Vec::new())),
        PostProcessor::Bert { sep, cls } | PostProcessor::Roberta { sep, cls, .. } => Some((vec![cls.1], vec![sep.1])),
        PostProcessor::Template { single, specials, .. } => {
            let (mut pre, mut post) = (Vec::new(), Vec::new());
            let mut seen_a = false;
            for piece in single {
                match piece {
                    TemplatePiece::Special { id, .. } => {
                        let ids = &specials.get(id)?.0;
                        if seen_a {
                            post.extend_from_slice(ids)
                        } else {
                            pre.extend_from_slice(ids)
                        }
                    }
                    TemplatePiece::Sequence { b: false, .. } if !seen_a => seen_a = true,
                    TemplatePiece::Sequence { .. } => return None,
                }
            }
            seen_a.then_some((pre, post))
        }
        PostProcessor::Sequence(v) => {
            let (mut pre, mut post) = (Vec::new(), Vec::new());
            for p in v {
                let (a, b) = single_frame(p)?;
                // Each later processor wraps the result of the earlier ones.
                pre.splice(0..0, a);
                post.extend(b);
            }
            Some((pre, post))
        }
    }
}

/// HF `Encoding::merge` of a processor's output list (folded from an empty encoding).
fn merge_all(mut encs: Vec<Encoding>) -> Encoding {
    // Merging one encoding into an empty one reproduces it (overflowing parts included), so skip
    // the copy in the common single-sequence case.
    if encs.len() == 1 {
        return encs.pop().unwrap_or_default();
    }
    let mut out = Encoding::default();
    for e in encs {
        out.merge_with(e);
    }
    out
}

/// Bert/Roberta framing: `[first] e [last]`, the same for every overflowing part (one level, as HF).
fn wrap(
    e: Encoding,
    first: Option<(u32, u32)>,
    last: (u32, u32),
    types: impl Fn(&[u32]) -> Vec<u32> + Copy,
    last_type: u32,
) -> Encoding {
    let frame = |e: &Encoding| {
        let mut out = Encoding::with_capacity(e.len() + 2);
        out.extra = e.extra.clone();
        let inner_types = types(&e.type_ids);
        if let Some((id, idx)) = first {
            out.push(id, idx, (0, 0), 0, true);
        }
        out.ids.extend_from_slice(&e.ids);
        out.tokens.extend_from_slice(&e.tokens);
        out.offsets.extend_from_slice(&e.offsets);
        out.type_ids.extend_from_slice(&inner_types);
        out.special_tokens_mask.extend_from_slice(&e.special_tokens_mask);
        out.attention_mask.extend_from_slice(&e.attention_mask);
        out.seq.extend_from_slice(&e.seq);
        out.push(last.0, last.1, (0, 0), last_type, true);
        out
    };
    let mut main = frame(&e);
    main.overflowing = e.overflowing.iter().map(frame).collect();
    main
}

/// HF `truncate_encodings`.
fn truncate_encodings(
    ea: &mut Encoding,
    eb: Option<&mut Encoding>,
    t: &Truncation,
    max_length: usize,
) -> Result<(), String> {
    let strategy = t.strategy.to_ascii_lowercase().replace('_', "");
    if max_length == 0 {
        ea.truncate(0, t.stride, t.direction)?;
        if let Some(b) = eb {
            b.truncate(0, t.stride, t.direction)?;
        }
        return Ok(());
    }
    let total = ea.len() + eb.as_ref().map_or(0, |b| b.len());
    if total <= max_length {
        return Ok(());
    }
    let to_remove = total - max_length;
    match strategy.as_str() {
        "longestfirst" => match eb {
            Some(b) => {
                let (mut n1, mut n2) = (ea.len(), b.len());
                let swap = n1 > n2;
                if swap {
                    std::mem::swap(&mut n1, &mut n2);
                }
                n2 = if n1 > max_length { n1 } else { n1.max(max_length - n1) };
                if n1 + n2 > max_length {
                    n1 = max_length / 2;
                    n2 = n1 + max_length % 2;
                }
                if swap {
                    std::mem::swap(&mut n1, &mut n2);
                }
                ea.truncate(n1, t.stride, t.direction)?;
                b.truncate(n2, t.stride, t.direction)?;
            }
            None => ea.truncate(total - to_remove, t.stride, t.direction)?,
        },
        "onlyfirst" | "onlysecond" => {
            let target = if strategy == "onlyfirst" {
                ea
            } else {
                eb.ok_or("truncation error: the second sequence is not provided (strategy only_second)")?
            };
            let n = target.len();
            if n > to_remove {
                target.truncate(n - to_remove, t.stride, t.direction)?;
            } else {
                return Err(
                    "truncation error: sequence to truncate is too short to respect the provided max_length".into()
                );
            }
        }
        other => return Err(format!("unknown truncation strategy {other:?}")),
    }
    Ok(())
}

fn round_up(n: usize, m: Option<usize>) -> usize {
    match m {
        Some(m) if m > 0 && !n.is_multiple_of(m) => n + m - n % m,
        _ => n,
    }
}

/// Pushes model symbols whose lengths are bytes of a word of `len` bytes.
fn push_syms(enc: &mut Encoding, syms: &[Sym], len: usize, map: impl Fn(usize, usize) -> (usize, usize)) {
    let mut a = 0usize;
    for &(id, l) in syms {
        // HF's byte-fallback lengths can overrun the word when a prefix is set; clamp.
        let b = (a + l as usize).min(len);
        enc.push(id, id, map(a, b), 0, false);
        a = b;
    }
}

/// Parses an HF BPE model section.
pub fn parse_bpe(v: &Value) -> Result<BpeModel, String> {
    if let Some(ty) = v.get("type").and_then(|t| t.as_str()) {
        if ty != "BPE" {
            return Err(format!("unsupported model type '{ty}'"));
        }
    }
    let vocab_obj = v.get("vocab").and_then(|x| x.as_object()).ok_or("model: missing object 'vocab'")?;
    let mut vocab: HashMap<String, u32, ahash::RandomState> =
        HashMap::with_capacity_and_hasher(vocab_obj.len(), ahash::RandomState::new());
    for (k, id) in vocab_obj {
        let id = id.as_u64().filter(|&x| x <= u64::from(u32::MAX)).ok_or_else(|| format!("model: bad id for {k:?}"))?;
        vocab.insert(k.clone(), id as u32);
    }
    let mut merges = Vec::new();
    if let Some(ms) = v.get("merges").and_then(|x| x.as_array()) {
        merges.reserve(ms.len());
        for m in ms {
            match m {
                Value::String(s) => {
                    let mut parts = s.split(' ');
                    match (parts.next(), parts.next(), parts.next()) {
                        (Some(a), Some(b), None) => merges.push((a.to_string(), b.to_string())),
                        _ => return Err(format!("model: invalid merge {s:?} (expected 'a b')")),
                    }
                }
                Value::Array(a) if a.len() == 2 => match (a[0].as_str(), a[1].as_str()) {
                    (Some(x), Some(y)) => merges.push((x.to_string(), y.to_string())),
                    _ => return Err(format!("model: invalid merge {m}")),
                },
                _ => return Err(format!("model: invalid merge {m}")),
            }
        }
    }
    bpe_from_data(v, vocab, &merges)
}

/// The BPE model of a model section's options (`v`, whose vocab and merges are not read) and the
/// given data.
pub fn bpe_from_data(
    v: &Value,
    vocab: HashMap<String, u32, ahash::RandomState>,
    merges: &[(String, String)],
) -> Result<BpeModel, String> {
    BpeModel::new(vocab, merges, bpe_options(v)?).map_err(|e| e.to_string())
}

/// The options of an HF BPE model section.
pub fn bpe_options(v: &Value) -> Result<BpeOptions, String> {
    let opt_str = |k: &str| v.get(k).and_then(|x| x.as_str()).map(String::from);
    let dropout = match v.get("dropout") {
        None | Some(Value::Null) => None,
        Some(x) => Some(x.as_f64().ok_or("model: dropout must be a number")? as f32),
    };
    let opts = BpeOptions {
        unk_token: opt_str("unk_token"),
        fuse_unk: get_bool(v, "fuse_unk", false),
        byte_fallback: get_bool(v, "byte_fallback", false),
        ignore_merges: get_bool(v, "ignore_merges", false),
        merge_by_token_id: get_bool(v, "merge_by_token_id", false),
        continuing_subword_prefix: opt_str("continuing_subword_prefix"),
        end_of_word_suffix: opt_str("end_of_word_suffix"),
        dropout,
        dropout_seed: 0,
    };
    Ok(opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn byte_level_json(post: &str) -> String {
        let table = crate::pretok::bytes_to_unicode();
        let mut vocab: Vec<String> = table.iter().map(|c| c.to_string()).collect();
        vocab.sort_by_key(|s| s.chars().next().map_or(0, |c| c as u32));
        for t in ["Ġt", "he", "Ġthe", "Ġc", "Ġca", "Ġcat", "<|endoftext|>"] {
            vocab.push(t.into());
        }
        let vocab_json: serde_json::Map<String, Value> =
            vocab.iter().enumerate().map(|(i, t)| (t.clone(), Value::from(i as u64))).collect();
        let eot = vocab.len() - 1;
        let merges = vec![["Ġ", "t"], ["h", "e"], ["Ġt", "he"], ["Ġ", "c"], ["Ġc", "a"], ["Ġca", "t"]];
        serde_json::json!({
            "version": "1.0",
            "added_tokens": [{"id": eot, "content": "<|endoftext|>", "single_word": false, "lstrip": false,
                              "rstrip": false, "normalized": false, "special": true}],
            "normalizer": null,
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
            "post_processor": serde_json::from_str::<Value>(post).unwrap_or(Value::Null),
            "decoder": {"type": "ByteLevel"},
            "model": {"type": "BPE", "vocab": vocab_json, "merges": merges},
        })
        .to_string()
    }

    #[test]
    fn byte_level_encode_offsets_and_decode() {
        let tok = Tokenizer::from_json_str(&byte_level_json("null")).unwrap();
        let text = "the cat<|endoftext|> é";
        let enc = tok.encode(text, true).unwrap();
        let toks: Vec<&str> = (0..enc.len()).map(|i| enc.token_str(tok.table(), i)).collect();
        assert_eq!(toks, vec!["t", "he", "Ġcat", "<|endoftext|>", "Ġ", "Ã", "©"]);
        assert_eq!(enc.offsets, vec![(0, 1), (1, 3), (3, 7), (7, 20), (20, 21), (21, 23), (21, 23)]);
        assert_eq!(tok.encode_ids(text, true).unwrap(), enc.ids);
        assert_eq!(tok.decode(&enc.ids, false), text);
        assert_eq!(tok.decode(&enc.ids, true), "the cat é");
    }

    #[test]
    fn template_truncation_padding() {
        let post = r#"{"type":"TemplateProcessing",
            "single":[{"SpecialToken":{"id":"<|endoftext|>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],
            "pair":[],
            "special_tokens":{"<|endoftext|>":{"id":"<|endoftext|>","ids":[262],"tokens":["<|endoftext|>"]}}}"#;
        let mut tok = Tokenizer::from_json_str(&byte_level_json(post)).unwrap();
        let e = tok.encode(" the the the", true).unwrap();
        assert_eq!(e.ids, vec![262, 258, 258, 258]);
        assert_eq!(e.special_tokens_mask, vec![1, 0, 0, 0]);
        tok.set_truncation(Some(Truncation {
            max_length: 3,
            stride: 0,
            direction: Direction::Right,
            strategy: "LongestFirst".into(),
        }))
        .unwrap();
        let e = tok.encode(" the the the", true).unwrap();
        assert_eq!(e.ids, vec![262, 258, 258]);
        assert_eq!(e.overflowing[0].ids, vec![262, 258]);
        tok.set_truncation(None).unwrap();
        tok.set_padding(Some(Padding {
            length: None,
            direction: Direction::Left,
            pad_to_multiple_of: None,
            pad_id: 0,
            pad_type_id: 0,
            pad_token: "[PAD]".into(),
        }));
        let b = tok.encode_batch(&[" the".to_string(), " the the".to_string()], true).unwrap();
        assert_eq!(b[0].ids, vec![0, 262, 258]);
        assert_eq!(b[0].attention_mask, vec![0, 1, 1]);
        assert_eq!(b[0].token_str(tok.table(), 0), "[PAD]");
    }

    #[test]
    fn unsupported_components_are_named() {
        let j = byte_level_json("null").replace(r#""decoder":{"type":"ByteLevel"}"#, r#""decoder":{"type":"Cyrillic"}"#);
        let e = Tokenizer::from_json_str(&j).unwrap_err();
        assert!(e.contains("decoder") && e.contains("Cyrillic"), "{e}");
        let j = byte_level_json(r#"{"type":"Weird"}"#);
        let e = Tokenizer::from_json_str(&j).unwrap_err();
        assert!(e.contains("post_processor") && e.contains("Weird"), "{e}");
    }
}
