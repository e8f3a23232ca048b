//! Decoders (HF `tokenizer.json` "decoder"): ByteLevel (bytes back, lossy UTF-8), BPEDecoder
//! (end-of-word suffix), WordPiece (`##` joins and clean-up) and Sequence.

use serde_json::Value;

use crate::postprocess::get_bool;
use crate::pretok::unicode_to_byte;

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
}

impl Decoder {
    pub fn from_json(v: &Value) -> Result<Self, String> {
        let ty = v
            .get("type")
            .and_then(|t| t.as_str())
            .ok_or("decoder: missing string field 'type'")?;
        Ok(match ty {
            "ByteLevel" => Decoder::ByteLevel,
            "BPEDecoder" => Decoder::Bpe {
                suffix: v.get("suffix").and_then(|x| x.as_str()).unwrap_or("</w>").to_string(),
            },
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
            other => return Err(format!("unsupported decoder type '{other}'")),
        })
    }

    /// HF `decode_chain`: tokens in, pieces out (joined by the caller).
    pub(crate) fn decode_chain(&self, tokens: Vec<String>) -> Vec<String> {
        match self {
            Decoder::ByteLevel => {
                let mut bytes = Vec::new();
                for t in &tokens {
                    // A token with any char outside the byte table contributes its UTF-8 as is.
                    let start = bytes.len();
                    let mut ok = true;
                    for c in t.chars() {
                        match unicode_to_byte(c) {
                            Some(b) => bytes.push(b),
                            None => {
                                ok = false;
                                break;
                            }
                        }
                    }
                    if !ok {
                        bytes.truncate(start);
                        bytes.extend_from_slice(t.as_bytes());
                    }
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
                        wordpiece_cleanup(&t)
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
        }
    }
}

/// HF `decoders::wordpiece::cleanup`: glue punctuation and English clitics back on.
fn wordpiece_cleanup(s: &str) -> String {
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
