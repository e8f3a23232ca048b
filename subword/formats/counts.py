"""Word-counts files (``.swc``): the distinct words of a corpus with their counts, and what made them.

Layout (all integers little-endian)::

    magic        8 bytes   b"\\x89SWC\\r\\n\\x1a\\n"  (PNG-style: catches text-mode and 7-bit damage)
    version      u32       1
    header_len   u32       length of the header
    header       JSON      {"pipeline": {"normalizer", "pre_tokenizer"}, "inputs": [...], "lines", "bytes", ...}
    records      ...       varint(len) word varint(count), sorted by the word's UTF-8 bytes, each once
    trailer      40 bytes  records_len u64, words u64, occurrences u64,
                           crc32(header) u32, crc32(records) u32, b"SWC-END\\n"

Words are stored as the pre-tokenizer cut them (before the byte-level character mapping), so two
files made by the same pipeline merge by adding counts. The record stream is written, read and
merged in Rust (``rust/src/counts_file.rs``); this module owns the framing and its checks, and is
the only place that knows the layout. Files are written atomically (temporary file in the target
folder, then rename), so a failed or interrupted write leaves no partial ``.swc``.

>>> import tempfile, pathlib
>>> from subword.counts import count_words
>>> path = pathlib.Path(tempfile.mkdtemp(), "c.swc")
>>> write_counts(path, count_words(["a b a\\n"], like="bpe"))
>>> sorted(read_counts(path).words())
[('a', 2), ('b', 1)]
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from subword.errors import FormatError

if TYPE_CHECKING:
    from subword.counts import WordCounts

__all__ = ["MAGIC", "VERSION", "write_counts", "read_counts", "read_header", "record_stream", "Run"]

#: A sorted record stream inside a file, to merge while writing: ``(path, offset, length, crc32)``
#: (``crc32`` None: not checked).
Run = tuple[str, int, int, "int | None"]

MAGIC = b"\x89SWC\r\n\x1a\n"
VERSION = 1
END_MAGIC = b"SWC-END\n"
_PREFIX = struct.Struct("<8sII")
_TRAILER = struct.Struct("<QQQII8s")
#: Header fields every file has (the rest is provenance and may grow).
_REQUIRED = ("pipeline", "inputs", "lines", "bytes")


def write_counts(path: str | os.PathLike[str], counts: WordCounts, *, runs: Sequence[Run] = (),
                 min_count: int = 0) -> None:
    """Write ``counts`` to ``path`` atomically.

    Args:
        path: The ``.swc`` file to create or replace.
        counts: The counts (a :class:`subword.counts.WordCounts`).
        runs: Sorted record streams merged with the words in memory as the file is written, one
            record per stream in memory at a time: runs spilled while counting (see
            :class:`subword.counts.Counter`), or the word lists of other ``.swc`` files
            (:func:`record_stream`). Each one's CRC-32 is checked when given.
        min_count: Leave out words whose total count is below this.

    Raises:
        OSError: the folder is not writable or the disk is full; no partial file is left behind.
        FormatError: a run is corrupt (bad record or checksum); no file is written.
    """
    from subword.formats.atomic import atomic_path

    target = Path(path)
    header = json.dumps(counts.header(min_count=min_count), ensure_ascii=False, sort_keys=True).encode("utf-8")

    with atomic_path(target) as tmp_path:
        tmp = str(tmp_path)
        with open(tmp, "wb") as fh:
            fh.write(_PREFIX.pack(MAGIC, VERSION, len(header)))
            fh.write(header)
        try:
            (words, occurrences, length, crc), crcs = counts._counter.append_records(
                tmp, [(str(r[0]), int(r[1]), int(r[2])) for r in runs], min_count)
        except ValueError as exc:
            raise FormatError(f"corrupt word list: {exc}") from None
        for run, got in zip(runs, crcs):
            if run[3] is not None and run[3] != got:
                raise FormatError(f"{run[0]}: corrupt word-counts data (checksum mismatch in the word list)")
        with open(tmp, "ab") as fh:
            fh.write(_TRAILER.pack(length, words, occurrences, zlib.crc32(header), crc, END_MAGIC))


def _frame(path: Path) -> tuple[dict[str, Any], int, tuple[int, int, int, int]]:
    """Checks the framing; returns (header, offset of the records, (length, words, occurrences, crc))."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            prefix = fh.read(_PREFIX.size)
            if len(prefix) < _PREFIX.size or not prefix.startswith(MAGIC[:4]):
                if prefix[:1] == b"\x89" and MAGIC[1:4].startswith(prefix[1:4]):
                    raise FormatError(f"{path}: truncated word-counts file ({size} bytes)")
                raise FormatError(f"{path}: not a subword word-counts file (no .swc magic; "
                                  "make one with `subword count`)")
            magic, version, header_len = _PREFIX.unpack(prefix)
            if magic != MAGIC:
                raise FormatError(f"{path}: damaged word-counts magic (file changed by a text-mode transfer?)")
            if version != VERSION:
                raise FormatError(f"{path}: word-counts file version {version}; this subword reads version "
                                  f"{VERSION} (count the corpus again with this version)")
            if size < _PREFIX.size + header_len + _TRAILER.size:
                raise FormatError(f"{path}: truncated word-counts file ({size} bytes)")
            header_bytes = fh.read(header_len)
            fh.seek(size - _TRAILER.size)
            length, words, occurrences, header_crc, body_crc, end = _TRAILER.unpack(fh.read(_TRAILER.size))
    except OSError as exc:
        raise OSError(exc.errno, f"cannot read word counts: {exc.strerror}", str(path)) from None
    if end != END_MAGIC:
        raise FormatError(f"{path}: truncated word-counts file (no end marker; {size} bytes)")
    offset = _PREFIX.size + header_len
    if offset + length + _TRAILER.size != size:
        raise FormatError(f"{path}: corrupt word-counts file (the trailer says {length} bytes of words, "
                          f"the file holds {size - offset - _TRAILER.size})")
    if zlib.crc32(header_bytes) != header_crc:
        raise FormatError(f"{path}: corrupt word-counts file (header checksum mismatch)")
    try:
        header = json.loads(header_bytes.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(f"{path}: corrupt word-counts header: {exc}") from None
    missing = [k for k in _REQUIRED if not isinstance(header, dict) or k not in header]
    if missing:
        raise FormatError(f"{path}: word-counts header lacks {', '.join(missing)}")
    return header, offset, (length, words, occurrences, body_crc)


def record_stream(path: str | os.PathLike[str]) -> tuple[dict[str, Any], Run]:
    """The header of a counts file and where its word list is, to merge it without loading it.

    Raises:
        FormatError: not a counts file, another version, truncated, or a bad header checksum.
    """
    header, offset, (length, _, _, crc) = _frame(Path(path))
    return header, (str(path), offset, length, crc)


def read_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The header of a counts file (pipeline and provenance), with ``words`` and ``occurrences`` added.

    Raises:
        FormatError: not a counts file, another version, truncated, or a bad header checksum.
    """
    header, _, (_, words, occurrences, _) = _frame(Path(path))
    return {**header, "words": words, "occurrences": occurrences}


def read_counts(path: str | os.PathLike[str], *, min_count: int = 0, threads: int | None = None) -> WordCounts:
    """Read a counts file; words counted fewer than ``min_count`` times are skipped while loading.

    Raises:
        FormatError: not a counts file, another version, truncated, or corrupt (checksum, bad record).
    """
    from subword.counts import WordCounts

    p = Path(path)
    header, offset, (length, words, occurrences, body_crc) = _frame(p)
    counts = WordCounts._from_header(header, threads=threads)
    try:
        crc = counts._counter.read_records(str(p), offset, length, min_count)
    except ValueError as exc:
        if _file_crc(p, offset, length) != body_crc:
            raise FormatError(f"{p}: corrupt word-counts file (checksum mismatch in the word list)") from None
        raise FormatError(f"corrupt word-counts file {exc}") from None
    if crc != body_crc:
        raise FormatError(f"{p}: corrupt word-counts file (checksum mismatch in the word list)")
    if min_count <= 1 and len(counts) != words:
        raise FormatError(f"{p}: corrupt word-counts file ({len(counts)} words, the trailer says {words})")
    return counts


def _file_crc(path: Path, offset: int, length: int) -> int:
    crc = 0
    with open(path, "rb") as fh:
        fh.seek(offset)
        while length > 0:
            chunk = fh.read(min(length, 1 << 20))
            if not chunk:
                break
            crc = zlib.crc32(chunk, crc)
            length -= len(chunk)
    return crc
