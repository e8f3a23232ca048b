"""Which classes implement each ``model_type`` (base model, model with heads)."""

from __future__ import annotations

from models.albert import AlbertForPreTraining, AlbertModel
from models.bert import BertForPreTraining, BertModel, _Base
from models.bigbird import BigBirdForPreTraining, BigBirdModel
from models.config import BertConfig
from models.distilbert import DistilBertForMaskedLM, DistilBertModel
from models.roberta import RobertaForMaskedLM, RobertaModel
from models.xlnet import XLNetLMHeadModel, XLNetModel

__all__ = ["MODELS", "build_model", "count_parameters"]

MODELS: dict[str, tuple[type[_Base], type[_Base]]] = {
    "bert": (BertModel, BertForPreTraining),
    "roberta": (RobertaModel, RobertaForMaskedLM),
    "albert": (AlbertModel, AlbertForPreTraining),
    "distilbert": (DistilBertModel, DistilBertForMaskedLM),
    "big_bird": (BigBirdModel, BigBirdForPreTraining),
    "xlnet": (XLNetModel, XLNetLMHeadModel),
}


def build_model(config: BertConfig, *, heads: bool = False) -> _Base:
    """The base model, or the model with pretraining heads, for ``config``.

    >>> from models.config import preset
    >>> type(build_model(preset("albert", "tiny", vocab_size=100), heads=True)).__name__
    'AlbertForPreTraining'
    """
    if config.model_type not in MODELS:
        raise ValueError(f"unknown model_type {config.model_type!r}; known: {', '.join(MODELS)}")
    return MODELS[config.model_type][1 if heads else 0](config)


def count_parameters(config: BertConfig, *, heads: bool = False) -> int:
    """Parameters of the model ``config`` describes, without allocating them.

    The model is built on torch's meta device, so even large presets cost no
    memory. Shared and tied parameters are counted once.

    >>> from models.config import preset
    >>> count_parameters(preset("bert", "base"))
    109482240
    """
    import torch

    with torch.device("meta"):
        return build_model(config, heads=heads).num_parameters()
