//! Bindings for training: `WordCounter` and `train_bpe` (on a counter or on explicit word counts).
//!
//! Type conversion and GIL handling only. The heavy work runs with the GIL released; the progress
//! callback re-acquires it every few hundred merges, runs the Python callable and checks signals,
//! so Ctrl-C (KeyboardInterrupt) or an exception raised by the callback stops training and is
//! re-raised unchanged.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use crate::bpe::train::{train, BpeModelOut, BpeTrainerConfig, Progress, TrainError};
use crate::count::WordCounter;
use crate::normalize::Normalizer;
use crate::pretok::PreTokenizer;

pub(crate) use super::{build_pool, in_pool};

/// What the training functions return to Python: (vocab in id order, merges in rank order).
type Trained = (Vec<String>, Vec<(String, String)>);

/// Counts pre-tokenized words over batches of lines (parallel, GIL released).
#[pyclass(name = "WordCounter", module = "subword._core")]
pub struct PyWordCounter {
    pub(crate) inner: WordCounter,
    pub(crate) pool: Option<Arc<rayon::ThreadPool>>,
}

#[pymethods]
impl PyWordCounter {
    #[new]
    #[pyo3(signature = (pre_tokenizer, normalizer = None, threads = None))]
    fn new(pre_tokenizer: &str, normalizer: Option<&str>, threads: Option<usize>) -> PyResult<Self> {
        let pre = PreTokenizer::from_json_str(pre_tokenizer).map_err(PyValueError::new_err)?;
        let norm = match normalizer {
            None => None,
            Some(s) => Some(Normalizer::from_json_str(s).map_err(PyValueError::new_err)?),
        };
        Ok(PyWordCounter { inner: WordCounter::new(pre, norm), pool: build_pool(threads)? })
    }

    /// Counts the words of `lines` (a list of str). Lines should keep their line endings, as HF's
    /// `train_from_files` does.
    fn feed(&mut self, py: Python<'_>, lines: &Bound<'_, PyList>) -> PyResult<()> {
        // Copy the lines into one buffer (one allocation instead of one per line), then count
        // slices of it without the GIL.
        let mut buf = String::new();
        let mut ends = Vec::with_capacity(lines.len());
        for (i, item) in lines.iter().enumerate() {
            let s = item.downcast::<PyString>().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "lines[{i}] must be str, got {}",
                    item.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
                ))
            })?;
            buf.push_str(s.to_str()?);
            ends.push(buf.len());
        }
        let inner = &mut self.inner;
        let pool = &self.pool;
        py.detach(|| {
            let mut refs = Vec::with_capacity(ends.len());
            let mut st = 0;
            for &e in &ends {
                refs.push(&buf[st..e]);
                st = e;
            }
            in_pool(pool, || inner.feed(&refs));
        });
        Ok(())
    }

    /// The words as the model sees them (byte-level mapped for ByteLevel), sorted, with counts.
    fn words(&self, py: Python<'_>) -> Vec<(String, u64)> {
        let (inner, pool) = (&self.inner, &self.pool);
        py.detach(|| in_pool(pool, || inner.words()))
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __repr__(&self) -> String {
        format!("WordCounter({} distinct words)", self.inner.len())
    }
}

/// Builds the trainer options from the Python keyword arguments.
#[allow(clippy::too_many_arguments)]
pub(crate) fn config(
    vocab_size: usize,
    min_frequency: u64,
    special_tokens: Vec<String>,
    initial_alphabet: Vec<String>,
    limit_alphabet: Option<usize>,
    max_token_length: Option<usize>,
    continuing_subword_prefix: Option<String>,
    end_of_word_suffix: Option<String>,
) -> BpeTrainerConfig {
    BpeTrainerConfig {
        vocab_size,
        min_frequency,
        special_tokens,
        // As HF: only the first char of each string counts.
        initial_alphabet: initial_alphabet.iter().filter_map(|s| s.chars().next()).collect(),
        limit_alphabet,
        max_token_length,
        continuing_subword_prefix,
        end_of_word_suffix,
    }
}

/// Runs `trainer` on the words without the GIL; the progress callback and signal checks run with
/// it. Shared by the BPE and WordPiece bindings.
pub(crate) fn run_trainer<T: Send>(
    py: Python<'_>,
    words: impl FnOnce() -> Vec<(String, u64)> + Send,
    progress: Option<Py<PyAny>>,
    pool: &Option<Arc<rayon::ThreadPool>>,
    trainer: impl FnOnce(&[(String, u64)], &mut crate::bpe::train::ProgressFn<'_>) -> Result<T, TrainError> + Send,
) -> PyResult<T> {
    let mut py_err: Option<PyErr> = None;
    let result = {
        let py_err = &mut py_err;
        let progress = &progress;
        py.detach(move || {
            in_pool(pool, move || {
                let words = words();
                let mut cb = |p: Progress| -> Result<(), String> {
                    Python::attach(|py| {
                        let r = match progress {
                            Some(f) => f.call1(py, (p.stage.name(), p.current, p.total)).map(|_| ()),
                            None => Ok(()),
                        };
                        match r.and_then(|_| py.check_signals()) {
                            Ok(()) => Ok(()),
                            Err(e) => {
                                let msg = e.to_string();
                                *py_err = Some(e);
                                Err(msg)
                            }
                        }
                    })
                };
                trainer(&words, &mut cb)
            })
        })
    };
    match result {
        Ok(t) => Ok(t),
        Err(TrainError::Aborted(msg)) => Err(py_err.unwrap_or_else(|| PyValueError::new_err(msg))),
        Err(e @ TrainError::Config(_)) => Err(PyValueError::new_err(e.to_string())),
    }
}

/// Where the training words come from: a `WordCounter` (its words and its thread pool) or explicit
/// `(word, count)` pairs (words as the model sees them) with a pool of `threads`.
pub(crate) enum WordSource<'py> {
    Counter(PyRef<'py, PyWordCounter>),
    Pairs(Vec<(String, u64)>, Option<Arc<rayon::ThreadPool>>),
}

impl<'py> WordSource<'py> {
    pub(crate) fn from_py(source: &Bound<'py, PyAny>, threads: Option<usize>) -> PyResult<Self> {
        if let Ok(counter) = source.downcast::<PyWordCounter>() {
            if threads.is_some() {
                return Err(PyValueError::new_err(
                    "threads: a WordCounter trains with the thread pool it counted with",
                ));
            }
            return Ok(WordSource::Counter(counter.try_borrow()?));
        }
        Ok(WordSource::Pairs(extract_words(source)?, build_pool(threads)?))
    }

    /// Runs `trainer` on these words (see [`run_trainer`]).
    pub(crate) fn train<T: Send>(
        self,
        py: Python<'_>,
        progress: Option<Py<PyAny>>,
        trainer: impl FnOnce(&[(String, u64)], &mut crate::bpe::train::ProgressFn<'_>) -> Result<T, TrainError> + Send,
    ) -> PyResult<T> {
        match self {
            WordSource::Counter(counter) => {
                let inner = &counter.inner;
                run_trainer(py, || inner.words_unsorted(), progress, &counter.pool, trainer)
            }
            WordSource::Pairs(words, pool) => run_trainer(py, move || words, progress, &pool, trainer),
        }
    }
}

/// Trains an HF-compatible BPE model on `source`: a `WordCounter`, or `(word, count)` pairs (words
/// as the model sees them; `threads` sizes their pool). Returns `(vocab in id order, merges in
/// rank order)`.
#[pyfunction]
#[pyo3(signature = (source, *, vocab_size, min_frequency = 0, special_tokens = Vec::new(),
    initial_alphabet = Vec::new(), limit_alphabet = None, max_token_length = None,
    continuing_subword_prefix = None, end_of_word_suffix = None, progress = None, threads = None))]
#[allow(clippy::too_many_arguments)]
fn train_bpe(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    vocab_size: usize,
    min_frequency: u64,
    special_tokens: Vec<String>,
    initial_alphabet: Vec<String>,
    limit_alphabet: Option<usize>,
    max_token_length: Option<usize>,
    continuing_subword_prefix: Option<String>,
    end_of_word_suffix: Option<String>,
    progress: Option<Py<PyAny>>,
    threads: Option<usize>,
) -> PyResult<Trained> {
    let cfg = config(
        vocab_size,
        min_frequency,
        special_tokens,
        initial_alphabet,
        limit_alphabet,
        max_token_length,
        continuing_subword_prefix,
        end_of_word_suffix,
    );
    WordSource::from_py(source, threads)?
        .train(py, progress, |words, cb| train(words, &cfg, cb).map(|BpeModelOut { vocab, merges }| (vocab, merges)))
}

/// `(str, int)` pairs from a Python iterable, with errors naming the bad item.
pub(crate) fn extract_words(words: &Bound<'_, PyAny>) -> PyResult<Vec<(String, u64)>> {
    let mut ws: Vec<(String, u64)> = Vec::new();
    for (i, item) in words.try_iter()?.enumerate() {
        let item = item?;
        let t = item
            .downcast::<PyTuple>()
            .ok()
            .filter(|t| t.len() == 2)
            .ok_or_else(|| PyValueError::new_err(format!("words[{i}] must be a (str, int) tuple")))?;
        let w: String =
            t.get_item(0)?.extract().map_err(|_| PyValueError::new_err(format!("words[{i}][0] must be str")))?;
        let c: u64 = t.get_item(1)?.extract().map_err(|_| {
            PyValueError::new_err(format!("words[{i}][1] must be an int >= 0 (got a negative or non-int count)"))
        })?;
        ws.push((w, c));
    }
    Ok(ws)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyWordCounter>()?;
    m.add_function(wrap_pyfunction!(train_bpe, m)?)?;
    Ok(())
}
