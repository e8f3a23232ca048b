//! id -> token string of a BPE model, every string in one buffer.
//!
//! Why not `Vec<Option<String>>`: that is one heap allocation per token (200k for o200k), 24 bytes of
//! header each plus the allocator's rounding, scattered over the heap. Reading every token (the token
//! index of `bpe::encode`, built once a model's caches have missed enough words) then chased 200k
//! pointers: decoding o200k's tokens took 10-18 ms of the index's 32-46 ms build inside Python
//! (2026-12-06). Here the strings lie back to back in id order, so that walk is a sequential read, a
//! model loads without 200k allocations, and the table takes ~8 bytes per id besides the text.
//!
//! ```
//! use subword_core::bpe::token_strings::TokenStrings;
//! let strings = TokenStrings::from_vocab([("b", 2u32), ("a", 0)].into_iter(), 3);
//! assert_eq!(strings.get(0), Some("a"));
//! assert_eq!(strings.get(1), None);
//! assert_eq!(strings.iter().collect::<Vec<_>>(), vec![(0, "a"), (2, "b")]);
//! ```

/// See the module docs.
#[derive(Clone, Debug, Default)]
pub struct TokenStrings {
    text: String,
    /// `(start, end)` of each id's string in `text`; [`ABSENT`] where no token has the id.
    spans: Vec<(u32, u32)>,
    present: usize,
}

/// The span of an id no token has.
const ABSENT: (u32, u32) = (u32::MAX, 0);

impl TokenStrings {
    /// The strings of `(token, id)` pairs, for ids below `id_bound` (others are left out). Where two
    /// tokens share an id (a malformed file), the one listed last keeps it.
    pub fn from_vocab<'a>(vocab: impl Iterator<Item = (&'a str, u32)>, id_bound: usize) -> Self {
        let mut chosen: Vec<Option<&str>> = vec![None; id_bound];
        for (tok, id) in vocab {
            if let Some(slot) = chosen.get_mut(id as usize) {
                *slot = Some(tok);
            }
        }
        let total: usize = chosen.iter().flatten().map(|t| t.len()).sum();
        let mut text = String::with_capacity(total);
        let mut spans = Vec::with_capacity(id_bound);
        let mut present = 0;
        for tok in chosen {
            spans.push(match tok {
                // Offsets are u32: a vocab of 4 GB of text is out of reach (ids are capped at 2^28 and the
                // longest real tokens are a few hundred bytes); past that, the token reads as absent.
                Some(t) if text.len() + t.len() <= u32::MAX as usize => {
                    let start = text.len() as u32;
                    text.push_str(t);
                    present += 1;
                    (start, text.len() as u32)
                }
                _ => ABSENT,
            });
        }
        TokenStrings { text, spans, present }
    }

    /// The token with id `id`.
    #[inline]
    pub fn get(&self, id: u32) -> Option<&str> {
        match self.spans.get(id as usize) {
            Some(&(start, end)) if start != ABSENT.0 => self.text.get(start as usize..end as usize),
            _ => None,
        }
    }

    /// One past the largest id the table covers.
    pub fn id_bound(&self) -> usize {
        self.spans.len()
    }

    /// How many ids have a token.
    pub fn present(&self) -> usize {
        self.present
    }

    /// `(id, token)` in id order, over the ids that have one.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &str)> + '_ {
        self.spans
            .iter()
            .enumerate()
            .filter(|(_, s)| s.0 != ABSENT.0)
            .filter_map(|(id, &(start, end))| Some((id as u32, self.text.get(start as usize..end as usize)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_empty_tokens_and_shared_ids() {
        let vocab = [("", 1u32), ("héllo", 3), ("x", 5), ("y", 5), ("far", 99)];
        let s = TokenStrings::from_vocab(vocab.iter().copied(), 6);
        assert_eq!(s.get(0), None);
        assert_eq!(s.get(1), Some(""));
        assert_eq!(s.get(3), Some("héllo"));
        assert_eq!(s.get(5), Some("y")); // listed last
        assert_eq!(s.get(6), None);
        assert_eq!(s.get(99), None); // beyond the bound
        assert_eq!(s.id_bound(), 6);
        assert_eq!(s.present(), 3);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(1, ""), (3, "héllo"), (5, "y")]);
    }
}
