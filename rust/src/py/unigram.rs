//! Bindings for Unigram: `UnigramModel` (Viterbi / n-best / sampling) and `train_unigram`.
//! Type conversion and GIL release only.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyDict, PyList};

use crate::spm::{assemble, count_words, is_valid_piece, prepare, SpmNormalizer, SpmSpec};
use crate::unigram::lattice::Rng;
use crate::unigram::train::{train, TrainInput, UnigramTrainerConfig};
use crate::unigram::{Compat, PieceKind, UnigramModel};

use super::spm::PySpmTextNormalizer;

/// A segmentation as Python gets it: (ids, character offsets).
type IdsWithOffsets = (Vec<u32>, Vec<(usize, usize)>);

/// The ids of consecutive texts (one chunk of a batch, on one thread), back to back, and how many
/// belong to each text. Each text normalizes (when `norm` is given) into one reused buffer and
/// appends ids to one flat vector, so a text costs no allocation of its own.
fn encode_chunk(
    model: &UnigramModel,
    part: &[PyBackedStr],
    norm: Option<&SpmNormalizer>,
    word_cache: bool,
) -> Result<(Vec<u32>, Vec<u32>), String> {
    let mut ids = Vec::with_capacity(part.len() * 16);
    let mut lens = Vec::with_capacity(part.len());
    let mut buf = String::new();
    for t in part {
        let text: &str = match norm {
            Some(n) => {
                n.normalize_into(t, &mut buf);
                &buf
            }
            None => t,
        };
        let before = ids.len();
        if word_cache {
            model.encode_ids_into(text, &mut ids)?;
        } else {
            ids.extend(model.encode(text)?.into_iter().map(|p| p.0));
        }
        lens.push((ids.len() - before) as u32);
    }
    Ok((ids, lens))
}

fn char_offsets(text: &str, pieces: &[(u32, usize, usize)]) -> IdsWithOffsets {
    // byte -> char index table
    let mut char_at = vec![0usize; text.len() + 1];
    let mut ci = 0;
    for (b, ch) in text.char_indices() {
        for k in 0..ch.len_utf8() {
            char_at[b + k] = ci;
        }
        ci += 1;
    }
    char_at[text.len()] = ci;
    let ids = pieces.iter().map(|p| p.0).collect();
    let offs = pieces
        .iter()
        .map(|&(_, s, e)| if e > s { (char_at[s], char_at[e - 1] + 1) } else { (char_at[s], char_at[s]) })
        .collect();
    (ids, offs)
}

/// A Unigram model: pieces with scores, Viterbi / n-best / sampling encoders.
#[pyclass(name = "UnigramModel", module = "subword._core", frozen)]
pub struct PyUnigramModel {
    inner: UnigramModel,
}

#[pymethods]
impl PyUnigramModel {
    #[new]
    #[pyo3(signature = (pieces, kinds = None, unk_id = None, byte_fallback = false, compat = "spm"))]
    fn new(
        pieces: Vec<(String, f64)>,
        kinds: Option<Vec<i32>>,
        unk_id: Option<u32>,
        byte_fallback: bool,
        compat: &str,
    ) -> PyResult<Self> {
        let compat = Compat::parse(compat).map_err(PyValueError::new_err)?;
        let kinds = match kinds {
            None => None,
            Some(k) => Some(
                k.into_iter()
                    .map(PieceKind::from_proto)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(PyValueError::new_err)?,
            ),
        };
        let inner = UnigramModel::new(pieces, kinds, unk_id, byte_fallback, compat).map_err(PyValueError::new_err)?;
        Ok(PyUnigramModel { inner })
    }

    /// Viterbi: (ids, character offsets).
    fn encode(&self, py: Python<'_>, text: &str) -> PyResult<IdsWithOffsets> {
        let p = py.detach(|| self.inner.encode(text)).map_err(PyValueError::new_err)?;
        Ok(char_offsets(text, &p))
    }

    /// Viterbi ids of many texts (parallel, GIL released). `word_cache=False` runs the
    /// whole-string Viterbi on every text (the same ids; for tests and measurements).
    #[pyo3(signature = (texts, word_cache = true))]
    fn encode_batch_ids<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        word_cache: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        super::nested_id_lists(py, &None, texts.len(), |range| {
            encode_chunk(&self.inner, &texts[range], None, word_cache)
        })
    }

    /// Normalizes each text with the model's SentencePiece normalizer, then Viterbi ids
    /// (parallel, GIL released): `SentencePieceProcessor.encode` for a list.
    #[pyo3(signature = (texts, normalizer, word_cache = true))]
    fn encode_batch_spm<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        normalizer: &Bound<'py, PySpmTextNormalizer>,
        word_cache: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let norm = &normalizer.get().inner;
        super::nested_id_lists(py, &None, texts.len(), |range| {
            encode_chunk(&self.inner, &texts[range], Some(norm), word_cache)
        })
    }

    /// The n best segmentations: [(ids, score)], best first.
    fn nbest(&self, py: Python<'_>, text: &str, n: usize) -> PyResult<Vec<(Vec<u32>, f64)>> {
        let r = py.detach(|| self.inner.nbest(text, n)).map_err(PyValueError::new_err)?;
        Ok(r.into_iter().map(|(p, s)| (p.into_iter().map(|x| x.0).collect(), s)).collect())
    }

    /// One sampled segmentation per seed draw: `count` samples of `text` (ids, char offsets).
    #[pyo3(signature = (text, alpha, nbest_size = -1, seed = 0, count = 1))]
    fn sample(
        &self,
        py: Python<'_>,
        text: &str,
        alpha: f64,
        nbest_size: i64,
        seed: u64,
        count: usize,
    ) -> PyResult<Vec<IdsWithOffsets>> {
        let r: Result<Vec<_>, String> = py.detach(|| {
            let mut rng = Rng::new(seed);
            (0..count).map(|_| self.inner.sample(text, alpha, nbest_size, &mut rng)).collect()
        });
        let r = r.map_err(PyValueError::new_err)?;
        Ok(r.iter().map(|p| char_offsets(text, p)).collect())
    }

    fn __len__(&self) -> usize {
        self.inner.pieces.len()
    }
}

/// Trains a Unigram model from prepared sentences/words/required chars; returns [(piece, score)]
/// without meta pieces, best score first.
#[pyfunction]
#[pyo3(signature = (sentences, words, required_chars, *, vocab_size, meta_pieces = 3, compat = "spm",
    shrinking_factor = 0.75, num_sub_iterations = 2, max_piece_length = 16, seed_size = 1000000,
    num_threads = 16, split_by_whitespace = true, progress = None))]
#[allow(clippy::too_many_arguments)]
fn train_unigram(
    py: Python<'_>,
    sentences: Vec<(String, u64)>,
    words: Vec<(String, u64)>,
    required_chars: Vec<(String, u64)>,
    vocab_size: usize,
    meta_pieces: usize,
    compat: &str,
    shrinking_factor: f64,
    num_sub_iterations: usize,
    max_piece_length: usize,
    seed_size: usize,
    num_threads: usize,
    split_by_whitespace: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<Vec<(String, f64)>> {
    let compat = Compat::parse(compat).map_err(PyValueError::new_err)?;
    if num_threads == 0 {
        return Err(PyValueError::new_err("num_threads must be at least 1"));
    }
    if max_piece_length == 0 {
        return Err(PyValueError::new_err("max_piece_length must be at least 1"));
    }
    let mut req = Vec::with_capacity(required_chars.len());
    for (s, n) in required_chars {
        let mut it = s.chars();
        match (it.next(), it.next()) {
            (Some(c), None) => req.push((c, n)),
            _ => return Err(PyValueError::new_err(format!("required char {s:?} is not one character"))),
        }
    }
    let input = TrainInput { sentences, words, required_chars: req };
    let cfg = UnigramTrainerConfig {
        vocab_size,
        meta_pieces,
        compat,
        shrinking_factor,
        num_sub_iterations,
        max_piece_length,
        seed_size,
        num_threads,
    };
    // Stand-in validity until the SentencePiece rules (spm::is_valid_piece) are wired in:
    // length, no '▁' after the first char (split_by_whitespace), no unk char / boundary / NUL / space.
    let valid = move |c: &[char]| {
        !c.is_empty()
            && c.len() <= max_piece_length
            && c.iter().all(|&x| x != '\u{2585}' && x != '\0' && x != '\u{1f}' && x != ' ')
            && (!split_by_whitespace || c.iter().skip(1).all(|&x| x != '\u{2581}'))
    };
    let mut py_err: Option<PyErr> = None;
    let result = {
        let py_err = &mut py_err;
        let progress = &progress;
        // in_pool: the EM runs on rayon; in a forked child it needs a pool of its own.
        py.detach(move || {
            super::in_pool(&None, move || {
                let mut cb = progress_cb(progress, py_err);
                train(&input, &cfg, &valid, &mut cb)
            })
        })
    };
    result.map_err(|m| py_err.unwrap_or_else(|| PyValueError::new_err(m)))
}

/// A progress callback that runs the Python callable (if any) and checks signals; a Python
/// exception is stored in `err` (re-raised unchanged by the caller) and aborts training.
fn progress_cb<'a>(
    progress: &'a Option<Py<PyAny>>,
    err: &'a mut Option<PyErr>,
) -> impl FnMut(&str, usize, usize) -> Result<(), String> + 'a {
    move |stage: &str, cur: usize, total: usize| {
        Python::attach(|py| {
            let r = match progress {
                Some(f) => f.call1(py, (stage, cur, total)).map(|_| ()),
                None => Ok(()),
            };
            r.and_then(|_| py.check_signals()).map_err(|e| {
                let m = e.to_string();
                *err = Some(e);
                m
            })
        })
    }
}

/// Trains a SentencePiece-compatible Unigram model from raw lines: SentencePiece's pipeline
/// (`spm::prepare`, its validity rules and id layout) around the Unigram trainer.
/// Returns `(pieces [(piece, score, type)], stats dict)`.
#[pyfunction]
#[pyo3(signature = (lines, spec_json, *, shrinking_factor = 0.75, num_sub_iterations = 2,
    seed_sentencepiece_size = 1000000, num_threads = 16, progress = None))]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn train_unigram_spm<'py>(
    py: Python<'py>,
    lines: Vec<String>,
    spec_json: &str,
    shrinking_factor: f64,
    num_sub_iterations: usize,
    seed_sentencepiece_size: usize,
    num_threads: usize,
    progress: Option<Py<PyAny>>,
) -> PyResult<(Vec<(String, f32, i32)>, Bound<'py, PyDict>)> {
    let spec = SpmSpec::from_json_str(spec_json).map_err(PyValueError::new_err)?;
    if num_threads == 0 {
        return Err(PyValueError::new_err("num_threads must be at least 1"));
    }
    let mut py_err: Option<PyErr> = None;
    let result = {
        let py_err = &mut py_err;
        let progress = &progress;
        py.detach(move || {
            super::in_pool(&None, move || {
                let corpus = prepare(&lines, &spec)?;
                drop(lines);
                if corpus.sentences.is_empty() {
                    return Err("no training sentences are left after loading (all lines empty or skipped)".to_string());
                }
                let words = count_words(&corpus, &spec);
                let input = TrainInput {
                    sentences: corpus.sentences.clone(),
                    words,
                    required_chars: corpus.required_chars.clone(),
                };
                let cfg = UnigramTrainerConfig {
                    vocab_size: spec.vocab_size,
                    meta_pieces: corpus.meta.len(),
                    compat: Compat::Spm,
                    shrinking_factor,
                    num_sub_iterations,
                    max_piece_length: spec.max_sentencepiece_length,
                    seed_size: seed_sentencepiece_size,
                    num_threads,
                };
                let valid = |c: &[char]| is_valid_piece(c, &spec);
                let mut cb = progress_cb(progress, py_err);
                let pieces = train(&input, &cfg, &valid, &mut cb)?;
                let pieces: Vec<(String, f32)> = pieces.into_iter().map(|(p, s)| (p, s as f32)).collect();
                let out = assemble(&corpus.meta, &pieces, &spec)?;
                Ok((out.into_iter().map(|(p, s, t)| (p, s, t as i32)).collect::<Vec<_>>(), corpus))
            })
        })
    };
    match result {
        Ok((pieces, corpus)) => {
            let d = PyDict::new(py);
            d.set_item("sentences", corpus.sentences.len())?;
            d.set_item("required_chars", corpus.required_chars.len())?;
            d.set_item("skipped_too_long", corpus.skipped_too_long)?;
            d.set_item("skipped_unk_char", corpus.skipped_unk_char)?;
            d.set_item("skipped_empty", corpus.skipped_empty)?;
            Ok((pieces, d))
        }
        Err(m) => Err(py_err.unwrap_or_else(|| PyValueError::new_err(m))),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyUnigramModel>()?;
    m.add_function(wrap_pyfunction!(train_unigram, m)?)?;
    m.add_function(wrap_pyfunction!(train_unigram_spm, m)?)?;
    Ok(())
}
