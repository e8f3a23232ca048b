//! Post-processors (HF `tokenizer.json` "post_processor"): ByteLevel offset trimming,
//! TemplateProcessing, BertProcessing, RobertaProcessing and Sequence. They add the special tokens
//! around one or two encoded sequences; the pipeline that applies them is in `tokenizer.rs`.

use std::collections::HashMap;

use serde_json::Value;

#[derive(Clone, Debug, PartialEq)]
pub enum TemplatePiece {
    /// A special token (key into the template's `special_tokens`) with its type id.
    Special { id: String, type_id: u32 },
    /// The sequence A (or B) with its type id.
    Sequence { b: bool, type_id: u32 },
}

/// A post-processor (HF `processors`).
#[derive(Clone, Debug, PartialEq)]
pub enum PostProcessor {
    ByteLevel {
        trim_offsets: bool,
        add_prefix_space: bool,
    },
    Template {
        single: Vec<TemplatePiece>,
        pair: Vec<TemplatePiece>,
        /// name -> (ids, tokens)
        specials: HashMap<String, (Vec<u32>, Vec<String>)>,
    },
    Bert {
        sep: (String, u32),
        cls: (String, u32),
    },
    Roberta {
        sep: (String, u32),
        cls: (String, u32),
        trim_offsets: bool,
        add_prefix_space: bool,
    },
    Sequence(Vec<PostProcessor>),
}

/// `v[k]` as a bool, `default` when absent or not a bool (HF fills defaults the same way).
pub(crate) fn get_bool(v: &Value, k: &str, default: bool) -> bool {
    v.get(k).and_then(|x| x.as_bool()).unwrap_or(default)
}

fn parse_token_pair(v: Option<&Value>, what: &str) -> Result<(String, u32), String> {
    let arr = v.and_then(|x| x.as_array()).ok_or_else(|| format!("post_processor: '{what}' must be [token, id]"))?;
    match (arr.first().and_then(|x| x.as_str()), arr.get(1).and_then(|x| x.as_u64())) {
        (Some(t), Some(id)) if id <= u64::from(u32::MAX) => Ok((t.to_string(), id as u32)),
        _ => Err(format!("post_processor: '{what}' must be [token, id]")),
    }
}

fn parse_template(v: Option<&Value>) -> Result<Vec<TemplatePiece>, String> {
    let Some(v) = v else { return Ok(Vec::new()) };
    let arr = v.as_array().ok_or("post_processor TemplateProcessing: template must be a list")?;
    let mut out = Vec::new();
    for item in arr {
        if let Some(s) = item.get("SpecialToken") {
            out.push(TemplatePiece::Special {
                id: s.get("id").and_then(|x| x.as_str()).ok_or("TemplateProcessing: SpecialToken without id")?.into(),
                type_id: s.get("type_id").and_then(|x| x.as_u64()).unwrap_or(0) as u32,
            });
        } else if let Some(s) = item.get("Sequence") {
            let id = s.get("id").and_then(|x| x.as_str()).unwrap_or("A");
            out.push(TemplatePiece::Sequence {
                b: id == "B",
                type_id: s.get("type_id").and_then(|x| x.as_u64()).unwrap_or(0) as u32,
            });
        } else {
            return Err(format!("post_processor TemplateProcessing: unknown template piece {item}"));
        }
    }
    Ok(out)
}

impl PostProcessor {
    pub fn from_json(v: &Value) -> Result<Self, String> {
        let ty = v.get("type").and_then(|t| t.as_str()).ok_or("post_processor: missing string field 'type'")?;
        Ok(match ty {
            "ByteLevel" => PostProcessor::ByteLevel {
                trim_offsets: get_bool(v, "trim_offsets", true),
                add_prefix_space: get_bool(v, "add_prefix_space", true),
            },
            "TemplateProcessing" => {
                let mut specials = HashMap::new();
                if let Some(map) = v.get("special_tokens").and_then(|x| x.as_object()) {
                    for (name, st) in map {
                        let ids: Vec<u32> = st
                            .get("ids")
                            .and_then(|x| x.as_array())
                            .ok_or_else(|| format!("TemplateProcessing: special token {name:?} without ids"))?
                            .iter()
                            .map(|x| x.as_u64().map(|i| i as u32).ok_or("TemplateProcessing: non-integer id"))
                            .collect::<Result<_, _>>()?;
                        let tokens: Vec<String> = st
                            .get("tokens")
                            .and_then(|x| x.as_array())
                            .ok_or_else(|| format!("TemplateProcessing: special token {name:?} without tokens"))?
                            .iter()
                            .map(|x| x.as_str().map(String::from).ok_or("TemplateProcessing: non-string token"))
                            .collect::<Result<_, _>>()?;
                        if ids.len() != tokens.len() {
                            return Err(format!(
                                "TemplateProcessing: special token {name:?}: ids and tokens differ in length"
                            ));
                        }
                        specials.insert(name.clone(), (ids, tokens));
                    }
                }
                let single = parse_template(v.get("single"))?;
                let pair = parse_template(v.get("pair"))?;
                for p in single.iter().chain(pair.iter()) {
                    if let TemplatePiece::Special { id, .. } = p {
                        if !specials.contains_key(id) {
                            return Err(format!("TemplateProcessing: missing special token {id:?}"));
                        }
                    }
                }
                PostProcessor::Template { single, pair, specials }
            }
            "BertProcessing" => PostProcessor::Bert {
                sep: parse_token_pair(v.get("sep"), "sep")?,
                cls: parse_token_pair(v.get("cls"), "cls")?,
            },
            "RobertaProcessing" => PostProcessor::Roberta {
                sep: parse_token_pair(v.get("sep"), "sep")?,
                cls: parse_token_pair(v.get("cls"), "cls")?,
                trim_offsets: get_bool(v, "trim_offsets", true),
                add_prefix_space: get_bool(v, "add_prefix_space", true),
            },
            "Sequence" => PostProcessor::Sequence(
                v.get("processors")
                    .and_then(|x| x.as_array())
                    .ok_or("post_processor Sequence: missing 'processors'")?
                    .iter()
                    .map(PostProcessor::from_json)
                    .collect::<Result<_, _>>()?,
            ),
            other => return Err(format!("unsupported post_processor type '{other}'")),
        })
    }

    /// Number of tokens the processor adds (reserved by truncation).
    pub fn added_tokens(&self, is_pair: bool) -> usize {
        match self {
            PostProcessor::ByteLevel { .. } => 0,
            PostProcessor::Template { single, pair, specials } => (if is_pair { pair } else { single })
                .iter()
                .map(|p| match p {
                    TemplatePiece::Special { id, .. } => specials.get(id).map_or(0, |s| s.0.len()),
                    TemplatePiece::Sequence { .. } => 0,
                })
                .sum(),
            PostProcessor::Bert { .. } => {
                if is_pair {
                    3
                } else {
                    2
                }
            }
            PostProcessor::Roberta { .. } => {
                if is_pair {
                    4
                } else {
                    2
                }
            }
            PostProcessor::Sequence(v) => v.iter().map(|p| p.added_tokens(is_pair)).sum(),
        }
    }
}
