"""The block bootstrap of a comparison: which lines are resampled together, and what the intervals mean.

Lines of a text are not independent: a paragraph, a document or a chapter shares its vocabulary, its
names and its style. A bootstrap that resamples single lines treats n dependent lines as n independent
draws, and its intervals come out too narrow. Here the n lines are cut into b consecutive blocks of
``block_length(n)`` lines (the last one may be shorter), and a replicate draws b blocks with
replacement: the non-overlapping block bootstrap (Carlstein 1986; the moving-block bootstrap of Künsch
1989 and the stationary bootstrap of Politis and Romano 1994 are its overlapping relatives). What
happens inside a block keeps its dependence; blocks are taken as independent.

The block length is ℓ = ⌊√n⌋ lines, so there are about √n blocks as well: 2,000 lines give 44 blocks
of 44 lines, 20,000 lines 141 of 141, 400,000 lines 632 of 632. Both grow with n, which the block
bootstrap needs (the bias from cutting dependence at block edges shrinks like 1/ℓ, the noise of the
variance estimate like ℓ/n). The order n^(1/3) minimises the error of a variance estimate under weak,
short-range dependence (Hall, Horowitz and Jing 1995); text depends over paragraphs and sections, and
the longer √n blocks keep the 95% intervals near 95% when lines come in runs of up to a few dozen
(``tests/test_compare_bootstrap.py`` measures it on 20,000 lines in runs of 5: 0.946, where resampling
single lines gives 0.48).
Dependence that reaches further than a block (a whole book in one style, then another) is not
captured: the intervals then understate the uncertainty.

Every metric is a function of sums over lines (the ratio metrics) or of the token type counts (the
distribution metrics), so a replicate never revisits the lines: the per-block sums are computed once,
and the replicates are ``weights @ block_sums``, a (replicates x blocks) matrix of how often each block
was drawn times a (blocks x columns) matrix. The type counts are a sparse (blocks x types) matrix and
are resampled the same way (:func:`type_count_sums`).

Intervals are percentile intervals at :data:`LEVEL`: the 2.5th and 97.5th percentiles of the replicate
values. A difference between two tokenizers is bootstrapped paired (both are recomputed on the same
replicates), and it is :func:`significant` when its interval excludes 0.

>>> block_length(20_000), block_starts(7, 3).tolist()
(141, [0, 3, 6])
>>> w = block_weights(4, 1000, seed=0); w.shape, bool((w.sum(axis=1) == 4).all())
((1000, 4), True)
>>> [round(x, 6) for x in interval(np.arange(1001.0))]
[25.0, 975.0]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["LEVEL", "block_length", "block_starts", "block_sums", "block_weights", "replicate_sums", "interval",
           "significant", "type_count_sums"]

#: The confidence level of every interval (named in the JSON as ``options.confidence``).
LEVEL = 0.95


def block_length(n: int) -> int:
    """ℓ, the lines per block for ``n`` lines: ⌊√n⌋ (at least 1).

    >>> [block_length(n) for n in (1, 3, 4, 2_000, 400_000)]
    [1, 1, 2, 44, 632]
    """
    return max(1, math.isqrt(max(n, 0)))


def block_starts(n: int, length: int) -> np.ndarray:
    """The first line of each block of ``length`` lines, for ``n`` lines."""
    return np.arange(0, max(n, 1), max(length, 1), dtype=np.int64)


def block_sums(column: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Per-line values summed per block (``column`` holds one value per line, or a row per line).

    >>> block_sums(np.array([1, 2, 3, 4, 5]), np.array([0, 2, 4])).tolist()
    [3.0, 7.0, 5.0]
    """
    column = np.asarray(column)
    if column.dtype.kind not in "iuf":  # booleans (a line round-trips or not) are counted as integers
        column = column.astype(np.int64)
    return np.add.reduceat(column, starts, axis=0).astype(np.float64)  # exact: integer sums, then one cast


def block_weights(blocks: int, replicates: int, seed: int) -> np.ndarray:
    """How often each of ``blocks`` blocks is drawn in each replicate: ``(replicates, blocks)``, rows summing to ``blocks``.

    Replicate r draws ``blocks`` block indices uniformly with replacement (numpy's PCG64 generator
    seeded with ``seed``): Efron's resampling, of blocks.
    """
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, blocks, size=(replicates, blocks))
    flat = (draws + (np.arange(replicates) * blocks)[:, None]).ravel()
    return np.bincount(flat, minlength=replicates * blocks).reshape(replicates, blocks).astype(np.float64)


def replicate_sums(columns: Mapping[str, np.ndarray], block_lines: int, replicates: int,
                   seed: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Each per-line column's sum in every replicate, and the block weights the replicates drew.

    Args:
        columns: Per-line values by name, all of the same length n.
        block_lines: Lines per block (:func:`block_length`; 1 resamples single lines).
        replicates: How many replicates.
        seed: Seed of :func:`block_weights`.

    Returns:
        ``({name: (replicates,) sums}, weights)``: ``weights @ block_sums`` per column, and the
        ``(replicates, blocks)`` weights (the type counts are resampled with the same ones).

    >>> sums, w = replicate_sums({"x": np.ones(10)}, block_lines=3, replicates=5, seed=1)
    >>> w.shape, sorted(set(sums["x"].tolist())) <= [9.0, 10.0, 11.0, 12.0]
    ((5, 4), True)
    """
    names = list(columns)
    n = len(columns[names[0]]) if names else 0
    starts = block_starts(n, block_lines)
    weights = block_weights(len(starts), replicates, seed)  # (replicates, blocks)
    per_block = np.stack([block_sums(columns[k], starts) for k in names], axis=1) if names \
        else np.zeros((len(starts), 0))  # (blocks, columns)
    return dict(zip(names, (weights @ per_block).T)), weights


def interval(values: np.ndarray, level: float = LEVEL) -> tuple[float | None, float | None]:
    """The percentile interval of bootstrap values at ``level`` (non-finite replicates are left out).

    >>> interval(np.array([np.nan, np.nan]))
    (None, None)
    """
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return None, None
    tail = (1.0 - level) / 2 * 100
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return float(lo), float(hi)


def significant(ci: tuple[float | None, float | None]) -> bool:
    """Whether an interval of a difference excludes zero, on either side (the difference is outside the noise).

    >>> significant((0.1, 0.3)), significant((-0.3, -0.1)), significant((-0.1, 0.3)), significant((None, None))
    (True, True, False, False)
    """
    lo, hi = ci
    if lo is None or hi is None:
        return False
    return lo > 0 or hi < 0


def type_count_sums(counts: Any, weights: np.ndarray, alpha: float, batch: int = 4096) -> np.ndarray:
    """Per replicate, four sums over the resampled token type counts c = ``weights @ counts``.

    Args:
        counts: How often each type occurs in each block, a scipy sparse matrix (blocks x types).
        weights: Block weights, ``(replicates, blocks)`` (:func:`block_weights`).
        alpha: The Rényi order.
        batch: Types resampled at a time (memory stays ``batch x replicates``).

    Returns:
        ``(replicates, 4)``: types with c > 0, sum c, sum c^alpha, sum c log2 c (the inputs of
        :func:`subword.compare.metrics.distribution_metrics`).

    The product runs in float32 (half the memory traffic of float64): the counts are whole numbers, exact
    up to 2^24 per type and replicate, and the sums are kept in float64; a replicate is a Monte Carlo
    draw, so rounding beyond that is far below its noise. (The point values are computed exactly from
    the counts themselves.)

    >>> from scipy import sparse
    >>> c = sparse.csr_matrix(np.array([[2.0, 0.0], [1.0, 1.0]]))     # 2 blocks, 2 types
    >>> [[round(float(x), 6) for x in row] for row in type_count_sums(c, np.array([[1.0, 1.0], [2.0, 0.0]]), 2.0)]
    [[2.0, 4.0, 10.0, 4.754888], [1.0, 4.0, 16.0, 8.0]]
    """
    by_type = counts.T.tocsr().astype(np.float32)  # (types, blocks): a type's row adds the rows of its blocks
    by_type = by_type[np.flatnonzero(np.diff(by_type.indptr))]  # types that never occur cost nothing
    weights_t = np.ascontiguousarray(weights.T, dtype=np.float32)  # (blocks, replicates)
    out = np.zeros((weights.shape[0], 4))
    for first in range(0, by_type.shape[0], batch):
        c = by_type[first:first + batch] @ weights_t  # (types, replicates), whole numbers
        powered = c * c * np.sqrt(c) if alpha == 2.5 else np.power(c, np.float32(alpha))
        out[:, 0] += np.count_nonzero(c, axis=0)
        out[:, 1] += c.sum(axis=0, dtype=np.float64)
        out[:, 2] += powered.sum(axis=0, dtype=np.float64)
        out[:, 3] += (c * np.log2(np.maximum(c, np.float32(1)))).sum(axis=0, dtype=np.float64)  # 0 log 0 = 0
    return out
