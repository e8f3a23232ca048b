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
//! - Merges run over piece ids, not strings: a table maps each (left id, right id) whose
//!   concatenation is a piece to that piece, built once per model from every split of every piece
//!   into two pieces. Looking up a pair of `u32` costs a multiply; looking up the concatenated
//!   string (as sentencepiece and our first version did) hashes and compares bytes, which was half
//!   the time on CJK lines (perf). `encode_strings` keeps the string version as the oracle of the
//!   unit tests.
//! - The pair table is built on the first encode (`OnceLock`), so loading a model costs what
//!   sentencepiece's load costs (the pieces and their map); bench_load.py times both.
//! - Batches run on rayon; the cache is thread-local (`RefCell`) so lookups take no lock.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

use ahash::AHashMap;

use super::{PieceType, SpmNormalizer, WS};

/// A SentencePiece BPE model ready to encode.
#[derive(Clone, Debug)]
pub struct SpmBpeModel {
    pub pieces: Vec<(String, f32, PieceType)>,
    ids: AHashMap<String, u32>,
    user_defined: Vec<String>,
    unk_id: u32,
    byte_ids: Option<[u32; 256]>,
    pub normalizer: SpmNormalizer,
    split: Split,
    /// Built on first encode: loading a model does no more than sentencepiece's load does.
    merges: std::sync::OnceLock<IdMerges>,
    generation: u64,
}

/// BPE merges over piece ids (see the performance notes).
#[derive(Clone, Debug)]
struct IdMerges {
    /// Ids of the one-character pieces: ASCII in a table, the rest hashed.
    ascii: [u32; 128],
    chars: AHashMap<char, u32>,
    /// (left, right) -> the piece their concatenation spells.
    pairs: PairTable,
    /// Score and whether the piece may be emitted, by id.
    scores: Vec<f32>,
    emit: Vec<bool>,
}

const NO_PIECE: u32 = u32::MAX;

/// (left id, right id) -> merged id. The table is probed once per candidate pair, at random
/// places, so its size is what costs (perf: cache misses on its buckets were most of the time on
/// CJK lines): with fewer than 65,536 ids a pair packs into a `u32` key, and a 32k model's table
/// (~36k pairs) fits in 512 KB, a typical L2 cache.
#[derive(Clone, Debug)]
enum PairTable {
    Small(AHashMap<u32, u32>),
    Large(AHashMap<u64, u32>),
}

impl PairTable {
    fn new(ids: usize) -> Self {
        if ids < 1 << 16 {
            PairTable::Small(AHashMap::new())
        } else {
            PairTable::Large(AHashMap::new())
        }
    }

    #[inline]
    fn get(&self, l: u32, r: u32) -> Option<u32> {
        match self {
            PairTable::Small(m) => m.get(&(l << 16 | r)).copied(),
            PairTable::Large(m) => m.get(&((l as u64) << 32 | r as u64)).copied(),
        }
    }

    fn insert(&mut self, l: u32, r: u32, merged: u32) {
        match self {
            PairTable::Small(m) => m.insert(l << 16 | r, merged),
            PairTable::Large(m) => m.insert((l as u64) << 32 | r as u64, merged),
        };
    }

    fn shrink_to_fit(&mut self) {
        match self {
            PairTable::Small(m) => m.shrink_to_fit(),
            PairTable::Large(m) => m.shrink_to_fit(),
        }
    }
}

impl IdMerges {
    /// The table of a model. A character that occurs inside a piece without being a piece itself
    /// (possible in hand-made or converted models) gets an id past the last piece, so the merges
    /// that start from it are in the table too; such an id is never emitted.
    fn build(pieces: &[(String, f32, PieceType)], ids: &AHashMap<String, u32>) -> IdMerges {
        let mut ascii = [NO_PIECE; 128];
        let mut chars = AHashMap::new();
        for (p, &i) in ids {
            let mut cs = p.chars();
            if let (Some(c), None) = (cs.next(), cs.next()) {
                if (c as u32) < 128 {
                    ascii[c as usize] = i;
                } else {
                    chars.insert(c, i);
                }
            }
        }
        let mut next_pseudo = pieces.len() as u32;
        for p in ids.keys() {
            for c in p.chars() {
                let slot = if (c as u32) < 128 { &mut ascii[c as usize] } else { chars.entry(c).or_insert(NO_PIECE) };
                if *slot == NO_PIECE {
                    *slot = next_pseudo;
                    next_pseudo += 1;
                }
            }
        }
        let mut m = IdMerges {
            ascii,
            chars,
            pairs: PairTable::Small(AHashMap::new()),
            scores: pieces.iter().map(|(_, s, _)| *s).collect(),
            emit: pieces.iter().map(|(_, _, t)| *t != PieceType::Unused).collect(),
        };
        m.emit.resize(next_pseudo as usize, false);
        let symbol_id = |m: &IdMerges, t: &str| -> Option<u32> {
            ids.get(t).copied().or_else(|| {
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
        for (i, (p, _, t)) in pieces.iter().enumerate() {
            if !matches!(t, PieceType::Normal | PieceType::UserDefined | PieceType::Unused) {
                continue; // control, byte and unknown pieces are not in `ids` (new() refuses repeats)
            }
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
        pairs.shrink_to_fit();
        m.pairs = pairs;
        m
    }

    fn char_id(&self, c: char) -> u32 {
        if (c as u32) < 128 {
            self.ascii[c as usize]
        } else {
            self.chars.get(&c).copied().unwrap_or(NO_PIECE)
        }
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
    static CACHE: RefCell<(u64, AHashMap<String, Vec<u32>>)> = RefCell::new((0, AHashMap::new()));
}

thread_local! {
    /// The id-based BPE's symbols and heap, reused across segments.
    static SCRATCH: RefCell<(Vec<Sym>, BinaryHeap<IdCand>)> = RefCell::new((Vec::new(), BinaryHeap::new()));
}

const CACHE_MAX: usize = 1 << 18;
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
        let mut ids = AHashMap::with_capacity(pieces.len());
        let mut unk = None;
        let mut user_defined = Vec::new();
        let mut bytes = [u32::MAX; 256];
        for (i, (p, _, t)) in pieces.iter().enumerate() {
            let i = i as u32;
            match t {
                PieceType::Unknown => {
                    if unk.replace(i).is_some() {
                        return Err("the model has two unknown pieces".into());
                    }
                }
                PieceType::Normal | PieceType::UserDefined | PieceType::Unused => {
                    if ids.insert(p.clone(), i).is_some() {
                        return Err(format!("piece {p:?} is defined twice"));
                    }
                    if *t == PieceType::UserDefined {
                        user_defined.push(p.clone());
                    }
                }
                PieceType::Byte => {
                    let b = p
                        .strip_prefix("<0x")
                        .and_then(|h| h.strip_suffix('>'))
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                        .ok_or_else(|| format!("byte piece {p:?} is not <0xXX>"))?;
                    bytes[b as usize] = i;
                }
                PieceType::Control => {}
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
        let split = Split::of(
            pieces
                .iter()
                .filter(|(_, _, t)| *t != PieceType::Control && *t != PieceType::Byte)
                .map(|(p, _, _)| p.as_str()),
        );
        let merges = std::sync::OnceLock::new();
        Ok(SpmBpeModel {
            pieces,
            ids,
            user_defined,
            unk_id,
            byte_ids,
            normalizer,
            merges,
            split,
            generation: GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        })
    }

    fn merges(&self) -> &IdMerges {
        self.merges.get_or_init(|| IdMerges::build(&self.pieces, &self.ids))
    }

    pub fn unk_id(&self) -> u32 {
        self.unk_id
    }

    /// Ids of `text` (normalized here).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let norm = self.normalizer.normalize(text);
        let mut out = Vec::with_capacity(norm.len() / 3 + 1);
        if self.split == Split::Whole {
            self.encode_normalized(&norm, &mut out);
        } else {
            let cut_before_space = self.split == Split::BeforeSpaceRun;
            let mut start = 0;
            let mut prev_space = true; // no cut at 0
            for (i, c) in norm.char_indices() {
                let space = c == WS;
                if space != prev_space && space == cut_before_space && i > start {
                    self.encode_word_cached(&norm[start..i], &mut out);
                    start = i;
                }
                prev_space = space;
            }
            if start < norm.len() {
                self.encode_word_cached(&norm[start..], &mut out);
            }
        }
        // SentencePiece fuses consecutive unknown pieces (also across words).
        out.dedup_by(|b, a| *a == self.unk_id && *b == self.unk_id);
        out
    }

    fn encode_word_cached(&self, word: &str, out: &mut Vec<u32>) {
        if word.len() > CACHE_WORD_MAX {
            // a long segment (a line of text without spaces: CJK) rarely repeats; caching it would
            // only cost the hashing, the copy and the room in the cache
            return self.encode_normalized(word, out);
        }
        let hit = CACHE.with(|c| {
            let mut c = c.borrow_mut();
            if c.0 != self.generation {
                c.0 = self.generation;
                c.1.clear();
            }
            c.1.get(word).map(|ids| out.extend_from_slice(ids)).is_some()
        });
        if hit {
            return;
        }
        let start = out.len();
        self.encode_normalized(word, out);
        CACHE.with(|c| {
            let mut c = c.borrow_mut();
            if c.1.len() >= CACHE_MAX {
                c.1.clear();
            }
            c.1.insert(word.to_string(), out[start..].to_vec());
        });
    }

    /// BPE over an already-normalized string.
    pub fn encode_normalized(&self, s: &str, out: &mut Vec<u32>) {
        self.encode_ids(self.merges(), s, out)
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
                    Some(l) => (self.ids.get(&s[i..i + l]).copied().unwrap_or(NO_PIECE), l),
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
            if let Some(&id) = self.ids.get(piece) {
                heap.push(Cand { score: self.pieces[id as usize].1, left: l, len: piece.len() });
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
            match self.ids.get(piece) {
                Some(&id) if self.pieces[id as usize].2 != PieceType::Unused => out.push(id),
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
        if texts.len() < 64 || !crate::parallel::parallel_allowed() {
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
        assert_eq!(m.encode("abc abx"), vec![3, 1, 6, 0]);
        assert_eq!(m.encode("xy"), vec![4, 0]);
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
