"""BERT: embeddings, the shared encoder, a pooler, and the MLM + NSP heads.

Everything a variant can change is in its config (see ``models/config.py``):
the embedding layout (segment table or none, factorised width E, RoBERTa's
padding-offset positions), the pooler, the sentence head (NSP, SOP, none) and
the attention (dense or block-sparse). RoBERTa, ALBERT, DistilBERT and BigBird
are therefore these same classes with other configs; their modules only name
them. (XLNet's attention differs in kind and lives in ``models/xlnet.py``.)

State-dict names are ours (``embeddings.word``, ``encoder.layers.0.attn.q``, ...);
``models/hf.py`` maps them to each transformers checkpoint layout.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from models.checks import values_checked
from models.config import BertConfig, XLNetConfig
from models.dropout import Dropout
from models.encoder import Encoder, get_activation
from models.linear_ce import linear_cross_entropy
from models.linear_ce import supported as linear_cross_entropy_supported

__all__ = [
    "BertForPreTraining",
    "BertModel",
    "Embeddings",
    "EncoderOutput",
    "MLMHead",
    "Pooler",
    "PreTrainingOutput",
]


@dataclass
class EncoderOutput:
    """What a base model returns.

    Attributes:
        last_hidden_state: (B, T, H).
        pooler_output: (B, H) ``tanh(dense(h[:, 0]))`` where the model has a pooler.
        hidden_states: embeddings output then each layer's output, if asked.
    """

    last_hidden_state: Tensor
    pooler_output: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None


@dataclass
class PreTrainingOutput:
    """What a model with pretraining heads returns.

    Attributes:
        logits: MLM logits (B, T, V); None when the loss was computed without them
            (``return_logits=False``).
        sentence_logits: NSP/SOP logits (B, 2) where the model has that head.
        loss: MLM cross-entropy (ignoring label -100) plus the sentence loss, for
            whichever labels were given.
        losses: each loss on its own, ``{"mlm": ..., "nsp" | "sop": ...}``
            (only those whose labels were given); ``loss`` is their sum.
        last_hidden_state, pooler_output, hidden_states: as in :class:`EncoderOutput`.
    """

    logits: Tensor | None
    sentence_logits: Tensor | None = None
    loss: Tensor | None = None
    last_hidden_state: Tensor | None = None
    pooler_output: Tensor | None = None
    hidden_states: tuple[Tensor, ...] | None = None
    losses: dict[str, Tensor] | None = None


def _check_ids(name: str, ids: Tensor, limit: int, what: str) -> None:
    # A value check: only where it needs no host-device sync (see models/checks.py).
    if ids.numel() and values_checked(ids) and (int(ids.min()) < 0 or int(ids.max()) >= limit):
        raise ValueError(
            f"{name} must lie in [0, {limit}) ({what}), got values in [{int(ids.min())}, {int(ids.max())}]"
        )


class Embeddings(nn.Module):
    """Token + position (+ segment) embeddings, layer norm, dropout (+ projection).

    Positions are ``0..T-1``, or for ``position_style="padding_offset"``
    (RoBERTa) ``pad+1, pad+2, ...`` counted over non-pad tokens only, with pad
    tokens at ``pad``: padding on either side leaves real tokens' positions alone.
    With ``embedding_size`` set (ALBERT) the tables are E wide and a linear
    ``project`` maps E -> H after the norm.

    >>> import torch
    >>> emb = Embeddings(BertConfig.preset("tiny", vocab_size=10)).eval()
    >>> tuple(emb(torch.tensor([[1, 2, 0]])).shape)
    (1, 3, 64)
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        E = config.embed_dim
        self.word = nn.Embedding(config.vocab_size, E, padding_idx=config.pad_token_id)
        pos_pad = config.pad_token_id if config.position_style == "padding_offset" else None
        self.position = nn.Embedding(config.max_position_embeddings, E, padding_idx=pos_pad)
        self.token_type = nn.Embedding(config.type_vocab_size, E) if config.type_vocab_size > 0 else None
        self.norm = nn.LayerNorm(E, eps=config.layer_norm_eps, bias=config.bias)
        self.dropout = Dropout(config.hidden_dropout)
        self.project = (
            nn.Linear(E, config.hidden_size, bias=config.bias) if config.embedding_size is not None else None
        )

    def position_ids(self, input_ids: Tensor) -> Tensor:
        """Position ids (B, T) for ``input_ids`` (B, T), after checking the length."""
        cfg = self.config
        T = input_ids.shape[1]
        if T > cfg.max_sequence_length:
            offset = f" minus the padding offset {cfg.position_offset}" if cfg.position_offset else ""
            raise ValueError(
                f"sequence length {T} exceeds the {cfg.max_sequence_length} positions this model has "
                f"(max_position_embeddings {cfg.max_position_embeddings}{offset})"
            )
        if cfg.position_style == "padding_offset":
            real = input_ids.ne(cfg.pad_token_id).long()
            return torch.cumsum(real, dim=1) * real + cfg.pad_token_id  # (B, T)
        return torch.arange(T, device=input_ids.device).expand_as(input_ids)  # (B, T)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None) -> Tensor:
        """``input_ids`` (B, T) -> embeddings (B, T, H)."""
        x = self.word(input_ids)  # (B, T, E)
        # Summed in transformers' order (word, segment, position): float addition
        # is not associative, and the real-checkpoint check is at 1e-5.
        if self.token_type is not None:
            if token_type_ids is None:
                token_type_ids = torch.zeros_like(input_ids)
            x = x + self.token_type(token_type_ids)
        x = x + self.position(self.position_ids(input_ids))
        # BigBird applies dropout before the norm; the others after it.
        x = self.norm(self.dropout(x)) if self.config.embedding_dropout_first else self.dropout(self.norm(x))
        return self.project(x) if self.project is not None else x  # (B, T, H)


class Pooler(nn.Module):
    """``tanh(dense(h[:, 0]))``: the [CLS] summary used by NSP/SOP and classifiers.

    >>> import torch
    >>> tuple(Pooler(BertConfig.preset("tiny"))(torch.zeros(2, 5, 64)).shape)
    (2, 64)
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size, bias=config.bias)

    def forward(self, hidden: Tensor) -> Tensor:
        """(B, T, H) -> (B, H)."""
        return torch.tanh(self.dense(hidden[:, 0]))


class MLMHead(nn.Module):
    """Masked-LM head: ``dense -> act -> LayerNorm -> decoder``.

    The decoder's weight *is* the word-embedding table (passed in at call time,
    so the tie cannot come undone), with a separate bias of size V. With
    factorised embeddings the transform maps H -> E.

    >>> import torch
    >>> head = MLMHead(BertConfig.preset("tiny", vocab_size=100))
    >>> tuple(head(torch.zeros(1, 3, 64), torch.zeros(100, 64)).shape)
    (1, 3, 100)
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        E = config.embed_dim
        self.dense = nn.Linear(config.hidden_size, E, bias=config.bias)
        self.act = get_activation(config.head_act or config.hidden_act)
        self.norm = nn.LayerNorm(E, eps=config.layer_norm_eps, bias=config.bias)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def transform(self, hidden: Tensor) -> Tensor:
        """(..., H) -> (..., E): what the decoder reads."""
        return self.norm(self.act(self.dense(hidden)))

    def forward(self, hidden: Tensor, word_embeddings: Tensor) -> Tensor:
        """(B, T, H) and the (V, E) table -> logits (B, T, V)."""
        return F.linear(self.transform(hidden), word_embeddings, self.bias)  # (B, T, V)


class _Base(nn.Module):
    """Shared plumbing: initialisation, parameter counts, export."""

    config_class: ClassVar[type[BertConfig]] = BertConfig
    config: BertConfig

    def _init_weights(self, module: nn.Module) -> None:
        # transformers' scheme: plain normal(0, 0.02), zero biases, unit norms,
        # zeroed padding rows.
        std = self.config.initializer_range
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, 0.0, std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, 0.0, std)
            if module.padding_idx is not None:
                with torch.no_grad():
                    module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            if module.weight is not None:
                nn.init.ones_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)

    def _check_family(self, config: BertConfig) -> None:
        # A variant's class takes only its own config family (RobertaModel(BertConfig())
        # would silently build BERT); BERT's classes take the BERT-like variants (they
        # are those variants' backbones) but never XLNet's, whose attention differs in kind.
        if not isinstance(config, self.config_class) or isinstance(config, XLNetConfig):
            raise TypeError(
                f"{type(self).__name__} needs a {self.config_class.__name__}, got {type(config).__name__} "
                f"(model_type {config.model_type!r}); build it with models.build_model(config)"
                if isinstance(config, BertConfig)
                else f"config must be a {self.config_class.__name__}, got {type(config).__name__}"
            )

    def set_gradient_checkpointing(self, enabled: bool = True) -> None:
        """Recompute each layer's activations in the backward pass instead of keeping them.

        Trades about one extra forward pass for activation memory that no longer
        grows with depth; only in training mode (evaluation keeps nothing anyway).

        >>> model = BertModel(BertConfig.preset("tiny", vocab_size=100))
        >>> model.set_gradient_checkpointing(); model.encoder.gradient_checkpointing
        True
        """
        for module in self.modules():
            if hasattr(module, "gradient_checkpointing"):
                module.gradient_checkpointing = bool(enabled)

    def num_parameters(self) -> int:
        """Distinct parameters (shared and tied ones counted once).

        >>> BertModel(BertConfig.preset("tiny", vocab_size=100)).num_parameters()
        118976
        """
        return sum(p.numel() for p in self.parameters())

    def to_hf(self, directory: str | Path) -> Path:
        """Write a transformers checkpoint (config.json + model.safetensors).

        See :func:`models.hf.to_hf`.

        >>> import json, tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = BertModel(BertConfig.preset("tiny", vocab_size=100)).to_hf(d)
        ...     json.loads((Path(d) / "config.json").read_text())["model_type"]
        'bert'
        """
        from models.hf import to_hf

        return to_hf(self, directory)


class BertModel(_Base):
    """The encoder with its embeddings (and pooler): BERT, RoBERTa, ALBERT, DistilBERT.

    Args:
        config: the model configuration.
        add_pooler: override ``config.add_pooler``.

    >>> import torch
    >>> model = BertModel(BertConfig.preset("tiny", vocab_size=100)).eval()
    >>> out = model(torch.tensor([[2, 5, 7, 0]]), attention_mask=torch.tensor([[1, 1, 1, 0]]))
    >>> tuple(out.last_hidden_state.shape), tuple(out.pooler_output.shape)
    ((1, 4, 64), (1, 64))
    """

    def __init__(self, config: BertConfig, *, add_pooler: bool | None = None) -> None:
        super().__init__()
        self._check_family(config)
        self.config = config
        self.embeddings = Embeddings(config)
        self.encoder = Encoder(config)
        self.apply(self._init_weights)
        # The pooler is built and initialised last, so that having one or not
        # (RobertaModel vs RobertaForMaskedLM) leaves the encoder's draws alone.
        add_pooler = config.add_pooler if add_pooler is None else add_pooler
        self.pooler = Pooler(config) if add_pooler else None
        if self.pooler is not None:
            self.pooler.apply(self._init_weights)

    def _attention_mask(self, attention_mask: Tensor | None, input_ids: Tensor) -> Tensor | None:
        """(B, T) key mask or (B, T, T) full mask of 0/1 -> boolean (B, 1, 1|T, T)."""
        if attention_mask is None:
            return None
        B, T = input_ids.shape
        if attention_mask.is_floating_point():
            raise TypeError(
                f"attention_mask must hold 0/1 integers or booleans (1 = attend), got dtype {attention_mask.dtype}"
            )
        if attention_mask.shape == (B, T):
            return attention_mask.bool()[:, None, None, :]  # (B, 1, 1, T)
        if attention_mask.shape == (B, T, T):
            return attention_mask.bool()[:, None, :, :]  # (B, 1, T, T)
        raise ValueError(
            f"attention_mask has shape {tuple(attention_mask.shape)} but input_ids has shape {(B, T)}; "
            f"expected {(B, T)} (padding mask) or {(B, T, T)} (per-query mask)"
        )

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        token_type_ids: Tensor | None = None,
        *,
        output_hidden_states: bool = False,
        rows: Tensor | None = None,
    ) -> EncoderOutput:
        """Encode ``input_ids`` (B, T).

        Args:
            input_ids: token ids (B, T).
            attention_mask: 1 for real tokens, 0 for padding, (B, T); or (B, T, T).
            token_type_ids: segment ids (B, T), default all 0.
            output_hidden_states: also return every layer's output.
            rows: boolean (B, T): compute the last layer only at these
                positions (every position is still a key). ``last_hidden_state``
                is then (N, H), the selected rows in row-major order. With a
                pooler, ``rows[:, 0]`` must be all True ([CLS] feeds the pooler).
                Or a 1-D long tensor of flat indices ``b * T + t`` (static
                shapes): the rows in that order, and no pooled output (the
                caller knows where its [CLS] rows are).
        """
        cfg = self.config
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must have shape (B, T), got {tuple(input_ids.shape)}")
        _check_ids("input_ids", input_ids, cfg.vocab_size, "vocab_size")
        if token_type_ids is not None:
            if self.embeddings.token_type is None:
                raise ValueError(f"this {cfg.model_type} model has no segment embedding (type_vocab_size=0); "
                                 "do not pass token_type_ids")
            if token_type_ids.shape != input_ids.shape:
                raise ValueError(
                    f"token_type_ids has shape {tuple(token_type_ids.shape)} but input_ids has shape "
                    f"{tuple(input_ids.shape)}"
                )
            _check_ids("token_type_ids", token_type_ids, cfg.type_vocab_size, "type_vocab_size")
        flat_rows = rows is not None and rows.dtype == torch.long and rows.dim() == 1
        if rows is not None and not flat_rows:
            if rows.dtype != torch.bool or rows.shape != input_ids.shape:
                raise ValueError(
                    f"rows must be a boolean tensor of input_ids' shape {tuple(input_ids.shape)} "
                    f"or a 1-D long tensor of flat indices, got {rows.dtype} {tuple(rows.shape)}"
                )
            if self.pooler is not None and values_checked(rows) and not bool(rows[:, 0].all()):
                raise ValueError("rows must select position 0 of every sequence: the pooler reads it")
        mask = self._attention_mask(attention_mask, input_ids)
        x = self.embeddings(input_ids, token_type_ids)  # (B, T, H)
        x, states = self.encoder(x, mask, output_hidden_states=output_hidden_states, rows=rows)
        pooled = None
        if self.pooler is not None and not flat_rows:
            if rows is None:
                pooled = self.pooler(x)  # (B, H)
            else:
                first = torch.zeros_like(rows)
                first[:, 0] = True
                pooled = self.pooler(x[first[rows]].unsqueeze(1))  # (B, 1, H) -> (B, H)
        return EncoderOutput(last_hidden_state=x, pooler_output=pooled, hidden_states=states)


class BertForPreTraining(_Base):
    """The base model plus the MLM head and, per config, the NSP or SOP head.

    BERT: MLM + NSP; RoBERTa and DistilBERT: MLM only; ALBERT: MLM + SOP
    (``config.sentence_head``). The sentence head is ``Linear(H, 2)`` on the
    pooled output (after ``classifier_dropout``).

    >>> import torch
    >>> model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=100)).eval()
    >>> out = model(torch.tensor([[2, 5, 7]]), labels=torch.tensor([[-100, 5, -100]]),
    ...             sentence_label=torch.tensor([0]))
    >>> tuple(out.logits.shape), tuple(out.sentence_logits.shape), out.loss.dim()
    ((1, 3, 100), (1, 2), 0)
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self._check_family(config)
        self.config = config
        has_sentence = config.sentence_head is not None
        # The backbone is built (and initialised) first and left alone after, so
        # for a given seed its weights equal the base model's: a checkpoint of one
        # class and a fresh model of the other start from the same encoder.
        self.backbone = BertModel(config, add_pooler=has_sentence)
        self.mlm = MLMHead(config)
        self.sentence_dropout = Dropout(config.classifier_dropout)
        self.sentence = nn.Linear(config.hidden_size, 2, bias=config.bias) if has_sentence else None
        self.mlm.apply(self._init_weights)
        if self.sentence is not None:
            self.sentence.apply(self._init_weights)
        nn.init.zeros_(self.mlm.bias)

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        token_type_ids: Tensor | None = None,
        *,
        labels: Tensor | None = None,
        sentence_label: Tensor | None = None,
        sparse_prediction: bool = False,
        num_masked: int | None = None,
        output_hidden_states: bool = False,
        reduction: Literal["mean", "sum"] = "mean",
        return_logits: bool = True,
    ) -> PreTrainingOutput:
        """Logits for every position and, with labels, the losses (summed, and each on its own).

        Args:
            input_ids, attention_mask, token_type_ids, output_hidden_states: as in
                :meth:`BertModel.forward`.
            labels: MLM targets (B, T), -100 where no prediction is scored.
            sentence_label: (B,) NSP (0 = B follows A) or SOP (0 = original order).
            sparse_prediction: compute only what the losses read, as cramming
                and MosaicBERT do: the MLM head runs only where ``labels != -100``
                (about 15% of positions) and, unless ``output_hidden_states``,
                the last encoder layer's output projection, residuals and
                feed-forward run only at those positions and [CLS] (its
                attention still uses every position as a key). ``logits`` is
                then (N, V) for the labelled positions in row-major order and
                ``last_hidden_state`` is None. The loss and gradients are the
                same as without it (up to float rounding).
            num_masked: with ``sparse_prediction``, the number of labelled
                positions per sequence when it is fixed
                (``MaskingConfig(fixed_count=True)``): the positions are then
                gathered with static shapes (B * num_masked rows; a row with
                fewer labels pads with unscored positions), so there is no
                host sync and ``torch.compile`` sees no data-dependent shape.
            reduction: ``"mean"`` (over the scored positions, and over the pairs) or ``"sum"``
                (a trainer then divides by its own count, e.g. over accumulated micro-batches).
            return_logits: with ``sparse_prediction`` and labels, ``False`` computes the MLM loss
                without keeping the (N, V) logits (:func:`models.linear_ce.linear_cross_entropy`,
                eager CPU float32; elsewhere the usual way) and returns ``logits=None``: the same
                loss and gradients, less memory traffic.
        """
        if reduction not in ("mean", "sum"):
            raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
        rows = selected = take = None
        if sparse_prediction:
            if labels is None:
                raise ValueError("sparse_prediction needs labels: it scores only the labelled positions")
            if labels.shape != input_ids.shape:
                raise ValueError(f"labels has shape {tuple(labels.shape)} but input_ids has {tuple(input_ids.shape)}")
            if num_masked is not None:
                B, T = labels.shape
                if not isinstance(num_masked, int) or not 0 < num_masked <= T:
                    raise ValueError(f"num_masked must be an int in [1, {T}], got {num_masked!r}")
                # Labelled positions first, in order (a stable sort of the 0/1 flags).
                take = (labels != -100).to(torch.int8).argsort(dim=1, descending=True, stable=True)
                take = take[:, :num_masked]  # (B, k)
                if not output_hidden_states:
                    lead = 1 if self.backbone.pooler is not None else 0
                    cols = F.pad(take, (lead, 0)) if lead else take  # (B, lead + k), [CLS] first
                    rows = (cols + T * torch.arange(B, device=cols.device)[:, None]).reshape(-1)  # (B*(lead+k),)
            else:
                selected = labels != -100  # (B, T)
                if not output_hidden_states:
                    rows = selected.clone()
                    if self.backbone.pooler is not None:
                        rows[:, 0] = True
        base = self.backbone(
            input_ids, attention_mask, token_type_ids, output_hidden_states=output_hidden_states, rows=rows
        )
        hidden = base.last_hidden_state  # (B, T, H), or (N', H) for the rows
        pooled = base.pooler_output
        if take is not None and labels is not None:
            B, k = take.shape
            if rows is not None:
                lead = 1 if self.backbone.pooler is not None else 0
                grid = hidden.view(B, lead + k, -1)  # (B, lead + k, H)
                if lead:
                    pooled = self.backbone.pooler(grid[:, :1])  # (B, H)
                hidden = grid[:, lead:].reshape(B * k, -1)  # (B*k, H)
            else:
                hidden = hidden.gather(1, take[:, :, None].expand(-1, -1, hidden.shape[-1])).reshape(B * k, -1)
            labels = labels.gather(1, take).reshape(-1)  # (B*k,)
        elif selected is not None and labels is not None:
            hidden = hidden[selected[rows]] if rows is not None else hidden[selected]  # (N, H)
            labels = labels[selected]  # (N,)
        table = self.backbone.embeddings.word.weight  # (V, E), the tied decoder
        losses: dict[str, Tensor] = {}
        logits: Tensor | None = None
        if (sparse_prediction and not return_logits and labels is not None
                and linear_cross_entropy_supported(hidden, table)):
            x = self.mlm.transform(hidden)  # (N, E)
            if take is not None:  # num_masked padded rows with unscored positions
                scored = labels != -100  # (N,)
                x, labels = x[scored], labels[scored]
            total = linear_cross_entropy(x, table, self.mlm.bias, labels)
            losses["mlm"] = total if reduction == "sum" else total / labels.numel()
        else:
            logits = self.mlm(hidden, table)  # (B, T, V) or (N, V)
            if labels is not None:
                losses["mlm"] = F.cross_entropy(
                    logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1), ignore_index=-100,
                    reduction=reduction,
                )
        sentence_logits = None
        if self.sentence is not None:
            sentence_logits = self.sentence(self.sentence_dropout(pooled))  # (B, 2)
        if sentence_label is not None:
            if sentence_logits is None:
                raise ValueError(f"this {self.config.model_type} model has no sentence head; "
                                 "do not pass sentence_label")
            losses[self.config.sentence_head or "sentence"] = F.cross_entropy(
                sentence_logits.float(), sentence_label.reshape(-1), reduction=reduction
            )
        loss = None
        for value in losses.values():
            loss = value if loss is None else loss + value
        return PreTrainingOutput(
            logits=logits,
            sentence_logits=sentence_logits,
            loss=loss,
            last_hidden_state=base.last_hidden_state if rows is None else None,
            pooler_output=pooled,
            hidden_states=base.hidden_states,
            losses=losses or None,
        )


def build(config: BertConfig, *, heads: bool = False, **kwargs: Any) -> _Base:
    """The base model (or the model with pretraining heads) for ``config``.

    >>> type(build(BertConfig.preset("tiny", vocab_size=100), heads=True)).__name__
    'BertForPreTraining'
    """
    return BertForPreTraining(config) if heads else BertModel(config, **kwargs)
