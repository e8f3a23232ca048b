//! One generation of a thread's BPE word cache for words of up to 15 bytes: each word's symbols by
//! its packed key (bytes and length in a `u128`, never 0), in an open-addressing table with linear
//! probing, the symbols of multi-token words in one pool.
//!
//! Why not a `HashMap<u128, Box<[Sym]>>` (what this replaced): on text the cache has never seen, every
//! new word paid a box allocation, and every rotation of the generations freed a hundred thousand of
//! them (malloc and free were a twentieth of such an encode, perf, cl100k); and a hand-made table can
//! say where a key's slot is, so that callers can prefetch it before they read it
//! ([`WordTable::prefetch`]): the lookups of new words are bound by memory latency.
//!
//! ```
//! use subword_core::bpe::word_table::WordTable;
//! let mut t = WordTable::default();
//! let key = 3u128 << 120 | 0x636261; // "abc"
//! assert!(t.get(key).is_none());
//! t.insert(key, &[(7, 2), (9, 1)]);
//! assert_eq!(t.get(key), Some(&[(7, 2), (9, 1)][..]));
//! t.clear();
//! assert!(t.get(key).is_none());
//! ```

use super::encode::Sym;
use super::pair_table::prefetch;
use crate::huge::HugeSlice;

/// A slot: 32 bytes, two to a cache line. A one-token word keeps its symbol inline (`n == 1`); a
/// longer one keeps `n` symbols at `off` in the pool.
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Slot {
    key: u128,
    one: Sym,
    off: u32,
    n: u32,
}

/// Slots of a table's first allocation; it doubles whenever it is half full.
const FIRST_SLOTS: usize = 1 << 12;

/// See the module docs.
#[derive(Default)]
pub struct WordTable {
    /// On huge pages once a table reaches one ([`HugeSlice`]): up to 8 MB probed at random.
    slots: HugeSlice<Slot>,
    /// `64 - log2(slots.len())`: a slot index is the top bits of the key's hash.
    shift: u32,
    pool: Vec<Sym>,
    len: usize,
}

#[inline(always)]
fn hash(key: u128) -> u64 {
    // Two multiplies, mixed: the word's bytes are in both halves of the key.
    (key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ((key >> 64) as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F)
}

impl WordTable {
    /// Words held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no word is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    fn first_slot(&self, key: u128) -> usize {
        (hash(key) >> self.shift) as usize
    }

    /// `(address of the first slot, shift)`: with [`Self::slot_address`], where a lookup of a key would
    /// begin, for a caller that cannot reach the table itself without a lock (a prefetch). `(0, 0)` while
    /// the table has no slots.
    pub fn layout(&self) -> (usize, u32) {
        if self.slots.is_empty() {
            (0, 0)
        } else {
            (self.slots.as_ptr() as usize, self.shift)
        }
    }

    /// The address of the slot where a lookup of `key` begins in a table of [`Self::layout`] `(base, shift)`.
    #[inline(always)]
    pub fn slot_address(base: usize, shift: u32, key: u128) -> usize {
        base + ((hash(key) >> shift) as usize) * std::mem::size_of::<Slot>()
    }

    /// Asks the CPU to start loading the slot where a lookup of `key` begins.
    #[inline(always)]
    pub fn prefetch(&self, key: u128) {
        if let Some(slot) = self.slots.get(self.first_slot(key)) {
            prefetch(slot);
        }
    }

    /// The symbols stored for `key` (a packed key, not 0).
    #[inline]
    pub fn get(&self, key: u128) -> Option<&[Sym]> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = self.first_slot(key);
        loop {
            let s = &self.slots[i];
            if s.key == key {
                return Some(self.syms_of(s));
            }
            if s.key == 0 {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    #[inline(always)]
    fn syms_of<'a>(&'a self, s: &'a Slot) -> &'a [Sym] {
        if s.n == 1 {
            std::slice::from_ref(&s.one)
        } else {
            let off = s.off as usize;
            self.pool.get(off..off + s.n as usize).unwrap_or(&[])
        }
    }

    /// Stores `syms` for `key` (a packed key, not 0), replacing what it had, and returns them.
    pub fn insert(&mut self, key: u128, syms: &[Sym]) -> &[Sym] {
        debug_assert!(key != 0);
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = self.first_slot(key);
        while self.slots[i].key != 0 && self.slots[i].key != key {
            i = (i + 1) & mask;
        }
        if self.slots[i].key == 0 {
            self.len += 1;
        }
        let slot = match syms {
            [one] => Slot { key, one: *one, off: 0, n: 1 },
            _ => {
                let off = self.pool.len() as u32;
                self.pool.extend_from_slice(syms);
                Slot { key, one: (0, 0), off, n: syms.len() as u32 }
            }
        };
        self.slots[i] = slot;
        let s = &self.slots[i];
        self.syms_of(s)
    }

    /// Twice the slots (the first allocation if there were none), every word moved to its new slot.
    fn grow(&mut self) {
        let n = (self.slots.len() * 2).max(FIRST_SLOTS);
        let old = std::mem::replace(&mut self.slots, HugeSlice::filled(n, Slot::default()));
        self.shift = 64 - n.trailing_zeros();
        let mask = n - 1;
        for &s in old.iter().filter(|s| s.key != 0) {
            let mut i = self.first_slot(s.key);
            while self.slots[i].key != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
        }
    }

    /// Forgets every word, keeping the allocations.
    pub fn clear(&mut self) {
        self.slots.fill(Slot::default());
        self.pool.clear();
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// The table against a `HashMap` through inserts, replacements, growth and clears.
    #[test]
    fn agrees_with_a_hash_map() {
        let mut table = WordTable::default();
        let mut map: HashMap<u128, Vec<Sym>> = HashMap::new();
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..60_000u32 {
            // Keys from a small range, so that many repeat (replacements) and share first slots.
            let key = (u128::from(next() % 20_000) + 1) | (u128::from(round % 3 + 1) << 120);
            let n = (next() % 4) as usize;
            let syms: Vec<Sym> = (0..n as u32).map(|i| (i + round, i + 1)).collect();
            assert_eq!(table.insert(key, &syms), &syms[..]);
            map.insert(key, syms);
            if round % 20_000 == 19_999 {
                table.clear();
                map.clear();
            }
            let probe = (u128::from(next() % 20_000) + 1) | (u128::from(next() % 3 + 1) << 120);
            assert_eq!(table.get(probe), map.get(&probe).map(|v| &v[..]));
        }
        assert_eq!(table.len(), map.len());
        for (k, v) in &map {
            assert_eq!(table.get(*k), Some(&v[..]));
        }
    }
}
