"""The one transformer encoder layer and stack that every variant uses.

Faithful mode is BERT's post-LN block::

    x = LN(x + drop(attn(x)))
    x = LN(x + drop(ffn(x)))

``norm="pre"`` gives the pre-LN block (``x + drop(attn(LN(x)))``) with a final
norm after the stack, which tolerates higher learning rates; ``bias=False``
removes every bias; ``gated_ffn=True`` uses a GLU feed-forward. Parameter
sharing (ALBERT) is a property of the stack: it holds the distinct layers and a
*schedule* saying which of them run at each depth.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from models.attention import BlockSparseAttention, MultiHeadAttention, take_rows
from models.config import BertConfig
from models.dropout import Dropout

__all__ = ["Encoder", "EncoderLayer", "FeedForward", "get_activation"]


def _gelu_tanh(x: Tensor) -> Tensor:
    return F.gelu(x, approximate="tanh")


def _quick_gelu(x: Tensor) -> Tensor:
    return x * torch.sigmoid(1.702 * x)


_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "gelu": F.gelu,
    "gelu_python": F.gelu,
    "gelu_new": _gelu_tanh,
    "gelu_pytorch_tanh": _gelu_tanh,
    "gelu_fast": _gelu_tanh,
    "quick_gelu": _quick_gelu,
    "relu": F.relu,
    "silu": F.silu,
}


def get_activation(name: str) -> Callable[[Tensor], Tensor]:
    """The activation function for a transformers activation name.

    ``"gelu"`` is the exact (erf) GELU; ``"gelu_new"`` is the tanh form of
    Google's TF code (ALBERT, BigBird). They differ by up to 4.7e-4.

    >>> import torch
    >>> get_activation("gelu")(torch.tensor([0.0, 1.0]))
    tensor([0.0000, 0.8413])
    """
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"unknown activation {name!r}; known: {', '.join(_ACTIVATIONS)}") from None


def _layer_norm(config: BertConfig, size: int | None = None) -> nn.LayerNorm:
    return nn.LayerNorm(size or config.hidden_size, eps=config.layer_norm_eps, bias=config.bias)


class FeedForward(nn.Module):
    """Position-wise feed-forward: ``fc_out(act(fc_in(x)))``, or gated.

    Gated (GLU): ``fc_in`` produces 2I features split as ``(gate, up)`` and the
    block computes ``fc_out(act(gate) * up)``.

    >>> import torch
    >>> ffn = FeedForward(BertConfig.preset("tiny"))
    >>> tuple(ffn(torch.zeros(1, 3, 64)).shape)
    (1, 3, 64)
    """

    def __init__(self, config: BertConfig, *, inner_dropout: float = 0.0) -> None:
        super().__init__()
        inner = config.intermediate_size * (2 if config.gated_ffn else 1)
        # BERT has no dropout inside the FFN; XLNet has (after the activation).
        self.dropout = Dropout(inner_dropout)
        self.gated = config.gated_ffn
        self.fc_in = nn.Linear(config.hidden_size, inner, bias=config.bias)
        self.fc_out = nn.Linear(config.intermediate_size, config.hidden_size, bias=config.bias)
        self.act = get_activation(config.hidden_act)

    def forward(self, x: Tensor) -> Tensor:
        """(B, T, H) -> (B, T, H)."""
        h = self.fc_in(x)  # (B, T, I) or (B, T, 2I)
        if self.gated:
            gate, up = h.chunk(2, dim=-1)
            h = self.act(gate) * up
        else:
            h = self.act(h)
        return self.fc_out(self.dropout(h))


class EncoderLayer(nn.Module):
    """One transformer encoder layer: self-attention then feed-forward, each
    wrapped in a residual connection and a layer norm (post- or pre-LN).

    >>> import torch
    >>> layer = EncoderLayer(BertConfig.preset("tiny")).eval()
    >>> tuple(layer(torch.randn(2, 5, 64)).shape)
    (2, 5, 64)
    """

    def __init__(self, config: BertConfig, layer_idx: int = 0) -> None:
        super().__init__()
        self.pre_ln = config.norm == "pre"
        sparse = None
        if config.attention_type == "block_sparse":
            sparse = BlockSparseAttention(
                config.num_heads, config.block_size, config.num_random_blocks,
                random_plan=config.random_plan, seed=config.attention_seed + layer_idx,
                dropout=config.attention_dropout,
            )
        self.attn = MultiHeadAttention(
            config.hidden_size, config.num_heads, bias=config.bias,
            dropout=config.attention_dropout, impl=config.attn_impl, sparse=sparse,
        )
        self.attn_norm = _layer_norm(config)
        self.ffn = FeedForward(config)
        self.ffn_norm = _layer_norm(config)
        self.dropout = Dropout(config.hidden_dropout)
        self.ffn_dropout = Dropout(config.hidden_dropout if config.ffn_output_dropout else 0.0)

    def forward(self, x: Tensor, mask: Tensor | None = None, rows: Tensor | None = None) -> Tensor:
        """``x`` (B, T, H); ``mask`` boolean (B, 1, 1|T, T), True = may attend.

        With ``rows`` (boolean (B, T)) every position still serves as a key and
        value, but only the selected queries go on through the output
        projection, the residuals and the feed-forward: the result is (N, H),
        packed in row-major order, and equals the selected rows of the full
        output. Everything after attention is per position, so this is exact.
        """
        if self.pre_ln:
            res = x if rows is None else take_rows(x, rows)  # (B, T, H) or (N, H)
            x = res + self.dropout(self.attn(self.attn_norm(x), mask=mask, rows=rows))
            return x + self.ffn_dropout(self.ffn(self.ffn_norm(x)))
        res = x if rows is None else take_rows(x, rows)  # (B, T, H) or (N, H)
        x = self.attn_norm(res + self.dropout(self.attn(x, mask=mask, rows=rows)))
        return self.ffn_norm(x + self.ffn_dropout(self.ffn(x)))


def _schedule(config: BertConfig) -> tuple[int, list[list[int]]]:
    """How many distinct layers to build, and which run at each depth."""
    L = config.num_layers
    if config.share == "all":
        # transformers' ALBERT: depth i runs group int(i / (L / G)), and each
        # group runs its inner layers one after the other.
        G, inner = config.num_hidden_groups, config.inner_group_num
        groups = [int(i / (L / G)) for i in range(L)]
        return G * inner, [[g * inner + j for j in range(inner)] for g in groups]
    return L, [[i] for i in range(L)]


class Encoder(nn.Module):
    """A stack of :class:`EncoderLayer`, with optional parameter sharing.

    ``layers`` holds the distinct layers; ``schedule[i]`` lists those that run at
    depth ``i``. ``share="attention"`` / ``"ffn"`` build one layer per depth but
    make them all use layer 0's attention (with its norm) or feed-forward (with
    its norm) -- the ALBERT paper's ablations, which transformers lacks.

    >>> import torch
    >>> enc = Encoder(BertConfig.preset("tiny", share="all")).eval()
    >>> len(enc.layers), enc.schedule
    (1, [[0], [0]])
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        n_unique, self.schedule = _schedule(config)
        self.layers = nn.ModuleList(EncoderLayer(config, i) for i in range(n_unique))
        if config.share in ("attention", "ffn"):
            first = self.layers[0]
            for layer in self.layers[1:]:
                if config.share == "attention":
                    layer.attn, layer.attn_norm = first.attn, first.attn_norm
                else:
                    layer.ffn, layer.ffn_norm = first.ffn, first.ffn_norm
        self.final_norm = _layer_norm(config) if config.norm == "pre" else None
        #: Recompute each layer in the backward pass (see ``set_gradient_checkpointing``).
        self.gradient_checkpointing = False

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        *,
        output_hidden_states: bool = False,
        rows: Tensor | None = None,
    ) -> tuple[Tensor, tuple[Tensor, ...] | None]:
        """Run the stack on ``x`` (B, T, H).

        Args:
            x: the embeddings (B, T, H).
            mask: boolean (B, 1, 1|T, T), True = may attend.
            output_hidden_states: also return every layer's output.
            rows: boolean (B, T); if given, the *last* layer computes only the
                selected positions (see :meth:`EncoderLayer.forward`) and the
                result is (N, H) packed in row-major order. For heads that read
                a few positions (masked-LM targets, [CLS]); it cannot be
                combined with ``output_hidden_states``.

        Returns:
            The last hidden state (B, T, H) and, if asked, the hidden states
            ``(embeddings, after layer 1, ...)``: one entry per layer *run*, so
            ALBERT with ``inner_group_num=2`` gives ``2L + 1`` entries, as in
            transformers. With pre-LN the last entry is after the final norm.
        """
        if rows is not None and output_hidden_states:
            raise ValueError("rows= computes only part of the last layer; it cannot return all hidden states")
        states = [x] if output_hidden_states else None
        last = len(self.schedule) - 1
        for depth, idx in enumerate(self.schedule):
            for n, i in enumerate(idx):
                final = depth == last and n == len(idx) - 1
                layer_rows = rows if final else None
                if self.gradient_checkpointing and self.training and torch.is_grad_enabled():
                    x = checkpoint(self.layers[i], x, mask, layer_rows, use_reentrant=False)
                else:
                    x = self.layers[i](x, mask, layer_rows)
                if self.final_norm is not None and final:
                    x = self.final_norm(x)
                if states is not None:
                    states.append(x)
        return x, tuple(states) if states is not None else None
