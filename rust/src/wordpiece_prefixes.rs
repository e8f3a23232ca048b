//! The longest token at a position of a word in one pass over its bytes, for WordPiece.
//!
//! WordPiece (HF's and ours) takes, at each position, the longest token the rest of the word starts
//! with. Asked of a string index, that is one lookup per candidate length, longest first: a word
//! missing from the vocab (most German compounds, for a BERT vocab) costs a hash of every candidate
//! and a probe for each, down to the token found. On German text that was 63% of our BERT encode
//! (perf, 2026-12-06: the index probes 41%, hashing 15%, string compares 7%), and tokie led that row.
//!
//! Here every byte prefix of every token is in one table, keyed by a hash extended byte by byte: the
//! walk from a position adds one byte per step, stops at the first prefix that no token has, and the
//! last step that ended a token (at a char boundary) gives the longest match. Entries keep only part
//! of the hash, so a walk could be misled by two prefixes whose hashes collide: the token found is
//! therefore compared with the word's bytes, and on a mismatch the caller asks the exact index as
//! before ([`PrefixTable::longest`] returns `None` then), so the result never depends on the hash.
//!
//! ```
//! use subword_core::wordpiece_prefixes::{PrefixTable, Longest};
//! let tokens = ["un", "unaff", "able", "a"];
//! let table = PrefixTable::build(tokens.iter().enumerate().map(|(i, t)| (0, t.as_bytes(), i as u32)));
//! let token = |id: u32| tokens[id as usize].as_bytes();
//! assert_eq!(table.longest(0, b"unaffable", token), Longest::Found(5, 1));
//! assert_eq!(table.longest(0, b"xyz", token), Longest::NoToken);
//! ```

/// A slot: the high 40 bits of a prefix's hash (its tag, [`tag_of`]), and the id of the token it spells
/// ([`PREFIX_ONLY`] for a prefix that is no token); 0 is empty.
type Slot = u64;

const ID_BITS: u32 = 24;
/// The id field of a prefix that is not itself a token.
const PREFIX_ONLY: u64 = (1 << ID_BITS) - 1;
/// Ids the id field can hold (one value is [`PREFIX_ONLY`]).
pub const MAX_ID: u32 = (1 << ID_BITS) - 2;

/// What a walk found at a position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Longest {
    /// The longest token: its length in bytes and its id.
    Found(usize, u32),
    /// No token starts the rest of the word.
    NoToken,
    /// The walk cannot be trusted here (two prefixes' hashes collided): ask the exact index.
    Unsure,
}

/// See the module docs.
#[derive(Clone, Debug)]
pub struct PrefixTable {
    slots: Vec<Slot>,
    shift: u32,
    len: usize,
}

/// The hash of the empty prefix of a table's `kind` of key (0: tokens at a word's start, 1: continuation
/// tokens keyed without their prefix): each kind has its own chain of hashes in the one table.
#[inline]
fn seed(kind: u8) -> u64 {
    0xcbf2_9ce4_8422_2325 ^ (u64::from(kind) << 56)
}

/// The hash of a prefix one byte longer (FNV-1a's step; the slot and tag come from a mix of it).
#[inline]
fn step(h: u64, b: u8) -> u64 {
    (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
}

/// The slot bits of hash `m` besides the id field: its top 40 bits with the lowest of them set, so that no
/// entry is 0 (the empty slot) whatever its hash; that bit is below a slot's home bits in any table of
/// fewer than 2^40 slots.
#[inline]
fn tag_of(m: u64) -> u64 {
    (m & !PREFIX_ONLY) | (1 << ID_BITS)
}

#[inline]
fn mix(h: u64) -> u64 {
    let h = (h ^ (h >> 31)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^ (h >> 29)
}

impl PrefixTable {
    /// The table of `(kind, key bytes, id)` tokens; ids above [`MAX_ID`] are left out (the caller then
    /// does not use the table). Of two tokens with the same key and kind, the first keeps it.
    pub fn build<'a>(tokens: impl Iterator<Item = (u8, &'a [u8], u32)>) -> Self {
        let mut table = PrefixTable { slots: vec![0; 1 << 10], shift: 64 - 10, len: 0 };
        for (kind, key, id) in tokens {
            if id > MAX_ID || key.is_empty() {
                continue;
            }
            let mut h = seed(kind);
            for (i, &b) in key.iter().enumerate() {
                h = step(h, b);
                let whole = i + 1 == key.len();
                table.insert(mix(h), if whole { u64::from(id) } else { PREFIX_ONLY });
            }
        }
        table
    }

    /// Adds a prefix (growing the table past 5/8 full: tokens share most of their prefixes, so sizing by
    /// their total length left a BERT vocab's 73k distinct prefixes in 4 MB, a cache miss per step).
    fn insert(&mut self, m: u64, id: u64) {
        if 8 * (self.len + 1) > 5 * self.slots.len() {
            self.grow();
        }
        let tag = tag_of(m);
        let s = self.probe(m);
        let slot = self.slots[s];
        if slot == 0 {
            self.slots[s] = tag | id;
            self.len += 1;
        } else if slot & PREFIX_ONLY == PREFIX_ONLY {
            // Already there: a token's id replaces "prefix only"; a first id stays.
            self.slots[s] = tag | id;
        }
    }

    /// Twice the slots. A slot's home is the top bits of its hash, which its tag keeps (tables below 2^40
    /// slots), so the entries move without the keys.
    fn grow(&mut self) {
        let cap = self.slots.len() * 2;
        let shift = self.shift - 1;
        let mut slots = vec![0u64; cap];
        for &slot in self.slots.iter().filter(|&&s| s != 0) {
            let mut s = (slot >> shift) as usize;
            while slots[s] != 0 {
                s = (s + 1) & (cap - 1);
            }
            slots[s] = slot;
        }
        self.slots = slots;
        self.shift = shift;
    }

    /// The entry of hash `m`: `Some(id field)` if some token has this prefix.
    #[inline]
    fn find(&self, m: u64) -> Option<u64> {
        let slot = self.slots[self.probe(m)];
        (slot != 0).then_some(slot & PREFIX_ONLY)
    }

    /// The slot that holds hash `m`'s tag, or the empty slot where its probe ends.
    #[inline]
    fn probe(&self, m: u64) -> usize {
        let tag = tag_of(m);
        let mask = self.slots.len() - 1;
        let mut s = (m >> self.shift) as usize;
        while self.slots[s] != 0 && self.slots[s] & !PREFIX_ONLY != tag {
            s = (s + 1) & mask;
        }
        s
    }

    /// The longest token of `kind` that `rest` starts with; `token(id)` gives a token's key bytes, to check
    /// the candidate against `rest`.
    #[inline]
    pub fn longest<'t>(&self, kind: u8, rest: &[u8], token: impl Fn(u32) -> &'t [u8]) -> Longest {
        let mut h = seed(kind);
        let mut best = None;
        for (i, &b) in rest.iter().enumerate() {
            h = step(h, b);
            let Some(id) = self.find(mix(h)) else { break };
            // A token is a whole str: where its bytes match the text's, they end at a char boundary.
            if id != PREFIX_ONLY {
                best = Some((i + 1, id as u32));
            }
        }
        match best {
            None => Longest::NoToken,
            Some((len, id)) if token(id) == &rest[..len] => Longest::Found(len, id),
            Some(_) => Longest::Unsure,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against brute force (every token tried, longest wins) on random words over a small alphabet with
    /// multi-byte chars, for both kinds of key.
    #[test]
    fn longest_equals_brute_force() {
        let mut x = 3u64;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let alphabet = ["a", "b", "c", "d", "x", "é", "ü", "中", "日", "ß"];
        let word = |n: usize, next: &mut dyn FnMut(u64) -> u64| -> String {
            (0..n).map(|_| alphabet[next(alphabet.len() as u64) as usize]).collect()
        };
        let mut tokens: Vec<(u8, String)> = Vec::new();
        while tokens.len() < 300 {
            let kind = next(2) as u8;
            // Mostly two chars or more, so that many words start with no token at all.
            let n = if next(10) == 0 { 1 } else { 2 + next(4) as usize };
            let w = word(n, &mut next);
            if !tokens.contains(&(kind, w.clone())) {
                tokens.push((kind, w));
            }
        }
        let table = PrefixTable::build(tokens.iter().enumerate().map(|(i, (k, t))| (*k, t.as_bytes(), i as u32)));
        let token = |id: u32| tokens[id as usize].1.as_bytes();
        let (mut found, mut none) = (0, 0);
        for _ in 0..5000 {
            let w = word(1 + next(8) as usize, &mut next);
            for kind in 0..2u8 {
                let want = tokens
                    .iter()
                    .enumerate()
                    .filter(|(_, (k, t))| *k == kind && w.starts_with(t.as_str()))
                    .max_by_key(|(_, (_, t))| t.len())
                    .map(|(i, (_, t))| (t.len(), i as u32));
                let got = table.longest(kind, w.as_bytes(), token);
                assert_eq!(got, want.map_or(Longest::NoToken, |(l, i)| Longest::Found(l, i)), "{w:?} kind {kind}");
                found += usize::from(want.is_some());
                none += usize::from(want.is_none());
            }
        }
        assert!(found > 1000 && none > 300, "{found} {none}");
    }

    /// A candidate whose bytes differ from the word's (what a hash collision would give) is reported as
    /// unsure, never as found.
    #[test]
    fn a_candidate_that_does_not_match_is_unsure() {
        let table = PrefixTable::build([(0u8, b"ab".as_slice(), 0u32)].into_iter());
        assert_eq!(table.longest(0, b"abc", |_| b"ab".as_slice()), Longest::Found(2, 0));
        assert_eq!(table.longest(0, b"abc", |_| b"xy".as_slice()), Longest::Unsure);
    }
}
