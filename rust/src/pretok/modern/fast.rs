//! The scanners' answers for the common matches, read from 16 classified bytes (`pretok/lanes.rs`)
//! instead of char by char: ASCII words (with their optional prefix char and, for o200k, the
//! contraction suffix), digit runs, punctuation runs with their newline tail, and ASCII whitespace.
//!
//! Each function returns `None` where its answer could depend on a char it does not classify (a
//! non-ASCII byte where a run could continue, fewer than 16 bytes left, a run reaching byte 16);
//! [`Modern::match_end`] then decides. Where they answer they equal it: the reasoning is beside
//! each case, and `tests/test_pretok_modern.py` checks the scanners against the regex engines on
//! real and generated text.
//!
//! Why: one-char-at-a-time loops branch on every byte, and where a run ends (a word's length) is
//! what the CPU cannot predict. Measured (`examples/encode_file.rs`, 1 MB of English from
//! gutenberg, one core, idle machine, 2026-12-05): the o200k scanner alone 290 -> 443 MB/s and the
//! whole encode 199 -> 279 MB/s; cl100k 307 -> 437 and 197 -> 281. The cases other than words are
//! out of line: inlined, they made the loop of the word case slower than they saved.

use super::{is_prefix, Text, ASCII_FLAGS};
use crate::pretok::lanes::Lanes;

impl Text<'_> {
    /// The end of the o200k match at `i`, where 16 classified bytes decide it.
    #[inline(always)]
    pub(super) fn o200k_fast(&self, i: usize) -> Option<usize> {
        let Some(l) = Lanes::at(self.s.as_bytes(), i) else { return self.o200k_word(i) };
        // Alternatives 1 and 2: `P? [Up]* [Lo]+ C?` and `P? [Up]+ [Lo]* C?`, with P = `[^\r\n\p{L}\p{N}]`.
        let j = if (l.upper | l.lower) & 1 != 0 {
            0
        } else if l.first < 0x80 && is_prefix(ASCII_FLAGS[l.first as usize]) {
            1
        } else {
            return self.o200k_other(i);
        };
        // [Up]* then [Lo]*: disjoint classes on ASCII, so greedy matching needs no backing off.
        let upper_end = Lanes::first_clear(l.upper, j);
        let e = Lanes::first_clear(l.lower, upper_end);
        if e > j {
            if e == 16 || l.is_non_ascii(e) {
                return self.o200k_word(i); // long, or a non-ASCII letter or mark may continue a run
            }
            let e = i + e as usize;
            return Some(e + self.contraction(e).unwrap_or(0));
        }
        self.o200k_other(i)
    }

    /// [`Self::o200k_fast`] where no ASCII word starts at `i`; out of line, so that the word case,
    /// most of the matches, stays a short loop.
    #[inline(never)]
    fn o200k_other(&self, i: usize) -> Option<usize> {
        let l = &Lanes::at(self.s.as_bytes(), i)?;
        // A non-ASCII char first, or right after a prefix char (it may be a letter): undecided.
        if l.non_ascii & 0b11 != 0 {
            return None;
        }
        // `\p{N}{1,3}`: a digit is neither a letter nor a prefix char.
        if l.digit & 1 != 0 {
            return digits(l, 3).map(|e| i + e);
        }
        // ` ?[^\s\p{L}\p{N}]+[\r\n/]*`. A prefix char followed by a letter was a word above.
        if let Some(end) = punctuation(l, l.newline | l.slash) {
            return end.map(|e| i + e);
        }
        // The whitespace alternatives (a space or tab before a letter was a word above).
        (l.space & 1 != 0).then(|| self.whitespace(i, false))
    }

    /// The end of the cl100k-family match at `i`, where 16 classified bytes decide it.
    #[inline(always)]
    pub(super) fn cl100k_fast(&self, i: usize, max_digits: u8, ws_to_end_first: bool) -> Option<usize> {
        let Some(l) = Lanes::at(self.s.as_bytes(), i) else { return self.cl100k_word(i) };
        // The contractions come first: an apostrophe goes to the general path.
        if l.first == b'\'' || l.non_ascii & 0b11 != 0 {
            return None;
        }
        // `[^\r\n\p{L}\p{N}]?\p{L}+`
        let letter = l.upper | l.lower;
        let j = u32::from(letter & 1 == 0 && is_prefix(ASCII_FLAGS[l.first as usize]));
        let e = Lanes::first_clear(letter, j);
        if e > j {
            if e == 16 || l.is_non_ascii(e) {
                return self.cl100k_word(i); // a non-ASCII letter may continue the run
            }
            return Some(i + e as usize);
        }
        self.cl100k_other(i, max_digits, ws_to_end_first)
    }

    /// [`Self::cl100k_fast`] where no ASCII word starts at `i` (out of line, as [`Self::o200k_other`]).
    #[inline(never)]
    fn cl100k_other(&self, i: usize, max_digits: u8, ws_to_end_first: bool) -> Option<usize> {
        let l = &Lanes::at(self.s.as_bytes(), i)?;
        // `\p{N}{1,3}` (or `\p{N}`, or any run where Oniguruma reads a possessive interval)
        if l.digit & 1 != 0 {
            return digits(l, max_digits).map(|e| i + e);
        }
        // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
        if let Some(end) = punctuation(l, l.newline) {
            return end.map(|e| i + e);
        }
        (l.space & 1 != 0).then(|| self.whitespace(i, ws_to_end_first))
    }
}

/// A run of at most `max` (0: any number of) digits from byte 0, if the 16 bytes decide it.
#[inline(always)]
fn digits(l: &Lanes, max: u8) -> Option<usize> {
    let run = Lanes::first_clear(l.digit, 0);
    let max = u32::from(max);
    if max != 0 && run >= max {
        return Some(max as usize);
    }
    // A non-ASCII digit (`\p{N}`) may continue the run.
    (run < 16 && !l.is_non_ascii(run)).then_some(run as usize)
}

/// ` ?[^\s\p{L}\p{N}]+` then the bytes of `tail` (a run), from byte 0: `None` when no punctuation
/// starts there, `Some(None)` when it does but the 16 bytes do not decide where it ends.
#[inline(always)]
fn punctuation(l: &Lanes, tail: u32) -> Option<Option<usize>> {
    let punct = l.punct();
    let j = if punct & 1 != 0 {
        0
    } else if l.first == b' ' && punct & 2 != 0 {
        1
    } else {
        return None;
    };
    let e = Lanes::first_clear(punct, j);
    if e == 16 || l.is_non_ascii(e) {
        return Some(None); // non-ASCII punctuation may continue the run
    }
    let e = Lanes::first_clear(tail, e);
    Some((e < 16).then_some(e as usize))
}

#[cfg(test)]
mod tests {
    use super::super::{Modern, TextGen};
    use super::*;

    /// Texts of chars that tell the alternatives apart (cases, prefix chars, contractions, digits,
    /// punctuation tails, whitespace kinds, non-ASCII letters, marks, digits and punctuation), from a
    /// fixed-seed generator: at every char boundary the fast answer, where there is one, must be
    /// the general one.
    #[test]
    fn fast_answers_equal_the_general_scanner_at_every_position() {
        const ALPHABET: &[&str] = &[
            "a", "z", "A", "Z", "s", "S", "t", "l", "e", "'", ".", ",", "/", "\"", "(", "-", "_", " ", " ", "\t",
            "\n", "\r", "\x0b", "\x00", "0", "7", "9", "\u{e9}", "\u{301}", "\u{660}", "\u{2014}", "\u{a0}",
            "\u{17f}", "\u{4e2d}",
        ];
        let mut gen = TextGen(0x9e37_79b9_7f4a_7c15);
        let scanners = [
            Modern::O200k,
            Modern::Cl100k { max_digits: 3, ws_to_end_first: true },
            Modern::Cl100k { max_digits: 0, ws_to_end_first: true },
            Modern::Cl100k { max_digits: 1, ws_to_end_first: false },
        ];
        for _ in 0..3000 {
            let len = 1 + (gen.next() % 40) as usize;
            // Runs of one char now and then, so that runs reach and cross the 16-byte window.
            let text = gen.text(ALPHABET, len, 8, 20);
            let t = Text { s: &text };
            for (i, _) in text.char_indices() {
                for m in scanners {
                    let fast = match m {
                        Modern::O200k => t.o200k_fast(i),
                        Modern::Cl100k { max_digits, ws_to_end_first } => t.cl100k_fast(i, max_digits, ws_to_end_first),
                        Modern::Gpt2 => None,
                    };
                    if let Some(e) = fast {
                        assert_eq!(e, m.match_end(&t, i), "{m:?} at {i} of {text:?}");
                    }
                }
            }
        }
    }
}
