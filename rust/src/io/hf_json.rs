//! The fast read of an HF tokenizer.json: the model's `vocab` and `merges` are parsed here into
//! [`ModelData`], and the rest of the document (the "skeleton": the same text with `{}` and `[]` in
//! their place) goes back to the Python reader, which checks and builds everything else as it always
//! did. Only BPE and WordPiece models are taken, and only when the data passes every check the
//! Python model classes make (`subword/model.py`) without a warning; otherwise [`split`] says `None`
//! and the Python reader loads the whole file (and reports what is wrong).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;

use ahash::AHashMap;
use serde::de::{self, DeserializeSeed, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::{BpeMerges, ModelData};

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
    serde_json::from_str(raw.get()).ok()
}

/// A JSON string, borrowed from the document when it has no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// One merge, `["a", "b"]` or the legacy `"a b"` (exactly one space, as Python's `split(" ")`).
struct Merge<'a>(Cow<'a, str>, Cow<'a, str>);

impl<'de> Deserialize<'de> for Merge<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Merge<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a pair of strings or an 'a b' string")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let a: Text<'de> = seq.next_element()?.ok_or_else(|| de::Error::custom("short merge"))?;
                let b: Text<'de> = seq.next_element()?.ok_or_else(|| de::Error::custom("short merge"))?;
                if seq.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(de::Error::custom("long merge"));
                }
                Ok(Merge(a.0, b.0))
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                let (a, b) = legacy(v).ok_or_else(|| E::custom("bad merge"))?;
                Ok(Merge(Cow::Borrowed(a), Cow::Borrowed(b)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                let (a, b) = legacy(v).ok_or_else(|| E::custom("bad merge"))?;
                Ok(Merge(Cow::Owned(a.to_string()), Cow::Owned(b.to_string())))
            }
        }
        d.deserialize_any(V)
    }
}

fn legacy(s: &str) -> Option<(&str, &str)> {
    let (a, b) = s.split_once(' ')?;
    (!b.contains(' ')).then_some((a, b))
}

/// The merges resolved to ids while they are read, with Python's rule for the merged token (the
/// right part loses `prefix` only when it starts with it); `None` when a token is not in the vocab.
struct MergeIds<'v> {
    vocab: &'v HashMap<String, u32, ahash::RandomState>,
    prefix: &'v str,
}

impl<'de> DeserializeSeed<'de> for MergeIds<'_> {
    /// The id triples, and whether every right part starts with the prefix (so that HF's rule,
    /// which strips it unconditionally, makes the same merged tokens).
    type Value = Option<(Vec<(u32, u32, u32)>, bool)>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V<'v>(MergeIds<'v>);
        impl<'de> Visitor<'de> for V<'_> {
            type Value = Option<(Vec<(u32, u32, u32)>, bool)>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of merges")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let (vocab, prefix) = (self.0.vocab, self.0.prefix);
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
                let mut all_prefixed = true;
                let mut merged = String::new();
                let mut ok = true;
                while let Some(Merge(a, b)) = seq.next_element::<Merge<'de>>()? {
                    if !ok {
                        continue; // read to the end; the answer is already no
                    }
                    let starts = !prefix.is_empty() && b.starts_with(prefix);
                    all_prefixed &= prefix.is_empty() || starts;
                    let tail = if starts { &b[prefix.len()..] } else { &b[..] };
                    merged.clear();
                    merged.push_str(&a);
                    merged.push_str(tail);
                    match (vocab.get(&*a), vocab.get(&*b), vocab.get(&merged)) {
                        (Some(&x), Some(&y), Some(&z)) => out.push((x, y, z)),
                        _ => ok = false,
                    }
                }
                Ok(ok.then_some((out, all_prefixed)))
            }
        }
        d.deserialize_seq(V(self))
    }
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
) -> Option<BpeMerges> {
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
    let mut de = serde_json::Deserializer::from_str(merges_raw.get());
    let (ids, all_prefixed) = MergeIds { vocab, prefix: &prefix }.deserialize(&mut de).ok()??;
    if all_prefixed {
        return Some(BpeMerges::Ids(ids));
    }
    // A right part without the prefix: the model applies HF's rule to the pairs themselves.
    let pairs: Vec<Merge<'_>> = serde_json::from_str(merges_raw.get()).ok()?;
    Some(BpeMerges::Pairs(pairs.into_iter().map(|Merge(a, b)| (a.into_owned(), b.into_owned())).collect()))
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
