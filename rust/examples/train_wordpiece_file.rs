//! Times BERT counting and WordPiece training on a text file (the figures in `wordpiece.rs`):
//! `cargo run --release --example train_wordpiece_file -- FILE 30000 likelihood|pmi|frequency`
use std::time::Instant;
use subword_core::bpe::train::BpeTrainerConfig;
use subword_core::count::WordCounter;
use subword_core::normalize::Normalizer;
use subword_core::pretok::PreTokenizer;
use subword_core::wordpiece::{train, Criterion};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).expect("usage: FILE VOCAB_SIZE likelihood|pmi|frequency");
    let vocab: usize = args[2].parse().expect("usage: FILE VOCAB_SIZE likelihood|pmi|frequency");
    let crit = Criterion::parse(&args[3]).expect("usage: FILE VOCAB_SIZE likelihood|pmi|frequency");
    let t = Instant::now();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut wc = WordCounter::new(
        PreTokenizer::Bert,
        Some(Normalizer::Bert { clean_text: true, handle_chinese_chars: true, strip_accents: None, lowercase: true }),
    );
    wc.feed(&lines).expect("a &str is UTF-8");
    let words = wc.words_unsorted();
    let t1 = t.elapsed();
    let cfg = BpeTrainerConfig {
        vocab_size: vocab,
        special_tokens: ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"].iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    let v = train(&words, &cfg, crit, &mut |_| Ok(())).expect("usage: FILE VOCAB_SIZE likelihood|pmi|frequency");
    eprintln!("count {:?} train {:?} vocab {} words {}", t1, t.elapsed() - t1, v.len(), words.len());
}
