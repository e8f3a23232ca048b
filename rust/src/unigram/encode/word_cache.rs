//! A per-thread word cache for the Viterbi encoder that gives exactly the ids of the
//! whole-string Viterbi ([`UnigramModel::encode`]), float32 rounding included.
//!
//! # Why a word can be encoded on its own
//!
//! When no matched piece has a `▁` anywhere but at its first char ([`WsSplit::BeforeWs`]), no
//! lattice node spans a position `p` that holds a `▁`: every path of the string passes through
//! `p`. (Unk nodes are one char; byte fallback only respells unk pieces afterwards.) So the
//! string splits into words `[p, q)` at those positions, and for `e` in `(p, q]` every candidate
//! of `V[e]` starts in `[p, e)`: the values, and so the decisions `from[e]`, inside a word depend
//! only on the word and on `B = V[p]`. The backtrack from the end reaches `q`, follows `from`
//! inside the word down to `p`, and goes on before `p`: the string's path is the concatenation of
//! per-word paths, each the path of a Viterbi over the word started from `B`. The mirror case
//! ([`WsSplit::AfterWs`], `▁` only at the end of pieces: treat_whitespace_as_suffix) splits right
//! after each `▁`. Unknown runs are fused over the whole string afterwards, so fusion across a
//! word junction is unchanged.
//!
//! `B` itself is known exactly without the whole-string pass: `V[e] = fl(V[from[e]] + score)`,
//! so `V[p]` is the rounded running sum of the scores along the path found so far.
//!
//! # When the word's path from 0 is its path from `B`
//!
//! The cache stores the word's path from `B = 0` (its "local" pass). From `B ≠ 0` the sums round
//! differently and a near-tie can flip. Let `fl` round with relative error at most `eps` of the
//! rounded result (`eps = 2^-23` for f32, `2^-52` for f64: twice the unit roundoff, which also
//! covers SentencePiece-mode sums computed in f64 then rounded to f32), `K` the chars of the
//! word, `Λ` the largest |candidate value| of the local pass. A candidate value at `e` is the end
//! of a chain of at most `K` roundings (each node covers at least one char).
//!
//! Let `E_i` be the exact (real) best sum from `p` to the start of candidate `i`, plus its score.
//! Max is 1-Lipschitz, so by induction over the chain:
//! - local: `|l_i - E_i| <= K eps Λ = γΛ`, hence `|E_i| <= Λ(1 + γ)`;
//! - from `B`: `|c_i - (B + E_i)| <= γ S` for every computed value, with
//!   `S = (|B| + Λ(1 + γ)) / (1 - γ)` bounding all of them (`|c| <= |B| + |E| + (d - 1) eps S +
//!   eps |c|` with depth `d <= K` gives `|c| <= S`).
//!
//! At a boundary `e` on the local path the local winner `w` beat every other candidate `o` by
//! `m = l_w - l_o > 0` (a tie, `m = 0`, is never trusted: the strict `>` keeps the earliest start
//! and a tie need not survive). From `B`, `c_w - c_o >= m - 2γΛ - 2γS`, which is `> 0`, i.e. the
//! same decision, when
//!
//! `|B| < (m - 2γΛ)(1 - γ) / (2γ) - Λ(1 + γ)`.
//!
//! # SentencePiece's reset
//!
//! On a long string SentencePiece's encoder takes its values relative to a start whose value is past
//! `T = 1e5` ([`super::super::SPM_SCORE_RESET`]), so `V` is not the plain rounded running sum there.
//! At a word's first char nothing after `p` is held yet (no node crosses `p`), so a reset there only
//! sets `B` to 0, which the walk does too. Inside a word a reset would change the values the walk
//! adds up, so an entry is used only when none can happen: from `B` every value is within `γS` of `B`
//! plus its exact local value, below `T` when `|B| < (T - Λ(1 + γ(1 + γ)/(1 - γ)))(1 - γ)` (the
//! budget is the smaller of the two bounds), and never when the local pass itself may have reset.
//!
//! Only the decisions on the word's own path matter (off-path values enter through the bounds
//! above whatever their decisions were), so the word's budget uses the smallest margin on its
//! path, shrunk a little for the f64 evaluation of the formula. At `B = 0` exactly (the first
//! word) the pass from `B` is the local pass itself and the entry is always used. When
//! `|B| >= budget` the word is run from `B` (that is the whole-string computation for that word).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Compat, UnigramModel, Work};

/// How the lattice of a model splits at `▁`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WsSplit {
    /// Some piece has a `▁` that lets nodes cross it: no splitting (the cache is off).
    None,
    /// `▁` only starts pieces: words begin at each `▁`.
    BeforeWs,
    /// `▁` only ends pieces: words end after each `▁`.
    AfterWs,
}

const WS: char = '\u{2581}';

impl WsSplit {
    /// Decides from the matched pieces (the only strings lattice nodes can have).
    pub(super) fn of_pieces<'a>(pieces: impl Iterator<Item = &'a str>) -> WsSplit {
        let (mut before, mut after) = (true, true);
        for p in pieces {
            let n = p.chars().count();
            for (i, ch) in p.chars().enumerate() {
                if ch == WS {
                    before &= i == 0;
                    after &= i + 1 == n;
                }
            }
        }
        match (before, after) {
            (true, _) => WsSplit::BeforeWs,
            (false, true) => WsSplit::AfterWs,
            (false, false) => WsSplit::None,
        }
    }
}

static INSTANCES: AtomicU64 = AtomicU64::new(1);

/// A fresh model identity for the per-thread caches.
pub(super) fn next_instance() -> u64 {
    INSTANCES.fetch_add(1, Ordering::Relaxed)
}

/// Models whose caches a thread keeps (the least recently used is dropped).
const MAX_MODELS_PER_THREAD: usize = 4;
/// Pieces kept in a short-table entry: words of up to 15 bytes (the key is packed in 16 bytes)
/// rarely need more; those that do go to the long-word table.
const MAX_PIECES: usize = 5;

/// The local path of a word and how far from 0 the string's value may be for it to hold. Kept
/// small (32 bytes; 48 with the key) because the lookups are bound by memory latency.
#[derive(Clone, Copy)]
struct Cached {
    /// Use the path only when `|B| < budget` (or `B == 0`); negative: only at `B == 0`.
    budget: f64,
    /// Piece ids (-1 for unk) of `ids[..len]`, in order.
    ids: [i32; MAX_PIECES],
    len: u32,
}

#[inline(always)]
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Hash of a packed key. Keys share their first bytes (`▁`) and mostly zero tails, so both
/// halves go through a full 64-bit finalizer (MurmurHash3's `fmix64`).
#[inline(always)]
fn hash_key(key: u128) -> u64 {
    fmix64((key as u64) ^ fmix64((key >> 64) as u64).rotate_left(17))
}

const EMPTY: u128 = 0;

/// A long word's (budget, piece ids): words the fixed-size entries cannot hold.
type LongEntry = (f64, Box<[i32]>);

/// Words of up to 15 bytes, keyed by their bytes packed in a u128 with the length on top (never
/// 0, the empty slot), in an open-addressing table with linear probing. Hand-made rather than a
/// `HashMap` so that the slots of a whole line's words can be prefetched before they are read:
/// the lookups of rare words are bound by memory latency.
struct WordCache {
    slots: Vec<(u128, Cached)>,
    len: usize,
    /// Words too long for a packed key, or whose path has more than [`MAX_PIECES`] pieces (their
    /// short slot then holds [`NOT_CACHED`]): (budget, piece ids) by the word's bytes.
    long: HashMap<Box<[u8]>, LongEntry, ahash::RandomState>,
}

/// Entries of the long-word table before it is emptied.
const MAX_LONG: usize = 1 << 15;
/// Longer words are always run from `B` (rare, and their budget is small anyway).
const MAX_LONG_WORD_BYTES: usize = 64;

const FIRST_SLOTS: usize = 1 << 12;
/// At most half full: the table doubles up to this size, then is emptied when half full.
const MAX_SLOTS: usize = 1 << 18;

impl Default for WordCache {
    fn default() -> Self {
        WordCache { slots: vec![(EMPTY, NOT_CACHED); FIRST_SLOTS], len: 0, long: HashMap::default() }
    }
}

/// Fills empty slots, and marks a short word whose path (more than [`MAX_PIECES`] pieces) is in
/// the long-word table.
const NOT_CACHED: Cached = Cached { budget: f64::NEG_INFINITY, ids: [0; MAX_PIECES], len: u32::MAX };

impl WordCache {
    #[inline(always)]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// Asks the CPU to start loading the slot of `hash`.
    #[inline(always)]
    fn prefetch(&self, hash: u64) {
        let slot = &self.slots[hash as usize & self.mask()];
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch is only a hint; it reads nothing and cannot fault. The pointer is
        // that of a live slot anyway.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            // a 48-byte slot may straddle two cache lines: ask for the line of its last byte too
            let first = (slot as *const (u128, Cached)).cast::<i8>();
            _mm_prefetch::<_MM_HINT_T0>(first);
            _mm_prefetch::<_MM_HINT_T0>(first.wrapping_add(std::mem::size_of::<(u128, Cached)>() - 1));
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = slot;
    }

    #[inline(always)]
    fn get(&self, key: u128, hash: u64) -> Option<&Cached> {
        let mask = self.mask();
        let mut i = hash as usize & mask;
        loop {
            let (k, v) = &self.slots[i];
            if *k == key {
                return Some(v);
            }
            if *k == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Adds a word to the long-word table (emptying it first when full).
    fn insert_long(&mut self, word: &[u8], budget: f64, ids: &[i32]) {
        if self.long.len() >= MAX_LONG {
            self.long.clear();
        }
        self.long.insert(word.into(), (budget, ids.into()));
    }

    /// Adds a key that is not in the table (growing or emptying it first when half full).
    fn insert(&mut self, key: u128, hash: u64, value: Cached) {
        if 2 * (self.len + 1) > self.slots.len() {
            if self.slots.len() < MAX_SLOTS {
                let doubled = vec![(EMPTY, NOT_CACHED); 2 * self.slots.len()];
                let old = std::mem::replace(&mut self.slots, doubled);
                self.len = 0;
                for (k, v) in old.into_iter().filter(|(k, _)| *k != EMPTY) {
                    self.insert(k, hash_key(k), v);
                }
            } else {
                self.slots.iter_mut().for_each(|s| s.0 = EMPTY);
                self.len = 0;
            }
        }
        let mask = self.mask();
        let mut i = hash as usize & mask;
        while self.slots[i].0 != EMPTY {
            i = (i + 1) & mask;
        }
        self.slots[i] = (key, value);
        self.len += 1;
    }
}

/// The packed key of a word of up to 15 bytes: its bytes, zeros, and its length in the top byte
/// (never 0, the empty slot's key); `None` for longer words.
#[inline]
fn short_key(word: &[u8]) -> Option<u128> {
    if word.len() > 15 {
        return None;
    }
    let mut buf = [0u8; 16];
    buf[..word.len()].copy_from_slice(word);
    buf[15] = word.len() as u8;
    Some(u128::from_le_bytes(buf))
}

/// [`short_key`] of `bytes[p..q]` ([`EMPTY`] when too long), reading 16 bytes at once where the
/// text has them: one load and a mask instead of a copy of variable length.
#[inline(always)]
fn short_key_at(bytes: &[u8], p: usize, q: usize) -> u128 {
    let n = q - p;
    if n > 15 {
        return EMPTY;
    }
    match bytes.get(p..p + 16) {
        Some(window) => {
            let mut buf = [0u8; 16];
            buf.copy_from_slice(window);
            (u128::from_le_bytes(buf) & ((1u128 << (8 * n)) - 1)) | ((n as u128) << 120)
        }
        None => short_key(&bytes[p..q]).unwrap_or(EMPTY),
    }
}

thread_local! {
    static CACHES: RefCell<Vec<(u64, WordCache)>> = const { RefCell::new(Vec::new()) };
}

/// Twice the unit roundoff of the model's sums (see the module comment).
fn eps(c: Compat) -> f64 {
    match c {
        Compat::Spm => f64::powi(2.0, -23),
        Compat::Hf => f64::powi(2.0, -52),
    }
}

/// The largest `|B|` for which a word's local path is its path from `B` (module comment):
/// `chars` = K, `largest` = Λ, `margin` = the smallest winning margin on the path.
pub(super) fn budget(chars: usize, largest: f64, margin: f64, eps: f64) -> f64 {
    let gamma = chars as f64 * eps;
    if chars == 0 || gamma >= 0.25 || !largest.is_finite() || margin.is_nan() {
        return -1.0;
    }
    if margin == f64::INFINITY {
        return f64::INFINITY; // one candidate at every boundary of the path: nothing can flip
    }
    // 1e-9: room for the rounding of this f64 formula and of `m` itself.
    let m = margin * (1.0 - 1e-9);
    let b = (m - 2.0 * gamma * largest) * (1.0 - gamma) / (2.0 * gamma) - largest * (1.0 + gamma);
    if b > 0.0 {
        b * (1.0 - 1e-9)
    } else {
        -1.0
    }
}

/// A budget that is never met, not even at `B = 0`: the word is always run from its `B`.
const NEVER: f64 = f64::NEG_INFINITY;

/// The largest `|B|` from which no start inside the word reaches SentencePiece's reset threshold
/// ([`super::super::SPM_SCORE_RESET`]), so that the word's values are the rounded running sums the
/// cached walk computes; [`NEVER`] when the local pass (from 0) itself may have reset. From `B`, every
/// value is within `γS` of `B` plus its exact local value (module comment), so it stays below the
/// threshold when `|B| + Λ + γS < T`, with `S = (|B| + Λ(1 + γ)) / (1 - γ)`; solved for `|B|`.
pub(super) fn reset_room(chars: usize, largest: f64, eps: f64) -> f64 {
    let t = super::super::SPM_SCORE_RESET;
    let gamma = chars as f64 * eps;
    if chars == 0 || gamma >= 0.25 || !largest.is_finite() || largest * (1.0 + gamma) >= t {
        return NEVER;
    }
    // 1.0 and 1e-9: room for the rounding of this f64 formula.
    let room = (t - largest * (1.0 + gamma * (1.0 + gamma) / (1.0 - gamma))) * (1.0 - gamma) - 1.0;
    if room > 0.0 {
        room * (1.0 - 1e-9)
    } else {
        -1.0
    }
}

/// Calls `f(start, end)` for each word of `text` (split as `split` says; never empty).
#[inline]
fn for_each_word(text: &str, split: WsSplit, mut f: impl FnMut(usize, usize)) {
    let bytes = text.as_bytes();
    let mut p = 0;
    let mut i = 0;
    // 0xE2 (the lead byte of `▁`) never occurs inside a UTF-8 char
    while let Some(k) = crate::spm::find_byte(bytes, i, 0xE2) {
        if !bytes[k + 1..].starts_with(&[0x96, 0x81]) {
            i = k + 1;
            continue;
        }
        if split == WsSplit::AfterWs {
            f(p, k + 3);
            p = k + 3;
        } else if k > p {
            f(p, k);
            p = k;
        }
        i = k + 3;
    }
    if p < bytes.len() {
        f(p, bytes.len());
    }
}

impl UnigramModel {
    /// [`UnigramModel::encode_ids_into`] with the cache: words from the cache where their budget
    /// allows, otherwise run from the exact `B`; unknowns fused over the whole string.
    pub(super) fn encode_ids_cached(&self, text: &str, w: &mut Work, out: &mut Vec<u32>) -> Result<(), String> {
        let start = out.len();
        let mut no_spans = Vec::new();
        if self.cached_pass::<false>(text, w, out, &mut no_spans) {
            return Ok(());
        }
        // An unknown piece: they are fused over the whole string, which needs the pieces' byte
        // spans. Rare enough to run the pass again recording them.
        out.truncate(start);
        let mut sentence = std::mem::take(&mut w.sentence);
        sentence.clear();
        self.cached_pass::<true>(text, w, out, &mut sentence);
        let r = self.fused_ids(text, &sentence, out);
        w.sentence = sentence;
        r
    }

    /// The ids of [`UnigramModel::finish`] for raw pieces `(id or -1 for unk, byte start, byte end)`,
    /// appended to `out` without its intermediate lists: on 0.3 MB of Chinese with a few unknown chars
    /// those were three vectors of 24-byte entries per call (11 MB), and faulting their pages in half of
    /// the call's page faults (perf, 2026-12-06). Runs of unknown pieces are fused as `finish` fuses them.
    fn fused_ids(&self, text: &str, raw: &[(i32, u32, u32)], out: &mut Vec<u32>) -> Result<(), String> {
        let unk = self.unk_id.map_or(-1, |u| u as i32);
        // The unknown run being fused: (byte start, byte end).
        let mut run: Option<(usize, usize)> = None;
        for &(id, s, e) in raw {
            let (s, e) = (s as usize, e as usize);
            if id < 0 || id == unk {
                match &mut run {
                    Some(r) if r.1 == s => r.1 = e,
                    _ => {
                        if let Some((rs, re)) = run.take() {
                            self.push_unknown(text, rs, re, out)?;
                        }
                        run = Some((s, e));
                    }
                }
                continue;
            }
            if let Some((rs, re)) = run.take() {
                self.push_unknown(text, rs, re, out)?;
            }
            out.push(id as u32);
        }
        if let Some((rs, re)) = run {
            self.push_unknown(text, rs, re, out)?;
        }
        Ok(())
    }

    /// One pass over the words of `text`. Without `SPANS`, appends the ids to `ids` and returns
    /// false (leaving `ids` part-written) at the first unknown piece; with `SPANS`, appends every
    /// raw piece (id or -1 for unk, byte start, byte end) to `spans` and returns true.
    #[inline(always)]
    fn cached_pass<const SPANS: bool>(
        &self,
        text: &str,
        w: &mut Work,
        ids: &mut Vec<u32>,
        spans: &mut Vec<(i32, u32, u32)>,
    ) -> bool {
        let bytes = text.as_bytes();
        let c = self.compat;
        let unk = self.unk_id.map_or(-1, |u| u as i32);
        CACHES.with(|cell| {
            let mut caches = cell.borrow_mut();
            let cache = Self::cache_of(&mut caches, self.instance);
            // the line's words with their packed keys (0: too long to pack) and hashes; all their
            // slots are prefetched before the first is read
            let words = &mut w.words;
            words.clear();
            for_each_word(text, self.ws_split, |p, q| {
                let key = short_key_at(bytes, p, q);
                words.push((p as u32, q as u32, key, hash_key(key)));
            });
            for &(_, _, key, hash) in words.iter() {
                if key != EMPTY {
                    cache.prefetch(hash);
                }
            }
            // The string's Viterbi value at the current word boundary, exactly as the whole-string
            // pass has it.
            let mut b = 0.0f64;
            let mut path = std::mem::take(&mut w.path);
            let mut complete = true;
            for k in 0..w.words.len() {
                let (p, q, key, hash) = w.words[k];
                let (p, q) = (p as usize, q as usize);
                let word = &bytes[p..q];
                // A reset at the word's first char ([`super::super::SPM_SCORE_RESET`]): no value after
                // `p` is held yet (no node crosses `p`), so only `b` itself goes to 0.
                if c.resets_at(b) {
                    b = 0.0;
                }
                // (budget, ids) of the word's local path: the short table's entry (one probe; a
                // miss computes and inserts it), or the long table's
                let mut short = NOT_CACHED;
                if key != EMPTY {
                    short = match cache.get(key, hash) {
                        Some(e) => *e,
                        None => {
                            let budget = self.local_path(word, w, &mut path);
                            let e = if path.len() <= MAX_PIECES {
                                let mut fixed = [0i32; MAX_PIECES];
                                fixed[..path.len()].copy_from_slice(&path);
                                Cached { budget, ids: fixed, len: path.len() as u32 }
                            } else {
                                cache.insert_long(word, budget, &path);
                                NOT_CACHED
                            };
                            cache.insert(key, hash, e);
                            e
                        }
                    };
                }
                let found: Option<(f64, &[i32])> = if short.len as usize <= MAX_PIECES {
                    Some((short.budget, &short.ids[..short.len as usize]))
                } else if word.len() <= MAX_LONG_WORD_BYTES {
                    if !cache.long.contains_key(word) {
                        let budget = self.local_path(word, w, &mut path);
                        cache.insert_long(word, budget, &path);
                    }
                    cache.long.get(word).map(|(budget, ids)| (*budget, &ids[..]))
                } else {
                    None
                };
                if let Some((budget, cached)) = found {
                    if budget != NEVER && (b == 0.0 || b.abs() < budget) {
                        let mut at = p;
                        for &id in cached {
                            if SPANS {
                                let (s, len) = if id >= 0 {
                                    (self.trie_score[id as usize], self.piece_len[id as usize] as usize)
                                } else {
                                    (self.unk_score, super::utf8_width(bytes[at]))
                                };
                                b = c.r(b + s);
                                spans.push((id, at as u32, (at + len) as u32));
                                at += len;
                            } else {
                                if id < 0 || id == unk {
                                    complete = false;
                                    break;
                                }
                                b = c.r(b + self.trie_score[id as usize]);
                                ids.push(id as u32);
                            }
                        }
                        if !complete {
                            break;
                        }
                        continue;
                    }
                }
                // the whole-string computation for this word
                self.forward::<false>(word, b, w);
                b = w.score[word.len()];
                let first = if SPANS { spans.len() } else { ids.len() };
                let mut end = word.len();
                while end > 0 {
                    let start = w.from[end];
                    let id = w.piece[end] as i32;
                    if SPANS {
                        spans.push((id, (p + start) as u32, (p + end) as u32));
                    } else if id < 0 || id == unk {
                        complete = false;
                        break;
                    } else {
                        ids.push(id as u32);
                    }
                    end = start;
                }
                if !complete {
                    break;
                }
                if SPANS {
                    spans[first..].reverse();
                } else {
                    ids[first..].reverse();
                }
            }
            w.path = path;
            complete
        })
    }

    /// This thread's cache for the model `instance`, made (and the least recently used one
    /// dropped) when needed. The most recently used is kept last: a model's cache stays while it
    /// is in use, whatever other models come and go.
    fn cache_of(caches: &mut Vec<(u64, WordCache)>, instance: u64) -> &mut WordCache {
        let last = caches.len().wrapping_sub(1);
        let slot = match caches.iter().rposition(|(id, _)| *id == instance) {
            Some(s) if s == last => s,
            Some(s) => {
                caches[s..].rotate_left(1);
                last
            }
            None => {
                if caches.len() >= MAX_MODELS_PER_THREAD {
                    caches.remove(0);
                }
                caches.push((instance, WordCache::default()));
                caches.len() - 1
            }
        };
        &mut caches[slot].1
    }

    /// The word's Viterbi path from 0 (piece ids into `ids`, emptied first) and its budget.
    fn local_path(&self, word: &[u8], w: &mut Work, ids: &mut Vec<i32>) -> f64 {
        let (chars, largest) = self.forward::<true>(word, 0.0, w);
        let mut margin = f64::INFINITY;
        ids.clear();
        let mut end = word.len();
        while end > 0 {
            margin = margin.min(w.score[end] - w.second[end]);
            ids.push(w.piece[end] as i32);
            end = w.from[end];
        }
        ids.reverse();
        let b = budget(chars, largest, margin, eps(self.compat));
        match self.compat {
            Compat::Spm => b.min(reset_room(chars, largest, eps(self.compat))),
            Compat::Hf => b,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::PieceKind;
    use super::*;

    #[test]
    fn split_kinds() {
        assert_eq!(WsSplit::of_pieces(["▁a", "b", "▁"].into_iter()), WsSplit::BeforeWs);
        assert_eq!(WsSplit::of_pieces(["a▁", "b", "▁"].into_iter()), WsSplit::AfterWs);
        assert_eq!(WsSplit::of_pieces(["a▁b", "b"].into_iter()), WsSplit::None);
        assert_eq!(WsSplit::of_pieces(["▁a", "b▁"].into_iter()), WsSplit::None);
    }

    #[test]
    fn words_split_at_ws() {
        let words = |s: &str, k| {
            let mut v = Vec::new();
            for_each_word(s, k, |p, q| v.push(s[p..q].to_string()));
            v
        };
        assert_eq!(words("▁ab▁▁c", WsSplit::BeforeWs), ["▁ab", "▁", "▁c"]);
        assert_eq!(words("x▁é", WsSplit::BeforeWs), ["x", "▁é"]);
        assert_eq!(words("ab▁▁c▁", WsSplit::AfterWs), ["ab▁", "▁", "c▁"]);
        assert_eq!(words("", WsSplit::BeforeWs), Vec::<String>::new());
    }

    /// "▁xy" has a near-tie: `x`+`y` beats `xy` by one float32 step of the local sum, which
    /// rounds away once the string's value is large. A cache that ignores the guard would
    /// return the local path; the guarded cache must return the whole-string path.
    fn near_tie_model() -> UnigramModel {
        // "▁xy" alone: ▁ -1, x -3 -> -4, then y -2 -> -6 against xy = -1 + (one float32 step
        // below -5) = -6.0000005: x + y wins. From B = -1000 both round to -1006 and the tie goes
        // to the earlier start, xy.
        let xy = f32::from_bits((-5.0f32).to_bits() + 1);
        let pieces = vec![
            ("<unk>".to_string(), 0.0),
            ("▁".to_string(), -1.0),
            ("x".to_string(), -3.0),
            ("y".to_string(), -2.0),
            ("xy".to_string(), xy as f64),
            ("▁q".to_string(), -7.5),
        ];
        let mut kinds = vec![PieceKind::Normal; pieces.len()];
        kinds[0] = PieceKind::Unknown;
        UnigramModel::new(pieces, Some(kinds), Some(0), false, Compat::Spm).unwrap()
    }

    fn cached_ids(m: &UnigramModel, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        m.encode_ids_into(text, &mut out).unwrap();
        out
    }

    /// Texts with unknown chars (runs of them, at the ends, next to known pieces) through the cached
    /// path, whose unknowns are fused without `finish`'s lists, against `encode` (which uses `finish`),
    /// with and without byte fallback, and with byte pieces for only some bytes.
    #[test]
    fn unknown_runs_fuse_as_finish_fuses_them() {
        let mut pieces: Vec<(String, f64)> = vec![
            ("<unk>".into(), 0.0),
            ("▁a".into(), -1.0),
            ("a".into(), -1.5),
            ("b".into(), -2.0),
            ("▁".into(), -3.0),
        ];
        let mut kinds = vec![PieceKind::Normal; pieces.len()];
        kinds[0] = PieceKind::Unknown;
        // Byte pieces for 'z' and the bytes of 'é' (C3 A9), none for '中'.
        for b in [b'z', 0xc3, 0xa9] {
            pieces.push((format!("<0x{b:02X}>"), 0.0));
            kinds.push(PieceKind::Byte);
        }
        let mut rng = crate::unigram::lattice::Rng::new(11);
        let chars = ["a", "b", "z", "é", "中", "▁"];
        let mut texts: Vec<String> = vec!["z".into(), "zz▁a".into(), "▁a中中b".into(), "é中".into()];
        for _ in 0..300 {
            let n = 1 + (rng.next_u64() % 12) as usize;
            let mut t = String::from("▁");
            for _ in 0..n {
                t.push_str(chars[(rng.next_u64() % chars.len() as u64) as usize]);
            }
            texts.push(t);
        }
        for byte_fallback in [false, true] {
            let m =
                UnigramModel::new(pieces.clone(), Some(kinds.clone()), Some(0), byte_fallback, Compat::Spm).unwrap();
            assert!(m.word_cache_active());
            let mut fell_back = 0;
            for t in &texts {
                let want: Vec<u32> = m.encode(t).unwrap().into_iter().map(|p| p.0).collect();
                assert_eq!(cached_ids(&m, t), want, "{t:?}, byte fallback {byte_fallback}");
                fell_back += usize::from(want.iter().any(|&i| i >= 5));
            }
            assert_eq!(fell_back > 0, byte_fallback, "byte pieces used only with byte fallback");
        }
    }

    #[test]
    fn guarded_cache_equals_whole_string_viterbi() {
        let m = near_tie_model();
        assert!(m.word_cache_active());
        let whole = |t: &str| m.encode(t).unwrap().into_iter().map(|p| p.0).collect::<Vec<u32>>();
        // alone, x + y wins
        assert_eq!(whole("▁xy"), vec![1, 2, 3]);
        let mut flipped = 0;
        for n in [0usize, 1, 10, 100, 1000, 5000, 20000] {
            let text = format!("{}▁xy▁xy", "▁q".repeat(n));
            let got = cached_ids(&m, &text);
            let want = whole(&text);
            assert_eq!(got, want, "{n} fillers");
            // the naive cache (local path of every word) would give this:
            let mut naive = vec![5u32; n];
            naive.extend([1, 2, 3, 1, 2, 3]);
            if naive != want {
                flipped += 1;
            }
        }
        assert!(flipped > 0, "the test model has no context-dependent word: it tests nothing");
    }

    #[test]
    fn cache_equals_whole_string_on_random_text() {
        // Random pieces whose scores are the float32 sum of their chars' scores nudged by a few
        // ulps: near ties everywhere, which flip at large |B| (checked against the naive cache).
        let mut rng = crate::unigram::lattice::Rng::new(5);
        let alpha = ['a', 'b', 'c', 'd', '▁'];
        let mut score_of = std::collections::HashMap::new();
        for ch in alpha {
            score_of.insert(ch.to_string(), -(1.0 + 6.0 * rng.next_f64()) as f32);
        }
        for _ in 0..200 {
            let len = 2 + (rng.next_u64() % 4) as usize;
            let mut s = String::new();
            for i in 0..len {
                let ch = alpha[(rng.next_u64() % alpha.len() as u64) as usize];
                if ch != '▁' || i == 0 {
                    s.push(ch);
                }
            }
            let sum = s.chars().fold(0.0f32, |acc, ch| acc + score_of[&ch.to_string()]);
            let nudge = (rng.next_u64() % 5) as i32 - 2;
            score_of.entry(s).or_insert(f32::from_bits((sum.to_bits() as i32 + nudge) as u32));
        }
        let mut pieces = vec![("<unk>".to_string(), 0.0)];
        let mut keys: Vec<&String> = score_of.keys().collect();
        keys.sort();
        pieces.extend(keys.into_iter().map(|k| (k.clone(), score_of[k] as f64)));
        let mut kinds = vec![PieceKind::Normal; pieces.len()];
        kinds[0] = PieceKind::Unknown;
        let m = UnigramModel::new(pieces, Some(kinds), Some(0), false, Compat::Spm).unwrap();
        assert!(m.word_cache_active());
        let mut naive_differs = 0;
        for _ in 0..400 {
            let len = (rng.next_u64() % 3000) as usize;
            let text: String =
                (0..len).map(|_| ['a', 'b', 'c', 'd', '▁', 'z'][(rng.next_u64() % 6) as usize]).collect();
            let want: Vec<u32> = m.encode(&text).unwrap().into_iter().map(|p| p.0).collect();
            assert_eq!(cached_ids(&m, &text), want, "{text:?}");
            let mut naive = Vec::new();
            for_each_word(&text, WsSplit::BeforeWs, |p, q| {
                naive.extend(m.encode(&text[p..q]).unwrap().into_iter().map(|x| x.0));
            });
            if naive != want {
                naive_differs += 1;
            }
        }
        assert!(naive_differs > 0, "no near tie flipped: the test exercises nothing");
    }

    #[test]
    fn key_read_in_place_equals_the_copied_key() {
        let text = "▁ab▁é▁exactlyfifteen▁sixteen_bytes_▁z".as_bytes();
        for p in 0..text.len() {
            for q in p..=text.len() {
                assert_eq!(short_key_at(text, p, q), short_key(&text[p..q]).unwrap_or(EMPTY), "{p}..{q}");
            }
        }
    }

    #[test]
    fn table_grows_then_empties_and_never_confuses_keys() {
        let mut t = WordCache::default();
        let key = |i: u64| short_key(format!("▁w{i}").as_bytes()).unwrap();
        let value = |i: u64| Cached { budget: i as f64, ids: [i as i32; MAX_PIECES], len: 1 };
        let n = MAX_SLOTS as u64; // twice what fits: the table empties once on the way
        for i in 0..n {
            let k = key(i);
            assert!(t.get(k, hash_key(k)).is_none());
            t.insert(k, hash_key(k), value(i));
            assert_eq!(t.get(k, hash_key(k)).map(|e| e.budget), Some(i as f64));
        }
        assert!(t.slots.len() == MAX_SLOTS && t.len <= MAX_SLOTS / 2);
        let mut found = 0;
        for i in 0..n {
            let k = key(i);
            if let Some(e) = t.get(k, hash_key(k)) {
                assert_eq!(e.ids[0], i as i32);
                found += 1;
            }
        }
        assert_eq!(found, t.len);
    }

    #[test]
    fn a_model_in_use_keeps_its_cache_while_others_come_and_go() {
        let kept = near_tie_model();
        cached_ids(&kept, "▁xy");
        let slots = || CACHES.with(|c| c.borrow().iter().map(|(id, _)| *id).collect::<Vec<u64>>());
        for _ in 0..2 * MAX_MODELS_PER_THREAD {
            let other = near_tie_model();
            cached_ids(&other, "▁xy");
            cached_ids(&kept, "▁xy");
            assert!(slots().contains(&kept.instance) && slots().contains(&other.instance));
        }
        assert!(slots().len() <= MAX_MODELS_PER_THREAD);
    }

    #[test]
    fn interior_ws_disables_the_cache() {
        let pieces = vec![("<unk>".to_string(), 0.0), ("a▁b".to_string(), -1.0), ("a".to_string(), -2.0)];
        let m = UnigramModel::new(pieces, None, Some(0), false, Compat::Spm).unwrap();
        assert!(!m.word_cache_active());
        assert_eq!(cached_ids(&m, "a▁b"), vec![1]);
    }

    #[test]
    fn budget_rejects_ties_and_grows_with_the_margin() {
        let e = eps(Compat::Spm);
        assert!(budget(5, 20.0, 0.0, e) < 0.0);
        let small = budget(5, 20.0, 1e-3, e);
        let large = budget(5, 20.0, 1.0, e);
        assert!(0.0 < small && small < large);
        assert_eq!(budget(5, 20.0, f64::INFINITY, e), f64::INFINITY);
    }

    #[test]
    fn reset_room_keeps_every_value_below_the_threshold() {
        let (e, t) = (eps(Compat::Spm), super::super::super::SPM_SCORE_RESET);
        let room = reset_room(10, 500.0, e);
        // |B| + Λ plus the rounding slack stays under the threshold, and little room is wasted
        assert!(room > t - 500.0 - 100.0 && room + 500.0 < t);
        assert_eq!(reset_room(10, t, e), NEVER); // the local pass itself may have reset
        assert!(reset_room(10, t - 1.0, e) < 0.0); // only from B = 0
    }
}
