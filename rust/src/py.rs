//! PyO3 bindings: type conversion and GIL release only; the algorithms live in the plain modules.
//! One submodule per component (`py/train.rs`, `py/tokenizer.rs`); this file registers them.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

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
