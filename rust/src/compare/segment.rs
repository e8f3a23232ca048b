//! Word segments (UAX #29 default word boundaries) and the index of segment types.
//!
//! A segment is the text between two default word boundaries of UAX #29 ("Unicode Text
//! Segmentation"), as the `unicode-segmentation` crate finds them, with no tailoring: Unicode
//! 17.0.0, the crate's tables ([`UNICODE_VERSION`], checked at compile time). The tests check every
//! path here against all cases of Unicode's own `WordBreakTest-17.0.0.txt` (vendored under
//! `tests/data/unicode/`). Lines are segmented one by one: UAX #29 always breaks around a line feed,
//! so that equals segmenting the chunk joined by `\n`, where each `\n` (or `\r\n`, when a line
//! ends with `\r`) is a segment of its own between lines.
//!
//! Performance notes: lines of ASCII and a few non-ASCII characters of English prose (curly quotes,
//! dashes) are segmented by the UAX #29 rules applied to a table of classes (`breaks`), checked
//! against the crate on every short string; the rest go through the crate. Lines are segmented in
//! parallel blocks with the types known before the chunk looked up (one-byte segments by table),
//! then the new types are interned in order of occurrence.

use ahash::AHashMap;
use rayon::prelude::*;
use unicode_segmentation::UnicodeSegmentation;

/// Python's `str.isspace` (the code points of `WHITESPACE_CODEPOINTS` in `words.py`).
#[inline]
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

/// The Unicode version of the word boundaries: that of the crate's tables. The vendored test file,
/// `docs/compare.md` and this constant name one version; a new crate version fails here until all
/// three are moved together.
pub const UNICODE_VERSION: (u64, u64, u64) = unicode_segmentation::UNICODE_VERSION;
const _: () = assert!(
    UNICODE_VERSION.0 == 17 && UNICODE_VERSION.1 == 0 && UNICODE_VERSION.2 == 0,
    "unicode-segmentation changed its Unicode version: update tests/data/unicode and docs/compare.md"
);

/// The byte spans of a line's segments, in order (they tile the line): UAX #29 default word boundaries.
pub fn byte_segments(line: &str) -> Vec<(usize, usize)> {
    let mut scratch = SpanScratch::default();
    spans_into(line, &mut scratch);
    scratch.spans.iter().map(|&(a, b, _)| (a, b)).collect()
}

/// Buffers of [`spans_into`], reused from line to line.
#[derive(Default)]
pub struct SpanScratch {
    /// The line's segments: byte start, byte end, characters.
    pub spans: Vec<(usize, usize, u32)>,
    classes: Vec<Wb>,
    offsets: Vec<u32>,
}

/// The segments of `line` (as [`byte_segments`], with their lengths in characters) into
/// `scratch.spans`. Lines of ASCII and the few non-ASCII characters of [`simple_classes`] (curly
/// quotes, dashes: 44% of the Gutenberg text is in lines holding one) take [`breaks`]; the rest
/// `unicode-segmentation`.
pub fn spans_into(line: &str, scratch: &mut SpanScratch) {
    let SpanScratch { spans, classes, offsets } = scratch;
    spans.clear();
    if simple_classes(line, classes, offsets) {
        let n = classes.len();
        let mut start = 0usize;
        for i in 1..=n {
            if i < n && !breaks(classes, i) {
                continue;
            }
            let end = if i < n { offsets[i] as usize } else { line.len() };
            spans.push((offsets[start] as usize, end, (i - start) as u32));
            start = i;
        }
        return;
    }
    crate_spans_into(line, spans);
}

/// [`spans_into`] by `unicode-segmentation` alone (the path of every other line, and the tests' oracle
/// of the fast path).
fn crate_spans_into(line: &str, spans: &mut Vec<(usize, usize, u32)>) {
    spans.extend(line.split_word_bound_indices().map(|(i, seg)| (i, i + seg.len(), seg.chars().count() as u32)));
}

#[cfg(test)]
fn crate_spans(line: &str) -> Vec<(usize, usize, u32)> {
    let mut spans = Vec::new();
    crate_spans_into(line, &mut spans);
    spans
}

/// The UAX #29 word-break classes of the characters [`simple_classes`] knows (`WordBreakProperty.txt`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Wb {
    Other,
    Cr,
    Lf,
    Newline,
    Space,
    Letter,
    Numeric,
    /// `.` `‘` `’` (MidNumLet) and `'` (Single_Quote): all MidNumLetQ, all the rules here see.
    MidNumLetQ,
    /// `:`
    MidLetter,
    /// `,` `;`
    MidNum,
    /// `_`
    ExtendNumLet,
}

const fn ascii_class(b: u8) -> Wb {
    match b {
        b'\r' => Wb::Cr,
        b'\n' => Wb::Lf,
        0x0B | 0x0C => Wb::Newline,
        b' ' => Wb::Space,
        b'A'..=b'Z' | b'a'..=b'z' => Wb::Letter,
        b'0'..=b'9' => Wb::Numeric,
        b'.' | b'\'' => Wb::MidNumLetQ,
        b':' => Wb::MidLetter,
        b',' | b';' => Wb::MidNum,
        b'_' => Wb::ExtendNumLet,
        _ => Wb::Other,
    }
}

static ASCII_WB: [Wb; 128] = {
    let mut t = [Wb::Other; 128];
    let mut i = 0;
    while i < 128 {
        t[i] = ascii_class(i as u8);
        i += 1;
    }
    t
};

/// The class and byte offset of each char of `line` when every char is ASCII or one of
/// `‐ – — ‘ ’ “ ”` (U+2010, U+2013, U+2014, U+2018, U+2019, U+201C, U+201D: Other, except the
/// single quotes, MidNumLet); else `false`.
fn simple_classes(line: &str, classes: &mut Vec<Wb>, offsets: &mut Vec<u32>) -> bool {
    classes.clear();
    offsets.clear();
    let b = line.as_bytes();
    if b.len() >= u32::MAX as usize {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        let x = b[i];
        offsets.push(i as u32);
        if x < 0x80 {
            classes.push(ASCII_WB[x as usize]);
            i += 1;
            continue;
        }
        // U+2010..U+201D are E2 80 90..9D.
        if x != 0xE2 || b.get(i + 1) != Some(&0x80) {
            return false;
        }
        classes.push(match b.get(i + 2) {
            Some(0x98 | 0x99) => Wb::MidNumLetQ,
            Some(0x90 | 0x93 | 0x94 | 0x9C | 0x9D) => Wb::Other,
            _ => return false,
        });
        i += 3;
    }
    true
}

/// Whether UAX #29 puts a word boundary between chars `i - 1` and `i` (`0 < i < c.len()`) of a
/// text of [`simple_classes`]. Of the rules only those whose classes occur there apply: no Format,
/// Extend, ZWJ, Hebrew, Katakana, regional indicators or pictographs. Tests check this against
/// `unicode-segmentation` on every short string of one char of each class.
#[inline]
fn breaks(c: &[Wb], i: usize) -> bool {
    use Wb::*;
    let (l, r) = (c[i - 1], c[i]);
    let word = |x: Wb| matches!(x, Letter | Numeric);
    match (l, r) {
        (Cr, Lf) => false,                                           // WB3
        (Cr | Lf | Newline, _) | (_, Cr | Lf | Newline) => true,     // WB3a, WB3b
        (Space, Space) => false,                                     // WB3d
        _ if word(l) && word(r) => false,                            // WB5, WB8, WB9, WB10
        (Letter, MidLetter | MidNumLetQ) => !(i + 1 < c.len() && c[i + 1] == Letter), // WB6
        (MidLetter | MidNumLetQ, Letter) => !(i >= 2 && c[i - 2] == Letter),           // WB7
        (Numeric, MidNum | MidNumLetQ) => !(i + 1 < c.len() && c[i + 1] == Numeric),  // WB12
        (MidNum | MidNumLetQ, Numeric) => !(i >= 2 && c[i - 2] == Numeric),           // WB11
        (Letter | Numeric | ExtendNumLet, ExtendNumLet) => false,    // WB13a
        (ExtendNumLet, Letter | Numeric) => false,                   // WB13b
        _ => true,                                                   // WB999
    }
}

/// The segments of a chunk of lines, as a part of the whole input joined by line feeds: every line but
/// the input's last is followed by a line feed, a segment of its own, or one with the line's last
/// character when the line ends with `\r` (UAX #29 keeps `\r\n` together). The counts are the same
/// however the input is cut into chunks.
pub struct ChunkSegments {
    /// All segments, line after line: line `j`'s are `segs[line_start[j]..line_start[j + 1]]` (a
    /// line ending in `\r` that is not the input's last has the `\r\n` type for that last character).
    pub segs: Vec<Segment>,
    /// Per line and one past the last, the index of its first segment in `segs`.
    pub line_start: Vec<usize>,
    /// Per line, the type of the line feed segment after it (`None` for the input's last line and
    /// for a line whose `\r` took the line feed).
    pub separator: Vec<Option<u32>>,
    /// The type of the segment that ends the line before the chunk (its line feed, or `\r\n`).
    pub before: Option<u32>,
    /// The number of types before this chunk: ids from here on are new.
    pub known: usize,
    /// The line (in the chunk) where each new type first occurs.
    pub new_first_line: Vec<u32>,
    /// Per line: its last segment is `\r\n` (the line ended with `\r` and took the line feed).
    merged: Vec<bool>,
}

impl ChunkSegments {
    /// The segments of line `j`.
    pub fn line(&self, j: usize) -> &[Segment] {
        &self.segs[self.line_start[j]..self.line_start[j + 1]]
    }

    /// The type of the segment that ends the chunk's last line (its line feed or `\r\n`), if any: the
    /// next chunk's [`ChunkSegments::before`].
    pub fn tail(&self) -> Option<u32> {
        let j = self.separator.len().checked_sub(1)?;
        self.separator[j].or_else(|| self.line(j).last().map(|g| g.ty).filter(|_| self.line_feed_merged(j)))
    }

    /// Whether line `j`'s last segment took the line feed after it (`\r\n`).
    fn line_feed_merged(&self, j: usize) -> bool {
        self.separator[j].is_none() && self.merged[j]
    }
}

/// Type id of a segment whose type was not known when the chunk was segmented.
const UNKNOWN: u32 = u32::MAX;

/// One block of lines, segmented: its segments (types looked up, [`UNKNOWN`] where new), the
/// segment count per line, and the byte span in its line of each segment of unknown type.
#[derive(Default)]
struct SegBlock {
    segs: Vec<Segment>,
    per_line: Vec<u32>,
    unknown: Vec<(u32, usize, usize)>,
}

/// Lines per task of the parallel segmentation.
const BLOCK_LINES: usize = 256;

/// Segments `lines` and interns their types in order of occurrence in the joined input. `last_chunk`:
/// the chunk ends the input (its last line has no line feed after it); `before`: the previous chunk's
/// [`ChunkSegments::tail`].
pub fn segment_chunk(lines: &[&str], index: &mut TypeIndex, last_chunk: bool, before: Option<u32>) -> ChunkSegments {
    let known = index.len();
    // One-character ASCII segments (spaces, punctuation: about half of them) by table, not by hash.
    let ascii1: Vec<u32> = (0u8..128).map(|b| index.get(std::str::from_utf8(&[b]).unwrap_or("")).unwrap_or(UNKNOWN)).collect();
    let shared: &TypeIndex = index;
    let segment_block = |part: &[&str]| -> SegBlock {
        let mut blk = SegBlock { per_line: Vec::with_capacity(part.len()), ..Default::default() };
        let mut scratch = SpanScratch::default();
        for line in part {
            spans_into(line, &mut scratch);
            let spans = &scratch.spans;
            let mut chars = 0u32;
            for &(b0, b1, n) in spans {
                let s = &line[b0..b1];
                let ty = if s.len() == 1 { ascii1[s.as_bytes()[0] as usize] } else { shared.get(s).unwrap_or(UNKNOWN) };
                if ty == UNKNOWN {
                    blk.unknown.push((blk.segs.len() as u32, b0, b1));
                }
                blk.segs.push(Segment { start: chars, end: chars + n, ty });
                chars += n;
            }
            blk.per_line.push(scratch.spans.len() as u32);
        }
        blk
    };
    let blocks: Vec<SegBlock> = if lines.len() > BLOCK_LINES && crate::parallel::parallel_allowed() {
        lines.par_chunks(BLOCK_LINES).map(segment_block).collect()
    } else {
        lines.chunks(BLOCK_LINES).map(segment_block).collect()
    };
    let total: usize = blocks.iter().map(|b| b.segs.len()).sum();
    let mut segs = Vec::with_capacity(total);
    let mut line_start = Vec::with_capacity(lines.len() + 1);
    let mut separator = Vec::with_capacity(lines.len());
    let mut new_first_line = Vec::new();
    let mut intern = |index: &mut TypeIndex, s: &str, line: usize| -> u32 {
        let before = index.len();
        let id = index.intern(s);
        if index.len() > before {
            new_first_line.push(line as u32);
        }
        id
    };
    // Lines before `last` are followed by a line feed.
    let last = if last_chunk { lines.len().saturating_sub(1) } else { lines.len() };
    let mut merged = Vec::with_capacity(lines.len());
    let mut line_feed: Option<u32> = None;
    let mut j = 0usize;
    for blk in blocks {
        let base = segs.len();
        segs.extend_from_slice(&blk.segs);
        let mut unknown = blk.unknown.iter().peekable();
        let mut at = base;
        for &k in &blk.per_line {
            let line = lines[j];
            let end = at + k as usize;
            line_start.push(at);
            let merge_cr = j < last && line.ends_with('\r');
            merged.push(merge_cr && end > at);
            // The new types in order of occurrence: the segments', then the line feed's.
            while let Some(&&(i, b0, b1)) = unknown.peek() {
                let i = base + i as usize;
                if i >= end {
                    break;
                }
                unknown.next();
                if !(merge_cr && i + 1 == end) {
                    segs[i].ty = intern(index, &line[b0..b1], j);
                }
            }
            if merge_cr && end > at {
                segs[end - 1].ty = intern(index, "\r\n", j);
            }
            separator.push(if j < last && !merge_cr {
                // Interned once: later lines reuse the id (a lookup per line otherwise).
                Some(*line_feed.get_or_insert_with(|| intern(index, "\n", j)))
            } else {
                None
            });
            at = end;
            j += 1;
        }
    }
    line_start.push(segs.len());
    ChunkSegments { segs, line_start, separator, before, known, new_first_line, merged }
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
        // No tailoring: an apostrophe at a word start is a segment of its own (UAX #29 WB999).
        assert_eq!(texts("x 'em 's ’Ère can't"), ["x", " ", "'", "em", " ", "'", "s", " ", "’", "Ère", " ", "can't"]);
    }

    #[test]
    fn chunk_types_in_order_and_line_feeds_between_lines() {
        let mut index = TypeIndex::default();
        let c = segment_chunk(&["a b", "b\r", "c"], &mut index, true, None);
        let names: Vec<&str> = index.types.iter().map(|s| &**s).collect();
        assert_eq!(names, ["a", " ", "b", "\n", "\r\n", "c"]);
        assert_eq!(c.new_first_line, [0, 0, 0, 0, 1, 2]);
        assert_eq!(c.separator, [Some(3), None, None]);
        assert_eq!(c.line(1), [Segment { start: 0, end: 1, ty: 2 }, Segment { start: 1, end: 2, ty: 4 }]);
        assert_eq!(c.tail(), None);
        let again = segment_chunk(&["c a"], &mut index, true, None);
        assert_eq!(again.known, 6);
        assert!(again.new_first_line.is_empty());
        // A chunk that does not end the input: its last line is followed by a line feed too.
        let mid = segment_chunk(&["a", "b\r"], &mut index, false, None);
        assert_eq!(mid.separator, [Some(3), None]);
        assert_eq!(mid.tail(), Some(4));
        assert_eq!(segment_chunk(&["x"], &mut index, false, None).tail(), Some(3));
    }

    /// The segments of `s` by the fast path (when it takes `s`) and by the crate alone.
    fn both(s: &str) -> Option<(Vec<(usize, usize, u32)>, Vec<(usize, usize, u32)>)> {
        let mut scratch = SpanScratch::default();
        if !simple_classes(s, &mut scratch.classes, &mut scratch.offsets) {
            return None;
        }
        spans_into(s, &mut scratch);
        Some((scratch.spans.clone(), crate_spans(s)))
    }

    fn every_string(alphabet: &[&str], max_len: u32, mut f: impl FnMut(&str)) {
        let mut s = String::new();
        for len in 1..=max_len {
            for mut code in 0..alphabet.len().pow(len) {
                s.clear();
                for _ in 0..len {
                    s.push_str(alphabet[code % alphabet.len()]);
                    code /= alphabet.len();
                }
                f(&s);
            }
        }
    }

    #[test]
    fn fast_path_equals_the_crate_on_every_short_string() {
        // One char of each class (two of some), the tailoring's vowels and apostrophes among them.
        let classes = ["a", "E", "7", ".", "'", "\u{2019}", ":", ",", "_", " ", "\t", "\r", "\n", "\x0b", "\u{201C}", "!"];
        every_string(&classes, 5, |s| {
            let (fast, by_crate) = both(s).expect("the fast path takes these");
            assert_eq!(fast, by_crate, "{s:?}");
        });
        // Every char the fast path knows beyond ASCII, and the ASCII ones of each class.
        let more = ["b", "Z", "0", ";", "\x0c", "\"", "\u{2010}", "\u{2013}", "\u{2014}", "\u{2018}", "\u{201D}", "o", "'", "\u{2019}", " "];
        every_string(&more, 4, |s| {
            let (fast, by_crate) = both(s).expect("the fast path takes these");
            assert_eq!(fast, by_crate, "{s:?}");
        });
    }

    #[test]
    fn fast_path_equals_the_crate_on_random_text() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let extra = ['\u{2010}', '\u{2013}', '\u{2014}', '\u{2018}', '\u{2019}', '\u{201C}', '\u{201D}', 'é', '\u{2011}'];
        let mut taken = 0;
        for _ in 0..50_000 {
            let len = (next() % 14) as usize;
            let s: String = (0..len)
                .map(|_| {
                    let r = next();
                    if r % 5 == 0 { extra[(r / 5) as usize % extra.len()] } else { ((r / 5) % 128) as u8 as char }
                })
                .collect();
            if let Some((fast, by_crate)) = both(&s) {
                assert_eq!(fast, by_crate, "{s:?}");
                taken += 1;
            }
            let spans = byte_segments(&s);
            assert_eq!(spans.first().map_or(0, |x| x.0), 0);
            assert_eq!(spans.last().map_or(0, |x| x.1), s.len());
        }
        assert!(taken > 10_000 && taken < 50_000, "{taken}");
    }

    /// Unicode's own conformance cases: `(text, its segments)` per data line of the vendored file.
    fn word_break_cases() -> Vec<(String, Vec<String>)> {
        const FILE: &str = include_str!("../../../tests/data/unicode/WordBreakTest-17.0.0.txt");
        assert!(FILE.starts_with("# WordBreakTest-17.0.0.txt"), "the vendored file is not of Unicode 17.0.0");
        let mut cases = Vec::new();
        for raw in FILE.lines() {
            let data = raw.split('#').next().unwrap_or("");
            if data.trim().is_empty() {
                continue;
            }
            let (mut text, mut segs, mut cur) = (String::new(), Vec::new(), String::new());
            for field in data.split_whitespace() {
                match field {
                    "\u{f7}" => {
                        if !cur.is_empty() {
                            segs.push(std::mem::take(&mut cur));
                        }
                    }
                    "\u{d7}" => {}
                    hex => {
                        let c = u32::from_str_radix(hex, 16).ok().and_then(char::from_u32).expect("a code point");
                        text.push(c);
                        cur.push(c);
                    }
                }
            }
            cases.push((text, segs));
        }
        cases
    }

    #[test]
    fn every_path_passes_unicodes_word_break_test() {
        let cases = word_break_cases();
        assert_eq!(cases.len(), 1944, "every data line of WordBreakTest-17.0.0.txt is read");
        let mut fast = 0;
        for (text, want) in &cases {
            let got: Vec<&str> = texts(text);
            assert_eq!(got, *want, "{text:?}");
            let by_crate: Vec<&str> = crate_spans(text).iter().map(|&(a, b, _)| &text[a..b]).collect();
            assert_eq!(by_crate, *want, "{text:?} (the crate)");
            if let Some((f, _)) = both(text) {
                let f: Vec<&str> = f.iter().map(|&(a, b, _)| &text[a..b]).collect();
                assert_eq!(f, *want, "{text:?} (the fast path)");
                fast += 1;
            }
        }
        assert!(fast > 50, "the fast path takes some of the cases ({fast})");
    }

    #[test]
    fn whitespace_is_python_isspace() {
        assert!(is_space(' ') && is_space('\u{3000}') && is_space('\u{85}') && is_space('\u{1f}'));
        assert!(!is_space('\u{200b}') && !is_space('a') && !is_space('\u{180e}'));
    }
}
