"""Dataclass configurations for the BERT family, with tiny/small/base presets.

One dataclass, :class:`BertConfig`, holds every knob of the shared encoder; the
variants subclass it only to change defaults (and ALBERT adds its sharing
options). What the HF checkpoints depend on numerically is *pinned* in the
defaults and must be kept when cross-checking against transformers:

=============  ==============  ==========================  ========================
model          layer-norm eps  GELU (``hidden_act``)       positions
=============  ==============  ==========================  ========================
BERT           1e-12           ``"gelu"``: exact, erf      ``0 .. T-1``
RoBERTa        1e-5            ``"gelu"``; the MLM head    ``pad+1 .. pad+T`` for
                               is erf-GELU whatever        real tokens, ``pad`` for
                               ``hidden_act`` says         padding (offset 2)
ALBERT         1e-12           ``"gelu_new"``: tanh form   ``0 .. T-1``
DistilBERT     1e-12           ``"gelu"``                  ``0 .. T-1``
BigBird        1e-12           ``"gelu_new"``: tanh form   ``0 .. T-1``
XLNet          1e-12           ``"gelu"``                  relative, ``[sin | cos]``
=============  ==============  ==========================  ========================

The erf and tanh GELUs differ by up to 4.7e-4, so picking the wrong one breaks
a 1e-5 comparison; likewise RoBERTa's class defaults in transformers are
BERT-like (eps 1e-12, 512 positions, 2 token types) while the released
checkpoints use eps 1e-5, 514 positions and 1 token type -- our defaults are
the released ones.

Faster recipes (pre-LN with a final norm, no biases, a gated FFN) are options
that default to the faithful post-LN BERT block.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

__all__ = [
    "ACTIVATIONS",
    "AlbertConfig",
    "BertConfig",
    "BigBirdConfig",
    "DistilBertConfig",
    "RobertaConfig",
    "XLNetConfig",
    "preset",
]

#: Activation names we accept, in transformers' spelling, and what they compute.
ACTIVATIONS: dict[str, str] = {
    "gelu": "exact GELU, x * Phi(x) with erf",
    "gelu_python": "exact GELU (erf), transformers' pure-Python spelling",
    "gelu_new": "tanh approximation 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3)))",
    "gelu_pytorch_tanh": "tanh approximation (same formula as gelu_new)",
    "gelu_fast": "tanh approximation, factored as 0.5x(1 + tanh(0.79788456x(1 + 0.044715x^2)))",
    "quick_gelu": "x * sigmoid(1.702x)",
    "relu": "max(0, x)",
    "silu": "x * sigmoid(x)",
}

Size = Literal["tiny", "small", "base"]


@dataclass
class BertConfig:
    """Configuration of a BERT-family encoder (defaults: BERT-base, uncased vocab).

    Attributes:
        vocab_size: rows of the token embedding (30,522 for BERT's WordPiece).
        hidden_size: model width H.
        num_layers: number of encoder layers L.
        num_heads: attention heads (H must be divisible by it).
        intermediate_size: FFN inner width I.
        max_position_embeddings: rows of the learned position table.
        type_vocab_size: rows of the segment table; 0 means no segment embedding.
        pad_token_id: id of ``[PAD]``; its embedding row starts at zero.
        layer_norm_eps: pinned per model (see the module docstring).
        hidden_act: activation in the FFN, transformers' name (see ``ACTIVATIONS``).
        head_act: activation in the MLM head transform; ``None`` = ``hidden_act``.
        hidden_dropout: dropout on embeddings and residual branches.
        attention_dropout: dropout on attention weights.
        initializer_range: std of the normal initialisation (plain, not truncated,
            as in transformers; the original TF BERT truncates at 2 std).
        position_style: ``"absolute"`` (0..T-1) or ``"padding_offset"`` (RoBERTa:
            real tokens count from ``pad_token_id + 1``, padding sits at ``pad_token_id``).
        embedding_size: width E of the embeddings when factorised (ALBERT);
            ``None`` means E = H and no projection.
        add_pooler: whether the base model has the ``tanh(dense(h[:, 0]))`` pooler.
        sentence_head: the pretraining head on the pooled output: ``"nsp"``, ``"sop"`` or ``None``.
        classifier_dropout: dropout before the sentence head (ALBERT's SOP uses 0.1).
        norm: ``"post"`` (faithful BERT) or ``"pre"`` (pre-LN with a final norm).
        bias: biases in every linear and layer-norm; ``False`` drops them all.
        gated_ffn: a GLU feed-forward, ``act(x W_g) * (x W_u)`` (GeGLU with GELU).
        attn_impl: ``"auto"`` (SDPA fast path), ``"sdpa"`` or ``"plain"``.
        share: parameter sharing across layers: ``"none"``, ``"all"`` (transformers'
            ALBERT groups, see ``num_hidden_groups``), ``"attention"`` or ``"ffn"``.
        num_hidden_groups: with ``share="all"``, how many distinct layer groups.
        inner_group_num: with ``share="all"``, layers run in sequence inside a group.
        attention_type: ``"original_full"`` (dense) or ``"block_sparse"`` (BigBird ITC).
        block_size: block-sparse block size b.
        num_random_blocks: block-sparse random blocks R per query block.
        random_plan: ``"uniform"`` (distinct random blocks, seeded per layer) or
            ``"zeros"`` (every random block is block 0: transformers' eval mode).
        attention_seed: seed of the uniform plan; layer i uses ``attention_seed + i``.
        embedding_dropout_first: dropout before the embedding norm (BigBird's order).
        ffn_output_dropout: dropout on the FFN output before its residual (ALBERT has none).

    >>> cfg = BertConfig.preset("tiny", vocab_size=100)
    >>> cfg.hidden_size, cfg.num_layers, cfg.layer_norm_eps
    (64, 2, 1e-12)
    """

    model_type: ClassVar[str] = "bert"
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": dict(hidden_size=64, num_layers=2, num_heads=2, intermediate_size=256, max_position_embeddings=128),
        "small": dict(hidden_size=512, num_layers=4, num_heads=8, intermediate_size=2048),
        "base": {},
    }

    vocab_size: int = 30522
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int = 3072
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    pad_token_id: int = 0
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"
    head_act: str | None = None
    hidden_dropout: float = 0.1
    attention_dropout: float = 0.1
    initializer_range: float = 0.02
    position_style: Literal["absolute", "padding_offset"] = "absolute"
    embedding_size: int | None = None
    add_pooler: bool = True
    sentence_head: Literal["nsp", "sop"] | None = "nsp"
    classifier_dropout: float = 0.0
    norm: Literal["post", "pre"] = "post"
    bias: bool = True
    gated_ffn: bool = False
    attn_impl: Literal["auto", "sdpa", "plain"] = "auto"
    share: Literal["none", "all", "attention", "ffn"] = "none"
    num_hidden_groups: int = 1
    inner_group_num: int = 1
    attention_type: Literal["original_full", "block_sparse"] = "original_full"
    block_size: int = 64
    num_random_blocks: int = 3
    random_plan: Literal["uniform", "zeros"] = "uniform"
    attention_seed: int = 0
    embedding_dropout_first: bool = False
    ffn_output_dropout: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "hidden_size", "num_layers", "num_heads", "intermediate_size",
                     "max_position_embeddings", "num_hidden_groups", "inner_group_num"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.hidden_size % self.num_heads != 0:
            raise ValueError(f"hidden_size {self.hidden_size} is not divisible by num_heads {self.num_heads}")
        if self.type_vocab_size < 0:
            raise ValueError(f"type_vocab_size must be >= 0, got {self.type_vocab_size}")
        if not 0 <= self.pad_token_id < self.vocab_size:
            raise ValueError(f"pad_token_id {self.pad_token_id} is outside the vocabulary of {self.vocab_size}")
        for name in ("hidden_act", "head_act"):
            act = getattr(self, name)
            if act is not None and act not in ACTIVATIONS:
                raise ValueError(f"unknown {name} {act!r}; known: {', '.join(ACTIVATIONS)}")
        choices = {
            "position_style": ("absolute", "padding_offset"),
            "sentence_head": ("nsp", "sop", None),
            "norm": ("post", "pre"),
            "attn_impl": ("auto", "sdpa", "plain"),
            "share": ("none", "all", "attention", "ffn"),
            "attention_type": ("original_full", "block_sparse"),
            "random_plan": ("uniform", "zeros"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.embedding_size is not None and self.embedding_size < 1:
            raise ValueError(f"embedding_size must be positive or None, got {self.embedding_size}")
        if self.share == "all" and self.num_hidden_groups > self.num_layers:
            raise ValueError(
                f"num_hidden_groups {self.num_hidden_groups} exceeds num_layers {self.num_layers}"
            )
        if self.position_style == "padding_offset" and self.max_position_embeddings <= self.pad_token_id + 1:
            raise ValueError(
                f"max_position_embeddings {self.max_position_embeddings} leaves no room after the "
                f"padding offset {self.pad_token_id + 1}"
            )

    # ==== Derived sizes ====

    @property
    def embed_dim(self) -> int:
        """Width E of the embedding tables (H unless factorised)."""
        return self.hidden_size if self.embedding_size is None else self.embedding_size

    @property
    def position_offset(self) -> int:
        """First position index of a real token: 0, or ``pad_token_id + 1`` for RoBERTa."""
        return self.pad_token_id + 1 if self.position_style == "padding_offset" else 0

    @property
    def max_sequence_length(self) -> int:
        """The longest input the position table can number."""
        return self.max_position_embeddings - self.position_offset

    # ==== Construction helpers ====

    @classmethod
    def preset(cls, size: Size, **overrides: Any) -> BertConfig:
        """Build a preset (``"tiny"``, ``"small"``, ``"base"``), then apply overrides.

        >>> RobertaConfig.preset("base").layer_norm_eps
        1e-05
        """
        if size not in cls.PRESETS:
            raise ValueError(f"unknown preset {size!r}; choose from {', '.join(cls.PRESETS)}")
        return cls(**{**cls.PRESETS[size], **overrides})

    def replace(self, **changes: Any) -> BertConfig:
        """A copy with some fields changed (validated again).

        >>> BertConfig().replace(norm="pre").norm
        'pre'
        """
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict with ``model_type``, for checkpoints (nanoGPT's ``model_args``).

        >>> BertConfig().to_dict()["model_type"]
        'bert'
        """
        return {"model_type": self.model_type, **dataclasses.asdict(self)}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> BertConfig:
        """Inverse of :meth:`to_dict`; unknown keys are errors.

        >>> BertConfig.from_dict(AlbertConfig().to_dict()).embedding_size
        128
        """
        d = dict(d)
        model_type = d.pop("model_type", "bert")
        if model_type not in CONFIGS:
            raise ValueError(f"unknown model_type {model_type!r}; known: {', '.join(CONFIGS)}")
        return CONFIGS[model_type](**d)


@dataclass
class RobertaConfig(BertConfig):
    """RoBERTa: BERT's encoder with padding-offset positions, no NSP, eps 1e-5.

    Pinned: ``layer_norm_eps=1e-5``, ``max_position_embeddings=514`` (512 usable
    positions plus the offset ``pad_token_id + 1 = 2``), ``type_vocab_size=1``,
    and an erf-GELU MLM head (``head_act="gelu"``), as in the released checkpoints.

    >>> RobertaConfig().max_sequence_length
    512
    """

    model_type: ClassVar[str] = "roberta"
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": dict(BertConfig.PRESETS["tiny"], max_position_embeddings=130),
        "small": dict(BertConfig.PRESETS["small"]),
        "base": {},
    }

    vocab_size: int = 50265
    max_position_embeddings: int = 514
    type_vocab_size: int = 1
    pad_token_id: int = 1
    layer_norm_eps: float = 1e-5
    head_act: str | None = "gelu"
    position_style: Literal["absolute", "padding_offset"] = "padding_offset"
    sentence_head: Literal["nsp", "sop"] | None = None


@dataclass
class AlbertConfig(BertConfig):
    """ALBERT: factorised embeddings (E=128), shared layers, SOP, tanh GELU.

    Defaults are ALBERT-base (H=768, 12 layers, all shared: 11.7M parameters).
    Pinned: ``hidden_act="gelu_new"`` (tanh form), eps 1e-12, dropouts 0 (v2).

    >>> AlbertConfig().share, AlbertConfig().embedding_size
    ('all', 128)
    """

    model_type: ClassVar[str] = "albert"
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": dict(BertConfig.PRESETS["tiny"], embedding_size=32),
        "small": dict(BertConfig.PRESETS["small"]),
        "base": {},
    }

    vocab_size: int = 30000
    embedding_size: int | None = 128
    hidden_act: str = "gelu_new"
    hidden_dropout: float = 0.0
    attention_dropout: float = 0.0
    classifier_dropout: float = 0.1
    sentence_head: Literal["nsp", "sop"] | None = "sop"
    share: Literal["none", "all", "attention", "ffn"] = "all"
    ffn_output_dropout: bool = False


@dataclass
class DistilBertConfig(BertConfig):
    """DistilBERT: 6 layers, no segment embedding, no pooler, no sentence head.

    >>> DistilBertConfig().num_layers, DistilBertConfig().type_vocab_size
    (6, 0)
    """

    model_type: ClassVar[str] = "distilbert"
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": dict(BertConfig.PRESETS["tiny"]),
        "small": dict(BertConfig.PRESETS["small"]),
        "base": {},
    }

    num_layers: int = 6
    type_vocab_size: int = 0
    add_pooler: bool = False
    sentence_head: Literal["nsp", "sop"] | None = None


@dataclass
class BigBirdConfig(BertConfig):
    """BigBird: BERT with block-sparse attention (ITC) for long inputs.

    Defaults follow transformers' ``BigBirdConfig``: 4096 positions, b = 64,
    R = 3, ``hidden_act="gelu_new"`` (tanh), dropout *before* the embedding norm.
    Sequences of at most ``(5 + 2R) * b`` tokens (704 by default) run dense
    attention -- decided per call, never switched for good.

    >>> BigBirdConfig().attention_type, BigBirdConfig.preset("tiny").block_size
    ('block_sparse', 8)
    """

    model_type: ClassVar[str] = "big_bird"
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "tiny": dict(BertConfig.PRESETS["tiny"], max_position_embeddings=512, block_size=8, num_random_blocks=2),
        "small": dict(BertConfig.PRESETS["small"], block_size=32),
        "base": {},
    }

    vocab_size: int = 50358
    max_position_embeddings: int = 4096
    hidden_act: str = "gelu_new"
    attention_type: Literal["original_full", "block_sparse"] = "block_sparse"
    embedding_dropout_first: bool = True


@dataclass
class XLNetConfig(BertConfig):
    """XLNet: relative-position two-stream attention, no absolute positions.

    Uses the shared fields for sizes (``hidden_size`` is XLNet's ``d_model``,
    ``intermediate_size`` its ``d_inner``, ``hidden_dropout`` its single
    ``dropout``); position tables, segment tables and poolers do not exist
    (``max_position_embeddings`` is unused: positions are relative, encoded as
    ``[sin | cos]`` *halves*, not interleaved). Segments enter as a learned
    same/different-segment bias per layer.

    Attributes:
        mem_len: how many past content states to keep as memory (``None``: all).
        reuse_len: how many tokens of the current segment are cached (``None``: all).
        clamp_len: clamp relative distances to this (``-1``: no clamping).

    >>> XLNetConfig().pad_token_id, XLNetConfig().vocab_size
    (5, 32000)
    """

    model_type: ClassVar[str] = "xlnet"
    # The BERT presets minus max_position_embeddings, which XLNet has no use for.
    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        size: {k: v for k, v in BertConfig.PRESETS[size].items() if k != "max_position_embeddings"}
        for size in ("tiny", "small", "base")
    }
    #: Fields of the shared config that XLNet's code never reads: setting one
    #: to anything but its default is refused rather than silently ignored.
    IGNORED: ClassVar[tuple[str, ...]] = (
        "max_position_embeddings", "type_vocab_size", "head_act", "position_style", "add_pooler",
        "sentence_head", "classifier_dropout", "attn_impl", "num_hidden_groups", "inner_group_num",
        "block_size", "num_random_blocks", "random_plan", "attention_seed", "embedding_dropout_first",
        "ffn_output_dropout",
    )

    vocab_size: int = 32000
    pad_token_id: int = 5
    type_vocab_size: int = 0
    add_pooler: bool = False
    sentence_head: Literal["nsp", "sop"] | None = None
    mem_len: int | None = 512
    reuse_len: int | None = None
    clamp_len: int = -1

    def __post_init__(self) -> None:
        super().__post_init__()
        unsupported = {"norm": "post", "attention_type": "original_full", "share": "none",
                       "embedding_size": None, "gated_ffn": False, "bias": True}
        for name, value in unsupported.items():
            if getattr(self, name) != value:
                raise ValueError(f"XLNet does not support {name}={getattr(self, name)!r}")
        defaults = {f.name: f.default for f in dataclasses.fields(XLNetConfig)}
        for name in self.IGNORED:
            if getattr(self, name) != defaults[name]:
                raise ValueError(
                    f"XLNet does not use {name} (it has relative positions, no pooler, sentence head or "
                    f"block-sparse attention); got {name}={getattr(self, name)!r}, leave it at "
                    f"{defaults[name]!r}"
                )


CONFIGS: dict[str, type[BertConfig]] = {
    c.model_type: c for c in (BertConfig, RobertaConfig, AlbertConfig, DistilBertConfig, BigBirdConfig, XLNetConfig)
}


def preset(model_type: str, size: Size = "base", **overrides: Any) -> BertConfig:
    """The preset configuration of a model type.

    >>> preset("distilbert", "tiny", vocab_size=500).num_layers
    2
    """
    if model_type not in CONFIGS:
        raise ValueError(f"unknown model_type {model_type!r}; known: {', '.join(CONFIGS)}")
    return CONFIGS[model_type].preset(size, **overrides)
