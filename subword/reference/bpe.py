"""Readable BPE: the HF-compatible trainer and the rank-based encoder, in plain Python.

This is the spec the Rust core (``rust/src/bpe/train.rs``, ``rust/src/bpe/encode.rs``) is tested
against. How it differs from its neighbours:

* vs minbpe / GPT-2 ``bpe()``: ties between equally frequent pairs go to the smallest
  ``(left_id, right_id)`` (HF's rule), not to the first pair seen; ids are specials, then the
  alphabet by code point, then ``##x``/``x</w>`` variants, then merges in creation order.
* vs HF ``BpeTrainer``: the same output, but where HF is random (the order of ``limit_alphabet``
  ties and of the variant ids, which is hash order there) we are deterministic: ties drop the larger
  code point first, variants are numbered in code-point order of their string.
* vs the Rust trainer: the same rules, stated simply. After a merge we recount the touched words
  instead of tracking HF's per-change deltas; that is equivalent because a pair ``(x, y)`` is only
  ever counted if both are single chars (the initial pairs, never filtered) or their char lengths
  sum to less than ``max_token_length``.

>>> vocab, merges = train_bpe({"zzzz": 2, "aaaa": 2, "zz": 1}, vocab_size=10)
>>> merges  # the tie at count 2 goes to the older token zz, not to aa
[('z', 'z'), ('a', 'a'), ('zz', 'zz'), ('aa', 'aa')]
>>> encode_word("aaaa", {m: r for r, m in enumerate(merges)})
['aaaa']
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

__all__ = ["count_words", "train_bpe", "encode_word"]


def count_words(lines: Iterable[str], pre_tokenizer: Any, normalizer: Any = None) -> dict[str, int]:
    """Count the pre-tokens of ``lines`` as the model sees them (what HF's trainer is fed).

    Args:
        lines: Text lines (keep their line endings to match HF's ``train_from_files``).
        pre_tokenizer: A :mod:`subword.pre_tokenizers` object (its reference ``pre_tokenize_str``).
        normalizer: Optional :mod:`subword.normalizers` object applied first.

    >>> from subword.pre_tokenizers import Whitespace
    >>> count_words(["a b a\\n"], Whitespace())
    {'a': 2, 'b': 1}
    """
    counts: Counter[str] = Counter()
    for line in lines:
        if normalizer is not None:
            line = normalizer.normalize_str(line)
        counts.update(piece for piece, _ in pre_tokenizer.pre_tokenize_str(line))
    return dict(counts)


def train_bpe(
    word_counts: Mapping[str, int],
    *,
    vocab_size: int,
    min_frequency: int = 0,
    special_tokens: Sequence[str] = (),
    initial_alphabet: Sequence[str] = (),
    limit_alphabet: int | None = None,
    max_token_length: int | None = None,
    continuing_subword_prefix: str | None = None,
    end_of_word_suffix: str | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> tuple[list[str], list[tuple[str, str]]]:
    """Train BPE with HF ``BpeTrainer`` semantics; returns ``(vocab in id order, merges in rank order)``.

    ``progress(stage, current, total)`` is called like the Rust engine does: ``"merge"`` every 256 merges.

    >>> train_bpe({"ab": 2, "cd": 1}, vocab_size=100, min_frequency=2)
    (['a', 'b', 'c', 'd', 'ab'], [('a', 'b')])
    """
    prefix, suffix = continuing_subword_prefix or "", end_of_word_suffix or ""
    vocab: list[str] = []
    ids: dict[str, int] = {}
    length: list[int] = []  # chars per token, prefix/suffix not counted

    def add(token: str, n_chars: int) -> int:
        if token not in ids:
            ids[token] = len(vocab)
            vocab.append(token)
            length.append(n_chars)
        return ids[token]

    for token in special_tokens:
        add(token, len(token))

    # The alphabet: chars by total count; the initial alphabet always stays.
    char_counts: Counter[str] = Counter()
    for word, count in word_counts.items():
        for ch in word:
            char_counts[ch] += count
    for s in initial_alphabet:
        if s:  # HF keeps the first char of each string
            char_counts[s[0]] = float("inf")  # type: ignore[assignment]
    kept = list(char_counts)
    if limit_alphabet is not None and len(kept) > limit_alphabet:
        kept.sort(key=lambda c: (char_counts[c], -ord(c)))  # lowest count first; ties: larger code point
        kept = kept[len(kept) - limit_alphabet :]
    for ch in sorted(kept):
        add(ch, 1)

    # Words as symbol strings: dropped chars vanish, positions still decide prefix/suffix.
    def symbols(word: str) -> list[str]:
        out = []
        for i, ch in enumerate(word):
            if ch in ids:
                out.append(("" if i == 0 else prefix) + ch + (suffix if i == len(word) - 1 else ""))
        return out

    spelled = [(symbols(w), c) for w, c in word_counts.items()]
    for token in sorted({s for syms, _ in spelled for s in syms} - ids.keys()):
        add(token, 1)
    words = [[ids[s] for s in syms] for syms, _ in spelled]
    counts = [c for _, c in spelled]

    limit = max_token_length if max_token_length is not None else float("inf")

    def countable(a: int, b: int) -> bool:
        return (length[a] == 1 and length[b] == 1) or length[a] + length[b] < limit

    pair_counts: Counter[tuple[int, int]] = Counter()
    where: dict[tuple[int, int], set[int]] = {}

    grown: set[tuple[int, int]] = set()  # pairs that gained occurrences in this step

    def add_pairs(w: int, sign: int) -> None:
        syms = words[w]
        for pair in zip(syms, syms[1:]):
            if countable(*pair):
                pair_counts[pair] += sign * counts[w]
                if sign > 0:
                    where.setdefault(pair, set()).add(w)
                    grown.add(pair)

    for w in range(len(words)):
        add_pairs(w, +1)
    # Max-heap by count, ties to the smallest (left_id, right_id); stale entries are refreshed lazily.
    heap = [(-c, pair) for pair, c in pair_counts.items() if c > 0]
    heapq.heapify(heap)

    merges: list[tuple[str, str]] = []
    total = max(0, vocab_size - len(vocab))
    while len(vocab) < vocab_size and heap:
        if progress is not None and len(merges) % 256 == 0:
            progress("merge", len(merges), total)
        neg, (a, b) = heapq.heappop(heap)
        if -neg != pair_counts[(a, b)]:
            if pair_counts[(a, b)] > 0:
                heapq.heappush(heap, (-pair_counts[(a, b)], (a, b)))
            continue
        if -neg < max(1, min_frequency):
            break
        right = vocab[b][len(prefix) :] if prefix and vocab[b].startswith(prefix) else vocab[b]
        new = add(vocab[a] + right, length[a] + length[b])
        merges.append((vocab[a], vocab[b]))
        grown.clear()
        for w in where.pop((a, b), ()):
            add_pairs(w, -1)
            words[w] = merge_symbols(words[w], a, b, new)
            add_pairs(w, +1)
        # Re-pushing an unchanged count only adds a duplicate; merging a pair zeroes its count, so
        # the duplicate is discarded as stale later.
        for pair in grown:
            if pair_counts[pair] > 0:
                heapq.heappush(heap, (-pair_counts[pair], pair))
    if progress is not None:
        progress("merge", len(merges), total)
    return vocab, merges


def merge_symbols(syms: list[Any], a: Any, b: Any, new: Any) -> list[Any]:
    """Replace every non-overlapping ``a b`` (left to right) by ``new``.

    >>> merge_symbols(list("aaab"), "a", "a", "aa")
    ['aa', 'a', 'b']
    """
    out, i = [], 0
    while i < len(syms):
        if i + 1 < len(syms) and syms[i] == a and syms[i + 1] == b:
            out.append(new)
            i += 2
        else:
            out.append(syms[i])
            i += 1
    return out


def encode_word(
    word: str,
    ranks: Mapping[tuple[str, str], int],
    *,
    vocab: Mapping[str, int] | None = None,
    unk_token: str | None = None,
    continuing_subword_prefix: str | None = None,
    end_of_word_suffix: str | None = None,
) -> list[str]:
    """Encode one pre-token by merge rank (GPT-2 ``bpe()``): merge the best-ranked pair everywhere, repeat.

    Chars missing from ``vocab`` (when given) become ``unk_token``, or are dropped when it is None (HF).

    >>> encode_word("abab", {("a", "b"): 0, ("ab", "ab"): 1})
    ['abab']
    >>> encode_word("xay", {}, vocab={"a": 0, "<unk>": 1}, unk_token="<unk>")
    ['<unk>', 'a', '<unk>']
    """
    prefix, suffix = continuing_subword_prefix or "", end_of_word_suffix or ""
    syms: list[str] = []
    for i, ch in enumerate(word):
        s = ("" if i == 0 else prefix) + ch + (suffix if i == len(word) - 1 else "")
        if vocab is None or s in vocab:
            syms.append(s)
        elif unk_token is not None:
            syms.append(unk_token)
    while len(syms) > 1:
        best = min(zip(syms, syms[1:]), key=lambda p: ranks.get(p, float("inf")))
        if best not in ranks:
            break
        a, b = best
        right = b[len(prefix) :] if prefix and b.startswith(prefix) else b
        syms = merge_symbols(syms, a, b, a + right)
    return syms
