//! SentencePiece's normalizer with its alignment back to the input.
//!
//! sentencepiece's `Normalizer::Normalize` rewrites the input one longest-matching rule at a time
//! and records, for every byte it writes, where in the input that rule started (`norm_to_orig`,
//! plus one entry for the end). A piece covering normalized bytes `a..b` then came from input
//! bytes `norm_to_orig[a]..norm_to_orig[b]`: that is how sentencepiece fills `begin`/`end` of
//! the pieces it returns, also where NFKC folds characters ("ﬁ" -> "fi": both pieces of a split
//! "fi" point into the one input character). [`SpmNormalizer::normalize`] gives the same text
//! faster; this walk exists for the offsets.

use std::borrow::Cow;

use super::{SpmNormalizer, WS};

impl SpmNormalizer {
    /// One character rule at the start of `input`: (its output, input bytes it consumes).
    ///
    /// With a charsmap (every model read from a `.model` file that normalizes has one) this is
    /// sentencepiece's own step: the longest key, or one character copied. Without one (a
    /// normalizer built from options) the rules are applied to one character at a time, which
    /// equals the whole-text rules except where NFKC composes across characters.
    fn rule_at<'a>(&'a self, input: &'a str) -> (Cow<'a, str>, usize) {
        let char_len = input.chars().next().map_or(input.len(), char::len_utf8);
        match &self.charsmap {
            Some(map) => match map.longest_prefix(input.as_bytes()) {
                // Keys are whole characters in real tables; a key ending inside a character
                // would leave a broken remainder, so it is not taken.
                Some((len, out)) if input.is_char_boundary(len) => (String::from_utf8_lossy(out), len),
                _ => (Cow::Borrowed(&input[..char_len]), char_len),
            },
            None => (Cow::Owned(self.map_chars(&input[..char_len])), char_len),
        }
    }

    /// The normalized text and, for each of its bytes, the input byte it came from, plus a last
    /// entry for its end (so the vector is one longer than the text).
    ///
    /// The text equals [`Self::normalize`] of the input when the normalizer has a charsmap.
    pub fn normalize_aligned(&self, text: &str) -> (String, Vec<usize>) {
        let mut out = String::with_capacity(text.len() + 3);
        let mut to_orig: Vec<usize> = Vec::with_capacity(text.len() + 4);
        let mut consumed = 0;
        let mut input = text;
        if self.remove_extra_whitespaces {
            while !input.is_empty() {
                let (rule, len) = self.rule_at(input);
                if rule != " " {
                    break;
                }
                input = &input[len..];
                consumed += len;
            }
        }
        if input.is_empty() {
            to_orig.push(consumed);
            return (out, to_orig);
        }
        let push_ws = |out: &mut String, to_orig: &mut Vec<usize>, at: usize| {
            out.push(WS);
            to_orig.extend([at; WS.len_utf8()]);
        };
        if self.add_dummy_prefix && !self.treat_whitespace_as_suffix {
            push_ws(&mut out, &mut to_orig, consumed);
        }
        let mut prev_space = self.remove_extra_whitespaces;
        while !input.is_empty() {
            let (rule, len) = self.rule_at(input);
            let mut piece: &str = &rule;
            if prev_space {
                piece = piece.trim_start_matches(' ');
            }
            if !piece.is_empty() {
                for c in piece.chars() {
                    if c == ' ' {
                        push_ws(&mut out, &mut to_orig, consumed);
                    } else {
                        out.push(c);
                        to_orig.extend(std::iter::repeat_n(consumed, c.len_utf8()));
                    }
                }
                prev_space = piece.ends_with(' ');
            }
            consumed += len;
            input = &input[len..];
            if !self.remove_extra_whitespaces {
                prev_space = false;
            }
        }
        if self.remove_extra_whitespaces {
            // Trailing `▁` go, and the end moves back to where the first of them came from.
            while out.ends_with(WS) {
                let keep = out.len() - WS.len_utf8();
                consumed = to_orig[keep];
                out.truncate(keep);
                to_orig.truncate(keep);
            }
        }
        if self.add_dummy_prefix && self.treat_whitespace_as_suffix && !out.is_empty() {
            push_ws(&mut out, &mut to_orig, consumed);
        }
        to_orig.push(consumed);
        (out, to_orig)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Normalization, SpmNormalizer};

    fn normalizer(remove: bool, dummy: bool, suffix: bool) -> SpmNormalizer {
        SpmNormalizer {
            charsmap: None,
            normalization: Normalization::Identity,
            add_dummy_prefix: dummy,
            remove_extra_whitespaces: remove,
            treat_whitespace_as_suffix: suffix,
        }
    }

    #[test]
    fn text_equals_normalize_and_alignment_has_one_entry_per_byte_plus_end() {
        for (remove, dummy, suffix) in
            [(true, true, false), (false, true, false), (true, false, false), (true, true, true)]
        {
            let n = normalizer(remove, dummy, suffix);
            for text in ["", "   ", "  ab   cd  ", "ab", "a\u{2581}b ", "é  ü", " x"] {
                let (out, to_orig) = n.normalize_aligned(text);
                assert_eq!(out, n.normalize(text), "{text:?} {remove} {dummy} {suffix}");
                assert_eq!(to_orig.len(), out.len() + 1);
                assert!(to_orig.windows(2).all(|w| w[0] <= w[1]));
                assert!(to_orig.iter().all(|&i| i <= text.len()));
            }
        }
    }

    #[test]
    fn alignment_points_at_the_start_of_each_rule() {
        // "  ab   cd  ": dummy prefix at the first kept byte (2); the collapsed run "   " maps to
        // its first byte (4); the end is where the trailing run starts (9).
        let (out, to_orig) = normalizer(true, true, false).normalize_aligned("  ab   cd  ");
        assert_eq!(out, "\u{2581}ab\u{2581}cd");
        assert_eq!(to_orig, vec![2, 2, 2, 2, 3, 4, 4, 4, 7, 8, 9]);
    }
}
