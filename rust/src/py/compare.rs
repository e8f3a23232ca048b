//! Bindings for `subword compare`'s native path: `CompareCollector` (segment, then reduce, each
//! chunk of lines), `bootstrap_weights` and `type_count_replicates`. Type conversion and GIL
//! release only; the algorithms are in `crate::compare`.

use std::sync::Arc;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use super::spm_tokenizer::PyCoreSpmTokenizer;
use super::tokenizer::PyCoreTokenizer;
use crate::compare::lines::{reduce_chunk, round_trips, Encoder, TokInfo, TypeClasses};
use crate::compare::roundtrip::RoundTrip;
use crate::compare::colsums;
use crate::compare::resample;
use crate::compare::typecounts;
use crate::compare::segment::{segment_chunk, ChunkSegments, TypeIndex};
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

/// Little-endian int64 bytes as values: borrowed where the bytes are aligned (no copy of a column), else copied.
fn i64s(b: &[u8]) -> std::borrow::Cow<'_, [i64]> {
    #[cfg(target_endian = "little")]
    {
        // SAFETY: every bit pattern is a valid i64; `align_to` only hands out the aligned middle.
        let (pre, mid, post) = unsafe { b.align_to::<i64>() };
        if pre.is_empty() && post.is_empty() {
            return std::borrow::Cow::Borrowed(mid);
        }
    }
    std::borrow::Cow::Owned(
        b.chunks_exact(8).map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect(),
    )
}

/// Values of type `T` from a Python object: little-endian bytes (borrowed where aligned, else
/// copied), or any C-contiguous buffer of `T` such as a numpy array (borrowed: no copy at all).
enum Values<'a, T: pyo3::buffer::Element + Copy> {
    Bytes(std::borrow::Cow<'a, [T]>),
    Buffer(pyo3::buffer::PyBuffer<T>),
}

impl<'a, T: pyo3::buffer::Element + Copy> Values<'a, T> {
    fn get(obj: &'a Bound<'_, PyAny>, what: &str, from_bytes: fn(&'a [u8], &str) -> PyResult<std::borrow::Cow<'a, [T]>>)
           -> PyResult<Self> {
        if let Ok(b) = obj.cast::<PyBytes>() {
            return Ok(Values::Bytes(from_bytes(b.as_bytes(), what)?));
        }
        let buf = pyo3::buffer::PyBuffer::<T>::get(obj)
            .map_err(|e| PyTypeError::new_err(format!("{what}: neither bytes nor a buffer of the right type ({e})")))?;
        if !buf.is_c_contiguous() {
            return Err(PyValueError::new_err(format!("{what}: the buffer is not contiguous")));
        }
        Ok(Values::Buffer(buf))
    }

    fn as_slice(&self) -> &[T] {
        match self {
            Values::Bytes(c) => c.as_ref(),
            // SAFETY: `PyBuffer::get` checked the item type, size and alignment, and the buffer stays
            // valid while `self` holds it; the callers (subword.compare) do not write to their arrays
            // while the call runs with the GIL released.
            Values::Buffer(b) => unsafe { std::slice::from_raw_parts(b.buf_ptr() as *const T, b.item_count()) },
        }
    }
}

/// Little-endian u32 bytes as values: borrowed where the bytes are aligned (no copy of 4.6M ids), else copied.
fn u32s<'a>(b: &'a [u8], what: &str) -> PyResult<std::borrow::Cow<'a, [u32]>> {
    if b.len() % 4 != 0 {
        return Err(PyValueError::new_err(format!("{what}: {} bytes is not a whole number of u32", b.len())));
    }
    #[cfg(target_endian = "little")]
    {
        // SAFETY: every bit pattern is a valid u32; `align_to` only hands out the aligned middle.
        let (pre, mid, post) = unsafe { b.align_to::<u32>() };
        if pre.is_empty() && post.is_empty() {
            return Ok(std::borrow::Cow::Borrowed(mid));
        }
    }
    Ok(std::borrow::Cow::Owned(b.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()))
}

/// `CompareCollector(cores, unk_ids, byte_token_masks, scripts)`: the per-line reduction of
/// `subword compare` for the given `CoreTokenizer` / `CoreSpmTokenizer` objects. Per chunk:
/// `segment(lines)` -> the new segment types (and the chunk line of each one's first occurrence),
/// `classify(is_word, script)` for those types, then `reduce(lines)` -> a dict of little-endian
/// `i64` buffers, the per-script ones as `{script index: row}` of the scripts that occur (see
/// `subword/compare/native.py`).
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
        })
    }

    /// Segments a chunk: `(new types, chunk line of each one's first occurrence)`.
    fn segment(&mut self, py: Python<'_>, lines: Vec<Bound<'_, PyString>>) -> PyResult<(Vec<String>, Vec<u32>)> {
        let strs: Vec<&str> = lines.iter().map(|s| s.to_str()).collect::<PyResult<_>>()?;
        let index = &mut self.index;
        let segs = py.detach(|| segment_chunk(&strs, index));
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

    /// Encodes the chunk `segment` was given with every tokenizer and reduces it.
    fn reduce<'py>(&mut self, py: Python<'py>, lines: Vec<Bound<'py, PyString>>) -> PyResult<Bound<'py, PyDict>> {
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
        let stats = py.detach(|| reduce_chunk(&strs, &segs, ntypes, &classes, &toks)).map_err(PyValueError::new_err)?;
        // The columns' bytes copied in one piece each (the per-script ones are megabytes of zeros).
        use crate::compare::lines::{i64_le_bytes, u32_le_bytes};
        let col = |v: &[i64]| -> PyResult<Bound<'py, PyBytes>> { Ok(PyBytes::new(py, &i64_le_bytes(v))) };
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
            e.set_item("ids", PyBytes::new(py, &u32_le_bytes(&t.ids)))?;
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

/// `bootstrap_column_sums(columns, n, seed, replicates)`: per replicate `r` (the draws of
/// `bootstrap_weights`) and column (little-endian int64 bytes or a contiguous int64 array, `n` values
/// each), `sum_l w_r(l) x(l)`,
/// as little-endian float64 bytes (`replicates x columns`, row-major).
#[pyfunction]
fn bootstrap_column_sums<'py>(
    py: Python<'py>,
    columns: Vec<Bound<'py, PyAny>>,
    n: usize,
    seed: u64,
    replicates: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let cols: Vec<Values<'_, i64>> = columns
        .iter()
        .enumerate()
        .map(|(j, b)| {
            let v = Values::get(b, &format!("column {j}"), |b, _| Ok(i64s(b)))?;
            let whole = match b.cast::<PyBytes>() {
                Ok(bytes) => bytes.as_bytes().len() == n * 8, // no trailing partial value
                Err(_) => v.as_slice().len() == n,
            };
            if !whole {
                return Err(PyValueError::new_err(format!("column {j}: not {n} int64 values")));
            }
            Ok(v)
        })
        .collect::<PyResult<_>>()?;
    let refs: Vec<&[i64]> = cols.iter().map(|c| c.as_slice()).collect();
    let sums = py.detach(|| colsums::column_sums(&refs, n, seed, replicates)).map_err(PyValueError::new_err)?;
    PyBytes::new_with(py, sums.len() * 8, |b| {
        for (c, x) in b.chunks_exact_mut(8).zip(&sums) {
            c.copy_from_slice(&x.to_le_bytes());
        }
        Ok(())
    })
}

/// `bootstrap_weights(n, seed, first, rows)`: the resampling counts of replicates
/// `first..first + rows` as little-endian float64 bytes (`rows x n`, row-major).
#[pyfunction]
fn bootstrap_weights<'py>(
    py: Python<'py>,
    n: usize,
    seed: u64,
    first: u64,
    rows: usize,
) -> PyResult<Bound<'py, PyBytes>> {
    let len = n
        .checked_mul(rows)
        .and_then(|c| c.checked_mul(8))
        .ok_or_else(|| PyValueError::new_err(format!("{rows} x {n} weights do not fit in memory")))?;
    PyBytes::new_with(py, len, |buf| {
        py.detach(|| resample::weights_f64_le(n, seed, first, buf));
        Ok(())
    })
}

/// `type_count_replicates(types, lines, ntypes, n, seed, replicates, alpha)`: per tokenizer (lists
/// of the same length) and replicate (of the same draws as `bootstrap_weights`),
/// `[types used, tokens, sum c^alpha, sum c log2 c]` of the token-type counts, as little-endian
/// float64 bytes (`replicates x 4`). `types[i]` and `lines[i]` are each token's type and line as
/// little-endian u32 bytes or contiguous uint32 arrays (types below `ntypes`; types that never occur cost nothing, so ids do);
/// the resampling counts are drawn once for all tokenizers.
#[pyfunction]
#[allow(clippy::too_many_arguments)] // mirrors the Python call
fn type_count_replicates<'py>(
    py: Python<'py>,
    types: Vec<Bound<'py, PyAny>>,
    lines: Vec<Bound<'py, PyAny>>,
    ntypes: Vec<usize>,
    n: usize,
    seed: u64,
    replicates: usize,
    alpha: f64,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    if types.len() != lines.len() || types.len() != ntypes.len() {
        return Err(PyValueError::new_err("types, lines and ntypes need one entry per tokenizer"));
    }
    let types: Vec<Values<'_, u32>> = types.iter().map(|b| Values::get(b, "types", u32s)).collect::<PyResult<_>>()?;
    let lines: Vec<Values<'_, u32>> = lines.iter().map(|b| Values::get(b, "lines", u32s)).collect::<PyResult<_>>()?;
    let sets: Vec<(&[u32], &[u32], usize)> =
        types.iter().zip(&lines).zip(&ntypes).map(|((t, l), &v)| (t.as_slice(), l.as_slice(), v)).collect();
    let all = py
        .detach(|| typecounts::type_count_replicates_many(&sets, n, seed, replicates, alpha))
        .map_err(PyValueError::new_err)?;
    all.iter()
        .map(|sums| {
            PyBytes::new_with(py, sums.len() * 32, |b| {
                for (c, x) in b.chunks_exact_mut(8).zip(sums.iter().flatten()) {
                    c.copy_from_slice(&x.to_le_bytes());
                }
                Ok(())
            })
        })
        .collect()
}

/// `count_ids(ids, minlength)`: how often each id occurs in a uint32 array (or little-endian u32
/// bytes), as little-endian int64 bytes of `max(minlength, max id + 1)` counts (numpy's `bincount`,
/// without its conversion of every id to int64 first).
#[pyfunction]
fn count_ids<'py>(py: Python<'py>, ids: Bound<'py, PyAny>, minlength: usize) -> PyResult<Bound<'py, PyBytes>> {
    let ids = Values::get(&ids, "ids", u32s)?;
    let ids = ids.as_slice();
    let counts = py.detach(|| {
        let len = ids.iter().max().map_or(0, |&m| m as usize + 1).max(minlength);
        let mut counts = vec![0i64; len];
        for &i in ids {
            counts[i as usize] += 1;
        }
        counts
    });
    i64_bytes(py, &counts)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(count_ids, m)?)?;
    m.add_class::<PyCompareCollector>()?;
    m.add_function(wrap_pyfunction!(bootstrap_weights, m)?)?;
    m.add_function(wrap_pyfunction!(round_trip_verdicts, m)?)?;
    m.add_function(wrap_pyfunction!(bootstrap_column_sums, m)?)?;
    m.add_function(wrap_pyfunction!(type_count_replicates, m)?)?;
    Ok(())
}
