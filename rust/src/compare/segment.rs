//! Word segments (UAX #29 default word boundaries) and the index of segment types.
//!
//! A segment is the text between two default word boundaries, as `unicode-segmentation` finds
//! them; the Python side (`subword/compare/words.py`) uses the `regex` package's `(?w)` boundaries,
//! and a test checks they agree on real and Unicode-rich text. Lines are segmented one by one: UAX
//! #29 always breaks around a line feed, so that equals segmenting the chunk joined by `\n`, where
//! each `\n` (or `\r\n`, when a line ends with `\r`) is a segment of its own between lines.

use ahash::AHashMap;
use unicode_segmentation::UnicodeSegmentation;

/// Python's `str.isspace` (the code points of `WHITESPACE_CODEPOINTS` in `words.py`).
pub fn is_space(c: char) -> bool {
    matches!(c as u32, 9..=13 | 28..=32 | 133 | 160 | 5760 | 8192..=8202 | 8232 | 8233 | 8239 | 8287 | 12288)
}

/// One segment of a line: character span and its type id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub start: u32,
    pub end: u32,
    pub ty: u32,
}

/// The segment types seen so far, numbered in order of first occurrence.
#[derive(Default)]
pub struct TypeIndex {
    map: AHashMap<Box<str>, u32>,
    pub types: Vec<Box<str>>,
}

impl TypeIndex {
    pub fn get(&self, s: &str) -> Option<u32> {
        self.map.get(s).copied()
    }

    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.map.get(s) {
            return id;
        }
        let id = self.types.len() as u32;
        self.map.insert(s.into(), id);
        self.types.push(s.into());
        id
    }

    pub fn len(&self) -> usize {
        self.types.len()
    }

    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }
}

/// The vowels after which the `regex` package does not break following an apostrophe.
fn is_regex_vowel(c: char) -> bool {
    matches!(c, 'A' | 'E' | 'I' | 'O' | 'U' | 'a' | 'e' | 'i' | 'o' | 'u' | '\u{130}')
        || matches!(c as u32, 0xC0..=0xC2 | 0xC8..=0xCA | 0xCC..=0xCE | 0xD2..=0xD4 | 0xD9..=0xDB
            | 0xE0..=0xE2 | 0xE8..=0xEA | 0xEC..=0xEE | 0xF2..=0xF4 | 0xF9..=0xFB)
}

/// Whether a segment ends with an apostrophe (`'` or `’`), marks and format characters after it aside.
fn ends_with_apostrophe(seg: &str) -> bool {
    use unicode_general_category::{get_general_category, GeneralCategory as G};
    let last = seg.chars().rev().find(|&c| {
        !matches!(get_general_category(c), G::NonspacingMark | G::SpacingMark | G::EnclosingMark | G::Format)
    });
    matches!(last, Some('\'' | '\u{2019}'))
}

/// The byte spans of a line's segments, in order (they tile the line).
///
/// UAX #29 boundaries (`unicode-segmentation`) with the one tailoring the `regex` package applies
/// (measured on `regex` 2026.5.9, every code point after `'` and `’`): no break between an
/// apostrophe and a following vowel (`AEIOUaeiou`, their grave, acute and circumflex forms, `İ`),
/// so `'em` is one segment where plain UAX #29 gives `'` and `em`.
pub fn byte_segments(line: &str) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (i, s) in line.split_word_bound_indices() {
        let end = i + s.len();
        if let Some(prev) = out.last_mut() {
            if s.chars().next().is_some_and(is_regex_vowel) && ends_with_apostrophe(&line[prev.0..prev.1]) {
                prev.1 = end;
                continue;
            }
        }
        out.push((i, end));
    }
    out
}

/// The segments of a chunk of lines.
pub struct ChunkSegments {
    /// Per line, its segments (a line ending in `\r` that is not the chunk's last has the `\r\n`
    /// type for that last character: in the joined chunk it is one segment with the line feed).
    pub lines: Vec<Vec<Segment>>,
    /// Per line, the type of the line feed segment after it (`None` for the chunk's last line and
    /// for a line whose `\r` took the line feed).
    pub separator: Vec<Option<u32>>,
    /// The number of types before this chunk: ids from here on are new.
    pub known: usize,
    /// The line (in the chunk) where each new type first occurs.
    pub new_first_line: Vec<u32>,
}

/// Segments `lines` and interns their types in order of occurrence in the joined chunk.
pub fn segment_chunk(lines: &[&str], index: &mut TypeIndex) -> ChunkSegments {
    let known = index.len();
    // In parallel: spans in chars and bytes, with the type id where the type is known already.
    let found: Vec<Vec<(u32, u32, usize, usize, Option<u32>)>> = crate::compare::lines::par_map_lines(lines, |line| {
        let mut out = Vec::new();
        let mut chars = 0u32;
        for (b0, b1) in byte_segments(line) {
            let s = &line[b0..b1];
            let n = s.chars().count() as u32;
            out.push((chars, chars + n, b0, b1, index.get(s)));
            chars += n;
        }
        out
    });
    let mut new_first_line = Vec::new();
    let mut intern = |index: &mut TypeIndex, s: &str, line: usize| -> u32 {
        let before = index.len();
        let id = index.intern(s);
        if index.len() > before {
            new_first_line.push(line as u32);
        }
        id
    };
    let last = lines.len().saturating_sub(1);
    let mut segs = Vec::with_capacity(lines.len());
    let mut separator = Vec::with_capacity(lines.len());
    for (j, (line, spans)) in lines.iter().zip(found).enumerate() {
        let merge_cr = j < last && line.ends_with('\r');
        let k = spans.len();
        let mut v = Vec::with_capacity(k);
        for (i, (c0, c1, b0, b1, ty)) in spans.into_iter().enumerate() {
            let ty = if merge_cr && i + 1 == k {
                intern(index, "\r\n", j)
            } else {
                match ty {
                    Some(t) => t,
                    None => intern(index, &line[b0..b1], j),
                }
            };
            v.push(Segment { start: c0, end: c1, ty });
        }
        segs.push(v);
        separator.push(if j < last && !merge_cr { Some(intern(index, "\n", j)) } else { None });
    }
    ChunkSegments { lines: segs, separator, known, new_first_line }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(line: &str) -> Vec<&str> {
        byte_segments(line).into_iter().map(|(a, b)| &line[a..b]).collect()
    }

    #[test]
    fn segments_follow_uax29() {
        assert_eq!(texts("It's 3.14, naïve!"), ["It's", " ", "3.14", ",", " ", "naïve", "!"]);
        assert_eq!(texts("a  b"), ["a", "  ", "b"]);
        assert_eq!(texts("日本語"), ["日", "本", "語"]);
        assert_eq!(texts("x 'em 's ’Ère"), ["x", " ", "'em", " ", "'", "s", " ", "’Ère"]);
    }

    #[test]
    fn chunk_types_in_order_and_line_feeds_between_lines() {
        let mut index = TypeIndex::default();
        let c = segment_chunk(&["a b", "b\r", "c"], &mut index);
        let names: Vec<&str> = index.types.iter().map(|s| &**s).collect();
        assert_eq!(names, ["a", " ", "b", "\n", "\r\n", "c"]);
        assert_eq!(c.new_first_line, [0, 0, 0, 0, 1, 2]);
        assert_eq!(c.separator, [Some(3), None, None]);
        assert_eq!(c.lines[1], [Segment { start: 0, end: 1, ty: 2 }, Segment { start: 1, end: 2, ty: 4 }]);
        let again = segment_chunk(&["c a"], &mut index);
        assert_eq!(again.known, 6);
        assert!(again.new_first_line.is_empty());
    }

    #[test]
    fn whitespace_is_python_isspace() {
        assert!(is_space(' ') && is_space('\u{3000}') && is_space('\u{85}') && is_space('\u{1f}'));
        assert!(!is_space('\u{200b}') && !is_space('a') && !is_space('\u{180e}'));
    }
}
