"""``subword study``'s small pieces: -t and --budget grammars, rank correlation, verdict, bytes budget."""

from __future__ import annotations

import math

import pytest

from subword.study import StudyError, parse_budget, parse_spec
from subword.study.report import _verdict, spearman, spearman_interval, spearman_p_value
from subword.study.runner import StudyPlan, _lengths


@pytest.mark.parametrize("text, name, options", [
    ("bpe:8000", "bpe-8000", {"vocab_size": 8000}),
    ("wordpiece:4k:min_frequency=2", "wordpiece-4k", {"vocab_size": 4000, "min_frequency": 2}),
    ("unigram:500:compat=hf", "unigram-500-hf", {"vocab_size": 500, "compat": "hf"}),
    ("unigram:500", "unigram-500", {"vocab_size": 500, "compat": "hf"}),  # HF's rules: a tokenizer.json
    ("bpe:300:special-tokens=[PAD],[MASK]", "bpe-300", {"vocab_size": 300, "special_tokens": ["[PAD]", "[MASK]"]}),
], ids=lambda x: str(x))
def test_training_specs(text, name, options):
    spec = parse_spec(text)
    assert (spec.kind, spec.name, spec.options) == ("train", name, options)


def test_files_and_tiktoken_names(tmp_path):
    f = tmp_path / "mine" / "tokenizer.json"
    f.parent.mkdir()
    f.write_text("{}")
    assert (parse_spec(str(f)).kind, parse_spec(str(f)).name) == ("file", "mine")
    assert parse_spec("cl100k_base").kind == "tiktoken"


@pytest.mark.parametrize("text, why", [
    ("bpe", "ALGORITHM:VOCAB_SIZE"), ("bpe8000", "ALGORITHM:VOCAB_SIZE"), ("sentencepiece:8000", "unknown algorithm"),
    ("bpe:0", "VOCAB_SIZE"), ("bpe:8000:minfreq", "not key=value"), ("no/such/file.json", "no such file"),
    ("bpe:8000:min_frequncy=2", "did you mean 'min_frequency'"), ("wordpiece:300:compat=spm", "compat=spm"), ("unigram:300:compat=spm", "tokenizer.json"),
])
def test_bad_specs_are_named(text, why):
    with pytest.raises(StudyError) as err:
        parse_spec(text)
    assert text in str(err.value) and why in str(err.value)


@pytest.mark.parametrize("text, kind, value", [
    ("tokens:5M", "tokens", 5_000_000), ("bytes:2.5k", "bytes", 2500), ("steps:10", "steps", 10),
    ("time:90s", "time", 90.0), ("time:2h", "time", 7200.0),
])
def test_budgets(text, kind, value):
    b = parse_budget(text)
    assert (b.kind, b.value) == (kind, value)


@pytest.mark.parametrize("text", ["tokens", "tokens:", "tokens:-3", "flops:5", "time:soon", "steps:0"])
def test_bad_budgets(text):
    with pytest.raises(StudyError, match="tokens:N"):
        parse_budget(text)


def test_bytes_budget_gives_each_model_the_same_text():
    plan = StudyPlan(tokenizers=["a", "b"], budget="bytes:1M")
    assert _lengths(plan, parse_budget(plan.budget), 4.0) == {"tokens": 250_000}
    assert _lengths(plan, parse_budget(plan.budget), 3.0) == {"tokens": 333_334}


def test_spearman_matches_scipy():
    stats = pytest.importorskip("scipy.stats")
    import numpy as np

    rng = np.random.default_rng(0)
    for _ in range(20):
        a = rng.integers(0, 5, 7).astype(float).tolist()  # ties included
        b = rng.normal(size=7).tolist()
        want = stats.spearmanr(a, b).statistic
        got = spearman(a, b)
        assert (got is None and np.isnan(want)) or got == pytest.approx(want)


def test_spearman_interval_covers_and_narrows():
    lo, hi = spearman_interval([1, 2, 3, 4, 5, 6, 7, 8], [2, 1, 4, 3, 6, 5, 8, 7])
    assert lo <= spearman([1, 2, 3, 4, 5, 6, 7, 8], [2, 1, 4, 3, 6, 5, 8, 7]) <= hi and lo > 0
    assert spearman_interval([1, 2], [2, 1]) == [None, None]


def _tok(name, values):
    import numpy as np

    return {"name": name, "extrinsic": {"pll_bits_per_byte": {"mean": float(np.mean(values)), "min": min(values),
                                                              "max": max(values), "seeds": values}}}


def test_verdict_against_the_spread():
    clear = _verdict([_tok("a", [2.0, 2.1]), _tok("b", [3.0, 3.05])], ["pll_bits_per_byte"])[0]
    assert (clear["best"], clear["exceeds_spread"]) == ("a", True)
    close = _verdict([_tok("a", [2.0, 2.5]), _tok("b", [2.3, 2.4])], ["pll_bits_per_byte"])[0]
    assert (close["best"], close["exceeds_spread"]) == ("a", False)
    one = _verdict([_tok("a", [2.0]), _tok("b", [2.0])], ["pll_bits_per_byte"])[0]
    assert one["tied"] and one["best"] is None and one["exceeds_spread"] is None


@pytest.mark.parametrize("module", ["subword.study", "subword.study.spec", "subword.study.runner", "subword.study.report"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {module}"


def test_permutation_p_value_against_its_definition():
    """Exact: 4 points in perfect order -> 2 of 24 orderings reach |rho| = 1; matches scipy's exact test."""
    assert spearman_p_value([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(2 / 24)
    assert spearman_p_value([1, 2, 3, 4], [1, 1, 1, 1]) is None
    stats = pytest.importorskip("scipy.stats")
    a, b = [1, 2, 3, 4, 5, 6, 7], [2, 1, 4, 3, 7, 5, 6]
    want = stats.permutation_test((b,), lambda y: stats.spearmanr(a, y).statistic, permutation_type="pairings",
                                  n_resamples=float("inf")).pvalue
    assert spearman_p_value(a, b) == pytest.approx(want)


# ==== the verdict against the measurement's noise ====


def _cloze(name, values, words):
    t = _tok(name, values)
    t["extrinsic"] = {"cloze_accuracy": {**t["extrinsic"]["pll_bits_per_byte"], "words": words}}
    return t


def _results(name, seeds_bits, line_bytes):
    """Hand-made results: per seed, the bits of each held-out line."""
    return [{"name": name, "seed": k, "scores": {"per_line": {"bytes": line_bytes, "pll_bits_per_byte": bits}}}
            for k, bits in enumerate(seeds_bits)]


def _pll_tok(name, seeds_bits, line_bytes):
    import numpy as np

    return _tok(name, [float(np.sum(b)) / sum(line_bytes) for b in seeds_bits])


def test_tiny_cloze_difference_with_zero_spread_is_within_noise():
    """0.0005 apart over 2000 words, seeds that agree (spread 0): the old rule said 'beyond the spread'."""
    v = _verdict([_cloze("a", [0.5005, 0.5005], 2000), _cloze("b", [0.5, 0.5], 2000)], ["cloze_accuracy"])[0]
    assert v["spread"] == 0 and v["exceeds_spread"] is True
    assert v["noise_se"] == pytest.approx(math.sqrt(0.50025 * 0.49975 * 2 / 2000))
    assert (v["best"], v["exceeds_noise"], v["beyond"], v["status"]) == ("a", False, False, "within noise")
    one = _verdict([_cloze("a", [0.5005], 2000), _cloze("b", [0.5], 2000)], ["cloze_accuracy"])[0]
    assert (one["beyond"], one["status"]) == (False, "within noise")


def test_large_cloze_difference_is_beyond_spread_and_noise():
    v = _verdict([_cloze("a", [0.3, 0.31], 1000), _cloze("b", [0.6, 0.61], 1000)], ["cloze_accuracy"])[0]
    assert (v["best"], v["exceeds_noise"], v["beyond"], v["status"]) == ("b", True, True, "beyond spread and noise")


def test_per_byte_noise_against_a_bootstrap_of_lines():
    """The delta-method SE of the paired ratio difference agrees with the spread of a bootstrap over lines."""
    import numpy as np

    from subword.study.report import noise_se

    rng = np.random.default_rng(1)
    line_bytes = rng.integers(20, 200, size=300).tolist()
    y = np.asarray(line_bytes, float)
    a = (y * rng.normal(2.0, 0.4, size=300)).tolist()
    b = (y * rng.normal(2.05, 0.4, size=300)).tolist()
    results = _results("a", [a], line_bytes) + _results("b", [b], line_bytes)
    se = noise_se("pll_bits_per_byte", {"name": "a"}, {"name": "b"}, results)
    idx = rng.integers(0, 300, size=(4000, 300))
    d = np.asarray(a) - np.asarray(b)
    boot = d[idx].sum(1) / y[idx].sum(1)
    assert se == pytest.approx(float(boot.std()), rel=0.08)


def test_per_byte_difference_beyond_noise_but_within_the_spread_is_not_beyond():
    import numpy as np

    rng = np.random.default_rng(2)
    line_bytes = [100] * 400
    base = rng.normal(200, 2, size=400)
    # Seeds far apart (spread 0.1 bits/byte), the tokenizers 0.05 apart with tiny per-line noise.
    a = [(base + 0).tolist(), (base + 10).tolist()]
    b = [(base + 5).tolist(), (base + 15).tolist()]
    toks = [_pll_tok("a", a, line_bytes), _pll_tok("b", b, line_bytes)]
    results = _results("a", a, line_bytes) + _results("b", b, line_bytes)
    v = _verdict(toks, ["pll_bits_per_byte"], results)[0]
    assert v["best"] == "a" and v["difference"] == pytest.approx(0.05)
    assert v["exceeds_noise"] is True and v["exceeds_spread"] is False
    assert (v["beyond"], v["status"]) == (False, "within spread")
    # The same seeds agreeing (spread 0) and the difference far beyond the noise: beyond.
    same = [base.tolist(), base.tolist()]
    worse = [(base + 5).tolist(), (base + 5).tolist()]
    v = _verdict([_pll_tok("a", same, line_bytes), _pll_tok("b", worse, line_bytes)], ["pll_bits_per_byte"],
                 _results("a", same, line_bytes) + _results("b", worse, line_bytes))[0]
    assert (v["beyond"], v["status"]) == (True, "beyond spread and noise")
    # A tiny per-byte difference with noisy lines and zero spread: within noise.
    noisy = rng.normal(200, 60, size=400)
    x, z = [noisy.tolist()] * 2, [(noisy[::-1] + 0.01).tolist()] * 2
    v = _verdict([_pll_tok("a", x, line_bytes), _pll_tok("b", z, line_bytes)], ["pll_bits_per_byte"],
                 _results("a", x, line_bytes) + _results("b", z, line_bytes))[0]
    assert v["spread"] == 0 and (v["beyond"], v["status"]) == (False, "within noise")


def test_terminal_verdict_line_says_within_noise_or_beyond():
    from subword.study.report import _how

    tiny = _verdict([_cloze("a", [0.5005, 0.5005], 2000), _cloze("b", [0.5, 0.5], 2000)], ["cloze_accuracy"])[0]
    big = _verdict([_cloze("a", [0.3, 0.31], 1000), _cloze("b", [0.6, 0.61], 1000)], ["cloze_accuracy"])[0]
    assert _how(tiny).endswith("within noise") and "noise 1.96 SE = " in _how(tiny)
    assert _how(big).endswith("beyond spread and noise")


def test_array_bootstrap_and_permutations_equal_one_spearman_call_each():
    """The interval and the p-value compute their replicates as arrays; they must equal calling
    :func:`spearman` once per replicate (ties included: resampling with replacement makes them)."""
    import itertools

    import numpy as np

    def interval_by_calls(a, b, replicates=2000, seed=0):
        picks = np.random.default_rng(seed).integers(0, len(a), size=(replicates, len(a)))
        values = [r for idx in picks if (r := spearman([a[i] for i in idx], [b[i] for i in idx])) is not None]
        return [float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))]

    def p_by_calls(a, b, orders):
        observed = spearman(a, b)
        return sum(abs(spearman(a, [b[i] for i in o])) >= abs(observed) - 1e-9 for o in orders) / len(orders)

    rng = np.random.default_rng(3)
    for n in (3, 5, 7):
        a = rng.integers(0, 4, size=n).astype(float).tolist()  # ties on purpose
        b = rng.normal(size=n).tolist()
        if spearman(a, b) is None:
            continue
        assert spearman_interval(a, b) == pytest.approx(interval_by_calls(a, b), abs=1e-12)
        assert spearman_p_value(a, b) == pytest.approx(p_by_calls(a, b, list(itertools.permutations(range(n)))))
    a, b = rng.normal(size=10).tolist(), rng.normal(size=10).tolist()  # random orderings beyond 8 points
    gen = np.random.default_rng(0)
    orders = [gen.permutation(10) for _ in range(300)]
    assert spearman_p_value(a, b, replicates=300) == pytest.approx(p_by_calls(a, b, orders))


def test_a_version_1_verdict_still_renders():
    from subword.study.report import _how

    old = {"measure": "pll_bits_per_byte", "difference": 0.3, "spread": 0.1, "exceeds_spread": True}
    assert _how(old) == "the difference 0.3000 exceeds the seeds' spread 0.1000"
    assert "unknown" in _how({**old, "spread": None, "exceeds_spread": None})
