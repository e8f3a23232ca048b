//! Raw token bytes -> id, for byte-level BPE vocabularies: the lookup of a word that its thread's
//! word cache has never seen (`ignore_merges`: is the whole piece a token?).
//!
//! Why not the vocab's `HashMap<String, u32>`: asking it means spelling the piece in GPT-2's byte chars
//! (a `String`), hashing that, and comparing with a key on the heap; on text new to the word cache that
//! lookup and its two or three cache misses were a quarter of the encode time (perf, o200k, English).
//! Here a token of up to 12 bytes is ONE `u128` (its bytes, its id and its length packed together), four
//! to a 64-byte bucket, so a lookup reads one cache line in nearly every case and a miss usually stops at
//! the same line. The few longer tokens (3% of o200k's) sit in an ordinary map.
//!
//! ```
//! use subword_core::bpe::token_index::TokenIndex;
//! let index = TokenIndex::from_tokens([(b"the".as_slice(), 7u32), (b" international".as_slice(), 9)]);
//! assert_eq!(index.get(b"the"), Some(7));
//! assert_eq!(index.get(b" international"), Some(9));
//! assert_eq!(index.get(b"th"), None);
//! ```

use std::collections::HashMap;

use crate::huge::HugeSlice;

/// Tokens of at most this many bytes are packed into the buckets; longer ones go to the map.
pub const PACKED_BYTES: usize = 12;
const ID_BITS: u32 = 28;
const ID_SHIFT: u32 = 96;
const LEN_SHIFT: u32 = 124;
const ID_FIELD: u128 = ((1u128 << ID_BITS) - 1) << ID_SHIFT;

/// Four packed entries in one cache line; an entry of 0 is empty (a real key has a length of 1 or more).
#[derive(Clone, Copy, Default)]
#[repr(align(64))]
struct Bucket([u128; 4]);

/// See the module docs.
pub struct TokenIndex {
    /// Megabytes probed at random: on huge pages where the kernel allows ([`HugeSlice`]).
    buckets: HugeSlice<Bucket>,
    long: HashMap<Box<[u8]>, u32, ahash::RandomState>,
    /// Some token of up to [`PACKED_BYTES`] bytes is in `long` (its id did not fit the packed field).
    short_in_long: bool,
}

impl std::fmt::Debug for TokenIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TokenIndex({} buckets, {} long tokens)", self.buckets.len(), self.long.len())
    }
}

/// The key of a piece of at most [`PACKED_BYTES`] bytes: its bytes (little-endian) and its length in the
/// top four bits, the id field zero.
#[inline]
fn packed_key(bytes: &[u8]) -> u128 {
    debug_assert!(!bytes.is_empty() && bytes.len() <= PACKED_BYTES);
    let mut b = [0u8; 16];
    b[..bytes.len()].copy_from_slice(bytes);
    u128::from_le_bytes(b) | ((bytes.len() as u128) << LEN_SHIFT)
}

#[inline]
fn hash(key: u128) -> u64 {
    let h = ((key as u64) ^ ((key >> 64) as u64).rotate_left(23)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^ (h >> 29)
}

impl TokenIndex {
    /// The index of `(raw bytes, id)` pairs; a token listed twice keeps its first id.
    pub fn from_tokens<'a>(tokens: impl IntoIterator<Item = (&'a [u8], u32)>) -> Self {
        let mut builder = TokenIndexBuilder::default();
        for (bytes, id) in tokens {
            builder.add(bytes, id);
        }
        builder.build()
    }

    /// The id of the token whose bytes are `bytes`.
    #[inline]
    pub fn get(&self, bytes: &[u8]) -> Option<u32> {
        match bytes.len() {
            0 => None,
            1..=PACKED_BYTES => match self.get_packed(packed_key(bytes)) {
                None if self.short_in_long => self.long.get(bytes).copied(),
                found => found,
            },
            _ => self.long.get(bytes).copied(),
        }
    }

    /// Asks the CPU to start loading the bucket where a lookup of `bytes` begins (tokens of up to
    /// [`PACKED_BYTES`] bytes; a hint, nothing else).
    #[inline]
    pub fn prefetch(&self, bytes: &[u8]) {
        if (1..=PACKED_BYTES).contains(&bytes.len()) {
            if let Some(bucket) = self.buckets.get(bucket_of(packed_key(bytes), self.buckets.len())) {
                super::pair_table::prefetch(bucket);
            }
        }
    }

    /// The id of the token with packed key `key` ([`packed_key`]).
    #[inline]
    fn get_packed(&self, key: u128) -> Option<u32> {
        let n = self.buckets.len();
        let mut b = bucket_of(key, n);
        loop {
            for &e in &self.buckets[b].0 {
                if e & !ID_FIELD == key {
                    return Some(((e >> ID_SHIFT) as u32) & ((1 << ID_BITS) - 1));
                }
                if e == 0 {
                    return None;
                }
            }
            b = if b + 1 == n { 0 } else { b + 1 };
        }
    }
}

/// Buckets for `short` packed entries: about 1.8 entries per bucket of 4, so that a bucket overflows into the
/// next one rarely enough that a lookup reads one line (Poisson tail at that load: ~9% of the buckets are
/// full).
fn bucket_count(short: usize) -> usize {
    (short * 10 / 18).max(short / 4 + 1)
}

/// Tokens gathered for a [`TokenIndex`]: `add` them (the bytes are copied), then `build`.
///
/// ```
/// use subword_core::bpe::token_index::TokenIndexBuilder;
/// let mut builder = TokenIndexBuilder::with_capacity(2);
/// builder.add(b"ab", 3);
/// builder.add(b"ab", 4); // the first id stays
/// builder.add(b"a longer token", 5);
/// let index = builder.build();
/// assert_eq!((index.get(b"ab"), index.get(b"a longer token"), index.get(b"a")), (Some(3), Some(5), None));
/// ```
#[derive(Default)]
pub struct TokenIndexBuilder {
    /// Packed entries (key and id) in the order added.
    entries: Vec<u128>,
    long: HashMap<Box<[u8]>, u32, ahash::RandomState>,
    short_in_long: bool,
}

impl TokenIndexBuilder {
    /// A builder with room for `n` tokens.
    pub fn with_capacity(n: usize) -> Self {
        TokenIndexBuilder { entries: Vec::with_capacity(n), ..Default::default() }
    }

    /// Adds a token; of two with the same bytes, the first added keeps its id.
    pub fn add(&mut self, bytes: &[u8], id: u32) {
        match bytes.len() {
            0 => {}
            // An id of 2^28 or more does not fit the packed field (BpeModel refuses such ids anyway).
            1..=PACKED_BYTES if id < (1 << ID_BITS) => {
                self.entries.push(packed_key(bytes) | (u128::from(id) << ID_SHIFT))
            }
            n => {
                self.short_in_long |= n <= PACKED_BYTES;
                self.long.entry(bytes.into()).or_insert(id);
            }
        }
    }

    /// The index. Entries are put in bucket order (a counting sort on the leading bits of their first
    /// bucket, stable, so the first of two equal keys still comes first): put in the order added, each
    /// was a cache miss into megabytes of buckets, 9-19 ms of the 12-25 ms build for o200k's 187k short
    /// tokens (2026-12-06); in bucket order the writes walk the buckets once.
    pub fn build(self) -> TokenIndex {
        let TokenIndexBuilder { entries, long, short_in_long } = self;
        let n_buckets = bucket_count(entries.len());
        let mut buckets = HugeSlice::filled(n_buckets, Bucket::default());
        // Bins of 64 buckets (4 KB), so each bin's writes stay in the L1 cache.
        let shift = 6;
        let bin_of = |e: u128| bucket_of(e & !ID_FIELD, n_buckets) >> shift;
        let mut starts = vec![0usize; ((n_buckets - 1) >> shift) + 3];
        for &e in &entries {
            starts[bin_of(e) + 2] += 1;
        }
        for i in 2..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut sorted = vec![0u128; entries.len()];
        for &e in &entries {
            let slot = &mut starts[bin_of(e) + 1];
            sorted[*slot] = e;
            *slot += 1;
        }
        drop(entries);
        'entries: for e in sorted {
            let key = e & !ID_FIELD;
            let mut b = bucket_of(key, n_buckets);
            loop {
                for slot in buckets[b].0.iter_mut() {
                    if *slot == 0 {
                        *slot = e;
                        continue 'entries;
                    }
                    if *slot & !ID_FIELD == key {
                        continue 'entries; // listed twice: the first id stays
                    }
                }
                b = if b + 1 == n_buckets { 0 } else { b + 1 };
            }
        }
        TokenIndex { buckets, long, short_in_long }
    }
}

/// The bucket a key starts probing at: the high bits of a multiply (a range reduction, any bucket count).
#[inline]
fn bucket_of(key: u128, n_buckets: usize) -> usize {
    ((u128::from(hash(key)) * n_buckets as u128) >> 64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pseudo-random byte strings of 1..=20 bytes, some sharing prefixes, with their ids.
    fn tokens(n: usize, seed: u64) -> Vec<(Vec<u8>, u32)> {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            x >> 33
        };
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        while out.len() < n {
            let len = 1 + (next() % 20) as usize;
            let t: Vec<u8> = (0..len).map(|_| (next() % 7) as u8 + if next() % 5 == 0 { 0 } else { b'a' }).collect();
            if seen.insert(t.clone()) {
                let id = out.len() as u32 * 3 + 1;
                out.push((t, id));
            }
        }
        out
    }

    #[test]
    fn finds_every_token_and_nothing_else() {
        let toks = tokens(5000, 7);
        let index = TokenIndex::from_tokens(toks.iter().map(|(t, id)| (t.as_slice(), *id)));
        let map: HashMap<&[u8], u32> = toks.iter().map(|(t, id)| (t.as_slice(), *id)).collect();
        for (t, id) in &toks {
            assert_eq!(index.get(t), Some(*id), "{t:?}");
        }
        // Every prefix and suffix, present or not, agrees with a plain map.
        for (t, _) in &toks {
            for i in 0..=t.len() {
                assert_eq!(index.get(&t[..i]), map.get(&t[..i]).copied());
                assert_eq!(index.get(&t[i..]), map.get(&t[i..]).copied());
            }
        }
    }

    #[test]
    fn zero_bytes_and_the_largest_id_round_trip() {
        let max = (1u32 << ID_BITS) - 1;
        let index = TokenIndex::from_tokens([(&[0u8][..], max), (&[0u8, 0][..], 5), (&[0u8; 12][..], 6)]);
        assert_eq!(index.get(&[0]), Some(max));
        assert_eq!(index.get(&[0, 0]), Some(5));
        assert_eq!(index.get(&[0; 12]), Some(6));
        assert_eq!(index.get(&[0; 3]), None);
        assert_eq!(index.get(&[]), None);
    }

    #[test]
    fn ids_too_wide_for_the_packed_field_are_still_found() {
        let index =
            TokenIndex::from_tokens([(&b"ab"[..], 1 << 28), (&b"cd"[..], 3), (&b"efghijklmnopq"[..], u32::MAX)]);
        assert_eq!(index.get(b"ab"), Some(1 << 28));
        assert_eq!(index.get(b"cd"), Some(3));
        assert_eq!(index.get(b"efghijklmnopq"), Some(u32::MAX));
        assert_eq!(index.get(b"ef"), None);
    }

    #[test]
    fn a_token_listed_twice_keeps_its_first_id() {
        let index = TokenIndex::from_tokens([
            (&b"ab"[..], 1),
            (&b"ab"[..], 2),
            (&b"abcdefghijklmn"[..], 3),
            (&b"abcdefghijklmn"[..], 4),
        ]);
        assert_eq!(index.get(b"ab"), Some(1));
        assert_eq!(index.get(b"abcdefghijklmn"), Some(3));
    }
}
