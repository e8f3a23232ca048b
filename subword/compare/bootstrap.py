"""The paired bootstrap over lines: resampling weights shared by every tokenizer and metric.

A replicate draws ``n`` lines with replacement from the ``n`` input lines (Efron's bootstrap); its
weights say how often each line was drawn. Every metric of every tokenizer is recomputed on the
*same* replicates, so the difference between two tokenizers is bootstrapped paired (the lines are
the unit; their tokenizations are not independent). Intervals are percentile intervals
(2.5th and 97.5th percentiles of the replicate values). Replicates come in batches from one
seeded generator, so a run is reproducible and memory stays ``batch x n``.

>>> w = np.concatenate(list(weights(5, 10, seed=0)))
>>> w.shape, w.sum(axis=1).tolist() == [5.0] * 10
((10, 5), True)
>>> [round(x, 6) for x in interval(np.arange(101.0))]
[2.5, 97.5]
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

__all__ = ["weights", "interval", "significant", "BATCH"]

#: Replicates drawn together, at most: (BATCH x n) weights...
BATCH = 50
#: ...and at most this many weights in a batch (32 MB of float64), so memory stays flat for long inputs.
BATCH_CELLS = 1 << 22


def weights(n: int, replicates: int, seed: int, batch: int = BATCH) -> Iterator[np.ndarray]:
    """Yields ``(b, n)`` arrays of resampling counts, ``replicates`` rows in all.

    Args:
        n: Lines in the input.
        replicates: Bootstrap replicates.
        seed: Seed of the generator (same seed, same replicates).
        batch: Rows per yielded array.
    """
    rng = np.random.default_rng(seed)
    batch = max(1, min(batch, BATCH_CELLS // max(n, 1)))
    done = 0
    while done < replicates:
        b = min(batch, replicates - done)
        # 32-bit draws are about twice as fast as 64-bit ones; offsets make one bincount serve b rows.
        draws = rng.integers(0, n, size=(b, n), dtype=np.uint32).astype(np.int64)
        draws += (np.arange(b, dtype=np.int64) * n)[:, None]
        yield np.bincount(draws.ravel(), minlength=b * n).reshape(b, n).astype(np.float64)
        done += b


def interval(values: np.ndarray, level: float = 0.95) -> tuple[float | None, float | None]:
    """The percentile interval of bootstrap values (non-finite replicates are left out).

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
    """Whether an interval of a difference excludes zero (the difference is outside the noise).

    >>> significant((0.1, 0.3)), significant((-0.1, 0.3)), significant((None, None))
    (True, False, False)
    """
    lo, hi = ci
    if lo is None or hi is None:
        return False
    return lo > 0 or hi < 0
