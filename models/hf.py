"""HF transformers checkpoints in and out: :func:`from_hf` and :func:`to_hf`.

A checkpoint is a directory with ``config.json`` and ``model.safetensors``
(or ``pytorch_model.bin``, or a sharded safetensors index). The variant is
picked from ``model_type`` in ``config.json``; whether the pretraining heads are
loaded is decided by the weights present (or by ``heads=``).

One table per model type maps our state-dict names to transformers' names, and
both directions use it, so a round trip cannot drift. Nothing here needs
``transformers`` installed: only ``safetensors`` (and torch).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from models.bert import _Base
from models.config import AlbertConfig, BertConfig, BigBirdConfig, DistilBertConfig, RobertaConfig, XLNetConfig
from subword.formats.atomic import atomic_path

__all__ = ["config_from_hf", "config_to_hf", "from_hf", "to_hf"]

logger = logging.getLogger(__name__)

SUPPORTED = ("bert", "roberta", "albert", "distilbert", "big_bird", "xlnet")

# transformers' class defaults, used for keys a config.json leaves out. Note
# RoBERTa's are BERT-like, not those of the released checkpoints.
_HF_DEFAULTS: dict[str, dict[str, Any]] = {
    "bert": dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072, hidden_act="gelu", hidden_dropout_prob=0.1,
                 attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=2,
                 initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0),
    "albert": dict(vocab_size=30000, embedding_size=128, hidden_size=4096, num_hidden_layers=12,
                   num_hidden_groups=1, num_attention_heads=64, intermediate_size=16384, inner_group_num=1,
                   hidden_act="gelu_new", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                   max_position_embeddings=512, type_vocab_size=2, initializer_range=0.02,
                   layer_norm_eps=1e-12, classifier_dropout_prob=0.1, pad_token_id=0),
    "distilbert": dict(vocab_size=30522, max_position_embeddings=512, sinusoidal_pos_embds=False, n_layers=6,
                       n_heads=12, dim=768, hidden_dim=3072, dropout=0.1, attention_dropout=0.1,
                       activation="gelu", initializer_range=0.02, pad_token_id=0),
}
_HF_DEFAULTS["roberta"] = dict(_HF_DEFAULTS["bert"], vocab_size=50265, pad_token_id=1)
_HF_DEFAULTS["xlnet"] = dict(vocab_size=32000, d_model=1024, n_layer=24, n_head=16, d_inner=4096,
                             ff_activation="gelu", attn_type="bi", initializer_range=0.02, layer_norm_eps=1e-12,
                             dropout=0.1, mem_len=512, reuse_len=None, bi_data=False, clamp_len=-1,
                             same_length=False, pad_token_id=5)
_HF_DEFAULTS["big_bird"] = dict(_HF_DEFAULTS["bert"], vocab_size=50358, max_position_embeddings=4096,
                                hidden_act="gelu_new", attention_type="block_sparse", block_size=64,
                                num_random_blocks=3, use_bias=True, rescale_embeddings=False)

# Our field <- transformers' field, for the BERT-style configs.
_BERT_FIELDS = {
    "vocab_size": "vocab_size", "hidden_size": "hidden_size", "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads", "intermediate_size": "intermediate_size", "hidden_act": "hidden_act",
    "hidden_dropout": "hidden_dropout_prob", "attention_dropout": "attention_probs_dropout_prob",
    "max_position_embeddings": "max_position_embeddings", "type_vocab_size": "type_vocab_size",
    "initializer_range": "initializer_range", "layer_norm_eps": "layer_norm_eps", "pad_token_id": "pad_token_id",
}
_FIELDS: dict[str, dict[str, str]] = {
    "bert": _BERT_FIELDS,
    "roberta": _BERT_FIELDS,
    "albert": {**_BERT_FIELDS, "embedding_size": "embedding_size", "num_hidden_groups": "num_hidden_groups",
               "inner_group_num": "inner_group_num", "classifier_dropout": "classifier_dropout_prob"},
    "big_bird": {**_BERT_FIELDS, "attention_type": "attention_type", "block_size": "block_size",
                 "num_random_blocks": "num_random_blocks"},
    "xlnet": {
        "vocab_size": "vocab_size", "hidden_size": "d_model", "num_layers": "n_layer", "num_heads": "n_head",
        "intermediate_size": "d_inner", "hidden_act": "ff_activation", "hidden_dropout": "dropout",
        "attention_dropout": "dropout", "initializer_range": "initializer_range",
        "layer_norm_eps": "layer_norm_eps", "mem_len": "mem_len", "reuse_len": "reuse_len",
        "clamp_len": "clamp_len", "pad_token_id": "pad_token_id",
    },
    "distilbert": {
        "vocab_size": "vocab_size", "hidden_size": "dim", "num_layers": "n_layers", "num_heads": "n_heads",
        "intermediate_size": "hidden_dim", "hidden_act": "activation", "hidden_dropout": "dropout",
        "attention_dropout": "attention_dropout", "max_position_embeddings": "max_position_embeddings",
        "initializer_range": "initializer_range", "pad_token_id": "pad_token_id",
    },
}
_CONFIG_CLASSES: dict[str, type[BertConfig]] = {
    "bert": BertConfig, "roberta": RobertaConfig, "albert": AlbertConfig, "distilbert": DistilBertConfig,
    "big_bird": BigBirdConfig, "xlnet": XLNetConfig,
}

# ==== State-dict names ====

_PREFIX = {"bert": "bert.", "roberta": "roberta.", "albert": "albert.", "distilbert": "distilbert.",
           "big_bird": "bert.", "xlnet": "transformer."}
_BERT_LAYER = {
    "attn.q": "attention.self.query", "attn.k": "attention.self.key", "attn.v": "attention.self.value",
    "attn.o": "attention.output.dense", "attn_norm": "attention.output.LayerNorm",
    "ffn.fc_in": "intermediate.dense", "ffn.fc_out": "output.dense", "ffn_norm": "output.LayerNorm",
}
_LAYER: dict[str, dict[str, str]] = {
    "bert": _BERT_LAYER,
    "roberta": _BERT_LAYER,
    "big_bird": _BERT_LAYER,
    "albert": {
        "attn.q": "attention.query", "attn.k": "attention.key", "attn.v": "attention.value",
        "attn.o": "attention.dense", "attn_norm": "attention.LayerNorm",
        "ffn.fc_in": "ffn", "ffn.fc_out": "ffn_output", "ffn_norm": "full_layer_layer_norm",
    },
    "distilbert": {
        "attn.q": "attention.q_lin", "attn.k": "attention.k_lin", "attn.v": "attention.v_lin",
        "attn.o": "attention.out_lin", "attn_norm": "sa_layer_norm",
        "ffn.fc_in": "ffn.lin1", "ffn.fc_out": "ffn.lin2", "ffn_norm": "output_layer_norm",
    },
}
_BERT_HEADS = {"mlm.dense": "cls.predictions.transform.dense", "mlm.norm": "cls.predictions.transform.LayerNorm",
               "mlm.bias": "cls.predictions.bias", "sentence": "cls.seq_relationship"}
_HEADS: dict[str, dict[str, str]] = {
    "bert": _BERT_HEADS,
    "big_bird": _BERT_HEADS,
    "roberta": {"mlm.dense": "lm_head.dense", "mlm.norm": "lm_head.layer_norm", "mlm.bias": "lm_head.bias"},
    "albert": {"mlm.dense": "predictions.dense", "mlm.norm": "predictions.LayerNorm",
               "mlm.bias": "predictions.bias", "sentence": "sop_classifier.classifier"},
    "distilbert": {"mlm.dense": "vocab_transform", "mlm.norm": "vocab_layer_norm",
                   "mlm.bias": "vocab_projector.bias"},
    "xlnet": {"mlm.bias": "lm_loss.bias"},
}
# Older checkpoints may store the MLM bias only under the decoder's name.
_BIAS_ALIASES = {
    "cls.predictions.bias": "cls.predictions.decoder.bias",
    "lm_head.bias": "lm_head.decoder.bias",
    "predictions.bias": "predictions.decoder.bias",
}
# Keys transformers may write that we derive instead (ties, buffers).
_DERIVED_SUFFIXES = ("position_ids", "token_type_ids", "decoder.weight", "decoder.bias", "vocab_projector.weight",
                     "lm_loss.weight")
_ARCHITECTURES = {
    ("bert", True, "nsp"): "BertForPreTraining", ("bert", True, None): "BertForMaskedLM",
    ("roberta", True, None): "RobertaForMaskedLM", ("albert", True, "sop"): "AlbertForPreTraining",
    ("albert", True, None): "AlbertForMaskedLM", ("distilbert", True, None): "DistilBertForMaskedLM",
    ("bert", False): "BertModel", ("roberta", False): "RobertaModel", ("albert", False): "AlbertModel",
    ("distilbert", False): "DistilBertModel", ("big_bird", True, "nsp"): "BigBirdForPreTraining",
    ("big_bird", True, None): "BigBirdForMaskedLM", ("big_bird", False): "BigBirdModel",
    ("xlnet", True, None): "XLNetLMHeadModel", ("xlnet", False): "XLNetModel",
}


def _hf_name(key: str, config: BertConfig, prefix: str) -> str:
    """transformers' name for one of our state-dict keys (without ``backbone.``)."""
    mt = config.model_type
    if mt == "xlnet":
        return _xlnet_name(key, prefix)
    head, _, rest = key.partition(".")
    if head in ("mlm", "sentence"):
        sub, _, leaf = key.rpartition(".")
        if key == "mlm.bias":
            return _HEADS[mt]["mlm.bias"]
        return f"{_HEADS[mt][sub]}.{leaf}"
    if head == "embeddings":
        sub, _, leaf = rest.partition(".")
        if sub == "project":
            return f"{prefix}encoder.embedding_hidden_mapping_in.{leaf}"
        table = {"word": "word_embeddings", "position": "position_embeddings",
                 "token_type": "token_type_embeddings", "norm": "LayerNorm"}[sub]
        return f"{prefix}embeddings.{table}.{leaf}"
    if head == "pooler":
        # ALBERT's and BigBird's pooler is a bare Linear; BERT's and RoBERTa's wrap it as `dense`.
        bare = mt in ("albert", "big_bird")
        return f"{prefix}pooler.{rest.partition('.')[2]}" if bare else f"{prefix}pooler.{rest}"
    if head == "encoder":
        _, idx, rest = rest.split(".", 2)
        sub, _, leaf = rest.rpartition(".")
        layer = _LAYER[mt][sub]
        u = int(idx)
        if mt == "albert":
            inner = config.inner_group_num if config.share == "all" else 1
            return f"{prefix}encoder.albert_layer_groups.{u // inner}.albert_layers.{u % inner}.{layer}.{leaf}"
        if mt == "distilbert":
            return f"{prefix}transformer.layer.{u}.{layer}.{leaf}"
        return f"{prefix}encoder.layer.{u}.{layer}.{leaf}"
    raise KeyError(key)


_XLNET_LAYER = {"attn_norm": "rel_attn.layer_norm", "ffn.fc_in": "ff.layer_1", "ffn.fc_out": "ff.layer_2",
                "ffn_norm": "ff.layer_norm"}


def _xlnet_name(key: str, prefix: str) -> str:
    if key == "lm_bias":
        return "lm_loss.bias"
    if key == "word.weight":
        return f"{prefix}word_embedding.weight"
    if key == "mask_emb":
        return f"{prefix}mask_emb"
    _, idx, rest = key.split(".", 2)  # layers.N.<rest>
    if rest.startswith("attn."):
        return f"{prefix}layer.{idx}.rel_attn.{rest[5:]}"
    sub, _, leaf = rest.rpartition(".")
    return f"{prefix}layer.{idx}.{_XLNET_LAYER[sub]}.{leaf}"


def _name_map(model: _Base, prefix: str) -> dict[str, str]:
    """Our state-dict key -> transformers' key, for every tensor of ``model``.

    ``prefix`` goes before the backbone's names (``bert.`` in a model with
    heads, nothing in a bare ``BertModel`` checkpoint); head names have none.
    """
    return {key: _hf_name(key.removeprefix("backbone."), model.config, prefix) for key in model.state_dict()}


# ==== Configs ====


def config_from_hf(hf: dict[str, Any]) -> BertConfig:
    """Our config for a transformers ``config.json`` dict.

    Raises:
        ValueError: for a model type we do not support, or options (relative
            positions, decoder use, sinusoidal positions) we do not implement.

    >>> config_from_hf({"model_type": "roberta", "num_hidden_layers": 2}).layer_norm_eps
    1e-12
    """
    mt = hf.get("model_type")
    if mt not in SUPPORTED:
        raise ValueError(
            f"unknown model_type {mt!r} in config.json; supported: {', '.join(SUPPORTED)}"
        )
    merged = {**_HF_DEFAULTS[mt], **{k: v for k, v in hf.items() if v is not None}}
    if merged.get("position_embedding_type", "absolute") != "absolute":
        raise ValueError(
            f"position_embedding_type {merged['position_embedding_type']!r} is not supported (only 'absolute')"
        )
    if merged.get("is_decoder") or merged.get("add_cross_attention"):
        raise ValueError("decoder configurations (is_decoder / add_cross_attention) are not supported")
    if mt == "distilbert" and merged.get("sinusoidal_pos_embds"):
        raise ValueError("DistilBERT with sinusoidal_pos_embds=True is not supported")
    if mt == "xlnet":
        bad = {k: merged.get(k) for k, ok in (("attn_type", "bi"), ("bi_data", False), ("same_length", False))
               if merged.get(k, ok) != ok}
        if bad:
            raise ValueError(f"XLNet options not supported: {bad}")
        if merged.get("d_head", merged["d_model"] // merged["n_head"]) * merged["n_head"] != merged["d_model"]:
            raise ValueError("XLNet needs d_head * n_head == d_model")
    if mt == "big_bird" and (not merged["use_bias"] or merged["rescale_embeddings"]):
        raise ValueError("BigBird with use_bias=False or rescale_embeddings=True is not supported")
    kwargs = {ours: merged[theirs] for ours, theirs in _FIELDS[mt].items()}
    if mt == "albert":
        kwargs["share"] = "all"
    if mt == "big_bird":
        # transformers evaluates with every random block at block 0; keep that
        # so a loaded checkpoint gives the same numbers (switch to "uniform" at will).
        kwargs["random_plan"] = "zeros"
    return _CONFIG_CLASSES[mt](**kwargs)


def config_to_hf(config: BertConfig, *, heads: bool = False) -> dict[str, Any]:
    """transformers' ``config.json`` dict for our config.

    Raises:
        ValueError: when the config uses an option transformers cannot express
            (pre-LN, no biases, gated FFN, attention/ffn-only sharing, ...).

    >>> config_to_hf(BertConfig.preset("tiny", vocab_size=100))["architectures"]
    ['BertModel']
    """
    mt = config.model_type
    default = _CONFIG_CLASSES[mt]()
    problems = []
    if config.norm != "post":
        problems.append("norm='pre'")
    if not config.bias:
        problems.append("bias=False")
    if config.gated_ffn:
        problems.append("gated_ffn=True")
    if config.position_style != default.position_style:
        problems.append(f"position_style={config.position_style!r}")
    if (config.embedding_size is None) != (default.embedding_size is None):
        problems.append(f"embedding_size={config.embedding_size!r}")
    if (config.head_act or config.hidden_act) != (default.head_act or config.hidden_act):
        problems.append(f"head_act={config.head_act!r}")
    allowed_share = ("all", "none") if mt == "albert" else ("none",)
    if config.share not in allowed_share:
        problems.append(f"share={config.share!r}")
    if mt != "big_bird" and config.attention_type != "original_full":
        problems.append(f"attention_type={config.attention_type!r}")
    for flag in ("embedding_dropout_first", "ffn_output_dropout"):
        if getattr(config, flag) != getattr(default, flag):
            problems.append(f"{flag}={getattr(config, flag)}")
    if mt == "xlnet" and config.hidden_dropout != config.attention_dropout:
        problems.append("hidden_dropout != attention_dropout (XLNet has one dropout)")
    if mt == "distilbert" and (config.type_vocab_size or config.layer_norm_eps != 1e-12):
        problems.append("a segment embedding or layer_norm_eps != 1e-12")
    if heads and (mt, True, config.sentence_head) not in _ARCHITECTURES:
        problems.append(f"sentence_head={config.sentence_head!r}")
    if problems:
        raise ValueError(f"transformers' {mt} cannot express {', '.join(problems)}")
    out: dict[str, Any] = {theirs: getattr(config, ours) for ours, theirs in _FIELDS[mt].items()}
    if mt == "albert" and config.share == "none":
        out.update(num_hidden_groups=config.num_layers, inner_group_num=1)
    if mt == "distilbert":
        out["sinusoidal_pos_embds"] = False
    if mt == "big_bird":
        out.update(use_bias=True, rescale_embeddings=False)
    if mt == "xlnet":
        out.update(d_head=config.hidden_size // config.num_heads, attn_type="bi", bi_data=False,
                   same_length=False, use_mems_eval=True, use_mems_train=False, bos_token_id=1, eos_token_id=2)
    arch = _ARCHITECTURES[(mt, True, config.sentence_head) if heads else (mt, False)]
    out.update(model_type=mt, architectures=[arch], tie_word_embeddings=True)
    if mt == "roberta":
        out.update(bos_token_id=0, eos_token_id=2)
    return out


# ==== Loading ====


def _read_weights(directory: Path) -> dict[str, Tensor]:
    from safetensors.torch import load_file

    single = directory / "model.safetensors"
    index = directory / "model.safetensors.index.json"
    if single.is_file():
        return load_file(single)
    if index.is_file():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        sd: dict[str, Tensor] = {}
        for shard in shards:
            sd.update(load_file(directory / shard))
        return sd
    bin_path = directory / "pytorch_model.bin"
    if bin_path.is_file():
        return torch.load(bin_path, map_location="cpu", weights_only=True)
    raise FileNotFoundError(
        f"{directory} has no model.safetensors, model.safetensors.index.json or pytorch_model.bin"
    )


def from_hf(path_or_dir: str | os.PathLike[str], *, heads: bool | None = None) -> _Base:
    """Load a transformers checkpoint directory into our model.

    Args:
        path_or_dir: a directory with ``config.json`` and the weights.
        heads: load the pretraining heads (``True``), only the base model
            (``False``), or whatever the checkpoint has (``None``).

    Returns:
        A :class:`~models.bert.BertModel` (or a variant's) in eval mode, or a
        :class:`~models.bert.BertForPreTraining` (or a variant's) with heads.

    Raises:
        FileNotFoundError: no config.json or weights.
        ValueError: an unsupported model type, or weights whose names or
            shapes do not fit the config (the message names the tensor).

    >>> import tempfile
    >>> from models import BertConfig, BertModel
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = BertModel(BertConfig.preset("tiny", vocab_size=100)).to_hf(d)
    ...     type(from_hf(d)).__name__
    'BertModel'
    """
    directory = Path(path_or_dir)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory} is not a directory (expected config.json + weights)")
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise FileNotFoundError(f"{directory} has no config.json")
    hf_config = json.loads(config_path.read_text())
    config = config_from_hf(hf_config)
    sd = _read_weights(directory)
    mt = config.model_type

    prefix = _PREFIX[mt] if any(k.startswith(_PREFIX[mt]) for k in sd) else ""
    bias_key = _HEADS[mt]["mlm.bias"]
    head_keys_present = bias_key in sd or _BIAS_ALIASES.get(bias_key, "") in sd
    if heads is None:
        heads = head_keys_present
    pooler_key = f"{prefix}pooler.weight" if mt in ("albert", "big_bird") else f"{prefix}pooler.dense.weight"
    has_pooler = pooler_key in sd
    if heads:
        sentence = "sentence" in _HEADS[mt] and f"{_HEADS[mt]['sentence']}.weight" in sd
        config = config.replace(sentence_head=config.sentence_head if sentence else None)
        model: _Base = _model_classes(mt)[1](config)
    else:
        config = config.replace(add_pooler=has_pooler)
        model = _model_classes(mt)[0](config)

    names = _name_map(model, prefix)
    own = model.state_dict()
    loaded: dict[str, Tensor] = {}
    missing = []
    for ours, theirs in names.items():
        tensor = sd.get(theirs)
        if tensor is None and theirs in _BIAS_ALIASES:
            tensor = sd.get(_BIAS_ALIASES[theirs])
        if tensor is None:
            missing.append(theirs)
            continue
        if tensor.shape != own[ours].shape:
            raise ValueError(
                f"checkpoint tensor {theirs} has shape {tuple(tensor.shape)} but config.json implies "
                f"{tuple(own[ours].shape)} (for {ours})"
            )
        loaded[ours] = tensor
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise ValueError(f"checkpoint in {directory} lacks {len(missing)} tensor(s) the config needs: {shown}")
    used = set(names.values()) | {_BIAS_ALIASES.get(n, "") for n in names.values()}
    unused = [k for k in sd if k not in used and not k.endswith(_DERIVED_SUFFIXES)]
    backbone_unused = [
        k for k in unused if (k.startswith(prefix) if prefix else not _is_head_key(k, mt))
    ]
    if backbone_unused:
        raise ValueError(
            f"checkpoint has tensors the config.json does not account for (more layers than "
            f"num_layers says?): {', '.join(sorted(backbone_unused)[:5])}"
        )
    if unused:
        logger.info("from_hf: ignoring %d head tensor(s): %s", len(unused), ", ".join(sorted(unused)[:5]))
    model.load_state_dict(loaded, strict=True)
    return model.eval()


def _is_head_key(key: str, mt: str) -> bool:
    roots = {v.split(".")[0] for v in _HEADS[mt].values()} | {"classifier", "qa_outputs", "pre_classifier"}
    return key.split(".")[0] in roots


def _model_classes(mt: str) -> tuple[type[_Base], type[_Base]]:
    from models.registry import MODELS

    return MODELS[mt]


# ==== Saving ====


def to_hf(model: _Base, directory: str | os.PathLike[str]) -> Path:
    """Write ``model`` as a transformers checkpoint that ``from_pretrained`` loads.

    Writes ``config.json`` and ``model.safetensors`` (tied decoder weights are
    left out, as transformers itself does), each atomically. A BigBird's random
    plan is not a weight: transformers uses its own (all block 0 in eval mode),
    so only ``random_plan="zeros"`` models give the same numbers there.

    Args:
        model: a base model or a model with pretraining heads.
        directory: created if missing.

    Returns:
        The directory.

    Raises:
        ValueError: if the config uses options transformers cannot express.

    >>> import tempfile
    >>> from models import BertConfig, BertModel
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     d = to_hf(BertModel(BertConfig.preset("tiny", vocab_size=100)), tmp)
    ...     sorted(p.name for p in d.iterdir())
    ['config.json', 'model.safetensors']
    """
    from safetensors.torch import save_file

    if not isinstance(model, _Base):
        raise TypeError(f"to_hf expects one of our models, got {type(model).__name__}")
    heads = hasattr(model, "backbone")
    config = model.config
    hf_config = config_to_hf(config, heads=heads)
    # transformers writes bare base models without the `bert.` prefix.
    names = _name_map(model, _PREFIX[config.model_type] if heads else "")
    sd = {names[k]: v.detach().contiguous().cpu().clone() for k, v in model.state_dict().items()}
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    _atomic_write(directory / "config.json", lambda p: p.write_text(json.dumps(hf_config, indent=2) + "\n"))
    _atomic_write(directory / "model.safetensors", lambda p: save_file(sd, str(p), metadata={"format": "pt"}))
    return directory


def _atomic_write(target: Path, write: Any) -> None:
    # subword's one atomic-write helper: temp file beside the target, normal permissions, removed on failure.
    with atomic_path(target) as tmp:
        write(tmp)
