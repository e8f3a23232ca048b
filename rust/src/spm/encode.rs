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
//! - Pieces never contain `▁` after their first character in models trained with
//!   `split_by_whitespace` (the default), so a sentence is encoded word by word (a word starts at
//!   each `▁`) and words are cached per thread; models where some piece has an inner `▁` are
//!   encoded whole.
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
    split_words: bool,
    generation: u64,
}

static GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

thread_local! {
    static CACHE: RefCell<(u64, AHashMap<String, Vec<u32>>)> = RefCell::new((0, AHashMap::new()));
}

const CACHE_MAX: usize = 1 << 18;

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
        let mut ids = AHashMap::new();
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
        let split_words = !pieces
            .iter()
            .any(|(p, _, t)| *t != PieceType::Control && *t != PieceType::Byte && p.chars().skip(1).any(|c| c == WS));
        Ok(SpmBpeModel {
            pieces,
            ids,
            user_defined,
            unk_id,
            byte_ids,
            normalizer,
            split_words,
            generation: GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        })
    }

    pub fn unk_id(&self) -> u32 {
        self.unk_id
    }

    /// Ids of `text` (normalized here).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let norm = self.normalizer.normalize(text);
        let mut out = Vec::with_capacity(norm.len() / 3 + 1);
        if self.split_words {
            let mut start = 0;
            for (i, c) in norm.char_indices() {
                if c == WS && i > start {
                    self.encode_word_cached(&norm[start..i], &mut out);
                    start = i;
                }
            }
            if start < norm.len() {
                self.encode_word_cached(&norm[start..], &mut out);
            }
        } else {
            self.encode_normalized(&norm, &mut out);
        }
        // SentencePiece fuses consecutive unknown pieces (also across words).
        out.dedup_by(|b, a| *a == self.unk_id && *b == self.unk_id);
        out
    }

    fn encode_word_cached(&self, word: &str, out: &mut Vec<u32>) {
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
        // symbols: (byte start, byte len, frozen); prev/next links
        let mut starts: Vec<usize> = Vec::with_capacity(s.len());
        let mut lens: Vec<usize> = Vec::with_capacity(s.len());
        let mut frozen: Vec<bool> = Vec::with_capacity(s.len());
        let mut i = 0;
        while i < s.len() {
            let user = self.user_defined.iter().filter(|u| s[i..].starts_with(u.as_str())).map(|u| u.len()).max();
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
}
