//! The model of a tokenizer pipeline: one enum over the model kinds, so `tokenizer.rs` stays
//! generic. Each arm forwards to its own module (`bpe/encode.rs`, `wordpiece.rs`,
//! `model/unigram.rs`); add a kind by adding a variant and its arms here.
//!
//! Unigram tokens are not consecutive byte lengths (a byte-fallback run shares one range), so the
//! pipeline asks it for ranges ([`Model::as_unigram`]); the length-based methods here serve the ids.

pub mod unigram;
pub mod wordlevel;

use crate::bpe::encode::{BpeModel, Sym};
use crate::wordpiece::WordPieceModel;
pub use unigram::{Ranged, UnigramPipe};
pub use wordlevel::WordLevelModel;

/// A tokenizer model. One per tokenizer, matched on per word: boxing the large BPE variant would only
/// add an indirection to the hot path.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)]
pub enum Model {
    Bpe(BpeModel),
    WordPiece(WordPieceModel),
    Unigram(UnigramPipe),
    WordLevel(WordLevelModel),
}

impl From<BpeModel> for Model {
    fn from(m: BpeModel) -> Self {
        Model::Bpe(m)
    }
}

impl From<WordPieceModel> for Model {
    fn from(m: WordPieceModel) -> Self {
        Model::WordPiece(m)
    }
}

impl Model {
    /// Parses an HF tokenizer.json model section, by its `"type"` (files without one are BPE).
    pub fn from_json(v: &serde_json::Value) -> Result<Self, String> {
        match v.get("type").and_then(|t| t.as_str()) {
            Some("WordPiece") => Ok(Model::WordPiece(WordPieceModel::from_json(v)?)),
            Some("Unigram") => Ok(Model::Unigram(UnigramPipe::from_json(v)?)),
            Some("WordLevel") => Ok(Model::WordLevel(WordLevelModel::from_json(v)?)),
            _ => Ok(Model::Bpe(crate::tokenizer::parse_bpe(v)?)),
        }
    }

    /// The model of a section's options (type and settings; its data fields are not read) and
    /// data read apart (`io/`).
    pub fn from_options_and_data(v: &serde_json::Value, data: crate::io::ModelData) -> Result<Self, String> {
        use crate::io::{BpeMerges, ModelData};
        match (v.get("type").and_then(|t| t.as_str()), data) {
            (Some("WordPiece"), ModelData::WordPiece { vocab }) => {
                Ok(Model::WordPiece(WordPieceModel::from_options(v, vocab)?))
            }
            (Some("WordPiece"), ModelData::WordPieceTable { index }) => {
                Ok(Model::WordPiece(WordPieceModel::from_options_index(v, index)?))
            }
            (None | Some("BPE"), ModelData::Bpe { vocab, merges: BpeMerges::Pairs(merges) }) => {
                Ok(Model::Bpe(crate::tokenizer::bpe_from_data(v, vocab, &merges)?))
            }
            (None | Some("BPE"), ModelData::Bpe { vocab, merges: BpeMerges::Ids(merges) }) => {
                let opts = crate::tokenizer::bpe_options(v)?;
                Ok(Model::Bpe(BpeModel::from_id_merges(vocab, &merges, opts).map_err(|e| e.to_string())?))
            }
            (ty, _) => Err(format!("model data does not match the model type {ty:?}")),
        }
    }

    pub fn as_bpe(&self) -> Option<&BpeModel> {
        match self {
            Model::Bpe(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_unigram(&self) -> Option<&UnigramPipe> {
        match self {
            Model::Unigram(m) => Some(m),
            _ => None,
        }
    }

    pub fn token_to_id(&self, t: &str) -> Option<u32> {
        match self {
            Model::Bpe(m) => m.token_to_id(t),
            Model::WordPiece(m) => m.token_to_id(t),
            Model::Unigram(m) => m.token_to_id(t),
            Model::WordLevel(m) => m.token_to_id(t),
        }
    }

    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        match self {
            Model::Bpe(m) => m.id_to_token(id),
            Model::WordPiece(m) => m.id_to_token(id),
            Model::Unigram(m) => m.id_to_token(id),
            Model::WordLevel(m) => m.id_to_token(id),
        }
    }

    /// The unknown token's text (`None`: the model has none): BPE's and WordPiece's option, a Unigram's
    /// piece at its `unk_id`.
    pub fn unk_token(&self) -> Option<&str> {
        match self {
            Model::Bpe(m) => m.options().unk_token.as_deref(),
            Model::WordPiece(m) => Some(m.unk_token()),
            Model::Unigram(m) => m.unk_id().and_then(|i| m.id_to_token(i)),
            Model::WordLevel(m) => Some(m.unk_token()),
        }
    }

    pub fn vocab_size(&self) -> usize {
        match self {
            Model::Bpe(m) => m.vocab_size(),
            Model::WordPiece(m) => m.vocab_size(),
            Model::Unigram(m) => m.vocab_size(),
            Model::WordLevel(m) => m.vocab_size(),
        }
    }

    pub fn id_bound(&self) -> usize {
        match self {
            Model::Bpe(m) => m.id_bound(),
            Model::WordPiece(m) => m.id_bound(),
            Model::Unigram(m) => m.vocab_size(),
            Model::WordLevel(m) => m.id_bound(),
        }
    }

    /// The model's own tokens by id (`""` where no token has the id), where it keeps them in a
    /// table the tokenizer can share instead of copying every token.
    pub fn token_table(&self) -> Option<&std::sync::Arc<crate::encoding::TokenTable>> {
        match self {
            Model::WordPiece(m) => Some(m.token_table()),
            Model::WordLevel(m) => Some(m.token_table()),
            Model::Bpe(_) | Model::Unigram(_) => None,
        }
    }

    pub fn has_byte_fast_path(&self) -> bool {
        match self {
            Model::Bpe(m) => m.has_byte_fast_path(),
            Model::WordPiece(_) | Model::Unigram(_) | Model::WordLevel(_) => false,
        }
    }

    /// (dropout, seed) for pickling; models without dropout give (None, 0).
    pub fn dropout_settings(&self) -> (Option<f32>, u64) {
        match self {
            Model::Bpe(m) => (m.options().dropout, m.options().dropout_seed),
            Model::WordPiece(_) | Model::Unigram(_) | Model::WordLevel(_) => (None, 0),
        }
    }

    pub fn set_dropout(&mut self, p: Option<f32>, seed: u64) -> Result<(), String> {
        match self {
            Model::Bpe(m) => m.set_dropout(p, seed).map_err(|e| e.to_string()),
            Model::WordPiece(_) | Model::Unigram(_) | Model::WordLevel(_) if p.is_none_or(|x| x == 0.0) => Ok(()),
            Model::WordLevel(_) => Err("dropout is not supported by the WordLevel model".into()),
            Model::WordPiece(_) => Err("dropout is not supported by the WordPiece model".into()),
            Model::Unigram(_) => Err("dropout is not supported by the Unigram model".into()),
        }
    }

    /// Tokenizes one word, appending symbols (id, length in bytes of `word`) to `out`. For Unigram
    /// the lengths of a byte-fallback run are one byte each (the pipeline uses ranges instead).
    pub fn tokenize_into(&self, word: &str, salt: u64, out: &mut Vec<Sym>) -> Result<(), String> {
        match self {
            Model::Bpe(m) => m.tokenize_into(word, salt, out).map_err(|e| e.to_string()),
            Model::WordPiece(m) => m.tokenize_into(word, out).map_err(|e| e.to_string()),
            Model::WordLevel(m) => m.tokenize_into(word, out),
            Model::Unigram(m) => {
                let mut r = Vec::new();
                m.tokenize_ranges(word, &mut r)?;
                let mut pos = 0;
                for t in r {
                    let end = t.end.max(pos + 1).min(word.len()).max(pos);
                    out.push((t.id, (end - pos) as u32));
                    pos = end;
                }
                Ok(())
            }
        }
    }

    /// Like [`Self::tokenize_into`], handing the symbols to `sink`.
    pub fn tokenize_with(&self, word: &str, salt: u64, sink: impl FnOnce(&[Sym])) -> Result<(), String> {
        match self {
            Model::Bpe(m) => m.tokenize_with(word, salt, sink).map_err(|e| e.to_string()),
            Model::WordPiece(m) => m.tokenize_with(word, sink).map_err(|e| e.to_string()),
            Model::WordLevel(m) => WP_BUF.with(|b| {
                let mut b = b.borrow_mut();
                b.clear();
                m.tokenize_into(word, &mut b)?;
                sink(&b);
                Ok(())
            }),
            Model::Unigram(m) => WP_BUF.with(|b| {
                let mut b = b.borrow_mut();
                b.clear();
                let mut ids = Vec::new();
                m.ids_into(word, &mut ids)?;
                // Only the ids are read on this path.
                b.extend(ids.into_iter().map(|id| (id, 0)));
                sink(&b);
                Ok(())
            }),
        }
    }

    /// Byte-level fast path (BPE only; callers check [`Self::has_byte_fast_path`]).
    pub fn tokenize_raw_bytes(&self, raw: &[u8], salt: u64, out: &mut Vec<Sym>) -> Result<(), String> {
        match self {
            Model::Bpe(m) => m.tokenize_raw_bytes(raw, salt, out).map_err(|e| e.to_string()),
            _ => Err("no byte-level fast path for this model".into()),
        }
    }

    /// [`BpeModel::with_raw_pieces`] for a BPE model; `None` for the others.
    pub fn with_raw_pieces<R>(&self, f: impl FnOnce(&mut crate::bpe::encode::RawPieces<'_>) -> R) -> Option<R> {
        match self {
            Model::Bpe(m) => m.with_raw_pieces(f),
            _ => None,
        }
    }

    /// Like [`Self::tokenize_raw_bytes`], handing the symbols to `sink`.
    pub fn tokenize_raw_bytes_with(&self, raw: &[u8], salt: u64, sink: impl FnOnce(&[Sym])) -> Result<(), String> {
        match self {
            Model::Bpe(m) => m.tokenize_raw_bytes_with(raw, salt, sink).map_err(|e| e.to_string()),
            _ => Err("no byte-level fast path for this model".into()),
        }
    }
}

thread_local! {
    static WP_BUF: std::cell::RefCell<Vec<Sym>> = const { std::cell::RefCell::new(Vec::new()) };
}
