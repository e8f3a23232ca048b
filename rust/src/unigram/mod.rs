//! Unigram language-model tokenization: the model and its lattice (`lattice.rs`), Viterbi / n-best /
//! sampling encoders (`encode.rs`), the EM trainer with loss-driven pruning (`train.rs`) and its
//! suffix-array seeding (`seed.rs`).
//!
//! Two compatibility modes name whose arithmetic is followed:
//! - [`Compat::Spm`]: SentencePiece 0.2.3. Scores and lattice sums are rounded to f32 after every
//!   operation, as SentencePiece stores them in `float`.
//! - [`Compat::Hf`]: HF `tokenizers` 0.23.3 (`models/unigram`), f64 throughout.

pub mod darray;
pub mod encode;
pub mod lattice;
pub mod seed;
pub mod train;

pub use encode::{PieceKind, UnigramModel};

/// Whose rules (float width, trainer quirks) a Unigram model or trainer follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compat {
    Spm,
    Hf,
}

impl Compat {
    /// Parses `"spm"` / `"hf"`.
    pub fn parse(s: &str) -> Result<Compat, String> {
        match s {
            "spm" => Ok(Compat::Spm),
            "hf" => Ok(Compat::Hf),
            other => Err(format!("unknown compat {other:?}: expected \"spm\" or \"hf\"")),
        }
    }

    /// Rounds `x` to the float width of this mode (f32 for SentencePiece, f64 for HF).
    #[inline]
    pub fn r(self, x: f64) -> f64 {
        match self {
            Compat::Spm => x as f32 as f64,
            Compat::Hf => x,
        }
    }
}

/// SentencePiece's unknown-piece penalty: the unk node scores `min_score - 10`.
pub const UNK_PENALTY: f64 = 10.0;
