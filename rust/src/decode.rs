//! Decoders (HF `tokenizer.json` "decoder"): ByteLevel (bytes back, lossy UTF-8), BPEDecoder
//! (end-of-word suffix), WordPiece (`##` joins and clean-up), Sequence, and the SentencePiece ones:
//! Metaspace, ByteFallback, Fuse, Replace, Strip (as HF writes them for T5/ALBERT/Llama-style files).

use serde_json::Value;

use crate::normalize::ReplacePattern;
use crate::postprocess::get_bool;
use crate::pretok::{unicode_to_byte, Metaspace, PrependScheme};

#[derive(Clone, Debug, PartialEq)]
pub enum Decoder {
    /// Mapped chars back to bytes, then lossy UTF-8.
    ByteLevel,
    /// Replace the end-of-word suffix by a space (nothing after the last token).
    Bpe {
        suffix: String,
    },
    /// HF `decoders.WordPiece`: strip the prefix of continuation tokens, a space before the others,
    /// then (with `cleanup`) HF's English detokenization fix-ups.
    WordPiece {
        prefix: String,
        cleanup: bool,
    },
    Sequence(Vec<Decoder>),
    /// HF `Metaspace`: `▁` back to spaces; in the first token they are dropped unless the prepend
    /// scheme is `never`.
    Metaspace(Metaspace),
    /// HF `ByteFallback`: runs of `<0xXX>` tokens back to their UTF-8 text, or one U+FFFD per byte
    /// when the run is not valid UTF-8.
    ByteFallback,
    /// HF `Fuse`: all tokens joined into one.
    Fuse,
    /// HF `Replace` on each token.
    Replace {
        pattern: ReplacePattern,
        content: String,
    },
    /// HF `Strip`: up to `start` leading and `stop` trailing `content` chars removed from each token.
    Strip {
        content: char,
        start: usize,
        stop: usize,
    },
    /// HF `CTC` (speech models): repeated tokens collapsed, the pad token removed, then (with `cleanup`)
    /// the WordPiece clean-up and the word delimiter as a space; empty tokens dropped.
    Ctc {
        pad_token: String,
        word_delimiter_token: String,
        cleanup: bool,
    },
}

impl Decoder {
    pub fn from_json(v: &Value) -> Result<Self, String> {
        let ty = v.get("type").and_then(|t| t.as_str()).ok_or("decoder: missing string field 'type'")?;
        Ok(match ty {
            "ByteLevel" => Decoder::ByteLevel,
            "BPEDecoder" => {
                Decoder::Bpe { suffix: v.get("suffix").and_then(|x| x.as_str()).unwrap_or("</w>").to_string() }
            }
            "WordPiece" => Decoder::WordPiece {
                prefix: v.get("prefix").and_then(|x| x.as_str()).unwrap_or("##").to_string(),
                cleanup: get_bool(v, "cleanup", true),
            },
            "Sequence" => Decoder::Sequence(
                v.get("decoders")
                    .and_then(|x| x.as_array())
                    .ok_or("decoder Sequence: missing 'decoders'")?
                    .iter()
                    .map(Decoder::from_json)
                    .collect::<Result<_, _>>()?,
            ),
            "Metaspace" => Decoder::Metaspace(Metaspace::from_json(v, "decoder")?),
            "ByteFallback" => Decoder::ByteFallback,
            "Fuse" => Decoder::Fuse,
            "Replace" => Decoder::Replace {
                pattern: ReplacePattern::from_json(v.get("pattern").unwrap_or(&Value::Null), "decoder")?,
                content: v
                    .get("content")
                    .and_then(|x| x.as_str())
                    .ok_or("decoder Replace: missing string 'content'")?
                    .to_string(),
            },
            "Strip" => {
                let n = |k: &str| v.get(k).and_then(|x| x.as_u64()).map(|x| x as usize);
                let content = v.get("content").and_then(|x| x.as_str()).unwrap_or(" ");
                let mut it = content.chars();
                let content = match (it.next(), it.next()) {
                    (Some(c), None) => c,
                    _ => return Err(format!("decoder Strip: 'content' must be one char, got {content:?}")),
                };
                Decoder::Strip { content, start: n("start").unwrap_or(0), stop: n("stop").unwrap_or(0) }
            }
            "CTC" => {
                let text = |k: &str, d: &str| -> Result<String, String> {
                    match v.get(k) {
                        None | Some(Value::Null) => Ok(d.to_string()),
                        Some(Value::String(s)) => Ok(s.clone()),
                        Some(other) => Err(format!("decoder CTC: '{k}' must be a string, got {other}")),
                    }
                };
                Decoder::Ctc {
                    pad_token: text("pad_token", "<pad>")?,
                    word_delimiter_token: text("word_delimiter_token", "|")?,
                    cleanup: get_bool(v, "cleanup", true),
                }
            }
            other => return Err(format!("unsupported decoder type '{other}'")),
        })
    }

    /// `decode_chain(tokens).concat()` for the decoders whose pieces are each token's own
    /// (ByteLevel, WordPiece), without allocating per token; `None` for the others.
    pub(crate) fn decode_concat(&self, tokens: &[&str]) -> Option<String> {
        match self {
            Decoder::ByteLevel => {
                let mut bytes = Vec::with_capacity(tokens.iter().map(|t| t.len()).sum());
                for t in tokens {
                    byte_level_bytes(t, &mut bytes);
                }
                Some(String::from_utf8_lossy(&bytes).into_owned())
            }
            Decoder::WordPiece { prefix, cleanup } => {
                let mut out = String::with_capacity(tokens.iter().map(|t| t.len() + 1).sum());
                for (i, &t) in tokens.iter().enumerate() {
                    match (i, t.strip_prefix(prefix.as_str())) {
                        (0, _) => push_cleaned(&mut out, t, *cleanup),
                        (_, Some(rest)) => push_cleaned(&mut out, rest, *cleanup),
                        (_, None) => {
                            // The piece is " " + t: a clean-up pattern (each starts with a space)
                            // is in it if it is in t, or if t starts with the pattern's rest.
                            if *cleanup && CLEANUP_PATTERNS.iter().any(|p| t.contains(p) || t.starts_with(&p[1..])) {
                                out.push_str(&wordpiece_cleanup(format!(" {t}")));
                            } else {
                                out.push(' ');
                                out.push_str(t);
                            }
                        }
                    }
                }
                Some(out)
            }
            _ => None,
        }
    }

    /// HF `decode_chain`: tokens in, pieces out (joined by the caller).
    pub(crate) fn decode_chain(&self, tokens: Vec<String>) -> Vec<String> {
        match self {
            Decoder::ByteLevel => {
                let mut bytes = Vec::new();
                for t in &tokens {
                    byte_level_bytes(t, &mut bytes);
                }
                vec![String::from_utf8_lossy(&bytes).into_owned()]
            }
            Decoder::Bpe { suffix } => {
                let n = tokens.len();
                tokens
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| t.replace(suffix.as_str(), if i + 1 == n { "" } else { " " }))
                    .collect()
            }
            Decoder::WordPiece { prefix, cleanup } => tokens
                .into_iter()
                .enumerate()
                .map(|(i, t)| {
                    let t = match (i, t.strip_prefix(prefix.as_str())) {
                        (0, _) => t,
                        (_, Some(rest)) => rest.to_string(),
                        (_, None) => format!(" {t}"),
                    };
                    if *cleanup {
                        wordpiece_cleanup(t)
                    } else {
                        t
                    }
                })
                .collect(),
            Decoder::Sequence(v) => {
                let mut cur = tokens;
                for d in v {
                    cur = d.decode_chain(cur);
                }
                cur
            }
            Decoder::Metaspace(m) => {
                let drop_first = m.prepend_scheme != PrependScheme::Never;
                tokens
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| {
                        t.chars()
                            .filter_map(|c| match c == m.replacement {
                                true if i == 0 && drop_first => None,
                                true => Some(' '),
                                false => Some(c),
                            })
                            .collect()
                    })
                    .collect()
            }
            Decoder::ByteFallback => byte_fallback(tokens),
            Decoder::Fuse => vec![tokens.concat()],
            Decoder::Replace { pattern, content } => tokens.iter().map(|t| pattern.replace_in(t, content)).collect(),
            Decoder::Strip { content, start, stop } => {
                tokens.iter().map(|t| strip_token(t, *content, *start, *stop)).collect()
            }
            Decoder::Ctc { pad_token, word_delimiter_token, cleanup } => {
                let mut out = Vec::with_capacity(tokens.len());
                let mut previous: Option<&String> = None;
                for t in &tokens {
                    if previous == Some(t) {
                        continue; // consecutive duplicates collapse (before the pad token is removed)
                    }
                    previous = Some(t);
                    // `str::replace` as HF calls it (an empty pattern matches between every two chars).
                    let mut piece = t.replace(pad_token.as_str(), "");
                    if *cleanup {
                        piece = wordpiece_cleanup(piece).replace(word_delimiter_token.as_str(), " ");
                    }
                    if !piece.is_empty() {
                        out.push(piece);
                    }
                }
                out
            }
        }
    }
}

/// `<0xAB>` -> 0xAB (exactly six chars, two hex digits, as HF tests it).
pub(crate) fn byte_token(t: &str) -> Option<u8> {
    let hex = t.strip_prefix("<0x")?.strip_suffix('>')?;
    if t.len() != 6 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

fn byte_fallback(tokens: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut bytes: Vec<u8> = Vec::new();
    let flush = |bytes: &mut Vec<u8>, out: &mut Vec<String>| {
        if bytes.is_empty() {
            return;
        }
        match String::from_utf8(std::mem::take(bytes)) {
            Ok(s) => out.push(s),
            Err(e) => out.extend(std::iter::repeat_n("\u{fffd}".to_string(), e.as_bytes().len())),
        }
    };
    for t in tokens {
        match byte_token(&t) {
            Some(b) => bytes.push(b),
            None => {
                flush(&mut bytes, &mut out);
                out.push(t);
            }
        }
    }
    flush(&mut bytes, &mut out);
    out
}

/// HF `decoders::Strip` on one token.
pub(crate) fn strip_token(t: &str, content: char, start: usize, stop: usize) -> String {
    let chars: Vec<char> = t.chars().collect();
    let start_cut = chars.iter().take(start).take_while(|&&c| c == content).count();
    let rest = chars.len() - start_cut;
    let stop_cut = chars.iter().rev().take(stop.min(rest)).take_while(|&&c| c == content).count();
    chars[start_cut..chars.len() - stop_cut].iter().collect()
}

/// HF `decoders::wordpiece::cleanup`: glue punctuation and English clitics back on.
/// Appends a byte-level token's bytes; a token with any char outside the byte table contributes
/// its UTF-8 as is.
pub(crate) fn byte_level_bytes(t: &str, bytes: &mut Vec<u8>) {
    let start = bytes.len();
    for c in t.chars() {
        match unicode_to_byte(c) {
            Some(b) => bytes.push(b),
            None => {
                bytes.truncate(start);
                bytes.extend_from_slice(t.as_bytes());
                return;
            }
        }
    }
}

/// Appends a WordPiece piece, cleaned up when asked and needed.
fn push_cleaned(out: &mut String, piece: &str, cleanup: bool) {
    if cleanup && CLEANUP_PATTERNS.iter().any(|p| piece.contains(p)) {
        out.push_str(&wordpiece_cleanup(piece.to_string()));
    } else {
        out.push_str(piece);
    }
}

/// The patterns of [`wordpiece_cleanup`]: a string holding none of them comes out unchanged.
const CLEANUP_PATTERNS: [&str; 11] = [" .", " ?", " !", " ,", " ' ", " n't", " 'm", " do not", " 's", " 've", " 're"];

fn wordpiece_cleanup(s: String) -> String {
    // Each replace below is a no-op on a string without its pattern, so a string without any of
    // them is returned as is (no copy instead of eleven: decoding allocated eleven strings per token).
    if !CLEANUP_PATTERNS.iter().any(|p| s.contains(p)) {
        return s;
    }
    s.replace(" .", ".")
        .replace(" ?", "?")
        .replace(" !", "!")
        .replace(" ,", ",")
        .replace(" ' ", "'")
        .replace(" n't", "n't")
        .replace(" 'm", "'m")
        .replace(" do not", " don't")
        .replace(" 's", "'s")
        .replace(" 've", "'ve")
        .replace(" 're", "'re")
}

#[cfg(test)]
mod concat_tests {
    use super::*;

    /// The fast concatenation equals the chain's pieces joined, on tokens that hit every branch.
    #[test]
    fn decode_concat_equals_the_chain() {
        let wp = Decoder::WordPiece { prefix: "##".into(), cleanup: true };
        let wp_raw = Decoder::WordPiece { prefix: "##".into(), cleanup: false };
        let cases: [&[&str]; 5] = [
            &["##a", "b", "##c", ".", "'", "s", "n't", "do", "not", "##x"],
            &["'m", "'ve", ",", "!", "?", "' ", "'re", "##", "x"],
            &[],
            &["do not", ".x", "a ."],
            &["Ġhello", "Ġw", "orld", "\u{1f600}", "ĠĊ", "é"],
        ];
        for tokens in cases {
            let owned: Vec<String> = tokens.iter().map(|t| t.to_string()).collect();
            for d in [&wp, &wp_raw, &Decoder::ByteLevel] {
                assert_eq!(d.decode_concat(tokens), Some(d.decode_chain(owned.clone()).concat()), "{tokens:?}");
            }
        }
    }
}
