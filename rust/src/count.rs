//! Parallel word counting: lines -> (optional normalizer) -> pre-tokenizer -> word counts.
//!
//! Mirrors what HF `Tokenizer::train` feeds `BpeTrainer::feed`: every pre-token of every line is
//! one word occurrence (lines keep their line endings, as in `train_from_files`).
//!
//! Performance notes
//! - Raw pieces (slices of the line, not byte-mapped) are counted; each DISTINCT word is mapped
//!   through the byte-level table once, in [`WordCounter::words`], not once per occurrence.
//! - A batch is split into chunks counted on the rayon pool into chunk-local maps keyed by owned
//!   strings (looked up by `&str` first, so a string is allocated once per distinct word per chunk),
//!   then folded into the counter. The result does not depend on chunking or thread count.
//! - Memory: [`WordCounter::memory_bytes`] estimates the table from its buckets (one
//!   `(String, u64)` slot of 32 bytes plus a control byte each; hashbrown keeps 1/8 free and doubles)
//!   and the word bytes plus a 16-byte allocator header per word: 54-92 bytes + the word per distinct
//!   word, depending on where the table is between two doublings. Counting with a budget spills the
//!   table as a sorted run (see `counts_file.rs`) when [`WordCounter::peak_after_next_feed`] (the
//!   table, the next batch's new words, and a rehash's doubled table) would pass the budget, so
//!   memory stays bounded on any corpus.

use crate::batch_text::{BatchText, NotUtf8};
use crate::normalize::Normalizer;
use crate::pretok::PreTokenizer;
use ahash::AHashMap;
use rayon::prelude::*;

/// Word counts built from batches of lines. Counts are u64 and saturate instead of wrapping.
#[derive(Clone, Debug)]
pub struct WordCounter {
    pre: PreTokenizer,
    norm: Option<Normalizer>,
    /// raw (unmapped) word -> count
    counts: AHashMap<String, u64>,
    /// Sum of the byte lengths of the keys of `counts` (for the memory estimate).
    key_bytes: usize,
    /// New distinct words and their bytes added by the last `feed` (to foresee the next one).
    last_new: (usize, usize),
}

/// Lines per parallel task; large enough that map merging stays cheap.
const MIN_CHUNK_LINES: usize = 2048;

/// Adds the words of `lines` to `m`.
fn count_into<S: BatchText>(
    m: &mut AHashMap<String, u64>,
    lines: &[S],
    pre: &PreTokenizer,
    norm: Option<&Normalizer>,
) -> Result<(), NotUtf8> {
    let mut add = |p: &str| {
        if let Some(c) = m.get_mut(p) {
            *c = c.saturating_add(1);
        } else {
            m.insert(p.to_string(), 1);
        }
    };
    let mut scratch = Vec::new();
    for line in lines {
        line.with_utf8(&mut scratch, |line| match norm {
            Some(n) => {
                let t = n.normalize_str(line);
                pre.for_each_raw_piece(&t, &mut add);
            }
            None => pre.for_each_raw_piece(line, &mut add),
        })?;
    }
    Ok(())
}

/// Adds `src` into `dst`; returns the byte length of the keys that were new to `dst`.
fn merge_into(dst: &mut AHashMap<String, u64>, src: AHashMap<String, u64>) -> usize {
    let mut added = 0;
    for (k, v) in src {
        match dst.get_mut(&k) {
            Some(c) => *c = c.saturating_add(v),
            None => {
                added += k.len();
                dst.insert(k, v);
            }
        }
    }
    added
}

/// Bytes per bucket of the table: the `(String, u64)` slot plus hashbrown's control byte.
const BUCKET_BYTES: usize = std::mem::size_of::<(String, u64)>() + 1;
/// What the allocator adds to each word's heap string (header and rounding), on average.
const ALLOC_OVERHEAD: usize = 16;

/// Buckets of a hashbrown table that holds `capacity` items (it keeps 1/8 of the buckets free).
fn buckets(capacity: usize) -> usize {
    if capacity == 0 {
        0
    } else {
        (capacity * 8 / 7).next_power_of_two()
    }
}

impl WordCounter {
    pub fn new(pre: PreTokenizer, norm: Option<Normalizer>) -> Self {
        WordCounter { pre, norm, counts: AHashMap::new(), key_bytes: 0, last_new: (0, 0) }
    }

    pub fn pre_tokenizer(&self) -> &PreTokenizer {
        &self.pre
    }

    pub fn normalizer(&self) -> Option<&Normalizer> {
        self.norm.as_ref()
    }

    /// Counts the words of `lines` (in parallel on the current rayon pool). A line with no UTF-8 form
    /// (see [`BatchText`]) is an error, and then nothing of `lines` is counted.
    pub fn feed<S: BatchText>(&mut self, lines: &[S]) -> Result<(), NotUtf8> {
        if lines.is_empty() {
            return Ok(());
        }
        let threads = rayon::current_num_threads().max(1);
        let chunk = lines.len().div_ceil(threads * 4).max(MIN_CHUNK_LINES);
        let pre = &self.pre;
        let norm = self.norm.as_ref();
        let maps = lines.par_chunks(chunk).map(|c| {
            let mut m = AHashMap::new();
            count_into(&mut m, c, pre, norm).map(|()| m)
        });
        let merged = maps.try_reduce(AHashMap::new, |mut a, b| {
            // Fold the smaller map into the larger one.
            if a.len() < b.len() {
                let mut b = b;
                merge_into(&mut b, a);
                return Ok(b);
            }
            merge_into(&mut a, b);
            Ok(a)
        })?;
        let (len0, bytes0) = (self.counts.len(), self.key_bytes);
        if self.counts.is_empty() {
            self.key_bytes = merged.keys().map(|k| k.len()).sum();
            self.counts = merged;
        } else {
            self.key_bytes += merge_into(&mut self.counts, merged);
        }
        self.last_new = (self.counts.len() - len0, self.key_bytes - bytes0);
        Ok(())
    }

    /// Adds `count` occurrences of an already pre-tokenized raw word.
    pub fn add_word(&mut self, raw: &str, count: u64) {
        if let Some(c) = self.counts.get_mut(raw) {
            *c = c.saturating_add(count);
        } else {
            self.key_bytes += raw.len();
            self.counts.insert(raw.to_string(), count);
        }
    }

    /// Adds every count of `other` (same pipeline; the caller checks).
    pub fn merge(&mut self, other: &WordCounter) {
        for (w, c) in &other.counts {
            self.add_word(w, *c);
        }
    }

    /// Estimated heap bytes held by the table (see the performance notes).
    pub fn memory_bytes(&self) -> usize {
        buckets(self.counts.capacity()) * BUCKET_BYTES + self.key_bytes + self.counts.len() * ALLOC_OVERHEAD
    }

    /// The estimated peak if the next `feed` adds as many new words as the last one did: the table
    /// plus those words, plus, when they do not fit, the doubled table that exists next to the old one
    /// while it is rehashed. A budgeted count spills when this passes the budget, so a resize never
    /// overshoots it.
    pub fn peak_after_next_feed(&self) -> usize {
        let (new_words, new_bytes) = self.last_new;
        let cap = self.counts.capacity();
        let mut peak = self.memory_bytes() + new_bytes + new_words * ALLOC_OVERHEAD;
        if self.counts.len() + new_words > cap {
            let mut grown = buckets(cap).max(4) * 2;
            while grown * 7 / 8 < self.counts.len() + new_words {
                grown *= 2;
            }
            peak += grown * BUCKET_BYTES;
        }
        peak
    }

    /// Forgets every word and frees the table (after a spill).
    pub fn clear(&mut self) {
        self.counts = AHashMap::new();
        self.key_bytes = 0;
    }

    /// The raw words (as counted, before byte-level mapping) sorted by their UTF-8 bytes.
    pub fn sorted_raw(&self) -> Vec<(&str, u64)> {
        let mut v: Vec<(&str, u64)> = self.counts.iter().map(|(w, c)| (w.as_str(), *c)).collect();
        v.par_sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        v
    }

    /// Drops the words seen fewer than `min_count` times.
    pub fn retain_min_count(&mut self, min_count: u64) {
        if min_count > 1 {
            self.counts.retain(|_, c| *c >= min_count);
            self.key_bytes = self.counts.keys().map(|k| k.len()).sum();
        }
    }

    /// Bytes a record stream of these words needs, roughly (to size buffers).
    pub fn key_bytes_hint(&self) -> usize {
        self.key_bytes + 3 * self.counts.len()
    }

    /// Sum of all counts (word occurrences).
    pub fn occurrences(&self) -> u64 {
        self.counts.values().fold(0u64, |a, c| a.saturating_add(*c))
    }

    /// Number of distinct words.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// The words as the model sees them (byte-level mapped when the pre-tokenizer is ByteLevel),
    /// in unspecified order. Mapping is done once per distinct word, in parallel.
    pub fn words_unsorted(&self) -> Vec<(String, u64)> {
        let raw: Vec<(&String, &u64)> = self.counts.iter().collect();
        if self.pre.is_byte_level() {
            raw.par_iter().map(|(w, c)| (self.pre.map_piece(w), **c)).collect()
        } else {
            raw.into_iter().map(|(w, c)| (w.clone(), *c)).collect()
        }
    }

    /// Calls `f` with each word as the model sees it (byte-level mapped into one reused buffer).
    pub fn for_each_model_word<F: FnMut(&str, u64)>(&self, mut f: F) {
        if self.pre.is_byte_level() {
            let mut buf = String::new();
            for (w, c) in &self.counts {
                crate::pretok::byte_level_map_into(w, &mut buf);
                f(&buf, *c);
            }
        } else {
            for (w, c) in &self.counts {
                f(w, *c);
            }
        }
    }

    /// The words as the model sees them, sorted by word (a deterministic order).
    pub fn words(&self) -> Vec<(String, u64)> {
        let mut v = self.words_unsorted();
        v.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
        v
    }
}

/// Training reads the counter's words as the model sees them (see `bpe/select.rs`).
impl crate::bpe::select::WordStream for WordCounter {
    fn for_each_word<F: FnMut(&str, u64)>(&self, f: F) -> std::io::Result<()> {
        self.for_each_model_word(f);
        Ok(())
    }

    fn collect_words(&self) -> std::io::Result<Vec<(String, u64)>> {
        Ok(self.words_unsorted())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_byte_level_words() {
        let mut wc = WordCounter::new(
            PreTokenizer::ByteLevel { add_prefix_space: false, use_regex: true, trim_offsets: true },
            None,
        );
        wc.feed(&["the cat\n", "the dog\n"]).unwrap();
        assert_eq!(
            wc.words(),
            vec![("the".to_string(), 2), ("Ċ".to_string(), 2), ("Ġcat".to_string(), 1), ("Ġdog".to_string(), 1)]
        );
        assert_eq!(wc.len(), 4);
    }

    #[test]
    fn chunking_does_not_change_counts() {
        let lines: Vec<String> = (0..20000).map(|i| format!("w{} x{} shared\n", i % 97, i % 13)).collect();
        let mut a = WordCounter::new(PreTokenizer::Whitespace, None);
        a.feed(&lines).unwrap();
        let mut b = WordCounter::new(PreTokenizer::Whitespace, None);
        for part in lines.chunks(333) {
            b.feed(part).unwrap();
        }
        assert_eq!(a.words(), b.words());
        let shared = a.words().into_iter().find(|(w, _)| w == "shared").unwrap();
        assert_eq!(shared.1, 20000);
    }

    #[test]
    fn normalizer_applies_before_splitting() {
        let mut wc = WordCounter::new(PreTokenizer::Whitespace, Some(Normalizer::Lowercase));
        wc.feed(&["Hello HELLO"]).unwrap();
        assert_eq!(wc.words(), vec![("hello".to_string(), 2)]);
    }

    #[test]
    fn merge_equals_counting_together_and_memory_grows() {
        let lines: Vec<String> = (0..5000).map(|i| format!("w{} é{} z\n", i % 311, i % 7)).collect();
        let mut whole = WordCounter::new(PreTokenizer::Whitespace, None);
        whole.feed(&lines).unwrap();
        let mut a = WordCounter::new(PreTokenizer::Whitespace, None);
        a.feed(&lines[..1234]).unwrap();
        let before = a.memory_bytes();
        let mut b = WordCounter::new(PreTokenizer::Whitespace, None);
        b.feed(&lines[1234..]).unwrap();
        a.merge(&b);
        assert_eq!(a.words(), whole.words());
        assert!(a.memory_bytes() >= before && before > 0);
        // A feed that adds words can grow the table: the foreseen peak is never below the present.
        assert!(a.peak_after_next_feed() >= a.memory_bytes());
        let raw = a.sorted_raw();
        assert!(raw.windows(2).all(|p| p[0].0.as_bytes() < p[1].0.as_bytes()));
        a.retain_min_count(1000);
        assert_eq!(a.words(), vec![("z".to_string(), 5000)]);
        a.clear();
        assert_eq!((a.len(), a.memory_bytes()), (0, 0));
    }
}
