//! The BPE encoder: HF `tokenizers`' `BPE` model (SPEC §1.5), bit-for-bit on ids and offsets.
//!
//! Semantics (all from HF `models/bpe/model.rs` / `word.rs`, checked in `tests/test_bpe_encode.py`):
//! - a word starts as one symbol per char; `continuing_subword_prefix` is prepended to every char
//!   but the first and `end_of_word_suffix` appended to the last, exactly as in training;
//! - a char missing from the vocab becomes `<0xXX>` byte tokens when `byte_fallback` is on and ALL
//!   its bytes (prefix/suffix included, as HF does) have one; otherwise an unk (consecutive unks
//!   fused into one with `fuse_unk`); with no unk token the char is silently dropped. HF quirk kept:
//!   byte-fallback tokens do not flush a pending unk, so the unk lands after them;
//! - merges are applied one at a time, lowest rank first, leftmost first among equal ranks, which is
//!   what HF's heap pops; a duplicate pair in the merge list keeps its LAST rank;
//! - `ignore_merges`: a word that is itself in the vocab is a single token;
//! - BPE-dropout: each candidate merge is skipped with probability p; skipped candidates come back
//!   after the next merge that is applied. The RNG is our own (SplitMix64), seeded from the model's
//!   seed, the word and its position, so a given seed always gives the same segmentation whatever
//!   the thread schedule. HF draws from `thread_rng` and is not reproducible; only the
//!   distribution-level behaviour can be compared (p=0: no dropout, p=1: no merges at all).
//!
//! Performance notes
//! - Merge lookups use one flat hash map keyed by the pair packed into a `u64`, with a
//!   multiplicative hash (pairs are small integers; SipHash would dominate the profile).
//! - Short words (the vast majority) are merged with a linear scan over a small pair-rank array,
//!   which is faster than a heap below ~50 symbols and pops the same (rank, position) order.
//!   Longer words, and all dropout runs, use a binary heap over a linked list of symbols.
//! - Results are cached per word in a THREAD-LOCAL map (no lock, so rayon workers never
//!   serialize), keyed by the model instance id. Words of 256 bytes or more are not cached (they
//!   are rare and would bloat the cache). The cache has two generations of up to 131,072 words
//!   each (roughly 10 MB per thread each): when the young one is full the old one is dropped, and
//!   an old word that is used again moves back to the young one ([`WordCache`]). A cache that was
//!   cleared whole at its capacity recomputed every word of a text with more distinct words than
//!   that (English, German and Chinese joined: 131k distinct pieces in 10 MB) after each clear. Each thread keeps caches for at most
//!   `MAX_MODELS_PER_THREAD` models, so dropped models' caches are eventually evicted. In front of
//!   the map sits a direct-mapped table of 16,384 single-token short words (512 KB, L2-resident):
//!   with 100k-200k-token vocabularies (tiktoken's) most pieces are one token, and the probe of the
//!   large map missed the CPU caches on most lookups.
//! - Words of up to 15 bytes (nearly all) live in open-addressing tables keyed by their packed bytes,
//!   multi-token words' symbols in one pool per generation ([`WordTable`]): no allocation per new word,
//!   a rotation clears a table instead of freeing its entries one by one.
//! - A whole text on the byte-level fast path borrows the thread's cache once
//!   ([`BpeModel::with_raw_pieces`]): no thread-local access, cache search or closure per piece. Its
//!   pieces that miss the front table queue up a few at a time, their lookups prefetched, so that the
//!   memory latency of several new words overlaps ([`RawPieces`]). When the pool has more than one
//!   thread, a short word a thread's cache misses is asked of a cache the threads share, and every word a
//!   thread computes goes there too ([`SharedWords`]): a word is then computed once for all threads.
//! - `ignore_merges` (tiktoken's whole-piece rule) is decided once per word inside the cache.
//! - A word the cache has not seen (the first sight of most words of a new text) is looked up whole by
//!   its raw bytes in a [`TokenIndex`] (one cache line per probe), and its first pair ranks come from a
//!   256x256 byte-pair table; each is built once per model, the byte pairs after a few hundred missed
//!   words, the index when its caches have missed an eighth of its vocab's size in words ([`RawState`];
//!   before that, the vocab and the pair map answer). With the byte pairs comes a 256 KB Bloom filter of
//!   the merge pairs ([`PairFilter`]): the merge loop's lookups of pairs that do not merge (most of them
//!   in Chinese) skip the pair map. In text with many multi-byte chars, a word starts from its chars'
//!   own tokens where that is exact ([`CharAtoms`], built once the missed words held 20,000 continuation
//!   bytes): a Chinese word then has a third of the merges.
//! - Byte-level models whose vocab holds all 256 byte chars (every GPT-2-style file) get a fast
//!   path that works on the RAW bytes of a piece: the byte->id table replaces the per-char string
//!   lookups and no mapped string is ever built. Units are then raw bytes, which for byte-level
//!   equal the mapped chars HF counts.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use super::char_atoms::{CharAtoms, CharAtomsBuilder};
use super::pair_filter::PairFilter;
use super::pair_table::{prefetch_address, PairTable};
use super::token_index::{TokenIndex, TokenIndexBuilder};
use super::token_strings::TokenStrings;
use super::shared_words::SharedWords;
use super::word_table::WordTable;

use crate::pretok::bytes_to_unicode;

/// Errors building or running the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BpeError {
    /// A merge refers to a token that is not in the vocab (HF: MergeTokenOutOfVocabulary).
    MergeTokenOutOfVocabulary(String),
    /// The unk token is set but not in the vocab, and it is needed.
    UnkTokenOutOfVocabulary(String),
    /// Any other invalid configuration.
    Invalid(String),
}

impl std::fmt::Display for BpeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BpeError::MergeTokenOutOfVocabulary(t) => write!(f, "BPE merge token {t:?} is not in the vocab"),
            BpeError::UnkTokenOutOfVocabulary(t) => write!(f, "BPE unk token {t:?} is not in the vocab"),
            BpeError::Invalid(m) => write!(f, "invalid BPE model: {m}"),
        }
    }
}

impl std::error::Error for BpeError {}

#[inline]
fn pack(a: u32, b: u32) -> u64 {
    (u64::from(a) << 32) | u64::from(b)
}

/// Configuration of a BPE model besides vocab and merges (the HF `model` JSON fields).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BpeOptions {
    pub unk_token: Option<String>,
    pub fuse_unk: bool,
    pub byte_fallback: bool,
    pub ignore_merges: bool,
    /// tiktoken's rule (not an HF field): the adjacent pair whose MERGED token has the smallest id
    /// merges first, leftmost on ties, instead of the pair listed first. With every split of every
    /// token listed as a merge and `ignore_merges`, this is tiktoken's BPE over rank = id.
    pub merge_by_token_id: bool,
    pub continuing_subword_prefix: Option<String>,
    pub end_of_word_suffix: Option<String>,
    pub dropout: Option<f32>,
    /// Seed of our dropout RNG (not an HF field).
    pub dropout_seed: u64,
}

/// A symbol of a word being merged: token id and length in units (bytes of the word string, or raw
/// bytes on the byte-level fast path).
pub type Sym = (u32, u32);

const MAX_CACHED_WORD_BYTES: usize = 256;
/// Both generations together (see [`WordCache`]): up to 131,072 words each.
const DEFAULT_CACHE_CAPACITY: usize = 1 << 18;
const MAX_MODELS_PER_THREAD: usize = 4;
const SMALL_WORD: usize = 48;
/// The rank and new id of a pair that does not merge.
const NO_PAIR: (u32, u32) = (u32::MAX, 0);

static BYTE_CHARS: std::sync::OnceLock<[char; 256]> = std::sync::OnceLock::new();

fn byte_chars() -> &'static [char; 256] {
    BYTE_CHARS.get_or_init(bytes_to_unicode)
}

static NEXT_MODEL_ID: AtomicU64 = AtomicU64::new(1);

/// A cached segmentation; most words are a single token, stored inline.
enum Cached {
    One(Sym),
    Many(Box<[Sym]>),
}

impl Cached {
    fn new(syms: Vec<Sym>) -> Self {
        if syms.len() == 1 {
            Cached::One(syms[0])
        } else {
            Cached::Many(syms.into_boxed_slice())
        }
    }
    /// Like [`Self::new`] from a borrowed slice: no allocation for one token.
    fn from_slice(syms: &[Sym]) -> Self {
        match syms {
            [one] => Cached::One(*one),
            _ => Cached::Many(syms.into()),
        }
    }
    fn as_slice(&self) -> &[Sym] {
        match self {
            Cached::One(s) => std::slice::from_ref(s),
            Cached::Many(b) => b,
        }
    }
}

/// Words of up to 15 bytes are keyed by their bytes packed into a `u128` (length in the top
/// byte): hashing and comparing an integer is much cheaper than hashing and `memcmp`-ing a slice,
/// and most pieces of natural text are that short. Longer words use a byte-slice map.
///
/// Two generations: new entries go into the young maps; when those hold half the capacity they become
/// the old maps and the previous old ones are dropped. A hit in the old maps moves the entry back to
/// the young ones, so the words a text keeps using survive a rotation. (Clearing everything at the
/// capacity, as before, made a text with more distinct words than the capacity, such as English,
/// German and Chinese joined, recompute even its most frequent words after every clear.)
#[derive(Default)]
struct WordCache {
    short: WordTable,
    long: HashMap<Box<[u8]>, Cached, ahash::RandomState>,
    old_short: WordTable,
    old_long: HashMap<Box<[u8]>, Cached, ahash::RandomState>,
    /// A small direct-mapped cache of short words that are ONE token, in front of `short`: the frequent
    /// words of a text hit it, and one 32-byte slot stays in L1/L2 where a probe of the large table
    /// missed the CPU caches (that probe was the largest cost of tiktoken-style encoding).
    front: Vec<(u128, u32)>,
}

const FRONT_SLOTS: usize = 16384;

#[inline]
fn front_slot(k: u128) -> usize {
    // One multiply and the top bits of the product (the well-mixed ones): the slot is on the path of
    // every piece, and a second multiply-xorshift round was measurable there.
    let h = ((k as u64) ^ ((k >> 64) as u64).rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> (64 - FRONT_SLOTS.trailing_zeros())) as usize
}

impl WordCache {
    /// Whether the young generation holds its half of `capacity` (both generations together).
    #[inline]
    fn young_full(&self, capacity: usize) -> bool {
        self.short.len() + self.long.len() >= (capacity / 2).max(1)
    }

    /// Makes room for one more young entry under `capacity` (both generations together).
    #[inline]
    fn make_room(&mut self, capacity: usize) {
        if self.young_full(capacity) {
            // The old table's allocations are reused for the young one.
            std::mem::swap(&mut self.old_short, &mut self.short);
            self.short.clear();
            self.old_long = std::mem::take(&mut self.long);
        }
    }

    /// The old generation's symbols for a short key, copied into the young generation (the old copy
    /// goes with the old generation).
    #[inline(never)]
    fn revive_short(&mut self, k: u128, capacity: usize) -> Option<&[Sym]> {
        if self.young_full(capacity) {
            // The rotation would drop the old generation: copy the symbols out first (rare).
            let syms = self.old_short.get(k)?.to_vec();
            self.make_room(capacity);
            return Some(self.short.insert(k, &syms));
        }
        let WordCache { short, old_short, .. } = self;
        let syms = old_short.get(k)?;
        Some(short.insert(k, syms))
    }

    /// The old generation's entry for a long key, moved back to the young generation.
    #[inline(never)]
    fn revive_long(&mut self, key: &[u8], capacity: usize) -> Option<&Cached> {
        let v = self.old_long.remove(key)?;
        self.make_room(capacity);
        Some(self.long.entry(key.into()).or_insert(v))
    }
}

/// The id when `syms` is one token spanning all `len` units of the word (what the front table holds).
#[inline]
fn whole_token(syms: &[Sym], len: usize) -> Option<u32> {
    match syms {
        [one] if one.1 as usize == len => Some(one.0),
        _ => None,
    }
}

#[inline]
fn short_key(key: &[u8]) -> Option<u128> {
    if key.len() > 15 {
        return None;
    }
    // Built in registers: a copy into a stack buffer read back as a u128 stalled on store forwarding
    // (a fifth of the cache lookup in a profile of cl100k encoding).
    Some(short_key_of(key))
}

/// One text's raw-byte pieces encoded against this thread's cache, borrowed once for the text
/// ([`BpeModel::with_raw_pieces`]). Per piece that saves the thread-local access, the search of
/// the model's cache and the closures of the general path, which moved their captures through
/// the stack (perf: a store-forwarding stall on that copy was a fifth of the per-piece time on
/// cl100k); a piece inside the text is keyed by one 16-byte load where the text allows it.
///
/// Pieces the front table misses wait in a queue ([`PENDING_MISSES`] of them), their cache slots and
/// token-index bucket prefetched, while the next pieces are scanned and written out; their ids are
/// spliced in at their places when the queue is looked up. The lookups of a word the cache has never
/// seen (young and old generation, token index) missed the CPU caches one after the other, and were
/// half the time of encoding text new to the cache (perf, cl100k, shuffled-letter words); queued, the
/// misses of several words overlap.
pub struct RawPieces<'a> {
    model: &'a BpeModel,
    byte_ids: &'a [u32; 256],
    cache: &'a mut WordCache,
    /// Scratch of the miss path, reused across the text's pieces: a piece's symbols. A miss then
    /// allocates only what the cache keeps (nothing for a one-token piece); the allocator was a fifth
    /// of encoding text the cache had never seen (perf, cl100k, 2026-12).
    syms: Vec<Sym>,
    /// Front-table misses not yet looked up, in text order, each with the place of its ids in `out`.
    pending: Vec<Pending>,
    /// The ids of the pending pieces once looked up, before they are spliced into `out`.
    looked_up: Vec<u32>,
    /// Where each pending piece's ids end in `looked_up`.
    looked_up_ends: Vec<usize>,
    /// The model's words shared by threads, when more than one may encode with it.
    shared: Option<&'a SharedWords>,
}

/// Texts (or a thread's share of a batch) from this many bytes start with [`RawPieces::preload`].
pub const PRELOAD_FROM_BYTES: usize = 32 * 1024;

/// Front-table misses a text's pieces may have waiting (see [`RawPieces`]).
const PENDING_MISSES: usize = 8;

/// A piece waiting in [`RawPieces`]: a short piece (`key` its packed key) at `off..off + len` of the
/// text; its ids go before `out[at]` as `out` was when it was queued (the ids of the pieces after it are
/// written meanwhile).
#[derive(Clone, Copy)]
struct Pending {
    key: u128,
    off: usize,
    len: usize,
    at: usize,
}

/// The pieces of one text as [`RawPieces::encode_text`] hands them over: `push` each in text order.
pub struct RawSink<'s, 'a> {
    pieces: &'s mut RawPieces<'a>,
    text: &'s [u8],
    out: &'s mut Vec<u32>,
}

impl RawSink<'_, '_> {
    /// Encodes `raw` (a slice of the text, or any bytes) after the pieces pushed before it.
    #[inline]
    pub fn push(&mut self, raw: &[u8]) {
        self.pieces.push(self.text, raw, self.out);
    }
}

impl<'a> RawPieces<'a> {
    /// Appends to `out` the ids of the pieces that `scan` pushes, all cut from `text` (a piece
    /// from elsewhere is encoded too, only without the queue).
    #[inline]
    pub fn encode_text(&mut self, text: &str, out: &mut Vec<u32>, scan: impl FnOnce(&mut RawSink<'_, 'a>)) {
        let text = text.as_bytes();
        if text.len() >= PRELOAD_FROM_BYTES {
            self.preload();
        }
        scan(&mut RawSink { pieces: self, text, out });
        self.flush(text, out);
    }

    /// Starts loading into the CPU caches, line after line, the two tables that a text's pieces probe at
    /// random: this thread's front table (every short piece) and the byte-pair table (a new word's first
    /// ranks), 1 MB in all. When other work has pushed them out of the caches (in a program that does
    /// anything between its calls, and in bench_peers between libraries), each first probe of a line
    /// waited for memory on its own; loaded in one sweep the lines arrive many at a time. For texts from
    /// [`PRELOAD_FROM_BYTES`] (16,384 prefetches; a 40 KB text with the tables already cached was not
    /// slower for it). cl100k English, 64 MB written before each call: a 0.3 MB slice seen before
    /// 1.74 -> 1.63 ms, new 2.89 -> 2.76; a 40 KB slice seen before 0.39-0.45 -> 0.27-0.29 ms
    /// (benchmarks/RESULTS.md, session 42).
    #[inline(never)]
    pub fn preload(&self) {
        fn sweep<T>(table: &[T]) {
            let start = table.as_ptr() as usize;
            for line in (start..start + std::mem::size_of_val(table)).step_by(64) {
                prefetch_address(line);
            }
        }
        sweep(&self.cache.front);
        if let Some(byte_pairs) = self.model.raw_tables.byte_pairs.get() {
            sweep(byte_pairs);
        }
    }

    /// Appends the ids of `raw` to `out`, or queues `raw` behind earlier pieces. `text` is the string
    /// `raw` was cut from if it was; a queued piece is read back from it, so every push until the
    /// next [`Self::flush`] must pass the same `text` and `out`.
    #[inline]
    fn push(&mut self, text: &[u8], raw: &[u8], out: &mut Vec<u32>) {
        let len = raw.len();
        if len <= 1 {
            if let Some(&b) = raw.first() {
                out.push(self.byte_ids[b as usize]);
            }
            return;
        }
        if len > 15 {
            // Nothing to prefetch for a long piece (its map's slot is not known before the lookup).
            self.flush(text, out);
            return self.push_long(raw, out);
        }
        // `raw` lies in `text` at `off` when the pointers say so (compared as numbers, no unsafe).
        let off = (raw.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
        let inside = off.checked_add(len).is_some_and(|end| end <= text.len());
        let k = match text.get(off..off.wrapping_add(16)) {
            Some(w) if inside => {
                let mut b = [0u8; 16];
                b.copy_from_slice(w);
                let mask = (1u128 << (8 * len)) - 1;
                (u128::from_le_bytes(b) & mask) | ((len as u128) << 120)
            }
            _ => short_key_of(raw),
        };
        let slot = self.cache.front[front_slot(k)];
        if slot.0 == k {
            // Written now; a piece queued before this one gets its place back when it is looked up.
            out.push(slot.1);
            return;
        }
        if !inside {
            self.flush(text, out);
            return self.push_short(k, raw, out);
        }
        // Start the loads of the lookups this piece will need.
        self.cache.short.prefetch(k);
        self.cache.old_short.prefetch(k);
        if let Some(shared) = self.shared {
            shared.prefetch(k);
        }
        if let Some(index) = self.model.whole_token_index() {
            index.prefetch(raw);
        }
        self.queue(k, off, len, text, out);
    }

    /// Queues a piece to look up, looking up the waiting ones when there are enough.
    #[inline(never)]
    fn queue(&mut self, key: u128, off: usize, len: usize, text: &[u8], out: &mut Vec<u32>) {
        self.pending.push(Pending { key, off, len, at: out.len() });
        if self.pending.len() >= PENDING_MISSES {
            self.flush(text, out);
        }
    }

    /// Looks up every waiting piece and splices its ids into `out` at its place.
    pub fn flush(&mut self, text: &[u8], out: &mut Vec<u32>) {
        if self.pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.pending);
        let mut ids = std::mem::take(&mut self.looked_up);
        let mut ends = std::mem::take(&mut self.looked_up_ends);
        ids.clear();
        ends.clear();
        for p in &pending {
            let raw = text.get(p.off..p.off + p.len).unwrap_or(&[]);
            self.push_short(p.key, raw, &mut ids);
            ends.push(ids.len());
        }
        // Splice from the back: each segment of `out` moves right by the ids of the pieces before it.
        let old_len = out.len();
        out.resize(old_len + ids.len(), 0);
        let mut seg_end = old_len;
        for (i, p) in pending.iter().enumerate().rev() {
            let start = if i == 0 { 0 } else { ends[i - 1] };
            out.copy_within(p.at..seg_end, p.at + ends[i]);
            out[p.at + start..p.at + ends[i]].copy_from_slice(&ids[start..ends[i]]);
            seg_end = p.at;
        }
        pending.clear();
        self.pending = pending;
        self.looked_up = ids;
        self.looked_up_ends = ends;
    }

    #[inline(never)]
    fn push_short(&mut self, k: u128, raw: &[u8], out: &mut Vec<u32>) {
        let cap = self.model.cache_capacity;
        // Two blocks, not one `match`: a borrow returned from one arm would outlive the other's `&mut`.
        if let Some(hit) = self.cache.short.get(k) {
            let one = whole_token(hit, raw.len());
            out.extend(hit.iter().map(|x| x.0));
            if let Some(id) = one {
                self.cache.front[front_slot(k)] = (k, id);
            }
            return;
        }
        if let Some(hit) = self.cache.revive_short(k, cap) {
            let one = whole_token(hit, raw.len());
            out.extend(hit.iter().map(|x| x.0));
            if let Some(id) = one {
                self.cache.front[front_slot(k)] = (k, id);
            }
            return;
        }
        match self.shared {
            Some(shared) if shared.get_into(k, &mut self.syms) => {}
            shared => {
                self.model.compute_raw_into(raw, self.byte_ids, &mut self.syms);
                if let Some(shared) = shared {
                    shared.insert(k, &self.syms);
                }
            }
        }
        let syms = self.syms.as_slice();
        out.extend(syms.iter().map(|x| x.0));
        if let [one] = syms {
            if one.1 as usize == raw.len() {
                self.cache.front[front_slot(k)] = (k, one.0);
            }
        }
        self.cache.make_room(cap);
        self.cache.short.insert(k, syms);
    }

    #[inline(never)]
    fn push_long(&mut self, raw: &[u8], out: &mut Vec<u32>) {
        if raw.len() >= MAX_CACHED_WORD_BYTES {
            self.model.compute_raw_into(raw, self.byte_ids, &mut self.syms);
            out.extend(self.syms.iter().map(|x| x.0));
            return;
        }
        let cap = self.model.cache_capacity;
        if let Some(hit) = self.cache.long.get(raw) {
            out.extend(hit.as_slice().iter().map(|x| x.0));
            return;
        }
        if let Some(hit) = self.cache.revive_long(raw, cap) {
            out.extend(hit.as_slice().iter().map(|x| x.0));
            return;
        }
        self.model.compute_raw_into(raw, self.byte_ids, &mut self.syms);
        out.extend(self.syms.iter().map(|x| x.0));
        self.cache.make_room(cap);
        self.cache.long.insert(raw.into(), Cached::from_slice(&self.syms));
    }
}

/// [`short_key`] of a slice known to be at most 15 bytes.
#[inline]
fn short_key_of(key: &[u8]) -> u128 {
    let mut k = (key.len() as u128) << 120;
    for (i, &b) in key.iter().enumerate() {
        k |= u128::from(b) << (8 * i);
    }
    k
}

/// Tables of the byte-level path (raw bytes in, see [`BpeModel::with_raw_pieces`]) for words its word
/// cache has not seen, each built once enough words were missed ([`BpeModel::raw_tables_when_due`]), and
/// the misses counted until then (all threads together).
#[derive(Default)]
struct RawState {
    /// `(rank, new id)` of every pair of bytes, at `first << 8 | second` ([`NO_PAIR`] if they do not
    /// merge): a word's first ranks (one per byte pair, about half of a new word's pair probes) come from
    /// this 512 KB table, whose rows for a language's common byte pairs stay in the CPU caches, instead of
    /// from the pair map (4 MB for o200k, cache misses per probe).
    byte_pairs: OnceLock<Box<[(u32, u32)]>>,
    /// The merge pairs as a Bloom filter, built with `byte_pairs`: the merge loop's lookups of pairs
    /// that do not merge are answered from it.
    pair_filter: OnceLock<PairFilter>,
    /// Raw token bytes -> id (`ignore_merges` only: is the whole piece a token?).
    index: OnceLock<TokenIndex>,
    misses: std::sync::atomic::AtomicUsize,
    /// Chars that a missed word can start with already merged (`None` inside: no char qualifies).
    atoms: OnceLock<Option<CharAtoms>>,
    /// Continuation bytes of the missed words, counted until `atoms` is built.
    atom_savings: std::sync::atomic::AtomicUsize,
    /// The words computed by any thread, for the others (made when a text is encoded with more than one
    /// thread in the pool).
    shared: OnceLock<SharedWords>,
}

impl std::fmt::Debug for RawState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let atoms = self.atoms.get().map(|a| a.as_ref().map_or(0, CharAtoms::len));
        write!(
            f,
            "RawState(byte pairs: {}, index: {:?}, atoms: {atoms:?})",
            self.byte_pairs.get().is_some(),
            self.index.get()
        )
    }
}

/// The tables of [`RawState`] that are built, for one lookup.
#[derive(Clone, Copy, Default)]
struct RawTables<'a> {
    byte_pairs: Option<&'a [(u32, u32)]>,
    pair_filter: Option<&'a PairFilter>,
    index: Option<&'a TokenIndex>,
}

/// Misses before the byte-pair table is built (or a sixteenth of the vocab's size, if less): its build
/// (65,536 pair-map probes, ~1 ms) is paid back by a few hundred new words that need merging, and a text
/// of a few lines never builds it.
const BYTE_PAIRS_AFTER_MISSES: usize = 512;

/// Continuation bytes in missed words (each a merge that pre-formed chars could save) before the char
/// atoms are built ([`CharAtoms`]; ~5 ms for o200k, about what 20,000 merges cost): Chinese text gets
/// them within its first 30 KB, German (a few umlauts) after a few MB, English rarely or never.
const ATOMS_AFTER_SAVINGS: usize = 20_000;

/// GPT-2's byte chars -> byte + 1 (0: not a byte char); they are all below U+0144, so a direct table.
fn byte_char_inverse() -> [u16; 0x200] {
    let mut inverse = [0u16; 0x200];
    for (b, &c) in byte_chars().iter().enumerate() {
        if let Some(slot) = inverse.get_mut(c as usize) {
            *slot = b as u16 + 1;
        }
    }
    inverse
}

/// Whether `tail` (the last bytes of a token) ends with an ASCII byte or a whole multi-byte char,
/// rather than inside one (a lone continuation byte counts as inside).
fn ends_on_char_boundary(tail: &[u8]) -> bool {
    let Some(&last) = tail.last() else { return true };
    if last < 0x80 {
        return true;
    }
    // Back over continuation bytes to the char's lead byte; whole if the lead asks for that many.
    let cont = tail.iter().rev().take_while(|&&b| b & 0xC0 == 0x80).count();
    let lead = tail.len().checked_sub(cont + 1).map(|i| tail[i]);
    let needs = match lead {
        Some(0xC2..=0xDF) => 2,
        Some(0xE0..=0xEF) => 3,
        Some(0xF0..=0xF4) => 4,
        _ => 0,
    };
    needs == cont + 1
}

/// The raw bytes of `tok`, a token spelled in GPT-2's byte chars, into `raw`; `false` if a char of it is
/// not a byte char (such a token never equals a byte-mapped piece). Byte chars are ASCII or two bytes of
/// UTF-8 (all below U+0800), decoded here byte by byte.
fn raw_of_byte_chars(tok: &str, inverse: &[u16; 0x200], raw: &mut Vec<u8>) -> bool {
    raw.clear();
    let mut it = tok.bytes();
    while let Some(b0) = it.next() {
        let c = match b0 {
            0..=0x7f => usize::from(b0),
            0xc0..=0xdf => match it.next() {
                Some(b1) => (usize::from(b0 & 0x1f) << 6) | usize::from(b1 & 0x3f),
                None => return false,
            },
            _ => return false,
        };
        match inverse.get(c) {
            Some(&b) if b > 0 => raw.push((b - 1) as u8),
            _ => return false,
        }
    }
    true
}

thread_local! {
    // (model id, cache) pairs, most recently created model last.
    static CACHES: RefCell<Vec<(u64, WordCache)>> = const { RefCell::new(Vec::new()) };
}

/// An HF-compatible BPE model.
#[derive(Debug)]
pub struct BpeModel {
    vocab: HashMap<String, u32, ahash::RandomState>,
    /// id -> token; `None` for ids not used by the model.
    vocab_r: TokenStrings,
    merges: PairTable,
    opts: BpeOptions,
    /// For byte-level models: token id of the mapped char of every byte, when all 256 exist and
    /// no prefix/suffix is set (the raw-byte fast path).
    byte_ids: Option<[u32; 256]>,
    /// `<0xXX>` ids for byte fallback (None per byte where absent).
    fallback_ids: [Option<u32>; 256],
    cache_capacity: usize,
    instance: u64,
    /// The byte-level path's tables for words the word caches miss, built once enough were missed
    /// ([`Self::raw_tables_when_due`]); shared by clones, whose vocab and merges are the same.
    raw_tables: Arc<RawState>,
}

impl Clone for BpeModel {
    fn clone(&self) -> Self {
        BpeModel {
            vocab: self.vocab.clone(),
            vocab_r: self.vocab_r.clone(),
            merges: self.merges.clone(),
            opts: self.opts.clone(),
            byte_ids: self.byte_ids,
            fallback_ids: self.fallback_ids,
            cache_capacity: self.cache_capacity,
            // A clone may get different options (dropout); give it its own cache.
            instance: NEXT_MODEL_ID.fetch_add(1, Ordering::Relaxed),
            raw_tables: Arc::clone(&self.raw_tables),
        }
    }
}

/// SplitMix64: tiny, fast, and good enough to draw dropout coins.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1) with 24 bits, like an f32 draw.
    fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl BpeModel {
    /// Builds a model from a vocab (token -> id) and merges in rank order.
    ///
    /// As in HF, every merge's parts and its result (`a` + `b` without `b`'s continuing-subword
    /// prefix) must be in the vocab; a pair listed twice keeps the rank of its last occurrence.
    pub fn new(
        vocab: HashMap<String, u32, ahash::RandomState>,
        merges: &[(String, String)],
        opts: BpeOptions,
    ) -> Result<Self, BpeError> {
        if let Some(p) = opts.dropout {
            if !(0.0..=1.0).contains(&p) {
                return Err(BpeError::Invalid(format!("dropout must be in [0, 1], got {p}")));
            }
        }
        // An empty prefix or suffix (GPT-2's tokenizer.json writes "") behaves exactly like none.
        let mut opts = opts;
        if opts.continuing_subword_prefix.as_deref() == Some("") {
            opts.continuing_subword_prefix = None;
        }
        if opts.end_of_word_suffix.as_deref() == Some("") {
            opts.end_of_word_suffix = None;
        }
        let max_id = vocab.values().copied().max().map_or(0, |m| m as usize + 1);
        if max_id > (1 << 28) {
            return Err(BpeError::Invalid(format!("token id {} is too large", max_id - 1)));
        }
        let prefix_len = opts.continuing_subword_prefix.as_ref().map_or(0, |p| p.len());
        let mut ids = Vec::with_capacity(merges.len());
        for (a, b) in merges {
            let ida = *vocab.get(a).ok_or_else(|| BpeError::MergeTokenOutOfVocabulary(a.clone()))?;
            let idb = *vocab.get(b).ok_or_else(|| BpeError::MergeTokenOutOfVocabulary(b.clone()))?;
            // HF strips prefix_len bytes from `b` unconditionally; we do the same, but refuse a
            // cut that is out of range or inside a char instead of panicking.
            let tail = b.get(prefix_len..).ok_or_else(|| {
                BpeError::Invalid(format!("merge ({a:?}, {b:?}): second part is shorter than the prefix"))
            })?;
            let new_token = format!("{a}{tail}");
            let new_id =
                *vocab.get(&new_token).ok_or_else(|| BpeError::MergeTokenOutOfVocabulary(new_token.clone()))?;
            ids.push((ida, idb, new_id));
        }
        Self::from_id_merges(vocab, &ids, opts)
    }

    /// Like [`Self::new`], with the merges as `(left id, right id, merged id)` in rank order, already
    /// resolved against the vocab (by a reader that checked them: `io/`). Ids must be tokens of `vocab`.
    pub fn from_id_merges(
        vocab: HashMap<String, u32, ahash::RandomState>,
        merges: &[(u32, u32, u32)],
        opts: BpeOptions,
    ) -> Result<Self, BpeError> {
        if let Some(p) = opts.dropout {
            if !(0.0..=1.0).contains(&p) {
                return Err(BpeError::Invalid(format!("dropout must be in [0, 1], got {p}")));
            }
        }
        let mut opts = opts;
        if opts.continuing_subword_prefix.as_deref() == Some("") {
            opts.continuing_subword_prefix = None;
        }
        if opts.end_of_word_suffix.as_deref() == Some("") {
            opts.end_of_word_suffix = None;
        }
        let max_id = vocab.values().copied().max().map_or(0, |m| m as usize + 1);
        if max_id > (1 << 28) {
            return Err(BpeError::Invalid(format!("token id {} is too large", max_id - 1)));
        }
        let vocab_r = TokenStrings::from_vocab(vocab.iter().map(|(t, &id)| (t.as_str(), id)), max_id);
        let mut pairs = Vec::with_capacity(merges.len());
        for (rank, &(ida, idb, new_id)) in merges.iter().enumerate() {
            let known = |id: u32| vocab_r.get(id).is_some();
            if !known(ida) || !known(idb) || !known(new_id) {
                return Err(BpeError::Invalid(format!("merge #{rank}: a part's id is not in the vocab")));
            }
            let rank = if opts.merge_by_token_id { new_id } else { rank as u32 };
            pairs.push((pack(ida, idb), (rank, new_id)));
        }
        // A pair listed twice keeps its last (rank, id), as HF's map does.
        let map = PairTable::from_pairs(&pairs);
        drop(pairs);
        let table = bytes_to_unicode();
        let mut byte_ids = [0u32; 256];
        let mut all_bytes = opts.continuing_subword_prefix.is_none() && opts.end_of_word_suffix.is_none();
        for b in 0..256 {
            match vocab.get(table[b].encode_utf8(&mut [0u8; 4]) as &str) {
                Some(&id) => byte_ids[b] = id,
                None => all_bytes = false,
            }
        }
        let mut fallback_ids = [None; 256];
        for (b, slot) in fallback_ids.iter_mut().enumerate() {
            *slot = vocab.get(&format!("<0x{b:02X}>")).copied();
        }
        Ok(BpeModel {
            vocab,
            vocab_r,
            merges: map,
            opts,
            byte_ids: if all_bytes { Some(byte_ids) } else { None },
            fallback_ids,
            cache_capacity: DEFAULT_CACHE_CAPACITY,
            instance: NEXT_MODEL_ID.fetch_add(1, Ordering::Relaxed),
            raw_tables: Arc::default(),
        })
    }

    pub fn options(&self) -> &BpeOptions {
        &self.opts
    }

    /// Sets (or clears) dropout and its seed. Results of dropout runs are never cached.
    pub fn set_dropout(&mut self, p: Option<f32>, seed: u64) -> Result<(), BpeError> {
        if let Some(p) = p {
            if !(0.0..=1.0).contains(&p) {
                return Err(BpeError::Invalid(format!("dropout must be in [0, 1], got {p}")));
            }
        }
        self.opts.dropout = p;
        self.opts.dropout_seed = seed;
        Ok(())
    }

    /// Sets the per-thread cache capacity (0 disables the cache).
    pub fn set_cache_capacity(&mut self, n: usize) {
        self.cache_capacity = n;
    }

    pub fn token_to_id(&self, t: &str) -> Option<u32> {
        self.vocab.get(t).copied()
    }

    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        self.vocab_r.get(id)
    }

    pub fn vocab(&self) -> &HashMap<String, u32, ahash::RandomState> {
        &self.vocab
    }

    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    /// One past the largest id.
    pub fn id_bound(&self) -> usize {
        self.vocab_r.id_bound()
    }

    /// True when [`Self::tokenize_raw_bytes`] may be used (byte-level fast path).
    pub fn has_byte_fast_path(&self) -> bool {
        self.byte_ids.is_some()
    }

    fn dropout_active(&self) -> bool {
        matches!(self.opts.dropout, Some(p) if p > 0.0)
    }

    /// Tokenizes one word (the string the model sees, e.g. byte-mapped), appending symbols with
    /// their lengths in BYTES of `word`. `salt` only feeds the dropout RNG (use the word's
    /// position so repeated words get independent draws).
    pub fn tokenize_into(&self, word: &str, salt: u64, out: &mut Vec<Sym>) -> Result<(), BpeError> {
        self.tokenize_with(word, salt, |s| out.extend_from_slice(s))
    }

    /// Like [`Self::tokenize_into`], handing the symbols to `sink` (no copy on a cache hit).
    pub fn tokenize_with(&self, word: &str, salt: u64, sink: impl FnOnce(&[Sym])) -> Result<(), BpeError> {
        if word.is_empty() {
            return Ok(());
        }
        // `ignore_merges`: a word in the vocab is one token. Without dropout that is decided once per word,
        // inside the cache (a vocab lookup per occurrence was a quarter of tiktoken-style encoding).
        let whole = || {
            if self.opts.ignore_merges {
                self.vocab.get(word).map(|&id| vec![(id, word.len() as u32)])
            } else {
                None
            }
        };
        if self.dropout_active() {
            if let Some(one) = whole() {
                sink(&one);
                return Ok(());
            }
            let mut syms = self.initial_symbols(word)?;
            self.merge_heap(&mut syms, Some(self.rng_for(word.as_bytes(), salt)));
            sink(&syms);
            return Ok(());
        }
        self.cached(
            word.as_bytes(),
            || {
                if let Some(one) = whole() {
                    return Ok(one);
                }
                let mut syms = self.initial_symbols(word)?;
                self.merge(&mut syms);
                Ok(syms)
            },
            sink,
        )
    }

    /// Byte-level fast path: tokenizes the RAW bytes of a piece (before the byte->char mapping).
    /// Lengths are in raw bytes (= mapped chars). Equal to `tokenize_into(map(raw))` up to units.
    /// An error if the model has no fast path (callers check [`Self::has_byte_fast_path`]).
    pub fn tokenize_raw_bytes(&self, raw: &[u8], salt: u64, out: &mut Vec<Sym>) -> Result<(), BpeError> {
        self.tokenize_raw_bytes_with(raw, salt, |s| out.extend_from_slice(s))
    }

    /// Like [`Self::tokenize_raw_bytes`], handing the symbols to `sink`.
    pub fn tokenize_raw_bytes_with(&self, raw: &[u8], salt: u64, sink: impl FnOnce(&[Sym])) -> Result<(), BpeError> {
        let Some(byte_ids) = &self.byte_ids else {
            return Err(BpeError::Invalid("no byte-level fast path for this model".into()));
        };
        if raw.is_empty() {
            return Ok(());
        }
        if raw.len() == 1 {
            sink(&[(byte_ids[raw[0] as usize], 1)]);
            return Ok(());
        }
        // `ignore_merges`, decided once per word inside the cache (see `tokenize_with`).
        let whole = || {
            if !self.opts.ignore_merges {
                return None;
            }
            self.whole_raw_token(raw).map(|id| vec![(id, raw.len() as u32)])
        };
        let init = || raw.iter().map(|&b| (byte_ids[b as usize], 1u32)).collect::<Vec<Sym>>();
        if self.dropout_active() {
            if let Some(one) = whole() {
                sink(&one);
                return Ok(());
            }
            let mut syms = init();
            self.merge_heap(&mut syms, Some(self.rng_for(raw, salt)));
            sink(&syms);
            return Ok(());
        }
        self.cached(
            raw,
            || {
                let mut syms = Vec::with_capacity(raw.len());
                self.compute_raw_into(raw, byte_ids, &mut syms);
                Ok(syms)
            },
            sink,
        )
    }

    /// Looks `key` up in this thread's cache, computing and storing it on a miss.
    #[inline]
    fn cached(
        &self,
        key: &[u8],
        compute: impl FnOnce() -> Result<Vec<Sym>, BpeError>,
        sink: impl FnOnce(&[Sym]),
    ) -> Result<(), BpeError> {
        if self.cache_capacity == 0 || key.len() >= MAX_CACHED_WORD_BYTES {
            sink(&compute()?);
            return Ok(());
        }
        CACHES.with(|cell| {
            let mut caches = cell.borrow_mut();
            let cache = self.thread_cache(&mut caches);
            let short = short_key(key);
            if let Some(k) = short {
                // Key 0 (a zero length byte) is never a real key: words are not empty.
                let slot = cache.front[front_slot(k)];
                if slot.0 == k {
                    sink(&[(slot.1, key.len() as u32)]);
                    return Ok(());
                }
            }
            let cap = self.cache_capacity;
            // Young generation, then old, in two blocks (see `RawPieces::push_short`).
            let young = match short {
                Some(k) => cache.short.get(k),
                None => cache.long.get(key).map(Cached::as_slice),
            };
            if let Some(hit) = young {
                // Only a token spanning the whole word (a dropped unknown char makes it shorter).
                let one = whole_token(hit, key.len());
                sink(hit);
                if let (Some(k), Some(id)) = (short, one) {
                    cache.front[front_slot(k)] = (k, id);
                }
                return Ok(());
            }
            let old = match short {
                Some(k) => cache.revive_short(k, cap),
                None => cache.revive_long(key, cap).map(Cached::as_slice),
            };
            if let Some(hit) = old {
                let one = whole_token(hit, key.len());
                sink(hit);
                if let (Some(k), Some(id)) = (short, one) {
                    cache.front[front_slot(k)] = (k, id);
                }
                return Ok(());
            }
            let syms = compute()?;
            sink(&syms);
            if let (Some(k), [one]) = (short, syms.as_slice()) {
                if one.1 as usize == key.len() {
                    cache.front[front_slot(k)] = (k, one.0);
                }
            }
            cache.make_room(cap);
            match short {
                Some(k) => {
                    cache.short.insert(k, &syms);
                }
                None => {
                    cache.long.insert(key.into(), Cached::new(syms));
                }
            }
            Ok(())
        })
    }

    /// This model's cache in this thread's list (created, with its front table, if missing).
    fn thread_cache<'c>(&self, caches: &'c mut Vec<(u64, WordCache)>) -> &'c mut WordCache {
        let pos = match caches.iter().rposition(|(id, _)| *id == self.instance) {
            Some(p) => p,
            None => {
                if caches.len() >= MAX_MODELS_PER_THREAD {
                    caches.remove(0);
                }
                caches.push((self.instance, WordCache { front: vec![(0, 0); FRONT_SLOTS], ..Default::default() }));
                caches.len() - 1
            }
        };
        &mut caches[pos].1
    }

    /// Runs `f` with this thread's word cache borrowed once for many raw-byte pieces (the
    /// byte-level fast path of a whole text: see [`RawPieces`]). `None` (and `f` is not run) when
    /// the model has no byte fast path, dropout is on or the cache is disabled; callers then use
    /// [`Self::tokenize_raw_bytes_with`] per piece. `f` must not encode with this crate's BPE
    /// cache by other means meanwhile (the cache is borrowed).
    pub fn with_raw_pieces<R>(&self, f: impl FnOnce(&mut RawPieces<'_>) -> R) -> Option<R> {
        let byte_ids = self.byte_ids.as_ref()?;
        if self.dropout_active() || self.cache_capacity == 0 {
            return None;
        }
        let shared = (rayon::current_num_threads() > 1)
            .then(|| self.raw_tables.shared.get_or_init(|| SharedWords::new(self.cache_capacity / 2)));
        Some(CACHES.with(|cell| {
            let mut caches = cell.borrow_mut();
            let cache = self.thread_cache(&mut caches);
            f(&mut RawPieces {
                model: self,
                byte_ids,
                cache,
                syms: Vec::new(),
                pending: Vec::new(),
                looked_up: Vec::new(),
                looked_up_ends: Vec::new(),
                shared,
            })
        }))
    }

    /// The symbols of a raw-byte piece, uncached (no dropout): `ignore_merges`, then the merges.
    /// `syms` is a scratch buffer that holds the result.
    fn compute_raw_into(&self, raw: &[u8], byte_ids: &[u32; 256], syms: &mut Vec<Sym>) {
        syms.clear();
        let tables = self.raw_tables_when_due();
        if let Some(id) = self.whole_raw_token_with(tables, raw) {
            syms.push((id, raw.len() as u32));
            return;
        }
        if let Some(atoms) = self.atoms_when_due(raw) {
            if self.merge_with_atoms(atoms, tables, raw, byte_ids, syms) {
                return;
            }
        }
        syms.extend(raw.iter().map(|&b| (byte_ids[b as usize], 1u32)));
        let Some(pairs) = tables.byte_pairs.filter(|_| (2..=SMALL_WORD).contains(&raw.len())) else {
            self.merge(syms);
            return;
        };
        let mut buf = [NO_PAIR; SMALL_WORD];
        for (r, w) in buf.iter_mut().zip(raw.windows(2)) {
            *r = pairs[(usize::from(w[0]) << 8) | usize::from(w[1])];
        }
        match tables.pair_filter {
            Some(filter) => self.merge_ranked_with(syms, &mut buf, |a, b| self.filtered_rank(filter, a, b)),
            None => self.merge_ranked(syms, &mut buf),
        }
    }

    /// `(rank, new id)` of a pair ([`NO_PAIR`] if it does not merge), the pair map asked only when the
    /// filter cannot rule the pair out.
    #[inline]
    fn filtered_rank(&self, filter: &PairFilter, a: u32, b: u32) -> (u32, u32) {
        if filter.may_contain(pack(a, b)) {
            self.rank_of(a, b).unwrap_or(NO_PAIR)
        } else {
            NO_PAIR
        }
    }

    /// [`Self::compute_raw_into`]'s merges with the word's atom chars pre-formed ([`CharAtoms`]: the same
    /// ids, fewer merges). `false`, with `syms` left empty, when no char of `raw` is an atom here.
    fn merge_with_atoms(
        &self,
        atoms: &CharAtoms,
        tables: RawTables<'_>,
        raw: &[u8],
        byte_ids: &[u32; 256],
        syms: &mut Vec<Sym>,
    ) -> bool {
        let mut used = false;
        let mut i = 0;
        while let Some(&b) = raw.get(i) {
            if b >= 0xC0 {
                if let Some((id, n)) = atoms.at(raw, i) {
                    syms.push((id, n as u32));
                    i += n;
                    used = true;
                    continue;
                }
            }
            syms.push((byte_ids[b as usize], 1));
            i += 1;
        }
        if !used {
            syms.clear();
            return false;
        }
        if syms.len() > SMALL_WORD {
            self.merge_heap(syms, None);
            return true;
        }
        if syms.len() < 2 {
            return true;
        }
        let rank = |a: u32, b: u32| match tables.pair_filter {
            Some(filter) => self.filtered_rank(filter, a, b),
            None => self.rank_of(a, b).unwrap_or(NO_PAIR),
        };
        let mut buf = [NO_PAIR; SMALL_WORD];
        let mut off = 0usize;
        for (r, w) in buf.iter_mut().zip(syms.windows(2)) {
            let ((a, la), (b, lb)) = (w[0], w[1]);
            *r = match tables.byte_pairs {
                // Two single bytes: the byte-pair table has their rank, cached for common pairs.
                Some(pairs) if la == 1 && lb == 1 => pairs[(usize::from(raw[off]) << 8) | usize::from(raw[off + 1])],
                _ => rank(a, b),
            };
            off += la as usize;
        }
        self.merge_ranked_with(syms, &mut buf, rank);
        true
    }

    /// The char atoms once built, building them when the missed words could have saved enough merges
    /// ([`ATOMS_AFTER_SAVINGS`]); `None` before, for a model without atoms, and for an ASCII `raw`.
    #[inline]
    fn atoms_when_due(&self, raw: &[u8]) -> Option<&CharAtoms> {
        let state = &*self.raw_tables;
        if let Some(atoms) = state.atoms.get() {
            return atoms.as_ref().filter(|_| raw.iter().any(|&b| b >= 0xC0));
        }
        // Continuation bytes: the merges that atoms could save this word.
        let saved = raw.iter().filter(|&&b| b & 0xC0 == 0x80).count();
        if saved == 0 || state.atom_savings.fetch_add(saved, Ordering::Relaxed) + saved < ATOMS_AFTER_SAVINGS {
            return None;
        }
        state.atoms.get_or_init(|| self.build_char_atoms()).as_ref()
    }

    /// The [`CharAtoms`] of this byte-level model (`None` if no char qualifies).
    fn build_char_atoms(&self) -> Option<CharAtoms> {
        let byte_ids = self.byte_ids.as_ref()?;
        let inverse = byte_char_inverse();
        let raw_byte = |c: char| inverse.get(c as usize).copied().filter(|&b| b > 0).map(|b| (b - 1) as u8);
        let mut builder = CharAtomsBuilder::default();
        let mut raw = Vec::new();
        for (_, tok) in self.tokens_by_id() {
            let (Some(&first), Some(&last)) = (tok.as_bytes().first(), tok.as_bytes().last()) else { continue };
            // Printable ASCII spells itself (one byte of the string); other byte chars take two.
            let ascii_end = |c: Option<char>| c.and_then(raw_byte).is_some_and(|b| b < 0x80);
            if (first < 0x80 || ascii_end(tok.chars().next())) && (last < 0x80 || ascii_end(tok.chars().next_back())) {
                continue;
            }
            // Only a token of at most 4 bytes can be one char, only one that starts with a continuation
            // byte or ends inside a char can be a fragment: the others are skipped undecoded.
            let mut tail = [0u8; 4];
            let mut n = 0;
            for c in tok.chars().rev().take(5) {
                match raw_byte(c) {
                    Some(b) if n < 4 => tail[3 - n] = b,
                    Some(_) => {}
                    None => break,
                }
                n += 1;
            }
            let short = n <= 4;
            let starts_inside = tok.chars().next().and_then(raw_byte).is_some_and(|b| b & 0xC0 == 0x80);
            if !short && !starts_inside && ends_on_char_boundary(&tail[4 - n.min(4)..]) {
                continue;
            }
            if raw_of_byte_chars(tok, &inverse, &mut raw) {
                builder.add_token(&raw);
            }
        }
        let mut operand_min = vec![u32::MAX; self.id_bound()];
        for (pair, (rank, _)) in self.merges.iter() {
            for part in [(pair >> 32) as usize, pair as u32 as usize] {
                if let Some(m) = operand_min.get_mut(part) {
                    *m = (*m).min(rank);
                }
            }
        }
        builder.build(
            |bytes| self.merge_alone(bytes, byte_ids),
            |id| operand_min.get(id as usize).copied().unwrap_or(u32::MAX),
        )
    }

    /// `(id, largest rank applied)` when BPE of `bytes` alone (a char: 2-4 bytes) ends in one token.
    fn merge_alone(&self, bytes: &[u8], byte_ids: &[u32; 256]) -> Option<(u32, u32)> {
        if !(2..=4).contains(&bytes.len()) {
            return None;
        }
        let mut syms = [0u32; 4];
        let mut n = bytes.len();
        for (s, &b) in syms.iter_mut().zip(bytes) {
            *s = byte_ids[b as usize];
        }
        let mut last = 0;
        while n > 1 {
            // Lowest rank first, leftmost among equals: `merge`'s order.
            let mut best: Option<(u32, usize, u32)> = None;
            for i in 0..n - 1 {
                if let Some((rank, id)) = self.rank_of(syms[i], syms[i + 1]) {
                    if best.is_none_or(|(r, _, _)| rank < r) {
                        best = Some((rank, i, id));
                    }
                }
            }
            let (rank, i, id) = best?;
            last = last.max(rank);
            syms[i] = id;
            syms.copy_within(i + 2..n, i + 1);
            n -= 1;
        }
        Some((syms[0], last))
    }

    /// `ignore_merges` on raw bytes: the id of the token spelled by the whole of `raw`, if there is one.
    #[inline]
    fn whole_raw_token(&self, raw: &[u8]) -> Option<u32> {
        self.whole_raw_token_with(self.raw_tables_when_due(), raw)
    }

    /// [`Self::whole_raw_token`] through the token index when it is built, else through the vocab (the
    /// piece spelled in byte chars).
    #[inline]
    fn whole_raw_token_with(&self, tables: RawTables<'_>, raw: &[u8]) -> Option<u32> {
        if !self.opts.ignore_merges {
            return None;
        }
        match tables.index {
            Some(index) => index.get(raw),
            None => {
                // Spelled on the stack for short pieces (a byte char is at most 2 bytes of UTF-8): no
                // allocation per miss before the index exists.
                let table = byte_chars();
                let mut stack = [0u8; 128];
                if raw.len() <= stack.len() / 2 {
                    let mut n = 0;
                    for &b in raw {
                        n += table[b as usize].encode_utf8(&mut stack[n..]).len();
                    }
                    let mapped = std::str::from_utf8(&stack[..n]).ok()?;
                    return self.vocab.get(mapped).copied();
                }
                let mapped: String = raw.iter().map(|&b| table[b as usize]).collect();
                self.vocab.get(&mapped).copied()
            }
        }
    }

    /// The token index when it is built and a piece that is a token is that token (`ignore_merges`).
    #[inline]
    fn whole_token_index(&self) -> Option<&TokenIndex> {
        if self.opts.ignore_merges {
            self.raw_tables.index.get()
        } else {
            None
        }
    }

    /// The raw tables built so far, building each once its number of misses is reached: the byte-pair
    /// table after [`BYTE_PAIRS_AFTER_MISSES`], the token index once this model's word caches have missed
    /// an eighth of its vocab's size in words. The index reads every token (~5 ms for cl100k, ~10 ms for
    /// o200k on the machine of RESULTS.md), which a short text's misses (~0.2 us saved each) would not
    /// pay back; built on the first miss, it made the cold first call on 0.3 MB slower than tiktoken's on
    /// cl100k.
    #[inline]
    fn raw_tables_when_due(&self) -> RawTables<'_> {
        let state = &*self.raw_tables;
        let mut tables = RawTables {
            byte_pairs: state.byte_pairs.get().map(|p| &**p),
            pair_filter: state.pair_filter.get(),
            index: state.index.get(),
        };
        if tables.byte_pairs.is_some() && (tables.index.is_some() || !self.opts.ignore_merges) {
            return tables;
        }
        let misses = state.misses.fetch_add(1, Ordering::Relaxed);
        if misses >= BYTE_PAIRS_AFTER_MISSES.min(self.vocab.len() / 16) && tables.byte_pairs.is_none() {
            tables.byte_pairs = Some(state.byte_pairs.get_or_init(|| self.build_byte_pairs()));
            tables.pair_filter = Some(state.pair_filter.get_or_init(|| PairFilter::new(self.merges.keys())));
        }
        if misses >= self.vocab.len() / 8 && self.opts.ignore_merges && tables.index.is_none() {
            tables.index = Some(state.index.get_or_init(|| self.build_token_index()));
        }
        tables
    }

    /// The byte-pair table of [`RawState`].
    fn build_byte_pairs(&self) -> Box<[(u32, u32)]> {
        let mut byte_pairs = vec![NO_PAIR; 1 << 16].into_boxed_slice();
        if let Some(ids) = &self.byte_ids {
            for (i, slot) in byte_pairs.iter_mut().enumerate() {
                *slot = self.rank_of(ids[i >> 8], ids[i & 0xff]).unwrap_or(NO_PAIR);
            }
        }
        byte_pairs
    }

    /// [`TokenIndex`] of the vocab's tokens in raw bytes (a token with a char outside GPT-2's byte
    /// alphabet can never equal a byte-mapped piece, so it is left out). Built once per model
    /// ([`Self::raw_tables_when_due`]) from `vocab_r`, whose strings lie back to back in id order, so the
    /// build reads them sequentially and packs the short ones straight into the index's buckets.
    fn build_token_index(&self) -> TokenIndex {
        let inverse = byte_char_inverse();
        let mut index = TokenIndexBuilder::with_capacity(self.vocab.len());
        let mut raw = Vec::new();
        for (id, tok) in self.tokens_by_id() {
            if raw_of_byte_chars(tok, &inverse, &mut raw) {
                index.add(&raw, id);
            }
        }
        index.build()
    }

    /// `(id, token)` of every token, in id order when `vocab_r` lists them all (read sequentially).
    fn tokens_by_id(&self) -> Box<dyn Iterator<Item = (u32, &str)> + '_> {
        // Two tokens share an id (a malformed file): vocab_r holds only one of them, so read the vocab.
        if self.vocab_r.present() == self.vocab.len() {
            Box::new(self.vocab_r.iter())
        } else {
            Box::new(self.vocab.iter().map(|(t, &id)| (id, t.as_str())))
        }
    }

    fn rng_for(&self, word: &[u8], salt: u64) -> SplitMix64 {
        let mut r =
            SplitMix64(self.opts.dropout_seed ^ fnv1a(word).rotate_left(17) ^ salt.wrapping_mul(0xa076_1d64_78bd_642f));
        r.next_u64();
        r
    }

    /// HF `merge_word` up to (not including) the merges: one symbol per char, prefix/suffix,
    /// unk/fuse_unk/byte_fallback handling.
    fn initial_symbols(&self, w: &str) -> Result<Vec<Sym>, BpeError> {
        let mut syms: Vec<Sym> = Vec::with_capacity(w.len());
        let mut unk: Option<(u32, u32)> = None;
        let prefix = self.opts.continuing_subword_prefix.as_deref();
        let suffix = self.opts.end_of_word_suffix.as_deref();
        let mut buf = String::new();
        let mut it = w.char_indices().peekable();
        while let Some((i, c)) = it.next() {
            let is_first = i == 0;
            let is_last = it.peek().is_none();
            let byte_len = c.len_utf8() as u32;
            let piece = &w[i..i + c.len_utf8()];
            let s: &str = if (!is_first && prefix.is_some()) || (is_last && suffix.is_some()) {
                buf.clear();
                if !is_first {
                    buf.push_str(prefix.unwrap_or(""));
                }
                buf.push_str(piece);
                if is_last {
                    buf.push_str(suffix.unwrap_or(""));
                }
                &buf
            } else {
                piece
            };
            if let Some(&id) = self.vocab.get(s) {
                if let Some(u) = unk.take() {
                    syms.push(u);
                }
                syms.push((id, byte_len));
                continue;
            }
            if self.opts.byte_fallback {
                let ids: Option<Vec<u32>> = s.bytes().map(|b| self.fallback_ids[b as usize]).collect();
                if let Some(ids) = ids {
                    // HF gives each byte token a length of 1, prefix bytes included.
                    syms.extend(ids.into_iter().map(|id| (id, 1)));
                    continue;
                }
            }
            if let Some(unk_tok) = &self.opts.unk_token {
                let unk_id = || {
                    self.vocab.get(unk_tok).copied().ok_or_else(|| BpeError::UnkTokenOutOfVocabulary(unk_tok.clone()))
                };
                unk = match unk {
                    Some((id, len)) if self.opts.fuse_unk => Some((id, len + byte_len)),
                    Some(prev) => {
                        syms.push(prev);
                        Some((unk_id()?, byte_len))
                    }
                    None => Some((unk_id()?, byte_len)),
                };
            }
            // No unk token: the char is dropped, as in HF.
        }
        if let Some(u) = unk {
            syms.push(u);
        }
        Ok(syms)
    }

    #[inline]
    fn rank_of(&self, a: u32, b: u32) -> Option<(u32, u32)> {
        self.merges.get(pack(a, b))
    }

    /// Applies all merges (no dropout).
    fn merge(&self, syms: &mut Vec<Sym>) {
        if syms.len() < 2 {
            return;
        }
        if syms.len() > SMALL_WORD {
            self.merge_heap(syms, None);
            return;
        }
        // Linear scan: ranks[i] = (rank, new id) of the pair (syms[i], syms[i+1]), on the stack (a word
        // here has at most SMALL_WORD symbols, so no allocation per word).
        let mut buf = [NO_PAIR; SMALL_WORD];
        for (r, w) in buf.iter_mut().zip(syms.windows(2)) {
            *r = self.rank_of(w[0].0, w[1].0).unwrap_or(NO_PAIR);
        }
        self.merge_ranked(syms, &mut buf);
    }

    /// The merge loop of [`Self::merge`] from the ranks of the initial pairs: `buf[i]` is `(rank, new id)`
    /// of `syms[i]` and `syms[i + 1]` ([`NO_PAIR`] when they do not merge), for `syms.len()` of 2 to
    /// `SMALL_WORD`.
    #[inline]
    fn merge_ranked(&self, syms: &mut Vec<Sym>, buf: &mut [(u32, u32); SMALL_WORD]) {
        self.merge_ranked_with(syms, buf, |a, b| self.rank_of(a, b).unwrap_or(NO_PAIR));
    }

    /// [`Self::merge_ranked`] with the pair ranks from `rank` (`(rank, new id)`, [`NO_PAIR`] if none).
    #[inline]
    fn merge_ranked_with(
        &self,
        syms: &mut Vec<Sym>,
        buf: &mut [(u32, u32); SMALL_WORD],
        rank: impl Fn(u32, u32) -> (u32, u32),
    ) {
        let mut n = syms.len() - 1;
        loop {
            let ranks = &mut buf[..n];
            let mut best = usize::MAX;
            let mut best_rank = u32::MAX;
            for (i, r) in ranks.iter().enumerate() {
                if r.0 < best_rank {
                    best_rank = r.0;
                    best = i;
                }
            }
            if best == usize::MAX {
                break;
            }
            let new_id = ranks[best].1;
            syms[best] = (new_id, syms[best].1 + syms[best + 1].1);
            syms.remove(best + 1);
            ranks.copy_within(best + 1.., best);
            n -= 1;
            if best > 0 {
                buf[best - 1] = rank(syms[best - 1].0, new_id);
            }
            if best < n {
                buf[best] = rank(new_id, syms[best + 1].0);
            }
        }
    }

    /// Heap-driven merging over a linked list (long words, dropout). Pops `(rank, position)` in
    /// increasing order, like HF's `Word::merge_all`.
    fn merge_heap(&self, syms: &mut Vec<Sym>, mut rng: Option<SplitMix64>) {
        let n = syms.len();
        if n < 2 {
            return;
        }
        let p = self.opts.dropout.unwrap_or(0.0);
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut next: Vec<usize> = (1..=n).collect();
        let mut alive = vec![true; n];
        // (rank, pos, new_id); Reverse for a min-heap.
        let mut heap: BinaryHeap<Reverse<(u32, usize, u32)>> = BinaryHeap::with_capacity(n);
        for i in 0..n - 1 {
            if let Some((r, id)) = self.rank_of(syms[i].0, syms[i + 1].0) {
                heap.push(Reverse((r, i, id)));
            }
        }
        let mut skipped: Vec<Reverse<(u32, usize, u32)>> = Vec::new();
        while let Some(Reverse((rank, pos, new_id))) = heap.pop() {
            if let Some(r) = rng.as_mut() {
                if r.next_f32() < p {
                    skipped.push(Reverse((rank, pos, new_id)));
                    continue;
                }
            }
            // Stale entries: the left symbol was absorbed, has no right neighbour any more, or the
            // pair at this position changed since it was pushed.
            if !alive[pos] || next[pos] >= n {
                continue;
            }
            let right = next[pos];
            match self.rank_of(syms[pos].0, syms[right].0) {
                Some((r, id)) if r == rank && id == new_id => {}
                _ => continue,
            }
            heap.extend(skipped.drain(..));
            syms[pos] = (new_id, syms[pos].1 + syms[right].1);
            alive[right] = false;
            next[pos] = next[right];
            if next[pos] < n {
                prev[next[pos]] = pos;
            }
            if prev[pos] < n {
                let l = prev[pos];
                if let Some((r, id)) = self.rank_of(syms[l].0, new_id) {
                    heap.push(Reverse((r, l, id)));
                }
            }
            if next[pos] < n {
                if let Some((r, id)) = self.rank_of(new_id, syms[next[pos]].0) {
                    heap.push(Reverse((r, pos, id)));
                }
            }
        }
        let mut w = 0;
        for i in 0..n {
            if alive[i] {
                syms[w] = syms[i];
                w += 1;
            }
        }
        syms.truncate(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(vocab: &[&str], merges: &[(&str, &str)], opts: BpeOptions) -> BpeModel {
        let v = vocab.iter().enumerate().map(|(i, t)| (t.to_string(), i as u32)).collect();
        let m: Vec<(String, String)> = merges.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        BpeModel::new(v, &m, opts).unwrap()
    }

    fn ids(m: &BpeModel, w: &str) -> Vec<Sym> {
        let mut out = Vec::new();
        m.tokenize_into(w, 0, &mut out).unwrap();
        out
    }

    #[test]
    fn merges_by_rank_leftmost_first() {
        // a=0 b=1 ab=2 aab? no: "aaa" with merge a+a -> "aa a" (left to right, non-overlapping).
        let m = model(&["a", "b", "aa", "ab"], &[("a", "a"), ("a", "b")], BpeOptions::default());
        assert_eq!(ids(&m, "aaa"), vec![(2, 2), (0, 1)]);
        assert_eq!(ids(&m, "aab"), vec![(2, 2), (1, 1)]);
        // Rank decides, not position: (a,b) has rank 0 here.
        let m = model(&["a", "b", "aa", "ab"], &[("a", "b"), ("a", "a")], BpeOptions::default());
        assert_eq!(ids(&m, "aab"), vec![(0, 1), (3, 2)]);
    }

    #[test]
    fn duplicate_merge_last_rank_wins() {
        // (b,c) listed first and last: its rank is 2, so (a,b) (rank 1) wins on "abc".
        let m = model(&["a", "b", "c", "bc", "ab"], &[("b", "c"), ("a", "b"), ("b", "c")], BpeOptions::default());
        assert_eq!(ids(&m, "abc"), vec![(4, 2), (2, 1)]);
    }

    #[test]
    fn heap_and_scan_agree() {
        let vocab = ["a", "b", "c", "ab", "bc", "abc", "ca", "cab", "bca"];
        let merges = [("a", "b"), ("b", "c"), ("ab", "c"), ("c", "a"), ("c", "ab"), ("bc", "a")];
        let m = model(&vocab, &merges, BpeOptions::default());
        let mut x: u64 = 7;
        for len in 2..120 {
            let w: String = (0..len)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ['a', 'b', 'c'][(x >> 33) as usize % 3]
                })
                .collect();
            let mut s1: Vec<Sym> = w.chars().map(|c| (m.token_to_id(&c.to_string()).unwrap(), 1)).collect();
            let mut s2 = s1.clone();
            // Force both algorithms regardless of length.
            m.merge_heap(&mut s1, None);
            let n = s2.len();
            if n <= SMALL_WORD {
                m.merge(&mut s2);
            } else {
                // Compare against the scan by running it in chunks-free form: temporarily raise the limit.
                let mut ranks_scan = s2.clone();
                scan_only(&m, &mut ranks_scan);
                s2 = ranks_scan;
            }
            assert_eq!(s1, s2, "{w}");
        }
    }

    fn scan_only(m: &BpeModel, syms: &mut Vec<Sym>) {
        loop {
            let best = syms
                .windows(2)
                .enumerate()
                .filter_map(|(i, w)| m.rank_of(w[0].0, w[1].0).map(|(r, id)| (r, i, id)))
                .min();
            let Some((_, i, id)) = best else { break };
            syms[i] = (id, syms[i].1 + syms[i + 1].1);
            syms.remove(i + 1);
        }
    }

    #[test]
    fn unk_fuse_and_byte_fallback() {
        let opts = BpeOptions { unk_token: Some("<unk>".into()), ..Default::default() };
        let m = model(&["<unk>", "a"], &[], opts.clone());
        assert_eq!(ids(&m, "axya"), vec![(1, 1), (0, 1), (0, 1), (1, 1)]);
        let m = model(&["<unk>", "a"], &[], BpeOptions { fuse_unk: true, ..opts.clone() });
        assert_eq!(ids(&m, "axéa"), vec![(1, 1), (0, 3), (1, 1)]);
        // No unk token: unknown chars vanish.
        let m = model(&["a"], &[], BpeOptions::default());
        assert_eq!(ids(&m, "xax"), vec![(0, 1)]);
        // Byte fallback: é = C3 A9.
        let m = model(&["a", "<0xC3>", "<0xA9>"], &[], BpeOptions { byte_fallback: true, ..Default::default() });
        assert_eq!(ids(&m, "aé"), vec![(0, 1), (1, 1), (2, 1)]);
        // Unk set but missing from the vocab: an error, only when needed.
        let m = model(&["a"], &[], opts);
        assert!(ids_err(&m, "a").is_ok());
        assert!(matches!(ids_err(&m, "b"), Err(BpeError::UnkTokenOutOfVocabulary(_))));
    }

    fn ids_err(m: &BpeModel, w: &str) -> Result<Vec<Sym>, BpeError> {
        let mut out = Vec::new();
        m.tokenize_into(w, 0, &mut out).map(|_| out)
    }

    #[test]
    fn prefix_and_suffix() {
        let opts = BpeOptions {
            continuing_subword_prefix: Some("##".into()),
            end_of_word_suffix: Some("</w>".into()),
            ..Default::default()
        };
        let m = model(
            &["a", "##b", "##c</w>", "a##b", "ab", "ab##c</w>", "abc</w>"],
            &[("a", "##b"), ("ab", "##c</w>")],
            opts,
        );
        assert_eq!(ids(&m, "abc"), vec![(6, 3)]);
    }

    #[test]
    fn dropout_extremes_and_determinism() {
        let vocab = ["a", "b", "ab", "abab"];
        let merges = [("a", "b"), ("ab", "ab")];
        let mut m = model(&vocab, &merges, BpeOptions::default());
        assert_eq!(ids(&m, "abab"), vec![(3, 4)]);
        m.set_dropout(Some(1.0), 3).unwrap();
        assert_eq!(ids(&m, "abab"), vec![(0, 1), (1, 1), (0, 1), (1, 1)]);
        m.set_dropout(Some(0.5), 3).unwrap();
        let w = "ab".repeat(40);
        let mut a = Vec::new();
        let mut b = Vec::new();
        m.tokenize_into(&w, 9, &mut a).unwrap();
        m.tokenize_into(&w, 9, &mut b).unwrap();
        assert_eq!(a, b);
        assert!(m.set_dropout(Some(1.5), 0).is_err());
    }

    #[test]
    fn byte_fast_path_equals_mapped_path() {
        let table = bytes_to_unicode();
        let mut vocab: Vec<String> = table.iter().map(|c| c.to_string()).collect();
        vocab.push("Ġt".into());
        vocab.push("he".into());
        vocab.push("Ġthe".into());
        let v = vocab.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        let merges = vec![("Ġ".to_string(), "t".to_string()), ("h".into(), "e".into()), ("Ġt".into(), "he".into())];
        let m = BpeModel::new(v, &merges, BpeOptions::default()).unwrap();
        assert!(m.has_byte_fast_path());
        for raw in [" the", " thé", "hello", " the the"] {
            let mapped = crate::pretok::byte_level_map(raw);
            let mut a = Vec::new();
            m.tokenize_raw_bytes(raw.as_bytes(), 0, &mut a).unwrap();
            let b = ids(&m, &mapped);
            assert_eq!(a.iter().map(|s| s.0).collect::<Vec<_>>(), b.iter().map(|s| s.0).collect::<Vec<_>>());
            assert_eq!(a.iter().map(|s| s.1).sum::<u32>() as usize, raw.len());
        }
    }

    /// tiktoken's BPE, written from its definition as an oracle: bytes start as one part each; while some
    /// adjacent pair's joined bytes are a token, join the pair whose token has the smallest rank (the
    /// leftmost among equals). With `ignore_merges`, a word that is a token is that token.
    fn tiktoken_oracle(ranks: &HashMap<Vec<u8>, u32>, word: &[u8]) -> Vec<u32> {
        if let Some(&r) = ranks.get(word) {
            return vec![r];
        }
        let mut parts: Vec<Vec<u8>> = word.iter().map(|&b| vec![b]).collect();
        loop {
            let best = (0..parts.len().saturating_sub(1))
                .filter_map(|i| ranks.get(&[parts[i].as_slice(), &parts[i + 1]].concat()).map(|&r| (r, i)))
                .min();
            let Some((_, i)) = best else { break };
            let right = parts.remove(i + 1);
            parts[i].extend(right);
        }
        parts.iter().map(|p| ranks[p]).collect()
    }

    /// What the rank-file reader builds from `ranks` (the byte-level spelling, every split as a merge,
    /// `ignore_merges` and `merge_by_token_id`), uncached.
    fn tiktoken_like_model(ranks: &HashMap<Vec<u8>, u32>) -> BpeModel {
        let table = bytes_to_unicode();
        let vocab = ranks.iter().map(|(t, &r)| (t.iter().map(|&b| table[b as usize]).collect::<String>(), r)).collect();
        let mut merges = Vec::new();
        for (t, &r) in ranks {
            for i in 1..t.len() {
                if let (Some(&a), Some(&b)) = (ranks.get(&t[..i]), ranks.get(&t[i..])) {
                    merges.push((r, a, b));
                }
            }
        }
        merges.sort_unstable();
        let merges: Vec<(u32, u32, u32)> = merges.into_iter().map(|(r, a, b)| (a, b, r)).collect();
        let opts = BpeOptions { ignore_merges: true, merge_by_token_id: true, ..Default::default() };
        let mut model = BpeModel::from_id_merges(vocab, &merges, opts).unwrap();
        model.set_cache_capacity(0);
        model
    }

    #[test]
    fn equal_ranks_merge_leftmost_first() {
        // "aaa" with "aa" a token: both pairs make "aa"; the left one merges first, as in tiktoken.
        let mut ranks: HashMap<Vec<u8>, u32> = (0..=255u8).map(|b| (vec![b], u32::from(b))).collect();
        ranks.insert(b"aa".to_vec(), 256);
        ranks.insert(b"ab".to_vec(), 257);
        let model = tiktoken_like_model(&ranks);
        for word in [&b"aaa"[..], b"aaab", b"baaa", b"aaaaa"] {
            let mut syms = Vec::new();
            model.tokenize_raw_bytes(word, 0, &mut syms).unwrap();
            assert_eq!(syms.iter().map(|s| s.0).collect::<Vec<_>>(), tiktoken_oracle(&ranks, word));
        }
        let mut syms = Vec::new();
        model.tokenize_raw_bytes(b"aaa", 0, &mut syms).unwrap();
        assert_eq!(syms, vec![(256, 2), (97, 1)]);
    }

    /// The single bytes of `alphabet`, then random joins of two earlier tokens (at most `max_len` bytes,
    /// none repeated) until there are `count`; and the set of them, for the caller to add more.
    fn random_joins(
        alphabet: &[u8],
        count: usize,
        max_len: usize,
        next: &mut impl FnMut(u64) -> u64,
    ) -> (Vec<Vec<u8>>, std::collections::HashSet<Vec<u8>>) {
        let mut made: Vec<Vec<u8>> = alphabet.iter().map(|&b| vec![b]).collect();
        let mut seen: std::collections::HashSet<Vec<u8>> = made.iter().cloned().collect();
        while made.len() < count {
            let t =
                [made[next(made.len() as u64) as usize].as_slice(), &made[next(made.len() as u64) as usize]].concat();
            if t.len() <= max_len && seen.insert(t.clone()) {
                made.push(t);
            }
        }
        (made, seen)
    }

    /// Ranks of a tiktoken-like file: the 256 bytes first, then `made[skip..]` in a shuffled order (so
    /// the merge order is not the order the tokens were made in).
    fn shuffled_ranks(made: &[Vec<u8>], skip: usize, next: &mut impl FnMut(u64) -> u64) -> HashMap<Vec<u8>, u32> {
        let mut order: Vec<usize> = (skip..made.len()).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, next(i as u64 + 1) as usize);
        }
        let mut ranks: HashMap<Vec<u8>, u32> = (0..=255u8).map(|b| (vec![b], u32::from(b))).collect();
        for (k, &i) in order.iter().enumerate() {
            ranks.insert(made[i].clone(), 256 + k as u32);
        }
        ranks
    }

    #[test]
    fn byte_level_path_equals_tiktoken_by_definition() {
        // A random tiktoken-like vocabulary: the 256 bytes, then joins of two earlier tokens over a small
        // alphabet (so many words have several competing merges), some past 12 and 15 bytes (the token
        // index's two kinds of key); ranks in a shuffled order, so the merge order is not the order the
        // tokens were made in.
        let mut x = 11u64;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let alphabet: &[u8] = b"ab c\xc3\xa9";
        let (made, _) = random_joins(alphabet, 700, 24, &mut next);
        let ranks = shuffled_ranks(&made, alphabet.len(), &mut next);
        let words: Vec<Vec<u8>> = (0..4000)
            .map(|_| {
                let len = 1 + next(SMALL_WORD as u64 + 8) as usize; // past SMALL_WORD (the heap merge) too
                (0..len).map(|_| alphabet[next(alphabet.len() as u64) as usize]).collect()
            })
            .collect();
        // Before the raw tables exist (the first vocab/16 misses), whole tokens come from the vocab itself
        // and first ranks from the pair map; then the byte pairs exist but not the index (up to vocab/8).
        let fresh = tiktoken_like_model(&ranks);
        let mut syms = Vec::new();
        for t in made.iter().filter(|t| t.len() > 1).take(ranks.len() / 16 - 1) {
            syms.clear();
            fresh.tokenize_raw_bytes(t, 0, &mut syms).unwrap();
            assert_eq!(syms, vec![(ranks[t], t.len() as u32)], "{t:?}");
        }
        assert!(fresh.raw_tables.byte_pairs.get().is_none() && fresh.raw_tables.index.get().is_none());
        for word in words.iter().filter(|w| w.len() > 1).take(ranks.len() / 16 - 8) {
            syms.clear();
            fresh.tokenize_raw_bytes(word, 0, &mut syms).unwrap();
            assert_eq!(syms.iter().map(|s| s.0).collect::<Vec<_>>(), tiktoken_oracle(&ranks, word), "{word:?}");
        }
        assert!(fresh.raw_tables.byte_pairs.get().is_some() && fresh.raw_tables.index.get().is_none());
        let model = tiktoken_like_model(&ranks);
        let (mut multi, mut whole) = (0, 0);
        // Every token is a word too: the whole-token rule must find each, short and long keys alike.
        for word in words.iter().chain(made.iter()) {
            let mut syms = Vec::new();
            model.tokenize_raw_bytes(word, 0, &mut syms).unwrap();
            let ids: Vec<u32> = syms.iter().map(|s| s.0).collect();
            assert_eq!(ids, tiktoken_oracle(&ranks, word), "{word:?}");
            assert_eq!(syms.iter().map(|s| s.1 as usize).sum::<usize>(), word.len());
            multi += usize::from(ids.len() > 1 && ids.len() < word.len());
            whole += usize::from(ids.len() == 1 && word.len() > 1);
        }
        assert!(multi > 1000 && whole >= 690, "too few words exercised merges ({multi}) or whole tokens ({whole})");
    }

    #[test]
    fn char_atoms_equal_tiktoken_by_definition() {
        // Random tiktoken-like vocabularies over the bytes of a few multi-byte chars and ASCII: joins of
        // earlier tokens, so there are whole chars made in every order, tokens that end inside a char or
        // start inside one (the fragment contexts), and merges that use a char's token before or after
        // its own last merge (condition 2). Words are random strings of those chars, plus random bytes
        // (invalid UTF-8 too). With the atoms built, every word must still give tiktoken's ids.
        let chars = ["a", " ", "é", "中", "文", "😀"];
        let (mut atom_words, mut blocked) = (0, 0);
        for seed in 0..40u64 {
            let mut x = 0x9E37_79B9 ^ seed;
            let mut next = |m: u64| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 33) % m
            };
            let alphabet: Vec<u8> = {
                let mut a: Vec<u8> = chars.iter().flat_map(|c| c.bytes()).collect();
                a.sort_unstable();
                a.dedup();
                a
            };
            let (mut made, mut seen) = random_joins(&alphabet, 400, 12, &mut next);
            // The chars themselves, made from their bytes in a random order if not made already.
            for c in &chars[2..] {
                let b = c.as_bytes();
                let mut t = vec![b[0]];
                for &y in &b[1..] {
                    t.push(y);
                    if seen.insert(t.clone()) {
                        made.push(t.clone());
                    }
                }
            }
            let ranks = shuffled_ranks(&made, alphabet.len(), &mut next);
            let model = tiktoken_like_model(&ranks);
            let atoms = model.raw_tables.atoms.get_or_init(|| model.build_char_atoms());
            let Some(atoms) = atoms.as_ref() else { continue };
            let byte_ids = model.byte_ids.unwrap();
            for n in 0..3000 {
                let word: Vec<u8> = if n % 5 == 4 {
                    (0..1 + next(20)).map(|_| alphabet[next(alphabet.len() as u64) as usize]).collect()
                } else {
                    (0..1 + next(30)).flat_map(|_| chars[next(chars.len() as u64) as usize].bytes()).collect()
                };
                let want = tiktoken_oracle(&ranks, &word);
                let mut syms = Vec::new();
                model.tokenize_raw_bytes(&word, 0, &mut syms).unwrap();
                assert_eq!(syms.iter().map(|s| s.0).collect::<Vec<_>>(), want, "seed {seed}, {word:?}");
                // The atom path alone (no whole-word rule), where it applies.
                syms.clear();
                let tables = RawTables::default();
                if !ranks.contains_key(&word) && model.merge_with_atoms(atoms, tables, &word, &byte_ids, &mut syms) {
                    atom_words += 1;
                    assert_eq!(syms.iter().map(|s| s.0).collect::<Vec<_>>(), want, "seed {seed}, atoms, {word:?}");
                    assert_eq!(syms.iter().map(|s| s.1 as usize).sum::<usize>(), word.len());
                }
                // An atom char that its neighbours keep from being pre-formed here.
                let mut i = 0;
                while i < word.len() {
                    let n = match word[i] {
                        0xC0..=0xDF => 2,
                        0xE0..=0xEF => 3,
                        0xF0.. => 4,
                        _ => 1,
                    };
                    if n > 1 && atoms.at(&word, i).is_none() {
                        if let Some(alone) = word.get(i..i + n) {
                            blocked += usize::from(atoms.at(alone, 0).is_some());
                        }
                    }
                    i += n;
                }
            }
        }
        assert!(atom_words > 3000 && blocked > 100, "atoms used in {atom_words} words, blocked {blocked} times");
    }

    #[test]
    fn raw_pieces_equal_the_per_piece_path() {
        let table = bytes_to_unicode();
        let mut vocab: Vec<String> = table.iter().map(|c| c.to_string()).collect();
        for t in ["Ġt", "he", "Ġthe", "ab", "abab", "ĠĠ"] {
            vocab.push(t.into());
        }
        let v = vocab.iter().enumerate().map(|(i, t)| (t.clone(), i as u32)).collect();
        let merges: Vec<(String, String)> =
            [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("a", "b"), ("ab", "ab"), ("Ġ", "Ġ")]
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect();
        let opts = BpeOptions { ignore_merges: true, merge_by_token_id: true, ..Default::default() };
        let m = BpeModel::new(v, &merges, opts).unwrap();
        let mut uncached = m.clone();
        uncached.set_cache_capacity(0);
        assert!(uncached.with_raw_pieces(|_| ()).is_none());
        let mut x = 5u64;
        let mut text = String::new();
        for _ in 0..3000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            text.push_str(["a", "b", " ", "the", "é", "\0", "abab", "  "][(x >> 33) as usize % 8]);
        }
        // pieces of every length from 0 to 40 bytes, at every place (the last ones near the end of
        // the text, where no 16-byte window fits), and the same pieces copied out of the text
        let bytes = text.as_bytes();
        let mut cuts = vec![0usize];
        while *cuts.last().unwrap() < bytes.len() {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            cuts.push((cuts.last().unwrap() + (x >> 33) as usize % 41).min(bytes.len()));
        }
        // round 2: a cache of 8 words, so that its generations rotate all the time
        let mut small = m.clone();
        small.set_cache_capacity(8);
        for (round, m) in [&m, &m, &small].into_iter().enumerate() {
            let (mut ours, mut reference) = (Vec::new(), Vec::new());
            m.with_raw_pieces(|enc| {
                enc.encode_text(&text, &mut ours, |sink| {
                    for (i, w) in cuts.windows(2).enumerate() {
                        let raw = &bytes[w[0]..w[1]];
                        let copied = raw.to_vec();
                        // round 1: every third piece from outside the text (no queue for it)
                        sink.push(if round == 1 && i % 3 == 0 { &copied } else { raw });
                    }
                })
            })
            .unwrap();
            for w in cuts.windows(2) {
                let mut syms = Vec::new();
                uncached.tokenize_raw_bytes(&bytes[w[0]..w[1]], 0, &mut syms).unwrap();
                reference.extend(syms.iter().map(|s| s.0));
            }
            assert_eq!(ours, reference, "round {round}");
        }
    }

    #[test]
    fn cache_gives_uncached_results_for_short_and_long_keys() {
        let vocab = ["a", "b", "ab", "abab", "\0", "a\0"];
        let merges = [("a", "b"), ("ab", "ab"), ("a", "\0")];
        let cached = model(&vocab, &merges, BpeOptions::default());
        let mut uncached = model(&vocab, &merges, BpeOptions::default());
        uncached.set_cache_capacity(0);
        // Around the 15-byte short-key limit, and keys differing only by trailing NULs.
        let words: Vec<String> = (1..40)
            .map(|n| "ab".repeat(n).chars().take(n).collect::<String>())
            .chain(["a", "a\0", "a\0\0", "ab\0"].iter().map(|s| s.to_string()))
            .collect();
        for _ in 0..2 {
            for w in &words {
                assert_eq!(ids(&cached, w), ids(&uncached, w), "{w:?}");
            }
        }
    }

    #[test]
    fn bad_merges_are_errors() {
        let v = [("a".to_string(), 0u32)].into_iter().collect();
        let e = BpeModel::new(v, &[("a".into(), "b".into())], BpeOptions::default()).unwrap_err();
        assert_eq!(e, BpeError::MergeTokenOutOfVocabulary("b".into()));
    }

    #[test]
    fn merge_by_token_id_takes_the_smallest_merged_id_leftmost() {
        // [ab, a, ba]: ab+a and a+ba both make aba. In list order a+ba comes first (HF); by merged id the
        // two tie and the left pair wins (tiktoken).
        let vocab = ["a", "b", "ab", "ba", "aba"];
        let merges = [("a", "b"), ("b", "a"), ("a", "ba"), ("ab", "a")];
        let hf = model(&vocab, &merges, BpeOptions::default());
        let tk = model(&vocab, &merges, BpeOptions { merge_by_token_id: true, ..Default::default() });
        // "ababa": a+b (id 2) merges first, leftmost: [ab, a, b, a] -> [ab, ab, a] -> [ab, aba].
        assert_eq!(ids(&tk, "ababa"), vec![(2, 2), (4, 3)]);
        assert_eq!(ids(&hf, "ababa"), vec![(2, 2), (4, 3)]);
        // "abba" -> [ab, b, a] -> ab+ba? not a token; b+a (3) -> [ab, ba]; same both ways.
        assert_eq!(ids(&tk, "abba"), ids(&hf, "abba"));
        // "aba" by HF's list: a+b (rank 0) -> [ab, a] -> ab+a (rank 3) -> aba. By id the same.
        assert_eq!(ids(&tk, "aba"), vec![(4, 3)]);
        // List order and merged ids disagree: (b, a) is listed before (a, b), but ab has the smaller id.
        let hf2 =
            model(&["a", "b", "ab", "ba", "abab"], &[("b", "a"), ("a", "b"), ("ab", "ab")], BpeOptions::default());
        let tk2 = model(
            &["a", "b", "ab", "ba", "abab"],
            &[("b", "a"), ("a", "b"), ("ab", "ab")],
            BpeOptions { merge_by_token_id: true, ..Default::default() },
        );
        // "abab": HF merges b+a first -> [a, ba, b]; tiktoken a+b (id 2) -> [ab, ab] -> abab.
        assert_eq!(ids(&hf2, "abab"), vec![(0, 1), (3, 2), (1, 1)]);
        assert_eq!(ids(&tk2, "abab"), vec![(4, 4)]);
    }
}
