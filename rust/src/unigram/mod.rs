//! Unigram language-model tokenization: the model and its lattice (`lattice.rs`), Viterbi / n-best /
//! sampling encoders (`encode.rs`), the EM trainer with loss-driven pruning (`train.rs`) and its
//! suffix-array seeding (`seed.rs`).
//!
//! Two compatibility modes name whose arithmetic is followed:
//! - [`Compat::Spm`]: SentencePiece 0.2.3. Scores and lattice sums are rounded to f32 after every
//!   operation, as SentencePiece stores them in `float`; its encoder's Viterbi also resets its sums on
//!   long strings ([`SPM_SCORE_RESET`]).
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

    /// Whether a Viterbi value `v` at a start makes this mode's encoder reset ([`SPM_SCORE_RESET`]).
    #[inline]
    pub fn resets_at(self, v: f64) -> bool {
        self == Compat::Spm && !(-SPM_SCORE_RESET..=SPM_SCORE_RESET).contains(&v)
    }
}

/// SentencePiece 0.2.3's Viterbi (`EncodeOptimized`) takes the values of a long string relative to a
/// start whose value has grown past this magnitude (`kScoreResetThreshold`): it subtracts that value
/// from every value held at or after the start and goes on from 0, so that the float sums stay small.
/// Where rounding decides a near-tie this changes the path, so `Compat::Spm` does the same (without it,
/// 0.3 MB of English as one string took another path about 20,000 pieces in).
pub const SPM_SCORE_RESET: f64 = 100_000.0;

/// SentencePiece's unknown-piece penalty: the unk node scores `min_score - 10`.
pub const UNK_PENALTY: f64 = 10.0;
