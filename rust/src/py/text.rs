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

use crate::batch_text::{BatchText, NotUtf8};

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
            ffi::PyUnicode_2BYTE_KIND => encode_ucs2(std::slice::from_raw_parts(data as *const u16, len)),
            ffi::PyUnicode_4BYTE_KIND => encode_ucs4(std::slice::from_raw_parts(data as *const u32, len)),
            _ => None,
        };
        match encoded {
            Some(text) => Ok(Cow::Owned(text)),
            None => s.to_str().map(Cow::Borrowed), // a surrogate: the interpreter raises
        }
    }
}

/// A Python str's text for the pool's workers: its UTF-8 where the interpreter holds it (ASCII, or
/// made by an earlier caller), else its code units, made UTF-8 by the worker that encodes it
/// ([`BatchText`]). Borrowed from a str the caller keeps alive (and strs do not change) for as long
/// as the view is used.
#[derive(Clone, Copy)]
pub(crate) enum StrView<'a> {
    Utf8(&'a str),
    Latin1(&'a [u8]),
    Ucs2(&'a [u16]),
    Ucs4(&'a [u32]),
}

/// The view of `s` (see [`StrView`]); reads only the str's header, so it is cheap on the calling
/// thread.
pub(crate) fn view_of<'a>(s: &'a Bound<'_, PyString>) -> PyResult<StrView<'a>> {
    let op = s.as_ptr();
    // SAFETY: as in `utf8_of`: a live compact str's kind, length and data are read, and the slices
    // borrow `s`, whose reference keeps the (immutable) str alive.
    unsafe {
        if ffi::PyUnicode_IS_COMPACT(op) == 0
            || ffi::PyUnicode_IS_ASCII(op) != 0
            || !(*(op as *mut ffi::PyCompactUnicodeObject)).utf8.is_null()
        {
            return s.to_str().map(StrView::Utf8);
        }
        let len = usize::try_from(ffi::PyUnicode_GET_LENGTH(op)).unwrap_or(0);
        let data = ffi::PyUnicode_DATA(op);
        Ok(match ffi::PyUnicode_KIND(op) {
            ffi::PyUnicode_1BYTE_KIND => StrView::Latin1(std::slice::from_raw_parts(data as *const u8, len)),
            ffi::PyUnicode_2BYTE_KIND => StrView::Ucs2(std::slice::from_raw_parts(data as *const u16, len)),
            ffi::PyUnicode_4BYTE_KIND => StrView::Ucs4(std::slice::from_raw_parts(data as *const u32, len)),
            _ => return s.to_str().map(StrView::Utf8),
        })
    }
}

/// The views of a batch's strs, in order (see [`StrView`]).
pub(crate) fn views_of<'a>(texts: &'a [Bound<'_, PyString>]) -> PyResult<Vec<StrView<'a>>> {
    texts.iter().map(view_of).collect()
}

/// A batch encode's error message as a Python exception: where a text has no UTF-8 form, the
/// interpreter's own `UnicodeEncodeError` for it (as `str.encode` raises), else a `ValueError`.
pub(crate) fn batch_error(texts: &[Bound<'_, PyString>], msg: String) -> PyErr {
    if msg == NotUtf8.to_string() {
        if let Some(err) = texts.iter().find_map(|s| s.to_str().err()) {
            return err;
        }
    }
    pyo3::exceptions::PyValueError::new_err(msg)
}

/// [`batch_error`] for an error [`super::nested_id_lists`] raised: its `ValueError` (an encode's
/// message) is looked at again; any other exception stays as it is.
pub(crate) fn batch_list_error(py: Python<'_>, texts: &[Bound<'_, PyString>], err: PyErr) -> PyErr {
    if err.is_instance_of::<pyo3::exceptions::PyValueError>(py) {
        return batch_error(texts, err.value(py).to_string());
    }
    err
}

impl BatchText for StrView<'_> {
    #[inline]
    fn with_utf8<R>(&self, scratch: &mut Vec<u8>, f: impl FnOnce(&str) -> R) -> Result<R, NotUtf8> {
        let units = match *self {
            StrView::Utf8(s) => return Ok(f(s)),
            StrView::Latin1(u) => u.len(),
            StrView::Ucs2(u) => u.len(),
            StrView::Ucs4(u) => u.len(),
        };
        scratch.clear();
        scratch.reserve(units + units / 2);
        let made = match *self {
            StrView::Utf8(_) => true,
            StrView::Latin1(u) => {
                encode_latin1_into(u, scratch);
                true
            }
            StrView::Ucs2(u) => encode_ucs2_into(u, scratch),
            StrView::Ucs4(u) => encode_ucs4_into(u, scratch),
        };
        if !made {
            return Err(NotUtf8);
        }
        // SAFETY: the encoders write whole UTF-8 forms of chars only (and report anything else).
        Ok(f(unsafe { std::str::from_utf8_unchecked(scratch) }))
    }

    #[inline]
    fn len_hint(&self) -> usize {
        match *self {
            StrView::Utf8(s) => s.len(),
            StrView::Latin1(u) => u.len(),
            StrView::Ucs2(u) => u.len(),
            StrView::Ucs4(u) => u.len(),
        }
    }
}

/// Code points the slow loop takes after a fast run stops, before the fast run is tried again.
const BLOCK: usize = 8;

/// Latin-1 code points (every one a char) as UTF-8.
fn encode(units: &[u8]) -> String {
    let mut out = Vec::with_capacity(units.len() + units.len() / 4);
    encode_latin1_into(units, &mut out);
    // SAFETY: `encode_latin1_into` writes whole UTF-8 forms of chars only.
    unsafe { String::from_utf8_unchecked(out) }
}

/// Latin-1 code points appended to `out` as UTF-8.
fn encode_latin1_into(units: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < units.len() {
        i += ascii_run_latin1(&units[i..], out);
        let end = (i + BLOCK).min(units.len());
        for &u in &units[i..end] {
            // An ASCII unit, or the two-byte UTF-8 form of U+0080..=U+00FF written whole.
            if u < 0x80 {
                out.push(u);
            } else {
                out.extend_from_slice(&[0xc0 | (u >> 6), 0x80 | (u & 0x3f)]);
            }
        }
        i = end;
    }
}

/// UCS-2 code points as UTF-8; `None` if one is a surrogate (not a char).
fn encode_ucs2(units: &[u16]) -> Option<String> {
    let mut out = Vec::with_capacity(units.len() + units.len() / 2);
    // SAFETY: `encode_ucs2_into` writes whole UTF-8 forms of chars only.
    encode_ucs2_into(units, &mut out).then(|| unsafe { String::from_utf8_unchecked(out) })
}

/// UCS-2 code points appended to `out` as UTF-8; false (with `out` holding part of them) if one is a
/// surrogate (not a char).
///
/// Measured on 0.33 MB of English with curly quotes (a UCS-2 str), warm word cache: one `String::push`
/// per char was 8% of the whole o200k `encode_batch_ids_flat` call, and with 16-unit blocks tested by a
/// fold plus `String::from_utf8`'s check still 16% (perf, 2026-12-06); the ASCII runs are now narrowed
/// eight units at a time and nothing is validated twice.
fn encode_ucs2_into(units: &[u16], out: &mut Vec<u8>) -> bool {
    let mut i = 0;
    while i < units.len() {
        i += ascii_run_ucs2(&units[i..], out);
        let end = (i + BLOCK).min(units.len());
        for &u in &units[i..end] {
            // The UTF-8 forms of the BMP written directly (Chinese text is all this loop).
            match u {
                0..=0x7f => out.push(u as u8),
                0x80..=0x7ff => out.extend_from_slice(&[0xc0 | (u >> 6) as u8, 0x80 | (u & 0x3f) as u8]),
                0xd800..=0xdfff => return false,
                _ => out.extend_from_slice(&[
                    0xe0 | (u >> 12) as u8,
                    0x80 | ((u >> 6) & 0x3f) as u8,
                    0x80 | (u & 0x3f) as u8,
                ]),
            }
        }
        i = end;
    }
    true
}

/// UCS-4 code points as UTF-8; `None` if one is not a char (a surrogate, or beyond U+10FFFF).
fn encode_ucs4(units: &[u32]) -> Option<String> {
    let mut out = Vec::with_capacity(units.len() + units.len() / 2);
    // SAFETY: `encode_ucs4_into` writes whole UTF-8 forms of chars only.
    encode_ucs4_into(units, &mut out).then(|| unsafe { String::from_utf8_unchecked(out) })
}

/// UCS-4 code points appended to `out` as UTF-8; false if one is not a char.
fn encode_ucs4_into(units: &[u32], out: &mut Vec<u8>) -> bool {
    for &u in units {
        if u < 0x80 {
            out.push(u as u8);
        } else {
            match char::from_u32(u) {
                Some(c) => push_char(out, c),
                None => return false,
            }
        }
    }
    true
}

/// The leading all-ASCII blocks of 16 Latin-1 units copied to `out`; how many units they were.
fn ascii_run_latin1(units: &[u8], out: &mut Vec<u8>) -> usize {
    let mut n = 0;
    for chunk in units.chunks_exact(16) {
        let word = u128::from_le_bytes(chunk.try_into().unwrap_or([0x80; 16]));
        if word & 0x8080_8080_8080_8080_8080_8080_8080_8080 != 0 {
            break;
        }
        out.extend_from_slice(chunk);
        n += 16;
    }
    n
}

/// The leading all-ASCII blocks of 8 UCS-2 units narrowed to bytes in `out`; how many units they were.
#[cfg(target_arch = "x86_64")]
fn ascii_run_ucs2(units: &[u16], out: &mut Vec<u8>) -> usize {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi16, _mm_loadu_si128, _mm_movemask_epi8, _mm_packus_epi16, _mm_set1_epi16,
        _mm_setzero_si128, _mm_storel_epi64,
    };
    let mut n = 0;
    for chunk in units.chunks_exact(8) {
        let mut bytes = [0u8; 8];
        // SAFETY: SSE2 is part of x86_64; the load reads the chunk's 16 bytes (8 units), the store writes
        // the 8 bytes of `bytes`, both unaligned accesses.
        unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
            let high = _mm_and_si128(v, _mm_set1_epi16(0xff80_u16 as i16));
            // Every unit below 0x80: each 16-bit lane of `high` is zero (a movemask of `high` itself
            // would only see bits 7 and 15).
            if _mm_movemask_epi8(_mm_cmpeq_epi16(high, _mm_setzero_si128())) != 0xffff {
                break;
            }
            _mm_storel_epi64(bytes.as_mut_ptr().cast::<__m128i>(), _mm_packus_epi16(v, v));
        }
        out.extend_from_slice(&bytes);
        n += 8;
    }
    n
}

/// The leading all-ASCII blocks of 8 UCS-2 units narrowed to bytes in `out`; how many units they were.
#[cfg(not(target_arch = "x86_64"))]
fn ascii_run_ucs2(units: &[u16], out: &mut Vec<u8>) -> usize {
    let mut n = 0;
    for chunk in units.chunks_exact(8) {
        if chunk.iter().fold(0u16, |acc, &u| acc | u) >= 0x80 {
            break;
        }
        out.extend(chunk.iter().map(|&u| u as u8));
        n += 8;
    }
    n
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
        assert_eq!(encode_ucs2(&ucs2).as_deref(), Some(text));
        let wide = "emoji 🦀 and 𝄞";
        let ucs4: Vec<u32> = wide.chars().map(u32::from).collect();
        assert_eq!(encode_ucs4(&ucs4).as_deref(), Some(wide));
        assert_eq!(encode_ucs2(&[0x61u16, 0xD800, 0x62]), None);
        assert_eq!(encode_ucs4(&[0x61u32, 0xDFFF]), None);
        assert_eq!(encode_ucs4(&[0x11_0000u32]), None);
    }

    /// Every split of ASCII and non-ASCII across the block boundaries, in all three kinds, against std.
    #[test]
    fn blocks_mixing_ascii_and_other_chars_encode_as_std_does() {
        let pieces = ["a", "é", "ÿ", "—", "世", "🦀", "\u{7f}", "\u{80}"];
        for len in 0..90usize {
            // Past several fast blocks (16 Latin-1 units, 8 UCS-2 units) and the slow blocks between them.
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
                        assert_eq!(encode_ucs2(&ucs2).as_deref(), Some(text.as_str()));
                    }
                    let ucs4: Vec<u32> = chars.iter().map(|&c| c as u32).collect();
                    assert_eq!(encode_ucs4(&ucs4).as_deref(), Some(text.as_str()));
                }
            }
        }
        // A surrogate inside an otherwise ASCII block, and in the tail after full blocks.
        let mut units = vec![0x61u16; 40];
        for at in [3, 8, BLOCK + 1, 17, 39] {
            units[at] = 0xDC00;
            assert_eq!(encode_ucs2(&units), None);
            units[at] = 0x61;
        }
    }

    /// A worker's view: each kind made UTF-8 in one reused scratch buffer (a long text, then shorter
    /// ones: what is left of the long one must not show), a surrogate refused.
    #[test]
    fn views_make_utf8_in_a_reused_buffer() {
        let texts = ["é".repeat(300) + " Grüße", "ab".to_string(), "世界 ok".to_string(), "🦀 x".to_string()];
        let latin1: Vec<u8> = texts[0].chars().map(|c| c as u8).collect();
        let ucs2: Vec<u16> = texts[2].chars().map(|c| c as u16).collect();
        let ucs4: Vec<u32> = texts[3].chars().map(u32::from).collect();
        let views = [
            StrView::Latin1(&latin1),
            StrView::Utf8(&texts[1]),
            StrView::Ucs2(&ucs2),
            StrView::Ucs4(&ucs4),
            StrView::Latin1(b"ab"),
        ];
        let mut scratch = Vec::new();
        let made: Vec<String> = views.iter().map(|v| v.with_utf8(&mut scratch, str::to_owned).unwrap()).collect();
        assert_eq!(made, [&texts[0], &texts[1], &texts[2], &texts[3], "ab"]);
        assert!(views.iter().zip(&made).all(|(v, m)| v.len_hint() <= m.len()));
        assert_eq!(StrView::Ucs2(&[0x61, 0xD800]).with_utf8(&mut scratch, |_| ()), Err(NotUtf8));
        assert_eq!(StrView::Ucs4(&[0x11_0000]).with_utf8(&mut scratch, |_| ()), Err(NotUtf8));
    }
}
