//! Sixteen bytes of text classified at once: which of them are ASCII upper- or lowercase letters,
//! as bit masks (bit k = byte k). The scanners of `modern.rs` find the end of an ASCII letter run
//! with one count of trailing bits instead of a loop that branches on every byte: the exit of that
//! loop (a word's length) is what the CPU cannot predict (perf, cl100k on English, 2026-12: the
//! scanner went from 307 to 418 MB/s with the portable form of this test).
//!
//! On x86_64 the test is three SSE2 compares and a `movemask` per class (SSE2 is part of the
//! x86_64 baseline); elsewhere the same masks come from arithmetic on a `u128` ("SIMD within a
//! register"). Both are checked against a byte loop in the tests.

/// Class masks of the 16 bytes from some position: bit k is byte k.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lanes {
    pub upper: u32,
    pub lower: u32,
    pub digit: u32,
    /// ASCII White_Space: `\t \n \x0b \x0c \r` and the space.
    pub space: u32,
    /// `\r` and `\n`.
    pub newline: u32,
    pub slash: u32,
    /// The space (0x20) alone.
    pub blank: u32,
    /// The apostrophe (it may start a contraction suffix).
    pub quote: u32,
    /// Bytes >= 0x80 (part of a non-ASCII char).
    pub non_ascii: u32,
    /// The first byte.
    pub first: u8,
}

impl Lanes {
    /// The 16 bytes of `text` from `i`, if there are 16.
    #[inline(always)]
    pub fn at(text: &[u8], i: usize) -> Option<Lanes> {
        let w: &[u8; 16] = text.get(i..i.checked_add(16)?)?.try_into().ok()?;
        Some(classify(w))
    }

    /// The first byte from `from` (<= 16) that is not in `mask`, or 16.
    #[inline(always)]
    pub fn first_clear(mask: u32, from: u32) -> u32 {
        // Bits 16.. of !mask are set, so the count stops at 16.
        from + (!mask >> from).trailing_zeros()
    }

    /// ASCII bytes that are not letters, digits or White_Space (`[^\s\p{L}\p{N}]` on ASCII).
    #[inline(always)]
    pub fn punct(&self) -> u32 {
        !(self.upper | self.lower | self.digit | self.space | self.non_ascii) & 0xffff
    }

    /// Whether byte `k` (< 16) is part of a non-ASCII char.
    #[inline(always)]
    pub fn is_non_ascii(&self, k: u32) -> bool {
        self.non_ascii >> k & 1 == 1
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn classify(w: &[u8; 16]) -> Lanes {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_cmpeq_epi8, _mm_cmpgt_epi8, _mm_cmplt_epi8, _mm_loadu_si128, _mm_movemask_epi8,
        _mm_set1_epi8,
    };
    // SAFETY: SSE2 is always present on x86_64; the load reads the 16 bytes of `w` (unaligned load).
    unsafe {
        let x = _mm_loadu_si128(w.as_ptr().cast::<__m128i>());
        // Signed compares: bytes >= 0x80 are negative, so they fall in no ASCII range.
        let range = |lo: u8, hi: u8| {
            let ge = _mm_cmpgt_epi8(x, _mm_set1_epi8((lo - 1) as i8));
            let le = _mm_cmplt_epi8(x, _mm_set1_epi8((hi + 1) as i8));
            _mm_movemask_epi8(_mm_and_si128(ge, le)) as u32
        };
        let byte = |b: u8| _mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8(b as i8))) as u32;
        let newline = byte(b'\r') | byte(b'\n');
        Lanes {
            upper: range(b'A', b'Z'),
            lower: range(b'a', b'z'),
            digit: range(b'0', b'9'),
            space: range(b'\t', b'\r') | byte(b' '),
            newline,
            slash: byte(b'/'),
            blank: byte(b' '),
            quote: byte(b'\''),
            non_ascii: _mm_movemask_epi8(x) as u32,
            first: w[0],
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn classify(w: &[u8; 16]) -> Lanes {
    portable(w)
}

/// [`classify`] by arithmetic on a `u128`: on the low 7 bits of a byte, `x + (0x80 - lo)` reaches
/// the high bit exactly when `x >= lo`, and `x + (0x7f - hi)` when `x > hi`; neither sum carries
/// into the next byte. Bytes with the high bit set are cleared.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
fn portable(w: &[u8; 16]) -> Lanes {
    const HI: u128 = 0x8080_8080_8080_8080_8080_8080_8080_8080;
    const fn rep(b: u8) -> u128 {
        (b as u128) * 0x0101_0101_0101_0101_0101_0101_0101_0101
    }
    let v = u128::from_le_bytes(*w);
    let x = v & rep(0x7f);
    let range = |lo: u8, hi: u8| {
        let high_bits = x.wrapping_add(rep(0x80 - lo)) & !x.wrapping_add(rep(0x7f - hi)) & !v & HI;
        gather(high_bits)
    };
    let byte = |b: u8| range(b, b);
    Lanes {
        upper: range(b'A', b'Z'),
        lower: range(b'a', b'z'),
        digit: range(b'0', b'9'),
        space: range(b'\t', b'\r') | byte(b' '),
        newline: byte(b'\r') | byte(b'\n'),
        slash: byte(b'/'),
        blank: byte(b' '),
        quote: byte(b'\''),
        non_ascii: gather(v & HI),
        first: w[0],
    }
}

/// The high bits of the 16 bytes of `m` (only high bits set) as a 16-bit mask.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
fn gather(m: u128) -> u32 {
    // Each byte's bit moved to bit 0 of its byte, then a multiply sums bit k of byte k into bit 56 + k.
    const MAGIC: u64 = 0x0102_0408_1020_4080;
    let half = |h: u64| (((h >> 7) & 0x0101_0101_0101_0101).wrapping_mul(MAGIC) >> 56) as u32;
    half(m as u64) | (half((m >> 64) as u64) << 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_agree_with_a_byte_loop() {
        // Every byte value in every position, through both forms.
        for start in 0..=255u8 {
            let bytes: Vec<u8> = (0..16).map(|k| start.wrapping_add(k * 17)).collect();
            let l = Lanes::at(&bytes, 0).unwrap();
            assert_eq!(l, portable(bytes.as_slice().try_into().unwrap()));
            let mask = |f: fn(&u8) -> bool| -> u32 { bytes.iter().enumerate().filter(|(_, b)| f(b)).map(|(k, _)| 1u32 << k).sum() };
            assert_eq!(l.upper, mask(u8::is_ascii_uppercase));
            assert_eq!(l.lower, mask(u8::is_ascii_lowercase));
            assert_eq!(l.non_ascii, mask(|b| *b >= 0x80));
            assert_eq!(l.digit, mask(u8::is_ascii_digit));
            assert_eq!(l.space, mask(|b| matches!(b, b'\t'..=b'\r' | b' ')));
            assert_eq!(l.newline, mask(|b| matches!(b, b'\r' | b'\n')));
            assert_eq!(l.slash, mask(|b| *b == b'/'));
            assert_eq!(l.blank, mask(|b| *b == b' '));
            assert_eq!(l.quote, mask(|b| *b == b'\''));
            let punct = |b: &u8| b.is_ascii() && !b.is_ascii_alphanumeric() && !matches!(b, b'\t'..=b'\r' | b' ');
            assert_eq!(l.punct(), mask(punct));
            assert_eq!(l.first, bytes[0]);
            for from in 0..=16u32 {
                let want = (from..16).find(|&k| !bytes[k as usize].is_ascii_lowercase()).unwrap_or(16);
                assert_eq!(Lanes::first_clear(l.lower, from), want);
            }
        }
        assert_eq!(Lanes::at(b"short", 0), None);
        assert_eq!(Lanes::at(&[0u8; 20], usize::MAX), None);
    }
}
