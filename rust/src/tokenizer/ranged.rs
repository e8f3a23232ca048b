//! The word loop of the pipeline for Unigram models and the Metaspace pre-tokenizer: tokens are
//! byte RANGES of the word (a Unigram byte-fallback run shares one range, HF's rule) and words need
//! not be slices of the text (Metaspace maps spaces to `▁` and may prepend one), so every byte of a
//! word carries the range of the normalized text it comes from.

use super::Tokenizer;
use crate::encoding::Encoding;
use crate::model::{Model, Ranged};
use crate::pretok::metaspace::Mapped;
use crate::pretok::{for_each_slice_piece, Metaspace, PreTokenizer, PrependScheme};

thread_local! {
    static MAPPED: std::cell::RefCell<Mapped> = std::cell::RefCell::new(Mapped::default());
}

impl Tokenizer {
    /// True when `encode_words` must take [`Self::encode_words_ranged`].
    pub(super) fn needs_ranges(&self) -> bool {
        matches!(self.model, Model::Unigram(_)) && !matches!(self.pre_tokenizer, Some(PreTokenizer::ByteLevel { .. }))
            || self.pre_tokenizer.as_ref().is_some_and(|p| matches!(p.last(), PreTokenizer::Metaspace(_)))
    }

    /// Metaspace with `prepend_scheme: first` needs the original offsets of each text (whether it
    /// starts the input), which only the full path has.
    pub(super) fn needs_original_offsets(&self) -> bool {
        fn first(p: &PreTokenizer) -> bool {
            match p {
                PreTokenizer::Metaspace(m) => m.prepend_scheme == PrependScheme::First,
                PreTokenizer::General(v) | PreTokenizer::Sequence(v) => v.iter().any(first),
                _ => false,
            }
        }
        self.pre_tokenizer.as_ref().is_some_and(first)
    }

    /// `encode_words` for a general Sequence (`pretok/aligned.rs`): each piece's tokens as byte ranges of
    /// the piece, mapped through the piece's alignment to `t`, then through `map`.
    pub(super) fn encode_words_general(
        &self,
        items: &[PreTokenizer],
        t: &str,
        base: usize,
        map: &dyn Fn(usize, usize) -> (usize, usize),
        enc: &mut Encoding,
        salt: &mut u64,
    ) -> Result<(), String> {
        let starts_input = |o: usize| map(base + o, base + o).0 == 0;
        let mut ranges: Vec<Ranged> = Vec::new();
        for piece in crate::pretok::aligned::pre_tokenize(items, t, &starts_input) {
            *salt += 1;
            self.word_ranges(&piece.text, *salt, &mut ranges)?;
            self.push_ranged(&piece.text, &ranges, enc, |s, e| {
                let (a, b) = piece.span(s, e);
                map(base + a, base + b)
            });
        }
        Ok(())
    }

    /// The model's tokens of `word` as ranges (consecutive lengths for BPE / WordPiece).
    fn word_ranges(&self, word: &str, salt: u64, out: &mut Vec<Ranged>) -> Result<(), String> {
        out.clear();
        if let Model::Unigram(u) = &self.model {
            return u.tokenize_ranges(word, out);
        }
        let mut syms = Vec::new();
        self.model.tokenize_into(word, salt, &mut syms)?;
        let mut a = 0usize;
        for &(id, l) in &syms {
            let b = (a + l as usize).min(word.len());
            // Byte-fallback tokens (`<0xE2>`) cover part of a character: each gets the whole
            // character's range, as HF gives them, and the range stays a valid slice of the word.
            let (mut start, mut end) = (a, b);
            while start > 0 && !word.is_char_boundary(start) {
                start -= 1;
            }
            while end < word.len() && !word.is_char_boundary(end) {
                end += 1;
            }
            out.push(Ranged { id, start, end, text_is_token: false });
            a = b;
        }
        Ok(())
    }

    /// Pushes the tokens of `word`; `to_text(a, b)` maps a byte range of the word to normalized bytes.
    fn push_ranged(
        &self,
        word: &str,
        ranges: &[Ranged],
        enc: &mut Encoding,
        to_orig: impl Fn(usize, usize) -> (usize, usize),
    ) {
        for r in ranges {
            let text = &word[r.start..r.end];
            let idx =
                if r.text_is_token && self.model.id_to_token(r.id) != Some(text) { enc.push_extra(text) } else { r.id };
            enc.push(r.id, idx, to_orig(r.start, r.end), 0, false);
        }
    }

    /// `encode_words` for Unigram models and Metaspace (see the module notes).
    pub(super) fn encode_words_ranged(
        &self,
        t: &str,
        base: usize,
        map: &dyn Fn(usize, usize) -> (usize, usize),
        enc: &mut Encoding,
        salt: &mut u64,
    ) -> Result<(), String> {
        let mut ranges: Vec<Ranged> = Vec::new();
        let mut err: Option<String> = None;
        match &self.pre_tokenizer {
            Some(PreTokenizer::Metaspace(m)) => self.metaspace_words(m, t, base, map, enc, salt)?,
            Some(PreTokenizer::Sequence(v)) if matches!(v.last(), Some(PreTokenizer::Metaspace(_))) => {
                let Some((PreTokenizer::Metaspace(m), head)) = v.split_last() else { unreachable!() };
                for_each_slice_piece(head, t, &mut |s, e| {
                    if err.is_none() {
                        err = self.metaspace_words(m, &t[s..e], base + s, map, enc, salt).err();
                    }
                });
            }
            Some(p) => p.for_each_raw_piece_with_offsets(t, |raw, (ps, _)| {
                if err.is_some() {
                    return;
                }
                *salt += 1;
                match self.word_ranges(raw, *salt, &mut ranges) {
                    Ok(()) => self.push_ranged(raw, &ranges, enc, |s, e| map(base + ps + s, base + ps + e)),
                    Err(e) => err = Some(e),
                }
            }),
            None => {
                *salt += 1;
                self.word_ranges(t, *salt, &mut ranges)?;
                self.push_ranged(t, &ranges, enc, |s, e| map(base + s, base + e));
            }
        }
        err.map_or(Ok(()), Err)
    }

    /// Metaspace on `t` (= normalized[base..]): map, split, tokenize, offsets through the byte alignment.
    fn metaspace_words(
        &self,
        m: &Metaspace,
        t: &str,
        base: usize,
        map: &dyn Fn(usize, usize) -> (usize, usize),
        enc: &mut Encoding,
        salt: &mut u64,
    ) -> Result<(), String> {
        let mut ranges: Vec<Ranged> = Vec::new();
        let mut err: Option<String> = None;
        MAPPED.with(|cell| {
            let mut mapped = cell.borrow_mut();
            // HF `First`: the text starts at original offset 0 (after normalization).
            let at_start = t.chars().next().is_some_and(|c| map(base, base + c.len_utf8()).0 == 0);
            m.map_into(t, at_start, &mut mapped);
            let Mapped { text, align } = &*mapped;
            m.split(text, |a, b| {
                if err.is_some() {
                    return;
                }
                *salt += 1;
                let word = &text[a..b];
                match self.word_ranges(word, *salt, &mut ranges) {
                    Ok(()) => self.push_ranged(word, &ranges, enc, |s, e| {
                        if e <= s {
                            let p = align[a + s.min(b - a - 1)].0;
                            return map(base + p, base + p);
                        }
                        map(base + align[a + s].0, base + align[a + e - 1].1)
                    }),
                    Err(e) => err = Some(e),
                }
            });
        });
        err.map_or(Ok(()), Err)
    }
}
