//! The first slices a fresh tokenizer encodes (its word cache empty), repeated on clones so a profiler
//! sees mostly that phase: `cargo run --release --example first_rounds -- TOKENIZER.json FILE [SLICE_MB]
//! [ROUNDS] [REPEATS]`. Prints the median time of each round position over the repeats.
use std::time::Instant;
use subword_core::tokenizer::Tokenizer;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: first_rounds TOKENIZER.json FILE [SLICE_MB] [ROUNDS] [REPEATS]";
    let tok = Tokenizer::from_json_str(&std::fs::read_to_string(args.get(1).ok_or(usage)?)?)?;
    let text = std::fs::read_to_string(args.get(2).ok_or(usage)?)?;
    let slice_mb: f64 = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(0.3);
    let rounds: usize = args.get(4).map(|s| s.parse()).transpose()?.unwrap_or(5);
    let repeats: usize = args.get(5).map(|s| s.parse()).transpose()?.unwrap_or(20);
    let want = (slice_mb * 1e6) as usize;
    let mut slices = Vec::new();
    let mut start = 0usize;
    while slices.len() < rounds && start < text.len() {
        let end = (start + want).min(text.len());
        let end = text.as_bytes()[end..].iter().position(|&b| b == b'\n').map_or(text.len(), |i| end + i + 1);
        slices.push(&text[start..end]);
        start = end;
    }
    let clones: Vec<Tokenizer> = (0..repeats).map(|_| tok.clone()).collect();
    // Under `perf record -D -1 --control fifo:FIFO`, with PERF_CTL=FIFO: only the encodes are sampled.
    let mut ctl =
        std::env::var("PERF_CTL").ok().map(|p| std::fs::OpenOptions::new().write(true).open(p)).transpose()?;
    let mut perf = |cmd: &[u8]| -> std::io::Result<()> {
        use std::io::Write;
        ctl.as_mut().map_or(Ok(()), |f| f.write_all(cmd).and_then(|()| f.flush()))
    };
    let mut times = vec![Vec::new(); slices.len()];
    for t in &clones {
        perf(b"enable\n")?;
        for (i, s) in slices.iter().enumerate() {
            let t0 = Instant::now();
            t.encode_ids(s, false)?;
            times[i].push(t0.elapsed().as_secs_f64() * 1e3);
        }
        perf(b"disable\n")?;
    }
    let med: Vec<String> = times
        .iter_mut()
        .map(|v| {
            v.sort_by(f64::total_cmp);
            format!("{:.2}", v[v.len() / 2])
        })
        .collect();
    eprintln!("median ms per round position: {}", med.join(" "));
    Ok(())
}
