"""What ``subword study -t`` and ``--budget`` accept, parsed before anything is written.

A ``-t`` value is one of:

- ``ALGORITHM:VOCAB_SIZE[:key=value...]``: train that tokenizer on the study's training text with the
  trainer registry's options (``bpe:8000``, ``unigram:8000``, ``bpe:8000:min_frequency=2``); ``unigram``
  follows HF's rules here (a tokenizer.json, which pretraining needs); ``compat=spm`` is refused;
- a tokenizer file or directory (anything :meth:`subword.Tokenizer.from_file` reads), used as it is;
- a tiktoken name (``cl100k_base``, ...), used as it is.

>>> parse_spec("bpe:8000:min-frequency=2")
TokenizerSpec(text='bpe:8000:min-frequency=2', kind='train', name='bpe-8000', algorithm='bpe', options={'vocab_size': 8000, 'min_frequency': 2})
>>> parse_budget("tokens:5M")
Budget(kind='tokens', value=5000000)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from subword.errors import SubwordError

__all__ = ["StudyError", "TokenizerSpec", "Budget", "parse_spec", "parse_budget", "SPEC_GRAMMAR", "BUDGET_GRAMMAR"]

SPEC_GRAMMAR = ("ALGORITHM:VOCAB_SIZE[:key=value...] with ALGORITHM one of bpe, byte-bpe, wordpiece, unigram "
                "(e.g. bpe:8000, unigram:8000, wordpiece:4000:min_frequency=2), or a tokenizer file, "
                "or a tiktoken name (cl100k_base, o200k_base, ...)")
BUDGET_GRAMMAR = ("tokens:N, bytes:N (N may end in k, M or G), time:DURATION (90s, 10m, 1h) or steps:N; "
                  "e.g. tokens:5M")


class StudyError(SubwordError, ValueError):
    """A study that cannot run as asked (the message says what to change)."""


@dataclass(frozen=True)
class TokenizerSpec:
    """One parsed ``-t`` value (``kind``: ``train``, ``file`` or ``tiktoken``)."""

    text: str
    kind: str
    name: str
    algorithm: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


def _value(text: str) -> Any:
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][+-]?\d+)", text):
        return float(text)
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def _count(text: str) -> int | None:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgG]?)", text.strip())
    if not m:
        return None
    scale = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}[m.group(2).lower()]
    return int(round(float(m.group(1)) * scale))


def parse_spec(text: str) -> TokenizerSpec:
    """Parse one ``-t`` value (see the module docstring).

    Raises:
        StudyError: it is not a file, a tiktoken name or a well-formed training spec (the message names
            the value and shows the grammar), or an option the algorithm does not have.
    """
    from subword.compare.sources import is_tiktoken_name
    from subword.trainers import algorithms, make_trainer

    if is_tiktoken_name(text):
        return TokenizerSpec(text, "tiktoken", text)
    if Path(text).exists():
        p = Path(text)
        stem = p.parent.name if p.stem in {"tokenizer", "vocab", "spiece"} and p.parent.name else p.stem
        return TokenizerSpec(text, "file", stem or p.name)
    parts = text.split(":")
    bad = f"-t {text!r} is not a tokenizer file, a tiktoken name or a training spec; the grammar is {SPEC_GRAMMAR}"
    if len(parts) < 2 or parts[0] not in algorithms():
        if len(parts) >= 2:
            bad += f" (unknown algorithm {parts[0]!r})"
        elif "." in text or "/" in text:
            bad += " (no such file)"
        raise StudyError(bad)
    size = _count(parts[1])
    if size is None or size < 1:
        raise StudyError(f"{bad} (VOCAB_SIZE {parts[1]!r} is not a positive number)")
    options: dict[str, Any] = {"vocab_size": size}
    compat = None
    for item in parts[2:]:
        if "=" not in item or not item.split("=", 1)[0]:
            raise StudyError(f"{bad} (option {item!r} is not key=value)")
        key, value = item.split("=", 1)
        key = key.strip().replace("-", "_")
        if key == "compat":
            compat = value
            continue
        options[key] = [_value(v) for v in value.split(",")] if "," in value else _value(value)
    if parts[0] == "unigram" and compat is None:
        # The study pretrains on a tokenizer.json: HF's Unigram rules give one (sentencepiece's give a
        # .model that models.pretrain cannot store in its checkpoints).
        compat = "hf"
        implied = True
    else:
        implied = False
    if compat == "spm":
        raise StudyError(f"-t {text!r}: sentencepiece's rules (compat=spm) give a .model, and pretraining stores "
                         "its tokenizer as tokenizer.json, which a sentencepiece model does not convert to exactly; "
                         f"use {parts[0]}:{parts[1]} (HF's rules) or train the .model yourself and convert it "
                         "(subword convert) where it converts exactly")
    try:
        trainer = make_trainer(parts[0], compat, **options)
        if hasattr(trainer, "validate"):
            trainer.validate()
    except (TypeError, ValueError) as exc:
        raise StudyError(f"-t {text!r}: {exc}") from exc
    name = f"{parts[0]}-{parts[1]}" + (f"-{compat}" if compat and not implied else "")
    if compat:
        options["compat"] = compat
    return TokenizerSpec(text, "train", name, parts[0], options)


@dataclass(frozen=True)
class Budget:
    """What every pretraining gets the same of: ``tokens``, ``bytes`` (of text), ``time`` (seconds) or ``steps``."""

    kind: str
    value: int | float

    def describe(self) -> str:
        """One line for the report.

        >>> Budget("bytes", 2_000_000).describe()
        'equal text: every model sees 2,000,000 bytes of training text (converted with its bytes per token)'
        """
        return {
            "tokens": f"equal compute: every model trains on {self.value:,} tokens",
            "bytes": f"equal text: every model sees {self.value:,} bytes of training text (converted with its "
                     "bytes per token)",
            "time": f"equal time: every model trains for {self.value:g} s (not reproducible run to run)",
            "steps": f"equal steps: every model takes {self.value:,} optimizer steps",
        }[self.kind]


def parse_budget(text: str) -> Budget:
    """Parse ``--budget``.

    Raises:
        StudyError: a value that does not parse (the message shows the grammar).

    >>> parse_budget("time:10m"), parse_budget("steps:200")
    (Budget(kind='time', value=600.0), Budget(kind='steps', value=200))
    """
    kind, _, value = text.partition(":")
    bad = f"--budget {text!r} does not parse; the grammar is {BUDGET_GRAMMAR}"
    if kind in ("tokens", "bytes", "steps"):
        n = _count(value)
        if n is None or n < 1:
            raise StudyError(bad)
        return Budget(kind, n)
    if kind == "time":
        m = re.fullmatch(r"(\d+(?:\.\d+)?)([smh]?)", value.strip())
        if not m or float(m.group(1)) <= 0:
            raise StudyError(bad)
        return Budget("time", float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)])
    raise StudyError(bad)
