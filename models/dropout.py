"""Dropout whose mask costs a random draw per *dropped* element, not per element (CPU).

``F.dropout`` on the CPU draws one Bernoulli per element from the Mersenne twister, on one thread:
about 8 ns an element here, so at BERT tiny and mini sizes the masks of the attention weights and
hidden states took a fifth of a training step (measured by ``benchmarks/profile_pretrain.py``).
The same mask -- each element dropped independently with probability ``p`` -- is drawn here from
the gaps between dropped elements: in a sequence of independent Bernoulli(p) trials the gap to the
next success is geometric, ``G = 1 + floor(log(U) / log(1 - p))`` with ``U`` uniform on (0, 1], so
``p * n`` uniforms (and a cumulative sum) place all the zeros of an ``n``-element mask. The
distribution is exactly that of ``F.dropout``'s mask (up to the 2**-53 resolution of the uniforms);
the draws come from torch's global generator, so a checkpoint's RNG state still covers them.

Only the CPU in eager mode takes this path (the positions are read back to place the next batch of
gaps); on an accelerator, or under ``torch.compile``, or for ``p > 0.5`` (where per-element draws are
as cheap), :func:`dropout` is ``F.dropout``.

>>> import torch
>>> x = torch.ones(100_000)
>>> y = dropout(x, 0.1, training=True)
>>> round(float((y == 0).float().mean()), 2), sorted({round(v, 4) for v in y.tolist()})
(0.1, [0.0, 1.1111])
>>> torch.equal(dropout(x, 0.1, training=False), x)
True
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = ["Dropout", "dropout", "keep_mask"]

#: Above this drop probability the gaps are no cheaper than one draw per element.
_MAX_GAP_P = 0.5
#: Gaps drawn per round: the mean number needed plus this many standard deviations (a shortfall
#: only costs another round).
_SD_MARGIN = 6.0


def keep_mask(n: int, p: float, *, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu") -> Tensor:
    """An ``n``-element mask: 0 with probability ``p`` (independently), ``1 / (1 - p)`` elsewhere.

    >>> m = keep_mask(10, 0.0)
    >>> m.tolist() == [1.0] * 10
    True
    """
    if not 0.0 <= p < 1.0:
        raise ValueError(f"the drop probability must lie in [0, 1), got {p}")
    mask = torch.full((n,), 1.0 / (1.0 - p), dtype=dtype, device=device)
    if p == 0.0 or n == 0:
        return mask
    log_keep = math.log1p(-p)
    start = 0  # the first position the next gap counts from
    while start < n:
        left = n - start
        # Enough gaps to cover the rest with overwhelming probability; else another round.
        count = max(16, int(left * p + _SD_MARGIN * math.sqrt(left * p * (1.0 - p)) + 16))
        u = 1.0 - torch.rand(count, dtype=torch.float64, device=device)  # uniform on (0, 1]
        # Geometric on {1, 2, ...}; capped at n (any gap past the end is as good) so it fits int64.
        gaps = torch.floor(torch.log(u) / log_keep).clamp_(max=float(n)).long() + 1  # (count,)
        positions = torch.cumsum(gaps, 0) + (start - 1)  # (count,) increasing
        last = int(positions[-1])
        if last >= n:
            positions = positions[positions < n]
        mask.index_fill_(0, positions, 0.0)
        start = last + 1
    return mask


def dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """``F.dropout(x, p, training)``, with the mask drawn by :func:`keep_mask` on the CPU.

    >>> import torch
    >>> dropout(torch.ones(3), 0.0).tolist()
    [1.0, 1.0, 1.0]
    """
    if not training or p == 0.0:
        return x
    if (p > _MAX_GAP_P or x.device.type != "cpu" or not x.is_floating_point()
            or torch.compiler.is_compiling()):
        return F.dropout(x, p, training=True)
    return x * keep_mask(x.numel(), p, dtype=x.dtype).view(x.shape)


class Dropout(nn.Dropout):
    """``nn.Dropout`` that draws its mask with :func:`keep_mask` on the CPU (same distribution).

    >>> import torch
    >>> d = Dropout(0.5).eval()
    >>> d(torch.ones(2)).tolist()
    [1.0, 1.0]
    """

    def forward(self, x: Tensor) -> Tensor:
        """(...) -> (...), the same shape."""
        if self.inplace:
            return F.dropout(x, self.p, self.training, inplace=True)
        return dropout(x, self.p, self.training)
