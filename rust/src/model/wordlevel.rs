//! HF `WordLevel`: each word is looked up whole; a word not in the vocabulary is the unknown token
//! (an error when the unknown token itself is not in the vocabulary, as HF's "Missing [UNK] token").

use std::sync::Arc;

use ahash::AHashMap;

use crate::bpe::encode::Sym;
use crate::encoding::TokenTable;

#[derive(Debug, Clone)]
pub struct WordLevelModel {
    vocab: AHashMap<String, u32>,
    table: Arc<TokenTable>,
    unk_token: String,
    unk_id: Option<u32>,
}

impl WordLevelModel {
    /// From an HF `"model"` section: `vocab` (token -> id) and `unk_token` (HF's default `<unk>`).
    pub fn from_json(v: &serde_json::Value) -> Result<Self, String> {
        let obj = v.get("vocab").and_then(|x| x.as_object()).ok_or("model WordLevel: missing object 'vocab'")?;
        let mut vocab = AHashMap::with_capacity(obj.len());
        for (k, id) in obj {
            let id = id
                .as_u64()
                .and_then(|x| u32::try_from(x).ok())
                .ok_or_else(|| format!("model WordLevel: the id of {k:?} must be an integer below 2^32, got {id}"))?;
            vocab.insert(k.clone(), id);
        }
        let unk_token = match v.get("unk_token") {
            None | Some(serde_json::Value::Null) => "<unk>".to_string(),
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(other) => return Err(format!("model WordLevel: 'unk_token' must be a string, got {other}")),
        };
        Ok(Self::new(vocab, unk_token))
    }

    pub fn new(vocab: AHashMap<String, u32>, unk_token: String) -> Self {
        let bound = vocab.values().map(|&i| i as usize + 1).max().unwrap_or(0);
        let mut strings = vec![String::new(); bound];
        for (t, &i) in &vocab {
            strings[i as usize] = t.clone();
        }
        let unk_id = vocab.get(&unk_token).copied();
        WordLevelModel { vocab, table: Arc::new(TokenTable { strings }), unk_token, unk_id }
    }

    pub fn token_to_id(&self, t: &str) -> Option<u32> {
        self.vocab.get(t).copied()
    }

    pub fn id_to_token(&self, id: u32) -> Option<&str> {
        // Ids may have gaps (an empty slot in the table): a slot is a token only if the vocab says so.
        let s = self.table.strings.get(id as usize)?;
        (self.vocab.get(s) == Some(&id)).then_some(s.as_str())
    }

    pub fn unk_token(&self) -> &str {
        &self.unk_token
    }

    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    pub fn id_bound(&self) -> usize {
        self.table.strings.len()
    }

    pub fn token_table(&self) -> &Arc<TokenTable> {
        &self.table
    }

    /// The word's id (or the unknown token's) with the word's length.
    pub fn tokenize_into(&self, word: &str, out: &mut Vec<Sym>) -> Result<(), String> {
        if word.is_empty() {
            return Ok(());
        }
        let len = u32::try_from(word.len()).map_err(|_| "model WordLevel: word longer than 4 GiB".to_string())?;
        match self.vocab.get(word).copied().or(self.unk_id) {
            Some(id) => {
                out.push((id, len));
                Ok(())
            }
            None => Err(format!("WordLevel: the unknown token {:?} is not in the vocabulary (HF: Missing [UNK] token)", self.unk_token)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_words_and_the_unknown_token() {
        let m = WordLevelModel::from_json(&serde_json::json!({"vocab": {"a": 0, "[UNK]": 2}, "unk_token": "[UNK]"})).unwrap();
        let mut out = Vec::new();
        m.tokenize_into("a", &mut out).unwrap();
        m.tokenize_into("bc", &mut out).unwrap();
        assert_eq!(out, vec![(0, 1), (2, 2)]);
        assert_eq!((m.id_to_token(1), m.id_to_token(2)), (None, Some("[UNK]")));
        let no_unk = WordLevelModel::from_json(&serde_json::json!({"vocab": {"a": 0}})).unwrap();
        assert!(no_unk.tokenize_into("b", &mut out).is_err());
    }
}
