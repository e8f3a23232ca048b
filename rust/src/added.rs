//! Added (and special) tokens: matched in the text before the model sees it, never split.
//!
//! HF semantics (`tokenizer/added_vocabulary.rs`):
//! - tokens with `normalized: false` are matched in the RAW text; the rest of the text is then
//!   normalized and tokens with `normalized: true` are matched in the normalized text, using their
//!   normalized content as the pattern;
//! - matching is leftmost-longest and non-overlapping (HF uses Aho-Corasick in that mode; we scan
//!   with a first-byte filter, which gives the same matches and is cheap for the handful of tokens
//!   a tokenizer has);
//! - `single_word`: a match touching a word char (`\w`) on either side is discarded;
//! - `lstrip` / `rstrip`: the match grows over the whitespace before / after it (and its offsets
//!   cover that whitespace);
//! - `special` only matters when decoding with `skip_special_tokens`.

use crate::normalize::Normalizer;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddedToken {
    pub id: u32,
    pub content: String,
    pub single_word: bool,
    pub lstrip: bool,
    pub rstrip: bool,
    pub normalized: bool,
    pub special: bool,
}

impl AddedToken {
    /// Parses one entry of tokenizer.json's `added_tokens`.
    pub fn from_json(v: &serde_json::Value) -> Result<Self, String> {
        let id = v
            .get("id")
            .and_then(|x| x.as_u64())
            .filter(|&x| x <= u64::from(u32::MAX))
            .ok_or_else(|| format!("added_tokens: entry without a valid integer 'id': {v}"))?;
        let content = v
            .get("content")
            .and_then(|x| x.as_str())
            .ok_or_else(|| format!("added_tokens: entry without a string 'content': {v}"))?
            .to_string();
        let special = v.get("special").and_then(|x| x.as_bool()).unwrap_or(false);
        let flag = |k: &str, d: bool| v.get(k).and_then(|x| x.as_bool()).unwrap_or(d);
        Ok(AddedToken {
            id: id as u32,
            content,
            single_word: flag("single_word", false),
            lstrip: flag("lstrip", false),
            rstrip: flag("rstrip", false),
            // HF's default: special tokens are not normalized, others are.
            normalized: flag("normalized", !special),
            special,
        })
    }
}

/// A set of patterns matched leftmost-longest.
#[derive(Clone, Debug, Default)]
struct Matcher {
    /// (pattern, index into the token list), sorted by pattern length descending.
    patterns: Vec<(String, usize)>,
    first_byte: Vec<bool>,
    /// The distinct first bytes of the patterns: with three or fewer (tiktoken's specials all start
    /// with `<`) candidates are found with `memchr`, many bytes at a time, instead of a table test
    /// per byte (perf: 5-7% of cl100k encoding of a long text went to that loop).
    firsts: Vec<u8>,
}

impl Matcher {
    fn new(patterns: Vec<(String, usize)>) -> Self {
        let mut patterns: Vec<(String, usize)> = patterns.into_iter().filter(|(p, _)| !p.is_empty()).collect();
        // Longest first; among equal lengths the earlier token (HF builds its automaton in token
        // order, and equal patterns cannot be told apart anyway).
        patterns.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
        let mut first_byte = vec![false; 256];
        for (p, _) in &patterns {
            first_byte[p.as_bytes()[0] as usize] = true;
        }
        let firsts = (0..=255u8).filter(|&b| first_byte[b as usize]).collect();
        Matcher { patterns, first_byte, firsts }
    }

    fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Leftmost-longest matches as (start, end, token index).
    fn find_all(&self, text: &str) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        if self.patterns.is_empty() {
            return out;
        }
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let rest = &b[i..];
            let skip = match self.firsts[..] {
                [x] => memchr::memchr(x, rest),
                [x, y] => memchr::memchr2(x, y, rest),
                [x, y, z] => memchr::memchr3(x, y, z, rest),
                _ => rest.iter().position(|&c| self.first_byte[c as usize]),
            };
            let Some(skip) = skip else { break };
            i += skip;
            if text.is_char_boundary(i) {
                if let Some((p, t)) = self.patterns.iter().find(|(p, _)| b[i..].starts_with(p.as_bytes())) {
                    out.push((i, i + p.len(), *t));
                    i += p.len();
                    continue;
                }
            }
            i += 1;
        }
        out
    }
}

/// A piece of the input after added-token extraction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Plain text to normalize / pre-tokenize: byte range.
    Text(usize, usize),
    /// An added token: byte range (whitespace from lstrip/rstrip included) and index into `tokens`.
    Token(usize, usize, usize),
}

/// The added tokens of a tokenizer.
#[derive(Clone, Debug, Default)]
pub struct AddedVocab {
    pub tokens: Vec<AddedToken>,
    raw: Matcher,
    normalized: Matcher,
}

fn is_word_char(c: char) -> bool {
    // `\w` as in the regex crate: alphanumeric, marks, connector punctuation, join controls.
    c.is_alphanumeric()
        || c == '_'
        || matches!(c, '\u{200c}' | '\u{200d}')
        || unicode_normalization::char::is_combining_mark(c)
}

impl AddedVocab {
    pub fn new(tokens: Vec<AddedToken>, normalizer: Option<&Normalizer>) -> Self {
        let raw = Matcher::new(
            tokens.iter().enumerate().filter(|(_, t)| !t.normalized).map(|(i, t)| (t.content.clone(), i)).collect(),
        );
        let normalized = Matcher::new(
            tokens
                .iter()
                .enumerate()
                .filter(|(_, t)| t.normalized)
                .map(|(i, t)| (normalizer.map_or_else(|| t.content.clone(), |n| n.normalize_str(&t.content)), i))
                .collect(),
        );
        AddedVocab { tokens, raw, normalized }
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    pub fn has_raw(&self) -> bool {
        !self.raw.is_empty()
    }

    pub fn has_normalized(&self) -> bool {
        !self.normalized.is_empty()
    }

    /// Splits `text` by the raw (non-normalized) tokens.
    pub fn split_raw(&self, text: &str) -> Vec<Piece> {
        self.split(&self.raw, text)
    }

    /// Splits a normalized text by the normalized tokens.
    pub fn split_normalized(&self, text: &str) -> Vec<Piece> {
        self.split(&self.normalized, text)
    }

    fn split(&self, m: &Matcher, text: &str) -> Vec<Piece> {
        let mut out = Vec::new();
        let mut cursor = 0;
        for (s, e, t) in m.find_all(text) {
            let tok = &self.tokens[t];
            // A match can start inside whitespace an earlier rstrip consumed.
            if s < cursor {
                continue;
            }
            if tok.single_word {
                let before_ok = text[..s].chars().next_back().is_none_or(|c| !is_word_char(c));
                let after_ok = text[e..].chars().next().is_none_or(|c| !is_word_char(c));
                if !(before_ok && after_ok) {
                    continue;
                }
            }
            let mut start = s;
            let mut stop = e;
            if tok.lstrip {
                let ns = text[..s]
                    .char_indices()
                    .rev()
                    .find(|(_, c)| !c.is_whitespace())
                    .map_or(0, |(i, c)| i + c.len_utf8());
                start = ns.max(cursor);
            }
            if tok.rstrip {
                stop = text[e..].char_indices().find(|(_, c)| !c.is_whitespace()).map_or(text.len(), |(i, _)| e + i);
            }
            if cursor < start {
                out.push(Piece::Text(cursor, start));
            }
            out.push(Piece::Token(start, stop, t));
            cursor = stop;
        }
        if cursor < text.len() {
            out.push(Piece::Text(cursor, text.len()));
        }
        out
    }

    pub fn id_to_token(&self, id: u32) -> Option<&AddedToken> {
        self.tokens.iter().find(|t| t.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tok(id: u32, c: &str) -> AddedToken {
        AddedToken {
            id,
            content: c.into(),
            single_word: false,
            lstrip: false,
            rstrip: false,
            normalized: false,
            special: true,
        }
    }

    #[test]
    fn longest_match_first() {
        let v = AddedVocab::new(vec![tok(0, "<s>"), tok(1, "<s><s>")], None);
        assert_eq!(
            v.split_raw("a<s><s><s>b"),
            vec![Piece::Text(0, 1), Piece::Token(1, 7, 1), Piece::Token(7, 10, 0), Piece::Text(10, 11)]
        );
    }

    #[test]
    fn strip_and_single_word() {
        let mut t = tok(0, "[M]");
        t.lstrip = true;
        t.rstrip = true;
        let v = AddedVocab::new(vec![t], None);
        assert_eq!(v.split_raw("a  [M]  b"), vec![Piece::Text(0, 1), Piece::Token(1, 8, 0), Piece::Text(8, 9)]);
        let mut t = tok(0, "ab");
        t.single_word = true;
        let v = AddedVocab::new(vec![t], None);
        assert_eq!(v.split_raw("xab ab"), vec![Piece::Text(0, 4), Piece::Token(4, 6, 0)]);
    }
}
