//! The Unigram model: pieces with scores, a character trie, and the encoders
//! (Viterbi, n-best, sampling) with unk fusion and byte fallback.
//!
//! Performance notes
//! - Viterbi runs directly over the UTF-8 bytes (no lattice allocation, no char decoding): one pass
//!   over char boundaries, following the byte-level double array ([`super::darray`]) from each
//!   start, with `best[end]` updated on a strict `>` so ties go to the earliest start
//!   (SentencePiece's and HF's rule). Sums are f32 in SentencePiece mode.
//! - [`UnigramModel::encode_ids_into`] (the batch path) goes word by word through a per-thread
//!   cache of word paths, used only where float32 rounding provably cannot change the decision
//!   (`encode/word_cache.rs` has the argument), so its ids equal [`UnigramModel::encode`]'s.
//!   `encode` itself, offsets, n-best and sampling run on the whole string as before.
//! - The char [`Trie`] (children laid out flat, sorted by char) serves the lattice-based paths:
//!   n-best, sampling and training.

use ahash::AHashMap;

mod word_cache;

use super::darray::DoubleArray;
use super::lattice::{Lattice, Rng};
use super::{Compat, UNK_PENALTY};

/// The role of a piece (SentencePiece `ModelProto.SentencePiece.Type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PieceKind {
    Normal,
    Unknown,
    Control,
    UserDefined,
    Unused,
    Byte,
}

impl PieceKind {
    /// From the ModelProto type number (1 NORMAL, 2 UNKNOWN, 3 CONTROL, 4 USER_DEFINED, 5 UNUSED, 6 BYTE).
    pub fn from_proto(t: i32) -> Result<PieceKind, String> {
        Ok(match t {
            1 => PieceKind::Normal,
            2 => PieceKind::Unknown,
            3 => PieceKind::Control,
            4 => PieceKind::UserDefined,
            5 => PieceKind::Unused,
            6 => PieceKind::Byte,
            _ => return Err(format!("unknown piece type {t}")),
        })
    }
}

/// A character trie over piece strings, stored flat: the children of node `n` are
/// `child_char/child_node[first[n]..first[n + 1]]`, sorted by char; the root's children also sit in a
/// direct table for chars below [`ROOT_DIRECT`].
#[derive(Clone, Debug, Default)]
pub struct Trie {
    first: Vec<u32>,
    child_char: Vec<char>,
    child_node: Vec<u32>,
    terminal: Vec<i64>,
    root_direct: Vec<u32>,
}

const ROOT_DIRECT: usize = 0x3000;

impl Trie {
    /// Builds the trie from `(string, id)` pairs; a repeated string keeps its first id.
    pub fn new<'a>(items: impl Iterator<Item = (&'a str, u32)>) -> Trie {
        // build with a map, then lay the children out sorted by char
        let mut edges: AHashMap<(u32, char), u32> = AHashMap::new();
        let mut terminal = vec![-1i64];
        for (s, id) in items {
            if s.is_empty() {
                continue;
            }
            let mut node = 0u32;
            for ch in s.chars() {
                let next = terminal.len() as u32;
                let e = *edges.entry((node, ch)).or_insert(next);
                if e == next {
                    terminal.push(-1);
                }
                node = e;
            }
            if terminal[node as usize] < 0 {
                terminal[node as usize] = id as i64;
            }
        }
        let mut list: Vec<(u32, char, u32)> = edges.into_iter().map(|((p, c), n)| (p, c, n)).collect();
        list.sort_unstable();
        let n = terminal.len();
        let mut first = vec![0u32; n + 1];
        for &(p, _, _) in &list {
            first[p as usize + 1] += 1;
        }
        for i in 0..n {
            first[i + 1] += first[i];
        }
        let child_char = list.iter().map(|x| x.1).collect();
        let child_node: Vec<u32> = list.iter().map(|x| x.2).collect();
        let mut root_direct = vec![u32::MAX; ROOT_DIRECT];
        for &(p, c, node) in &list {
            if p == 0 && (c as usize) < ROOT_DIRECT {
                root_direct[c as usize] = node;
            }
        }
        Trie { first, child_char, child_node, terminal, root_direct }
    }

    #[inline]
    fn child(&self, node: u32, ch: char) -> Option<u32> {
        if node == 0 && (ch as usize) < ROOT_DIRECT {
            let n = self.root_direct[ch as usize];
            return if n == u32::MAX { None } else { Some(n) };
        }
        let (a, b) = (self.first[node as usize] as usize, self.first[node as usize + 1] as usize);
        let cs = &self.child_char[a..b];
        if cs.len() <= 8 {
            cs.iter().position(|&c| c == ch).map(|i| self.child_node[a + i])
        } else {
            cs.binary_search(&ch).ok().map(|i| self.child_node[a + i])
        }
    }

    /// Calls `f(id, n_chars)` for every piece that is a prefix of `chars`, shortest first.
    #[inline]
    pub fn common_prefix(&self, chars: &[char], mut f: impl FnMut(u32, usize)) {
        let mut node = 0u32;
        for (i, &ch) in chars.iter().enumerate() {
            match self.child(node, ch) {
                Some(n) => {
                    node = n;
                    let id = self.terminal[node as usize];
                    if id >= 0 {
                        f(id as u32, i + 1);
                    }
                }
                None => return,
            }
        }
    }
}

/// Per-thread scratch buffers of the Viterbi encoder.
#[derive(Default)]
struct Work {
    score: Vec<f64>,
    from: Vec<usize>,
    piece: Vec<i64>,
    /// Best losing candidate value per boundary (only filled for the word-cache guard).
    second: Vec<f64>,
    /// Raw pieces of the sentence being encoded by [`UnigramModel::encode_ids_into`]: (id or -1
    /// for unk, byte start, byte end).
    sentence: Vec<(i32, u32, u32)>,
    /// The words of that sentence: (byte start, byte end, cache key, its hash).
    words: Vec<(u32, u32, u128, u64)>,
    /// The piece ids of one word's path.
    path: Vec<i32>,
}

thread_local! {
    static WORK: std::cell::RefCell<Work> = std::cell::RefCell::new(Work::default());
}

/// The byte length of the UTF-8 char whose first byte is `lead` (the text is a valid `&str`, so
/// `lead` is never a continuation byte at a char start).
#[inline(always)]
fn utf8_width(lead: u8) -> usize {
    match lead {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

/// A token of an encoded string: the id and its byte range in the input.
pub type Piece = (u32, usize, usize);

/// Whether pieces of kind `k` are matched in the text (the others are only produced by ids).
fn matched_kind(compat: Compat, k: PieceKind) -> bool {
    match compat {
        Compat::Spm => matches!(k, PieceKind::Normal | PieceKind::UserDefined),
        Compat::Hf => true,
    }
}

/// A Unigram model ready to encode.
#[derive(Clone, Debug)]
pub struct UnigramModel {
    pub pieces: Vec<(String, f64)>,
    pub kinds: Vec<PieceKind>,
    pub unk_id: Option<u32>,
    pub byte_fallback: bool,
    pub compat: Compat,
    /// Over chars, for the lattice (`populate`: n-best, sampling); built on first use, because the
    /// Viterbi encoder uses `darray` only and building both made loading a 32k model slower than
    /// sentencepiece's (benchmarks/bench_load.py).
    trie: std::sync::OnceLock<Trie>,
    /// The same matched pieces as `trie`, over bytes, for the Viterbi encoder.
    darray: DoubleArray,
    /// Score used in the lattice for each trie piece (user-defined pieces get a length bonus in spm mode).
    trie_score: Vec<f64>,
    unk_score: f64,
    byte_ids: [Option<u32>; 256],
    /// Where the lattice splits into independent words (decided from the matched pieces).
    ws_split: word_cache::WsSplit,
    /// Whether [`UnigramModel::encode_ids_into`] may use the per-thread word cache.
    word_cache: bool,
    /// Identifies this model's entries in the per-thread word caches (unique per `new`).
    instance: u64,
    /// Byte length of each piece (the word cache keeps ids only).
    piece_len: Vec<u32>,
}

impl UnigramModel {
    /// Builds a model. In `Spm` mode only NORMAL, USER_DEFINED pieces are matched (as
    /// SentencePiece's trie); in `Hf` mode every piece is matched (HF puts the whole vocab in its trie).
    pub fn new(
        pieces: Vec<(String, f64)>,
        kinds: Option<Vec<PieceKind>>,
        unk_id: Option<u32>,
        byte_fallback: bool,
        compat: Compat,
    ) -> Result<UnigramModel, String> {
        let kinds = kinds.unwrap_or_else(|| vec![PieceKind::Normal; pieces.len()]);
        if kinds.len() != pieces.len() {
            return Err("kinds and pieces differ in length".into());
        }
        if let Some(u) = unk_id {
            if u as usize >= pieces.len() {
                return Err(format!("unk_id {u} is out of range for {} pieces", pieces.len()));
            }
        }
        let matched = |k: PieceKind| matched_kind(compat, k);
        let pieces: Vec<(String, f64)> = pieces.into_iter().map(|(p, s)| (p, compat.r(s))).collect();
        let items: Vec<(&str, u32)> = pieces
            .iter()
            .enumerate()
            .filter(|(i, _)| matched(kinds[*i]))
            .map(|(i, (p, _))| (p.as_str(), i as u32))
            .collect();
        let darray = DoubleArray::new(items.iter().copied());
        let mut ws_split = word_cache::WsSplit::of_pieces(items.iter().map(|x| x.0));
        drop(items);
        let mut min_score = f64::INFINITY;
        for (i, (_, s)) in pieces.iter().enumerate() {
            let counts = match compat {
                Compat::Spm => kinds[i] == PieceKind::Normal,
                Compat::Hf => true,
            };
            if counts && s.is_finite() && *s < min_score {
                min_score = *s;
            }
        }
        if !min_score.is_finite() {
            min_score = 0.0;
        }
        let trie_score = pieces
            .iter()
            .enumerate()
            .map(|(i, (p, s))| {
                if compat == Compat::Spm && kinds[i] == PieceKind::UserDefined {
                    // SentencePiece 0.2.3 scores user-defined symbols 0.1 * (length - 1).
                    compat.r(0.1 * (p.chars().count() as f64 - 1.0))
                } else {
                    *s
                }
            })
            .collect::<Vec<f64>>();
        let unk_score = compat.r(min_score - UNK_PENALTY);
        // The word-cache guard bounds rounding errors relative to finite values only.
        if !unk_score.is_finite() || trie_score.iter().any(|s| !s.is_finite()) {
            ws_split = word_cache::WsSplit::None;
        }
        let piece_len = pieces.iter().map(|(p, _)| p.len() as u32).collect();
        let mut byte_ids = [None; 256];
        for (i, (p, _)) in pieces.iter().enumerate() {
            if kinds[i] == PieceKind::Byte || compat == Compat::Hf {
                if let Some(b) = parse_byte_piece(p) {
                    if byte_ids[b as usize].is_none() {
                        byte_ids[b as usize] = Some(i as u32);
                    }
                }
            }
        }
        Ok(UnigramModel {
            pieces,
            kinds,
            unk_id,
            byte_fallback,
            compat,
            trie: std::sync::OnceLock::new(),
            darray,
            trie_score,
            unk_score,
            byte_ids,
            ws_split,
            word_cache: true,
            instance: word_cache::next_instance(),
            piece_len,
        })
    }

    pub fn trie(&self) -> &Trie {
        self.trie.get_or_init(|| {
            Trie::new(
                self.pieces
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| matched_kind(self.compat, self.kinds[*i]))
                    .map(|(i, (p, _))| (p.as_str(), i as u32)),
            )
        })
    }

    pub fn unk_score(&self) -> f64 {
        self.unk_score
    }

    /// Fills `lattice` with every piece match over `chars`, plus an unk node wherever no
    /// single-char piece exists (id `unk_id`, or -2 when the model has none).
    pub fn populate(&self, chars: &[char], lattice: &mut Lattice) {
        let unk = self.unk_id.map(|u| u as i64).unwrap_or(-2);
        for start in 0..chars.len() {
            let mut single = false;
            self.trie().common_prefix(&chars[start..], |id, n| {
                if n == 1 {
                    single = true;
                }
                lattice.insert(start, start + n, id as i64, self.trie_score[id as usize]);
            });
            if !single {
                lattice.insert(start, start + 1, unk, self.unk_score);
            }
        }
    }

    /// Viterbi segmentation of `text`: `(id or None for unk, byte start, byte end)` per piece,
    /// consecutive unknowns not yet fused.
    fn viterbi_raw(&self, text: &str) -> Vec<(Option<u32>, usize, usize)> {
        WORK.with(|w| self.viterbi_with(text, &mut w.borrow_mut()))
    }

    fn viterbi_with(&self, text: &str, w: &mut Work) -> Vec<(Option<u32>, usize, usize)> {
        let bytes = text.as_bytes();
        self.forward::<false>(bytes, 0.0, w);
        let mut out = Vec::new();
        let mut end = bytes.len();
        while end > 0 {
            let start = w.from[end];
            let id = if w.piece[end] >= 0 { Some(w.piece[end] as u32) } else { None };
            out.push((id, start, end));
            end = start;
        }
        out.reverse();
        out
    }

    /// The Viterbi forward pass over `bytes` (a whole string, or one word of it that the lattice
    /// cannot cross, see [`word_cache`]), starting from the value `base` at byte 0. Leaves in `w`,
    /// for every reachable char boundary `end`, the best value `score[end]`, the start of its last
    /// piece `from[end]` (usize::MAX: unreached) and that piece `piece[end]` (-1: unk).
    ///
    /// Runs over byte positions with the byte-level double array: only char boundaries are ever
    /// reached (pieces are whole strings), and starts are visited in the same increasing order as
    /// a char-indexed pass, so the sums, their order and the tie rule (strict `>`: the earliest
    /// start wins) are those of a lattice over chars. Sums are rounded with `compat.r`, and in
    /// `Spm` mode the values are reset as SentencePiece resets them ([`super::SPM_SCORE_RESET`]):
    /// at a start whose value is past the threshold, that value is subtracted from every value
    /// already held at or after the start (up to the furthest end offered so far).
    ///
    /// With `TRACK`, also keeps `second[end]`, the best losing candidate at `end` (a tie counts as
    /// a loser), and returns (chars in `bytes`, largest |candidate value|) for the cache guard.
    #[inline(always)]
    fn forward<const TRACK: bool>(&self, bytes: &[u8], base: f64, w: &mut Work) -> (usize, f64) {
        let c = self.compat;
        let Work { score, from, piece, second, .. } = w;
        let n = bytes.len();
        score.clear();
        score.resize(n + 1, 0.0);
        score[0] = base;
        from.clear();
        from.resize(n + 1, usize::MAX);
        piece.clear();
        piece.resize(n + 1, -1);
        if TRACK {
            second.clear();
            second.resize(n + 1, f64::NEG_INFINITY);
        }
        let mut chars = 0usize;
        let mut largest = 0.0f64;
        // The furthest end offered so far (SentencePiece's `max_frontier`).
        let mut frontier = 0usize;
        let mut start = 0;
        while start < n {
            let lead = bytes[start];
            let width = utf8_width(lead);
            chars += 1;
            if start > 0 && from[start] == usize::MAX {
                start += width;
                continue;
            }
            let mut base = score[start];
            if c.resets_at(base) {
                for i in start..=frontier.max(start) {
                    if i == start || from[i] != usize::MAX {
                        score[i] = c.r(score[i] - base);
                    }
                }
                base = 0.0;
            }
            let single_end = start + width;
            let mut single = false;
            let mut offer = |end: usize, id: i64, cand: f64| {
                frontier = frontier.max(end);
                if TRACK {
                    largest = largest.max(cand.abs());
                }
                if from[end] == usize::MAX {
                    score[end] = cand;
                    from[end] = start;
                    piece[end] = id;
                } else if cand > score[end] {
                    if TRACK {
                        second[end] = second[end].max(score[end]);
                    }
                    score[end] = cand;
                    from[end] = start;
                    piece[end] = id;
                } else if TRACK {
                    second[end] = second[end].max(cand);
                }
            };
            self.darray.common_prefix(bytes, start, |id, end| {
                if end == single_end {
                    single = true;
                }
                offer(end, id as i64, c.r(base + self.trie_score[id as usize]));
            });
            if !single {
                offer(single_end, -1, c.r(base + self.unk_score));
            }
            start += width;
        }
        (chars, largest)
    }

    /// Turns raw pieces into tokens: consecutive unknowns fused, then byte fallback or the unk id.
    fn finish(&self, text: &str, raw: Vec<(Option<u32>, usize, usize)>) -> Result<Vec<Piece>, String> {
        let mut fused: Vec<(Option<u32>, usize, usize)> = Vec::with_capacity(raw.len());
        for (id, s, e) in raw {
            let is_unk = id.is_none() || (id == self.unk_id && id.is_some());
            if let Some(last) = fused.last_mut() {
                let last_unk = last.0.is_none() || (last.0 == self.unk_id && last.0.is_some());
                if is_unk && last_unk && last.2 == s {
                    last.2 = e;
                    continue;
                }
            }
            fused.push((if is_unk { None } else { id }, s, e));
        }
        let mut out = Vec::with_capacity(fused.len());
        let mut ids = Vec::new();
        for (id, s, e) in fused {
            match id {
                Some(i) => out.push((i, s, e)),
                None => {
                    ids.clear();
                    let single = self.push_unknown(text, s, e, &mut ids)?;
                    if single {
                        out.push((ids[0], s, e));
                    } else {
                        out.extend(ids.iter().enumerate().map(|(k, &i)| (i, s + k, s + k + 1)));
                    }
                }
            }
        }
        Ok(out)
    }

    /// The ids of an unknown run of `text[s..e]`: one byte piece per byte with byte fallback (when the
    /// model has them all; returns false), else the unk id (returns true).
    fn push_unknown(&self, text: &str, s: usize, e: usize, out: &mut Vec<u32>) -> Result<bool, String> {
        let bytes = &text.as_bytes()[s..e];
        if self.byte_fallback && bytes.iter().all(|&b| self.byte_ids[b as usize].is_some()) {
            out.extend(bytes.iter().filter_map(|&b| self.byte_ids[b as usize]));
            return Ok(false);
        }
        match self.unk_id {
            Some(u) => {
                out.push(u);
                Ok(true)
            }
            None => Err(format!("the text {:?} has no piece and the model has no unk id", &text[s..e])),
        }
    }

    /// The best segmentation of `text` (ids with byte ranges).
    pub fn encode(&self, text: &str) -> Result<Vec<Piece>, String> {
        let raw = self.viterbi_raw(text);
        self.finish(text, raw)
    }

    /// Appends the ids of the best segmentation of `text` to `out`: the same ids as
    /// [`Self::encode`], found through this thread's word cache when the model allows it (see
    /// [`word_cache`] for why the result is exactly the same).
    pub fn encode_ids_into(&self, text: &str, out: &mut Vec<u32>) -> Result<(), String> {
        if !self.word_cache || self.ws_split == word_cache::WsSplit::None {
            out.extend(self.encode(text)?.into_iter().map(|p| p.0));
            return Ok(());
        }
        WORK.with(|w| self.encode_ids_cached(text, &mut w.borrow_mut(), out))
    }

    /// Turns the per-thread word cache of [`Self::encode_ids_into`] on (the default) or off (every
    /// text then goes through the whole-string Viterbi of [`Self::encode`]).
    pub fn set_word_cache(&mut self, on: bool) {
        self.word_cache = on;
    }

    /// Whether [`Self::encode_ids_into`] can use the word cache: it is on and no matched piece has
    /// a `▁` that would let the lattice cross a word boundary.
    pub fn word_cache_active(&self) -> bool {
        self.word_cache && self.ws_split != word_cache::WsSplit::None
    }

    fn lattice_of(&self, text: &str) -> (Lattice, Vec<usize>) {
        let chars: Vec<char> = text.chars().collect();
        let mut byte_pos = Vec::with_capacity(chars.len() + 1);
        let mut b = 0;
        for ch in &chars {
            byte_pos.push(b);
            b += ch.len_utf8();
        }
        byte_pos.push(b);
        let mut l = Lattice::new(chars.len(), self.compat);
        self.populate(&chars, &mut l);
        (l, byte_pos)
    }

    fn path_raw(&self, l: &Lattice, bp: &[usize], path: &[usize]) -> Vec<(Option<u32>, usize, usize)> {
        path.iter()
            .map(|&k| {
                let nd = &l.nodes[k];
                let id = if nd.id >= 0 { Some(nd.id as u32) } else { None };
                (id, bp[nd.begin], bp[nd.end])
            })
            .collect()
    }

    /// The `n` best segmentations with their scores.
    pub fn nbest(&self, text: &str, n: usize) -> Result<Vec<(Vec<Piece>, f64)>, String> {
        let (l, bp) = self.lattice_of(text);
        let mut out = Vec::new();
        for (path, s) in l.nbest(n) {
            out.push((self.finish(text, self.path_raw(&l, &bp, &path))?, s));
        }
        Ok(out)
    }

    /// One segmentation sampled for subword regularisation.
    ///
    /// `nbest_size < 0`: exact forward-filtering backward-sampling from `p ∝ exp(alpha * score)`;
    /// `0` or `1`: Viterbi; `> 1`: sample among the n best with `p ∝ exp(alpha * score)`.
    pub fn sample(&self, text: &str, alpha: f64, nbest_size: i64, rng: &mut Rng) -> Result<Vec<Piece>, String> {
        if !alpha.is_finite() || alpha < 0.0 {
            return Err(format!("alpha must be a finite number >= 0, got {alpha}"));
        }
        if nbest_size == 0 || nbest_size == 1 {
            return self.encode(text);
        }
        let (l, bp) = self.lattice_of(text);
        let path = if nbest_size < 0 {
            l.sample(alpha, rng)
        } else {
            let nb = l.nbest(nbest_size as usize);
            if nb.is_empty() {
                return Ok(Vec::new());
            }
            let logw: Vec<f64> = nb.iter().map(|(_, s)| alpha * s).collect();
            nb[rng.categorical_log(&logw)].0.clone()
        };
        self.finish(text, self.path_raw(&l, &bp, &path))
    }
}

/// `<0xAB>` -> 0xAB.
pub fn parse_byte_piece(p: &str) -> Option<u8> {
    let hex = p.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(compat: Compat, byte_fallback: bool) -> UnigramModel {
        let mut pieces: Vec<(String, f64)> =
            vec![("<unk>".into(), 0.0), ("a".into(), -1.0), ("b".into(), -2.0), ("ab".into(), -2.5)];
        let mut kinds = vec![PieceKind::Unknown, PieceKind::Normal, PieceKind::Normal, PieceKind::Normal];
        if byte_fallback {
            for b in 0..=255u8 {
                pieces.push((format!("<0x{b:02X}>"), 0.0));
                kinds.push(PieceKind::Byte);
            }
        }
        UnigramModel::new(pieces, Some(kinds), Some(0), byte_fallback, compat).unwrap()
    }

    #[test]
    fn viterbi_ties_prefer_longest_last_piece() {
        // "ab" (-2.5) beats "a"+"b" (-3.0); unk chars fuse
        let m = model(Compat::Spm, false);
        assert_eq!(m.encode("abxy").unwrap(), vec![(3, 0, 2), (0, 2, 4)]);
        let m2 =
            UnigramModel::new(vec![("w".into(), -1.0), ("ww".into(), -2.0)], None, None, false, Compat::Hf).unwrap();
        // www: w+ww and ww+w tie at -3; the earliest start of the last piece wins -> w + ww
        assert_eq!(m2.encode("www").unwrap(), vec![(0, 0, 1), (1, 1, 3)]);
    }

    #[test]
    fn byte_fallback_spells_unknowns() {
        let m = model(Compat::Spm, true);
        let out = m.encode("aé").unwrap();
        assert_eq!(out, vec![(1, 0, 1), (4 + 0xC3, 1, 2), (4 + 0xA9, 2, 3)]);
    }

    #[test]
    fn no_unk_is_an_error() {
        let m = UnigramModel::new(vec![("a".into(), -1.0)], None, None, false, Compat::Hf).unwrap();
        assert!(m.encode("ab").is_err());
    }
}
