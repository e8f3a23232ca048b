//! The HF pre-tokenizers that cut the text into slices by a char rule (tokenizers 0.23.3 semantics):
//! `Digits`, `Punctuation`, `CharDelimiterSplit`, `FixedLength` and `UnicodeScripts`.
//!
//! HF runs a char rule as a pattern whose every matching char is a match of its own; the matches and
//! the text between them then become pieces by the split behavior (`pretok/split.rs::emit_pieces`):
//! - `Digits`: numeric chars (`char::is_numeric`: general category N*), each `Isolated` with
//!   `individual_digits`, else runs of them and runs of the rest (`Contiguous`);
//! - `Punctuation`: ASCII punctuation or general category P*, with its `behavior` (default `Isolated`);
//! - `CharDelimiterSplit`: the delimiter char, `Removed`;
//! - `FixedLength`: pieces of `length` chars (the last may be shorter; `length` 0 gives none);
//! - `UnicodeScripts`: a cut where the script changes. A space belongs to any script (it never cuts
//!   and is skipped when comparing), Hiragana, Katakana and U+30FC count as Han, and text before the
//!   first char of a script is dropped (HF's cuts start at that char). Scripts come from
//!   `spm/scripts_table.rs` (the `regex` package's Unicode tables); HF's table is Unicode 9.0, where a
//!   char it does not list (unassigned then) belongs to any script: we give that to unassigned chars
//!   (general category Cn) only, so chars assigned since Unicode 9.0 can cut differently.

use serde_json::{json, Value};
use unicode_general_category::{get_general_category, GeneralCategory as Gc};

use crate::pretok::split::{emit_pieces, SplitBehavior};
use crate::spm::scripts_table::{HAN, HIRAGANA, KATAKANA, SCRIPT_RANGES};

/// One of the char-rule pre-tokenizers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slicer {
    Digits { individual_digits: bool },
    Punctuation { behavior: SplitBehavior },
    CharDelimiterSplit { delimiter: char },
    FixedLength { length: usize },
    UnicodeScripts,
}

/// HF's punctuation: ASCII punctuation or general category P*.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || crate::pretok::is_bert_punctuation(c)
}

/// The script of `c` for `UnicodeScripts`: `None` is HF's `Any`.
fn fixed_script(c: char) -> Option<u8> {
    if c == ' ' {
        return None;
    }
    if c == '\u{30FC}' {
        return Some(HAN);
    }
    let cp = c as u32;
    let idx = SCRIPT_RANGES.partition_point(|&(_, end, _)| end < cp);
    let script = match SCRIPT_RANGES.get(idx) {
        Some(&(start, _, s)) if start <= cp => s,
        _ if get_general_category(c) == Gc::Unassigned => return None,
        _ => crate::spm::scripts_table::COMMON,
    };
    Some(if script == HIRAGANA || script == KATAKANA { HAN } else { script })
}

fn flag(v: &Value, owner: &str, key: &str, default: bool) -> Result<bool, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(other) => Err(format!("pre_tokenizer {owner}: '{key}' must be a boolean, got {other}")),
    }
}

impl Slicer {
    /// Parses the component of type `ty` (one of the five), with HF's defaults for absent fields.
    pub fn from_json(ty: &str, v: &Value) -> Result<Option<Self>, String> {
        Ok(Some(match ty {
            "Digits" => Slicer::Digits { individual_digits: flag(v, ty, "individual_digits", false)? },
            "Punctuation" => Slicer::Punctuation {
                behavior: match v.get("behavior") {
                    None | Some(Value::Null) => SplitBehavior::Isolated,
                    Some(Value::String(name)) => SplitBehavior::parse(name)
                        .ok_or_else(|| format!("pre_tokenizer Punctuation: unknown behavior {name:?}"))?,
                    Some(other) => return Err(format!("pre_tokenizer Punctuation: 'behavior' must be a string, got {other}")),
                },
            },
            "CharDelimiterSplit" => {
                let d = v.get("delimiter").and_then(Value::as_str).ok_or("pre_tokenizer CharDelimiterSplit: missing string 'delimiter'")?;
                let mut chars = d.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => Slicer::CharDelimiterSplit { delimiter: c },
                    _ => return Err(format!("pre_tokenizer CharDelimiterSplit: 'delimiter' must be one char, got {d:?}")),
                }
            }
            "FixedLength" => Slicer::FixedLength {
                length: match v.get("length") {
                    None | Some(Value::Null) => 5,
                    Some(x) => x
                        .as_u64()
                        .and_then(|n| usize::try_from(n).ok())
                        .ok_or_else(|| format!("pre_tokenizer FixedLength: 'length' must be a non-negative integer, got {x}"))?,
                },
            },
            "UnicodeScripts" => Slicer::UnicodeScripts,
            _ => return Ok(None),
        }))
    }

    pub fn to_json(&self) -> Value {
        match self {
            Slicer::Digits { individual_digits } => json!({"type": "Digits", "individual_digits": individual_digits}),
            Slicer::Punctuation { behavior } => json!({"type": "Punctuation", "behavior": behavior.as_str()}),
            Slicer::CharDelimiterSplit { delimiter } => json!({"type": "CharDelimiterSplit", "delimiter": delimiter.to_string()}),
            Slicer::FixedLength { length } => json!({"type": "FixedLength", "length": length}),
            Slicer::UnicodeScripts => json!({"type": "UnicodeScripts"}),
        }
    }

    /// Calls `f(start, end)` (byte offsets) for every piece of `text`.
    pub fn split(&self, text: &str, mut f: impl FnMut(usize, usize)) {
        match self {
            Slicer::Digits { individual_digits } => {
                let behavior = if *individual_digits { SplitBehavior::Isolated } else { SplitBehavior::Contiguous };
                by_char_rule(text, char::is_numeric, behavior, f)
            }
            Slicer::Punctuation { behavior } => by_char_rule(text, is_punctuation, *behavior, f),
            Slicer::CharDelimiterSplit { delimiter } => by_char_rule(text, |c| c == *delimiter, SplitBehavior::Removed, f),
            Slicer::FixedLength { length } => {
                if *length == 0 {
                    return;
                }
                let mut start = 0;
                let mut count = 0;
                for (i, c) in text.char_indices() {
                    count += 1;
                    if count == *length {
                        f(start, i + c.len_utf8());
                        start = i + c.len_utf8();
                        count = 0;
                    }
                }
                if start < text.len() {
                    f(start, text.len());
                }
            }
            Slicer::UnicodeScripts => {
                let mut cuts: Vec<usize> = Vec::new();
                let mut last: Option<Option<u8>> = None; // None: no scripted char yet
                for (i, c) in text.char_indices() {
                    let script = fixed_script(c);
                    if script.is_some() {
                        if last != Some(script) {
                            cuts.push(i);
                        }
                        last = Some(script);
                    }
                }
                cuts.push(text.len());
                for w in cuts.windows(2) {
                    if w[0] < w[1] {
                        f(w[0], w[1]);
                    }
                }
            }
        }
    }
}

/// Every char for which `rule` holds is a match of its own; pieces by `behavior`.
fn by_char_rule(text: &str, rule: impl Fn(char) -> bool, behavior: SplitBehavior, f: impl FnMut(usize, usize)) {
    let mut segments = Vec::new();
    let mut last = 0;
    for (i, c) in text.char_indices() {
        if rule(c) {
            if last < i {
                segments.push((last, i, false));
            }
            segments.push((i, i + c.len_utf8(), true));
            last = i + c.len_utf8();
        }
    }
    if last < text.len() {
        segments.push((last, text.len(), false));
    }
    emit_pieces(&segments, behavior, f);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(s: &Slicer, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        s.split(text, |a, b| out.push(text[a..b].to_string()));
        out
    }

    #[test]
    fn hf_documented_cases() {
        let d = Slicer::Digits { individual_digits: true };
        assert_eq!(pieces(&d, "Call 123 please"), ["Call ", "1", "2", "3", " please"]);
        let d = Slicer::Digits { individual_digits: false };
        assert_eq!(pieces(&d, "Call 123 please"), ["Call ", "123", " please"]);
        let p = Slicer::Punctuation { behavior: SplitBehavior::Isolated };
        assert_eq!(pieces(&p, "Hey friend!     How are you?!?"), ["Hey friend", "!", "     How are you", "?", "!", "?"]);
        let c = Slicer::CharDelimiterSplit { delimiter: 'x' };
        assert_eq!(pieces(&c, "axbxxc"), ["a", "b", "c"]);
        let l = Slicer::FixedLength { length: 2 };
        assert_eq!(pieces(&l, "abcdé"), ["ab", "cd", "é"]);
        let u = Slicer::UnicodeScripts;
        assert_eq!(pieces(&u, "どこで生れ。Yes"), ["どこで生れ", "。", "Yes"]);
        assert_eq!(pieces(&u, "  Hello world"), ["Hello world"]);
    }
}
