//! `Encoding`: the output of the encode pipeline, with HF's truncation and padding rules.
//!
//! Offsets are BYTE offsets into the original text here; the Python binding converts them to
//! character offsets (HF's Python API reports characters).
//!
//! Token strings are not stored per token: `tokens[i]` is an index into the tokenizer's shared
//! token table (`TokenTable`), plus `extra` strings for tokens that only exist in this encoding
//! (an arbitrary pad token given to [`Encoding::pad`]). This keeps encoding free of per-token
//! allocations; strings are materialised only when the caller asks for them.

/// Byte offsets -> character offsets. HF converts right after the model (its
/// `BytesToCharOffsetConverter`: a start byte maps to the index of the char containing it, an end
/// to one past the char containing the byte before it) and trims ByteLevel offsets afterwards, in
/// chars. We trim in bytes (over
/// whole chars) and convert at the end, so positions equal to the text's length must map to the
/// number of chars too (a trimmed trailing space).
// Without the bindings only the tests use it (the compare pass converts in a reused buffer).
#[cfg_attr(not(feature = "python"), allow(dead_code))]
pub(crate) struct CharOffsets {
    /// `None` when the text is ASCII (bytes are chars); else one entry per byte plus one for the end.
    char_of_byte: Option<Vec<u32>>,
}

#[cfg_attr(not(feature = "python"), allow(dead_code))]
impl CharOffsets {
    pub(crate) fn new(text: &str) -> Self {
        if text.is_ascii() {
            return CharOffsets { char_of_byte: None };
        }
        let mut v = vec![0u32; text.len() + 1];
        let mut n = 0u32;
        for (bi, c) in text.char_indices() {
            for k in 0..c.len_utf8() {
                v[bi + k] = n;
            }
            n += 1;
        }
        v[text.len()] = n;
        CharOffsets { char_of_byte: Some(v) }
    }

    pub(crate) fn convert(&self, (s, e): (usize, usize)) -> (usize, usize) {
        let Some(m) = &self.char_of_byte else { return (s, e) };
        let at = |i: usize| m[i.min(m.len() - 1)] as usize;
        // The end is "one past the char holding the last byte", so two byte-fallback tokens that
        // split one char both end after it (HF reports (1, 2) and (1, 2) for the bytes of `é` in `aé`).
        let end = if e == 0 { 0 } else { at(e - 1) + 1 };
        (at(s), end)
    }
}

/// The strings of every token index: the model vocab (index = id) followed by added tokens,
/// template and pad tokens that differ from the vocab string of their id.
#[derive(Debug, Default, Clone)]
pub struct TokenTable {
    pub strings: Vec<String>,
}

impl TokenTable {
    pub fn get(&self, i: u32) -> &str {
        self.strings.get(i as usize).map_or("", |s| s.as_str())
    }
}

/// Which end to cut or pad.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Left,
    Right,
}

impl Direction {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "right" | "Right" => Ok(Direction::Right),
            "left" | "Left" => Ok(Direction::Left),
            other => Err(format!("direction must be 'left' or 'right', got {other:?}")),
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Encoding {
    pub ids: Vec<u32>,
    pub type_ids: Vec<u32>,
    /// Token-table indices (see the module docs).
    pub tokens: Vec<u32>,
    /// Byte offsets into the original text.
    pub offsets: Vec<(usize, usize)>,
    pub special_tokens_mask: Vec<u32>,
    pub attention_mask: Vec<u32>,
    /// Which input each token comes from: 0 = the text, 1 = the pair, [`NO_SEQ`] = none (special
    /// tokens added by the post-processor, padding). Offsets index into that input.
    pub seq: Vec<u8>,
    pub overflowing: Vec<Encoding>,
    /// Strings of token indices at or past the table's length.
    pub extra: Vec<String>,
}

/// Token indices with this bit set are positions in the encoding's own `extra` strings.
pub const EXTRA_BIT: u32 = 1 << 31;

/// `seq` value of tokens that belong to no input sequence.
pub const NO_SEQ: u8 = u8::MAX;

impl Encoding {
    pub fn with_capacity(n: usize) -> Self {
        Encoding {
            ids: Vec::with_capacity(n),
            type_ids: Vec::with_capacity(n),
            tokens: Vec::with_capacity(n),
            offsets: Vec::with_capacity(n),
            special_tokens_mask: Vec::with_capacity(n),
            attention_mask: Vec::with_capacity(n),
            seq: Vec::with_capacity(n),
            overflowing: Vec::new(),
            extra: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Appends one token.
    #[inline]
    pub fn push(&mut self, id: u32, token: u32, offsets: (usize, usize), type_id: u32, special: bool) {
        self.ids.push(id);
        self.tokens.push(token);
        self.offsets.push(offsets);
        self.type_ids.push(type_id);
        self.special_tokens_mask.push(u32::from(special));
        self.attention_mask.push(1);
        self.seq.push(if special { NO_SEQ } else { 0 });
    }

    /// Marks every token (overflowing parts too) as coming from input `s`.
    pub fn set_seq(&mut self, s: u8) {
        self.seq.iter_mut().for_each(|x| *x = s);
        for o in &mut self.overflowing {
            o.set_seq(s);
        }
    }

    /// HF `Encoding::merge_with` (offsets not shifted): appends `pair`, and combines the
    /// overflowing parts the way HF does: each of ours with `pair` and with each of `pair`'s, then
    /// ourself with each of `pair`'s.
    pub fn merge_with(&mut self, pair: Encoding) {
        let mut overflowings = Vec::new();
        for self_o in &self.overflowing {
            let mut n = self_o.clone();
            n.merge_with(pair.clone());
            overflowings.push(n);
            for other_o in &pair.overflowing {
                let mut n = self_o.clone();
                n.merge_with(other_o.clone());
                overflowings.push(n);
            }
        }
        for other_o in &pair.overflowing {
            let mut n = self.clone();
            n.merge_with(other_o.clone());
            overflowings.push(n);
        }
        // Extra-string indices are positions in `extra`; re-base the pair's onto ours.
        let base = self.extra.len() as u32;
        self.ids.extend_from_slice(&pair.ids);
        self.type_ids.extend_from_slice(&pair.type_ids);
        self.tokens.extend(pair.tokens.iter().map(|&t| if t & EXTRA_BIT != 0 { t + base } else { t }));
        self.extra.extend(pair.extra);
        self.offsets.extend_from_slice(&pair.offsets);
        self.special_tokens_mask.extend_from_slice(&pair.special_tokens_mask);
        self.attention_mask.extend_from_slice(&pair.attention_mask);
        self.seq.extend_from_slice(&pair.seq);
        self.overflowing = overflowings;
    }

    /// The string of token `i`.
    pub fn token_str<'a>(&'a self, table: &'a TokenTable, i: usize) -> &'a str {
        let t = self.tokens[i];
        if t & EXTRA_BIT != 0 {
            self.extra.get((t & !EXTRA_BIT) as usize).map_or("", |s| s.as_str())
        } else {
            table.get(t)
        }
    }

    /// Adds an encoding-local token string; returns its token index.
    pub fn push_extra(&mut self, s: &str) -> u32 {
        if let Some(p) = self.extra.iter().position(|t| t == s) {
            return EXTRA_BIT | p as u32;
        }
        self.extra.push(s.to_string());
        EXTRA_BIT | (self.extra.len() - 1) as u32
    }

    fn slice(&self, start: usize, stop: usize) -> Encoding {
        Encoding {
            ids: self.ids[start..stop].to_vec(),
            type_ids: self.type_ids[start..stop].to_vec(),
            tokens: self.tokens[start..stop].to_vec(),
            offsets: self.offsets[start..stop].to_vec(),
            special_tokens_mask: self.special_tokens_mask[start..stop].to_vec(),
            attention_mask: self.attention_mask[start..stop].to_vec(),
            seq: self.seq[start..stop].to_vec(),
            overflowing: Vec::new(),
            extra: self.extra.clone(),
        }
    }

    /// HF `Encoding::truncate`: keeps `max_len` tokens; the rest becomes `overflowing` windows of
    /// `max_len` tokens that overlap by `stride`. `max_len == 0` moves everything to overflowing.
    /// Errors when `stride >= max_len` (HF panics there).
    pub fn truncate(&mut self, max_len: usize, stride: usize, direction: Direction) -> Result<(), String> {
        let n = self.ids.len();
        if max_len >= n {
            return Ok(());
        }
        if max_len == 0 {
            let whole = std::mem::take(self);
            self.extra = whole.extra.clone();
            self.overflowing.push(whole);
            return Ok(());
        }
        if stride >= max_len {
            return Err(format!(
                "truncation stride ({stride}) must be strictly less than max_length ({max_len}, after \
                 subtracting the special tokens the post-processor adds)"
            ));
        }
        let step = max_len - stride;
        let mut parts: Vec<(usize, usize)> = Vec::new();
        match direction {
            Direction::Right => {
                let mut start = 0;
                loop {
                    let stop = (start + max_len).min(n);
                    parts.push((start, stop));
                    if stop == n {
                        break;
                    }
                    start += step;
                }
            }
            Direction::Left => {
                // Windows ending at n, n - step, ... (HF iterates stops from the end).
                let mut stop = n;
                loop {
                    let start = stop.saturating_sub(max_len);
                    parts.push((start, stop));
                    if start == 0 || stop <= step {
                        break;
                    }
                    stop -= step;
                }
            }
        }
        let mut first = self.slice(parts[0].0, parts[0].1);
        first.overflowing = parts[1..].iter().map(|&(a, b)| self.slice(a, b)).collect();
        *self = first;
        Ok(())
    }

    /// HF `Encoding::pad`: pads (overflowing encodings too) up to `target` tokens.
    /// `pad_token` is the token-table index of the pad string.
    pub fn pad(&mut self, target: usize, pad_id: u32, pad_type_id: u32, pad_token: u32, direction: Direction) {
        for o in &mut self.overflowing {
            o.pad(target, pad_id, pad_type_id, pad_token, direction);
        }
        let n = self.ids.len();
        if n >= target {
            return;
        }
        let k = target - n;
        match direction {
            Direction::Right => {
                self.ids.extend(std::iter::repeat_n(pad_id, k));
                self.type_ids.extend(std::iter::repeat_n(pad_type_id, k));
                self.tokens.extend(std::iter::repeat_n(pad_token, k));
                self.offsets.extend(std::iter::repeat_n((0, 0), k));
                self.special_tokens_mask.extend(std::iter::repeat_n(1, k));
                self.attention_mask.extend(std::iter::repeat_n(0, k));
                self.seq.extend(std::iter::repeat_n(NO_SEQ, k));
            }
            Direction::Left => {
                fn prepend<T: Clone>(v: &mut Vec<T>, x: T, k: usize) {
                    let mut new = Vec::with_capacity(v.len() + k);
                    new.extend(std::iter::repeat_n(x, k));
                    new.append(v);
                    *v = new;
                }
                prepend(&mut self.ids, pad_id, k);
                prepend(&mut self.type_ids, pad_type_id, k);
                prepend(&mut self.tokens, pad_token, k);
                prepend(&mut self.offsets, (0, 0), k);
                prepend(&mut self.special_tokens_mask, 1, k);
                prepend(&mut self.attention_mask, 0, k);
                prepend(&mut self.seq, NO_SEQ, k);
            }
        }
    }

    /// [`Self::pad`] with a pad token given as a string (interned per encoding, overflowing too).
    pub fn pad_with_str(
        &mut self,
        target: usize,
        pad_id: u32,
        pad_type_id: u32,
        table: &TokenTable,
        s: &str,
        direction: Direction,
    ) {
        for o in &mut self.overflowing {
            o.pad_with_str(target, pad_id, pad_type_id, table, s, direction);
        }
        let tok =
            if (pad_id as usize) < table.strings.len() && table.get(pad_id) == s { pad_id } else { self.push_extra(s) };
        let over = std::mem::take(&mut self.overflowing);
        self.pad(target, pad_id, pad_type_id, tok, direction);
        self.overflowing = over;
    }
}

/// HF `TruncationParams` (single sequences; the strategy matters only for pairs).
#[derive(Clone, Debug, PartialEq)]
pub struct Truncation {
    pub max_length: usize,
    pub stride: usize,
    pub direction: Direction,
    pub strategy: String,
}

/// HF `PaddingParams`.
#[derive(Clone, Debug, PartialEq)]
pub struct Padding {
    /// `None` = pad to the longest in the batch.
    pub length: Option<usize>,
    pub direction: Direction,
    pub pad_to_multiple_of: Option<usize>,
    pub pad_id: u32,
    pub pad_type_id: u32,
    pub pad_token: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(n: usize) -> Encoding {
        let mut e = Encoding::with_capacity(n);
        for i in 0..n {
            e.push(i as u32, i as u32, (i, i + 1), 0, false);
        }
        e
    }

    #[test]
    fn truncate_right_with_stride() {
        let mut e = enc(10);
        e.truncate(4, 1, Direction::Right).unwrap();
        assert_eq!(e.ids, vec![0, 1, 2, 3]);
        let o: Vec<Vec<u32>> = e.overflowing.iter().map(|o| o.ids.clone()).collect();
        assert_eq!(o, vec![vec![3, 4, 5, 6], vec![6, 7, 8, 9]]);
    }

    #[test]
    fn truncate_left() {
        let mut e = enc(7);
        e.truncate(3, 0, Direction::Left).unwrap();
        assert_eq!(e.ids, vec![4, 5, 6]);
        let o: Vec<Vec<u32>> = e.overflowing.iter().map(|o| o.ids.clone()).collect();
        assert_eq!(o, vec![vec![1, 2, 3], vec![0]]);
        let mut e = enc(5);
        assert!(e.truncate(2, 2, Direction::Right).is_err());
    }

    #[test]
    fn pad_both_sides() {
        let mut e = enc(2);
        e.pad(4, 9, 1, 9, Direction::Left);
        assert_eq!(e.ids, vec![9, 9, 0, 1]);
        assert_eq!(e.attention_mask, vec![0, 0, 1, 1]);
        assert_eq!(e.special_tokens_mask, vec![1, 1, 0, 0]);
        let mut e = enc(2);
        e.pad(3, 9, 1, 9, Direction::Right);
        assert_eq!(e.type_ids, vec![0, 0, 1]);
        assert_eq!(e.offsets[2], (0, 0));
    }
}
