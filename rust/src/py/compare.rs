//! Bindings for `subword compare`'s pass: `CompareCollector` (segment, then reduce, each chunk of
//! lines), `word_segments` and `round_trip_verdicts`. Type conversion and GIL release only; the
//! algorithms are in `crate::compare`.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use super::spm_tokenizer::PyCoreSpmTokenizer;
use super::tokenizer::PyCoreTokenizer;
use crate::compare::lines::{reduce_chunk, round_trips, Encoder, TokInfo, TypeClasses};
use crate::compare::roundtrip::RoundTrip;
use crate::compare::segment::{byte_segments, segment_chunk, ChunkSegments, TypeIndex, UNICODE_VERSION};
use crate::tokenizer::sentencepiece::SpmPipeline;
use crate::tokenizer::Tokenizer;

enum Core {
    Hf(Arc<Tokenizer>),
    Spm(Arc<SpmPipeline>),
}

impl Core {
    fn encoder(&self) -> &dyn Encoder {
        match self {
            Core::Hf(t) => &**t,
            Core::Spm(p) => &**p,
        }
    }
}

fn i64_bytes<'py>(py: Python<'py>, v: &[i64]) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, v.len() * 8, |b| {
        for (c, x) in b.chunks_exact_mut(8).zip(v) {
            c.copy_from_slice(&x.to_le_bytes());
        }
        Ok(())
    })
}

fn u32_bytes<'py>(py: Python<'py>, v: &[u32]) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, v.len() * 4, |b| {
        for (c, x) in b.chunks_exact_mut(4).zip(v) {
            c.copy_from_slice(&x.to_le_bytes());
        }
        Ok(())
    })
}

fn u64_bytes<'py>(py: Python<'py>, v: &[u64]) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, v.len() * 8, |b| {
        for (c, x) in b.chunks_exact_mut(8).zip(v) {
            c.copy_from_slice(&x.to_le_bytes());
        }
        Ok(())
    })
}

/// `CompareCollector(cores, unk_ids, byte_token_masks, scripts)`: the per-line reduction of
/// `subword compare` for the given `CoreTokenizer` / `CoreSpmTokenizer` objects. Per chunk:
/// `segment(lines)` -> the new segment types (and the chunk line of each one's first occurrence),
/// `classify(is_word, script)` for those types, then `reduce(lines)` -> a dict of little-endian
/// `i64` buffers, the per-script ones as `{script index: row}` of the scripts that occur, and per
/// tokenizer the token ids counted per block of `block_lines` lines (see `subword/compare/collect.py`).
#[pyclass(name = "CompareCollector", module = "subword._core")]
pub struct PyCompareCollector {
    cores: Vec<Core>,
    unk: Vec<Option<u32>>,
    byte_token: Vec<Vec<bool>>,
    round_trip: Vec<Option<RoundTrip>>,
    index: TypeIndex,
    word: Vec<bool>,
    script: Vec<u8>,
    scripts: usize,
    pending: Option<(usize, ChunkSegments)>,
    /// The segment type that ends the last line segmented so far (see `ChunkSegments::tail`).
    tail: Option<u32>,
}

#[pymethods]
impl PyCompareCollector {
    #[new]
    fn new(
        py: Python<'_>,
        cores: Vec<Bound<'_, PyAny>>,
        unk_ids: Vec<Option<u32>>,
        byte_token_masks: Vec<Bound<'_, PyBytes>>,
        scripts: usize,
    ) -> PyResult<Self> {
        if unk_ids.len() != cores.len() || byte_token_masks.len() != cores.len() {
            return Err(PyValueError::new_err("one unk id and one byte-token mask per tokenizer"));
        }
        if scripts == 0 || scripts > 255 {
            return Err(PyValueError::new_err(format!("scripts must be in 1..=255, got {scripts}")));
        }
        let mut out = Vec::with_capacity(cores.len());
        for (i, c) in cores.iter().enumerate() {
            if let Ok(t) = c.extract::<PyRef<'_, PyCoreTokenizer>>() {
                out.push(Core::Hf(t.get()?));
            } else if let Ok(t) = c.extract::<PyRef<'_, PyCoreSpmTokenizer>>() {
                out.push(Core::Spm(t.pipeline()));
            } else {
                return Err(PyTypeError::new_err(format!(
                    "cores[{i}] is a {}, not a CoreTokenizer or CoreSpmTokenizer",
                    c.get_type().name()?
                )));
            }
        }
        // Each tokenizer's pieces are decoded once here, the tokenizers side by side.
        let round_trip = py.detach(|| {
            if crate::parallel::parallel_allowed() {
                use rayon::prelude::*;
                out.par_iter().map(|c| c.encoder().round_trip()).collect()
            } else {
                out.iter().map(|c| c.encoder().round_trip()).collect()
            }
        });
        Ok(PyCompareCollector {
            round_trip,
            cores: out,
            unk: unk_ids,
            byte_token: byte_token_masks.iter().map(|b| b.as_bytes().iter().map(|&x| x != 0).collect()).collect(),
            index: TypeIndex::default(),
            word: Vec::new(),
            script: Vec::new(),
            scripts,
            pending: None,
            tail: None,
        })
    }

    /// Segments a chunk (`last_chunk`: it ends the input): `(new types, chunk line of each one's first
    /// occurrence)`. The chunks of one input are given in order.
    fn segment(
        &mut self,
        py: Python<'_>,
        lines: Vec<Bound<'_, PyString>>,
        last_chunk: bool,
    ) -> PyResult<(Vec<String>, Vec<u32>)> {
        let _pages = crate::alloc::HoldFreedPages::new();
        let strs: Vec<&str> = lines.iter().map(|s| s.to_str()).collect::<PyResult<_>>()?;
        let index = &mut self.index;
        let before = self.tail;
        let segs = py.detach(|| segment_chunk(&strs, index, last_chunk, before));
        self.tail = segs.tail();
        let new = self.index.types[segs.known..].iter().map(|s| s.to_string()).collect();
        let first = segs.new_first_line.clone();
        self.pending = Some((strs.len(), segs));
        Ok((new, first))
    }

    /// The classes of the ASCII types among those `segment` just returned, as `words.py` defines them
    /// (`is_word`: a letter or digit; script `latin` when it has a letter, else `common`):
    /// `(word flags, script indices, positions of the other types)`; the others are Python's to classify.
    fn ascii_classes<'py>(
        &self,
        py: Python<'py>,
        latin: u8,
        common: u8,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, Vec<u32>)> {
        let known = self.pending.as_ref().map_or(self.index.types.len(), |(_, segs)| segs.known);
        let new = &self.index.types[known..];
        let (mut word, mut script, mut other) = (Vec::with_capacity(new.len()), Vec::with_capacity(new.len()), Vec::new());
        for (j, t) in new.iter().enumerate() {
            if t.is_ascii() {
                word.push(u8::from(t.bytes().any(|b| b.is_ascii_alphanumeric())));
                script.push(if t.bytes().any(|b| b.is_ascii_alphabetic()) { latin } else { common });
            } else {
                word.push(0);
                script.push(common);
                other.push(j as u32);
            }
        }
        Ok((PyBytes::new(py, &word), PyBytes::new(py, &script), other))
    }

    /// The classes of the types `segment` just returned: per type, a word flag and a script index.
    fn classify(&mut self, is_word: &[u8], script: &[u8]) -> PyResult<()> {
        if is_word.len() != script.len() {
            return Err(PyValueError::new_err("one word flag and one script per type"));
        }
        if let Some(&s) = script.iter().find(|&&s| s as usize >= self.scripts) {
            return Err(PyValueError::new_err(format!("script index {s} is not below {}", self.scripts)));
        }
        self.word.extend(is_word.iter().map(|&x| x != 0));
        self.script.extend_from_slice(script);
        Ok(())
    }

    /// The number of segment types so far.
    fn types(&self) -> usize {
        self.index.len()
    }

    /// Encodes the chunk `segment` was given with every tokenizer and reduces it; the chunk starts a
    /// block of `block_lines` lines.
    fn reduce<'py>(
        &mut self,
        py: Python<'py>,
        lines: Vec<Bound<'py, PyString>>,
        block_lines: usize,
    ) -> PyResult<Bound<'py, PyDict>> {
        let _pages = crate::alloc::HoldFreedPages::new();
        let Some((m, segs)) = self.pending.take() else {
            return Err(PyValueError::new_err("reduce() needs segment() of the same lines first"));
        };
        if m != lines.len() {
            return Err(PyValueError::new_err(format!("segment() had {m} lines, reduce() got {}", lines.len())));
        }
        let strs: Vec<&str> = lines.iter().map(|s| s.to_str()).collect::<PyResult<_>>()?;
        let ntypes = self.index.len();
        let classes = TypeClasses { word: &self.word, script: &self.script, scripts: self.scripts };
        let toks: Vec<TokInfo<'_>> = self
            .cores
            .iter()
            .zip(&self.unk)
            .zip(&self.byte_token)
            .zip(&self.round_trip)
            .map(|(((c, &unk), bt), rt)| TokInfo { encoder: c.encoder(), unk, byte_token: bt, round_trip: rt.as_ref() })
            .collect();
        let stats = py
            .detach(|| reduce_chunk(&strs, &segs, ntypes, &classes, &toks, block_lines))
            .map_err(PyValueError::new_err)?;
        let col = |v: &[i64]| i64_bytes(py, v);
        let d = PyDict::new(py);
        d.set_item("chars", col(&stats.chars)?)?;
        d.set_item("bytes", col(&stats.bytes)?)?;
        d.set_item("words", col(&stats.words)?)?;
        d.set_item("ws_words", col(&stats.ws_words)?)?;
        let rows = |rows: &[(u8, Vec<i64>)]| -> PyResult<Bound<'py, PyDict>> {
            let out = PyDict::new(py);
            for (sc, row) in rows {
                out.set_item(*sc, col(row)?)?;
            }
            Ok(out)
        };
        d.set_item("script_words", rows(&stats.script_words)?)?;
        d.set_item("type_count", col(&stats.type_count)?)?;
        let toks = PyList::empty(py);
        for t in &stats.tokenizers {
            let e = PyDict::new(py);
            e.set_item("tokens", col(&t.tokens)?)?;
            e.set_item("continued", col(&t.continued)?)?;
            e.set_item("unk_chars", col(&t.unk_chars)?)?;
            e.set_item("byte_tokens", col(&t.byte_tokens)?)?;
            e.set_item("lossless", PyBytes::new(py, &t.lossless))?;
            e.set_item("boundaries", col(&t.boundaries)?)?;
            e.set_item("script_tokens", rows(&t.script_tokens)?)?;
            e.set_item("type_tokens", col(&t.type_tokens)?)?;
            e.set_item("block_ends", u64_bytes(py, &t.block_types.ends)?)?;
            e.set_item("block_ids", u32_bytes(py, &t.block_types.ids)?)?;
            e.set_item("block_counts", u32_bytes(py, &t.block_types.counts)?)?;
            e.set_item("seconds", t.encode_seconds)?;
            toks.append(e)?;
        }
        d.set_item("tokenizers", toks)?;
        let shared = PyList::empty(py);
        for s in &stats.shared {
            shared.append(i64_bytes(py, s)?)?;
        }
        d.set_item("shared", shared)?;
        Ok(d)
    }
}

/// `round_trip_verdicts(core, id_lists, lines)`: per line, `decode(ids) == line` (special tokens
/// kept) as the compare pass decides it: `(fast, verdict)`, where `fast` (per line 1 or 0) says whether
/// the precomputed pieces decided it without the decoder. For the tests of `roundtrip.rs`.
#[pyfunction]
fn round_trip_verdicts<'py>(
    py: Python<'py>,
    core: Bound<'py, PyAny>,
    id_lists: Vec<Vec<u32>>,
    lines: Vec<String>,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    if id_lists.len() != lines.len() {
        return Err(PyValueError::new_err(format!("{} id lists for {} lines", id_lists.len(), lines.len())));
    }
    let core = if let Ok(t) = core.extract::<PyRef<'_, PyCoreTokenizer>>() {
        Core::Hf(t.get()?)
    } else if let Ok(t) = core.extract::<PyRef<'_, PyCoreSpmTokenizer>>() {
        Core::Spm(t.pipeline())
    } else {
        return Err(PyTypeError::new_err("core is not a CoreTokenizer or CoreSpmTokenizer"));
    };
    let (fast, verdict): (Vec<u8>, Vec<u8>) = py.detach(|| {
        let enc = core.encoder();
        let rt = enc.round_trip();
        let mut buf = Vec::new();
        id_lists
            .iter()
            .zip(&lines)
            .map(|(ids, line)| {
                let f = rt.as_ref().and_then(|r| r.check(ids, line, &mut buf));
                (u8::from(f.is_some()), u8::from(round_trips(enc, rt.as_ref(), ids, line)))
            })
            .unzip()
    });
    Ok((PyBytes::new(py, &fast), PyBytes::new(py, &verdict)))
}

/// `word_segments(text)`: the UAX #29 word segments of `text` as `(start, end)` character offsets,
/// in order (they tile the text), as the compare pass segments each line.
#[pyfunction]
fn word_segments(text: &str) -> Vec<(usize, usize)> {
    let mut at = 0usize;
    byte_segments(text)
        .into_iter()
        .map(|(a, b)| {
            let start = at;
            at += text[a..b].chars().count();
            (start, at)
        })
        .collect()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyCompareCollector>()?;
    m.add_function(wrap_pyfunction!(round_trip_verdicts, m)?)?;
    m.add_function(wrap_pyfunction!(word_segments, m)?)?;
    let (a, b, c) = UNICODE_VERSION;
    m.add("WORD_BREAK_UNICODE_VERSION", format!("{a}.{b}.{c}"))?;
    Ok(())
}
