"""BigBird's block-sparse attention as one autograd function with a hand-written backward.

:class:`~models.attention.BlockSparseAttention` decides *what* each query block sees (global rows,
global columns, window, random blocks: the key-block table); this module computes it. The forward
is a few large batched matmuls per chunk of middle query blocks, on keys and values gathered once
into a ``(B, nh, chunk, (5+R) b, hs)`` layout; the backward reuses the forward's softmax weights
(kept per chunk, O(T * b * (5+R)) memory, linear in T) instead of recomputing attention, and
scatters the gathered keys' and values' gradients straight into one gradient of ``k`` and ``v``
(``index_add_``), so no gradient of the whole key tensor is created per chunk.

Why not PyTorch's fused kernel with autograd (the path inference still takes): every (head, query
block) pair is a separate tiny attention to it; on the CPU its backward recomputes the weights
tile by tile from the saved log-sum-exp, and the autograd of the gather around it fills a zero
gradient of the whole key and value tensors per chunk. Profiled at T = 4096 (12 heads, one
thread) that backward took three times its forward (689 ms against 219). Here the backward is

* ``dV = P^T dO``, ``dP = dO V^T``, ``dS = P * (dP - rowsum(dO * O))``,
* ``dQ = dS K * scale``, ``dK = dS^T Q * scale``,

four batched matmuls and two in-place passes per chunk. All of it is plain tensor code, so it runs
on any device, under ``torch.compile`` and under gradient checkpointing.

"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

__all__ = ["block_sparse_attention"]


def _chunk_keep(table: Tensor, valid: Tensor, key_mask: Tensor | None, b: int, m0: int, m1: int) -> Tensor | None:
    """Which gathered keys chunk ``[m0, m1)`` of the middle rows may see: bool (B|1, nh|1, mc, 1, S*b).

    ``None`` when all may: without padding only the first and last middle rows have a masked slot
    (the window block that is also a global column).
    """
    M, S = valid.shape
    mc = m1 - m0
    slots = valid[m0:m1, :, None].expand(mc, S, b).reshape(1, 1, mc, 1, S * b)  # (1, 1, mc, 1, S*b)
    if key_mask is None:
        return slots if (m0 == 0 or m1 == M) else None
    B, nh = key_mask.shape[0], table.shape[0]
    nb = key_mask.shape[1] // b
    keys = key_mask.view(B, nb, b)[:, table[:, m0:m1]]  # (B, nh, mc, S, b)
    return keys.reshape(B, nh, mc, 1, S * b) & slots


def _softmax(scores: Tensor, keep: Tensor | None, zero_masked: bool) -> Tensor:
    """Softmax over the last axis with masked keys at exactly zero weight.

    Masked scores are filled in place with the most negative finite value (no NaN from a row that
    sees nothing); with ``zero_masked`` such rows are then zeroed (they would be uniform), which
    only key padding can cause.
    """
    if keep is None:
        return torch.softmax(scores, dim=-1)
    scores.masked_fill_(~keep, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    return weights.masked_fill_(~keep, 0.0) if zero_masked else weights


def _two_ends(x: Tensor, b: int) -> Tensor:
    """The first and last ``b`` positions of ``x`` (B, nh, n, d) as (B, nh, 2b, d)."""
    return torch.cat([x[:, :, :b], x[:, :, -b:]], dim=2)


class _BlockSparseAttentionFn(torch.autograd.Function):
    """Forward and backward of block-sparse attention; see :func:`block_sparse_attention`."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, q: Tensor, k: Tensor, v: Tensor, table: Tensor, valid: Tensor, key_mask: Tensor | None,
        block: int, chunk: int,
    ) -> Tensor:
        B, nh, n, hs = q.shape
        b, nb = block, n // block
        M, S = valid.shape
        scale = hs**-0.5
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        qs = q * scale  # (B, nh, n, hs): scaling the queries is cheaper than scaling the scores

        # Global rows: query blocks 0 and nb-1 see every key.
        keep_g = None if key_mask is None else key_mask[:, None, None, :]  # (B, 1, 1, n)
        p_glob = _softmax(torch.matmul(_two_ends(qs, b), k.transpose(-1, -2)), keep_g, True)  # (B, nh, 2b, n)
        o_glob = torch.matmul(p_glob, v)  # (B, nh, 2b, hs)
        out = q.new_empty(B, nh, n, hs)
        out[:, :, :b], out[:, :, -b:] = o_glob[:, :, :b], o_glob[:, :, b:]

        # Middle rows, a chunk of query blocks at a time: gather their S key blocks each with one
        # index_select over (head, block) pairs, then two batched matmuls and a softmax.
        flat = table + nb * torch.arange(nh, device=table.device)[:, None, None]  # (nh, M, S)
        k_blocks, v_blocks = k.view(B, nh * nb, b, hs), v.view(B, nh * nb, b, hs)
        qs_blocks, out_blocks = qs.view(B, nh, nb, b, hs), out.view(B, nh, nb, b, hs)
        weights = []
        for m0 in range(0, M, chunk):
            m1 = min(M, m0 + chunk)
            mc = m1 - m0
            idx = flat[:, m0:m1].reshape(-1)  # (nh*mc*S,)
            k_g = k_blocks.index_select(1, idx).view(B, nh, mc, S * b, hs)
            v_g = v_blocks.index_select(1, idx).view(B, nh, mc, S * b, hs)
            scores = torch.matmul(qs_blocks[:, :, 1 + m0 : 1 + m1], k_g.transpose(-1, -2))  # (B, nh, mc, b, S*b)
            p = _softmax(scores, _chunk_keep(table, valid, key_mask, b, m0, m1), key_mask is not None)
            del scores, k_g
            out_blocks[:, :, 1 + m0 : 1 + m1] = torch.matmul(p, v_g)  # (B, nh, mc, b, hs)
            weights.append(p)
        ctx.save_for_backward(q, k, v, out, table, p_glob, *weights)
        ctx.block, ctx.chunk = b, chunk
        return out

    @staticmethod
    def backward(ctx: Any, d_out: Tensor) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        q, k, v, out, table, p_glob, *weights = ctx.saved_tensors
        b, chunk = ctx.block, ctx.chunk
        B, nh, n, hs = q.shape
        nb = n // b
        M, S = table.shape[1], table.shape[2]
        scale = hs**-0.5
        d_out = d_out.contiguous()
        qs = q * scale  # (B, nh, n, hs)
        delta = (d_out * out).sum(-1, keepdim=True)  # (B, nh, n, 1): rowsum(dO * O) = rowsum(P * dP)

        # Global rows: their products with every key start dq, dk and dv.
        do_glob = _two_ends(d_out, b)  # (B, nh, 2b, hs)
        dv = torch.matmul(p_glob.transpose(-1, -2), do_glob)  # (B, nh, n, hs)
        ds_glob = torch.matmul(do_glob, v.transpose(-1, -2)).sub_(_two_ends(delta, b)).mul_(p_glob)  # (B, nh, 2b, n)
        dk = torch.matmul(ds_glob.transpose(-1, -2), _two_ends(qs, b))  # (B, nh, n, hs)
        dq_glob = torch.matmul(ds_glob, k).mul_(scale)  # (B, nh, 2b, hs)
        del ds_glob
        dq = torch.empty_like(q)
        dq[:, :, :b], dq[:, :, -b:] = dq_glob[:, :, :b], dq_glob[:, :, b:]

        # Middle rows: the gathered keys' and values' gradients go straight into dk and dv.
        flat = table + nb * torch.arange(nh, device=table.device)[:, None, None]  # (nh, M, S)
        k_blocks, v_blocks = k.view(B, nh * nb, b, hs), v.view(B, nh * nb, b, hs)
        dk_blocks, dv_blocks = dk.view(B, nh * nb, b, hs), dv.view(B, nh * nb, b, hs)
        qs_blocks = qs.view(B, nh, nb, b, hs)
        do_blocks, dq_blocks = d_out.view(B, nh, nb, b, hs), dq.view(B, nh, nb, b, hs)
        delta_blocks = delta.view(B, nh, nb, b, 1)
        for i, m0 in enumerate(range(0, M, chunk)):
            m1 = min(M, m0 + chunk)
            mc = m1 - m0
            p = weights[i]  # (B, nh, mc, b, S*b)
            idx = flat[:, m0:m1].reshape(-1)  # (nh*mc*S,)
            rows = slice(1 + m0, 1 + m1)
            do = do_blocks[:, :, rows]  # (B, nh, mc, b, hs)
            dv_g = torch.matmul(p.transpose(-1, -2), do)  # (B, nh, mc, S*b, hs)
            dv_blocks.index_add_(1, idx, dv_g.view(B, nh * mc * S, b, hs))
            del dv_g
            v_g = v_blocks.index_select(1, idx).view(B, nh, mc, S * b, hs)
            ds = torch.matmul(do, v_g.transpose(-1, -2)).sub_(delta_blocks[:, :, rows]).mul_(p)  # (B, nh, mc, b, S*b)
            del v_g
            k_g = k_blocks.index_select(1, idx).view(B, nh, mc, S * b, hs)
            dq_blocks[:, :, rows] = torch.matmul(ds, k_g).mul_(scale)  # (B, nh, mc, b, hs)
            del k_g
            dk_g = torch.matmul(ds.transpose(-1, -2), qs_blocks[:, :, rows])  # (B, nh, mc, S*b, hs)
            dk_blocks.index_add_(1, idx, dk_g.view(B, nh * mc * S, b, hs))
        return dq, dk, dv, None, None, None, None, None


def block_sparse_attention(
    q: Tensor, k: Tensor, v: Tensor, table: Tensor, valid: Tensor, key_mask: Tensor | None, *, block: int,
    chunk: int,
) -> Tensor:
    """Block-sparse self-attention over ``q, k, v`` (B, nh, n, hs), ``n`` a multiple of ``block``.

    Args:
        q: queries (B, nh, n, hs); ``k`` and ``v`` likewise.
        table: the key blocks of every middle query block, long ``(nh, nb-2, S)``
            (:meth:`~models.attention.BlockSparseAttention.key_table`).
        valid: bool ``(nb-2, S)``, False for a slot that repeats a global column (counted once).
        key_mask: bool (B, n), True = real key; ``None`` when nothing is padded.
        block: ``b``, tokens per block.
        chunk: middle query blocks per chunk (bounds the gathered keys' memory).

    Returns:
        The attention output (B, nh, n, hs); query blocks 0 and nb-1 attend to every key, every
        other query block to its ``S`` key blocks of ``table``. A query that sees no key gets 0.

    >>> import torch
    >>> from models.attention import BlockSparseAttention
    >>> attn = BlockSparseAttention(num_heads=1, block_size=2, num_random_blocks=1)
    >>> q, k, v = (torch.randn(1, 1, 20, 4, requires_grad=True) for _ in range(3))
    >>> table, valid = attn.key_table(10, q.device)
    >>> out = block_sparse_attention(q, k, v, table, valid, None, block=2, chunk=3)
    >>> out.sum().backward()
    >>> tuple(out.shape), tuple(k.grad.shape)
    ((1, 1, 20, 4), (1, 1, 20, 4))
    """
    return _BlockSparseAttentionFn.apply(q, k, v, table, valid, key_mask, block, chunk)
