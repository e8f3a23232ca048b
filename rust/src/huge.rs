//! Fixed-size tables that the encoder probes at random, in memory the kernel may back with 2 MiB pages.
//!
//! The tables in question (the merge-pair table, the token index, the word tables once they reach 2 MB)
//! span thousands of 4 KiB pages, and a lookup lands on any of them. This machine's second-level TLB holds
//! 3,072 translations, so with the text, the output and the other tables in play a lookup often needs
//! the page tables read as well as its own cache line. One 2 MiB page covers 512 small ones.
//!
//! Transparent huge pages are given out at fault time to memory that asked for them (`madvise`, the
//! usual setting of `/sys/kernel/mm/transparent_hugepage/enabled`) and whose 2 MiB-aligned range is all
//! one mapping. So a table of one huge page or more gets a private anonymous mapping: a little more
//! than needed is mapped, the unaligned head and tail are unmapped, and the rest is advised
//! `MADV_HUGEPAGE` before the first write. Anything smaller, a system other than Linux, or a failed
//! `mmap` uses the global allocator; the advice changes speed only, never contents.
//!
//! Measured (cl100k, 0.3 MB slices, `examples/fresh_rounds.rs` with the L3 evicted between calls, builds
//! alternating, 2026-12-07): through the Rust API with the system allocator, English new to the cache
//! 3.38 -> 3.20 ms and seen 1.86 -> 1.74; through Python no change, because the extension's allocator
//! (mimalloc, `src/alloc.rs`) already placed allocations of this size on huge pages.
//!
//! ```
//! use subword_core::huge::HugeSlice;
//! let mut t = HugeSlice::filled(1 << 20, 7u32);
//! t[5] = 9;
//! assert_eq!((t.len(), t[4], t[5]), (1 << 20, 7, 9));
//! ```

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// The huge page size of x86-64 and of most aarch64 kernels.
const HUGE_PAGE: usize = 2 << 20;

/// A boxed slice of `len` `T`s whose memory is huge-page backed where the kernel allows (module docs).
pub struct HugeSlice<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
    /// Made by `mmap` (else by the global allocator).
    mapped: bool,
}

// SAFETY: a `HugeSlice` owns its elements alone, as a `Box<[T]>` does.
unsafe impl<T: Copy + Send> Send for HugeSlice<T> {}
// SAFETY: shared access hands out `&[T]` only.
unsafe impl<T: Copy + Sync> Sync for HugeSlice<T> {}

impl<T: Copy> HugeSlice<T> {
    /// `len` copies of `value`.
    pub fn filled(len: usize, value: T) -> Self {
        let s = Self::uninit(len);
        for i in 0..len {
            // SAFETY: `i < len`, inside the new allocation, which nothing else references.
            unsafe { s.ptr.as_ptr().add(i).write(value) };
        }
        s
    }

    /// Room for `len` elements, not yet written (every constructor writes all of them).
    fn uninit(len: usize) -> Self {
        let layout = Self::layout(len);
        if layout.size() == 0 {
            return HugeSlice { ptr: NonNull::dangling(), len, mapped: false };
        }
        if layout.size() >= HUGE_PAGE {
            if let Some(p) = map_huge(layout.size()) {
                return HugeSlice { ptr: p.cast(), len, mapped: true };
            }
        }
        // SAFETY: the layout's size is not zero.
        let raw = unsafe { alloc(layout) };
        match NonNull::new(raw.cast::<T>()) {
            Some(ptr) => HugeSlice { ptr, len, mapped: false },
            None => handle_alloc_error(layout),
        }
    }

    fn layout(len: usize) -> Layout {
        let size = len.checked_mul(std::mem::size_of::<T>()).unwrap_or(usize::MAX / 2);
        // Cache-line aligned at least: the tables' entries are laid out by cache lines.
        let align = std::mem::align_of::<T>().max(64);
        match Layout::from_size_align(size, align) {
            Ok(l) => l,
            Err(_) => handle_alloc_error(Layout::new::<T>()),
        }
    }
}

impl<T: Copy> Drop for HugeSlice<T> {
    fn drop(&mut self) {
        let layout = Self::layout(self.len);
        if layout.size() == 0 {
            return;
        }
        if self.mapped {
            unmap_huge(self.ptr.as_ptr().cast(), layout.size());
        } else {
            // SAFETY: allocated by `uninit` with this layout.
            unsafe { dealloc(self.ptr.as_ptr().cast(), layout) };
        }
    }
}

impl<T: Copy> Deref for HugeSlice<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: `len` elements, all written by the constructor.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> DerefMut for HugeSlice<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`; `&mut self` is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> Clone for HugeSlice<T> {
    fn clone(&self) -> Self {
        let s = Self::uninit(self.len);
        // SAFETY: the new allocation holds `len` elements and is not `self`'s.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), s.ptr.as_ptr(), self.len) };
        s
    }
}

impl<T: Copy> std::fmt::Debug for HugeSlice<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "HugeSlice({} x {} bytes, {})",
            self.len,
            std::mem::size_of::<T>(),
            if self.mapped { "mapped" } else { "allocated" }
        )
    }
}

impl<T: Copy> Default for HugeSlice<T> {
    fn default() -> Self {
        Self::uninit(0)
    }
}

/// A new private anonymous mapping of at least `size` bytes starting on a 2 MiB boundary, advised for
/// huge pages before its first touch; `None` when `mmap` fails.
#[cfg(target_os = "linux")]
fn map_huge(size: usize) -> Option<NonNull<u8>> {
    let rounded = size.checked_next_multiple_of(HUGE_PAGE)?;
    // One huge page more than needed, so an aligned start lies inside; the rest is unmapped below.
    let span = rounded.checked_add(HUGE_PAGE)?;
    // SAFETY: a fresh mapping; no memory of this process is touched.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            span,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return None;
    }
    let base = base as usize;
    let start = base.next_multiple_of(HUGE_PAGE);
    let end = start + rounded;
    // SAFETY: head and tail are parts of the mapping just made, outside `start..end`; the advice is
    // given before anything is written. A failed trim or advice costs address space or speed only.
    unsafe {
        if start > base {
            libc::munmap(base as *mut libc::c_void, start - base);
        }
        if base + span > end {
            libc::munmap(end as *mut libc::c_void, base + span - end);
        }
        libc::madvise(start as *mut libc::c_void, rounded, libc::MADV_HUGEPAGE);
    }
    NonNull::new(start as *mut u8)
}

#[cfg(not(target_os = "linux"))]
fn map_huge(_size: usize) -> Option<NonNull<u8>> {
    None
}

/// Unmaps what [`map_huge`] made for `size` bytes.
#[cfg(target_os = "linux")]
fn unmap_huge(p: *mut u8, size: usize) {
    // SAFETY: `p` starts a mapping of this rounded length made by `map_huge`, now unused.
    unsafe { libc::munmap(p.cast(), size.next_multiple_of(HUGE_PAGE)) };
}

#[cfg(not(target_os = "linux"))]
fn unmap_huge(_p: *mut u8, _size: usize) {}

#[cfg(test)]
mod tests {
    use super::HugeSlice;

    #[test]
    fn holds_its_elements_in_both_kinds_of_memory() {
        for len in [0usize, 1, 100, (2 << 20) / 8 - 1, (2 << 20) / 8, (5 << 20) / 8 + 3] {
            let mut t = HugeSlice::filled(len, 3u64);
            assert_eq!(t.len(), len);
            assert!(t.iter().all(|&x| x == 3));
            if len > 0 {
                t[len - 1] = 11;
                let c = t.clone();
                assert_eq!((c[len - 1], c.len()), (11, len));
                assert_eq!(c.as_ptr() as usize % 64, 0);
            }
        }
    }

    #[test]
    fn a_table_of_a_huge_page_or_more_is_mapped_on_a_huge_page_boundary() {
        let t = HugeSlice::filled(3 << 20, 0u8);
        if cfg!(target_os = "linux") {
            assert!(t.mapped);
            assert_eq!(t.as_ptr() as usize % (2 << 20), 0);
        }
    }
}
