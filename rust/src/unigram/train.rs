//! The Unigram trainer: seed pieces, EM (forward-backward + Bayesian M-step), loss-driven pruning,
//! final selection. Two modes (see [`Compat`]):
//!
//! `Spm` (SentencePiece 0.2.3 `unigram_model_trainer.cc`, read for facts):
//! - seeds: every valid substring (2..=max length chars) that is an LCP interval of a suffix array
//!   of the *byte* string of the sentences (each copy followed by `\0`), i.e. a repeat followed by
//!   two different bytes, starting and ending on a char boundary (a trailing `\0` dropped, the
//!   counts of `s` and `s\0` summed); `score = f32(freq) * chars`; top `seed_size` by (score desc,
//!   byte length desc, bytes asc); all chars (count desc, code point asc, counts in f32) first;
//!   scores are log-probabilities summed in f64. With `split_by_whitespace=false` (pieces span
//!   words) this runs on a real suffix array (`seed.rs`); otherwise no valid piece crosses a word
//!   boundary and, when words repeat enough to make it cheaper (not in text without spaces), we
//!   count substrings per distinct (word, follower), which gives the same intervals and
//!   frequencies at a fraction of the cost (see [`WhitespaceRules`], `per_word_is_cheaper`).
//!   Both count per chunk of ~500 MiB of text as sentencepiece does (`seed::chunk_sentences`,
//!   `seed::SeedCounts`: counts summed over the chunks, the best kept between chunks).
//! - EM over the words (over the sentences, in load order, with `split_by_whitespace=false`),
//!   `num_threads` stripes (unit i goes to stripe i mod T), per-stripe f32
//!   sums added in stripe order; unk marginals go to piece 0; M-step drops expected < 0.5,
//!   `score = digamma(e) - digamma(Σe)`.
//! - prune (after every `num_sub_iterations` EM rounds) by `F·(log p_i − Σ_alt log p'_n)` with the
//!   best alternative segmentation of each piece, keep `max(desired, shrinking_factor·size)`; stop
//!   once the size is at most `desired = vocab_size·1.1`; drop pieces unreachable in their own string;
//!   finalize: required chars, then the best-scored pieces.
//!
//! Sampling (`input_sentence_size`, applied to the lines before training by the Python front):
//! with `shuffle_input_sentence=false` sentencepiece keeps the first N loadable lines, as we do
//! (identical models, tests/test_unigram_spm_exact.py). With `shuffle_input_sentence=true` (its
//! default) it runs a reservoir sampler on an `absl::BitGen` seeded with a fixed 12345678 (not
//! `set_random_generator_seed`), whose seed absl salts per process: two sentencepiece runs on the
//! same file pick different lines (measured: different `.model` files from two processes, the
//! same within one). No sampler can match that; ours is a seeded, reproducible reservoir sample.
//!
//! `Hf` (HF `tokenizers` 0.23.3 `UnigramTrainer`): seeds from the distinct words once each (char
//! suffix tree nodes, word counts ignored for substrings), `<UNK>` at id 0 during training, f64,
//! the `alternatives.len()` loss quirk, HF's keep rules and model-order finalisation.
//!
//! Determinism: the result depends on `num_threads` (the stripe count, as in SentencePiece) but
//! not on how many OS threads rayon actually uses.

use ahash::AHashMap;
use rayon::prelude::*;

use super::darray::DoubleArray;
use super::lattice::Lattice;
use super::seed::{chunk_sentences, suffix_array_seeds, SeedCounts, MAX_CHUNK_BYTES};
use super::Compat;

/// Trainer options (names follow SentencePiece's trainer spec).
#[derive(Clone, Debug)]
pub struct UnigramTrainerConfig {
    /// Final vocabulary size including the meta pieces.
    pub vocab_size: usize,
    /// Number of meta pieces (unk/bos/eos/pad/control/user-defined/bytes) that take ids outside training.
    pub meta_pieces: usize,
    pub compat: Compat,
    pub shrinking_factor: f64,
    pub num_sub_iterations: usize,
    pub max_piece_length: usize,
    pub seed_size: usize,
    /// E-step stripes (SentencePiece `num_threads`); the result depends on it.
    pub num_threads: usize,
}

impl Default for UnigramTrainerConfig {
    fn default() -> Self {
        UnigramTrainerConfig {
            vocab_size: 8000,
            meta_pieces: 3,
            compat: Compat::Spm,
            shrinking_factor: 0.75,
            num_sub_iterations: 2,
            max_piece_length: 16,
            seed_size: 1_000_000,
            num_threads: 16,
        }
    }
}

/// What the trainer sees: normalized sentences (for seeding), words (for EM) and required chars.
#[derive(Clone, Debug, Default)]
pub struct TrainInput {
    pub sentences: Vec<(String, u64)>,
    pub words: Vec<(String, u64)>,
    /// Required characters, ordered count desc then code point asc.
    pub required_chars: Vec<(char, u64)>,
}

/// Progress callback: (stage, current, total); an `Err` aborts training.
pub type ProgressFn<'a> = dyn FnMut(&str, usize, usize) -> Result<(), String> + 'a;

/// `digamma(x)` by recurrence + asymptotic series, as SentencePiece and HF compute it.
pub fn digamma(mut x: f64) -> f64 {
    let mut r = 0.0;
    while x < 7.0 {
        r -= 1.0 / x;
        x += 1.0;
    }
    x -= 0.5;
    let xx = 1.0 / x;
    let xx2 = xx * xx;
    let xx4 = xx2 * xx2;
    r + x.ln() + (1.0 / 24.0) * xx2 - (7.0 / 960.0) * xx4 + (31.0 / 8064.0) * xx4 * xx2 - (127.0 / 30720.0) * xx4 * xx4
}

/// Descending order on scores with NaN last (a total order, so sorting never panics).
fn desc(a: f64, b: f64) -> std::cmp::Ordering {
    b.partial_cmp(&a).unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
}

/// A piece validity predicate on the piece's chars.
pub type Validity<'a> = dyn Fn(&[char]) -> bool + Sync + 'a;

/// Seed pieces with raw (not yet log) scores, chars first.
pub fn seed_pieces(input: &TrainInput, cfg: &UnigramTrainerConfig, valid: &Validity) -> Vec<(String, f64)> {
    match cfg.compat {
        Compat::Spm => seed_spm(input, cfg, valid),
        Compat::Hf => seed_hf(input, cfg),
    }
}

#[derive(Clone, Copy)]
struct SubStat {
    freq: u64,
    follower: u32,
    branching: bool,
    /// Occurrences at a sentence end (the interval of `s + "\0"`) and what follows that `\0`.
    zfreq: u64,
    zfollower: u32,
    zbranching: bool,
}

/// One distinct word occurrence kind: (text, count, byte after it, byte after the `\0` if sentence-final).
type Unit = (String, u64, u32, u32);

const NONE: u32 = u32::MAX;

fn add_occurrence<'a>(map: &mut AHashMap<&'a str, SubStat>, s: &'a str, freq: u64, follower: u32, zf: u32) {
    let (zfreq, zfollower) = if zf == NONE { (0, NONE) } else { (freq, zf) };
    match map.get_mut(s) {
        Some(st) => merge_stat(st, &SubStat { freq, follower, branching: false, zfreq, zfollower, zbranching: false }),
        None => {
            map.insert(s, SubStat { freq, follower, branching: false, zfreq, zfollower, zbranching: false });
        }
    }
}

fn merge_stat(st: &mut SubStat, v: &SubStat) {
    st.freq += v.freq;
    if v.branching || st.follower != v.follower {
        st.branching = true;
    }
    if v.zfreq > 0 {
        if st.zfreq > 0 && (v.zbranching || st.zfollower != v.zfollower) {
            st.zbranching = true;
        }
        if st.zfreq == 0 {
            st.zfollower = v.zfollower;
            st.zbranching = v.zbranching;
        }
        st.zfreq += v.zfreq;
    }
}

/// Enumerates substring statistics over `units` in parallel.
fn substring_stats<'a>(
    units: &'a [Unit],
    max_len: usize,
    follower_of: &(dyn Fn(char) -> u32 + Sync),
    valid: &Validity,
) -> AHashMap<&'a str, SubStat> {
    let chunks: Vec<AHashMap<&'a str, SubStat>> = units
        .par_chunks(4096.max(units.len() / 64 + 1))
        .map(|chunk| {
            let mut map: AHashMap<&'a str, SubStat> = AHashMap::new();
            let mut chars: Vec<char> = Vec::new();
            let mut offs: Vec<usize> = Vec::new();
            for (w, cnt, end_f, after_f) in chunk {
                chars.clear();
                offs.clear();
                for (b, ch) in w.char_indices() {
                    chars.push(ch);
                    offs.push(b);
                }
                offs.push(w.len());
                let n = chars.len();
                for i in 0..n {
                    for j in (i + 2)..=std::cmp::min(n, i + max_len) {
                        if !valid(&chars[i..j]) {
                            break;
                        }
                        let (f, zf) = if j < n { (follower_of(chars[j]), NONE) } else { (*end_f, *after_f) };
                        add_occurrence(&mut map, &w[offs[i]..offs[j]], *cnt, f, zf);
                    }
                }
            }
            map
        })
        .collect();
    let mut it = chunks.into_iter();
    let mut total = it.next().unwrap_or_default();
    for m in it {
        for (k, v) in m {
            match total.get_mut(&k) {
                Some(st) => merge_stat(st, &v),
                None => {
                    total.insert(k, v);
                }
            }
        }
    }
    total
}

fn utf8_lead(ch: char) -> u32 {
    let mut buf = [0u8; 4];
    ch.encode_utf8(&mut buf);
    buf[0] as u32
}

/// What SentencePiece's piece rules (`IsValidSentencePiece`, through `valid`) allow for `▁`, probed
/// on ASCII letters, to which no other rule applies. `split_by_whitespace=false` is only seen
/// with `max_piece_length >= 3` (shorter pieces behave as with `true`, but EM then runs over the
/// words, which can change the last float32 bits of the scores).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WhitespaceRules {
    /// A piece may hold `▁` between two letters: `split_by_whitespace=false`. Pieces then span
    /// words, seeds need the suffix array and EM runs over the sentences (in their load order).
    pub spans_words: bool,
    /// `▁` ends pieces instead of starting them (`treat_whitespace_as_suffix`).
    pub suffix: bool,
    /// Pieces made of `▁` only (`allow_whitespace_only_pieces`).
    pub whitespace_only: bool,
}

impl WhitespaceRules {
    pub fn probe(valid: &Validity) -> WhitespaceRules {
        let (a, ws) = ('a', '\u{2581}');
        WhitespaceRules { spans_words: valid(&[a, ws, a]), suffix: valid(&[a, ws]), whitespace_only: valid(&[ws, ws]) }
    }

    /// Byte offsets where `s` splits into units that no valid piece crosses (needs `!spans_words`):
    /// before each `▁` (after each, with `suffix`), except inside a run of `▁` when whitespace-only
    /// pieces are allowed (a run then joins the following word, or the preceding one with `suffix`).
    fn unit_starts(&self, s: &str) -> Vec<usize> {
        const WS: char = '\u{2581}';
        let mut starts = vec![0];
        for (i, _) in s.match_indices(WS) {
            let cut = if self.suffix { i + WS.len_utf8() } else { i };
            let in_run = if self.suffix { s[cut..].starts_with(WS) } else { s[..i].ends_with(WS) };
            if cut > 0 && cut < s.len() && !(self.whitespace_only && in_run) {
                starts.push(cut);
            }
        }
        starts
    }
}

fn seed_spm(input: &TrainInput, cfg: &UnigramTrainerConfig, valid: &Validity) -> Vec<(String, f64)> {
    // sentencepiece 0.2.3 reads seed_sentencepiece_size 0 as "8x the vocabulary, at least 100k"
    let seed_size = if cfg.seed_size == 0 { (8 * cfg.vocab_size).max(100_000) } else { cfg.seed_size };
    let cfg = &UnigramTrainerConfig { seed_size, ..cfg.clone() };
    let rules = WhitespaceRules::probe(valid);
    let chunks = if rules.spans_words { Vec::new() } else { chunk_sentences(&input.sentences, MAX_CHUNK_BYTES) };
    let chunk_units: Vec<Vec<Unit>> = chunks.iter().map(|c| word_units(c, &rules)).collect();
    let subs = if !rules.spans_words && per_word_is_cheaper(&chunk_units, input, cfg.max_piece_length) {
        if let [units] = chunk_units.as_slice() {
            SeedCounts::single_chunk(per_word_counts(units, cfg.max_piece_length, valid), cfg.seed_size)
        } else {
            let mut counts = SeedCounts::new(cfg.seed_size);
            for units in &chunk_units {
                counts.add_chunk(per_word_counts(units, cfg.max_piece_length, valid));
            }
            counts.finish()
        }
    } else {
        suffix_array_seeds(&input.sentences, cfg.max_piece_length, cfg.seed_size, valid)
    };
    // the characters of the sentences (not U+2585, not the boundary U+001F), count desc then code
    // point; SentencePiece holds the counts in float
    let mut chars: AHashMap<char, u64> = AHashMap::new();
    for (s, f) in &input.sentences {
        for ch in s.chars() {
            if ch != '\u{2585}' && ch != '\u{1f}' {
                *chars.entry(ch).or_insert(0) += f;
            }
        }
    }
    let mut chars: Vec<(char, u64)> = chars.into_iter().collect();
    chars.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut seeds: Vec<(String, f64)> = chars.into_iter().map(|(c, n)| (c.to_string(), n as f32 as f64)).collect();
    seeds.extend(subs);
    seeds
}

/// Whether counting substrings per distinct word beats the suffix array. The per-word count costs
/// about `chars * min(chars, max_len)^2` per distinct word (substrings, each checked and hashed),
/// the suffix array about 25x that per byte of the repeated text: measured (2 cores) on
/// gutenberg_en_20M 1.2 s against 7.0 s (words repeat: per word), and on 1 MB of the same text with
/// its spaces removed 3.1 s against 0.3 s (every "word" a whole new sentence: suffix array).
fn per_word_is_cheaper(chunk_units: &[Vec<Unit>], input: &TrainInput, max_len: usize) -> bool {
    let per_word: f64 = chunk_units
        .iter()
        .flatten()
        .map(|(w, _, _, _)| {
            let n = w.chars().count() as f64;
            let m = n.min(max_len as f64);
            n * m * m
        })
        .sum();
    let text_bytes: f64 = input.sentences.iter().map(|(s, f)| (s.len() + 1) as f64 * *f as f64).sum();
    per_word < 25.0 * text_bytes
}

/// The distinct (unit, byte after it, byte after the sentence's `\0`) of one chunk's
/// `(sentence, copies)`, with their counts, sorted.
fn word_units(chunk: &[(&str, u64)], rules: &WhitespaceRules) -> Vec<Unit> {
    // SentencePiece 0.2.3 concatenates each sentence `freq` times with a `\0` after each copy and
    // keeps every LCP interval of the byte suffix array whose string (trailing `\0` removed) is a
    // valid piece; a piece's frequency is summed over its intervals. An interval is a string that
    // occurs at least twice and is followed by two different bytes (the end of the text counts).
    // No valid piece crosses a unit boundary (`unit_starts`), so each occurrence lies inside one
    // unit: per distinct (unit, byte after it, byte after the sentence's `\0`) we count substrings
    // and their followers. A unit's follower is the next unit's first byte or `\0` at a sentence
    // end; after that `\0` comes the first byte of the next copy (the same sentence, or the next
    // one: `\0` if that one is empty), or the end of the chunk (256).
    let mut units: AHashMap<(String, u32, u32), u64> = AHashMap::new();
    for (k, &(s, f)) in chunk.iter().enumerate() {
        if f == 0 || s.is_empty() {
            continue;
        }
        let starts = rules.unit_starts(s);
        let own_first = s.as_bytes()[0] as u32;
        let next_first = chunk.get(k + 1).map_or(256, |(t, _)| t.as_bytes().first().map_or(0, |&b| b as u32));
        for (w, &st) in starts.iter().enumerate() {
            let en = starts.get(w + 1).copied().unwrap_or(s.len());
            if en <= st {
                continue;
            }
            let word = s[st..en].to_string();
            if en < s.len() {
                *units.entry((word, s.as_bytes()[en] as u32, NONE)).or_insert(0) += f;
            } else {
                if f > 1 {
                    *units.entry((word.clone(), 0, own_first)).or_insert(0) += f - 1;
                }
                *units.entry((word, 0, next_first)).or_insert(0) += 1;
            }
        }
    }
    let mut units: Vec<Unit> = units.into_iter().map(|((w, e, a), c)| (w, c, e, a)).collect();
    units.sort_unstable();
    units
}

/// One chunk's candidates as [`super::seed`] counts them (piece -> summed count of its LCP
/// intervals), found per word (`word_units`): exact when no valid piece spans two words.
fn per_word_counts<'a>(units: &'a [Unit], max_len: usize, valid: &Validity) -> AHashMap<&'a str, u64> {
    let stats = substring_stats(units, max_len, &utf8_lead, valid);
    stats
        .into_iter()
        .filter_map(|(s, st)| {
            // the interval of `s` (followed by two different bytes) and that of `s\0`
            let mut freq = 0u64;
            if st.branching && st.freq >= 2 {
                freq += st.freq;
            }
            if st.zbranching && st.zfreq >= 2 {
                freq += st.zfreq;
            }
            (freq > 0).then_some((s, freq))
        })
        .collect()
}

fn seed_hf(input: &TrainInput, cfg: &UnigramTrainerConfig) -> Vec<(String, f64)> {
    let units: Vec<Unit> = input.words.iter().map(|(w, _)| (w.clone(), 1, 0, NONE)).collect();
    let max_len = cfg.max_piece_length;
    let stats = substring_stats(&units, max_len, &|c: char| c as u32 + 1, &|_c: &[char]| true);
    // chars: count desc, char desc
    let mut chars: AHashMap<char, u64> = AHashMap::new();
    for (w, c) in &input.words {
        for ch in w.chars() {
            *chars.entry(ch).or_insert(0) += c;
        }
    }
    let mut chars: Vec<(char, u64)> = chars.into_iter().collect();
    chars.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
    let mut subs: Vec<(String, u64)> = stats
        .into_iter()
        .filter(|(_, st)| st.branching && st.freq >= 2)
        .map(|(s, st)| {
            let n = s.chars().count() as u64;
            (s.to_string(), st.freq * n)
        })
        .collect();
    subs.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(b.0.cmp(&a.0)));
    let mut seeds: Vec<(String, f64)> = chars.into_iter().map(|(c, n)| (c.to_string(), n as f64)).collect();
    for (s, sc) in subs {
        if seeds.len() >= cfg.seed_size {
            break;
        }
        seeds.push((s, sc as f64));
    }
    seeds
}

fn to_log_prob(c: Compat, pieces: &mut [(String, f64)]) {
    let sum: f64 = pieces.iter().map(|p| p.1).sum();
    let logsum = sum.ln();
    for p in pieces.iter_mut() {
        p.1 = c.r(p.1.ln() - logsum);
    }
}

/// The trainer's evolving model: pieces and scores. In HF mode piece 0 is the `<UNK>` placeholder (NaN).
/// Matches come from the encoder's byte-level double-array trie (the same matches as a char trie,
/// shortest first, so the lattice and its tie order are unchanged; measured ~10% less CPU for a
/// whole training than the char trie).
struct Model {
    pieces: Vec<(String, f64)>,
    compat: Compat,
    trie: DoubleArray,
    min_score: f64,
}

impl Model {
    fn new(pieces: Vec<(String, f64)>, compat: Compat) -> Model {
        let trie = DoubleArray::new(pieces.iter().enumerate().map(|(i, (p, _))| (p.as_str(), i as u32)));
        let min_score = pieces.iter().map(|p| p.1).filter(|s| !s.is_nan()).fold(f64::INFINITY, f64::min);
        Model { pieces, compat, trie, min_score }
    }

    /// `char_at[b]` is the char index of byte offset `b` of `s` (at char boundaries and the end).
    fn populate(&self, s: &str, char_at: &[u32], l: &mut Lattice, skip: Option<u32>) {
        let unk_score = self.compat.r(self.min_score - super::UNK_PENALTY);
        let bytes = s.as_bytes();
        for (start, (b, _)) in s.char_indices().enumerate() {
            let mut single = false;
            self.trie.common_prefix(bytes, b, |id, end| {
                if Some(id) == skip {
                    return;
                }
                let end = char_at[end] as usize;
                if end == start + 1 {
                    single = true;
                }
                l.insert(start, end, id as i64, self.pieces[id as usize].1);
            });
            if !single {
                l.insert(start, start + 1, 0, unk_score);
            }
        }
    }

    fn lattice(&self, s: &str, skip: Option<u32>) -> Lattice {
        let mut l = Lattice::new(0, self.compat);
        self.fill(s, skip, &mut l, &mut Vec::new());
        l
    }

    /// Resets `l` to the lattice of `s` (reusing its memory and the `char_at` buffer).
    fn fill(&self, s: &str, skip: Option<u32>, l: &mut Lattice, char_at: &mut Vec<u32>) {
        char_at.clear();
        char_at.resize(s.len() + 1, 0);
        let mut n = 0u32;
        for (b, _) in s.char_indices() {
            char_at[b] = n;
            n += 1;
        }
        char_at[s.len()] = n;
        l.reset(n as usize);
        self.populate(s, char_at, l, skip);
    }
}

/// Runs `f(word, freq, accumulator, scratch lattice, chars)` over word stripes in parallel and adds
/// the per-stripe vectors in stripe order.
type StripeFn<'a> = dyn Fn(&str, f64, &mut Vec<f64>, &mut Lattice, &mut Vec<u32>) -> f64 + Sync + 'a;

fn striped_sum(words: &[(String, u64)], threads: usize, size: usize, c: Compat, f: &StripeFn) -> (Vec<f64>, f64) {
    let t = threads.max(1);
    let parts: Vec<(Vec<f64>, f64)> = (0..t)
        .into_par_iter()
        .map(|p| {
            let mut acc = vec![0.0f64; size];
            let mut obj = 0.0f64;
            let mut lat = Lattice::new(0, c);
            let mut chars = Vec::new();
            let mut i = p;
            while i < words.len() {
                obj += f(&words[i].0, words[i].1 as f64, &mut acc, &mut lat, &mut chars);
                i += t;
            }
            (acc, obj)
        })
        .collect();
    let mut total = vec![0.0f64; size];
    let mut obj = 0.0;
    for (acc, o) in parts {
        for (x, y) in total.iter_mut().zip(acc) {
            *x = c.r(*x + y);
        }
        obj += o;
    }
    (total, obj)
}

fn e_step(m: &Model, words: &[(String, u64)], threads: usize) -> Vec<f64> {
    let (e, obj) = striped_sum(words, threads, m.pieces.len(), m.compat, &|w, freq, acc, l, chars| {
        m.fill(w, None, l, chars);
        l.populate_marginal(freq, acc)
    });
    // SUBWORD_UNIGRAM_DEBUG=1 prints the same line SentencePiece logs (size, objective), for comparisons.
    if std::env::var_os("SUBWORD_UNIGRAM_DEBUG").is_some() {
        let all: f64 = words.iter().map(|w| w.1 as f64).sum();
        eprintln!("unigram EM size={} obj={:.6}", m.pieces.len(), -obj / all);
    }
    e
}

fn m_step(m: &Model, expected: &[f64]) -> Vec<(String, f64)> {
    let c = m.compat;
    let mut kept: Vec<(String, f64)> = Vec::with_capacity(m.pieces.len());
    let mut sum = 0.0f64;
    for (i, (p, _)) in m.pieces.iter().enumerate() {
        if c == Compat::Hf && i == 0 {
            kept.push((p.clone(), f64::NAN));
            continue;
        }
        let e = expected[i];
        if e < 0.5 {
            continue;
        }
        kept.push((p.clone(), e));
        sum = c.r(sum + e);
    }
    let logsum = c.r(digamma(sum));
    for (i, k) in kept.iter_mut().enumerate() {
        if c == Compat::Hf && i == 0 {
            continue;
        }
        k.1 = c.r(digamma(k.1) - logsum);
    }
    kept
}

fn prune(m: &Model, words: &[(String, u64)], cfg: &UnigramTrainerConfig, desired: usize) -> Vec<(String, f64)> {
    let c = m.compat;
    let n = m.pieces.len();
    // always_keep and alternatives from each piece's own 2-best segmentation.
    let per_piece: Vec<(bool, Vec<usize>)> = (0..n)
        .into_par_iter()
        .map(|i| {
            if c == Compat::Hf && i == 0 {
                return (true, Vec::new());
            }
            let l = m.lattice(&m.pieces[i].0, None);
            let nb = l.nbest(2);
            if nb.len() == 1 {
                (true, Vec::new())
            } else if nb[0].0.len() >= 2 {
                (false, Vec::new())
            } else {
                let alt = nb[1].0.iter().map(|&k| l.nodes[k].id as usize).collect();
                (true, alt)
            }
        })
        .collect();
    // Viterbi frequencies over the words.
    let (freq, _) = striped_sum(words, cfg.num_threads, n, c, &|w, f, acc, l, chars| {
        m.fill(w, None, l, chars);
        let (path, _) = l.viterbi();
        for k in path {
            let id = l.nodes[k].id as usize;
            acc[id] = c.r(acc[id] + f);
        }
        0.0
    });
    // SentencePiece accumulates the sum in double and rounds it once; logs are taken in double.
    let mut sum = 0.0f64;
    for (i, f) in freq.iter().enumerate() {
        if c == Compat::Hf && i == 0 {
            continue;
        }
        sum += f;
    }
    let sum = c.r(sum);
    let logsum = c.r(sum.ln());
    let mut new_pieces: Vec<(String, f64)> = Vec::new();
    let mut candidates: Vec<(usize, f64)> = Vec::new();
    for i in 0..n {
        let (keep, alt) = &per_piece[i];
        if c == Compat::Hf && i == 0 {
            new_pieces.push(m.pieces[0].clone());
            continue;
        }
        let fi = freq[i];
        match c {
            Compat::Spm => {
                if fi == 0.0 || !keep {
                    continue;
                }
                if alt.is_empty() {
                    new_pieces.push(m.pieces[i].clone());
                    continue;
                }
            }
            Compat::Hf => {
                if fi == 0.0 && !keep {
                    continue;
                }
                if alt.is_empty() {
                    new_pieces.push(m.pieces[i].clone());
                    continue;
                }
                if fi == 0.0 {
                    continue;
                }
            }
        }
        let big_f = c.r(fi / sum);
        let logprob_sp = c.r(fi.ln() - logsum);
        let alt_len = match c {
            Compat::Spm => alt.len(),
            // HF's quirk: the number of pieces, not the alternative's length (#1536/#2069).
            Compat::Hf => n,
        };
        let logsum_alt = c.r(c.r(sum + c.r(fi * c.r(alt_len as f64 - 1.0))).ln());
        let mut logprob_alt = 0.0f64;
        for &a in alt {
            logprob_alt = c.r(logprob_alt + (c.r(freq[a] + fi).ln() - logsum_alt));
        }
        let loss = c.r(big_f * c.r(logprob_sp - logprob_alt));
        candidates.push((i, loss));
    }
    let pruned_size = std::cmp::max(desired, (cfg.shrinking_factor * n as f64) as usize);
    // loss desc, index asc (a stable sort keeps index order among ties)
    candidates.sort_by(|a, b| desc(a.1, b.1));
    for (i, _) in candidates {
        if new_pieces.len() >= pruned_size {
            break;
        }
        new_pieces.push(m.pieces[i].clone());
    }
    new_pieces
}

/// Drops multi-char pieces whose own string has a strictly better segmentation without them.
fn prune_unreachable(m: &Model) -> Vec<(String, f64)> {
    let keep: Vec<bool> = (0..m.pieces.len())
        .into_par_iter()
        .map(|i| {
            let (p, s) = &m.pieces[i];
            if p.chars().count() < 2 {
                return true;
            }
            let l = m.lattice(p, Some(i as u32));
            let (_, best) = l.viterbi();
            best <= *s
        })
        .collect();
    m.pieces.iter().zip(keep).filter(|(_, k)| *k).map(|(p, _)| p.clone()).collect()
}

fn finalize(m: &Model, input: &TrainInput, cfg: &UnigramTrainerConfig) -> Vec<(String, f64)> {
    let c = m.compat;
    let budget = cfg.vocab_size.saturating_sub(cfg.meta_pieces);
    let index: AHashMap<&str, f64> = m.pieces.iter().map(|(p, s)| (p.as_str(), *s)).collect();
    let mut out: Vec<(String, f64)> = Vec::new();
    let mut seen: ahash::AHashSet<String> = ahash::AHashSet::new();
    let mut penalty = 0.0f64;
    for (ch, _) in &input.required_chars {
        let s = ch.to_string();
        let score = match index.get(s.as_str()) {
            Some(&v) if !v.is_nan() => v,
            _ => {
                let v = c.r(m.min_score + penalty);
                penalty += 0.0001;
                v
            }
        };
        if seen.insert(s.clone()) {
            out.push((s, score));
        }
    }
    match c {
        Compat::Spm => {
            let mut sorted: Vec<&(String, f64)> = m.pieces.iter().collect();
            sorted.sort_by(|a, b| desc(a.1, b.1).then(a.0.cmp(&b.0)));
            for (p, s) in sorted {
                if out.len() >= budget {
                    break;
                }
                if seen.contains(p) {
                    continue;
                }
                seen.insert(p.clone());
                out.push((p.clone(), *s));
            }
            out.sort_by(|a, b| desc(a.1, b.1).then(a.0.cmp(&b.0)));
        }
        Compat::Hf => {
            // model order, `==` check after each push, NaN -> 0.0, stable sort by score desc
            seen.insert(m.pieces[0].0.clone());
            if out.len() < budget {
                for (p, s) in m.pieces.iter().skip(1) {
                    if seen.contains(p) {
                        continue;
                    }
                    seen.insert(p.clone());
                    out.push((p.clone(), if s.is_nan() { 0.0 } else { *s }));
                    if out.len() == budget {
                        break;
                    }
                }
            }
            out.sort_by(|a, b| desc(a.1, b.1));
        }
    }
    out
}

/// Trains a Unigram model; returns the final pieces (meta pieces excluded), best score first.
pub fn train(
    input: &TrainInput,
    cfg: &UnigramTrainerConfig,
    valid: &Validity,
    progress: &mut ProgressFn,
) -> Result<Vec<(String, f64)>, String> {
    let c = cfg.compat;
    if cfg.vocab_size == 0 {
        return Err("vocab_size must be positive".into());
    }
    if !(cfg.shrinking_factor > 0.0 && cfg.shrinking_factor < 1.0) {
        return Err(format!("shrinking_factor must be in (0, 1), got {}", cfg.shrinking_factor));
    }
    if input.words.is_empty() {
        return Err("no training text (the word list is empty)".into());
    }
    let required = input.required_chars.len();
    if cfg.vocab_size < required + cfg.meta_pieces {
        return Err(format!(
            "vocab_size {} is smaller than the {} required characters plus {} meta pieces",
            cfg.vocab_size, required, cfg.meta_pieces
        ));
    }
    progress("seed", 0, 1)?;
    let mut seeds = seed_pieces(input, cfg, valid);
    to_log_prob(if c == Compat::Spm { Compat::Hf } else { c }, &mut seeds);
    for s in seeds.iter_mut() {
        s.1 = c.r(s.1);
    }
    if c == Compat::Hf {
        seeds.insert(0, ("<UNK>".to_string(), f64::NAN));
    }
    progress("seed", 1, 1)?;
    let desired = match c {
        Compat::Spm => (cfg.vocab_size as f64 * 1.1) as usize,
        Compat::Hf => cfg.vocab_size * 11 / 10,
    };
    // SentencePiece splits the sentences into words for EM only with split_by_whitespace
    let em_units: &[(String, u64)] =
        if c == Compat::Spm && WhitespaceRules::probe(valid).spans_words { &input.sentences } else { &input.words };
    let mut model = Model::new(seeds, c);
    let mut round = 0usize;
    loop {
        for _ in 0..cfg.num_sub_iterations.max(1) {
            let e = e_step(&model, em_units, cfg.num_threads);
            model = Model::new(m_step(&model, &e), c);
        }
        progress("em", round + 1, 0)?;
        round += 1;
        if c == Compat::Hf && model.pieces.len() <= desired {
            break;
        }
        let pruned = prune(&model, em_units, cfg, desired);
        let stop = pruned.len() >= model.pieces.len();
        model = Model::new(pruned, c);
        if c == Compat::Spm && model.pieces.len() <= desired {
            break;
        }
        if stop {
            // nothing more can be pruned
            break;
        }
    }
    if c == Compat::Spm {
        model = Model::new(prune_unreachable(&model), c);
    }
    Ok(finalize(&model, input, cfg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digamma_values() {
        assert!((digamma(1.0) + 0.5772156649015329).abs() < 1e-9);
        assert!((digamma(10.0) - 2.251752589066721).abs() < 1e-9);
    }

    /// SentencePiece's rules for `▁` in a piece (`IsValidSentencePiece`), plus the length limit.
    fn whitespace_validity(suffix: bool, ws_only: bool, split: bool, max_len: usize) -> impl Fn(&[char]) -> bool {
        move |p: &[char]| {
            let ws = '\u{2581}';
            let n = p.len();
            if n == 0 || n > max_len {
                return false;
            }
            let all_ws = p.iter().all(|&c| c == ws);
            p.iter().enumerate().all(|(pos, &c)| {
                if c != ws || (ws_only && all_ws) {
                    return true;
                }
                match (suffix, split) {
                    (false, true) => pos == 0,
                    (false, false) => pos == 0 || pos != n - 1,
                    (true, true) => pos == n - 1,
                    (true, false) => pos == n - 1 || pos != 0,
                }
            })
        }
    }

    #[test]
    fn whitespace_rules_are_read_from_the_validity() {
        for suffix in [false, true] {
            for ws_only in [false, true] {
                for split in [false, true] {
                    let v = whitespace_validity(suffix, ws_only, split, 16);
                    let r = WhitespaceRules::probe(&v);
                    assert_eq!(r, WhitespaceRules { spans_words: !split, suffix, whitespace_only: ws_only });
                }
            }
        }
        let r = |suffix, whitespace_only| WhitespaceRules { spans_words: false, suffix, whitespace_only };
        let s = "▁ab▁▁cd▁";
        let cut = |v: Vec<usize>| v.iter().map(|&i| s[..i].chars().count()).collect::<Vec<_>>();
        assert_eq!(cut(r(false, false).unit_starts(s)), vec![0, 3, 4, 7]);
        assert_eq!(cut(r(false, true).unit_starts(s)), vec![0, 3, 7]);
        assert_eq!(cut(r(true, false).unit_starts(s)), vec![0, 1, 4, 5]);
        assert_eq!(cut(r(true, true).unit_starts(s)), vec![0, 1, 5]);
    }

    /// Small deterministic generator (no dependency).
    fn lcg(state: &mut u64) -> u64 {
        *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *state >> 33
    }

    #[test]
    fn per_word_seeds_equal_suffix_array_seeds_when_pieces_cannot_span_words() {
        // several chunks (small chunk sizes) and the pruning between chunks (small seed sizes) too
        let mut st = 3u64;
        for round in 0..400 {
            let (suffix, ws_only) = (round % 2 == 1, round % 4 >= 2);
            let n = 1 + (lcg(&mut st) % 12) as usize;
            let sentences: Vec<(String, u64)> = (0..n)
                .map(|_| {
                    let len = 1 + (lcg(&mut st) % 12) as usize;
                    let s: String = (0..len).map(|_| ['a', 'b', 'é', '▁'][(lcg(&mut st) % 4) as usize]).collect();
                    (s, 1 + lcg(&mut st) % 3)
                })
                .collect();
            let max_len = 2 + (lcg(&mut st) % 6) as usize;
            let chunk_bytes = if round % 3 == 0 { usize::MAX } else { 1 + (lcg(&mut st) % 60) as usize };
            let seed_size = if round % 5 == 0 { 1 + (lcg(&mut st) % 4) as usize } else { 1000 };
            let valid = whitespace_validity(suffix, ws_only, true, max_len);
            let rules = WhitespaceRules::probe(&valid);
            assert!(!rules.spans_words);
            let mut counts = SeedCounts::new(seed_size);
            for chunk in chunk_sentences(&sentences, chunk_bytes) {
                counts.add_chunk(per_word_counts(&word_units(&chunk, &rules), max_len, &valid));
            }
            let per_word = counts.finish();
            let by_sa =
                super::super::seed::suffix_array_seeds_chunked(&sentences, max_len, seed_size, &valid, chunk_bytes);
            assert_eq!(
                per_word, by_sa,
                "{sentences:?} suffix={suffix} ws_only={ws_only} max_len={max_len} chunk={chunk_bytes} seeds={seed_size}"
            );
        }
    }

    #[test]
    fn trains_a_tiny_model() {
        let text = ["▁the▁cat▁sat", "▁the▁dog▁sat", "▁a▁cat▁and▁a▁dog"];
        let sentences: Vec<(String, u64)> = text.iter().map(|s| (s.to_string(), 3)).collect();
        let mut words: AHashMap<String, u64> = AHashMap::new();
        let mut chars: AHashMap<char, u64> = AHashMap::new();
        for (s, f) in &sentences {
            for w in s.split_inclusive(|_| false) {
                let _ = w;
            }
            for w in s.split('▁').filter(|w| !w.is_empty()) {
                *words.entry(format!("▁{w}")).or_insert(0) += f;
            }
            for ch in s.chars() {
                *chars.entry(ch).or_insert(0) += f;
            }
        }
        let mut words: Vec<(String, u64)> = words.into_iter().collect();
        words.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut chars: Vec<(char, u64)> = chars.into_iter().collect();
        chars.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let input = TrainInput { sentences, words, required_chars: chars };
        let cfg = UnigramTrainerConfig { vocab_size: 25, num_threads: 2, ..Default::default() };
        let valid = |c: &[char]| c.iter().skip(1).all(|&x| x != '▁');
        let out = train(&input, &cfg, &valid, &mut |_, _, _| Ok(())).unwrap();
        assert!(out.len() <= 22);
        assert!(out.iter().any(|(p, _)| p == "▁dog"));
        // log-probabilities; required chars dropped by the M-step come back near min_score
        assert!(out.iter().all(|(_, s)| *s < 0.0));
    }
}
