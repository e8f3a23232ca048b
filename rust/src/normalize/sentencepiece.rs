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

use unicode_segmentation::UnicodeSegmentation;

use super::{assign_positionally, AlignedChar, Changed};
use crate::pretok::engine::{known_scanner, Engine, GeneralRegex};
use crate::spm::CharsMap;

/// HF `Nmt`: drop C0 controls (but NUL, tab, LF, FF, CR), DEL, U+008F, U+009F; map tab, LF, FF, CR,
/// U+1680, U+200B..U+200F, U+2028, U+2029, U+2581, U+FEFF, U+FFFD to a space.
pub(super) fn nmt(chars: Vec<AlignedChar>) -> Vec<AlignedChar> {
    chars
        .into_iter()
        .filter(|(c, _)| !matches!(*c as u32, 0x01..=0x08 | 0x0B | 0x0E..=0x1F | 0x7F | 0x8F | 0x9F))
        .map(|(c, r)| {
            let m = match c as u32 {
                0x09 | 0x0A | 0x0C | 0x0D | 0x1680 | 0x200B..=0x200F | 0x2028 | 0x2029 | 0x2581 | 0xFEFF | 0xFFFD => {
                    ' '
                }
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

/// The pattern of a `Split` pre-tokenizer or a `Replace` normalizer / decoder.
///
/// HF compiles both forms with Oniguruma (a `String` escaped first, so it is a literal); we run literals
/// with `str` search (the same non-overlapping leftmost matches) and regexes with the general engine of
/// `pretok/engine.rs`: Oniguruma itself for tokenizer.json files, fancy-regex for tiktoken's patterns.
/// A pattern the engine refuses is an error carrying the engine's own message. Patterns a hand-written
/// scanner covers (`pretok/modern.rs`) run on it: [`crate::pretok::engine::known_scanner`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplacePattern {
    /// HF `{"String": ...}`: a literal.
    Literal(String),
    /// HF `{"Regex": ...}`, run by its engine.
    Regex(GeneralRegex),
    /// A known modern pre-tokenizer regex (cl100k, o200k, Llama 3, Qwen 2, GPT-2), run by its
    /// hand-written scanner, which gives the matches of `source` as `engine` reads it.
    Known { source: String, engine: Engine, scanner: crate::pretok::modern::Modern },
}

impl ReplacePattern {
    /// Parses `{"String": s}` or `{"Regex": r}` read with Oniguruma (HF's engine).
    pub fn from_json(v: &Value, owner: &str) -> Result<Self, String> {
        Self::parse(v, &format!("{owner} Replace"), Engine::Oniguruma)
    }

    /// [`ReplacePattern::from_json`] for any component and engine; `what` (`"pre_tokenizer Split"`)
    /// names it in errors.
    pub fn parse(v: &Value, what: &str, engine: Engine) -> Result<Self, String> {
        let owner = what;
        if let Some(s) = v.get("String").and_then(|x| x.as_str()) {
            if s.is_empty() {
                return Err(format!("{owner}: the pattern is empty"));
            }
            return Ok(ReplacePattern::Literal(s.to_string()));
        }
        let Some(r) = v.get("Regex").and_then(|x| x.as_str()) else {
            return Err(format!("{owner}: 'pattern' must be {{\"String\": ...}} or {{\"Regex\": ...}}, got {v}"));
        };
        if let Some(scanner) = known_scanner(r, engine) {
            return Ok(ReplacePattern::Known { source: r.to_string(), engine, scanner });
        }
        let regex = GeneralRegex::new(r, engine)
            .map_err(|e| format!("{owner}: {} refuses the regex {r:?}: {e}", engine_label(engine)))?;
        Ok(ReplacePattern::Regex(regex))
    }

    pub fn to_json(&self) -> Value {
        match self {
            ReplacePattern::Literal(s) => json!({"String": s}),
            ReplacePattern::Regex(r) => json!({"Regex": r.source()}),
            ReplacePattern::Known { source, .. } => json!({"Regex": source}),
        }
    }

    /// The engine a regex pattern is read with (Oniguruma for literals, which HF escapes).
    pub fn engine(&self) -> Engine {
        match self {
            ReplacePattern::Literal(_) => Engine::Oniguruma,
            ReplacePattern::Regex(r) => r.engine(),
            ReplacePattern::Known { engine, .. } => *engine,
        }
    }

    /// Non-overlapping leftmost matches in `s` as byte ranges (none in an empty text, as in HF).
    pub fn find(&self, s: &str) -> Vec<(usize, usize)> {
        if s.is_empty() {
            return Vec::new();
        }
        match self {
            ReplacePattern::Literal(p) => s.match_indices(p.as_str()).map(|(i, m)| (i, i + m.len())).collect(),
            ReplacePattern::Regex(r) => r.find(s),
            ReplacePattern::Known { scanner, .. } => {
                let mut out = Vec::new();
                scanner.split(s, |a, b| out.push((a, b)));
                out
            }
        }
    }

    /// `s` with every match replaced by `content` (taken literally: no `$1` expansion, as in HF).
    pub fn replace_in(&self, s: &str, content: &str) -> String {
        match self {
            ReplacePattern::Literal(p) => s.replace(p.as_str(), content),
            ReplacePattern::Regex(_) | ReplacePattern::Known { .. } => {
                let mut out = String::with_capacity(s.len());
                let mut last = 0;
                for (a, b) in self.find(s) {
                    out.push_str(&s[last..a]);
                    out.push_str(content);
                    last = b;
                }
                out.push_str(&s[last..]);
                out
            }
        }
    }
}

fn engine_label(engine: Engine) -> &'static str {
    match engine {
        Engine::Oniguruma => "Oniguruma (HF tokenizers' regex engine)",
        Engine::FancyRegex => "fancy-regex (tiktoken's regex engine)",
    }
}

/// HF `Replace` on aligned chars. The replacement's chars take the range of the LAST char of a
/// non-empty match; for an empty match, the range of the char before it (an empty range at the start
/// of the first char when there is none), as measured on tokenizers 0.23.3.
pub(super) fn replace(chars: Vec<AlignedChar>, pattern: &ReplacePattern, content: &str) -> Vec<AlignedChar> {
    let plain: String = chars.iter().map(|x| x.0).collect();
    let matches = pattern.find(&plain);
    if matches.is_empty() {
        return chars;
    }
    // Byte offset in `plain` -> char index.
    let mut char_at = vec![0usize; plain.len() + 1];
    for (n, (i, c)) in plain.char_indices().enumerate() {
        char_at[i..i + c.len_utf8()].fill(n);
    }
    char_at[plain.len()] = chars.len();
    let mut out = Vec::with_capacity(chars.len());
    let mut last = 0;
    for (a, b) in matches {
        let (a, b) = (char_at[a], char_at[b]);
        out.extend_from_slice(&chars[last..a]);
        let r = if b > a {
            chars[b - 1].1
        } else if a > 0 {
            chars[a - 1].1
        } else {
            (chars[0].1 .0, chars[0].1 .0)
        };
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
        let plain: String = chars.iter().map(|x| x.0).collect();
        let mut out: Vec<Changed> = Vec::with_capacity(chars.len());
        let mut modified = false;
        for cluster in plain.graphemes(true) {
            if cluster.len() < 6 {
                if let Some(norm) = self.transform(cluster) {
                    modified = true;
                    push_replacement(&mut out, cluster.chars().count(), &norm);
                    continue;
                }
            }
            for c in cluster.chars() {
                let mut tmp = [0u8; 4];
                match self.transform(c.encode_utf8(&mut tmp)) {
                    Some(norm) => {
                        modified = true;
                        push_replacement(&mut out, 1, &norm);
                    }
                    None => out.push((c, 0)),
                }
            }
        }
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
        assert_eq!(p.find("x     y"), vec![(1, 6)]);
        let q = ReplacePattern::from_json(&json!({"Regex": " {2,3}"}), "normalizer").unwrap();
        assert_eq!(q.find("      "), vec![(0, 3), (3, 6)]);
        // Empty matches: not right after a match; inserted with the previous char's range.
        let e = ReplacePattern::from_json(&json!({"Regex": "a*"}), "normalizer").unwrap();
        assert_eq!(e.replace_in("baaac", "X"), "XbXcX");
        let out = replace(aligned("bc"), &e, "-");
        assert_eq!(out, vec![('-', (0, 0)), ('b', (0, 1)), ('-', (0, 1)), ('c', (1, 2)), ('-', (1, 2))]);
        assert_eq!(e.replace_in("", "X"), "");
        // Line anchors, and content taken literally.
        let w = ReplacePattern::from_json(&json!({"Regex": "[^\\w\\s]|\\W\\w"}), "normalizer").unwrap();
        assert_eq!(w.replace_in("a\u{200d}b,c", "_"), "a_b_c");
        let a = ReplacePattern::from_json(&json!({"Regex": "^a"}), "normalizer").unwrap();
        assert_eq!(a.replace_in("a\na", "$0"), "$0\n$0");
    }

    #[test]
    fn any_oniguruma_regex_runs_and_bad_ones_are_refused_with_its_message() {
        for r in ["(?<=a)b", "(?!a)", "(a)\\1", "(?>a)", "a++", "\\Z", "[[:alpha:]]", "(?m).", "(?i)ss", "\\h", "\\R"] {
            assert!(ReplacePattern::from_json(&json!({"Regex": r}), "normalizer").is_ok(), "{r}");
        }
        // Oniguruma's readings: `(?i)ss` matches `ß`, `\h` is a hex digit, `(?m)` is dot-all.
        let ss = ReplacePattern::from_json(&json!({"Regex": "(?i)ss"}), "normalizer").unwrap();
        assert_eq!(ss.replace_in("aßb", "_"), "a_b");
        let h = ReplacePattern::from_json(&json!({"Regex": "\\h+"}), "normalizer").unwrap();
        assert_eq!(h.replace_in("xa9fz", "_"), "x_z");
        for r in ["(", "[b-a]", "\\p{Foo}", "(?P<x>a)"] {
            let e = ReplacePattern::from_json(&json!({"Regex": r}), "normalizer").unwrap_err();
            assert!(e.contains(&format!("{r:?}")) && e.contains("Oniguruma"), "{e}");
        }
    }

    #[test]
    fn precompiled_clusters_are_extended_graphemes() {
        let clusters: Vec<&str> =
            "e\u{301}x\r\n\u{1100}\u{1161}\u{11a8}\u{1f1eb}\u{1f1f7}\u{1f1e9}".graphemes(true).collect();
        assert_eq!(
            clusters,
            vec!["e\u{301}", "x", "\r\n", "\u{1100}\u{1161}\u{11a8}", "\u{1f1eb}\u{1f1f7}", "\u{1f1e9}"]
        );
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
