"""The decoder and cross-entropy of an MLM head without the logits' log-softmax, for the CPU.

``F.cross_entropy(F.linear(x, W, b), target)`` over a 30k vocabulary builds an (N, V) logits
tensor, its log-softmax (another N x V), and in the backward pass a zero-filled N x V gradient of
the log-softmax, then the gradient of the logits from it: passes over tensors far larger than the
cache, two exponentials per logit, and at BERT tiny size those passes, not the matrix products,
took most of the head's time (``benchmarks/profile_pretrain.py``). :func:`linear_cross_entropy`
computes the same loss and the same gradients from the softmax alone: one fused pass per row (one
exponential per logit) gives the probabilities, the loss of a row is ``-log p[target]`` (from
log-sum-exp where p underflows), and ``softmax - onehot``, made in place, is the logits' gradient,
which the backward pass multiplies out as autograd would. Under ``torch.no_grad`` only the loss
is computed.

Each step is one large operation, not a loop over chunks of rows: chunks that fit the cache were
about as fast on one thread, but with two threads on a shared machine every small parallel region
waits for a descheduled thread, and two hundred of them per step cost more than the cache saved.

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

#: Below this probability of the target, its loss is taken from log-sum-exp rather than -log p.
_TINY = 1e-30


def supported(x: Tensor, weight: Tensor) -> bool:
    """Whether :func:`linear_cross_entropy` applies: eager CPU float32, no autocast."""
    return (x.device.type == "cpu" and x.dtype == torch.float32 and weight.dtype == torch.float32
            and not torch.is_autocast_enabled("cpu") and not torch.compiler.is_compiling())


class _LinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, weight: Tensor, bias: Tensor | None, target: Tensor) -> Tensor:  # type: ignore[override]
        grads = any(ctx.needs_input_grad[:3])
        t = target[:, None]  # (N, 1)
        z = torch.addmm(bias, x, weight.t()) if bias is not None else x.mm(weight.t())  # (N, V) logits
        picked = z.gather(1, t)  # (N, 1) the targets' logits
        g = torch.softmax(z, dim=1)  # (N, V): one exponential per logit, in one fused pass per row
        p = g.gather(1, t)  # (N, 1)
        # -log p of the target; where p underflows (a loss past ~87 nats) from log-sum-exp instead.
        losses = -p.log()  # (N, 1)
        tiny = p < _TINY
        if bool(tiny.any()):
            rows = tiny.squeeze(1)
            losses[rows] = torch.logsumexp(z[rows], dim=1, keepdim=True) - picked[rows]
        del z
        if grads:
            g.scatter_add_(1, t, torch.full_like(p, -1.0))  # softmax - onehot: the logits' gradient
            ctx.save_for_backward(x, weight, g)
            ctx.has_bias = bias is not None
        return losses.sum()

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
        return dx, dw, db, None


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
    return _LinearCrossEntropy.apply(x, weight, bias, target)
