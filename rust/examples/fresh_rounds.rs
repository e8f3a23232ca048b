//! Times encoding successive slices of a text, each new to the word cache, against a slice it has
//! seen (what bench_peers' one-string column measures, without Python):
//! `cargo run --release --example fresh_rounds -- TOKENIZER.json FILE [SLICE_MB] [ROUNDS] [evict]`.
//! `evict`: read 64 MB of other memory before each timed call, as the benchmark's `gc.collect()` and
//! the other libraries' calls between ours push our tables out of the CPU caches.
use std::io::Write;
use std::time::Instant;
use subword_core::tokenizer::Tokenizer;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: fresh_rounds TOKENIZER.json FILE [SLICE_MB] [ROUNDS] [evict]";
    let tok = Tokenizer::from_json_str(&std::fs::read_to_string(args.get(1).ok_or(usage)?)?)?;
    let text = std::fs::read_to_string(args.get(2).ok_or(usage)?)?;
    let slice_mb: f64 = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(0.3);
    let rounds: usize = args.get(4).map(|s| s.parse()).transpose()?.unwrap_or(6);
    let evict = args.get(5).is_some_and(|s| s == "evict");
    // Slices cut at newlines, as bench_peers cuts its rounds.
    let mut slices = Vec::new();
    let mut start = 0usize;
    let want = (slice_mb * 1e6) as usize;
    while slices.len() < rounds && start < text.len() {
        let mut end = (start + want).min(text.len());
        // A byte search: `end` may fall inside a multi-byte char, and a newline never does.
        end = text.as_bytes()[end..].iter().position(|&b| b == b'\n').map_or(text.len(), |i| end + i + 1);
        slices.push(&text[start..end]);
        start = end;
    }
    let mut other = vec![1u8; 64 << 20];
    // `PERF_CTL=FIFO` (perf record -D -1 --control fifo:FIFO): profile the timed calls only.
    let mut perf_ctl = std::env::var_os("PERF_CTL").map(std::fs::File::create).transpose()?;
    let mut time = |s: &str| -> Result<f64, Box<dyn std::error::Error>> {
        if evict {
            for (i, b) in other.iter_mut().enumerate().step_by(64) {
                *b = b.wrapping_add(i as u8);
            }
            std::hint::black_box(&mut other); // the writes must happen
        }
        if let Some(ctl) = perf_ctl.as_mut() {
            ctl.write_all(b"enable\n")?;
        }
        let t = Instant::now();
        tok.encode_ids(s, false)?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if let Some(ctl) = perf_ctl.as_mut() {
            ctl.write_all(b"disable\n")?;
        }
        Ok(ms)
    };
    time(slices[0])?;
    let mut fresh = Vec::new();
    for s in &slices[1..] {
        fresh.push(time(s)?);
    }
    let seen = time(slices[0])?;
    let mb = |s: &str| s.len() as f64 / 1e6;
    eprintln!(
        "seen slice 0: {seen:.2} ms ({:.0} MB/s); fresh slices: {} ms",
        mb(slices[0]) / seen * 1e3,
        fresh.iter().map(|t| format!("{t:.2}")).collect::<Vec<_>>().join(" ")
    );
    Ok(())
}
