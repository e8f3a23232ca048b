"""Readable WordPiece: the likelihood trainer and HF's greedy longest-match encoder, in plain Python.

The spec the Rust core (``rust/src/wordpiece.rs``) is tested against. How it differs from its neighbour
:mod:`subword.reference.bpe`:

* same start: special tokens, the alphabet by code point, then the ``##x`` variants by code point (built
  by BPE's own code, so the ids agree); every non-initial unit carries the continuing prefix;
* a different choice of merge: BPE takes the most frequent pair; WordPiece (``criterion="likelihood"``)
  takes the pair with the highest ``count(ab) / (count(a) * count(b))``, counts taken over the current
  segmentation of the word counts (one-unit words included). Ties: the higher pair count, then the
  smaller ``(left_id, right_id)``. Exact fractions, so no float rounding decides anything;
* a pair is a candidate when its count is at least ``max(1, min_frequency)`` and, with
  ``max_token_length``, when the merged token has at most that many chars;
* no merges are kept: a WordPiece model is its vocab, encoded greedily (:func:`encode_word`);
* ``criterion="frequency"`` is HF's ``WordPieceTrainer``: exactly BPE with the ``##`` prefix, vocab only.

Here every step recounts everything (simple, slow); the Rust trainer updates counts incrementally.

>>> train_wordpiece({"qu": 3, "th": 10, "ta": 5, "ah": 5}, vocab_size=9)[-1]
'qu'
>>> train_wordpiece({"qu": 3, "th": 10, "ta": 5, "ah": 5}, vocab_size=9, criterion="frequency")[-1]
'th'
>>> encode_word("unaffable", {"un": 0, "##aff": 1, "##able": 2, "[UNK]": 3})
['un', '##aff', '##able']
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction

from subword.reference import bpe

__all__ = ["train_wordpiece", "encode_word"]


def train_wordpiece(
    word_counts: Mapping[str, int],
    *,
    vocab_size: int,
    criterion: str = "likelihood",
    min_frequency: int = 0,
    special_tokens: Sequence[str] = (),
    initial_alphabet: Sequence[str] = (),
    limit_alphabet: int | None = None,
    max_token_length: int | None = None,
    continuing_subword_prefix: str = "##",
    progress: Callable[[str, int, int], None] | None = None,
) -> list[str]:
    """Train a WordPiece vocabulary; returns the tokens in id order.

    Args:
        word_counts: Word -> count (words as the model sees them, e.g. after BERT pre-processing).
        vocab_size: Stop when the vocab has this many tokens (or no candidate pair is left).
        criterion: ``"likelihood"`` or ``"frequency"`` (HF's ``WordPieceTrainer``).
        min_frequency, special_tokens, initial_alphabet, limit_alphabet, max_token_length: as for BPE,
            except the two rules stated in the module docstring.
        continuing_subword_prefix: Prefix of non-initial units.
        progress: ``progress("merge", done, total)`` every 256 merges and at the end.

    Raises:
        ValueError: an unknown criterion or an empty prefix.

    >>> train_wordpiece({"ab": 2, "b": 1}, vocab_size=10)
    ['a', 'b', '##b', 'ab']
    """
    if criterion not in ("likelihood", "frequency"):
        raise ValueError(f"unknown criterion {criterion!r} (expected 'likelihood' or 'frequency')")
    if not continuing_subword_prefix:
        raise ValueError("continuing_subword_prefix must not be empty")
    prefix = continuing_subword_prefix
    common = dict(special_tokens=special_tokens, initial_alphabet=initial_alphabet, limit_alphabet=limit_alphabet,
                  continuing_subword_prefix=prefix)
    if criterion == "frequency":
        vocab, _ = bpe.train_bpe(word_counts, vocab_size=vocab_size, min_frequency=min_frequency,
                                 max_token_length=max_token_length, progress=progress, **common)
        return vocab

    # The initial vocab is BPE's (no merges asked for), so ids agree with every other trainer.
    vocab, _ = bpe.train_bpe(word_counts, vocab_size=0, **common)
    ids = {t: i for i, t in enumerate(vocab)}
    length = [len(t) for t in vocab[: len(dict.fromkeys(special_tokens))]]
    length += [1] * (len(vocab) - len(length))
    words: list[tuple[list[int], int]] = []
    for word, count in word_counts.items():
        # A char missing from the alphabet (limit_alphabet) vanishes; its position still counts.
        syms = [ids[ch if i == 0 else prefix + ch] for i, ch in enumerate(word) if ch in ids]
        words.append((syms, count))
    limit = max_token_length if max_token_length is not None else float("inf")

    total = max(0, vocab_size - len(vocab))
    done = 0
    while len(vocab) < vocab_size:
        if progress is not None and done % 256 == 0:
            progress("merge", done, total)
        units: Counter[int] = Counter()
        pairs: Counter[tuple[int, int]] = Counter()
        for syms, count in words:
            for s in syms:
                units[s] += count
            for pair in zip(syms, syms[1:]):
                pairs[pair] += count
        candidates = [p for p, n in pairs.items()
                      if n >= max(1, min_frequency) and length[p[0]] + length[p[1]] <= limit]
        if not candidates:
            break
        a, b = max(candidates, key=lambda p: (Fraction(pairs[p], units[p[0]] * units[p[1]]), pairs[p], -p[0], -p[1]))
        right = vocab[b][len(prefix):] if vocab[b].startswith(prefix) else vocab[b]
        token = vocab[a] + right
        if token not in ids:  # a string reached by two paths keeps its first id
            ids[token] = len(vocab)
            vocab.append(token)
            length.append(length[a] + length[b])
        words = [(bpe.merge_symbols(syms, a, b, ids[token]), count) for syms, count in words]
        done += 1
    if progress is not None:
        progress("merge", done, total)
    return vocab


def encode_word(word: str, vocab: Mapping[str, int], *, unk_token: str = "[UNK]",
                continuing_subword_prefix: str = "##", max_input_chars_per_word: int = 100) -> list[str]:
    """HF's ``WordPiece.tokenize`` for one word: greedy longest match first, the whole word as
    ``unk_token`` when it is too long or some position matches nothing.

    >>> encode_word("unx", {"un": 0, "[UNK]": 1})
    ['[UNK]']
    """
    if len(word) > max_input_chars_per_word:
        return [unk_token]
    out: list[str] = []
    start = 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = (continuing_subword_prefix if start else "") + word[start:end]
            if piece in vocab:
                out.append(piece)
                start = end
                break
        else:
            return [unk_token]
    return out
