"""Reproducible subsets of a corpus: the first N lines, or a uniform random sample of N lines.

The sample uses reservoir sampling (Vitter's Algorithm R): one pass, memory for N lines only, and
every line has the same chance ``N / total`` of being kept. Randomness comes from
``random.Random(seed)`` with integer draws only (``randrange``), so a seed gives the same sample
on every platform and Python version that keeps ``random``'s documented reproducibility.
The kept lines are returned in their original corpus order, not reservoir order, so the sample
reads like the corpus and does not depend on how the reservoir happened to be shuffled.
"""

from __future__ import annotations

import itertools
import logging
import random
from collections.abc import Iterable

__all__ = ["sample_lines", "first_lines"]

log = logging.getLogger(__name__)


def sample_lines(lines: Iterable[str], n: int, seed: int = 0) -> list[str]:
    """Returns a uniform random sample of ``n`` lines (all of them if there are fewer).

    Args:
        lines: Any iterable of lines; it is consumed once.
        n: How many lines to keep (non-negative).
        seed: Seed of the random choice; the same seed and input give the same sample.

    Returns:
        The sampled lines, in the order they appear in ``lines``.

    Raises:
        ValueError: ``n`` is negative or not an integer.

    >>> sample_lines(["a", "b", "c", "d", "e"], 2, seed=1) == sample_lines(["a", "b", "c", "d", "e"], 2, seed=1)
    True
    >>> len(sample_lines(map(str, range(1000)), 10, seed=7))
    10
    >>> sample_lines(["x", "y"], 5)
    ['x', 'y']
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"sample size must be a non-negative integer, not {n!r}")
    rng = random.Random(seed)
    reservoir: list[tuple[int, str]] = []
    if n == 0:
        return []
    seen = 0
    for i, line in enumerate(lines):
        seen = i + 1
        if i < n:
            reservoir.append((i, line))
            continue
        # Line i replaces a random slot with probability n / (i + 1).
        j = rng.randrange(i + 1)
        if j < n:
            reservoir[j] = (i, line)
    # How much of the corpus the sample stands for: users of big corpora need to see it (sentencepiece
    # drops the lines past input_sentence_size without saying so at the default log level).
    log.info("sampled %d of %d lines seen (reservoir, seed %d)", len(reservoir), seen, seed)
    reservoir.sort(key=lambda pair: pair[0])
    return [line for _, line in reservoir]


def first_lines(lines: Iterable[str], n: int) -> list[str]:
    """Returns the first ``n`` lines (a deterministic, cheap alternative to sampling).

    >>> first_lines(iter(["a", "b", "c"]), 2)
    ['a', 'b']
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"line count must be a non-negative integer, not {n!r}")
    return list(itertools.islice(lines, n))
