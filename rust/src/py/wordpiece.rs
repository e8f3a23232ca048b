//! Bindings for WordPiece training: `train_wordpiece`. Type conversion
//! only; the option handling and the GIL/progress machinery are shared with BPE (`py/train.rs`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::train::{config, TrainInput, WordSource};
use crate::wordpiece::{effective_config, train, train_selected, Criterion};

/// Trains a WordPiece vocabulary on `source` (a `WordCounter`, a `TrainingWords`, or `(word, count)` pairs with a pool
/// of `threads`); returns the vocab in id order. `criterion` is "likelihood" (the largest gain in
/// training log-likelihood), "pmi" (score count(ab)/(count(a)count(b))) or "frequency" (HF's trainer).
#[pyfunction]
#[pyo3(signature = (source, *, vocab_size, criterion = "likelihood", min_frequency = 0,
    special_tokens = Vec::new(), initial_alphabet = Vec::new(), limit_alphabet = None,
    max_token_length = None, continuing_subword_prefix = "##".to_string(), progress = None, threads = None))]
#[allow(clippy::too_many_arguments)]
fn train_wordpiece(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    vocab_size: usize,
    criterion: &str,
    min_frequency: u64,
    special_tokens: Vec<String>,
    initial_alphabet: Vec<String>,
    limit_alphabet: Option<usize>,
    max_token_length: Option<usize>,
    continuing_subword_prefix: String,
    progress: Option<Py<PyAny>>,
    threads: Option<usize>,
) -> PyResult<Vec<String>> {
    let crit = Criterion::parse(criterion).map_err(PyValueError::new_err)?;
    let cfg = config(
        vocab_size,
        min_frequency,
        special_tokens,
        initial_alphabet,
        limit_alphabet,
        max_token_length,
        Some(continuing_subword_prefix),
        None,
    );
    WordSource::from_py(source, threads)?.train(py, progress, |words, cb| match words {
        TrainInput::All(words) => train(words, &cfg, crit, cb),
        TrainInput::Selected(slot) => {
            let units = crit.needs_units();
            slot.take_for(&effective_config(&cfg), units).and_then(|sel| train_selected(sel, &cfg, crit, cb))
        }
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(train_wordpiece, m)?)?;
    Ok(())
}
