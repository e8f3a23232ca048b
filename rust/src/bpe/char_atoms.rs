//! Chars that a byte-level BPE word can start with already merged ("atoms"): the byte-level path's
//! shortcut for text the word cache has never seen, where a Chinese word of n chars otherwise starts
//! as 3n bytes and spends two of every three merges rebuilding chars (perf, o200k, Chinese: the merge
//! loop was most of a fresh slice's time).
//!
//! When pre-forming is exact. Let `c` be a char of 2-4 bytes whose bytes spell one token `t`, at bytes
//! `[s, e)` of a word, and let `R` be the largest rank of the merges that BPE applies to `c`'s bytes
//! alone. Starting from `t` instead of the bytes gives the same ids when
//! 1. BPE of `c`'s bytes alone ends in the single token `t`;
//! 2. every merge that has `t` as one of its two parts ranks above `R`;
//! 3. no token spells some of the word's bytes right before `s` followed by a proper prefix of `c`,
//!    or a proper suffix of `c` followed by some of the word's bytes from `e` on (checked at each
//!    occurrence, against the word's own bytes: only "fragment" tokens, which end inside a char or
//!    start with its continuation bytes, can do that).
//!
//! Why: by 3, no merge joins a part of `c` with a byte outside it (its product would be such a
//! token), so while `c` is not whole its bytes merge only among themselves, in the order BPE gives
//! them alone (1), ending in `t` after its merge of rank `R`. Every step of the full run that merges
//! outside `c` meanwhile has a rank below one of `c`'s pending merges, so below `R`, and by 2 below
//! every merge that involves `t`: the run started from `t` takes the same steps, and once `c` is
//! whole in the full run the two runs are in the same state. Ties (one pair at several places) are
//! taken leftmost in both runs. Pre-forming several chars of one word is the same argument applied
//! one char at a time (3 speaks of bytes, which pre-forming does not change).
//!
//! ```
//! use subword_core::bpe::char_atoms::CharAtomsBuilder;
//! // Vocab: the bytes of "é" (0xC3 0xA9) and the token "é" (id 7), made by one merge of rank 0.
//! let mut b = CharAtomsBuilder::default();
//! b.add_token("é".as_bytes());
//! let atoms = b.build(|bytes| (bytes == "é".as_bytes()).then_some((7, 0)), |_| u32::MAX).unwrap();
//! assert_eq!(atoms.at("café".as_bytes(), 3), Some((7, 2)));
//! assert_eq!(atoms.at("café".as_bytes(), 0), None); // 'c' is ASCII: never an atom
//! ```

use std::collections::HashMap;

type Map<K, V> = HashMap<K, V, ahash::RandomState>;

/// An entry of the code point tables: `rule << ID_BITS | id`, or [`NONE`].
const NONE: u32 = u32::MAX;
const ID_BITS: u32 = 24;
const ID_MASK: u32 = (1 << ID_BITS) - 1;
/// Rule indices fit the entry's top 8 bits, 255 excluded (that would read as [`NONE`]).
const MAX_RULES: usize = 255;

/// The fragment contexts of one char (rule 0: none, the common case).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Contexts {
    /// Bytes that, right before the char, a token continues with a proper prefix of the char.
    before: Vec<Box<[u8]>>,
    /// Bytes that, right after the char, a token starts with a proper suffix of the char before.
    after: Vec<Box<[u8]>>,
}

/// See the module docs. Built by [`CharAtomsBuilder`].
#[derive(Debug)]
pub struct CharAtoms {
    /// Code points of the Basic Multilingual Plane -> entry.
    bmp: Box<[u32]>,
    /// Code points above U+FFFF -> entry.
    astral: Map<u32, u32>,
    rules: Vec<Contexts>,
}

/// The length of the UTF-8 char led by `b0`, 0 if `b0` cannot lead a multi-byte char.
#[inline]
fn multibyte_len(b0: u8) -> usize {
    match b0 {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => 0,
    }
}

#[inline]
fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// The code point of the valid multi-byte char that is exactly `bytes`, if it is one.
#[inline]
fn decode_one(bytes: &[u8]) -> Option<u32> {
    let (&b0, rest) = bytes.split_first()?;
    let n = multibyte_len(b0);
    if n != bytes.len() || !rest.iter().all(|&b| is_continuation(b)) {
        return None;
    }
    let lead = u32::from(b0) & (0x7F >> n);
    let cp = rest.iter().fold(lead, |cp, &b| (cp << 6) | u32::from(b & 0x3F));
    // Overlong forms and surrogates decode to a char whose own encoding is shorter, or to none.
    char::from_u32(cp).filter(|c| c.len_utf8() == n).map(|_| cp)
}

impl CharAtoms {
    /// `(id, byte length)` of the atom that the char starting at `raw[start]` can be pre-formed as
    /// at this place of the word `raw`, or `None` (ASCII, not an atom, a fragment context around it,
    /// or not a valid char).
    #[inline]
    pub fn at(&self, raw: &[u8], start: usize) -> Option<(u32, usize)> {
        let n = multibyte_len(*raw.get(start)?);
        let end = start.checked_add(n)?;
        let cp = decode_one(raw.get(start..end)?)?;
        let entry = match self.bmp.get(cp as usize) {
            Some(&e) => e,
            None => *self.astral.get(&cp)?,
        };
        if entry == NONE {
            return None;
        }
        let rule = (entry >> ID_BITS) as usize;
        if rule != 0 {
            let ctx = self.rules.get(rule)?;
            let before = &raw[..start];
            let after = &raw[end..];
            if ctx.before.iter().any(|x| before.ends_with(x)) || ctx.after.iter().any(|y| after.starts_with(y)) {
                return None;
            }
        }
        Some((entry & ID_MASK, n))
    }

    /// How many chars are atoms.
    pub fn len(&self) -> usize {
        self.bmp.iter().filter(|&&e| e != NONE).count() + self.astral.len()
    }

    /// No char is an atom.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Collects what [`CharAtoms`] needs from a vocab's tokens (raw bytes), one token at a time.
#[derive(Default)]
pub struct CharAtomsBuilder {
    /// Tokens that are exactly one multi-byte char: (code point, bytes).
    singles: Vec<(u32, Box<[u8]>)>,
    /// A proper char prefix `p` -> every `x` such that `x` + `p` is a token (`x` not empty).
    before: Map<Box<[u8]>, Vec<Box<[u8]>>>,
    /// A proper char suffix `q` (continuation bytes) -> every `y` such that `q` + `y` is a token.
    after: Map<Box<[u8]>, Vec<Box<[u8]>>>,
}

impl CharAtomsBuilder {
    /// Reads one token of the vocab, by its raw bytes.
    pub fn add_token(&mut self, raw: &[u8]) {
        if let Some(cp) = decode_one(raw) {
            self.singles.push((cp, raw.into()));
            return;
        }
        let len = raw.len();
        // Ends inside a char: the last 1-3 bytes are a lead byte and fewer continuations than it needs.
        for k in 1..len.min(4) {
            let tail = &raw[len - k..];
            let n = multibyte_len(tail[0]);
            if n > k && tail[1..].iter().all(|&b| is_continuation(b)) {
                self.before.entry(tail.into()).or_default().push(raw[..len - k].into());
            }
        }
        // Starts with continuation bytes: each 1-3 byte run of them may be the end of a char.
        for j in 1..len.min(4) {
            if !is_continuation(raw[j - 1]) {
                break;
            }
            self.after.entry(raw[..j].into()).or_default().push(raw[j..].into());
        }
    }

    /// The atoms: `alone(bytes)` is `(id, largest rank used)` when BPE of a char's bytes alone ends
    /// in one token (condition 1), and `operand_min(id)` the lowest rank of a merge with `id` as a
    /// part, `u32::MAX` if none (condition 2). `None` when no char qualifies.
    pub fn build(
        self,
        alone: impl Fn(&[u8]) -> Option<(u32, u32)>,
        operand_min: impl Fn(u32) -> u32,
    ) -> Option<CharAtoms> {
        let mut bmp: Box<[u32]> = Box::default();
        let mut astral = Map::default();
        let mut rules = vec![Contexts::default()];
        let mut rule_of: Map<Contexts, usize> = Map::default();
        for (cp, bytes) in &self.singles {
            let Some((id, last_rank)) = alone(bytes) else { continue };
            if id > ID_MASK || operand_min(id) <= last_rank {
                continue;
            }
            let mut ctx = Contexts::default();
            for k in 1..bytes.len() {
                if let Some(xs) = self.before.get(&bytes[..k]) {
                    ctx.before.extend(xs.iter().cloned());
                }
                if let Some(ys) = self.after.get(&bytes[k..]) {
                    ctx.after.extend(ys.iter().cloned());
                }
            }
            let rule = if ctx == Contexts::default() {
                0
            } else if let Some(&r) = rule_of.get(&ctx) {
                r
            } else if rules.len() < MAX_RULES {
                rules.push(ctx.clone());
                rule_of.insert(ctx, rules.len() - 1);
                rules.len() - 1
            } else {
                continue; // out of rule numbers: leave the char to the merges (always exact)
            };
            let entry = ((rule as u32) << ID_BITS) | id;
            if *cp < 0x10000 {
                if bmp.is_empty() {
                    bmp = vec![NONE; 0x10000].into_boxed_slice();
                }
                bmp[*cp as usize] = entry;
            } else {
                astral.insert(*cp, entry);
            }
        }
        if bmp.is_empty() && astral.is_empty() {
            return None;
        }
        if bmp.is_empty() {
            bmp = vec![NONE; 0x10000].into_boxed_slice();
        }
        Some(CharAtoms { bmp, astral, rules })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_one_accepts_exactly_one_valid_multibyte_char() {
        for c in ['é', '中', '€', '😀', '\u{80}', '\u{FFFF}', '\u{10000}', '\u{10FFFF}'] {
            let mut buf = [0u8; 4];
            let s = c.encode_utf8(&mut buf);
            assert_eq!(decode_one(s.as_bytes()), Some(c as u32), "{c:?}");
        }
        let bad: [&[u8]; 9] = [
            b"a",
            b"\xC3",
            b"\xC3\xA9\xA9",
            b"\xC0\x80",         // overlong NUL
            b"\xE0\x80\xAF",     // overlong '/'
            b"\xED\xA0\x80",     // surrogate
            b"\xF4\x90\x80\x80", // above U+10FFFF
            b"\xC3(",
            "ab".as_bytes(),
        ];
        for b in bad {
            assert_eq!(decode_one(b), None, "{b:?}");
        }
    }

    #[test]
    fn fragment_contexts_block_only_where_the_word_has_them() {
        // "中" = E4 B8 AD. A token "x" + E4 B8 (ends inside 中) and a token AD + "!" (starts inside it).
        let zhong = "中".as_bytes();
        let mut b = CharAtomsBuilder::default();
        b.add_token(zhong);
        b.add_token(&[b'x', 0xE4, 0xB8]);
        b.add_token(&[0xAD, b'!']);
        b.add_token(b"plain");
        let atoms = b.build(|bytes| (bytes == zhong).then_some((5, 9)), |_| 10).unwrap();
        assert_eq!(atoms.len(), 1);
        let word = |s: &str| s.as_bytes().to_vec();
        assert_eq!(atoms.at(&word("a中b"), 1), Some((5, 3)));
        assert_eq!(atoms.at(&word("x中b"), 1), None); // x + E4 B8 is a token
        assert_eq!(atoms.at(&word("a中!"), 1), None); // AD + ! is a token
        assert_eq!(atoms.at(&word("中"), 0), Some((5, 3)));
        assert_eq!(atoms.at(&word("中"), 1), None); // not the start of a char
    }

    #[test]
    fn conditions_one_and_two_decide_which_chars_are_atoms() {
        let mut b = CharAtomsBuilder::default();
        for c in ["é", "中", "😀"] {
            b.add_token(c.as_bytes());
        }
        // é: BPE alone does not end in one token; 中: a merge using it ranks at 4, before its last
        // inner merge (rank 4 too, so not strictly after); 😀: fine.
        let alone = |bytes: &[u8]| match std::str::from_utf8(bytes).ok()? {
            "中" => Some((2, 4)),
            "😀" => Some((3, 1)),
            _ => None,
        };
        let atoms = b.build(alone, |id| if id == 2 { 4 } else { u32::MAX }).unwrap();
        assert_eq!(atoms.at("é".as_bytes(), 0), None);
        assert_eq!(atoms.at("中".as_bytes(), 0), None);
        assert_eq!(atoms.at("😀".as_bytes(), 0), Some((3, 4)));
        assert_eq!(atoms.len(), 1);
    }
}
