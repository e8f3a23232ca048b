//! The per-line pass of `subword compare` (Python: `subword.compare`).
//!
//! - [`segment`]   UAX #29 word segments of a line, the segment-type index kept across chunks
//! - [`lines`]     one chunk of lines encoded by every tokenizer, reduced to per-line counts and
//!                 per-block type counts
//! - [`roundtrip`] the losslessness check from per-id pieces decoded once
//! - [`vocab`]     what each id stands for, as bytes (the vocabulary table of the metrics)
//!
//! This is the one implementation of the pass; the readable reference that defines every number is
//! the tests' (`tests/_compare_reference.py`), and `tests/test_compare_pass.py` checks that both give
//! identical arrays. The bootstrap over the counts is plain numpy (`subword/compare/bootstrap.py`).

pub mod lines;
pub mod roundtrip;
pub mod segment;
pub mod vocab;
