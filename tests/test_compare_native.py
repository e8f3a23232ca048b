"""The Rust reduction of ``subword compare`` (``subword.compare.native``) against the numpy reference.

Both must give identical :class:`~subword.compare.collect.Collected` arrays: per-line counts, type
tables, token ids, shared boundaries, lossless examples. Checked on the built-in corpus, on the
shared corpora when present, and on Unicode-rich lines, through tokenizers of every kind the
core runs (byte-level BPE, WordPiece, SentencePiece ``.model`` Unigram, HF-JSON SentencePiece
BPE with byte fallback, cl100k_base when a local rank file exists).
"""

from __future__ import annotations

import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from _compare_fixtures import SAMPLE_LINES, byte_level, sentencepiece_bpe, training_lines, wordpiece
from _corpora import CORPORA  # the shared corpora, or stand-ins from the built-in corpus
from subword.compare import native
from subword.compare.collect import CHUNK_CHARS, collect
from subword.compare.words import segments


UNICODE_LINES = SAMPLE_LINES + [
    "", "x 'em 's ’Ère l'amour can't ''em 'a'b 1'a rock'n'roll",
    "naïve café e\u0301 a\u0300\u0301b \u200b\u200dx 👩\u200d👩\u200d👧 🇫🇷🇩🇪 ✌🏽 #1 @user http://x.y/z?q=1",
    "3.14 1,000.5 U.S.A. a_b a-b 12:30 ٣٤٥ ๑๒๓",
    "Привет, мир! Γειά σου κόσμε. Բարեւ Გამარჯობა",
    "नमस्ते दुनिया। হ্যালো ਸਤਿ ਸ੍ਰੀ અકાલ ଓଡ଼ିଆ தமிழ் తెలుగు ಕನ್ನಡ മലയാളം සිංහල",
    "สวัสดีชาวโลก ສະບາຍດີ ཀུན་ ျမန္မာ ខ្មែរ ሰላም ދިވެހި ܫܠܡܐ",
    "日本語のテキストとカタカナ、ひらがな。한국어 텍스트 中文文本",
    "tabs\there\tand\u3000ideographic\u00a0nbsp\u2028sep\u2029para\x0bvt\x0cff\x1cfs",
    "line with CR\r", "\r", "  leading and trailing  ", "\t", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛 ﬁﬂ ǅ",
    "\U0001F600\U0001F3FB text \u0301lonely mark", "x" * 300 + " " + "ab" * 200,
]


@lru_cache(maxsize=1)
def _unigram_model() -> str:
    spm = pytest.importorskip("sentencepiece")
    workdir = Path(tempfile.mkdtemp(prefix="compare-native-"))
    text = workdir / "train.txt"
    text.write_text("\n".join(training_lines() + UNICODE_LINES) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(workdir / "uni"), vocab_size=800,
                                   model_type="unigram", character_coverage=0.9995, minloglevel=2)
    return str(workdir / "uni.model")


def _tokenizers() -> list:
    from subword import Tokenizer

    toks = [byte_level(), wordpiece(), Tokenizer.from_file(_unigram_model()), sentencepiece_bpe()]
    try:
        toks.append(Tokenizer.from_tiktoken("cl100k_base"))
    except Exception:  # noqa: BLE001 - no local rank file: the other four still cover the core's kinds
        pass
    return toks


def _assert_same(a, b) -> None:
    assert a.n == b.n
    for name in ("chars", "bytes", "words", "ws_words", "type_count", "type_first_line"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.types == b.types
    assert a.script_words.keys() == b.script_words.keys()
    for s in a.script_words:
        np.testing.assert_array_equal(a.script_words[s], b.script_words[s], err_msg=s)
    assert a.shared_boundaries.keys() == b.shared_boundaries.keys()
    for p in a.shared_boundaries:
        np.testing.assert_array_equal(a.shared_boundaries[p], b.shared_boundaries[p], err_msg=str(p))
    assert a.chunk_bytes == b.chunk_bytes
    for ta, tb in zip(a.tokenizers, b.tokenizers):
        for name in ("tokens", "continued", "unk_chars", "byte_tokens", "lossless", "boundaries", "type_tokens",
                     "ids", "id_line"):
            np.testing.assert_array_equal(getattr(ta, name), getattr(tb, name), err_msg=f"{ta.name}.{name}")
        assert ta.script_tokens.keys() == tb.script_tokens.keys()
        for s in ta.script_tokens:
            np.testing.assert_array_equal(ta.script_tokens[s], tb.script_tokens[s], err_msg=f"{ta.name} {s}")
        assert ta.lossless_examples == tb.lossless_examples
        assert len(ta.chunk_seconds) == len(tb.chunk_seconds)
    assert a.samples.keys() == b.samples.keys()
    for i in a.samples:
        for ea, eb in zip(a.samples[i], b.samples[i]):
            assert ea.ids == eb.ids and ea.offsets == eb.offsets


def _both(lines: list[str]) -> None:
    toks = _tokenizers()
    names = [f"t{i}" for i in range(len(toks))]
    sample = [0, len(lines) // 2, len(lines) - 1]
    reference = collect(toks, names, lines, sample, native=False)
    fast = collect(toks, names, lines, sample, native=True)
    _assert_same(reference, fast)
    return reference


def test_the_core_runs_every_kind_of_tokenizer():
    assert native.available(_tokenizers())


def test_identical_on_the_builtin_corpus():
    c = _both(training_lines())
    assert c.words.sum() > 10_000 and sum(t.lossless.sum() for t in c.tokenizers) > 0


def test_identical_on_unicode_rich_lines():
    c = _both(UNICODE_LINES * 3)
    # The lines exercise what they are meant to: scripts beyond Latin, UNK characters, byte tokens.
    assert {"Cyrillic", "Han", "Devanagari", "Thai", "Hangul", "Arabic"} <= set(c.script_words)
    assert any(t.unk_chars.sum() > 0 for t in c.tokenizers)
    assert any(t.byte_tokens.sum() > 0 for t in c.tokenizers)
    assert any(not t.lossless.all() for t in c.tokenizers)


def test_identical_across_chunks(monkeypatch):
    # Small chunks: the type index, first lines and "\r\n" segments carry over chunk edges.
    import subword.compare.collect as collect_module

    monkeypatch.setattr(collect_module, "CHUNK_CHARS", 200)
    assert collect_module.CHUNK_CHARS != CHUNK_CHARS
    _both(UNICODE_LINES + training_lines()[:300])


@pytest.mark.parametrize("name", ["tinyshakespeare.txt", "gutenberg_en_20M.txt"])
def test_identical_on_shared_corpora(name):
    path = CORPORA / name  # the shared corpora, or their stand-ins on a plain clone (tests/_corpora.py)
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read(150_000)
    _both(text.split("\n")[:-1])


def test_segments_agree_with_the_regex_package():
    from subword import _core
    from subword import Tokenizer, BPE

    lines = UNICODE_LINES + training_lines()
    for name in ("tinyshakespeare.txt", "gutenberg_en_20M.txt"):
        if (CORPORA / name).exists():
            with open(CORPORA / name, encoding="utf-8", newline="") as f:
                lines += f.read(2_000_000).split("\n")[:-1]
    collector = _core.CompareCollector([Tokenizer(BPE({"a": 0}, []))._native()], [None], [b"\0"], 31)
    new, _ = collector.segment(lines)
    assert new == list(dict.fromkeys(segments("\n".join(lines))))


def test_core_classes_of_ascii_types_equal_words_py():
    import random

    from subword import _core
    from subword import Tokenizer, BPE
    from subword.compare.words import classify, is_word

    rng = random.Random(3)
    ascii_lines = ["".join(rng.choice([chr(c) for c in range(1, 128)]) for _ in range(rng.randint(0, 40)))
                   for _ in range(3000)]
    collector = _core.CompareCollector([Tokenizer(BPE({"a": 0}, []))._native()], [None], [b"\0"],
                                       len(native.SCRIPT_LABELS))
    new, _ = collector.segment(ascii_lines + UNICODE_LINES)
    latin, common = native.SCRIPT_LABELS.index("Latin"), native.SCRIPT_LABELS.index("Common")
    word, script, other = collector.ascii_classes(latin, common)
    assert other == [j for j, t in enumerate(new) if not t.isascii()] and other
    for j, t in enumerate(new):
        if t.isascii():
            assert (bool(word[j]), native.SCRIPT_LABELS[script[j]]) == (is_word(t), classify(t)[0]), repr(t)


@pytest.mark.parametrize("n, seed", [(1, 0), (7, 3), (1000, -5), (70_001, 2**70 + 1)])
def test_core_draws_equal_the_numpy_reference(n, seed):
    from subword import _core
    from subword.compare import bootstrap

    fast = np.frombuffer(_core.bootstrap_weights(n, bootstrap.seed64(seed), 4, 3), dtype="<f8").reshape(3, n)
    reference = np.stack([bootstrap.replicate_counts(n, seed, r) for r in (4, 5, 6)])
    np.testing.assert_array_equal(fast, reference)
    assert (fast.sum(axis=1) == n).all()


def test_reference_thresholds_are_the_rounded_poisson_cdf():
    from decimal import Decimal, getcontext
    from math import factorial

    from subword.compare import bootstrap

    getcontext().prec = 50
    cdf = [sum(Decimal(-1).exp() / factorial(i) for i in range(k)) for k in range(1, 14)]
    want = [int((c * 2**32).to_integral_value()) for c in cdf]
    assert bootstrap.POISSON.tolist() == want[:12]
    assert want[12] == 2**32   # so no line gets more than 12 in the first step


def test_reference_counts_are_multinomial_and_both_corrections_occur():
    from subword.compare import bootstrap

    n, reps = 400, 300
    counts = np.stack([bootstrap.replicate_counts(n, 3, r) for r in range(reps)])
    assert (counts.sum(axis=1) == n).all() and (counts >= 0).all()
    # Multinomial(n, 1/n): each count has mean 1 and variance (1 - 1/n); counts of two lines covary -1/n.
    assert abs(counts.mean() - 1) < 1e-12
    assert abs(counts.var() - (1 - 1 / n)) < 0.03
    assert abs(np.mean(counts[:, 0] * counts[:, 1]) - (1 - 1 / n)) < 0.15
    # The Poisson totals fall on both sides of n, so adding and removing draws are both exercised.
    key = [bootstrap._mix(bootstrap._mix(3) ^ r) for r in range(20)]
    totals = []
    for k in key:
        x = bootstrap._finalize(np.uint64(k) + np.uint64(bootstrap._GAMMA) * np.arange(1, n // 2 + 1, dtype=np.uint64))
        totals.append(int(np.searchsorted(bootstrap.POISSON, x.astype("<u8").view("<u4"), side="right").sum()))
    assert min(totals) < n < max(totals)


@pytest.mark.parametrize("n, seed", [(2, 1), (333, 8)])
def test_core_draws_equal_the_reference_over_many_replicates(n, seed):
    from subword import _core
    from subword.compare import bootstrap

    r = 40  # small n: the totals fall on both sides of n, and lines are drawn several times
    fast = np.frombuffer(_core.bootstrap_weights(n, bootstrap.seed64(seed), 0, r), dtype="<f8").reshape(r, n)
    np.testing.assert_array_equal(fast, np.stack([bootstrap.replicate_counts(n, seed, k) for k in range(r)]))


def test_core_type_count_replicates_equal_the_sparse_product():
    from subword import _core
    from subword.compare import bootstrap
    from subword.compare.comparison import _TypeLineCounts
    from subword.compare.metrics import distribution_metrics, distribution_metrics_from_sums

    rng = np.random.default_rng(1)
    n, ntypes = 300, 50
    id_line = np.sort(rng.integers(0, n, 5000)).astype(np.int32)
    compact = (rng.zipf(1.5, 5000) % ntypes).astype(np.int64)
    r = 30
    # Two tokenizers in one call: the second (the same tokens, types reversed) shares the draws.
    bufs = _core.type_count_replicates([compact.astype("<u4").tobytes(), (ntypes - 1 - compact).astype("<u4").tobytes()],
                                       [id_line.astype("<u4").tobytes()] * 2, [ntypes, ntypes], n,
                                       bootstrap.seed64(9), r, 2.5)
    sums, mirrored = (np.frombuffer(b, "<f8").reshape(r, 4) for b in bufs)
    np.testing.assert_allclose(mirrored, sums, rtol=1e-12)
    # Arrays read in place, and a vocabulary larger than the types used (the unused cost nothing), agree.
    wide = _core.type_count_replicates([compact.astype(np.uint32)], [id_line.astype(np.uint32)], [ntypes + 10_000], n,
                                       bootstrap.seed64(9), r, 2.5)
    np.testing.assert_array_equal(np.frombuffer(wide[0], "<f8").reshape(r, 4), sums)
    w = np.concatenate(list(bootstrap.weights(n, r, 9)))
    counts = _TypeLineCounts(np.arange(ntypes), compact, id_line, n) @ w.T   # (types, r)
    want = distribution_metrics(counts, vocab_size=400)
    got = distribution_metrics_from_sums(sums, vocab_size=400)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-11, err_msg=name)
    assert np.ptp(got["renyi_efficiency"]) > 0   # the replicates differ


@pytest.mark.parametrize("n, seed", [(1, 0), (37, 5), (20_000, -3)])
def test_core_column_sums_equal_the_weights_product(n, seed):
    from subword import _core
    from subword.compare import bootstrap

    rng = np.random.default_rng(4)
    dense = rng.integers(0, 90, n)
    sparse = np.where(rng.random(n) < 0.01, rng.integers(1, 1000, n), 0)
    cols = [dense, sparse, np.ones(n, np.int64), dense.copy(), np.zeros(n, np.int64), rng.random(n) < 0.5,
            rng.integers(0, 3, n) * (np.arange(n) % 3 == 0)]
    r = 37  # more than one block of replicates, and not a multiple of it
    got = np.frombuffer(_core.bootstrap_column_sums([np.asarray(c, "<i8").tobytes() for c in cols], n,
                                                    bootstrap.seed64(seed), r), "<f8").reshape(r, len(cols))
    w = np.concatenate(list(bootstrap.weights(n, r, seed)))
    want = w @ np.stack([np.asarray(c, np.float64) for c in cols], axis=1)
    np.testing.assert_array_equal(got, want)
    assert n == 1 or np.ptp(got[:, 0]) > 0
    # numpy arrays are read in place (no bytes copy) and give the same sums.
    arrays = np.frombuffer(_core.bootstrap_column_sums([np.asarray(c, np.int64) for c in cols], n,
                                                       bootstrap.seed64(seed), r), "<f8").reshape(r, len(cols))
    np.testing.assert_array_equal(arrays, got)
    with pytest.raises(ValueError, match="not"):
        _core.bootstrap_column_sums([np.zeros(n + 1, np.int64)], n, 0, 2)
    with pytest.raises(TypeError, match="buffer"):
        _core.bootstrap_column_sums([np.zeros(n, np.float32)], n, 0, 2)


def test_lines_with_whitespace_split_words_are_the_lines_str_strip_keeps():
    # compare() picks its sample lines from the core's whitespace-split word counts: they must be the
    # lines that str.strip leaves non-empty (the reference's choice), whatever the whitespace.
    from subword import Tokenizer, BPE
    from subword.compare.comparison import _sample_indices
    from subword.compare.words import WHITESPACE_CODEPOINTS

    spaces = "".join(map(chr, WHITESPACE_CODEPOINTS))
    lines = UNICODE_LINES + ["", spaces, "\u200b", "\x1c\x1d", " x ", "\u3000", "\x85a"] + list(spaces)
    tok = Tokenizer(BPE({"a": 0}, [], unk_token=None))
    words = native.collect_native([tok, tok], ["a", "b"], lines).ws_words
    assert np.flatnonzero(words).tolist() == [i for i, s in enumerate(lines) if s.strip()]
    for show in (0, 3, 10, 100):
        assert _sample_indices(lines, show, np.flatnonzero(words).tolist()) == _sample_indices(lines, show)
