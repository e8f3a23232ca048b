"""The decoder and cross-entropy of an MLM head in one pass over row chunks, for the CPU.

``F.cross_entropy(F.linear(x, W, b), target)`` over a 30k vocabulary builds an (N, V) logits
tensor, then its log-softmax (another N x V), then in the backward pass a zero-filled N x V
gradient of the log-softmax and the gradient of the logits: five or six passes over tensors far
larger than the cache, and at BERT tiny size those passes, not the matrix products, took most of
the head's time (``benchmarks/profile_pretrain.py``). :func:`linear_cross_entropy` computes the
same loss and the same gradients with the logits of a chunk of rows at a time: the chunk's logits
become its softmax and then its gradient ``softmax - onehot`` in place while they are still in the
cache. The backward pass then takes the products and the sum that autograd would take from that
gradient. Under ``torch.no_grad`` only the loss is computed.

>>> import torch
>>> x, W, b = torch.randn(5, 4), torch.randn(10, 4), torch.zeros(10)
>>> t = torch.tensor([1, 2, 3, 4, 5])
>>> ref = torch.nn.functional.cross_entropy(x @ W.T + b, t, reduction="sum")
>>> bool(torch.allclose(linear_cross_entropy(x, W, b, t), ref))
True
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

__all__ = ["linear_cross_entropy", "supported"]

#: Bytes of logits per chunk of rows in the element-wise passes: within the L3 cache here.
CHUNK_BYTES = 2 * 1024 * 1024


def supported(x: Tensor, weight: Tensor) -> bool:
    """Whether :func:`linear_cross_entropy` applies: eager CPU float32, no autocast."""
    return (x.device.type == "cpu" and x.dtype == torch.float32 and weight.dtype == torch.float32
            and not torch.is_autocast_enabled("cpu") and not torch.compiler.is_compiling())


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, weight: Tensor, bias: Tensor | None, target: Tensor,  # type: ignore[override]
                chunk: int) -> Tensor:
        grads = any(ctx.needs_input_grad[:3])
        # The logits, then a chunk of rows at a time, in place while the chunk is in the cache:
        # the bias, exp(z - max) (the one exponential per logit, which bounds this loop), the
        # target's loss log(sum) + max - z_target, and the gradient softmax - onehot.
        g = x.mm(weight.t())  # (N, V)
        total = x.new_zeros(())
        for s in range(0, g.shape[0], chunk):
            z, t = g[s:s + chunk], target[s:s + chunk, None]  # (n, V), (n, 1)
            if bias is not None:
                z.add_(bias)
            top = z.amax(dim=1, keepdim=True)  # (n, 1)
            picked = z.gather(1, t)  # (n, 1)
            norm = z.sub_(top).exp_().sum(dim=1, keepdim=True)  # (n, 1)
            total += (norm.log() + top - picked).sum()
            if grads:
                z.mul_(norm.reciprocal_()).scatter_add_(1, t, torch.full(t.shape, -1.0, dtype=z.dtype))
        if grads:
            ctx.save_for_backward(x, weight, g)
            ctx.has_bias = bias is not None
        return total

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        # What autograd would take from the logits' gradient grad * g; the scalar is applied to the
        # small factors, not to the (V, E) product.
        x, weight, g = ctx.saved_tensors
        need = ctx.needs_input_grad
        dx = g.mm(weight).mul_(grad) if need[0] else None  # (N, E)
        dw = g.t().mm(x * grad) if need[1] else None  # (V, E)
        db = g.sum(0).mul_(grad) if ctx.has_bias and need[2] else None  # (V,)
        return dx, dw, db, None, None


def linear_cross_entropy(x: Tensor, weight: Tensor, bias: Tensor | None, target: Tensor) -> Tensor:
    """``F.cross_entropy(F.linear(x, weight, bias), target, reduction="sum")`` without the logits.

    Args:
        x: (N, E) the head's transformed hidden states at the scored positions.
        weight: (V, E) the decoder (the tied word embeddings).
        bias: (V,) or None.
        target: (N,) long ids in ``[0, V)``; every row is scored (no ignore index: select the
            scored rows first).

    Returns:
        The summed loss, a 0-d tensor whose backward pass gives the gradients of all three inputs.

    Raises:
        ValueError: shapes that do not fit, or inputs :func:`supported` refuses.
    """
    if x.dim() != 2 or weight.dim() != 2 or x.shape[1] != weight.shape[1] or target.shape != (x.shape[0],):
        raise ValueError(f"expected x (N, E), weight (V, E), target (N,); got {tuple(x.shape)}, "
                         f"{tuple(weight.shape)}, {tuple(target.shape)}")
    if not supported(x, weight):
        raise ValueError("linear_cross_entropy runs on CPU float32 tensors outside autocast and torch.compile")
    chunk = max(1, CHUNK_BYTES // (4 * max(1, weight.shape[0])))
    return _LinearCrossEntropy.apply(x, weight, bias, target, chunk)
