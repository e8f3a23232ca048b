"""Token boundaries across tokenizers, and against gold morpheme boundaries.

Between tokenizers (see :func:`subword.compare.collect.boundary_keys`): the internal boundaries of
each line, as character offsets into the original text with whitespace transparent, so cutting
before or after a space is the same cut. Precision of ``a`` against ``b`` = |B_a n B_b| / |B_a|,
recall = |B_a n B_b| / |B_b|, F1 = 2 |B_a n B_b| / (|B_a| + |B_b|); micro averages over all lines.

Against gold morphs (``--gold``): a TSV of a word, a tab, then its morphs separated by spaces or
``+`` (``unhappiness<TAB>un happi ness``). Each gold word is encoded on its own; G = the offsets
between its morphs, P = the offsets between its tokens inside the word; precision = sum |G n P| /
sum |P|, recall = sum |G n P| / sum |G| (micro over the gold words).

>>> prf(2, 4, 2)
(0.5, 1.0, 0.6666666666666666)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import regex

__all__ = ["prf", "read_gold", "gold_scores", "GoldError"]


class GoldError(ValueError):
    """A malformed gold file (the message is ``file:line: what``)."""


def prf(shared: float, predicted: float, gold: float) -> tuple[float | None, float | None, float | None]:
    """Precision, recall and F1 from the counts (``None`` where a denominator is zero)."""
    p = shared / predicted if predicted else None
    r = shared / gold if gold else None
    f = 2 * shared / (predicted + gold) if predicted + gold else None
    return p, r, f


def read_gold(path: str | os.PathLike[str]) -> list[tuple[str, list[int]]]:
    """Reads a gold morph file: ``[(word, internal boundary offsets)]``.

    Raises:
        GoldError: a line without a tab, without morphs, or whose morphs do not spell the word
            (the message names ``file:line``).
        OSError: the file cannot be read.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp(), "g.tsv"); _ = p.write_text("unhappy\\tun+happy\\n")
    >>> read_gold(p)
    [('unhappy', [2])]
    """
    out: list[tuple[str, list[int]]] = []
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, start=1):
            line = raw.rstrip("\r\n")
            if not line.strip() or line.startswith("#"):
                continue
            if "\t" not in line:
                raise GoldError(f"{path}:{lineno}: expected 'word<TAB>morphs', found no tab")
            word, morphs_text = line.split("\t", 1)
            morphs = [m for m in regex.split(r"[ +]+", morphs_text.strip()) if m]
            if not word or not morphs:
                raise GoldError(f"{path}:{lineno}: empty word or morphs")
            if "".join(morphs) != word:
                raise GoldError(f"{path}:{lineno}: morphs {'+'.join(morphs)!r} do not spell the word {word!r}")
            cuts, at = [], 0
            for m in morphs[:-1]:
                at += len(m)
                cuts.append(at)
            out.append((word, cuts))
    if not out:
        raise GoldError(f"{path}: no gold words")
    return out


def gold_scores(tokenizer: Any, gold: Sequence[tuple[str, list[int]]]) -> dict[str, float | None]:
    """Boundary precision, recall and F1 of one tokenizer against gold morph boundaries."""
    encodings = tokenizer.encode_batch([w for w, _ in gold], add_special_tokens=False)
    shared = predicted = wanted = 0
    for (word, cuts), enc in zip(gold, encodings):
        mine = {o for s, e in enc.offsets for o in (s, e) if 0 < o < len(word)}
        truth = set(cuts)
        shared += len(mine & truth)
        predicted += len(mine)
        wanted += len(truth)
    p, r, f = prf(shared, predicted, wanted)
    return {"precision": p, "recall": r, "f1": f}
