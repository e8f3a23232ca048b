//! BERT `vocab.txt` (one token per line, id = line number) read into a WordPiece vocab.
//!
//! [`parse`] takes only a clean file: UTF-8, `\n` or `\r\n` line ends, no blank line, no token
//! starting or ending with whitespace, no repeated token, and none of the other characters Python's
//! `str.splitlines` breaks lines at. The Python reader (`WordPiece.from_vocab_file`) warns about
//! blank and repeated lines, so those files go to it.

use ahash::AHashMap;

/// Characters other than `\n` that end a line for Python's `str.splitlines` (and `\r` alone).
fn python_line_break(c: char) -> bool {
    matches!(c, '\r' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// Whitespace for Rust or for Python's `str.isspace` (which adds the separators U+001C..U+001F).
fn space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// Token -> id of a clean vocab.txt, or `None`.
pub fn parse(data: &[u8]) -> Option<AHashMap<String, u32>> {
    let text = std::str::from_utf8(data).ok()?;
    let body = text.strip_suffix('\n').unwrap_or(text);
    if body.is_empty() {
        return None;
    }
    let mut vocab = AHashMap::with_capacity(body.len() / 6);
    for (i, line) in body.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let (first, last) = (line.chars().next()?, line.chars().next_back()?);
        if space(first) || space(last) || line.chars().any(python_line_break) {
            return None;
        }
        if vocab.insert(line.to_string(), u32::try_from(i).ok()?).is_some() {
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
        let v = parse(b"[UNK]\r\nun\n##able\n").expect("clean");
        assert_eq!((v["[UNK]"], v["un"], v["##able"]), (0, 1, 2));
        for bad in [&b""[..], b"a\n\nb\n", b"a\na\n", b"a\rb\n", b" a\n", b"\xff\n", b"a\x0cb\n"] {
            assert!(parse(bad).is_none(), "{bad:?}");
        }
    }
}
