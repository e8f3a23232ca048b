"""ALBERT: factorised embeddings, parameters shared across layers, SOP head.

The differences are configuration (:class:`~models.config.AlbertConfig`):
embedding tables of width E projected to H, the encoder's sharing schedule
(``share="all"`` with transformers' groups, or the paper's ``"attention"`` and
``"ffn"`` ablations), the tanh GELU, and the sentence-order head.
"""

from __future__ import annotations

from models.bert import BertForPreTraining, BertModel
from models.config import AlbertConfig

__all__ = ["AlbertForPreTraining", "AlbertModel"]


class AlbertModel(BertModel):
    """ALBERT encoder with pooler (11.7M parameters at the base preset, all shared).

    >>> from models.registry import count_parameters
    >>> count_parameters(AlbertConfig(share="attention"))
    63647232
    """

    config_class = AlbertConfig

    def __init__(self, config: AlbertConfig | None = None, *, add_pooler: bool | None = None) -> None:
        super().__init__(config if config is not None else AlbertConfig(), add_pooler=add_pooler)


class AlbertForPreTraining(BertForPreTraining):
    """ALBERT with MLM (H -> E transform, tied V x E decoder) and SOP heads.

    SOP label 0 means the two segments are in their original order, 1 swapped.

    >>> import torch
    >>> model = AlbertForPreTraining(AlbertConfig.preset("tiny", vocab_size=100)).eval()
    >>> tuple(model(torch.tensor([[2, 5, 3]])).sentence_logits.shape)
    (1, 2)
    """

    config_class = AlbertConfig

    def __init__(self, config: AlbertConfig | None = None) -> None:
        super().__init__(config if config is not None else AlbertConfig())
