//! The fast read of an HF tokenizer.json: the model's `vocab` and `merges` are parsed here into
//! [`ModelData`], and the rest of the document (the "skeleton": the same text with `{}` and `[]` in
//! their place) goes back to the Python reader, which checks and builds everything else as it always
//! did. Only BPE and WordPiece models are taken, and only when the data passes every check the
//! Python model classes make (`subword/model.py`) without a warning; otherwise [`split`] says `None`
//! and the Python reader loads the whole file (and reports what is wrong).

use std::collections::{HashMap, HashSet};

use ahash::AHashMap;
use serde_json::value::RawValue;
use serde_json::Value;

use super::ModelData;

/// A tokenizer.json split into its model data and the rest.
#[derive(Debug)]
pub struct SplitJson {
    /// The document with the model's vocab replaced by `{}` and its merges by `[]`.
    pub skeleton: String,
    pub data: ModelData,
}

/// Byte range of `part` (a slice of `text`) in `text`.
fn span(text: &str, part: &str) -> Option<(usize, usize)> {
    let start = (part.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= text.len()).then_some((start, end))
}

/// The value of `key` in `obj`, parsed (`None` when absent).
fn value(obj: &HashMap<String, &RawValue>, key: &str) -> Option<Result<Value, serde_json::Error>> {
    obj.get(key).map(|raw| serde_json::from_str(raw.get()))
}

/// An optional string option: absent or null is `Some(None)`, a string `Some(Some(s))`, anything
/// else `None` (the Python reader refuses it).
fn opt_string(obj: &HashMap<String, &RawValue>, key: &str) -> Option<Option<String>> {
    match value(obj, key) {
        None => Some(None),
        Some(Ok(Value::Null)) => Some(None),
        Some(Ok(Value::String(s))) => Some(Some(s)),
        Some(_) => None,
    }
}

/// Token -> id with ids that fit in u32; `None` for anything else (negative, float, bool, too big).
fn parse_vocab(raw: &RawValue) -> Option<HashMap<String, u32, ahash::RandomState>> {
    let v: HashMap<String, u64, ahash::RandomState> = serde_json::from_str(raw.get()).ok()?;
    let mut out = HashMap::with_capacity_and_hasher(v.len(), ahash::RandomState::new());
    for (k, id) in v {
        out.insert(k, u32::try_from(id).ok()?);
    }
    Some(out)
}

/// Splits `text`; `None` when the fast path does not take this file (see the module notes).
pub fn split(text: &str) -> Option<SplitJson> {
    let top: HashMap<String, &RawValue> = serde_json::from_str(text).ok()?;
    let model: HashMap<String, &RawValue> = serde_json::from_str(top.get("model")?.get()).ok()?;
    let kind = match value(&model, "type") {
        None | Some(Ok(Value::Null)) if model.contains_key("merges") => "BPE",
        Some(Ok(Value::String(s))) if s == "BPE" || s == "WordPiece" => {
            if s == "BPE" {
                "BPE"
            } else {
                "WordPiece"
            }
        }
        _ => return None,
    };
    let vocab_raw = *model.get("vocab")?;
    let vocab = parse_vocab(vocab_raw)?;
    let (data, mut cuts) = if kind == "BPE" {
        let merges_raw = *model.get("merges")?;
        let merges = bpe_checked(&model, &vocab, merges_raw)?;
        (ModelData::Bpe { vocab, merges }, vec![(span(text, vocab_raw.get())?, "{}"), (span(text, merges_raw.get())?, "[]")])
    } else {
        let vocab: AHashMap<String, u32> = vocab.into_iter().collect();
        let ids: HashSet<u32> = vocab.values().copied().collect();
        if ids.len() != vocab.len() {
            return None; // two tokens share an id
        }
        // Python warns when the unknown token is missing; the slow path emits that warning.
        let unk = match value(&model, "unk_token") {
            None => "[UNK]".to_string(),
            Some(Ok(Value::String(s))) => s,
            Some(_) => return None,
        };
        if !vocab.contains_key(&unk) {
            return None;
        }
        (ModelData::WordPiece { vocab }, vec![(span(text, vocab_raw.get())?, "{}")])
    };
    cuts.sort_by_key(|c| c.0);
    let mut skeleton = String::with_capacity(text.len().min(1 << 16));
    let mut at = 0;
    for ((start, end), with) in cuts {
        skeleton.push_str(text.get(at..start)?);
        skeleton.push_str(with);
        at = end;
    }
    skeleton.push_str(text.get(at..)?);
    Some(SplitJson { skeleton, data })
}

/// The merges of a BPE model section when they and the vocab pass the checks of the Python `BPE`
/// (ids 0..n-1 each used once, the unknown token in the vocab, each merge a pair or a `"a b"`
/// string whose parts and merged token are in the vocab); `None` otherwise.
fn bpe_checked(
    model: &HashMap<String, &RawValue>,
    vocab: &HashMap<String, u32, ahash::RandomState>,
    merges_raw: &RawValue,
) -> Option<Vec<(String, String)>> {
    let mut seen = vec![false; vocab.len()];
    for &id in vocab.values() {
        // distinct ids below the count: no duplicates and no holes (Python logs a warning for holes)
        let slot = seen.get_mut(id as usize)?;
        if *slot {
            return None;
        }
        *slot = true;
    }
    if let Some(unk) = opt_string(model, "unk_token")? {
        if !vocab.contains_key(&unk) {
            return None;
        }
    }
    let prefix = opt_string(model, "continuing_subword_prefix")?.unwrap_or_default();
    let items: Vec<Value> = serde_json::from_str(merges_raw.get()).ok()?;
    let mut merges = Vec::with_capacity(items.len());
    let mut merged = String::new();
    for item in items {
        let (a, b) = match item {
            Value::String(s) => {
                let mut parts = s.split(' ');
                match (parts.next(), parts.next(), parts.next()) {
                    (Some(a), Some(b), None) => (a.to_string(), b.to_string()),
                    _ => return None,
                }
            }
            Value::Array(pair) if pair.len() == 2 => {
                let mut it = pair.into_iter();
                match (it.next(), it.next()) {
                    (Some(Value::String(a)), Some(Value::String(b))) => (a, b),
                    _ => return None,
                }
            }
            _ => return None,
        };
        if !vocab.contains_key(&a) || !vocab.contains_key(&b) {
            return None;
        }
        // Python's rule: the right part loses the prefix only when it starts with it.
        let tail = if !prefix.is_empty() && b.starts_with(prefix.as_str()) { &b[prefix.len()..] } else { b.as_str() };
        merged.clear();
        merged.push_str(&a);
        merged.push_str(tail);
        if !vocab.contains_key(&merged) {
            return None;
        }
        merges.push((a, b));
    }
    Some(merges)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_out_vocab_and_merges() {
        let text = r#"{"added_tokens": [], "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]], "unk_token": null}}"#;
        let s = split(text).expect("fast path");
        assert_eq!(s.skeleton, r#"{"added_tokens": [], "model": {"type": "BPE", "vocab": {}, "merges": [], "unk_token": null}}"#);
        assert_eq!(s.data.token_to_id("ab"), Some(2));
    }

    #[test]
    fn leaves_unusual_files_to_python() {
        for text in [
            r#"{"model": {"type": "BPE", "vocab": {"a": 0, "b": 2}, "merges": []}}"#, // a hole
            r#"{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "c"]]}}"#, // not in vocab
            r#"{"model": {"type": "BPE", "vocab": {"a": 0.0}, "merges": []}}"#,        // float id
            r#"{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b c"]}}"#,   // bad legacy merge
            r#"{"model": {"type": "Unigram", "vocab": [["a", 0.0]]}}"#,                // not taken
            r#"{"model": {"type": "WordPiece", "vocab": {"a": 0}}}"#,                  // no [UNK]: a warning
            r#"{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []"#,            // truncated
        ] {
            assert!(split(text).is_none(), "{text}");
        }
    }

    #[test]
    fn added_tokens_are_checked_against_the_vocab() {
        let s = split(r#"{"model": {"vocab": {"a": 0, "b": 1}, "merges": []}}"#).expect("fast path");
        assert!(s.data.added_tokens_fit(&[(2, "<s>".into()), (0, "a".into())]));
        assert!(!s.data.added_tokens_fit(&[(1, "a".into())])); // a has id 0
        assert!(!s.data.added_tokens_fit(&[(1, "<s>".into())])); // id 1 is b
        assert!(!s.data.added_tokens_fit(&[(2, "<s>".into()), (2, "</s>".into())]));
    }
}
