//! The texts of a batch as the encoders' worker threads read them.
//!
//! Most callers hold UTF-8 already (`&str`, `String`). A Python `str` that is not ASCII holds code
//! units instead (Latin-1, UCS-2 or UCS-4), and making its UTF-8 on the calling thread, before the
//! batch is handed to the pool, left that work on one thread: on 5 MB of English lines with cl100k,
//! the calling thread's own work (that conversion, reading the list, joining the output) was about a
//! third of a two-thread `encode_batch_ids_flat` call (perf, 2026-12-07). A [`BatchText`] makes its
//! UTF-8 where it is encoded, in a scratch buffer the worker reuses, text after text.

/// One text of a batch: its UTF-8 as is, or made on demand in a scratch buffer.
///
/// ```
/// use subword_core::batch_text::BatchText;
/// let mut scratch = Vec::new();
/// let len = "héllo".with_utf8(&mut scratch, |s| s.len());
/// assert_eq!(len, Ok(6));
/// ```
pub trait BatchText: Sync {
    /// Calls `f` with the text as UTF-8, made in `scratch` (cleared first) if the text is not UTF-8
    /// already. An error if the text holds what UTF-8 cannot (a lone surrogate).
    fn with_utf8<R>(&self, scratch: &mut Vec<u8>, f: impl FnOnce(&str) -> R) -> Result<R, NotUtf8>;

    /// A lower bound of the text's UTF-8 length in bytes (to size output buffers).
    fn len_hint(&self) -> usize;
}

/// A text that has no UTF-8 form (a lone surrogate in a Python str).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotUtf8;

impl std::fmt::Display for NotUtf8 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a text holds a code point that UTF-8 cannot encode (a lone surrogate)")
    }
}

impl std::error::Error for NotUtf8 {}

impl<T: AsRef<str> + Sync> BatchText for T {
    #[inline]
    fn with_utf8<R>(&self, _scratch: &mut Vec<u8>, f: impl FnOnce(&str) -> R) -> Result<R, NotUtf8> {
        Ok(f(self.as_ref()))
    }

    #[inline]
    fn len_hint(&self) -> usize {
        self.as_ref().len()
    }
}
