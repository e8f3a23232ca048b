//! Bindings for the SentencePiece pipeline of `Tokenizer` (`CoreSpmTokenizer`): the same methods as
//! `CoreTokenizer`, returning the same `Encoding`. Type conversion and GIL release only.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use crate::batch_text::BatchText;
use crate::spm::{CharsMap, SpmNormalizer, SpmSpec};
use crate::tokenizer::sentencepiece::SpmPipeline;

use super::tokenizer::PyEncoding;

/// `CoreSpmTokenizer(pieces [(piece, score, type)], model_type, spec_json, charsmap=None,
/// byte_fallback=False, unk_surface=" ⁇ ")`: `spec_json` holds the normalizer options
/// (sentencepiece names), `charsmap` the model's precompiled_charsmap.
#[pyclass(name = "CoreSpmTokenizer", module = "subword._core", frozen)]
pub struct PyCoreSpmTokenizer {
    inner: Arc<SpmPipeline>,
}

impl PyCoreSpmTokenizer {
    /// The pipeline, for the Rust-side reductions of `subword compare`.
    pub(super) fn pipeline(&self) -> Arc<SpmPipeline> {
        self.inner.clone()
    }
}

/// A batch's ids as the flat output's two vectors (see [`super::flat::join_chunks`]).
struct FlatIds<'a>(&'a SpmPipeline);

impl super::held_batch::BatchJob<(Vec<u32>, Vec<i64>)> for FlatIds<'_> {
    fn run<S: BatchText>(&self, items: &[S]) -> Result<(Vec<u32>, Vec<i64>), String> {
        self.0.encode_batch_ids_flat(items).map(super::flat::join_chunks)
    }
}

/// A batch's ids as one Python list per text.
struct IdLists<'a>(&'a SpmPipeline);

impl<'py> super::held_batch::GilBatchJob<'py, Bound<'py, PyList>> for IdLists<'_> {
    fn run<S: BatchText>(&self, py: Python<'py>, items: &[S]) -> PyResult<Bound<'py, PyList>> {
        super::nested_id_lists(py, &None, items.len(), |range| self.0.encode_ids_chunk(&items[range]))
    }
}

fn err(e: String) -> PyErr {
    PyValueError::new_err(e)
}

fn no_pair(pair: &Option<Bound<'_, PyString>>) -> PyResult<()> {
    if pair.is_some() {
        return Err(PyValueError::new_err("a SentencePiece model encodes single texts, not pairs"));
    }
    Ok(())
}

#[pymethods]
impl PyCoreSpmTokenizer {
    #[new]
    #[pyo3(signature = (pieces, model_type, spec_json, charsmap = None, byte_fallback = false,
                        unk_surface = " \u{2047} ".to_string()))]
    fn new(
        py: Python<'_>,
        pieces: Vec<(String, f32, i32)>,
        model_type: i32,
        spec_json: &str,
        charsmap: Option<Vec<u8>>,
        byte_fallback: bool,
        unk_surface: String,
    ) -> PyResult<Self> {
        let spec = SpmSpec::from_json_str(spec_json).map_err(err)?;
        let inner = py.detach(|| -> Result<SpmPipeline, String> {
            let mut norm = SpmNormalizer::from_spec(&spec);
            if let Some(blob) = charsmap.filter(|b| !b.is_empty()) {
                norm.charsmap = Some(Arc::new(CharsMap::from_blob(&blob)?));
            }
            SpmPipeline::new(pieces, model_type, norm, byte_fallback, unk_surface)
        });
        Ok(PyCoreSpmTokenizer { inner: Arc::new(inner.map_err(err)?) })
    }

    /// The pipeline of a `.model` file's bytes, its pieces parsed here rather than passed as a Python
    /// list (the other arguments as for the constructor). ValueError unless the model has exactly one
    /// unknown piece (the Python reader then reports the file).
    #[staticmethod]
    #[pyo3(signature = (data, model_type, spec_json, charsmap = None, byte_fallback = false,
                        unk_surface = " \u{2047} ".to_string()))]
    fn from_model_bytes(
        py: Python<'_>,
        data: &[u8],
        model_type: i32,
        spec_json: &str,
        charsmap: Option<&[u8]>,
        byte_fallback: bool,
        unk_surface: String,
    ) -> PyResult<Self> {
        let spec = SpmSpec::from_json_str(spec_json).map_err(err)?;
        let inner = py.detach(|| -> Result<SpmPipeline, String> {
            let parts = crate::spm::proto::parse_model(data)?;
            let unknown = parts.pieces.iter().filter(|p| p.2 == 2).count();
            if unknown != 1 {
                return Err(format!("a SentencePiece model needs exactly one unknown piece, found {unknown}"));
            }
            let mut norm = SpmNormalizer::from_spec(&spec);
            if let Some(blob) = charsmap.filter(|b| !b.is_empty()) {
                norm.charsmap = Some(Arc::new(CharsMap::from_blob(blob)?));
            }
            SpmPipeline::new(parts.pieces, model_type, norm, byte_fallback, unk_surface)
        });
        Ok(PyCoreSpmTokenizer { inner: Arc::new(inner.map_err(err)?) })
    }

    #[pyo3(signature = (text, add_special_tokens = true, pair = None))]
    fn encode(
        &self,
        py: Python<'_>,
        text: Bound<'_, PyString>,
        add_special_tokens: bool,
        pair: Option<Bound<'_, PyString>>,
    ) -> PyResult<PyEncoding> {
        let _ = add_special_tokens; // a .model has no post-processor
        no_pair(&pair)?;
        let t = text.to_str()?;
        let enc = py.detach(|| self.inner.encode(t)).map_err(err)?;
        Ok(PyEncoding::wrap(enc, Arc::new((text.unbind(), None)), self.inner.table().clone()))
    }

    #[pyo3(signature = (texts, add_special_tokens = true, pairs = None))]
    fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Bound<'py, PyString>>,
        add_special_tokens: bool,
        pairs: Option<Vec<Option<Bound<'py, PyString>>>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let _ = add_special_tokens;
        let _pages = crate::alloc::HoldFreedPages::new();
        if pairs.is_some_and(|p| p.iter().any(Option::is_some)) {
            return Err(PyValueError::new_err("a SentencePiece model encodes single texts, not pairs"));
        }
        let strs: Vec<&str> = texts.iter().map(|s| s.to_str()).collect::<PyResult<_>>()?;
        super::tokenizer::encoding_list(py, &texts, None, self.inner.table(), &None, |range| {
            strs[range].iter().map(|t| self.inner.encode(t)).collect()
        })
    }

    #[pyo3(signature = (text, add_special_tokens = true))]
    fn encode_ids(&self, py: Python<'_>, text: Bound<'_, PyString>, add_special_tokens: bool) -> PyResult<Vec<u32>> {
        let _ = add_special_tokens;
        let t = super::text::utf8_of(&text)?;
        let mut out = Vec::new();
        py.detach(|| self.inner.encode_ids(&t, &mut String::new(), &mut out)).map_err(err)?;
        Ok(out)
    }

    /// Ids-only batch (parallel, GIL released, through the encoders' word caches).
    #[pyo3(signature = (texts, add_special_tokens = true))]
    fn encode_batch_ids<'py>(
        &self,
        py: Python<'py>,
        texts: Bound<'py, PyAny>,
        add_special_tokens: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let _ = add_special_tokens;
        super::held_batch::run_held_with_gil(py, &texts, &IdLists(&self.inner))
    }

    /// Ids-only batch as two flat buffers (see [`super::flat_buffers`]).
    #[pyo3(signature = (texts, add_special_tokens = true))]
    fn encode_batch_ids_flat<'py>(
        &self,
        py: Python<'py>,
        texts: Bound<'py, PyAny>,
        add_special_tokens: bool,
    ) -> PyResult<(Py<super::flat::FlatBuffer>, Py<super::flat::FlatBuffer>)> {
        let _ = add_special_tokens;
        super::flat_buffers(py, super::held_batch::run_held(py, &texts, &FlatIds(&self.inner))?)
    }

    /// sentencepiece's decode (control pieces are always dropped, as sentencepiece does).
    #[pyo3(signature = (ids, skip_special_tokens = true))]
    fn decode(&self, py: Python<'_>, ids: Vec<u32>, skip_special_tokens: bool) -> String {
        let _ = skip_special_tokens;
        py.detach(|| self.inner.decode(&ids))
    }

    #[pyo3(signature = (ids, skip_special_tokens = true))]
    fn decode_batch(&self, py: Python<'_>, ids: Vec<Vec<u32>>, skip_special_tokens: bool) -> Vec<String> {
        let _ = skip_special_tokens;
        py.detach(|| ids.iter().map(|i| self.inner.decode(i)).collect())
    }

    /// The `n` best segmentations (Unigram): [(Encoding, score)], best first.
    fn nbest(&self, py: Python<'_>, text: Bound<'_, PyString>, n: usize) -> PyResult<Vec<(PyEncoding, f64)>> {
        let t = text.to_str()?;
        let r = py.detach(|| self.inner.nbest(t, n)).map_err(err)?;
        let texts = Arc::new((text.unbind(), None));
        Ok(r.into_iter().map(|(e, s)| (PyEncoding::wrap(e, texts.clone(), self.inner.table().clone()), s)).collect())
    }

    /// `count` sampled segmentations (Unigram).
    #[pyo3(signature = (text, alpha, nbest_size = -1, seed = 0, count = 1))]
    fn sample(
        &self,
        py: Python<'_>,
        text: Bound<'_, PyString>,
        alpha: f64,
        nbest_size: i64,
        seed: u64,
        count: usize,
    ) -> PyResult<Vec<PyEncoding>> {
        let t = text.to_str()?;
        let r = py.detach(|| self.inner.sample(t, alpha, nbest_size, seed, count)).map_err(err)?;
        let texts = Arc::new((text.unbind(), None));
        Ok(r.into_iter().map(|e| PyEncoding::wrap(e, texts.clone(), self.inner.table().clone())).collect())
    }

    /// The normalized text (spaces as `▁`), as the model sees it.
    fn normalize(&self, text: &str) -> String {
        self.inner.normalize(text)
    }

    fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    fn id_to_token(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id).map(str::to_string)
    }

    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCoreSpmTokenizer>()?;
    Ok(())
}
