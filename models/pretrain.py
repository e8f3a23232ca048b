"""The pretraining loop: objectives per model, AdamW, schedules, accumulation, AMP, checkpoints, DDP.

One function, :func:`pretrain`, runs a whole job described by one dataclass, :class:`PretrainConfig`
(the same fields feed the ``subword pretrain`` options and the config stored in every checkpoint).

What makes a resumed run bit-exact (CPU, fp32): every random choice of the data is a function of
counters, not of a generator's hidden state -- the example order is a permutation seeded by
``(seed, epoch)`` plus a consumed offset (:class:`models.data.EpochOrder`), and masks, pairs and
permutations are functions of ``(seed, epoch, example index)`` (:mod:`models.objectives`). What is
left (dropout) draws from torch's global generator, whose state the checkpoint stores with
python's, numpy's and CUDA's; the optimizer, scheduler (a pure function of the step), scaler and
counters complete it.

The loss of one optimizer step is normalised by the *global* number of predictions (masked tokens,
or sentence pairs, summed over micro-batches and processes), so gradient accumulation and DDP give
the gradient of one big batch: each micro-batch contributes ``sum of its losses / global count``.

Files in ``output_dir``: ``log.jsonl`` (one JSON object per optimizer step, evaluations and
layer statistics on lines of their own), ``loss.png``, ``checkpoints/ckpt-<step>.pt`` (the last
``keep``), ``model/`` (our format: ``config.json``, ``model.safetensors``, ``tokenizer.json``) and
``hf/`` (transformers' format with the tokenizer beside it) where transformers can express the config.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import random
import re
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from models.config import preset as model_preset
from models.data import EpochOrder, PackedSequences, SegmentPairs, TokenShards, tokenizer_hash
from models.registry import build_model
from subword.formats.atomic import atomic_path, atomic_write_text

__all__ = [
    "DEFAULTS",
    "PretrainConfig",
    "PretrainError",
    "PretrainInterrupted",
    "TrainingDiverged",
    "check_tokenizer_fits",
    "find_checkpoints",
    "missing_roles",
    "role_tokens",
    "load_checkpoint",
    "load_pretrained",
    "pretrain",
    "special_ids",
]

log = logging.getLogger("models.pretrain")

Objective = Literal["mlm", "mlm+nsp", "mlm+sop", "plm", "distill"]

#: Each model's paper defaults: (objective, masking).
DEFAULTS: dict[str, tuple[str, str]] = {
    "bert": ("mlm+nsp", "static"),
    "roberta": ("mlm", "dynamic"),
    "albert": ("mlm+sop", "static"),
    "distilbert": ("distill", "dynamic"),
    "xlnet": ("plm", "dynamic"),
    "bigbird": ("mlm", "dynamic"),
}
#: The models' model_type names in models.config.
_MODEL_TYPES = {"bert": "bert", "roberta": "roberta", "albert": "albert", "distilbert": "distilbert",
                "xlnet": "xlnet", "bigbird": "big_bird"}
#: Which tokens of a vocabulary play each role, in order of preference (BERT's, then RoBERTa's).
_ROLES = {"mask": ("[MASK]", "<mask>"), "cls": ("[CLS]", "<s>", "<cls>"), "sep": ("[SEP]", "</s>", "<sep>"),
          "pad": ("[PAD]", "<pad>")}
# Fields a resumed run may change: how long it runs, how it reports and where its files are, not what it
# computes (the tokenizer's content and the corpus are checked by hash, not by path).
_RESUMABLE = {"steps", "tokens", "time_budget", "eval_every", "save_every", "keep", "resume", "progress",
              "stats_every", "compile", "output_dir", "tokenizer", "cache_dir"}
# Activations/gradients beyond these are reported as exploding or vanishing.
_EXPLODE, _VANISH = 1e4, 1e-8


class PretrainError(ValueError):
    """A job that cannot run as configured (bad input, nothing to resume, a changed config)."""


class TrainingDiverged(RuntimeError):
    """The loss became NaN or infinite; the last good checkpoint is kept."""


class PretrainInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped the run between two steps, after a checkpoint of the last finished step was written.

    Attributes:
        checkpoint: the checkpoint written (``--resume`` continues from it).
        step: the step it holds.
    """

    def __init__(self, checkpoint: Path, step: int) -> None:
        super().__init__(f"interrupted at step {step}; checkpoint {checkpoint}")
        self.checkpoint = checkpoint
        self.step = step


@dataclass
class PretrainConfig:
    """Everything a pretraining job needs; stored in each checkpoint.

    ``None`` means "the model's paper default" (see :data:`DEFAULTS`) for ``objective`` and
    ``masking``, and "the preset's" for ``dropout``.

    >>> PretrainConfig(model="bert", tokenizer="tok.json", output_dir="run", steps=10).resolved().objective
    'mlm+nsp'
    """

    model: str
    tokenizer: str
    output_dir: str
    inputs: list[str] = field(default_factory=list)
    preset: str = "tiny"
    steps: int | None = None
    tokens: int | None = None
    time_budget: float | None = None
    batch_size: int = 32
    grad_accum: int = 1
    seq_len: int = 128
    lr: float = 5e-4
    warmup: float = 0.06
    schedule: Literal["linear", "cosine", "budget"] | None = None
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.98)
    eps: float = 1e-6
    clip: float = 1.0
    objective: Objective | None = None
    mask_rate: float = 0.15
    masking: Literal["static", "dynamic"] | None = None
    whole_word: bool = False
    prediction: Literal["sparse", "dense"] = "sparse"
    packing: Literal["full", "document"] = "full"
    split: Literal["blank", "line"] = "blank"
    jsonl_field: str | None = None
    dropout: float | None = None
    teacher: str | None = None
    eval_lines: int = 0
    eval_every: int = 0
    save_every: int = 0
    keep: int = 2
    stats_every: int = 100
    resume: bool = False
    device: Literal["auto", "cpu", "cuda"] = "auto"
    precision: Literal["fp32", "bf16", "fp16"] = "fp32"
    compile: bool = False
    seed: int = 0
    cache_dir: str | None = None
    model_overrides: dict[str, Any] = field(default_factory=dict)
    # "shared": rows of token strings shared between vocabularies start from the same values
    # (models.shared_init), so models that differ only in their tokenizer start alike.
    embedding_init: Literal["default", "shared"] = "default"

    def resolved(self) -> PretrainConfig:
        """A copy with the model defaults filled in and every value checked."""
        if self.model not in DEFAULTS:
            raise PretrainError(f"unknown model {self.model!r}; choose from {', '.join(DEFAULTS)}")
        objective, masking = DEFAULTS[self.model]
        cfg = dataclasses.replace(
            self,
            objective=self.objective or objective,
            masking=self.masking or masking,
            schedule=self.schedule or ("budget" if self.time_budget and not self.steps and not self.tokens
                                       else "linear"),
            inputs=[str(p) for p in self.inputs],
            betas=tuple(self.betas),
        )
        cfg._check()
        return cfg

    def _check(self) -> None:
        positive = {"batch_size": self.batch_size, "grad_accum": self.grad_accum, "seq_len": self.seq_len,
                    "keep": self.keep}
        for name, value in positive.items():
            if value < 1:
                raise PretrainError(f"--{name.replace('_', '-')} must be at least 1, got {value}")
        if self.steps is None and self.tokens is None and self.time_budget is None:
            raise PretrainError("say how long to train: --steps N, --tokens N or --time-budget 30m")
        for name in ("steps", "tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise PretrainError(f"--{name} must be at least 1, got {value}")
        if self.time_budget is not None and self.time_budget <= 0:
            raise PretrainError(f"--time-budget must be positive, got {self.time_budget}")
        if self.schedule == "budget" and self.time_budget is None:
            raise PretrainError("--schedule budget needs --time-budget")
        if self.schedule in ("linear", "cosine") and self.steps is None and self.tokens is None:
            raise PretrainError(f"--schedule {self.schedule} needs --steps or --tokens to know where it ends "
                                "(or use --schedule budget with --time-budget)")
        if not 0 < self.mask_rate < 1:
            raise PretrainError(f"--mask-rate must lie in (0, 1), got {self.mask_rate}")
        if self.lr <= 0 or self.warmup < 0:
            raise PretrainError(f"--lr must be positive and --warmup non-negative, got {self.lr}, {self.warmup}")
        if self.objective == "plm" and self.model != "xlnet":
            raise PretrainError(f"--objective plm needs --model xlnet (not {self.model})")
        if self.model == "xlnet" and self.objective != "plm":
            raise PretrainError(f"XLNet trains with --objective plm, not {self.objective}")
        if self.objective == "distill":
            if self.model != "distilbert":
                raise PretrainError("distillation trains --model distilbert")
            if not self.teacher:
                raise PretrainError("DistilBERT's default objective is distillation: give --teacher DIR "
                                    "(a BERT checkpoint with the same vocabulary), or --objective mlm")
        elif self.teacher:
            raise PretrainError(f"--teacher applies to distillation only, not --objective {self.objective}")
        if self.objective in ("mlm+nsp", "mlm+sop") and self.model in ("roberta", "distilbert", "xlnet"):
            raise PretrainError(f"{self.model} has no sentence head: --objective {self.objective} is not possible")
        if self.objective in ("mlm+nsp", "mlm+sop") and self.packing == "document":
            raise PretrainError("NSP/SOP examples are segment pairs: --packing does not apply")
        if self.precision == "fp16" and self.device == "cpu":
            raise PretrainError("--precision fp16 needs a GPU (use bf16 or fp32 on CPU)")
        if self.embedding_init not in ("default", "shared"):
            raise PretrainError(f"embedding_init must be 'default' or 'shared', got {self.embedding_init!r}")

    def to_dict(self) -> dict[str, Any]:
        """Plain dict (JSON-serialisable) for checkpoints and ``config.json``."""
        d = dataclasses.asdict(self)
        d["betas"] = list(self.betas)
        return d


# ==== Tokenizer and model ====


def special_ids(tokenizer: Any, objective: str) -> dict[str, int]:
    """The ids of ``[MASK]``/``<mask>``, ``[CLS]``/``<s>``, ``[SEP]``/``</s>``, ``[PAD]``/``<pad>``.

    Raises:
        PretrainError: a role the objective needs has no token, naming the role and the tokens tried.

    >>> from subword import WordPiece, Tokenizer
    >>> vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"])}
    >>> special_ids(Tokenizer(WordPiece(vocab, unk_token="[UNK]")), "mlm")
    {'mask': 4, 'cls': 2, 'sep': 3, 'pad': 0}
    """
    found: dict[str, int] = {}
    for role, names in _ROLES.items():
        for name in names:
            i = tokenizer.token_to_id(name)
            if i is not None:
                found[role] = int(i)
                break
    needed = {"mask": "masking", "cls": "the start of every sequence", "sep": "the end of every sequence",
              "pad": "padding"}
    for role, why in needed.items():
        if role not in found:
            tried = " or ".join(_ROLES[role])
            raise PretrainError(f"the tokenizer has no {tried} token, which --objective {objective} needs for {why}; "
                                f"train it with --special-token {_ROLES[role][0]}")
    return found


def missing_roles(tokenizer: Any) -> list[str]:
    """The roles (``mask``, ``cls``, ``sep``, ``pad``) for which ``tokenizer`` has none of the tokens
    :func:`special_ids` looks for.

    >>> from subword import WordPiece, Tokenizer
    >>> missing_roles(Tokenizer(WordPiece({"[UNK]": 0, "[CLS]": 1, "[SEP]": 2}, unk_token="[UNK]")))
    ['mask', 'pad']
    """
    return [role for role, names in _ROLES.items() if all(tokenizer.token_to_id(n) is None for n in names)]


def role_tokens(role: str) -> tuple[str, ...]:
    """The tokens that can play ``role`` (BERT's first).

    >>> role_tokens("mask")
    ('[MASK]', '<mask>')
    """
    return _ROLES[role]


def check_tokenizer_fits(model: str, tokenizer: Any, *, preset: str = "tiny", objective: str | None = None,
                         seq_len: int = 128) -> dict[str, int]:
    """Check, before any pretraining, that ``tokenizer`` gives ``model`` what it needs: a token for every role
    (:func:`special_ids`) and ids its configuration accepts (RoBERTa counts positions from its pad id, so a
    ``[PAD]`` after cl100k_base's 100k ids leaves no positions), with ``seq_len`` within the preset's positions.

    Returns the role ids. Raises :class:`PretrainError` naming the role or the limit.

    >>> from subword import WordPiece, Tokenizer
    >>> vocab = {t: i for i, t in enumerate(["[UNK]", "a", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(600)] + ["[PAD]"])}
    >>> check_tokenizer_fits("bert", Tokenizer(WordPiece(vocab, unk_token="[UNK]")))["pad"]
    605
    >>> check_tokenizer_fits("roberta", Tokenizer(WordPiece(vocab, unk_token="[UNK]")))
    Traceback (most recent call last):
    ...
    models.pretrain.PretrainError: the tokenizer does not fit roberta tiny: ...
    """
    if model not in _MODEL_TYPES:
        raise PretrainError(f"unknown model {model!r}; choose from {', '.join(_MODEL_TYPES)}")
    objective = objective or DEFAULTS[model][0]
    ids = special_ids(tokenizer, objective)
    vocab_size = max(tokenizer.get_vocab_size(), max(tokenizer.get_vocab().values(), default=-1) + 1)
    _model_config(_ModelSpec(model, preset, objective, seq_len), vocab_size, ids)
    return ids


@dataclass(frozen=True)
class _ModelSpec:
    """What the model's configuration is built from (the model fields of :class:`PretrainConfig`)."""

    model: str
    preset: str
    objective: str | None
    seq_len: int
    model_overrides: dict[str, Any] = field(default_factory=dict)
    dropout: float | None = None

    @classmethod
    def of(cls, cfg: PretrainConfig) -> "_ModelSpec":
        return cls(cfg.model, cfg.preset, cfg.objective, cfg.seq_len, cfg.model_overrides, cfg.dropout)


def _model_config(spec: _ModelSpec, vocab_size: int, ids: dict[str, int]) -> Any:
    overrides: dict[str, Any] = {"vocab_size": vocab_size, "pad_token_id": ids["pad"]}
    if spec.model != "xlnet":
        overrides["sentence_head"] = {"mlm+nsp": "nsp", "mlm+sop": "sop"}.get(spec.objective or "")
        overrides["add_pooler"] = overrides["sentence_head"] is not None
    overrides.update(spec.model_overrides)
    if spec.dropout is not None:
        overrides.update(hidden_dropout=spec.dropout, attention_dropout=spec.dropout)
        if spec.model == "albert":
            overrides["classifier_dropout"] = spec.dropout
    try:
        mc = model_preset(_MODEL_TYPES[spec.model], spec.preset, **overrides)  # type: ignore[arg-type]
    except ValueError as exc:
        raise PretrainError(f"the tokenizer does not fit {spec.model} {spec.preset}: {exc}") from exc
    limit = mc.max_sequence_length if spec.model != "xlnet" else None
    if limit is not None and spec.seq_len > limit:
        raise PretrainError(f"--seq-len {spec.seq_len} exceeds the {limit} positions of {spec.model} {spec.preset} "
                            f"(max_position_embeddings {mc.max_position_embeddings})")
    return mc


# ==== Optimizer and schedule ====


def _param_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    """AdamW groups: weight decay on matrices, none on biases and norms (1-D parameters)."""
    decay, no_decay = [], []
    for _, p in model.named_parameters():
        if p.requires_grad:
            (no_decay if p.ndim < 2 else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def _make_optimizer(model: nn.Module, cfg: PretrainConfig, device: torch.device) -> torch.optim.Optimizer:
    # Fused (one kernel over all parameters) wherever torch has it, as HF Trainer's default
    # optim="adamw_torch_fused"; it is deterministic, so a resumed run stays bit-exact.
    kwargs: dict[str, Any] = {"lr": cfg.lr, "betas": tuple(cfg.betas), "eps": cfg.eps,
                              "fused": _fused_adamw_available(model, device)}
    return torch.optim.AdamW(_param_groups(model, cfg.weight_decay), **kwargs)


def _fused_adamw_available(model: nn.Module, device: torch.device) -> bool:
    """Whether torch's fused AdamW takes these parameters (CPU and CUDA floating point)."""
    return device.type in ("cpu", "cuda") and all(p.is_floating_point() for p in model.parameters())


def lr_factor(schedule: str, progress: float, warmup: float) -> float:
    """The learning-rate multiplier at ``progress`` in [0, 1] of the run (steps or time).

    Linear warmup over the first ``warmup`` fraction, then linear or cosine decay to 0.

    >>> [round(lr_factor("linear", p, 0.1), 2) for p in (0.0, 0.05, 0.1, 0.55, 1.0)]
    [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    progress = min(max(progress, 0.0), 1.0)
    if warmup > 0 and progress < warmup:
        return progress / warmup
    rest = (progress - warmup) / max(1e-12, 1.0 - warmup)
    if schedule == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * rest))
    return max(0.0, 1.0 - rest)


# ==== Checkpoints ====


def find_checkpoints(output_dir: str | os.PathLike[str]) -> list[Path]:
    """The checkpoints in ``output_dir/checkpoints``, oldest first."""
    d = Path(output_dir) / "checkpoints"
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if re.fullmatch(r"ckpt-\d{8}\.pt", p.name))


def load_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a checkpoint; a corrupt or truncated file is a :class:`PretrainError` naming it."""
    path = Path(path)
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # noqa: BLE001 - torch raises many kinds for a damaged file
        raise PretrainError(f"checkpoint {path} is corrupt or truncated ({type(exc).__name__}: {exc}); "
                            "delete it to resume from the one before") from exc
    if not isinstance(state, dict) or state.get("format") != "subword-pretrain-1":
        raise PretrainError(f"{path} is not a subword pretraining checkpoint")
    return state


def _atomic_save(obj: Any, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp:
        torch.save(obj, tmp)


def _atomic_text(target: Path, text: str) -> None:
    atomic_write_text(target, text)


def _rng_states() -> dict[str, Any]:
    states: dict[str, Any] = {"python": random.getstate(), "numpy": np.random.get_state(),
                              "torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        states["cuda"] = torch.cuda.get_rng_state_all()
    return states


def _set_rng_states(states: dict[str, Any]) -> None:
    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])
    if "cuda" in states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


def _config_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    changed = []
    for key in sorted(set(old) | set(new)):
        if key in _RESUMABLE:
            continue
        # A field the checkpoint does not know yet had its default value then.
        before = old.get(key, _FIELD_DEFAULTS.get(key))
        if before != new.get(key):
            changed.append(f"{key} ({before!r} -> {new.get(key)!r})")
    return changed


#: PretrainConfig fields that are not `subword pretrain` options of the same name.
_NOT_FLAGS = {"model_overrides", "betas", "eps", "inputs", "output_dir", "embedding_init"}
#: Defaults of the fields added after the first checkpoints were written.
_FIELD_DEFAULTS = {"embedding_init": "default"}


def _keep_hints(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The options that give back the checkpoint's values of the fields that changed.

    >>> _keep_hints({"schedule": "budget", "time_budget": 120.0, "whole_word": True, "lr": 0.0005},
    ...             {"schedule": "linear", "steps": 900, "whole_word": False, "lr": 0.001})
    ['--lr 0.0005', '--schedule budget', '--whole-word', '--time-budget 2m']
    """
    hints = []
    for key in sorted(set(old) | set(new)):
        if key in _RESUMABLE or key in _NOT_FLAGS or old.get(key) == new.get(key):
            continue
        flag, value = "--" + key.replace("_", "-"), old.get(key)
        if key == "compile":
            continue
        if isinstance(value, bool):
            hints.append(flag if value else f"without {flag}")
        elif value is None:
            hints.append(f"without {flag}")
        else:
            hints.append(f"{flag} {_seconds(value) if key == 'time_budget' else value}")
    if old.get("schedule") == "budget" and new.get("schedule") != "budget" and new.get("time_budget") is None:
        hints.append(f"--time-budget {_seconds(old.get('time_budget'))}")  # the budget schedule needs one
    if (old.get("schedule") in ("linear", "cosine") and new.get("schedule") != old.get("schedule")
            and new.get("steps") is None and new.get("tokens") is None):
        bound = f"--steps {old['steps']}" if old.get("steps") is not None else f"--tokens {old.get('tokens')}"
        hints.append(f"with a larger --steps or --tokens (the run's schedule counts steps; it had {bound})")
    if "inputs" in old and old.get("inputs") != new.get("inputs"):
        hints.append("the run's INPUT " + (" ".join(old["inputs"]) if old["inputs"] else "(none: the built-in corpus)"))
    return hints


def _seconds(value: float | None) -> str:
    """A duration as ``--time-budget`` reads it back: ``2m``, ``1h30m``, ``45s``, ``2m30.5s``.

    >>> _seconds(120.0), _seconds(5400), _seconds(45), _seconds(150.5)
    ('2m', '1h30m', '45s', '2m30.5s')
    """
    if value is None:
        return "none"
    whole = int(value)
    rest = value - whole
    h, m, sec = whole // 3600, whole % 3600 // 60, whole % 60
    out = (f"{h}h" if h else "") + (f"{m}m" if m else "")
    if sec or rest or not out:
        out += f"{sec + rest:g}s"
    return out


def _duration(seconds: float) -> str:
    """A duration for people: ``9s``, ``2m05s``, ``1h02m``.

    >>> _duration(8.9), _duration(125), _duration(3725)
    ('9s', '2m05s', '1h02m')
    """
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


# ==== Distributed ====


@dataclass
class _Dist:
    rank: int = 0
    world: int = 1

    @property
    def on(self) -> bool:
        return self.world > 1

    def all_sum(self, values: list[float]) -> list[float]:
        if not self.on:
            return values
        t = torch.tensor(values, dtype=torch.float64)
        torch.distributed.all_reduce(t)
        return t.tolist()


def _init_distributed(device: torch.device) -> _Dist:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return _Dist()
    if not torch.distributed.is_initialized():
        torch.distributed.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    return _Dist(rank=torch.distributed.get_rank(), world=torch.distributed.get_world_size())


# ==== The job ====


class _Stop:
    """Ctrl-C sets a flag that the loop reads between steps (a step is never cut in half)."""

    def __init__(self) -> None:
        self.requested = False
        self._old: Any = None

    def __enter__(self) -> _Stop:
        try:
            self._old = signal.signal(signal.SIGINT, self._handle)
        except ValueError:  # not the main thread: no handler, Ctrl-C cannot reach us anyway
            self._old = None
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:  # a second Ctrl-C: stop now
            raise KeyboardInterrupt
        self.requested = True

    def __exit__(self, *exc: Any) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


@dataclass
class _State:
    step: int = 0
    tokens: int = 0
    elapsed: float = 0.0


class _Job:
    """One pretraining run; :func:`pretrain` builds it and calls :meth:`run`."""

    def __init__(self, cfg: PretrainConfig, *, progress: Callable[[str, int, int | None], None] | None,
                 on_step: Callable[[int], None] | None,
                 on_row: Callable[[dict[str, Any]], None] | None = None) -> None:
        from models import objectives  # the masking/pairing/loss functions

        self.obj = objectives
        self.cfg = cfg
        self.progress = progress
        self.on_step = on_step
        self.on_row = on_row
        self.out = Path(cfg.output_dir)
        self.device = self._device()
        self.dist = _init_distributed(self.device)
        self._check_output_dir()
        self._load_tokenizer()
        self._load_data()
        self._build_model()
        self.state = _State()
        self.history: list[dict[str, Any]] = []
        self.last_saved = -1

    # ---- setup ----

    def _device(self) -> torch.device:
        want = self.cfg.device
        if want == "cuda" and not torch.cuda.is_available():
            raise PretrainError("--device cuda: no CUDA device is available")
        if want == "auto":
            want = "cuda" if torch.cuda.is_available() else "cpu"
        if want == "cuda" and "LOCAL_RANK" in os.environ:
            return torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        if self.cfg.precision == "fp16" and want == "cpu":
            raise PretrainError("--precision fp16 needs a GPU (use bf16 or fp32 on CPU)")
        return torch.device(want)

    def _check_output_dir(self) -> None:
        ckpts = find_checkpoints(self.out)
        if self.cfg.resume and not ckpts:
            raise PretrainError(f"--resume: no checkpoint to resume in {self.out / 'checkpoints'}")
        if not self.cfg.resume and ckpts:
            raise PretrainError(f"{self.out} already holds a run ({ckpts[-1].name}); pass --resume to continue it "
                                "or choose another --output-dir")

    def _load_tokenizer(self) -> None:
        from subword import Tokenizer

        path = Path(self.cfg.tokenizer)
        if not path.exists():
            raise PretrainError(f"--tokenizer {path}: no such file")
        self.tokenizer = Tokenizer.from_file(path)
        self.tok_hash = tokenizer_hash(self.tokenizer)
        # The largest id + 1: a tiktoken vocabulary has gaps (its specials sit above unused ranks), and
        # tokens added after them take ids past get_vocab_size().
        self.vocab_size = max(self.tokenizer.get_vocab_size(), max(self.tokenizer.get_vocab().values(), default=-1) + 1)
        self.ids = special_ids(self.tokenizer, self.cfg.objective or "mlm")
        too_big = {k: v for k, v in self.ids.items() if v >= self.vocab_size}
        if too_big:
            raise PretrainError(f"special token ids {too_big} lie outside the vocabulary of {self.vocab_size}")
        special_tokens = set(self.tokenizer.special_tokens) if hasattr(self.tokenizer, "special_tokens") else set()
        special_tokens |= {self.tokenizer.id_to_token(i) for i in self.ids.values()}
        # Random replacements (the 10%) are drawn from the ordinary tokens only.
        self.random_ids = torch.tensor(
            [i for i in range(self.vocab_size) if self.tokenizer.id_to_token(i) not in special_tokens],
            dtype=torch.long)

    def _load_data(self) -> None:
        import corpora

        cfg = self.cfg
        inputs = cfg.inputs or [str(corpora.builtin_corpus())]
        self.inputs = inputs
        cache = Path(cfg.cache_dir) if cfg.cache_dir else corpora.cache_dir() / "pretrain"
        # Rank 0 tokenizes; the others wait and open the same shards.
        if self.dist.rank == 0:
            shards = TokenShards.build(inputs, self.tokenizer, cache_dir=cache, split=cfg.split,
                                       jsonl_field=cfg.jsonl_field, words=cfg.whole_word, progress=self.progress)
        if self.dist.on:
            torch.distributed.barrier()
        if self.dist.rank != 0:
            shards = TokenShards.build(inputs, self.tokenizer, cache_dir=cache, split=cfg.split,
                                       jsonl_field=cfg.jsonl_field, words=cfg.whole_word)
        self.shards = shards
        self.corpus_hash = shards.meta["key"].split("-")[0]
        top = int(np.max(shards.tokens)) if shards.num_tokens else 0
        if top >= self.vocab_size:
            raise PretrainError(f"the corpus shards hold id {top}, outside the vocabulary of {self.vocab_size}")
        D = shards.num_documents
        if cfg.eval_lines >= D:
            raise PretrainError(f"--eval-lines {cfg.eval_lines} holds out every one of the corpus's {D} documents")
        train_docs = range(0, D - cfg.eval_lines)
        eval_docs = range(D - cfg.eval_lines, D)
        self.train_set = self._examples(train_docs)
        self.eval_set = self._examples(eval_docs) if cfg.eval_lines else None
        self.global_batch = cfg.batch_size * cfg.grad_accum * self.dist.world
        if len(self.train_set) < self.global_batch:
            raise PretrainError(
                f"the corpus gives {len(self.train_set)} training sequences of {cfg.seq_len} tokens, fewer than "
                f"one global batch of {self.global_batch} (batch {cfg.batch_size} x accumulation {cfg.grad_accum} "
                f"x {self.dist.world} processes): use more text, a smaller batch or a shorter --seq-len")
        self.order = EpochOrder(len(self.train_set), cfg.seed)
        self.mask_cfg = self.obj.MaskingConfig(rate=cfg.mask_rate, whole_word=cfg.whole_word,
                                               dynamic=cfg.masking == "dynamic")
        self.eval_mask_cfg = dataclasses.replace(self.mask_cfg, dynamic=False)

    def _examples(self, docs: range) -> PackedSequences | SegmentPairs:
        cfg, ids = self.cfg, self.ids
        if cfg.objective in ("mlm+nsp", "mlm+sop"):
            return SegmentPairs(self.shards, task="nsp" if cfg.objective == "mlm+nsp" else "sop",
                                seq_len=cfg.seq_len, cls_id=ids["cls"], sep_id=ids["sep"], pad_id=ids["pad"],
                                seed=cfg.seed, documents=docs)
        return PackedSequences(self.shards, seq_len=cfg.seq_len, cls_id=ids["cls"], sep_id=ids["sep"],
                               pad_id=ids["pad"], packing=cfg.packing, documents=docs)

    def _build_model(self) -> None:
        cfg = self.cfg
        self.model_config = _model_config(_ModelSpec.of(cfg), self.vocab_size, self.ids)
        torch.manual_seed(cfg.seed)
        self.teacher = None
        if cfg.objective == "distill":
            self.teacher = self.obj.load_teacher(cfg.teacher)
            t_vocab = self.teacher.model.config.vocab_size
            if t_vocab != self.vocab_size:
                raise PretrainError(f"--teacher {cfg.teacher} has a vocabulary of {t_vocab}, the tokenizer "
                                    f"{self.vocab_size}: distillation needs the same vocabulary")
            self.teacher.to(self.device).eval()
            for p in self.teacher.parameters():
                p.requires_grad_(False)
        self.model = build_model(self.model_config, heads=True)
        if cfg.embedding_init == "shared":
            from models.shared_init import apply_shared_init

            apply_shared_init(self.model, self.tokenizer, seed=cfg.seed,
                              std=float(getattr(self.model_config, "initializer_range", 0.02)))
        self.model = self.model.to(self.device)
        self.optimizer = _make_optimizer(self.model, cfg, self.device)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda _: 1.0)
        self.scaler = torch.amp.GradScaler(self.device.type, enabled=cfg.precision == "fp16")
        self.forward_model: nn.Module = self.model
        if self.dist.on:
            self.forward_model = nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
        if cfg.compile:
            self.forward_model = torch.compile(self.forward_model)

    # ---- totals and schedule ----

    def total_steps(self) -> int | None:
        cfg = self.cfg
        totals = []
        if cfg.steps is not None:
            totals.append(cfg.steps)
        if cfg.tokens is not None:
            totals.append(math.ceil(cfg.tokens / (self.global_batch * cfg.seq_len)))
        return min(totals) if totals else None

    def _progress_fraction(self) -> float:
        if self.cfg.schedule == "budget":
            return self.state.elapsed / float(self.cfg.time_budget or 1.0)
        total = self.total_steps() or 1
        return self.state.step / total

    def _set_lr(self) -> float:
        warm = self.cfg.warmup
        total = self.total_steps()
        if warm >= 1 and total:  # a step count
            warm = warm / total
        lr = self.cfg.lr * lr_factor(self.cfg.schedule or "linear", self._progress_fraction(), warm)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        return lr

    def _done(self) -> bool:
        total = self.total_steps()
        if total is not None and self.state.step >= total:
            return True
        return self.cfg.time_budget is not None and self.state.elapsed >= self.cfg.time_budget

    # ---- batches ----

    def _batch(self, dataset: Any, picks: list[tuple[int, int]], mask_cfg: Any, seed: int) -> dict[str, Any]:
        """Examples ``(epoch, index)`` -> tensors on the device, with masks/labels applied.

        :meth:`EpochOrder.take` returns the examples of one epoch, then (at a boundary) of the next,
        so the batch is one or two runs of a single epoch each; every run is built and masked with
        its own epoch, then the runs are joined.
        """
        runs: list[dict[str, Tensor]] = []
        start = 0
        while start < len(picks):
            epoch = picks[start][0]
            end = start
            while end < len(picks) and picks[end][0] == epoch:
                end += 1
            runs.append(self._run(dataset, epoch, [i for _, i in picks[start:end]], mask_cfg, seed))
            start = end
        batch = runs[0] if len(runs) == 1 else {k: torch.cat([r[k] for r in runs]) for k in runs[0]}
        batch["tokens"] = batch["attention_mask"].sum()
        out: dict[str, Any] = {k: v.to(self.device) for k, v in batch.items()}
        # Read on the host, before the copy: packed sequences have no padding, and then the model
        # needs no attention mask (an all-True mask costs the attention a masked fill per layer).
        out["padded"] = not bool(batch["attention_mask"].all())
        return out

    def _run(self, dataset: Any, epoch: int, indices: list[int], mask_cfg: Any, seed: int) -> dict[str, Tensor]:
        """Examples of one epoch, as tensors, with the objective's masks or permutations."""
        idx = np.asarray(indices, dtype=np.int64)
        data = dataset.get(idx, epoch=epoch) if isinstance(dataset, SegmentPairs) else dataset.get(idx)
        batch = {k: torch.from_numpy(v) for k, v in data.items()}
        word_ids = batch.pop("word_ids", None)
        ids, special = batch["input_ids"], batch["special_mask"]
        example_index = torch.from_numpy(idx)
        if self.cfg.objective == "plm":
            batch.update(self.obj.plm_inputs(ids, special_mask=special, cfg=self.obj.PlmConfig(), seed=seed,
                                             epoch=epoch, example_index=example_index))
        else:
            batch["input_ids"], batch["labels"] = self.obj.mask_tokens(
                ids, special_mask=special, mask_id=self.ids["mask"], vocab_size=self.vocab_size, cfg=mask_cfg,
                seed=seed, epoch=epoch, example_index=example_index, word_ids=word_ids, random_ids=self.random_ids)
        return batch

    @staticmethod
    def _count(batch: dict[str, Tensor]) -> tuple[int, int]:
        """(predictions, sentence pairs) one micro-batch scores."""
        return int((batch["labels"] != -100).sum()), int(batch["sentence_label"].numel()) if "sentence_label" in batch else 0

    # ---- forward ----

    def _autocast(self) -> contextlib.AbstractContextManager[Any]:
        if self.cfg.precision == "fp32":
            return contextlib.nullcontext()
        dtype = torch.bfloat16 if self.cfg.precision == "bf16" else torch.float16
        return torch.autocast(self.device.type, dtype=dtype)

    def _losses(self, model: nn.Module, batch: dict[str, Tensor], n_pred: int, n_pairs: int,
                sparse: bool) -> dict[str, Tensor]:
        """Each objective's loss *sum* over this micro-batch divided by the global counts."""
        cfg = self.cfg
        labels = batch["labels"]
        types = batch["token_type_ids"] if getattr(self.model_config, "type_vocab_size", 0) else None
        out: dict[str, Tensor] = {}
        if cfg.objective == "plm":
            res = model(batch["input_ids"], batch["attention_mask"], perm_mask=batch["perm_mask"],
                        target_mapping=batch["target_mapping"], labels=labels)
            logits = res.logits.float()
            out["plm"] = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                                         ignore_index=-100, reduction="sum") / max(n_pred, 1)
            return out
        if cfg.objective == "distill":
            res = model(batch["input_ids"], batch["attention_mask"], labels=labels, output_hidden_states=True)
            with torch.no_grad():
                t = self.teacher(batch["input_ids"], batch["attention_mask"])  # type: ignore[misc]
            parts = self.obj.distillation_loss(res.logits.float(), t.logits.float(), res.hidden_states[-1],
                                               t.hidden, labels, attention_mask=batch["attention_mask"])
            # Means over this micro-batch, weighted by its share of the global predictions.
            share = float((labels != -100).sum()) / max(n_pred, 1)
            for k in ("kd", "mlm", "cos"):
                out[k] = parts[k] * share
            out["_total"] = parts["loss"] * share
            return out
        # The model sums each loss once (without keeping the sparse logits); the loop divides
        # by the global counts.
        kwargs: dict[str, Any] = {"labels": labels, "sparse_prediction": sparse, "reduction": "sum",
                                  "return_logits": False}
        if "sentence_label" in batch:
            kwargs["sentence_label"] = batch["sentence_label"]
        mask = batch["attention_mask"] if batch.get("padded", True) else None
        res = model(batch["input_ids"], mask, types, **kwargs)
        out["mlm"] = res.losses["mlm"] / max(n_pred, 1)
        if "sentence_label" in batch:
            name = "nsp" if cfg.objective == "mlm+nsp" else "sop"
            out[name] = res.losses[name] / max(n_pairs, 1)
        return out

    # ---- one optimizer step ----

    def train_step(self, picks: list[tuple[int, int]]) -> dict[str, Any]:
        cfg = self.cfg
        B, world, rank = cfg.batch_size, self.dist.world, self.dist.rank
        micro = []
        for m in range(cfg.grad_accum):
            start = (m * world + rank) * B
            micro.append(self._batch(self.train_set, picks[start:start + B], self.mask_cfg, cfg.seed))
        counts = [self._count(b) for b in micro]
        tokens_local = sum(int(b["tokens"]) for b in micro)
        n_pred, n_pairs, tokens = (int(x) for x in self.dist.all_sum(
            [float(sum(c[0] for c in counts)), float(sum(c[1] for c in counts)), float(tokens_local)]))
        lr = self._set_lr()
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        sums: dict[str, float] = {}
        for i, batch in enumerate(micro):
            last = i == len(micro) - 1
            sync = self.forward_model.no_sync() if (self.dist.on and not last) else contextlib.nullcontext()  # type: ignore[operator]
            with sync:
                with self._autocast():
                    parts = self._losses(self.forward_model, batch, n_pred, n_pairs, cfg.prediction == "sparse")
                total = parts.pop("_total", None)
                if total is None:
                    total = sum(parts.values())
                # DDP averages gradients over processes; each process holds a share of the global sum.
                self.scaler.scale(total * world).backward()
            for k, v in parts.items():
                sums[k] = sums.get(k, 0.0) + float(v.detach())
            sums["loss"] = sums.get("loss", 0.0) + float(total.detach())
        names = sorted(sums)
        reduced = dict(zip(names, self.dist.all_sum([sums[k] for k in names])))
        self.scaler.unscale_(self.optimizer)
        grad_norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), cfg.clip if cfg.clip > 0 else float("inf")))
        if not math.isfinite(reduced["loss"]):
            raise TrainingDiverged(
                f"the loss became {reduced['loss']} at step {self.state.step + 1}; stopped, the last good "
                f"checkpoint is kept ({self._last_checkpoint_name()})")
        stats_due = cfg.stats_every > 0 and (self.state.step + 1) % cfg.stats_every == 0
        before = {n: p.detach().clone() for n, p in self.model.named_parameters()} if stats_due else None
        grads = self._grad_stats() if stats_due else None
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.state.step += 1
        self.state.tokens += tokens
        row = {"step": self.state.step, "tokens": self.state.tokens, "loss": reduced.pop("loss"), **reduced,
               "lr": lr, "grad_norm": grad_norm, "_step_tokens": tokens}
        if before is not None and grads is not None:
            self._log_stats(micro[0], before, grads)
        return row

    def _last_checkpoint_name(self) -> str:
        ckpts = find_checkpoints(self.out)
        return str(ckpts[-1]) if ckpts else "none was written yet"

    # ---- layer statistics ----

    def _layer_of(self, name: str) -> str:
        m = re.match(r"(.*?\.layers\.\d+)\.", name)
        if m:
            return m.group(1)
        return name.split(".")[0] if not name.startswith("backbone.") else ".".join(name.split(".")[:2])

    def _grad_stats(self) -> dict[str, float]:
        sq: dict[str, float] = {}
        for n, p in self.model.named_parameters():
            if p.grad is not None:
                layer = self._layer_of(n)
                sq[layer] = sq.get(layer, 0.0) + float(p.grad.detach().float().pow(2).sum())
        return {k: math.sqrt(v) for k, v in sq.items()}

    def _log_stats(self, batch: dict[str, Tensor], before: dict[str, Tensor], grads: dict[str, float]) -> None:
        """Activations (a no-grad forward with hooks) and gradients/updates per layer; warns on extremes."""
        acts: dict[str, dict[str, float]] = {}
        hooks = []
        for name, module in self.model.named_modules():
            if re.search(r"\.layers\.\d+$", name):
                def hook(mod: nn.Module, inp: Any, output: Any, name: str = name) -> None:
                    x = (output[0] if isinstance(output, tuple) else output).detach().float()
                    acts[name] = {"mean": float(x.mean()), "std": float(x.std()), "max_abs": float(x.abs().max())}
                hooks.append(module.register_forward_hook(hook))
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.no_grad(), self._autocast():
                self._losses(self.model, batch, 1, 1, self.cfg.prediction == "sparse")
        finally:
            for h in hooks:
                h.remove()
            self.model.train(was_training)
        updates: dict[str, list[float]] = {}
        for n, p in self.model.named_parameters():
            layer = self._layer_of(n)
            u = updates.setdefault(layer, [0.0, 0.0])
            u[0] += float((p.detach() - before[n]).float().pow(2).sum())
            u[1] += float(before[n].float().pow(2).sum())
        layers = {}
        for layer in sorted(set(grads) | set(acts) | set(updates)):
            entry: dict[str, float] = {}
            if layer in acts:
                entry.update({f"act_{k}": v for k, v in acts[layer].items()})
            if layer in grads:
                entry["grad_norm"] = grads[layer]
            if layer in updates and updates[layer][1] > 0:
                entry["update_ratio"] = math.sqrt(updates[layer][0] / updates[layer][1])
            layers[layer] = entry
            self._warn_extremes(layer, entry)
        self._pending_stats = {"step": self.state.step, "layer_stats": layers}

    def _warn_extremes(self, layer: str, entry: dict[str, float]) -> None:
        if self.dist.rank != 0:
            return
        if entry.get("act_max_abs", 0.0) > _EXPLODE or not math.isfinite(entry.get("act_max_abs", 0.0)):
            log.warning("step %d: activations of %s explode (max |x| = %.3g)", self.state.step, layer,
                        entry["act_max_abs"])
        if "act_std" in entry and entry["act_std"] < _VANISH:
            log.warning("step %d: activations of %s vanish (std = %.3g)", self.state.step, layer, entry["act_std"])
        g = entry.get("grad_norm")
        if g is not None and (g > _EXPLODE or not math.isfinite(g)):
            log.warning("step %d: gradients of %s explode (norm = %.3g)", self.state.step, layer, g)
        elif g is not None and g < _VANISH:
            log.warning("step %d: gradients of %s vanish (norm = %.3g)", self.state.step, layer, g)

    # ---- evaluation ----

    def evaluate(self) -> float:
        """Mean loss on the held-out documents with a fixed mask (the same at every evaluation)."""
        assert self.eval_set is not None
        model = self.model
        was = model.training
        model.eval()
        n = len(self.eval_set)
        B = self.cfg.batch_size
        batches = [self._batch(self.eval_set, [(0, i) for i in range(s, min(n, s + B))], self.eval_mask_cfg,
                               self.cfg.seed + 1) for s in range(0, n, B)]
        n_pred = sum(self._count(b)[0] for b in batches)
        n_pairs = sum(self._count(b)[1] for b in batches)
        total = 0.0
        with torch.no_grad(), self._autocast():
            for b in batches:
                parts = self._losses(model, b, n_pred, n_pairs, self.cfg.prediction == "sparse")
                parts.pop("_total", None)
                total += float(sum(parts.values()))
        model.train(was)
        return total

    # ---- logging ----

    def _log(self, row: dict[str, Any]) -> None:
        if self.dist.rank != 0:
            return
        self.history.append(row)
        with open(self.out / "log.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")

    def _plot(self) -> None:
        if self.dist.rank != 0:
            return
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        train = [(r["tokens"], r["loss"]) for r in self.history if "loss" in r]
        evals = [(r["tokens"], r["eval_loss"]) for r in self.history if "eval_loss" in r]
        fig, ax = plt.subplots(figsize=(7, 4))
        if train:
            ax.plot(*zip(*train), label="train loss", linewidth=1)
        if evals:
            ax.plot(*zip(*evals), "o-", label="eval loss (fixed mask)")
        ax.set_xlabel("tokens")
        ax.set_ylabel("loss")
        ax.set_title(f"{self.cfg.model} {self.cfg.preset}: {self.cfg.objective}")
        ax.legend()
        fig.tight_layout()
        try:
            with atomic_path(self.out / "loss.png") as tmp:
                fig.savefig(tmp, dpi=100, format="png")
        finally:
            plt.close(fig)

    # ---- checkpoints ----

    def _identity(self) -> dict[str, Any]:
        return {"config": self.cfg.to_dict(), "tokenizer_hash": self.tok_hash, "corpus_hash": self.corpus_hash,
                "world_size": self.dist.world}

    def _tokenizer_json(self) -> str:
        """The tokenizer as stored in every checkpoint, serialised once per run: it does not change while the
        run trains, and cl100k_base's took ~0.5 s a checkpoint (most of a 10-step study task's time)."""
        cached = getattr(self, "_tokenizer_json_cache", None)
        if cached is None:
            cached = self._tokenizer_json_cache = self.tokenizer.to_json_str()
        return cached

    def save_checkpoint(self) -> None:
        if self.dist.rank == 0 and self.last_saved != self.state.step:
            state = {
                "format": "subword-pretrain-1",
                **self._identity(),
                "model_config": self.model_config.to_dict(),
                "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "scaler": self.scaler.state_dict(),
                "rng": _rng_states(),
                "data": self.order.state_dict(),
                "step": self.state.step,
                "tokens": self.state.tokens,
                "elapsed": self.state.elapsed,
                "tokenizer": self._tokenizer_json(),
            }
            _atomic_save(state, self.out / "checkpoints" / f"ckpt-{self.state.step:08d}.pt")
            for old in find_checkpoints(self.out)[:-self.cfg.keep]:
                old.unlink(missing_ok=True)
        self.last_saved = self.state.step
        if self.dist.on:
            torch.distributed.barrier()

    def restore(self) -> None:
        path = find_checkpoints(self.out)[-1]
        state = load_checkpoint(path)
        ident = self._identity()
        changes = _config_changes(state["config"], ident["config"])
        if state["tokenizer_hash"] != ident["tokenizer_hash"]:
            changes.append(f"the tokenizer ({self.cfg.tokenizer} is not the one the run started with)")
        if state["corpus_hash"] != ident["corpus_hash"]:
            changes.append("the corpus (its text differs from the run's)")
        if state["world_size"] != ident["world_size"]:
            changes.append(f"the number of processes ({state['world_size']} -> {ident['world_size']})")
        if changes:
            hints = _keep_hints(state["config"], ident["config"])
            hint = f". To continue the run as it was, pass {' '.join(hints)}" if hints else ""
            raise PretrainError(f"cannot resume {path}: changed {'; '.join(changes)}{hint}")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.scaler.load_state_dict(state["scaler"])
        self.order.load_state_dict(state["data"])
        self.state = _State(step=state["step"], tokens=state["tokens"], elapsed=state["elapsed"])
        _set_rng_states(state["rng"])
        self.last_saved = self.state.step
        self._trim_log()
        log.info("resumed %s at step %d (%s of training)", path, self.state.step, _duration(self.state.elapsed))
        self._say_schedule(state["config"])

    def _say_schedule(self, old: dict[str, Any]) -> None:
        """When the run's length changed (--steps, --tokens, --time-budget), the schedule is recomputed over
        the new length: say where the learning rate goes at the next step."""
        cfg = self.cfg
        changed = [k for k in ("steps", "tokens", "time_budget") if old.get(k) != getattr(cfg, k)]
        if not changed or self._done():
            return
        last = next((r["lr"] for r in reversed(self.history) if "lr" in r), None)
        nxt = self._next_lr()

        def length(c: Any) -> str:
            parts = [f"--steps {c.get('steps')}" if c.get("steps") is not None else "",
                     f"--tokens {c.get('tokens')}" if c.get("tokens") is not None else "",
                     f"--time-budget {_seconds(c['time_budget'])}" if c.get("time_budget") is not None else ""]
            return " ".join(p for p in parts if p)

        came = f"{last:.3g} at its last step" if last is not None else "its last value"
        log.warning("resuming with %s (the run had %s): the %s schedule is recomputed over the new length as if "
                    "the run had been that long from the start, so the learning rate goes from %s to %.3g at "
                    "the next step and %s", length(cfg.to_dict()), length(old), cfg.schedule, came, nxt,
                    "then decays to 0 at the new end" if cfg.schedule in ("budget", "linear", "cosine")
                    else "follows the schedule")

    def _next_lr(self) -> float:
        """The learning rate the next step will use (without changing the optimizer)."""
        warm = self.cfg.warmup
        total = self.total_steps()
        if warm >= 1 and total:
            warm = warm / total
        return self.cfg.lr * lr_factor(self.cfg.schedule or "linear", self._progress_fraction(), warm)

    def _trim_log(self) -> None:
        """Drop log lines past the checkpoint (a killed run wrote them), keep the rest for appending."""
        path = self.out / "log.jsonl"
        if self.dist.rank != 0 or not path.exists():
            return
        kept = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut short by the kill
            if row.get("step", 0) <= self.state.step:
                kept.append(row)
        _atomic_text(path, "".join(json.dumps(r) + "\n" for r in kept))
        self.history = kept

    # ---- export ----

    def export(self) -> dict[str, Any]:
        """``model/`` (ours) and ``hf/`` (transformers) where the config allows; returns what was written."""
        if self.dist.rank != 0:
            return {}
        from safetensors.torch import save_file

        model_dir = self.out / "model"
        model_dir.mkdir(parents=True, exist_ok=True)
        _atomic_text(model_dir / "config.json", json.dumps(
            {"model_config": self.model_config.to_dict(), "pretrain": self.cfg.to_dict(),
             "special_ids": self.ids, "step": self.state.step, "tokens": self.state.tokens}, indent=2) + "\n")
        sd = {k: v.detach().cpu().contiguous().clone() for k, v in self.model.state_dict().items()}
        with atomic_path(model_dir / "model.safetensors") as tmp:
            save_file(sd, str(tmp), metadata={"format": "pt"})
        self.tokenizer.save(model_dir / "tokenizer.json")
        result: dict[str, Any] = {"model": str(model_dir)}
        hf_dir = self.out / "hf"
        try:
            self.model.to_hf(hf_dir)
        except ValueError as exc:
            note = f"not written in transformers' format: {exc}; the model is saved natively in {model_dir}"
            log.warning("%s", note)
            result["hf"] = None
            result["hf_note"] = note
            return result
        roles = {"mask_token": self.ids["mask"], "cls_token": self.ids["cls"], "sep_token": self.ids["sep"],
                 "pad_token": self.ids["pad"]}
        # The model's input limit, so transformers truncates (truncation=True) instead of failing on long text.
        limit = self.model_config.max_sequence_length if self.cfg.model != "xlnet" else None
        self.tokenizer.save_pretrained(hf_dir, model_max_length=limit,
                                       **{k: self.tokenizer.id_to_token(v) for k, v in roles.items()})
        result["hf"] = str(hf_dir)
        return result

    # ---- the loop ----

    def run(self) -> dict[str, Any]:
        cfg = self.cfg
        if self.dist.rank == 0:
            self.out.mkdir(parents=True, exist_ok=True)
        if cfg.resume:
            self.restore()
            if self._done():
                return self._already_finished()
        elif self.dist.rank == 0:
            (self.out / "log.jsonl").unlink(missing_ok=True)
        total = self.total_steps()
        with _Stop() as stop:
            while not self._done():
                t0 = time.perf_counter()
                picks = self.order.take(self.global_batch)
                row = self.train_step(picks)
                dt = time.perf_counter() - t0
                self.state.elapsed += dt
                row["tokens_per_s"] = row.pop("_step_tokens") / dt if dt > 0 else 0.0
                self._log(row)
                if getattr(self, "_pending_stats", None):
                    self._log(self._pending_stats)
                    self._pending_stats = None
                if self.progress is not None:
                    self.progress("train", self.state.step, total)
                if self.on_row is not None:
                    self.on_row({**row, "elapsed": self.state.elapsed, "total_steps": total,
                                 "time_budget": cfg.time_budget})
                if cfg.eval_every and self.eval_set is not None and self.state.step % cfg.eval_every == 0:
                    self._eval_and_plot()
                if cfg.save_every and self.state.step % cfg.save_every == 0:
                    self.save_checkpoint()
                if self.on_step is not None:
                    self.on_step(self.state.step)
                if stop.requested:
                    self.save_checkpoint()
                    raise PretrainInterrupted(self.out / "checkpoints" / f"ckpt-{self.state.step:08d}.pt",
                                              self.state.step)
        if self.eval_set is not None and (not cfg.eval_every or self.state.step % cfg.eval_every):
            self._eval_and_plot()
        else:
            self._plot()
        self.save_checkpoint()
        written = self.export()
        if self.dist.on:
            torch.distributed.barrier()
        last = next((r for r in reversed(self.history) if "loss" in r), {})
        return {"step": self.state.step, "tokens": self.state.tokens, "loss": last.get("loss"),
                "eval_loss": next((r["eval_loss"] for r in reversed(self.history) if "eval_loss" in r), None),
                **written}

    def _already_finished(self) -> dict[str, Any]:
        """``--resume`` of a run that already reached its length: nothing is trained, logged or evaluated
        again (the export is redone only if it is missing); the result says so."""
        cfg = self.cfg
        limits = [f"--steps {cfg.steps}" if cfg.steps is not None else "",
                  f"--tokens {cfg.tokens}" if cfg.tokens is not None else "",
                  f"--time-budget {_seconds(cfg.time_budget)}" if cfg.time_budget is not None else ""]
        limit = " / ".join(x for x in limits if x)
        note = (f"the run in {self.out} is already finished: step {self.state.step}, "
                f"{_duration(self.state.elapsed)} of training, within {limit}; nothing was trained. To train "
                "further, resume with a larger --steps, --tokens or --time-budget.")
        written: dict[str, Any] = {}
        if not (self.out / "model" / "model.safetensors").exists():
            written = self.export()
        else:
            written = {"model": str(self.out / "model"),
                       "hf": str(self.out / "hf") if (self.out / "hf" / "config.json").exists() else None}
        last = next((r for r in reversed(self.history) if "loss" in r), {})
        return {"step": self.state.step, "tokens": self.state.tokens, "loss": last.get("loss"),
                "eval_loss": next((r["eval_loss"] for r in reversed(self.history) if "eval_loss" in r), None),
                "already_finished": note, **written}

    def _eval_and_plot(self) -> None:
        loss = self.evaluate()
        self._log({"step": self.state.step, "tokens": self.state.tokens, "eval_loss": loss})
        self._plot()


def pretrain(
    config: PretrainConfig,
    *,
    progress: Callable[[str, int, int | None], None] | None = None,
    on_step: Callable[[int], None] | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run a pretraining job; returns the final step, tokens, losses and the export paths.

    Args:
        config: the job (see :class:`PretrainConfig`).
        progress: ``(stage, current, total)`` callback (tokenization, then training steps).
        on_step: called after every optimizer step with the step number (tests use it to
            interrupt a run).
        on_row: called after every optimizer step with its ``log.jsonl`` row plus ``elapsed``
            (training seconds so far), ``total_steps`` (None when only time bounds the run) and
            ``time_budget`` (what ``subword pretrain`` shows as progress).

    Raises:
        PretrainError: bad input (tokenizer, corpus, sizes, checkpoint, resume).
        TrainingDiverged: NaN/inf loss.
        KeyboardInterrupt: after Ctrl-C, once a checkpoint of the last finished step is written.
    """
    cfg = config.resolved()
    job = _Job(cfg, progress=progress, on_step=on_step, on_row=on_row)
    return job.run()


def load_pretrained(directory: str | os.PathLike[str]) -> tuple[nn.Module, Any, dict[str, int]]:
    """The model (with its MLM head), tokenizer and special ids of a pretrained model directory.

    ``directory`` is what :func:`pretrain` wrote (``DIR`` or ``DIR/model``), or a transformers checkpoint
    with its tokenizer beside it (``DIR/hf``, or any checkpoint :func:`models.from_hf` reads whose
    directory holds a tokenizer file).

    Raises:
        PretrainError: no model there (the message says what the directory should hold), a checkpoint
            without an MLM head, or weights that do not match their config.
    """
    from safetensors.torch import load_file

    from models.config import BertConfig
    from subword import Tokenizer

    d = Path(directory)
    if (d / "model" / "config.json").exists():
        d = d / "model"
    expected = (f"{directory} holds no pretrained model: expected the output directory of `subword pretrain` "
                "(DIR/model/config.json and model.safetensors) or a transformers checkpoint with its tokenizer "
                "(DIR/hf: config.json with a model_type, the weights, tokenizer.json)")
    try:
        meta = json.loads((d / "config.json").read_text())
    except (OSError, ValueError):
        raise PretrainError(expected) from None
    if isinstance(meta, dict) and "model_config" not in meta and "model_type" in meta:
        return _load_transformers(d)
    if not isinstance(meta, dict) or "model_config" not in meta or not (d / "model.safetensors").exists():
        raise PretrainError(expected)
    model = build_model(BertConfig.from_dict(meta["model_config"]), heads=True)
    try:
        model.load_state_dict(load_file(str(d / "model.safetensors")))
    except (RuntimeError, OSError) as exc:
        raise PretrainError(f"{d / 'model.safetensors'} does not match its config.json: {exc}") from exc
    return model.eval(), Tokenizer.from_file(d / "tokenizer.json"), meta["special_ids"]


def _load_transformers(d: Path) -> tuple[nn.Module, Any, dict[str, int]]:
    """A transformers checkpoint directory (``DIR/hf``): the model through :func:`models.from_hf`, the
    tokenizer from the same directory, the special ids by role."""
    from models.hf import from_hf
    from subword import Tokenizer

    try:
        model = from_hf(d, heads=True)  # refuses a checkpoint without the pretraining heads, naming them
    except (OSError, ValueError) as exc:
        raise PretrainError(f"{d} is a transformers checkpoint that cannot be loaded with its MLM head: {exc}") from exc
    try:
        tokenizer = Tokenizer.from_file(d)
    except (OSError, ValueError) as exc:
        raise PretrainError(f"{d} is a transformers checkpoint without a tokenizer we can read "
                            f"(tokenizer.json beside config.json): {exc}") from exc
    return model.eval(), tokenizer, special_ids(tokenizer, "mlm")


def iter_log(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """The rows of a ``log.jsonl``."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)
