//! The Python extension's memory allocator: mimalloc, set to give freed memory back at once.
//!
//! Inside a Python process glibc's heap is shared with the interpreter and every other extension.
//! After other libraries had run in the same process (bench_peers' later rows), 40% of our encode
//! of text new to the word cache went to glibc's `malloc` (perf: `_int_malloc`, `unlink_chunk`,
//! `malloc_consolidate` under the cache's inserts and the output's growth) and our one-string
//! throughput fell from 48 to 17 MB/s; with mimalloc it stayed at 47. mimalloc's defaults keep
//! freed memory (the temporaries of loading a tokenizer) and commit its arenas eagerly, which
//! doubled the RSS of a loaded tokenizer; purging at once and committing on demand brings it to
//! glibc's figures or below (RSS added by a first load, MiB: cl100k 16.9 -> 13.2, llama3 27.1 ->
//! 22.5, BERT 6.7 -> 6.7; benchmarks/RESULTS.md, the allocator subsection).

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_arena_eager_commit` and `mi_option_purge_delay` in the `mi_option_e` enum of the
/// mimalloc (v3) that libmimalloc-sys 0.1.49 builds (pinned in Cargo.toml); the crate names only
/// some options. The test below checks the numbers against the options' defaults.
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Sets the options above; called once when the module is imported.
pub fn configure() {
    // SAFETY: plain setters of mimalloc's option table, valid at any time and from any thread.
    unsafe {
        libmimalloc_sys::mi_option_set(ARENA_EAGER_COMMIT, 0);
        libmimalloc_sys::mi_option_set(PURGE_DELAY, 0);
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
    }
}
