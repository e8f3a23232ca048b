//! A BPE model's merge pairs -> `(rank, new id)`, in a table where one lookup waits on one memory
//! access: two-choice (cuckoo) hashing over buckets of one cache line, four pairs each, keys and values
//! side by side. A word the word caches have never seen asks for the rank of each pair it forms, one
//! after the other (each merge's new pairs depend on the merge before), and those lookups miss the CPU
//! caches: a `HashMap` probe reads a control group and then its slot (two dependent misses, behind
//! the Bloom filter's third), where this table starts both of a key's buckets at once. No more memory
//! than the `HashMap` it replaced (16 bytes a slot, 44-88% of the slots used; o200k's 446,189 pairs in
//! 8 MB, as before). Measured on o200k, text never seen, 0.3 MB slices with 64 MB read between calls
//! (`examples/fresh_rounds.rs`): 1.10-1.11x faster, paired medians over 6-8 alternating runs.
//!
//! ```
//! use subword_core::bpe::pair_table::PairTable;
//! let mut t = PairTable::with_capacity(2);
//! t.insert(1 << 32 | 2, (0, 7));
//! t.insert(1 << 32 | 2, (5, 8)); // a repeated pair keeps its last value
//! assert_eq!(t.get(1 << 32 | 2), Some((5, 8)));
//! assert_eq!(t.get(2 << 32 | 1), None);
//! assert_eq!(t.len(), 1);
//! ```

use crate::huge::HugeSlice;

/// Pairs a bucket holds (4 keys then 4 values: 64 bytes, one cache line).
const WAYS: usize = 4;
/// An empty slot's key: the pair `(u32::MAX, u32::MAX)`, which [`PairTable::insert`] refuses.
const EMPTY: u64 = u64::MAX;
/// Displacements an insert may make before the table doubles. With two choices of four-slot buckets
/// a table well under 0.95 full needs a handful; the bound only stops a cycle.
const MAX_KICKS: usize = 500;
/// Buckets are sized for at most this share of full slots, in eighths (so doubling keeps at least 0.44).
const MAX_LOAD_EIGHTHS: usize = 7;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Bucket {
    keys: [u64; WAYS],
    /// `rank << 32 | new id`.
    vals: [u64; WAYS],
}

const EMPTY_BUCKET: Bucket = Bucket { keys: [EMPTY; WAYS], vals: [0; WAYS] };

/// Merge pairs (`left << 32 | right`) -> `(rank, new id)`; see the module doc.
#[derive(Clone)]
pub struct PairTable {
    /// Megabytes probed at random: on huge pages where the kernel allows ([`HugeSlice`]).
    buckets: HugeSlice<Bucket>,
    /// log2 of the number of buckets.
    bits: u32,
    len: usize,
}

impl PairTable {
    /// An empty table with room for `n` pairs without growing.
    pub fn with_capacity(n: usize) -> Self {
        let want = (n * 8).div_ceil(MAX_LOAD_EIGHTHS * WAYS).max(2);
        let bits = want.next_power_of_two().trailing_zeros();
        PairTable { buckets: HugeSlice::filled(1 << bits, EMPTY_BUCKET), bits, len: 0 }
    }

    /// A table of `pairs` (`(pair, (rank, new id))`), a repeated pair keeping its last value, as
    /// inserting them in order would. Built bucket by bucket: the pairs are sorted by their first
    /// bucket (a counting sort), so most land in a bucket the build is already at; a full bucket's
    /// overflow goes to its second buckets, in their order, and only what finds that full too (7% of
    /// o200k's pairs) is placed by displacement. o200k: 14-28 ms, against 18-70 ms pair by pair and
    /// 10-16 ms for a std `HashMap` of the same pairs (noisy 2-core machine, 2026-12-07).
    ///
    /// ```
    /// use subword_core::bpe::pair_table::PairTable;
    /// let t = PairTable::from_pairs(&[(1 << 32 | 2, (0, 7)), (3 << 32 | 4, (1, 8)), (1 << 32 | 2, (2, 9))]);
    /// assert_eq!((t.len(), t.get(1 << 32 | 2), t.get(3 << 32 | 4)), (2, Some((2, 9)), Some((1, 8))));
    /// ```
    pub fn from_pairs(pairs: &[(u64, (u32, u32))]) -> Self {
        let mut t = PairTable::with_capacity(pairs.len());
        let n_buckets = t.buckets.len();
        let mut start = vec![0usize; n_buckets + 1];
        for &(key, _) in pairs {
            assert!(key != EMPTY, "the pair (u32::MAX, u32::MAX) cannot be held");
            start[t.buckets_of(key).0 + 1] += 1;
        }
        for b in 0..n_buckets {
            start[b + 1] += start[b];
        }
        // The pairs grouped by first bucket, in their given order within a group.
        let mut sorted = vec![(EMPTY, 0u64); pairs.len()];
        let mut fill = start.clone();
        for &(key, (rank, id)) in pairs {
            let b = t.buckets_of(key).0;
            sorted[fill[b]] = (key, u64::from(rank) << 32 | u64::from(id));
            fill[b] += 1;
        }
        let mut overflow = Vec::new();
        for b in 0..n_buckets {
            let group = &mut sorted[start[b]..start[b + 1]];
            if group.len() > 16 {
                // Many pairs in one bucket (repeats of one pair in a crafted file): by key, then
                // given order, so a key's last value is its group's last entry.
                let mut order: Vec<usize> = (0..group.len()).collect();
                order.sort_by_key(|&i| (group[i].0, i));
                let last: Vec<(u64, u64)> = order
                    .iter()
                    .enumerate()
                    .filter(|&(o, &i)| order.get(o + 1).is_none_or(|&j| group[j].0 != group[i].0))
                    .map(|(_, &i)| group[i])
                    .collect();
                group[..last.len()].copy_from_slice(&last);
                group[last.len()..].fill((EMPTY, 0));
            }
            for (i, &(key, val)) in group.iter().enumerate() {
                // Held later in the group: the later value wins.
                if key == EMPTY || group[i + 1..].iter().any(|&(k, _)| k == key) {
                    continue;
                }
                t.len += 1;
                if !t.put(b, key, val) {
                    overflow.push((key, val));
                }
            }
        }
        // The overflow by second bucket, the same way; what finds that full too is displaced into place.
        let mut second: Vec<(usize, (u64, u64))> = overflow.into_iter().map(|p| (t.buckets_of(p.0).1, p)).collect();
        second.sort_unstable_by_key(|&(b, _)| b);
        let mut left = Vec::new();
        for (b, (key, val)) in second {
            if !t.put(b, key, val) {
                left.push((key, val));
            }
        }
        for pair in left {
            if let Some(pair) = t.place(pair) {
                t.rebuild(Some(pair));
            }
        }
        t
    }

    /// Pairs held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when no pair is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The two buckets of `key` (distinct), from two multiplicative hashes' top bits.
    #[inline(always)]
    fn buckets_of(&self, key: u64) -> (usize, usize) {
        let shift = 64 - self.bits;
        let a = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize;
        let b = ((key ^ (key >> 29)).wrapping_mul(0xC2B2_AE3D_27D4_EB4F) >> shift) as usize;
        (a, if a == b { a ^ 1 } else { b })
    }

    /// `(rank, new id)` of the pair `key`, if it merges.
    #[inline]
    pub fn get(&self, key: u64) -> Option<(u32, u32)> {
        let (i, j) = self.buckets_of(key);
        let (first, second) = (&self.buckets[i], &self.buckets[j]);
        // Start the second line's load before the first is compared: a miss on each then overlaps.
        prefetch(second);
        let hit = |b: &Bucket| b.keys.iter().position(|&k| k == key).map(|s| b.vals[s]);
        hit(first).or_else(|| hit(second)).map(|v| ((v >> 32) as u32, v as u32))
    }

    /// Sets the value of `key` (a pair already held gets the new value). Panics on the one key that
    /// cannot be held, `(u32::MAX, u32::MAX)` (ids are below 2^28 where this table is used).
    pub fn insert(&mut self, key: u64, (rank, id): (u32, u32)) {
        assert!(key != EMPTY, "the pair (u32::MAX, u32::MAX) cannot be held");
        let val = u64::from(rank) << 32 | u64::from(id);
        let (i, j) = self.buckets_of(key);
        for b in [i, j] {
            if let Some(s) = self.buckets[b].keys.iter().position(|&k| k == key) {
                self.buckets[b].vals[s] = val;
                return;
            }
        }
        if (self.len + 1) * 8 > self.buckets.len() * WAYS * MAX_LOAD_EIGHTHS {
            self.rebuild(None);
        }
        if let Some(left) = self.place((key, val)) {
            self.rebuild(Some(left));
        }
        self.len += 1;
    }

    /// Puts a new pair in one of its buckets, moving held pairs to their other bucket to make room
    /// (cuckoo displacement, victims chosen by a fixed sequence: the table is the same on every
    /// build). `Some(pair)`: the pair still without a slot after [`MAX_KICKS`] moves.
    fn place(&mut self, (mut key, mut val): (u64, u64)) -> Option<(u64, u64)> {
        let mut seq: u64 = 0x2545_F491_4F6C_DD1D;
        let (mut at, _) = self.buckets_of(key);
        for _ in 0..MAX_KICKS {
            let (i, j) = self.buckets_of(key);
            if self.put(i, key, val) || self.put(j, key, val) {
                return None;
            }
            // Both full: a held pair whose other bucket has room moves there (one step, found by
            // looking at the eight held pairs' other buckets; most builds need nothing longer) ...
            for b in [i, j] {
                for s in 0..WAYS {
                    let (victim, victim_val) = (self.buckets[b].keys[s], self.buckets[b].vals[s]);
                    let (vi, vj) = self.buckets_of(victim);
                    if self.put(if vi == b { vj } else { vi }, victim, victim_val) {
                        self.buckets[b].keys[s] = key;
                        self.buckets[b].vals[s] = val;
                        return None;
                    }
                }
            }
            // ... else a random walk: take a slot of the bucket the pair did not come from.
            at = if at == i { j } else { i };
            seq ^= seq << 13;
            seq ^= seq >> 7;
            seq ^= seq << 17;
            let s = (seq >> 62) as usize;
            let bucket = &mut self.buckets[at];
            std::mem::swap(&mut key, &mut bucket.keys[s]);
            std::mem::swap(&mut val, &mut bucket.vals[s]);
        }
        Some((key, val))
    }

    /// Puts a pair in a free slot of bucket `b`; `false` when the bucket is full.
    #[inline]
    fn put(&mut self, b: usize, key: u64, val: u64) -> bool {
        let bucket = &mut self.buckets[b];
        match bucket.keys.iter().position(|&k| k == EMPTY) {
            Some(s) => {
                bucket.keys[s] = key;
                bucket.vals[s] = val;
                true
            }
            None => false,
        }
    }

    /// Doubles the buckets (more, in the unseen case that a pair still finds no slot) and puts every
    /// pair back, with `extra`, a pair that had no slot.
    fn rebuild(&mut self, extra: Option<(u64, u64)>) {
        let pairs: Vec<(u64, u64)> = self
            .buckets
            .iter()
            .flat_map(|b| (0..WAYS).filter(|&s| b.keys[s] != EMPTY).map(|s| (b.keys[s], b.vals[s])))
            .chain(extra)
            .collect();
        let mut bits = self.bits + 1;
        loop {
            let mut t = PairTable { buckets: HugeSlice::filled(1 << bits, EMPTY_BUCKET), bits, len: 0 };
            if pairs.iter().all(|&p| t.place(p).is_none()) {
                self.buckets = t.buckets;
                self.bits = bits;
                return;
            }
            bits += 1;
        }
    }

    /// Every pair and its value, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, (u32, u32))> + '_ {
        self.buckets.iter().flat_map(|b| {
            (0..WAYS).filter(|&s| b.keys[s] != EMPTY).map(|s| (b.keys[s], ((b.vals[s] >> 32) as u32, b.vals[s] as u32)))
        })
    }

    /// Every pair held, in table order.
    pub fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.iter().map(|(k, _)| k)
    }
}

impl std::fmt::Debug for PairTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PairTable({} pairs in {} buckets)", self.len, self.buckets.len())
    }
}

/// Asks the CPU to start loading `value`'s cache line (a hint: nothing is read, nothing can fault).
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    prefetch_address(value as *const T as usize);
}

/// Asks the CPU to start loading the cache line at `address`, which need not be of a live value: a
/// prefetch reads nothing architecturally and cannot fault.
#[inline(always)]
pub(crate) fn prefetch_address(address: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch only hints at a load; it accesses no memory architecturally and never faults,
    // whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(address as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A deterministic stream of pseudo-random numbers (xorshift).
    fn stream(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn agrees_with_a_hash_map_through_repeats_and_growth() {
        let mut next = stream(7);
        let mut table = PairTable::with_capacity(16); // far too small: grows many times
        let mut oracle = HashMap::new();
        for _ in 0..200_000 {
            // ids of a 1,000-token vocab: repeated pairs are common
            let key = (next() % 1000) << 32 | (next() % 1000);
            let val = ((next() % 1_000_000) as u32, (next() % 1000) as u32);
            table.insert(key, val);
            oracle.insert(key, val);
        }
        assert_eq!(table.len(), oracle.len());
        for (&k, &v) in &oracle {
            assert_eq!(table.get(k), Some(v));
        }
        let mut seen: Vec<(u64, (u32, u32))> = table.iter().collect();
        seen.sort_unstable();
        let mut want: Vec<(u64, (u32, u32))> = oracle.into_iter().collect();
        want.sort_unstable();
        assert_eq!(seen, want);
        for _ in 0..100_000 {
            let key = (1000 + next() % 1000) << 32 | (next() % 1000);
            assert_eq!(table.get(key), None);
        }
    }

    #[test]
    fn a_bulk_build_keeps_each_repeated_pairs_last_value() {
        let mut next = stream(5);
        // 60,000 pairs over 40 x 40 ids: every pair repeats (~37 times), so most first-bucket groups are
        // long; then one pair listed 5,000 times in a row; then fresh pairs.
        let mut pairs: Vec<(u64, (u32, u32))> =
            (0..60_000).map(|i| ((next() % 40) << 32 | (next() % 40), (i, (next() % 1000) as u32))).collect();
        pairs.extend((0..5_000).map(|i| (7u64 << 32 | 9, (100_000 + i, i))));
        pairs.extend((0..20_000).map(|i| ((1000 + next() % 5000) << 32 | (next() % 5000), (200_000 + i, i))));
        let table = PairTable::from_pairs(&pairs);
        let mut oracle = HashMap::new();
        for &(k, v) in &pairs {
            oracle.insert(k, v);
        }
        assert_eq!(table.len(), oracle.len());
        assert!(oracle.iter().all(|(&k, &v)| table.get(k) == Some(v)));
        assert_eq!(table.iter().count(), oracle.len());
        assert_eq!(table.get(7u64 << 32 | 9), Some((104_999, 4_999)));
    }

    #[test]
    fn a_full_vocab_fits_at_its_planned_size() {
        // o200k's count of merge pairs, sized up front: no growth, a load between 0.45 and 0.9.
        let n = 446_189;
        let mut table = PairTable::with_capacity(n);
        let bits = table.bits;
        let mut next = stream(11);
        let mut keys = std::collections::HashSet::new();
        while keys.len() < n {
            keys.insert((next() % 200_000) << 32 | (next() % 200_000));
        }
        for (rank, &k) in keys.iter().enumerate() {
            table.insert(k, (rank as u32, rank as u32 + 1));
        }
        assert_eq!(table.bits, bits, "the table grew");
        let load = n as f64 / (table.buckets.len() * WAYS) as f64;
        assert!((0.45..=0.9).contains(&load), "load {load}");
        assert!(keys.iter().all(|&k| table.get(k).is_some()));
    }

    #[test]
    #[should_panic(expected = "cannot be held")]
    fn the_empty_key_is_refused() {
        PairTable::with_capacity(1).insert(EMPTY, (0, 0));
    }
}
