"""The one pass over the input: every tokenizer encodes each chunk of lines, and the Rust core reduces it.

Lines are taken in chunks of about ``CHUNK_CHARS`` characters, each ending on a bootstrap block
boundary. Per chunk, ``subword._core.CompareCollector`` (GIL released, all cores) segments the lines
into UAX #29 word segments, encodes them with every tokenizer and reduces the encodings to per-line
counts and per-block type counts (``rust/src/compare/lines.rs``). Only the segment types new in a chunk
come back to Python, to be classified by :func:`~subword.compare.words.classify` and
:func:`~subword.compare.words.is_word` (the core classifies the ASCII ones by the same rule), so the
script and word tables follow ``words.py``'s definitions. Memory holds per-line counts and the sparse
per-block type counts, never the chunk's ``Encoding`` objects.

What is kept per line: characters, UTF-8 bytes, words, whitespace-split words, words per script; per
tokenizer: tokens, continued words, characters under UNK tokens, byte tokens, lossless round trip,
tokens of the words of each script, internal boundaries; per pair of tokenizers: shared boundaries.
Per block of lines and tokenizer: how often each token id occurs. Per segment type: its count, its
first line, and the tokens each tokenizer puts in it. The readable reference of all of it is in the
tests (``tests/_compare_reference.py``).

>>> from subword import Tokenizer, WordPiece
>>> from subword.pre_tokenizers import Whitespace
>>> tok = Tokenizer(WordPiece({"[UNK]": 0, "ab": 1, "a": 2, "##b": 3}), pre_tokenizer=Whitespace())
>>> c = collect([tok, tok], ["a", "b"], ["ab ab", "a"], block_lines=1)
>>> c.tokenizers[0].tokens.tolist(), c.words.tolist(), c.types
([2, 1], [2, 1], ['ab', ' ', '\\n', 'a'])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from subword.compare.core import NotNativeError, native_core
from subword.compare.vocab import VocabTable
from subword.compare.words import SCRIPTS, classify, is_word

__all__ = ["Collected", "TokenizerData", "collect", "chunk_bounds", "warm_up", "native_core", "CHUNK_CHARS",
           "SCRIPT_LABELS", "NotNativeError"]

#: Characters per chunk: big enough for the core to keep every thread busy, small enough that a chunk's
#: encodings stay a few MB.
CHUNK_CHARS = 1 << 20
#: How many lossless failures keep their text as examples.
LOSSLESS_EXAMPLES = 5
#: The script labels, in the order of the indices the core is given (``classify`` returns one of them).
SCRIPT_LABELS = (*SCRIPTS, "Other", "Common")
_SCRIPT_INDEX = {name: i for i, name in enumerate(SCRIPT_LABELS)}


@dataclass
class BlockTypes:
    """How often each token id occurs in each block of lines: a CSR matrix's three arrays (blocks x ids)."""

    indptr: np.ndarray
    ids: np.ndarray
    counts: np.ndarray

    def matrix(self, size: int) -> Any:
        """The counts as a scipy sparse matrix, ``(blocks, size)``."""
        from scipy import sparse

        return sparse.csr_matrix((self.counts.astype(np.float64), self.ids, self.indptr),
                                 shape=(len(self.indptr) - 1, size))

    def id_counts(self, size: int) -> np.ndarray:
        """How often each id occurs in all lines (``size`` ids at least)."""
        return np.bincount(self.ids, weights=self.counts, minlength=size).astype(np.int64)


@dataclass
class TokenizerData:
    """What one tokenizer left after the pass (per-line arrays of ``n`` values unless said otherwise)."""

    name: str
    table: VocabTable
    tokens: np.ndarray
    continued: np.ndarray
    unk_chars: np.ndarray
    byte_tokens: np.ndarray
    lossless: np.ndarray
    boundaries: np.ndarray
    script_tokens: dict[str, np.ndarray]
    #: Per segment type: the tokens attributed to it.
    type_tokens: np.ndarray
    block_types: BlockTypes
    chunk_seconds: list[float] = field(default_factory=list)
    lossless_examples: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Collected:
    """Everything the metrics need, for ``n`` lines and the tokenizers in order."""

    n: int
    #: Lines per bootstrap block (the type counts are per block of this many lines).
    block_lines: int
    chars: np.ndarray
    bytes: np.ndarray
    words: np.ndarray
    ws_words: np.ndarray
    script_words: dict[str, np.ndarray]
    types: list[str]
    type_count: np.ndarray
    type_first_line: np.ndarray
    tokenizers: list[TokenizerData]
    shared_boundaries: dict[tuple[int, int], np.ndarray]
    chunk_bytes: list[int]


def warm_up(tokenizers: Sequence[Any], line: str, names: Sequence[str] | None = None) -> None:
    """Builds each tokenizer's native pipeline now (part of loading it), so encode timings are of encoding.

    Raises:
        NotNativeError: a tokenizer the core cannot run (named by ``names``).
    """
    for i, tok in enumerate(tokenizers):
        native_core(tok, names[i] if names else f"tokenizer {i + 1}")
        tok.encode_batch([line], add_special_tokens=False)


def chunk_bounds(chars: np.ndarray, block_lines: int = 1) -> list[tuple[int, int]]:
    """``(first, last)`` line ranges of about :data:`CHUNK_CHARS` characters (line feeds counted), each
    ending on a multiple of ``block_lines`` lines (or the last line), at least one block each.

    >>> chunk_bounds(np.array([3, 4, 5])), chunk_bounds(np.full(10, CHUNK_CHARS // 4), block_lines=3)
    ([(0, 3)], [(0, 6), (6, 10)])
    """
    ends = np.cumsum(np.asarray(chars, dtype=np.int64) + 1)
    step = max(1, block_lines)
    bounds = []
    first, n = 0, len(ends)
    while first < n:
        base = ends[first - 1] if first else 0
        last = int(np.searchsorted(ends, base + CHUNK_CHARS, side="left")) + 1  # the line that fills the chunk
        last = min(first + -(-(last - first) // step) * step, n)  # rounded up to whole blocks
        bounds.append((first, last))
        first = last
    return bounds


def _i64(buf: bytes) -> np.ndarray:
    return np.frombuffer(buf, dtype="<i8")


def _first_difference(a: str, b: str) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def _lossless_example(tok: Any, index: int, line: str) -> dict[str, Any]:
    ids = tok.encode(line, add_special_tokens=False).ids
    decoded = tok.decode(ids, skip_special_tokens=False)
    return {"line_index": index, "original": line, "decoded": decoded,
            "first_difference": _first_difference(line, decoded)}


def collect(tokenizers: Sequence[Any], names: Sequence[str], lines: Sequence[str], block_lines: int) -> Collected:
    """Encodes ``lines`` with every tokenizer, chunk by chunk, and reduces them in the Rust core.

    Args:
        tokenizers: :class:`subword.Tokenizer` objects (padding and truncation already off).
        names: Their names, in the same order.
        lines: The lines, without line endings.
        block_lines: Lines per bootstrap block (the type counts are kept per block).

    Returns:
        The per-line counts, the type tables and the per-block type counts (see :class:`Collected`).

    Raises:
        NotNativeError: a tokenizer the core cannot run.
    """
    from subword import _core

    lines = list(lines)
    n, k = len(lines), len(tokenizers)
    warm_up(tokenizers, lines[0] if lines else "", names)  # the benchmark times this as loading
    cores = [native_core(t, name) for t, name in zip(tokenizers, names)]
    tables = [VocabTable.of(t) for t in tokenizers]
    collector = _core.CompareCollector(cores, [t.unk for t in tables],
                                       [np.asarray(t.byte_token, dtype=np.uint8).tobytes() for t in tables],
                                       len(SCRIPT_LABELS))

    def zeros() -> np.ndarray:
        return np.zeros(n, np.int64)

    chars, nbytes, words, ws_words = zeros(), zeros(), zeros(), zeros()
    script_words: dict[str, np.ndarray] = {}
    types: list[str] = []
    type_count = np.zeros(0, np.int64)
    type_first: list[int] = []
    per_tok: list[dict[str, Any]] = [
        {"tokens": zeros(), "continued": zeros(), "unk_chars": zeros(), "byte_tokens": zeros(),
         "lossless": np.zeros(n, bool), "boundaries": zeros(), "script_tokens": {}, "type_tokens": np.zeros(0, np.int64),
         "ends": [], "ids": [], "counts": [], "seconds": [], "examples": []} for _ in range(k)]
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    shared = {p: zeros() for p in pairs}
    chunk_bytes: list[int] = []

    for first, last in chunk_bounds(np.fromiter(map(len, lines), dtype=np.int64, count=n), block_lines):
        chunk = lines[first:last]
        new, first_lines = collector.segment(chunk, last == n)
        # The core classifies the ASCII types (words.py's own ASCII rule); the rest go through words.py.
        word, script, other = collector.ascii_classes(_SCRIPT_INDEX["Latin"], _SCRIPT_INDEX["Common"])
        if other:
            word, script = bytearray(word), bytearray(script)
            for j in other:
                word[j] = is_word(new[j])
                script[j] = _SCRIPT_INDEX[classify(new[j])[0]]
        collector.classify(bytes(word), bytes(script))
        types.extend(new)
        type_first.extend(first + j for j in first_lines)
        out = collector.reduce(chunk, block_lines)
        chars[first:last] = _i64(out["chars"])
        nbytes[first:last] = _i64(out["bytes"])
        chunk_bytes.append(int(nbytes[first:last].sum()))
        words[first:last] = _i64(out["words"])
        ws_words[first:last] = _i64(out["ws_words"])
        for si, row in out["script_words"].items():  # the scripts that occur, in order
            script_words.setdefault(SCRIPT_LABELS[si], zeros())[first:last] += _i64(row)
        counts = _i64(out["type_count"])
        type_count = np.concatenate([type_count, np.zeros(len(counts) - len(type_count), np.int64)]) + counts
        for ti, (d, t) in enumerate(zip(per_tok, out["tokenizers"])):
            d["seconds"].append(float(t["seconds"]))
            for name in ("tokens", "continued", "unk_chars", "byte_tokens", "boundaries"):
                d[name][first:last] = _i64(t[name])
            ok = np.frombuffer(t["lossless"], dtype=np.uint8).astype(bool)
            d["lossless"][first:last] = ok
            for si, row in t["script_tokens"].items():
                d["script_tokens"].setdefault(SCRIPT_LABELS[si], zeros())[first:last] += _i64(row)
            tt = _i64(t["type_tokens"])  # the types known after this chunk
            d["type_tokens"] = np.concatenate([d["type_tokens"], np.zeros(len(tt) - len(d["type_tokens"]), np.int64)]) + tt
            d["ends"].append(np.frombuffer(t["block_ends"], dtype="<u8"))
            d["ids"].append(np.frombuffer(t["block_ids"], dtype="<u4"))
            d["counts"].append(np.frombuffer(t["block_counts"], dtype="<u4"))
            for j in np.flatnonzero(~ok)[: LOSSLESS_EXAMPLES - len(d["examples"])]:
                d["examples"].append(_lossless_example(tokenizers[ti], first + int(j), chunk[j]))
        for p, buf in zip(pairs, out["shared"]):
            shared[p][first:last] = _i64(buf)

    data = []
    for name, table, d in zip(names, tables, per_tok):
        offsets = np.cumsum([0] + [len(x) for x in d["ids"][:-1]], dtype=np.int64)
        indptr = np.concatenate([[0]] + [e.astype(np.int64) + o for e, o in zip(d["ends"], offsets)])
        block_types = BlockTypes(indptr, np.concatenate(d["ids"]) if d["ids"] else np.zeros(0, np.uint32),
                                 np.concatenate(d["counts"]) if d["counts"] else np.zeros(0, np.uint32))
        data.append(TokenizerData(name, table, d["tokens"], d["continued"], d["unk_chars"], d["byte_tokens"],
                                  d["lossless"], d["boundaries"], d["script_tokens"], d["type_tokens"], block_types,
                                  d["seconds"], d["examples"]))
    return Collected(n, block_lines, chars, nbytes, words, ws_words, script_words, types, type_count,
                     np.array(type_first, dtype=np.int64), data, shared, chunk_bytes)
