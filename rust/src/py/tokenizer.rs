//! Bindings for encoding: `Encoding`, `CoreTokenizer`, `PreTokenizer`, `Normalizer`.
//!
//! Type conversion and GIL handling only. Batches run with the GIL released (`py.detach`) on
//! rayon's pool. `Encoding` is a lazy view: it keeps the Rust vectors and converts a field to Python
//! objects only when it is read, and converts byte offsets to CHARACTER offsets (HF's Python
//! convention) at that moment, so `encode_batch` does not pay for fields nobody reads.

use std::mem::ManuallyDrop;
use std::sync::{Arc, RwLock};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use super::load::{Kind, PyNativeModel};

use crate::batch_text::BatchText;
use crate::encoding::{CharOffsets, Direction, Encoding, TokenTable, NO_SEQ};
use crate::normalize::Normalizer;
use crate::pretok::PreTokenizer;
use crate::tokenizer::Tokenizer;

fn parse_direction(s: &str) -> PyResult<Direction> {
    Direction::parse(s).map_err(PyValueError::new_err)
}

/// Immutable result of encoding one text; offsets are character spans of the original text.
#[pyclass(name = "Encoding", module = "subword._core", frozen)]
pub struct PyEncoding {
    /// Boxed, so that the Python object is small (40 bytes, not 248): a batch makes one per text on the
    /// calling thread, and Python's own arenas for them were most of `encode_batch`'s remaining page
    /// faults. The box is made by the pool's worker that encoded the text ([`encoding_list`]).
    enc: ManuallyDrop<Box<Encoding>>,
    /// The text and the optional pair text (offsets of pair tokens index into the pair).
    texts: Arc<(Py<PyString>, Option<Py<PyString>>)>,
    table: Arc<TokenTable>,
}

impl Drop for PyEncoding {
    /// The columns are freed under a [`HoldFreedPages`](crate::alloc::HoldFreedPages) guard: a batch's
    /// Encodings are dropped by Python after the call, and freed at delay 0 their pages went back to the
    /// OS one by one, for the next batch to fault in again (`encode_batch` of 5 MB at two threads: 25,000
    /// faults per call with the call alone held, 15,000 with its Encodings' drops held too).
    fn drop(&mut self) {
        let _pages = crate::alloc::HoldFreedPages::new();
        // SAFETY: dropped here once; `self` is never used again (this is its destructor).
        unsafe { ManuallyDrop::drop(&mut self.enc) };
    }
}

impl PyEncoding {
    pub(super) fn wrap(
        enc: Encoding,
        texts: Arc<(Py<PyString>, Option<Py<PyString>>)>,
        table: Arc<TokenTable>,
    ) -> Self {
        Self::wrap_boxed(Box::new(enc), texts, table)
    }

    fn wrap_boxed(
        enc: Box<Encoding>,
        texts: Arc<(Py<PyString>, Option<Py<PyString>>)>,
        table: Arc<TokenTable>,
    ) -> Self {
        PyEncoding { enc: ManuallyDrop::new(enc), texts, table }
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
    fn offsets(&self, py: Python<'_>) -> PyResult<Vec<(usize, usize)>> {
        let conv_a = CharOffsets::new(self.texts.0.bind(py).to_str()?);
        let conv_b = match &self.texts.1 {
            Some(p) => Some(CharOffsets::new(p.bind(py).to_str()?)),
            None => None,
        };
        Ok(self
            .enc
            .offsets
            .iter()
            .zip(&self.enc.seq)
            .map(|(&o, &s)| match (&conv_b, s) {
                (Some(b), 1) => b.convert(o),
                _ => conv_a.convert(o),
            })
            .collect())
    }

    /// The ids and the character offsets as little-endian ``u32`` bytes (``ids``, then ``start, end``
    /// per token), for ``numpy.frombuffer``: one call per encoding instead of one Python object per
    /// token, for callers that reduce many encodings with numpy (``subword.compare``).
    fn ids_offsets_u32<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        let offsets = self.offsets(py)?;
        let mut ids = Vec::with_capacity(self.enc.ids.len() * 4);
        for &id in &self.enc.ids {
            ids.extend_from_slice(&id.to_le_bytes());
        }
        let mut offs = Vec::with_capacity(offsets.len() * 8);
        for (start, end) in offsets {
            let (start, end) = (u32::try_from(start), u32::try_from(end));
            match (start, end) {
                (Ok(s), Ok(e)) => {
                    offs.extend_from_slice(&s.to_le_bytes());
                    offs.extend_from_slice(&e.to_le_bytes());
                }
                _ => return Err(PyValueError::new_err("an offset does not fit in 32 bits")),
            }
        }
        Ok((PyBytes::new(py, &ids), PyBytes::new(py, &offs)))
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
        let mut e = Encoding::clone(&self.enc);
        e.truncate(max_length, stride, parse_direction(direction)?).map_err(PyValueError::new_err)?;
        Ok(PyEncoding::wrap(e, self.texts.clone(), self.table.clone()))
    }

    /// A copy padded to `length` tokens (HF `Encoding.pad`; overflowing parts too).
    #[pyo3(signature = (length, pad_id = 0, pad_type_id = 0, pad_token = "[PAD]", direction = "right"))]
    fn pad(
        &self,
        length: usize,
        pad_id: u32,
        pad_type_id: u32,
        pad_token: &str,
        direction: &str,
    ) -> PyResult<PyEncoding> {
        let mut e = Encoding::clone(&self.enc);
        e.pad_with_str(length, pad_id, pad_type_id, &self.table, pad_token, parse_direction(direction)?);
        Ok(PyEncoding::wrap(e, self.texts.clone(), self.table.clone()))
    }
}

/// What a pipeline was built from, to build it again when it is pickled.
enum Source {
    /// The full tokenizer.json text.
    Json(String),
    /// A skeleton tokenizer.json (model options only) and the file the model's data was read from.
    Parts { skeleton: String, kind: Kind, bytes: Py<PyBytes> },
}

/// The whole pipeline, built from the full HF tokenizer.json text, or (`from_parts`) from a
/// tokenizer.json without the model's data plus that data read from a file in Rust.
#[pyclass(name = "CoreTokenizer", module = "subword._core", frozen)]
pub struct PyCoreTokenizer {
    // Swapped whole by `set_dropout`; encoders clone the Arc and release the lock at once.
    inner: RwLock<Arc<Tokenizer>>,
    source: Source,
}

impl PyCoreTokenizer {
    pub(super) fn get(&self) -> PyResult<Arc<Tokenizer>> {
        self.inner.read().map(|g| g.clone()).map_err(|_| PyRuntimeError::new_err("tokenizer lock poisoned"))
    }

    fn build_parts(py: Python<'_>, skeleton: &str, data: crate::io::ModelData) -> PyResult<Tokenizer> {
        py.detach(|| Tokenizer::from_parts(skeleton, data)).map_err(PyValueError::new_err)
    }
}

/// Rebuilds a pickled `CoreTokenizer.from_parts` pipeline from its skeleton and file bytes.
#[pyfunction]
fn _core_from_source(
    py: Python<'_>,
    skeleton: String,
    kind: &str,
    bytes: Bound<'_, PyBytes>,
) -> PyResult<PyCoreTokenizer> {
    let kind = Kind::parse(kind)?;
    let raw = bytes.as_bytes();
    let (_, data) = py
        .detach(|| kind.read(raw))
        .ok_or_else(|| PyValueError::new_err("the pickled tokenizer's file does not read"))?;
    let t = PyCoreTokenizer::build_parts(py, &skeleton, data)?;
    Ok(PyCoreTokenizer {
        inner: RwLock::new(Arc::new(t)),
        source: Source::Parts { skeleton, kind, bytes: bytes.unbind() },
    })
}

#[pymethods]
impl PyCoreTokenizer {
    #[new]
    fn new(tokenizer_json: &str) -> PyResult<Self> {
        let t = Tokenizer::from_json_str(tokenizer_json).map_err(PyValueError::new_err)?;
        Ok(PyCoreTokenizer { inner: RwLock::new(Arc::new(t)), source: Source::Json(tokenizer_json.to_string()) })
    }

    /// The pipeline of `skeleton` (a tokenizer.json whose model section holds the options only)
    /// with the data of `model` (read from a file by `read_hf_json`, `read_tiktoken`, ...).
    #[staticmethod]
    fn from_parts(py: Python<'_>, skeleton: String, model: &PyNativeModel) -> PyResult<Self> {
        let data = model.take_data(py)?;
        let t = Self::build_parts(py, &skeleton, data)?;
        let (kind, bytes) = model.kind_and_source(py);
        Ok(PyCoreTokenizer { inner: RwLock::new(Arc::new(t)), source: Source::Parts { skeleton, kind, bytes } })
    }

    /// Pickle support: rebuilt from the JSON text (or the skeleton and the file), with the current
    /// dropout settings.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let this = slf.get();
        let state = this.get()?.model().dropout_settings();
        match &this.source {
            Source::Json(json) => (slf.get_type(), (json.clone(),), state).into_pyobject(py),
            Source::Parts { skeleton, kind, bytes } => {
                let rebuild = py.import("subword._core")?.getattr("_core_from_source")?;
                (rebuild, (skeleton.clone(), kind.spec(), bytes.clone_ref(py)), state).into_pyobject(py)
            }
        }
    }

    fn __setstate__(&self, state: (Option<f32>, u64)) -> PyResult<()> {
        self.set_dropout(state.0, state.1)
    }

    /// Encodes `text` (and `pair`, the second sequence of a pair input).
    #[pyo3(signature = (text, add_special_tokens = true, pair = None))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        text: Bound<'py, PyString>,
        add_special_tokens: bool,
        pair: Option<Bound<'py, PyString>>,
    ) -> PyResult<PyEncoding> {
        let tok = self.get()?;
        let a = text.to_str()?;
        let b = pair.as_ref().map(|p| p.to_str()).transpose()?;
        let enc = py.detach(|| tok.encode_pair(a, b, add_special_tokens)).map_err(PyValueError::new_err)?;
        Ok(PyEncoding::wrap(enc, Arc::new((text.unbind(), pair.map(Bound::unbind))), tok.table().clone()))
    }

    /// Encodes a batch in parallel (GIL released); `pairs`, if given, holds one second sequence (or
    /// None) per text. Padding applies to the whole batch. The texts are read in place: the
    /// Encodings keep references to the Python strings (for character offsets), not copies.
    #[pyo3(signature = (texts, add_special_tokens = true, pairs = None))]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Bound<'py, PyString>>,
        add_special_tokens: bool,
        pairs: Option<Vec<Option<Bound<'py, PyString>>>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let tok = self.get()?;
        let table = tok.table().clone();
        let _pages = crate::alloc::HoldFreedPages::new();
        let strs: Vec<&str> = texts.iter().map(|s| s.to_str()).collect::<PyResult<_>>()?;
        let pstrs: Vec<Option<&str>> = match &pairs {
            None => vec![None; strs.len()],
            Some(pairs) => {
                if pairs.len() != texts.len() {
                    return Err(PyValueError::new_err(format!(
                        "pairs has {} items but texts has {}",
                        pairs.len(),
                        texts.len()
                    )));
                }
                pairs.iter().map(|p| p.as_ref().map(|s| s.to_str()).transpose()).collect::<PyResult<_>>()?
            }
        };
        let inputs: Vec<(&str, Option<&str>)> = strs.iter().copied().zip(pstrs).collect();
        if tok.pads_batch() {
            // Padded to the batch's longest: encoded whole, then wrapped.
            let encs =
                py.detach(|| tok.encode_batch_pairs(&inputs, add_special_tokens)).map_err(PyValueError::new_err)?;
            let out = PyList::empty(py);
            for (k, e) in encs.into_iter().enumerate() {
                out.append(encoding_object(py, Box::new(e), &texts, pairs.as_deref(), k, &table)?)?;
            }
            return Ok(out);
        }
        // `encode_batch_pairs` without the padding, chunk by chunk.
        encoding_list(py, &texts, pairs.as_deref(), &table, &None, |range| {
            inputs[range].iter().map(|&(a, b)| tok.encode_pair(a, b, add_special_tokens)).collect()
        })
    }

    /// Ids only (no offsets or token strings): the fast path.
    #[pyo3(signature = (text, add_special_tokens = true))]
    fn encode_ids(&self, py: Python<'_>, text: Bound<'_, PyString>, add_special_tokens: bool) -> PyResult<Vec<u32>> {
        let tok = self.get()?;
        let t = super::text::utf8_of(&text)?;
        py.detach(|| tok.encode_ids(&t, add_special_tokens)).map_err(PyValueError::new_err)
    }

    /// Ids-only batch. The texts are read in place (no copy: the UTF-8 buffers belong to the Python
    /// strings, which this call keeps alive), and Python's cyclic GC is paused while the result
    /// lists are built (otherwise generational collections triggered by the new lists cost as much
    /// as the encoding itself).
    #[pyo3(signature = (texts, add_special_tokens = true))]
    fn encode_batch_ids<'py>(
        &self,
        py: Python<'py>,
        texts: Bound<'py, PyAny>,
        add_special_tokens: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        super::held_batch::run_held_with_gil(py, &texts, &IdLists { tok: &*self.get()?, add_special_tokens })
    }

    /// Ids-only batch as two flat buffers (see [`super::flat_buffers`]): ids (u32) and offsets (i64,
    /// one more than the texts). No Python object per token or text is made.
    #[pyo3(signature = (texts, add_special_tokens = true))]
    fn encode_batch_ids_flat<'py>(
        &self,
        py: Python<'py>,
        texts: Bound<'py, PyAny>,
        add_special_tokens: bool,
    ) -> PyResult<(Py<super::flat::FlatBuffer>, Py<super::flat::FlatBuffer>)> {
        let job = FlatIds { tok: &*self.get()?, add_special_tokens };
        super::flat_buffers(py, super::held_batch::run_held(py, &texts, &job)?)
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

/// A batch's ids as one Python list per text.
struct IdLists<'a> {
    tok: &'a Tokenizer,
    add_special_tokens: bool,
}

impl<'py> super::held_batch::GilBatchJob<'py, Bound<'py, PyList>> for IdLists<'_> {
    fn run<S: BatchText>(&self, py: Python<'py>, items: &[S]) -> PyResult<Bound<'py, PyList>> {
        let (tok, add) = (self.tok, self.add_special_tokens);
        if tok.pads_batch() {
            // Padded to the batch's longest: encoded whole, then built.
            let chunks = py.detach(|| tok.encode_batch_ids_flat(items, add)).map_err(PyValueError::new_err)?;
            let _pause = super::GcPause::new(py)?;
            let out = PyList::empty(py);
            for (ids, lens) in &chunks {
                super::push_id_lists(py, &out, ids, lens)?;
            }
            return Ok(out);
        }
        super::nested_id_lists(py, &None, items.len(), |range| tok.encode_ids_chunk(&items[range], add))
    }
}

/// A batch's ids as the flat output's two vectors (see [`super::flat::join_chunks`]).
struct FlatIds<'a> {
    tok: &'a Tokenizer,
    add_special_tokens: bool,
}

impl super::held_batch::BatchJob<(Vec<u32>, Vec<i64>)> for FlatIds<'_> {
    fn run<S: BatchText>(&self, items: &[S]) -> Result<(Vec<u32>, Vec<i64>), String> {
        self.tok.encode_batch_ids_flat(items, self.add_special_tokens).map(super::flat::join_chunks)
    }
}

/// The `Encoding` objects of a batch, in a new list: `encode(range)` gives the encodings of the
/// texts `range` (with their `pairs`, if any). Encoded in chunks through [`super::pipelined`], so
/// the objects are made on the calling thread while the pool encodes the chunks after.
pub(super) fn encoding_list<'py>(
    py: Python<'py>,
    texts: &[Bound<'py, PyString>],
    pairs: Option<&[Option<Bound<'py, PyString>>]>,
    table: &Arc<TokenTable>,
    pool: &Option<Arc<rayon::ThreadPool>>,
    encode: impl Fn(std::ops::Range<usize>) -> Result<Vec<Encoding>, String> + Sync,
) -> PyResult<Bound<'py, PyList>> {
    // Boxed on the worker (see `PyEncoding::enc`).
    let encode = |r: std::ops::Range<usize>| encode(r).map(|v| v.into_iter().map(Box::new).collect::<Vec<_>>());
    let n = texts.len();
    let size = super::chunk_len(n, pool);
    let out = PyList::empty(py);
    let mut k = 0usize;
    super::pipelined(
        py,
        pool,
        n.div_ceil(size),
        |i| encode(i * size..((i + 1) * size).min(n)),
        |encs| {
            for e in encs {
                out.append(encoding_object(py, e, texts, pairs, k, table)?)?;
                k += 1;
            }
            Ok(())
        },
    )?;
    Ok(out)
}

/// The `Encoding` object of text `k` of a batch (it keeps the text and its pair for offsets).
fn encoding_object<'py>(
    py: Python<'py>,
    enc: Box<Encoding>,
    texts: &[Bound<'py, PyString>],
    pairs: Option<&[Option<Bound<'py, PyString>>]>,
    k: usize,
    table: &Arc<TokenTable>,
) -> PyResult<Bound<'py, PyEncoding>> {
    let text = texts.get(k).ok_or_else(|| PyRuntimeError::new_err("more encodings than texts"))?;
    let pair = pairs.and_then(|p| p.get(k)).and_then(|p| p.as_ref()).map(|p| p.clone().unbind());
    Bound::new(py, PyEncoding::wrap_boxed(enc, Arc::new((text.clone().unbind(), pair)), table.clone()))
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
    m.add_function(wrap_pyfunction!(_core_from_source, m)?)?;
    m.add_class::<PyPreTokenizer>()?;
    m.add_class::<PyNormalizer>()?;
    Ok(())
}
