"""Where a token-count difference comes from: the words (segments) that account for it.

Every token is attributed to exactly one segment of the text (the segment holding its last
character, so ``Ġthe`` counts for ``the``; see :mod:`subword.compare.words`), which makes the
attribution additive: summed over all segment types, ``contribution`` = T_a - T_b exactly (a minus b,
as the pairwise differences). For a segment type w occurring ``count`` times, ``tokens_a`` is its
mean number of tokens under ``a``, ``delta`` = tokens_a - tokens_b, and ``contribution`` = delta x
count. Words are listed by |contribution|, and ``cumulative_share`` is the share of all the per-word
differences, of either sign, that the words so far account for: the running sum of |contribution|
over the sum of |contribution| of every segment type (so it grows from 0 to 1 down the list).
``more_in_a`` and ``more_in_b`` sum the contributions of the words where ``a`` needs more tokens and
of those where ``b`` does; they add up to ``net`` = T_a - T_b. ``by_group`` sums contributions by
(script, kind).

Each word's tokens under ``a`` and ``b`` (at its first occurrence) are listed twice: as the tokenizer
spells them (``segmentation_*``: ``Ġthe``, ``##ing``, ``<0xE2>``) and as decoded text grouped as the
sample rows group them (``display_*``: tokens that end inside a UTF-8 character go with the next ones,
``⟨E2⟩`` for a byte-fallback piece, ``·`` for a space). An empty list means no token ends inside the
word: the tokenizer dropped it (WordPiece drops spaces) or its characters went with a token that ends
in the next segment (SentencePiece's ``▁`` joins the word after a space).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from subword.compare.collect import Collected
from subword.compare.samples import TokenDisplay
from subword.compare.words import classify, segments

__all__ = ["attribution", "type_groups"]


def _segmentation(tok: Any, shown: TokenDisplay, line: str, word: str) -> tuple[list[str], list[dict[str, Any]]]:
    """The tokens of ``tok`` attributed to the first occurrence of segment ``word`` in ``line`` (those whose
    last character falls in it, as the counts attribute them): as spelled, and as display groups."""
    at = 0
    for seg in segments(line):
        if seg == word:
            break
        at += len(seg)
    else:
        return [], []
    end = at + len(word)
    enc = tok.encode(line, add_special_tokens=False)
    mine = [(i, t, (s, e)) for i, t, (s, e) in zip(enc.ids, enc.tokens, enc.offsets) if at <= max(s, e - 1) < end]
    return [t for _, t, _ in mine], shown.groups(line, mine)


def type_groups(c: Collected) -> tuple[list[tuple[str, str]], np.ndarray]:
    """``(labels, group)``: the distinct ``(script, kind)`` of the segment types, and each type's index in them.

    >>> from subword.compare.collect import collect
    >>> from subword import Tokenizer, WordPiece
    >>> tok = Tokenizer(WordPiece({"[UNK]": 0}))
    >>> labels, group = type_groups(collect([tok], ["t"], ["ab 12"], block_lines=1))
    >>> [labels[g] for g in group]
    [('Latin', 'letters'), ('Common', 'whitespace'), ('Common', 'digits')]
    """
    index: dict[tuple[str, str], int] = {}
    group = np.fromiter((index.setdefault(classify(w), len(index)) for w in c.types), dtype=np.int64,
                        count=len(c.types))
    return list(index), group


def attribution(c: Collected, tokenizers: Sequence[Any], lines: Sequence[str], a: int, b: int,
                top: int = 50, cache: dict[tuple[int, str], Any] | None = None,
                groups: tuple[list[tuple[str, str]], np.ndarray] | None = None) -> dict[str, Any]:
    """The attribution table of the token-count difference of tokenizer ``a`` minus tokenizer ``b``.

    ``cache`` keeps each (tokenizer, word)'s segmentation across the pairs of one comparison, ``groups``
    the segment types' :func:`type_groups` (computed here when not given).

    Returns:
        ``{"a", "b", "net", "more_in_a", "more_in_b", "words": [...], "by_group": [...]}`` (see the
        module docstring).
    """
    ta, tb = c.tokenizers[a], c.tokenizers[b]
    contribution = (ta.type_tokens - tb.type_tokens).astype(np.float64)
    net = float(ta.tokens.sum() - tb.tokens.sum())
    order = np.lexsort((np.arange(len(contribution)), -np.abs(contribution)))
    order = order[contribution[order] != 0]
    moved = float(np.abs(contribution).sum())
    running = np.cumsum(np.abs(contribution[order[:top]]))
    cache = {} if cache is None else cache
    shown: dict[int, TokenDisplay] = {}

    def spelled(i: int, word: str, line: str) -> tuple[list[str], list[dict[str, Any]]]:
        if (i, word) not in cache:
            display = shown.setdefault(i, TokenDisplay(tokenizers[i]))
            cache[(i, word)] = _segmentation(tokenizers[i], display, line, word)
        return cache[(i, word)]

    words = []
    for rank, t in enumerate(order[:top]):
        word = c.types[t]
        count = int(c.type_count[t])
        script, kind = classify(word)
        line = lines[int(c.type_first_line[t])] if c.type_first_line[t] >= 0 else ""
        (seg_a, display_a), (seg_b, display_b) = spelled(a, word, line), spelled(b, word, line)
        words.append({
            "word": word, "count": count,
            "tokens_a": float(ta.type_tokens[t]) / count, "tokens_b": float(tb.type_tokens[t]) / count,
            "delta": float(contribution[t]) / count, "contribution": float(contribution[t]),
            "cumulative_share": float(running[rank]) / moved,
            "script": script, "kind": kind,
            "segmentation_a": seg_a, "segmentation_b": seg_b,
            "display_a": display_a, "display_b": display_b,
        })
    labels, group_of = type_groups(c) if groups is None else groups
    used = np.zeros(len(labels), dtype=bool)
    used[group_of[contribution != 0]] = True
    sums = np.bincount(group_of, weights=contribution, minlength=len(labels))
    by_group = [{"script": s, "kind": k, "contribution": float(sums[g]), "share": float(sums[g]) / net if net else None}
                for g, (s, k) in sorted(((g, labels[g]) for g in np.flatnonzero(used)),
                                        key=lambda gl: (-abs(sums[gl[0]]), gl[1]))]
    return {"a": ta.name, "b": tb.name, "net": net,
            "more_in_a": float(contribution[contribution > 0].sum()),
            "more_in_b": float(contribution[contribution < 0].sum()),
            "words": words, "by_group": by_group}
