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
