"""Counter-based random numbers: a draw is a hash of integers, not a generator's state.

Used wherever a random choice must be a pure function of its coordinates --
the masks of :mod:`models.objectives` (seed, epoch, example, position) and
BigBird's random-block plan (seed, head, block) -- so that the result does not
depend on call order, worker count or resume point, and so that the code is
plain tensor arithmetic that ``torch.compile`` can trace (a ``torch.Generator``
cannot be created inside a compiled graph).

The mixer is murmur3's 32-bit finaliser, applied to each 32-bit half of each
input word in turn; products are formed from 16-bit halves so that nothing
leaves int64 (signed overflow would be undefined).

>>> import torch
>>> int(hash32(1, 2, 3)) == int(hash32(1, 2, 3)), int(hash32(1, 2, 3)) == int(hash32(1, 2, 4))
(True, False)
>>> bool((uniform(0, torch.arange(5)) < 1).all())
True
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

__all__ = ["TWO32", "hash32", "uniform"]

M32 = 0xFFFFFFFF
TWO32 = 1 << 32


def _mul32(x: Any, c: int) -> Any:
    """``x * c mod 2**32`` for ``0 <= x < 2**32``, without leaving int64 (ints and tensors alike)."""
    lo, hi = c & 0xFFFF, c >> 16
    return (x * lo + (((x * hi) & 0xFFFF) << 16)) & M32


def _fmix(h: Any) -> Any:
    """murmur3's 32-bit finaliser: every input bit affects every output bit."""
    h = h ^ (h >> 16)
    h = _mul32(h, 0x85EBCA6B)
    h = h ^ (h >> 13)
    h = _mul32(h, 0xC2B2AE35)
    return h ^ (h >> 16)


def hash32(*words: Any) -> Any:
    """A 32-bit hash in ``[0, 2**32)`` of non-negative integers (ints or broadcastable int64 tensors).

    Each word enters as its low and high 32 bits, each followed by a full
    mixing round, so different coordinate tuples do not alias.
    """
    h: Any = 0x9E3779B9
    for w in words:
        h = _fmix((h ^ (w & M32)) ^ 0x5BD1E995)
        h = _fmix(h ^ ((w >> 32) & M32))
    if isinstance(h, int):
        return torch.tensor(h, dtype=torch.long)
    return h


def uniform(*words: Any) -> Tensor:
    """Uniforms in [0, 1) (float64, 2**-32 resolution) as a function of the words."""
    return hash32(*words).double() / TWO32
