//! HF `BertPreTokenizer`: runs of chars that are neither whitespace nor punctuation, and each
//! punctuation char alone (whitespace dropped).
//!
//! The scan reads bytes: an ASCII byte is classed through a 128-entry table, and only a byte that
//! starts a multi-byte char decodes that char and asks its Unicode properties. Decoding every char
//! (`char_indices`) and testing it was a seventh of a BERT encode of lines of code (perf, bench_peers'
//! BERT row, after its word cache had made the WordPiece lookups cheap).
//!
//! ```
//! use subword_core::pretok::bert::split_bert;
//! let text = "Hello, wörld…  ok";
//! let mut pieces = Vec::new();
//! split_bert(text, |s, e| pieces.push(&text[s..e]));
//! assert_eq!(pieces, ["Hello", ",", "wörld", "…", "ok"]);
//! ```

use unicode_general_category::{get_general_category, GeneralCategory as Gc};

/// HF `BertPreTokenizer` punctuation: ASCII punctuation or general category P*.
pub fn is_bert_punctuation(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_punctuation();
    }
    matches!(
        get_general_category(c),
        Gc::ConnectorPunctuation
            | Gc::DashPunctuation
            | Gc::OpenPunctuation
            | Gc::ClosePunctuation
            | Gc::InitialPunctuation
            | Gc::FinalPunctuation
            | Gc::OtherPunctuation
    )
}

/// What a char is to the split.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Word,
    Space,
    Punct,
}

/// The class of each ASCII byte (whitespace as `char::is_whitespace`: tab, LF, VT, FF, CR, space).
const ASCII: [Class; 128] = {
    let mut t = [Class::Word; 128];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        t[b] = if matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
            Class::Space
        } else if c.is_ascii_punctuation() {
            Class::Punct
        } else {
            Class::Word
        };
        b += 1;
    }
    t
};

/// Calls `f(start, end)` for every BertPreTokenizer piece of `text` (byte offsets), in order.
pub fn split_bert(text: &str, mut f: impl FnMut(usize, usize)) {
    let bytes = text.as_bytes();
    let mut start: Option<usize> = None;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let (class, len) = if b < 0x80 {
            (ASCII[b as usize], 1)
        } else {
            // `i` is on a char boundary: it only ever moves by whole chars.
            let c = text.get(i..).and_then(|rest| rest.chars().next()).unwrap_or('\u{FFFD}');
            let class = if c.is_whitespace() {
                Class::Space
            } else if is_bert_punctuation(c) {
                Class::Punct
            } else {
                Class::Word
            };
            (class, c.len_utf8())
        };
        if class == Class::Word {
            start.get_or_insert(i);
        } else {
            if let Some(s) = start.take() {
                f(s, i);
            }
            if class == Class::Punct {
                f(i, i + len);
            }
        }
        i += len;
    }
    if let Some(s) = start {
        f(s, text.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The split written from its definition, char by char.
    fn definition(text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut start = None;
        for (i, c) in text.char_indices() {
            if c.is_whitespace() || is_bert_punctuation(c) {
                if let Some(s) = start.take() {
                    out.push((s, i));
                }
                if !c.is_whitespace() {
                    out.push((i, i + c.len_utf8()));
                }
            } else if start.is_none() {
                start = Some(i);
            }
        }
        if let Some(s) = start {
            out.push((s, text.len()));
        }
        out
    }

    #[test]
    fn the_byte_scan_equals_the_definition_on_random_text() {
        // ASCII of every class, control chars, and non-ASCII words, spaces and punctuation of 2-4 bytes.
        let alphabet: Vec<char> = "ab Z9_-,.!\t\n\r\x0b\x0c\x1f\x7fé中ü\u{a0}\u{3000}\u{2028}…«»、。—🦀\u{1F600}".chars().collect();
        let mut x = 7u64;
        for _ in 0..3000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let n = (x >> 58) as usize;
            let text: String = (0..n)
                .map(|k| alphabet[((x >> (k % 40)) as usize + k * 7) % alphabet.len()])
                .collect();
            let mut got = Vec::new();
            split_bert(&text, |s, e| got.push((s, e)));
            assert_eq!(got, definition(&text), "{text:?}");
        }
    }
}
