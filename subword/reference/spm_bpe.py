"""SentencePiece-compatible BPE training, the readable version (oracle for ``bpe/spm_train.rs``).

Unlike bpe.py (HF rules): the words come from SentencePiece's pipeline (``▁`` marks word starts,
rare characters are ``▅``); a symbol is a *tree* (left, right) rather than a string; each step
takes the pair with the highest frequency, then fewer characters, then the smaller UTF-8 string
(then the older pair); a pair spelling an already emitted piece is dropped unmerged; pairs whose
string fails SentencePiece's validity rule never exist; and pairs whose frequency fell to zero stay
candidates, so training goes on into them until the vocabulary is full. Scores are ``-i``; the
required characters come last. Overlapping occurrences merge left to right (``a a a`` -> ``aa a``),
but frequencies count every adjacent occurrence, as SentencePiece's position lists do.

This is the naive O(merges x corpus) loop: it recounts every pair at every step.
"""

from __future__ import annotations

from typing import Any

from subword.spm import _assemble


def train(lines: list[str], trainer: Any) -> tuple[list[tuple[str, float, int]], dict[str, int]]:
    """Trains on ``lines`` with :class:`subword.spm.SpmBpeTrainer` options; returns
    ``(pieces [(piece, score, type)], stats)`` like ``_core.train_spm_bpe``.

    >>> from subword.spm import SpmBpeTrainer
    >>> pieces, _ = train(["aa aa"], SpmBpeTrainer(vocab_size=6, normalization_rule_name="identity"))
    >>> [p for p, _, _ in pieces]
    ['<unk>', '<s>', '</s>', 'aa', 'a', '▁']
    """
    from subword import _core

    spec = trainer.spec_json()
    _, required, meta, stats = _core.spm_prepare(lines, spec)
    words = _core.spm_words(lines, spec)
    target = trainer.vocab_size - len(meta) - len(required)

    def valid(text: str) -> bool:
        # IsValidSentencePiece, through the Rust implementation (the Unicode script table lives there)
        return _core.spm_is_valid_piece(text, spec)

    text: list[str] = []  # symbol id -> string
    key: list[tuple[int, int] | None] = []  # symbol id -> (left, right) or None for characters
    ids: dict[Any, int] = {}  # char or (left, right) -> live symbol id
    invalid: set[tuple[int, int]] = set()

    def symbol(k: Any, s: str) -> int:
        if k not in ids:
            ids[k] = len(text)
            text.append(s)
            key.append(k if isinstance(k, tuple) else None)
        return ids[k]

    seqs = [[symbol(c, c) for c in w] for w, _ in words]
    counts = [n for _, n in words]
    candidates: list[int] = []  # pair symbols ever created and not yet used or dropped

    def see_pair(a: int, b: int) -> None:
        if "▅" in (text[a], text[b]) or (a, b) in invalid:
            return
        if (a, b) not in ids:
            if not valid(text[a] + text[b]):
                invalid.add((a, b))
                return
            candidates.append(symbol((a, b), text[a] + text[b]))

    for seq in seqs:
        for a, b in zip(seq, seq[1:]):
            see_pair(a, b)

    emitted: set[str] = set()
    pieces: list[tuple[str, float]] = []
    while len(pieces) < target and candidates:
        freq: dict[tuple[int, int], int] = {}
        for seq, n in zip(seqs, counts):
            for pair in zip(seq, seq[1:]):
                freq[pair] = freq.get(pair, 0) + n
        best = min(candidates, key=lambda s: (-freq.get(key[s], 0), len(text[s]), text[s].encode(), s))
        candidates.remove(best)
        pair = key[best]
        assert pair is not None
        del ids[pair]  # a later (left, right) pair makes a new symbol (with a duplicate string)
        if text[best] in emitted:
            continue
        emitted.add(text[best])
        pieces.append((text[best], -float(len(pieces))))
        for seq in seqs:  # merge in place, left to right, creating new pairs as SentencePiece does
            j = 0
            while j + 1 < len(seq):
                if (seq[j], seq[j + 1]) == pair:
                    seq[j:j + 2] = [best]
                    if j > 0:
                        see_pair(seq[j - 1], best)
                    if j + 1 < len(seq):
                        see_pair(best, seq[j + 1])
                j += 1
    pieces += [(c, -float(len(pieces) + i)) for i, (c, _) in enumerate(required)]

    vocab = _assemble(meta, pieces, trainer)
    stats = dict(stats, merged=len(pieces) - len(required))
    return vocab, stats
