//! WordPiece: the trainer (likelihood criterion, or HF's frequency criterion) and the greedy
//! longest-match-first encoder of HF's `WordPiece` model (SPEC-tokenizers §3).
//!
//! Training
//! - `Criterion::Frequency` is HF's `WordPieceTrainer`: the HF-compatible BPE trainer of
//!   `bpe/train.rs` with the continuing prefix, keeping the vocab and dropping the merges.
//! - `Criterion::Likelihood` is WordPiece as Schuster & Nakajima describe it: at each step merge the
//!   adjacent pair `(a, b)` with the highest `count(ab) / (count(a) * count(b))`, where `count(u)` is
//!   the number of occurrences of unit `u` in the current segmentation of the word counts (one-unit
//!   words included) and `count(ab)` the number of adjacent occurrences of the pair. The initial vocab
//!   and the words as symbol ids are built by the same code as BPE (`bpe::train::prepare`): special
//!   tokens, the alphabet by code point, the `##x` variants by code point, so ids are deterministic.
//!   A merge rewrites every non-overlapping occurrence left to right (as BPE) and the new token is
//!   `a + b` with `b`'s prefix removed; a string that already exists keeps its id.
//!
//! Tie rule (deterministic, documented in `subword/reference/wordpiece.py` too): highest score
//! (compared exactly as fractions by cross-multiplying in u128), then the higher pair count, then
//! the smaller `(left_id, right_id)`, i.e. older units first.
//! Options: a pair is a candidate only when its count is at least `max(1, min_frequency)` (a pair
//! below it is skipped, training does not stop, since selection is not by count) and, with
//! `max_token_length`, when the merged token has at most that many chars (plain `<=`, unlike HF BPE's
//! strict rule with unfiltered initial pairs).
//!
//! Performance notes
//! - Scores change for every pair that touches a merged unit, not only for the neighbours of the
//!   merged occurrences: merging `(a, b)` lowers `count(a)` and `count(b)`, so the score of every
//!   pair containing `a` or `b` rises. The loop keeps, per unit, the list of pairs that contain it
//!   (`pairs_of`), and per pair its exact count, the words it occurs in and a version number. After
//!   a merge, exactly the pairs whose count changed plus the pairs in `pairs_of[a]`, `pairs_of[b]`
//!   and `pairs_of[new]` get a new version and are pushed again with their new score; each pair is
//!   pushed at most once per merge (a per-pair stamp). A popped heap entry whose version is not the
//!   pair's current one is stale and dropped. So the heap top is always the exact best pair, and
//!   the work per merge is proportional to the degree of the merged units, which is large only for
//!   the first merges of frequent characters. Dead pairs (count 0) are pruned from `pairs_of` when
//!   their unit is merged.
//! - Pairs live in a table indexed by a dense u32 (one hash lookup per count change, none per
//!   re-score); `pairs_of` holds indices. Every re-score leaves a stale heap entry behind, so the heap
//!   is rebuilt from the live pairs whenever it grows past 4x the pair table (+4096): on
//!   gutenberg_en_20M at 30k, 7.05M pushes for 30k merges left a 6.8M-entry heap (318 MiB peak RSS,
//!   1.44 s) before this; with the table and the rebuild the loop takes 0.60 s.
//! - Measured with `cargo run --release --example train_wordpiece_file -- gutenberg_en_20M.txt 30000
//!   likelihood` (2 cores of an AMD EPYC at load ~6-7): BERT normalize + pre-tokenize + count
//!   0.47-0.54 s (44,849 distinct words; 0.71-0.79 s before the normalizer's ASCII-run and per-char
//!   NFD fast paths), likelihood loop 0.57-0.64 s, frequency (BPE) loop 0.23 s. The likelihood loop
//!   costs ~2.5x the BPE loop because each merge re-scores ~230 pairs on average.
//! - The word arena, the in-place merge of a word and the change list are BPE's (`merge_word`,
//!   `apply_merge`, parallel over large position lists); unit counts are updated from the word
//!   lengths before and after (each merged occurrence removes one symbol).
//!
//! Encoding: `WordPieceModel` keeps two maps, whole tokens and continuation tokens with the prefix
//! stripped, so no string is built per lookup; lookups start at the longest candidate that can be
//! in the vocab (the longest token's byte length), which cannot change the result.

use ahash::AHashMap;
use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::Arc;

use crate::encoding::TokenTable;
use crate::piece_index::PieceIndex;
use std::collections::BinaryHeap;

use crate::bpe::train::{
    apply_merge, check_affixes, corpus_of, count_pairs, prepare, unpack, BpeTrainerConfig, Change, Corpus, Progress,
    ProgressFn, Selected, Stage, TrainError,
};

/// How WordPiece chooses the next merge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Criterion {
    /// `count(ab) / (count(a) count(b))` (WordPiece as Google described it).
    Likelihood,
    /// The highest pair count: HF's `WordPieceTrainer` (BPE with a prefix, vocab only).
    Frequency,
}

impl Criterion {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "likelihood" => Ok(Criterion::Likelihood),
            "frequency" => Ok(Criterion::Frequency),
            other => Err(format!("unknown criterion {other:?} (expected 'likelihood' or 'frequency')")),
        }
    }
}

/// How many merges between two progress calls.
const PROGRESS_EVERY: u64 = 256;

/// Stale heap entries tolerated beyond 4x the pair table before a rebuild (none in tests, so the
/// rebuild path runs there).
const HEAP_SLACK: usize = if cfg!(test) { 0 } else { 4096 };

/// Trains a WordPiece vocabulary (id order) on `(word, count)` pairs. `cfg.continuing_subword_prefix`
/// is the continuing prefix (`None` is read as `"##"`); `cfg.end_of_word_suffix` must be `None`.
pub fn train(
    words: &[(String, u64)],
    cfg: &BpeTrainerConfig,
    criterion: Criterion,
    progress: &mut ProgressFn<'_>,
) -> Result<Vec<String>, TrainError> {
    if cfg.end_of_word_suffix.is_some() {
        return Err(TrainError::Config("WordPiece has no end_of_word_suffix".into()));
    }
    let cfg = effective_config(cfg);
    match criterion {
        Criterion::Frequency => crate::bpe::train::train(words, &cfg, progress).map(|o| o.vocab),
        Criterion::Likelihood => {
            check_affixes(&cfg)?;
            train_likelihood(Cow::Borrowed(words), &corpus_of(words, &cfg), &cfg, progress)
        }
    }
}

/// The options WordPiece trains with: `cfg` with the prefix defaulting to `"##"` (select the words
/// for these).
pub fn effective_config(cfg: &BpeTrainerConfig) -> BpeTrainerConfig {
    let mut cfg = cfg.clone();
    if cfg.continuing_subword_prefix.is_none() {
        cfg.continuing_subword_prefix = Some("##".into());
    }
    cfg
}

/// Trains on words chosen by [`crate::bpe::select::select`] for [`effective_config`]`(cfg)` (with
/// `units` for the likelihood criterion): the same vocab as [`train`] on every word. The selection
/// is consumed (its strings are freed once the arena is built).
pub fn train_selected(
    selected: Selected,
    cfg: &BpeTrainerConfig,
    criterion: Criterion,
    progress: &mut ProgressFn<'_>,
) -> Result<Vec<String>, TrainError> {
    if cfg.end_of_word_suffix.is_some() {
        return Err(TrainError::Config("WordPiece has no end_of_word_suffix".into()));
    }
    let cfg = effective_config(cfg);
    match criterion {
        Criterion::Frequency => crate::bpe::train::train_selected(selected, &cfg, progress).map(|o| o.vocab),
        Criterion::Likelihood => {
            selected.check_options(&cfg, true)?;
            let (words, corpus) = selected.into_parts();
            train_likelihood(Cow::Owned(words), &corpus, &cfg, progress)
        }
    }
}

/// A heap entry: a pair with the counts its score was computed from.
struct Cand {
    pc: u64,
    ua: u64,
    ub: u64,
    /// (left_id, right_id) packed, for the tie-break.
    pair: u64,
    /// Index into the pair table.
    idx: u32,
    version: u32,
}

impl PartialEq for Cand {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Cand {}
impl PartialOrd for Cand {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Cand {
    fn cmp(&self, o: &Self) -> Ordering {
        // pc/(ua*ub) vs o.pc/(o.ua*o.ub), exactly: cross-multiplied in u128 (counts < 2^42).
        let l = self.pc as u128 * (o.ua as u128 * o.ub as u128);
        let r = o.pc as u128 * (self.ua as u128 * self.ub as u128);
        l.cmp(&r).then(self.pc.cmp(&o.pc)).then_with(|| o.pair.cmp(&self.pair))
    }
}

struct PairInfo {
    key: u64,
    count: i64,
    version: u32,
    /// The merge step at which this pair was last re-pushed (dedupes pushes within one step).
    stamp: u32,
    /// Words the pair occurs (or occurred) in.
    pos: Vec<u32>,
}

/// All pairs ever seen, by index; `index` maps the packed (left, right) to it.
struct Pairs {
    index: AHashMap<u64, u32>,
    info: Vec<PairInfo>,
}

impl Pairs {
    fn get_or_add(&mut self, key: u64) -> u32 {
        let n = self.info.len() as u32;
        let idx = *self.index.entry(key).or_insert(n);
        if idx == n {
            self.info.push(PairInfo { key, count: 0, version: 0, stamp: 0, pos: Vec::new() });
        }
        idx
    }
}

fn train_likelihood(
    words: Cow<'_, [(String, u64)]>,
    corpus: &Corpus,
    cfg: &BpeTrainerConfig,
    progress: &mut ProgressFn<'_>,
) -> Result<Vec<String>, TrainError> {
    let prefix = cfg.continuing_subword_prefix.as_deref().unwrap_or("##");
    let total_units = corpus.total_units;
    if total_units >= 1u128 << 42 {
        return Err(TrainError::Config(format!(
            "the corpus has {total_units} characters counted with multiplicity; the likelihood trainer supports < 2^42"
        )));
    }
    let (mut voc, mut ws) = prepare(&words, corpus, cfg)?;
    let n_words = words.len() as u64;
    drop(words);
    let min_count = cfg.min_frequency.max(1);
    let max_len = cfg.max_token_length.unwrap_or(usize::MAX);

    // Unit counts over the current segmentation, plus those of the words left out by selection
    // (they never change, see `bpe/select.rs`).
    let mut uc: Vec<u64> = vec![0; voc.id2w.len()];
    for w in 0..ws.len.len() {
        let c = ws.count[w];
        for &s in &ws.syms[ws.start[w]..ws.start[w] + ws.len[w] as usize] {
            uc[s as usize] += c;
        }
    }
    for (unit, c) in &corpus.frozen_units {
        match voc.w2id.get(unit) {
            Some(&id) => uc[id as usize] += c,
            None => return Err(TrainError::Config(format!("internal: unit {unit:?} of a word left out has no id"))),
        }
    }
    progress(Progress { stage: Stage::Count, current: 0, total: n_words }).map_err(TrainError::Aborted)?;
    let (counts, initial) = count_pairs(&ws);
    let mut pairs =
        Pairs { index: AHashMap::with_capacity(initial.len() * 2), info: Vec::with_capacity(initial.len() * 2) };
    let mut pairs_of: Vec<Vec<u32>> = vec![Vec::new(); voc.id2w.len()];
    for (key, pos) in initial {
        let idx = pairs.get_or_add(key);
        let (a, b) = unpack(key);
        pairs_of[a as usize].push(idx);
        if a != b {
            pairs_of[b as usize].push(idx);
        }
        let e = &mut pairs.info[idx as usize];
        e.count = counts.get(&key).copied().unwrap_or(0);
        e.pos = pos;
    }
    let candidate = |idx: u32, e: &PairInfo, id_len: &[u32], uc: &[u64]| -> Option<Cand> {
        let (a, b) = unpack(e.key);
        let ok = e.count > 0
            && e.count as u64 >= min_count
            && (id_len[a as usize] as usize).saturating_add(id_len[b as usize] as usize) <= max_len;
        ok.then(|| Cand {
            pc: e.count as u64,
            ua: uc[a as usize],
            ub: uc[b as usize],
            pair: e.key,
            idx,
            version: e.version,
        })
    };
    let rebuild = |pairs: &Pairs, id_len: &[u32], uc: &[u64]| -> BinaryHeap<Cand> {
        let v: Vec<Cand> =
            (0..pairs.info.len() as u32).filter_map(|i| candidate(i, &pairs.info[i as usize], id_len, uc)).collect();
        BinaryHeap::from(v)
    };
    let mut heap = rebuild(&pairs, &voc.id_len, &uc);
    progress(Progress { stage: Stage::Count, current: n_words, total: n_words }).map_err(TrainError::Aborted)?;

    let total_merges = cfg.vocab_size.saturating_sub(voc.id2w.len()) as u64;
    let mut done: u64 = 0;
    let mut step: u32 = 0;
    let mut changes: Vec<Change> = Vec::new();
    let mut touched: Vec<u32> = Vec::new();
    progress(Progress { stage: Stage::Merge, current: 0, total: total_merges }).map_err(TrainError::Aborted)?;
    while voc.id2w.len() < cfg.vocab_size {
        let Some(top) = heap.pop() else { break };
        let info = &mut pairs.info[top.idx as usize];
        if info.version != top.version {
            continue;
        }
        let (a, b) = unpack(top.pair);
        let part_b = voc.id2w[b as usize].strip_prefix(prefix).unwrap_or(&voc.id2w[b as usize]);
        let new_tok = format!("{}{}", voc.id2w[a as usize], part_b);
        let new_len = voc.id_len[a as usize].saturating_add(voc.id_len[b as usize]);
        let new_id = voc.add(new_tok, new_len);
        if new_id as usize >= uc.len() {
            uc.push(0);
            pairs_of.push(Vec::new());
        }
        let mut pos = std::mem::take(&mut info.pos);
        info.count = 0;
        info.version += 1;
        pos.sort_unstable();
        pos.dedup();
        let weight = |ws: &crate::bpe::train::Words| -> u64 {
            pos.iter().map(|&w| ws.len[w as usize] as u64 * ws.count[w as usize]).sum()
        };
        let before = weight(&ws);
        changes.clear();
        apply_merge(&mut ws, &pos, a, b, new_id, &voc.id_len, usize::MAX, &mut changes);
        let merged = before - weight(&ws);
        uc[a as usize] -= merged;
        uc[b as usize] -= merged;
        uc[new_id as usize] += merged;

        step += 1;
        touched.clear();
        for &(key, delta, w) in &changes {
            let idx = pairs.get_or_add(key);
            let e = &mut pairs.info[idx as usize];
            let was = e.count;
            e.count += delta as i64 * ws.count[w as usize] as i64;
            if delta > 0 {
                if e.pos.last() != Some(&w) {
                    e.pos.push(w);
                }
                if was <= 0 && e.count > 0 {
                    let (x, y) = unpack(key);
                    pairs_of[x as usize].push(idx);
                    if x != y {
                        pairs_of[y as usize].push(idx);
                    }
                }
            }
            if e.stamp != step {
                e.stamp = step;
                touched.push(idx);
            }
        }
        // The merged pair is gone everywhere (a left-to-right merge leaves no (a, b) behind).
        pairs.info[top.idx as usize].count = 0;
        // Every live pair that contains a unit whose count changed gets a new score.
        for u in [a, b, new_id] {
            let list = std::mem::take(&mut pairs_of[u as usize]);
            let mut kept = Vec::with_capacity(list.len());
            for idx in list {
                let e = &mut pairs.info[idx as usize];
                if e.count <= 0 || e.stamp == step && kept.last() == Some(&idx) {
                    continue;
                }
                kept.push(idx);
                if e.stamp != step {
                    e.stamp = step;
                    touched.push(idx);
                }
            }
            pairs_of[u as usize] = kept;
        }
        for &idx in &touched {
            let e = &mut pairs.info[idx as usize];
            e.version += 1;
            if let Some(c) = candidate(idx, e, &voc.id_len, &uc) {
                heap.push(c);
            }
        }
        // Stale entries pile up (every re-score leaves one behind); rebuild from the live pairs when
        // they dominate, which keeps memory and the heap depth proportional to the live pairs.
        if heap.len() > 4 * pairs.info.len() + HEAP_SLACK {
            heap = rebuild(&pairs, &voc.id_len, &uc);
        }
        done += 1;
        if done.is_multiple_of(PROGRESS_EVERY) {
            progress(Progress { stage: Stage::Merge, current: done, total: total_merges })
                .map_err(TrainError::Aborted)?;
        }
    }
    progress(Progress { stage: Stage::Merge, current: done, total: total_merges }).map_err(TrainError::Aborted)?;
    Ok(voc.id2w)
}

// ==== Encoder ====

/// Why a WordPiece model cannot be built or cannot encode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WordPieceError {
    /// A word needs `[UNK]` but the unk token is not in the vocab (HF `MissingUnkToken`).
    MissingUnkToken(String),
    /// The vocab is unusable (duplicate ids, empty).
    Vocab(String),
}

impl std::fmt::Display for WordPieceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WordPieceError::MissingUnkToken(t) => {
                write!(f, "WordPiece: a word cannot be spelled and the unk token {t:?} is not in the vocab")
            }
            WordPieceError::Vocab(m) => write!(f, "WordPiece vocab: {m}"),
        }
    }
}

impl std::error::Error for WordPieceError {}

/// HF's `WordPiece` model: greedy longest-match-first with a continuing prefix.
///
/// The tokens are held once, in a [`TokenTable`] by id that the tokenizer shares as its own
/// (`""` where no token has the id); both maps are [`PieceIndex`]es over it. Three copies of a
/// 30k vocabulary (the map's keys, an id list and the tokenizer's table) were most of the time
/// of building a BERT pipeline from a `vocab.txt` (bench_load.py, "load + first encode": 11.2 ms
/// against HF's 10.6 ms before, 6.0 ms against 9.0 ms with the one table).
#[derive(Clone, Debug)]
pub struct WordPieceModel {
    table: Arc<TokenTable>,
    /// Which ids have a token.
    present: Vec<bool>,
    vocab_size: usize,
    vocab: PieceIndex,
    /// Tokens that start with the prefix, keyed without it.
    cont: PieceIndex,
    unk_token: String,
    unk_id: Option<u32>,
    prefix: String,
    max_input_chars_per_word: usize,
    max_bytes: usize,
    max_cont_bytes: usize,
}

/// One token of a word: (id, length in bytes of the word).
pub type Sym = (u32, u32);

impl WordPieceModel {
    /// Builds the model. Ids must be distinct (the vocab is token -> id).
    pub fn new(
        vocab: AHashMap<String, u32>,
        unk_token: &str,
        prefix: &str,
        max_input_chars_per_word: usize,
    ) -> Result<Self, WordPieceError> {
        let bound = vocab.values().map(|&i| i as usize + 1).max().unwrap_or(0);
        let vocab_size = vocab.len();
        let mut strings = vec![String::new(); bound];
        let mut present = vec![false; bound];
        // the map's keys move into the table: no token is copied
        for (t, i) in vocab {
            if present[i as usize] {
                let prev = &strings[i as usize];
                return Err(WordPieceError::Vocab(format!("id {i} is given to both {prev:?} and {t:?}")));
            }
            present[i as usize] = true;
            strings[i as usize] = t;
        }
        let table = Arc::new(TokenTable { strings });
        let (index, _) = PieceIndex::build(table.clone(), |i| present[i]); // map keys: no repeats
        let is_cont = |i: usize| present[i] && table.strings[i].starts_with(prefix);
        let cont = if prefix.is_empty() { index.clone() } else { PieceIndex::build_suffixes(table.clone(), prefix.len(), is_cont).0 };
        let max_bytes = (0..bound).filter(|&i| present[i]).map(|i| table.strings[i].len()).max().unwrap_or(0);
        let max_cont_bytes = (0..bound).filter(|&i| is_cont(i)).map(|i| table.strings[i].len() - prefix.len()).max().unwrap_or(0);
        let unk_id = index.get(unk_token);
        Ok(WordPieceModel {
            table,
            present,
            vocab_size,
            vocab: index,
            cont,
            unk_token: unk_token.to_string(),
            unk_id,
            prefix: prefix.to_string(),
            max_input_chars_per_word,
            max_bytes,
            max_cont_bytes,
        })
    }

    /// Parses an HF tokenizer.json `{"type": "WordPiece", ...}` model section.
    pub fn from_json(v: &serde_json::Value) -> Result<Self, String> {
        let vocab_obj = v.get("vocab").and_then(|x| x.as_object()).ok_or("model: missing object 'vocab'")?;
        let mut vocab = AHashMap::with_capacity(vocab_obj.len());
        for (k, id) in vocab_obj {
            let id =
                id.as_u64().filter(|&x| x < u64::from(u32::MAX)).ok_or_else(|| format!("model: bad id for {k:?}"))?;
            vocab.insert(k.clone(), id as u32);
        }
        Self::from_options(v, vocab)
    }

    /// The model of a model section's options (its `vocab` is not read) and `vocab`.
    pub fn from_options(v: &serde_json::Value, vocab: AHashMap<String, u32>) -> Result<Self, String> {
        let s = |k: &str, d: &str| -> Result<String, String> {
            match v.get(k) {
                None | Some(serde_json::Value::Null) => Ok(d.to_string()),
                Some(serde_json::Value::String(x)) => Ok(x.clone()),
                Some(o) => Err(format!("model: '{k}' must be a string, got {o}")),
            }
        };
        let max = match v.get("max_input_chars_per_word") {
            None | Some(serde_json::Value::Null) => 100,
            Some(x) => x.as_u64().ok_or("model: max_input_chars_per_word must be an integer")? as usize,
        };
        WordPieceModel::new(vocab, &s("unk_token", "[UNK]")?, &s("continuing_subword_prefix", "##")?, max)
            .map_err(|e| e.to_string())
    }

    pub fn token_to_id(&self, t: &str) -> Option<u32> {
        self.vocab.get(t)
    }

    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        self.present.get(id as usize).is_some_and(|&p| p).then(|| self.table.get(id))
    }

    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// One past the largest id.
    pub fn id_bound(&self) -> usize {
        self.present.len()
    }

    /// The tokens by id (`""` where no token has the id), for the tokenizer to share.
    pub fn token_table(&self) -> &Arc<TokenTable> {
        &self.table
    }

    pub fn unk_token(&self) -> &str {
        &self.unk_token
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Tokenizes one word, appending to `out`: greedy longest match, the whole word as one unk
    /// token when a position cannot be matched or the word has more than
    /// `max_input_chars_per_word` chars. Lengths are bytes of `word`.
    pub fn tokenize_into(&self, word: &str, out: &mut Vec<Sym>) -> Result<(), WordPieceError> {
        let base = out.len();
        let unk = |out: &mut Vec<Sym>| -> Result<(), WordPieceError> {
            out.truncate(base);
            let id = self.unk_id.ok_or_else(|| WordPieceError::MissingUnkToken(self.unk_token.clone()))?;
            out.push((id, word.len() as u32));
            Ok(())
        };
        if word.len() > self.max_input_chars_per_word && word.chars().count() > self.max_input_chars_per_word {
            return unk(out);
        }
        let n = word.len();
        let mut start = 0;
        while start < n {
            let (map, limit) =
                if start == 0 { (&self.vocab, self.max_bytes) } else { (&self.cont, self.max_cont_bytes) };
            let mut end = n.min(start + limit);
            while !word.is_char_boundary(end) {
                end -= 1;
            }
            let mut found = None;
            while end > start {
                if let Some(id) = map.get(&word[start..end]) {
                    found = Some(id);
                    break;
                }
                end -= 1;
                while !word.is_char_boundary(end) {
                    end -= 1;
                }
            }
            match found {
                Some(id) => {
                    out.push((id, (end - start) as u32));
                    start = end;
                }
                None => return unk(out),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(vocab_size: usize) -> BpeTrainerConfig {
        BpeTrainerConfig { vocab_size, ..Default::default() }
    }

    fn words(ws: &[(&str, u64)]) -> Vec<(String, u64)> {
        ws.iter().map(|(w, c)| (w.to_string(), *c)).collect()
    }

    #[test]
    fn likelihood_prefers_rare_units_that_always_co_occur() {
        // "q" is always followed by "u": score(q,##u) = 3/(3*3); (t,##h) has a higher count but a lower score.
        let w = words(&[("qu", 3), ("th", 10), ("ta", 5), ("ah", 5)]);
        let base = train(&w, &cfg(1), Criterion::Likelihood, &mut |_| Ok(())).unwrap().len();
        let v = train(&w, &cfg(base + 1), Criterion::Likelihood, &mut |_| Ok(())).unwrap();
        assert_eq!(v.last().map(String::as_str), Some("qu"));
        let f = train(&w, &cfg(base + 1), Criterion::Frequency, &mut |_| Ok(())).unwrap();
        assert_eq!(f.last().map(String::as_str), Some("th"));
    }

    /// The likelihood rule recomputed from scratch at every step (no incremental state), as the
    /// Python reference does.
    fn naive_likelihood(words: &[(String, u64)], vocab_size: usize) -> Vec<String> {
        let mut vocab = train(words, &cfg(1), Criterion::Likelihood, &mut |_| Ok(())).unwrap();
        let mut segs: Vec<(Vec<String>, u64)> = words
            .iter()
            .map(|(w, c)| {
                let s = w.chars().enumerate().map(|(i, ch)| if i == 0 { ch.to_string() } else { format!("##{ch}") });
                (s.collect(), *c)
            })
            .collect();
        let id = |vocab: &[String], t: &str| vocab.iter().position(|x| x == t).unwrap_or(usize::MAX);
        while vocab.len() < vocab_size {
            let mut units: std::collections::HashMap<String, u64> = Default::default();
            let mut pairs: std::collections::HashMap<(String, String), u64> = Default::default();
            for (s, c) in &segs {
                for u in s {
                    *units.entry(u.clone()).or_default() += c;
                }
                for p in s.windows(2) {
                    *pairs.entry((p[0].clone(), p[1].clone())).or_default() += c;
                }
            }
            let best = pairs.iter().max_by(|(p, n), (q, m)| {
                let l = **n as u128 * (units[&q.0] as u128 * units[&q.1] as u128);
                let r = **m as u128 * (units[&p.0] as u128 * units[&p.1] as u128);
                l.cmp(&r)
                    .then(n.cmp(m))
                    .then_with(|| (id(&vocab, &q.0), id(&vocab, &q.1)).cmp(&(id(&vocab, &p.0), id(&vocab, &p.1))))
            });
            let Some(((a, b), _)) = best else { break };
            let (a, b) = (a.clone(), b.clone());
            let new = format!("{a}{}", b.strip_prefix("##").unwrap_or(&b));
            if !vocab.contains(&new) {
                vocab.push(new.clone());
            }
            for (s, _) in segs.iter_mut() {
                let mut out = Vec::with_capacity(s.len());
                let mut i = 0;
                while i < s.len() {
                    if i + 1 < s.len() && s[i] == a && s[i + 1] == b {
                        out.push(new.clone());
                        i += 2;
                    } else {
                        out.push(s[i].clone());
                        i += 1;
                    }
                }
                *s = out;
            }
        }
        vocab
    }

    #[test]
    fn likelihood_equals_naive_recount_on_pseudo_random_corpora() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for case in 0..200 {
            let alphabet: Vec<char> = "abcdé".chars().take(2 + (next() % 4) as usize).collect();
            let mut ws: Vec<(String, u64)> = Vec::new();
            for _ in 0..(1 + next() % 10) {
                let w: String =
                    (0..(1 + next() % 7)).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
                if !ws.iter().any(|(x, _)| *x == w) {
                    ws.push((w, 1 + next() % 9));
                }
            }
            let size = 1 + (next() % 40) as usize;
            let fast = train(&ws, &cfg(size), Criterion::Likelihood, &mut |_| Ok(())).unwrap();
            assert_eq!(fast, naive_likelihood(&ws, size), "case {case}: {ws:?} size {size}");
        }
    }

    #[test]
    fn encoder_greedy_longest_match_and_unk() {
        let vocab: AHashMap<String, u32> = ["[UNK]", "un", "##aff", "##able", "a", "##ff", "##a", "##b"]
            .iter()
            .enumerate()
            .map(|(i, t)| (t.to_string(), i as u32))
            .collect();
        let m = WordPieceModel::new(vocab, "[UNK]", "##", 100).unwrap();
        let mut out = Vec::new();
        m.tokenize_into("unaffable", &mut out).unwrap();
        assert_eq!(out, vec![(1, 2), (2, 3), (3, 4)]);
        out.clear();
        m.tokenize_into("unx", &mut out).unwrap();
        assert_eq!(out, vec![(0, 3)]);
        let long = "a".repeat(101);
        out.clear();
        m.tokenize_into(&long, &mut out).unwrap();
        assert_eq!(out, vec![(0, 101)]);
        out.clear();
        m.tokenize_into(&"a".repeat(100), &mut out).unwrap();
        assert_eq!(out.len(), 100);
        let no_unk: AHashMap<String, u32> = [("a".to_string(), 0)].into_iter().collect();
        let m = WordPieceModel::new(no_unk, "[UNK]", "##", 100).unwrap();
        out.clear();
        assert!(matches!(m.tokenize_into("b", &mut out), Err(WordPieceError::MissingUnkToken(_))));
    }
}
