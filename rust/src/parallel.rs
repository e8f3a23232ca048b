//! Whether this process may use rayon's global thread pool.
//!
//! rayon's global pool does not survive `fork()`: its worker threads exist only in the parent, so a
//! forked child (a DataLoader worker, a multiprocessing pool) that hands work to it waits forever.
//! The bindings record the importing process; code that parallelises checks [`parallel_allowed`]
//! and, in a child, runs sequentially or on a pool of its own (fresh threads work after a fork).

use std::sync::OnceLock;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_goes_to_the_pool_only_when_it_has_several_threads() {
        let pool = |n| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap();
        assert!(!pool(1).install(parallel_useful));
        assert!(pool(2).install(parallel_useful));
    }
}
