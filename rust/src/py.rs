//! PyO3 bindings: type conversion and GIL release only; the algorithms live in the plain modules.
//! One submodule per component (`py/train.rs`, `py/tokenizer.rs`); this file registers them.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

mod compare;
mod compare_vocab;
mod load;
mod spm;
mod spm_tokenizer;
mod tokenizer;
mod train;
mod unigram;
mod wordpiece;

/// The private native module `subword._core`.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The sources this extension was built from (see build.rs); the tests refuse a stale build.
    m.add("SOURCE_HASH", env!("SUBWORD_SOURCE_HASH"))?;
    crate::parallel::note_parent_process();
    train::register(m)?;
    compare::register(m)?;
    compare_vocab::register(m)?;
    tokenizer::register(m)?;
    load::register(m)?;
    spm::register(m)?;
    spm_tokenizer::register(m)?;
    unigram::register(m)?;
    wordpiece::register(m)?;
    Ok(())
}

/// The pool a call runs on: `threads` workers, or None for rayon's global pool.
pub(crate) fn build_pool(threads: Option<usize>) -> PyResult<Option<Arc<rayon::ThreadPool>>> {
    match threads {
        None => Ok(None),
        Some(0) => Err(PyValueError::new_err("threads must be at least 1 (or None for all cores)")),
        Some(n) => rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .map(|p| Some(Arc::new(p)))
            .map_err(|e| PyValueError::new_err(format!("cannot start {n} threads: {e}"))),
    }
}

/// Runs `f` on `pool`, or on rayon's global pool when there is none. The check is made per call
/// because an object built in the parent may be used in a child forked later (a DataLoader
/// worker): there the global pool's workers do not exist and waiting on them would hang, so the
/// child gets a one-thread pool of fresh threads instead.
pub(crate) fn in_pool<R: Send>(pool: &Option<Arc<rayon::ThreadPool>>, f: impl FnOnce() -> R + Send) -> R {
    match pool {
        Some(p) => p.install(f),
        None if crate::parallel::parallel_allowed() => f(),
        None => match rayon::ThreadPoolBuilder::new().num_threads(1).build() {
            Ok(p) => p.install(f),
            // Only when the OS refuses a thread; nothing better is left than trying the global pool.
            Err(_) => f(),
        },
    }
}

/// Ids per block of the shared int objects (see [`id_list`]).
const INT_BLOCK: usize = 4096;
/// Blocks: ids below 262,144 (every vocabulary this project meets) are shared.
const INT_BLOCKS: usize = 64;
/// The shared Python ints of ids, a block made the first time one of its ids is listed. Blocks
/// are built and read with the GIL held and never freed (a few hundred KB for a 32k vocabulary,
/// 8 MB at most).
static INTS: [std::sync::OnceLock<Box<[Py<pyo3::types::PyInt>]>>; INT_BLOCKS] =
    [const { std::sync::OnceLock::new() }; INT_BLOCKS];

/// A Python list of `ids` whose items are shared int objects: no int is allocated per token when
/// the list is made or freed when it is dropped. Python ints are immutable, so sharing them is
/// invisible; an id list of a 4 MB text (a million ids) spent a fifth of `encode_batch_ids`
/// allocating and freeing ints (perf).
pub(crate) fn id_list<'py>(py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, pyo3::types::PyList>> {
    pyo3::types::PyList::new(
        py,
        ids.iter().map(|&id| {
            let (block, at) = (id as usize / INT_BLOCK, id as usize % INT_BLOCK);
            match INTS.get(block) {
                Some(cell) => cell
                    .get_or_init(|| (0..INT_BLOCK).map(|k| pyo3::types::PyInt::new(py, block * INT_BLOCK + k).unbind()).collect())
                    [at]
                    .bind(py)
                    .clone(),
                None => pyo3::types::PyInt::new(py, id),
            }
        }),
    )
}

/// A batch's ids as two flat buffers: every id back to back as native-endian `u32`, and `n + 1`
/// native-endian `i64` offsets (text `i`'s ids are `ids[offsets[i]..offsets[i + 1]]`). Two
/// `bytearray`s (writable, so numpy views them without a copy and the arrays stay writable): no
/// Python object per token or per text, which is what made list-of-lists output cost as much as
/// the encoding on short lines.
pub(crate) fn flat_buffers<'py>(
    py: Python<'py>,
    chunks: &[(Vec<u32>, Vec<u32>)],
) -> PyResult<(Bound<'py, pyo3::types::PyByteArray>, Bound<'py, pyo3::types::PyByteArray>)> {
    let total: usize = chunks.iter().map(|c| c.0.len()).sum();
    let texts: usize = chunks.iter().map(|c| c.1.len()).sum();
    let ids = pyo3::types::PyByteArray::new_with(py, total * 4, |buf| {
        let mut cells = buf.chunks_exact_mut(4);
        for (chunk, _) in chunks {
            // The chunk first: zip pulls its left side first, and a cell pulled past the chunk's end is lost.
            for (id, cell) in chunk.iter().zip(&mut cells) {
                cell.copy_from_slice(&id.to_ne_bytes());
            }
        }
        Ok(())
    })?;
    let offsets = pyo3::types::PyByteArray::new_with(py, (texts + 1) * 8, |buf| {
        let mut cells = buf.chunks_exact_mut(8);
        let mut at = 0i64;
        if let Some(first) = cells.next() {
            first.copy_from_slice(&at.to_ne_bytes());
        }
        for (_, lens) in chunks {
            for (&n, cell) in lens.iter().zip(&mut cells) {
                at += i64::from(n);
                cell.copy_from_slice(&at.to_ne_bytes());
            }
        }
        Ok(())
    })?;
    Ok((ids, offsets))
}

/// Disables Python's cyclic GC until dropped (if it was enabled). Used only while we build many
/// container objects with the GIL held, so no other Python code runs in between.
pub(crate) struct GcPause<'py> {
    gc: Option<Bound<'py, PyModule>>,
}

impl<'py> GcPause<'py> {
    pub(crate) fn new(py: Python<'py>) -> PyResult<Self> {
        let gc = py.import("gc")?;
        if gc.call_method0("isenabled")?.is_truthy()? {
            gc.call_method0("disable")?;
            Ok(GcPause { gc: Some(gc) })
        } else {
            Ok(GcPause { gc: None })
        }
    }
}

impl Drop for GcPause<'_> {
    fn drop(&mut self) {
        if let Some(gc) = &self.gc {
            // Nothing sensible to do if re-enabling fails; the GC state is then left as is.
            let _ = gc.call_method0("enable");
        }
    }
}
