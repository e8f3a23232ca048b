//! Bindings of the fast file readers (`io/`): `NativeModel`, the data of a model read in Rust from
//! a file's bytes, which `CoreTokenizer.from_parts` turns into the pipeline without the data ever
//! becoming Python objects. Type conversion and GIL release only.
//!
//! A `NativeModel` keeps the file's bytes (a reference to the Python `bytes`, not a copy), so that
//! its data can be read again when a second pipeline is built from it, or when a pipeline is
//! pickled.

use std::sync::Mutex;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use crate::io::{hf_json, tiktoken, vocab_txt, ModelData};

/// Which reader made the data (and reads it again from the bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    HfJson,
    /// A rank file; the ids are the ranks plus the offset (0 for tiktoken files, the special-token count
    /// for Mistral's Tekken files, whose ranks are written out as a rank file by the Python reader).
    Tiktoken(u32),
    VocabTxt,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::HfJson => "tokenizer.json",
            Kind::Tiktoken(_) => "tiktoken",
            Kind::VocabTxt => "vocab.txt",
        }
    }

    pub(crate) fn parse(name: &str) -> PyResult<Self> {
        match name {
            "tokenizer.json" => Ok(Kind::HfJson),
            "tiktoken" => Ok(Kind::Tiktoken(0)),
            "vocab.txt" => Ok(Kind::VocabTxt),
            other => match other.strip_prefix("tiktoken+").map(str::parse::<u32>) {
                Some(Ok(offset)) => Ok(Kind::Tiktoken(offset)),
                _ => Err(PyValueError::new_err(format!("unknown file kind {other:?}"))),
            },
        }
    }

    /// The name [`Kind::parse`] reads back (the id offset of a rank file included).
    pub(crate) fn spec(self) -> String {
        match self {
            Kind::Tiktoken(offset) if offset > 0 => format!("tiktoken+{offset}"),
            other => other.name().to_string(),
        }
    }

    /// The model data of a file of this kind (and, for tokenizer.json, the skeleton).
    pub(crate) fn read(self, bytes: &[u8]) -> Option<(Option<String>, ModelData)> {
        match self {
            Kind::HfJson => {
                let split = hf_json::split(std::str::from_utf8(bytes).ok()?)?;
                Some((Some(split.skeleton), split.data))
            }
            Kind::Tiktoken(offset) => {
                Some((None, tiktoken::bpe_data_with_offset(&tiktoken::parse_ranks(bytes)?, offset)?))
            }
            Kind::VocabTxt => Some((None, ModelData::WordPieceTable { index: vocab_txt::parse(bytes)? })),
        }
    }
}

/// The data of a model read from a file, for `CoreTokenizer.from_parts`.
#[pyclass(name = "NativeModel", module = "subword._core", frozen)]
pub struct PyNativeModel {
    kind: Kind,
    source: Py<PyBytes>,
    /// Taken by the first pipeline built from it; later ones read the bytes again.
    data: Mutex<Option<ModelData>>,
    len: usize,
}

impl PyNativeModel {
    /// The data, taken (the first time) or read again from the bytes.
    pub(crate) fn take_data(&self, py: Python<'_>) -> PyResult<ModelData> {
        let taken = self.data.lock().map_err(|_| PyRuntimeError::new_err("model data lock poisoned"))?.take();
        match taken {
            Some(d) => Ok(d),
            None => {
                let bytes = self.source.bind(py).as_bytes();
                let kind = self.kind;
                py.detach(|| kind.read(bytes))
                    .map(|(_, d)| d)
                    .ok_or_else(|| PyValueError::new_err("the model's file no longer reads"))
            }
        }
    }

    pub(crate) fn kind_and_source(&self, py: Python<'_>) -> (Kind, Py<PyBytes>) {
        (self.kind, self.source.clone_ref(py))
    }

    fn with_data<R>(&self, f: impl FnOnce(&ModelData) -> R) -> PyResult<R> {
        let guard = self.data.lock().map_err(|_| PyRuntimeError::new_err("model data lock poisoned"))?;
        guard.as_ref().map(f).ok_or_else(|| PyRuntimeError::new_err("the model data went into a pipeline already"))
    }
}

fn native(py: Python<'_>, kind: Kind, data: &Bound<'_, PyBytes>) -> Option<(Option<String>, PyNativeModel)> {
    let bytes = data.as_bytes();
    let (skeleton, d) = py.detach(|| kind.read(bytes))?;
    let len = d.len();
    Some((skeleton, PyNativeModel { kind, source: data.clone().unbind(), data: Mutex::new(Some(d)), len }))
}

#[pymethods]
impl PyNativeModel {
    /// The id of `token` in the vocab.
    fn token_to_id(&self, token: &str) -> PyResult<Option<u32>> {
        self.with_data(|d| d.token_to_id(token))
    }

    /// Whether added tokens `[(id, content)]` agree with the vocab (see `ModelData::added_tokens_fit`).
    fn added_tokens_fit(&self, py: Python<'_>, added: Vec<(u32, String)>) -> PyResult<bool> {
        let guard = self.data.lock().map_err(|_| PyRuntimeError::new_err("model data lock poisoned"))?;
        let d = guard.as_ref().ok_or_else(|| PyRuntimeError::new_err("the model data went into a pipeline already"))?;
        Ok(py.detach(|| d.added_tokens_fit(&added)))
    }

    fn __len__(&self) -> usize {
        self.len
    }

    /// The bytes of the file the data was read from.
    #[getter]
    fn source(&self, py: Python<'_>) -> Py<PyBytes> {
        self.source.clone_ref(py)
    }

    /// The file kind (`"tokenizer.json"`, `"tiktoken"`, `"vocab.txt"`).
    #[getter]
    fn kind(&self) -> &'static str {
        self.kind.name()
    }

    /// For a tiktoken file: the BPE vocab (token -> id, in file order) and merges (pairs in rank
    /// order), as `subword.formats.tiktoken.from_ranks` makes them.
    fn tiktoken_vocab_merges<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyList>)> {
        let Kind::Tiktoken(offset) = self.kind else {
            return Err(PyValueError::new_err("not a tiktoken model"));
        };
        let bytes = self.source.bind(py).as_bytes();
        let (ranks, strings, merges) = py
            .detach(|| {
                let ranks = tiktoken::parse_ranks(bytes)?;
                let strings = tiktoken::byte_level_strings(&ranks);
                let merges = tiktoken::merge_ranks(&ranks)?;
                let order: Vec<u32> = ranks.iter().map(|(_, r)| r).collect();
                Some((order, strings, merges))
            })
            .ok_or_else(|| PyValueError::new_err("the rank file no longer reads"))?;
        let _pause = super::GcPause::new(py)?;
        let vocab = PyDict::new(py);
        for &r in &ranks {
            vocab.set_item(&strings[r as usize], r + offset)?;
        }
        let out = PyList::empty(py);
        for (a, b, _) in merges {
            out.append(PyTuple::new(py, [&strings[a as usize], &strings[b as usize]])?)?;
        }
        Ok((vocab, out))
    }
}

/// `read_hf_json(data: bytes) -> (skeleton, NativeModel) | None`: the fast read of a tokenizer.json
/// (None: the Python reader takes the file).
#[pyfunction]
fn read_hf_json(py: Python<'_>, data: Bound<'_, PyBytes>) -> Option<(String, PyNativeModel)> {
    native(py, Kind::HfJson, &data).and_then(|(s, m)| s.map(|s| (s, m)))
}

/// `read_tiktoken(data: bytes, id_offset: int = 0) -> NativeModel | None`: the byte-level BPE of a clean
/// rank file, each id `id_offset` above its rank.
#[pyfunction]
#[pyo3(signature = (data, id_offset = 0))]
fn read_tiktoken(py: Python<'_>, data: Bound<'_, PyBytes>, id_offset: u32) -> Option<PyNativeModel> {
    native(py, Kind::Tiktoken(id_offset), &data).map(|(_, m)| m)
}

/// `read_vocab_txt(data: bytes) -> NativeModel | None`: the WordPiece vocab of a clean vocab.txt.
#[pyfunction]
fn read_vocab_txt(py: Python<'_>, data: Bound<'_, PyBytes>) -> Option<PyNativeModel> {
    native(py, Kind::VocabTxt, &data).map(|(_, m)| m)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyNativeModel>()?;
    m.add_function(wrap_pyfunction!(read_hf_json, m)?)?;
    m.add_function(wrap_pyfunction!(read_tiktoken, m)?)?;
    m.add_function(wrap_pyfunction!(read_vocab_txt, m)?)?;
    Ok(())
}
