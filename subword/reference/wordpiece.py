"""Readable WordPiece: three merge criteria and HF's greedy longest-match encoder, in plain Python.

The spec the Rust core (``rust/src/wordpiece.rs``) is tested against. How it differs from its neighbour
:mod:`subword.reference.bpe`:

* same start: special tokens, the alphabet by code point, then the ``##x`` variants by code point (built
  by BPE's own code, so the ids agree); every non-initial unit carries the continuing prefix;
* a different choice of merge. Counts are taken over the current segmentation of the word counts
  (one-unit words included): ``c(u)`` the occurrences of unit ``u``, ``N`` their sum.

  - ``criterion="likelihood"`` (Schuster & Nakajima 2012): the merge that most increases the training
    log-likelihood ``L = sum_u c(u) ln(c(u) / N)`` under the unigram model of the segmentation.
    Merging ``(a, b)`` at its ``m`` non-overlapping occurrences takes ``m`` from ``c(a)`` and ``c(b)``
    (``2m`` from ``c(a)`` when ``a == b``, where ``m`` counts ``floor(run / 2)`` per run, not the
    overlapping pairs), adds ``m`` to the count of the merged string's token (0 if it is not a token
    yet, or no longer used) and takes ``m`` from ``N``. With ``f(x) = x ln x``, ``L = sum f(c) - f(N)``,
    so the gain is ``D(c(ab) + m, m) + D(N, m) - D(c(a), m) - D(c(b), m)`` where
    ``D(x, m) = f(x) - f(x - m)`` (:func:`likelihood_gain`). No re-segmentation is needed.
    Tie rule: gains are compared as the IEEE doubles that exact expression gives (the Rust core
    computes the same doubles); equal doubles are ties, broken by the higher pair count, then the
    smaller ``(left_id, right_id)``.
  - ``criterion="pmi"``: the HF course's score ``count(ab) / (count(a) * count(b))`` (pointwise
    mutual information up to a constant; it favours pairs of rare units that always co-occur). Exact
    fractions; ties: the higher pair count, then the smaller ``(left_id, right_id)``.
  - ``criterion="frequency"`` is HF's ``WordPieceTrainer``: exactly BPE with the ``##`` prefix, vocab only;
* a pair is a candidate when its count is at least ``max(1, min_frequency)`` and, with
  ``max_token_length``, when the merged token has at most that many chars;
* no merges are kept: a WordPiece model is its vocab, encoded greedily (:func:`encode_word`).

Here every step recounts everything (simple, slow); the Rust trainer updates counts incrementally.

>>> words = {"qu": 3, "th": 10, "ta": 5, "ah": 5}
>>> [train_wordpiece(words, vocab_size=9, criterion=c)[-1] for c in ("likelihood", "pmi", "frequency")]
['qu', 'qu', 'th']
>>> words = {"the": 50, "then": 5, "qu": 1}  # PMI merges the pair seen once first
>>> [train_wordpiece(words, vocab_size=12, criterion=c)[-2:] for c in ("likelihood", "pmi")]
[['th', 'the'], ['qu', 'th']]
>>> encode_word("unaffable", {"un": 0, "##aff": 1, "##able": 2, "[UNK]": 3})
['un', '##aff', '##able']
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from math import log, log1p

from subword.reference import bpe

__all__ = ["train_wordpiece", "encode_word", "likelihood_gain", "CRITERIA"]

#: The merge criteria, the default first.
CRITERIA = ("likelihood", "pmi", "frequency")


def _xlnx_drop(x: int, m: int) -> float:
    """``f(x) - f(x - m)`` for ``f(x) = x ln x``, as ``m ln x - (x - m) ln(1 - m/x)`` (no large terms cancel)."""
    if m == 0:
        return 0.0
    if x == m:
        return m * log(x)
    return m * log(x) - (x - m) * log1p(-m / x)


def likelihood_gain(ca: int, cb: int, cab: int, m: int, total: int, same: bool = False,
                    remakes_right: bool = False) -> float:
    """Gain in training log-likelihood (nats) of merging ``m`` occurrences of ``(a, b)``.

    Args:
        ca, cb: ``c(a)``, ``c(b)``.
        cab: The count of the merged string's token (0 when it is not a token yet).
        m: The occurrences the merge rewrites.
        total: ``N``, the units in the segmentation.
        same: ``a == b``: ``a`` loses ``2m`` (``cb`` is ignored).
        remakes_right: The merged string is ``b`` itself, which happens only when ``a`` spells the prefix
            (the word ``##b`` with a literal ``#``: ``(##, ##b) -> ##b``): ``a`` loses ``m``, ``b`` is
            unchanged (``cb`` and ``cab`` are ignored).

    >>> round(likelihood_gain(3, 3, 0, 3, 46), 4)  # (q, ##u) in the module example
    11.0901
    """
    if same:
        lose, made = _xlnx_drop(ca, 2 * m), _xlnx_drop(cab + m, m)
    elif remakes_right:
        lose, made = _xlnx_drop(ca, m), 0.0
    else:
        lose, made = _xlnx_drop(ca, m) + _xlnx_drop(cb, m), _xlnx_drop(cab + m, m)
    return (made + _xlnx_drop(total, m)) - lose


def _self_merges(syms: Sequence[int], unit: int) -> int:
    """How many ``(unit, unit)`` a left-to-right merge rewrites in ``syms``: ``floor(run / 2)`` per run."""
    merges = run = 0
    for s in list(syms) + [None]:
        if s == unit:
            run += 1
        else:
            merges, run = merges + run // 2, 0
    return merges


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
    merges: list[tuple[str, str]] | None = None,
) -> list[str]:
    """Train a WordPiece vocabulary; returns the tokens in id order.

    Args:
        word_counts: Word -> count (words as the model sees them, e.g. after BERT pre-processing).
        vocab_size: Stop when the vocab has this many tokens (or no candidate pair is left).
        criterion: ``"likelihood"``, ``"pmi"`` or ``"frequency"`` (HF's ``WordPieceTrainer``); see the module.
        min_frequency, special_tokens, initial_alphabet, limit_alphabet, max_token_length: as for BPE,
            except the two rules stated in the module docstring.
        continuing_subword_prefix: Prefix of non-initial units.
        progress: ``progress("merge", done, total)`` every 256 merges and at the end.
        merges: When given, receives every merge ``(left, right)`` in order (for tests: a merge that
            makes an existing token adds nothing to the vocab).

    Raises:
        ValueError: an unknown criterion or an empty prefix.

    >>> train_wordpiece({"ab": 2, "b": 1}, vocab_size=10)
    ['a', 'b', '##b', 'ab']
    """
    if criterion not in CRITERIA:
        raise ValueError(f"unknown criterion {criterion!r} (expected 'likelihood', 'pmi' or 'frequency')")
    if not continuing_subword_prefix:
        raise ValueError("continuing_subword_prefix must not be empty")
    prefix = continuing_subword_prefix
    common = dict(special_tokens=special_tokens, initial_alphabet=initial_alphabet, limit_alphabet=limit_alphabet,
                  continuing_subword_prefix=prefix)
    if criterion == "frequency":
        vocab, made = bpe.train_bpe(word_counts, vocab_size=vocab_size, min_frequency=min_frequency,
                                    max_token_length=max_token_length, progress=progress, **common)
        if merges is not None:
            merges.extend(made)
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
        if criterion == "pmi":
            def score(p: tuple[int, int]) -> Fraction | float:
                return Fraction(pairs[p], units[p[0]] * units[p[1]])
        else:
            total_units = sum(units.values())

            def score(p: tuple[int, int]) -> Fraction | float:
                x, y = p
                m = pairs[p] if x != y else sum(_self_merges(syms, x) * count for syms, count in words)
                made = ids.get(vocab[x] + vocab[y].removeprefix(prefix))
                return likelihood_gain(units[x], units[y], units[made] if made is not None else 0, m,
                                       total_units, same=x == y, remakes_right=made == y)
        a, b = max(candidates, key=lambda p: (score(p), pairs[p], -p[0], -p[1]))
        right = vocab[b][len(prefix):] if vocab[b].startswith(prefix) else vocab[b]
        token = vocab[a] + right
        if token not in ids:  # a string reached by two paths keeps its first id
            ids[token] = len(vocab)
            vocab.append(token)
            length.append(length[a] + length[b])
        words = [(bpe.merge_symbols(syms, a, b, ids[token]), count) for syms, count in words]
        if merges is not None:
            merges.append((vocab[a], vocab[b]))
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
