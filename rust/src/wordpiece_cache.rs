//! A per-thread cache of short WordPiece words and their tokens, in front of the model's lookups.
//!
//! WordPiece tokenizes each word from scratch: a probe of the whole word in the vocab index (a hash,
//! then the slot, the token's `String` and its bytes, three dependent loads), and for a word that is
//! not one token the walk over the prefix table and one probe per continuation. In a profile of BERT
//! on German lines (bench_peers' BERT row) those lookups were half of the encode, yet a text repeats
//! most of its words: a 0.3 MB slice has about 60,000 words and 4,000-12,000 distinct ones. Here a word
//! of up to [`MAX_WORD_BYTES`] bytes whose result has at most [`MAX_PIECES`] tokens sits in a slot of
//! one cache line (its bytes and length packed in a `u128`, the ids and token lengths inline: eight
//! tokens, as German words through an English vocab take up to that many), so a repeated word costs
//! one or two loads. The tokens of a word depend on nothing but the word and the model, so a hit is
//! the result the model would compute. Slots come in sets of two (adjacent lines): a new word takes
//! its set's first slot and the word there moves to the second, dropping the older one.
//!
//! ```
//! use subword_core::wordpiece_cache::{pack_word, WordSlots};
//! let mut slots = WordSlots::default();
//! let mut out = Vec::new();
//! assert!(!slots.get(pack_word(b"playing").unwrap(), &mut out));
//! slots.put(pack_word(b"playing").unwrap(), &[(2652, 4), (2075, 3)]);
//! assert!(slots.get(pack_word(b"playing").unwrap(), &mut out));
//! assert_eq!(out, vec![(2652, 4), (2075, 3)]);
//! ```

use std::cell::RefCell;

/// Words longer than this are not cached (their key would not fit a `u128` with its length).
pub const MAX_WORD_BYTES: usize = 15;
/// Results of more tokens are not cached (the slot holds this many).
pub const MAX_PIECES: usize = 8;
/// Slots per thread and model (1 MB), in sets of two. bench_peers' six 0.3 MB German slices hold 26,000
/// distinct short words: with 8,192 slots of one way, 13% of the words of a run over them were misses
/// (each a full tokenization), with these 8%; 32,768 slots gave 4.5% for twice the memory.
/// (Measured by a count in the lookup, 10 passes over the slices' lines.)
const SLOTS: usize = 16384;
/// Models whose slots one thread keeps (the oldest is dropped for a new one).
const MODELS_PER_THREAD: usize = 4;

/// One cached word: key 0 is an empty slot (a real key holds a length of 1 or more).
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Slot {
    key: u128,
    ids: [u32; MAX_PIECES],
    lens: [u8; MAX_PIECES],
    n: u8,
}

/// The slots of one model in one thread.
pub struct WordSlots {
    slots: Box<[Slot]>,
    /// Scratch for one word's tokens, kept with the slots so that a word takes one thread-local access.
    pub(crate) scratch: Vec<(u32, u32)>,
}

impl Default for WordSlots {
    fn default() -> Self {
        WordSlots { slots: vec![Slot::default(); SLOTS].into_boxed_slice(), scratch: Vec::new() }
    }
}

/// The key of a word of 1 to [`MAX_WORD_BYTES`] bytes: its bytes, little-endian, and its length in the
/// top byte; `None` for other lengths.
#[inline]
pub fn pack_word(word: &[u8]) -> Option<u128> {
    let n = word.len();
    // Built in registers from two overlapping loads: a copy into a stack buffer read back as a u128
    // stalled on store forwarding (a fifth of the per-word time in a profile of BERT on code lines).
    let bytes = match n {
        0 => return None,
        1..=3 => word.iter().rev().fold(0u128, |k, &b| k << 8 | u128::from(b)),
        4..=7 => {
            let lo = u64::from(u32::from_le_bytes([word[0], word[1], word[2], word[3]]));
            let hi = u64::from(u32::from_le_bytes([word[n - 4], word[n - 3], word[n - 2], word[n - 1]]));
            u128::from(lo | hi << (8 * (n - 4)))
        }
        8..=MAX_WORD_BYTES => {
            let lo = u64::from_le_bytes(word[..8].try_into().unwrap_or([0; 8]));
            // (`n` = 8: no bytes past the first eight; a shift by 64 would not clear them.)
            let hi = u64::from_le_bytes(word[n - 8..].try_into().unwrap_or([0; 8])).checked_shr(8 * (16 - n) as u32);
            let hi = hi.unwrap_or(0);
            u128::from(lo) | u128::from(hi) << 64
        }
        _ => return None,
    };
    Some(bytes | (n as u128) << 120)
}

/// The first of the two slots of `key`'s set (sets are two adjacent slots).
#[inline]
fn set_of(key: u128) -> usize {
    let h = ((key as u64) ^ ((key >> 64) as u64).rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    ((h >> (64 - (SLOTS / 2).trailing_zeros())) as usize) * 2
}

impl WordSlots {
    /// Appends the cached tokens `(id, length in bytes)` of the word with key `key` to `out`; `false`
    /// (and `out` untouched) if the word is not cached.
    #[inline]
    pub fn get(&self, key: u128, out: &mut Vec<(u32, u32)>) -> bool {
        let set = set_of(key);
        let s = match &self.slots[set..set + 2] {
            [a, _] if a.key == key => a,
            [_, b] if b.key == key => b,
            _ => return false,
        };
        let n = usize::from(s.n);
        out.extend(s.ids[..n].iter().zip(&s.lens[..n]).map(|(&id, &len)| (id, u32::from(len))));
        true
    }

    /// Caches `syms` as the tokens of the word with key `key`, if they fit a slot.
    #[inline]
    pub fn put(&mut self, key: u128, syms: &[(u32, u32)]) {
        if syms.is_empty() || syms.len() > MAX_PIECES || syms.iter().any(|&(_, len)| len > u32::from(u8::MAX)) {
            return;
        }
        let mut slot = Slot { key, n: syms.len() as u8, ..Slot::default() };
        for (i, &(id, len)) in syms.iter().enumerate() {
            slot.ids[i] = id;
            slot.lens[i] = len as u8;
        }
        // The newer word first: the set's first slot moves to the second, whose word is dropped.
        let set = set_of(key);
        self.slots[set + 1] = self.slots[set];
        self.slots[set] = slot;
    }
}

thread_local! {
    // (model id, slots), the most recently created last.
    static CACHES: RefCell<Vec<(u64, WordSlots)>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with this thread's slots for the model `model_id` (made empty on first use).
#[inline]
pub fn with_slots<R>(model_id: u64, f: impl FnOnce(&mut WordSlots) -> R) -> R {
    CACHES.with(|cell| {
        let mut caches = cell.borrow_mut();
        let pos = match caches.iter().rposition(|(id, _)| *id == model_id) {
            Some(p) => p,
            None => {
                if caches.len() >= MODELS_PER_THREAD {
                    caches.remove(0);
                }
                caches.push((model_id, WordSlots::default()));
                caches.len() - 1
            }
        };
        f(&mut caches[pos].1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_is_found_until_two_newer_words_of_its_set_push_it_out() {
        let mut slots = WordSlots::default();
        let key = pack_word(b"un").unwrap();
        slots.put(key, &[(7, 2)]);
        let mut out = Vec::new();
        assert!(slots.get(key, &mut out) && out == vec![(7, 2)]);
        let mut same_set = (1u32..)
            .map(|i| pack_word(format!("w{i}").as_bytes()).unwrap())
            .filter(|&k| k != key && set_of(k) == set_of(key));
        let (b, c) = (same_set.next().unwrap(), same_set.next().unwrap());
        slots.put(b, &[(9, 2), (10, 1)]);
        out.clear();
        assert!(slots.get(key, &mut out) && out == vec![(7, 2)], "one newer word of the set: both kept");
        slots.put(c, &[(11, 3)]);
        out.clear();
        assert!(!slots.get(key, &mut out) && out.is_empty(), "two newer words: the oldest is dropped");
        assert!(slots.get(b, &mut out) && slots.get(c, &mut out));
        assert_eq!(out, vec![(9, 2), (10, 1), (11, 3)]);
    }

    #[test]
    fn a_key_is_the_bytes_and_the_length() {
        for n in 1..=MAX_WORD_BYTES {
            let word: Vec<u8> = (0..n as u8).map(|i| 0xA0 ^ (i * 37)).collect();
            let mut b = [0u8; 16];
            b[..n].copy_from_slice(&word);
            b[15] = n as u8;
            assert_eq!(pack_word(&word), Some(u128::from_le_bytes(b)), "{n} bytes");
        }
    }

    #[test]
    fn what_does_not_fit_is_not_cached() {
        assert_eq!(pack_word(b""), None);
        assert_eq!(pack_word(&[b'a'; 16]), None);
        let mut slots = WordSlots::default();
        let key = pack_word(b"abcd").unwrap();
        let many: Vec<(u32, u32)> = (0..=MAX_PIECES as u32).map(|i| (i, 1)).collect();
        slots.put(key, &many); // more tokens than a slot holds
        let mut out = Vec::new();
        assert!(!slots.get(key, &mut out));
        // words that differ only in length have different keys
        assert_ne!(pack_word(b"a\0"), pack_word(b"a"));
    }
}
