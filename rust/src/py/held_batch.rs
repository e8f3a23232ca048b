//! A batch of Python strs that the pool's workers read themselves, without the GIL.
//!
//! Extracting a list into `Vec<Bound<PyString>>` (pyo3's per-item conversion and reference) and then each
//! str's view ([`super::text::StrView`]) was the calling thread's own work in a batch call, done before
//! any worker started: on 5 MB of English lines (101,880) with cl100k, about 7% of the samples of a
//! two-thread `encode_batch_ids_flat` (perf, 2026-12-07). Here the calling thread makes one tuple of the
//! items (one C call, which also takes their references) and the workers read each str's header from the
//! tuple's item array as they encode it.
//!
//! What a worker may read without the GIL: the tuple's items are fixed for its lifetime, and each holds a
//! reference to its str. An item's type pointer is read and compared with `str`'s own (never followed);
//! an exact, compact str's kind, length and code units are set when it is made and never change. Anything
//! else (a str subclass, a legacy non-compact str, an object that is not a str) and a lone surrogate make
//! the worker give up on the batch ([`NotUtf8`]), and the call runs again through the views made with the
//! GIL held, which handle every str and raise the interpreter's own errors.

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyString, PyTuple};

use super::text::StrView;
use crate::batch_text::{BatchText, NotUtf8};

/// One item of a held batch (see the module docs).
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct HeldStr(*mut ffi::PyObject);

// SAFETY: a `HeldStr` is only made by `held_items`, from a tuple the caller keeps alive for as long as
// the items are used; workers only read what the module docs list, which no other thread changes.
unsafe impl Send for HeldStr {}
// SAFETY: as above.
unsafe impl Sync for HeldStr {}

/// The batch `texts` (any iterable of str but a str itself) as a tuple of its items.
pub(crate) fn hold<'py>(texts: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    if texts.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err("texts must be a list of str, not a single str"));
    }
    // SAFETY: PySequence_Tuple returns a new reference (the argument itself for an exact tuple) or NULL
    // with an exception set, which `from_owned_ptr_or_err` turns into the error.
    let tuple = unsafe { Bound::from_owned_ptr_or_err(texts.py(), ffi::PySequence_Tuple(texts.as_ptr()))? };
    Ok(tuple.downcast_into::<PyTuple>()?)
}

/// The items of `held` for the workers.
pub(crate) fn held_items<'a>(held: &'a Bound<'_, PyTuple>) -> &'a [HeldStr] {
    // SAFETY: a tuple's items are `len` object pointers stored inline from `ob_item`, fixed while it lives
    // (it is borrowed for 'a); `HeldStr` is a transparent wrapper of such a pointer.
    unsafe {
        let items = (*(held.as_ptr() as *mut ffi::PyTupleObject)).ob_item.as_ptr();
        std::slice::from_raw_parts(items as *const HeldStr, held.len())
    }
}

/// The strs of `held` with the GIL (for the second run of a batch the workers gave up on): a TypeError
/// names an item that is not a str.
pub(crate) fn held_strs<'py>(held: &Bound<'py, PyTuple>) -> PyResult<Vec<Bound<'py, PyString>>> {
    held.iter()
        .enumerate()
        .map(|(i, item)| {
            item.downcast_into::<PyString>().map_err(|e| {
                let name = e.into_inner().get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
                PyTypeError::new_err(format!("texts[{i}] must be a str, got {name}"))
            })
        })
        .collect()
}

impl BatchText for HeldStr {
    #[inline]
    fn with_utf8<R>(&self, scratch: &mut Vec<u8>, f: impl FnOnce(&str) -> R) -> Result<R, NotUtf8> {
        let op = self.0;
        // SAFETY: see the module docs: the type pointer is compared, not followed; the rest is read only
        // from an exact compact str, whose kind, length and data never change; the slices live while the
        // tuple holds the str.
        unsafe {
            if ffi::PyUnicode_CheckExact(op) == 0 || ffi::PyUnicode_IS_COMPACT(op) == 0 {
                return Err(NotUtf8);
            }
            let len = usize::try_from(ffi::PyUnicode_GET_LENGTH(op)).unwrap_or(0);
            let data = ffi::PyUnicode_DATA(op);
            let view = if ffi::PyUnicode_IS_ASCII(op) != 0 {
                StrView::Utf8(std::str::from_utf8_unchecked(std::slice::from_raw_parts(data as *const u8, len)))
            } else {
                match ffi::PyUnicode_KIND(op) {
                    ffi::PyUnicode_1BYTE_KIND => StrView::Latin1(std::slice::from_raw_parts(data as *const u8, len)),
                    ffi::PyUnicode_2BYTE_KIND => StrView::Ucs2(std::slice::from_raw_parts(data as *const u16, len)),
                    ffi::PyUnicode_4BYTE_KIND => StrView::Ucs4(std::slice::from_raw_parts(data as *const u32, len)),
                    _ => return Err(NotUtf8),
                }
            };
            view.with_utf8(scratch, f)
        }
    }

    #[inline]
    fn len_hint(&self) -> usize {
        let op = self.0;
        // SAFETY: as in `with_utf8`; anything but an exact compact str gets 0 (it is refused there).
        unsafe {
            if ffi::PyUnicode_CheckExact(op) == 0 || ffi::PyUnicode_IS_COMPACT(op) == 0 {
                return 0;
            }
            usize::try_from(ffi::PyUnicode_GET_LENGTH(op)).unwrap_or(0)
        }
    }
}

/// A batch call's work over its items, whatever their kind ([`run_held`] may run it twice).
pub(crate) trait BatchJob<T>: Sync {
    fn run<S: BatchText>(&self, items: &[S]) -> Result<T, String>;
}

/// `job` over the batch `texts`, the GIL released: first on the held items, which the workers read
/// themselves; if they gave up on one (see the module docs), again on the strs' views made with the GIL,
/// where a lone surrogate raises the interpreter's `UnicodeEncodeError` and an item that is not a str a
/// `TypeError` naming it. Any other error of `job` is a `ValueError`.
pub(crate) fn run_held<T: Send>(py: Python<'_>, texts: &Bound<'_, PyAny>, job: &impl BatchJob<T>) -> PyResult<T> {
    let _pages = crate::alloc::HoldFreedPages::new();
    let held = hold(texts)?;
    let items = held_items(&held);
    match py.detach(|| job.run(items)) {
        Err(msg) if msg == NotUtf8.to_string() => {
            let strs = held_strs(&held)?;
            let views = super::text::views_of(&strs)?;
            py.detach(|| job.run(&views)).map_err(|msg| super::text::batch_error(&strs, msg))
        }
        done => done.map_err(pyo3::exceptions::PyValueError::new_err),
    }
}

/// A batch call's work that needs the GIL between its parts (building Python objects while the pool
/// encodes), over its items whatever their kind ([`run_held_with_gil`] may run it twice).
pub(crate) trait GilBatchJob<'py, T> {
    fn run<S: BatchText>(&self, py: Python<'py>, items: &[S]) -> PyResult<T>;
}

/// [`run_held`] for a [`GilBatchJob`]: a `ValueError` with [`NotUtf8`]'s message from the first run means
/// a worker gave up on an item, and the job runs again on the views.
pub(crate) fn run_held_with_gil<'py, T>(
    py: Python<'py>,
    texts: &Bound<'py, PyAny>,
    job: &impl GilBatchJob<'py, T>,
) -> PyResult<T> {
    let _pages = crate::alloc::HoldFreedPages::new();
    let held = hold(texts)?;
    let gave_up = |e: &PyErr| {
        e.is_instance_of::<pyo3::exceptions::PyValueError>(py) && e.value(py).to_string() == NotUtf8.to_string()
    };
    match job.run(py, held_items(&held)) {
        Err(e) if gave_up(&e) => {
            let strs = held_strs(&held)?;
            let views = super::text::views_of(&strs)?;
            job.run(py, &views).map_err(|e| super::text::batch_list_error(py, &strs, e))
        }
        done => done,
    }
}
