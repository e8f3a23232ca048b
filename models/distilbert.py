"""DistilBERT: six layers, no segment embedding, no pooler, MLM head only.

The architecture is configuration (:class:`~models.config.DistilBertConfig`);
a student is initialised from a BERT teacher's layers by :func:`init_from_teacher`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch

from models.bert import BertForPreTraining, BertModel
from models.config import DistilBertConfig

__all__ = ["HF_TEACHER_LAYERS", "DistilBertForMaskedLM", "DistilBertModel", "init_from_teacher"]


class DistilBertModel(BertModel):
    """DistilBERT encoder (66.4M parameters at the base preset).

    >>> from models.registry import count_parameters
    >>> count_parameters(DistilBertConfig())
    66362880
    """

    config_class = DistilBertConfig

    def __init__(self, config: DistilBertConfig | None = None, *, add_pooler: bool | None = None) -> None:
        super().__init__(config if config is not None else DistilBertConfig(), add_pooler=add_pooler)


class DistilBertForMaskedLM(BertForPreTraining):
    """DistilBERT with its MLM head (``vocab_transform``, norm, tied projector).

    >>> import torch
    >>> model = DistilBertForMaskedLM(DistilBertConfig.preset("tiny", vocab_size=100)).eval()
    >>> tuple(model(torch.tensor([[2, 5, 3]])).logits.shape)
    (1, 3, 100)
    """

    config_class = DistilBertConfig

    def __init__(self, config: DistilBertConfig | None = None) -> None:
        super().__init__(config if config is not None else DistilBertConfig())


#: The teacher layers transformers' ``extract_distilbert.py`` copies from a
#: 12-layer BERT: not quite every other layer.
HF_TEACHER_LAYERS: tuple[int, ...] = (0, 2, 4, 7, 9, 11)


def init_from_teacher(
    teacher: BertModel | BertForPreTraining,
    layers: Sequence[int] | Literal["hf", "every_other"] = "hf",
    *,
    config: DistilBertConfig | None = None,
) -> DistilBertForMaskedLM:
    """A DistilBERT student initialised from a BERT teacher's weights.

    Copies the word and position embeddings and their norm, the chosen encoder
    layers, and (when the teacher has them) the MLM transform and bias. The
    teacher's segment embedding is dropped: the student has none.

    Args:
        teacher: a BERT base model or a model with heads (post-LN, E = H).
        layers: teacher layer indices for student layers 0, 1, ...; ``"hf"`` is
            ``(0, 2, 4, 7, 9, 11)`` (12-layer teachers only), ``"every_other"``
            is ``0, 2, 4, ...``.
        config: the student config; by default the teacher's sizes with
            ``num_layers = len(layers)``.

    >>> from models import BertConfig, BertModel
    >>> teacher = BertModel(BertConfig.preset("tiny", vocab_size=100, num_layers=4))
    >>> student = init_from_teacher(teacher, "every_other")
    >>> student.config.num_layers
    2
    """
    base = teacher.backbone if isinstance(teacher, BertForPreTraining) else teacher
    if not isinstance(base, BertModel):
        raise TypeError(f"teacher must be a BertModel or BertForPreTraining, got {type(teacher).__name__}")
    tc = base.config
    if tc.embedding_size is not None or tc.share != "none" or tc.position_style != "absolute":
        raise ValueError("the teacher must be an unshared BERT-style model with E = H and absolute positions")
    L = tc.num_layers
    if layers == "hf":
        if L != 12:
            raise ValueError(f"the 'hf' layer list (0, 2, 4, 7, 9, 11) needs a 12-layer teacher, not {L}")
        chosen = list(HF_TEACHER_LAYERS)
    elif layers == "every_other":
        chosen = list(range(0, L, 2))
    else:
        chosen = [int(i) for i in layers]
    bad = [i for i in chosen if not 0 <= i < L]
    if not chosen or bad:
        raise ValueError(f"teacher layers must be a non-empty list in [0, {L}), got {chosen}")
    if config is None:
        fields = {f: getattr(tc, f) for f in (
            "vocab_size", "hidden_size", "num_heads", "intermediate_size", "max_position_embeddings",
            "pad_token_id", "layer_norm_eps", "hidden_act", "hidden_dropout", "attention_dropout",
            "initializer_range", "norm", "bias", "gated_ffn", "attn_impl")}
        config = DistilBertConfig(**fields, num_layers=len(chosen))
    if config.num_layers != len(chosen):
        raise ValueError(f"{len(chosen)} teacher layers chosen for a {config.num_layers}-layer student")
    student = DistilBertForMaskedLM(config)
    emb_s, emb_t = student.backbone.embeddings, base.embeddings
    with torch.no_grad():
        for name in ("word", "position", "norm"):
            getattr(emb_s, name).load_state_dict(getattr(emb_t, name).state_dict())
        for s_idx, t_idx in enumerate(chosen):
            student.backbone.encoder.layers[s_idx].load_state_dict(base.encoder.layers[t_idx].state_dict())
        if isinstance(teacher, BertForPreTraining):
            student.mlm.load_state_dict(teacher.mlm.state_dict())
    return student
