//! Text normalizers with HF `tokenizers` semantics: NFC, NFD, NFKC, NFKD, Lowercase, StripAccents,
//! BertNormalizer and Sequence here; the SentencePiece-conversion ones (Precompiled, Nmt, Replace,
//! Strip, Prepend) in `normalize/sentencepiece.rs`.
//!
//! Two entry points:
//! - [`Normalizer::normalize_str`]: the normalized text only (training, ids-only encoding).
//! - [`Normalizer::normalize_with_alignment`]: the normalized text plus, for every byte of it, the
//!   byte range of the ORIGINAL text it comes from, so the encoder can report offsets into the
//!   text the user gave.
//!
//! Alignment rules (measured against `tokenizers` 0.23.3, see `tests/test_normalizers_rust.py`):
//! - a char that expands (NFD `é` -> `e` + U+0301, NFKC `ﬁ` -> `fi`, lowercase `İ` -> `i` + U+0307)
//!   gives every output char the range of the whole source char;
//! - a composition (NFC `e` + U+0301 -> `é`) keeps the range of the starter only: the absorbed mark's
//!   range is dropped, exactly like HF (so a token `é` covers only the `e` of the original);
//! - removed chars (StripAccents) vanish with their ranges; the kept neighbours keep their own;
//! - ranges are assigned by POSITION (HF's `transform`), so canonical reordering of marks does not
//!   move them: NFD of `e` U+0301 U+0323 gives `e` U+0323 U+0301 with ranges 0, 1, 2 in order.
//!
//! Where we may differ from HF: HF's normalization tables come from the
//! `unicode-normalization-alignments` crate (an older Unicode version) while we use
//! `unicode-normalization` (Unicode 16). Characters assigned or re-classified in between can
//! normalize differently; typical text is unaffected.
//!
//! HF facts we follow: `Lowercase` is `char::to_lowercase` per char (no final-sigma rule);
//! `StripAccents` removes every char of general category Mark (Mn, Mc and Me, not just Mn) and does
//! not decompose by itself (HF pipelines put NFD before it).
//!
//! Performance notes
//! - `normalize_str` never builds alignments and returns early for ASCII input to the Unicode
//!   normalization forms (ASCII is invariant under all four).
//! - The alignment variant works on a `Vec<(char, (usize, usize))>` per stage; it is used only by
//!   the full `encode` path (offsets), not by training or `encode_batch_ids`.

use unicode_general_category::{get_general_category, GeneralCategory as Gc};
use unicode_normalization::char::{
    canonical_combining_class, compose, decompose_canonical, decompose_compatible, is_combining_mark,
};
use unicode_normalization::UnicodeNormalization;

pub mod sentencepiece;

pub use sentencepiece::{Precompiled, ReplacePattern};

/// A text normalizer (the subset of HF normalizers we implement natively).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Normalizer {
    Nfc,
    Nfkc,
    Nfd,
    Nfkd,
    Lowercase,
    StripAccents,
    Sequence(Vec<Normalizer>),
    /// HF `BertNormalizer` (see [`bert_normalize_str`] for the steps and their order).
    Bert {
        clean_text: bool,
        handle_chinese_chars: bool,
        strip_accents: Option<bool>,
        lowercase: bool,
    },
    /// HF `Nmt` (control chars dropped, some spaces unified).
    Nmt,
    /// HF `Strip`: leading / trailing whitespace removed.
    Strip {
        left: bool,
        right: bool,
    },
    /// HF `Prepend`: a string before any non-empty text.
    Prepend(String),
    /// HF `Replace`: every match of the pattern replaced by `content`.
    Replace {
        pattern: ReplacePattern,
        content: String,
    },
    /// HF `Precompiled`: SentencePiece's charsmap.
    Precompiled(Precompiled),
    /// HF `ByteLevel` normalizer: every UTF-8 byte becomes its GPT-2 byte-level char (each char of the
    /// output aligned with the input char it comes from).
    ByteLevel,
}

/// One char of a normalized text with the byte range of the original text it comes from.
type AlignedChar = (char, (usize, usize));

impl Normalizer {
    /// Parses an HF tokenizer.json normalizer component (`{"type": "NFC"}`, `{"type": "Sequence",
    /// "normalizers": [...]}`). Unsupported types are an error naming the type.
    pub fn from_json(v: &serde_json::Value) -> Result<Self, String> {
        let ty = v
            .get("type")
            .and_then(|t| t.as_str())
            .ok_or_else(|| "normalizer: missing string field 'type'".to_string())?;
        Ok(match ty {
            "NFC" => Normalizer::Nfc,
            "NFD" => Normalizer::Nfd,
            "NFKC" => Normalizer::Nfkc,
            "NFKD" => Normalizer::Nfkd,
            "Lowercase" => Normalizer::Lowercase,
            "StripAccents" => Normalizer::StripAccents,
            "Sequence" => {
                let items = v
                    .get("normalizers")
                    .and_then(|n| n.as_array())
                    .ok_or_else(|| "normalizer Sequence: missing array field 'normalizers'".to_string())?;
                Normalizer::Sequence(items.iter().map(Normalizer::from_json).collect::<Result<_, _>>()?)
            }
            "BertNormalizer" => {
                let flag = |k: &str, d: bool| -> Result<bool, String> {
                    match v.get(k) {
                        None | Some(serde_json::Value::Null) => Ok(d),
                        Some(serde_json::Value::Bool(b)) => Ok(*b),
                        Some(o) => Err(format!("normalizer BertNormalizer: '{k}' must be a boolean, got {o}")),
                    }
                };
                let strip_accents = match v.get("strip_accents") {
                    None | Some(serde_json::Value::Null) => None,
                    Some(serde_json::Value::Bool(b)) => Some(*b),
                    Some(o) => {
                        return Err(format!(
                            "normalizer BertNormalizer: 'strip_accents' must be a boolean or null, got {o}"
                        ))
                    }
                };
                Normalizer::Bert {
                    clean_text: flag("clean_text", true)?,
                    handle_chinese_chars: flag("handle_chinese_chars", true)?,
                    strip_accents,
                    lowercase: flag("lowercase", true)?,
                }
            }
            "Nmt" => Normalizer::Nmt,
            "Strip" => Normalizer::Strip {
                left: crate::postprocess::get_bool(v, "strip_left", true),
                right: crate::postprocess::get_bool(v, "strip_right", true),
            },
            "Prepend" => Normalizer::Prepend(
                v.get("prepend")
                    .and_then(|x| x.as_str())
                    .ok_or("normalizer Prepend: missing string 'prepend'")?
                    .to_string(),
            ),
            "Replace" => Normalizer::Replace {
                pattern: ReplacePattern::from_json(v.get("pattern").unwrap_or(&serde_json::Value::Null), "normalizer")?,
                content: v
                    .get("content")
                    .and_then(|x| x.as_str())
                    .ok_or("normalizer Replace: missing string 'content'")?
                    .to_string(),
            },
            "Precompiled" => match v.get("precompiled_charsmap") {
                Some(serde_json::Value::String(b64)) => Normalizer::Precompiled(Precompiled::from_base64(b64)?),
                // HF accepts an empty charsmap: the normalizer then changes nothing.
                None | Some(serde_json::Value::Null) => Normalizer::Sequence(Vec::new()),
                Some(other) => {
                    return Err(format!(
                        "normalizer Precompiled: 'precompiled_charsmap' must be a base64 string, got {other}"
                    ))
                }
            },
            "ByteLevel" => Normalizer::ByteLevel,
            other => return Err(format!("unsupported normalizer type '{other}'")),
        })
    }

    /// Parses the JSON text of a normalizer component.
    pub fn from_json_str(s: &str) -> Result<Self, String> {
        let v: serde_json::Value = serde_json::from_str(s).map_err(|e| format!("normalizer: invalid JSON: {e}"))?;
        Self::from_json(&v)
    }

    /// The HF tokenizer.json form of this component.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Normalizer::Nfc => serde_json::json!({"type": "NFC"}),
            Normalizer::Nfd => serde_json::json!({"type": "NFD"}),
            Normalizer::Nfkc => serde_json::json!({"type": "NFKC"}),
            Normalizer::Nfkd => serde_json::json!({"type": "NFKD"}),
            Normalizer::Lowercase => serde_json::json!({"type": "Lowercase"}),
            Normalizer::StripAccents => serde_json::json!({"type": "StripAccents"}),
            Normalizer::Sequence(v) => serde_json::json!({
                "type": "Sequence",
                "normalizers": v.iter().map(|n| n.to_json()).collect::<Vec<_>>(),
            }),
            Normalizer::Bert { clean_text, handle_chinese_chars, strip_accents, lowercase } => serde_json::json!({
                "type": "BertNormalizer",
                "clean_text": clean_text,
                "handle_chinese_chars": handle_chinese_chars,
                "strip_accents": strip_accents,
                "lowercase": lowercase,
            }),
            Normalizer::Nmt => serde_json::json!({"type": "Nmt"}),
            Normalizer::Strip { left, right } => {
                serde_json::json!({"type": "Strip", "strip_left": left, "strip_right": right})
            }
            Normalizer::Prepend(p) => serde_json::json!({"type": "Prepend", "prepend": p}),
            Normalizer::Replace { pattern, content } => {
                serde_json::json!({"type": "Replace", "pattern": pattern.to_json(), "content": content})
            }
            Normalizer::Precompiled(p) => serde_json::json!({"type": "Precompiled", "precompiled_charsmap": p.base64}),
            Normalizer::ByteLevel => serde_json::json!({"type": "ByteLevel"}),
        }
    }

    /// The normalized text (no alignment bookkeeping).
    pub fn normalize_str(&self, s: &str) -> String {
        match self {
            Normalizer::Nfc | Normalizer::Nfd | Normalizer::Nfkc | Normalizer::Nfkd if s.is_ascii() => s.to_string(),
            Normalizer::Nfc => s.nfc().collect(),
            Normalizer::Nfd => s.nfd().collect(),
            Normalizer::Nfkc => s.nfkc().collect(),
            Normalizer::Nfkd => s.nfkd().collect(),
            // Per char, like HF: `String::to_lowercase` would apply the final-sigma rule.
            Normalizer::Lowercase => {
                if s.is_ascii() {
                    s.to_ascii_lowercase()
                } else {
                    s.chars().flat_map(|c| c.to_lowercase()).collect()
                }
            }
            Normalizer::StripAccents => s.chars().filter(|&c| !is_combining_mark(c)).collect(),
            Normalizer::Sequence(v) => {
                let mut cur = s.to_string();
                for n in v {
                    cur = n.normalize_str(&cur);
                }
                cur
            }
            Normalizer::Bert { .. } => self.bert_str(s),
            Normalizer::Precompiled(p) if p.leaves_unchanged(s) => s.to_string(),
            Normalizer::Nmt => sentencepiece::nmt_str(s),
            Normalizer::Strip { left, right } => {
                let t = if *left { s.trim_start_matches(char::is_whitespace) } else { s };
                (if *right { t.trim_end_matches(char::is_whitespace) } else { t }).to_string()
            }
            Normalizer::Prepend(_) if s.is_empty() => String::new(),
            Normalizer::Prepend(p) => format!("{p}{s}"),
            Normalizer::Replace { pattern, content } => pattern.replace_in(s, content),
            Normalizer::Precompiled(_) => {
                let chars: Vec<AlignedChar> = s.chars().map(|c| (c, (0, 0))).collect();
                self.apply_aligned(chars).into_iter().map(|x| x.0).collect()
            }
            Normalizer::ByteLevel => crate::pretok::byte_level_map(s),
        }
    }

    /// The normalized text and, for every byte of it, the byte range of `s` it comes from.
    pub fn normalize_with_alignment(&self, s: &str) -> (String, Vec<(usize, usize)>) {
        let chars: Vec<AlignedChar> = s.char_indices().map(|(i, c)| (c, (i, i + c.len_utf8()))).collect();
        let out = self.apply_aligned(chars);
        let mut text = String::with_capacity(s.len());
        let mut align = Vec::with_capacity(s.len());
        for (c, r) in out {
            text.push(c);
            for _ in 0..c.len_utf8() {
                align.push(r);
            }
        }
        (text, align)
    }

    fn apply_aligned(&self, chars: Vec<AlignedChar>) -> Vec<AlignedChar> {
        let plain: Vec<char> = chars.iter().map(|(c, _)| *c).collect();
        let (changed, initial) = match self {
            Normalizer::Nfd => (decompose(&plain, false), 0),
            Normalizer::Nfkd => (decompose(&plain, true), 0),
            Normalizer::Nfc => (recompose(decompose(&plain, false)), 0),
            Normalizer::Nfkc => (recompose(decompose(&plain, true)), 0),
            Normalizer::Lowercase => {
                let mut out = Vec::with_capacity(plain.len());
                for &c in &plain {
                    for (k, l) in c.to_lowercase().enumerate() {
                        out.push((l, isize::from(k > 0)));
                    }
                }
                (out, 0)
            }
            Normalizer::StripAccents => strip_marks(&plain),
            Normalizer::ByteLevel => {
                // The first byte of a char replaces it, the others are inserted after it (HF's changes).
                let table = crate::pretok::bytes_to_unicode();
                let mut out = Vec::with_capacity(plain.len() * 2);
                let mut buf = [0u8; 4];
                for &c in &plain {
                    for (k, &b) in c.encode_utf8(&mut buf).as_bytes().iter().enumerate() {
                        out.push((table[b as usize], isize::from(k > 0)));
                    }
                }
                (out, 0)
            }
            Normalizer::Nmt => return sentencepiece::nmt(chars),
            Normalizer::Strip { left, right } => return sentencepiece::strip(chars, *left, *right),
            Normalizer::Prepend(p) => return sentencepiece::prepend(chars, p),
            Normalizer::Replace { pattern, content } => return sentencepiece::replace(chars, pattern, content),
            Normalizer::Precompiled(p) => return p.apply(chars),
            Normalizer::Sequence(v) => {
                let mut cur = chars;
                for n in v {
                    cur = n.apply_aligned(cur);
                }
                return cur;
            }
            Normalizer::Bert { clean_text, handle_chinese_chars, strip_accents, lowercase } => {
                let mut cur = chars;
                if *clean_text {
                    let (out, initial) = filter_chars(&cur, |c| !is_bert_removed(c));
                    cur = assign_positionally(&cur, out, initial);
                    for x in cur.iter_mut() {
                        if is_bert_whitespace(x.0) {
                            x.0 = ' ';
                        }
                    }
                }
                if *handle_chinese_chars {
                    let mut out: Vec<Changed> = Vec::with_capacity(cur.len());
                    for (c, _) in &cur {
                        if is_chinese_char(*c) {
                            out.extend([(' ', 0), (*c, 1), (' ', 1)]);
                        } else {
                            out.push((*c, 0));
                        }
                    }
                    cur = assign_positionally(&cur, out, 0);
                }
                if strip_accents.unwrap_or(*lowercase) {
                    cur = Normalizer::Nfd.apply_aligned(cur);
                    let (out, initial) = filter_chars(&cur, |c| get_general_category(c) != Gc::NonspacingMark);
                    cur = assign_positionally(&cur, out, initial);
                }
                if *lowercase {
                    cur = Normalizer::Lowercase.apply_aligned(cur);
                }
                return cur;
            }
        };
        assign_positionally(&chars, changed, initial)
    }
}

/// A char of a stage's output with HF's "change" count: 0 = replaces one input char, +1 = inserted
/// after the previous one, -n = replaces 1 + n input chars.
type Changed = (char, isize);

/// HF `NormalizedString::transform`: alignments are assigned by POSITION in the stage's input, not
/// by following chars around. An output char with change <= 0 takes the alignment of the input char
/// at the cursor and moves the cursor past 1 + |change| chars; an inserted char (+1) takes the
/// alignment of the char before the cursor. So canonical reordering does not move alignments, and a
/// composed char keeps its starter's range while the absorbed mark's range is dropped.
fn assign_positionally(input: &[AlignedChar], out: Vec<Changed>, initial: usize) -> Vec<AlignedChar> {
    let last = input.last().map_or((0, 0), |x| x.1);
    let at = |i: usize| input.get(i).map_or(last, |x| x.1);
    let mut cursor = initial;
    out.into_iter()
        .map(|(c, change)| {
            if change > 0 {
                (c, if cursor == 0 { at(0) } else { at(cursor - 1) })
            } else {
                let a = at(cursor);
                cursor += 1 + change.unsigned_abs();
                (c, a)
            }
        })
        .collect()
}

/// Full (canonical or compatibility) decomposition followed by canonical reordering; the change
/// counts travel with their chars through the reordering.
fn decompose(chars: &[char], compat: bool) -> Vec<Changed> {
    let mut out: Vec<Changed> = Vec::with_capacity(chars.len() + 8);
    for &c in chars {
        let mut first = true;
        let mut push = |d: char| {
            out.push((d, if first { 0 } else { 1 }));
            first = false;
        };
        if compat {
            decompose_compatible(c, &mut push);
        } else {
            decompose_canonical(c, &mut push);
        }
    }
    // Canonical ordering: stable sort of every run of non-starters by combining class.
    let mut i = 0;
    while i < out.len() {
        if canonical_combining_class(out[i].0) == 0 {
            i += 1;
            continue;
        }
        let start = i;
        while i < out.len() && canonical_combining_class(out[i].0) != 0 {
            i += 1;
        }
        if i - start > 1 {
            out[start..i].sort_by_key(|(c, _)| canonical_combining_class(*c));
        }
    }
    out
}

/// Canonical composition (UAX #15) of a decomposed, reordered sequence. Absorbing a char adds its
/// change minus one to the starter's change (one input position more for the starter).
fn recompose(chars: Vec<Changed>) -> Vec<Changed> {
    let mut out: Vec<Changed> = Vec::with_capacity(chars.len());
    let mut starter: Option<usize> = None;
    // Combining class of the last char appended after the starter; None when adjacent to it.
    let mut last_ccc: Option<u8> = None;
    for (c, ch) in chars {
        let ccc = canonical_combining_class(c);
        if let Some(si) = starter {
            let unblocked = match last_ccc {
                None => true,
                Some(l) => l != 0 && l < ccc,
            };
            if unblocked {
                if let Some(comp) = compose(out[si].0, c) {
                    out[si].0 = comp;
                    out[si].1 += ch - 1;
                    continue;
                }
            }
        }
        if ccc == 0 {
            starter = Some(out.len());
            last_ccc = None;
        } else {
            last_ccc = Some(ccc);
        }
        out.push((c, ch));
    }
    out
}

/// HF `filter` with a keep predicate (see [`strip_marks`] for the alignment rule).
fn filter_chars(chars: &[AlignedChar], keep: impl Fn(char) -> bool) -> (Vec<Changed>, usize) {
    let mut out: Vec<Changed> = Vec::with_capacity(chars.len());
    let mut initial = 0;
    for &(c, _) in chars {
        if keep(c) {
            out.push((c, 0));
        } else {
            match out.last_mut() {
                Some(last) => last.1 -= 1,
                None => initial += 1,
            }
        }
    }
    (out, initial)
}

// ==== BertNormalizer ====
// HF `normalizers/bert.rs`, in this order: clean_text (drop NUL, U+FFFD and Cc/Cf/Co/Cs chars except
// \t \n \r; map whitespace to ' '), spaces around CJK ideographs, strip accents (NFD then drop Mn;
// defaults to `lowercase`), lowercase (per char).
// Unicode tables: we use `unicode-general-category` (Unicode 16) where HF uses the older
// `unicode_categories` crate, so chars that became Cf or Mn since are removed/stripped here and kept
// there. tests/test_bert_pipeline.py measures and pins the list of differing code points.

/// HF `is_control` plus NUL and U+FFFD: the chars `clean_text` removes. Measured on tokenizers 0.23.3:
/// Cc, Cf, Co and Cs go, but UNASSIGNED chars (Cn) stay (its category tables have no Cn entries).
pub fn is_bert_removed(c: char) -> bool {
    if matches!(c, '\t' | '\n' | '\r') {
        return false;
    }
    if c == '\0' || c == '\u{fffd}' {
        return true;
    }
    matches!(get_general_category(c), Gc::Control | Gc::Format | Gc::PrivateUse | Gc::Surrogate)
}

/// HF `is_whitespace`: \t \n \r or `char::is_whitespace`.
pub fn is_bert_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// HF `is_chinese_char` (note: its range starts at U+2B920, not Google's U+2B820).
pub fn is_chinese_char(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

impl Normalizer {
    /// BertNormalizer on any text, without alignment (training, ids-only encoding). ASCII runs take
    /// a byte loop; each maximal non-ASCII run goes through the char pipeline. Splitting there is
    /// exact: every step is per char except NFD's canonical reordering, which never moves a mark past
    /// a starter, and ASCII chars are starters.
    fn bert_str(&self, s: &str) -> String {
        let b = s.as_bytes();
        let n = b.len();
        let mut out = String::with_capacity(n + 8);
        let mut i = 0;
        while i < n {
            let j = i + b[i..].iter().position(|&x| x >= 0x80).unwrap_or(n - i);
            self.bert_ascii_into(&s[i..j], &mut out);
            if j == n {
                break;
            }
            let k = j + b[j..].iter().position(|&x| x < 0x80).unwrap_or(n - j);
            self.bert_chars_into(&s[j..k], &mut out);
            i = k;
        }
        out
    }

    /// The BertNormalizer steps on any text (used for the non-ASCII runs), appended to `out`.
    fn bert_chars_into(&self, s: &str, out: &mut String) {
        let Normalizer::Bert { clean_text, handle_chinese_chars, strip_accents, lowercase } = self else {
            out.push_str(s);
            return;
        };
        let strip = strip_accents.unwrap_or(*lowercase);
        // Fast path: no combining mark standing on its own and none of the four chars whose
        // decomposition starts with a non-starter (U+0344, U+0F73, U+0F75, U+0F81), so NFD needs no
        // reordering across chars and each char can be decomposed, filtered and lowercased as it comes.
        if !s.chars().any(|c| canonical_combining_class(c) != 0 || matches!(c, '\u{f73}' | '\u{f75}' | '\u{f81}')) {
            let push = |d: char, out: &mut String| {
                if strip && get_general_category(d) == Gc::NonspacingMark {
                    return;
                }
                // Han ideographs have no case: their lowercasing (a search of Unicode's case table per
                // char) was 8% of BERT on Chinese text.
                if *lowercase && !is_chinese_char(d) {
                    out.extend(d.to_lowercase());
                } else {
                    out.push(d);
                }
            };
            for c in s.chars() {
                if *clean_text {
                    if is_bert_removed(c) {
                        continue;
                    }
                    if is_bert_whitespace(c) {
                        out.push(' ');
                        continue;
                    }
                }
                let cjk = *handle_chinese_chars && is_chinese_char(c);
                if cjk {
                    out.push(' ');
                }
                if strip {
                    decompose_canonical(c, |d| push(d, out));
                } else {
                    push(c, out);
                }
                if cjk {
                    out.push(' ');
                }
            }
            return;
        }
        let mut cur = String::with_capacity(s.len() + 8);
        for c in s.chars() {
            if *clean_text {
                if is_bert_removed(c) {
                    continue;
                }
                if is_bert_whitespace(c) {
                    cur.push(' ');
                    continue;
                }
            }
            if *handle_chinese_chars && is_chinese_char(c) {
                cur.push(' ');
                cur.push(c);
                cur.push(' ');
            } else {
                cur.push(c);
            }
        }
        if strip && !cur.is_ascii() {
            cur = cur.nfd().filter(|&c| get_general_category(c) != Gc::NonspacingMark).collect();
        }
        if *lowercase {
            out.extend(cur.chars().flat_map(|c| c.to_lowercase()));
        } else {
            out.push_str(&cur);
        }
    }

    /// The BertNormalizer steps on ASCII text, appended to `out`.
    fn bert_ascii_into(&self, s: &str, out: &mut String) {
        let Normalizer::Bert { clean_text, lowercase, .. } = self else {
            out.push_str(s);
            return;
        };
        // Blocks of 16 printable bytes (no control char to drop, no whitespace but the space, which maps to
        // itself) are lowercased at once; the rest go byte by byte. English lines are nearly all such
        // blocks: the byte loop was 13% of BERT `encode_batch_ids_flat` on English lines (perf, 2026-12-06).
        let mut rest = s.as_bytes();
        while !rest.is_empty() {
            if let Some((block, tail)) = rest.split_first_chunk::<16>() {
                if let Some(done) = printable_block(u128::from_le_bytes(*block), *lowercase) {
                    out.push_str(std::str::from_utf8(&done.to_le_bytes()).unwrap_or_default());
                    rest = tail;
                    continue;
                }
            }
            let (head, tail) = rest.split_at(rest.len().min(16));
            bert_ascii_bytes_into(head, *clean_text, *lowercase, out);
            rest = tail;
        }
    }
}

/// [`Normalizer::bert_ascii_into`] byte by byte.
fn bert_ascii_bytes_into(bytes: &[u8], clean_text: bool, lowercase: bool, out: &mut String) {
    for &b in bytes {
        if clean_text && (b == 0 || (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || b == 0x7f) {
            continue;
        }
        let c = if clean_text && matches!(b, b'\t' | b'\n' | b'\r' | b' ') {
            ' '
        } else if lowercase {
            (b as char).to_ascii_lowercase()
        } else {
            b as char
        };
        out.push(c);
    }
}

/// 16 ASCII bytes (as a little-endian `u128`) lowercased when `lowercase`, if every one is printable
/// (0x20..=0x7E: kept as it is by BertNormalizer's cleaning); `None` if one is not, or is not ASCII.
/// SWAR: with every byte below 0x80, adding a constant to each byte cannot carry into the next one, and
/// the sum's top bit tells whether the byte reached a bound.
#[inline]
fn printable_block(v: u128, lowercase: bool) -> Option<u128> {
    const HIGH: u128 = 0x8080_8080_8080_8080_8080_8080_8080_8080;
    const ONES: u128 = 0x0101_0101_0101_0101_0101_0101_0101_0101;
    if v & HIGH != 0 {
        return None;
    }
    let at_least = |b: u8| (v + ONES * u128::from(0x80 - b)) & HIGH;
    // Printable: at least 0x20 and below 0x7F in every byte.
    if at_least(0x20) != HIGH || at_least(0x7f) != 0 {
        return None;
    }
    if !lowercase {
        return Some(v);
    }
    let upper = at_least(b'A') & !at_least(b'Z' + 1);
    Some(v | (upper >> 2))
}

/// HF `filter`: a kept char absorbs the removed chars that follow it (change -n); removed chars at
/// the very start move the initial cursor instead.
fn strip_marks(chars: &[char]) -> (Vec<Changed>, usize) {
    let mut out: Vec<Changed> = Vec::with_capacity(chars.len());
    let mut initial = 0;
    for &c in chars {
        if is_combining_mark(c) {
            match out.last_mut() {
                Some(last) => last.1 -= 1,
                None => initial += 1,
            }
        } else {
            out.push((c, 0));
        }
    }
    (out, initial)
}

#[cfg(test)]
mod bert_ascii_tests {
    use super::*;

    /// BertNormalizer pushes "Chinese" chars without lowercasing them: every code point of those ranges
    /// must be its own lowercase in std's Unicode tables.
    #[test]
    fn chinese_chars_have_no_case() {
        let han = (0..=0x10ffffu32).filter_map(char::from_u32).filter(|&c| is_chinese_char(c));
        let mut n = 0;
        for c in han {
            assert!(c.to_lowercase().eq([c]), "{c:?} has a lowercase form");
            n += 1;
        }
        assert!(n > 80_000, "{n}");
    }

    /// The block path against the byte loop alone, on random ASCII with every control char, upper and
    /// lower case, for each option pair, at lengths around the block size.
    #[test]
    fn blocks_equal_the_byte_loop() {
        let byte_loop = |s: &str, clean_text: bool, lowercase: bool| -> String {
            s.bytes()
                .filter(|&b| {
                    !(clean_text && (b == 0 || (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r')) || b == 0x7f))
                })
                .map(|b| {
                    if clean_text && matches!(b, b'\t' | b'\n' | b'\r' | b' ') {
                        ' '
                    } else if lowercase {
                        (b as char).to_ascii_lowercase()
                    } else {
                        b as char
                    }
                })
                .collect()
        };
        let mut x = 7u64;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let (mut fast, mut slow) = (0, 0);
        for round in 0..4000 {
            let len = next(70) as usize;
            // Mostly printable text with a control byte now and then, so both paths run.
            let s: String = (0..len)
                .map(|_| if next(40) == 0 { next(0x20) as u8 as char } else { (0x20 + next(0x60)) as u8 as char })
                .collect();
            let (clean_text, lowercase) = (round % 2 == 0, round / 2 % 2 == 0);
            let n = Normalizer::Bert { clean_text, handle_chinese_chars: true, strip_accents: None, lowercase };
            let mut out = String::new();
            n.bert_ascii_into(&s, &mut out);
            assert_eq!(out, byte_loop(&s, clean_text, lowercase), "{s:?} clean {clean_text} lower {lowercase}");
            for block in s.as_bytes().chunks_exact(16) {
                match printable_block(u128::from_le_bytes(block.try_into().unwrap()), lowercase) {
                    Some(_) => fast += 1,
                    None => slow += 1,
                }
            }
        }
        assert!(fast > 1000 && slow > 1000, "{fast} {slow}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aligned(n: &Normalizer, s: &str) -> (String, Vec<(usize, usize)>) {
        let (t, a) = n.normalize_with_alignment(s);
        // One range per output char, for readable assertions.
        let per_char = t.char_indices().map(|(i, _)| a[i]).collect();
        (t, per_char)
    }

    #[test]
    fn alignment_matches_hf_measurements() {
        // Expected values measured with tokenizers 0.23.3 (byte offsets here; HF reports chars).
        assert_eq!(aligned(&Normalizer::Nfc, "e\u{301}x"), ("\u{e9}x".into(), vec![(0, 1), (3, 4)]));
        assert_eq!(aligned(&Normalizer::Nfd, "\u{e9}x"), ("e\u{301}x".into(), vec![(0, 2), (0, 2), (2, 3)]));
        assert_eq!(aligned(&Normalizer::Nfkc, "\u{fb01}x"), ("fix".into(), vec![(0, 3), (0, 3), (3, 4)]));
        assert_eq!(
            aligned(&Normalizer::StripAccents, "e\u{301}x\u{301}\u{301}y"),
            ("exy".into(), vec![(0, 1), (3, 4), (8, 9)])
        );
        // Reordering keeps positions; composition drops the absorbed char's range (HF measured).
        assert_eq!(aligned(&Normalizer::Nfd, "e\u{301}\u{323}").1, vec![(0, 1), (1, 3), (3, 5)]);
        assert_eq!(aligned(&Normalizer::Nfc, "e\u{301}\u{323}").1, vec![(0, 1), (3, 5)]);
        assert_eq!(aligned(&Normalizer::StripAccents, "\u{301}ab").1, vec![(2, 3), (3, 4)]);
        assert_eq!(aligned(&Normalizer::Lowercase, "\u{130}A").0, "i\u{307}a");
        assert_eq!(aligned(&Normalizer::Lowercase, "\u{130}A").1, vec![(0, 2), (0, 2), (2, 3)]);
    }

    #[test]
    fn strip_accents_removes_all_marks() {
        assert_eq!(Normalizer::StripAccents.normalize_str("a\u{903}b\u{20dd}c\u{301}d"), "abcd");
    }

    #[test]
    fn aligned_text_equals_fast_path() {
        let samples = [
            "Hello Wörld",
            "e\u{301}\u{323}a\u{323}\u{301}",
            "\u{1100}\u{1161}\u{11a8}각",
            "ﬁ ﬂ ① ㎏ Å Ω",
            "ΣΑΣ İstanbul",
            "日本語テキスト ｶﾀｶﾅ",
            "q\u{307}\u{323}\u{31b}o\u{31b}\u{323}",
            "",
            "\u{0f73}\u{0f75}\u{0f81}",
            "a\u{0300}\u{0315}\u{0301}b",
            "\u{0}x\u{7}\t\u{200b}中文\u{fffd}\u{e000}Ö\u{85}\u{a0}y\r\n",
            "  two  spaces   three \u{3000} ",
            "   ",
        ];
        let norms = [
            Normalizer::Nfc,
            Normalizer::Nfd,
            Normalizer::Nfkc,
            Normalizer::Nfkd,
            Normalizer::Lowercase,
            Normalizer::StripAccents,
            Normalizer::Sequence(vec![Normalizer::Nfd, Normalizer::StripAccents, Normalizer::Lowercase]),
            Normalizer::Bert { clean_text: true, handle_chinese_chars: true, strip_accents: None, lowercase: true },
            Normalizer::Bert {
                clean_text: false,
                handle_chinese_chars: false,
                strip_accents: Some(true),
                lowercase: false,
            },
            Normalizer::Nmt,
            Normalizer::Strip { left: true, right: false },
            Normalizer::Strip { left: true, right: true },
            Normalizer::Prepend("\u{2581}".into()),
            Normalizer::from_json_str(r#"{"type":"Replace","pattern":{"Regex":" {2,}"},"content":"\u2581"}"#).unwrap(),
            Normalizer::from_json_str(r#"{"type":"Replace","pattern":{"String":" "},"content":"\u2581"}"#).unwrap(),
        ];
        // Plus a deterministic pseudo-random sweep over Latin/Greek/Hangul/combining ranges.
        let mut extra = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..300 {
            let mut s = String::new();
            for _ in 0..12 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let pools: [(u32, u32); 6] =
                    [(0x41, 0x7a), (0xc0, 0x17f), (0x300, 0x36f), (0x1100, 0x11ff), (0xac00, 0xac40), (0x1e00, 0x1eff)];
                let (lo, hi) = pools[(x % 6) as usize];
                if let Some(c) = char::from_u32(lo + ((x >> 8) as u32) % (hi - lo + 1)) {
                    s.push(c);
                }
            }
            extra.push(s);
        }
        for n in &norms {
            for s in samples.iter().map(|s| s.to_string()).chain(extra.iter().cloned()) {
                let (t, a) = n.normalize_with_alignment(&s);
                assert_eq!(t, n.normalize_str(&s), "{n:?} on {s:?}");
                assert_eq!(a.len(), t.len());
                for &(lo, hi) in &a {
                    assert!(lo < hi && hi <= s.len() && s.is_char_boundary(lo) && s.is_char_boundary(hi));
                }
            }
        }
    }

    #[test]
    fn json_round_trip_and_errors() {
        let n =
            Normalizer::from_json_str(r#"{"type":"Sequence","normalizers":[{"type":"NFKC"},{"type":"Lowercase"}]}"#)
                .unwrap();
        assert_eq!(n, Normalizer::Sequence(vec![Normalizer::Nfkc, Normalizer::Lowercase]));
        assert_eq!(Normalizer::from_json(&n.to_json()).unwrap(), n);
        let e = Normalizer::from_json_str(r#"{"type":"Cyrillic"}"#).unwrap_err();
        assert!(e.contains("Cyrillic"), "{e}");
        let e =
            Normalizer::from_json_str(r#"{"type":"Replace","pattern":{"Regex":"[b-a]"},"content":""}"#).unwrap_err();
        assert!(e.contains("[b-a]"), "{e}");
    }
}
