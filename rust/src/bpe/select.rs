//! Which words a BPE or WordPiece trainer needs: `min_frequency` applied exactly, while the words
//! are read (from a counts file, a word counter or a list), before the trainer's tables are built.
//!
//! Why a word can be left out without changing the model
//! - Call the symbols a word starts with (its kept chars, with `##`/`</w>` where they apply) its
//!   initial symbols, and the total of an adjacent pair of initial symbols its count summed over all
//!   words (weighted by word count) before any merge.
//! - Every token is a run of consecutive initial symbols of the word it sits in, so an adjacent
//!   token pair `(X, Y)` at some position lies over exactly one adjacent initial pair there: the last
//!   initial symbol of `X` and the first of `Y`. When a token's string decides its initial symbols
//!   (see the exception below), that initial pair is the same at every occurrence of `(X, Y)`, and
//!   distinct occurrences lie over distinct initial-pair occurrences; so at every step
//!   `count(X, Y) <= total(initial pair)` (HF's bookkeeping can only count fewer: `max_token_length`
//!   skips increments, never decrements).
//! - A pair is merged only if its count is at least `max(1, min_frequency)`: the HF loop stops at
//!   the first such pair (every pair still at or above it has a heap entry at least as high, so it
//!   would be popped first), and the likelihood loop never makes a pair below it a candidate.
//! - So if every adjacent initial pair of a word has a total below that threshold, no pair that can
//!   ever occur in the word is merged; the word never changes, and its pair counts only feed pairs
//!   that are never chosen. Leaving it out changes no merge, no id and no tie. Words of fewer than two
//!   symbols have no pairs at all and are always left out.
//! - What the trainer takes from ALL the words is kept apart in [`Corpus`]: the per-char counts that
//!   decide the alphabet (`limit_alphabet`), the `##x`/`x</w>` variants and so their ids (by code
//!   point of the variant string), the totals its overflow checks use, and for WordPiece's likelihood
//!   score the unit counts of the words left out (they never change, so they are a constant
//!   `frozen_units` table added to the unit counts).
//! - The exception: when the chars some word keeps spell the continuing prefix or the end-of-word
//!   suffix itself (a literal `##` with prefix `##`, also across a char that `limit_alphabet`
//!   drops), one token string can be reached from different initial symbols (SPEC-tokenizers §1.3,
//!   HF #2320), the bound above no longer holds, and no word is left out. WordPiece never sees `##`
//!   inside a word (BERT's pre-tokenizer splits each `#`); byte-level BPE has no prefix or suffix.
//!
//! Passes over the words (each streamed, none held): 1. per-char counts and totals, giving the
//! alphabet; 2. the variants seen and the totals of the initial pairs; 3. the words kept (copied)
//! and the unit counts of those left out. Without pruning (`min_frequency` below 2) pass 2 only runs
//! to find the variants (with a prefix or suffix) and pass 3 copies every word.
//!
//! Performance notes: each pass costs one decode of each word (and the byte-level mapping into a
//! reused buffer) plus, in passes 2-3, one table lookup per char and one hash lookup per adjacent
//! pair; the pair-total table holds the distinct initial pairs (at most 256^2 for byte-level). No
//! per-word allocation except for the words kept. Measured figures: the performance notes of
//! `bpe/train.rs`.

use ahash::{AHashMap, AHashSet};
use std::io;

use crate::bpe::train::{compute_alphabet, pack, variant, BpeTrainerConfig, TrainError};

/// Words as the model sees them (byte-level mapped where the pipeline does that), readable as many
/// times as selection needs.
pub trait WordStream {
    /// Calls `f(word, count)` once for every word, in any order.
    fn for_each_word<F: FnMut(&str, u64)>(&self, f: F) -> io::Result<()>;

    /// Every word, owned (one pass; a source may do it faster).
    fn collect_words(&self) -> io::Result<Vec<(String, u64)>> {
        let mut out = Vec::new();
        self.for_each_word(|w, c| out.push((w.to_string(), c)))?;
        Ok(out)
    }
}

impl WordStream for [(String, u64)] {
    fn for_each_word<F: FnMut(&str, u64)>(&self, mut f: F) -> io::Result<()> {
        for (w, c) in self {
            f(w, *c);
        }
        Ok(())
    }

    fn collect_words(&self) -> io::Result<Vec<(String, u64)>> {
        Ok(self.to_vec())
    }
}

/// What the trainer needs from every word of the corpus, including the words it was not given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Corpus {
    /// The alphabet, sorted by code point (HF `compute_alphabet`, over all words).
    pub alphabet: Vec<char>,
    /// Every prefixed/suffixed char variant the words create, sorted and unique.
    pub variants: Vec<String>,
    /// Unit counts of the words left out: symbol string -> occurrences weighted by word count.
    pub frozen_units: Vec<(String, u64)>,
    /// Sum of all word counts (saturating).
    pub total_count: u64,
    /// Sum of count x chars over all words (WordPiece's overflow check).
    pub total_units: u128,
    /// Distinct words read.
    pub distinct: u64,
}

/// The words a trainer needs and what it needs to know about the others.
#[derive(Clone, Debug)]
pub struct Selected {
    /// The words kept, as the model sees them, in no particular order.
    pub words: Vec<(String, u64)>,
    pub corpus: Corpus,
    /// The options the selection was made for (training with others would be wrong).
    cfg: BpeTrainerConfig,
    /// Whether `corpus.frozen_units` holds the unit counts of the words left out.
    units: bool,
}

impl Selected {
    /// Words kept (the trainer's tables hold these).
    pub fn loaded(&self) -> u64 {
        self.words.len() as u64
    }

    /// Distinct words read.
    pub fn distinct(&self) -> u64 {
        self.corpus.distinct
    }

    /// The kept words and the corpus summary (what training consumes).
    pub fn into_parts(self) -> (Vec<(String, u64)>, Corpus) {
        (self.words, self.corpus)
    }

    /// Refuses to train with options other than those the selection was made for, or with the
    /// likelihood criterion on a selection that did not keep the unit counts of the dropped words.
    pub fn check_options(&self, cfg: &BpeTrainerConfig, units: bool) -> Result<(), TrainError> {
        if self.cfg != *cfg {
            return Err(TrainError::Config(
                "the words were selected for other trainer options than these (select again with the same ones)".into(),
            ));
        }
        if units && !self.units && self.loaded() < self.distinct() {
            return Err(TrainError::Config(
                "the words were selected for the frequency criterion; the likelihood criterion also needs the unit \
                 counts of the words left out (select with units=true)"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// Chars below this code point have dense tables (all of byte-level, Latin, Greek, Cyrillic).
const DENSE: usize = 1024;

/// Initial symbols: (kept char, prefix applies, suffix applies) -> a symbol number shared by all keys
/// that give the same string (the trainer gives one id per string).
struct Symbols<'a> {
    prefix: Option<&'a str>,
    suffix: Option<&'a str>,
    kept_dense: Vec<bool>,
    kept_other: AHashSet<char>,
    dense: Vec<u32>,
    other: AHashMap<u32, u32>,
    names: Vec<String>,
    is_variant: Vec<bool>,
    by_name: AHashMap<String, u32>,
}

impl<'a> Symbols<'a> {
    /// `kept`: the chars words keep (the alphabet and any one-char special token, as `prepare`).
    fn new(kept: impl IntoIterator<Item = char>, cfg: &'a BpeTrainerConfig) -> Self {
        let mut s = Symbols {
            prefix: cfg.continuing_subword_prefix.as_deref(),
            suffix: cfg.end_of_word_suffix.as_deref(),
            kept_dense: vec![false; DENSE],
            kept_other: AHashSet::new(),
            dense: vec![u32::MAX; DENSE * 4],
            other: AHashMap::new(),
            names: Vec::new(),
            is_variant: Vec::new(),
            by_name: AHashMap::new(),
        };
        for c in kept {
            if (c as usize) < DENSE {
                s.kept_dense[c as usize] = true;
            } else {
                s.kept_other.insert(c);
            }
        }
        s
    }

    fn kept(&self, c: char) -> bool {
        if (c as usize) < DENSE {
            self.kept_dense[c as usize]
        } else {
            self.kept_other.contains(&c)
        }
    }

    fn id(&mut self, c: char, first: bool, last: bool) -> u32 {
        let flags = (self.prefix.is_some() && !first) as u32 | (((self.suffix.is_some() && last) as u32) << 1);
        let key = (c as u32) << 2 | flags;
        let cached =
            if (c as usize) < DENSE { self.dense[key as usize] } else { *self.other.get(&key).unwrap_or(&u32::MAX) };
        if cached != u32::MAX {
            return cached;
        }
        let (name, is_variant) = match variant(c, first, last, self.prefix, self.suffix) {
            Some(v) => (v, true),
            None => (c.to_string(), false),
        };
        let next = self.names.len() as u32;
        let id = *self.by_name.entry(name.clone()).or_insert(next);
        if id == next {
            self.names.push(name);
            self.is_variant.push(is_variant);
        }
        if (c as usize) < DENSE {
            self.dense[key as usize] = id;
        } else {
            self.other.insert(key, id);
        }
        id
    }

    /// The initial symbols of `word` into `out` (chars outside the alphabet vanish; prefix and
    /// suffix follow the char's position in the original word, as HF's `tokenize_words`).
    fn of_word(&mut self, word: &str, out: &mut Vec<u32>) {
        out.clear();
        let n = word.chars().count();
        for (i, c) in word.chars().enumerate() {
            if self.kept(c) {
                out.push(self.id(c, i == 0, i + 1 == n));
            }
        }
    }
}

/// Pass 1: per-char counts (over every word) and totals.
struct CharPass {
    counts: AHashMap<char, u64>,
    total_count: u64,
    total_units: u128,
    distinct: u64,
}

fn char_pass<S: WordStream + ?Sized>(stream: &S, _cfg: &BpeTrainerConfig) -> io::Result<CharPass> {
    let mut dense = vec![0u64; DENSE];
    let mut seen = vec![false; DENSE];
    let mut counts: AHashMap<char, u64> = AHashMap::new();
    let (mut total_count, mut total_units, mut distinct) = (0u64, 0u128, 0u64);
    stream.for_each_word(|w, c| {
        let mut n = 0u128;
        for ch in w.chars() {
            n += 1;
            if (ch as usize) < DENSE {
                dense[ch as usize] = dense[ch as usize].saturating_add(c);
                seen[ch as usize] = true;
            } else {
                let e = counts.entry(ch).or_insert(0);
                *e = e.saturating_add(c);
            }
        }
        total_count = total_count.saturating_add(c);
        total_units += n * c as u128;
        distinct += 1;
    })?;
    for (i, &was_seen) in seen.iter().enumerate() {
        if was_seen {
            if let Some(ch) = char::from_u32(i as u32) {
                counts.insert(ch, dense[i]);
            }
        }
    }
    Ok(CharPass { counts, total_count, total_units, distinct })
}

/// The chars a word keeps: the alphabet, and any special token that is one char (`prepare` looks a
/// char up among all one-char strings of the vocab).
fn kept_chars(alphabet: &[char], cfg: &BpeTrainerConfig) -> Vec<char> {
    let mut kept = alphabet.to_vec();
    for s in &cfg.special_tokens {
        let mut it = s.chars();
        if let (Some(c), None) = (it.next(), it.next()) {
            kept.push(c);
        }
    }
    kept
}

/// The variant strings among the symbols seen, sorted.
fn variants_of(sym: &Symbols<'_>, used: &[bool]) -> Vec<String> {
    let mut v: Vec<String> =
        (0..sym.names.len()).filter(|&i| used[i] && sym.is_variant[i]).map(|i| sym.names[i].clone()).collect();
    v.sort_unstable();
    v
}

/// The alphabet, variants and totals of words held in memory (no pruning): what `prepare` needs
/// when it is given every word.
pub fn corpus_of(words: &[(String, u64)], cfg: &BpeTrainerConfig) -> Corpus {
    let pass = match char_pass(words, cfg) {
        Ok(p) => p,
        Err(_) => unreachable!("reading a slice cannot fail"),
    };
    let alphabet = compute_alphabet(pass.counts, cfg);
    let mut variants = Vec::new();
    if cfg.continuing_subword_prefix.is_some() || cfg.end_of_word_suffix.is_some() {
        let mut sym = Symbols::new(kept_chars(&alphabet, cfg), cfg);
        let mut used: Vec<bool> = Vec::new();
        let mut buf = Vec::new();
        for (w, _) in words {
            sym.of_word(w, &mut buf);
            used.resize(sym.names.len(), false);
            for &s in &buf {
                used[s as usize] = true;
            }
        }
        variants = variants_of(&sym, &used);
    }
    Corpus {
        alphabet,
        variants,
        frozen_units: Vec::new(),
        total_count: pass.total_count,
        total_units: pass.total_units,
        distinct: pass.distinct,
    }
}

/// Reads `stream` and keeps the words that can take part in a merge under `cfg` (all of them when
/// `prune` is false or `cfg.min_frequency` is below 2). `units`: also keep the unit counts of the
/// words left out (WordPiece's likelihood criterion needs them).
pub fn select<S: WordStream + ?Sized>(
    stream: &S,
    cfg: &BpeTrainerConfig,
    units: bool,
    prune: bool,
) -> io::Result<Selected> {
    let pass = char_pass(stream, cfg)?;
    let alphabet = compute_alphabet(pass.counts, cfg);
    let threshold = cfg.min_frequency;
    let mut pruning = prune && threshold >= 2;
    let affixes: Vec<&str> =
        [cfg.continuing_subword_prefix.as_deref(), cfg.end_of_word_suffix.as_deref()].into_iter().flatten().collect();
    let has_affix = !affixes.is_empty();
    // Whether the chars a word keeps spell the prefix or suffix (checked after limit_alphabet, whose
    // dropped chars can join two halves of one): then pruning is off (see the module notes).
    let mut literal_affix = false;
    let mut content = String::new();
    let mut sym = Symbols::new(kept_chars(&alphabet, cfg), cfg);
    let mut used: Vec<bool> = Vec::new();
    let mut totals: AHashMap<u64, u64> = AHashMap::new();
    let mut buf: Vec<u32> = Vec::new();

    // Pass 2: the variants seen, and the totals of the initial pairs.
    if pruning || has_affix {
        stream.for_each_word(|w, c| {
            sym.of_word(w, &mut buf);
            used.resize(sym.names.len(), false);
            for &s in &buf {
                used[s as usize] = true;
            }
            if pruning && has_affix && !literal_affix {
                content.clear();
                content.extend(w.chars().filter(|&ch| sym.kept(ch)));
                literal_affix = affixes.iter().any(|a| content.contains(a));
            }
            if pruning {
                for win in buf.windows(2) {
                    let t = totals.entry(pack(win[0], win[1])).or_insert(0);
                    *t = t.saturating_add(c);
                }
            }
        })?;
    }
    let variants = variants_of(&sym, &used);
    pruning &= !literal_affix;

    // Pass 3: the words kept, and the unit counts of those left out.
    let mut frozen: Vec<u64> = vec![0; sym.names.len()];
    let words = if pruning {
        let mut kept = Vec::new();
        stream.for_each_word(|w, c| {
            sym.of_word(w, &mut buf);
            if buf.windows(2).any(|p| totals.get(&pack(p[0], p[1])).is_some_and(|&t| t >= threshold)) {
                kept.push((w.to_string(), c));
            } else if units {
                for &s in &buf {
                    frozen[s as usize] = frozen[s as usize].saturating_add(c);
                }
            }
        })?;
        kept
    } else {
        stream.collect_words()?
    };
    let frozen_units =
        frozen.iter().enumerate().filter(|(_, &c)| c > 0).map(|(i, &c)| (sym.names[i].clone(), c)).collect();
    Ok(Selected {
        words,
        corpus: Corpus {
            alphabet,
            variants,
            frozen_units,
            total_count: pass.total_count,
            total_units: pass.total_units,
            distinct: pass.distinct,
        },
        cfg: cfg.clone(),
        units,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpe::train::{train, train_selected};

    fn ws(v: &[(&str, u64)]) -> Vec<(String, u64)> {
        v.iter().map(|(w, c)| (w.to_string(), *c)).collect()
    }

    fn kept(sel: &Selected) -> Vec<&str> {
        let mut k: Vec<&str> = sel.words.iter().map(|(w, _)| w.as_str()).collect();
        k.sort_unstable();
        k
    }

    #[test]
    fn words_whose_pairs_all_stay_below_min_frequency_are_left_out() {
        // "ab" totals 3 (ab x2 + abx x1); "xy" 1, "bx" 1: the word "xy" cannot merge, "abx" can
        // (through "ab"), and "q" has no pair at all.
        let words = ws(&[("ab", 2), ("abx", 1), ("xy", 1), ("q", 9)]);
        let cfg = BpeTrainerConfig { vocab_size: 100, min_frequency: 2, ..Default::default() };
        let sel = select(&words[..], &cfg, false, true).unwrap();
        assert_eq!(kept(&sel), ["ab", "abx"]);
        assert_eq!((sel.loaded(), sel.distinct()), (2, 4));
        // The alphabet still has x, y and q, and the model equals training on every word.
        assert_eq!(sel.corpus.alphabet, ['a', 'b', 'q', 'x', 'y']);
        assert_eq!(
            train_selected(sel.clone(), &cfg, &mut |_| Ok(())).unwrap(),
            train(&words, &cfg, &mut |_| Ok(())).unwrap()
        );
    }

    #[test]
    fn below_two_or_unpruned_keeps_every_word() {
        let words = ws(&[("ab", 2), ("xy", 1), ("q", 9)]);
        for (mf, prune) in [(0, true), (1, true), (5, false)] {
            let cfg = BpeTrainerConfig { vocab_size: 100, min_frequency: mf, ..Default::default() };
            assert_eq!(select(&words[..], &cfg, false, prune).unwrap().loaded(), 3, "min_frequency {mf} prune {prune}");
        }
    }

    #[test]
    fn variants_and_alphabet_come_from_every_word() {
        // "zq" is left out, but its "##q" variant and the chars z, q keep their ids.
        let words = ws(&[("abab", 3), ("zq", 1)]);
        let cfg = BpeTrainerConfig {
            vocab_size: 100,
            min_frequency: 2,
            continuing_subword_prefix: Some("##".into()),
            end_of_word_suffix: Some("</w>".into()),
            ..Default::default()
        };
        let sel = select(&words[..], &cfg, false, true).unwrap();
        assert_eq!(kept(&sel), ["abab"]);
        assert_eq!(sel.corpus.variants, ["##a", "##b", "##b</w>", "##q</w>"]);
        assert_eq!(
            train_selected(sel.clone(), &cfg, &mut |_| Ok(())).unwrap(),
            train(&words, &cfg, &mut |_| Ok(())).unwrap()
        );
    }

    #[test]
    fn a_literal_prefix_in_the_text_turns_pruning_off() {
        let words = ws(&[("a##b", 1), ("ab", 5)]);
        let cfg = BpeTrainerConfig {
            vocab_size: 100,
            min_frequency: 2,
            continuing_subword_prefix: Some("##".into()),
            ..Default::default()
        };
        assert_eq!(select(&words[..], &cfg, false, true).unwrap().loaded(), 2);
    }

    #[test]
    fn a_prefix_spelled_across_a_char_dropped_by_limit_alphabet_turns_pruning_off_too() {
        // "#X#" keeps "##" once X (the rarest char) is dropped by limit_alphabet.
        let words = ws(&[("#X#", 1), ("ab", 5)]);
        let words = &words[..];
        let base = BpeTrainerConfig {
            vocab_size: 100,
            min_frequency: 2,
            continuing_subword_prefix: Some("##".into()),
            ..Default::default()
        };
        let limited = BpeTrainerConfig { limit_alphabet: Some(3), ..base.clone() };
        assert_eq!(select(words, &limited, false, true).unwrap().loaded(), 2);
        assert_eq!(select(words, &base, false, true).unwrap().loaded(), 1);
    }

    #[test]
    fn limit_alphabet_pairs_are_over_the_kept_chars_and_use_all_char_counts() {
        // X is dropped by limit_alphabet (lowest count), so "aXb" has the initial pair (a, b), which
        // totals 2 with "ab": kept. Without the char counts of the dropped word "cc", c would be
        // missing from the alphabet.
        let words = ws(&[("aXb", 1), ("ab", 1), ("cc", 4), ("d", 5)]);
        let cfg = BpeTrainerConfig { vocab_size: 100, min_frequency: 2, limit_alphabet: Some(4), ..Default::default() };
        let sel = select(&words[..], &cfg, false, true).unwrap();
        assert_eq!(sel.corpus.alphabet, ['a', 'b', 'c', 'd']);
        assert_eq!(kept(&sel), ["aXb", "ab", "cc"]);
        let cfg3 = BpeTrainerConfig { min_frequency: 3, ..cfg.clone() };
        let sel3 = select(&words[..], &cfg3, false, true).unwrap();
        assert_eq!(kept(&sel3), ["cc"]);
        assert_eq!(
            train_selected(sel3.clone(), &cfg3, &mut |_| Ok(())).unwrap(),
            train(&words, &cfg3, &mut |_| Ok(())).unwrap()
        );
    }

    #[test]
    fn frozen_units_count_the_dropped_words_symbols() {
        let words = ws(&[("abab", 3), ("zq", 1), ("z", 4)]);
        let cfg = BpeTrainerConfig {
            vocab_size: 100,
            min_frequency: 2,
            continuing_subword_prefix: Some("##".into()),
            ..Default::default()
        };
        let sel = select(&words[..], &cfg, true, true).unwrap();
        let mut frozen = sel.corpus.frozen_units.clone();
        frozen.sort_unstable();
        assert_eq!(frozen, [("##q".to_string(), 1), ("z".to_string(), 5)]);
        // Training with other options than the selection's is refused.
        let other = BpeTrainerConfig { vocab_size: 50, ..cfg.clone() };
        assert!(matches!(sel.check_options(&other, true), Err(TrainError::Config(_))));
        let freq_only = select(&words[..], &cfg, false, true).unwrap();
        assert!(matches!(freq_only.check_options(&cfg, true), Err(TrainError::Config(_))));
    }

    #[test]
    fn pruned_training_equals_full_training_on_pseudo_random_corpora() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut pruned = 0;
        for case in 0..300 {
            let alphabet: Vec<char> = "abcdeé".chars().take(2 + (next() % 5) as usize).collect();
            let mut words: Vec<(String, u64)> = Vec::new();
            for _ in 0..(1 + next() % 14) {
                let w: String =
                    (0..(1 + next() % 6)).map(|_| alphabet[(next() % alphabet.len() as u64) as usize]).collect();
                if !words.iter().any(|(x, _)| *x == w) {
                    words.push((w, 1 + next() % 5));
                }
            }
            let affix = next() % 4;
            let cfg = BpeTrainerConfig {
                vocab_size: 1 + (next() % 40) as usize,
                min_frequency: 2 + next() % 4,
                limit_alphabet: (next() % 3 == 0).then(|| 1 + (next() % 4) as usize),
                max_token_length: (next() % 3 == 0).then(|| 2 + (next() % 4) as usize),
                continuing_subword_prefix: (affix & 1 == 1).then(|| "##".to_string()),
                end_of_word_suffix: (affix & 2 == 2).then(|| "</w>".to_string()),
                ..Default::default()
            };
            let sel = select(&words[..], &cfg, true, true).unwrap();
            pruned += (sel.loaded() < sel.distinct()) as u32;
            let full = train(&words, &cfg, &mut |_| Ok(())).unwrap();
            assert_eq!(
                train_selected(sel.clone(), &cfg, &mut |_| Ok(())).unwrap(),
                full,
                "case {case}: {words:?} {cfg:?}"
            );
            if affix == 1 {
                let wp = |w: &[(String, u64)]| {
                    crate::wordpiece::train(w, &cfg, crate::wordpiece::Criterion::Likelihood, &mut |_| Ok(()))
                };
                let got = crate::wordpiece::train_selected(
                    sel.clone(),
                    &cfg,
                    crate::wordpiece::Criterion::Likelihood,
                    &mut |_| Ok(()),
                );
                assert_eq!(got.unwrap(), wp(&words).unwrap(), "likelihood case {case}: {words:?} {cfg:?}");
            }
        }
        // The property is only tested where words were left out: most cases.
        assert!(pruned > 150, "only {pruned} of 300 cases left words out");
    }
}
