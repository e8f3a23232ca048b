"""Read text lines lazily from many sources, with the checks a trainer needs.

Lines are yielded *with* their line endings (``\\n`` or ``\\r\\n``), exactly as HF tokenizers'
``train_from_files`` reads them, so a tokenizer trained from our reader equals one HF trains from
the same files. Bytes are split on ``\\n`` only (not on the other Unicode line breaks that
``str.splitlines`` knows), again as HF does; a UTF-8 byte-order mark is kept as text for the same
reason.

Every problem is a :class:`~corpora.CorpusError` naming the file and line: bytes that are not
UTF-8 (unless ``errors="replace"``, which substitutes U+FFFD), NUL bytes (a binary file),
corrupt compressed data, a JSON-lines record without the requested text field.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

from corpora.compression import DecompressionErrors, open_binary
from corpora.errors import CorpusError
from corpora.sources import Source, expand_sources

__all__ = ["CorpusReader", "read_lines"]

Errors = Literal["strict", "replace"]

# How often (in bytes read) the optional progress callback is called: often enough for a smooth
# bar, rarely enough to cost nothing next to the reading itself.
_PROGRESS_EVERY = 1 << 20


class CorpusReader:
    """An iterable over the lines of some sources that counts what it read.

    Iterating yields ``str`` lines with their endings (or, with ``jsonl_field``, one text per
    JSON record). The counters ``lines_read``, ``bytes_read`` and ``sources_read`` are updated as
    iteration proceeds, so a caller can tell an empty input from a short one afterwards, and
    ``truncated`` says whether ``max_bytes`` or ``max_lines`` stopped the reading early.

    Args:
        sources: Files, globs, directories, or ``-`` for stdin (see :func:`corpora.expand_sources`).
        jsonl_field: Read each line as a JSON object and yield this field (dots reach into
            nested objects: ``"meta.text"``). Blank lines are skipped.
        errors: ``"strict"`` raises on bytes that are not UTF-8; ``"replace"`` substitutes U+FFFD.
        max_bytes: Stop before the first line that would take the total of raw (decompressed)
            bytes read past this cap. Lines are never cut.
        max_lines: Stop after this many lines (records, with ``jsonl_field``).
        progress: Called as ``progress(bytes_read, total_bytes_or_None)`` about every MiB.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp(), "a.txt"); _ = p.write_bytes(b"one\\r\\ntwo\\nthree")
    >>> reader = CorpusReader([p])
    >>> list(reader)
    ['one\\r\\n', 'two\\n', 'three']
    >>> reader.lines_read, reader.bytes_read
    (3, 14)
    >>> list(CorpusReader([p], max_lines=1))
    ['one\\r\\n']
    """

    def __init__(
        self,
        sources: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
        *,
        jsonl_field: str | None = None,
        errors: Errors = "strict",
        max_bytes: int | None = None,
        max_lines: int | None = None,
        progress: Callable[[int, int | None], None] | None = None,
    ) -> None:
        if errors not in ("strict", "replace"):
            raise ValueError(f"errors must be 'strict' or 'replace', not {errors!r}")
        for label, value in (("max_bytes", max_bytes), ("max_lines", max_lines)):
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ValueError(f"{label} must be a non-negative integer or None, not {value!r}")
        if jsonl_field is not None and not jsonl_field.strip("."):
            raise ValueError("jsonl_field must name a field, e.g. 'text' or 'meta.text'")
        self.sources: list[Source] = expand_sources(sources)
        self.jsonl_field = jsonl_field
        self.errors: Errors = errors
        self.max_bytes = max_bytes
        self.max_lines = max_lines
        self.progress = progress
        self.lines_read = 0
        self.bytes_read = 0
        self.sources_read = 0
        self.truncated = False
        self._started = False

    def total_bytes(self) -> int | None:
        """The summed on-disk size of the sources, or ``None`` if stdin is among them.

        Compressed files count their compressed size, so this is a hint for progress bars only.
        """
        total = 0
        for source in self.sources:
            size = source.size()
            if size is None:
                return None
            total += size
        return total

    def __iter__(self) -> Iterator[str]:
        if self._started:
            # Stdin cannot be rewound, and counters would mix two passes.
            raise RuntimeError("a CorpusReader can be iterated only once; make a new one")
        self._started = True
        return self._lines()

    # ==== internals ====

    def _lines(self) -> Iterator[str]:
        total = self.total_bytes() if self.progress is not None else None
        next_report = _PROGRESS_EVERY
        field_path = self.jsonl_field.split(".") if self.jsonl_field else None
        for source in self.sources:
            self.sources_read += 1
            for text, nbytes in self._source_lines(source, field_path):
                if self.max_lines is not None and self.lines_read >= self.max_lines:
                    self.truncated = True
                    return
                if self.max_bytes is not None and self.bytes_read + nbytes > self.max_bytes:
                    self.truncated = True
                    return
                self.lines_read += 1
                self.bytes_read += nbytes
                if self.progress is not None and self.bytes_read >= next_report:
                    self.progress(self.bytes_read, total)
                    next_report = self.bytes_read + _PROGRESS_EVERY
                yield text
        if self.progress is not None:
            self.progress(self.bytes_read, total)

    def _source_lines(self, source: Source, field_path: list[str] | None) -> Iterator[tuple[str, int]]:
        """Yields ``(text, raw byte count)`` for each line (or JSON record) of one source."""
        try:
            stream = open_binary(source.path, source.name)
        except OSError as exc:
            raise CorpusError(f"cannot open: {exc.strerror or exc}", source=source.name) from exc
        lineno = 0
        with stream:
            try:
                for raw in stream:
                    lineno += 1
                    text = self._decode(raw, source, lineno, field_path)
                    if text is not None:
                        yield text, len(raw)
            except CorpusError:
                raise
            except DecompressionErrors as exc:
                raise CorpusError(
                    f"corrupt or truncated compressed data after line {lineno}: {exc}", source=source.name
                ) from exc

    def _decode(self, raw: bytes, source: Source, lineno: int, field_path: list[str] | None) -> str | None:
        if b"\x00" in raw:
            raise CorpusError(
                "NUL byte found: this looks like a binary file (or UTF-16 text), not UTF-8 text",
                source=source.name,
                line=lineno,
            )
        try:
            text = raw.decode("utf-8", self.errors)
        except UnicodeDecodeError as exc:
            bad = raw[exc.start : exc.start + 1].hex()
            raise CorpusError(
                f"invalid UTF-8 (byte 0x{bad} at byte {exc.start + 1} of the line); "
                "convert the file to UTF-8, or pass errors='replace' (CLI: --encoding-errors replace) "
                "to substitute U+FFFD",
                source=source.name,
                line=lineno,
            ) from None
        if field_path is None:
            return text
        return _json_field(text, field_path, source, lineno)


def _json_field(text: str, field_path: list[str], source: Source, lineno: int) -> str | None:
    if not text.strip():
        # Blank lines are common at the end of JSON-lines files; they hold no record.
        return None
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorpusError(f"not valid JSON ({exc.msg} at column {exc.colno})", source=source.name, line=lineno) from None
    for i, key in enumerate(field_path):
        if not isinstance(value, dict) or key not in value:
            where = ".".join(field_path[: i + 1])
            raise CorpusError(f"JSON record has no field {where!r}", source=source.name, line=lineno)
        value = value[key]
    if not isinstance(value, str):
        raise CorpusError(
            f"JSON field {'.'.join(field_path)!r} is {type(value).__name__}, not a string",
            source=source.name,
            line=lineno,
        )
    return value


def read_lines(
    sources: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    jsonl_field: str | None = None,
    errors: Errors = "strict",
    max_bytes: int | None = None,
    max_lines: int | None = None,
) -> Iterator[str]:
    """Yields the lines of files, globs, directories or stdin (``-``), lazily, with line endings.

    A thin wrapper around :class:`CorpusReader` for when the counters are not needed.

    Args:
        sources: What to read, in order (a single path is one source).
        jsonl_field: Yield this field of each JSON-lines record instead of raw lines.
        errors: ``"strict"`` (raise :class:`CorpusError` on invalid UTF-8) or ``"replace"``.
        max_bytes: Cap on raw bytes read; reading stops before the line that would exceed it.
        max_lines: Cap on lines (records) read.

    Returns:
        An iterator of lines. Sources are expanded (and checked to exist) at once; files are
        opened only as iteration reaches them.

    Raises:
        CorpusError: Missing files, binary data, invalid UTF-8, bad JSON (with file and line).

    >>> import tempfile, pathlib, gzip
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "a.txt").write_text("héllo\\nworld\\n", encoding="utf-8")
    >>> _ = (d / "b.jsonl.gz").write_bytes(gzip.compress(b'{"text": "x y"}\\n'))
    >>> list(read_lines([d / "a.txt"]))
    ['héllo\\n', 'world\\n']
    >>> list(read_lines([d / "b.jsonl.gz"], jsonl_field="text"))
    ['x y']
    """
    return iter(
        CorpusReader(sources, jsonl_field=jsonl_field, errors=errors, max_bytes=max_bytes, max_lines=max_lines)
    )
