//! Hand-written scanners for the Split regexes of modern byte-level tokenizers: GPT-4's `cl100k_base`
//! (also Llama 3's), GPT-4o's `o200k_base` and Qwen 2's, recognised by their exact pattern strings.
//!
//! Each scanner gives, for every start position, the end of the match the regex engine finds there
//! (leftmost-first alternation, greedy quantifiers with backtracking); the derivations are in the
//! comments of [`Modern::match_end`]. Every char is matched by some alternative, so the matches tile
//! the text and `Split(behavior=Isolated)` pieces are exactly the matches.
//!
//! Where HF (Oniguruma, Ruby syntax) and tiktoken (fancy-regex) read one pattern string differently,
//! the pattern table says which reading a string gets. The one difference in these patterns is the
//! possessive interval: `\p{N}{1,3}+` is possessive (at most 3 digits) in fancy-regex, but in
//! Oniguruma's Ruby syntax `X{n,m}+` is `(?:X{n,m})+`, a run of any length. The strings here are
//! read as HF reads them (they come from tokenizer.json); `subword.formats.tiktoken` rewrites a
//! tiktoken pattern into the string with the same meaning for HF before it builds the pipeline.
//! See `docs/pretokenizers.md` for the full account.
//!
//! Performance notes
//! - Why scanners and not a regex engine: tiktoken runs these patterns with fancy-regex, whose
//!   backtracking VM is most of tiktoken's encode time; the regex crate cannot run them at all
//!   (look-ahead `\s+(?!\S)`, possessive quantifiers). A scanner classifies each char once through a
//!   128-entry ASCII table (a binary search in `unicode-general-category` above ASCII) and never
//!   backtracks further than one char run, so it runs at the speed of the GPT-2 scanner in
//!   `pretok.rs`. Other patterns go to the regex crate where it reads them as Oniguruma does and are
//!   refused, naming the construct, otherwise.
//! - The scanners hand out byte ranges (no allocation per piece). `[Split(known), ByteLevel(no regex,
//!   no prefix space)]`, the pipeline of every tiktoken conversion, is run as the scanner alone
//!   (`PreTokenizer::for_each_raw_piece_with_offsets`), so no dyn call sits between piece and model.
//! - Measured (`examples/encode_file.rs`, 4 MB of gutenberg_en_20M, cl100k, one string, CPU time from
//!   `perf stat` on a shared 2-core machine at load ~20, 2026-12): the split alone ~90 MB/s; the whole
//!   encode went 25 -> 35 MB/s when the word cache got its direct-mapped front and register-built keys
//!   (`bpe/encode.rs`). The profile after that: the word-cache probe ~30%, this scanner ~25%.
//! - cl100k's most frequent matches (an ASCII letter run, or a space and one) are taken before the
//!   general dispatch (`Text::cl100k_word`), and `Text::at` inlines only its ASCII test: the scanner
//!   was 45% of the Rust time of a long text with both out of line (perf, 2026-12).
//! - The common matches (ASCII words, digits, punctuation, whitespace) are read from 16 bytes
//!   classified at once (`modern/fast.rs`, `pretok/lanes.rs`) before the char-by-char dispatch:
//!   on English the scanner went from ~290-307 to ~440 MB/s (2026-12-05).
//! - Before those, plain ASCII stretches are cut 64 bytes at a time from class bitmaps
//!   (`modern/window.rs`): the scanner alone 440 -> 700-730 MB/s on English, 370 -> 520-550 on
//!   German (one core, idle, 1 MB, 2026-12-06); non-ASCII text skips it after one 16-byte test.

use unicode_general_category::{get_general_category, GeneralCategory as Gc};

mod fast;
mod window;

/// Char flags: the classes the patterns name.
const L: u8 = 1; // \p{L}
const N: u8 = 2; // \p{N}
const S: u8 = 4; // \s (White_Space)
const UP: u8 = 8; // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] (o200k's "upper" class)
const LO: u8 = 16; // [\p{Ll}\p{Lm}\p{Lo}\p{M}] (o200k's "lower" class)
const NL: u8 = 32; // \r or \n

/// Which scanner a recognised pattern uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modern {
    /// The cl100k / Llama 3 / Qwen 2 family: contractions first (case-insensitive), then an optional
    /// non-letter prefix + letters, digit runs of at most `max_digits` (0: unbounded), punctuation with
    /// trailing newlines, then whitespace. `ws_to_end_first`: cl100k's `\s++$` comes before
    /// `\s*[\r\n]`, so trailing whitespace after a newline stays one piece at the end of the text.
    Cl100k { max_digits: u8, ws_to_end_first: bool },
    /// o200k: letters split at case changes (`[Up]*[Lo]+` or `[Up]+[Lo]*`) with contraction suffixes,
    /// digit runs of at most 3, punctuation with trailing `\r \n /`, then whitespace.
    O200k,
    /// GPT-2 / r50k_base (tiktoken's faster spelling of GPT-2's pattern): the scanner in `pretok.rs`.
    Gpt2,
}

const CL100K_TIKTOKEN: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";
const CL100K_THREE_DIGITS: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";
const LLAMA3: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const QWEN2: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const O200K: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|",
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|",
    r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
);
const R50K: &str = r"'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s";
const GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

/// The known pattern strings, as HF (Oniguruma) reads them.
pub const KNOWN: [(&str, Modern); 7] = [
    // Oniguruma reads `\p{N}{1,3}+` as `(?:\p{N}{1,3})+`: digit runs are not cut.
    (CL100K_TIKTOKEN, Modern::Cl100k { max_digits: 0, ws_to_end_first: true }),
    (CL100K_THREE_DIGITS, Modern::Cl100k { max_digits: 3, ws_to_end_first: true }),
    (LLAMA3, Modern::Cl100k { max_digits: 3, ws_to_end_first: false }),
    (QWEN2, Modern::Cl100k { max_digits: 1, ws_to_end_first: false }),
    (O200K, Modern::O200k),
    (R50K, Modern::Gpt2),
    (GPT2, Modern::Gpt2),
];

/// The scanner for `pattern` if it is one of the known strings.
pub fn recognise(pattern: &str) -> Option<Modern> {
    KNOWN.iter().find(|(p, _)| *p == pattern).map(|(_, m)| *m)
}

const fn ascii_flags() -> [u8; 128] {
    let mut t = [0u8; 128];
    let mut i = 0;
    while i < 128 {
        let c = i as u8;
        t[i] = if c.is_ascii_uppercase() {
            L | UP
        } else if c.is_ascii_lowercase() {
            L | LO
        } else if c.is_ascii_digit() {
            N
        } else if c == b'\r' || c == b'\n' {
            S | NL
        } else if matches!(c, b'\t' | b'\x0b' | b'\x0c' | b' ') {
            S
        } else {
            0
        };
        i += 1;
    }
    t
}

static ASCII_FLAGS: [u8; 128] = ascii_flags();

#[inline]
fn flags_of(c: char) -> u8 {
    if (c as u32) < 128 {
        return ASCII_FLAGS[c as usize];
    }
    if (c as u32) < 0x10000 {
        return bmp_flags()[c as usize];
    }
    flags_by_category(c)
}

/// The flags of every char below U+10000, computed once by [`flags_by_category`] (64 KB): a CJK or
/// Cyrillic text asks for thousands of distinct chars, and the binary search of the general category
/// table for each was an eighth of encoding Chinese with cl100k (perf, 2026-12).
fn bmp_flags() -> &'static [u8; 0x10000] {
    static TABLE: std::sync::OnceLock<Box<[u8; 0x10000]>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Box::new([0u8; 0x10000]);
        for (cp, slot) in t.iter_mut().enumerate() {
            // Surrogates are not chars (never in a str); their slots stay 0.
            if let Some(c) = char::from_u32(cp as u32) {
                *slot = flags_by_category(c);
            }
        }
        t
    })
}

/// The flags of `c` from the White_Space list and the general category (the definition).
fn flags_by_category(c: char) -> u8 {
    if (c as u32) < 128 {
        return ASCII_FLAGS[c as usize];
    }
    if super::is_white_space(c) {
        return S;
    }
    match get_general_category(c) {
        Gc::UppercaseLetter | Gc::TitlecaseLetter => L | UP,
        Gc::LowercaseLetter => L | LO,
        Gc::ModifierLetter | Gc::OtherLetter => L | UP | LO,
        Gc::NonspacingMark | Gc::SpacingMark | Gc::EnclosingMark => UP | LO,
        Gc::DecimalNumber | Gc::LetterNumber | Gc::OtherNumber => N,
        _ => 0,
    }
}

/// `[^\r\n\p{L}\p{N}]`: the optional prefix of a word.
#[inline]
fn is_prefix(f: u8) -> bool {
    f & (L | N | NL) == 0
}

/// `[^\s\p{L}\p{N}]`: punctuation, symbols, marks, controls.
#[inline]
fn is_punct(f: u8) -> bool {
    f & (L | N | S) == 0
}

/// A text with a cursor-free char reader.
struct Text<'a> {
    s: &'a str,
}

impl<'a> Text<'a> {
    /// Flags and UTF-8 length of the char at byte `i`, or `None` at the end.
    #[inline(always)]
    fn at(&self, i: usize) -> Option<(u8, usize)> {
        let b = *self.s.as_bytes().get(i)?;
        if b < 0x80 {
            return Some((ASCII_FLAGS[b as usize], 1));
        }
        self.at_non_ascii(i)
    }

    /// [`Self::at`] past ASCII, out of line so that the ASCII test stays small enough to inline.
    #[inline(never)]
    fn at_non_ascii(&self, i: usize) -> Option<(u8, usize)> {
        let b = self.s.as_bytes();
        // `i` is a char boundary of a str, so a lead byte of 0xC0..0xF0 has its continuation bytes.
        let lead = *b.get(i)?;
        if (0xC0..0xF0).contains(&lead) {
            let (cp, n) = if lead < 0xE0 {
                ((u32::from(lead & 0x1F) << 6) | u32::from(b[i + 1] & 0x3F), 2)
            } else {
                ((u32::from(lead & 0x0F) << 12) | (u32::from(b[i + 1] & 0x3F) << 6) | u32::from(b[i + 2] & 0x3F), 3)
            };
            return Some((bmp_flags()[cp as usize], n));
        }
        let c = self.s[i..].chars().next()?;
        Some((flags_of(c), c.len_utf8()))
    }

    /// cl100k's most frequent matches without the general dispatch: a letter run, or one space
    /// then a letter run, starting with an ASCII letter. `None` when the text at `i` is anything
    /// else. Equal to [`Modern::match_end`] where it answers: no contraction starts with a letter
    /// or a space, and a space is the optional non-letter prefix (`[^\r\n\p{L}\p{N}]?`).
    #[inline(always)]
    fn cl100k_word(&self, i: usize) -> Option<usize> {
        let b = self.s.as_bytes();
        let j = if b[i] == b' ' { i + 1 } else { i };
        let first = *b.get(j)?;
        if first >= 0x80 || ASCII_FLAGS[first as usize] & L == 0 {
            return None;
        }
        let mut k = j + 1;
        while let Some(&c) = b.get(k) {
            if c >= 0x80 {
                return Some(self.run(k, L)); // a non-ASCII letter may continue the run
            }
            if ASCII_FLAGS[c as usize] & L == 0 {
                break;
            }
            k += 1;
        }
        Some(k)
    }

    /// o200k's most frequent matches without the general dispatch: an optional ASCII prefix char
    /// (`[^\r\n\p{L}\p{N}]`: a space, punctuation) and a run of ASCII letters, ended by an ASCII char
    /// or the end of the text. `None` when anything else is at `i`, or a non-ASCII char ends the
    /// letters (a mark or letter there may extend the match). Equal to [`Modern::match_end`] where it
    /// answers: with letters after the prefix, alternative 1 (`P? [Up]* [Lo]+ C?`) matches when an
    /// upper run is followed by a lower run (greedy `[Up]*` takes the whole upper run, as the lower
    /// run starts right after it), and otherwise alternative 2 (`P? [Up]+ [Lo]* C?`) takes the upper
    /// run (`[Lo]*` is empty: the char after it is not a lowercase letter).
    #[inline(always)]
    fn o200k_word(&self, i: usize) -> Option<usize> {
        let b = self.s.as_bytes();
        let f0 = ASCII_FLAGS[*b.get(i).filter(|&&c| c < 0x80)? as usize];
        let j = if f0 & L != 0 {
            i
        } else if is_prefix(f0) {
            i + 1
        } else {
            return None;
        };
        let upper = |k: usize| b.get(k).is_some_and(|c| c.is_ascii_uppercase());
        let lower = |k: usize| b.get(k).is_some_and(|c| c.is_ascii_lowercase());
        let mut k = j;
        while upper(k) {
            k += 1;
        }
        let upper_end = k;
        while lower(k) {
            k += 1;
        }
        if k == j {
            return None; // no letter after the prefix
        }
        // The char after the letters must be ASCII (or the end): a non-ASCII letter or mark could
        // continue either run.
        if b.get(k).is_some_and(|&c| c >= 0x80) {
            return None;
        }
        let e = if k > upper_end { k } else { upper_end };
        Some(e + self.contraction(e).unwrap_or(0))
    }

    /// End of the run of chars from `i` whose flags contain one of `want`.
    #[inline]
    fn run(&self, mut i: usize, want: u8) -> usize {
        while let Some((f, n)) = self.at(i) {
            if f & want == 0 {
                break;
            }
            i += n;
        }
        i
    }

    /// End of at most `max` (0: any number of) chars with `want` from `i`.
    #[inline]
    fn run_max(&self, mut i: usize, want: u8, max: u8) -> usize {
        let mut k = 0u8;
        while let Some((f, n)) = self.at(i) {
            if f & want == 0 || (max != 0 && k == max) {
                break;
            }
            i += n;
            k = k.saturating_add(1);
        }
        i
    }

    /// Byte length of `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `i`, if it matches. Case-insensitive as all
    /// three engines fold: ASCII both cases, and `ſ` (U+017F, long s) for `s`.
    #[inline]
    fn contraction(&self, i: usize) -> Option<usize> {
        let b = self.s.as_bytes();
        if b.get(i) != Some(&b'\'') {
            return None;
        }
        let c1 = b.get(i + 1).map(u8::to_ascii_lowercase);
        let c2 = b.get(i + 2).map(u8::to_ascii_lowercase);
        match (c1, c2) {
            (Some(b's' | b't' | b'm' | b'd'), _) => Some(2),
            (Some(b'l'), Some(b'l')) | (Some(b'v' | b'r'), Some(b'e')) => Some(3),
            // U+017F is C5 BF in UTF-8.
            (Some(0xc5), Some(0xbf)) => Some(3),
            _ => None,
        }
    }

    /// Start of the char that ends at byte `i` (`i > 0`, a char boundary).
    #[inline]
    fn prev_boundary(&self, i: usize) -> usize {
        let b = self.s.as_bytes();
        let mut j = i - 1;
        while j > 0 && (b[j] & 0xc0) == 0x80 {
            j -= 1;
        }
        j
    }

    /// The whitespace alternatives at `i` (a White_Space char). `to_end_first`: cl100k's `\s++$`.
    #[inline]
    fn whitespace(&self, i: usize, to_end_first: bool) -> usize {
        // The run, and the end of its last \r or \n.
        let mut end = i;
        let mut after_nl = None;
        let mut last_start = i;
        while let Some((f, n)) = self.at(end) {
            if f & S == 0 {
                break;
            }
            last_start = end;
            end += n;
            if f & NL != 0 {
                after_nl = Some(end);
            }
        }
        let at_end = end == self.s.len();
        if to_end_first && at_end {
            return end; // \s++$
        }
        if let Some(e) = after_nl {
            return e; // \s*[\r\n] / \s*[\r\n]+: greedy \s* backs off to the last newline
        }
        if at_end {
            return end; // \s+(?!\S) at the end of the text
        }
        if last_start > i {
            return last_start; // \s+(?!\S): the run but its last char, which then prefixes the next word
        }
        end // \s / \s+: one char before a non-space
    }
}

impl Modern {
    /// Calls `f(start, end)` for every match, left to right (they tile `text`).
    pub fn split(self, text: &str, mut f: impl FnMut(usize, usize)) {
        if let Modern::Gpt2 = self {
            return super::split_gpt2(text, f);
        }
        let t = Text { s: text };
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < text.len() {
            // The pieces of 64 bytes at once where they are plain ASCII (`modern/window.rs`).
            if let Some((starts, limit)) = window::starts(self, bytes, i) {
                let mut rest = starts & !1 & ((1u64 << limit) - 1);
                if rest != 0 {
                    let mut s = i;
                    while rest != 0 {
                        let e = i + rest.trailing_zeros() as usize;
                        f(s, e);
                        s = e;
                        rest &= rest - 1;
                    }
                    i = s;
                    continue;
                }
            }
            let fast = match self {
                Modern::Cl100k { max_digits, ws_to_end_first } => t.cl100k_fast(i, max_digits, ws_to_end_first),
                _ => t.o200k_fast(i),
            };
            let e = match fast {
                Some(e) => e,
                None => self.match_end(&t, i),
            };
            // Every char is matched by some alternative; the guard only protects against a bug looping.
            let e = if e > i { e } else { i + t.at(i).map_or(1, |x| x.1) };
            f(i, e);
            i = e;
        }
    }

    fn match_end(self, t: &Text<'_>, i: usize) -> usize {
        let Some((f0, n0)) = t.at(i) else { return i };
        match self {
            Modern::Cl100k { max_digits, ws_to_end_first } => {
                if let Some(n) = t.contraction(i) {
                    return i + n;
                }
                // [^\r\n\p{L}\p{N}]?\p{L}+ : backing off the prefix never helps (it is not a letter).
                if f0 & L != 0 {
                    return t.run(i, L);
                }
                if is_prefix(f0) {
                    if let Some((f1, _)) = t.at(i + n0) {
                        if f1 & L != 0 {
                            return t.run(i + n0, L);
                        }
                    }
                }
                if f0 & N != 0 {
                    return t.run_max(i, N, max_digits);
                }
                if let Some(e) = punctuation(t, i, f0, n0, NL) {
                    return e;
                }
                t.whitespace(i, ws_to_end_first)
            }
            Modern::O200k => {
                let pre = if is_prefix(f0) { Some(i + n0) } else { None };
                // 1: P? [Up]* [Lo]+ C?  Greedy [Up]* backs off one char at a time until [Lo]+ can start.
                for j in pre.into_iter().chain(std::iter::once(i)) {
                    let a_end = t.run(j, UP);
                    let mut k = a_end;
                    loop {
                        if let Some((f, _)) = t.at(k) {
                            if f & LO != 0 {
                                let e = t.run(k, LO);
                                return e + t.contraction(e).unwrap_or(0);
                            }
                        }
                        if k == j {
                            break;
                        }
                        k = t.prev_boundary(k);
                    }
                }
                // 2: P? [Up]+ [Lo]* C?
                for j in pre.into_iter().chain(std::iter::once(i)) {
                    let a_end = t.run(j, UP);
                    if a_end > j {
                        let e = t.run(a_end, LO);
                        return e + t.contraction(e).unwrap_or(0);
                    }
                }
                if f0 & N != 0 {
                    return t.run_max(i, N, 3);
                }
                if let Some(e) = punctuation(t, i, f0, n0, NL | SLASH) {
                    return e;
                }
                t.whitespace(i, false)
            }
            Modern::Gpt2 => i + n0, // not reached: split() hands GPT-2 to its own scanner
        }
    }
}

/// Pseudo-flag for `/` in the trailing class of o200k's punctuation alternative.
const SLASH: u8 = 64;

/// ` ?[^\s\p{L}\p{N}]+` followed by a run of `\r \n` (and `/` when `tail` has [`SLASH`]).
#[inline]
fn punctuation(t: &Text<'_>, i: usize, f0: u8, n0: usize, tail: u8) -> Option<usize> {
    let j = if t.s.as_bytes()[i] == b' ' {
        match t.at(i + n0) {
            Some((f1, _)) if is_punct(f1) => i + n0,
            _ => return None,
        }
    } else if is_punct(f0) {
        i
    } else {
        return None;
    };
    let mut e = j;
    while let Some((f, n)) = t.at(e) {
        if !is_punct(f) {
            break;
        }
        e += n;
    }
    let b = t.s.as_bytes();
    while let Some(&c) = b.get(e) {
        let hit = (c == b'\r' || c == b'\n') || (tail & SLASH != 0 && c == b'/');
        if !hit {
            break;
        }
        e += 1;
    }
    Some(e)
}

/// Random texts for the scanners' brute-force tests (`fast.rs`, `window.rs`): a fixed-seed xorshift.
#[cfg(test)]
pub(super) struct TextGen(pub u64);

#[cfg(test)]
impl TextGen {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// `len` picks from `alphabet`, each repeated 1 to `max_run` times one time in `run_one_in`
    /// (runs that reach and cross the scanners' windows).
    pub fn text(&mut self, alphabet: &[&str], len: usize, run_one_in: u64, max_run: u64) -> String {
        (0..len)
            .map(|_| {
                let c = alphabet[(self.next() % alphabet.len() as u64) as usize];
                c.repeat(if self.next().is_multiple_of(run_one_in) { 1 + (self.next() % max_run) as usize } else { 1 })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(m: Modern, text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        m.split(text, |a, b| out.push(&text[a..b]));
        out
    }

    const CL: Modern = Modern::Cl100k { max_digits: 3, ws_to_end_first: true };

    #[test]
    fn cl100k_pieces_as_tiktoken_gives_them() {
        // Checked against tiktoken 0.14 / the regex module by tests/test_pretok_modern.py; these are
        // the cases that tell the alternatives apart.
        assert_eq!(pieces(CL, "I'm 12345 ok!!\n\n  x"), vec!["I", "'m", " ", "123", "45", " ok", "!!\n\n", " ", " x"]);
        assert_eq!(pieces(CL, "a\n  "), vec!["a", "\n  "]);
        assert_eq!(pieces(Modern::Cl100k { max_digits: 3, ws_to_end_first: false }, "a\n  "), vec!["a", "\n", "  "]);
        assert_eq!(pieces(Modern::Cl100k { max_digits: 0, ws_to_end_first: true }, "12345"), vec!["12345"]);
        assert_eq!(pieces(CL, "'ſx 'LL"), vec!["'ſ", "x", " '", "LL"]);
        assert_eq!(pieces(CL, " \u{e9}\u{301}x"), vec![" \u{e9}", "\u{301}x"]);
    }

    #[test]
    fn o200k_splits_at_case_changes() {
        assert_eq!(pieces(Modern::O200k, "HelloWORLDFoo they're"), vec!["Hello", "WORLDFoo", " they're"]);
        assert_eq!(pieces(Modern::O200k, "\u{301}A"), vec!["\u{301}", "A"]);
        assert_eq!(pieces(Modern::O200k, "日本語。a/b//\n"), vec!["日本語", "。a", "/b", "//\n"]);
    }

    #[test]
    fn known_patterns_are_recognised_exactly() {
        assert_eq!(recognise(LLAMA3), Some(Modern::Cl100k { max_digits: 3, ws_to_end_first: false }));
        assert_eq!(recognise(&format!("{LLAMA3} ")), None);
    }
}
