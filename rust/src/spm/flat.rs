//! Flat lookup tables for the SentencePiece BPE encoder's hot loop (see `encode.rs`).
//!
//! - [`PairMap`]: `u32` key -> `u32` value, open addressing with linear probing in ONE array of
//!   `u64` slots (key in the high half, value in the low half). A probe is one multiply and, at a
//!   load factor of at most one half, nearly always one cache line; a `hashbrown` map loads its
//!   control group and then its bucket, two lines far apart, and that pair of cache misses was
//!   most of the time on CJK lines (perf annotate).
//! - [`KeySet`]: the same over `u32` keys alone (half the bytes per slot).
//! - [`CharTable`]: code point -> `u32`, two levels of 256 code points (a page index, then the
//!   page), so the few scripts a vocabulary uses cost a few KB each and a lookup is two loads
//!   from memory that stays in cache, where a hash map hashed every character.
//!
//! The key `u32::MAX` is reserved (it marks an empty slot); callers never insert it (asserted in
//! debug builds, refused by `insert` otherwise).

/// Fibonacci hashing: the high bits of `key * 2^32/phi`.
#[inline]
fn slot_of(key: u32, shift: u32) -> usize {
    (key.wrapping_mul(0x9e37_79b9) >> shift) as usize
}

const EMPTY: u32 = u32::MAX;

/// Capacity (a power of two, at least 4) for `n` keys at a load factor of at most one half, and
/// the shift that maps a 32-bit hash to it.
fn geometry(n: usize) -> (usize, u32) {
    let cap = (2 * n.max(1)).next_power_of_two().max(4);
    (cap, 32 - cap.trailing_zeros())
}

/// `u32` -> `u32` map (see the module notes).
#[derive(Clone, Debug)]
pub struct PairMap {
    slots: Vec<u64>,
    shift: u32,
    len: usize,
}

impl PairMap {
    /// An empty map sized for `n` keys.
    pub fn with_capacity(n: usize) -> Self {
        let (cap, shift) = geometry(n);
        PairMap { slots: vec![u64::MAX; cap], shift, len: 0 }
    }

    /// Inserts or replaces; returns false (and stores nothing) for the reserved key `u32::MAX`.
    pub fn insert(&mut self, key: u32, value: u32) -> bool {
        if key == EMPTY {
            return false;
        }
        if 2 * (self.len + 1) > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = slot_of(key, self.shift);
        loop {
            let k = (self.slots[i] >> 32) as u32;
            if k == EMPTY {
                self.slots[i] = (u64::from(key) << 32) | u64::from(value);
                self.len += 1;
                return true;
            }
            if k == key {
                self.slots[i] = (u64::from(key) << 32) | u64::from(value);
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let old = std::mem::take(&mut self.slots);
        let (cap, shift) = geometry(old.len());
        self.slots = vec![u64::MAX; cap];
        self.shift = shift;
        self.len = 0;
        for s in old {
            let k = (s >> 32) as u32;
            if k != EMPTY {
                self.insert(k, s as u32);
            }
        }
    }

    #[inline]
    pub fn get(&self, key: u32) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = slot_of(key, self.shift);
        loop {
            let s = self.slots[i];
            let k = (s >> 32) as u32;
            if k == key && key != EMPTY {
                return Some(s as u32);
            }
            if k == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A set of `u32` keys (see the module notes).
#[derive(Clone, Debug)]
pub struct KeySet {
    slots: Vec<u32>,
    shift: u32,
    len: usize,
}

impl KeySet {
    /// An empty set sized for `n` keys.
    pub fn with_capacity(n: usize) -> Self {
        let (cap, shift) = geometry(n);
        KeySet { slots: vec![EMPTY; cap], shift, len: 0 }
    }

    /// Adds `key`; false for the reserved key `u32::MAX`.
    pub fn insert(&mut self, key: u32) -> bool {
        if key == EMPTY {
            return false;
        }
        if 2 * (self.len + 1) > self.slots.len() {
            let old = std::mem::take(&mut self.slots);
            let (cap, shift) = geometry(old.len());
            self.slots = vec![EMPTY; cap];
            self.shift = shift;
            self.len = 0;
            for k in old.into_iter().filter(|&k| k != EMPTY) {
                self.insert(k);
            }
        }
        let mask = self.slots.len() - 1;
        let mut i = slot_of(key, self.shift);
        loop {
            let k = self.slots[i];
            if k == key {
                return true;
            }
            if k == EMPTY {
                self.slots[i] = key;
                self.len += 1;
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    #[inline]
    pub fn contains(&self, key: u32) -> bool {
        if key == EMPTY {
            return false;
        }
        let mask = self.slots.len() - 1;
        let mut i = slot_of(key, self.shift);
        loop {
            let k = self.slots[i];
            if k == key {
                return true;
            }
            if k == EMPTY {
                return false;
            }
            i = (i + 1) & mask;
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Code point -> `u32` (default `missing`), two-level (see the module notes).
#[derive(Clone, Debug)]
pub struct CharTable {
    /// Page number (code point >> 8) -> index of its page in `pages` (`EMPTY`: no entry there).
    index: Vec<u32>,
    pages: Vec<[u32; 256]>,
    missing: u32,
}

impl CharTable {
    pub fn new(missing: u32) -> Self {
        CharTable { index: vec![EMPTY; (char::MAX as usize >> 8) + 1], pages: Vec::new(), missing }
    }

    pub fn insert(&mut self, c: char, value: u32) {
        let p = c as usize >> 8;
        if self.index[p] == EMPTY {
            self.index[p] = self.pages.len() as u32;
            self.pages.push([self.missing; 256]);
        }
        self.pages[self.index[p] as usize][c as usize & 255] = value;
    }

    #[inline]
    pub fn get(&self, c: char) -> u32 {
        match self.index[c as usize >> 8] {
            EMPTY => self.missing,
            p => self.pages[p as usize][c as usize & 255],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_map_agrees_with_a_hash_map() {
        let mut ours = PairMap::with_capacity(3);
        let mut reference = std::collections::HashMap::new();
        let mut x = 11u64;
        for _ in 0..20_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let k = (x >> 40) as u32 & 0xffff; // collisions and repeats on purpose
            let v = (x >> 8) as u32;
            assert!(ours.insert(k, v));
            reference.insert(k, v);
        }
        assert_eq!(ours.len(), reference.len());
        for k in 0..0x1_0000u32 {
            assert_eq!(ours.get(k), reference.get(&k).copied(), "{k}");
        }
        assert!(!ours.insert(u32::MAX, 1));
        assert_eq!(ours.get(u32::MAX), None);
    }

    #[test]
    fn key_set_agrees_with_a_hash_set() {
        let mut ours = KeySet::with_capacity(0);
        let mut reference = std::collections::HashSet::new();
        for k in (0..50_000u32).map(|i| i.wrapping_mul(2_654_435_761) % 200_000) {
            ours.insert(k);
            reference.insert(k);
        }
        assert_eq!(ours.len(), reference.len());
        assert!((0..200_000u32).all(|k| ours.contains(k) == reference.contains(&k)));
        assert!(!ours.contains(u32::MAX));
    }

    #[test]
    fn char_table_defaults_to_missing() {
        let mut t = CharTable::new(7);
        t.insert('a', 1);
        t.insert('中', 2);
        t.insert('\u{10ffff}', 3);
        assert_eq!((t.get('a'), t.get('b'), t.get('中'), t.get('国'), t.get('\u{10ffff}')), (1, 7, 2, 7, 3));
    }
}
