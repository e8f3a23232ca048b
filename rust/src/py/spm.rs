//! Bindings for the SentencePiece pipeline and SentencePiece-compatible BPE training.
//!
//! `spm_prepare(lines, spec_json)` runs `LoadSentences` (what every SentencePiece trainer sees);
//! `train_spm_bpe(lines, spec_json, progress=None, threads=None)` runs the whole BPE training and
//! returns the pieces in id order as `(piece, score, type)` with ModelProto type numbers.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::bpe::spm_train::train_spm_bpe as train_core;
use std::sync::Arc;

use crate::spm::encode::SpmBpeModel;
use crate::spm::{assemble, count_words, normalize_for_py, prepare, SpmCorpus, SpmSpec};
use crate::spm::{CharsMap, PieceType, SpmNormalizer};

fn lines_of(lines: &Bound<'_, PyList>) -> PyResult<Vec<String>> {
    let mut out = Vec::with_capacity(lines.len());
    for (i, item) in lines.iter().enumerate() {
        let s = item.downcast::<PyString>().map_err(|_| {
            PyTypeError::new_err(format!(
                "lines[{i}] must be str, got {}",
                item.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
            ))
        })?;
        out.push(s.to_str()?.to_string());
    }
    Ok(out)
}

fn stats<'py>(py: Python<'py>, c: &SpmCorpus) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("sentences", c.sentences.len())?;
    d.set_item("required_chars", c.required_chars.len())?;
    d.set_item("skipped_too_long", c.skipped_too_long)?;
    d.set_item("skipped_unk_char", c.skipped_unk_char)?;
    d.set_item("skipped_empty", c.skipped_empty)?;
    Ok(d)
}

/// SentencePiece's `LoadSentences`: returns `(sentences [(str, count)], required_chars [(char,
/// count)], meta [(id, piece, type)], stats dict)`.
#[pyfunction]
#[pyo3(signature = (lines, spec_json, threads = None))]
#[allow(clippy::type_complexity)]
fn spm_prepare<'py>(
    py: Python<'py>,
    lines: &Bound<'py, PyList>,
    spec_json: &str,
    threads: Option<usize>,
) -> PyResult<(Vec<(String, u64)>, Vec<(String, u64)>, Vec<(u32, String, i32)>, Bound<'py, PyDict>)> {
    let spec = SpmSpec::from_json_str(spec_json).map_err(PyValueError::new_err)?;
    let lines = lines_of(lines)?;
    let p = super::build_pool(threads)?;
    let corpus = py.detach(|| super::in_pool(&p, || prepare(&lines, &spec))).map_err(PyValueError::new_err)?;
    let st = stats(py, &corpus)?;
    let req = corpus.required_chars.iter().map(|(c, n)| (c.to_string(), *n)).collect();
    let meta = corpus.meta.iter().map(|(i, p, t)| (*i, p.clone(), *t as i32)).collect();
    Ok((corpus.sentences, req, meta, st))
}

/// The words SentencePiece's trainers count (after `spm_prepare`), sorted (count desc, string asc).
#[pyfunction]
fn spm_words(lines: &Bound<'_, PyList>, spec_json: &str) -> PyResult<Vec<(String, u64)>> {
    let spec = SpmSpec::from_json_str(spec_json).map_err(PyValueError::new_err)?;
    let lines = lines_of(lines)?;
    let corpus = prepare(&lines, &spec).map_err(PyValueError::new_err)?;
    Ok(count_words(&corpus, &spec))
}

/// SentencePiece's normalizer (character rules + whitespace) applied to one string.
#[pyfunction]
fn spm_normalize(text: &str, spec_json: &str) -> PyResult<String> {
    let spec = SpmSpec::from_json_str(spec_json).map_err(PyValueError::new_err)?;
    Ok(normalize_for_py(text, &spec))
}

/// SentencePiece's `IsValidSentencePiece` for `piece` under the options of `spec_json`.
#[pyfunction]
fn spm_is_valid_piece(piece: &str, spec_json: &str) -> PyResult<bool> {
    let spec = SpmSpec::from_json_str(spec_json).map_err(PyValueError::new_err)?;
    Ok(crate::spm::is_valid_piece(&piece.chars().collect::<Vec<_>>(), &spec))
}

/// Trains SentencePiece-compatible BPE. Returns `(pieces [(piece, score, type)], stats dict)`.
/// `progress(stage, current, total)` is called with stage "merge"; an exception raised in it
/// stops training and propagates.
#[pyfunction]
#[pyo3(signature = (lines, spec_json, progress = None, threads = None))]
#[allow(clippy::type_complexity)]
fn train_spm_bpe<'py>(
    py: Python<'py>,
    lines: &Bound<'py, PyList>,
    spec_json: &str,
    progress: Option<Py<PyAny>>,
    threads: Option<usize>,
) -> PyResult<(Vec<(String, f32, i32)>, Bound<'py, PyDict>)> {
    let spec = SpmSpec::from_json_str(spec_json).map_err(PyValueError::new_err)?;
    let lines = lines_of(lines)?;
    let p = super::build_pool(threads)?;
    let mut py_err: Option<PyErr> = None;
    let result: Result<(Vec<(String, f32, i32)>, SpmCorpus, usize), String> = {
        let py_err = &mut py_err;
        let progress = &progress;
        py.detach(move || {
            let corpus = super::in_pool(&p, || prepare(&lines, &spec))?;
            drop(lines);
            let words = count_words(&corpus, &spec);
            let target = spec.vocab_size.saturating_sub(corpus.meta.len() + corpus.required_chars.len());
            let mut cb = |done: usize, total: usize| -> Result<(), String> {
                Python::attach(|py| {
                    let r = match progress {
                        Some(f) => f.call1(py, ("merge", done, total)).map(|_| ()),
                        None => Ok(()),
                    };
                    r.and_then(|_| py.check_signals()).map_err(|e| {
                        let m = e.to_string();
                        *py_err = Some(e);
                        m
                    })
                })
            };
            let out = train_core(&words, &corpus.required_chars, target, &spec, &mut cb)?;
            let merged = out.merged;
            let pieces = assemble(&corpus.meta, &out.pieces, &spec)?;
            Ok((pieces.into_iter().map(|(p, s, t)| (p, s, t as i32)).collect(), corpus, merged))
        })
    };
    match result {
        Ok((pieces, corpus, merged)) => {
            let st = stats(py, &corpus)?;
            st.set_item("merged", merged)?;
            Ok((pieces, st))
        }
        Err(msg) => Err(py_err.unwrap_or_else(|| PyValueError::new_err(msg))),
    }
}

/// The top level of a `.model` file (`ModelProto`): `(pieces [(piece, score, type)], fields
/// [(number, wire type, (start, end) of the whole field, (start, end) of its value)])` for the
/// fields other than the pieces, which `subword.formats.spm` decodes. ValueError on malformed data.
/// With `pieces=False` the pieces list is empty (the fields only, for a reader that leaves the
/// pieces to `SpmBpeEncoder.from_model_bytes`).
#[pyfunction]
#[pyo3(signature = (data, pieces = true))]
#[allow(clippy::type_complexity)]
fn spm_parse_model(
    py: Python<'_>,
    data: &[u8],
    pieces: bool,
) -> PyResult<(Vec<(String, f32, i32)>, Vec<(u32, u8, (usize, usize), (usize, usize))>)> {
    let parse = if pieces { crate::spm::proto::parse_model } else { crate::spm::proto::parse_fields };
    let parts = py.detach(|| parse(data)).map_err(PyValueError::new_err)?;
    let fields = parts
        .fields
        .into_iter()
        .map(|f| (f.number, f.wire, (f.whole.start, f.whole.end), (f.value.start, f.value.end)))
        .collect();
    Ok((parts.pieces, fields))
}

/// Encoder of a SentencePiece BPE model: `SpmBpeEncoder(pieces [(piece, score, type)], spec_json,
/// charsmap=None, byte_fallback=False)`. `charsmap` is the model's precompiled_charsmap (it replaces
/// the character rules of `normalization_rule_name`).
#[pyclass(name = "SpmBpeEncoder", module = "subword._core", frozen)]
pub struct PySpmBpeEncoder {
    inner: SpmBpeModel,
}

impl PySpmBpeEncoder {
    fn build(
        pieces: Vec<(String, f32, i32)>,
        spec_json: &str,
        charsmap: Option<&[u8]>,
        byte_fallback: bool,
    ) -> PyResult<Self> {
        let spec = SpmSpec::from_json_str(spec_json).map_err(PyValueError::new_err)?;
        let mut norm = SpmNormalizer::from_spec(&spec);
        if let Some(blob) = charsmap {
            if !blob.is_empty() {
                norm.charsmap = Some(Arc::new(CharsMap::from_blob(blob).map_err(PyValueError::new_err)?));
            }
        }
        let pieces = pieces
            .into_iter()
            .map(|(p, s, t)| PieceType::from_proto(t).map(|t| (p, s, t)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(PyValueError::new_err)?;
        Ok(PySpmBpeEncoder { inner: SpmBpeModel::new(pieces, norm, byte_fallback).map_err(PyValueError::new_err)? })
    }
}

#[pymethods]
impl PySpmBpeEncoder {
    #[new]
    #[pyo3(signature = (pieces, spec_json, charsmap = None, byte_fallback = false))]
    fn new(
        pieces: Vec<(String, f32, i32)>,
        spec_json: &str,
        charsmap: Option<&[u8]>,
        byte_fallback: bool,
    ) -> PyResult<Self> {
        Self::build(pieces, spec_json, charsmap, byte_fallback)
    }

    /// The encoder of a `.model` file's bytes: its pieces are parsed here, without building the
    /// Python list of pieces that the constructor takes (what `SpmBpeTokenizer.from_file` uses).
    #[staticmethod]
    #[pyo3(signature = (data, spec_json, charsmap = None, byte_fallback = false))]
    fn from_model_bytes(
        py: Python<'_>,
        data: &[u8],
        spec_json: &str,
        charsmap: Option<&[u8]>,
        byte_fallback: bool,
    ) -> PyResult<Self> {
        let parts = py.detach(|| crate::spm::proto::parse_model(data)).map_err(PyValueError::new_err)?;
        Self::build(parts.pieces, spec_json, charsmap, byte_fallback)
    }

    /// Ids of one text.
    fn encode(&self, py: Python<'_>, text: &str) -> Vec<u32> {
        py.detach(|| self.inner.encode(text))
    }

    /// Ids of many texts (parallel, GIL released). Python's cyclic GC is paused while the result
    /// lists are built: a batch creates one list per text, and without the pause the collector
    /// repeatedly walks every young list (a quarter of the time on 200k lines).
    fn encode_batch<'py>(&self, py: Python<'py>, texts: Vec<String>) -> PyResult<Bound<'py, PyList>> {
        let ids = py.detach(|| self.inner.encode_batch(&texts));
        drop(texts);
        let _paused = super::GcPause::new(py)?;
        ids.iter().map(|v| PyList::new(py, v)).collect::<PyResult<Vec<_>>>().and_then(|l| PyList::new(py, l))
    }

    /// The normalized text (with `▁`), as the model sees it.
    fn normalize(&self, text: &str) -> String {
        self.inner.normalizer.normalize(text)
    }
}

/// SentencePiece's normalizer of one model, built once: `SpmTextNormalizer(spec_json,
/// charsmap=None)`; `charsmap` is the model's precompiled_charsmap (it replaces the character rules
/// of `normalization_rule_name`, as in sentencepiece).
#[pyclass(name = "SpmTextNormalizer", module = "subword._core", frozen)]
pub struct PySpmTextNormalizer {
    pub(crate) inner: SpmNormalizer,
}

#[pymethods]
impl PySpmTextNormalizer {
    #[new]
    #[pyo3(signature = (spec_json, charsmap = None))]
    fn new(spec_json: &str, charsmap: Option<&[u8]>) -> PyResult<Self> {
        let spec = SpmSpec::from_json_str(spec_json).map_err(PyValueError::new_err)?;
        let mut inner = SpmNormalizer::from_spec(&spec);
        if let Some(blob) = charsmap.filter(|b| !b.is_empty()) {
            inner.charsmap = Some(Arc::new(CharsMap::from_blob(blob).map_err(PyValueError::new_err)?));
        }
        Ok(PySpmTextNormalizer { inner })
    }

    /// The normalized text (spaces as `▁`).
    fn normalize(&self, text: &str) -> String {
        self.inner.normalize(text)
    }

    /// `(normalized, to_orig)`: `to_orig[i]` is the byte of `text` that normalized byte `i` came
    /// from, plus one entry for the end (sentencepiece's `norm_to_orig`).
    fn normalize_aligned(&self, text: &str) -> (String, Vec<usize>) {
        self.inner.normalize_aligned(text)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySpmTextNormalizer>()?;
    m.add_class::<PySpmBpeEncoder>()?;
    m.add_function(wrap_pyfunction!(spm_prepare, m)?)?;
    m.add_function(wrap_pyfunction!(spm_parse_model, m)?)?;
    m.add_function(wrap_pyfunction!(spm_words, m)?)?;
    m.add_function(wrap_pyfunction!(spm_normalize, m)?)?;
    m.add_function(wrap_pyfunction!(spm_is_valid_piece, m)?)?;
    m.add_function(wrap_pyfunction!(train_spm_bpe, m)?)?;
    Ok(())
}
