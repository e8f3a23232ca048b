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

/// Latin-1 code points (every one a char) as UTF-8.
fn encode(units: &[u8]) -> String {
    units.iter().map(|&b| char::from(b)).collect()
}

/// UCS-2 or UCS-4 code points as UTF-8; `None` if one is not a char (a surrogate).
fn encode_units<T: Copy + Into<u32>>(units: &[T]) -> Option<String> {
    let mut out = String::with_capacity(units.len() + units.len() / 2);
    for &u in units {
        out.push(char::from_u32(u.into())?);
    }
    Some(out)
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
}
