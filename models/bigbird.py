"""BigBird: BERT with block-sparse attention for long sequences.

The attention is :class:`~models.attention.BlockSparseAttention`, switched on by
``attention_type="block_sparse"`` in :class:`~models.config.BigBirdConfig`;
the embeddings (dropout before the norm), encoder and heads are BERT's.
"""

from __future__ import annotations

from models.bert import BertForPreTraining, BertModel
from models.config import BigBirdConfig

__all__ = ["BigBirdForPreTraining", "BigBirdModel"]


class BigBirdModel(BertModel):
    """BigBird encoder with pooler.

    >>> import torch
    >>> model = BigBirdModel(BigBirdConfig.preset("tiny", vocab_size=100)).eval()
    >>> tuple(model(torch.randint(1, 100, (1, 100))).last_hidden_state.shape)
    (1, 100, 64)
    """

    config_class = BigBirdConfig

    def __init__(self, config: BigBirdConfig | None = None, *, add_pooler: bool | None = None) -> None:
        super().__init__(config if config is not None else BigBirdConfig(), add_pooler=add_pooler)


class BigBirdForPreTraining(BertForPreTraining):
    """BigBird with BERT's MLM and NSP heads.

    >>> import torch
    >>> model = BigBirdForPreTraining(BigBirdConfig.preset("tiny", vocab_size=100)).eval()
    >>> tuple(model(torch.randint(1, 100, (1, 100))).logits.shape)
    (1, 100, 100)
    """

    config_class = BigBirdConfig

    def __init__(self, config: BigBirdConfig | None = None) -> None:
        super().__init__(config if config is not None else BigBirdConfig())
