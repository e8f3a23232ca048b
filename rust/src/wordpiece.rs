//! WordPiece: the trainer (exact likelihood gain, PMI, or HF's frequency criterion) and the greedy
//! longest-match-first encoder of HF's `WordPiece` model (SPEC-tokenizers §3).
//!
//! Training
//! - The initial vocab and the words as symbol ids are built by the same code as BPE
//!   (`bpe::train::prepare`): special tokens, the alphabet by code point, the `##x` variants by code
//!   point, so ids are deterministic. A merge of `(a, b)` rewrites every non-overlapping occurrence
//!   left to right (as BPE) and the new token is `a + b` with `b`'s prefix removed; a string that
//!   already exists keeps its id.
//! - `Criterion::Frequency` is HF's `WordPieceTrainer`: the HF-compatible BPE trainer of
//!   `bpe/train.rs` with the continuing prefix, keeping the vocab and dropping the merges.
//! - `Criterion::Likelihood` is WordPiece as Schuster & Nakajima describe it: merge the pair that
//!   most increases the log-likelihood of the training data under the unigram model of the current
//!   segmentation (maximum likelihood: `p(u) = c(u) / N`, `c(u)` the occurrences of unit `u` in the
//!   segmented word counts, one-unit words included, `N = sum c(u)`). With `L = sum_u f(c(u)) - f(N)`,
//!   `f(x) = x ln x`, merging `(a, b)` at its `m` non-overlapping occurrences changes `c(a)` and
//!   `c(b)` by `-m` (`c(a)` by `-2m` when `a == b`), `c(ab)` by `+m` (`c(ab)` is the count of the
//!   merged string's token when it already exists, else 0) and `N` by `-m`, so
//!   `gain = D(c(ab) + m, m) + D(N, m) - D(c(a), m) - D(c(b), m)`   (`a != b`; `m` = the pair count)
//!   `gain = D(c(ab) + m, m) + D(N, m) - D(c(a), 2m)`               (`a == b`; `m` = sum over runs of
//!   `floor(run / 2)`, which is what the left-to-right merge rewrites, not the overlapping pair count)
//!   with `D(x, m) = f(x) - f(x - m) = m ln x - (x - m) ln(1 - m/x)`, computed in that form (with
//!   `ln_1p`) so no large terms cancel. See `subword/reference/wordpiece.py` for the same formula.
//! - `Criterion::Pmi` is the score of the HF course: `count(ab) / (count(a) * count(b))` (pointwise
//!   mutual information up to a constant), compared exactly as fractions by cross-multiplying in u128.
//!
//! Tie rules (deterministic; `subword/reference/wordpiece.py` states them too)
//! - Likelihood: the gain as computed in IEEE double precision by exactly the expression above
//!   (`D` terms of the two units summed first, then the merged token's and `N`'s, then the
//!   difference); equal doubles are a tie, broken by the higher pair count, then the smaller
//!   `(left_id, right_id)`, i.e. older units first. Gains that differ by less than the rounding
//!   (about 1e-15 relative) may be ordered by that rounding.
//! - Pmi: the exact score, then the higher pair count, then the smaller `(left_id, right_id)`.
//!
//! Options: a pair is a candidate only when its count is at least `max(1, min_frequency)` (a pair
//! below it is skipped, training does not stop, since selection is not by count) and, with
//! `max_token_length`, when the merged token has at most that many chars (plain `<=`, unlike HF BPE's
//! strict rule with unfiltered initial pairs).
//!
//! Performance notes
//! - A score changes for every pair whose inputs change, not only for the neighbours of the merged
//!   occurrences: merging `(a, b)` lowers `c(a)` and `c(b)` and raises `c(new)`. The loop keeps, per
//!   unit, the list of pairs that contain it (`pairs_of`) and, for the likelihood, the list of pairs
//!   whose merged string is that unit (`made_by`); per pair its exact count, the words it occurs in
//!   and a version number. After a merge, exactly the pairs whose count changed plus the pairs in
//!   those lists for `a`, `b` and `new` get a new version and are pushed again with their new score;
//!   each pair is pushed at most once per merge (a per-pair stamp). A popped heap entry whose
//!   version is not the pair's current one is stale and dropped.
//! - The likelihood gain also depends on `N`, which falls with every merge. `D(N, m)` grows with `N`,
//!   so an entry scored with an older (larger) `N` over-estimates its gain: a popped entry scored
//!   with an older `N` is re-scored and pushed back, and the first entry popped that was scored with
//!   the current `N` is the exact best (every other entry's key is an upper bound of its true key).
//!   This needs the computed `D(N, m)` to be monotone in `N`: its true change when `N` drops by at
//!   least 1 is about `1 / (N ln N)` of its value, far above the rounding for the `N < 2^42` that the
//!   trainer accepts.
//! - Pairs live in a table indexed by a dense u32 (one hash lookup per count change, none per
//!   re-score); `pairs_of` holds indices. Every re-score leaves a stale heap entry behind, so the heap
//!   is rebuilt from the live pairs whenever it grows past 4x the pair table (+4096): on
//!   gutenberg_en_20M at 30k, 7.05M pushes for 30k merges left a 6.8M-entry heap (318 MiB peak RSS,
//!   1.44 s) before this; with the table and the rebuild the PMI loop takes 0.60 s.
//! - Measured with `cargo run --release --example train_wordpiece_file -- gutenberg_en_20M.txt 30000
//!   pmi` (2 cores of an AMD EPYC at load ~6-7): BERT normalize + pre-tokenize + count 0.47-0.54 s
//!   (44,849 distinct words), PMI loop 0.57-0.64 s, frequency (BPE) loop 0.23 s. The likelihood
//!   figures are in the benchmark (`benchmarks/bench_wordpiece.py`).
//! - The word arena, the in-place merge of a word and the change list are BPE's (`merge_word`,
//!   `apply_merge`, parallel over large position lists); unit counts are updated from the word
//!   lengths before and after (each merged occurrence removes one symbol).
//!
//! Encoding: `WordPieceModel` keeps two maps, whole tokens and continuation tokens with the prefix
//! stripped, so no string is built per lookup; lookups start at the longest candidate that can be
//! in the vocab (the longest token's byte length), which cannot change the result.

use ahash::AHashMap;
use std::borrow::Cow;
use std::cell::Cell;
use std::cmp::Ordering;
use std::sync::Arc;

use crate::encoding::TokenTable;
use crate::piece_index::PieceIndex;
use crate::wordpiece_cache;
use crate::wordpiece_prefixes::{self, Longest, PrefixTable};
use std::collections::BinaryHeap;

use crate::bpe::train::{
    apply_merge, check_affixes, corpus_of, count_pairs, pack, prepare, unpack, BpeTrainerConfig, Change, Corpus,
    Progress, ProgressFn, Selected, Stage, TrainError, Vocab, Words,
};

/// How WordPiece chooses the next merge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Criterion {
    /// The largest gain in training log-likelihood under the unigram model of the current
    /// segmentation (Schuster & Nakajima 2012), computed from counts.
    Likelihood,
    /// `count(ab) / (count(a) count(b))`: the score the HF course describes.
    Pmi,
    /// The highest pair count: HF's `WordPieceTrainer` (BPE with a prefix, vocab only).
    Frequency,
}

impl Criterion {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "likelihood" => Ok(Criterion::Likelihood),
            "pmi" => Ok(Criterion::Pmi),
            "frequency" => Ok(Criterion::Frequency),
            other => Err(format!("unknown criterion {other:?} (expected 'likelihood', 'pmi' or 'frequency')")),
        }
    }

    /// Whether the criterion reads unit counts (so a selection must keep those of the words left out).
    pub fn needs_units(self) -> bool {
        self != Criterion::Frequency
    }
}

/// How many merges between two progress calls.
const PROGRESS_EVERY: u64 = 256;

/// Stale heap entries tolerated beyond 4x the pair table before a rebuild (none in tests, so the
/// rebuild path runs there).
const HEAP_SLACK: usize = if cfg!(test) { 0 } else { 4096 };

/// No token id (a pair whose merged string is not a token yet).
const NONE: u32 = u32::MAX;

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
        Criterion::Likelihood | Criterion::Pmi => {
            check_affixes(&cfg)?;
            train_scored(Cow::Borrowed(words), &corpus_of(words, &cfg), &cfg, criterion, progress)
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
/// `units` for the likelihood and PMI criteria): the same vocab as [`train`] on every word. The
/// selection is consumed (its strings are freed once the arena is built).
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
        Criterion::Likelihood | Criterion::Pmi => {
            selected.check_options(&cfg, true)?;
            let (words, corpus) = selected.into_parts();
            train_scored(Cow::Owned(words), &corpus, &cfg, criterion, progress)
        }
    }
}

// ==== The likelihood gain ====

/// `f(x) - f(x - m)` with `f(x) = x ln x` (`f(0) = 0`), for `x >= m`, written so that no large
/// terms cancel: `m ln x - (x - m) ln(1 - m/x)`.
fn xlnx_drop(x: u64, m: u64) -> f64 {
    if m == 0 {
        return 0.0;
    }
    let (xf, mf) = (x as f64, m as f64);
    if x == m {
        return mf * xf.ln();
    }
    mf * xf.ln() - (x - m) as f64 * (-mf / xf).ln_1p()
}

/// Which units a merge of `(a, b)` touches: usually `a`, `b` and the merged token, three units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `a != b` and the merged string is neither: `a`, `b` lose `m`, the merged token gains `m`.
    Distinct,
    /// `a == b`: `a` loses `2m`, the merged token gains `m`.
    Same,
    /// The merged string is `b` itself (only when `a`'s string is the continuing prefix, e.g. the
    /// word `##b` gives `(##, ##b) -> ##b`): `a` loses `m`, `b` is unchanged.
    RemakesRight,
}

/// The gain in training log-likelihood (nats) of merging `m` occurrences of `(a, b)`, where
/// `c(a) = ca`, `c(b) = cb` (ignored unless `Shape::Distinct`), the merged token's count is `cab`
/// (ignored for `Shape::RemakesRight`) and `total` units are in the segmentation. See the module
/// notes for the derivation.
pub fn likelihood_gain(ca: u64, cb: u64, cab: u64, m: u64, total: u64, shape: Shape) -> f64 {
    gain_with(ca, cb, cab, m, xlnx_drop(total, m), shape)
}

/// [`likelihood_gain`] with its `D(total, m)` term given (computed once per total and `m`).
#[inline]
fn gain_with(ca: u64, cb: u64, cab: u64, m: u64, d_total: f64, shape: Shape) -> f64 {
    let (lose, made) = match shape {
        Shape::Distinct => (xlnx_drop(ca, m) + xlnx_drop(cb, m), xlnx_drop(cab + m, m)),
        Shape::Same => (xlnx_drop(ca, 2 * m), xlnx_drop(cab + m, m)),
        Shape::RemakesRight => (xlnx_drop(ca, m), 0.0),
    };
    (made + d_total) - lose
}

/// Occurrences the left-to-right merge of `(a, a)` rewrites in the words `pos` (sorted, unique):
/// `floor(run / 2)` per run of `a`, weighted by word count.
fn self_merges(ws: &Words, pos: &[u32], a: u32) -> u64 {
    let mut m = 0;
    for &w in pos {
        let st = ws.start[w as usize];
        let s = &ws.syms[st..st + ws.len[w as usize] as usize];
        let mut run = 0u64;
        let mut halves = 0u64;
        for &x in s {
            if x == a {
                run += 1;
            } else {
                halves += run / 2;
                run = 0;
            }
        }
        halves += run / 2;
        m += halves * ws.count[w as usize];
    }
    m
}

// ==== The merge loop (likelihood and PMI) ====

/// What a heap entry was scored with.
#[derive(Clone, Copy)]
enum Key {
    /// `pc / (ua * ub)`.
    Pmi { ua: u64, ub: u64 },
    /// The likelihood gain, computed with `total` units in the segmentation.
    Gain { gain: f64, total: u64 },
}

/// A heap entry: a pair with what its score was computed from.
struct Cand {
    key: Key,
    /// The pair count.
    pc: u64,
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
        let score = match (self.key, o.key) {
            // pc/(ua*ub) vs o.pc/(o.ua*o.ub), exactly: cross-multiplied in u128 (counts < 2^42).
            (Key::Pmi { ua, ub }, Key::Pmi { ua: oa, ub: ob }) => {
                (self.pc as u128 * (oa as u128 * ob as u128)).cmp(&(o.pc as u128 * (ua as u128 * ub as u128)))
            }
            // No NaN can arise (all logs are of counts >= 1); -0.0 == 0.0 as in Python.
            (Key::Gain { gain, .. }, Key::Gain { gain: og, .. }) => gain.partial_cmp(&og).unwrap_or(Ordering::Equal),
            _ => Ordering::Equal, // one criterion per heap
        };
        score.then(self.pc.cmp(&o.pc)).then_with(|| o.pair.cmp(&self.pair))
    }
}

struct PairInfo {
    key: u64,
    count: i64,
    /// Likelihood: the occurrences a merge would rewrite (the count, or the runs' halves for `(a, a)`).
    merges: u64,
    /// Likelihood: the token the merged string already is ([`NONE`]: not a token yet).
    makes: u32,
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
    /// The pair's index, and whether it was just added.
    fn get_or_add(&mut self, key: u64) -> (u32, bool) {
        let n = self.info.len() as u32;
        let idx = *self.index.entry(key).or_insert(n);
        if idx == n {
            self.info.push(PairInfo { key, count: 0, merges: 0, makes: NONE, version: 0, stamp: 0, pos: Vec::new() });
        }
        (idx, idx == n)
    }
}

/// The string the merge of `(a, b)` makes: `a` then `b` without its prefix.
fn merged_string(voc: &Vocab, a: u32, b: u32, prefix: &str) -> String {
    let sb = &voc.id2w[b as usize];
    format!("{}{}", voc.id2w[a as usize], sb.strip_prefix(prefix).unwrap_or(sb))
}

/// What makes a pair a candidate, and how it is scored.
#[derive(Clone, Copy)]
struct Rules {
    criterion: Criterion,
    min_count: u64,
    max_len: usize,
}

impl Rules {
    fn with<'a>(self, id_len: &'a [u32], uc: &'a [u64], total: u64, dn: &'a [Cell<(u64, f64)>]) -> Scorer<'a> {
        Scorer { criterion: self.criterion, id_len, uc, total, min_count: self.min_count, max_len: self.max_len, dn }
    }
}

/// The loop's state besides the words: what scores read.
struct Scorer<'a> {
    criterion: Criterion,
    id_len: &'a [u32],
    uc: &'a [u64],
    total: u64,
    min_count: u64,
    max_len: usize,
    /// `D(total, m)` for small `m`, each with the total it was computed for (every pair with the same
    /// `m` shares it; the same expression, so the same bits as computing it in place).
    dn: &'a [Cell<(u64, f64)>],
}

impl Scorer<'_> {
    /// The heap entry of pair `idx`, or None when it is not a candidate.
    fn candidate(&self, idx: u32, e: &PairInfo) -> Option<Cand> {
        let (a, b) = unpack(e.key);
        let ok = e.count > 0
            && e.count as u64 >= self.min_count
            && (self.id_len[a as usize] as usize).saturating_add(self.id_len[b as usize] as usize) <= self.max_len;
        if !ok {
            return None;
        }
        let (ua, ub) = (self.uc[a as usize], self.uc[b as usize]);
        let key = match self.criterion {
            Criterion::Likelihood => {
                let cab = if e.makes == NONE { 0 } else { self.uc[e.makes as usize] };
                let shape = if a == b {
                    Shape::Same
                } else if e.makes == b {
                    Shape::RemakesRight
                } else {
                    Shape::Distinct
                };
                let m = e.merges;
                let dn = match self.dn.get(m as usize) {
                    Some(cell) => {
                        let (t, v) = cell.get();
                        if t == self.total {
                            v
                        } else {
                            let v = xlnx_drop(self.total, m);
                            cell.set((self.total, v));
                            v
                        }
                    }
                    None => xlnx_drop(self.total, m),
                };
                Key::Gain { gain: gain_with(ua, ub, cab, m, dn, shape), total: self.total }
            }
            _ => Key::Pmi { ua, ub },
        };
        Some(Cand { key, pc: e.count as u64, pair: e.key, idx, version: e.version })
    }

    fn rebuild(&self, pairs: &Pairs) -> BinaryHeap<Cand> {
        let v: Vec<Cand> =
            (0..pairs.info.len() as u32).filter_map(|i| self.candidate(i, &pairs.info[i as usize])).collect();
        BinaryHeap::from(v)
    }
}

/// Refreshes `e.merges` (likelihood): the count for `a != b`, the runs' halves for `(a, a)` (its
/// position list is sorted and deduplicated on the way).
fn refresh_merges(e: &mut PairInfo, ws: &Words) {
    let (a, b) = unpack(e.key);
    if a != b {
        e.merges = e.count.max(0) as u64;
        return;
    }
    if e.count <= 0 {
        e.merges = 0;
        return;
    }
    e.pos.sort_unstable();
    e.pos.dedup();
    e.merges = self_merges(ws, &e.pos, a);
}

/// Records in `pairs` and `made_by` every existing pair whose merged string is token `t` (called
/// when `t` is created): each split of `t` into a token and a prefixed token.
fn register_makers(t: u32, voc: &Vocab, prefix: &str, pairs: &mut Pairs, made_by: &mut [Vec<u32>]) {
    let s = &voc.id2w[t as usize];
    let mut right = String::with_capacity(prefix.len() + s.len());
    for (i, _) in s.char_indices().skip(1) {
        let Some(&x) = voc.w2id.get(&s[..i]) else { continue };
        right.clear();
        right.push_str(prefix);
        right.push_str(&s[i..]);
        let Some(&y) = voc.w2id.get(right.as_str()) else { continue };
        if let Some(&idx) = pairs.index.get(&pack(x, y)) {
            let e = &mut pairs.info[idx as usize];
            if e.makes == NONE {
                e.makes = t;
                made_by[t as usize].push(idx);
            }
        }
    }
}

/// Marks every live pair of `list` as touched at `step` (once), dropping dead pairs and adjacent
/// repeats from the list.
fn touch_list(list: &mut Vec<u32>, pairs: &mut Pairs, step: u32, touched: &mut Vec<u32>) {
    // Compacted in place (these lists hold thousands of pairs for frequent units).
    let mut kept = 0;
    for r in 0..list.len() {
        let idx = list[r];
        let e = &mut pairs.info[idx as usize];
        if e.count <= 0 || e.stamp == step && kept > 0 && list[kept - 1] == idx {
            continue;
        }
        list[kept] = idx;
        kept += 1;
        if e.stamp != step {
            e.stamp = step;
            touched.push(idx);
        }
    }
    list.truncate(kept);
}

fn train_scored(
    words: Cow<'_, [(String, u64)]>,
    corpus: &Corpus,
    cfg: &BpeTrainerConfig,
    criterion: Criterion,
    progress: &mut ProgressFn<'_>,
) -> Result<Vec<String>, TrainError> {
    let prefix = cfg.continuing_subword_prefix.as_deref().unwrap_or("##");
    let total_units = corpus.total_units;
    if total_units >= 1u128 << 42 {
        return Err(TrainError::Config(format!(
            "the corpus has {total_units} characters counted with multiplicity; the {} criterion supports < 2^42",
            if criterion == Criterion::Pmi { "pmi" } else { "likelihood" }
        )));
    }
    let likelihood = criterion == Criterion::Likelihood;
    let (mut voc, mut ws) = prepare(&words, corpus, cfg)?;
    let n_words = words.len() as u64;
    drop(words);

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
    let mut total: u64 = uc.iter().sum();
    progress(Progress { stage: Stage::Count, current: 0, total: n_words }).map_err(TrainError::Aborted)?;
    let (counts, initial) = count_pairs(&ws);
    let mut pairs =
        Pairs { index: AHashMap::with_capacity(initial.len() * 2), info: Vec::with_capacity(initial.len() * 2) };
    let mut pairs_of: Vec<Vec<u32>> = vec![Vec::new(); voc.id2w.len()];
    let mut made_by: Vec<Vec<u32>> = vec![Vec::new(); if likelihood { voc.id2w.len() } else { 0 }];
    for (key, pos) in initial {
        let (idx, _) = pairs.get_or_add(key);
        let (a, b) = unpack(key);
        pairs_of[a as usize].push(idx);
        if a != b {
            pairs_of[b as usize].push(idx);
        }
        let e = &mut pairs.info[idx as usize];
        e.count = counts.get(&key).copied().unwrap_or(0);
        e.pos = pos;
        if likelihood {
            refresh_merges(e, &ws);
            if let Some(&t) = voc.w2id.get(&merged_string(&voc, a, b, prefix)) {
                e.makes = t;
                made_by[t as usize].push(idx);
            }
        }
    }
    let min_count = cfg.min_frequency.max(1);
    let max_len = cfg.max_token_length.unwrap_or(usize::MAX);
    let rules = Rules { criterion, min_count, max_len };
    let dn: Vec<Cell<(u64, f64)>> = vec![Cell::new((u64::MAX, 0.0)); if likelihood { 4096 } else { 0 }];
    let mut heap = rules.with(&voc.id_len, &uc, total, &dn).rebuild(&pairs);
    progress(Progress { stage: Stage::Count, current: n_words, total: n_words }).map_err(TrainError::Aborted)?;

    let total_merges = cfg.vocab_size.saturating_sub(voc.id2w.len()) as u64;
    let mut done: u64 = 0;
    let mut step: u32 = 0;
    let mut changes: Vec<Change> = Vec::new();
    let mut touched: Vec<u32> = Vec::new();
    progress(Progress { stage: Stage::Merge, current: 0, total: total_merges }).map_err(TrainError::Aborted)?;
    while voc.id2w.len() < cfg.vocab_size {
        let Some(top) = heap.pop() else { break };
        if pairs.info[top.idx as usize].version != top.version {
            continue;
        }
        if let Key::Gain { total: t, .. } = top.key {
            if t != total {
                // Scored with an older N: an upper bound. Re-score and let the heap decide again.
                if let Some(c) =
                    rules.with(&voc.id_len, &uc, total, &dn).candidate(top.idx, &pairs.info[top.idx as usize])
                {
                    heap.push(c);
                }
                continue;
            }
        }
        let (a, b) = unpack(top.pair);
        let new_tok = merged_string(&voc, a, b, prefix);
        let new_len = voc.id_len[a as usize].saturating_add(voc.id_len[b as usize]);
        let new_id = voc.add(new_tok, new_len);
        if new_id as usize >= uc.len() {
            uc.push(0);
            pairs_of.push(Vec::new());
            if likelihood {
                made_by.push(Vec::new());
                register_makers(new_id, &voc, prefix, &mut pairs, &mut made_by);
            }
        }
        let info = &mut pairs.info[top.idx as usize];
        let mut pos = std::mem::take(&mut info.pos);
        info.count = 0;
        info.version += 1;
        pos.sort_unstable();
        pos.dedup();
        let weight =
            |ws: &Words| -> u64 { pos.iter().map(|&w| ws.len[w as usize] as u64 * ws.count[w as usize]).sum() };
        let before = weight(&ws);
        changes.clear();
        apply_merge(&mut ws, &pos, a, b, new_id, &voc.id_len, usize::MAX, &mut changes);
        let merged = before - weight(&ws);
        uc[a as usize] -= merged;
        uc[b as usize] -= merged;
        uc[new_id as usize] += merged;
        total -= merged;

        step += 1;
        touched.clear();
        for &(key, delta, w) in &changes {
            let (idx, added) = pairs.get_or_add(key);
            if added && likelihood {
                let (x, y) = unpack(key);
                if let Some(&t) = voc.w2id.get(&merged_string(&voc, x, y, prefix)) {
                    pairs.info[idx as usize].makes = t;
                    made_by[t as usize].push(idx);
                }
            }
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
                    if likelihood && e.makes != NONE {
                        made_by[e.makes as usize].push(idx); // a repeat only costs a deduped touch
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
        // Every live pair that contains a unit whose count changed gets a new score, and (likelihood)
        // every pair whose merged string is such a unit.
        for u in [a, b, new_id] {
            touch_list(&mut pairs_of[u as usize], &mut pairs, step, &mut touched);
            if likelihood {
                touch_list(&mut made_by[u as usize], &mut pairs, step, &mut touched);
            }
        }
        let sc = rules.with(&voc.id_len, &uc, total, &dn);
        for &idx in &touched {
            let e = &mut pairs.info[idx as usize];
            e.version += 1;
            if likelihood {
                refresh_merges(e, &ws);
            }
            if let Some(c) = sc.candidate(idx, e) {
                heap.push(c);
            }
        }
        // Stale entries pile up (every re-score leaves one behind); rebuild from the live pairs when
        // they dominate, which keeps memory and the heap depth proportional to the live pairs.
        if heap.len() > 4 * pairs.info.len() + HEAP_SLACK {
            heap = sc.rebuild(&pairs);
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
    /// The prefix table of the walk ([`PrefixState`]), shared by clones.
    prefixes: Arc<PrefixState>,
    /// This model's key in the threads' word caches ([`crate::wordpiece_cache`]); clones, which
    /// tokenize alike, share it.
    cache_id: u64,
}

/// A model with this thread's word cache borrowed ([`WordPieceModel::with_words`]).
pub struct CachedWords<'a> {
    model: &'a WordPieceModel,
    slots: &'a mut wordpiece_cache::WordSlots,
}

impl CachedWords<'_> {
    /// [`WordPieceModel::tokenize_with`] against the borrowed cache.
    #[inline]
    pub fn tokenize_with(&mut self, word: &str, sink: impl FnOnce(&[Sym])) -> Result<(), WordPieceError> {
        let slots = &mut *self.slots;
        let key = wordpiece_cache::pack_word(word.as_bytes());
        let mut syms = std::mem::take(&mut slots.scratch);
        syms.clear();
        let found = key.is_some_and(|k| slots.get(k, &mut syms));
        let done = if found { Ok(()) } else { self.model.tokenize_uncached(word, &mut syms) };
        if done.is_ok() {
            if let (false, Some(k)) = (found, key) {
                slots.put(k, &syms);
            }
            sink(&syms);
        }
        slots.scratch = syms;
        done
    }
}

/// The next [`WordPieceModel::cache_id`].
static NEXT_CACHE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// [`PrefixTable`] of a model's tokens (kind 0) and continuation tokens without their prefix (kind 1),
/// built once the model has met [`PREFIXES_AFTER`] positions whose rest was not one token (the table
/// takes 1 MB and a few ms for a BERT vocab, which a short text would not pay back).
#[derive(Debug, Default)]
struct PrefixState {
    table: std::sync::OnceLock<Option<PrefixTable>>,
    misses: std::sync::atomic::AtomicUsize,
}

/// Positions whose rest was not a token before the prefix table is built.
const PREFIXES_AFTER: usize = 1024;

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
        Ok(Self::from_parts(index, present, vocab_size, unk_token, prefix, max_input_chars_per_word))
    }

    /// The model of an index whose ids are its table's positions, every one a token (a vocab.txt;
    /// see `io::vocab_txt::parse`), keeping the index as it is.
    pub fn from_index(index: PieceIndex, unk_token: &str, prefix: &str, max_input_chars_per_word: usize) -> Self {
        let n = index.table().strings.len();
        Self::from_parts(index, vec![true; n], n, unk_token, prefix, max_input_chars_per_word)
    }

    fn from_parts(
        index: PieceIndex,
        present: Vec<bool>,
        vocab_size: usize,
        unk_token: &str,
        prefix: &str,
        max_input_chars_per_word: usize,
    ) -> Self {
        let table = index.table().clone();
        let bound = present.len();
        let is_cont = |i: usize| present[i] && table.strings[i].starts_with(prefix);
        let cont = if prefix.is_empty() {
            index.clone()
        } else {
            PieceIndex::build_suffixes(table.clone(), prefix.len(), is_cont).0
        };
        let max_bytes = (0..bound).filter(|&i| present[i]).map(|i| table.strings[i].len()).max().unwrap_or(0);
        let max_cont_bytes =
            (0..bound).filter(|&i| is_cont(i)).map(|i| table.strings[i].len() - prefix.len()).max().unwrap_or(0);
        let unk_id = index.get(unk_token);
        WordPieceModel {
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
            prefixes: Arc::default(),
            cache_id: NEXT_CACHE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// The prefix table once [`PREFIXES_AFTER`] positions asked for it (`None` before, or when an id is
    /// too large for it).
    #[inline]
    fn prefix_table(&self) -> Option<&PrefixTable> {
        if let Some(t) = self.prefixes.table.get() {
            return t.as_ref();
        }
        if self.prefixes.misses.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < PREFIXES_AFTER {
            return None;
        }
        self.prefixes
            .table
            .get_or_init(|| {
                if self.present.len() > wordpiece_prefixes::MAX_ID as usize {
                    return None;
                }
                let keys = (0..self.present.len()).filter(|&i| self.present[i]).flat_map(|i| {
                    let t = self.table.strings[i].as_bytes();
                    // Continuation tokens keyed without the prefix (every token when there is none).
                    let cont = t.starts_with(self.prefix.as_bytes()).then(|| (1u8, &t[self.prefix.len()..], i as u32));
                    [Some((0u8, t, i as u32)), cont].into_iter().flatten()
                });
                Some(PrefixTable::build(keys))
            })
            .as_ref()
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
        let (unk, prefix, max) = Self::options(v)?;
        WordPieceModel::new(vocab, &unk, &prefix, max).map_err(|e| e.to_string())
    }

    /// Like [`Self::from_options`], with the vocab as an index over the tokens by id (see [`Self::from_index`]).
    pub fn from_options_index(v: &serde_json::Value, index: PieceIndex) -> Result<Self, String> {
        let (unk, prefix, max) = Self::options(v)?;
        Ok(WordPieceModel::from_index(index, &unk, &prefix, max))
    }

    /// A model section's `unk_token`, `continuing_subword_prefix` and `max_input_chars_per_word`.
    fn options(v: &serde_json::Value) -> Result<(String, String, usize), String> {
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
        Ok((s("unk_token", "[UNK]")?, s("continuing_subword_prefix", "##")?, max))
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
    /// `max_input_chars_per_word` chars. Lengths are bytes of `word`. Short words are answered from
    /// this thread's word cache when they were tokenized before ([`crate::wordpiece_cache`]).
    ///
    /// ```
    /// use ahash::AHashMap;
    /// use subword_core::wordpiece::WordPieceModel;
    /// let vocab: AHashMap<String, u32> =
    ///     [("[UNK]", 0), ("play", 1), ("##ing", 2)].into_iter().map(|(t, i)| (t.to_string(), i)).collect();
    /// let model = WordPieceModel::new(vocab, "[UNK]", "##", 100).unwrap();
    /// let mut out = Vec::new();
    /// model.tokenize_into("playing", &mut out).unwrap();
    /// model.tokenize_into("playing", &mut out).unwrap(); // the second from the cache
    /// assert_eq!(out, vec![(1, 4), (2, 3), (1, 4), (2, 3)]);
    /// ```
    pub fn tokenize_into(&self, word: &str, out: &mut Vec<Sym>) -> Result<(), WordPieceError> {
        let Some(key) = wordpiece_cache::pack_word(word.as_bytes()) else {
            return self.tokenize_uncached(word, out);
        };
        wordpiece_cache::with_slots(self.cache_id, |slots| {
            if slots.get(key, out) {
                return Ok(());
            }
            let base = out.len();
            self.tokenize_uncached(word, out)?;
            slots.put(key, &out[base..]);
            Ok(())
        })
    }

    /// Like [`Self::tokenize_into`], handing the tokens to `sink`.
    pub fn tokenize_with(&self, word: &str, sink: impl FnOnce(&[Sym])) -> Result<(), WordPieceError> {
        self.with_words(|words| words.tokenize_with(word, sink))
    }

    /// Runs `f` with this thread's word cache for this model borrowed once, for many words (a text's):
    /// one thread-local access instead of one per word.
    ///
    /// ```
    /// use ahash::AHashMap;
    /// use subword_core::wordpiece::WordPieceModel;
    /// let vocab: AHashMap<String, u32> =
    ///     [("[UNK]", 0), ("play", 1), ("##ing", 2)].into_iter().map(|(t, i)| (t.to_string(), i)).collect();
    /// let model = WordPieceModel::new(vocab, "[UNK]", "##", 100).unwrap();
    /// let mut ids = Vec::new();
    /// model.with_words(|words| {
    ///     for w in ["playing", "play", "xyz"] {
    ///         words.tokenize_with(w, |syms| ids.extend(syms.iter().map(|s| s.0))).unwrap();
    ///     }
    /// });
    /// assert_eq!(ids, vec![1, 2, 1, 0]);
    /// ```
    pub fn with_words<R>(&self, f: impl FnOnce(&mut CachedWords<'_>) -> R) -> R {
        wordpiece_cache::with_slots(self.cache_id, |slots| f(&mut CachedWords { model: self, slots }))
    }

    /// [`Self::tokenize_into`] without the word cache.
    fn tokenize_uncached(&self, word: &str, out: &mut Vec<Sym>) -> Result<(), WordPieceError> {
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
            let (map, limit, kind) =
                if start == 0 { (&self.vocab, self.max_bytes, 0) } else { (&self.cont, self.max_cont_bytes, 1) };
            // The whole rest first (most words are one token, most rests one continuation token); then
            // the walk over the prefix table where it is built; then the index, longest first.
            let rest = &word[start..];
            let mut end = n.min(start + limit);
            let mut found = None;
            if end == n {
                found = map.get(rest);
            }
            // A rest of one char that is not a token has no token prefix either (a token is a whole str):
            // unknown at once (each unknown Chinese char, a word of its own under BERT, was walked).
            let one_char = end == n && rest.chars().nth(1).is_none();
            if found.is_none() && !one_char {
                end = end.min(n - 1).max(start);
                match self.prefix_table().map(|t| {
                    let skip = if kind == 0 { 0 } else { self.prefix.len() };
                    t.longest(kind, rest.as_bytes(), |id| {
                        self.table.strings[id as usize].as_bytes().get(skip..).unwrap_or(&[])
                    })
                }) {
                    Some(Longest::Found(len, id)) => {
                        found = Some(id);
                        end = start + len;
                    }
                    Some(Longest::NoToken) => {} // no token starts the rest: the word is unknown
                    Some(Longest::Unsure) | None => {
                        while !word.is_char_boundary(end) {
                            end -= 1;
                        }
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
                    }
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
    fn pmi_prefers_rare_units_that_always_co_occur() {
        // "q" is always followed by "u": score(q,##u) = 3/(3*3); (t,##h) has a higher count but a lower score.
        let w = words(&[("qu", 3), ("th", 10), ("ta", 5), ("ah", 5)]);
        let base = train(&w, &cfg(1), Criterion::Pmi, &mut |_| Ok(())).unwrap().len();
        let v = train(&w, &cfg(base + 1), Criterion::Pmi, &mut |_| Ok(())).unwrap();
        assert_eq!(v.last().map(String::as_str), Some("qu"));
        let f = train(&w, &cfg(base + 1), Criterion::Frequency, &mut |_| Ok(())).unwrap();
        assert_eq!(f.last().map(String::as_str), Some("th"));
    }

    /// `sum_u c(u) ln(c(u) / N)` of a segmentation, from scratch.
    fn log_likelihood(segs: &[(Vec<String>, u64)]) -> f64 {
        let mut units: std::collections::HashMap<&str, u64> = Default::default();
        for (s, c) in segs {
            for u in s {
                *units.entry(u.as_str()).or_default() += c;
            }
        }
        let n: u64 = units.values().sum();
        units.values().map(|&c| c as f64 * (c as f64 / n as f64).ln()).sum()
    }

    #[test]
    fn likelihood_gain_equals_the_recomputed_log_likelihood_difference() {
        // A run of three ##a holds 2 overlapping (##a, ##a) but the merge rewrites 1.
        let segs = |v: &[(&[&str], u64)]| -> Vec<(Vec<String>, u64)> {
            v.iter().map(|(s, c)| (s.iter().map(|x| x.to_string()).collect(), *c)).collect()
        };
        let before = segs(&[(&["a", "##a", "##a", "##a"], 3), (&["b", "##a", "##a", "##a"], 1), (&["a", "##b"], 2)]);
        let after = segs(&[(&["a", "##aa", "##a"], 3), (&["b", "##aa", "##a"], 1), (&["a", "##b"], 2)]);
        // c(##a) = 9 + 3 = 12, (##a, ##a): runs of 3 -> 1 merge each, m = 3 + 1 = 4; N = 12 + 3 + 1 + 4 = 20.
        let g = likelihood_gain(12, 12, 0, 4, 20, Shape::Same);
        assert!((g - (log_likelihood(&after) - log_likelihood(&before))).abs() < 1e-9, "{g}");
        // The merged token exists already with count 2: (x, ##y) -> xy where "xy" is a word of its own.
        let before = segs(&[(&["x", "##y"], 3), (&["xy"], 2), (&["x"], 1)]);
        let after = segs(&[(&["xy"], 3), (&["xy"], 2), (&["x"], 1)]);
        let g = likelihood_gain(4, 3, 2, 3, 9, Shape::Distinct);
        assert!((g - (log_likelihood(&after) - log_likelihood(&before))).abs() < 1e-9, "{g}");
        // The word "##b" with a literal '#': (#, ###) made "##", and (##, ##b) makes "##b" = b itself.
        let before = segs(&[(&["##", "##b"], 2), (&["b", "##b"], 3)]);
        let after = segs(&[(&["##b"], 2), (&["b", "##b"], 3)]);
        let g = likelihood_gain(2, 5, 5, 2, 10, Shape::RemakesRight);
        assert!((g - (log_likelihood(&after) - log_likelihood(&before))).abs() < 1e-9, "{g}");
    }

    /// The scored rules recomputed from scratch at every step (no incremental state), as the Python
    /// reference does: every unit and pair recounted, the merged occurrences of `(a, a)` counted by runs.
    fn naive(words: &[(String, u64)], vocab_size: usize, criterion: Criterion) -> Vec<String> {
        let mut vocab = train(words, &cfg(1), criterion, &mut |_| Ok(())).unwrap();
        let mut segs: Vec<(Vec<String>, u64)> = words
            .iter()
            .map(|(w, c)| {
                let s = w.chars().enumerate().map(|(i, ch)| if i == 0 { ch.to_string() } else { format!("##{ch}") });
                (s.collect(), *c)
            })
            .collect();
        let id = |vocab: &[String], t: &str| vocab.iter().position(|x| x == t).unwrap_or(usize::MAX);
        let merged = |a: &str, b: &str| format!("{a}{}", b.strip_prefix("##").unwrap_or(b));
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
            let n: u64 = units.values().sum();
            let runs = |a: &str| -> u64 {
                segs.iter()
                    .map(|(s, c)| {
                        let mut m = 0;
                        let mut i = 0;
                        while i + 1 < s.len() {
                            if s[i] == a && s[i + 1] == a {
                                m += 1;
                                i += 2;
                            } else {
                                i += 1;
                            }
                        }
                        m * c
                    })
                    .sum()
            };
            let gain = |p: &(String, String), n_p: u64| -> f64 {
                let made = merged(&p.0, &p.1);
                let shape = if p.0 == p.1 {
                    Shape::Same
                } else if made == p.1 {
                    Shape::RemakesRight
                } else {
                    Shape::Distinct
                };
                let m = if p.0 == p.1 { runs(&p.0) } else { n_p };
                let cab = units.get(&made).copied().unwrap_or(0);
                likelihood_gain(units[&p.0], units[&p.1], cab, m, n, shape)
            };
            let best = pairs.iter().max_by(|(p, n), (q, m)| {
                let score = match criterion {
                    Criterion::Pmi => {
                        let l = **n as u128 * (units[&q.0] as u128 * units[&q.1] as u128);
                        let r = **m as u128 * (units[&p.0] as u128 * units[&p.1] as u128);
                        l.cmp(&r)
                    }
                    _ => gain(p, **n).partial_cmp(&gain(q, **m)).unwrap_or(Ordering::Equal),
                };
                score
                    .then(n.cmp(m))
                    .then_with(|| (id(&vocab, &q.0), id(&vocab, &q.1)).cmp(&(id(&vocab, &p.0), id(&vocab, &p.1))))
            });
            let Some(((a, b), _)) = best else { break };
            let (a, b) = (a.clone(), b.clone());
            let new = merged(&a, &b);
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
    fn scored_criteria_equal_naive_recount_on_pseudo_random_corpora() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for case in 0..400 {
            let criterion = if case % 2 == 0 { Criterion::Likelihood } else { Criterion::Pmi };
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
            let fast = train(&ws, &cfg(size), criterion, &mut |_| Ok(())).unwrap();
            assert_eq!(fast, naive(&ws, size, criterion), "case {case} {criterion:?}: {ws:?} size {size}");
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

    /// HF's greedy longest-match-first written from its definition (every token tried at each position),
    /// against the model before and after its prefix table is built, with and without a prefix, on random
    /// words over an alphabet of one- to four-byte chars, many of them not starting with any token.
    #[test]
    fn greedy_matching_equals_its_definition_before_and_after_the_prefix_table() {
        let mut x = 9u64;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let alphabet = ["a", "b", "c", "d", "é", "ü", "中", "日", "🦀"];
        let mut word =
            |n: usize| -> String { (0..n).map(|_| alphabet[next(alphabet.len() as u64) as usize]).collect() };
        for prefix in ["##", ""] {
            let mut tokens: Vec<String> = vec!["[UNK]".into()];
            let mut attempt = 0usize;
            while tokens.len() < 200 {
                // Lengths cycle over attempts (not tokens): a length whose words are all taken is left.
                attempt += 1;
                let n = 1 + attempt % 4;
                let t = if tokens.len() % 2 == 0 { format!("{prefix}{}", word(n)) } else { word(n) };
                if !tokens.contains(&t) && t != "[UNK]" {
                    tokens.push(t);
                }
            }
            let vocab: AHashMap<String, u32> = tokens.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
            let m = WordPieceModel::new(vocab, "[UNK]", prefix, 100).unwrap();
            let definition = |w: &str| -> Vec<Sym> {
                let mut out = Vec::new();
                let mut start = 0;
                while start < w.len() {
                    let best = tokens
                        .iter()
                        .enumerate()
                        .filter_map(|(i, t)| {
                            let key = if start == 0 { Some(t.as_str()) } else { t.strip_prefix(prefix) };
                            key.filter(|k| !k.is_empty() && w[start..].starts_with(k)).map(|k| (k.len(), i as u32))
                        })
                        .max();
                    match best {
                        Some((len, id)) => {
                            out.push((id, len as u32));
                            start += len;
                        }
                        None => return vec![(0, w.len() as u32)],
                    }
                }
                out
            };
            let words: Vec<String> = (0..6000).map(|k| word(1 + k % 9)).collect();
            let mut out = Vec::new();
            for w in &words {
                out.clear();
                m.tokenize_into(w, &mut out).unwrap();
                assert_eq!(out, definition(w), "{w:?} (prefix {prefix:?})");
            }
            assert!(m.prefixes.table.get().is_some_and(|t| t.is_some()), "the prefix table was never built");
            // Again, now that the short words are in this thread's word cache (and some have pushed
            // others out of their slots): the cached answers, both entry points, and a clone's.
            let clone = m.clone();
            for (k, w) in words.iter().enumerate() {
                out.clear();
                m.tokenize_into(w, &mut out).unwrap();
                assert_eq!(out, definition(w), "{w:?} again (prefix {prefix:?})");
                let mut seen = Vec::new();
                let by = if k % 2 == 0 { &m } else { &clone };
                by.tokenize_with(w, |s| seen.extend_from_slice(s)).unwrap();
                assert_eq!(seen, out, "{w:?} through tokenize_with (prefix {prefix:?})");
            }
        }
    }
}
