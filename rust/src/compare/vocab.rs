//! The per-id vocabulary table of `subword compare`: what each id stands for, as bytes.
//!
//! The definitions are those of `subword/compare/vocab.py` (`VocabTable`, the Python reference),
//! computed here from the tokenizer's own token table so that comparing a 100k-token vocabulary
//! neither builds the Python model data (a dict of every token, the merges) nor loops over the
//! tokens in Python. Per id:
//!
//! - *surface*: the bytes the token stands for in decoded text (GPT-2 byte characters mapped back,
//!   `<0xXX>` pieces as their byte, the Metaspace `▁` as a space, the `##` prefix dropped);
//! - *core*: the surface without one leading space (kept for a continuing `##` token);
//! - the characters of the decoded token, and whether it is a byte token (it splits a character).
//!
//! Which id keeps a string given at several ids follows the Python dict the reference builds: an
//! added token's id wins over a model token of the same text, and a model token repeated at several
//! ids keeps the one the model's own lookup gives (the last line of a vocab.txt, SentencePiece's
//! first piece).

use ahash::{AHashMap, AHashSet};


use crate::pretok::unicode_to_byte;

/// How the tokens of one tokenizer are spelled (the flags `vocab.py` reads off its components).
pub struct Spelling<'a> {
    /// Tokens are in the GPT-2 byte alphabet (a `ByteLevel` decoder or pre-tokenizer).
    pub byte_level: bool,
    /// The Metaspace replacement character(s) that decode to a space (`▁` when `None`).
    pub metaspace: Option<&'a str>,
    /// WordPiece's continuing-subword prefix (`##`), or `""`.
    pub prefix: &'a str,
    /// The model spells unknown bytes as `<0xXX>` pieces (SentencePiece `byte_fallback`).
    pub byte_pieces: bool,
}

/// The table, one entry per id in `0..size` (ids without a token have an empty surface).
#[derive(Debug, Default, PartialEq)]
pub struct VocabTable {
    /// Every surface, one after another; entry `i` is `surfaces[ends[i - 1]..ends[i]]`.
    pub surfaces: Vec<u8>,
    pub ends: Vec<u32>,
    /// The core is the surface without its first byte (a leading space).
    pub core_skips_space: Vec<bool>,
    pub char_length: Vec<i32>,
    pub byte_token: Vec<bool>,
    /// Distinct tokens (the number of entries of the reference's token -> id dict).
    pub vocab_size: usize,
}

/// `<0xXX>` as its byte.
fn byte_piece(text: &str) -> Option<u8> {
    let b = text.as_bytes();
    if b.len() != 6 || !text.starts_with("<0x") || b[5] != b'>' {
        return None;
    }
    let hex = std::str::from_utf8(&b[3..5]).ok()?;
    u8::from_str_radix(hex, 16).ok().filter(|_| hex.bytes().all(|c| c.is_ascii_hexdigit()))
}

/// The bytes of a byte-level token: each char mapped back through the byte table, a char below
/// U+0100 outside it as its Latin-1 byte; any other char makes the whole token its own UTF-8.
fn byte_level_bytes(text: &str, out: &mut Vec<u8>) {
    let start = out.len();
    for c in text.chars() {
        match unicode_to_byte(c) {
            Some(b) => out.push(b),
            None if (c as u32) < 256 => out.push(c as u8),
            None => {
                out.truncate(start);
                out.extend_from_slice(text.as_bytes());
                return;
            }
        }
    }
}

/// The model's side of a vocabulary: its ids `0..bound`, the token of an id, the id of a token.
pub struct ModelTokens<'a, T: Fn(u32) -> Option<&'a str>, I: Fn(&str) -> Option<u32>> {
    pub bound: usize,
    pub token: T,
    pub id: I,
}

/// Which token each id keeps (see the module docs): the model's for `0..bound`, then `added`.
fn tokens_by_id<'a, T: Fn(u32) -> Option<&'a str>, I: Fn(&str) -> Option<u32>>(
    model: &ModelTokens<'a, T, I>,
    added: &'a [(u32, String)],
) -> (Vec<Option<(&'a str, bool)>>, usize) {
    let added_text: AHashSet<&str> = added.iter().map(|(_, t)| t.as_str()).collect();
    let size = added.iter().map(|&(i, _)| i as usize + 1).max().unwrap_or(0).max(model.bound);
    let mut by_id: Vec<Option<(&str, bool)>> = vec![None; size];
    // The reference's dict has one key per distinct text: the model's, then the added ones (an added
    // token at the id of a model token of another text replaces it in the table, not in the count).
    let mut distinct = added_text.len();
    for id in 0..model.bound as u32 {
        if let Some(t) = (model.token)(id) {
            if !added_text.contains(t) && (model.id)(t) == Some(id) {
                by_id[id as usize] = Some((t, false));
                distinct += 1;
            }
        }
    }
    // The last of several added tokens with one text wins, as a dict update does.
    let mut last: AHashMap<&str, u32> = AHashMap::new();
    for (i, t) in added {
        last.insert(t.as_str(), *i);
    }
    for (i, t) in added {
        if last.get(t.as_str()) == Some(i) {
            by_id[*i as usize] = Some((t.as_str(), true));
        }
    }
    while by_id.last() == Some(&None) {
        by_id.pop();
    }
    (by_id, distinct)
}

/// Builds the table from the model's tokens and the added tokens `(id, content)`.
pub fn vocab_table<'a, T: Fn(u32) -> Option<&'a str>, I: Fn(&str) -> Option<u32>>(
    model: &ModelTokens<'a, T, I>,
    added: &'a [(u32, String)],
    spelling: &Spelling<'_>,
) -> VocabTable {
    let (by_id, vocab_size) = tokens_by_id(model, added);
    let n = by_id.len();
    let mut t = VocabTable {
        surfaces: Vec::with_capacity(n * 6),
        ends: Vec::with_capacity(n),
        core_skips_space: vec![false; n],
        char_length: vec![0; n],
        byte_token: vec![false; n],
        vocab_size,
    };
    let space = spelling.metaspace.unwrap_or("\u{2581}");
    for (i, entry) in by_id.iter().enumerate() {
        let start = t.surfaces.len();
        if let Some((token, is_added)) = *entry {
            if is_added {
                t.surfaces.extend_from_slice(token.as_bytes());
                t.char_length[i] = token.chars().count() as i32;
            } else {
                let p = spelling.prefix;
                let (text, continuing) = match token.strip_prefix(p) {
                    Some(rest) if !p.is_empty() && !rest.is_empty() => (rest, true),
                    _ => (token, false),
                };
                let piece = byte_piece(text).filter(|_| spelling.byte_pieces || !spelling.byte_level);
                if let Some(b) = piece {
                    t.surfaces.push(b);
                    t.byte_token[i] = true;
                    t.char_length[i] = 1; // one byte decodes to one character (itself, or U+FFFD)
                } else if spelling.byte_level {
                    byte_level_bytes(text, &mut t.surfaces);
                    let raw = &t.surfaces[start..];
                    t.char_length[i] = match std::str::from_utf8(raw) {
                        Ok(s) => s.chars().count() as i32,
                        Err(_) => {
                            t.byte_token[i] = true;
                            String::from_utf8_lossy(raw).chars().count() as i32
                        }
                    };
                } else {
                    let text = text.replace(space, " ");
                    t.char_length[i] = text.chars().count() as i32;
                    t.surfaces.extend_from_slice(text.as_bytes());
                }
                let raw = &t.surfaces[start..];
                t.core_skips_space[i] = !continuing && raw.len() > 1 && raw[0] == b' ';
            }
        }
        t.ends.push(t.surfaces.len() as u32);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model whose repeated token keeps its first id (as SentencePiece's lookup does).
    fn table(tokens: &[&str], added: &[(u32, String)], spelling: &Spelling<'_>) -> VocabTable {
        let model = ModelTokens {
            bound: tokens.len(),
            token: |i: u32| tokens.get(i as usize).copied().filter(|t| !t.is_empty()),
            id: |t: &str| tokens.iter().position(|x| *x == t).map(|i| i as u32),
        };
        vocab_table(&model, added, spelling)
    }

    fn surfaces(t: &VocabTable) -> Vec<Vec<u8>> {
        let mut start = 0usize;
        t.ends
            .iter()
            .map(|&e| {
                let s = t.surfaces[start..e as usize].to_vec();
                start = e as usize;
                s
            })
            .collect()
    }

    #[test]
    fn byte_level_tokens_map_back_and_split_characters_are_byte_tokens() {
        let s = Spelling { byte_level: true, metaspace: None, prefix: "", byte_pieces: false };
        // "Ġthe" is " the"; "â" alone is the first byte of a 3-byte character: a byte token.
        let t = table(&["Ġthe", "a", "â", "<0x41>"], &[], &s);
        assert_eq!(surfaces(&t), vec![b" the".to_vec(), b"a".to_vec(), vec![0xe2], b"<0x41>".to_vec()]);
        assert_eq!(t.core_skips_space, vec![true, false, false, false]);
        assert_eq!(t.char_length, vec![4, 1, 1, 6]);
        assert_eq!(t.byte_token, vec![false, false, true, false]);
    }

    #[test]
    fn metaspace_byte_pieces_and_wordpiece_prefix() {
        let spm = Spelling { byte_level: false, metaspace: None, prefix: "", byte_pieces: true };
        let t = table(&["▁the", "<0xE2>", "x"], &[], &spm);
        assert_eq!(surfaces(&t), vec![b" the".to_vec(), vec![0xe2], b"x".to_vec()]);
        assert_eq!(t.byte_token, vec![false, true, false]);
        let wp = Spelling { byte_level: false, metaspace: None, prefix: "##", byte_pieces: false };
        let t = table(&["##ing", "##", "the"], &[], &wp);
        assert_eq!(surfaces(&t), vec![b"ing".to_vec(), b"##".to_vec(), b"the".to_vec()]);
        assert_eq!(t.char_length, vec![3, 2, 3]);
    }

    #[test]
    fn an_added_token_wins_its_text_and_repeated_model_tokens_keep_the_first_id() {
        let s = Spelling { byte_level: false, metaspace: None, prefix: "", byte_pieces: false };
        let added = vec![(5, "<s>".to_string())];
        let t = table(&["<s>", "a", "a", "", "b"], &added, &s);
        assert_eq!(surfaces(&t), vec![vec![], b"a".to_vec(), vec![], vec![], b"b".to_vec(), b"<s>".to_vec()]);
        assert_eq!(t.vocab_size, 3);
    }

    #[test]
    fn byte_piece_needs_exactly_two_hex_digits() {
        assert_eq!(byte_piece("<0x0A>"), Some(10));
        assert_eq!(byte_piece("<0xzz>"), None);
        assert_eq!(byte_piece("<0x0A"), None);
        assert_eq!(byte_piece("<0x+A>"), None);
    }
}
