"""The statistics of ``subword compare``: intervals tested as statistics, the level, significance, "best".

Coverage: synthetic texts whose true tokens-per-word is known (lines independent, or correlated in runs
like paragraphs), each compared many times with a different seed; the share of 95% intervals that
contain the truth must be near 0.95 for the block bootstrap that compare runs, and the per-line
bootstrap's undercoverage on the same runs is shown. The level, the sign handling of ``significant``
and the direction of every metric's "best" are each pinned by a test that fails if they change.
"""

from __future__ import annotations

import numpy as np
import pytest

import subword
from subword import BPE, Tokenizer, WordPiece
from subword.compare import bootstrap
from subword.compare.metrics import METRICS, best
from subword.pre_tokenizers import Whitespace

# ==== coverage on synthetic text ====
# Measured with more simulations (1,000 each): runs of 5 lines, 20,000 lines: 0.935 (per line: 0.53);
# runs of 8: 0.926; runs of 20: 0.921; independent lines: 0.949. Slightly under 0.95 when lines come in
# runs; far closer than resampling single lines.

TRUE_RATIO = 1.3  # tokens per word: the mean of the per-run rate below


def _text(rng: np.random.Generator, n: int, mean_run: float) -> tuple[np.ndarray, np.ndarray]:
    """Per line, (tokens, words): runs of lines (geometric lengths, mean ``mean_run``; 1 = independent
    lines) share a tokens-per-word rate drawn from Gamma(4, 1.3 / 4), whose mean 1.3 is the true ratio."""
    lengths = rng.geometric(1 / mean_run, size=n) if mean_run > 1 else np.ones(n, np.int64)
    run = np.repeat(np.arange(len(lengths)), lengths)[:n]
    rate = rng.gamma(4.0, TRUE_RATIO / 4.0, size=run[-1] + 1)[run]
    words = rng.poisson(10, size=n) + 1
    return rng.poisson(rate * words), words


def _coverage(n: int, mean_run: float, sims: int, replicates: int, per_line: bool = False) -> float:
    """The share of 95% intervals of sum(tokens) / sum(words) that contain :data:`TRUE_RATIO`: from compare's
    block bootstrap, or (``per_line``) from resampling single lines."""
    rng = np.random.default_rng(2024)
    hits = 0
    for sim in range(sims):
        tokens, words = _text(rng, n, mean_run)
        if per_line:  # n lines drawn with replacement (the weights of block_lines=1, drawn faster)
            drawn = np.random.default_rng(sim).integers(0, n, size=(replicates, n))
            ratios = tokens[drawn].sum(axis=1) / words[drawn].sum(axis=1)
        else:
            sums, _ = bootstrap.replicate_sums({"tokens": tokens, "words": words}, bootstrap.block_length(n),
                                               replicates, seed=sim)
            ratios = sums["tokens"] / sums["words"]
        lo, hi = bootstrap.interval(ratios)
        hits += lo <= TRUE_RATIO <= hi
    return hits / sims


# About a MB of text in paragraph-like runs of 5 lines: blocks of 141 lines.
N, RUN = 20_000, 5


def test_block_bootstrap_covers_95_percent_when_lines_come_in_runs():
    coverage = _coverage(N, RUN, sims=500, replicates=300)
    assert 0.92 <= coverage <= 0.98, coverage


def test_per_line_bootstrap_undercovers_the_same_runs():
    coverage = _coverage(N, RUN, sims=60, replicates=100, per_line=True)
    assert coverage < 0.8, coverage  # lines in runs are not independent draws: intervals too narrow


def test_block_bootstrap_covers_95_percent_on_independent_lines():
    coverage = _coverage(N, 1, sims=500, replicates=300)
    assert 0.92 <= coverage <= 0.98, coverage


# ==== the level, the blocks, the weights ====


def test_level_is_95_percent_and_named_in_the_json():
    assert bootstrap.LEVEL == 0.95
    lo, hi = bootstrap.interval(np.arange(100_001.0))  # uniform on 0..100000: 2.5% and 97.5% points
    assert (lo, hi) == pytest.approx((2_500.0, 97_500.0))
    lines = ["the cat sat", "on the mat", "a cat"] * 20
    doc = subword.compare([_chars(lines), _words(lines)], lines, bootstrap_replicates=50).doc
    assert doc["options"]["confidence"] == doc["options"]["bootstrap"]["level"] == 0.95
    assert doc["options"]["bootstrap"]["block_lines"] == bootstrap.block_length(len(lines)) == 7
    assert doc["options"]["bootstrap"]["blocks"] == 9


def test_block_length_is_the_square_root_rule():
    for n in (1, 2, 3, 4, 99, 100, 101, 2_000, 394_899):
        ell = bootstrap.block_length(n)
        assert ell * ell <= n < (ell + 1) ** 2 or (n < 1 and ell == 1)


def test_block_weights_draw_blocks_uniformly_with_replacement():
    blocks, reps = 50, 4000
    w = bootstrap.block_weights(blocks, reps, seed=3)
    assert (w.sum(axis=1) == blocks).all() and (w >= 0).all()
    # Multinomial(b, 1/b): each count has mean 1 and variance 1 - 1/b; two blocks covary -1/b.
    assert abs(w.mean() - 1) < 1e-12
    assert abs(w.var() - (1 - 1 / blocks)) < 0.03
    assert abs(np.mean((w[:, 0] - 1) * (w[:, 1] - 1)) + 1 / blocks) < 0.05
    assert (bootstrap.block_weights(blocks, 10, seed=3) == w[:10]).all()  # seeded
    assert (bootstrap.block_weights(blocks, 10, seed=4) != w[:10]).any()


def test_replicate_sums_are_sums_over_the_drawn_blocks():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 100, 23)
    sums, w = bootstrap.replicate_sums({"x": x}, block_lines=5, replicates=30, seed=9)
    blocks = [x[i:i + 5].sum() for i in range(0, 23, 5)]
    assert sums["x"].tolist() == [float(np.dot(row, blocks)) for row in w]


def test_type_count_sums_equal_a_dense_brute_force():
    from scipy import sparse

    rng = np.random.default_rng(5)
    counts = rng.integers(0, 4, (12, 40)) * (rng.random((12, 40)) < 0.3)
    w = bootstrap.block_weights(12, 25, seed=2)
    got = bootstrap.type_count_sums(sparse.csr_matrix(counts.astype(float)), w, 2.5, batch=7)
    for r in range(25):
        c = [sum(w[r, b] * counts[b, v] for b in range(12)) for v in range(40)]
        want = [sum(x > 0 for x in c), sum(c), sum(x ** 2.5 for x in c), sum(x * np.log2(x) for x in c if x > 0)]
        assert got[r] == pytest.approx(want, rel=1e-6), r


# ==== significance: both signs ====


def test_significant_means_the_interval_excludes_zero_on_either_side():
    assert bootstrap.significant((0.1, 0.3)) and bootstrap.significant((-0.3, -0.1))
    assert not bootstrap.significant((-0.1, 0.3)) and not bootstrap.significant((0.0, 0.3))
    assert not bootstrap.significant((None, None))


def _chars(lines):
    alphabet = sorted({c for line in lines for c in line})
    return Tokenizer(BPE({c: i for i, c in enumerate(alphabet)}, []))


def _words(lines):
    words = sorted({w for line in lines for w in line.split()})
    return Tokenizer(WordPiece({"[UNK]": 0, **{w: i + 1 for i, w in enumerate(words)}}), pre_tokenizer=Whitespace())


def test_a_difference_is_significant_in_both_orders():
    lines = ["the cat sat on the mat", "a cat", "mat mat mat the end"] * 10
    chars, words = _chars(lines), _words(lines)
    one = subword.compare([chars, words], lines, names=["c", "w"], bootstrap_replicates=200).pairwise[0]
    two = subword.compare([words, chars], lines, names=["w", "c"], bootstrap_replicates=200).pairwise[0]
    for metric in ("tokens", "tokens_per_word", "chars_per_token"):
        d1, d2 = one["differences"][metric], two["differences"][metric]
        assert d1["value"] == pytest.approx(-d2["value"]) and d1["value"] != 0
        assert d1["significant"] and d2["significant"], metric
        assert (d1["ci"][0] > 0) == (d1["value"] > 0) and (d2["ci"][1] < 0) == (d2["value"] < 0)


# ==== the direction of "best" ====

#: Which value is better, from the metrics' sources (fertility and sequence length: fewer tokens; compression
#: and efficiency: more per token; losslessness; fewer unknown and byte tokens; speed). Stated here on its
#: own, so that a change to the table in ``metrics.py`` fails.
DIRECTIONS = {
    "tokens": "lower", "tokens_per_word": "lower", "tokens_per_whitespace_word": "lower", "continued_words": "lower",
    "chars_per_token": "higher", "bytes_per_token": "higher", "normalized_sequence_length": "lower",
    "vocab_utilization": None, "type_token_ratio": None, "renyi_efficiency": "higher",
    "shannon_efficiency": "higher", "lossless_lines": "higher", "unk_char_rate": "lower",
    "byte_fallback_rate": "lower", "mb_per_s": "higher",
}


def test_every_metric_has_its_direction():
    assert set(DIRECTIONS) == set(METRICS)
    for metric, direction in DIRECTIONS.items():
        expected = {"higher": "b", "lower": "a", None: None}[direction]
        assert best({metric: [1.0, 2.0]}, ["a", "b"])[metric] == expected, metric
        assert best({metric: [2.0, 1.0]}, ["a", "b"])[metric] == {"a": "b", "b": "a", None: None}[expected], metric
        assert best({metric: [1.0, 1.0]}, ["a", "b"])[metric] is None  # a tie marks nobody


def test_best_in_a_real_comparison_and_its_marks_in_the_views():
    lines = ["the cat sat on the mat", "a cat", "mat mat mat the end"] * 10
    result = subword.compare([_chars(lines), _words(lines)], lines, names=["chars", "words"], bootstrap_replicates=0)
    b = result.doc["best"]
    # One token per word beats one per character on every count; the words tokenizer round-trips
    # (tokens joined by spaces are the line), the characters one does not.
    for metric in ("tokens", "tokens_per_word", "tokens_per_whitespace_word", "continued_words", "chars_per_token",
                   "bytes_per_token", "normalized_sequence_length", "lossless_lines"):
        assert b[metric] == "words", metric
    assert b["vocab_utilization"] is None and b["type_token_ratio"] is None
    row = next(line for line in result.render_terminal().splitlines() if line.startswith("tokens "))
    assert row.split()[-1] == "*" and row.index("*") > row.index(str(result.metrics["words"]["tokens"]))
    html = result.to_html()
    cell = html.split('data-metric="tokens"')[2]  # the second tokenizer's cell
    assert "★" in cell.split("</td>")[0] and "★" not in html.split('data-metric="tokens"')[1].split("</td>")[0]
