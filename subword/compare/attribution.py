"""Where a token-count difference comes from: the words (segments) that account for it.

Every token is attributed to exactly one segment of the text (the segment holding its last
character, so ``Ġthe`` counts for ``the``; see :mod:`subword.compare.words`), which makes the
attribution additive: summed over all segment types, ``contribution`` = T_a - T_b exactly (a minus b,
as the pairwise differences). For a segment type w occurring ``count`` times, ``tokens_a`` is its
mean number of tokens under ``a``, ``delta`` = tokens_a - tokens_b, and ``contribution`` = delta x
count. Words are listed by |contribution|; ``cumulative_share`` is the running sum of contributions
over T_a - T_b (``None`` when the totals are equal). ``by_group`` sums contributions by (script, kind).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from subword.compare.collect import Collected
from subword.compare.words import classify, segments

__all__ = ["attribution", "type_groups"]


def _segmentation(tok: Any, line: str, word: str) -> list[str]:
    """The tokens of ``tok`` attributed to the first occurrence of segment ``word`` in ``line``
    (those whose last character falls in it, as the counts attribute them)."""
    at = 0
    for seg in segments(line):
        if seg == word:
            break
        at += len(seg)
    else:
        return []
    end = at + len(word)
    enc = tok.encode(line, add_special_tokens=False)
    return [t for t, (s, e) in zip(enc.tokens, enc.offsets) if at <= max(s, e - 1) < end]


def type_groups(c: Collected) -> tuple[list[tuple[str, str]], np.ndarray]:
    """``(labels, group)``: the distinct ``(script, kind)`` of the segment types, and each type's index in them.

    >>> from subword.compare.collect import collect_reference
    >>> from subword import Tokenizer, WordPiece
    >>> tok = Tokenizer(WordPiece({"[UNK]": 0}))
    >>> labels, group = type_groups(collect_reference([tok], ["t"], ["ab 12"]))
    >>> [labels[g] for g in group]
    [('Latin', 'letters'), ('Common', 'whitespace'), ('Common', 'digits')]
    """
    index: dict[tuple[str, str], int] = {}
    group = np.fromiter((index.setdefault(classify(w), len(index)) for w in c.types), dtype=np.int64,
                        count=len(c.types))
    return list(index), group


def attribution(c: Collected, tokenizers: Sequence[Any], lines: Sequence[str], a: int, b: int,
                top: int = 50, cache: dict[tuple[int, str], list[str]] | None = None,
                groups: tuple[list[tuple[str, str]], np.ndarray] | None = None) -> dict[str, Any]:
    """The attribution table of the token-count difference of tokenizer ``a`` minus tokenizer ``b``.

    ``cache`` keeps each (tokenizer, word)'s segmentation across the pairs of one comparison, ``groups``
    the segment types' :func:`type_groups` (computed here when not given).

    Returns:
        ``{"a", "b", "words": [...], "by_group": [...]}`` (see the module docstring).
    """
    ta, tb = c.tokenizers[a], c.tokenizers[b]
    contribution = (ta.type_tokens - tb.type_tokens).astype(np.float64)
    net = float(ta.tokens.sum() - tb.tokens.sum())
    order = np.lexsort((np.arange(len(contribution)), -np.abs(contribution)))
    order = order[contribution[order] != 0]
    running = np.cumsum(contribution[order[:top]])
    cache = {} if cache is None else cache

    def spelled(i: int, word: str, line: str) -> list[str]:
        if (i, word) not in cache:
            cache[(i, word)] = _segmentation(tokenizers[i], line, word)
        return cache[(i, word)]

    words = []
    for rank, t in enumerate(order[:top]):
        word = c.types[t]
        count = int(c.type_count[t])
        script, kind = classify(word)
        line = lines[int(c.type_first_line[t])] if c.type_first_line[t] >= 0 else ""
        words.append({
            "word": word, "count": count,
            "tokens_a": float(ta.type_tokens[t]) / count, "tokens_b": float(tb.type_tokens[t]) / count,
            "delta": float(contribution[t]) / count, "contribution": float(contribution[t]),
            "cumulative_share": float(running[rank]) / net if net else None,
            "script": script, "kind": kind,
            "segmentation_a": spelled(a, word, line),
            "segmentation_b": spelled(b, word, line),
        })
    labels, group_of = type_groups(c) if groups is None else groups
    used = np.zeros(len(labels), dtype=bool)
    used[group_of[contribution != 0]] = True
    sums = np.bincount(group_of, weights=contribution, minlength=len(labels))
    by_group = [{"script": s, "kind": k, "contribution": float(sums[g]), "share": float(sums[g]) / net if net else None}
                for g, (s, k) in sorted(((g, labels[g]) for g in np.flatnonzero(used)),
                                        key=lambda gl: (-abs(sums[gl[0]]), gl[1]))]
    return {"a": c.tokenizers[a].name, "b": c.tokenizers[b].name, "words": words, "by_group": by_group}
