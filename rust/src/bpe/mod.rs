//! Byte-pair encoding: the HF-compatible trainer and the rank-based encoder.

pub mod char_atoms;
pub mod encode;
pub mod pair_filter;
pub mod pair_table;
pub mod spm_train;
pub mod token_index;
pub mod token_strings;
pub mod train;
pub mod word_table;
pub mod select;
pub mod shared_words;
