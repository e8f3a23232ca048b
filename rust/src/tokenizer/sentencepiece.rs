//! The SentencePiece pipeline of the one `Tokenizer`: sentencepiece's normalizer (charsmap, dummy
//! prefix, whitespace folding and escaping) followed by a sentencepiece model (Unigram or BPE), with
//! sentencepiece's ids, pieces, character offsets into the original text and decode.
//!
//! This is not a second encoder: it wires the existing ones together. Normalization is
//! [`SpmNormalizer`] (`normalize_into` on the ids-only path, `normalize_aligned` where offsets are
//! wanted), Unigram is [`UnigramModel`] (float32 Viterbi with its word cache, n-best, sampling) and BPE
//! is [`SpmBpeModel`] (its word-cached `encode` on the ids-only path). Why a pipeline of its own
//! rather than arms in `model.rs`: sentencepiece segments the whole normalized line (Unigram's
//! lattice spans word boundaries; its word cache is only used where it provably gives the same
//! ids), so the HF pipeline's per-word model calls would not give sentencepiece's ids.
//!
//! Offsets: a piece covering normalized bytes `a..b` came from input bytes
//! `to_orig[a]..to_orig[b]` (sentencepiece's `norm_to_orig`).

use std::sync::Arc;

use rayon::prelude::*;

use crate::batch_text::BatchText;
use crate::encoding::{Encoding, TokenTable};
use crate::spm::encode::SpmBpeModel;
use crate::piece_index::PieceIndex;
use crate::spm::{PieceType, SpmNormalizer, WS};
use crate::unigram::lattice::Rng;
use crate::unigram::{Compat, PieceKind, UnigramModel};

/// Texts per rayon task at least (one line is about a microsecond of work).
const BATCH_MIN_LEN: usize = 256;

/// Per rayon task: the ids of its texts back to back, and how many belong to each text.
pub type FlatIds = (Vec<u32>, Vec<u32>);

/// Which sentencepiece algorithm segments the normalized text. One per tokenizer, so the size
/// difference of the variants costs nothing worth a box.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum SpmAlgorithm {
    Unigram(UnigramModel),
    Bpe(SpmBpeModel),
}

/// A SentencePiece model ready to encode and decode.
#[derive(Debug, Clone)]
pub struct SpmPipeline {
    normalizer: SpmNormalizer,
    algorithm: SpmAlgorithm,
    kinds: Vec<PieceType>,
    table: Arc<TokenTable>,
    /// `token_to_id`: every piece, the first id of a repeated string winning.
    ids: PieceIndex,
    unk_id: u32,
    unk_surface: String,
}

impl SpmPipeline {
    /// `pieces` in id order as `(piece, score, ModelProto type)`; `model_type` 1 (Unigram) or 2 (BPE).
    pub fn new(
        pieces: Vec<(String, f32, i32)>,
        model_type: i32,
        normalizer: SpmNormalizer,
        byte_fallback: bool,
        unk_surface: String,
    ) -> Result<Self, String> {
        let kinds = pieces.iter().map(|p| PieceType::from_proto(p.2)).collect::<Result<Vec<_>, _>>()?;
        let unk_id = kinds
            .iter()
            .position(|k| *k == PieceType::Unknown)
            .ok_or("the model has no unknown piece (type UNKNOWN)")? as u32;
        let scores: Vec<f32> = pieces.iter().map(|p| p.1).collect();
        let table = Arc::new(TokenTable { strings: pieces.into_iter().map(|p| p.0).collect() });
        // One index of the strings the table already holds, for `token_to_id` and (when no string
        // repeats, so every hit is the piece BPE would find) for the BPE model's lookups too.
        let (ids, repeat) = PieceIndex::build(table.clone(), |_| true);
        let algorithm = match model_type {
            1 => {
                let pieces = table.strings.iter().zip(&scores).zip(&kinds);
                let scored = pieces.clone().map(|((p, s), _)| (p.clone(), f64::from(*s))).collect();
                let kinds = pieces.map(|(_, k)| PieceKind::from_proto(*k as i32)).collect::<Result<Vec<_>, _>>()?;
                SpmAlgorithm::Unigram(UnigramModel::new(scored, Some(kinds), Some(unk_id), byte_fallback, Compat::Spm)?)
            }
            2 => SpmAlgorithm::Bpe(SpmBpeModel::from_table(
                table.clone(),
                scores,
                kinds.clone(),
                repeat.is_none().then(|| ids.clone()),
                normalizer.clone(),
                byte_fallback,
            )?),
            3 => return Err("model_type WORD (3) is not supported (Unigram and BPE are)".into()),
            4 => return Err("model_type CHAR (4) is not supported (Unigram and BPE are)".into()),
            t => return Err(format!("unknown model_type {t} (1 is Unigram, 2 is BPE)")),
        };
        Ok(SpmPipeline { normalizer, algorithm, kinds, table, ids, unk_id, unk_surface })
    }

    /// What `decode` reads: the piece types, `add_dummy_prefix`, `remove_extra_whitespaces`, the unknown surface.
    pub(crate) fn decode_parts(&self) -> (&[PieceType], bool, bool, &str) {
        (&self.kinds, self.normalizer.add_dummy_prefix, self.normalizer.remove_extra_whitespaces, &self.unk_surface)
    }

    pub fn table(&self) -> &Arc<TokenTable> {
        &self.table
    }

    pub fn vocab_size(&self) -> usize {
        self.kinds.len()
    }

    /// The id of the unknown piece.
    pub fn unk_id(&self) -> u32 {
        self.unk_id
    }

    pub fn token_to_id(&self, t: &str) -> Option<u32> {
        self.ids.get(t)
    }

    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        self.table.strings.get(id as usize).map(String::as_str)
    }

    /// The text as the model sees it (normalized, spaces as `▁`).
    pub fn normalize(&self, text: &str) -> String {
        self.normalizer.normalize(text)
    }

    /// Ids, token strings and byte offsets into `text`.
    pub fn encode(&self, text: &str) -> Result<Encoding, String> {
        let (norm, to_orig) = self.normalizer.normalize_aligned(text);
        let pieces = match &self.algorithm {
            SpmAlgorithm::Unigram(m) => m.encode(&norm)?,
            SpmAlgorithm::Bpe(m) => {
                let mut ids = Vec::new();
                m.encode_normalized(&norm, &mut ids);
                self.bpe_ranges(&norm, &ids)
            }
        };
        Ok(self.encoding(&norm, &pieces, &to_orig))
    }

    /// Ids only, through the encoders' fast paths (word caches).
    pub fn encode_ids(&self, text: &str, buf: &mut String, out: &mut Vec<u32>) -> Result<(), String> {
        match &self.algorithm {
            SpmAlgorithm::Unigram(m) => {
                self.normalizer.normalize_into(text, buf);
                m.encode_ids_into(buf, out)
            }
            SpmAlgorithm::Bpe(m) => {
                m.encode_into(text, buf, out);
                Ok(())
            }
        }
    }

    /// [`Self::encode`] of many texts, in parallel. With a one-thread pool the batch stays on the
    /// calling thread ([`crate::parallel::parallel_useful`]), whose word caches its single-text calls
    /// filled.
    pub fn encode_batch(&self, texts: &[&str]) -> Result<Vec<Encoding>, String> {
        if texts.len() < 2 || !crate::parallel::parallel_useful() {
            return texts.iter().map(|t| self.encode(t)).collect();
        }
        texts.par_iter().with_min_len(16).map(|t| self.encode(t)).collect()
    }

    /// Ids of many texts in parallel: per rayon task, the ids back to back and the count per text.
    /// With a one-thread pool the batch stays on the calling thread, as in [`Self::encode_batch`]: on
    /// the pool's one worker it found none of the words the caller's own calls had cached (Unigram 32k,
    /// a 0.3 MB Chinese text then its lines at one thread: the lines took 15 ms, 7 ms when encoded a
    /// second time).
    pub fn encode_batch_ids_flat<S: BatchText>(&self, texts: &[S]) -> Result<Vec<FlatIds>, String> {
        if texts.len() < BATCH_MIN_LEN || !crate::parallel::parallel_useful() {
            return Ok(vec![self.encode_ids_chunk(texts)?]);
        }
        let chunk = (texts.len() / (4 * rayon::current_num_threads())).clamp(BATCH_MIN_LEN, 8192);
        texts.par_chunks(chunk).map(|part| self.encode_ids_chunk(part)).collect()
    }

    /// The ids of consecutive texts on this thread, back to back, and the count per text (each
    /// text's ids are its own: a batch may be encoded chunk by chunk in any order). A text that is not
    /// UTF-8 yet is made so here, on the encoding thread (see [`BatchText`]).
    pub fn encode_ids_chunk<S: BatchText>(&self, part: &[S]) -> Result<FlatIds, String> {
        let mut ids = Vec::with_capacity(part.len() * 16);
        let mut lens = Vec::with_capacity(part.len());
        let mut buf = String::new();
        let mut scratch = Vec::new();
        for t in part {
            let before = ids.len();
            t.with_utf8(&mut scratch, |s| self.encode_ids(s, &mut buf, &mut ids)).map_err(|e| e.to_string())??;
            lens.push((ids.len() - before) as u32);
        }
        Ok((ids, lens))
    }

    /// The `n` best segmentations (Unigram only) with their scores, best first.
    pub fn nbest(&self, text: &str, n: usize) -> Result<Vec<(Encoding, f64)>, String> {
        let m = self.unigram("n-best segmentation")?;
        let (norm, to_orig) = self.normalizer.normalize_aligned(text);
        Ok(m.nbest(&norm, n)?.into_iter().map(|(p, s)| (self.encoding(&norm, &p, &to_orig), s)).collect())
    }

    /// `count` sampled segmentations (Unigram only), see [`UnigramModel::sample`].
    pub fn sample(&self, text: &str, alpha: f64, nbest_size: i64, seed: u64, count: usize) -> Result<Vec<Encoding>, String> {
        let m = self.unigram("sampling")?;
        let (norm, to_orig) = self.normalizer.normalize_aligned(text);
        let mut rng = Rng::new(seed);
        (0..count).map(|_| Ok(self.encoding(&norm, &m.sample(&norm, alpha, nbest_size, &mut rng)?, &to_orig))).collect()
    }

    fn unigram(&self, what: &str) -> Result<&UnigramModel, String> {
        match &self.algorithm {
            SpmAlgorithm::Unigram(m) => Ok(m),
            SpmAlgorithm::Bpe(_) => Err(format!("{what} needs a Unigram model; this SentencePiece model is BPE")),
        }
    }

    /// The Encoding of `pieces` (ids with byte ranges in `norm`). As in sentencepiece, the token of
    /// an unknown piece is the normalized text it covers, not `<unk>`.
    fn encoding(&self, norm: &str, pieces: &[(u32, usize, usize)], to_orig: &[usize]) -> Encoding {
        let mut enc = Encoding::with_capacity(pieces.len());
        let at = |i: usize| to_orig[i.min(to_orig.len() - 1)];
        for &(id, a, b) in pieces {
            let token = match norm.get(a..b) {
                Some(surface) if id == self.unk_id && !surface.is_empty() => enc.push_extra(surface),
                _ => id,
            };
            enc.push(id, token, (at(a), at(b)), 0, false);
        }
        enc
    }

    /// Byte ranges in `norm` of BPE ids (the BPE encoder reports ids only). Known pieces and
    /// `<0xXX>` bytes have their own length; an unknown piece runs to where the next piece's text
    /// starts. Consecutive unknowns are fused, as sentencepiece does.
    fn bpe_ranges(&self, norm: &str, ids: &[u32]) -> Vec<(u32, usize, usize)> {
        let mut out: Vec<(u32, usize, usize)> = Vec::with_capacity(ids.len());
        let mut pos = 0usize;
        for (k, &id) in ids.iter().enumerate() {
            let kind = self.kinds.get(id as usize).copied().unwrap_or(PieceType::Unknown);
            let len = match kind {
                PieceType::Byte => 1,
                PieceType::Unknown => self.unknown_len(norm, pos, ids.get(k + 1).copied()),
                _ => {
                    let p = self.table.get(id);
                    if norm.get(pos..).is_some_and(|rest| rest.starts_with(p)) {
                        p.len()
                    } else {
                        next_char_len(norm, pos)
                    }
                }
            };
            let end = (pos + len).min(norm.len());
            match out.last_mut() {
                Some(last) if id == self.unk_id && last.0 == self.unk_id => last.2 = end,
                _ => out.push((id, pos, end)),
            }
            pos = end;
        }
        out
    }

    fn unknown_len(&self, norm: &str, pos: usize, next: Option<u32>) -> usize {
        // `pos` is on a character boundary here (the bytes of a character are emitted together);
        // `get` keeps a surprise from panicking.
        let Some(rest) = norm.get(pos..) else { return 1 };
        let Some(next) = next else { return rest.len() };
        let first = next_char_len(norm, pos);
        match self.kinds.get(next as usize) {
            Some(PieceType::Byte) | Some(PieceType::Unknown) | None => first,
            Some(_) => {
                let p = self.table.get(next);
                rest.get(first..).and_then(|r| r.find(p)).map_or(first, |i| first + i)
            }
        }
    }

    /// sentencepiece's decode (`SentencePieceProcessor::Decode`, 0.2.x): control pieces vanish, unknowns
    /// read as the unknown surface (`" ⁇ "`), runs of `<0xXX>` become UTF-8 (invalid bytes as U+FFFD), `▁`
    /// becomes a space. At the start, with `add_dummy_prefix` or `remove_extra_whitespaces`, a piece's
    /// leading `▁` is dropped while nothing has been written and no piece has had its `▁` dropped yet;
    /// with `remove_extra_whitespaces` the second condition does not count. So Llama 2's `[▁, ▁x]` (no
    /// whitespace removal) decodes to `" x"`, and with removal to `"x"`.
    pub fn decode(&self, ids: &[u32]) -> String {
        let mut out = String::with_capacity(ids.len() * 4);
        // A run of `<0xXX>` pieces is decoded as a whole; any other piece, a control piece too, ends it.
        let mut run: Vec<u8> = Vec::new();
        let flush = |run: &mut Vec<u8>, out: &mut String| {
            if !run.is_empty() {
                out.push_str(&utf8_bytewise_lossy(run));
                run.clear();
            }
        };
        let norm = &self.normalizer;
        let consumes = norm.add_dummy_prefix || norm.remove_extra_whitespaces;
        let (mut is_bos_ws, mut bos_ws_seen) = (true, false);
        for &id in ids {
            let Some(kind) = self.kinds.get(id as usize) else { continue };
            if *kind == PieceType::Byte {
                if let Some(b) = crate::unigram::encode::parse_byte_piece(self.table.get(id)) {
                    run.push(b);
                }
                continue;
            }
            flush(&mut run, &mut out);
            if bos_ws_seen || !out.is_empty() {
                is_bos_ws = false;
            }
            bos_ws_seen = false;
            match kind {
                PieceType::Control => {}
                PieceType::Unknown => out.push_str(&self.unk_surface),
                _ => {
                    let mut piece = self.table.get(id);
                    if is_bos_ws && consumes {
                        if let Some(rest) = piece.strip_prefix(WS) {
                            piece = rest;
                            bos_ws_seen = !norm.remove_extra_whitespaces;
                        }
                    }
                    out.extend(piece.chars().map(|c| if c == WS { ' ' } else { c }));
                }
            }
        }
        flush(&mut run, &mut out);
        out
    }
}

/// UTF-8 with every byte of an invalid sequence read as one U+FFFD (sentencepiece's rule; Rust's
/// `from_utf8_lossy` gives one U+FFFD per maximal invalid sequence instead).
pub(crate) fn utf8_bytewise_lossy(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    loop {
        match std::str::from_utf8(bytes) {
            Ok(s) => {
                out.push_str(s);
                return out;
            }
            Err(e) => {
                let (good, rest) = bytes.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                out.push('\u{FFFD}');
                bytes = &rest[1..];
            }
        }
    }
}

fn next_char_len(s: &str, pos: usize) -> usize {
    s.get(pos..).and_then(|r| r.chars().next()).map_or(1, char::len_utf8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spm::SpmSpec;

    fn normalizer() -> SpmNormalizer {
        let spec = SpmSpec::from_json_str(r#"{"normalization_rule_name": "identity"}"#).expect("spec");
        SpmNormalizer::from_spec(&spec)
    }

    fn pieces() -> Vec<(String, f32, i32)> {
        let mut p = vec![("<unk>".to_string(), 0.0, 2), ("<s>".to_string(), 0.0, 3)];
        for (s, sc) in [("▁ab", -1.0), ("▁", -2.0), ("ab", -1.5), ("a", -3.0), ("b", -4.0)] {
            p.push((s.to_string(), sc, 1));
        }
        p
    }

    #[test]
    fn bpe_offsets_cover_the_input_and_unknowns_fuse() {
        let p = SpmPipeline::new(pieces(), 2, normalizer(), false, " \u{2047} ".into()).expect("model");
        let e = p.encode("ab  xyb").expect("encode");
        assert_eq!(e.ids, vec![2, 3, 0, 6]);
        assert_eq!(e.offsets, vec![(0, 2), (2, 4), (4, 6), (6, 7)]);
        assert_eq!(p.decode(&e.ids), "ab  \u{2047} b");
    }

    #[test]
    fn unigram_offsets_and_ids_only_path_agree() {
        let p = SpmPipeline::new(pieces(), 1, normalizer(), false, " \u{2047} ".into()).expect("model");
        let e = p.encode(" ab a").expect("encode");
        let mut buf = String::new();
        let mut ids = Vec::new();
        p.encode_ids(" ab a", &mut buf, &mut ids).expect("ids");
        assert_eq!(e.ids, ids);
        assert_eq!(p.decode(&e.ids), "ab a");
        assert!(p.nbest("ab", 3).expect("nbest").len() >= 2);
    }

    #[test]
    fn invalid_bytes_decode_one_replacement_each() {
        assert_eq!(utf8_bytewise_lossy(b"\xe6\x97 so"), "\u{FFFD}\u{FFFD} so");
        assert_eq!(utf8_bytewise_lossy("日\u{f6}".as_bytes()), "日\u{f6}");
        assert_eq!(utf8_bytewise_lossy(b"\xf0\x9f\x98"), "\u{FFFD}\u{FFFD}\u{FFFD}");
    }

    #[test]
    fn bad_models_are_refused() {
        let no_unk: Vec<_> = pieces().into_iter().skip(1).collect();
        assert!(SpmPipeline::new(no_unk, 1, normalizer(), false, String::new()).is_err());
        assert!(SpmPipeline::new(pieces(), 3, normalizer(), false, String::new()).is_err());
    }
}
