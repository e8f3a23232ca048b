//! subword-core: the algorithms behind `subword`, with no knowledge of Python.
//!
//! Module map
//! - [`normalize`]  text normalizers (NFC, NFKC, lowercase, strip accents) with offset alignment
//! - [`pretok`]     pre-tokenizers: HF `Whitespace` and `ByteLevel` (GPT-2 pattern, byte-to-unicode table)
//! - [`count`]      parallel word counting over pre-tokenized text
//! - [`counts_file`] the sorted record stream of word-counts files and spilled runs (CRC-32, k-way merge)
//! - [`bpe`]        BPE training (HF-compatible merge loop) and encoding (merges by rank, cache, dropout)
//! - [`wordpiece`]  WordPiece: likelihood/frequency trainer, greedy longest-match encoder
//! - [`io`]         fast readers of tokenizer files (tokenizer.json, tiktoken ranks, vocab.txt) into model data
//! - [`model`]      the model enum the pipeline dispatches on (BPE, WordPiece)
//! - [`spm`]        the SentencePiece pipeline: normalizer, LoadSentences, piece validity
//! - [`unigram`]    Unigram: lattice, Viterbi / n-best / sampling, EM trainer (sentencepiece 0.2.3 or HF rules)
//! - [`parallel`]   fork safety: whether rayon's global pool may be used in this process
//! - [`postprocess`] post-processors (special tokens around sequences); [`decode`] decoders
//! - [`compare`]    the per-line reduction and resampling of `subword compare`
//! - [`tokenizer`]  the encode pipeline: added tokens -> normalizer -> pre-tokenizer -> model -> post-processor
//!
//! The PyO3 bindings live in `py.rs` (and `py/`), compiled only with the cargo feature `python`.
//!
//! Performance notes
//! - Each hot module starts with its own notes (see `bpe/train.rs`, `bpe/encode.rs`, `pretok.rs`).

pub mod added;
pub mod batch_text;
pub mod bpe;
pub mod compare;
pub mod count;
pub mod counts_file;
pub mod decode;
pub mod encoding;
pub mod huge;
pub mod io;
pub mod model;
pub mod normalize;
pub mod parallel;
pub mod piece_index;
pub mod postprocess;
pub mod pretok;
pub mod spm;
pub mod tokenizer;
pub mod wordpiece;
pub mod wordpiece_cache;
pub mod wordpiece_prefixes;

pub mod unigram;

#[cfg(feature = "python")]
mod alloc;
#[cfg(feature = "python")]
mod py;
