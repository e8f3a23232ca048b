//! A Python `str` as UTF-8 for the core, without the interpreter's allocator.
//!
//! `PyUnicode_AsUTF8AndSize` (what `to_str` calls) makes a str that is not ASCII into UTF-8 once and
//! keeps that copy on the str for its lifetime, allocated by the interpreter (glibc `malloc` at this
//! size). In a process where another library had churned glibc's heap (HF `tokenizers` encoding a
//! 0.3 MB text, then freeing it), that allocation was 28% of our whole `encode_batch_ids_flat` call on
//! English text (perf, o200k, 2026-12-06). Here a non-ASCII str is encoded from its own code points into
//! a buffer of our allocator, used for the call and freed; nothing is attached to the user's str (which
//! would also hold the text's memory twice). An ASCII str, or one whose UTF-8 an earlier caller already
//! made, is read in place.

use std::borrow::Cow;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// The text of `s` as UTF-8: borrowed where the interpreter already holds it, else encoded here. A str
/// holding a lone surrogate (not encodable) gets the interpreter's own `UnicodeEncodeError`.
pub(crate) fn utf8_of<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Cow<'a, str>> {
    let op = s.as_ptr();
    // SAFETY: `op` is a live str (the Bound holds a reference). Its kind and data are read only for a
    // compact str, which is always ready (3.11's legacy strings are not compact and take `to_str`).
    unsafe {
        if ffi::PyUnicode_IS_COMPACT(op) == 0 || ffi::PyUnicode_IS_ASCII(op) != 0 {
            return s.to_str().map(Cow::Borrowed);
        }
        if !(*(op as *mut ffi::PyCompactUnicodeObject)).utf8.is_null() {
            return s.to_str().map(Cow::Borrowed); // made by an earlier caller: no work
        }
        let len = usize::try_from(ffi::PyUnicode_GET_LENGTH(op)).unwrap_or(0);
        let data = ffi::PyUnicode_DATA(op);
        let encoded = match ffi::PyUnicode_KIND(op) {
            ffi::PyUnicode_1BYTE_KIND => Some(encode(std::slice::from_raw_parts(data as *const u8, len))),
            ffi::PyUnicode_2BYTE_KIND => encode_units(std::slice::from_raw_parts(data as *const u16, len)),
            ffi::PyUnicode_4BYTE_KIND => encode_units(std::slice::from_raw_parts(data as *const u32, len)),
            _ => None,
        };
        match encoded {
            Some(text) => Ok(Cow::Owned(text)),
            None => s.to_str().map(Cow::Borrowed), // a surrogate: the interpreter raises
        }
    }
}

/// Code points taken in blocks of this many: a block with no unit above ASCII (nearly every block of
/// English or code) is narrowed to bytes at once, which the compiler vectorises.
const BLOCK: usize = 16;

/// Latin-1 code points (every one a char) as UTF-8.
fn encode(units: &[u8]) -> String {
    let mut out = Vec::with_capacity(units.len() + units.len() / 4);
    for block in units.chunks(BLOCK) {
        if block.iter().fold(0u8, |acc, &u| acc | u) < 0x80 {
            out.extend_from_slice(block);
        } else {
            for &u in block {
                push_char(&mut out, char::from(u));
            }
        }
    }
    // Only whole chars were written, so this check cannot fail; it is a fast scan, kept over an unsafe cast.
    String::from_utf8(out).unwrap_or_default()
}

/// UCS-2 or UCS-4 code points as UTF-8; `None` if one is not a char (a surrogate).
///
/// Measured on 0.33 MB of English with curly quotes (a UCS-2 str): one `String::push` per char was 8% of
/// the whole o200k `encode_batch_ids_flat` call (perf, 2026-12-06); the ASCII blocks make it a copy.
fn encode_units<T: Copy + Into<u32>>(units: &[T]) -> Option<String> {
    let mut out = Vec::with_capacity(units.len() + units.len() / 2);
    for block in units.chunks(BLOCK) {
        if block.iter().fold(0u32, |acc, &u| acc | u.into()) < 0x80 {
            out.extend(block.iter().map(|&u| u.into() as u8));
        } else {
            for &u in block {
                push_char(&mut out, char::from_u32(u.into())?);
            }
        }
    }
    String::from_utf8(out).ok()
}

#[inline]
fn push_char(out: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_encodes_as_std_does() {
        let latin1: Vec<u8> = (0..=255u8).collect();
        assert_eq!(encode(&latin1), latin1.iter().map(|&b| char::from(b)).collect::<String>());
        let text = "Grüße, 世界 ½ — ok";
        let ucs2: Vec<u16> = text.chars().map(|c| c as u16).collect();
        assert_eq!(encode_units(&ucs2).as_deref(), Some(text));
        let wide = "emoji 🦀 and 𝄞";
        let ucs4: Vec<u32> = wide.chars().map(u32::from).collect();
        assert_eq!(encode_units(&ucs4).as_deref(), Some(wide));
        assert_eq!(encode_units(&[0x61u16, 0xD800, 0x62]), None);
    }

    /// Every split of ASCII and non-ASCII across the block boundaries, in all three kinds, against std.
    #[test]
    fn blocks_mixing_ascii_and_other_chars_encode_as_std_does() {
        let pieces = ["a", "é", "ÿ", "—", "世", "🦀", "\u{7f}", "\u{80}"];
        for len in 0..3 * BLOCK + 2 {
            for (odd, background) in pieces.iter().flat_map(|o| [(o, "a"), (o, "é")]) {
                for at in [0, len / 2, len.saturating_sub(1)] {
                    let text: String = (0..len).map(|i| if i == at { *odd } else { background }).collect();
                    let chars: Vec<char> = text.chars().collect();
                    if chars.iter().all(|&c| (c as u32) < 0x100) {
                        let latin1: Vec<u8> = chars.iter().map(|&c| c as u8).collect();
                        assert_eq!(encode(&latin1), text);
                    }
                    if chars.iter().all(|&c| (c as u32) < 0x10000) {
                        let ucs2: Vec<u16> = chars.iter().map(|&c| c as u16).collect();
                        assert_eq!(encode_units(&ucs2).as_deref(), Some(text.as_str()));
                    }
                    let ucs4: Vec<u32> = chars.iter().map(|&c| c as u32).collect();
                    assert_eq!(encode_units(&ucs4).as_deref(), Some(text.as_str()));
                }
            }
        }
        // A surrogate inside an otherwise ASCII block, and in the tail after full blocks.
        let mut units = vec![0x61u16; 2 * BLOCK + 3];
        for at in [3, BLOCK + 1, 2 * BLOCK + 2] {
            units[at] = 0xDC00;
            assert_eq!(encode_units(&units), None);
            units[at] = 0x61;
        }
    }
}
