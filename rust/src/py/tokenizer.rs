//! Bindings for encoding: `Encoding`, `CoreTokenizer`, `PreTokenizer`, `Normalizer`.
//!
//! Type conversion and GIL handling only. Batches run with the GIL released (`py.detach`) on
//! rayon's pool. `Encoding` is a lazy view: it keeps the Rust vectors and converts a field to Python
//! objects only when it is read, and converts byte offsets to CHARACTER offsets (HF's Python
//! convention) at that moment, so `encode_batch` does not pay for fields nobody reads.

use std::sync::{Arc, RwLock};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::encoding::{Direction, Encoding, TokenTable, NO_SEQ};
use crate::normalize::Normalizer;
use crate::pretok::PreTokenizer;
use crate::tokenizer::Tokenizer;

/// Byte offsets -> character offsets. HF converts right after the model (its
/// `BytesToCharOffsetConverter`: a byte maps to the index of the char containing it, the text's end
/// to the number of chars) and trims ByteLevel offsets afterwards, in chars. We trim in bytes (over
/// whole chars) and convert at the end, so positions equal to the text's length must map to the
/// number of chars too (a trimmed trailing space).
struct CharOffsets {
    /// `None` when the text is ASCII (bytes are chars); else one entry per byte plus one for the end.
    char_of_byte: Option<Vec<u32>>,
}

impl CharOffsets {
    fn new(text: &str) -> Self {
        if text.is_ascii() {
            return CharOffsets { char_of_byte: None };
        }
        let mut v = vec![0u32; text.len() + 1];
        let mut n = 0u32;
        for (bi, c) in text.char_indices() {
            for k in 0..c.len_utf8() {
                v[bi + k] = n;
            }
            n += 1;
        }
        v[text.len()] = n;
        CharOffsets { char_of_byte: Some(v) }
    }

    fn convert(&self, (s, e): (usize, usize)) -> (usize, usize) {
        let Some(m) = &self.char_of_byte else { return (s, e) };
        let at = |i: usize| m[i.min(m.len() - 1)] as usize;
        (at(s), at(e))
    }
}

fn parse_direction(s: &str) -> PyResult<Direction> {
    Direction::parse(s).map_err(PyValueError::new_err)
}

/// Immutable result of encoding one text; offsets are character spans of the original text.
#[pyclass(name = "Encoding", module = "subword._core", frozen)]
pub struct PyEncoding {
    enc: Encoding,
    /// The text and the optional pair text (offsets of pair tokens index into the pair).
    texts: Arc<(String, Option<String>)>,
    table: Arc<TokenTable>,
}

impl PyEncoding {
    fn wrap(enc: Encoding, texts: Arc<(String, Option<String>)>, table: Arc<TokenTable>) -> Self {
        PyEncoding { enc, texts, table }
    }
}

#[pymethods]
impl PyEncoding {
    #[getter]
    fn ids(&self) -> Vec<u32> {
        self.enc.ids.clone()
    }

    #[getter]
    fn type_ids(&self) -> Vec<u32> {
        self.enc.type_ids.clone()
    }

    #[getter]
    fn tokens(&self) -> Vec<String> {
        (0..self.enc.len()).map(|i| self.enc.token_str(&self.table, i).to_string()).collect()
    }

    /// Character offsets into the original text.
    #[getter]
    fn offsets(&self) -> Vec<(usize, usize)> {
        let conv_a = CharOffsets::new(&self.texts.0);
        let conv_b = self.texts.1.as_deref().map(CharOffsets::new);
        self.enc
            .offsets
            .iter()
            .zip(&self.enc.seq)
            .map(|(&o, &s)| match (&conv_b, s) {
                (Some(b), 1) => b.convert(o),
                _ => conv_a.convert(o),
            })
            .collect()
    }

    /// Per token: 0 (the text), 1 (the pair) or None (special and padding tokens).
    #[getter]
    fn sequence_ids(&self) -> Vec<Option<u8>> {
        self.enc.seq.iter().map(|&s| if s == NO_SEQ { None } else { Some(s) }).collect()
    }

    /// Byte offsets into the UTF-8 encoding of the original text.
    #[getter]
    fn byte_offsets(&self) -> Vec<(usize, usize)> {
        self.enc.offsets.clone()
    }

    #[getter]
    fn attention_mask(&self) -> Vec<u32> {
        self.enc.attention_mask.clone()
    }

    #[getter]
    fn special_tokens_mask(&self) -> Vec<u32> {
        self.enc.special_tokens_mask.clone()
    }

    #[getter]
    fn overflowing(&self) -> Vec<PyEncoding> {
        self.enc
            .overflowing
            .iter()
            .map(|o| PyEncoding::wrap(o.clone(), self.texts.clone(), self.table.clone()))
            .collect()
    }

    fn __len__(&self) -> usize {
        self.enc.len()
    }

    fn __repr__(&self) -> String {
        format!("Encoding(num_tokens={}, overflowing={})", self.enc.len(), self.enc.overflowing.len())
    }

    /// A copy cut to `max_length` tokens (HF `Encoding.truncate`: the rest goes to `overflowing`,
    /// in windows overlapping by `stride`).
    #[pyo3(signature = (max_length, stride = 0, direction = "right"))]
    fn truncate(&self, max_length: usize, stride: usize, direction: &str) -> PyResult<PyEncoding> {
        let mut e = self.enc.clone();
        e.truncate(max_length, stride, parse_direction(direction)?).map_err(PyValueError::new_err)?;
        Ok(PyEncoding::wrap(e, self.texts.clone(), self.table.clone()))
    }

    /// A copy padded to `length` tokens (HF `Encoding.pad`; overflowing parts too).
    #[pyo3(signature = (length, pad_id = 0, pad_type_id = 0, pad_token = "[PAD]", direction = "right"))]
    fn pad(&self, length: usize, pad_id: u32, pad_type_id: u32, pad_token: &str, direction: &str) -> PyResult<PyEncoding> {
        let mut e = self.enc.clone();
        e.pad_with_str(length, pad_id, pad_type_id, &self.table, pad_token, parse_direction(direction)?);
        Ok(PyEncoding::wrap(e, self.texts.clone(), self.table.clone()))
    }
}

/// The whole pipeline, built from the full HF tokenizer.json text.
#[pyclass(name = "CoreTokenizer", module = "subword._core", frozen)]
pub struct PyCoreTokenizer {
    // Swapped whole by `set_dropout`; encoders clone the Arc and release the lock at once.
    inner: RwLock<Arc<Tokenizer>>,
}

impl PyCoreTokenizer {
    fn get(&self) -> PyResult<Arc<Tokenizer>> {
        self.inner.read().map(|g| g.clone()).map_err(|_| PyRuntimeError::new_err("tokenizer lock poisoned"))
    }
}

#[pymethods]
impl PyCoreTokenizer {
    #[new]
    fn new(tokenizer_json: &str) -> PyResult<Self> {
        let t = Tokenizer::from_json_str(tokenizer_json).map_err(PyValueError::new_err)?;
        Ok(PyCoreTokenizer { inner: RwLock::new(Arc::new(t)) })
    }

    /// Encodes `text` (and `pair`, the second sequence of a pair input).
    #[pyo3(signature = (text, add_special_tokens = true, pair = None))]
    fn encode(&self, py: Python<'_>, text: String, add_special_tokens: bool, pair: Option<String>) -> PyResult<PyEncoding> {
        let tok = self.get()?;
        let enc = py
            .detach(|| tok.encode_pair(&text, pair.as_deref(), add_special_tokens))
            .map_err(PyValueError::new_err)?;
        Ok(PyEncoding::wrap(enc, Arc::new((text, pair)), tok.table().clone()))
    }

    /// Encodes a batch in parallel (GIL released); `pairs`, if given, holds one second sequence (or
    /// None) per text. Padding applies to the whole batch.
    #[pyo3(signature = (texts, add_special_tokens = true, pairs = None))]
    fn encode_batch(
        &self,
        py: Python<'_>,
        texts: Vec<String>,
        add_special_tokens: bool,
        pairs: Option<Vec<Option<String>>>,
    ) -> PyResult<Vec<PyEncoding>> {
        let tok = self.get()?;
        let table = tok.table().clone();
        match pairs {
            None => {
                let encs = py.detach(|| tok.encode_batch(&texts, add_special_tokens)).map_err(PyValueError::new_err)?;
                Ok(encs
                    .into_iter()
                    .zip(texts)
                    .map(|(e, t)| PyEncoding::wrap(e, Arc::new((t, None)), table.clone()))
                    .collect())
            }
            Some(pairs) => {
                if pairs.len() != texts.len() {
                    return Err(PyValueError::new_err(format!(
                        "pairs has {} items but texts has {}",
                        pairs.len(),
                        texts.len()
                    )));
                }
                let inputs: Vec<(String, Option<String>)> = texts.into_iter().zip(pairs).collect();
                let encs =
                    py.detach(|| tok.encode_batch_pairs(&inputs, add_special_tokens)).map_err(PyValueError::new_err)?;
                Ok(encs.into_iter().zip(inputs).map(|(e, t)| PyEncoding::wrap(e, Arc::new(t), table.clone())).collect())
            }
        }
    }

    /// Ids only (no offsets or token strings): the fast path.
    #[pyo3(signature = (text, add_special_tokens = true))]
    fn encode_ids(&self, py: Python<'_>, text: String, add_special_tokens: bool) -> PyResult<Vec<u32>> {
        let tok = self.get()?;
        py.detach(|| tok.encode_ids(&text, add_special_tokens)).map_err(PyValueError::new_err)
    }

    #[pyo3(signature = (texts, add_special_tokens = true))]
    fn encode_batch_ids<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<String>,
        add_special_tokens: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let tok = self.get()?;
        let ids = py.detach(|| tok.encode_batch_ids(&texts, add_special_tokens)).map_err(PyValueError::new_err)?;
        let out = PyList::empty(py);
        for v in ids {
            out.append(PyList::new(py, v)?)?;
        }
        Ok(out)
    }

    #[pyo3(signature = (ids, skip_special_tokens = true))]
    fn decode(&self, py: Python<'_>, ids: Vec<u32>, skip_special_tokens: bool) -> PyResult<String> {
        let tok = self.get()?;
        Ok(py.detach(|| tok.decode(&ids, skip_special_tokens)))
    }

    #[pyo3(signature = (ids, skip_special_tokens = true))]
    fn decode_batch(&self, py: Python<'_>, ids: Vec<Vec<u32>>, skip_special_tokens: bool) -> PyResult<Vec<String>> {
        let tok = self.get()?;
        Ok(py.detach(|| tok.decode_batch(&ids, skip_special_tokens)))
    }

    fn token_to_id(&self, token: &str) -> PyResult<Option<u32>> {
        Ok(self.get()?.token_to_id(token))
    }

    fn id_to_token(&self, id: u32) -> PyResult<Option<String>> {
        Ok(self.get()?.id_to_token(id))
    }

    fn vocab_size(&self) -> PyResult<usize> {
        Ok(self.get()?.vocab_size())
    }

    /// BPE-dropout probability (None or 0 = off) and the seed of our deterministic RNG.
    #[pyo3(signature = (p, seed = 0))]
    fn set_dropout(&self, p: Option<f32>, seed: u64) -> PyResult<()> {
        let mut guard = self.inner.write().map_err(|_| PyRuntimeError::new_err("tokenizer lock poisoned"))?;
        let mut t = (**guard).clone();
        t.set_dropout(p, seed).map_err(PyValueError::new_err)?;
        *guard = Arc::new(t);
        Ok(())
    }
}

/// A pre-tokenizer built from its HF JSON text.
#[pyclass(name = "PreTokenizer", module = "subword._core", frozen)]
pub struct PyPreTokenizer {
    inner: PreTokenizer,
}

#[pymethods]
impl PyPreTokenizer {
    #[new]
    fn new(spec_json: &str) -> PyResult<Self> {
        Ok(PyPreTokenizer { inner: PreTokenizer::from_json_str(spec_json).map_err(PyValueError::new_err)? })
    }

    /// Pieces as the model sees them, with CHARACTER offsets (HF's `pre_tokenize_str`).
    fn pre_tokenize_str(&self, text: &str) -> Vec<(String, (usize, usize))> {
        let conv = CharOffsets::new(text);
        self.inner.pre_tokenize(text).into_iter().map(|(p, o)| (p, conv.convert(o))).collect()
    }
}

/// A normalizer built from its HF JSON text.
#[pyclass(name = "Normalizer", module = "subword._core", frozen)]
pub struct PyNormalizer {
    inner: Normalizer,
}

#[pymethods]
impl PyNormalizer {
    #[new]
    fn new(spec_json: &str) -> PyResult<Self> {
        Ok(PyNormalizer { inner: Normalizer::from_json_str(spec_json).map_err(PyValueError::new_err)? })
    }

    fn normalize_str(&self, text: &str) -> String {
        self.inner.normalize_str(text)
    }

    /// The normalized text and, per normalized CHARACTER, the (start, end) character span of the
    /// original text it comes from.
    fn normalize_with_alignment(&self, text: &str) -> (String, Vec<(usize, usize)>) {
        let (t, align) = self.inner.normalize_with_alignment(text);
        let conv = CharOffsets::new(text);
        let per_char = t.char_indices().map(|(i, _)| conv.convert(align[i])).collect();
        (t, per_char)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEncoding>()?;
    m.add_class::<PyCoreTokenizer>()?;
    m.add_class::<PyPreTokenizer>()?;
    m.add_class::<PyNormalizer>()?;
    Ok(())
}
