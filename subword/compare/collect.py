"""The one pass over the input: encode each chunk of lines with every tokenizer, reduce at once.

Lines are taken in chunks (``CHUNK_CHARS`` characters); each chunk is encoded by every tokenizer
with ``encode_batch`` (parallel in the Rust core, GIL released) and reduced to per-line counts with
numpy before the next chunk, so memory holds per-line counts and the token ids, never all the
:class:`~subword.Encoding` objects. Positions inside a chunk are character offsets into the chunk's
lines joined by ``\\n`` (a line's own offsets plus its start).

What is kept per line (the bootstrap resamples lines, so every ratio metric is a ratio of sums of
these): characters, UTF-8 bytes, words, whitespace-split words, words per script; per tokenizer:
tokens, continued words, characters under UNK tokens, byte tokens, lossless round trip, tokens of
the words of each script, internal boundaries; per pair of tokenizers: shared boundaries.
"""

from __future__ import annotations

import itertools
import time
from concurrent.futures import Future, ThreadPoolExecutor
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from subword.compare.vocab import VocabTable
from subword.compare.words import WHITESPACE_CODEPOINTS, classify, is_word, segments

__all__ = ["Collected", "TokenizerData", "collect", "collect_reference", "chunk_bounds", "warm_up", "CHUNK_CHARS",
           "boundary_keys"]

#: Characters per chunk: big enough for encode_batch to keep every core busy, small enough that the
#: chunk's Encoding objects stay a few MB.
CHUNK_CHARS = 1 << 20
_WS = np.array(WHITESPACE_CODEPOINTS, dtype=np.uint32)
#: How many lossless failures keep their text as examples.
LOSSLESS_EXAMPLES = 5


@dataclass
class TokenizerData:
    """What one tokenizer left after the pass."""

    name: str
    table: VocabTable
    tokens: np.ndarray
    continued: np.ndarray
    unk_chars: np.ndarray
    byte_tokens: np.ndarray
    lossless: np.ndarray
    boundaries: np.ndarray
    script_tokens: dict[str, np.ndarray]
    type_tokens: np.ndarray
    ids: np.ndarray
    id_line: np.ndarray
    chunk_seconds: list[float] = field(default_factory=list)
    lossless_examples: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def empty(cls, name: str, table: VocabTable, n: int) -> TokenizerData:
        """Zeroed per-line arrays for ``n`` lines, filled chunk by chunk (both collect paths start here)."""
        def zeros() -> np.ndarray:
            return np.zeros(n, np.int64)

        return cls(name, table, zeros(), zeros(), zeros(), zeros(), np.zeros(n, bool), zeros(), {},
                   np.zeros(0, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int32))


@dataclass
class Collected:
    """Everything the metrics need, for ``n`` lines and the tokenizers in order."""

    n: int
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
    samples: dict[int, list[Any]]


def boundary_keys(starts: np.ndarray, ends: np.ndarray, ns_before: np.ndarray,
                  line_start: np.ndarray, line_end: np.ndarray, tok_line: np.ndarray) -> np.ndarray:
    """The internal token boundaries, as sorted unique keys that ignore whitespace.

    A boundary at offset ``p`` is keyed by the number of non-whitespace characters before ``p``
    (``ns_before[p]``): a tokenizer that cuts before a space and one that cuts after it make the
    same boundary. Boundaries with no non-whitespace character before or after them in their line
    (the line's edges) are not internal and are dropped.

    >>> ns = np.array([0, 1, 2, 2, 3, 4])            # "ab cd": a b ' ' c d
    >>> boundary_keys(np.array([0, 2, 3]), np.array([2, 3, 5]), ns, np.array([0]), np.array([5]),
    ...               np.array([0, 0, 0])).tolist()
    [2]
    """
    lo, hi = ns_before[line_start[tok_line]], ns_before[line_end[tok_line]]
    ks, ke = ns_before[starts], ns_before[ends]
    ks, ke = ks[(ks > lo) & (ks < hi)], ke[(ke > lo) & (ke < hi)]
    # Starts and ends are each (nearly) sorted already: a stable sort merges such runs in linear time.
    keys = np.sort(np.concatenate([ks, ke]), kind="stable")
    if keys.size:
        keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])]
    return keys


def _shared(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The values in both of two sorted unique arrays."""
    if a.size == 0 or b.size == 0:
        return a[:0]
    at = np.minimum(np.searchsorted(b, a), b.size - 1)
    return a[b[at] == a]


def _flat(encodings: Sequence[Any]) -> tuple[list[list[int]], np.ndarray, np.ndarray, np.ndarray]:
    """``(id lists, tokens per line, all ids, all offsets)``: the id lists are converted once and reused."""
    id_lists = [e.ids for e in encodings]
    counts = np.fromiter(map(len, id_lists), dtype=np.int64, count=len(id_lists))
    total = int(counts.sum())
    if encodings and hasattr(encodings[0], "ids_offsets_u32"):
        # The core hands ids and character offsets over as bytes: no Python object per token.
        parts = [e.ids_offsets_u32() for e in encodings]
        ids = np.frombuffer(b"".join(p[0] for p in parts), dtype="<u4").astype(np.int64)
        offsets = np.frombuffer(b"".join(p[1] for p in parts), dtype="<u4").astype(np.int64).reshape(-1, 2)
        return id_lists, counts, ids, offsets
    ids = np.fromiter(itertools.chain.from_iterable(id_lists), dtype=np.int64, count=total)
    offsets = np.fromiter(
        itertools.chain.from_iterable(itertools.chain.from_iterable(e.offsets for e in encodings)),
        dtype=np.int64, count=2 * total,
    ).reshape(-1, 2)
    return id_lists, counts, ids, offsets


def warm_up(tokenizers: Sequence[Any], line: str) -> None:
    """Builds each tokenizer's native pipeline now (part of loading it), so encode timings are of encoding."""
    for tok in tokenizers:
        tok.encode_batch([line], add_special_tokens=False)


def _timed_encode(tok: Any, chunk: list[str]) -> tuple[list[Any], float]:
    t0 = time.perf_counter()
    encodings = tok.encode_batch(chunk, add_special_tokens=False)
    return encodings, time.perf_counter() - t0


def _first_difference(a: str, b: str) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def chunk_bounds(chars: np.ndarray) -> list[tuple[int, int]]:
    """``(first, last)`` line ranges of about :data:`CHUNK_CHARS` characters (line feeds counted), at least one line each.

    >>> chunk_bounds(np.array([3, 4, 5]))
    [(0, 3)]
    """
    # A chunk ends with the line that brings its size (line feeds counted) to CHUNK_CHARS or more:
    # found by a search in the running sizes rather than a Python loop over the lines.
    ends = np.cumsum(np.asarray(chars, dtype=np.int64) + 1)
    bounds = []
    first, n = 0, len(ends)
    while first < n:
        base = ends[first - 1] if first else 0
        last = min(int(np.searchsorted(ends, base + CHUNK_CHARS, side="left")) + 1, n)
        bounds.append((first, last))
        first = last
    return bounds


def collect(tokenizers: Sequence[Any], names: Sequence[str], lines: Sequence[str],
            sample_indices: Sequence[int] = (), *, native: bool | None = None) -> Collected:
    """Encodes ``lines`` with every tokenizer, chunk by chunk, and reduces the encodings.

    The work is done by the Rust core (:func:`subword.compare.native.collect_native`) when every
    tokenizer runs on it, else by the numpy reference (:func:`collect_reference`); both give the
    same result. ``native`` forces one or the other (``True`` raises where the core cannot).

    >>> from subword import Tokenizer, WordPiece
    >>> from subword.pre_tokenizers import Whitespace
    >>> tok = Tokenizer(WordPiece({"[UNK]": 0, "ab": 1}), pre_tokenizer=Whitespace())
    >>> a, b = (collect([tok, tok], ["x", "y"], ["ab ab", "cd"], native=f) for f in (False, True))
    >>> a.tokenizers[0].unk_chars.tolist() == b.tokenizers[0].unk_chars.tolist() == [0, 2]
    True
    """
    from subword.compare import native as _native

    if lines:
        # Builds the native pipelines first (part of loading; the benchmark times warm_up as such).
        warm_up(tokenizers, lines[0])
    if native is None:
        native = _native.available(tokenizers)
    if native:
        return _native.collect_native(tokenizers, names, lines, sample_indices)
    return collect_reference(tokenizers, names, lines, sample_indices)


def collect_reference(tokenizers: Sequence[Any], names: Sequence[str], lines: Sequence[str],
                      sample_indices: Sequence[int] = ()) -> Collected:
    """The numpy reference of :func:`collect`: encodes ``lines`` chunk by chunk and reduces the encodings.

    Args:
        tokenizers: :class:`subword.Tokenizer` objects (padding and truncation already off).
        names: Their names, in the same order.
        lines: The lines, without line endings.
        sample_indices: Lines whose encodings are kept (for the sample view).

    Returns:
        The per-line counts, type counts and token ids (see :class:`Collected`).
    """
    n = len(lines)
    k = len(tokenizers)
    tables = [VocabTable.of(t) for t in tokenizers]
    chars = np.fromiter((len(s) for s in lines), dtype=np.int64, count=n)
    nbytes = np.fromiter((len(s.encode("utf-8", "surrogatepass")) for s in lines), dtype=np.int64, count=n)
    words = np.zeros(n, dtype=np.int64)
    ws_words = np.zeros(n, dtype=np.int64)
    script_words: dict[str, np.ndarray] = {}
    type_index: dict[str, int] = {}
    types: list[str] = []
    type_script: list[str] = []
    type_word: list[bool] = []
    type_count = np.zeros(0, dtype=np.int64)
    type_first = np.zeros(0, dtype=np.int64)
    data = [TokenizerData.empty(name, table, n) for name, table in zip(names, tables)]
    ids_parts: list[list[np.ndarray]] = [[] for _ in range(k)]
    line_parts: list[list[np.ndarray]] = [[] for _ in range(k)]
    shared = {(a, b): np.zeros(n, np.int64) for a in range(k) for b in range(a + 1, k)}
    chunk_bytes: list[int] = []
    wanted = set(sample_indices)
    samples: dict[int, list[Any]] = {}

    warm_up(tokenizers, lines[0])

    bounds = chunk_bounds(chars)

    # The Rust calls (encode_batch, decode_batch; both release the GIL and run on all cores) go to one
    # worker thread, in order, one chunk ahead of the numpy reductions done here: while this thread
    # reduces chunk i, the core encodes chunk i + 1. One worker keeps the encode timings uncontended
    # by other Rust calls. The word segmentation of the next chunk runs in a second thread.
    rust = ThreadPoolExecutor(max_workers=1, thread_name_prefix="compare-rust")
    seg_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="compare-segments")

    def submit(ci: int) -> tuple[list[str], Future, list[Future]]:
        lo, hi = bounds[ci]
        chunk = list(lines[lo:hi])
        joined = "\n".join(chunk)
        return chunk, seg_pool.submit(segments, joined), [rust.submit(_timed_encode, tok, chunk) for tok in tokenizers]

    try:
        pending = submit(0) if bounds else None
        for ci, (first, last) in enumerate(bounds):
            chunk, seg_future, enc_futures = pending  # type: ignore[misc]
            pending = submit(ci + 1) if ci + 1 < len(bounds) else None
            m = len(chunk)
            chunk_bytes.append(int(nbytes[first:last].sum()))
            line_start = np.zeros(m, dtype=np.int64)
            if m > 1:
                np.cumsum(chars[first:last - 1] + 1, out=line_start[1:])
            line_end = line_start + chars[first:last]
            joined = "\n".join(chunk)

            # ---- segments (shared by every tokenizer) ----
            segs = seg_future.result()
            seg_len = np.fromiter(map(len, segs), dtype=np.int64, count=len(segs))
            seg_start = np.cumsum(seg_len) - seg_len
            known = len(types)
            seg_type = np.fromiter([type_index.setdefault(s, len(type_index)) for s in segs], dtype=np.int64,
                                   count=len(segs))
            if len(type_index) > known:  # dicts keep insertion order: the new types are the last ones
                for s in itertools.islice(type_index, known, None):
                    types.append(s)
                    type_script.append(classify(s)[0])
                    type_word.append(is_word(s))
            if len(types) > len(type_count):
                grow = len(types) - len(type_count)
                type_count = np.concatenate([type_count, np.zeros(grow, np.int64)])
                type_first = np.concatenate([type_first, np.full(grow, -1, np.int64)])
                for d in data:
                    d.type_tokens = np.concatenate([d.type_tokens, np.zeros(grow, np.int64)])
            seg_line = np.searchsorted(line_start, seg_start, side="right") - 1
            type_count += np.bincount(seg_type, minlength=len(types))
            unseen = type_first[seg_type] < 0
            # The first occurrence of each new type: reversed assignment keeps the earliest line.
            type_first[seg_type[unseen][::-1]] = (seg_line[unseen] + first)[::-1]
            word_mask = np.array(type_word, dtype=bool)[seg_type]
            words[first:last] += np.bincount(seg_line[word_mask], minlength=m)
            script_names = np.array(type_script, dtype=object)[seg_type[word_mask]] if word_mask.any() else []
            word_lines = seg_line[word_mask]
            for script in set(script_names):
                sel = script_names == script
                arr = script_words.setdefault(script, np.zeros(n, np.int64))
                arr[first:last] += np.bincount(word_lines[sel], minlength=m)

            # ---- whitespace (the whitespace-split words, and boundary keys that ignore it) ----
            cp = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
            space = np.isin(cp, _WS)
            ns_before = np.zeros(len(cp) + 1, dtype=np.int64)
            np.cumsum(~space, out=ns_before[1:])
            run_start = np.flatnonzero(~space & np.concatenate([[True], space[:-1]]))
            ws_words[first:last] += np.bincount(np.searchsorted(line_start, run_start, side="right") - 1, minlength=m)

            # ---- each tokenizer ----
            keys_of: list[np.ndarray] = []
            decodes: list[Future] = []
            for ti, (tok, d) in enumerate(zip(tokenizers, data)):
                encodings, seconds = enc_futures[ti].result()
                d.chunk_seconds.append(seconds)
                id_lists, counts, ids, offsets = _flat(encodings)
                tok_line = np.repeat(np.arange(m), counts)
                start = offsets[:, 0] + line_start[tok_line]
                end = offsets[:, 1] + line_start[tok_line]
                d.tokens[first:last] = counts
                table = d.table
                if table.unk is not None:
                    is_unk = ids == table.unk
                    d.unk_chars[first:last] = np.bincount(tok_line[is_unk], weights=(end - start)[is_unk],
                                                          minlength=m).astype(np.int64)
                safe_ids = np.clip(ids, 0, max(table.size - 1, 0))
                d.byte_tokens[first:last] = np.bincount(tok_line[table.byte_token[safe_ids]], minlength=m)
                decodes.append(rust.submit(tok.decode_batch, id_lists, False))
                # Each token belongs to the segment of its last character (so "Ġthe" counts for "the").
                if len(ids):
                    p = np.maximum(start, end - 1)
                    p = np.clip(p, line_start[tok_line], np.maximum(line_start[tok_line], line_end[tok_line] - 1))
                    seg = np.searchsorted(seg_start, p, side="right") - 1
                    d.type_tokens += np.bincount(seg_type[seg], minlength=len(types))
                    in_word = word_mask[seg]
                    tok_scripts = np.array(type_script, dtype=object)[seg_type[seg[in_word]]]
                    tok_word_lines = tok_line[in_word]
                    for script in set(tok_scripts):
                        sel = tok_scripts == script
                        arr = d.script_tokens.setdefault(script, np.zeros(n, np.int64))
                        arr[first:last] += np.bincount(tok_word_lines[sel], minlength=m)
                    # A word is continued when 2+ tokens overlap it (tokens of zero width overlap nothing).
                    wide = end > start
                    ts, te = np.sort(start[wide]), np.sort(end[wide])
                    ws, we = seg_start[word_mask], seg_start[word_mask] + seg_len[word_mask]
                    overlapping = np.searchsorted(ts, we, side="left") - np.searchsorted(te, ws, side="right")
                    d.continued[first:last] = np.bincount(seg_line[word_mask][overlapping >= 2], minlength=m)
                    keys = boundary_keys(start, end, ns_before, line_start, line_end, tok_line)
                else:
                    keys = np.zeros(0, np.int64)
                line_ns = ns_before[line_start]
                d.boundaries[first:last] = np.bincount(np.searchsorted(line_ns, keys, side="right") - 1, minlength=m)
                keys_of.append(keys)
                ids_parts[ti].append(ids.astype(np.int32))
                line_parts[ti].append((tok_line + first).astype(np.int32))
                for j in range(m):
                    if first + j in wanted:
                        samples.setdefault(first + j, [None] * k)[ti] = encodings[j]
            line_ns = ns_before[line_start]
            for (a, b), arr in shared.items():
                both = _shared(keys_of[a], keys_of[b])
                arr[first:last] = np.bincount(np.searchsorted(line_ns, both, side="right") - 1, minlength=m)
            for d, future in zip(data, decodes):
                decoded = future.result()
                ok = np.fromiter(map(str.__eq__, decoded, chunk), dtype=bool, count=m)
                d.lossless[first:last] = ok
                if len(d.lossless_examples) < LOSSLESS_EXAMPLES and not ok.all():
                    for j in np.flatnonzero(~ok)[: LOSSLESS_EXAMPLES - len(d.lossless_examples)]:
                        d.lossless_examples.append({
                            "line_index": int(first + j), "original": chunk[j], "decoded": decoded[j],
                            "first_difference": _first_difference(chunk[j], decoded[j]),
                        })
    finally:
        rust.shutdown(wait=True, cancel_futures=True)
        seg_pool.shutdown(wait=True, cancel_futures=True)

    for ti, d in enumerate(data):
        d.ids = np.concatenate(ids_parts[ti]) if ids_parts[ti] else np.zeros(0, np.int32)
        d.id_line = np.concatenate(line_parts[ti]) if line_parts[ti] else np.zeros(0, np.int32)
    return Collected(n, chars, nbytes, words, ws_words, script_words, types, type_count, type_first,
                     data, shared, chunk_bytes, samples)
