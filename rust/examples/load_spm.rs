//! Times loading a SentencePiece `.model` without Python (the figures in `spm/encode.rs`' notes):
//! `cargo run --release --example load_spm -- FILE.model [REPEAT]`. Prints, per run, the
//! milliseconds of parsing the pieces, building the pipeline and the first encode.
use std::time::Instant;
use subword_core::spm::{SpmNormalizer, SpmSpec};
use subword_core::tokenizer::sentencepiece::SpmPipeline;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let data = std::fs::read(args.get(1).ok_or("usage: load_spm FILE.model [REPEAT]")?)?;
    let repeat: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(5);
    for _ in 0..repeat {
        let t = Instant::now();
        let parts = subword_core::spm::proto::parse_model(&data)?;
        let parsed = t.elapsed().as_secs_f64() * 1e3;
        let bpe = parts.pieces.iter().any(|p| p.2 == 6);
        let norm = SpmNormalizer::from_spec(&SpmSpec::default());
        let p = SpmPipeline::new(parts.pieces, if bpe { 2 } else { 1 }, norm, bpe, " \u{2047} ".into())?;
        let built = t.elapsed().as_secs_f64() * 1e3;
        let n = p.encode("Hello world, this is the first encode.")?.ids.len();
        let first = t.elapsed().as_secs_f64() * 1e3;
        let d = Instant::now();
        drop(p);
        println!("parse {parsed:.2} ms, pipeline {:.2} ms, first encode {:.2} ms ({n} ids), drop {:.2} ms",
                 built - parsed, first - built, d.elapsed().as_secs_f64() * 1e3);
    }
    Ok(())
}
