"""Readable seeding of the Unigram trainer as SentencePiece 0.2.3 does it: the substrings that are
LCP intervals of a suffix array of the sentences' bytes (the spec of ``rust/src/unigram/seed.rs``).

* The text: each sentence repeated ``freq`` times, every copy followed by ``\\0``, cut into chunks of
  about 500 MiB (each chunk is its own text).
* An LCP interval ``[l, r]`` of the suffix array with depth ``d`` is a string of ``d`` bytes that
  occurs ``r - l + 1 >= 2`` times and is followed by at least two different bytes (or the end).
  It is a candidate when ``d >= 2``, it starts and ends on a character boundary, and without its
  trailing ``\\0``s it holds no ``\\0``, has 2..``max_len`` characters and is a valid piece; its
  count is added to that piece's (so ``"ab"`` also collects the interval ``"ab\\0"``).
* Seeds: pieces counted at least twice, ``score = f32(count) * f32(chars)``, ordered by score desc,
  byte length desc, bytes asc; the first ``seed_size``.

The suffix array here holds only the suffixes that start a character (not a ``\\0``), each
sorted by its first ``4 * max_len + 2`` bytes (Python's ``sorted``): other intervals can never
give a piece (deeper ones are too long: sentences are never empty, so at most one ``\\0`` trails
a piece), and the ones that can are the same either way.

>>> seeds = suffix_array_seeds([("\u2581ab\u2581ab", 1), ("\u2581ab", 2)], max_len=8, seed_size=10,
...                            valid=lambda piece: True)
>>> seeds[0]
('▁ab', 21.0)
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from itertools import pairwise

__all__ = ["lcp_intervals", "suffix_array_seeds"]

MAX_CHUNK_BYTES = 500 * 1024 * 1024


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def _chunks(sentences: Sequence[tuple[str, int]]) -> Iterator[bytes]:
    """``sentence + "\\0"`` per copy; a chunk is closed once it holds at least MAX_CHUNK_BYTES."""
    k = 0
    while k < len(sentences):
        chunk = bytearray()
        while k < len(sentences) and len(chunk) < MAX_CHUNK_BYTES:
            s, f = sentences[k]
            k += 1
            copies = 0
            while copies < f and len(chunk) < MAX_CHUNK_BYTES:
                chunk += s.encode() + b"\0"
                copies += 1
        if not chunk:
            return
        yield bytes(chunk)


def _common_prefix_length(a: bytes, b: bytes) -> int:
    """Compared as big-endian integers, the first differing byte is the highest set byte of a ^ b."""
    m = min(len(a), len(b))
    x = int.from_bytes(a[:m], "big") ^ int.from_bytes(b[:m], "big")
    return m - (x.bit_length() + 7) // 8


def lcp_intervals(text: bytes, max_depth: int) -> Iterator[tuple[int, int, int]]:
    """``(first suffix start, count, depth)`` of every LCP interval of ``text`` with
    ``0 < depth < max_depth`` whose string starts a character other than ``\\0``, children
    before their parent.

    >>> sorted((b"banana"[o:o + d], n) for o, n, d in lcp_intervals(b"banana", 10))
    [(b'a', 3), (b'ana', 2), (b'na', 2)]
    """
    # only suffixes that start a character and are not a separator: every occurrence of a string
    # that starts so starts so too, which keeps its interval, count and followers
    starts = [i for i, b in enumerate(text) if b & 0xC0 != 0x80 and b != 0]
    keys = {i: text[i:i + max_depth] for i in starts}
    sa = sorted(starts, key=keys.__getitem__)
    lcp = [0] + [_common_prefix_length(keys[a], keys[b]) for a, b in pairwise(sa)]
    del keys
    stack = [(0, 0)]  # (left bound, depth); the root stays
    for i in range(1, len(sa) + 1):
        h = lcp[i] if i < len(sa) else 0
        left = i - 1
        while h < stack[-1][1]:
            l, d = stack.pop()
            if d < max_depth:
                yield sa[l], i - l, d
            left = l
            if h > stack[-1][1]:
                stack.append((l, h))
                break
        if h > stack[-1][1]:
            stack.append((left, h))


def _piece(chunk: bytes, offset: int, depth: int, max_len: int) -> str | None:
    end = offset + depth

    def continuation(b: int) -> bool:
        return b & 0xC0 == 0x80

    if continuation(chunk[offset]) or (end < len(chunk) and continuation(chunk[end])):
        return None
    raw = chunk[offset:end].rstrip(b"\0")
    if not raw or b"\0" in raw:
        return None
    piece = raw.decode()
    return piece if 2 <= len(piece) <= max_len else None


def suffix_array_seeds(sentences: Sequence[tuple[str, int]], *, max_len: int, seed_size: int,
                       valid: Callable[[str], bool]) -> list[tuple[str, float]]:
    """Substring seeds (no single characters) with raw scores, best first."""
    counts: dict[str, int] = {}
    for chunk in _chunks(sentences):
        for offset, n, depth in lcp_intervals(chunk, 4 * max_len + 2):
            if depth <= 1:
                continue
            piece = _piece(chunk, offset, depth, max_len)
            if piece is not None and valid(piece):
                counts[piece] = counts.get(piece, 0) + n
        if len(counts) > 16 * seed_size:  # SentencePiece keeps the best 8x between chunks
            counts = dict(_best(counts)[:8 * seed_size])
    return [(p, s) for p, s, _ in _scored(counts) if counts[p] >= 2][:seed_size]


def _scored(counts: dict[str, int]) -> list[tuple[str, float, int]]:
    out = [(p, _f32(_f32(float(n)) * len(p)), n) for p, n in counts.items()]
    out.sort(key=lambda x: (-x[1], -len(x[0].encode()), x[0].encode()))
    return out


def _best(counts: dict[str, int]) -> list[tuple[str, int]]:
    return [(p, n) for p, _, n in _scored(counts)]
