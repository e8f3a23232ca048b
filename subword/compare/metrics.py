"""The metrics of a comparison: each one's definition, source and formula.

Every metric is a function of *sums over lines* (ratio metrics) or of the *token type counts*
(distribution metrics), so the same formula gives the point value (all lines, weight 1) and each
bootstrap replicate (lines weighted by how often the replicate drew them). Notation, for one
tokenizer over the whole input: T tokens, C characters, B UTF-8 bytes, W words (Unicode word
segmentation, see :mod:`subword.compare.words`), c(v) the count of token v, |V| the full
vocabulary size (added tokens included). Micro averages throughout (sums, then one ratio).

======================== ===================================== ===========================================
name                     formula                               source
======================== ===================================== ===========================================
tokens                   T                                     --
tokens_per_word          T / W                                 fertility, Rust et al. 2021 (corpus form)
tokens_per_whitespace... T / W_ws (whitespace-split words)     Rust et al. 2021
continued_words          |{w : |T(w)| >= 2}| / W               Rust et al. 2021
chars_per_token          C / T                                 compression
bytes_per_token          B / T                                 compression
normalized_sequence_...  T / T_first                           Dagan et al. 2024
vocab_utilization        |{v : c(v) > 0}| / |V|                --
type_token_ratio         |{v : c(v) > 0}| / T                  --
renyi_efficiency         H_2.5 / log2 |V|                      Zouhar et al. 2023
shannon_efficiency       H_1 / log2 |V|                        Zouhar et al. 2023
lossless_lines           lines with decode(encode(x)) == x / n --
unk_char_rate            characters under UNK tokens / C       Petrov et al. 2023
byte_fallback_rate       byte tokens / T                       --
mb_per_s                 B / 10^6 / encode seconds             --
======================== ===================================== ===========================================

H_a = 1/(1-a) log2 sum_v p(v)^a with p(v) = c(v)/T, and H_1 = -sum_v p(v) log2 p(v).

>>> counts = np.array([2.0, 1.0, 1.0])
>>> round(float(distribution_metrics(counts, vocab_size=4)["vocab_utilization"]), 2)
0.75
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Metric", "METRICS", "ratio_metrics", "distribution_metrics", "distribution_metrics_from_sums", "RENYI_ALPHA"]

#: The Rényi order: 2.5 best predicted BLEU in Zouhar et al. 2023.
RENYI_ALPHA = 2.5


@dataclass(frozen=True)
class Metric:
    """One metric: its JSON name, what it means, and which way is better.

    Attributes:
        name: The snake_case key in ``metrics``.
        label: A short label for tables.
        better: ``"higher"``, ``"lower"`` or ``None`` (no better direction: it describes).
        source: Where it comes from.
    """

    name: str
    label: str
    better: str | None
    source: str


METRICS: dict[str, Metric] = {m.name: m for m in [
    Metric("tokens", "tokens", "lower", "count of the text's own tokens (no post-processor specials)"),
    Metric("tokens_per_word", "tokens/word (UAX #29)", "lower", "Rust et al. 2021, corpus form T/W"),
    Metric("tokens_per_whitespace_word", "tokens/word (whitespace)", "lower", "Rust et al. 2021"),
    Metric("continued_words", "continued words", "lower", "Rust et al. 2021"),
    Metric("chars_per_token", "chars/token (micro)", "higher", "compression, sum C / sum T"),
    Metric("bytes_per_token", "bytes/token (micro)", "higher", "compression, sum B / sum T"),
    Metric("normalized_sequence_length", "NSL vs first", "lower", "Dagan et al. 2024"),
    Metric("vocab_utilization", "vocab used", None, "types / |V|"),
    Metric("type_token_ratio", "type/token ratio", None, "types / tokens"),
    Metric("renyi_efficiency", f"Rényi eff. (a={RENYI_ALPHA})", "higher", "Zouhar et al. 2023"),
    Metric("shannon_efficiency", "Shannon eff.", "higher", "Zouhar et al. 2023"),
    Metric("lossless_lines", "lossless lines", "higher", "decode(encode(x)) == x"),
    Metric("unk_char_rate", "UNK chars", "lower", "Petrov et al. 2023"),
    Metric("byte_fallback_rate", "byte tokens", "lower", "byte pieces / tokens"),
    Metric("mb_per_s", "MB/s encode", "higher", "encode_batch throughput"),
]}


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


def distribution_metrics(counts: np.ndarray, vocab_size: int, alpha: float = RENYI_ALPHA) -> dict[str, Any]:
    """The metrics of the token unigram distribution.

    Args:
        counts: Token counts, one row per observed type (a column per replicate, or 1-D).
        vocab_size: |V|, the full vocabulary (not the observed types).
        alpha: The Rényi order.

    >>> d = distribution_metrics(np.array([1.0, 1.0, 1.0, 1.0]), vocab_size=4)
    >>> float(d["renyi_efficiency"]), float(d["shannon_efficiency"]), float(d["type_token_ratio"])
    (1.0, 1.0, 1.0)
    """
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum(axis=0)
    p = _div(counts, total)
    used = (counts > 0).sum(axis=0)
    log_v = np.log2(vocab_size) if vocab_size > 1 else np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        renyi = 1.0 / (1.0 - alpha) * np.log2(np.sum(p ** alpha, axis=0))
        plogp = np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
        shannon = -plogp.sum(axis=0)
    return {
        "vocab_utilization": _div(used, vocab_size),
        "type_token_ratio": _div(used, total),
        "renyi_efficiency": _div(renyi, log_v),
        "shannon_efficiency": _div(shannon, log_v),
    }


def distribution_metrics_from_sums(sums: np.ndarray, vocab_size: int, alpha: float = RENYI_ALPHA) -> dict[str, Any]:
    """:func:`distribution_metrics` from four sums over the types' counts c (one row per replicate).

    The columns are ``used`` (types with c > 0), ``T`` (sum c), ``S_a`` (sum c^alpha) and ``L``
    (sum c log2 c), as the core's ``type_count_replicates`` returns them. With p = c / T:
    H_a = 1/(1-a) (log2 S_a - a log2 T) and H_1 = log2 T - L / T, the same values up to rounding.

    >>> c = np.array([3.0, 1.0, 1.0])
    >>> row = np.array([[3, c.sum(), (c ** 2.5).sum(), (c * np.log2(c)).sum()]])
    >>> a, b = distribution_metrics(c, 8), distribution_metrics_from_sums(row, 8)
    >>> all(abs(float(a[k]) - float(b[k][0])) < 1e-12 for k in a)
    True
    """
    sums = np.asarray(sums, dtype=np.float64)
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
