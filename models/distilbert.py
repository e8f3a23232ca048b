"""DistilBERT: six layers, no segment embedding, no pooler, MLM head only.

The architecture is configuration (:class:`~models.config.DistilBertConfig`);
initialising a student from a BERT teacher comes later.
"""

from __future__ import annotations

from models.bert import BertForPreTraining, BertModel
from models.config import DistilBertConfig

__all__ = ["DistilBertForMaskedLM", "DistilBertModel"]


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
