//! The general regex engine of `Split` pre-tokenizers and `Replace` normalizers / decoders: each file
//! kind's patterns run on its own library's engine, so any pattern gives its own library's matches.
//!
//! - [`Engine::Oniguruma`]: HF `tokenizers` compiles every `Split` / `Replace` regex with Oniguruma
//!   (the `onig` crate, Ruby syntax, no options) and walks the matches with the crate's `find_iter`.
//!   `tokenizer.json` patterns run here, through the same crate, built from its bundled C source.
//! - [`Engine::FancyRegex`]: tiktoken compiles its split pattern with `fancy-regex` (a backtracking
//!   layer over the `regex` crate) and walks `find_iter`. Patterns of tiktoken files run here.
//!
//! The two read some strings differently (`X{n,m}+` is possessive in fancy-regex and a repeated
//! interval in Oniguruma's Ruby syntax; `$` is a line anchor in one, a text anchor in the other; `\w`,
//! case folding; see `docs/pretokenizers.md`), which is why the engine is part of the pattern.
//!
//! The hand-written scanners of `pretok/modern.rs` and `pretok.rs` stay the fast path for the
//! patterns they cover: [`known_scanner`] says which scanner gives a pattern's matches under an
//! engine's reading, and the tests run both on the same text.
//!
//! Match iteration is each library's own (the crates' `find_iter`): after an empty match the next
//! search starts one char later, and an empty match where the previous match ended is skipped.
//!
//! Errors at match time (Oniguruma's retry limit, fancy-regex's backtrack limit, reached only by
//! pathological patterns on long texts) make HF and tiktoken panic; here the search stops and the rest
//! of the text counts as unmatched. Both limits are the libraries' defaults.

use std::sync::Arc;

use crate::pretok::modern::{self, Modern};

/// Which library's regex engine (and syntax) a pattern is read with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Engine {
    /// HF `tokenizers`: Oniguruma, Ruby syntax.
    Oniguruma,
    /// tiktoken: fancy-regex over the `regex` crate.
    FancyRegex,
}

impl Engine {
    /// The name in a component's JSON (`"engine"` of a `Split`; absent means Oniguruma).
    pub fn name(self) -> &'static str {
        match self {
            Engine::Oniguruma => "oniguruma",
            Engine::FancyRegex => "fancy-regex",
        }
    }

    /// Parses an engine name.
    pub fn parse(name: &str) -> Result<Self, String> {
        match name {
            "oniguruma" => Ok(Engine::Oniguruma),
            "fancy-regex" => Ok(Engine::FancyRegex),
            other => Err(format!("unknown regex engine {other:?} (known: \"oniguruma\", \"fancy-regex\")")),
        }
    }
}

enum Compiled {
    Onig(onig::Regex),
    Fancy(fancy_regex::Regex),
}

/// A compiled pattern of either engine (cheap to clone: the compiled program is shared).
#[derive(Clone)]
pub struct GeneralRegex {
    source: String,
    engine: Engine,
    compiled: Arc<Compiled>,
}

impl std::fmt::Debug for GeneralRegex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GeneralRegex({:?}, {})", self.source, self.engine.name())
    }
}

impl PartialEq for GeneralRegex {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source && self.engine == other.engine
    }
}

impl Eq for GeneralRegex {}

impl GeneralRegex {
    /// Compiles `source` as the engine's library does; its own error message when it refuses it.
    pub fn new(source: &str, engine: Engine) -> Result<Self, String> {
        let compiled = match engine {
            Engine::Oniguruma => Compiled::Onig(onig::Regex::new(source).map_err(|e| e.description().to_string())?),
            Engine::FancyRegex => Compiled::Fancy(fancy_regex::Regex::new(source).map_err(|e| e.to_string())?),
        };
        Ok(GeneralRegex { source: source.to_string(), engine, compiled: Arc::new(compiled) })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// Calls `f(start, end)` for every match in `text`, left to right, as the library's `find_iter`
    /// gives them (byte offsets).
    pub fn for_each_match(&self, text: &str, mut f: impl FnMut(usize, usize)) {
        match &*self.compiled {
            Compiled::Onig(re) => onig_matches(re, text, &mut f),
            Compiled::Fancy(re) => {
                for m in re.find_iter(text) {
                    match m {
                        Ok(m) => f(m.start(), m.end()),
                        Err(_) => break,
                    }
                }
            }
        }
    }

    /// The matches as a list.
    pub fn find(&self, text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        self.for_each_match(text, |a, b| out.push((a, b)));
        out
    }
}

/// The `onig` crate's `find_iter`, with the search error returned instead of a panic: one region
/// reused, the next search from the end of the match, an empty match at the end of the previous match
/// skipped by moving one char on.
fn onig_matches(re: &onig::Regex, text: &str, f: &mut impl FnMut(usize, usize)) {
    let mut region = onig::Region::new();
    let mut from = 0usize;
    let mut last_match_end: Option<usize> = None;
    while from <= text.len() {
        region.clear();
        let found = re.search_with_param(
            text,
            from,
            text.len(),
            onig::SearchOptions::SEARCH_OPTION_NONE,
            Some(&mut region),
            onig::MatchParam::default(),
        );
        let Ok(Some(_)) = found else { return };
        let Some((s, e)) = region.pos(0) else { return };
        if s == e && last_match_end == Some(e) {
            from += text[from..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        from = e;
        last_match_end = Some(e);
        f(s, e);
    }
}

/// The hand-written scanner that gives exactly the matches of `pattern` read by `engine`, if any.
///
/// The table of `pretok/modern.rs` holds the strings as Oniguruma reads them. fancy-regex reads them
/// the same except cl100k as tiktoken publishes it, whose `\p{N}{1,3}+` is possessive there: digit
/// runs are cut every 3 digits (the scanner of the 3-digit spelling).
pub fn known_scanner(pattern: &str, engine: Engine) -> Option<Modern> {
    let scanner = modern::recognise(pattern)?;
    match (engine, scanner) {
        (Engine::FancyRegex, Modern::Cl100k { max_digits: 0, ws_to_end_first }) => {
            Some(Modern::Cl100k { max_digits: 3, ws_to_end_first })
        }
        (_, other) => Some(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(re: &GeneralRegex, s: &str) -> Vec<String> {
        re.find(s).into_iter().map(|(a, b)| s[a..b].to_string()).collect()
    }

    #[test]
    fn engines_read_possessive_intervals_differently() {
        let onig = GeneralRegex::new(r"\p{N}{1,3}+", Engine::Oniguruma).unwrap();
        let fancy = GeneralRegex::new(r"\p{N}{1,3}+", Engine::FancyRegex).unwrap();
        assert_eq!(pieces(&onig, "12345"), vec!["12345"]);
        assert_eq!(pieces(&fancy, "12345"), vec!["123", "45"]);
    }

    #[test]
    fn empty_matches_follow_the_libraries() {
        for engine in [Engine::Oniguruma, Engine::FancyRegex] {
            let re = GeneralRegex::new("a*", engine).unwrap();
            assert_eq!(re.find("baaac"), vec![(0, 0), (1, 4), (5, 5)], "{engine:?}");
            assert_eq!(re.find("é"), vec![(0, 0), (2, 2)], "{engine:?}");
        }
    }

    #[test]
    fn look_around_and_classes() {
        let re = GeneralRegex::new(r"\s+(?!\S)|\s+|\S+", Engine::Oniguruma).unwrap();
        assert_eq!(pieces(&re, "a   b"), vec!["a", "  ", " ", "b"]);
        let han = GeneralRegex::new(r"[\p{Han}]+|[\p{L}&&[^\p{Han}]]+", Engine::FancyRegex).unwrap();
        assert_eq!(pieces(&han, "ab中文cd"), vec!["ab", "中文", "cd"]);
        let ci = GeneralRegex::new(r"(?i:ab)", Engine::Oniguruma).unwrap();
        assert_eq!(pieces(&ci, "xAbaB"), vec!["Ab", "aB"]);
    }

    #[test]
    fn each_library_refuses_what_it_refuses() {
        assert!(GeneralRegex::new("(", Engine::Oniguruma).is_err());
        assert!(GeneralRegex::new("(", Engine::FancyRegex).is_err());
        assert!(GeneralRegex::new("[b-a]", Engine::Oniguruma).is_err());
        assert!(GeneralRegex::new(r"\p{Foo}", Engine::FancyRegex).is_err());
        // Oniguruma has no `(?P<name>...)` group; the regex crate under fancy-regex has.
        assert!(GeneralRegex::new("(?P<x>a)", Engine::Oniguruma).is_err());
        assert!(GeneralRegex::new("(?P<x>a)", Engine::FancyRegex).is_ok());
    }

    #[test]
    fn cl100k_as_tiktoken_publishes_it_is_three_digits_under_fancy_regex() {
        let (cl100k, _) = modern::KNOWN[0];
        assert_eq!(known_scanner(cl100k, Engine::Oniguruma), Some(Modern::Cl100k { max_digits: 0, ws_to_end_first: true }));
        assert_eq!(known_scanner(cl100k, Engine::FancyRegex), Some(Modern::Cl100k { max_digits: 3, ws_to_end_first: true }));
    }
}
