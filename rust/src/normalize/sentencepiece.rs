//! The normalizers HF writes for SentencePiece conversions (T5, ALBERT, XLNet, Llama, its own
//! `SentencePieceUnigramTokenizer`): `Precompiled`, `Nmt`, `Replace`, `Strip` and `Prepend`.
//!
//! Each works on chars that carry their original byte range (see `normalize.rs`), with the
//! alignment HF's `NormalizedString` gives (measured with tokenizers 0.23.3):
//! - `Replace`: every char of the replacement takes the range of the LAST char of the match (HF
//!   skips the matched chars, then inserts the content after them), so `"a   b"` with `" {2,}" -> " "`
//!   aligns the space with the third space;
//! - `Prepend`: the prepended chars take the range of the first char;
//! - `Strip`, `Nmt`: kept chars keep their ranges;
//! - `Precompiled`: HF's rule, per extended grapheme cluster: a cluster of fewer than 6 bytes is
//!   replaced as a whole by the replacement of the SHORTEST charsmap key that is a prefix of it (so
//!   `ﬁ` + U+0301 becomes `fi`: the accent is dropped), else each char is looked up alone; the new
//!   chars are aligned by position (extra chars inserted after the last, a shorter replacement's last
//!   char absorbing the rest), which is why `i` of that `fi` is aligned with the accent.

use std::sync::Arc;

use serde_json::{json, Value};

use super::graphemes::for_each_grapheme;
use super::{assign_positionally, AlignedChar, Changed};
use crate::spm::CharsMap;

/// HF `Nmt`: drop C0 controls (but NUL, tab, LF, FF, CR), DEL, U+008F, U+009F; map tab, LF, FF, CR,
/// U+1680, U+200B..U+200F, U+2028, U+2029, U+2581, U+FEFF, U+FFFD to a space.
pub(super) fn nmt(chars: Vec<AlignedChar>) -> Vec<AlignedChar> {
    chars
        .into_iter()
        .filter(|(c, _)| !matches!(*c as u32, 0x01..=0x08 | 0x0B | 0x0E..=0x1F | 0x7F | 0x8F | 0x9F))
        .map(|(c, r)| {
            let m = match c as u32 {
                0x09 | 0x0A | 0x0C | 0x0D | 0x1680 | 0x200B..=0x200F | 0x2028 | 0x2029 | 0x2581 | 0xFEFF | 0xFFFD => ' ',
                _ => c,
            };
            (m, r)
        })
        .collect()
}

/// [`nmt`] without alignments.
pub(super) fn nmt_str(s: &str) -> String {
    nmt(s.chars().map(|c| (c, (0, 0))).collect()).into_iter().map(|x| x.0).collect()
}

/// HF `Strip`: removes leading and/or trailing whitespace (`char::is_whitespace`).
pub(super) fn strip(chars: Vec<AlignedChar>, left: bool, right: bool) -> Vec<AlignedChar> {
    let lead = if left { chars.iter().take_while(|x| x.0.is_whitespace()).count() } else { 0 };
    let trail = if right { chars.iter().rev().take_while(|x| x.0.is_whitespace()).count() } else { 0 };
    let end = chars.len().saturating_sub(trail).max(lead);
    chars[lead..end].to_vec()
}

/// HF `Prepend`: `s` before a non-empty text, aligned with its first char.
pub(super) fn prepend(mut chars: Vec<AlignedChar>, s: &str) -> Vec<AlignedChar> {
    let Some(&(_, first)) = chars.first() else { return chars };
    let head: Vec<AlignedChar> = s.chars().map(|c| (c, first)).collect();
    chars.splice(0..0, head);
    chars
}

/// The pattern of a `Replace` normalizer or decoder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplacePattern {
    /// HF `{"String": ...}`: a literal.
    Literal(String),
    /// HF `{"Regex": ...}` restricted to one char (or `\s`) repeated `min..=max` times: what the
    /// SentencePiece conversions use (`" {2,}"`). `source` is the pattern as written.
    Repeat { source: String, atom: Atom, min: usize, max: usize },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Atom {
    Char(char),
    /// `\s`: Unicode White_Space.
    Space,
}

impl Atom {
    fn matches(self, c: char) -> bool {
        match self {
            Atom::Char(x) => c == x,
            Atom::Space => c.is_whitespace(),
        }
    }
}

impl ReplacePattern {
    /// Parses `{"String": s}` or `{"Regex": r}`; regexes other than a repeated char are refused.
    pub fn from_json(v: &Value, owner: &str) -> Result<Self, String> {
        if let Some(s) = v.get("String").and_then(|x| x.as_str()) {
            if s.is_empty() {
                return Err(format!("{owner} Replace: the pattern is empty"));
            }
            return Ok(ReplacePattern::Literal(s.to_string()));
        }
        let Some(r) = v.get("Regex").and_then(|x| x.as_str()) else {
            return Err(format!("{owner} Replace: 'pattern' must be {{\"String\": ...}} or {{\"Regex\": ...}}, got {v}"));
        };
        parse_repeat(r).ok_or_else(|| {
            format!(
                "unsupported {owner} Replace regex {r:?}: only a literal char (or \\s) with an optional \
                 quantifier ({{n}}, {{n,}}, {{n,m}}, +) is supported"
            )
        })
    }

    pub fn to_json(&self) -> Value {
        match self {
            ReplacePattern::Literal(s) => json!({"String": s}),
            ReplacePattern::Repeat { source, .. } => json!({"Regex": source}),
        }
    }

    /// Non-overlapping leftmost matches in `chars` as char ranges.
    pub fn find(&self, chars: &[char]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        match self {
            ReplacePattern::Literal(s) => {
                let pat: Vec<char> = s.chars().collect();
                let mut i = 0;
                while i + pat.len() <= chars.len() {
                    if chars[i..i + pat.len()] == pat[..] {
                        out.push((i, i + pat.len()));
                        i += pat.len();
                    } else {
                        i += 1;
                    }
                }
            }
            ReplacePattern::Repeat { atom, min, max, .. } => {
                let mut i = 0;
                while i < chars.len() {
                    let run = chars[i..].iter().take_while(|&&c| atom.matches(c)).count();
                    if run >= *min && run > 0 {
                        // Greedy: as many as allowed, then the rest of the run matches again.
                        let mut j = i;
                        while j + *min <= i + run {
                            let len = (i + run - j).min(*max);
                            out.push((j, j + len));
                            j += len;
                        }
                        i += run;
                    } else {
                        i += run.max(1);
                    }
                }
            }
        }
        out
    }

    /// The literal text of a `String` pattern (decoders replace in strings).
    pub fn replace_in(&self, s: &str, content: &str) -> String {
        match self {
            ReplacePattern::Literal(p) => s.replace(p.as_str(), content),
            ReplacePattern::Repeat { atom: Atom::Char(c), .. } if !s.contains(*c) => s.to_string(),
            ReplacePattern::Repeat { .. } => {
                let chars: Vec<char> = s.chars().collect();
                let mut out = String::with_capacity(s.len());
                let mut last = 0;
                for (a, b) in self.find(&chars) {
                    out.extend(&chars[last..a]);
                    out.push_str(content);
                    last = b;
                }
                out.extend(&chars[last..]);
                out
            }
        }
    }
}

/// `c`, `\s`, `\<punct>` with an optional `{n}`, `{n,}`, `{n,m}` or `+`.
fn parse_repeat(r: &str) -> Option<ReplacePattern> {
    let chars: Vec<char> = r.chars().collect();
    let (atom, rest) = match chars.as_slice() {
        ['\\', 's', rest @ ..] => (Atom::Space, rest),
        ['\\', c, rest @ ..] if c.is_ascii_punctuation() => (Atom::Char(*c), rest),
        [c, rest @ ..] if !"\\.[](){}|^$*+?".contains(*c) => (Atom::Char(*c), rest),
        _ => return None,
    };
    let rest: String = rest.iter().collect();
    let (min, max) = if rest.is_empty() {
        (1, 1)
    } else if rest == "+" {
        (1, usize::MAX)
    } else {
        let inner = rest.strip_prefix('{')?.strip_suffix('}')?;
        match inner.split_once(',') {
            None => {
                let n = inner.parse().ok()?;
                (n, n)
            }
            Some((a, "")) => (a.parse().ok()?, usize::MAX),
            Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
        }
    };
    (min >= 1 && max >= min).then(|| ReplacePattern::Repeat { source: r.to_string(), atom, min, max })
}

/// HF `Replace` on aligned chars.
pub(super) fn replace(chars: Vec<AlignedChar>, pattern: &ReplacePattern, content: &str) -> Vec<AlignedChar> {
    let plain: Vec<char> = chars.iter().map(|x| x.0).collect();
    let matches = pattern.find(&plain);
    if matches.is_empty() {
        return chars;
    }
    let mut out = Vec::with_capacity(chars.len());
    let mut last = 0;
    for (a, b) in matches {
        out.extend_from_slice(&chars[last..a]);
        let r = chars[b - 1].1;
        out.extend(content.chars().map(|c| (c, r)));
        last = b;
    }
    out.extend_from_slice(&chars[last..]);
    out
}

/// HF `Precompiled`: a SentencePiece charsmap (kept base64-encoded, as in the file, for round trips).
#[derive(Clone)]
pub struct Precompiled {
    pub base64: String,
    map: Arc<CharsMap>,
    /// `ascii_kept[b]`: the charsmap leaves ASCII char `b` alone (no key is `b`).
    ascii_kept: [bool; 128],
}

impl std::fmt::Debug for Precompiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Precompiled(<{} base64 chars>)", self.base64.len())
    }
}

impl PartialEq for Precompiled {
    fn eq(&self, other: &Self) -> bool {
        self.base64 == other.base64
    }
}

impl Eq for Precompiled {}

impl Precompiled {
    pub fn from_base64(b64: &str) -> Result<Self, String> {
        let blob = decode_base64(b64).map_err(|e| format!("normalizer Precompiled: {e}"))?;
        let map = CharsMap::from_blob(&blob).map_err(|e| format!("normalizer Precompiled: {e}"))?;
        let mut ascii_kept = [false; 128];
        for (b, kept) in ascii_kept.iter_mut().enumerate() {
            *kept = map.longest_prefix(&[b as u8]).is_none();
        }
        Ok(Precompiled { base64: b64.to_string(), map: Arc::new(map), ascii_kept })
    }

    /// True when the charsmap cannot change `text`: ASCII only, no char of it is a key, and no CR (a CR LF
    /// pair is one grapheme, looked up as a whole). Every ASCII char but CR is its own grapheme when
    /// followed by ASCII, and keys are whole UTF-8 strings, so nothing can match.
    pub fn leaves_unchanged(&self, text: &str) -> bool {
        text.bytes().all(|b| b < 0x80 && b != b'\r' && self.ascii_kept[b as usize])
    }

    /// The replacement of the shortest key that is a prefix of `chunk` (HF's `transform`).
    fn transform(&self, chunk: &str) -> Option<String> {
        let b = chunk.as_bytes();
        for k in 1..=b.len() {
            if !chunk.is_char_boundary(k) {
                continue;
            }
            if let Some((n, rep)) = self.map.longest_prefix(&b[..k]) {
                if n == k {
                    return Some(String::from_utf8_lossy(rep).into_owned());
                }
            }
        }
        None
    }

    pub(super) fn apply(&self, chars: Vec<AlignedChar>) -> Vec<AlignedChar> {
        if chars.iter().all(|&(c, _)| c.is_ascii() && c != '\r' && self.ascii_kept[c as usize]) {
            return chars;
        }
        let plain: Vec<char> = chars.iter().map(|x| x.0).collect();
        let mut out: Vec<Changed> = Vec::with_capacity(plain.len());
        let mut modified = false;
        let mut buf = String::new();
        for_each_grapheme(&plain, |a, b| {
            buf.clear();
            buf.extend(&plain[a..b]);
            if buf.len() < 6 {
                if let Some(norm) = self.transform(&buf) {
                    modified = true;
                    push_replacement(&mut out, b - a, &norm);
                    return;
                }
            }
            for &c in &plain[a..b] {
                let mut tmp = [0u8; 4];
                match self.transform(c.encode_utf8(&mut tmp)) {
                    Some(norm) => {
                        modified = true;
                        push_replacement(&mut out, 1, &norm);
                    }
                    None => out.push((c, 0)),
                }
            }
        });
        if !modified {
            return chars;
        }
        assign_positionally(&chars, out, 0)
    }
}

/// HF's `replace` helper of the Precompiled normalizer: the new chars replace `old_count` chars; extra
/// ones are inserts, and a shorter replacement's last char (or the char before, when it is empty)
/// absorbs the difference.
fn push_replacement(out: &mut Vec<Changed>, old_count: usize, new: &str) {
    let new_count = new.chars().count();
    out.extend(new.chars().map(|c| (c, 0)));
    let diff = new_count as isize - old_count as isize;
    if diff > 0 {
        let n = out.len();
        for x in &mut out[n - diff as usize..] {
            x.1 = 1;
        }
    } else if diff < 0 {
        if let Some(last) = out.last_mut() {
            last.1 += diff;
        }
    }
}

/// Standard base64 (with or without padding).
pub fn decode_base64(s: &str) -> Result<Vec<u8>, String> {
    let val = |c: u8| -> Result<u32, String> {
        Ok(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err(format!("invalid base64 character {:?}", c as char)),
        } as u32)
    };
    let body = s.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    for chunk in body.chunks(4) {
        if chunk.len() == 1 {
            return Err("truncated base64".into());
        }
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c)? << (18 - 6 * i);
        }
        let bytes = [(acc >> 16) as u8, (acc >> 8) as u8, acc as u8];
        out.extend_from_slice(&bytes[..chunk.len() - 1]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aligned(s: &str) -> Vec<AlignedChar> {
        s.char_indices().map(|(i, c)| (c, (i, i + c.len_utf8()))).collect()
    }

    #[test]
    fn replace_aligns_to_the_last_matched_char() {
        let p = ReplacePattern::from_json(&json!({"Regex": " {2,}"}), "normalizer").unwrap();
        let out = replace(aligned("a   b"), &p, " ");
        assert_eq!(out, vec![('a', (0, 1)), (' ', (3, 4)), ('b', (4, 5))]);
        assert!(ReplacePattern::from_json(&json!({"Regex": "a|b"}), "normalizer").is_err());
        assert_eq!(p.find(&"x     y".chars().collect::<Vec<_>>()), vec![(1, 6)]);
        let q = ReplacePattern::from_json(&json!({"Regex": " {2,3}"}), "normalizer").unwrap();
        assert_eq!(q.find(&"      ".chars().collect::<Vec<_>>()), vec![(0, 3), (3, 6)]);
    }

    #[test]
    fn base64_round_values() {
        assert_eq!(decode_base64("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode_base64("aGk").unwrap(), b"hi");
        assert!(decode_base64("a$==").is_err());
    }

    #[test]
    fn strip_and_prepend() {
        let s = strip(aligned("  ab "), true, true);
        assert_eq!(s, vec![('a', (2, 3)), ('b', (3, 4))]);
        assert!(strip(aligned("   "), true, true).is_empty());
        let p = prepend(aligned("ab"), "\u{2581}");
        assert_eq!(p[0], ('\u{2581}', (0, 1)));
        assert_eq!(p[1], ('a', (0, 1)));
    }
}
