//! Encoding with a SentencePiece BPE model, as sentencepiece 0.2.3's `bpe::Model::Encode` does it.
//!
//! - The normalized text starts as characters; user-defined pieces are matched whole (longest)
//!   and never merged with anything.
//! - Any adjacent pair whose concatenation is a piece (normal, user-defined or unused) is a
//!   candidate with that piece's score; the best score merges first, ties go to the leftmost.
//! - Remaining symbols that are not pieces are `<unk>` (consecutive unknowns fused into one, as
//!   SentencePiece's processor does), or their UTF-8 bytes as `<0xXX>` pieces with byte fallback.
//!
//! Performance notes
//! - In models trained with `split_by_whitespace` (the default) no piece holds a `▁` right after
//!   another character, except runs of `▁` alone when `allow_whitespace_only_pieces` is set (Llama
//!   2, Mistral). No merge can then cross the place where a `▁` follows another character, so a
//!   sentence is encoded segment by segment (a segment is a run of `▁` and the word after it) and
//!   segments are cached per thread. With `treat_whitespace_as_suffix` the mirror rule holds (a
//!   segment ends at the last `▁` of a run). Models where some piece breaks both rules (trained
//!   without `split_by_whitespace`) are encoded whole.
//! - The same argument, for any two characters: every symbol BPE ever holds is a piece (or one
//!   character), so a merge across the place between characters `a` and `b` makes a piece that
//!   holds the bigram `ab`. Where no piece holds it, the two sides are encoded independently, and
//!   the global merge order restricted to one side is that side's own order (best score, then
//!   leftmost). Segments longer than `CUT_MIN` bytes (CJK lines have no `▁` to cut at) are cut at
//!   every such bigram (one probe of a flat set per character) and the parts go through the cache:
//!   a CJK line becomes word-like parts that repeat, where it was one uncached BPE run.
//! - Merges run over piece ids, not strings: a table maps each (left id, right id) whose
//!   concatenation is a piece to that piece, built once per model from every split of every piece
//!   into two pieces. Looking up a pair of `u32` costs a multiply; looking up the concatenated
//!   string (as sentencepiece and our first version did) hashes and compares bytes, which was half
//!   the time on CJK lines (perf). `encode_strings` keeps the string version as the oracle of the
//!   unit tests.
//! - The pair table is built on the first encode (`OnceLock`), so loading a model costs what
//!   sentencepiece's load costs (the pieces and their map); bench_load.py times both. The pieces
//!   are the pipeline's own token table (shared, not copied) and their map is a [`PieceIndex`] over
//!   it, shared with the pipeline's `token_to_id` when no string repeats (see `index.rs`).
//! - Batches run on rayon; the cache is thread-local (`RefCell`) so lookups take no lock.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

use std::sync::Arc;

use ahash::{AHashMap, AHashSet};

use super::flat::{CharTable, KeySet, PairMap};
use crate::piece_index::PieceIndex;
use crate::encoding::TokenTable;
use super::{PieceType, SpmNormalizer, WS};

/// A SentencePiece BPE model ready to encode.
#[derive(Clone, Debug)]
pub struct SpmBpeModel {
    /// The pieces in id order (shared with the pipeline that owns this model).
    table: Arc<TokenTable>,
    scores: Vec<f32>,
    types: Vec<PieceType>,
    /// Piece string -> id; a hit whose type is not [`mergeable`] is no piece to BPE.
    index: PieceIndex,
    user_defined: Vec<String>,
    unk_id: u32,
    byte_ids: Option<[u32; 256]>,
    pub normalizer: SpmNormalizer,
    split: Split,
    /// Built on first encode: loading a model does no more than sentencepiece's load does.
    merges: std::sync::OnceLock<IdMerges>,
    /// Bytes encoded by the string path while `merges` is not built (see [`WARMUP_BYTES`]).
    warmup: Warmup,
    generation: u64,
}

/// Until this many bytes of normalized text have been encoded, encode with [`SpmBpeModel::encode_strings`]
/// (sentencepiece's own way: a string lookup per candidate pair) instead of building the pair table.
/// The table costs about 10 ms for 32k pieces (bench_load.py, "load + first encode"), which
/// encoding a short text or a few lines never pays back; the string path runs at roughly 10 MB/s
/// on English, so 64 KB of it costs less than the table would, and every larger workload builds
/// the table at once. Both paths give the same ids (the unit tests hold them equal).
const WARMUP_BYTES: usize = 1 << 16;

/// A byte counter that clones as a fresh count (a clone is a new model that has not warmed up).
#[derive(Debug, Default)]
struct Warmup(std::sync::atomic::AtomicUsize);

impl Clone for Warmup {
    fn clone(&self) -> Self {
        Warmup::default()
    }
}

/// BPE merges over piece ids (see the performance notes).
#[derive(Clone, Debug)]
struct IdMerges {
    /// Id of each one-character piece, or the pseudo id of a character that occurs only inside
    /// pieces; `NO_PIECE` for characters no piece holds.
    chars: CharTable,
    /// (left, right) -> the piece their concatenation spells.
    pairs: PairTable,
    /// The character bigrams that occur inside some piece: no merge can join two symbols across
    /// any other bigram (see the performance notes).
    bigrams: Bigrams,
    /// Score and whether the piece may be emitted, by id.
    scores: Vec<f32>,
    emit: Vec<bool>,
}

const NO_PIECE: u32 = u32::MAX;

/// The piece types BPE merges into (and the only ones its string map holds): sentencepiece's
/// `pieces_` map; control, byte and unknown pieces are matched otherwise or never.
#[inline]
fn mergeable(t: PieceType) -> bool {
    matches!(t, PieceType::Normal | PieceType::UserDefined | PieceType::Unused)
}

/// (left id, right id) -> merged id. The table is probed once per candidate pair, at random
/// places, so its size and layout are what cost (perf: cache misses on a hash map's control
/// groups and buckets were most of the time on CJK lines): with fewer than 65,535 ids a pair packs
/// into a `u32` key of a flat open-addressing table (`flat::PairMap`, ~36k pairs of a 32k model in
/// 512 KB, one cache line per probe).
#[derive(Clone, Debug)]
enum PairTable {
    Small(PairMap),
    Large(AHashMap<u64, u32>),
}

impl PairTable {
    fn new(ids: usize) -> Self {
        if ids < 0xffff {
            PairTable::Small(PairMap::with_capacity(1 << 10))
        } else {
            PairTable::Large(AHashMap::new())
        }
    }

    #[inline]
    fn get(&self, l: u32, r: u32) -> Option<u32> {
        match self {
            PairTable::Small(m) => m.get(l << 16 | r),
            PairTable::Large(m) => m.get(&((l as u64) << 32 | r as u64)).copied(),
        }
    }

    fn insert(&mut self, l: u32, r: u32, merged: u32) {
        match self {
            PairTable::Small(m) => {
                m.insert(l << 16 | r, merged);
            }
            PairTable::Large(m) => {
                m.insert((l as u64) << 32 | r as u64, merged);
            }
        }
    }
}

/// The set of character bigrams inside pieces: basic-plane pairs in a flat set, the rest hashed.
#[derive(Clone, Debug)]
struct Bigrams {
    bmp: KeySet,
    other: AHashSet<u64>,
}

impl Bigrams {
    #[inline]
    fn key(a: char, b: char) -> Option<u32> {
        let (a, b) = (a as u32, b as u32);
        let k = a << 16 | b;
        ((a | b) < 0x1_0000 && k != u32::MAX).then_some(k)
    }

    fn insert(&mut self, a: char, b: char) {
        match Self::key(a, b) {
            Some(k) => {
                self.bmp.insert(k);
            }
            None => {
                self.other.insert((a as u64) << 32 | b as u64);
            }
        }
    }

    #[inline]
    fn contains(&self, a: char, b: char) -> bool {
        match Self::key(a, b) {
            Some(k) => self.bmp.contains(k),
            None => self.other.contains(&((a as u64) << 32 | b as u64)),
        }
    }
}

impl IdMerges {
    /// The table of a model. A character that occurs inside a piece without being a piece itself
    /// (possible in hand-made or converted models) gets an id past the last piece, so the merges
    /// that start from it are in the table too; such an id is never emitted.
    fn build(model: &SpmBpeModel) -> IdMerges {
        let pieces = || {
            model.table.strings.iter().zip(&model.types).enumerate().filter(|(_, (_, t))| mergeable(**t)).map(|(i, (p, _))| (i, p.as_str()))
        };
        let mut chars = CharTable::new(NO_PIECE);
        for (i, p) in pieces() {
            let mut cs = p.chars();
            if let (Some(c), None) = (cs.next(), cs.next()) {
                chars.insert(c, i as u32);
            }
        }
        let mut next_pseudo = model.types.len() as u32;
        let mut bigrams = Bigrams { bmp: KeySet::with_capacity(1 << 10), other: AHashSet::new() };
        // in id order, so that pseudo ids do not depend on the map's iteration order
        for (_, p) in pieces() {
            let mut prev: Option<char> = None;
            for c in p.chars() {
                if chars.get(c) == NO_PIECE {
                    chars.insert(c, next_pseudo);
                    next_pseudo += 1;
                }
                if let Some(a) = prev {
                    bigrams.insert(a, c);
                }
                prev = Some(c);
            }
        }
        let mut m = IdMerges {
            chars,
            pairs: PairTable::Small(PairMap::with_capacity(0)),
            bigrams,
            scores: model.scores.clone(),
            emit: model.types.iter().map(|t| *t != PieceType::Unused).collect(),
        };
        m.emit.resize(next_pseudo as usize, false);
        let symbol_id = |m: &IdMerges, t: &str| -> Option<u32> {
            model.piece_id(t).or_else(|| {
                let mut cs = t.chars();
                match (cs.next(), cs.next()) {
                    (Some(c), None) => Some(m.char_id(c)),
                    _ => None,
                }
            })
        };
        let mut pairs = PairTable::new(next_pseudo as usize);
        // in id order (the pieces lie in memory in that order; the map's order jumps around), and
        // a one-character side by its char id, without hashing a string
        for (i, p) in pieces() {
            let mut chars = p.char_indices();
            let Some((_, first)) = chars.next() else { continue };
            for (k, c) in chars {
                let l = if k == first.len_utf8() { Some(m.char_id(first)) } else { symbol_id(&m, &p[..k]) };
                let Some(l) = l else { continue };
                let right = &p[k..];
                let r = if right.len() == c.len_utf8() { Some(m.char_id(c)) } else { symbol_id(&m, right) };
                if let Some(r) = r {
                    pairs.insert(l, r, i as u32);
                }
            }
        }
        m.pairs = pairs;
        m
    }

    #[inline]
    fn char_id(&self, c: char) -> u32 {
        self.chars.get(c)
    }
}

/// One symbol of the id-based BPE: a piece (or an unknown character) over `len` bytes.
#[derive(Clone, Copy)]
struct Sym {
    id: u32,
    start: u32,
    len: u32,
    prev: u32,
    next: u32,
    frozen: bool,
}

/// A candidate merge of the id-based BPE: best score first, then leftmost.
#[derive(PartialEq)]
struct IdCand {
    score: f32,
    left: u32,
    len: u32,
    merged: u32,
}
impl Eq for IdCand {}
impl PartialOrd for IdCand {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for IdCand {
    fn cmp(&self, o: &Self) -> Ordering {
        self.score.total_cmp(&o.score).then_with(|| o.left.cmp(&self.left))
    }
}

/// Where a normalized sentence may be cut into independently encoded segments (see the
/// performance notes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Split {
    /// Before a `▁` that follows another character: no piece holds `x▁` (x not `▁`).
    BeforeSpaceRun,
    /// Before a character that follows a `▁`: no piece holds `▁x` (x not `▁`).
    AfterSpaceRun,
    /// Some pieces break both rules: the sentence is encoded whole.
    Whole,
}

impl Split {
    /// The rule every piece that BPE can produce or match (normal, user-defined, unused) obeys.
    fn of<'a>(pieces: impl Iterator<Item = &'a str> + Clone) -> Split {
        // `a` then `b` adjacent inside some piece, for (a, b) = (other, ▁) or (▁, other)
        let has_pair = |space_second: bool| {
            pieces.clone().any(|p| {
                let mut prev: Option<char> = None;
                p.chars().any(|c| {
                    let hit = matches!(prev, Some(q) if if space_second { q != WS && c == WS } else { q == WS && c != WS });
                    prev = Some(c);
                    hit
                })
            })
        };
        if !has_pair(true) {
            Split::BeforeSpaceRun
        } else if !has_pair(false) {
            Split::AfterSpaceRun
        } else {
            Split::Whole
        }
    }
}

static GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

thread_local! {
    static CACHE: RefCell<SegmentCache> = RefCell::new(SegmentCache::default());
}

thread_local! {
    /// The id-based BPE's symbols and heap, reused across segments.
    static SCRATCH: RefCell<(Vec<Sym>, BinaryHeap<IdCand>)> = RefCell::new((Vec::new(), BinaryHeap::new()));
}

/// This thread's cache of encoded segments, for one model at a time (`generation`).
#[derive(Default)]
struct SegmentCache {
    generation: u64,
    map: AHashMap<String, Vec<u32>>,
    /// Direct-mapped, in front of `map`: segments of at most 15 bytes keyed by their bytes packed
    /// in a `u128` (length in the top byte), with up to 3 ids inline. Most segments of English
    /// words and of cut CJK lines are that short, and one 32-byte slot stays in cache where the
    /// map's probe hashed the string, missed the cache on its buckets and compared bytes
    /// (perf: `memcmp` and the probe were a third of CJK encoding after the bigram cuts).
    front: Vec<(u128, [u32; 3], u32)>,
}

const FRONT_SLOTS: usize = 1 << 15;

#[inline]
fn front_key(word: &[u8]) -> Option<u128> {
    if word.is_empty() || word.len() > 15 {
        return None;
    }
    let mut k = (word.len() as u128) << 120;
    for (i, &b) in word.iter().enumerate() {
        k |= u128::from(b) << (8 * i);
    }
    Some(k)
}

#[inline]
fn front_slot(k: u128) -> usize {
    let h = (k as u64) ^ ((k >> 64) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h.wrapping_mul(0xff51_afd7_ed55_8ccd) >> 40) as usize & (FRONT_SLOTS - 1)
}

impl SegmentCache {
    /// Empties the cache when it belongs to another model.
    fn for_model(&mut self, generation: u64) -> &mut Self {
        if self.generation != generation || self.front.is_empty() {
            self.generation = generation;
            self.map.clear();
            self.front.clear();
            self.front.resize(FRONT_SLOTS, (0, [0; 3], 0));
        }
        self
    }

}

/// Puts a segment's ids in the front table when they fit inline.
fn remember_front(front: &mut [(u128, [u32; 3], u32)], k: Option<u128>, ids: &[u32]) {
    if let Some(k) = k {
        if ids.len() <= 3 {
            let mut inline = [0u32; 3];
            inline[..ids.len()].copy_from_slice(ids);
            front[front_slot(k)] = (k, inline, ids.len() as u32);
        }
    }
}

const CACHE_MAX: usize = 1 << 18;
/// Segments up to this many bytes are looked up in the cache whole, longer ones are cut at the
/// bigrams no piece holds first.
const CUT_MIN: usize = 16;
/// Longest segment (bytes) kept in the cache.
const CACHE_WORD_MAX: usize = 64;

#[derive(PartialEq)]
struct Cand {
    score: f32,
    left: usize,
    len: usize,
}
impl Eq for Cand {}
impl PartialOrd for Cand {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Cand {
    fn cmp(&self, o: &Self) -> Ordering {
        self.score.total_cmp(&o.score).then_with(|| o.left.cmp(&self.left))
    }
}

impl SpmBpeModel {
    /// `pieces` in id order with ModelProto types; `byte_fallback` from the TrainerSpec.
    pub fn new(
        pieces: Vec<(String, f32, PieceType)>,
        normalizer: SpmNormalizer,
        byte_fallback: bool,
    ) -> Result<Self, String> {
        let scores = pieces.iter().map(|p| p.1).collect();
        let types = pieces.iter().map(|p| p.2).collect();
        let table = Arc::new(TokenTable { strings: pieces.into_iter().map(|p| p.0).collect() });
        Self::from_table(table, scores, types, None, normalizer, byte_fallback)
    }

    /// The model over a token table the caller keeps (the pipeline's), with the scores and types
    /// of its pieces by id. `index`: an index of every piece of `table` in which no string repeats,
    /// to share instead of building one (the caller checked; with repeats, pass `None`).
    pub fn from_table(
        table: Arc<TokenTable>,
        scores: Vec<f32>,
        types: Vec<PieceType>,
        index: Option<PieceIndex>,
        normalizer: SpmNormalizer,
        byte_fallback: bool,
    ) -> Result<Self, String> {
        if scores.len() != table.strings.len() || types.len() != table.strings.len() {
            return Err("the pieces, their scores and their types differ in number".into());
        }
        let mut unk = None;
        let mut user_defined = Vec::new();
        let mut bytes = [u32::MAX; 256];
        for (i, (p, t)) in table.strings.iter().zip(&types).enumerate() {
            let i = i as u32;
            match t {
                PieceType::Unknown => {
                    if unk.replace(i).is_some() {
                        return Err("the model has two unknown pieces".into());
                    }
                }
                PieceType::UserDefined => user_defined.push(p.clone()),
                PieceType::Byte => {
                    let b = p
                        .strip_prefix("<0x")
                        .and_then(|h| h.strip_suffix('>'))
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                        .ok_or_else(|| format!("byte piece {p:?} is not <0xXX>"))?;
                    bytes[b as usize] = i;
                }
                PieceType::Normal | PieceType::Unused | PieceType::Control => {}
            }
        }
        let unk_id = unk.ok_or("the model has no unknown piece")?;
        let byte_ids = if byte_fallback {
            if bytes.contains(&u32::MAX) {
                return Err("byte_fallback is set but the model lacks some of the 256 <0xXX> pieces".into());
            }
            Some(bytes)
        } else {
            None
        };
        let index = match index {
            Some(index) if Arc::ptr_eq(index.table(), &table) => index,
            _ => {
                let (index, repeat) = PieceIndex::build(table.clone(), |i| mergeable(types[i]));
                if let Some(d) = repeat {
                    return Err(format!("piece {:?} is defined twice", table.get(d.again)));
                }
                index
            }
        };
        let split = Split::of(
            table.strings.iter().zip(&types).filter(|(_, t)| **t != PieceType::Control && **t != PieceType::Byte).map(|(p, _)| p.as_str()),
        );
        let merges = std::sync::OnceLock::new();
        Ok(SpmBpeModel {
            table,
            scores,
            types,
            index,
            user_defined,
            unk_id,
            byte_ids,
            normalizer,
            merges,
            warmup: Warmup::default(),
            split,
            generation: GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        })
    }

    /// The id of the piece spelled `s`, if BPE can produce it (normal, user-defined or unused).
    #[inline]
    fn piece_id(&self, s: &str) -> Option<u32> {
        self.index.get(s).filter(|&id| mergeable(self.types[id as usize]))
    }

    fn merges(&self) -> &IdMerges {
        self.merges.get_or_init(|| IdMerges::build(self))
    }

    pub fn unk_id(&self) -> u32 {
        self.unk_id
    }

    /// Ids of `text` (normalized here).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        self.encode_into(text, &mut String::new(), &mut out);
        out
    }

    /// Appends the ids of `text` to `out`; `buf` holds the normalized text (reused across calls,
    /// so a batch allocates neither per line).
    pub fn encode_into(&self, text: &str, buf: &mut String, out: &mut Vec<u32>) {
        self.normalizer.normalize_into(text, buf);
        let norm = buf.as_str();
        let first = out.len();
        out.reserve(norm.len() / 3 + 1);
        if self.warming_up(norm.len()) {
            self.encode_strings(norm, out);
        } else if self.split == Split::Whole {
            self.encode_cut(norm, out);
        } else {
            let cut_before_space = self.split == Split::BeforeSpaceRun;
            let mut start = 0;
            let mut prev_space = true; // no cut at 0
            for (i, c) in norm.char_indices() {
                let space = c == WS;
                if space != prev_space && space == cut_before_space && i > start {
                    self.encode_cut(&norm[start..i], out);
                    start = i;
                }
                prev_space = space;
            }
            if start < norm.len() {
                self.encode_cut(&norm[start..], out);
            }
        }
        // SentencePiece fuses consecutive unknown pieces (also across words, not across texts).
        let unk = self.unk_id;
        let mut w = first;
        for r in first..out.len() {
            let id = out[r];
            if id == unk && w > first && out[w - 1] == unk {
                continue;
            }
            out[w] = id;
            w += 1;
        }
        out.truncate(w);
    }

    /// Encodes a segment cut further where no merge can reach across: between two characters
    /// that are adjacent in no piece (see the performance notes). Short segments go to the cache
    /// whole (one lookup costs less than a bigram probe per character).
    fn encode_cut(&self, s: &str, out: &mut Vec<u32>) {
        if s.len() <= CUT_MIN {
            return self.encode_word_cached(s, out);
        }
        let m = self.merges();
        let mut it = s.char_indices();
        let Some((_, mut prev)) = it.next() else { return };
        let mut start = 0;
        for (i, c) in it {
            if !m.bigrams.contains(prev, c) {
                self.encode_word_cached(&s[start..i], out);
                start = i;
            }
            prev = c;
        }
        self.encode_word_cached(&s[start..], out);
    }

    fn encode_word_cached(&self, word: &str, out: &mut Vec<u32>) {
        if word.len() > CACHE_WORD_MAX {
            // a long segment (a line of text without spaces: CJK) rarely repeats; caching it would
            // only cost the hashing, the copy and the room in the cache
            return self.encode_normalized(word, out);
        }
        let key = front_key(word.as_bytes());
        let hit = CACHE.with(|c| {
            let mut c = c.borrow_mut();
            let c = c.for_model(self.generation);
            if let Some(k) = key {
                let (fk, ids, n) = &c.front[front_slot(k)];
                if *fk == k {
                    out.extend_from_slice(&ids[..*n as usize]);
                    return true;
                }
            }
            match c.map.get(word) {
                Some(ids) => {
                    out.extend_from_slice(ids);
                    remember_front(&mut c.front, key, ids);
                    true
                }
                None => false,
            }
        });
        if hit {
            return;
        }
        let start = out.len();
        self.encode_normalized(word, out);
        CACHE.with(|c| {
            let mut c = c.borrow_mut();
            let c = c.for_model(self.generation);
            if c.map.len() >= CACHE_MAX {
                c.map.clear();
            }
            remember_front(&mut c.front, key, &out[start..]);
            c.map.insert(word.to_string(), out[start..].to_vec());
        });
    }

    /// BPE over an already-normalized string.
    pub fn encode_normalized(&self, s: &str, out: &mut Vec<u32>) {
        if self.warming_up(s.len()) {
            return self.encode_strings(s, out);
        }
        self.encode_ids(self.merges(), s, out)
    }

    /// Whether `len` more bytes go through the string path: the pair table is not built and the
    /// bytes encoded so far, these included, stay under [`WARMUP_BYTES`].
    #[inline]
    fn warming_up(&self, len: usize) -> bool {
        if self.merges.get().is_some() {
            return false;
        }
        let seen = self.warmup.0.fetch_add(len, std::sync::atomic::Ordering::Relaxed);
        seen.saturating_add(len) < WARMUP_BYTES
    }

    /// The user-defined piece that starts `s` (longest), as its byte length.
    fn user_defined_at(&self, s: &str) -> Option<usize> {
        self.user_defined.iter().filter(|u| s.starts_with(u.as_str())).map(|u| u.len()).max()
    }

    /// BPE over piece ids ([`IdMerges`]); the same merges in the same order as
    /// [`Self::encode_strings`].
    fn encode_ids(&self, m: &IdMerges, s: &str, out: &mut Vec<u32>) {
        SCRATCH.with(|scratch| {
            let (syms, heap) = &mut *scratch.borrow_mut();
            syms.clear();
            heap.clear();
            let mut i = 0;
            while i < s.len() {
                let user = if self.user_defined.is_empty() { None } else { self.user_defined_at(&s[i..]) };
                let (id, len) = match user {
                    Some(l) => (self.piece_id(&s[i..i + l]).unwrap_or(NO_PIECE), l),
                    None => {
                        let c = s[i..].chars().next().unwrap_or('\0');
                        (m.char_id(c), c.len_utf8())
                    }
                };
                let k = syms.len() as u32;
                syms.push(Sym { id, start: i as u32, len: len as u32, prev: k.wrapping_sub(1), next: k + 1, frozen: user.is_some() });
                i += len;
            }
            let n = syms.len() as u32;
            let try_pair = |heap: &mut BinaryHeap<IdCand>, syms: &[Sym], l: u32| {
                let a = syms[l as usize];
                if a.next >= n {
                    return;
                }
                let b = syms[a.next as usize];
                if a.frozen || b.frozen || a.id == NO_PIECE || b.id == NO_PIECE {
                    // NO_PIECE: a character no piece holds, so no merge
                    return;
                }
                if let Some(merged) = m.pairs.get(a.id, b.id) {
                    heap.push(IdCand { score: m.scores[merged as usize], left: l, len: a.len + b.len, merged });
                }
            };
            for k in 0..n.saturating_sub(1) {
                try_pair(heap, syms, k);
            }
            while let Some(c) = heap.pop() {
                let l = c.left as usize;
                let r = syms[l].next;
                if syms[l].len == 0 || r >= n || syms[l].len + syms[r as usize].len != c.len {
                    continue; // stale: a neighbour changed
                }
                let rn = syms[r as usize].next;
                syms[l].len = c.len;
                syms[l].id = c.merged;
                syms[l].next = rn;
                syms[r as usize].len = 0;
                if rn < n {
                    syms[rn as usize].prev = l as u32;
                }
                let p = syms[l].prev;
                if p != u32::MAX {
                    try_pair(heap, syms, p);
                }
                try_pair(heap, syms, l as u32);
            }
            let mut k = 0;
            while k < n {
                let sym = syms[k as usize];
                if sym.id != NO_PIECE && m.emit.get(sym.id as usize).copied().unwrap_or(false) {
                    out.push(sym.id);
                } else {
                    let piece = &s[sym.start as usize..(sym.start + sym.len) as usize];
                    match &self.byte_ids {
                        Some(b) => out.extend(piece.bytes().map(|x| b[x as usize])),
                        None => out.push(self.unk_id),
                    }
                }
                k = sym.next;
            }
        })
    }

    /// BPE over strings: each candidate pair is looked up as its concatenated text (the plain
    /// version of [`Self::encode_ids`], kept as its oracle).
    pub fn encode_strings(&self, s: &str, out: &mut Vec<u32>) {
        // symbols: (byte start, byte len, frozen); prev/next links
        let mut starts: Vec<usize> = Vec::with_capacity(s.len());
        let mut lens: Vec<usize> = Vec::with_capacity(s.len());
        let mut frozen: Vec<bool> = Vec::with_capacity(s.len());
        let mut i = 0;
        while i < s.len() {
            let user = self.user_defined_at(&s[i..]);
            let l = user.unwrap_or_else(|| s[i..].chars().next().map_or(1, char::len_utf8));
            starts.push(i);
            lens.push(l);
            frozen.push(user.is_some());
            i += l;
        }
        let n = starts.len();
        let mut prev: Vec<isize> = (0..n as isize).map(|x| x - 1).collect();
        let mut next: Vec<usize> = (1..=n).collect();
        let mut heap = BinaryHeap::new();
        let try_pair = |heap: &mut BinaryHeap<Cand>, l: usize, r: usize, lens: &[usize], frozen: &[bool]| {
            if frozen[l] || frozen[r] {
                return;
            }
            let piece = &s[starts[l]..starts[r] + lens[r]];
            if let Some(id) = self.piece_id(piece) {
                heap.push(Cand { score: self.scores[id as usize], left: l, len: piece.len() });
            }
        };
        for k in 1..n {
            try_pair(&mut heap, k - 1, k, &lens, &frozen);
        }
        while let Some(c) = heap.pop() {
            let l = c.left;
            if lens[l] == 0 {
                continue;
            }
            let r = next[l];
            if r >= n || lens[l] + lens[r] != c.len {
                continue; // stale: a neighbour changed
            }
            lens[l] += lens[r];
            lens[r] = 0;
            next[l] = next[r];
            if next[r] < n {
                prev[next[r]] = l as isize;
            }
            if prev[l] >= 0 {
                try_pair(&mut heap, prev[l] as usize, l, &lens, &frozen);
            }
            if next[l] < n {
                try_pair(&mut heap, l, next[l], &lens, &frozen);
            }
        }
        let mut k = 0;
        while k < n {
            let piece = &s[starts[k]..starts[k] + lens[k]];
            match self.piece_id(piece) {
                Some(id) if self.types[id as usize] != PieceType::Unused => out.push(id),
                _ => match &self.byte_ids {
                    Some(b) => out.extend(piece.bytes().map(|x| b[x as usize])),
                    None => out.push(self.unk_id),
                },
            }
            k = next[k];
        }
    }

    /// Batch encode in parallel.
    pub fn encode_batch(&self, texts: &[String]) -> Vec<Vec<u32>> {
        use rayon::prelude::*;
        if texts.len() < 64 || !crate::parallel::parallel_useful() {
            return texts.iter().map(|t| self.encode(t)).collect();
        }
        // chunks amortise rayon's per-task cost and keep each thread on its own warm word cache
        let chunks: Vec<Vec<Vec<u32>>> =
            texts.par_chunks(512).map(|c| c.iter().map(|t| self.encode(t)).collect()).collect();
        chunks.into_iter().flatten().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spm::SpmSpec;

    #[test]
    fn merges_by_score_then_leftmost() {
        let pieces = vec![
            ("<unk>".to_string(), 0.0, PieceType::Unknown),
            ("▁a".to_string(), -0.0, PieceType::Normal),
            ("bc".to_string(), -1.0, PieceType::Normal),
            ("▁abc".to_string(), -2.0, PieceType::Normal),
            ("▁".to_string(), -3.0, PieceType::Normal),
            ("a".to_string(), -4.0, PieceType::Normal),
            ("b".to_string(), -5.0, PieceType::Normal),
            ("c".to_string(), -6.0, PieceType::Normal),
        ];
        let spec = SpmSpec { normalization: crate::spm::Normalization::Identity, ..SpmSpec::default() };
        let m = SpmBpeModel::new(pieces, SpmNormalizer::from_spec(&spec), false).unwrap();
        // first through the warm-up (string) path, then through the pair table
        for built in [false, true] {
            assert_eq!(m.merges.get().is_some(), built);
            assert_eq!(m.encode("abc abx"), vec![3, 1, 6, 0]);
            assert_eq!(m.encode("xy"), vec![4, 0]);
            let _ = m.merges();
        }
    }

    #[test]
    fn the_pair_table_is_built_once_the_warm_up_bytes_are_spent_with_the_same_ids() {
        use PieceType::*;
        let m = model(
            &[("<unk>", 0.0, Unknown), ("▁", -1.0, Normal), ("a", -2.0, Normal), ("b", -3.0, Normal), ("▁ab", -4.0, Normal), ("ab", -5.0, Normal)],
            false,
        );
        let text = "ab ba  aab ";
        let expected = m.encode(text);
        assert!(m.merges.get().is_none(), "one short text must not build the table");
        let len = m.normalizer.normalize(text).len(); // what the counter counts
        let mut n = 0;
        while m.merges.get().is_none() {
            assert_eq!(m.encode(text), expected);
            n += 1;
            assert!(n * len <= WARMUP_BYTES + 2 * len, "never built");
        }
        assert!((n + 1) * len >= WARMUP_BYTES, "built too early ({n} texts)");
        assert_eq!(m.encode(text), expected);
        // a clone is a fresh model: it warms up again
        assert!(m.clone().merges.get().is_some() && m.clone().warmup.0.load(std::sync::atomic::Ordering::Relaxed) == 0);
    }

    fn model(pieces: &[(&str, f32, PieceType)], byte_fallback: bool) -> SpmBpeModel {
        let spec = SpmSpec {
            normalization: crate::spm::Normalization::Identity,
            remove_extra_whitespaces: false,
            ..SpmSpec::default()
        };
        let pieces = pieces.iter().map(|(p, s, t)| (p.to_string(), *s, *t)).collect();
        SpmBpeModel::new(pieces, SpmNormalizer::from_spec(&spec), byte_fallback).unwrap()
    }

    #[test]
    fn split_rule_follows_the_pieces() {
        use PieceType::*;
        let base = [("<unk>", 0.0, Unknown), ("▁", -1.0, Normal), ("a", -2.0, Normal), ("b", -3.0, Normal)];
        let with = |extra: &[(&'static str, f32, PieceType)]| {
            let mut v = base.to_vec();
            v.extend_from_slice(extra);
            model(&v, false).split
        };
        assert_eq!(with(&[("▁a", -4.0, Normal)]), Split::BeforeSpaceRun);
        assert_eq!(with(&[("▁▁", -4.0, Normal), ("▁▁a", -5.0, Normal)]), Split::BeforeSpaceRun);
        assert_eq!(with(&[("a▁", -4.0, Normal), ("▁▁", -5.0, Normal)]), Split::AfterSpaceRun);
        assert_eq!(with(&[("a▁b", -4.0, Normal)]), Split::Whole);
        // control and byte pieces are never produced by merges: they do not count
        assert_eq!(with(&[("a▁b", 0.0, Control)]), Split::BeforeSpaceRun);
    }

    #[test]
    fn whitespace_runs_merge_with_the_word_after_them() {
        use PieceType::*;
        // "▁▁" beats "▁a": the run of two spaces stays one piece, the word gets no ▁
        let m = model(
            &[("<unk>", 0.0, Unknown), ("▁▁", -0.5, Normal), ("▁a", -1.0, Normal), ("▁", -2.0, Normal), ("a", -3.0, Normal)],
            false,
        );
        assert_eq!(m.encode("a  a"), vec![2, 1, 4]);
        assert_eq!(m.encode("a   a"), vec![2, 1, 2]);
    }

    #[test]
    fn cutting_at_bigrams_no_piece_holds_gives_the_whole_string_merges() {
        use PieceType::*;
        // "ab", "bc", "abc" and "cd" join a-b, b-c and c-d; "da" and "dd" no piece holds, so
        // texts are cut there (and at "x", in no piece); "éa" is a piece, é is none by itself
        let pieces = [
            ("<unk>", 0.0, Unknown),
            ("▁", -1.0, Normal),
            ("a", -2.0, Normal),
            ("b", -3.0, Normal),
            ("c", -3.0, Normal),
            ("d", -4.0, Normal),
            ("ab", -5.0, Normal),
            ("bc", -5.0, Normal),
            ("abc", -6.0, Normal),
            ("cd", -7.0, Normal),
            ("éa", -8.0, Normal),
            ("▁▁", -8.5, Normal),
            ("▁a", -9.0, Normal),
            ("<u>", 0.0, UserDefined),
        ];
        for byte_fallback in [false, true] {
            let mut v: Vec<(&str, f32, PieceType)> = pieces.to_vec();
            if byte_fallback {
                let names: Vec<&'static str> =
                    (0..256).map(|b| &*Box::leak(format!("<0x{b:02X}>").into_boxed_str())).collect();
                v.extend(names.into_iter().map(|n| (n, 0.0, Byte)));
            }
            let m = model(&v, byte_fallback);
            assert!(!m.merges().bigrams.contains('d', 'a') && m.merges().bigrams.contains('c', 'd'));
            let mut rng = 3u64;
            for _ in 0..3000 {
                let mut s = String::new();
                // long enough to be cut (CUT_MIN), with runs that hit the cache twice
                for _ in 0..(rng % 40) {
                    rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    s.push_str(["a", "b", "c", "d", "x", "é", " ", "<u>", "cd", "abc"][(rng >> 33) as usize % 10]);
                }
                let norm = m.normalizer.normalize(&s);
                let mut whole = Vec::new();
                m.encode_strings(&norm, &mut whole);
                whole.dedup_by(|b, a| *a == m.unk_id && *b == m.unk_id);
                assert_eq!(m.encode(&s), whole, "{s:?}");
            }
        }
    }

    #[test]
    fn id_merges_equal_string_merges_also_with_characters_that_are_not_pieces() {
        use PieceType::*;
        // "x" and "é" are no pieces but "xa", "éb" and "xab" are: the table gives them pseudo ids
        let pieces = [
            ("<unk>", 0.0, Unknown),
            ("▁", -1.0, Normal),
            ("a", -2.0, Normal),
            ("b", -3.0, Normal),
            ("xa", -4.0, Normal),
            ("ab", -5.0, Normal),
            ("xab", -6.0, Normal),
            ("éb", -7.0, Normal),
            ("▁▁", -8.0, Normal),
            ("<s>", 0.0, UserDefined),
            ("ba", -9.0, Unused),
        ];
        for byte_fallback in [false, true] {
            let mut v: Vec<(&str, f32, PieceType)> = pieces.to_vec();
            if byte_fallback {
                let names: Vec<&'static str> =
                    (0..256).map(|b| &*Box::leak(format!("<0x{b:02X}>").into_boxed_str())).collect();
                v.extend(names.into_iter().map(|n| (n, 0.0, Byte)));
            }
            let m = model(&v, byte_fallback);
            let mut rng = 7u64;
            for _ in 0..3000 {
                let mut s = String::new();
                for _ in 0..(rng % 12) {
                    rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    s.push_str(["a", "b", "x", "é", "▁", "<s>", "y", "ba"][(rng >> 33) as usize % 8]);
                }
                let (mut a, mut b) = (Vec::new(), Vec::new());
                m.encode_ids(m.merges(), &s, &mut a);
                m.encode_strings(&s, &mut b);
                assert_eq!(a, b, "{s:?}");
            }
        }
    }
}
