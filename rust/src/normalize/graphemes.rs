//! Extended grapheme clusters (UAX #29), as far as HF's `Precompiled` normalizer needs them.
//!
//! HF looks each grapheme of fewer than 6 bytes up in the charsmap as a whole, so what matters is
//! where a base char and its marks / jamo / joiners end. Implemented rules: GB3-GB5 (CR LF, controls),
//! GB6-GB8 (Hangul syllables), GB9/9a/9b (Extend, ZWJ, SpacingMark, Prepend), GB11 (emoji ZWJ
//! sequences), GB12/13 (regional-indicator pairs). The property tables are approximated from the
//! general category plus the short lists below (no GB9c Indic conjuncts); the parity tests against
//! HF run on real text plus combining sequences, where these rules are exact.

use unicode_general_category::{get_general_category, GeneralCategory as Gc};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Gcb {
    Cr,
    Lf,
    Control,
    Extend,
    Zwj,
    RegionalIndicator,
    Prepend,
    SpacingMark,
    L,
    V,
    T,
    Lv,
    Lvt,
    ExtPict,
    Other,
}

/// Spacing marks (Mc) that are Grapheme_Extend, hence Extend, not SpacingMark.
fn is_extend_mc(cp: u32) -> bool {
    matches!(
        cp,
        0x09BE | 0x09D7 | 0x0B3E | 0x0B57 | 0x0BBE | 0x0BD7 | 0x0CC2 | 0x0CD5 | 0x0CD6 | 0x0D3E | 0x0D57
            | 0x0DCF | 0x0DDF | 0x1B35 | 0x302E | 0x302F | 0x1133E | 0x11357 | 0x114B0 | 0x114BD | 0x115AF
            | 0x11930 | 0x1D165 | 0x1D16E..=0x1D172
    )
}

/// Mc chars that UAX #29 leaves out of SpacingMark (they are Other).
fn is_not_spacing_mark(cp: u32) -> bool {
    matches!(
        cp,
        0x102B | 0x102C | 0x1038 | 0x1062..=0x1064 | 0x1067..=0x106D | 0x1083 | 0x1087..=0x108C | 0x108F
            | 0x109A..=0x109C | 0x1A61 | 0x1A63 | 0x1A64 | 0xAA7B | 0xAA7D | 0x11720 | 0x11721
    )
}

fn is_ext_pict(cp: u32) -> bool {
    matches!(
        cp,
        0x00A9 | 0x00AE | 0x203C | 0x2049 | 0x2122 | 0x2139 | 0x2194..=0x2199 | 0x21A9..=0x21AA
            | 0x231A..=0x231B | 0x2328 | 0x2388 | 0x23CF | 0x23E9..=0x23F3 | 0x23F8..=0x23FA | 0x24C2
            | 0x25AA..=0x25AB | 0x25B6 | 0x25C0 | 0x25FB..=0x25FE | 0x2600..=0x27BF | 0x2934..=0x2935
            | 0x2B05..=0x2B07 | 0x2B1B..=0x2B1C | 0x2B50 | 0x2B55 | 0x3030 | 0x303D | 0x3297 | 0x3299
            | 0x1F000..=0x1F0FF | 0x1F10D..=0x1F10F | 0x1F12F | 0x1F16C..=0x1F171 | 0x1F17E..=0x1F17F
            | 0x1F18E | 0x1F191..=0x1F19A | 0x1F1AD..=0x1F1E5 | 0x1F201..=0x1F20F | 0x1F21A | 0x1F22F
            | 0x1F232..=0x1F23A | 0x1F23C..=0x1F23F | 0x1F249..=0x1F3FA | 0x1F400..=0x1F53D
            | 0x1F546..=0x1F64F | 0x1F680..=0x1F6FF | 0x1F774..=0x1F77F | 0x1F7D5..=0x1F7FF
            | 0x1F80C..=0x1F80F | 0x1F848..=0x1F84F | 0x1F85A..=0x1F85F | 0x1F888..=0x1F88F
            | 0x1F8AE..=0x1F8FF | 0x1F90C..=0x1F93A | 0x1F93C..=0x1F945 | 0x1F947..=0x1FAFF
            | 0x1FC00..=0x1FFFD
    )
}

fn gcb(c: char) -> Gcb {
    let cp = c as u32;
    match cp {
        0x0D => return Gcb::Cr,
        0x0A => return Gcb::Lf,
        0x200D => return Gcb::Zwj,
        0x200C | 0xFF9E | 0xFF9F | 0x1F3FB..=0x1F3FF | 0xE0020..=0xE007F => return Gcb::Extend,
        0x0600..=0x0605 | 0x06DD | 0x070F | 0x0890 | 0x0891 | 0x08E2 | 0x110BD | 0x110CD => return Gcb::Prepend,
        0x0E33 | 0x0EB3 => return Gcb::SpacingMark,
        0x1F1E6..=0x1F1FF => return Gcb::RegionalIndicator,
        0x1100..=0x115F | 0xA960..=0xA97C => return Gcb::L,
        0x1160..=0x11A7 | 0xD7B0..=0xD7C6 => return Gcb::V,
        0x11A8..=0x11FF | 0xD7CB..=0xD7FB => return Gcb::T,
        0xAC00..=0xD7A3 => return if (cp - 0xAC00).is_multiple_of(28) { Gcb::Lv } else { Gcb::Lvt },
        _ => {}
    }
    if is_ext_pict(cp) {
        return Gcb::ExtPict;
    }
    match get_general_category(c) {
        Gc::NonspacingMark | Gc::EnclosingMark => Gcb::Extend,
        Gc::SpacingMark if is_extend_mc(cp) => Gcb::Extend,
        Gc::SpacingMark if !is_not_spacing_mark(cp) => Gcb::SpacingMark,
        Gc::Control | Gc::Format | Gc::LineSeparator | Gc::ParagraphSeparator => Gcb::Control,
        _ => Gcb::Other,
    }
}

/// Calls `f(start, end)` (char indices into `chars`) for every extended grapheme cluster.
pub fn for_each_grapheme(chars: &[char], mut f: impl FnMut(usize, usize)) {
    if chars.is_empty() {
        return;
    }
    let mut start = 0;
    let mut prev = gcb(chars[0]);
    // GB11: inside `ExtPict Extend*`, and whether the last char was a ZWJ ending such a run.
    let mut in_pict = prev == Gcb::ExtPict;
    // GB12/13: number of regional indicators in the current run.
    let mut ri_run = usize::from(prev == Gcb::RegionalIndicator);
    for (i, &c) in chars.iter().enumerate().skip(1) {
        let cur = gcb(c);
        let join = match (prev, cur) {
            (Gcb::Cr, Gcb::Lf) => true,
            (Gcb::Control | Gcb::Cr | Gcb::Lf, _) | (_, Gcb::Control | Gcb::Cr | Gcb::Lf) => false,
            (Gcb::L, Gcb::L | Gcb::V | Gcb::Lv | Gcb::Lvt) => true,
            (Gcb::Lv | Gcb::V, Gcb::V | Gcb::T) => true,
            (Gcb::Lvt | Gcb::T, Gcb::T) => true,
            (_, Gcb::Extend | Gcb::Zwj | Gcb::SpacingMark) => true,
            (Gcb::Prepend, _) => true,
            (Gcb::Zwj, Gcb::ExtPict) => in_pict,
            (Gcb::RegionalIndicator, Gcb::RegionalIndicator) => ri_run % 2 == 1,
            _ => false,
        };
        if !join {
            f(start, i);
            start = i;
        }
        in_pict = match cur {
            Gcb::ExtPict => true,
            Gcb::Extend | Gcb::Zwj => in_pict && prev != Gcb::Zwj,
            _ => false,
        };
        ri_run = if cur == Gcb::RegionalIndicator { ri_run + 1 } else { 0 };
        prev = cur;
    }
    f(start, chars.len());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clusters(s: &str) -> Vec<String> {
        let chars: Vec<char> = s.chars().collect();
        let mut out = Vec::new();
        for_each_grapheme(&chars, |a, b| out.push(chars[a..b].iter().collect()));
        out
    }

    #[test]
    fn marks_jamo_crlf_flags_emoji() {
        assert_eq!(clusters("e\u{301}x"), vec!["e\u{301}", "x"]);
        assert_eq!(clusters("\r\n\n"), vec!["\r\n", "\n"]);
        assert_eq!(clusters("\u{1100}\u{1161}\u{11a8}a"), vec!["\u{1100}\u{1161}\u{11a8}", "a"]);
        assert_eq!(clusters("\u{1f1eb}\u{1f1f7}\u{1f1e9}"), vec!["\u{1f1eb}\u{1f1f7}", "\u{1f1e9}"]);
        assert_eq!(clusters("\u{1f468}\u{200d}\u{1f469}!"), vec!["\u{1f468}\u{200d}\u{1f469}", "!"]);
        assert_eq!(clusters("a\u{200d}b"), vec!["a\u{200d}", "b"]);
    }
}
