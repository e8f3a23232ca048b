//! The HF-compatible BPE trainer (`tokenizers` 0.23.3 `BpeTrainer`, SPEC-tokenizers §1.2–1.3).
//!
//! Performance notes
//! Measured on gutenberg_en_20M.txt (20 MB, 395k lines, 75,236 distinct byte-level words), byte-level
//! BPE to 32,000 tokens (31,744 merges), 2 cores of an AMD EPYC shared with other jobs, with
//! `cargo run --release --example train_bpe_file -- FILE 32000` (release, fat LTO):
//! - read the file: 23 ms;
//! - pre-tokenize + count (`count.rs`): 82 ms on 2 threads (122 ms on 1), i.e. the GPT-2 scanner
//!   (63 ms/20 MB on one core) plus hash-map counting of 4.7M pieces;
//! - map the 75k distinct words through the byte table: 4-7 ms;
//! - alphabet + words -> symbol ids + initial pair counts: ~12 ms (vocab 257, 1 merge: 14 ms total);
//! - the merge loop: ~110-130 ms for 31,744 merges (~4 us per merge): heap pops including lazy
//!   refreshes, in-place rewriting of the words in the arena, and pair-count updates. The merge
//!   loop stays single-threaded except for position lists of >= PAR_MIN_WORDS words; on this corpus
//!   the 2-thread and 1-thread timings are within noise (75k distinct words is small), so the
//!   threshold is set high enough that a thread hand-off is always paid for by the work.
//! - total in Rust: 0.26-0.31 s. Through Python (`subword.trainers.train_bpe`, streaming the file):
//!   0.47-0.55 s, the extra being Python line iteration, the corpus sha256 and building the
//!   `BPE`/`Tokenizer` objects (validation of 32k merges). HF `tokenizers` 0.23.3 `Tokenizer.train`
//!   on the same file: 2.8-5.0 s (load-dependent) and ~103 MiB peak RSS vs ~82 MiB for ours.
//!   See benchmarks/RESULTS.md for the median-of-5 figures.
//! - `perf record -g` of the example on 1 thread (RAYON_NUM_THREADS=1, 1,336 samples): scanner +
//!   counting closure (inlined together) 25%, key `memcmp` in the word map 9%, hashing 4%, page
//!   faults (fresh memory for the file and maps) 11%; merge loop: `train` body (pair-count map
//!   updates) 8%, `BinaryHeap::pop` 7%, `merge_word` 7%, `apply_merge` 3%, malloc/free ~7%.
//!   So on this corpus counting costs about as much as all 31,744 merges together.
//! - Memory: the words live in one `Vec<u32>` arena (no per-word allocation); pair positions are
//!   owned by heap entries and freed when an entry is consumed, as in HF.
//! - Memory per distinct word, measured (`subword train byte-bpe --from-counts W.swc --vocab-size
//!   32000`, peak RSS, words of 5-12 letters made by benchmarks/bench_scale.py's `variant`), before
//!   the counts file was streamed: 200k words 128 MiB, 1M words 465 MiB, 2M words 915 MiB, i.e.
//!   about 470 bytes per distinct word over a ~60 MiB base: the loaded count table (~80 B + the
//!   word), the byte-mapped copy handed to the trainer (~40 B + the word), the arena (4 B per symbol)
//!   and, most of it, the pair -> positions sets of the initial pair counting (~8-16 B per pair
//!   occurrence per word). On benchmarks/bench_scale.py's generated corpus (0.25-2 GB, 0.47M-2.2M
//!   distinct words, real word lengths) the slope was 356 bytes per word (827 MiB at 2.2M words).
//! - `--from-counts` now streams the file's word list into `select.rs` instead of loading a
//!   `WordCounter` (the count table is gone; the encoded list, ~`len + 2` bytes per word, is held
//!   while the words are selected), and training consumes the selection, freeing the word strings
//!   once the arena is built, before the pair tables grow. Measured on the same 2,011,501-word file
//!   (`/usr/bin/time -v subword train byte-bpe --from-counts w2000000.swc --vocab-size 32000`, full
//!   release builds, 2 shared cores at load 3.2-3.9): peak RSS 890-911 MiB before, 573-608 MiB now
//!   (-33%), i.e. **~280 bytes per distinct word the trainer holds** over the ~60 MiB base (before:
//!   ~434). Wall time 8.7-15.7 s before, 5.6-13 s now (the load decides most of it). At
//!   `--min-frequency 2` / `5` the trainer held 2,011,460 / 2,011,439 of the words (same peak).
//! - `min_frequency` (select.rs) leaves out, exactly, only the words none of whose adjacent
//!   initial pairs reaches it over the whole corpus. On real English that is few words, because
//!   almost every character bigram is common: gutenberg_en_20M (byte-level, 75,236 distinct words)
//!   keeps 75,148 / 75,129 / 75,101 / 74,776 / 73,416 of them at min_frequency 2 / 5 / 10 / 100 / 1000
//!   (0.12% to 2.4% left out; BERT WordPiece counts: 0.18% to 3.3% of 44,849). Peak RSS of training
//!   at 32k from its counts: 80.1 MiB loaded (before), 70.6 / 71.0 / 70.9 MiB streamed at
//!   min_frequency 0 / 2 / 5, 0.7-1.2 s each (noise at this size). It matters more where rare
//!   characters are common (noisy web text, many scripts); the exact rule cannot do more (a word with one frequent pair can change). So a
//!   10M-word corpus still needs ~2.9 GB to train; `subword count --min-count` (or `train
//!   --min-count`) shrinks N when that is too much, and changes the result.
//!
//! What decides the output, in order:
//! 1. ids: special tokens in the given order (a repeat is skipped), then the alphabet sorted by code
//!    point, then the prefixed/suffixed char variants (`##x`, `x</w>`), then merged tokens in the
//!    order they are created. A merge whose string already exists reuses that id.
//! 2. merge selection: the pair with the highest count; ties go to the smallest `(left_id, right_id)`.
//! 3. a merge rewrites every non-overlapping occurrence, left to right (`a a a` -> `aa a`).
//! 4. `max_token_length`: a new neighbour pair is counted only if its char length is strictly below
//!    the limit; the initial char pairs are never filtered (as HF).
//! 5. `min_frequency`: training stops at the first selected pair whose count is below it.
//!
//! Where HF is random and we are deterministic (documented, tested):
//! - `limit_alphabet` drops the lowest-count chars; among equal counts HF's order is hash order. We
//!   drop the chars with the LARGER code point first.
//! - the `##x`/`x</w>` variants get ids in hash order in HF. We give them ids in code-point order
//!   of the variant string.
//!
//! Exactness notes. The loop mirrors HF's bookkeeping, not just its result: every heap entry owns
//! the word positions that were added when it was pushed (HF's `where_to_update`), stale entries are
//! refreshed lazily, and the per-word change list follows `Word::merge` (including the decrements
//! that touch the merged pair itself). So even the odd cases where one token string is reached by
//! two merge paths behave as in HF. One deliberate difference: symbol lengths for
//! `max_token_length` are per token id (the length of the path that created it), where HF tracks
//! them per occurrence; they differ only in that same-string case (HF #2320). Pair counts are i64
//! (HF: i32, which overflows past 2^31, HF #2058).

use ahash::AHashMap;
use rayon::prelude::*;

pub use crate::bpe::select::{corpus_of, Corpus, Selected};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Options of the trainer (the HF `BpeTrainer` options that affect the model).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BpeTrainerConfig {
    pub vocab_size: usize,
    pub min_frequency: u64,
    pub special_tokens: Vec<String>,
    /// Chars that are always in the alphabet (HF keeps only the first char of each given string;
    /// the caller does that).
    pub initial_alphabet: Vec<char>,
    pub limit_alphabet: Option<usize>,
    pub max_token_length: Option<usize>,
    pub continuing_subword_prefix: Option<String>,
    pub end_of_word_suffix: Option<String>,
}

impl Default for BpeTrainerConfig {
    fn default() -> Self {
        BpeTrainerConfig {
            vocab_size: 30000,
            min_frequency: 0,
            special_tokens: Vec::new(),
            initial_alphabet: Vec::new(),
            limit_alphabet: None,
            max_token_length: None,
            continuing_subword_prefix: None,
            end_of_word_suffix: None,
        }
    }
}

/// The trained model: the vocab in id order and the merges in rank order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct BpeModelOut {
    pub vocab: Vec<String>,
    pub merges: Vec<(String, String)>,
}

/// Training stages reported to the progress callback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Counting the initial pairs; `current`/`total` are words.
    Count,
    /// The merge loop; `current`/`total` are merges done / merges wanted at most.
    Merge,
}

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::Count => "count",
            Stage::Merge => "merge",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    pub stage: Stage,
    pub current: u64,
    pub total: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrainError {
    /// The options are inconsistent.
    Config(String),
    /// The progress callback asked to stop (e.g. Ctrl-C in Python); the message says why.
    Aborted(String),
}

impl std::fmt::Display for TrainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrainError::Config(m) => write!(f, "invalid BPE trainer options: {m}"),
            TrainError::Aborted(m) => write!(f, "BPE training aborted: {m}"),
        }
    }
}

impl std::error::Error for TrainError {}

/// The progress callback: return `Err(reason)` to abort training.
pub type ProgressFn<'a> = dyn FnMut(Progress) -> Result<(), String> + 'a;

/// How many merges between two progress calls.
const PROGRESS_EVERY: u64 = 256;

/// Position lists at least this long are merged in parallel (below it, thread hand-off costs more
/// than the work).
const PAR_MIN_WORDS: usize = 8192;

#[inline]
pub(crate) fn pack(a: u32, b: u32) -> u64 {
    ((a as u64) << 32) | b as u64
}

#[inline]
pub(crate) fn unpack(p: u64) -> (u32, u32) {
    ((p >> 32) as u32, p as u32)
}

/// A heap entry: HF's `Merge { pair, count, pos }`, ordered by count, then smaller pair first.
struct Entry {
    count: u64,
    pair: u64,
    pos: Vec<u32>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.count == other.count && self.pair == other.pair
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // Packing (left, right) into one u64 keeps the lexicographic order of the tuple.
        self.count.cmp(&other.count).then_with(|| other.pair.cmp(&self.pair))
    }
}

/// All words' symbols in one arena: word `w` occupies `syms[start[w] .. start[w] + len[w]]`, and
/// shrinks in place as merges apply (no per-word allocation).
pub(crate) struct Words {
    pub(crate) syms: Vec<u32>,
    pub(crate) start: Vec<usize>,
    pub(crate) len: Vec<u32>,
    pub(crate) count: Vec<u64>,
}

/// Raw pointer to the arena for the parallel merge; sound because the positions merged in one step
/// are distinct words, i.e. disjoint slices.
#[derive(Clone, Copy)]
struct SymPtr(*mut u32);
unsafe impl Send for SymPtr {}
unsafe impl Sync for SymPtr {}

/// One pair-count change produced by a merge: (pair, +1/-1, word index).
pub(crate) type Change = (u64, i32, u32);

/// Merges every non-overlapping `(a, b)` in `s` (left to right) into `new`, pushing HF's
/// `Word::merge` change list. Returns the new length.
#[inline]
#[allow(clippy::too_many_arguments)]
pub(crate) fn merge_word(
    s: &mut [u32],
    a: u32,
    b: u32,
    new: u32,
    id_len: &[u32],
    max_len: usize,
    w: u32,
    changes: &mut Vec<Change>,
) -> usize {
    let n = s.len();
    let new_len = id_len[new as usize] as usize;
    let mut r = 0;
    let mut o = 0;
    while r < n {
        if r + 1 < n && s[r] == a && s[r + 1] == b {
            if o > 0 {
                let prev = s[o - 1];
                changes.push((pack(prev, a), -1, w));
                if (id_len[prev as usize] as usize).saturating_add(new_len) < max_len {
                    changes.push((pack(prev, new), 1, w));
                }
            }
            if r + 2 < n {
                let next = s[r + 2];
                changes.push((pack(b, next), -1, w));
                if (id_len[next as usize] as usize).saturating_add(new_len) < max_len {
                    changes.push((pack(new, next), 1, w));
                }
            }
            s[o] = new;
            o += 1;
            r += 2;
        } else {
            s[o] = s[r];
            o += 1;
            r += 1;
        }
    }
    o
}

/// Chars of the alphabet, HF `compute_alphabet` with a deterministic `limit_alphabet` tie-break,
/// from the per-char counts of every word (`select.rs` sums them, over all words, pruned or not).
pub(crate) fn compute_alphabet(char_counts: AHashMap<char, u64>, cfg: &BpeTrainerConfig) -> Vec<char> {
    let mut counts = char_counts;
    for &ch in &cfg.initial_alphabet {
        counts.insert(ch, u64::MAX);
    }
    let mut kept: Vec<(char, u64)> = counts.into_iter().collect();
    if let Some(limit) = cfg.limit_alphabet {
        if kept.len() > limit {
            let to_remove = kept.len() - limit;
            // Lowest counts go first; among equal counts the larger code point goes first.
            kept.sort_unstable_by(|x, y| x.1.cmp(&y.1).then_with(|| y.0.cmp(&x.0)));
            kept.drain(..to_remove);
        }
    }
    let mut chars: Vec<char> = kept.into_iter().map(|(c, _)| c).collect();
    chars.sort_unstable();
    chars
}

/// The vocabulary under construction: id -> string, string -> id, id -> char length.
pub(crate) struct Vocab {
    pub(crate) id2w: Vec<String>,
    pub(crate) w2id: AHashMap<String, u32>,
    pub(crate) id_len: Vec<u32>,
}

impl Vocab {
    pub(crate) fn add(&mut self, s: String, char_len: u32) -> u32 {
        if let Some(&id) = self.w2id.get(&s) {
            return id;
        }
        let id = self.id2w.len() as u32;
        self.w2id.insert(s.clone(), id);
        self.id2w.push(s);
        self.id_len.push(char_len);
        id
    }
}

/// The string of char `ch` as a symbol at the start (`first`) and/or end (`last`) of a word, when
/// the continuing prefix or the end-of-word suffix applies there (`##x`, `x</w>`); None: plain `ch`.
pub(crate) fn variant(ch: char, first: bool, last: bool, prefix: Option<&str>, suffix: Option<&str>) -> Option<String> {
    let p = if first { None } else { prefix };
    let s = if last { suffix } else { None };
    if p.is_none() && s.is_none() {
        return None;
    }
    let mut out = String::new();
    if let Some(p) = p {
        out.push_str(p);
    }
    out.push(ch);
    if let Some(s) = s {
        out.push_str(s);
    }
    Some(out)
}

/// Steps 1-3 of training, shared with the WordPiece trainer (`wordpiece.rs`): checks the options,
/// builds the initial vocab (specials, alphabet by code point, prefixed/suffixed char variants) and
/// the words as symbol ids. The alphabet, the variants and the totals come from `corpus`, computed
/// over every word of the corpus (`select.rs`), so `words` may be only the words that can change.
pub(crate) fn prepare(
    words: &[(String, u64)],
    corpus: &Corpus,
    cfg: &BpeTrainerConfig,
) -> Result<(Vocab, Words), TrainError> {
    check_affixes(cfg)?;
    if words.len() > u32::MAX as usize {
        return Err(TrainError::Config(format!("too many distinct words ({})", words.len())));
    }
    // Pair counts are i64 sums of word counts; refuse inputs that could overflow them.
    let total = corpus.total_count;
    if total > (i64::MAX as u64) / 2 {
        return Err(TrainError::Config(format!("word counts sum to {total}, more than this trainer supports (2^62)")));
    }
    let mut voc = Vocab { id2w: Vec::new(), w2id: AHashMap::new(), id_len: Vec::new() };

    // 1. Special tokens, in order, repeats skipped. Their length never matters (they are not in
    //    words), but keep it meaningful.
    for s in &cfg.special_tokens {
        let l = s.chars().count() as u32;
        voc.add(s.clone(), l);
    }
    // 2. Alphabet by code point.
    for &ch in &corpus.alphabet {
        voc.add(ch.to_string(), 1);
    }
    // 3. Char variants (those the corpus creates, by code point), then the words as symbol ids.
    let prefix = cfg.continuing_subword_prefix.as_deref();
    let suffix = cfg.end_of_word_suffix.as_deref();
    let variant = |ch: char, first: bool, last: bool| variant(ch, first, last, prefix, suffix);
    // A char is kept iff its one-char string is in the vocab (HF's check), so a char dropped by
    // `limit_alphabet` vanishes from the words and its neighbours become adjacent.
    let mut char_id_dense = [u32::MAX; 512];
    for (id, w) in voc.id2w.iter().enumerate() {
        let mut it = w.chars();
        if let (Some(c), None) = (it.next(), it.next()) {
            if (c as u32) < 512 {
                char_id_dense[c as usize] = id as u32;
            }
        }
    }
    let char_id = |voc: &Vocab, c: char| -> Option<u32> {
        if (c as u32) < 512 {
            let id = char_id_dense[c as usize];
            (id != u32::MAX).then_some(id)
        } else {
            let mut buf = [0u8; 4];
            voc.w2id.get(&*c.encode_utf8(&mut buf)).copied()
        }
    };
    // `corpus.variants` is sorted and unique; a variant equal to a special token keeps its id.
    for v in &corpus.variants {
        if !voc.w2id.contains_key(v) {
            voc.add(v.clone(), 1);
        }
    }

    let mut ws = Words {
        syms: Vec::with_capacity(words.iter().map(|(w, _)| w.len()).sum()),
        start: Vec::with_capacity(words.len()),
        len: Vec::with_capacity(words.len()),
        count: Vec::with_capacity(words.len()),
    };
    for (w, c) in words {
        let st = ws.syms.len();
        let n = w.chars().count();
        for (i, ch) in w.chars().enumerate() {
            let Some(cid) = char_id(&voc, ch) else { continue };
            let id = match variant(ch, i == 0, i + 1 == n) {
                None => cid,
                Some(v) => match voc.w2id.get(&v) {
                    Some(&id) => id,
                    None => return Err(TrainError::Config(format!("internal: variant {v:?} has no id"))),
                },
            };
            ws.syms.push(id);
        }
        ws.start.push(st);
        ws.len.push((ws.syms.len() - st) as u32);
        ws.count.push(*c);
    }

    Ok((voc, ws))
}

/// Checks the options `prepare` and `select` rely on.
pub(crate) fn check_affixes(cfg: &BpeTrainerConfig) -> Result<(), TrainError> {
    if cfg.continuing_subword_prefix.as_deref() == Some("") {
        return Err(TrainError::Config("continuing_subword_prefix must not be empty (use None)".into()));
    }
    if cfg.end_of_word_suffix.as_deref() == Some("") {
        return Err(TrainError::Config("end_of_word_suffix must not be empty (use None)".into()));
    }
    Ok(())
}

/// Trains an HF-compatible BPE model on `(word, count)` pairs (words as the model sees them, e.g.
/// byte-level mapped). The order of `words` does not change the result.
pub fn train(
    words: &[(String, u64)],
    cfg: &BpeTrainerConfig,
    progress: &mut ProgressFn<'_>,
) -> Result<BpeModelOut, TrainError> {
    check_affixes(cfg)?;
    train_with(Cow::Borrowed(words), &corpus_of(words, cfg), cfg, progress)
}

/// Trains on words chosen by [`crate::bpe::select::select`]: the same model as [`train`] on every
/// word of the corpus, since the words left out can never take part in a merge. The selection is
/// consumed: its word strings are freed once the arena is built, before the pair tables grow.
pub fn train_selected(
    selected: Selected,
    cfg: &BpeTrainerConfig,
    progress: &mut ProgressFn<'_>,
) -> Result<BpeModelOut, TrainError> {
    selected.check_options(cfg, false)?;
    let (words, corpus) = selected.into_parts();
    train_with(Cow::Owned(words), &corpus, cfg, progress)
}

/// Steps 1-5 on `words` (freed after step 3 when owned).
fn train_with(
    words: Cow<'_, [(String, u64)]>,
    corpus: &Corpus,
    cfg: &BpeTrainerConfig,
    progress: &mut ProgressFn<'_>,
) -> Result<BpeModelOut, TrainError> {
    let max_len = cfg.max_token_length.unwrap_or(usize::MAX);
    let prefix = cfg.continuing_subword_prefix.as_deref();
    let (mut voc, mut ws) = prepare(&words, corpus, cfg)?;
    let n_words = words.len() as u64;
    drop(words);

    // 4. Initial pair counts and positions (never filtered by max_token_length).
    progress(Progress { stage: Stage::Count, current: 0, total: n_words }).map_err(TrainError::Aborted)?;
    let (mut pair_counts, initial) = count_pairs(&ws);
    let mut heap: BinaryHeap<Entry> = BinaryHeap::with_capacity(initial.len());
    for (pair, pos) in initial {
        let c = pair_counts.get(&pair).copied().unwrap_or(0);
        if c > 0 {
            heap.push(Entry { count: c as u64, pair, pos });
        }
    }
    progress(Progress { stage: Stage::Count, current: n_words, total: n_words }).map_err(TrainError::Aborted)?;

    // 5. The merge loop.
    let total_merges = cfg.vocab_size.saturating_sub(voc.id2w.len()) as u64;
    let mut merges: Vec<(u32, u32)> = Vec::new();
    let mut changes: Vec<Change> = Vec::new();
    let mut where_to_update: AHashMap<u64, Vec<u32>> = AHashMap::new();
    progress(Progress { stage: Stage::Merge, current: 0, total: total_merges }).map_err(TrainError::Aborted)?;
    while voc.id2w.len() < cfg.vocab_size {
        let Some(mut top) = heap.pop() else { break };
        // HF compares with the i32 count cast to u64; i64 -> u64 wraps the same way.
        let cur = pair_counts.get(&top.pair).copied().unwrap_or(0) as u64;
        if top.count != cur {
            top.count = cur;
            heap.push(top);
            continue;
        }
        if top.count < 1 || cfg.min_frequency > top.count {
            break;
        }
        let (a, b) = unpack(top.pair);
        let part_a = &voc.id2w[a as usize];
        let part_b = &voc.id2w[b as usize];
        let part_b = match prefix {
            Some(p) => part_b.strip_prefix(p).unwrap_or(part_b),
            None => part_b,
        };
        let new_tok = format!("{part_a}{part_b}");
        let new_len = voc.id_len[a as usize].saturating_add(voc.id_len[b as usize]);
        let new_id = voc.add(new_tok, new_len);
        merges.push((a, b));

        changes.clear();
        apply_merge(&mut ws, &top.pos, a, b, new_id, &voc.id_len, max_len, &mut changes);
        for &(pair, delta, w) in &changes {
            let c = pair_counts.entry(pair).or_insert(0);
            *c += delta as i64 * ws.count[w as usize] as i64;
            if delta > 0 {
                let v = where_to_update.entry(pair).or_default();
                // A word's changes are contiguous, so checking the last entry removes repeats.
                if v.last() != Some(&w) {
                    v.push(w);
                }
            }
        }
        for (pair, pos) in where_to_update.drain() {
            let c = pair_counts.get(&pair).copied().unwrap_or(0);
            if c > 0 {
                heap.push(Entry { count: c as u64, pair, pos });
            }
        }
        let done = merges.len() as u64;
        if done.is_multiple_of(PROGRESS_EVERY) {
            progress(Progress { stage: Stage::Merge, current: done, total: total_merges })
                .map_err(TrainError::Aborted)?;
        }
    }
    progress(Progress { stage: Stage::Merge, current: merges.len() as u64, total: total_merges })
        .map_err(TrainError::Aborted)?;

    let merges =
        merges.into_iter().map(|(a, b)| (voc.id2w[a as usize].clone(), voc.id2w[b as usize].clone())).collect();
    Ok(BpeModelOut { vocab: voc.id2w, merges })
}

/// A pair and the distinct words it occurs in.
pub(crate) type PairPositions = (u64, Vec<u32>);

/// Per pair: its count and the distinct words it occurs in (ascending).
type PairTable = AHashMap<u64, (i64, Vec<u32>)>;

/// Initial pair counts and, per pair, the distinct words it occurs in (ascending).
pub(crate) fn count_pairs(ws: &Words) -> (AHashMap<u64, i64>, Vec<PairPositions>) {
    let n = ws.len.len();
    // Chunks of words counted in parallel, merged in chunk order so position lists stay sorted.
    let chunk = (n / (rayon::current_num_threads() * 4)).max(4096);
    let parts: Vec<PairTable> = (0..n)
        .into_par_iter()
        .step_by(chunk)
        .map(|lo| {
            let hi = (lo + chunk).min(n);
            let mut m = PairTable::new();
            for w in lo..hi {
                let s = &ws.syms[ws.start[w]..ws.start[w] + ws.len[w] as usize];
                let c = ws.count[w] as i64;
                for win in s.windows(2) {
                    let e = m.entry(pack(win[0], win[1])).or_insert((0, Vec::new()));
                    e.0 += c;
                    if e.1.last() != Some(&(w as u32)) {
                        e.1.push(w as u32);
                    }
                }
            }
            m
        })
        .collect();
    let mut all = PairTable::new();
    for part in parts {
        if all.is_empty() {
            all = part;
            continue;
        }
        for (k, (c, mut pos)) in part {
            let e = all.entry(k).or_insert((0, Vec::new()));
            e.0 += c;
            e.1.append(&mut pos);
        }
    }
    let mut counts = AHashMap::with_capacity(all.len());
    let mut lists = Vec::with_capacity(all.len());
    for (k, (c, pos)) in all {
        counts.insert(k, c);
        lists.push((k, pos));
    }
    (counts, lists)
}

/// Applies one merge to the words in `pos`, collecting the pair-count changes in word order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply_merge(
    ws: &mut Words,
    pos: &[u32],
    a: u32,
    b: u32,
    new_id: u32,
    id_len: &[u32],
    max_len: usize,
    changes: &mut Vec<Change>,
) {
    if pos.len() < PAR_MIN_WORDS || rayon::current_num_threads() < 2 {
        for &w in pos {
            let st = ws.start[w as usize];
            let n = ws.len[w as usize] as usize;
            let new_n = merge_word(&mut ws.syms[st..st + n], a, b, new_id, id_len, max_len, w, changes);
            ws.len[w as usize] = new_n as u32;
        }
        return;
    }
    // Parallel: the positions of one heap entry are distinct words (built with a last-element
    // dedupe over word-ordered changes), so each task writes disjoint slices of the arena.
    let ptr = SymPtr(ws.syms.as_mut_ptr());
    let starts = &ws.start;
    let lens = &ws.len;
    let chunk = pos.len().div_ceil(rayon::current_num_threads() * 4);
    // Per task: its changes and the new lengths of its words.
    type TaskOut = (Vec<Change>, Vec<(u32, u32)>);
    let results: Vec<TaskOut> = pos
        .par_chunks(chunk)
        .map(|ps| {
            let p = ptr;
            let mut ch = Vec::new();
            let mut new_lens = Vec::with_capacity(ps.len());
            for &w in ps {
                let st = starts[w as usize];
                let n = lens[w as usize] as usize;
                // SAFETY: `w` is unique within `pos`, so this slice is touched by one task only,
                // and it lies inside the arena (start + len <= syms.len()).
                let s = unsafe { std::slice::from_raw_parts_mut(p.0.add(st), n) };
                let nn = merge_word(s, a, b, new_id, id_len, max_len, w, &mut ch);
                new_lens.push((w, nn as u32));
            }
            (ch, new_lens)
        })
        .collect();
    for (ch, nl) in results {
        changes.extend_from_slice(&ch);
        for (w, l) in nl {
            ws.len[w as usize] = l;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(words: &[(&str, u64)], cfg: &BpeTrainerConfig) -> BpeModelOut {
        let ws: Vec<(String, u64)> = words.iter().map(|(w, c)| (w.to_string(), *c)).collect();
        train(&ws, cfg, &mut |_| Ok(())).unwrap()
    }

    fn m(out: &BpeModelOut) -> Vec<String> {
        out.merges.iter().map(|(a, b)| format!("{a} {b}")).collect()
    }

    fn cfg(vocab_size: usize) -> BpeTrainerConfig {
        BpeTrainerConfig { vocab_size, ..Default::default() }
    }

    #[test]
    fn e1_initial_ties_by_codepoint_id() {
        let out = run(&[("cd", 1), ("ab", 1), ("ba", 1)], &cfg(100));
        assert_eq!(m(&out), ["a b", "b a", "c d"]);
        assert_eq!(out.vocab, ["a", "b", "c", "d", "ab", "ba", "cd"]);
    }

    #[test]
    fn e2_older_token_wins_ties() {
        let out = run(&[("zzzz", 2), ("aaaa", 2), ("zz", 1)], &cfg(100));
        assert_eq!(m(&out), ["z z", "a a", "zz zz", "aa aa"]);
    }

    #[test]
    fn e5_specials_dedup_and_codepoint_alphabet() {
        let c = BpeTrainerConfig {
            vocab_size: 12,
            special_tokens: vec!["<pad>".into(), "<unk>".into(), "<pad>".into()],
            ..Default::default()
        };
        let out = run(&[("héllo", 1), ("wörld", 1)], &c);
        assert_eq!(&out.vocab[..10], ["<pad>", "<unk>", "d", "h", "l", "o", "r", "w", "é", "ö"]);
        assert_eq!(out.vocab.len(), 12);
    }

    #[test]
    fn e6_min_frequency_stops() {
        let c = BpeTrainerConfig { vocab_size: 100, min_frequency: 2, ..Default::default() };
        let out = run(&[("ab", 2), ("cd", 1)], &c);
        assert_eq!(m(&out), ["a b"]);
    }

    #[test]
    fn e7_max_token_length_strict() {
        let expect: [(Option<usize>, &[&str]); 6] = [
            (None, &["a b", "c d", "ab cd", "abcd e"]),
            (Some(1), &["a b", "c d"]),
            (Some(2), &["a b", "c d"]),
            (Some(3), &["a b", "c d"]),
            (Some(4), &["a b", "c d", "cd e"]),
            (Some(5), &["a b", "c d", "ab cd"]),
        ];
        for (l, want) in expect {
            let c = BpeTrainerConfig { vocab_size: 100, max_token_length: l, ..Default::default() };
            assert_eq!(m(&run(&[("abcde", 3)], &c)), want, "max_token_length={l:?}");
        }
    }

    #[test]
    fn overlapping_occurrences_merge_left_to_right() {
        let out = run(&[("aaa", 1)], &cfg(100));
        assert_eq!(m(&out), ["a a", "aa a"]);
    }

    #[test]
    fn limit_alphabet_drops_chars_and_joins_neighbours() {
        let c = BpeTrainerConfig {
            vocab_size: 100,
            limit_alphabet: Some(2),
            continuing_subword_prefix: Some("##".into()),
            ..Default::default()
        };
        let out = run(&[("aXb", 5)], &c);
        // All three chars tie at 5: the largest code point ('b') is dropped, X and a are kept,
        // and `aXb` becomes [a, ##X].
        assert_eq!(&out.vocab[..2], ["X", "a"]);
        assert_eq!(out.vocab[2], "##X");
        assert_eq!(m(&out), ["a ##X"]);
    }

    #[test]
    fn prefix_and_suffix_variants_in_codepoint_order() {
        let c = BpeTrainerConfig {
            vocab_size: 100,
            continuing_subword_prefix: Some("##".into()),
            end_of_word_suffix: Some("</w>".into()),
            ..Default::default()
        };
        let out = run(&[("abc", 2), ("b", 1)], &c);
        assert_eq!(out.vocab[..6], ["a", "b", "c", "##b", "##c</w>", "b</w>"]);
        assert_eq!(m(&out), ["a ##b", "ab ##c</w>"]);
        assert_eq!(out.vocab[6..], ["ab", "abc</w>"]);
    }

    #[test]
    fn huge_counts_are_refused_not_wrapped() {
        let ws = vec![("ab".to_string(), u64::MAX / 2), ("ab".to_string(), u64::MAX / 2)];
        assert!(matches!(train(&ws, &cfg(10), &mut |_| Ok(())), Err(TrainError::Config(_))));
    }

    #[test]
    fn vocab_size_and_progress_abort() {
        let out = run(&[("abcdef", 1)], &cfg(8));
        assert_eq!(out.vocab.len(), 8);
        let ws = vec![("abcdef".to_string(), 1u64)];
        let err = train(&ws, &cfg(100), &mut |p| if p.stage == Stage::Merge { Err("stop".into()) } else { Ok(()) });
        assert_eq!(err, Err(TrainError::Aborted("stop".into())));
    }

    #[test]
    fn word_order_does_not_matter_and_parallel_path_agrees() {
        // Enough distinct words that the commonest pairs take the parallel merge path (>= PAR_MIN_WORDS).
        let mut words = Vec::new();
        let mut x: u64 = 12345;
        for i in 0..24000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = 2 + (x >> 60) as usize;
            let w: String = (0..len).map(|k| (b'a' + ((x >> (k * 3)) % 4) as u8) as char).collect();
            words.push((format!("{w}{i}"), 1 + (x >> 40) % 7));
        }
        let c = cfg(300);
        let a = train(&words, &c, &mut |_| Ok(())).unwrap();
        words.reverse();
        let b = train(&words, &c, &mut |_| Ok(())).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.vocab.len(), 300);
    }
}
