//! The per-line reduction and the resampling behind `subword compare` (Python: `subword.compare`).
//!
//! - [`segment`]   UAX #29 word segments of a line, the segment-type index kept across chunks
//! - [`lines`]     one chunk of lines encoded by every tokenizer, reduced to per-line counts
//! - [`resample`]  seeded bootstrap counts (Poisson draws corrected to exactly n)
//! - [`typecounts`] replicates of the type-count metrics
//! - [`colsums`]   replicate sums of per-line columns (every ratio metric), without a weights matrix
//! - [`roundtrip`] the losslessness check from per-id pieces decoded once
//! - [`vocab`]     what each id stands for, as bytes (the vocabulary table of the metrics)
//!
//! The Python reference (`subword/compare/collect.py`, numpy) defines every number; this module
//! computes the same integers per line, in parallel, so the comparison costs little more than the
//! encoding. The tests in `tests/test_compare_native.py` check that both give identical arrays.

pub mod colsums;
pub mod lines;
pub mod resample;
pub mod roundtrip;
pub mod segment;
pub mod typecounts;
pub mod vocab;
