//! BERT `vocab.txt` (one token per line, id = line number) read into a WordPiece vocab, as HF's
//! `WordPiece::read_file` reads it: lines end at `\n` only (U+2028, U+0085 and other Unicode line
//! breaks stay inside a line), each line loses its trailing whitespace (`str::trim_end`, which takes a
//! `\r` before the `\n` too), line `n` is id `n - 1`.
//!
//! [`parse`] takes only a clean file: UTF-8, no blank line (HF's empty token) and no repeated token;
//! the Python reader (`WordPiece.from_vocab_file`) reads the others the same way and logs those lines.

use ahash::AHashMap;

/// Token -> id of a clean vocab.txt, or `None`.
pub fn parse(data: &[u8]) -> Option<AHashMap<String, u32>> {
    let text = std::str::from_utf8(data).ok()?;
    let body = text.strip_suffix('\n').unwrap_or(text);
    if body.is_empty() {
        return None;
    }
    let mut vocab = AHashMap::with_capacity(body.len() / 6);
    for (i, line) in body.split('\n').enumerate() {
        let token = line.trim_end();
        if token.is_empty() || vocab.insert(token.to_string(), u32::try_from(i).ok()?).is_some() {
            return None;
        }
    }
    Some(vocab)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_files_only() {
        let v = parse(b"[UNK]\r\nun\n##able \n").expect("clean");
        assert_eq!((v["[UNK]"], v["un"], v["##able"]), (0, 1, 2));
        // Unicode line breaks are inside a line (HF splits at \n only); a leading space stays.
        let v = parse("a\u{2028}b\n##\u{2028}\n c\nd\re\n".as_bytes()).expect("clean");
        assert_eq!((v["a\u{2028}b"], v["##"], v[" c"], v["d\re"]), (0, 1, 2, 3));
        for bad in [&b""[..], b"a\n\nb\n", b"a\na\n", b"a\n\xe2\x80\xa8\n", b"\xff\n", b"a\na \n"] {
            assert!(parse(bad).is_none(), "{bad:?}");
        }
    }
}
