"""The fast path of :func:`~subword.compare.collect.collect`: the same :class:`Collected`, from the Rust core.

:func:`collect_native` hands each chunk of lines to ``subword._core.CompareCollector``, which segments
the lines (UAX #29 word boundaries with the ``regex`` package's one tailoring, see
``rust/src/compare/segment.rs``), encodes them with every tokenizer and reduces the encodings to
per-line counts in parallel with the GIL released, returning little-endian ``int64`` buffers. Only
the segment types new in a chunk come back to Python, to be classified by
:func:`~subword.compare.words.classify` and :func:`~subword.compare.words.is_word` (the reference
definitions), so the script and word tables are the reference's by construction. The numpy code in
``collect.py`` stays the reference; ``tests/test_compare_native.py`` checks both give identical
arrays on real and Unicode-rich text.

>>> from subword import Tokenizer, WordPiece
>>> from subword.pre_tokenizers import Whitespace
>>> tok = Tokenizer(WordPiece({"[UNK]": 0, "ab": 1, "a": 2, "##b": 3}), pre_tokenizer=Whitespace())
>>> available([tok])
True
>>> c = collect_native([tok, tok], ["a", "b"], ["ab ab", "a"])
>>> c.tokenizers[0].tokens.tolist(), c.words.tolist(), c.types
([2, 1], [2, 1], ['ab', ' ', '\\n', 'a'])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from subword.compare import collect as _collect
from subword.compare.collect import LOSSLESS_EXAMPLES, Collected, TokenizerData, _first_difference, chunk_bounds
from subword.compare.vocab import VocabTable
from subword.compare.words import SCRIPTS, classify, is_word

__all__ = ["available", "collect_native", "sample_encodings", "SCRIPT_LABELS"]

#: The script labels, in the order of the indices the core is given (``classify`` returns one of them).
SCRIPT_LABELS = (*SCRIPTS, "Other", "Common")
_SCRIPT_INDEX = {name: i for i, name in enumerate(SCRIPT_LABELS)}


def _core_module() -> Any:
    try:
        from subword import _core
    except ImportError:
        return None
    return _core if hasattr(_core, "CompareCollector") else None


def available(tokenizers: Sequence[Any]) -> bool:
    """Whether every tokenizer runs on the Rust core, which then has the native reduction."""
    core = _core_module()
    if core is None:
        return False
    kinds = tuple(getattr(core, name) for name in ("CoreTokenizer", "CoreSpmTokenizer") if hasattr(core, name))
    try:
        return all(isinstance(t._native(), kinds) for t in tokenizers)
    except Exception:  # noqa: BLE001 - a tokenizer the core cannot build goes the reference way
        return False


def _i64(buf: bytes) -> np.ndarray:
    return np.frombuffer(buf, dtype="<i8")


def sample_encodings(tokenizers: Sequence[Any], lines: Sequence[str], indices: Sequence[int]) -> dict[int, list[Any]]:
    """``{line: [its Encoding under each tokenizer]}`` of the sample lines (``Collected.samples``).

    >>> from subword import Tokenizer, WordPiece
    >>> from subword.pre_tokenizers import Whitespace
    >>> tok = Tokenizer(WordPiece({"[UNK]": 0, "ab": 1}), pre_tokenizer=Whitespace())
    >>> [e.ids for e in sample_encodings([tok, tok], ["ab", "ab ab"], [1])[1]]
    [[1, 1], [1, 1]]
    """
    wanted = sorted(set(indices))
    samples: dict[int, list[Any]] = {i: [None] * len(tokenizers) for i in wanted}
    if wanted:
        for ti, tok in enumerate(tokenizers):
            for i, enc in zip(wanted, tok.encode_batch([lines[i] for i in wanted], add_special_tokens=False)):
                samples[i][ti] = enc
    return samples


def collect_native(tokenizers: Sequence[Any], names: Sequence[str], lines: Sequence[str],
                   sample_indices: Sequence[int] = ()) -> Collected:
    """:func:`~subword.compare.collect.collect`, computed by the Rust core (same arguments, same result)."""
    core = _core_module()
    if core is None:
        raise RuntimeError("subword._core has no CompareCollector: rebuild the extension")
    lines = list(lines)
    n, k = len(lines), len(tokenizers)
    tables = [VocabTable.of(t) for t in tokenizers]
    collector = core.CompareCollector(
        [t._native() for t in tokenizers], [t.unk for t in tables],
        [np.asarray(t.byte_token, dtype=np.uint8).tobytes() for t in tables], len(SCRIPT_LABELS))
    chars = np.zeros(n, np.int64)
    nbytes = np.zeros(n, np.int64)
    words = np.zeros(n, np.int64)
    ws_words = np.zeros(n, np.int64)
    script_words: dict[str, np.ndarray] = {}
    types: list[str] = []
    type_count = np.zeros(0, np.int64)
    type_first: list[int] = []
    data = [TokenizerData.empty(name, table, n) for name, table in zip(names, tables)]
    ids_parts: list[list[np.ndarray]] = [[] for _ in range(k)]
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    shared = {p: np.zeros(n, np.int64) for p in pairs}
    chunk_bytes: list[int] = []

    _collect.warm_up(tokenizers, lines[0])  # through the module: the benchmark times it as loading
    lengths = np.fromiter(map(len, lines), dtype=np.int64, count=n)
    for first, last in chunk_bounds(lengths):
        chunk = lines[first:last]
        new, first_lines = collector.segment(chunk)
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
        out = collector.reduce(chunk)
        chars[first:last] = _i64(out["chars"])
        nbytes[first:last] = _i64(out["bytes"])
        chunk_bytes.append(int(nbytes[first:last].sum()))
        words[first:last] = _i64(out["words"])
        ws_words[first:last] = _i64(out["ws_words"])
        for si, row in out["script_words"].items():  # the scripts that occur, in order
            script_words.setdefault(SCRIPT_LABELS[si], np.zeros(n, np.int64))[first:last] += _i64(row)
        counts = _i64(out["type_count"])
        type_count = np.concatenate([type_count, np.zeros(len(counts) - len(type_count), np.int64)]) + counts
        for ti, (d, t) in enumerate(zip(data, out["tokenizers"])):
            d.chunk_seconds.append(float(t["seconds"]))
            tokens = _i64(t["tokens"])
            d.tokens[first:last] = tokens
            d.continued[first:last] = _i64(t["continued"])
            d.unk_chars[first:last] = _i64(t["unk_chars"])
            d.byte_tokens[first:last] = _i64(t["byte_tokens"])
            ok = np.frombuffer(t["lossless"], dtype=np.uint8).view(bool)  # 0 or 1 per line
            d.lossless[first:last] = ok
            d.boundaries[first:last] = _i64(t["boundaries"])
            for si, row in t["script_tokens"].items():
                d.script_tokens.setdefault(SCRIPT_LABELS[si], np.zeros(n, np.int64))[first:last] += _i64(row)
            tt = _i64(t["type_tokens"])
            if len(tt) > len(d.type_tokens):  # the types new in this chunk
                d.type_tokens = np.concatenate([d.type_tokens, np.zeros(len(tt) - len(d.type_tokens), np.int64)])
            d.type_tokens[: len(tt)] += tt
            ids = np.frombuffer(t["ids"], dtype="<u4")  # read-only, kept as the core gave it (no copy)
            ids_parts[ti].append(ids)
            if len(d.lossless_examples) < LOSSLESS_EXAMPLES and not ok.all():
                ends = np.cumsum(tokens)
                for j in np.flatnonzero(~ok)[: LOSSLESS_EXAMPLES - len(d.lossless_examples)]:
                    line_ids = ids[ends[j] - tokens[j]: ends[j]].tolist()
                    decoded = tokenizers[ti].decode(line_ids, skip_special_tokens=False)
                    d.lossless_examples.append({
                        "line_index": int(first + j), "original": chunk[j], "decoded": decoded,
                        "first_difference": _first_difference(chunk[j], decoded),
                    })
        for p, buf in zip(pairs, out["shared"]):
            shared[p][first:last] = _i64(buf)

    samples = sample_encodings(tokenizers, lines, sample_indices)
    for ti, d in enumerate(data):
        d.ids = np.concatenate(ids_parts[ti]) if ids_parts[ti] else np.zeros(0, np.uint32)
        d.id_line = np.repeat(np.arange(n, dtype=np.uint32), d.tokens)  # once, not per chunk
    return Collected(n, chars, nbytes, words, ws_words, script_words, types, type_count,
                     np.array(type_first, dtype=np.int64), data, shared, chunk_bytes, samples)
