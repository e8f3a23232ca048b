//! o200k's (and the cl100k family's) pieces of 64 ASCII bytes at once: every byte classified into bit
//! masks (bit k = byte k), the starts of the pieces derived from the masks with shifts and adds, then
//! the pieces handed out by counting trailing zeros. No branch depends on where a piece ends, which is
//! what the CPU cannot predict in a char-by-char (or piece-by-piece) scanner.
//!
//! Why: with 16-byte windows per piece (`fast.rs`) the o200k scanner ran at ~440 MB/s on English and
//! was still about half of the encode time (perf, 2026-12-05); fastokens, which classifies 64-byte
//! blocks into bitmaps in the same spirit, scanned several times faster. This file is our own
//! derivation from the pattern, checked against the general scanner by brute force in its tests.
//!
//! The rules, for ASCII text with no apostrophe (an apostrophe may start a contraction suffix: the
//! window stops before the first one, and before any non-ASCII byte). With `prev(m)` = bit k set
//! when byte k-1 is in m, and `next(m)` when byte k+1 is:
//! - words, `P? [Up]* [Lo]+ C?` / `P? [Up]+ [Lo]* C?`: a letter run splits where an uppercase letter
//!   follows a lowercase one (the cl100k family, `P? \p{L}+`, does not split); the run starts a piece
//!   unless the byte before it is a prefix `P` that the matcher stands on: the last byte of a
//!   whitespace run when not `\r`/`\n` (`\s+(?!\S)` leaves it to the word), or a lone punctuation
//!   byte not taken by a space before it (` ?[punct]+`);
//! - digits: a run starts a piece, and so does every third digit of it (the cl100k family: every
//!   `max_digits`-th, each digit, or only the run);
//! - punctuation, ` ?[^\s\p{L}\p{N}]+[\r\n/]*`: a run starts a piece unless a space precedes it (the
//!   space starts it); the `\r`/`\n` run right after it belongs to it. In o200k a `/` after `\r`/`\n`
//!   could continue that tail: the window stops before it;
//! - whitespace: in each run (less a punctuation tail), `\s*[\r\n]+` takes everything up to its last
//!   newline, then `\s+(?!\S)` all but the last byte, and the last byte is a piece of its own or the
//!   prefix of what follows.
//!
//! A start is certain when the bytes it depends on (up to the next one, and the whole of a whitespace
//! run) lie inside the window: the caller takes the pieces that end before the returned limit.

use super::Modern;
use crate::pretok::lanes::Lanes;

/// Class masks of 64 bytes.
struct Classes {
    upper: u64,
    lower: u64,
    digit: u64,
    space: u64,
    newline: u64,
    blank: u64,
    punct: u64,
    slash: u64,
    quote: u64,
    non_ascii: u64,
}

impl Classes {
    #[inline(always)]
    fn of(b: &[u8], i: usize) -> Option<Classes> {
        let l = [Lanes::at(b, i)?, Lanes::at(b, i + 16)?, Lanes::at(b, i + 32)?, Lanes::at(b, i + 48)?];
        let join = |f: fn(&Lanes) -> u32| {
            u64::from(f(&l[0])) | u64::from(f(&l[1])) << 16 | u64::from(f(&l[2])) << 32 | u64::from(f(&l[3])) << 48
        };
        Some(Classes {
            upper: join(|l| l.upper),
            lower: join(|l| l.lower),
            digit: join(|l| l.digit),
            space: join(|l| l.space),
            newline: join(|l| l.newline),
            blank: join(|l| l.blank),
            punct: join(Lanes::punct),
            slash: join(|l| l.slash),
            quote: join(|l| l.quote),
            non_ascii: join(|l| l.non_ascii),
        })
    }
}

/// The bits of each run of `m` from the bit of `s` in it (at most one per run) to the run's end.
#[inline(always)]
fn fill(m: u64, s: u64) -> u64 {
    (m.wrapping_add(s) ^ m) & m
}

/// The piece starts of `scanner`'s pattern (o200k or the cl100k family) in the 64 bytes of `b` from
/// `i` (a piece start), as a mask with bit 0 set, and the limit below which they are certain (a bit
/// under 64). `None` when fewer than 64 bytes are left or the first bytes are not plain ASCII (the
/// caller scans one piece then).
#[inline(always)]
pub(super) fn starts(scanner: Modern, b: &[u8], i: usize) -> Option<(u64, u32)> {
    // Cheap refusal first, inline: non-ASCII text (Chinese, say) would pay for the classes, and for a
    // call, for nothing.
    let head: &[u8; 16] = b.get(i..i.checked_add(16)?)?.try_into().ok()?;
    if u128::from_le_bytes(*head) & 0x8080_8080_8080_8080_8080_8080_8080_8080 != 0 {
        return None;
    }
    starts_ascii(scanner, b, i)
}

/// [`starts`] once the first 16 bytes are known to be ASCII.
#[inline(never)]
fn starts_ascii(scanner: Modern, b: &[u8], i: usize) -> Option<(u64, u32)> {
    // What the cl100k family does differently: no split at case changes, no `/` in the punctuation
    // tail, and its own longest digit run (0: no limit).
    let (case_split, slash_tail, max_digits) = match scanner {
        Modern::O200k => (true, true, 3),
        Modern::Cl100k { max_digits, .. } => (false, false, max_digits),
        Modern::Gpt2 => return None,
    };
    let c = Classes::of(b, i)?;
    // The bytes the rules cannot read: non-ASCII, an apostrophe, a `/` after a newline.
    let slash_after_nl = if slash_tail { c.slash & (c.newline << 1) } else { 0 };
    let bad = c.non_ascii | c.quote | slash_after_nl;
    let valid_len = bad.trailing_zeros();
    if valid_len < 4 {
        return None;
    }
    let valid = if valid_len == 64 { u64::MAX } else { (1u64 << valid_len) - 1 };
    let (up, lo, digit) = (c.upper & valid, c.lower & valid, c.digit & valid);
    let (ws, nl, blank) = (c.space & valid, c.newline & valid, c.blank & valid);
    let punct = c.punct & valid;
    let letter = up | lo;
    let prev = |m: u64| m << 1;
    let next = |m: u64| m >> 1;

    // Whitespace: the newlines right after punctuation are its tail; each run of the rest starts a
    // piece (up to its last newline), and so do the first and last bytes of what follows that newline.
    let tail = fill(nl, nl & prev(punct));
    let ws_own = ws & !tail;
    // The remainder after a run's last newline: the stretch without newlines that ends the run, filled
    // backwards from its last byte (one seed per stretch, as `fill` needs).
    let no_nl = ws_own & !nl;
    let rest = fill(no_nl.reverse_bits(), (no_nl & !next(ws_own)).reverse_bits()).reverse_bits();
    let ws_starts = (ws_own & !prev(ws_own)) | (rest & !prev(rest)) | (rest & !next(rest));

    // Prefix bytes a word takes: a run's last whitespace byte (not a newline), or a lone punctuation
    // byte with no space before it.
    let lone_punct = punct & !prev(punct) & !next(punct);
    let prefix = (ws & !nl & !next(ws)) | (lone_punct & !prev(blank));
    let case_starts = if case_split { up & prev(lo) } else { 0 };
    let word_starts = (letter & !prev(letter) & !prev(prefix)) | case_starts;
    let punct_starts = punct & !prev(punct) & !prev(blank);
    let mut d = digit & !prev(digit);
    let mut digit_starts = d;
    match max_digits {
        0 => {}
        1 => digit_starts = digit,
        n => {
            // Every n-th digit of a run: shift the starts found so far by n where all n bytes are digits.
            let mut full = digit;
            for k in 1..u32::from(n) {
                full &= digit << k;
            }
            while d != 0 {
                d = (d << n) & full;
                digit_starts |= d;
            }
        }
    }
    let starts = word_starts | punct_starts | digit_starts | ws_starts | 1;

    // Certain below `limit`: a start depends on the byte after it, and a whitespace run on all of
    // itself, so stop one byte short of the readable part, or at the start of a whitespace run that
    // reaches its end.
    let last = valid_len - 1;
    let mut limit = last;
    if ws >> last & 1 == 1 {
        let before = !ws & ((1u64 << last) - 1);
        limit = if before == 0 { 0 } else { 64 - before.leading_zeros() };
    }
    Some((starts, limit))
}

#[cfg(test)]
mod tests {
    use super::super::{Modern, Text, TextGen};

    /// The pieces of the whole split (windows where they apply) against the general scanner piece by
    /// piece, on random texts of the chars that tell the rules apart, in long and short runs.
    #[test]
    fn window_pieces_equal_the_general_scanner() {
        const ALPHABET: &[&str] = &[
            "a", "z", "A", "Z", "e", "T", "s", "l", "'", ".", ",", "/", "\"", "(", "-", " ", " ", " ", "\t", "\n",
            "\r", "\x0b", "\x0c", "\x00", "\x1f", "0", "7", "9", "\u{e9}", "\u{4e2d}",
        ];
        let mut gen = TextGen(0x2545_f491_4f6c_dd1d);
        let scanners = [
            Modern::O200k,
            Modern::Cl100k { max_digits: 3, ws_to_end_first: true },
            Modern::Cl100k { max_digits: 1, ws_to_end_first: false },
            Modern::Cl100k { max_digits: 0, ws_to_end_first: true },
            Modern::Cl100k { max_digits: 2, ws_to_end_first: false },
        ];
        for round in 0..10000 {
            let len = 60 + (gen.next() % 200) as usize;
            // Half of the texts without the two non-ASCII chars (the last two), so that windows run long.
            let ascii_only = round / 8 % 2 == 0;
            let text = gen.text(&ALPHABET[..ALPHABET.len() - if ascii_only { 2 } else { 0 }], len, 6, 8);
            let m = scanners[round % scanners.len()];
            let mut got = Vec::new();
            m.split(&text, |s, e| got.push((s, e)));
            let t = Text { s: &text };
            let mut want = Vec::new();
            let mut i = 0;
            while i < text.len() {
                let e = m.match_end(&t, i);
                want.push((i, e));
                i = e;
            }
            if let Some(k) = (0..got.len().max(want.len())).find(|&k| got.get(k) != want.get(k)) {
                let (s, _) = want[k.min(want.len() - 1)];
                let near = text.get(s.saturating_sub(8)..(s + 12).min(text.len())).unwrap_or(&text);
                panic!("{m:?}, piece {k}: got {:?}, want {:?}, near {near:?}", got.get(k), want.get(k));
            }
        }
    }
}
