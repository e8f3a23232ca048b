//! Whether this process may use rayon's global thread pool.
//!
//! rayon's global pool does not survive `fork()`: its worker threads exist only in the parent, so a
//! forked child (a DataLoader worker, a multiprocessing pool) that hands work to it waits forever.
//! The bindings record the importing process; code that parallelises checks [`parallel_allowed`]
//! and, in a child, runs sequentially or on a pool of its own (fresh threads work after a fork).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// The process that loaded the library.
static PARENT_PID: OnceLock<u32> = OnceLock::new();

/// Records the current process as the one allowed to use the global pool (call at import time).
pub fn note_parent_process() {
    PARENT_PID.get_or_init(std::process::id);
}

/// False in a process forked after the library was loaded.
pub fn parallel_allowed() -> bool {
    *PARENT_PID.get_or_init(std::process::id) == std::process::id()
}

/// Whether handing a batch to rayon can help: the pool may be used ([`parallel_allowed`]) and has more
/// than one thread. With one thread a batch runs on the calling thread instead, where single-text calls
/// run too: word caches are per thread, and a one-thread batch on the pool's worker found none of the
/// words the caller's own calls had cached (o200k, a 0.3 MB Chinese text then its lines at one thread:
/// the lines took 14.4-14.8 ms instead of 2.7).
pub fn parallel_useful() -> bool {
    parallel_allowed() && rayon::current_num_threads() > 1
}

/// `f(i)` for every `i < n`, in index order, computed by the calling thread and by up to `helpers`
/// threads of rayon's pool, each taking the next index not yet taken until none is left.
///
/// Why the caller works too: a pool thread that has gone to sleep can take long to wake (on the
/// 2-CPU machine of benchmarks/RESULTS.md, session 42, the parts of one 0.3 MB text handed to the pool
/// often ran one after the other on one worker while the other woke late, so two threads were no
/// faster than one). The caller starts at once, a helper joins when it wakes, and neither waits for
/// the other except at the end (for a helper's index in progress).
///
/// ```
/// let squares = subword_core::parallel::claim_map(5, 1, |i| i * i);
/// assert_eq!(squares, [0, 1, 4, 9, 16]);
/// ```
pub fn claim_map<R: Send>(n: usize, helpers: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let work = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(slot) = slots.get(i) else { break };
        let r = f(i);
        *slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(r);
    };
    rayon::in_place_scope(|s| {
        for _ in 0..helpers.min(n.saturating_sub(1)) {
            s.spawn(|_| work());
        }
        work();
    });
    // Every index below `n` was taken by one of the threads, which all finished inside the scope.
    slots
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner()).expect("each index is computed"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claim_map_keeps_index_order_with_helpers() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let got = pool.install(|| claim_map(1000, 2, |i| (i, std::thread::current().id())));
        assert_eq!(got.iter().map(|x| x.0).collect::<Vec<_>>(), (0..1000).collect::<Vec<_>>());
        assert!(claim_map(0, 2, |i| i).is_empty());
    }

    #[test]
    fn a_batch_goes_to_the_pool_only_when_it_has_several_threads() {
        let pool = |n| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap();
        assert!(!pool(1).install(parallel_useful));
        assert!(pool(2).install(parallel_useful));
    }
}
