//! Readers that turn a tokenizer file's bytes straight into model data, for the fast load path of
//! `Tokenizer.from_file` (HF tokenizer.json, tiktoken ranks, BERT vocab.txt).
//!
//! Each reader returns `None` for any file it does not take exactly as the Python reader
//! (`subword/formats/`) would: a malformed or unusual file, or one whose loading has a side effect
//! such as a warning. The Python reader then loads it the slow way and is the one that reports
//! errors, so the fast path can never change a message or accept what the Python reader refuses.
//!
//! Performance notes
//! - tokenizer.json: the document is parsed once with `serde_json::value::RawValue` at the two top
//!   levels, so the model's `vocab` and `merges` are read straight into typed maps; the rest of the
//!   document (a few kB) goes back to Python as the "skeleton", which Python validates as before.
//! - tiktoken: the merges (every split of every token into two ranked tokens) are generated here;
//!   in Python that was 2 s for cl100k and 8 s for o200k.

pub mod hf_json;
pub mod tiktoken;
pub mod vocab_txt;

use std::collections::HashMap;

use ahash::AHashMap;

use crate::piece_index::PieceIndex;

/// The data of a model, without its options (those come from the tokenizer.json model section).
#[derive(Debug, Clone)]
pub enum ModelData {
    /// BPE: token -> id, and the merges in rank order.
    Bpe { vocab: HashMap<String, u32, ahash::RandomState>, merges: BpeMerges },
    /// WordPiece: token -> id.
    WordPiece { vocab: AHashMap<String, u32> },
    /// WordPiece whose ids are the positions of its tokens (a vocab.txt): the tokens by id and their
    /// index, which the model keeps as they are (no map is built and dropped on the way).
    WordPieceTable { index: PieceIndex },
}

/// The merges of a BPE model: as token pairs, or resolved to ids by a reader that checked them.
#[derive(Debug, Clone)]
pub enum BpeMerges {
    /// `(left, right)` token pairs (the model resolves them with HF's rules).
    Pairs(Vec<(String, String)>),
    /// `(left id, right id, merged id)`.
    Ids(Vec<(u32, u32, u32)>),
}

impl ModelData {
    /// The id of `token`.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        match self {
            ModelData::Bpe { vocab, .. } => vocab.get(token).copied(),
            ModelData::WordPiece { vocab } => vocab.get(token).copied(),
            ModelData::WordPieceTable { index } => index.get(token),
        }
    }

    /// Number of tokens.
    pub fn len(&self) -> usize {
        match self {
            ModelData::Bpe { vocab, .. } => vocab.len(),
            ModelData::WordPiece { vocab } => vocab.len(),
            ModelData::WordPieceTable { index } => index.table().strings.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether added tokens `(id, content)` pass the checks of the Python `Tokenizer._set_added`:
    /// a token in the vocab keeps its vocab id, an id of the vocab is not given to another text, and
    /// no two added tokens share an id.
    pub fn added_tokens_fit(&self, added: &[(u32, String)]) -> bool {
        let wanted: AHashMap<u32, &str> = added.iter().map(|(id, c)| (*id, c.as_str())).collect();
        if wanted.len() != added.len() {
            return false; // two added tokens share an id
        }
        if added.iter().any(|(id, c)| self.token_to_id(c).is_some_and(|v| v != *id)) {
            return false;
        }
        let clash = |t: &String, id: &u32| wanted.get(id).is_some_and(|c| *c != t.as_str());
        match self {
            ModelData::Bpe { vocab, .. } => !vocab.iter().any(|(t, id)| clash(t, id)),
            ModelData::WordPiece { vocab } => !vocab.iter().any(|(t, id)| clash(t, id)),
            // every id below the length is a token: look up the wanted ids instead of scanning
            ModelData::WordPieceTable { index } => {
                !wanted.iter().any(|(id, c)| index.table().strings.get(*id as usize).is_some_and(|t| t != c))
            }
        }
    }
}
