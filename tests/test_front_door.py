"""One front door: ``Tokenizer.from_file`` on every kind of tokenizer file, whatever its name.

Cross-checks against the files' own libraries on real text (the shared corpus, or the built-in one when
``../shared`` is absent): a ``.model`` gives ``sentencepiece``'s ids, pieces, offsets and decode (models
trained by sentencepiece itself and by us, Unigram and BPE, with byte fallback and user-defined symbols);
a ``vocab.txt`` gives HF ``BertWordPieceTokenizer``'s. Then writing and converting (byte-exact
``.model`` round trips, the HF conversion, refusals with their reasons), the atomic writer, and bad input.
"""

from __future__ import annotations

import os
import pickle
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from subword import Tokenizer
from subword.errors import FormatError, ModelError
from subword.formats.atomic import atomic_write_bytes, atomic_write_text
from subword.formats.convert import ConversionError, convert_file
from subword.formats.spm import SpmFormatError, read_model, write_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _unicode_samples import TRICKY, corpus_lines

spm = pytest.importorskip("sentencepiece")

USER_SYMBOLS = ["<sep>", "@@", "[[x]]"]


def _real_lines(n: int = 1200) -> list[str]:
    """Real text: the shared corpus, else the built-in one (so a plain clone runs these tests)."""
    lines = [line.rstrip("\n") for line in corpus_lines("gutenberg_en_20M.txt", n)]
    if not lines:
        from corpora.builtin import builtin_corpus

        with open(builtin_corpus(), encoding="utf-8") as fh:
            text = fh.read(2_000_000).splitlines()
        step = max(1, len(text) // n)
        lines = text[::step][:n]
    return [line for line in lines if line.strip()]


@pytest.fixture(scope="module")
def lines() -> list[str]:
    return _real_lines()


@pytest.fixture(scope="module")
def probe(lines: list[str]) -> list[str]:
    """What the models are checked on: held-out real lines, odd spacing, unknown characters, the user
    symbols inside words, and the tricky Unicode samples."""
    extra = ["  leading and   inner  spaces ", "", " ", "ﬁne ½ café naïve", "東京 日本語 ☃ 😀",
             "a<sep>b @@c [[x]]", "x@@y<sep><sep>", "tab\there\nnewline", "Ω≈ç√∫"]
    return lines[-300:] + extra + list(TRICKY)


def _write_corpus(tmp: Path, lines: list[str]) -> Path:
    path = tmp / "corpus.txt"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _spm_model(tmp: Path, corpus: Path, name: str, **opts: object) -> Path:
    prefix = tmp / name
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(prefix), minloglevel=2, num_threads=1,
                                   hard_vocab_limit=False, **opts)
    return Path(f"{prefix}.model")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory, lines: list[str]) -> dict[str, Path]:
    """.model files trained by sentencepiece and by us, each copied to an odd name."""
    from subword.spm import SpmBpeTrainer, train_spm_bpe
    from subword.unigram import UnigramTrainer, train_unigram

    tmp = tmp_path_factory.mktemp("models")
    train = lines[:-300]
    corpus = _write_corpus(tmp, train)
    made = {
        "spm-unigram": _spm_model(tmp, corpus, "u", vocab_size=800, model_type="unigram"),
        "spm-bpe": _spm_model(tmp, corpus, "b", vocab_size=800, model_type="bpe"),
        "spm-unigram-bytes-user": _spm_model(tmp, corpus, "ub", vocab_size=900, model_type="unigram",
                                             byte_fallback=True, user_defined_symbols=USER_SYMBOLS),
        "spm-bpe-bytes-user": _spm_model(tmp, corpus, "bb", vocab_size=900, model_type="bpe", byte_fallback=True,
                                         user_defined_symbols=USER_SYMBOLS),
        "spm-unigram-nodummy": _spm_model(tmp, corpus, "nd", vocab_size=600, model_type="unigram",
                                          add_dummy_prefix=False, remove_extra_whitespaces=False),
    }
    ours_u = tmp / "ours_u.model"
    write_model(ours_u, train_unigram(train, UnigramTrainer(vocab_size=700, hard_vocab_limit=False,
                                                            byte_fallback=True, user_defined_symbols=USER_SYMBOLS)))
    ours_b = tmp / "ours_b.model"
    write_model(ours_b, train_spm_bpe(train, SpmBpeTrainer(vocab_size=700, hard_vocab_limit=False)))
    made["ours-unigram"], made["ours-bpe"] = ours_u, ours_b
    odd = ["tokenizer.model", "spiece.model", "x.model.v3", "noext", "weird name.bin", "tokenizer.model",
           "spm.model.v3", "a.b.c"]
    out = {}
    for (name, path), new in zip(sorted(made.items()), odd):
        target = tmp / name / new
        target.parent.mkdir()
        shutil.copy(path, target)
        out[name] = target
    return out


MODEL_NAMES = ["spm-unigram", "spm-bpe", "spm-unigram-bytes-user", "spm-bpe-bytes-user", "spm-unigram-nodummy",
               "ours-unigram", "ours-bpe"]


# ==== .model: sentencepiece's ids, pieces, offsets, decode ====


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_model_file_gives_sentencepiece_output(models: dict[str, Path], probe: list[str], name: str) -> None:
    path = models[name]
    tok = Tokenizer.from_file(path)
    sp = spm.SentencePieceProcessor(model_file=str(path))
    want_ids = sp.encode(probe)
    encs = tok.encode_batch(probe)
    assert [e.ids for e in encs] == want_ids
    assert [e.tokens for e in encs] == sp.encode(probe, out_type=str)
    assert tok.encode_batch_ids(probe) == want_ids
    assert [tok.encode(t).ids for t in probe[:50]] == want_ids[:50]
    assert tok.decode_batch(want_ids) == sp.decode(want_ids)
    assert tok.get_vocab_size() == sp.get_piece_size()
    assert all(tok.id_to_token(i) == sp.id_to_piece(i) for i in range(sp.get_piece_size()))
    assert tok.token_to_id(sp.id_to_piece(5)) == 5


@pytest.mark.parametrize("name", ["spm-unigram", "spm-bpe", "spm-unigram-bytes-user", "spm-bpe-bytes-user",
                                  "spm-unigram-nodummy"])
def test_offsets_are_sentencepiece_surfaces(models: dict[str, Path], probe: list[str], name: str) -> None:
    """Byte offsets into the original text equal the begin/end sentencepiece reports; for byte pieces
    sentencepiece gives the whole character to the first byte and empty spans to the rest, so those
    are checked by where they start."""
    path = models[name]
    tok = Tokenizer.from_file(path)
    sp = spm.SentencePieceProcessor(model_file=str(path))
    byte_type = 6
    kinds = {i: t for i, (_, _, t) in enumerate(read_model(path).pieces)}
    checked = 0
    for text in probe:
        proto = sp.encode(text, out_type="proto")
        enc = tok.encode(text)
        assert enc.ids == [p.id for p in proto.pieces]
        for (a, b), p in zip(enc.byte_offsets, proto.pieces):
            if kinds[p.id] == byte_type:
                assert p.begin <= a <= max(p.end, p.begin)
                continue
            assert (a, b) == (p.begin, p.end), (text, p.piece)
            checked += 1
        # character offsets point at the surfaces: slicing the text gives each piece's surface
        for (a, b), p in zip(enc.offsets, proto.pieces):
            if kinds[p.id] != byte_type:
                assert text[a:b] == p.surface
    assert checked > 1000


def test_nbest_and_sampling_equal_the_old_unigram_encoder(models: dict[str, Path], probe: list[str]) -> None:
    from subword.unigram import UnigramEncoder

    for name in ("spm-unigram", "spm-unigram-bytes-user", "ours-unigram"):
        path = models[name]
        tok = Tokenizer.from_file(path)
        sp = spm.SentencePieceProcessor(model_file=str(path))
        old = UnigramEncoder(read_model(path))
        for text in probe[:40]:
            got = tok.nbest(text, 5)
            assert [(e.ids, s) for e, s in got] == old.nbest(text, 5)
            if text.strip():
                assert got[0][0].ids == sp.encode(text)
                assert [e.ids for e in tok.sample(text, alpha=0.3, seed=7, count=4)] == \
                    old.sample(text, alpha=0.3, seed=7, count=4)
                assert [e.ids for e in tok.sample(text, alpha=0.5, nbest_size=4, seed=3, count=3)] == \
                    old.sample(text, alpha=0.5, nbest_size=4, seed=3, count=3)
        # a sampled segmentation spells the same text
        text = probe[0]
        for e in tok.sample(text, alpha=0.1, seed=11, count=5):
            assert sp.decode(e.ids) == sp.decode(sp.encode(text))


def test_nbest_and_sample_need_a_unigram_model(models: dict[str, Path]) -> None:
    tok = Tokenizer.from_file(models["spm-bpe"])
    with pytest.raises(ModelError, match="needs a SentencePiece Unigram model"):
        tok.nbest("hello", 2)
    uni = Tokenizer.from_file(models["spm-unigram"])
    with pytest.raises(ValueError, match="alpha must be a finite number"):
        uni.sample("hello", alpha=-1.0)
    with pytest.raises(ValueError, match="n must be >= 1"):
        uni.nbest("hello", 0)


def test_spm_pipeline_refuses_what_a_model_file_cannot_hold(models: dict[str, Path]) -> None:
    from subword.pre_tokenizers import Whitespace

    tok = Tokenizer.from_file(models["spm-unigram"])
    with pytest.raises(ModelError, match="no added tokens"):
        tok.add_special_tokens(["<extra>"])
    tok.enable_padding(length=8)
    with pytest.raises(ModelError, match="padding"):
        tok.encode("hello")
    tok.no_padding()
    tok.pre_tokenizer = Whitespace()
    with pytest.raises(ModelError, match="pre_tokenizer"):
        tok.encode("hello")


def test_old_encoders_agree_with_the_front_door(models: dict[str, Path], probe: list[str]) -> None:
    """The old classes stay for one release; they give what the Tokenizer gives."""
    from subword.spm import SpmBpeTokenizer
    from subword.unigram import UnigramEncoder

    uni = Tokenizer.from_file(models["spm-unigram-bytes-user"])
    assert UnigramEncoder(read_model(models["spm-unigram-bytes-user"])).encode_batch(probe) == \
        uni.encode_batch_ids(probe)
    bpe = Tokenizer.from_file(models["spm-bpe-bytes-user"])
    assert SpmBpeTokenizer.from_file(models["spm-bpe-bytes-user"]).encode_batch(probe) == \
        bpe.encode_batch_ids(probe)


def test_pickle_and_with_options_keep_a_spm_tokenizer(models: dict[str, Path], probe: list[str]) -> None:
    tok = Tokenizer.from_file(models["spm-bpe-bytes-user"])
    back = pickle.loads(pickle.dumps(tok))
    assert back == tok
    assert back.encode_batch_ids(probe) == tok.encode_batch_ids(probe)
    assert tok.with_options().encode_batch_ids(probe[:20]) == tok.encode_batch_ids(probe[:20])


# ==== directories and vocab.txt ====


def test_directory_loading(tmp_path: Path, models: dict[str, Path], probe: list[str]) -> None:
    from subword import BPE
    from subword.pre_tokenizers import Whitespace

    hf = Tokenizer(BPE({"a": 0, "b": 1, "ab": 2, "[UNK]": 3}, [("a", "b")], unk_token="[UNK]"),
                   pre_tokenizer=Whitespace())
    hf.save_pretrained(tmp_path / "pretrained")
    assert Tokenizer.from_file(tmp_path / "pretrained").encode("ab ba").ids == hf.encode("ab ba").ids
    only_model = tmp_path / "t5"
    only_model.mkdir()
    shutil.copy(models["spm-unigram"], only_model / "spiece.model")
    sp = spm.SentencePieceProcessor(model_file=str(models["spm-unigram"]))
    assert Tokenizer.from_file(only_model).encode_batch_ids(probe) == sp.encode(probe)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FormatError, match="directory without a tokenizer file .*tokenizer.json"):
        Tokenizer.from_file(empty)


def test_vocab_txt_equals_hf_bert_wordpiece(tmp_path: Path, lines: list[str], probe: list[str]) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers.implementations import BertWordPieceTokenizer

    trainer = BertWordPieceTokenizer()
    trainer.train_from_iterator(lines[:-300], vocab_size=2000)
    trainer.save_model(str(tmp_path))
    vocab = tmp_path / "vocab.txt"
    named_oddly = tmp_path / "bert-vocab"
    shutil.copy(vocab, named_oddly)
    ref = BertWordPieceTokenizer(str(vocab))
    ours = Tokenizer.from_file(named_oddly)
    texts = [t for t in probe if t]
    want = ref.encode_batch(texts)
    got = ours.encode_batch(texts)
    assert [e.ids for e in got] == [e.ids for e in want]
    assert [e.tokens for e in got] == [e.tokens for e in want]
    assert [e.offsets for e in got] == [e.offsets for e in want]
    assert ours.decode_batch([e.ids for e in want]) == ref.decode_batch([e.ids for e in want])
    pair = ref.encode("hello there", "general kenobi")
    assert ours.encode("hello there", "general kenobi").type_ids == pair.type_ids
    assert tokenizers.__version__  # the oracle is the installed, pinned library


# ==== writing and converting ====


@pytest.mark.parametrize("name", MODEL_NAMES)
def test_save_model_is_byte_exact(tmp_path: Path, models: dict[str, Path], name: str) -> None:
    tok = Tokenizer.from_file(models[name])
    out = tmp_path / "again.model"
    tok.save(out)
    assert out.read_bytes() == models[name].read_bytes()


def test_spm_bpe_to_json_and_back(tmp_path: Path, models: dict[str, Path], lines: list[str]) -> None:
    """A BPE .model converts to a tokenizer.json HF loads with sentencepiece's ids (English text: HF's
    per-grapheme charsmap lookup differs on rare combining-mark sequences, see formats/convert.py), and
    back to the byte-identical .model."""
    tokenizers = pytest.importorskip("tokenizers")
    src = models["spm-bpe"]
    sp = spm.SentencePieceProcessor(model_file=str(src))
    json_path = tmp_path / "tokenizer.json"
    convert_file(src, json_path)
    texts = lines[-300:]
    hf = tokenizers.Tokenizer.from_file(str(json_path))
    assert [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)] == sp.encode(texts)
    ours = Tokenizer.from_file(json_path)
    assert ours.encode_batch_ids(texts) == sp.encode(texts)
    back = tmp_path / "back.model"
    convert_file(json_path, back)
    assert back.read_bytes() == src.read_bytes()
    # Tokenizer.save(x.json) writes the same conversion
    Tokenizer.from_file(src).save(tmp_path / "direct.json")
    assert tokenizers.Tokenizer.from_file(str(tmp_path / "direct.json")).encode(texts[0]).ids == sp.encode(texts[0])


def test_conversions_that_are_not_exact_are_refused(tmp_path: Path, models: dict[str, Path]) -> None:
    from subword import BPE
    from subword.pre_tokenizers import ByteLevel

    with pytest.raises(ConversionError, match="float64"):
        convert_file(models["spm-unigram"], tmp_path / "u.json")
    with pytest.raises(ConversionError, match="user-defined"):
        Tokenizer.from_file(models["spm-bpe-bytes-user"]).save(tmp_path / "b.json")
    byte_level = Tokenizer(BPE({"a": 0}, []), pre_tokenizer=ByteLevel())
    byte_level.save(tmp_path / "bl.json")
    with pytest.raises(ConversionError, match="byte-level BPE cannot be a SentencePiece model"):
        convert_file(tmp_path / "bl.json", tmp_path / "bl.model")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bl.json"]  # nothing half-written


def test_vocab_txt_converts_to_json(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nhello\n##s\nworld\n", encoding="utf-8")
    convert_file(vocab, tmp_path / "tokenizer.json")
    hf = tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    assert hf.encode("Hellos WORLD!").ids == Tokenizer.from_file(vocab).encode("Hellos WORLD!").ids == [2, 5, 6, 7, 1, 3]
    with pytest.raises(ConversionError, match="WordPiece"):
        convert_file(vocab, tmp_path / "v.model")


# ==== the atomic writer ====


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_atomic_writer_respects_the_umask(tmp_path: Path, models: dict[str, Path], mask: int) -> None:
    old = os.umask(mask)
    try:
        atomic_write_text(tmp_path / "a.json", "{}")
        Tokenizer.from_file(models["spm-bpe"]).save(tmp_path / "b.model")
        Tokenizer.from_file(models["spm-bpe"]).save(tmp_path / "c.json")
    finally:
        os.umask(old)
    for name in ("a.json", "b.model", "c.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o666 & ~mask, name


def test_atomic_writer_cleans_up_on_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "keep.model"
    target.write_bytes(b"old")

    def fail(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        atomic_write_bytes(target, b"new")
    monkeypatch.undo()
    with pytest.raises(TypeError):
        atomic_write_bytes(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.model"]
    with pytest.raises(OSError):
        atomic_write_bytes(tmp_path / "no" / "such" / "dir.model", b"x")


# ==== bad input ====


def test_file_of_no_known_kind_names_the_kinds_tried(tmp_path: Path) -> None:
    prose = tmp_path / "notes.model"
    prose.write_text("This is a shopping list, not a tokenizer.\nEggs and milk.\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"notes.model is not a tokenizer file of any known kind \(it holds text; "
                                          r"tried: tokenizer.json .*SentencePiece .model .*vocab.txt"):
        Tokenizer.from_file(prose)
    blob = tmp_path / "blob.json"
    blob.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(FormatError, match="blob.json is not a tokenizer file of any known kind .*binary data"):
        Tokenizer.from_file(blob)
    empty = tmp_path / "empty.model"
    empty.write_bytes(b"")
    with pytest.raises(FormatError, match="empty.model is empty"):
        Tokenizer.from_file(empty)
    with pytest.raises(FileNotFoundError, match="no such file"):
        Tokenizer.from_file(tmp_path / "missing.model")


@pytest.mark.parametrize("cut", [0.5, 0.9, 0.999])
def test_truncated_model_file(tmp_path: Path, models: dict[str, Path], cut: float) -> None:
    data = models["spm-unigram"].read_bytes()
    bad = tmp_path / "cut.model"
    bad.write_bytes(data[:int(len(data) * cut)])
    with pytest.raises(SpmFormatError, match=r"cut.model: (truncated|not a SentencePiece model)"):
        Tokenizer.from_file(bad)


def test_corrupt_model_file(tmp_path: Path, models: dict[str, Path]) -> None:
    data = bytearray(models["spm-bpe"].read_bytes())
    data[40:60] = b"\xff" * 20
    bad = tmp_path / "corrupt.model"
    bad.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="corrupt.model: "):
        Tokenizer.from_file(bad)
    # a well-formed proto that is not a usable model: no unknown piece
    from subword.formats.spm import SpmModelFile

    no_unk = tmp_path / "nounk.model"
    no_unk.write_bytes(SpmModelFile(pieces=[("▁a", 0.0, 1)], model_type=1).to_bytes())
    with pytest.raises(SpmFormatError, match="nounk.model: .*exactly one unknown piece"):
        Tokenizer.from_file(no_unk)
    no_bytes = tmp_path / "nobytes.model"
    no_bytes.write_bytes(SpmModelFile(pieces=[("<unk>", 0.0, 2), ("▁a", 0.0, 1)], model_type=2,
                                      trainer_spec={"byte_fallback": True}).to_bytes())
    with pytest.raises(SpmFormatError, match="nobytes.model: invalid SentencePiece model: byte_fallback is set but"):
        Tokenizer.from_file(no_bytes)
    word = tmp_path / "word.model"
    word.write_bytes(SpmModelFile(pieces=[("<unk>", 0.0, 2), ("▁a", 0.0, 1)], model_type=3).to_bytes())
    with pytest.raises(FormatError, match="word.model: .*'word' is not supported"):
        Tokenizer.from_file(word)


def test_truncated_json_and_bad_vocab_txt(tmp_path: Path) -> None:
    bad = tmp_path / "tok"
    bad.write_text('{"version": "1.0", "model": {"type": "BPE", "vocab": {"a": ', encoding="utf-8")
    with pytest.raises(FormatError, match=r"tok is not valid JSON \(truncated or corrupt\?\)"):
        Tokenizer.from_file(bad)
    vocab = tmp_path / "vocab.txt"
    vocab.write_bytes(b"[UNK]\nhello\n\xff\xfe\n")
    with pytest.raises(FormatError, match="vocab.txt is not a tokenizer file of any known kind"):
        Tokenizer.from_file(vocab)


def test_cli_bad_input_is_one_line_exit_1(tmp_path: Path, models: dict[str, Path]) -> None:
    """Through the CLI (whose commands load with Tokenizer.from_file): exit 1, one line, no traceback."""
    data = models["spm-unigram"].read_bytes()
    bad = tmp_path / "cut.model"
    bad.write_bytes(data[: len(data) // 2])
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root))
    prose = tmp_path / "notes.txt"
    prose.write_text("not a tokenizer at all\n", encoding="utf-8")
    for args in (["decode", "-t", str(bad)], ["encode", "-t", str(prose)]):
        r = subprocess.run([sys.executable, "-m", "cli.main", *args], input="1 2\n", capture_output=True, text=True,
                           env=env, cwd=root, timeout=120)
        assert r.returncode == 1, (args, r.stderr)
        assert "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
