//! BERT `vocab.txt` (one token per line, id = line number) read into a WordPiece vocab, as HF's
//! `WordPiece::read_file` reads it: lines end at `\n` only (U+2028, U+0085 and other Unicode line
//! breaks stay inside a line), each line loses its trailing whitespace (`str::trim_end`, which takes a
//! `\r` before the `\n` too), line `n` is id `n - 1`.
//!
//! [`parse`] takes only a clean file: UTF-8, no blank line (HF's empty token) and no repeated token;
//! the Python reader (`WordPiece.from_vocab_file`) reads the others the same way and logs those lines.

use std::sync::Arc;

use crate::encoding::TokenTable;
use crate::piece_index::PieceIndex;

/// The tokens of a clean vocab.txt by id, indexed (token -> id), or `None`.
///
/// Why a table and an index, not a `HashMap<String, u32>`: the WordPiece model keeps exactly these
/// two, so the map was built only to be taken apart again (it was most of a 30k vocab.txt's load).
pub fn parse(data: &[u8]) -> Option<PieceIndex> {
    let text = std::str::from_utf8(data).ok()?;
    let body = text.strip_suffix('\n').unwrap_or(text);
    if body.is_empty() {
        return None;
    }
    let mut strings = Vec::with_capacity(memchr::memchr_iter(b'\n', body.as_bytes()).count() + 1);
    for line in body.split('\n') {
        let token = line.trim_end();
        if token.is_empty() {
            return None;
        }
        strings.push(token.to_string());
    }
    u32::try_from(strings.len()).ok()?;
    let (index, repeat) = PieceIndex::build(Arc::new(TokenTable { strings }), |_| true);
    repeat.is_none().then_some(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_files_only() {
        let v = parse(b"[UNK]\r\nun\n##able \n").expect("clean");
        assert_eq!((v.get("[UNK]"), v.get("un"), v.get("##able")), (Some(0), Some(1), Some(2)));
        // Unicode line breaks are inside a line (HF splits at \n only); a leading space stays.
        let v = parse("a\u{2028}b\n##\u{2028}\n c\nd\re\n".as_bytes()).expect("clean");
        assert_eq!((v.get("a\u{2028}b"), v.get("##"), v.get(" c"), v.get("d\re")), (Some(0), Some(1), Some(2), Some(3)));
        for bad in [&b""[..], b"a\n\nb\n", b"a\na\n", b"a\n\xe2\x80\xa8\n", b"\xff\n", b"a\na \n"] {
            assert!(parse(bad).is_none(), "{bad:?}");
        }
    }
}
