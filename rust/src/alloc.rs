//! The Python extension's memory allocator: mimalloc, set to give freed memory back at once, except
//! what batch calls free, which is kept for the next one ([`HoldFreedPages`]).
//!
//! Inside a Python process glibc's heap is shared with the interpreter and every other extension.
//! After other libraries had run in the same process (bench_peers' later rows), 40% of our encode
//! of text new to the word cache went to glibc's `malloc` (perf: `_int_malloc`, `unlink_chunk`,
//! `malloc_consolidate` under the cache's inserts and the output's growth) and our one-string
//! throughput fell from 48 to 17 MB/s; with mimalloc it stayed at 47. mimalloc's defaults keep
//! freed memory (the temporaries of loading a tokenizer) and commit its arenas eagerly, which
//! doubled the RSS of a loaded tokenizer; purging at once and committing on demand brings it to
//! glibc's figures or below (RSS added by a first load, MiB: cl100k 16.9 -> 13.2, llama3 27.1 ->
//! 22.5, BERT 6.7 -> 6.7; benchmarks/RESULTS.md, the allocator subsection). Batch calls raise the
//! purge delay while they run, which leaves a loaded tokenizer's RSS as it was.

use std::sync::atomic::{AtomicUsize, Ordering};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_arena_eager_commit` and `mi_option_purge_delay` in the `mi_option_e` enum of the
/// mimalloc (v3) that libmimalloc-sys 0.1.49 builds (pinned in Cargo.toml); the crate names only
/// some options. The test below checks the numbers against the options' defaults.
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// How long a page freed inside a batch call may stay committed before mimalloc gives it back (ms; its
/// arenas multiply it by ten), where a later batch call finds it.
const HOLD_DELAY_MS: std::os::raw::c_long = 100;

/// Sets the options above; called once when the module is imported.
pub fn configure() {
    // SAFETY: plain setters of mimalloc's option table, valid at any time and from any thread.
    unsafe {
        libmimalloc_sys::mi_option_set(ARENA_EAGER_COMMIT, 0);
        libmimalloc_sys::mi_option_set(PURGE_DELAY, 0);
    }
}

/// Guards alive now ([`HoldFreedPages`]); the purge delay is raised while there is one.
static HOLDERS: AtomicUsize = AtomicUsize::new(0);

/// Keeps the pages freed during a batch call committed for the next batch call.
///
/// With the purge delay at 0 (see [`configure`]), every page freed is returned to the OS at once, and the
/// next batch faults its memory in afresh: 3,300 page faults per `encode_batch_ids_flat` of 5 MB of lines
/// (13 MB), a fifth of its time in the kernel. While a guard lives the delay is raised, so the pages freed
/// in the call are only scheduled for purging; the delay goes back to 0 when the last guard drops, which
/// leaves them committed: the next batch call reuses them, and mimalloc purges what is still free about a
/// second (the arena delay) after the first was scheduled, on its allocation paths during a later guarded
/// call (none run at delay 0). The cost is RSS between calls of
/// at most one call's freed memory; loading, and any call outside a guard, purge at once as before. A
/// forced purge when the call ends was tried: it gives the faults back to the next call (no gain).
///
/// Two atomic steps, cheap enough for one guard per dropped `Encoding`. A guard made between another's
/// last decrement and its store of 0 runs with the delay at 0: slower, never wrong.
pub struct HoldFreedPages(());

impl HoldFreedPages {
    /// Raises the purge delay unless a call running beside this one did already.
    pub fn new() -> Self {
        if HOLDERS.fetch_add(1, Ordering::AcqRel) == 0 {
            // SAFETY: a setter of mimalloc's option table, valid at any time and from any thread.
            unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, HOLD_DELAY_MS) };
        }
        HoldFreedPages(())
    }
}

impl Default for HoldFreedPages {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for HoldFreedPages {
    fn drop(&mut self) {
        if HOLDERS.fetch_sub(1, Ordering::AcqRel) == 1 {
            // SAFETY: as in `new`.
            unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 0) };
        }
    }
}

#[cfg(test)]
mod tests {
    /// The numbers name the intended options: before `configure` they hold those options' defaults in
    /// this mimalloc's `options.c` (purge delay 1000 ms, arena eager commit 2), which no neighbouring
    /// option shares. Runs with the feature: `cargo test --release --features python --lib alloc`.
    #[test]
    fn option_numbers_name_the_intended_options() {
        // SAFETY: option getters and setters.
        unsafe {
            assert_eq!(libmimalloc_sys::mi_option_get(super::PURGE_DELAY), 1000);
            assert_eq!(libmimalloc_sys::mi_option_get(super::ARENA_EAGER_COMMIT), 2);
            super::configure();
            assert_eq!(libmimalloc_sys::mi_option_get(super::PURGE_DELAY), 0);
        }
        holding_raises_the_delay_until_the_last_guard_drops();
    }

    /// Run by the test above, after `configure` (the option table is the process's; tests run in threads).
    fn holding_raises_the_delay_until_the_last_guard_drops() {
        // SAFETY: option getters.
        let delay = || unsafe { libmimalloc_sys::mi_option_get(super::PURGE_DELAY) };
        let outer = super::HoldFreedPages::new();
        assert_eq!(delay(), super::HOLD_DELAY_MS);
        let inner = std::thread::spawn(|| {
            let g = super::HoldFreedPages::new();
            drop(vec![0u8; 1 << 22]);
            g
        })
        .join()
        .expect("the thread holding pages");
        drop(outer);
        assert_eq!(delay(), super::HOLD_DELAY_MS, "a guard still lives");
        drop(inner);
        assert_eq!(delay(), 0);
    }
}
