//! [`PieceIndex`]: token string -> id over the strings of a shared [`TokenTable`], without a copy of
//! any string.
//!
//! Why not a `HashMap<String, u32>`: loading a 32k-piece `.model` built two of them (the
//! pipeline's `token_to_id` and the BPE model's), each cloning every piece, and with the table
//! itself that was three allocations per piece and most of the load time (bench_load.py:
//! 12.7 ms against sentencepiece's 7.4 ms; with this index and the pair table deferred past the
//! first 64 KB encoded, 5.1 ms against 6.7 ms). Here the keys are the table's own strings and the
//! index is one array of `u64` slots: the high half a tag of the key's hash (so a probe rarely
//! compares bytes that differ), the low half the id. Open addressing, linear probing, load factor
//! at most one half. [`PieceIndex::build_suffixes`] keys each string without its first bytes
//! (WordPiece's continuation tokens `##ab` looked up as `ab`) over the same table.

use std::sync::Arc;

use crate::encoding::TokenTable;

const EMPTY: u64 = u64::MAX;

/// Fixed seeds: the index is rebuilt per process, but a fixed hash keeps probe sequences (and so
/// any timing) reproducible.
fn hasher() -> ahash::RandomState {
    ahash::RandomState::with_seeds(0x243f_6a88_85a3_08d3, 0x1319_8a2e_0370_7344, 0xa409_3822_299f_31d0, 0x082e_fa98_ec4e_6c89)
}

/// String -> id over a token table (see the module notes).
#[derive(Clone, Debug)]
pub struct PieceIndex {
    table: Arc<TokenTable>,
    slots: Vec<u64>,
    mask: usize,
    /// Bytes of each indexed string that are not part of its key.
    skip: usize,
    hash: ahash::RandomState,
}

/// What [`PieceIndex::build`] found besides the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Duplicate {
    /// The id that was kept for the string (the first one `keep` admitted).
    pub first: u32,
    /// The later id with the same string (not indexed).
    pub again: u32,
}

impl PieceIndex {
    /// Indexes the ids `i` of `table` for which `keep(i)` holds, the first id of a repeated
    /// string winning; returns the first repeat seen, if any.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use subword_core::encoding::TokenTable;
    /// use subword_core::piece_index::PieceIndex;
    /// let table = Arc::new(TokenTable { strings: vec!["<unk>".into(), "▁a".into(), "▁a".into()] });
    /// let (index, repeat) = PieceIndex::build(table, |_| true);
    /// assert_eq!(index.get("▁a"), Some(1));
    /// assert_eq!(repeat.map(|d| (d.first, d.again)), Some((1, 2)));
    /// ```
    pub fn build(table: Arc<TokenTable>, keep: impl Fn(usize) -> bool) -> (PieceIndex, Option<Duplicate>) {
        Self::build_suffixes(table, 0, keep)
    }

    /// Like [`Self::build`], each string keyed without its first `skip` bytes; `keep` must admit
    /// only strings that have `skip` bytes up to a character boundary (others are left out).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use subword_core::encoding::TokenTable;
    /// use subword_core::piece_index::PieceIndex;
    /// let table = Arc::new(TokenTable { strings: vec!["ab".into(), "##ab".into()] });
    /// let (cont, _) = PieceIndex::build_suffixes(table.clone(), 2, |i| table.strings[i].starts_with("##"));
    /// assert_eq!((cont.get("ab"), cont.get("##ab")), (Some(1), None));
    /// ```
    pub fn build_suffixes(
        table: Arc<TokenTable>,
        skip: usize,
        keep: impl Fn(usize) -> bool,
    ) -> (PieceIndex, Option<Duplicate>) {
        let n = table.strings.len();
        let cap = (2 * n.max(1)).next_power_of_two().max(8);
        let mut index = PieceIndex { table, slots: vec![EMPTY; cap], mask: cap - 1, skip, hash: hasher() };
        let mut repeat = None;
        for i in 0..n {
            if !keep(i) {
                continue;
            }
            let Some(key) = index.table.strings[i].get(skip..) else { continue };
            let h = index.hash.hash_one(key);
            let tag = h >> 32;
            let mut s = (h as usize) & index.mask;
            loop {
                let slot = index.slots[s];
                if slot == EMPTY {
                    index.slots[s] = tag << 32 | i as u64;
                    break;
                }
                let id = slot as u32;
                if slot >> 32 == tag && index.key(id) == key {
                    repeat = repeat.or(Some(Duplicate { first: id, again: i as u32 }));
                    break;
                }
                s = (s + 1) & index.mask;
            }
        }
        (index, repeat)
    }

    /// The id of `key`, if indexed.
    #[inline]
    pub fn get(&self, key: &str) -> Option<u32> {
        let h = self.hash.hash_one(key);
        let tag = h >> 32;
        let mut s = (h as usize) & self.mask;
        loop {
            let slot = self.slots[s];
            if slot == EMPTY {
                return None;
            }
            let id = slot as u32;
            if slot >> 32 == tag && self.key(id) == key {
                return Some(id);
            }
            s = (s + 1) & self.mask;
        }
    }

    /// The key of an indexed id (its string without the skipped bytes).
    #[inline]
    fn key(&self, id: u32) -> &str {
        self.table.strings[id as usize].get(self.skip..).unwrap_or("")
    }

    /// The table the ids index.
    pub fn table(&self) -> &Arc<TokenTable> {
        &self.table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(words: &[&str]) -> Arc<TokenTable> {
        Arc::new(TokenTable { strings: words.iter().map(|w| w.to_string()).collect() })
    }

    #[test]
    fn finds_every_kept_string_and_nothing_else() {
        let words: Vec<String> = (0..5000).map(|i| format!("▁w{i}")).collect();
        let t = Arc::new(TokenTable { strings: words.clone() });
        let (index, repeat) = PieceIndex::build(t, |i| i % 3 != 0);
        assert_eq!(repeat, None);
        for (i, w) in words.iter().enumerate() {
            assert_eq!(index.get(w), (i % 3 != 0).then_some(i as u32), "{w}");
        }
        assert_eq!(index.get("▁w5000"), None);
        assert_eq!(index.get(""), None);
    }

    #[test]
    fn first_id_of_a_repeat_wins_and_the_repeat_is_reported() {
        let (index, repeat) = PieceIndex::build(table(&["a", "b", "a", "b"]), |_| true);
        assert_eq!(index.get("a"), Some(0));
        assert_eq!(index.get("b"), Some(1));
        assert_eq!(repeat, Some(Duplicate { first: 0, again: 2 }));
        // an id left out does not shadow a later one
        let (index, repeat) = PieceIndex::build(table(&["a", "b", "a"]), |i| i != 0);
        assert_eq!((index.get("a"), repeat), (Some(2), None));
    }
}
