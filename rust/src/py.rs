//! PyO3 bindings: type conversion and GIL release only; the algorithms live in the plain modules.
//! One submodule per component (`py/train.rs`, `py/tokenizer.rs`); this file registers them.

use pyo3::prelude::*;

mod spm;
mod tokenizer;
mod train;
mod unigram;
mod wordpiece;

/// The private native module `subword._core`.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    train::register(m)?;
    tokenizer::register(m)?;
    spm::register(m)?;
    unigram::register(m)?;
    wordpiece::register(m)?;
    Ok(())
}
