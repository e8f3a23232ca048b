//! Times building a BERT pipeline from a `vocab.txt` without Python:
//! `cargo run --release --example load_vocab_txt -- vocab.txt SKELETON.json [REPEAT]` (the skeleton is the
//! tokenizer.json without the vocab that `subword.formats.hf_json.core_skeleton` writes).
use std::time::Instant;
use subword_core::io::ModelData;
use subword_core::tokenizer::Tokenizer;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: load_vocab_txt vocab.txt SKELETON.json [REPEAT]";
    let data = std::fs::read(args.get(1).ok_or(usage)?)?;
    let skeleton = std::fs::read_to_string(args.get(2).ok_or(usage)?)?;
    let repeat: usize = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(5);
    for _ in 0..repeat {
        let t = Instant::now();
        let index = subword_core::io::vocab_txt::parse(&data).ok_or("not a clean vocab.txt")?;
        let parsed = t.elapsed().as_secs_f64() * 1e3;
        let tok = Tokenizer::from_parts(&skeleton, ModelData::WordPieceTable { index })?;
        let built = t.elapsed().as_secs_f64() * 1e3;
        let n = tok.encode_ids("Hello world, this is the first encode.", true)?.len();
        let first = t.elapsed().as_secs_f64() * 1e3;
        println!("parse {parsed:.2} ms, pipeline {:.2} ms, first encode {:.2} ms ({n} ids)", built - parsed, first - built);
    }
    Ok(())
}
