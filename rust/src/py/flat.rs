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
/// native-endian `i64` offsets (text `i`'s ids are `ids[offsets[i]..offsets[i + 1]]`). No Python object
/// per token or per text, which is what made list-of-lists output cost as much as the encoding on short
/// lines; a batch encoded as one chunk (one text, or one thread) hands its ids over with no copy.
pub(crate) fn flat_buffers(
    py: Python<'_>,
    chunks: Vec<(Vec<u32>, Vec<u32>)>,
) -> PyResult<(Py<FlatBuffer>, Py<FlatBuffer>)> {
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
    let ids = if chunks.len() == 1 {
        chunks.into_iter().next().map(|c| c.0).unwrap_or_default()
    } else {
        let mut all = Vec::with_capacity(usize::try_from(at).unwrap_or(0));
        for (chunk, _) in &chunks {
            all.extend_from_slice(chunk);
        }
        all
    };
    Ok((Py::new(py, FlatBuffer::from_vec(ids))?, Py::new(py, FlatBuffer::from_vec(offsets))?))
}
