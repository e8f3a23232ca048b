//! HF `Metaspace` pre-tokenizer (tokenizers 0.23.3): every `' '` becomes the replacement char (`▁`),
//! one is prepended (per `prepend_scheme`) unless the text already starts with it, and, with `split`,
//! the text is cut before every replacement char (HF `MergedWithNext`: `"▁a▁▁b"` -> `▁a`, `▁`, `▁b`).
//!
//! The pieces are not slices of the input (each space is now 3 bytes), so each piece comes with the
//! byte range of the input that every one of its bytes comes from: a `▁` from the space it replaced,
//! the prepended `▁` from the first char of the text (HF's `prepend` alignment).

use serde_json::{json, Value};

/// When a `▁` is put before the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrependScheme {
    Always,
    /// Only before the text at the very start of the input (original offset 0): not after an added
    /// token, nor when a normalizer removed the first chars.
    First,
    Never,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metaspace {
    pub replacement: char,
    pub prepend_scheme: PrependScheme,
    pub split: bool,
}

/// A text after the Metaspace mapping, with, per byte, the byte range of the input it comes from.
#[derive(Default)]
pub struct Mapped {
    pub text: String,
    pub align: Vec<(usize, usize)>,
}

impl Metaspace {
    /// Parses `{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": true}`;
    /// files from before `prepend_scheme` carry `add_prefix_space` (true = always).
    pub fn from_json(v: &Value, owner: &str) -> Result<Self, String> {
        let rep = v.get("replacement").and_then(|x| x.as_str()).unwrap_or("\u{2581}");
        let mut it = rep.chars();
        let replacement = match (it.next(), it.next()) {
            (Some(c), None) => c,
            _ => return Err(format!("{owner} Metaspace: 'replacement' must be one char, got {rep:?}")),
        };
        let prepend_scheme = match v.get("prepend_scheme").and_then(|x| x.as_str()) {
            Some("always") => PrependScheme::Always,
            Some("first") => PrependScheme::First,
            Some("never") => PrependScheme::Never,
            Some(other) => {
                return Err(format!("{owner} Metaspace: unknown prepend_scheme {other:?} (always, first, never)"))
            }
            None => match v.get("add_prefix_space").and_then(|x| x.as_bool()) {
                Some(false) => PrependScheme::Never,
                _ => PrependScheme::Always,
            },
        };
        let split = v.get("split").and_then(|x| x.as_bool()).unwrap_or(true);
        Ok(Metaspace { replacement, prepend_scheme, split })
    }

    pub fn to_json(&self) -> Value {
        let scheme = match self.prepend_scheme {
            PrependScheme::Always => "always",
            PrependScheme::First => "first",
            PrependScheme::Never => "never",
        };
        json!({"type": "Metaspace", "replacement": self.replacement.to_string(), "prepend_scheme": scheme,
               "split": self.split})
    }

    /// Maps `text` into `out`. `at_start`: the text begins at original offset 0 (for `First`).
    pub fn map_into(&self, text: &str, at_start: bool, out: &mut Mapped) {
        out.text.clear();
        out.align.clear();
        let prepend = match self.prepend_scheme {
            PrependScheme::Always => true,
            PrependScheme::First => at_start,
            PrependScheme::Never => false,
        };
        let mut chars = text.char_indices().peekable();
        if let Some(&(_, first)) = chars.peek() {
            let first_mapped = if first == ' ' { self.replacement } else { first };
            if prepend && first_mapped != self.replacement {
                out.text.push(self.replacement);
                let r = (0, first.len_utf8());
                out.align.extend(std::iter::repeat_n(r, self.replacement.len_utf8()));
            }
        }
        for (i, c) in chars {
            let m = if c == ' ' { self.replacement } else { c };
            out.text.push(m);
            out.align.extend(std::iter::repeat_n((i, i + c.len_utf8()), m.len_utf8()));
        }
    }

    /// Calls `f(start, end)` for each piece of a mapped text (byte ranges of `mapped`).
    pub fn split(&self, mapped: &str, mut f: impl FnMut(usize, usize)) {
        if mapped.is_empty() {
            return;
        }
        if !self.split {
            f(0, mapped.len());
            return;
        }
        let mut start = 0;
        for (i, c) in mapped.char_indices() {
            if c == self.replacement && i > start {
                f(start, i);
                start = i;
            }
        }
        f(start, mapped.len());
    }

    /// Pieces with byte offsets into `text` (what HF's `pre_tokenize_str` gives, in bytes).
    pub fn pre_tokenize(&self, text: &str, at_start: bool) -> Vec<(String, (usize, usize))> {
        let mut m = Mapped::default();
        self.map_into(text, at_start, &mut m);
        let mut out = Vec::new();
        self.split(&m.text, |a, b| out.push((m.text[a..b].to_string(), (m.align[a].0, m.align[b - 1].1))));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_and_offsets_match_hf() {
        // Expected values from tokenizers 0.23.3 `Metaspace().pre_tokenize_str` (chars = bytes here).
        let m = Metaspace { replacement: '\u{2581}', prepend_scheme: PrependScheme::Always, split: true };
        assert_eq!(
            m.pre_tokenize("Hey   friend!", true),
            vec![
                ("\u{2581}Hey".to_string(), (0, 3)),
                ("\u{2581}".to_string(), (3, 4)),
                ("\u{2581}".to_string(), (4, 5)),
                ("\u{2581}friend!".to_string(), (5, 13)),
            ]
        );
        assert_eq!(m.pre_tokenize(" a", true), vec![("\u{2581}a".to_string(), (0, 2))]);
        assert!(m.pre_tokenize("", true).is_empty());
        let never = Metaspace { prepend_scheme: PrependScheme::Never, ..m.clone() };
        assert_eq!(
            never.pre_tokenize("ab c", true),
            vec![("ab".to_string(), (0, 2)), ("\u{2581}c".to_string(), (2, 4))]
        );
        let whole = Metaspace { split: false, ..m };
        assert_eq!(whole.pre_tokenize("a b", false), vec![("\u{2581}a\u{2581}b".to_string(), (0, 3))]);
    }
}
