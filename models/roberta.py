"""RoBERTa: BERT's encoder with padding-offset positions, eps 1e-5, no NSP.

Nothing here computes anything: :class:`~models.config.RobertaConfig` carries
the differences (positions counted from ``pad_token_id + 1`` over real tokens
only, one segment, the erf-GELU MLM head) and the BERT classes read them.
"""

from __future__ import annotations

from models.bert import BertForPreTraining, BertModel
from models.config import RobertaConfig

__all__ = ["RobertaForMaskedLM", "RobertaModel"]


class RobertaModel(BertModel):
    """RoBERTa encoder with pooler (124.6M parameters at the base preset).

    >>> import torch
    >>> model = RobertaModel(RobertaConfig.preset("tiny", vocab_size=100)).eval()
    >>> model.embeddings.position_ids(torch.tensor([[0, 5, 6, 1]])).tolist()
    [[2, 3, 4, 1]]
    """

    config_class = RobertaConfig

    def __init__(self, config: RobertaConfig | None = None, *, add_pooler: bool | None = None) -> None:
        super().__init__(config if config is not None else RobertaConfig(), add_pooler=add_pooler)


class RobertaForMaskedLM(BertForPreTraining):
    """RoBERTa with its MLM head (erf GELU, tied decoder, separate bias); no NSP.

    >>> import torch
    >>> model = RobertaForMaskedLM(RobertaConfig.preset("tiny", vocab_size=100)).eval()
    >>> tuple(model(torch.tensor([[0, 5, 2]])).logits.shape)
    (1, 3, 100)
    """

    config_class = RobertaConfig

    def __init__(self, config: RobertaConfig | None = None) -> None:
        super().__init__(config if config is not None else RobertaConfig())
