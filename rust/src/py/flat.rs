//! The flat batch output's buffers: memory the core filled, lent to Python through the buffer protocol,
//! so `numpy.frombuffer` views it with no copy.
//!
//! Why not a `bytearray`: its memory comes from the interpreter's allocator (glibc's `malloc` for a buffer
//! this size) and the ids had to be copied into it. In a process where another library had churned
//! glibc's heap (HF `tokenizers` encoding 0.3 MB, then freeing it), glibc's `_int_malloc` was half of
//! our whole `encode_batch_ids_flat` call (perf, o200k, 2026-12-06); here the buffer is the core's own
//! vector (mimalloc), handed over as it is.

use std::any::Any;
use std::os::raw::c_int;

use pyo3::ffi;
use pyo3::prelude::*;

/// A read-write byte buffer owned by the core (see the module docs). Python code sees it only through
/// `numpy.frombuffer` or `memoryview`.
#[pyclass(module = "subword._core", frozen)]
pub(crate) struct FlatBuffer {
    /// Keeps the allocation alive; never read again (Python may write through `ptr`).
    _owner: Box<dyn Any + Send + Sync>,
    /// Start and length in bytes of the owner's memory, taken before it was boxed (boxing a `Vec` moves
    /// its header, not its heap memory).
    ptr: usize,
    bytes: usize,
}

impl FlatBuffer {
    /// A buffer of the elements of `data`, native-endian.
    pub(crate) fn from_vec<T: Copy + Send + Sync + 'static>(mut data: Vec<T>) -> Self {
        // A grown vector may hold up to twice its length; the array lives as long as the caller keeps it.
        if data.capacity() - data.len() > data.len() / 8 {
            data.shrink_to_fit();
        }
        let ptr = data.as_mut_ptr() as usize;
        let bytes = std::mem::size_of_val(data.as_slice());
        FlatBuffer { _owner: Box::new(data), ptr, bytes }
    }
}

#[pymethods]
impl FlatBuffer {
    /// The buffer protocol: one contiguous run of bytes, writable (a numpy array of it may be modified,
    /// as one of a `bytearray` could).
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        let this = slf.get();
        // SAFETY: `view` is the interpreter's to fill; `ptr..ptr + bytes` is this object's memory, alive
        // while the view holds its reference to `slf` (PyBuffer_FillInfo takes one).
        let rc = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                this.ptr as *mut std::ffi::c_void,
                this.bytes as ffi::Py_ssize_t,
                0,
                flags,
            )
        };
        if rc == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}

    fn __len__(&self) -> usize {
        self.bytes
    }
}

/// A batch's ids as two flat buffers: every id back to back as native-endian `u32`, and `n + 1`
/// native-endian `i64` offsets (text `i`'s ids are `ids[offsets[i]..offsets[i + 1]]`), from
/// [`join_chunks`]. No Python object per token or per text, which is what made list-of-lists output
/// cost as much as the encoding on short lines.
pub(crate) fn flat_buffers(
    py: Python<'_>,
    (ids, offsets): (Vec<u32>, Vec<i64>),
) -> PyResult<(Py<FlatBuffer>, Py<FlatBuffer>)> {
    Ok((Py::new(py, FlatBuffer::from_vec(ids))?, Py::new(py, FlatBuffer::from_vec(offsets))?))
}

/// Ids from which a join is copied on the pool's threads (below, one thread copies faster than two
/// start).
const PAR_JOIN_IDS: usize = 1 << 16;

/// A batch's chunks (each its texts' ids back to back and the count per text) joined: all ids and the
/// `n + 1` offsets. Runs without the GIL. One chunk (one text, or one thread) hands its ids over with no
/// copy; a large batch is copied chunk by chunk on the pool's threads, which also free the chunks: on
/// the calling thread alone, the copy into fresh pages was a tenth of a two-thread
/// `encode_batch_ids_flat` of 5 MB of lines (perf, 2026-12-07).
pub(crate) fn join_chunks(chunks: Vec<(Vec<u32>, Vec<u32>)>) -> (Vec<u32>, Vec<i64>) {
    let texts: usize = chunks.iter().map(|c| c.1.len()).sum();
    let mut offsets = Vec::with_capacity(texts + 1);
    let mut at = 0i64;
    offsets.push(at);
    for (_, lens) in &chunks {
        for &n in lens {
            at += i64::from(n);
            offsets.push(at);
        }
    }
    if chunks.len() == 1 {
        return (chunks.into_iter().next().map(|c| c.0).unwrap_or_default(), offsets);
    }
    let total: usize = chunks.iter().map(|c| c.0.len()).sum();
    let mut all: Vec<u32> = Vec::with_capacity(total);
    let mut rest = &mut all.spare_capacity_mut()[..total];
    let mut parts = Vec::with_capacity(chunks.len());
    for (ids, _) in &chunks {
        let (part, tail) = std::mem::take(&mut rest).split_at_mut(ids.len());
        parts.push(part);
        rest = tail;
    }
    let copy = |(part, (ids, _)): (&mut [std::mem::MaybeUninit<u32>], (Vec<u32>, Vec<u32>))| {
        for (slot, &id) in part.iter_mut().zip(&ids) {
            slot.write(id);
        }
    };
    if total >= PAR_JOIN_IDS && crate::parallel::parallel_useful() {
        use rayon::prelude::*;
        parts.into_par_iter().zip(chunks.into_par_iter()).for_each(copy);
    } else {
        parts.into_iter().zip(chunks).for_each(copy);
    }
    // SAFETY: the parts cover the first `total` slots exactly (split back to back, one per chunk, each
    // as long as its chunk's ids) and each was written whole by `copy`.
    unsafe { all.set_len(total) };
    (all, offsets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_join_in_order_with_their_offsets() {
        assert_eq!(join_chunks(vec![(vec![1, 2], vec![2]), (vec![3], vec![0, 1])]), (vec![1, 2, 3], vec![0, 2, 2, 3]));
        assert_eq!(join_chunks(vec![]), (vec![], vec![0]));
        // Large enough for the pool's copy, with chunks of unequal sizes.
        let chunks: Vec<(Vec<u32>, Vec<u32>)> =
            (0..300u32).map(|c| ((0..c * 7).map(|i| c * 100_000 + i).collect(), vec![c * 7])).collect();
        let want: Vec<u32> = chunks.iter().flat_map(|c| c.0.clone()).collect();
        assert!(want.len() >= PAR_JOIN_IDS);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let (ids, offsets) = pool.install(|| join_chunks(chunks));
        assert_eq!(ids, want);
        assert_eq!(offsets.len(), 301);
        assert_eq!(*offsets.last().unwrap() as usize, want.len());
    }
}
