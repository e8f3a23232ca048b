"""The metrics of a comparison: each one's definition, source, unit and which way is better, in one table.

Every metric is a function of *sums over lines* (ratio metrics) or of the *token type counts*
(distribution metrics), so the same formula gives the point value (all lines, weight 1) and each
bootstrap replicate (blocks of lines weighted by how often the replicate drew them). Notation, for one
tokenizer over the whole input: T tokens, C characters, B UTF-8 bytes, W words (UAX #29 word segments
holding a letter, mark or digit, see :mod:`subword.compare.words`), c(v) the count of token v, |V|
the full vocabulary size (added tokens included). Micro averages throughout (sums, then one ratio).

======================== ===================================== ========= ===========================================
name                     formula                               better    source
======================== ===================================== ========= ===========================================
tokens                   T                                     lower     --
tokens_per_word          T / W                                 lower     fertility, Rust et al. 2021 (corpus form)
tokens_per_whitespace... T / W_ws (whitespace-split words)     lower     Rust et al. 2021
continued_words          |{w : |T(w)| >= 2}| / W               lower     Rust et al. 2021
chars_per_token          C / T                                 higher    compression
bytes_per_token          B / T                                 higher    compression
normalized_sequence_...  T / T_first                           lower     Dagan et al. 2024
vocab_utilization        |{v : c(v) > 0}| / |V|                --        --
type_token_ratio         |{v : c(v) > 0}| / T                  --        --
renyi_efficiency         H_2.5 / log2 |V|                      higher    Zouhar et al. 2023
shannon_efficiency       H_1 / log2 |V|                        higher    Zouhar et al. 2023
lossless_lines           lines with decode(encode(x)) == x / n higher    --
unk_char_rate            characters under UNK tokens / C       lower     Petrov et al. 2023
byte_fallback_rate       byte tokens / T                       lower     --
mb_per_s                 B / 10^6 / encode seconds             higher    --
======================== ===================================== ========= ===========================================

H_a = 1/(1-a) log2 sum_v p(v)^a with p(v) = c(v)/T, and H_1 = -sum_v p(v) log2 p(v). The ``better``
column is :data:`METRICS`' ``better`` field, the one place the direction of a metric is stated: the
``best`` entry of the JSON, the ★ and ``*`` marks and the "(↓ better)" hints all read it.

>>> sums = np.array([[3, 5.0, 3 ** 2.5 + 2, 3 * np.log2(3)]])       # counts 3, 1, 1
>>> round(float(distribution_metrics(sums, vocab_size=4)["vocab_utilization"][0]), 2)
0.75
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Metric", "METRICS", "ratio_metrics", "distribution_metrics", "distribution_point", "best", "RENYI_ALPHA",
           "DISTRIBUTION_METRICS"]

#: The Rényi order: 2.5 best predicted BLEU in Zouhar et al. 2023.
RENYI_ALPHA = 2.5


@dataclass(frozen=True)
class Metric:
    """One metric: its JSON name, how the views show it, what it means, and which way is better.

    Attributes:
        name: The snake_case key in ``metrics``.
        label: The label of the tables.
        kind: How its numbers print: ``count``, ``percent``, ``ratio`` or ``speed``.
        better: ``"higher"``, ``"lower"`` or ``None`` (no better direction: it describes).
        meaning: One line for the reader.
        source: Where it comes from.
    """

    name: str
    label: str
    kind: str
    better: str | None
    meaning: str
    source: str

    @property
    def hint(self) -> str:
        """``meaning`` with the direction: ``"... (↓ better)"``."""
        arrow = {"higher": " (↑ better)", "lower": " (↓ better)"}.get(self.better or "", "")
        return self.meaning + arrow


METRICS: dict[str, Metric] = {m.name: m for m in [
    Metric("tokens", "tokens", "count", "lower", "total tokens over the input", "the text's own tokens, no specials"),
    Metric("tokens_per_word", "tokens / word", "ratio", "lower", "fertility, Unicode (UAX #29) words",
           "Rust et al. 2021, corpus form T/W"),
    Metric("tokens_per_whitespace_word", "tokens / whitespace word", "ratio", "lower",
           "fertility, whitespace-separated words", "Rust et al. 2021"),
    Metric("continued_words", "continued words", "percent", "lower", "words split into 2+ tokens", "Rust et al. 2021"),
    Metric("chars_per_token", "chars / token", "ratio", "higher", "compression, characters per token",
           "compression, sum C / sum T"),
    Metric("bytes_per_token", "bytes / token", "ratio", "higher", "compression, UTF-8 bytes per token",
           "compression, sum B / sum T"),
    Metric("normalized_sequence_length", "normalized seq. length", "ratio", "lower",
           "tokens relative to the first tokenizer, Dagan et al.", "Dagan et al. 2024"),
    Metric("vocab_utilization", "vocab used", "percent", None, "share of the vocabulary seen in the input",
           "types / |V|"),
    Metric("type_token_ratio", "type / token", "ratio", None, "distinct tokens / tokens", "types / tokens"),
    Metric("renyi_efficiency", "Rényi efficiency", "ratio", "higher",
           f"Rényi entropy (α = {RENYI_ALPHA}) / log2 |V|, Zouhar et al.", "Zouhar et al. 2023"),
    Metric("shannon_efficiency", "Shannon efficiency", "ratio", "higher", "Shannon entropy / log2 |V|",
           "Zouhar et al. 2023"),
    Metric("lossless_lines", "lossless lines", "percent", "higher", "lines that decode back to the input",
           "decode(encode(x)) == x"),
    Metric("unk_char_rate", "UNK chars", "percent", "lower", "characters lost to the unknown token",
           "Petrov et al. 2023"),
    Metric("byte_fallback_rate", "byte tokens", "percent", "lower", "byte-fallback pieces / tokens",
           "byte pieces / tokens"),
    Metric("mb_per_s", "MB/s", "speed", "higher", "encoding throughput, one run, not a benchmark",
           "encode throughput"),
]}

#: The metrics of the token type counts (resampled from the per-block type counts).
DISTRIBUTION_METRICS = ("vocab_utilization", "type_token_ratio", "renyi_efficiency", "shannon_efficiency")


def _div(a: Any, b: Any) -> Any:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.true_divide(a, b)


def ratio_metrics(s: Mapping[str, Any], t: str, base: str) -> dict[str, Any]:
    """The metrics that are ratios of per-line sums, for tokenizer ``t``.

    Args:
        s: Sums by column name (scalars, or arrays with one value per replicate): ``lines``,
            ``chars``, ``bytes``, ``words``, ``ws_words``, and ``{t}:tokens``, ``{t}:continued``,
            ``{t}:unk``, ``{t}:bytetok``, ``{t}:lossless``.
        t: The tokenizer's column prefix.
        base: The first tokenizer's prefix (for the normalized sequence length).

    >>> s = {"lines": 2, "chars": 10, "bytes": 12, "words": 4, "ws_words": 2, "a:tokens": 5,
    ...      "a:continued": 1, "a:unk": 0, "a:bytetok": 0, "a:lossless": 2}
    >>> m = ratio_metrics(s, "a", "a"); float(m["tokens_per_word"]), float(m["bytes_per_token"])
    (1.25, 2.4)
    """
    tokens = s[f"{t}:tokens"]
    return {
        "tokens": tokens,
        "tokens_per_word": _div(tokens, s["words"]),
        "tokens_per_whitespace_word": _div(tokens, s["ws_words"]),
        "continued_words": _div(s[f"{t}:continued"], s["words"]),
        "chars_per_token": _div(s["chars"], tokens),
        "bytes_per_token": _div(s["bytes"], tokens),
        "normalized_sequence_length": _div(tokens, s[f"{base}:tokens"]),
        "lossless_lines": _div(s[f"{t}:lossless"], s["lines"]),
        "unk_char_rate": _div(s[f"{t}:unk"], s["chars"]),
        "byte_fallback_rate": _div(s[f"{t}:bytetok"], tokens),
    }


def distribution_metrics(sums: np.ndarray, vocab_size: int, alpha: float = RENYI_ALPHA) -> dict[str, Any]:
    """The metrics of the token unigram distribution, from four sums over the types' counts c.

    Args:
        sums: ``(rows, 4)``: ``used`` (types with c > 0), ``T`` (sum c), ``S_a`` (sum c^alpha) and
            ``L`` (sum c log2 c), one row per replicate (or one row for the point value).
        vocab_size: |V|, the full vocabulary (not the observed types).
        alpha: The Rényi order.

    With p = c / T: H_a = 1/(1-a) (log2 S_a - a log2 T) and H_1 = log2 T - L / T.

    >>> d = distribution_metrics(np.array([[4, 4.0, 4.0, 0.0]]), vocab_size=4)   # four types seen once
    >>> float(d["renyi_efficiency"][0]), float(d["shannon_efficiency"][0]), float(d["type_token_ratio"][0])
    (1.0, 1.0, 1.0)
    """
    sums = np.asarray(sums, dtype=np.float64).reshape(-1, 4)
    used, total, s_alpha, s_log = sums.T
    log_v = np.log2(vocab_size) if vocab_size > 1 else np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        renyi = 1.0 / (1.0 - alpha) * (np.log2(s_alpha) - alpha * np.log2(total))
        shannon = np.log2(total) - s_log / total
    return {
        "vocab_utilization": _div(used, vocab_size),
        "type_token_ratio": _div(used, total),
        "renyi_efficiency": _div(renyi, log_v),
        "shannon_efficiency": _div(shannon, log_v),
    }


def distribution_point(counts: np.ndarray, vocab_size: int, alpha: float = RENYI_ALPHA) -> dict[str, float]:
    """The metrics of the token unigram distribution from the counts themselves (the point values), with
    p = c / T: the same values as :func:`distribution_metrics` of their sums, up to rounding.

    >>> c = np.array([3, 1, 1, 0])
    >>> sums = np.array([[3, 5, 3 ** 2.5 + 2, 3 * np.log2(3)]])
    >>> a, b = distribution_point(c, 8), distribution_metrics(sums, 8)
    >>> all(abs(a[k] - float(b[k][0])) < 1e-12 for k in a)
    True
    """
    c = np.asarray(counts, dtype=np.float64)
    c = c[c > 0]
    total = c.sum()
    p = c / total if total else c
    log_v = np.log2(vocab_size) if vocab_size > 1 else np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        renyi = 1.0 / (1.0 - alpha) * np.log2(np.sum(p ** alpha))
        shannon = -np.sum(p * np.log2(p))
    return {name: float(v) for name, v in (
        ("vocab_utilization", _div(len(c), vocab_size)), ("type_token_ratio", _div(len(c), total)),
        ("renyi_efficiency", _div(renyi, log_v)), ("shannon_efficiency", _div(shannon, log_v)))}


def best(values: Mapping[str, Any], names: list[str]) -> dict[str, str | None]:
    """Per metric, the name of the tokenizer with the best value (by :data:`METRICS`' ``better``), or
    ``None``: for a metric with no better direction, no values, or a tie for the best.

    >>> best({"tokens": [10, 7], "chars_per_token": [4.0, 3.5], "type_token_ratio": [0.1, 0.2]}, ["a", "b"])
    {'tokens': 'b', 'chars_per_token': 'a', 'type_token_ratio': None}
    """
    out: dict[str, str | None] = {}
    for metric, row in values.items():
        better = METRICS[metric].better
        vals = [v for v in row if v is not None]
        if better is None or not vals:
            out[metric] = None
            continue
        target = max(vals) if better == "higher" else min(vals)
        out[metric] = names[list(row).index(target)] if vals.count(target) == 1 else None
    return out
