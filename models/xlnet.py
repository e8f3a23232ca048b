"""XLNet: two-stream relative attention over a permuted factorisation order.

What differs from BERT is the attention, so that is what this module adds; the
feed-forward block and its residual norm are the shared encoder's.

* **Relative positions.** A score is ``(q + r_w)·k + (q + r_r)·R[i-j] + (q + r_s)·s_ij``:
  content, position (sinusoids of the distance, ``[sin | cos]`` halves) and
  segment (same or different segment only), each with its own learned bias.
* **Two streams.** The *content* stream ``h`` sees its own token; the *query*
  stream ``g`` starts from a learned ``mask_emb`` and sees the context but not
  its own token, so it can predict it. Both read keys and values from ``h``.
* ``perm_mask[b, i, j] = 1`` forbids position i to attend to j (the
  permutation); ``target_mapping[b, k, j] = 1`` says prediction k is for
  position j. Only the K predicted rows run through the query stream (real
  partial prediction: transformers scatters them over all T positions).
* **Memory.** Content states of earlier segments (``mems``) are prepended to the
  keys and always visible; they count as segment 0.

A query-stream row that may see nothing gets a zero attention output here;
transformers averages over every position (including the masked target).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from models.attention import masked_softmax
from models.bert import _Base, _check_ids
from models.checks import values_checked
from models.config import XLNetConfig
from models.encoder import FeedForward

__all__ = ["RelativeAttention", "XLNetLMHeadModel", "XLNetModel", "XLNetOutput", "relative_positions"]


@dataclass
class XLNetOutput:
    """What XLNet returns.

    Attributes:
        last_hidden_state: (B, T, H) content stream, or (B, K, H) query stream
            when ``target_mapping`` is given.
        logits: (B, T or K, V) with the LM head.
        loss: LM cross-entropy over labels != -100, with the LM head and labels.
        mems: per layer, the (B, M, H) content states to pass as ``mems`` next time.
        hidden_states: content-stream input of each layer, then the output.
        losses: ``{"plm": loss}`` with labels (the same loss, by name, as the BERT family's ``losses``).
    """

    last_hidden_state: Tensor
    logits: Tensor | None = None
    loss: Tensor | None = None
    mems: tuple[Tensor, ...] | None = None
    hidden_states: tuple[Tensor, ...] | None = None
    losses: dict[str, Tensor] | None = None


def relative_positions(qlen: int, klen: int, d_model: int, clamp_len: int = -1,
                       device: torch.device | None = None) -> Tensor:
    """Sinusoidal encodings of the distances ``klen, klen-1, ..., -qlen+1``: (klen+qlen, d).

    Row ``p`` encodes distance ``klen - p``; the first half of the features are
    sines, the second half cosines.

    >>> relative_positions(2, 2, 4)[:, :2]  # sin(distance * [1, 1/100])
    tensor([[ 0.9093,  0.0200],
            [ 0.8415,  0.0100],
            [ 0.0000,  0.0000],
            [-0.8415, -0.0100]])
    """
    freq = torch.arange(0, d_model, 2, dtype=torch.int64, device=device).float()
    inv_freq = 1 / torch.pow(10000, freq / d_model)  # (d/2,)
    pos = torch.arange(klen, -qlen, -1, dtype=torch.int64, device=device).float()  # (klen+qlen,)
    if clamp_len > 0:
        pos = pos.clamp(-clamp_len, clamp_len)
    angles = torch.einsum("p,f->pf", pos, inv_freq)  # (P, d/2)
    return torch.cat([angles.sin(), angles.cos()], dim=-1)  # (P, d)


class RelativeAttention(nn.Module):
    """XLNet's relative multi-head attention (projections stored as (H, nh, hs)).

    >>> attn = RelativeAttention(XLNetConfig.preset("tiny"))
    >>> tuple(attn.q.shape), tuple(attn.seg_embed.shape)
    ((64, 2, 32), (2, 2, 32))
    """

    def __init__(self, config: XLNetConfig) -> None:
        super().__init__()
        H, nh = config.hidden_size, config.num_heads
        hs = H // nh
        self.scale = 1 / math.sqrt(hs)
        # Stored (H, nh, hs) like transformers, so checkpoints map one to one.
        self.q = nn.Parameter(torch.empty(H, nh, hs))
        self.k = nn.Parameter(torch.empty(H, nh, hs))
        self.v = nn.Parameter(torch.empty(H, nh, hs))
        self.o = nn.Parameter(torch.empty(H, nh, hs))
        self.r = nn.Parameter(torch.empty(H, nh, hs))
        self.r_w_bias = nn.Parameter(torch.empty(nh, hs))
        self.r_r_bias = nn.Parameter(torch.empty(nh, hs))
        self.r_s_bias = nn.Parameter(torch.empty(nh, hs))
        self.seg_embed = nn.Parameter(torch.empty(2, nh, hs))
        self.dropout = config.attention_dropout

    @staticmethod
    def project(x: Tensor, weight: Tensor) -> Tensor:
        """(B, T, H) x (H, nh, hs) -> (B, nh, T, hs)."""
        return torch.einsum("btd,dnh->bnth", x, weight)

    def output(self, vec: Tensor) -> Tensor:
        """(B, nh, T, hs) -> (B, T, H) through ``o``."""
        return torch.einsum("bnth,dnh->btd", vec, self.o)

    def attend(
        self,
        q: Tensor,
        rows: Tensor,
        k: Tensor,
        v: Tensor,
        k_pos: Tensor,
        qlen: int,
        seg: Tensor | None,
        mask: Tensor | None,
    ) -> Tensor:
        """Attention of queries ``q`` (B, nh, N, hs) sitting at positions ``rows`` (B, N).

        Args:
            q: projected queries.
            rows: the sequence position of each query (0 .. qlen-1).
            k, v: projected keys and values (B, nh, S, hs), memory first.
            k_pos: projected relative encodings (nh, qlen + S, hs).
            qlen: length of the current segment.
            seg: (B, N, S) 1 where query and key are in different segments, or None.
            mask: (B, N, S) True = may attend, or None.
        """
        B, nh, N, hs = q.shape
        S = k.shape[2]
        ac = torch.matmul(q + self.r_w_bias[:, None], k.transpose(-1, -2))  # (B, nh, N, S)
        bd_all = torch.einsum("bnih,nph->bnip", q + self.r_r_bias[:, None], k_pos)  # (B, nh, N, qlen+S)
        # Key j seen from position i is at distance (mlen + i) - j: row qlen - i + j of k_pos.
        idx = qlen - rows[:, :, None] + torch.arange(S, device=q.device)  # (B, N, S)
        bd = bd_all.gather(-1, idx[:, None].expand(B, nh, N, S))
        score = ac + bd
        if seg is not None:
            ef_both = torch.einsum("bnih,snh->bnis", q + self.r_s_bias[:, None], self.seg_embed)  # (B, nh, N, 2)
            score = score + ef_both.gather(-1, seg[:, None].expand(B, nh, N, S))
        weights = masked_softmax(score * self.scale, mask=mask[:, None] if mask is not None else None)
        if self.training and self.dropout > 0:
            weights = F.dropout(weights, p=self.dropout)
        return torch.matmul(weights, v)  # (B, nh, N, hs)


class XLNetLayer(nn.Module):
    """Relative attention for both streams, then the shared post-LN feed-forward.

    Both streams use the same weights; each has its own residual path.
    """

    def __init__(self, config: XLNetConfig) -> None:
        super().__init__()
        self.attn = RelativeAttention(config)
        self.attn_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.ffn = FeedForward(config, inner_dropout=config.hidden_dropout)
        self.ffn_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout)

    def _post(self, x: Tensor, vec: Tensor) -> Tensor:
        x = self.attn_norm(x + self.dropout(self.attn.output(vec)))
        return self.ffn_norm(x + self.dropout(self.ffn(x)))

    def forward(
        self,
        h: Tensor,
        g: Tensor | None,
        mem: Tensor | None,
        pos: Tensor,
        seg_h: Tensor | None,
        mask_h: Tensor | None,
        g_rows: Tensor | None = None,
        seg_g: Tensor | None = None,
        mask_g: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Update the content stream ``h`` (B, T, H) and the query stream ``g`` (B, K, H)."""
        B, T, _ = h.shape
        cat = h if mem is None else torch.cat([mem, h], dim=1)  # (B, S, H)
        a = self.attn
        k, v = a.project(cat, a.k), a.project(cat, a.v)  # (B, nh, S, hs)
        k_pos = torch.einsum("pd,dnh->nph", pos, a.r)  # (nh, P, hs)
        rows_h = torch.arange(T, device=h.device).expand(B, T)
        h_out = self._post(h, a.attend(a.project(h, a.q), rows_h, k, v, k_pos, T, seg_h, mask_h))
        g_out = None
        if g is not None and g_rows is not None:
            g_out = self._post(g, a.attend(a.project(g, a.q), g_rows, k, v, k_pos, T, seg_g, mask_g))
        return h_out, g_out


class XLNetModel(_Base):
    """The XLNet encoder: word embeddings, ``mask_emb``, relative-attention layers.

    >>> import torch
    >>> model = XLNetModel(XLNetConfig.preset("tiny", vocab_size=100)).eval()
    >>> ids = torch.tensor([[10, 11, 12, 13]])
    >>> perm = torch.zeros(1, 4, 4); perm[0, :, 3] = 1  # nobody sees token 3
    >>> target = torch.zeros(1, 1, 4); target[0, 0, 3] = 1  # predict token 3
    >>> out = model(ids, perm_mask=perm, target_mapping=target)
    >>> tuple(out.last_hidden_state.shape), len(out.mems), tuple(out.mems[0].shape)
    ((1, 1, 64), 2, (1, 4, 64))
    """

    config_class = XLNetConfig
    config: XLNetConfig

    def __init__(self, config: XLNetConfig | None = None) -> None:
        super().__init__()
        config = config if config is not None else XLNetConfig()
        if not isinstance(config, XLNetConfig):
            raise TypeError(f"config must be an XLNetConfig, got {type(config).__name__}")
        self.config = config
        self.word = nn.Embedding(config.vocab_size, config.hidden_size)
        self.mask_emb = nn.Parameter(torch.empty(1, 1, config.hidden_size))
        self.layers = nn.ModuleList(XLNetLayer(config) for _ in range(config.num_layers))
        self.dropout = nn.Dropout(config.hidden_dropout)
        #: Recompute each layer in the backward pass (see ``set_gradient_checkpointing``).
        self.gradient_checkpointing = False
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        super()._init_weights(module)
        std = self.config.initializer_range
        if isinstance(module, RelativeAttention):
            for p in module.parameters(recurse=False):
                nn.init.normal_(p, 0.0, std)
        elif isinstance(module, XLNetModel):
            nn.init.normal_(module.mask_emb, 0.0, std)

    def _cache(self, h: Tensor, prev: Tensor | None) -> Tensor:
        cfg = self.config
        if cfg.reuse_len is not None and cfg.reuse_len > 0:
            h = h[:, : cfg.reuse_len]
        new = h if prev is None else torch.cat([prev, h], dim=1)
        if cfg.mem_len:
            new = new[:, -cfg.mem_len:]
        return new.detach()

    def _check(self, name: str, t: Tensor | None, shape: tuple[int, ...], what: str) -> None:
        if t is not None and tuple(t.shape) != shape:
            raise ValueError(f"{name} has shape {tuple(t.shape)}; expected {shape} {what}")

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        token_type_ids: Tensor | None = None,
        *,
        perm_mask: Tensor | None = None,
        target_mapping: Tensor | None = None,
        mems: list[Tensor] | tuple[Tensor, ...] | None = None,
        use_mems: bool | None = None,
        output_hidden_states: bool = False,
    ) -> XLNetOutput:
        """Encode ``input_ids`` (B, T).

        Args:
            input_ids: token ids (B, T).
            attention_mask: 1 for real tokens, 0 for padding (B, T).
            token_type_ids: segment ids (B, T); only equality between them matters.
            perm_mask: (B, T, T), 1 where position i may *not* attend to j.
            target_mapping: (B, K, T) one-hot rows: prediction k is for position j
                (all-zero rows are padding and give the bare ``mask_emb`` path).
            mems: per layer (B, M, H) states from a previous call's ``mems``.
            use_mems: return new ``mems``; default: in eval mode yes, in training no.
            output_hidden_states: also return the content stream at every depth.
        """
        cfg = self.config
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must have shape (B, T), got {tuple(input_ids.shape)}")
        B, T = input_ids.shape
        _check_ids("input_ids", input_ids, cfg.vocab_size, "vocab_size")
        self._check("attention_mask", attention_mask, (B, T), "(B, T)")
        self._check("token_type_ids", token_type_ids, (B, T), "(B, T)")
        self._check("perm_mask", perm_mask, (B, T, T), "(B, T, T)")
        if target_mapping is not None and (target_mapping.dim() != 3 or target_mapping.shape[::2] != (B, T)):
            raise ValueError(f"target_mapping has shape {tuple(target_mapping.shape)}; expected (B, K, T) = "
                             f"({B}, K, {T})")
        if mems is not None:
            if len(mems) != cfg.num_layers:
                raise ValueError(f"mems has {len(mems)} entries; expected one per layer ({cfg.num_layers})")
            for m in mems:
                if m.dim() != 3 or m.shape[0] != B or m.shape[2] != cfg.hidden_size:
                    raise ValueError(f"each mem must have shape (B, M, H) = ({B}, M, {cfg.hidden_size}), "
                                     f"got {tuple(m.shape)}")
        mlen = mems[0].shape[1] if mems is not None else 0
        if use_mems is None:
            use_mems = not self.training
        dev = input_ids.device

        # ---- masks: True = may attend, over keys [mems | current] ----
        mask_g = mask_h = None
        if attention_mask is not None or perm_mask is not None:
            blocked = torch.zeros(B, T, T, dtype=torch.bool, device=dev)
            if attention_mask is not None:
                blocked = blocked | (attention_mask == 0)[:, None, :]
            if perm_mask is not None:
                blocked = blocked | (perm_mask > 0)
            blocked = F.pad(blocked, (mlen, 0), value=False)  # memory is always visible
            mask_g = ~blocked  # (B, T, S)
            eye = F.pad(torch.eye(T, dtype=torch.bool, device=dev), (mlen, 0), value=False)
            mask_h = mask_g | eye  # the content stream always sees its own token

        seg = None
        if token_type_ids is not None:
            keys = F.pad(token_type_ids, (mlen, 0), value=0)  # memory counts as segment 0
            seg = (token_type_ids[:, :, None] != keys[:, None, :]).long()  # (B, T, S)

        # ---- query stream: only the K predicted rows ----
        g = g_rows = seg_g = m_g = None
        if target_mapping is not None:
            tm = target_mapping
            if values_checked(tm) and (bool(((tm != 0) & (tm != 1)).any()) or bool((tm.sum(-1) > 1).any())):
                raise ValueError("target_mapping rows must be one-hot (or all zero for padding)")
            K = tm.shape[1]
            g_rows = tm.argmax(-1)  # (B, K)
            valid = tm.sum(-1) > 0  # (B, K)
            g = self.dropout(self.mask_emb.expand(B, K, -1))
            take = g_rows[:, :, None].expand(B, K, T + mlen)
            seg_g = seg.gather(1, take) if seg is not None else None
            m_g = mask_g.gather(1, take) if mask_g is not None else None
            # A padding row (all zeros) attends to nothing, as in transformers' einsum.
            m_g = valid[:, :, None].expand(B, K, T + mlen) if m_g is None else m_g & valid[:, :, None]

        pos = self.dropout(relative_positions(T, T + mlen, cfg.hidden_size, cfg.clamp_len, dev))
        h = self.dropout(self.word(input_ids))  # (B, T, H)
        new_mems: list[Tensor] = []
        states = [h] if output_hidden_states else None
        for i, layer in enumerate(self.layers):
            mem = mems[i] if mems is not None else None
            if use_mems:
                new_mems.append(self._cache(h, mem))
            if self.gradient_checkpointing and self.training and torch.is_grad_enabled():
                h, g = checkpoint(layer, h, g, mem, pos, seg, mask_h, g_rows, seg_g, m_g, use_reentrant=False)
            else:
                h, g = layer(h, g, mem, pos, seg, mask_h, g_rows, seg_g, m_g)
            if states is not None:
                states.append(h)
        out = self.dropout(g if g is not None else h)
        return XLNetOutput(
            last_hidden_state=out,
            mems=tuple(new_mems) if use_mems else None,
            hidden_states=tuple(states) if states is not None else None,
        )


class XLNetLMHeadModel(_Base):
    """XLNet with its LM head: the word embeddings as decoder, plus a bias.

    >>> import torch
    >>> model = XLNetLMHeadModel(XLNetConfig.preset("tiny", vocab_size=100)).eval()
    >>> tuple(model(torch.tensor([[10, 11, 12]])).logits.shape)
    (1, 3, 100)
    """

    config_class = XLNetConfig

    def __init__(self, config: XLNetConfig | None = None) -> None:
        super().__init__()
        config = config if config is not None else XLNetConfig()
        self.config = config
        self.backbone = XLNetModel(config)
        self.lm_bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None,
                token_type_ids: Tensor | None = None, *, labels: Tensor | None = None,
                **kwargs: object) -> XLNetOutput:
        """Logits for every position (or every prediction of ``target_mapping``).

        Takes :meth:`XLNetModel.forward`'s arguments, plus ``labels`` shaped like
        the logits' first two axes (-100 = not scored).
        """
        out = self.backbone(input_ids, attention_mask, token_type_ids, **kwargs)
        logits = F.linear(out.last_hidden_state, self.backbone.word.weight, self.lm_bias)  # (B, T|K, V)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)
        out.logits, out.loss = logits, loss
        out.losses = {"plm": loss} if loss is not None else None
        return out
