"""Attention, from kernel regression to multi-head self-attention.

The building blocks go from the simplest to the one the encoders use:

* :func:`masked_softmax` -- a softmax that gives *exactly* zero weight to masked
  positions (and an all-zero row when nothing is visible);
* :func:`nadaraya_watson` and :class:`NadarayaWatsonRegression` -- kernel
  regression read as attention pooling: the query is a point, the keys are the
  training inputs, the values are the training targets;
* :class:`AdditiveAttention` -- Bahdanau's score ``w_v^T tanh(W_q q + W_k k)``;
* :func:`scaled_dot_product_attention` -- ``softmax(Q K^T / sqrt(d)) V`` with a
  fast path through :func:`torch.nn.functional.scaled_dot_product_attention`
  and a plain path that spells the computation out (and can return weights);
* :class:`MultiHeadAttention` -- learned query/key/value/output projections
  around scaled dot-product attention, the block every encoder layer uses.

Masks follow one convention everywhere: a boolean tensor where ``True`` means
"may attend", broadcastable to the score tensor ``(..., T_q, T_k)``.
"""

from __future__ import annotations

import math
from typing import Literal, overload

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from models.block_sparse import block_sparse_attention
from models.checks import values_checked
from models.counter import uniform
from models.dropout import dropout as _dropout

__all__ = [
    "AdditiveAttention",
    "BlockSparseAttention",
    "MultiHeadAttention",
    "NadarayaWatsonRegression",
    "masked_softmax",
    "nadaraya_watson",
    "scaled_dot_product_attention",
    "take_rows",
]

AttnImpl = Literal["auto", "sdpa", "plain"]


def _check_mask(mask: Tensor, scores_shape: torch.Size, what: str = "mask") -> Tensor:
    """Return ``mask`` as bool after checking it broadcasts to ``scores_shape``."""
    if mask.dtype != torch.bool:
        if mask.is_floating_point():
            raise TypeError(
                f"{what} must be boolean (True = may attend) or 0/1 integers, got dtype {mask.dtype}"
            )
        mask = mask.bool()
    try:
        shape = torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        shape = None
    if shape != scores_shape:
        raise ValueError(
            f"{what} of shape {tuple(mask.shape)} does not broadcast to the attention "
            f"scores of shape {tuple(scores_shape)} (..., T_q, T_k)"
        )
    return mask


def _valid_lens_to_mask(valid_lens: Tensor, scores_shape: torch.Size) -> Tensor:
    """Turn per-row or per-query valid lengths into a boolean key mask."""
    n_keys = scores_shape[-1]
    batch = scores_shape[0]
    keys = torch.arange(n_keys, device=valid_lens.device)
    if valid_lens.dim() == 1:
        if valid_lens.shape[0] != batch:
            raise ValueError(
                f"valid_lens has {valid_lens.shape[0]} entries but the scores have batch size {batch}"
            )
        lens = valid_lens.view(batch, *([1] * (len(scores_shape) - 1)))
    elif valid_lens.dim() == 2:
        if len(scores_shape) < 3 or valid_lens.shape != (batch, scores_shape[-2]):
            raise ValueError(
                f"2-D valid_lens must have shape (B, T_q) = ({batch}, {scores_shape[-2]}), "
                f"got {tuple(valid_lens.shape)}"
            )
        lens = valid_lens.view(batch, *([1] * (len(scores_shape) - 3)), scores_shape[-2], 1)
    else:
        raise ValueError(f"valid_lens must be 1-D (B,) or 2-D (B, T_q), got {valid_lens.dim()}-D")
    return keys < lens


def masked_softmax(
    scores: Tensor, valid_lens: Tensor | None = None, *, mask: Tensor | None = None
) -> Tensor:
    """Softmax over the last axis that ignores masked keys.

    Masked entries are filled with the most negative finite value before the
    softmax (so no ``-inf - -inf`` NaNs appear, even in gradients), and the
    result is then zeroed where masked: masked keys get *exactly* zero weight,
    and a row with no visible key is all zeros rather than uniform.

    Args:
        scores: attention scores ``(B, ..., T_q, T_k)``.
        valid_lens: the number of visible keys, either per batch row ``(B,)``
            or per query ``(B, T_q)``; keys ``>= valid_len`` are masked.
        mask: boolean, ``True`` = may attend, broadcastable to ``scores``.
            Combined with ``valid_lens`` (both must allow a key) if both are given.

    Returns:
        Weights of the same shape as ``scores``, each row summing to 1 (or 0).

    >>> import torch
    >>> masked_softmax(torch.zeros(1, 1, 4), torch.tensor([2]))
    tensor([[[0.5000, 0.5000, 0.0000, 0.0000]]])
    """
    keep = None
    if valid_lens is not None:
        keep = _valid_lens_to_mask(valid_lens, scores.shape)
    if mask is not None:
        m = _check_mask(mask, scores.shape)
        keep = m if keep is None else keep & m
    if keep is None:
        return torch.softmax(scores, dim=-1)
    filled = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
    weights = torch.softmax(filled, dim=-1)
    # A fully masked row softmaxes to uniform; zero it (and masked keys) explicitly.
    return weights.masked_fill(~keep, 0.0)


# ==== Kernel regression as attention pooling ====


def nadaraya_watson(
    queries: Tensor, keys: Tensor, values: Tensor, bandwidth: float | Tensor = 1.0
) -> tuple[Tensor, Tensor]:
    """Nadaraya-Watson kernel regression with a Gaussian kernel.

    ``f(q) = sum_i softmax_i(-((q - k_i) / h)^2 / 2) * v_i``: attention pooling
    where the score of a key is minus half its squared distance to the query.
    With ``h -> inf`` it becomes average pooling; with ``h -> 0`` it returns
    the value of the nearest key.

    Args:
        queries: ``(Q,)`` query points.
        keys: ``(N,)`` training inputs.
        values: ``(N,)`` or ``(N, D)`` training targets.
        bandwidth: the kernel width ``h`` (> 0).

    Returns:
        ``(predictions, weights)`` of shapes ``(Q,)`` or ``(Q, D)``, and ``(Q, N)``.

    >>> import torch
    >>> pred, w = nadaraya_watson(torch.tensor([0.0]), torch.tensor([-1.0, 1.0]), torch.tensor([2.0, 4.0]))
    >>> pred, w
    (tensor([3.]), tensor([[0.5000, 0.5000]]))
    """
    if isinstance(bandwidth, (int, float)) and bandwidth <= 0:
        raise ValueError(f"bandwidth must be > 0, got {bandwidth}")
    if keys.shape[0] != values.shape[0]:
        raise ValueError(f"{keys.shape[0]} keys but {values.shape[0]} values")
    diff = (queries.unsqueeze(-1) - keys.unsqueeze(0)) / bandwidth  # (Q, N)
    weights = torch.softmax(-0.5 * diff**2, dim=-1)  # (Q, N)
    return weights @ values, weights


class NadarayaWatsonRegression(nn.Module):
    """Parametric Nadaraya-Watson regression: a learnable inverse bandwidth ``w``.

    Scores are ``-((q - k) * w)^2 / 2``; training ``w`` by gradient descent
    trades smoothness against fit, which is attention with one parameter.

    >>> import torch
    >>> m = NadarayaWatsonRegression(w=1.0)
    >>> m(torch.tensor([0.0]), torch.tensor([-1.0, 1.0]), torch.tensor([2.0, 4.0]))
    tensor([3.], grad_fn=<SqueezeBackward1>)
    """

    def __init__(self, w: float | None = None) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.rand(1) if w is None else torch.tensor([float(w)]))

    def forward(self, queries: Tensor, keys: Tensor, values: Tensor) -> Tensor:
        """Predict at ``queries`` (Q,) from ``keys`` (N,) or (Q, N) and ``values`` likewise."""
        if keys.dim() == 1:
            keys = keys.unsqueeze(0).expand(queries.shape[0], -1)  # (Q, N)
            values = values.unsqueeze(0).expand(queries.shape[0], -1)  # (Q, N)
        diff = (queries.unsqueeze(-1) - keys) * self.w  # (Q, N)
        weights = torch.softmax(-0.5 * diff**2, dim=-1)  # (Q, N)
        return torch.bmm(weights.unsqueeze(1), values.unsqueeze(-1)).squeeze(-1).squeeze(-1)


# ==== Additive attention ====


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention: ``a(q, k) = w_v^T tanh(W_q q + W_k k)``.

    Useful when queries and keys have different sizes; costs a ``(B, Q, K, h)``
    feature tensor, which is why dot-product attention replaced it at scale.

    Args:
        query_size: feature size of the queries.
        key_size: feature size of the keys.
        num_hiddens: size ``h`` of the hidden layer.
        dropout: dropout on the attention weights (training only).

    >>> import torch
    >>> attn = AdditiveAttention(3, 2, 8).eval()
    >>> out = attn(torch.randn(1, 4, 3), torch.ones(1, 5, 2), torch.randn(1, 5, 6))
    >>> tuple(out.shape)
    (1, 4, 6)
    """

    def __init__(self, query_size: int, key_size: int, num_hiddens: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.W_q = nn.Linear(query_size, num_hiddens, bias=False)
        self.W_k = nn.Linear(key_size, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        queries: Tensor,
        keys: Tensor,
        values: Tensor,
        valid_lens: Tensor | None = None,
        *,
        mask: Tensor | None = None,
        return_weights: bool = False,
    ) -> Tensor | tuple[Tensor, Tensor]:
        """Attend ``queries`` (B, Q, dq) over ``keys`` (B, K, dk) and ``values`` (B, K, dv)."""
        features = torch.tanh(self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1))  # (B, Q, K, h)
        scores = self.w_v(features).squeeze(-1)  # (B, Q, K)
        weights = masked_softmax(scores, valid_lens, mask=mask)  # (B, Q, K)
        out = torch.bmm(self.dropout(weights), values)  # (B, Q, dv)
        return (out, weights) if return_weights else out


# ==== Scaled dot-product attention ====


@overload
def scaled_dot_product_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = ..., *, dropout_p: float = ...,
    scale: float | None = ..., impl: AttnImpl = ..., return_weights: Literal[False] = ...,
) -> Tensor: ...


@overload
def scaled_dot_product_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = ..., *, dropout_p: float = ...,
    scale: float | None = ..., impl: AttnImpl = ..., return_weights: Literal[True],
) -> tuple[Tensor, Tensor]: ...


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    dropout_p: float = 0.0,
    scale: float | None = None,
    impl: AttnImpl = "auto",
    return_weights: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """``softmax(Q K^T * scale + mask) V`` with a fast and a plain path.

    ``impl="sdpa"`` calls :func:`torch.nn.functional.scaled_dot_product_attention`
    (fused kernels on CPU and GPU); ``impl="plain"`` spells the computation out
    with :func:`masked_softmax`. Both agree to about 1e-6 in float32. ``"auto"``
    takes the fast path unless the weights are asked for, which only the plain
    path can return. In both paths a query with no visible key gets a zero
    output (never NaN).

    Args:
        q: queries ``(..., T_q, d)``, typically ``(B, nh, T, hs)``.
        k: keys ``(..., T_k, d)``.
        v: values ``(..., T_k, d_v)``.
        mask: boolean, ``True`` = may attend, broadcastable to ``(..., T_q, T_k)``.
        dropout_p: dropout on the weights; pass 0 in eval mode.
        scale: score scale, ``1 / sqrt(d)`` by default.
        impl: ``"auto"``, ``"sdpa"`` or ``"plain"``.
        return_weights: also return the ``(..., T_q, T_k)`` weights (plain path).

    >>> import torch
    >>> q = k = torch.zeros(1, 2, 4)
    >>> v = torch.tensor([[[1.0, 0, 0, 0], [3.0, 0, 0, 0]]])
    >>> scaled_dot_product_attention(q, k, v)[0, 0]
    tensor([2., 0., 0., 0.])
    """
    if impl not in ("auto", "sdpa", "plain"):
        raise ValueError(f"impl must be 'auto', 'sdpa' or 'plain', got {impl!r}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"queries have size {q.shape[-1]} but keys have size {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"{k.shape[-2]} keys but {v.shape[-2]} values")
    scores_shape = torch.Size((*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2]))
    if mask is not None:
        mask = _check_mask(mask, scores_shape)
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1])
    if impl == "sdpa" and return_weights:
        raise ValueError("return_weights needs the plain path; use impl='plain' or 'auto'")
    if impl == "auto" and dropout_p > 0 and not return_weights and _own_dropout(q):
        # The fused kernels draw attention dropout one element at a time (and on the CPU fall back to
        # this same sequence of ops anyway); models.dropout draws only the dropped elements.
        scores = torch.matmul(q, k.transpose(-2, -1)).mul_(scale)  # (B, nh, T_q, T_k)
        weights = masked_softmax(scores, mask=mask) if mask is not None else torch.softmax(scores, dim=-1)
        return torch.matmul(_dropout(weights, dropout_p), v)  # (B, nh, T_q, hs)
    if impl == "plain" or (impl == "auto" and return_weights):
        scores = torch.matmul(q, k.transpose(-2, -1)) * scale  # (B, nh, T_q, T_k)
        weights = masked_softmax(scores, mask=mask)
        dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
        out = torch.matmul(dropped, v)  # (B, nh, T_q, hs)
        return (out, weights) if return_weights else out
    if mask is not None and mask.dim() < 2:
        mask = mask.expand(scores_shape[-2:])  # the fused kernel wants (T_q, T_k) at least
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale)
    if mask is not None:
        # Fused kernels may return NaN for a query that sees no key; the plain
        # path returns 0 there, so make both paths agree. On an accelerator the
        # fill is unconditional: checking first would stall on a host sync.
        visible = mask.any(dim=-1, keepdim=True)
        if out.device.type != "cpu" or torch.compiler.is_compiling() or not bool(visible.all()):
            out = out.masked_fill(~visible, 0.0)
    return out


def _own_dropout(q: Tensor) -> bool:
    """Whether attention dropout is cheaper drawn by :mod:`models.dropout` (eager CPU float)."""
    return q.device.type == "cpu" and q.is_floating_point() and not torch.compiler.is_compiling()


def take_rows(x: Tensor, rows: Tensor) -> Tensor:
    """The rows of ``x`` (B, T, C) that ``rows`` selects, packed as (N, C).

    ``rows`` is a boolean (B, T) mask (N varies with its values) or a 1-D long
    tensor of flat indices ``b * T + t`` (N is its length: static shapes).

    >>> import torch
    >>> x = torch.arange(6.0).view(1, 3, 2)
    >>> take_rows(x, torch.tensor([2, 0])).tolist()
    [[4.0, 5.0], [0.0, 1.0]]
    """
    if rows.dtype == torch.bool:
        return x[rows]
    return x.reshape(-1, x.shape[-1]).index_select(0, rows)


def _padding_mask(mask: Tensor | None, B: int, T: int) -> Tensor | None:
    """A (B, 1, 1, T) key mask as (B, T); anything else cannot drive block-sparse attention."""
    if mask is None:
        return None
    if mask.dim() == 4 and mask.shape[1:3] == (1, 1) and mask.shape[0] in (1, B) and mask.shape[3] == T:
        return mask[:, 0, 0].expand(B, T)
    raise ValueError(
        f"block-sparse attention takes a padding mask (B, 1, 1, T) = {(B, 1, 1, T)}, got {tuple(mask.shape)}; "
        "per-query masks need attention_type='original_full'"
    )


class MultiHeadAttention(nn.Module):
    """Multi-head attention with learned projections ``q, k, v`` and ``o``.

    Each head attends in its own ``hidden_size / num_heads`` subspace; the heads'
    outputs are concatenated and mixed by ``o``. Self-attention when ``context``
    is omitted, cross-attention otherwise.

    Args:
        hidden_size: model width (divisible by ``num_heads``).
        num_heads: number of heads.
        bias: whether the four projections have biases.
        dropout: dropout on the attention weights (training only).
        impl: ``"auto"``, ``"sdpa"`` or ``"plain"`` (see :func:`scaled_dot_product_attention`).
        sparse: a :class:`BlockSparseAttention` to use for self-attention instead
            of dense attention (BigBird); it takes only padding masks.

    >>> import torch
    >>> mha = MultiHeadAttention(8, 2).eval()
    >>> tuple(mha(torch.randn(3, 5, 8)).shape)
    (3, 5, 8)
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        *,
        bias: bool = True,
        dropout: float = 0.0,
        impl: AttnImpl = "auto",
        sparse: BlockSparseAttention | None = None,
    ) -> None:
        super().__init__()
        if hidden_size % num_heads != 0:
            raise ValueError(f"hidden_size {hidden_size} is not divisible by num_heads {num_heads}")
        self.num_heads = num_heads
        self.head_size = hidden_size // num_heads
        self.dropout = dropout
        self.impl: AttnImpl = impl
        self.q = nn.Linear(hidden_size, hidden_size, bias=bias)
        self.k = nn.Linear(hidden_size, hidden_size, bias=bias)
        self.v = nn.Linear(hidden_size, hidden_size, bias=bias)
        self.o = nn.Linear(hidden_size, hidden_size, bias=bias)
        self.sparse = sparse

    def _split(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.head_size).transpose(1, 2)  # (B, nh, T, hs)

    def forward(
        self,
        x: Tensor,
        context: Tensor | None = None,
        mask: Tensor | None = None,
        *,
        return_weights: bool = False,
        rows: Tensor | None = None,
    ) -> Tensor | tuple[Tensor, Tensor]:
        """Attend from ``x`` (B, T, C) over ``context`` (B, S, C), default ``x``.

        ``mask`` is boolean (True = may attend), broadcastable to (B, nh, T, S);
        a key-padding mask is ``(B, 1, 1, S)``. ``rows``, boolean (B, T), keeps
        only those queries' outputs, packed as (N, C) in row-major order: the
        output projection then runs on N rows instead of B * T.
        """
        sparse = self.sparse if context is None else None
        if rows is not None and sparse is None and not return_weights:
            return self._attend_rows(x, x if context is None else context, mask, rows)
        context = x if context is None else context
        q, k, v = self._split(self.q(x)), self._split(self.k(context)), self._split(self.v(context))
        dropout_p = self.dropout if self.training else 0.0
        weights = None
        if sparse is not None:
            if return_weights:
                raise ValueError("block-sparse attention does not return weights")
            out = sparse(q, k, v, _padding_mask(mask, x.shape[0], x.shape[1]))
        elif return_weights:
            out, weights = scaled_dot_product_attention(
                q, k, v, mask, dropout_p=dropout_p, impl=self.impl, return_weights=True
            )
        else:
            out = scaled_dot_product_attention(q, k, v, mask, dropout_p=dropout_p, impl=self.impl)
        B, _, T, _ = out.shape
        out = out.transpose(1, 2).reshape(B, T, -1)  # (B, T, C)
        if rows is not None:
            out = take_rows(out, rows)  # (N, C)
        out = self.o(out)  # (B, T, C) or (N, C)
        return (out, weights) if weights is not None else out

    def _attend_rows(self, x: Tensor, context: Tensor, mask: Tensor | None, rows: Tensor) -> Tensor:
        """Queries only at ``rows``: (N, C), equal to the selected rows of the full output.

        Every query attends on its own, so the selected ones are computed alone: their
        projections, and attention of (B, nh, M, S) for the M most queries any sequence has
        (the others of a sequence pad its slots and are dropped), instead of (B, nh, T, S).
        """
        B, T, C = x.shape
        if rows.dtype == torch.bool:
            counts = rows.sum(1)  # (B,)
            M = int(counts.max()) if B else 0
            slots = torch.arange(M, device=x.device)[None, :] < counts[:, None]  # (B, M) used slots
            where = torch.zeros(B, M, dtype=torch.long, device=x.device)  # (B, M) query position per slot
            where[slots] = rows.nonzero()[:, 1]  # row-major: sequence by sequence, positions in order
        else:
            M = rows.numel() // B if B else 0
            where = (rows % T).view(B, M)  # flat indices b * T + t, the same count per sequence
            slots = None
        picked = take_rows(x, rows)  # (N, C)
        q = self.q(picked)  # (N, C)
        if slots is not None:
            q = q.new_zeros(B, M, C).masked_scatter(slots[:, :, None], q)  # (B, M, C)
        q = self._split(q.view(B, M, C))  # (B, nh, M, hs)
        k, v = self._split(self.k(context)), self._split(self.v(context))  # (B, nh, S, hs)
        if mask is not None and mask.dim() == 4 and mask.shape[-2] != 1:  # a mask per query: its rows
            mask = torch.take_along_dim(mask.expand(mask.shape[0], mask.shape[1], T, -1),
                                        where[:, None, :, None], dim=2)  # (B, 1|nh, M, S)
        dropout_p = self.dropout if self.training else 0.0
        out = scaled_dot_product_attention(q, k, v, mask, dropout_p=dropout_p, impl=self.impl)  # (B, nh, M, hs)
        out = out.transpose(1, 2).reshape(B, M, C)  # (B, M, C)
        out = out[slots] if slots is not None else out.reshape(B * M, C)  # (N, C)
        return self.o(out)


# ==== BigBird block-sparse attention ====


MID_IMPL = "sdpa"


class BlockSparseAttention(nn.Module):
    """BigBird's block-sparse attention (ITC: existing tokens made global).

    With blocks of ``b`` tokens and ``nb = T / b`` blocks:

    * query blocks 0 and nb-1 are *global rows*: they attend to every key;
    * every other query block q attends to the *global columns* 0 and nb-1,
      the *window* q-1, q, q+1, and R *random* blocks (per head).

    The middle blocks' keys and values are gathered, a chunk of query blocks at
    a time, into ``(B, nh * chunk, (5+R) b, hs)`` tensors, and each (head, query
    block) pair is one small dense attention through the fused kernel, so time
    is O(T * b * (7 + R)), linear in the sequence length, and the working memory
    beyond q, k, v and the output is a fixed few chunks. No T x T tensor is built.
    When gradients are needed (and there is no attention dropout) the same pattern
    runs as :func:`~models.block_sparse.block_sparse_attention` instead: batched
    matmuls and a hand-written backward that reuses the forward's weights, whose
    memory is also linear in T (see :attr:`OWN_BACKWARD`).

    Unlike transformers (v5.24):

    * the fallback to dense attention is decided per call -- a short batch
      runs dense attention for that call only and changes nothing;
    * the random plan is a seeded, per-layer function of ``nb`` -- the same
      in training and evaluation -- and can be injected (``rand_attn``);
    * ``random_plan="uniform"`` draws R *distinct* blocks from all the middle
      blocks outside the window, so the result equals dense attention under the
      equivalent mask (:meth:`block_adjacency`); ``"zeros"`` points every random
      block at block 0, which is what transformers does in eval mode.

    Inputs whose length is not a multiple of ``b`` are padded internally with
    masked keys, and outputs of padded queries are zero (as in transformers,
    which multiplies the context by the query mask).

    Args:
        num_heads: heads of the attention this serves.
        block_size: ``b``.
        num_random_blocks: ``R``.
        random_plan: ``"uniform"`` or ``"zeros"``.
        seed: seeds the uniform plan (give each layer its own).

    >>> import torch
    >>> attn = BlockSparseAttention(num_heads=2, block_size=4, num_random_blocks=1)
    >>> q = k = v = torch.randn(1, 2, 40, 8)  # (B, nh, T, hs)
    >>> tuple(attn(q, k, v).shape), attn.is_sparse(40), attn.is_sparse(28)
    ((1, 2, 40, 8), True, False)
    """

    #: Bytes of gathered keys per chunk of middle query blocks (values take as much again).
    #: The same on CPU and GPU. Measured on an H200 (BigBird-base width, 4 layers, eval): 256 MiB
    #: chunks made the 4096-token forward 11% faster than 16 MiB chunks but raised its peak memory
    #: from 448 to 613 MiB, so memory linear in T with a small constant won.
    CHUNK_BYTES: int = 16 * 1024 * 1024
    #: Chunks of middle query blocks when gradients are needed (see ``forward``). Measured on CPU
    #: (fwd + bwd, T = 4096, 12 heads): one chunk per 16 MiB (14 chunks) took 1.5x the time of one
    #: chunk, and one chunk held the gathered keys' and values' gradients all at once.
    TRAIN_CHUNKS: int = 4
    #: Training without dropout runs :func:`~models.block_sparse.block_sparse_attention` (batched
    #: matmuls, a backward that reuses the forward's weights) rather than the fused kernel per
    #: (head, block) pair, whose generic CPU backward took about half of a forward + backward.
    OWN_BACKWARD: bool = True
    #: Bytes of gathered keys per chunk in that function on the CPU. Measured (fwd + bwd, T = 4096,
    #: 12 heads, one thread): 2 MiB (one query block per chunk here) took 575 ms, 16 MiB 728 ms and
    #: 64 MiB 869 ms: a chunk's keys, values and weights then stay in the cache between the matmuls
    #: and the softmax. Accelerators keep ``CHUNK_BYTES`` (fewer, larger kernels).
    OWN_CHUNK_BYTES_CPU: int = 2 * 1024 * 1024

    def __init__(
        self,
        num_heads: int,
        block_size: int = 64,
        num_random_blocks: int = 3,
        *,
        random_plan: Literal["uniform", "zeros"] = "uniform",
        seed: int = 0,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if block_size < 1 or num_random_blocks < 0:
            raise ValueError(f"need block_size >= 1 and num_random_blocks >= 0, got {block_size}, {num_random_blocks}")
        if random_plan not in ("uniform", "zeros"):
            raise ValueError(f"random_plan must be 'uniform' or 'zeros', got {random_plan!r}")
        self.num_heads = num_heads
        self.block_size = block_size
        self.num_random_blocks = num_random_blocks
        self.random_plan = random_plan
        self.seed = seed
        self.dropout = dropout
        #: An injected plan ``(nh, nb-2, R)`` of random key blocks; ``None`` = generate.
        self.rand_attn: Tensor | None = None
        self._plans: dict[int, Tensor] = {}
        self._tables: dict[tuple[int, str], tuple[Tensor, Tensor]] = {}

    def min_sparse_length(self) -> int:
        """The shortest length that runs sparse: ``(5 + 2R) * b + 1``, as in transformers."""
        return (5 + 2 * self.num_random_blocks) * self.block_size + 1

    def is_sparse(self, seq_len: int) -> bool:
        """Whether a call with ``seq_len`` tokens runs block-sparse (else dense)."""
        return seq_len >= self.min_sparse_length()

    def plan(self, num_blocks: int) -> Tensor:
        """The random key blocks ``(nh, nb-2, R)`` for ``num_blocks`` blocks.

        The injected :attr:`rand_attn` if set, else the seeded plan for this
        ``nb`` (cached; it depends on nothing else, so train and eval agree).
        """
        nh, M, R = self.num_heads, num_blocks - 2, self.num_random_blocks
        if self.rand_attn is not None:
            if tuple(self.rand_attn.shape) != (nh, M, R):
                raise ValueError(
                    f"rand_attn has shape {tuple(self.rand_attn.shape)} but {num_blocks} blocks need (nh, nb-2, R) = "
                    f"{(nh, M, R)}"
                )
            bad = values_checked(self.rand_attn) and (
                int(self.rand_attn.min()) < 0 or int(self.rand_attn.max()) >= num_blocks)
            if bad:
                raise ValueError(f"rand_attn holds block indices outside [0, {num_blocks})")
            return self.rand_attn.long()
        if num_blocks not in self._plans:
            if self.random_plan == "zeros":
                plan = torch.zeros(nh, M, R, dtype=torch.long)
            else:
                plan = self._uniform_plan(num_blocks)
            self._plans[num_blocks] = plan.sort(dim=-1).values
        return self._plans[num_blocks]

    def _uniform_plan(self, num_blocks: int) -> Tensor:
        """R distinct random blocks per (head, middle query block), outside the window.

        Floyd's sampling on ranks among the allowed blocks, vectorised over
        heads and rows: O(nh * nb * R) memory, never O(nb^2).
        """
        nh, R = self.num_heads, self.num_random_blocks
        M = num_blocks - 2
        # Checked on Python ints: the plan is built inside the forward, which may be traced.
        fewest = min(max(q - 2, 0) + max(num_blocks - 3 - q, 0) for q in range(1, num_blocks - 1))
        if fewest < R:
            raise ValueError(
                f"{num_blocks} blocks are too few for {R} distinct random blocks per row "
                f"(block-sparse attention needs more than {self.min_sparse_length() - 1} tokens)"
            )
        q = torch.arange(1, num_blocks - 1)  # (M,) middle query blocks
        # Allowed: 1 .. q-2 and q+2 .. nb-2 (globals and the window are seen anyway).
        lower = (q - 2).clamp(min=0)  # (M,)
        count = lower + (num_blocks - 3 - q).clamp(min=0)  # (M,)
        # Counter-based draws (a hash of seed, head, row, step): no generator state,
        # so the plan is a pure function of (seed, nb) and traceable by torch.compile.
        heads = torch.arange(nh)[:, None]  # (nh, 1)
        rows = torch.arange(M)[None, :]  # (1, M)
        chosen = torch.zeros(nh, M, R, dtype=torch.long)
        for i in range(R):
            j = (count - R + i).expand(nh, -1)  # (nh, M): Floyd's j runs over C-R .. C-1
            t = (uniform(self.seed, num_blocks, heads, rows, i) * (j + 1)).long().clamp(max=j)
            taken = (chosen[..., :i] == t[..., None]).any(-1)
            chosen[..., i] = torch.where(taken, j, t)
        return torch.where(chosen < lower[:, None], 1 + chosen, q[:, None] + 2 + chosen - lower[:, None])

    def key_table(self, num_blocks: int, device: torch.device) -> tuple[Tensor, Tensor]:
        """Key-block table ``(nh, nb-2, 5+R)`` and slot validity ``(nb-2, 5+R)``.

        Row ``q-1`` of a head lists the key blocks of middle query block ``q``: the global
        column 0, the window ``q-1, q, q+1``, the global column ``nb-1``, then its random
        blocks; a slot is invalid where the window repeats a global column.

        Cached per ``(nb, device)`` unless a plan is injected: building it on the
        host and copying it to an accelerator on every call would stall the
        stream once per layer (a pageable host-to-device copy synchronises).
        """
        key = (num_blocks, str(device))
        if self.rand_attn is None and key in self._tables:
            return self._tables[key]
        nb = num_blocks
        q = torch.arange(1, nb - 1)  # (M,)
        fixed = torch.stack([torch.zeros_like(q), q - 1, q, q + 1, torch.full_like(q, nb - 1)], dim=-1)  # (M, 5)
        table = torch.cat([fixed.expand(self.num_heads, -1, -1), self.plan(nb).cpu()], dim=-1)  # (nh, M, 5+R)
        valid = torch.ones(nb - 2, 5 + self.num_random_blocks, dtype=torch.bool)
        # Window blocks that coincide with a global column are counted once.
        valid[0, 1] = False  # q = 1: q-1 is block 0
        valid[-1, 3] = False  # q = nb-2: q+1 is block nb-1
        result = (table.to(device), valid.to(device))
        if self.rand_attn is None:
            self._tables[key] = result
        return result

    def _own_backward(self, q: Tensor, k: Tensor, v: Tensor, dropout_p: float) -> bool:
        """Whether this call goes through :func:`~models.block_sparse.block_sparse_attention`.

        It does when gradients are needed, without attention dropout, in float32 or float64. The
        fused kernel stays for inference (it keeps no weights, so its memory is flat in T), for
        dropout (drawn inside the kernel) and for half precision (whose softmax statistics the
        kernel keeps in float32, where ours would hold bfloat16 weights).
        """
        grads = torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad)
        return (self.OWN_BACKWARD and grads and dropout_p == 0.0
                and q.dtype in (torch.float32, torch.float64))

    def block_adjacency(self, num_blocks: int) -> Tensor:
        """Boolean ``(nh, nb, nb)``: which key blocks each query block attends to.

        Expanded to tokens (``repeat_interleave`` by ``b`` on both axes) it is
        the dense mask this attention equals when the plan has no duplicates.
        """
        table, valid = self.key_table(num_blocks, torch.device("cpu"))
        adj = torch.zeros(self.num_heads, num_blocks, num_blocks, dtype=torch.bool)
        adj[:, 0] = adj[:, -1] = True
        rows = torch.arange(1, num_blocks - 1)[None, :, None].expand_as(table)
        adj[torch.arange(self.num_heads)[:, None, None].expand_as(table), rows, table] = True
        del valid  # duplicates of a global block are already set
        return adj

    def forward(self, q: Tensor, k: Tensor, v: Tensor, key_mask: Tensor | None = None) -> Tensor:
        """Self-attention over ``q, k, v`` ``(B, nh, T, hs)``; ``key_mask`` (B, T), True = real token."""
        B, nh, T, hs = q.shape
        if nh != self.num_heads:
            raise ValueError(f"got {nh} heads but this attention was built for {self.num_heads}")
        if key_mask is not None:
            if key_mask.shape != (B, T):
                raise ValueError(
                    f"block-sparse attention takes a padding mask of shape (B, T) = {(B, T)}, "
                    f"got {tuple(key_mask.shape)}"
                )
            key_mask = key_mask.bool()
        dropout_p = self.dropout if self.training else 0.0
        if not self.is_sparse(T):
            # Too short for the pattern: dense attention, for this call only.
            mask = key_mask[:, None, None, :] if key_mask is not None else None
            return scaled_dot_product_attention(q, k, v, mask, dropout_p=dropout_p)

        b = self.block_size
        pad = (-T) % b
        if key_mask is None and pad:
            key_mask = torch.ones(B, T, dtype=torch.bool, device=q.device)
        if pad:
            q, k, v = F.pad(q, (0, 0, 0, pad)), F.pad(k, (0, 0, 0, pad)), F.pad(v, (0, 0, 0, pad))
            key_mask = F.pad(key_mask, (0, pad), value=False)
        n = T + pad
        nb = n // b
        M = nb - 2
        scale = 1.0 / math.sqrt(hs)

        # Without a mask there is nothing to check (and no host sync on an accelerator).
        # Skipping the masks when nothing is padded needs a look at the values,
        # which only eager CPU code may take (a sync on a GPU, a graph break
        # under torch.compile): elsewhere a given mask is always applied.
        no_padding = key_mask is None or (values_checked(key_mask) and bool(key_mask.all()))
        table, valid = self.key_table(nb, q.device)  # (nh, M, S), (M, S)
        S = table.shape[-1]
        per_block = B * nh * S * b * hs * k.element_size()
        step = max(1, self.CHUNK_BYTES // per_block)
        if self._own_backward(q, k, v, dropout_p):
            # Training without attention dropout: our function with its own backward.
            mask = None if no_padding else key_mask
            if q.device.type == "cpu":
                step = max(1, self.OWN_CHUNK_BYTES_CPU // per_block)
            out = block_sparse_attention(q, k, v, table, valid, mask, block=b, chunk=step)  # (B, nh, n, hs)
            if not no_padding:
                out = out * key_mask[:, None, :, None].to(out.dtype)  # padded queries give 0
            return out[:, :, :T]

        # Global rows: query blocks 0 and nb-1 see every key.
        q_glob = torch.cat([q[:, :, :b], q[:, :, -b:]], dim=2)  # (B, nh, 2b, hs)
        glob_mask = None if no_padding else key_mask[:, None, None, :]
        glob = scaled_dot_product_attention(q_glob, k, v, glob_mask, dropout_p=dropout_p, impl="sdpa")

        # Middle rows: gather their 5+R key blocks each (one index_select per
        # tensor over (head, block) pairs), then run every (head, query block)
        # as its own small dense attention through the fused kernel, so the
        # (b, (5+R) b) score tiles are never materialised as one tensor. Query
        # blocks go in chunks whose gathered keys take about CHUNK_BYTES: peak
        # memory stays flat in T (in eval) and the allocator reuses the buffers.
        flat = (table + nb * torch.arange(nh, device=q.device)[:, None, None])  # (nh, M, S)
        k_blocks = k.reshape(B, nh * nb, b, hs)  # (B, nh*nb, b, hs)
        v_blocks = v.reshape(B, nh * nb, b, hs)
        slot_ok = valid[:, :, None].expand(M, S, b).reshape(M, S * b)  # duplicate window slots off
        if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
            # Training: autograd keeps every chunk's gathered keys for the backward pass
            # whatever the chunking, and each chunk's backward fills a zero gradient of
            # the *whole* key tensor (index_select and slicing backward): small chunks
            # cost O(chunks * T). A few chunks keep that negligible while the gradients
            # of the gathered keys and values exist for one chunk at a time.
            step = -(-M // self.TRAIN_CHUNKS)
        mids = []
        for m0 in range(0, M, step):
            m1 = min(M, m0 + step)
            mc = m1 - m0
            idx = flat[:, m0:m1].reshape(-1)  # (nh*mc*S,)
            k_g = k_blocks.index_select(1, idx).view(B, nh * mc, S * b, hs)
            v_g = v_blocks.index_select(1, idx).view(B, nh * mc, S * b, hs)
            q_mid = q[:, :, (1 + m0) * b : (1 + m1) * b].reshape(B, nh * mc, b, hs)  # (B, nh*mc, b, hs)
            if no_padding and 0 < m0 and m1 < M:
                m_g = None  # every slot is valid away from the first and last middle rows
            elif no_padding:
                m_g = slot_ok[m0:m1].expand(nh, mc, S * b).reshape(1, nh * mc, 1, S * b)
            else:
                assert key_mask is not None
                m_g = key_mask.view(B, nb, b)[:, table[:, m0:m1]].reshape(B, nh, mc, S * b) & slot_ok[m0:m1]
                m_g = m_g.reshape(B, nh * mc, 1, S * b)
            mid = scaled_dot_product_attention(q_mid, k_g, v_g, m_g, dropout_p=dropout_p, scale=scale, impl=MID_IMPL)
            mids.append(mid.reshape(B, nh, mc * b, hs))  # (B, nh, mc*b, hs)

        out = torch.cat([glob[:, :, :b], *mids, glob[:, :, b:]], dim=2)  # (B, nh, n, hs)
        if not no_padding:
            out = out * key_mask[:, None, :, None].to(out.dtype)  # padded queries give 0
        return out[:, :, :T]
