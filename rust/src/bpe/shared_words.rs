//! Short words' segmentations shared by the threads that encode with one model: the second level behind
//! each thread's own word cache, asked when that cache misses and given every word a thread computes.
//!
//! Why: each thread's cache holds only the words that thread met. A text encoded on one thread and then
//! encoded again as lines on the pool's threads found none of its words in the pool threads' caches, and
//! two threads sharing a batch each computed every word the other had computed (bench_peers, cl100k,
//! lines: two threads slower than one). Here a word is computed once for all threads.
//!
//! 64 shards behind their own locks, so that two threads rarely wait for each other; a shard is emptied
//! when it holds its share of the capacity.
//!
//! ```
//! use subword_core::bpe::shared_words::SharedWords;
//! let shared = SharedWords::new(1 << 12);
//! let key = 2u128 << 120 | 0x6261; // "ab"
//! let mut syms = Vec::new();
//! assert!(!shared.get_into(key, &mut syms));
//! shared.insert(key, &[(7, 2)]);
//! assert!(shared.get_into(key, &mut syms));
//! assert_eq!(syms, [(7, 2)]);
//! ```

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::encode::Sym;
use super::pair_table::prefetch_address;
use super::word_table::WordTable;

const SHARDS: usize = 64;

/// See the module docs.
pub struct SharedWords {
    shards: Box<[Shard]>,
    /// Words a shard holds before it is emptied.
    per_shard: usize,
}

/// A shard's table, and where its slots were when it last changed (for [`SharedWords::prefetch`], which
/// takes no lock: a stale address only makes the prefetch useless).
#[derive(Default)]
struct Shard {
    table: Mutex<WordTable>,
    base: AtomicUsize,
    shift: AtomicU32,
}

impl std::fmt::Debug for SharedWords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedWords({} shards of up to {} words)", self.shards.len(), self.per_shard)
    }
}

impl SharedWords {
    /// Room for about `capacity` words in all.
    pub fn new(capacity: usize) -> Self {
        SharedWords { shards: (0..SHARDS).map(|_| Shard::default()).collect(), per_shard: (capacity / SHARDS).max(1) }
    }

    #[inline]
    fn shard_of(&self, key: u128) -> &Shard {
        // The top bits of another multiply than the table's own slot hash: keys of one shard still spread
        // over its slots.
        let h = ((key as u64) ^ ((key >> 64) as u64).rotate_left(17)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        &self.shards[(h >> (64 - SHARDS.trailing_zeros())) as usize]
    }

    #[inline]
    fn lock(shard: &Shard) -> MutexGuard<'_, WordTable> {
        // A panic while a shard was held leaves nothing half-written that a lookup could misread (an
        // insert writes its slot last), so a poisoned lock is used as it is.
        shard.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Asks the CPU to start loading the slot where a lookup of `key` begins (a hint: no lock is taken).
    #[inline]
    pub fn prefetch(&self, key: u128) {
        let shard = self.shard_of(key);
        let base = shard.base.load(Ordering::Relaxed);
        if base != 0 {
            // The address may be of slots freed since the shard last grew: harmless for a prefetch.
            prefetch_address(WordTable::slot_address(base, shard.shift.load(Ordering::Relaxed), key));
        }
    }

    /// Replaces `out` with the symbols stored for `key` (a packed word key); `false` if there are none.
    pub fn get_into(&self, key: u128, out: &mut Vec<Sym>) -> bool {
        let table = Self::lock(self.shard_of(key));
        match table.get(key) {
            Some(syms) => {
                out.clear();
                out.extend_from_slice(syms);
                true
            }
            None => false,
        }
    }

    /// Stores `syms` for `key` (a packed word key).
    pub fn insert(&self, key: u128, syms: &[Sym]) {
        let shard = self.shard_of(key);
        let mut table = Self::lock(shard);
        if table.len() >= self.per_shard {
            table.clear();
        }
        table.insert(key, syms);
        // The slots move only when the table grows (inside `insert`).
        let (base, shift) = table.layout();
        shard.base.store(base, Ordering::Relaxed);
        shard.shift.store(shift, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Threads inserting and reading the same keys: every read finds what some thread stored for the key
    /// (each key always gets the same symbols), and a full shard is emptied rather than grown.
    #[test]
    fn threads_share_words() {
        let shared = SharedWords::new(SHARDS * 64);
        let syms_of = |i: u64| -> Vec<Sym> { (0..(i % 4) as u32).map(|j| (i as u32 + j, j + 1)).collect() };
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let shared = &shared;
                s.spawn(move || {
                    let mut out = Vec::new();
                    for i in 0..20_000u64 {
                        let k = (i * 7 + t) % 5_000 + 1;
                        let key = u128::from(k) | (3u128 << 120);
                        if shared.get_into(key, &mut out) {
                            assert_eq!(out, syms_of(k));
                        } else {
                            shared.insert(key, &syms_of(k));
                        }
                    }
                });
            }
        });
        assert!(shared.shards.iter().all(|s| s.table.lock().map(|t| t.len() <= 64).unwrap_or(false)));
    }
}
