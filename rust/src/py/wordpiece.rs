//! Bindings for WordPiece training: `train_wordpiece`, `train_wordpiece_words`. Type conversion
//! only; the option handling and the GIL/progress machinery are shared with BPE (`py/train.rs`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::train::{build_pool, config, extract_words, run_trainer, PyWordCounter};
use crate::wordpiece::{train, Criterion};

/// Trains a WordPiece vocabulary on the words of a `WordCounter`; returns the vocab in id order.
/// `criterion` is "likelihood" (score count(ab)/(count(a)count(b))) or "frequency" (HF's trainer).
#[pyfunction]
#[pyo3(signature = (counter, *, vocab_size, criterion = "likelihood", min_frequency = 0,
    special_tokens = Vec::new(), initial_alphabet = Vec::new(), limit_alphabet = None,
    max_token_length = None, continuing_subword_prefix = "##".to_string(), progress = None))]
#[allow(clippy::too_many_arguments)]
fn train_wordpiece(
    py: Python<'_>,
    counter: PyRef<'_, PyWordCounter>,
    vocab_size: usize,
    criterion: &str,
    min_frequency: u64,
    special_tokens: Vec<String>,
    initial_alphabet: Vec<String>,
    limit_alphabet: Option<usize>,
    max_token_length: Option<usize>,
    continuing_subword_prefix: String,
    progress: Option<Py<PyAny>>,
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
    let inner = &counter.inner;
    run_trainer(py, || inner.words_unsorted(), progress, &counter.pool, |w, cb| train(w, &cfg, crit, cb))
}

/// Like `train_wordpiece`, on explicit `(word, count)` pairs, plus `threads`.
#[pyfunction]
#[pyo3(signature = (words, *, vocab_size, criterion = "likelihood", min_frequency = 0,
    special_tokens = Vec::new(), initial_alphabet = Vec::new(), limit_alphabet = None,
    max_token_length = None, continuing_subword_prefix = "##".to_string(), progress = None, threads = None))]
#[allow(clippy::too_many_arguments)]
fn train_wordpiece_words(
    py: Python<'_>,
    words: &Bound<'_, PyAny>,
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
    let ws = extract_words(words)?;
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
    let pool = build_pool(threads)?;
    run_trainer(py, move || ws, progress, &pool, |w, cb| train(w, &cfg, crit, cb))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(train_wordpiece, m)?)?;
    m.add_function(wrap_pyfunction!(train_wordpiece_words, m)?)?;
    Ok(())
}
