"""Loading ``.model`` files: the Rust piece parser against the Python reader, and the fast
``SpmBpeTokenizer.from_file`` path against the one built from a parsed model."""

from __future__ import annotations

from pathlib import Path

import pytest

from corpora import builtin_corpus
from corpora.synthetic import cjk_lines
from subword.formats.spm import SpmFormatError, SpmModelFile, model_specs, read_model
from subword.spm import SpmBpeTokenizer

spm = pytest.importorskip("sentencepiece")


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("models")
    with open(builtin_corpus(), encoding="utf-8") as f:
        lines = f.read(400_000).split("\n")[:-1] + cjk_lines(100_000, seed=3)
    (tmp / "train.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = {}
    for name, opts in {"bpe": dict(model_type="bpe", byte_fallback=True, user_defined_symbols=["<sep>"]),
                       "unigram": dict(model_type="unigram", control_symbols=["<cls>"])}.items():
        spm.SentencePieceTrainer.train(input=str(tmp / "train.txt"), model_prefix=str(tmp / name), vocab_size=3000,
                                       minloglevel=2, num_threads=1, **opts)
        out[name] = tmp / f"{name}.model"
    return out


@pytest.mark.parametrize("kind", ["bpe", "unigram"])
def test_rust_piece_parser_reads_what_the_python_reader_reads(models: dict[str, Path], kind: str) -> None:
    data = models[kind].read_bytes()
    fast, slow = SpmModelFile.from_bytes(data), SpmModelFile._from_bytes_python(data)
    assert fast == slow
    assert fast.to_bytes() == data
    assert model_specs(data) == (fast.model_type, fast.trainer_spec, fast.normalizer_spec)


def test_both_readers_refuse_the_same_broken_files(models: dict[str, Path]) -> None:
    data = models["bpe"].read_bytes()
    broken = [data[:n] for n in (1, 2, 3, 7, 50, len(data) // 2, len(data) - 1)]
    broken += [b"\x0f" + data, b"\x00\x01", data[:2] + b"\xff" * 12, b"not a model at all"]
    for blob in broken:
        with pytest.raises(SpmFormatError) as fast:
            SpmModelFile.from_bytes(blob)
        with pytest.raises(SpmFormatError) as slow:
            SpmModelFile._from_bytes_python(blob)
        assert "SentencePiece model" in str(fast.value) and "SentencePiece model" in str(slow.value)


def test_from_file_encodes_and_decodes_as_the_tokenizer_of_the_parsed_model(models: dict[str, Path]) -> None:
    path = models["bpe"]
    fast, parsed = SpmBpeTokenizer.from_file(path), SpmBpeTokenizer(read_model(path))
    sp = spm.SentencePieceProcessor(model_file=str(path))
    texts = ["Hello  world 123", "a<sep>b", "中文字符，日本語のテキスト", "😀 x"] + cjk_lines(5_000, seed=9)
    ids = fast.encode_batch(texts)
    assert ids == parsed.encode_batch(texts) == [sp.encode(t) for t in texts]
    assert [fast.decode(i) for i in ids] == [sp.decode(i) for i in ids]
    assert fast.piece_to_id("<sep>") == sp.piece_to_id("<sep>")
    assert fast.model == parsed.model


def test_from_file_names_the_file_of_a_bad_model(tmp_path: Path, models: dict[str, Path]) -> None:
    bad = tmp_path / "bad.model"
    bad.write_bytes(models["bpe"].read_bytes()[:100])
    with pytest.raises(SpmFormatError, match="bad.model"):
        SpmBpeTokenizer.from_file(bad)
    with pytest.raises(ValueError, match="BPE model"):
        SpmBpeTokenizer.from_file(models["unigram"])
    no_unk = tmp_path / "no_unk.model"
    no_unk.write_bytes(SpmModelFile(pieces=[("a", 0.0, 1)], model_type=2).to_bytes())
    with pytest.raises(SpmFormatError, match="no_unk.model.*unknown piece"):
        SpmBpeTokenizer.from_file(no_unk)
