//! Times the miss path alone: each round encodes the same slice with a fresh clone of the tokenizer,
//! whose word cache is empty while the model's first-sight tables (shared by clones) are built, so
//! every word is computed: `cargo run --release --example miss_rounds -- TOKENIZER.json FILE [SLICE_MB]
//! [ROUNDS]`. Prints the median and the fastest round.
use std::time::Instant;
use subword_core::tokenizer::Tokenizer;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: miss_rounds TOKENIZER.json FILE [SLICE_MB] [ROUNDS]";
    let tok = Tokenizer::from_json_str(&std::fs::read_to_string(args.get(1).ok_or(usage)?)?)?;
    let text = std::fs::read_to_string(args.get(2).ok_or(usage)?)?;
    let slice_mb: f64 = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(0.3);
    let rounds: usize = args.get(4).map(|s| s.parse()).transpose()?.unwrap_or(15);
    let want = ((slice_mb * 1e6) as usize).min(text.len());
    // Cut at a newline (a byte search: `want` may fall inside a multi-byte char, a newline never does).
    let end = text.as_bytes()[want..].iter().position(|&b| b == b'\n').map_or(text.len(), |i| want + i + 1);
    let slice = &text[..end];
    // Twice with the loaded tokenizer: the first-sight tables get built.
    tok.encode_ids(slice, false)?;
    tok.clone().encode_ids(slice, false)?;
    let mut times = Vec::new();
    for _ in 0..rounds {
        let fresh = tok.clone();
        let t = Instant::now();
        std::hint::black_box(fresh.encode_ids(slice, false)?);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    eprintln!(
        "every word missed, {:.2} MB: median {:.2} ms, fastest {:.2} ms",
        slice.len() as f64 / 1e6,
        times[times.len() / 2],
        times[0]
    );
    Ok(())
}
