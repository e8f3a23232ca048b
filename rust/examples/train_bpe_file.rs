//! End-to-end timing of byte-level BPE training on a text file, without Python:
//! `cargo run --release --example train_bpe_file -- FILE VOCAB_SIZE [DUMP]`
//! Prints the time of each stage; with a third argument, writes the vocab and merges there.
use std::time::Instant;
use subword_core::bpe::train::{train, BpeTrainerConfig};
use subword_core::count::WordCounter;
use subword_core::pretok::{bytes_to_unicode, PreTokenizer};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).ok_or("usage: train_bpe_file FILE VOCAB_SIZE")?;
    let vocab_size: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(32000);
    let t0 = Instant::now();
    let text = std::fs::read_to_string(path)?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let t1 = Instant::now();
    let pre = PreTokenizer::ByteLevel { add_prefix_space: false, use_regex: true, trim_offsets: true };
    let mut wc = WordCounter::new(pre, None);
    wc.feed(&lines)?;
    let t2 = Instant::now();
    let words = wc.words_unsorted();
    let t3 = Instant::now();
    let cfg = BpeTrainerConfig { vocab_size, initial_alphabet: bytes_to_unicode().to_vec(), ..Default::default() };
    let out = train(&words, &cfg, &mut |_| Ok(()))?;
    let t4 = Instant::now();
    eprintln!(
        "read {:.3}s  count {:.3}s ({} distinct)  map {:.3}s  train {:.3}s  total {:.3}s  vocab {} merges {}",
        (t1 - t0).as_secs_f64(),
        (t2 - t1).as_secs_f64(),
        wc.len(),
        (t3 - t2).as_secs_f64(),
        (t4 - t3).as_secs_f64(),
        (t4 - t0).as_secs_f64(),
        out.vocab.len(),
        out.merges.len()
    );
    if let Some(dump) = args.get(3) {
        let mut txt = String::new();
        for t in &out.vocab {
            txt.push_str(t);
            txt.push('\n');
        }
        txt.push_str("--\n");
        for (a, b) in &out.merges {
            txt.push_str(&format!("{a} {b}\n"));
        }
        std::fs::write(dump, txt)?;
    }
    Ok(())
}
