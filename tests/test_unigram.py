"""Unigram: the Rust trainer against the readable reference (spm and hf modes), against
sentencepiece 0.2.3 (piece overlap, scores) and HF's UnigramTrainer (piece set); Viterbi encoding
against sentencepiece on its own .model files and against HF's Unigram model; n-best; sampling
against the exact distribution; bad input.
"""

from __future__ import annotations

import collections
import json
import math
import random
from pathlib import Path

import pytest

from subword import _core
from subword.reference import unigram as ref

from _corpora import CORPORA, USING_SHARED  # the shared corpora, or stand-ins from the built-in corpus
GUTENBERG = CORPORA / "gutenberg_en_20M.txt"
SHAKESPEARE = CORPORA / "tinyshakespeare.txt"

needs_corpora = pytest.mark.skipif(not GUTENBERG.exists(), reason=f"real corpora not found under {CORPORA}")


def _lines(path: Path, n_bytes: int, skip_bytes: int = 0) -> list[str]:
    with open(path, encoding="utf-8") as f:
        f.seek(skip_bytes)
        if skip_bytes:
            f.readline()
        text = f.read(n_bytes)
    return [ln for ln in text.split("\n")[:-1]]


def _stand_in(lines: list[str]) -> tuple[list[tuple[str, int]], list[tuple[str, int]], list[tuple[str, int]]]:
    """Identity normalization, ▁ escaping, words split at ▁ (what SentencePiece sees with identity)."""
    sents = []
    for line in lines:
        s = " ".join(x for x in line.split(" ") if x)
        if s:
            sents.append(("\u2581" + s.replace(" ", "\u2581"), 1))
    words: collections.Counter[str] = collections.Counter()
    chars: collections.Counter[str] = collections.Counter()
    for s, f in sents:
        for ch in s:
            chars[ch] += f
        for w in s.split("\u2581"):
            if w:
                words["\u2581" + w] += f
    return (sents, sorted(words.items(), key=lambda x: (-x[1], x[0])),
            sorted(chars.items(), key=lambda x: (-x[1], x[0])))


# ==== Rust vs reference ====


@needs_corpora
@pytest.mark.parametrize("compat", ["spm", "hf"])
def test_rust_trainer_equals_reference(compat: str) -> None:
    sents, words, req = _stand_in(_lines(SHAKESPEARE, 60_000))
    kw = dict(vocab_size=600, compat=compat, num_threads=3)
    ours = _core.train_unigram(sents, words, req, **kw)
    theirs = ref.train_unigram(sents, words, req, **kw)
    assert len(ours) == 597
    assert ours == theirs  # pieces, order and scores bit for bit


def test_rust_trainer_equals_reference_on_random_corpora() -> None:
    rng = random.Random(5)
    for _ in range(25):
        alphabet = rng.choice(["ab", "abc", "abcd", "xyzé"])
        lines = [" ".join("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6)))
                          for _ in range(rng.randint(1, 5))) for _ in range(rng.randint(3, 30))]
        sents, words, req = _stand_in(lines)
        for compat in ("spm", "hf"):
            vocab = len(req) + 3 + rng.randint(0, 20)
            kw = dict(vocab_size=vocab, compat=compat, num_threads=rng.randint(1, 4))
            assert _core.train_unigram(sents, words, req, **kw) == ref.train_unigram(sents, words, req, **kw)


# ==== vs sentencepiece / HF ====


def _spm_train(tmp_path: Path, lines: list[str], vocab: int, **opts: object) -> "object":
    spm = pytest.importorskip("sentencepiece")
    inp = tmp_path / "train.txt"
    inp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(inp), model_prefix=str(tmp_path / "m"), vocab_size=vocab,
                                   model_type="unigram", minloglevel=2, **opts)
    return spm.SentencePieceProcessor(model_file=str(tmp_path / "m.model"))


@needs_corpora
@pytest.mark.parametrize("opts", [{}, {"normalization_rule_name": "identity", "character_coverage": 1.0}])
def test_trainer_matches_sentencepiece(tmp_path: Path, opts: dict) -> None:
    lines = _lines(GUTENBERG, 1_000_000)
    sp = _spm_train(tmp_path, lines, 2000, **opts)
    theirs = {sp.id_to_piece(i): sp.get_score(i) for i in range(sp.get_piece_size())}
    pieces, _ = _core.train_unigram_spm(lines, json.dumps({"vocab_size": 2000, **opts}))
    ours = {p: s for p, s, _ in pieces}
    assert [p for p, _, _ in pieces[:3]] == ["<unk>", "<s>", "</s>"]
    common = set(ours) & set(theirs)
    assert len(common) / len(theirs) >= 0.99, (sorted(set(theirs) - set(ours)), sorted(set(ours) - set(theirs)))
    assert max(abs(ours[p] - theirs[p]) for p in common) < 1e-4
    # measured: bit-identical (same ids, same float32 scores)
    assert [(p, s) for p, s, _ in pieces] == [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]


@needs_corpora
def test_hf_compat_matches_hf_unigram_trainer() -> None:
    tk = pytest.importorskip("tokenizers")
    lines = _lines(SHAKESPEARE, 150_000)
    pre = tk.pre_tokenizers.Metaspace()
    tok = tk.Tokenizer(tk.models.Unigram())
    tok.pre_tokenizer = pre
    tok.train_from_iterator(lines, tk.trainers.UnigramTrainer(vocab_size=800, unk_token="<unk>",
                                                              special_tokens=["<unk>"], show_progress=False))
    hf = dict(json.loads(tok.to_str())["model"]["vocab"])
    words: collections.Counter[str] = collections.Counter()
    for line in lines:
        for w, _ in pre.pre_tokenize_str(line):
            words[w] += 1
    chars: collections.Counter[str] = collections.Counter()
    for w, c in words.items():
        for ch in w:
            chars[ch] += c
    ours = dict(_core.train_unigram([], sorted(words.items()), sorted(chars.items(), key=lambda x: (-x[1], x[0])),
                                    vocab_size=800, compat="hf", meta_pieces=1))
    del hf["<unk>"]
    assert set(ours) == set(hf)
    # scores agree except the random-order penalties HF gives required chars missing from the model
    differ = [p for p in ours if abs(ours[p] - hf[p]) > 1e-9]
    assert all(len(p) == 1 for p in differ) and max(abs(ours[p] - hf[p]) for p in ours) < 1e-2


# ==== Encoding ====


def _model_from_sp(sp: "object", compat: str = "spm") -> "_core.UnigramModel":
    n = sp.get_piece_size()
    kinds = [1] * n
    for i in range(n):
        if sp.is_unknown(i):
            kinds[i] = 2
        elif sp.is_control(i):
            kinds[i] = 3
        elif sp.is_byte(i):
            kinds[i] = 6
        elif sp.is_unused(i):
            kinds[i] = 5
    pieces = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(n)]
    return _core.UnigramModel(pieces, kinds, sp.unk_id(), any(k == 6 for k in kinds), compat)


@needs_corpora
@pytest.mark.parametrize("byte_fallback", [False, True])
def test_viterbi_equals_sentencepiece_on_its_model(tmp_path: Path, byte_fallback: bool) -> None:
    train = _lines(GUTENBERG, 600_000)
    held = _lines(GUTENBERG, 300_000, skip_bytes=2_000_000) + ["naïve café — 日本語 ünïcödé ☃☃ x"]
    opts = {"normalization_rule_name": "identity", "byte_fallback": byte_fallback, "character_coverage": 0.999}
    sp = _spm_train(tmp_path, train, 3000, **opts)
    model = _model_from_sp(sp)
    spec = json.dumps({"normalization_rule_name": "identity"})
    n = same = 0
    for line in held:
        norm = _core.spm_normalize(line, spec)
        ids, offsets = model.encode(norm)
        assert all(0 <= a <= b <= len(norm) for a, b in offsets)
        n += 1
        same += ids == sp.encode(line)
    assert n > 1000 and same == n


@needs_corpora
def test_hf_mode_viterbi_equals_hf_unigram(tmp_path: Path) -> None:
    tk = pytest.importorskip("tokenizers")
    sp = _spm_train(tmp_path, _lines(GUTENBERG, 400_000), 2000, normalization_rule_name="identity")
    pieces = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]
    hf = tk.Tokenizer(tk.models.Unigram(pieces, unk_id=0))
    hf.pre_tokenizer = tk.pre_tokenizers.Metaspace(split=False)
    ours = _core.UnigramModel(pieces, None, 0, False, "hf")
    held = [ln for ln in _lines(GUTENBERG, 200_000, skip_bytes=3_000_000) if ln and ln == ln.strip()]
    assert len(held) > 1000
    for line in held:
        norm = "\u2581" + line.replace(" ", "\u2581")
        assert ours.encode(norm)[0] == hf.encode(line).ids, line


def test_float_width_decides_a_real_tie() -> None:
    # w+ww and ww+w tie; both give the earliest-start last piece
    m = _core.UnigramModel([("w", -1.0), ("ww", -2.0)], None, None, False, "spm")
    assert m.encode("www")[0] == [0, 1]
    assert ref.viterbi("www", {"w": -1.0, "ww": -2.0}) == ["w", "ww"]


def test_unknowns_fuse_and_byte_fallback() -> None:
    pieces = [("<unk>", 0.0), ("a", -1.0), ("b", -2.0)] + [(f"<0x{b:02X}>", 0.0) for b in range(256)]
    kinds = [2, 1, 1] + [6] * 256
    plain = _core.UnigramModel(pieces, kinds, 0, False, "spm")
    assert plain.encode("axyb") == ([1, 0, 2], [(0, 1), (1, 3), (3, 4)])
    fb = _core.UnigramModel(pieces, kinds, 0, True, "spm")
    ids, offsets = fb.encode("aé")
    assert ids == [1, 3 + 0xC3, 3 + 0xA9] and offsets == [(0, 1), (1, 2), (1, 2)]
    with pytest.raises(ValueError, match="no unk id"):
        _core.UnigramModel([("a", -1.0)], None, None, False, "hf").encode("ab")


def _toy() -> tuple["_core.UnigramModel", dict[str, float]]:
    scores = {"a": -1.0, "b": -1.3, "c": -1.1, "ab": -1.9, "bc": -2.2, "abc": -3.5, "ca": -2.0, "abca": -4.0}
    return _core.UnigramModel(list(scores.items()), None, None, False, "hf"), scores


def test_nbest_is_sorted_and_complete() -> None:
    m, scores = _toy()
    text = "abca"
    nb = m.nbest(text, 100)
    names = list(scores)
    got = {tuple(names[i] for i in ids): s for ids, s in nb}
    # every segmentation of "abca" into pieces, scored exactly
    def segs(t: str) -> list[tuple[str, ...]]:
        if not t:
            return [()]
        return [(t[:k],) + rest for k in range(1, len(t) + 1) if t[:k] in scores for rest in segs(t[k:])]
    exact = {s: sum(scores[p] for p in s) for s in segs(text)}
    assert set(got) == set(exact)
    assert all(math.isclose(got[s], exact[s]) for s in exact)
    assert [s for _, s in nb] == sorted((s for _, s in nb), reverse=True)
    assert nb[0][0] == m.encode(text)[0]


@pytest.mark.parametrize("theta,nbest_size", [(0.3, -1), (1.0, -1), (0.5, 3)])
def test_sampling_follows_the_exact_distribution(theta: float, nbest_size: int) -> None:
    m, scores = _toy()
    text = "abcab"
    nb = m.nbest(text, 1000)
    if nbest_size > 0:
        nb = nb[:nbest_size]
    z = math.log(sum(math.exp(theta * s) for _, s in nb))
    exact = {tuple(ids): math.exp(theta * s - z) for ids, s in nb}
    draws = 30_000
    counts = collections.Counter(tuple(ids) for ids, _ in m.sample(text, theta, nbest_size, seed=11, count=draws))
    tv = 0.5 * sum(abs(exact.get(k, 0.0) - counts.get(k, 0) / draws) for k in set(exact) | set(counts))
    assert tv < 0.015, tv
    # Viterbi for nbest_size 0/1, and different seeds give different draws
    assert m.sample(text, theta, 1, seed=3)[0][0] == m.encode(text)[0]
    assert m.sample(text, theta, nbest_size, seed=1, count=50) != m.sample(text, theta, nbest_size, seed=2, count=50)


def test_reference_sampler_matches_exact_distribution() -> None:
    _, scores = _toy()
    rng = random.Random(4)
    theta = 0.4
    counts = collections.Counter(tuple(ref.sample("abc", scores, theta, rng)) for _ in range(20_000))
    segs = {("a", "b", "c"): -3.4, ("ab", "c"): -3.0, ("a", "bc"): -3.2, ("abc",): -3.5}
    z = sum(math.exp(theta * s) for s in segs.values())
    tv = 0.5 * sum(abs(math.exp(theta * s) / z - counts[k] / 20_000) for k, s in segs.items())
    assert tv < 0.015


# ==== Bad input ====


def test_bad_input() -> None:
    sents, words, req = _stand_in(["ab ab ba", "abc"])
    with pytest.raises(ValueError, match="required characters"):
        _core.train_unigram(sents, words, req, vocab_size=3)
    with pytest.raises(ValueError, match="compat"):
        _core.train_unigram(sents, words, req, vocab_size=30, compat="xx")
    with pytest.raises(ValueError, match="empty"):
        _core.train_unigram([], [], [], vocab_size=30)
    with pytest.raises(ValueError, match="shrinking_factor"):
        _core.train_unigram(sents, words, req, vocab_size=30, shrinking_factor=1.5)
    with pytest.raises(ValueError, match="num_threads"):
        _core.train_unigram(sents, words, req, vocab_size=30, num_threads=0)
    with pytest.raises(ValueError, match="alpha"):
        _toy()[0].sample("ab", -1.0)
    with pytest.raises(ValueError, match="no usable line"):
        _core.train_unigram_spm(["", "   "], json.dumps({"vocab_size": 10}))
    with pytest.raises(ValueError, match="Vocabulary size too high"):
        _core.train_unigram_spm(["ab ab ba abc"] * 3, json.dumps({"vocab_size": 400}))


def test_progress_callback_can_abort() -> None:
    sents, words, req = _stand_in(["the cat sat on the mat"] * 5)

    def stop(stage: str, cur: int, total: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _core.train_unigram(sents, words, req, vocab_size=20, progress=stop)


# ==== HF tokenizer.json (compat="hf") ====


@needs_corpora
def test_hf_tokenizer_json_loads_in_hf_with_same_ids_and_offsets() -> None:
    tk = pytest.importorskip("tokenizers")
    from subword.unigram import HfUnigramEncoder, UnigramTrainer, train_unigram_hf

    lines = _lines(SHAKESPEARE, 150_000)
    data = json.loads(train_unigram_hf(lines, UnigramTrainer(compat="hf", vocab_size=800)).to_json_str())
    hf_trained = tk.Tokenizer(tk.models.Unigram())
    hf_trained.pre_tokenizer = tk.pre_tokenizers.Metaspace()
    hf_trained.train_from_iterator(lines, tk.trainers.UnigramTrainer(vocab_size=800, unk_token="<unk>",
                                                                    special_tokens=["<unk>"], show_progress=False))
    assert {p for p, _ in data["model"]["vocab"]} == set(hf_trained.get_vocab())
    hf = tk.Tokenizer.from_str(json.dumps(data))
    ours = HfUnigramEncoder(data)
    held = _lines(SHAKESPEARE, 60_000, skip_bytes=600_000) + [" two  spaces ", "ünïcödé ☃ x", ""]
    for line in held:
        e = hf.encode(line)
        assert ours.encode(line) == (e.ids, e.offsets), line


# ==== subword.unigram front ====


@needs_corpora
def test_front_rust_and_reference_engines_agree_with_default_options() -> None:
    from subword.unigram import UnigramTrainer, train_unigram

    lines = _lines(SHAKESPEARE, 40_000)
    a = train_unigram(lines, UnigramTrainer(vocab_size=400, engine="rust"))
    b = train_unigram(lines, UnigramTrainer(vocab_size=400, engine="reference"))
    assert a.pieces == b.pieces and len(a.pieces) == 400


def test_front_bad_input(caplog: pytest.LogCaptureFixture) -> None:
    from subword.unigram import UnigramTrainer, UnigramEncoder, train_unigram

    opts = dict(normalization_rule_name="identity", hard_vocab_limit=False)
    with caplog.at_level("WARNING"):
        m = train_unigram(["ab ba " * 10, "x" * 5000], UnigramTrainer(vocab_size=10, **opts))
    assert "longer than max_sentence_length" in caplog.text
    assert "x" not in {p for p, _, _ in m.pieces}
    with pytest.raises(ValueError, match="no lines"):
        train_unigram([], UnigramTrainer(vocab_size=10, **opts))
    with pytest.raises(ValueError, match="no usable line"):
        train_unigram(["", "  "], UnigramTrainer(vocab_size=10, **opts))
    with pytest.raises(TypeError, match="lines\\[1\\]"):
        train_unigram(["ab", 3], UnigramTrainer(vocab_size=10, **opts))  # type: ignore[list-item]
    with pytest.raises(ValueError, match="character_coverage"):
        UnigramTrainer(character_coverage=0.0)
    with pytest.raises(ValueError, match="num_threads"):
        UnigramTrainer(num_threads=0)
    enc = UnigramEncoder(m)
    with pytest.raises(ValueError, match="alpha"):
        enc.sample("ab", alpha=-0.5)
    assert enc.decode(enc.encode("ab ba")) == "ab ba"


@needs_corpora
def test_result_depends_on_num_threads_not_on_cpu_threads(tmp_path: Path) -> None:
    """num_threads is sentencepiece's stripe count (part of the result); RAYON_NUM_THREADS is not."""
    import os
    import subprocess
    import sys

    code = ("import json, sys; from subword import _core; lines = open(sys.argv[1], encoding='utf-8').read().split('\\n');"
            "print(json.dumps(_core.train_unigram_spm(lines, json.dumps({'vocab_size': 500}), num_threads=int(sys.argv[2]))[0]))")
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(_lines(SHAKESPEARE, 50_000)), encoding="utf-8")

    def run(cpu: int, stripes: int) -> list:
        env = dict(os.environ, RAYON_NUM_THREADS=str(cpu))
        out = subprocess.run([sys.executable, "-c", code, str(corpus), str(stripes)], env=env, check=True,
                             capture_output=True, text=True).stdout
        return json.loads(out)

    a, b = run(1, 16), run(3, 16)
    assert a == b
    if USING_SHARED:  # an observation about tinyshakespeare: other text may prune differently by a few ulps
        c = run(2, 4)
        assert {p for p, _, _ in c} == {p for p, _, _ in a}  # same pieces here; scores may differ in the last bits


@pytest.mark.parametrize("compat", ["spm", "hf"])
def test_rust_viterbi_equals_reference_on_random_models(compat: str) -> None:
    rng = random.Random(9)
    for _ in range(300):
        alphabet = rng.choice(["ab", "abc", "ab\u2581", "xé\u2581"])
        pieces = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 4))): -rng.choice([1.0, 1.5, 2.0, 2.5, 3.0])
                  for _ in range(rng.randint(1, 10))}
        names = list(pieces)
        model = _core.UnigramModel(list(pieces.items()), None, None, False, compat)
        for _ in range(5):
            text = "".join(rng.choice(alphabet + "z") for _ in range(rng.randint(0, 12)))
            try:
                ids, _ = model.encode(text)
            except ValueError:
                assert "<unk>" in ref.viterbi(text, pieces, compat=compat)
                continue
            assert [names[i] for i in ids] == ref.viterbi(text, pieces, compat=compat), (pieces, text)


def test_rust_viterbi_resets_its_sums_like_the_reference() -> None:
    """Long strings under near-tie models whose running score passes SentencePiece's reset threshold
    many times: the Rust encoder (whole string; batch with the word cache on and off) equals the
    reference, whose reset follows sentencepiece 0.2.3 (the cross-check against sentencepiece itself
    is in test_unigram_encode_speed_exact.py)."""
    np = pytest.importorskip("numpy")
    f32 = np.float32
    rng = random.Random(23)
    ws = "\u2581"
    flipped = 0
    for _ in range(12):
        letters = rng.choice(["abc", "ab"])
        char = {ch: f32(-(3000.0 + 3000.0 * rng.random())) for ch in letters + ws}
        pieces = {ch: float(s) for ch, s in char.items()}
        for _ in range(60):
            # `▁` only at a piece's start, so that the word cache splits the text at each `▁`
            body = (ws if rng.random() < 0.3 else "") + "".join(rng.choice(letters) for _ in range(rng.randint(1, 3)))
            total = f32(0.0)
            for ch in body:
                total = f32(total + char[ch])
            # the sum of the parts, a few units in the last place either way: the path depends on rounding
            for _ in range(rng.randint(0, 3)):
                total = np.nextafter(total, f32(0.0) if rng.random() < 0.5 else f32(-1e9))
            pieces.setdefault(body, float(total))
        names = list(pieces)
        model = _core.UnigramModel(list(pieces.items()), None, None, False, "spm")
        r = ref._f32
        index = {p: (i, r(s)) for i, (p, s) in enumerate(pieces.items())}
        unk = (-2, r(min(map(r, pieces.values())) - ref.UNK_PENALTY))
        texts = [ws.join("".join(rng.choice(letters) for _ in range(rng.randint(1, 6)))
                         for _ in range(rng.randint(10, 120))) for _ in range(10)]
        want = [ref.viterbi(t, pieces, compat="spm") for t in texts]
        assert [[names[i] for i in model.encode(t)[0]] for t in texts] == want
        for cache in (True, False):
            assert [[names[i] for i in ids] for ids in model.encode_batch_ids(texts, cache)] == want, cache
        for t in texts:
            flipped += ref.best_ends(t, index, unk, r, 4, True) != ref.best_ends(t, index, unk, r, 4, False)
    assert flipped > 0  # the resets changed some paths: the test would see a missing one


@needs_corpora
def test_offsets_match_sentencepiece(tmp_path: Path) -> None:
    from subword.formats.spm import read_model
    from subword.unigram import UnigramEncoder

    sp = _spm_train(tmp_path, _lines(GUTENBERG, 300_000), 1500)  # default nmt_nfkc
    enc = UnigramEncoder(read_model(tmp_path / "m.model"))
    # NFKC folds and expands characters: "ﬁ" -> "fi", full-width forms, "①" -> "1", "Ⅻ" -> "XII", NBSP.
    folding = ["ﬁnance ① ﬂow", "ＡＢＣ　ｘｙ", "x\u00a0y  z", "Ⅻ e\u0301 ½", "\u3000ﬁ\u3000", "ﬃ", "①②③"]
    held = _lines(GUTENBERG, 150_000, skip_bytes=3_500_000) + ["  Hello   world  ", "a\tb", "", "   ", "x"] + folding
    checked = 0
    for line in held:
        ids, offsets = enc.encode_with_offsets(line)
        proto = sp.encode(line, return_type="proto")
        b2c = {}
        k = 0
        for ci, ch in enumerate(line):
            for _ in ch.encode():
                b2c[k] = ci
                k += 1
        b2c[k] = len(line)
        assert ids == [p.id for p in proto.pieces]
        assert offsets == [(b2c[p.begin], b2c[p.end]) for p in proto.pieces], line
        checked += 1
    assert checked > 1000


@needs_corpora
def test_user_symbols_and_byte_fallback_match_sentencepiece(tmp_path: Path) -> None:
    from subword.formats.spm import read_model
    from subword.unigram import UnigramEncoder, UnigramTrainer, train_unigram

    lines = _lines(SHAKESPEARE, 200_000)
    opts = {"user_defined_symbols": ["<sep>", "the", "ing"], "byte_fallback": True, "character_coverage": 0.99}
    sp = _spm_train(tmp_path, lines, 1200, **opts)
    model = train_unigram(lines, UnigramTrainer(vocab_size=1200, **opts))
    assert [(p, s) for p, s, _ in model.pieces] == [(sp.id_to_piece(i), sp.get_score(i)) for i in range(1200)]
    enc = UnigramEncoder(read_model(tmp_path / "m.model"))
    held = _lines(SHAKESPEARE, 30_000, skip_bytes=700_000) + ["the<sep>thing ingthe ☃ é"]
    assert enc.encode_batch(held) == sp.encode(held)


@needs_corpora
@pytest.mark.parametrize("rules", ["tsv", "nmt_nfkc_cf"])
def test_models_with_their_own_normalization_rules_encode_as_sentencepiece(tmp_path: Path, rules: str) -> None:
    """A .model's precompiled charsmap is its normalizer: custom TSV rules ("user_defined") and the
    case-folding rule sets have no built-in twin here, and must still encode as sentencepiece does."""
    from subword.formats.spm import read_model
    from subword.unigram import UnigramEncoder

    if rules == "tsv":  # A -> a, "th" -> "TH", ½ -> " half "
        (tmp_path / "rules.tsv").write_text("41\t61\n74 68\t54 48\nBD\t20 68 61 6C 66 20\n", encoding="utf-8")
        opts: dict[str, object] = {"normalization_rule_tsv": str(tmp_path / "rules.tsv")}
    else:
        opts = {"normalization_rule_name": rules}
    sp = _spm_train(tmp_path, _lines(GUTENBERG, 300_000), 1000, **opts)
    enc = UnigramEncoder(read_model(tmp_path / "m.model"))
    held = _lines(GUTENBERG, 100_000, skip_bytes=3_500_000) + ["ABBA the other ½ Thing", "ÅNGSTRÖM ﬁ Ⅻ", "  A  "]
    assert enc.encode_batch(held) == sp.encode(held)
    assert [enc.encode(t) for t in held[-3:]] == sp.encode(held[-3:])
    assert [enc.normalize(t) for t in held[-3:]] == [sp.normalize(t) for t in held[-3:]]
    for line in held[-3:]:
        ids, offsets = enc.encode_with_offsets(line)
        proto = sp.encode(line, return_type="proto")
        byte_at = [len(line[:i].encode()) for i in range(len(line) + 1)]  # char offset -> byte offset
        assert ids == [p.id for p in proto.pieces]
        assert [(byte_at[a], byte_at[b]) for a, b in offsets] == [(p.begin, p.end) for p in proto.pieces]
