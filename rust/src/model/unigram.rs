//! The `Unigram` model of an HF tokenizer.json, run with HF's rules (`unigram::Compat::Hf`: f64
//! Viterbi over every piece, consecutive unknowns fused, byte fallback when all `<0xXX>` exist).
//!
//! What HF reports per token (tokenizers 0.23.3, `models/unigram/model.rs::tokenize`), kept here:
//! - a byte-fallback run: one token per byte, EVERY one with the offsets of the whole fused unknown
//!   text (not one byte each);
//! - an unknown run without byte fallback: the unk id, whose token STRING is the unknown text itself
//!   (e.g. `"☃☃"`), not the unk piece; decoding the id gives the unk piece.

use ahash::AHashMap;
use serde_json::Value;

use crate::unigram::{Compat, UnigramModel};

/// One token of a word: id, byte range in the word, and whether its string is the word's text
/// there (unknown runs) rather than the vocab piece.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ranged {
    pub id: u32,
    pub start: usize,
    pub end: usize,
    pub text_is_token: bool,
}

#[derive(Clone, Debug)]
pub struct UnigramPipe {
    model: UnigramModel,
    vocab: AHashMap<String, u32>,
}

impl UnigramPipe {
    /// Parses `{"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ...], "byte_fallback": false}`.
    pub fn from_json(v: &Value) -> Result<Self, String> {
        let items = v.get("vocab").and_then(|x| x.as_array()).ok_or("model Unigram: missing list 'vocab'")?;
        if items.is_empty() {
            return Err("model Unigram: the vocab is empty".into());
        }
        let mut pieces = Vec::with_capacity(items.len());
        for (i, it) in items.iter().enumerate() {
            let pair = it.as_array().filter(|a| a.len() == 2);
            match pair.map(|a| (a[0].as_str(), a[1].as_f64())) {
                Some((Some(p), Some(s))) => pieces.push((p.to_string(), s)),
                _ => return Err(format!("model Unigram: vocab[{i}] must be [piece, score], got {it}")),
            }
        }
        let unk_id = match v.get("unk_id") {
            None | Some(Value::Null) => None,
            Some(x) => Some(
                x.as_u64()
                    .filter(|&u| (u as usize) < pieces.len())
                    .ok_or_else(|| format!("model Unigram: unk_id {x} is not an index of the vocab"))?
                    as u32,
            ),
        };
        let byte_fallback = crate::postprocess::get_bool(v, "byte_fallback", false);
        Self::new(pieces, unk_id, byte_fallback)
    }

    pub fn new(pieces: Vec<(String, f64)>, unk_id: Option<u32>, byte_fallback: bool) -> Result<Self, String> {
        // HF's token -> id map keeps the LAST id of a repeated piece.
        let vocab = pieces.iter().enumerate().map(|(i, (p, _))| (p.clone(), i as u32)).collect();
        let model = UnigramModel::new(pieces, None, unk_id, byte_fallback, Compat::Hf)?;
        Ok(UnigramPipe { model, vocab })
    }

    pub fn token_to_id(&self, t: &str) -> Option<u32> {
        self.vocab.get(t).copied()
    }

    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        self.model.pieces.get(id as usize).map(|p| p.0.as_str())
    }

    pub fn vocab_size(&self) -> usize {
        self.model.pieces.len()
    }

    pub fn unk_id(&self) -> Option<u32> {
        self.model.unk_id
    }

    /// Tokens of `word` with HF's offsets (see the module notes).
    pub fn tokenize_ranges(&self, word: &str, out: &mut Vec<Ranged>) -> Result<(), String> {
        let pieces = self.model.encode(word).map_err(|_| {
            "Encountered an unknown token but `unk_id` is missing (Unigram model without unk_id)".to_string()
        })?;
        let mut k = 0;
        while k < pieces.len() {
            let (id, s, e) = pieces[k];
            let piece_len = self.model.pieces[id as usize].0.len();
            if e - s == 1
                && piece_len != 1
                && self.model.byte_fallback
                && is_byte_piece(&self.model.pieces[id as usize].0)
            {
                // A byte-fallback run (the model spells unknowns one byte per token): give every byte
                // token the range of the whole run.
                let mut j = k;
                while j + 1 < pieces.len()
                    && pieces[j + 1].1 == pieces[j].2
                    && pieces[j + 1].2 - pieces[j + 1].1 == 1
                    && {
                        let p = &self.model.pieces[pieces[j + 1].0 as usize].0;
                        p.len() != 1 && is_byte_piece(p)
                    }
                {
                    j += 1;
                }
                let end = pieces[j].2;
                for p in &pieces[k..=j] {
                    out.push(Ranged { id: p.0, start: s, end, text_is_token: false });
                }
                k = j + 1;
                continue;
            }
            let unk = Some(id) == self.model.unk_id;
            out.push(Ranged { id, start: s, end: e, text_is_token: unk });
            k += 1;
        }
        Ok(())
    }

    /// Ids only.
    pub fn ids_into(&self, word: &str, out: &mut Vec<u32>) -> Result<(), String> {
        let pieces = self.model.encode(word).map_err(|_| {
            "Encountered an unknown token but `unk_id` is missing (Unigram model without unk_id)".to_string()
        })?;
        out.extend(pieces.iter().map(|p| p.0));
        Ok(())
    }
}

fn is_byte_piece(p: &str) -> bool {
    crate::unigram::encode::parse_byte_piece(p).is_some()
}
