"""Open a file or stdin as a binary stream, decompressing ``.gz``, ``.bz2`` and ``.xz`` transparently.

The format is recognised by the file's first bytes (its magic number), not only by its name, so
``subword train bpe - < corpus.txt.gz`` works as well as naming the file.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import sys
from pathlib import Path
from typing import BinaryIO

__all__ = ["open_binary", "detect_compression", "DecompressionErrors"]

# Magic numbers: gzip (RFC 1952), bzip2 ("BZh" + block size digit), xz (the 6-byte stream header).
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
)
_BY_SUFFIX = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz", ".lzma": "xz"}

#: What a corrupt or truncated compressed stream raises while it is read.
DecompressionErrors: tuple[type[BaseException], ...] = (OSError, EOFError, lzma.LZMAError)


def detect_compression(head: bytes, name: str = "") -> str | None:
    """Names the compression of a stream from its first bytes (or, failing that, its file name).

    Args:
        head: The first few bytes of the stream (6 suffice).
        name: The file name, used when the bytes are inconclusive (e.g. an empty file).

    Returns:
        ``"gzip"``, ``"bzip2"``, ``"xz"`` or ``None`` for plain data.

    >>> detect_compression(b"\\x1f\\x8b\\x08\\x00")
    'gzip'
    >>> detect_compression(b"hello", "notes.txt") is None
    True
    """
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if head:
        return None
    return _BY_SUFFIX.get(Path(name).suffix.lower())


def _wrap(raw: BinaryIO, kind: str | None) -> BinaryIO:
    if kind == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if kind == "bzip2":
        return bz2.BZ2File(raw, mode="rb")  # type: ignore[return-value]
    if kind == "xz":
        return lzma.LZMAFile(raw, mode="rb")  # type: ignore[return-value]
    return raw


def open_binary(path: Path | None, name: str) -> BinaryIO:
    """Opens a file (or stdin when ``path`` is None) for binary reading, decompressing if needed.

    Closing the returned stream closes the file but never the process's stdin.

    Args:
        path: The file, or ``None`` for standard input.
        name: The file's display name (only its suffix is used, as a fallback hint).

    Returns:
        A binary stream of the decompressed bytes.

    >>> import gzip, tempfile
    >>> p = Path(tempfile.mkdtemp(), "t.gz"); _ = p.write_bytes(gzip.compress(b"a\\nb\\n"))
    >>> with open_binary(p, p.name) as f: f.read()
    b'a\\nb\\n'
    """
    if path is None:
        stdin = getattr(sys.stdin, "buffer", None)
        if stdin is None:
            # A text-only stand-in for stdin (io.StringIO in a notebook or test): take its text as UTF-8.
            return io.BytesIO(sys.stdin.read().encode("utf-8", "surrogateescape"))  # type: ignore[return-value]
        # A BufferedReader lets us look at the magic number without consuming it. Other
        # objects (test harnesses) are read whole, which is fine for what they hold.
        if isinstance(stdin, io.BufferedReader):
            head = stdin.peek(6)[:6]
            raw: BinaryIO = _NoClose(stdin)  # type: ignore[assignment]
        else:
            data = stdin.read()
            head = data[:6]
            raw = io.BytesIO(data)
        return _wrap(raw, detect_compression(head, name))
    raw = open(path, "rb")  # noqa: SIM115 - ownership passes to the caller
    try:
        head = raw.peek(6)[:6]
    except OSError:
        raw.close()
        raise
    return _wrap(raw, detect_compression(head, name))


class _NoClose(io.BufferedIOBase):
    """Reads through to stdin but leaves it open when closed."""

    def __init__(self, inner: io.BufferedReader) -> None:
        super().__init__()
        self._inner = inner

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        return self._inner.read(size)

    def read1(self, size: int = -1) -> bytes:
        return self._inner.read1(size)

    def readline(self, size: int | None = -1) -> bytes:
        return self._inner.readline(size)

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def, override]
        return self._inner.readinto(buffer)
