//! Any `Sequence` of pre-tokenizers, with HF's semantics: each member splits (and may rewrite) every piece
//! the previous one gave, as HF's `PreTokenizedString` does. A piece carries, for every byte of its text,
//! the byte range of the input it comes from, so members that rewrite their pieces (`ByteLevel` maps bytes
//! to chars and may prepend a space, `Metaspace` maps spaces and may prepend `▁`) compose with the members
//! that cut: Falcon's `[Punctuation, ByteLevel, Digits, Split]`, or `[Metaspace, WhitespaceSplit]`.
//!
//! HF's rules for the rewriting members, per piece: `ByteLevel` prepends a space to a piece that does not
//! start with one (`add_prefix_space`), aligned with the piece's first char, splits with GPT-2's pattern
//! (`use_regex`), then maps bytes; `Metaspace` replaces spaces, prepends `▁` (`always`, or `first` when the
//! piece starts at original offset 0) and splits before each `▁`. Empty pieces are dropped.
//!
//! The sequences whose members before the last only cut (the common files) keep their faster paths in
//! `pretok.rs` and `tokenizer.rs`; this is the general one.

use crate::pretok::{bytes_to_unicode, split_gpt2, PreTokenizer};

/// A piece of pre-tokenized text: its text and, per byte, the input byte range it comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AlignedPiece {
    pub text: String,
    pub align: Vec<(usize, usize)>,
}

impl AlignedPiece {
    /// The whole `text`, each byte aligned with its char.
    pub fn whole(text: &str) -> Self {
        let mut align = Vec::with_capacity(text.len());
        for (i, c) in text.char_indices() {
            align.extend(std::iter::repeat_n((i, i + c.len_utf8()), c.len_utf8()));
        }
        AlignedPiece { text: text.to_string(), align }
    }

    fn slice(&self, a: usize, b: usize) -> Self {
        AlignedPiece { text: self.text[a..b].to_string(), align: self.align[a..b].to_vec() }
    }

    /// The input range of the bytes `a..b` of the piece (an empty range sits where byte `a` starts).
    pub fn span(&self, a: usize, b: usize) -> (usize, usize) {
        match (self.align.get(a), b.checked_sub(1).and_then(|e| self.align.get(e))) {
            (Some(&(s, _)), Some(&(_, e))) if b > a => (s, e.max(s)),
            (Some(&(s, _)), _) => (s, s),
            (None, _) => self.align.last().map_or((0, 0), |&(_, e)| (e, e)),
        }
    }
}

/// The pieces of `text` after `items` in turn. `starts_input(offset)`: whether a piece starting at input
/// byte `offset` starts the original input (Metaspace `first`).
pub fn pre_tokenize(items: &[PreTokenizer], text: &str, starts_input: &dyn Fn(usize) -> bool) -> Vec<AlignedPiece> {
    let mut pieces = vec![AlignedPiece::whole(text)];
    for p in items {
        let mut next = Vec::with_capacity(pieces.len());
        for piece in &pieces {
            apply(p, piece, starts_input, &mut next);
        }
        pieces = next;
    }
    pieces.retain(|p| !p.text.is_empty());
    pieces
}

fn apply(p: &PreTokenizer, piece: &AlignedPiece, starts_input: &dyn Fn(usize) -> bool, out: &mut Vec<AlignedPiece>) {
    if piece.text.is_empty() {
        return;
    }
    match p {
        PreTokenizer::ByteLevel { add_prefix_space, use_regex, .. } => {
            let mut work = piece.clone();
            if *add_prefix_space && !work.text.starts_with(' ') {
                let first = work.align[0];
                work.text.insert(0, ' ');
                work.align.insert(0, first);
            }
            let table = bytes_to_unicode();
            let mut map = |a: usize, b: usize| {
                let mut m = AlignedPiece::default();
                for (k, &byte) in work.text.as_bytes()[a..b].iter().enumerate() {
                    let c = table[byte as usize];
                    m.text.push(c);
                    m.align.extend(std::iter::repeat_n(work.align[a + k], c.len_utf8()));
                }
                out.push(m);
            };
            if *use_regex {
                split_gpt2(&work.text, &mut map);
            } else {
                map(0, work.text.len());
            }
        }
        PreTokenizer::Metaspace(m) => {
            let mut mapped = crate::pretok::metaspace::Mapped::default();
            m.map_into(&piece.text, starts_input(piece.align[0].0), &mut mapped);
            let composed = AlignedPiece {
                align: mapped.align.iter().map(|&(a, b)| piece.span(a, b)).collect(),
                text: std::mem::take(&mut mapped.text),
            };
            m.split(&composed.text, |a, b| out.push(composed.slice(a, b)));
        }
        PreTokenizer::Sequence(v) | PreTokenizer::General(v) => {
            let mut pieces = vec![piece.clone()];
            for q in v {
                let mut next = Vec::new();
                for pc in &pieces {
                    apply(q, pc, starts_input, &mut next);
                }
                pieces = next;
            }
            out.extend(pieces);
        }
        // The others cut their input into slices.
        other => other.for_each_raw_piece_with_offsets(&piece.text, |_, (s, e)| out.push(piece.slice(s, e))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> PreTokenizer {
        PreTokenizer::from_json_str(s).unwrap()
    }

    #[test]
    fn byte_level_between_cuts_and_metaspace_first() {
        // Falcon's pre-tokenizer: punctuation runs, byte-level (no prefix), digit runs, then 3-digit groups.
        let falcon = spec(
            r#"{"type":"Sequence","pretokenizers":[{"type":"Punctuation","behavior":"Contiguous"},
            {"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},
            {"type":"Digits","individual_digits":false},
            {"type":"Split","pattern":{"Regex":"[0-9][0-9][0-9]"},"behavior":"Isolated","invert":false}]}"#,
        );
        let PreTokenizer::General(items) = falcon else { panic!("a general sequence") };
        let text = "Hi, é 12345!";
        let got: Vec<(String, (usize, usize))> =
            pre_tokenize(&items, text, &|o| o == 0).into_iter().map(|p| (p.text.clone(), p.span(0, p.text.len()))).collect();
        let want = [("Hi", (0, 2)), (",", (2, 3)), ("ĠÃ©", (3, 6)), ("Ġ", (6, 7)), ("123", (7, 10)), ("45", (10, 12)), ("!", (12, 13))];
        assert_eq!(got, want.iter().map(|(t, o)| (t.to_string(), *o)).collect::<Vec<_>>());
        let meta = spec(
            r#"{"type":"Sequence","pretokenizers":[{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true},
            {"type":"Digits","individual_digits":true}]}"#,
        );
        let PreTokenizer::General(items) = meta else { panic!("a general sequence") };
        let got: Vec<String> = pre_tokenize(&items, "a 12", &|o| o == 0).into_iter().map(|p| p.text).collect();
        assert_eq!(got, ["▁a", "▁", "1", "2"]);
    }
}
