//! PyO3 bindings: type conversion and GIL release only; the algorithms live in the plain modules.
//! One submodule per component (`py/train.rs`, `py/tokenizer.rs`); this file registers them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

mod compare;
mod compare_vocab;
mod flat;
mod held_batch;
mod load;
mod spm;
mod spm_tokenizer;
mod text;
mod tokenizer;
mod train;
mod unigram;
mod wordpiece;

/// The private native module `subword._core`.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::alloc::configure();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The sources this extension was built from (see build.rs); the tests refuse a stale build.
    m.add("SOURCE_HASH", env!("SUBWORD_SOURCE_HASH"))?;
    crate::parallel::note_parent_process();
    m.add_class::<flat::FlatBuffer>()?;
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

/// The pool a call runs on: `threads` workers, or None for rayon's global pool (also when it has
/// `threads` workers: its threads are warm, while a new pool's threads start with empty allocator heaps
/// and fault in fresh pages: a two-thread `count_words` of 5 MB took 38.5-41.1 ms with a new pool per
/// call, 34.1-35.9 ms on the global one; 2026-12-07).
pub(crate) fn build_pool(threads: Option<usize>) -> PyResult<Option<Arc<rayon::ThreadPool>>> {
    match threads {
        None => Ok(None),
        Some(0) => Err(PyValueError::new_err("threads must be at least 1 (or None for all cores)")),
        Some(n) if n == rayon::current_num_threads() && crate::parallel::parallel_allowed() => Ok(None),
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
                Some(cell) => cell.get_or_init(|| {
                    (0..INT_BLOCK).map(|k| pyo3::types::PyInt::new(py, block * INT_BLOCK + k).unbind()).collect()
                })[at]
                    .bind(py)
                    .clone(),
                None => pyo3::types::PyInt::new(py, id),
            }
        }),
    )
}

/// Encodes a batch as `chunks` consecutive chunks and hands each chunk's result to `emit`, in
/// chunk order, on the calling thread (which holds the GIL): the pool's threads encode while the
/// calling thread builds Python objects from the chunks already done.
///
/// Why: the Python objects of a batch (a list per text, an `Encoding` per text) can only be made
/// with the GIL held, on one thread. Built after the whole parallel encoding, their time was added
/// unchanged to every thread count (`encode_batch_ids` scaled 1.19x from 1 to 2 threads). Here the
/// calling thread counts as one of the `n` threads: it builds the next chunk in order when it is
/// ready and otherwise encodes an unclaimed chunk itself (GIL released), so `n - 1` pool tasks plus
/// the caller keep `n` cores busy; one thread encodes everything, then builds, as before. Chunks
/// are claimed in increasing order, so they finish nearly in order and few wait for the builder.
///
/// `encode(i)` must depend on `i` alone (the ids of chunk `i`), so the results are those of the
/// sequential loop whichever thread encodes a chunk. An encoding error stops the other threads
/// after their current chunk and is raised as ValueError.
pub(crate) fn pipelined<C: Send>(
    py: Python<'_>,
    pool: &Option<Arc<rayon::ThreadPool>>,
    chunks: usize,
    encode: impl Fn(usize) -> Result<C, String> + Sync,
    mut emit: impl FnMut(C) -> PyResult<()>,
) -> PyResult<()> {
    let threads = match pool {
        Some(p) => p.current_num_threads(),
        // In a forked child the global pool has no threads (see `in_pool`): the caller alone works.
        None if crate::parallel::parallel_allowed() => rayon::current_num_threads(),
        None => 1,
    };
    let helpers = threads.min(chunks).saturating_sub(1);
    if helpers == 0 {
        // One thread: all encoding first, then all building, as before the pipeline. Alternating
        // chunk by chunk measured 8% slower on 5 MB (the encoder's and the builder's working sets
        // evicting each other from the caches), and there is nothing to overlap with.
        let done = py.detach(|| (0..chunks).map(&encode).collect::<Result<Vec<C>, String>>());
        for c in done.map_err(PyValueError::new_err)? {
            emit(c)?;
        }
        return Ok(());
    }
    let state = Pipeline {
        next: AtomicUsize::new(0),
        chunks,
        done: Mutex::new((0..chunks).map(|_| None).collect()),
        ready: Condvar::new(),
    };
    match pool {
        Some(p) => p.in_place_scope(|scope| drive(py, scope, &state, &encode, helpers, &mut emit)),
        None => rayon::in_place_scope(|scope| drive(py, scope, &state, &encode, helpers, &mut emit)),
    }
}

/// The body of [`pipelined`] inside the scope its helpers run in: spawns them, then emits the
/// chunks in order on the calling thread.
fn drive<'scope, C: Send, E: Fn(usize) -> Result<C, String> + Sync>(
    py: Python<'_>,
    scope: &rayon::Scope<'scope>,
    state: &'scope Pipeline<C>,
    encode: &'scope E,
    helpers: usize,
    emit: &mut impl FnMut(C) -> PyResult<()>,
) -> PyResult<()> {
    // Whatever way this ends (an error, a panic in `emit`), the helpers stop claiming chunks.
    let _stop = StopClaims(&state.next, state.chunks);
    for _ in 0..helpers {
        scope.spawn(move |_| {
            while let Some(i) = state.claim() {
                // A panic becomes an error in the chunk's slot: the caller must not wait forever for it.
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| encode(i)))
                    .unwrap_or_else(|_| Err("an encoding thread panicked".to_string()));
                state.put(i, r);
            }
        });
    }
    for at in 0..state.chunks {
        let r = match state.take(at) {
            Some(r) => r,
            None => loop {
                // Not ready: encode an unclaimed chunk meanwhile, or wait (GIL released either way).
                match state.claim() {
                    Some(i) if i == at => break py.detach(|| encode(i)),
                    Some(i) => {
                        let r = py.detach(|| encode(i));
                        state.put(i, r);
                        if let Some(r) = state.take(at) {
                            break r;
                        }
                    }
                    None => break py.detach(|| state.wait_for(at)),
                }
            },
        };
        emit(r.map_err(PyValueError::new_err)?)?;
    }
    Ok(())
}

/// The shared state of [`pipelined`]: the next chunk to claim and the finished chunks not yet emitted.
struct Pipeline<C> {
    next: AtomicUsize,
    chunks: usize,
    done: Mutex<Vec<Option<Result<C, String>>>>,
    ready: Condvar,
}

impl<C> Pipeline<C> {
    fn claim(&self) -> Option<usize> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        (i < self.chunks).then_some(i)
    }

    /// The slots are only written and taken whole, so a poisoned lock (a panic elsewhere while it
    /// was held, which no code here does) leaves them consistent: its guard is used anyway.
    fn slots(&self) -> MutexGuard<'_, Vec<Option<Result<C, String>>>> {
        self.done.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn put(&self, i: usize, r: Result<C, String>) {
        self.slots()[i] = Some(r);
        self.ready.notify_all();
    }

    fn take(&self, i: usize) -> Option<Result<C, String>> {
        self.slots()[i].take()
    }

    fn wait_for(&self, i: usize) -> Result<C, String> {
        let mut slots = self.slots();
        loop {
            if let Some(r) = slots[i].take() {
                return r;
            }
            slots = self.ready.wait(slots).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Sets the claim counter past the last chunk when dropped, so [`pipelined`]'s helpers stop.
struct StopClaims<'a>(&'a AtomicUsize, usize);

impl Drop for StopClaims<'_> {
    fn drop(&mut self) {
        self.0.store(self.1, Ordering::Relaxed);
    }
}

/// Texts per chunk of [`pipelined`] for a batch of `texts` on `threads` threads: about 16 chunks
/// per thread, so the last chunk (built by the caller alone after all encoding is done) is a small
/// share of the batch, and at least 64 texts, so the hand-off (a lock, a wake-up, two vectors) stays
/// small beside the encoding of a chunk.
pub(crate) fn chunk_len(texts: usize, pool: &Option<Arc<rayon::ThreadPool>>) -> usize {
    let threads = match pool {
        Some(p) => p.current_num_threads(),
        None => rayon::current_num_threads(),
    };
    (texts / (16 * threads.max(1))).clamp(64, 2048)
}

/// One Python list of ids per text (shared ints, see [`id_list`]), appended to a new list in text
/// order: `encode(range)` gives the ids of the texts `range` back to back and the count per text.
/// The texts are encoded in chunks through [`pipelined`], so the lists are built while the pool
/// encodes; Python's cyclic GC is paused meanwhile (generational collections triggered by the new
/// lists cost as much as the encoding).
pub(crate) fn nested_id_lists<'py>(
    py: Python<'py>,
    pool: &Option<Arc<rayon::ThreadPool>>,
    texts: usize,
    encode: impl Fn(std::ops::Range<usize>) -> Result<(Vec<u32>, Vec<u32>), String> + Sync,
) -> PyResult<Bound<'py, pyo3::types::PyList>> {
    let size = chunk_len(texts, pool);
    let _pause = GcPause::new(py)?;
    let out = pyo3::types::PyList::empty(py);
    pipelined(
        py,
        pool,
        texts.div_ceil(size),
        |i| encode(i * size..((i + 1) * size).min(texts)),
        |(ids, lens)| push_id_lists(py, &out, &ids, &lens),
    )?;
    Ok(out)
}

/// Appends to `out` one list per text of a flat chunk: `ids` back to back, `lens[k]` of text `k`.
pub(crate) fn push_id_lists(
    py: Python<'_>,
    out: &Bound<'_, pyo3::types::PyList>,
    ids: &[u32],
    lens: &[u32],
) -> PyResult<()> {
    let mut start = 0usize;
    for &n in lens {
        let end = start + n as usize;
        let text_ids = ids.get(start..end).ok_or_else(|| PyValueError::new_err("id counts exceed the ids"))?;
        out.append(id_list(py, text_ids)?)?;
        start = end;
    }
    Ok(())
}

pub(crate) use flat::flat_buffers;

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
