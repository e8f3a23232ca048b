"""`subword train unigram`: the .model it writes equals sentencepiece's and encodes identically; option errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli

from _corpora import CORPORA  # the shared corpora, or stand-ins from the built-in corpus
SHAKESPEARE = CORPORA / "tinyshakespeare.txt"


@pytest.mark.skipif(not SHAKESPEARE.exists(), reason=f"real corpora not found under {CORPORA}")
def test_train_unigram_writes_sentencepiece_model(tmp_path: Path) -> None:
    spm = pytest.importorskip("sentencepiece")
    text = SHAKESPEARE.read_text(encoding="utf-8")[:200_000]
    corpus = tmp_path / "c.txt"
    corpus.write_text(text[: text.rfind("\n") + 1], encoding="utf-8")
    out = tmp_path / "u.model"
    r = CliRunner().invoke(cli, ["train", "unigram", str(corpus), "--vocab-size", "1000",
                                 "--character-coverage", "1.0", "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "s"), vocab_size=1000,
                                   model_type="unigram", character_coverage=1.0, minloglevel=2)
    ours = spm.SentencePieceProcessor(model_file=str(out))
    theirs = spm.SentencePieceProcessor(model_file=str(tmp_path / "s.model"))
    assert [(ours.id_to_piece(i), ours.get_score(i)) for i in range(1000)] == \
        [(theirs.id_to_piece(i), theirs.get_score(i)) for i in range(1000)]
    lines = text.splitlines()[:500]
    assert ours.encode(lines) == theirs.encode(lines)


def test_train_unigram_option_errors(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat on the mat\n" * 20, encoding="utf-8")
    runner = CliRunner()
    r = runner.invoke(cli, ["train", "unigram", str(corpus), "-o", str(tmp_path / "x.txt")])
    assert r.exit_code == 2 and ".model" in r.output
    r = runner.invoke(cli, ["train", "unigram", str(corpus), "--compat", "spm", "-o", str(tmp_path / "x.json")])
    assert r.exit_code == 2 and "give -o NAME.model" in r.output
    r = runner.invoke(cli, ["train", "unigram", str(corpus), "--character-coverage", "0.9", "-o", str(tmp_path / "x.json")])
    assert r.exit_code == 2
    r = runner.invoke(cli, ["train", "bpe", str(corpus), "--shrinking-factor", "0.5", "-o", str(tmp_path / "x.json")])
    assert r.exit_code == 2 and "does not apply to train bpe (it is an option of: unigram)" in r.output
    r = runner.invoke(cli, ["train", "unigram", str(corpus), "--vocab-size", "5000", "-o", str(tmp_path / "x.model")])
    assert r.exit_code == 1 and "Vocabulary size too high" in r.output
    r = runner.invoke(cli, ["train", "unigram", str(corpus), "--character-coverage", "1.5", "-o", str(tmp_path / "x.model")])
    assert r.exit_code != 0 and "character_coverage" in r.output.replace("-", "_")


@pytest.mark.skipif(not SHAKESPEARE.exists(), reason=f"real corpora not found under {CORPORA}")
def test_encode_unigram_model_viterbi_nbest_sample(tmp_path: Path) -> None:
    spm = pytest.importorskip("sentencepiece")
    corpus = tmp_path / "c.txt"
    text = SHAKESPEARE.read_text(encoding="utf-8")[:100_000]
    corpus.write_text(text[: text.rfind("\n") + 1], encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "s"), vocab_size=500,
                                   model_type="unigram", minloglevel=2)
    model = tmp_path / "s.model"
    sp = spm.SentencePieceProcessor(model_file=str(model))
    text = "the cat sat on 12 mats\nthe dog\n"
    runner = CliRunner()
    r = runner.invoke(cli, ["encode", "-t", str(model)], input=text)
    assert r.exit_code == 0, r.output
    assert [list(map(int, ln.split())) for ln in r.output.splitlines()] == sp.encode(text.splitlines())
    r = runner.invoke(cli, ["encode", "-t", str(model), "--nbest", "4", "--format", "json"], input="the cat\n")
    import json
    rows = json.loads(r.output)
    assert len(rows) == 4 and rows[0]["ids"] == sp.encode("the cat")
    assert [x["score"] for x in rows] == sorted((x["score"] for x in rows), reverse=True)
    args = ["encode", "-t", str(model), "--sample", "--alpha", "0.1", "--nbest-size", "-1", "--seed", "5"]
    a = runner.invoke(cli, args, input="the cat sat on the mat\n" * 20).output
    b = runner.invoke(cli, args, input="the cat sat on the mat\n" * 20).output
    assert a == b and len(set(a.splitlines())) > 1  # reproducible, and really sampled
    r = runner.invoke(cli, ["encode", "-t", str(model), "--format", "json"], input="  the   cat\n")
    row = json.loads(r.output)
    assert row["ids"] == sp.encode("  the   cat") and row["offsets"][-1][1] == len("  the   cat")
    r = runner.invoke(cli, ["encode", "-t", str(model), "--sample", "--nbest", "2"], input="x\n")
    assert r.exit_code == 2


@pytest.mark.skipif(not SHAKESPEARE.exists(), reason=f"real corpora not found under {CORPORA}")
def test_train_unigram_json_is_hf_compatible(tmp_path: Path) -> None:
    tk = pytest.importorskip("tokenizers")
    import json

    from subword.unigram import HfUnigramEncoder

    text = SHAKESPEARE.read_text(encoding="utf-8")[:120_000]
    corpus = tmp_path / "c.txt"
    corpus.write_text(text[: text.rfind("\n") + 1], encoding="utf-8")
    out = tmp_path / "u.json"
    r = CliRunner().invoke(cli, ["train", "unigram", str(corpus), "--vocab-size", "700", "-o", str(out), "-q"])
    assert r.exit_code == 0, r.output
    hf = tk.Tokenizer.from_file(str(out))
    trained = tk.Tokenizer(tk.models.Unigram())
    trained.pre_tokenizer = tk.pre_tokenizers.Metaspace()
    trained.train([str(corpus)], tk.trainers.UnigramTrainer(vocab_size=700, unk_token="<unk>",
                                                           special_tokens=["<unk>"], show_progress=False))
    assert set(hf.get_vocab()) == set(trained.get_vocab())
    ours = HfUnigramEncoder(json.loads(out.read_text(encoding="utf-8")))
    for line in text.splitlines()[:300]:
        e = hf.encode(line)
        assert ours.encode(line) == (e.ids, e.offsets)
