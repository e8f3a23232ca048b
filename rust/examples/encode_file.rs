//! Times encoding a text file with a tokenizer.json, without Python (the figures in `pretok/modern.rs`):
//! `cargo run --release --example encode_file -- TOKENIZER.json FILE [REPEAT] [one|lines|split]`.
//! `one`: the whole text as one string; `lines`: the lines as a batch (all cores); `split`: the
//! pre-tokenizer alone. Prints MB/s of wall time per run (use `perf stat` for CPU time on a busy machine).
use std::time::Instant;
use subword_core::tokenizer::Tokenizer;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: encode_file TOKENIZER.json FILE [REPEAT] [one|lines|split]";
    let json = std::fs::read_to_string(args.get(1).ok_or(usage)?)?;
    let tok = Tokenizer::from_json_str(&json)?;
    let text = std::fs::read_to_string(args.get(2).ok_or(usage)?)?;
    let repeat: usize = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(3);
    let mode = args.get(4).map_or("one", String::as_str);
    let pre = subword_core::pretok::PreTokenizer::from_json(
        serde_json::from_str::<serde_json::Value>(&json)?.get("pre_tokenizer").ok_or("no pre_tokenizer")?,
    )?;
    let mb = text.len() as f64 / 1e6;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    for _ in 0..repeat {
        let t = Instant::now();
        let n = match mode {
            "one" => tok.encode_ids(&text, false)?.len(),
            "lines" => tok.encode_batch_ids(&lines, false)?.iter().map(Vec::len).sum(),
            "split" => {
                let mut n = 0usize;
                pre.for_each_raw_piece(&text, |_| n += 1);
                n
            }
            _ => return Err(usage.into()),
        };
        let s = t.elapsed().as_secs_f64();
        eprintln!("{mode}: {n} ids/pieces, {:.1} MB/s ({:.2} ms)", mb / s, s * 1e3);
    }
    Ok(())
}
