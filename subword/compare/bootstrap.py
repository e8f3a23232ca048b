"""The paired bootstrap over lines: resampling weights shared by every tokenizer and metric.

A replicate draws ``n`` lines with replacement from the ``n`` input lines (Efron's bootstrap); its
weights say how often each line was drawn. Every metric of every tokenizer is recomputed on the
*same* replicates, so the difference between two tokenizers is bootstrapped paired (the lines are
the unit; their tokenizations are not independent). Intervals are percentile intervals
(2.5th and 97.5th percentiles of the replicate values). Replicates come in batches, so memory
stays ``batch x n``.

The counts are drawn in two steps, both pure functions of ``(seed, r)``, so any replicate can be
drawn alone, on any thread, with the same result. (1) Every line gets a Poisson(1) count by inverse
CDF from a 32-bit uniform: line ``l`` takes half ``l % 2`` (low 32 bits first) of output ``l // 2``
of SplitMix64 started at ``key = mix(mix(s) ^ r)``, and its count is how many thresholds of
:data:`POISSON` (``round(2^32 P(X < k))``, k = 1..12) that uniform reaches. (2) The total ``S`` is
corrected to exactly ``n`` from a second stream (SplitMix64 started at ``mix(key ^ CORRECTION)``):
``n - S`` more uniform draws are added, or ``S - n`` of the ``S`` draws are removed, a uniform
subset of the draw positions chosen by Floyd's algorithm. Given ``S``, Poisson counts are
multinomial, and adding independent draws or keeping a uniform subset of exchangeable draws keeps
them so: the counts are multinomial(n; 1/n, ...) up to the 2^-32 rounding of the Poisson CDF.
:func:`replicate_counts` is the numpy reference; the Rust core (``rust/src/compare/resample.rs``)
draws the same counts, vectorised and in parallel. (Earlier generators, numpy's PCG64 and then n
scattered SplitMix64 draws, gave other replicates; intervals move by their Monte Carlo noise only.)

>>> w = np.concatenate(list(weights(5, 10, seed=0)))
>>> w.shape, w.sum(axis=1).tolist() == [5.0] * 10
((10, 5), True)
>>> [round(x, 6) for x in interval(np.arange(101.0))]
[2.5, 97.5]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["weights", "replicate_counts", "seed64", "interval", "significant", "BATCH", "POISSON"]

#: Replicates drawn together, at most: (BATCH x n) weights...
BATCH = 50
#: ...and at most this many weights in a batch (64 MB of float64), so memory stays flat for long inputs.
BATCH_CELLS = 1 << 23

_MASK = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15
_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
#: Mixed into a replicate's key to start its correction stream.
CORRECTION = 0x5851F42D4C957F2D
#: Poisson(1) inverse CDF on 32-bit uniforms: ``POISSON[k - 1] == round(2**32 * P(X < k))``, k = 1..12.
POISSON = np.array([0x5E2D58D9, 0xBC5AB1B1, 0xEB715E1E, 0xFB239797, 0xFF1025F6, 0xFFD90F3C, 0xFFFA8B72,
                    0xFFFF540C, 0xFFFFED1F, 0xFFFFFE21, 0xFFFFFFD5, 0xFFFFFFFC], dtype=np.uint32)


def _finalize_int(z: int) -> int:
    z = ((z ^ (z >> 30)) * _M1) & _MASK
    z = ((z ^ (z >> 27)) * _M2) & _MASK
    return z ^ (z >> 31)


def _finalize(z: np.ndarray) -> np.ndarray:  # uint64 arrays wrap on overflow, as the Rust does
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_M1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_M2)
    return z ^ (z >> np.uint64(31))


def seed64(seed: int) -> int:
    """The seed as the generator takes it (two's complement, 64 bits).

    >>> seed64(-1) == 2**64 - 1, seed64(5)
    (True, 5)
    """
    return int(seed) & _MASK


def _mix(z: int) -> int:
    return _finalize_int((z + _GAMMA) & _MASK)


def _outputs(key: int, count: int) -> list[int]:
    """Outputs ``0..count`` of SplitMix64 started at ``key``."""
    return [_finalize_int((key + _GAMMA * (i + 1)) & _MASK) for i in range(count)]


def replicate_counts(n: int, seed: int, r: int) -> np.ndarray:
    """How often each of ``n`` lines is drawn in replicate ``r`` (numpy reference of the core's draws).

    >>> c = replicate_counts(10, seed=0, r=3); int(c.sum()), c.shape
    (10, (10,))
    """
    if n >= 1 << 32:
        raise ValueError(f"at most 2^32 - 1 lines can be resampled, got {n}")
    key = _mix(_mix(seed64(seed)) ^ r)
    # Step 1: a Poisson(1) count per line from the halves of SplitMix64 outputs (uint64 arrays wrap).
    with np.errstate(over="ignore"):
        x = _finalize(np.uint64(key) + np.uint64(_GAMMA) * np.arange(1, (n + 1) // 2 + 1, dtype=np.uint64))
    u = x.astype("<u8").view("<u4")[:n]
    counts = np.searchsorted(POISSON, u, side="right").astype(np.int64)
    # Step 2: add n - S uniform draws, or remove a uniform subset of S - n of the S draws.
    total = int(counts.sum())
    extra = _outputs(_mix(key ^ CORRECTION), abs(total - n))
    if total < n:
        np.add.at(counts, [(x * n) >> 64 for x in extra], 1)
    elif total > n:
        chosen: set[int] = set()  # Floyd's algorithm: m = total - n distinct positions of 0..total
        for x, j in zip(extra, range(n, total)):
            t = (x * (j + 1)) >> 64
            chosen.add(j if t in chosen else t)
        np.subtract.at(counts, np.searchsorted(np.cumsum(counts), sorted(chosen), side="right"), 1)
    return counts


def _core_weights() -> Any:
    try:
        from subword import _core
    except ImportError:
        return None
    return getattr(_core, "bootstrap_weights", None)


def weights(n: int, replicates: int, seed: int, batch: int = BATCH) -> Iterator[np.ndarray]:
    """Yields ``(b, n)`` arrays of resampling counts, ``replicates`` rows in all.

    Args:
        n: Lines in the input.
        replicates: Bootstrap replicates.
        seed: Seed of the generator (same seed, same replicates).
        batch: Rows per yielded array.
    """
    if n >= 1 << 32:
        raise ValueError(f"at most 2^32 - 1 lines can be resampled, got {n}")
    fast = _core_weights()
    batch = max(1, min(batch, BATCH_CELLS // max(n, 1)))
    done = 0
    while done < replicates:
        b = min(batch, replicates - done)
        if fast is not None:
            yield np.frombuffer(fast(n, seed64(seed), done, b), dtype="<f8").reshape(b, n)
        else:
            yield np.stack([replicate_counts(n, seed, done + r) for r in range(b)]).astype(np.float64)
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
