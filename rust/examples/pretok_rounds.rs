//! Times a tokenizer's pre-tokenizer alone on a text (the pieces counted, nothing encoded), beside the
//! whole encode of the same text, to tell the scanner's share of an encode:
//! `cargo run --release --example pretok_rounds -- TOKENIZER.json FILE [SLICE_MB] [ROUNDS]`.
use std::time::Instant;
use subword_core::tokenizer::Tokenizer;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: pretok_rounds TOKENIZER.json FILE [SLICE_MB] [ROUNDS]";
    let tok = Tokenizer::from_json_str(&std::fs::read_to_string(args.get(1).ok_or(usage)?)?)?;
    let text = std::fs::read_to_string(args.get(2).ok_or(usage)?)?;
    let slice_mb: f64 = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(0.3);
    let rounds: usize = args.get(4).map(|s| s.parse()).transpose()?.unwrap_or(20);
    let want = ((slice_mb * 1e6) as usize).min(text.len());
    // Cut at a newline (a byte search: `want` may fall inside a multi-byte char, a newline never does).
    let end = text.as_bytes()[want..].iter().position(|&b| b == b'\n').map_or(text.len(), |i| want + i + 1);
    let slice = &text[..end];
    let pre = tok.pre_tokenizer().ok_or("the tokenizer has no pre-tokenizer")?;
    tok.encode_ids(slice, false)?; // the word cache holds the slice's words: the encode times are warm
    let (mut scan, mut encode) = (Vec::new(), Vec::new());
    let mut pieces = 0usize;
    for _ in 0..rounds {
        let t = Instant::now();
        let mut n = 0usize;
        pre.for_each_raw_piece(slice, |p| n += p.len());
        scan.push(t.elapsed().as_secs_f64() * 1e3);
        pieces = std::hint::black_box(n);
        let t = Instant::now();
        std::hint::black_box(tok.encode_ids(slice, false)?);
        encode.push(t.elapsed().as_secs_f64() * 1e3);
    }
    scan.sort_by(f64::total_cmp);
    encode.sort_by(f64::total_cmp);
    eprintln!(
        "{:.2} MB ({pieces} bytes in pieces): pre-tokenizer alone median {:.3} ms, whole encode (seen) median {:.3} ms",
        slice.len() as f64 / 1e6,
        scan[scan.len() / 2],
        encode[encode.len() / 2]
    );
    Ok(())
}
