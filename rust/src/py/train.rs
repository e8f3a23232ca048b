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

use sha2::{Digest, Sha256};

use crate::batch_text::{BatchText, NotUtf8};
use crate::bpe::select::select;
use crate::bpe::train::{
    check_affixes, train, train_selected, BpeModelOut, BpeTrainerConfig, Progress, Selected, TrainError,
};
use crate::count::WordCounter;
use crate::counts_file::{
    merge_sorted, Crc32, Named, RecordBytes, RecordReader, RecordWriter, SortedRecords, StreamSummary, VecRecords,
};
use crate::normalize::Normalizer;
use crate::pretok::PreTokenizer;

pub(crate) use super::{build_pool, in_pool};

/// What the training functions return to Python: (vocab in id order, merges in rank order).
type Trained = (Vec<String>, Vec<(String, String)>);

/// The SHA-256 and the UTF-8 length of an input's lines, fed batch by batch with
/// [`PyWordCounter::feed`] (the provenance a counts file records for each input).
#[pyclass(name = "InputDigest", module = "subword._core")]
#[derive(Default)]
pub struct PyInputDigest {
    sha: Sha256,
    bytes: u64,
}

impl PyInputDigest {
    /// Hashes `lines` in order (each made UTF-8 in a reused buffer where it is not yet).
    fn update<S: BatchText>(&mut self, lines: &[S]) -> Result<(), NotUtf8> {
        let mut scratch = Vec::new();
        for line in lines {
            let n = line.with_utf8(&mut scratch, |s| {
                self.sha.update(s.as_bytes());
                s.len()
            })?;
            self.bytes += n as u64;
        }
        Ok(())
    }
}

#[pymethods]
impl PyInputDigest {
    #[new]
    fn new() -> Self {
        PyInputDigest::default()
    }

    /// The SHA-256 of the UTF-8 of all lines fed so far, in hex (as `hashlib`'s `hexdigest`).
    fn hexdigest(&self) -> String {
        self.sha.clone().finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The UTF-8 bytes of all lines fed so far.
    #[getter]
    fn bytes(&self) -> u64 {
        self.bytes
    }
}

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
    /// `train_from_files` does. The lines are read in place without the GIL (the list's items are held
    /// meanwhile); a non-ASCII line is made UTF-8 by the worker that counts it. With `digest`, the lines
    /// are also hashed into it, on one of the pool's threads while the others count: joining, encoding
    /// and hashing them in Python first was half of a two-thread count of 5 MB (perf, 2026-12-07).
    #[pyo3(signature = (lines, digest = None))]
    fn feed(
        &mut self,
        py: Python<'_>,
        lines: &Bound<'_, PyList>,
        mut digest: Option<PyRefMut<'_, PyInputDigest>>,
    ) -> PyResult<()> {
        let mut strs = Vec::with_capacity(lines.len());
        let _pages = crate::alloc::HoldFreedPages::new();
        for (i, item) in lines.iter().enumerate() {
            let s = item.downcast_into::<PyString>().map_err(|e| {
                let item = e.into_inner();
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "lines[{i}] must be str, got {}",
                    item.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
                ))
            })?;
            strs.push(s);
        }
        let views = super::text::views_of(&strs)?;
        let inner = &mut self.inner;
        let pool = &self.pool;
        let digest = digest.as_deref_mut();
        py.detach(|| {
            in_pool(pool, || match digest {
                Some(d) => {
                    let (counted, hashed) = rayon::join(|| inner.feed(&views), || d.update(&views));
                    counted.and(hashed)
                }
                None => inner.feed(&views),
            })
        })
        .map_err(|e| super::text::batch_error(&strs, e.to_string()))?;
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

    /// Estimated heap bytes of the word table (what `--max-memory` budgets).
    fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes()
    }

    /// Estimated peak of the table after one more batch like the last one (rehash included).
    fn peak_after_next_feed(&self) -> usize {
        self.inner.peak_after_next_feed()
    }

    /// Sum of all counts.
    fn occurrences(&self) -> u64 {
        self.inner.occurrences()
    }

    /// Adds the counts of `other` (the caller checks that both counted with the same pipeline).
    fn merge(&mut self, py: Python<'_>, other: PyRef<'_, PyWordCounter>) {
        let (inner, theirs) = (&mut self.inner, &other.inner);
        py.detach(|| inner.merge(theirs));
    }

    /// Trains and counts on `threads` workers from now on (None: all cores).
    #[pyo3(signature = (threads = None))]
    fn set_threads(&mut self, threads: Option<usize>) -> PyResult<()> {
        self.pool = build_pool(threads)?;
        Ok(())
    }

    /// Drops the words seen fewer than `min_count` times.
    fn retain_min_count(&mut self, min_count: u64) {
        self.inner.retain_min_count(min_count);
    }

    /// Writes the words as one sorted run to the new file `path` and empties the table.
    /// Returns `(words, occurrences, bytes, crc32)`.
    fn spill(&mut self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<(u64, u64, u64, u32)> {
        let inner = &mut self.inner;
        let summary = py.detach(|| -> std::io::Result<StreamSummary> {
            let file = std::fs::OpenOptions::new().write(true).create_new(true).open(&path)?;
            let mut w = RecordWriter::new(std::io::BufWriter::with_capacity(1 << 20, file));
            for (word, c) in inner.sorted_raw() {
                w.write(word.as_bytes(), c)?;
            }
            let (summary, out) = w.finish()?;
            out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
            inner.clear();
            Ok(summary)
        });
        summary.map(summary_tuple).map_err(|e| io_err(&path, e))
    }

    /// Appends the words, merged with the sorted record streams `runs` (each `(file, offset,
    /// length)`: spilled runs, or the word lists of .swc files), as records to `path`, keeping words
    /// whose total count is at least `min_count`. Memory: one record per run. Returns
    /// `(words, occurrences, bytes, crc32)` of what was written and the CRC-32 of each run as read,
    /// for the caller to check.
    #[pyo3(signature = (path, runs = Vec::new(), min_count = 0))]
    fn append_records(
        &self,
        py: Python<'_>,
        path: std::path::PathBuf,
        runs: Vec<(std::path::PathBuf, u64, u64)>,
        min_count: u64,
    ) -> PyResult<((u64, u64, u64, u32), Vec<u32>)> {
        let inner = &self.inner;
        let result = py.detach(|| -> std::io::Result<(StreamSummary, Vec<u32>)> {
            use std::io::{Seek, SeekFrom};
            let named = |p: &std::path::Path| {
                let p = p.display().to_string();
                move |e: std::io::Error| std::io::Error::new(e.kind(), format!("{p}: {e}"))
            };
            let mut sources: Vec<Box<dyn SortedRecords>> = Vec::new();
            for (run, offset, length) in &runs {
                let mut f = std::fs::File::open(run).map_err(named(run))?;
                f.seek(SeekFrom::Start(*offset)).map_err(named(run))?;
                let reader = RecordReader::new(std::io::BufReader::with_capacity(1 << 16, f), *length);
                sources.push(Box::new(Named { name: run.display().to_string(), inner: reader }));
            }
            let mine = inner.sorted_raw();
            sources.push(Box::new(VecRecords(mine.into_iter().map(|(w, c)| (w.as_bytes().to_vec(), c)))));
            let file = std::fs::OpenOptions::new().append(true).open(&path).map_err(named(&path))?;
            let mut w = RecordWriter::new(std::io::BufWriter::with_capacity(1 << 20, file));
            merge_sorted(&mut sources, &mut w, min_count).map_err(|e| {
                // Input errors already name their file; a write error gets the output's name.
                if e.kind() == std::io::ErrorKind::InvalidData { e } else { named(&path)(e) }
            })?;
            let (summary, out) = w.finish().map_err(named(&path))?;
            out.into_inner().map_err(|e| named(&path)(e.into_error()))?.sync_all().map_err(named(&path))?;
            let crcs = sources[..runs.len()].iter().map(|s| s.crc32()).collect();
            Ok((summary, crcs))
        });
        result.map(|(s, crcs)| (summary_tuple(s), crcs)).map_err(plain_io_err)
    }

    /// Adds the records stored in `path` at `offset` (`length` bytes), skipping words counted
    /// fewer than `min_count` times. Returns the CRC-32 of those bytes, for the caller to check.
    #[pyo3(signature = (path, offset, length, min_count = 0))]
    fn read_records(
        &mut self,
        py: Python<'_>,
        path: std::path::PathBuf,
        offset: u64,
        length: u64,
        min_count: u64,
    ) -> PyResult<u32> {
        let inner = &mut self.inner;
        let result = py.detach(|| -> std::io::Result<u32> {
            use std::io::{Seek, SeekFrom};
            let mut f = std::fs::File::open(&path)?;
            f.seek(SeekFrom::Start(offset))?;
            let mut r = RecordReader::new(std::io::BufReader::with_capacity(1 << 20, f), length);
            add_all(inner, &mut r, min_count)?;
            Ok(r.crc32())
        });
        result.map_err(|e| io_err(&path, e))
    }

    /// The words as a record stream in memory (for pickling and for sending between processes).
    fn to_records<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        let inner = &self.inner;
        let bytes = py
            .detach(|| -> std::io::Result<Vec<u8>> {
                let mut w = RecordWriter::new(Vec::with_capacity(inner.key_bytes_hint()));
                for (word, c) in inner.sorted_raw() {
                    w.write(word.as_bytes(), c)?;
                }
                Ok(w.finish()?.1)
            })
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(pyo3::types::PyBytes::new(py, &bytes))
    }

    /// Adds the words of a record stream made by `to_records`.
    fn add_records(&mut self, py: Python<'_>, records: &[u8]) -> PyResult<()> {
        let inner = &mut self.inner;
        py.detach(|| {
            let mut r = RecordReader::new(records, records.len() as u64);
            add_all(inner, &mut r, 0)
        })
        .map_err(|e| PyValueError::new_err(format!("bad word records: {e}")))
    }

    fn __repr__(&self) -> String {
        format!("WordCounter({} distinct words)", self.inner.len())
    }
}

fn summary_tuple(s: StreamSummary) -> (u64, u64, u64, u32) {
    (s.words, s.occurrences, s.bytes, s.crc32)
}

/// An I/O error as Python sees it: corrupt data is a ValueError, the rest an OSError naming the file.
fn io_err(path: &std::path::Path, e: std::io::Error) -> PyErr {
    if e.kind() == std::io::ErrorKind::InvalidData {
        PyValueError::new_err(format!("{}: {e}", path.display()))
    } else {
        pyo3::exceptions::PyOSError::new_err(format!("{}: {e}", path.display()))
    }
}

/// An error whose message already names its file.
fn plain_io_err(e: std::io::Error) -> PyErr {
    if e.kind() == std::io::ErrorKind::InvalidData {
        PyValueError::new_err(e.to_string())
    } else {
        pyo3::exceptions::PyOSError::new_err(e.to_string())
    }
}

fn add_all<R: std::io::BufRead>(inner: &mut WordCounter, r: &mut RecordReader<R>, min_count: u64) -> std::io::Result<()> {
    while let Some((word, c)) = r.next_record()? {
        if c >= min_count {
            // The reader checked UTF-8 already.
            let w = String::from_utf8(word).map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8"))?;
            inner.add_word(&w, c);
        }
    }
    Ok(())
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

/// Runs `work` without the GIL, in `pool`; the progress callback and signal checks run with it.
/// Shared by the BPE and WordPiece bindings.
pub(crate) fn run_trainer<T: Send>(
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    pool: &Option<Arc<rayon::ThreadPool>>,
    work: impl FnOnce(&mut crate::bpe::train::ProgressFn<'_>) -> Result<T, TrainError> + Send,
) -> PyResult<T> {
    let _pages = crate::alloc::HoldFreedPages::new();
    let mut py_err: Option<PyErr> = None;
    let result = {
        let py_err = &mut py_err;
        let progress = &progress;
        py.detach(move || {
            in_pool(pool, move || {
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
                work(&mut cb)
            })
        })
    };
    match result {
        Ok(t) => Ok(t),
        Err(TrainError::Aborted(msg)) => Err(py_err.unwrap_or_else(|| PyValueError::new_err(msg))),
        Err(e @ TrainError::Config(_)) => Err(PyValueError::new_err(e.to_string())),
    }
}

/// Where the training words come from: a `WordCounter` (its words and its thread pool), explicit
/// `(word, count)` pairs (words as the model sees them) with a pool of `threads`, or the words a
/// `TrainingWords` selected (and its pool).
pub(crate) enum WordSource<'py> {
    Counter(PyRef<'py, PyWordCounter>),
    Pairs(Vec<(String, u64)>, Option<Arc<rayon::ThreadPool>>),
    Selected(PyRef<'py, PyTrainingWords>),
}

/// What a trainer is given: every word, or a selection (`bpe/select.rs`) to take.
pub(crate) enum TrainInput<'a> {
    All(&'a [(String, u64)]),
    Selected(&'a SelectionSlot),
}

/// A selection, until a trainer takes it (training frees its word strings as soon as the arena is
/// built, so a `TrainingWords` trains once).
pub(crate) struct SelectionSlot(std::sync::Mutex<Option<Selected>>);

impl SelectionSlot {
    /// The selection, if it was made for `cfg` (and, with `units`, kept the unit counts); it stays
    /// in place when the options are refused.
    pub(crate) fn take_for(&self, cfg: &BpeTrainerConfig, units: bool) -> Result<Selected, TrainError> {
        let mut slot = self.0.lock().map_err(|_| TrainError::Config("a previous training panicked".into()))?;
        match slot.as_ref() {
            None => Err(TrainError::Config(
                "this TrainingWords was trained on already (training frees its words); select again".into(),
            )),
            Some(sel) => {
                sel.check_options(cfg, units)?;
                slot.take().ok_or_else(|| TrainError::Config("internal: empty selection".into()))
            }
        }
    }
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
        if let Ok(selected) = source.downcast::<PyTrainingWords>() {
            if threads.is_some() {
                return Err(PyValueError::new_err(
                    "threads: a TrainingWords trains with the thread pool it was made with",
                ));
            }
            return Ok(WordSource::Selected(selected.try_borrow()?));
        }
        Ok(WordSource::Pairs(extract_words(source)?, build_pool(threads)?))
    }

    /// Runs `trainer` on these words (see [`run_trainer`]).
    pub(crate) fn train<T: Send>(
        self,
        py: Python<'_>,
        progress: Option<Py<PyAny>>,
        trainer: impl FnOnce(TrainInput<'_>, &mut crate::bpe::train::ProgressFn<'_>) -> Result<T, TrainError> + Send,
    ) -> PyResult<T> {
        match self {
            WordSource::Counter(counter) => {
                let inner = &counter.inner;
                run_trainer(py, progress, &counter.pool, move |cb| {
                    trainer(TrainInput::All(&inner.words_unsorted()), cb)
                })
            }
            WordSource::Pairs(words, pool) => {
                run_trainer(py, progress, &pool, move |cb| trainer(TrainInput::All(&words), cb))
            }
            WordSource::Selected(sel) => {
                let slot = &sel.slot;
                run_trainer(py, progress, &sel.pool, move |cb| trainer(TrainInput::Selected(slot), cb))
            }
        }
    }
}

/// The words a BPE or WordPiece trainer needs, chosen for one set of options (`bpe/select.rs`):
/// `min_frequency` leaves out, exactly, the words that can never take part in a merge, so the
/// trainer's tables hold only the others. Train with `train_bpe(words, **same options)` or
/// `train_wordpiece(words, **same options)`; other options are refused.
#[pyclass(name = "TrainingWords", module = "subword._core", frozen)]
pub struct PyTrainingWords {
    pub(crate) slot: SelectionSlot,
    loaded: u64,
    distinct: u64,
    occurrences: u64,
    pub(crate) pool: Option<Arc<rayon::ThreadPool>>,
}

impl PyTrainingWords {
    fn new(selected: Selected, pool: Option<Arc<rayon::ThreadPool>>) -> Self {
        let (loaded, distinct, occurrences) = (selected.loaded(), selected.distinct(), selected.corpus.total_count);
        PyTrainingWords {
            slot: SelectionSlot(std::sync::Mutex::new(Some(selected))),
            loaded,
            distinct,
            occurrences,
            pool,
        }
    }
}

/// The selection options of the `TrainingWords` constructors: the trainer's, and the criterion.
#[allow(clippy::too_many_arguments)]
fn selection_config(
    min_frequency: u64,
    special_tokens: Vec<String>,
    initial_alphabet: Vec<String>,
    limit_alphabet: Option<usize>,
    max_token_length: Option<usize>,
    continuing_subword_prefix: Option<String>,
    end_of_word_suffix: Option<String>,
    vocab_size: usize,
    criterion: Option<&str>,
) -> PyResult<(BpeTrainerConfig, bool)> {
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
    check_affixes(&cfg).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let units = match criterion {
        None | Some("frequency") => false,
        Some("likelihood" | "pmi") => true,
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "unknown criterion {other:?} (expected 'likelihood', 'pmi', 'frequency' or None for BPE)"
            )))
        }
    };
    Ok((cfg, units))
}

#[pymethods]
impl PyTrainingWords {
    /// Selects from `source`: a `WordCounter` (its pool is kept) or `(word, count)` pairs (words as
    /// the model sees them; `threads` sizes the pool). `prune=False` keeps every word (to compare).
    #[staticmethod]
    #[pyo3(signature = (source, *, vocab_size, min_frequency = 0, special_tokens = Vec::new(),
        initial_alphabet = Vec::new(), limit_alphabet = None, max_token_length = None,
        continuing_subword_prefix = None, end_of_word_suffix = None, criterion = None, prune = true,
        threads = None))]
    #[allow(clippy::too_many_arguments)]
    fn select(
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
        criterion: Option<&str>,
        prune: bool,
        threads: Option<usize>,
    ) -> PyResult<Self> {
        let (cfg, units) = selection_config(
            min_frequency,
            special_tokens,
            initial_alphabet,
            limit_alphabet,
            max_token_length,
            continuing_subword_prefix,
            end_of_word_suffix,
            vocab_size,
            criterion,
        )?;
        let source = WordSource::from_py(source, threads)?;
        let (selected, pool) = match source {
            WordSource::Counter(counter) => {
                let (inner, pool) = (&counter.inner, &counter.pool);
                let sel = py.detach(|| in_pool(pool, || select(inner, &cfg, units, prune)));
                (sel, counter.pool.clone())
            }
            WordSource::Pairs(words, pool) => (py.detach(|| select(&words[..], &cfg, units, prune)), pool),
            WordSource::Selected(_) => return Err(PyValueError::new_err("source is already a TrainingWords")),
        };
        Ok(PyTrainingWords::new(selected.map_err(|e| PyValueError::new_err(e.to_string()))?, pool))
    }

    /// Selects while reading the record stream stored in `path` at `offset` (`length` bytes): the
    /// word list of a counts file, whose words were cut by `pre_tokenizer` (HF JSON; ByteLevel words
    /// are mapped). Words counted fewer than `min_count` times are skipped. The file is read once
    /// into memory (~`length` bytes, freed on return) and decoded on each pass; words left out are
    /// never stored. Returns the selection and the CRC-32 of the bytes, for the caller to check.
    #[staticmethod]
    #[pyo3(signature = (path, offset, length, pre_tokenizer, *, vocab_size, min_count = 0,
        min_frequency = 0, special_tokens = Vec::new(), initial_alphabet = Vec::new(),
        limit_alphabet = None, max_token_length = None, continuing_subword_prefix = None,
        end_of_word_suffix = None, criterion = None, prune = true, threads = None))]
    #[allow(clippy::too_many_arguments)]
    fn from_file(
        py: Python<'_>,
        path: std::path::PathBuf,
        offset: u64,
        length: u64,
        pre_tokenizer: &str,
        vocab_size: usize,
        min_count: u64,
        min_frequency: u64,
        special_tokens: Vec<String>,
        initial_alphabet: Vec<String>,
        limit_alphabet: Option<usize>,
        max_token_length: Option<usize>,
        continuing_subword_prefix: Option<String>,
        end_of_word_suffix: Option<String>,
        criterion: Option<&str>,
        prune: bool,
        threads: Option<usize>,
    ) -> PyResult<(Self, u32)> {
        let (cfg, units) = selection_config(
            min_frequency,
            special_tokens,
            initial_alphabet,
            limit_alphabet,
            max_token_length,
            continuing_subword_prefix,
            end_of_word_suffix,
            vocab_size,
            criterion,
        )?;
        let byte_level = PreTokenizer::from_json_str(pre_tokenizer).map_err(PyValueError::new_err)?.is_byte_level();
        let pool = build_pool(threads)?;
        let result = py.detach(|| -> std::io::Result<(Selected, u32)> {
            use std::io::{Read, Seek, SeekFrom};
            let mut f = std::fs::File::open(&path)?;
            f.seek(SeekFrom::Start(offset))?;
            let mut bytes = Vec::with_capacity(length as usize);
            f.take(length).read_to_end(&mut bytes)?;
            if (bytes.len() as u64) < length {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the file ends inside the word list (truncated)",
                ));
            }
            let mut crc = Crc32::new();
            crc.update(&bytes);
            let records = RecordBytes { bytes, byte_level, min_count };
            let sel = in_pool(&pool, || select(&records, &cfg, units, prune))?;
            Ok((sel, crc.value()))
        });
        let (selected, crc) = result.map_err(|e| io_err(&path, e))?;
        Ok((PyTrainingWords::new(selected, pool), crc))
    }

    /// Words kept: what the trainer's tables will hold.
    #[getter]
    fn loaded(&self) -> u64 {
        self.loaded
    }

    /// Distinct words read (after `min_count`).
    #[getter]
    fn distinct(&self) -> u64 {
        self.distinct
    }

    /// Sum of the counts of all words read.
    #[getter]
    fn occurrences(&self) -> u64 {
        self.occurrences
    }

    /// The words kept, sorted (for tests and inspection; before training, which frees them).
    fn words(&self, py: Python<'_>) -> PyResult<Vec<(String, u64)>> {
        let slot = &self.slot;
        py.detach(|| -> Result<Vec<(String, u64)>, String> {
            let guard = slot.0.lock().map_err(|_| "a previous training panicked".to_string())?;
            let sel = guard.as_ref().ok_or_else(|| "this TrainingWords was trained on already".to_string())?;
            let mut v = sel.words.clone();
            v.sort_unstable();
            Ok(v)
        })
        .map_err(PyValueError::new_err)
    }

    fn __len__(&self) -> usize {
        self.loaded as usize
    }

    fn __repr__(&self) -> String {
        format!("TrainingWords({} of {} distinct words)", self.loaded, self.distinct)
    }
}

/// Trains an HF-compatible BPE model on `source`: a `WordCounter`, a `TrainingWords`, or `(word, count)` pairs (words
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
    WordSource::from_py(source, threads)?.train(py, progress, |words, cb| {
        let out = match words {
            TrainInput::All(words) => train(words, &cfg, cb),
            TrainInput::Selected(slot) => slot.take_for(&cfg, false).and_then(|sel| train_selected(sel, &cfg, cb)),
        };
        out.map(|BpeModelOut { vocab, merges }| (vocab, merges))
    })
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
    m.add_class::<PyInputDigest>()?;
    m.add_class::<PyTrainingWords>()?;
    m.add_function(wrap_pyfunction!(train_bpe, m)?)?;
    Ok(())
}
