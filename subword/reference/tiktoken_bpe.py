"""Readable tiktoken BPE: merge by the rank of the merged bytes, ids are ranks.

How it differs from its neighbour :mod:`subword.reference.bpe` (HF's merges-list BPE):

* there is no merges list: any two adjacent parts whose concatenation has a rank may merge, and the pair
  whose concatenation has the SMALLEST rank merges first (leftmost among equal ranks). HF merges the pair
  listed first; with every split of every token listed, the two differ only where two overlapping pairs
  (``[ab, a, ba]``: ``ab+a`` and ``a+ba``) make the same token: tiktoken takes the left one, HF the one
  listed first;
* a piece that is itself a token is that token, whatever the merges would do (HF: ``ignore_merges``);
* it works on the raw UTF-8 bytes of a pre-tokenized piece; no byte-to-char mapping is involved.

The Rust core gets the same result from its BPE with ``merge_by_token_id`` and ``ignore_merges``
(``rust/src/bpe/encode.rs``).

>>> ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"ba": 257, b"aba": 258}
>>> encode_piece(b"ababa", ranks)
[256, 258]
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["encode_piece"]


def encode_piece(piece: bytes, ranks: Mapping[bytes, int]) -> list[int]:
    """tiktoken's ids for one pre-tokenized piece (every single byte must have a rank).

    >>> encode_piece(b"hello", {bytes([b]): b for b in range(256)})
    [104, 101, 108, 108, 111]
    """
    if piece in ranks:
        return [ranks[piece]]
    parts = [piece[i : i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best, best_rank = -1, None
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and (best_rank is None or rank < best_rank):
                best, best_rank = i, rank
        if best < 0:
            break
        parts[best : best + 2] = [parts[best] + parts[best + 1]]
    return [ranks[p] for p in parts]
