//! HF `Split`: cut the text at the matches of a pattern (`{"String": ...}` or `{"Regex": ...}`, run as
//! the `Replace` normalizer runs them, see `normalize/sentencepiece.rs`), then group matches and the text
//! between them by `behavior`, optionally with matches and non-matches swapped (`invert`).
//!
//! HF's rules (tokenizers 0.23.3): the text is a list of segments, the text between matches and the
//! matches themselves (an empty match is a segment of its own); `Removed` drops the matches, `Isolated` keeps every
//! segment, `MergedWithPrevious` / `MergedWithNext` append / prepend a match to the segment before /
//! after it (a match following a match stays alone), `Contiguous` joins runs of segments of one kind.
//! Empty pieces are dropped.
//!
//! A regex is read by HF's engine (Oniguruma) unless the component says `"engine": "fancy-regex"`
//! (our extension, for the patterns of tiktoken files, which tiktoken runs with fancy-regex; see
//! `pretok/engine.rs`). tiktoken keeps only the matches, which is `Removed` with `invert`.

use serde_json::{json, Value};

use crate::normalize::ReplacePattern;
use crate::pretok::engine::Engine;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitBehavior {
    Removed,
    Isolated,
    MergedWithPrevious,
    MergedWithNext,
    Contiguous,
}

impl SplitBehavior {
    const ALL: [(SplitBehavior, &'static str); 5] = [
        (SplitBehavior::Removed, "Removed"),
        (SplitBehavior::Isolated, "Isolated"),
        (SplitBehavior::MergedWithPrevious, "MergedWithPrevious"),
        (SplitBehavior::MergedWithNext, "MergedWithNext"),
        (SplitBehavior::Contiguous, "Contiguous"),
    ];

    fn name(self) -> &'static str {
        Self::ALL.iter().find(|(b, _)| *b == self).map_or("?", |(_, n)| n)
    }
}

/// HF `Split`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    pub pattern: ReplacePattern,
    pub behavior: SplitBehavior,
    pub invert: bool,
}

impl Split {
    pub fn from_json(v: &Value) -> Result<Self, String> {
        let engine = match v.get("engine") {
            None | Some(Value::Null) => Engine::Oniguruma,
            Some(Value::String(name)) => Engine::parse(name).map_err(|e| format!("pre_tokenizer Split: 'engine': {e}"))?,
            Some(other) => return Err(format!("pre_tokenizer Split: 'engine' must be a string, got {other}")),
        };
        let pattern = ReplacePattern::parse(v.get("pattern").unwrap_or(&Value::Null), "pre_tokenizer Split", engine)?;
        let name =
            v.get("behavior").and_then(|b| b.as_str()).ok_or("pre_tokenizer Split: missing string 'behavior'")?;
        let behavior = SplitBehavior::ALL
            .iter()
            .find(|(_, n)| n.eq_ignore_ascii_case(name))
            .map(|(b, _)| *b)
            .ok_or_else(|| format!("pre_tokenizer Split: unknown behavior {name:?}"))?;
        let invert = match v.get("invert") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => return Err(format!("pre_tokenizer Split: 'invert' must be a boolean, got {other}")),
        };
        Ok(Split { pattern, behavior, invert })
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({"type": "Split", "pattern": self.pattern.to_json(), "behavior": self.behavior.name(), "invert": self.invert});
        if self.pattern.engine() != Engine::Oniguruma {
            v["engine"] = json!(self.pattern.engine().name());
        }
        v
    }

    /// Calls `f(start, end)` (byte offsets) for every piece of `text`.
    pub fn split(&self, text: &str, f: impl FnMut(usize, usize)) {
        // The known patterns' matches tile the text, so the Isolated pieces are the matches, and so
        // are the pieces of `Removed` with `invert` (tiktoken's: the matches only).
        if let ReplacePattern::Known { scanner, .. } = &self.pattern {
            if matches!((self.behavior, self.invert), (SplitBehavior::Isolated, false) | (SplitBehavior::Removed, true)) {
                return scanner.split(text, f);
            }
        }
        // (start, end, is_match) segments covering the text.
        let mut segments: Vec<(usize, usize, bool)> = Vec::new();
        let mut prev = 0;
        for (a, b) in self.pattern.find(text) {
            if a != prev {
                segments.push((prev, a, self.invert));
            }
            segments.push((a, b, !self.invert));
            prev = b;
        }
        if prev != text.len() {
            segments.push((prev, text.len(), self.invert));
        }
        emit_pieces(&segments, self.behavior, f);
    }
}

/// HF `NormalizedString::split`: the pieces of `(start, end, is_match)` segments covering a text, grouped
/// by `behavior` (empty pieces dropped), to `f(start, end)`.
pub fn emit_pieces(segments: &[(usize, usize, bool)], behavior: SplitBehavior, mut f: impl FnMut(usize, usize)) {
    let pieces: Vec<(usize, usize)> = match behavior {
        SplitBehavior::Removed => segments.iter().filter(|s| !s.2).map(|s| (s.0, s.1)).collect(),
        SplitBehavior::Isolated => segments.iter().map(|s| (s.0, s.1)).collect(),
        SplitBehavior::MergedWithPrevious => {
            let mut out: Vec<(usize, usize)> = Vec::new();
            let mut previous_match = false;
            for &(a, b, m) in segments {
                match out.last_mut() {
                    Some(last) if m && !previous_match => last.1 = b,
                    _ => out.push((a, b)),
                }
                previous_match = m;
            }
            out
        }
        SplitBehavior::MergedWithNext => {
            let mut out: Vec<(usize, usize)> = Vec::new();
            let mut previous_match = false;
            for &(a, b, m) in segments.iter().rev() {
                match out.last_mut() {
                    Some(last) if m && !previous_match => last.0 = a,
                    _ => out.push((a, b)),
                }
                previous_match = m;
            }
            out.reverse();
            out
        }
        SplitBehavior::Contiguous => {
            let mut out: Vec<(usize, usize)> = Vec::new();
            let mut previous_match = false;
            for &(a, b, m) in segments {
                match out.last_mut() {
                    Some(last) if m == previous_match => last.1 = b,
                    _ => out.push((a, b)),
                }
                previous_match = m;
            }
            out
        }
    };
    for (a, b) in pieces {
        if a < b {
            f(a, b);
        }
    }
}

impl SplitBehavior {
    /// Parses HF's behavior name (the file's spelling; its Python API's lower case too).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(_, n)| n.eq_ignore_ascii_case(name)).map(|(b, _)| *b)
    }

    /// HF's name of the behavior.
    pub fn as_str(self) -> &'static str {
        self.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(spec: Value, text: &str) -> Vec<&str> {
        let s = Split::from_json(&spec).unwrap();
        let mut out = Vec::new();
        s.split(text, |a, b| out.push(&text[a..b]));
        out
    }

    #[test]
    fn behaviors_as_hf_documents_them() {
        let text = "the-final--countdown";
        let spec = |b: &str| json!({"type": "Split", "pattern": {"String": "-"}, "behavior": b, "invert": false});
        assert_eq!(pieces(spec("Removed"), text), vec!["the", "final", "countdown"]);
        assert_eq!(pieces(spec("Isolated"), text), vec!["the", "-", "final", "-", "-", "countdown"]);
        assert_eq!(pieces(spec("MergedWithPrevious"), text), vec!["the-", "final-", "-", "countdown"]);
        assert_eq!(pieces(spec("MergedWithNext"), text), vec!["the", "-final", "-", "-countdown"]);
        assert_eq!(pieces(spec("Contiguous"), text), vec!["the", "-", "final", "--", "countdown"]);
        let inv = json!({"type": "Split", "pattern": {"Regex": "\\w+"}, "behavior": "Removed", "invert": true});
        assert_eq!(pieces(inv, "ab, cd"), vec!["ab", "cd"]);
        assert!(pieces(spec("Isolated"), "").is_empty());
        assert!(Split::from_json(&json!({"pattern": {"Regex": "(?=a"}, "behavior": "Removed"})).is_err());
        // Look-ahead runs (Oniguruma), and a tiktoken pattern reads possessive intervals as fancy-regex does.
        let la = json!({"type": "Split", "pattern": {"Regex": "\\s+(?!\\S)|\\s+|\\S+"}, "behavior": "Isolated", "invert": false});
        assert_eq!(pieces(la, "a   b"), vec!["a", "  ", " ", "b"]);
        let tk = json!({"type": "Split", "pattern": {"Regex": "\\d{1,3}+"}, "behavior": "Removed", "invert": true,
                        "engine": "fancy-regex"});
        assert_eq!(pieces(tk.clone(), "12345 6"), vec!["123", "45", "6"]);
        assert_eq!(Split::from_json(&tk).unwrap().to_json(), tk);
    }
}
