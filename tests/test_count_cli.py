"""``subword count`` and ``subword train --from-counts``: shards, merge, budgets, bad files, exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from _cli_helpers import make_text


@pytest.fixture(scope="module")
def app() -> click.Group:
    from cli.main import cli

    return cli


def run(app: click.Group, *args: str):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def text(tmp_path_factory) -> tuple[Path, list[Path]]:
    """One corpus and the same lines cut into 3 shard files."""
    root = tmp_path_factory.mktemp("count")
    body = make_text(4000, seed=5)
    whole = root / "whole.txt"
    whole.write_text(body, encoding="utf-8")
    lines = body.splitlines(keepends=True)
    parts = [lines[:1000], lines[1000:1001], lines[1001:]]
    paths = []
    for i, part in enumerate(parts):
        p = root / f"part{i}.txt"
        p.write_text("".join(part), encoding="utf-8")
        paths.append(p)
    return whole, paths


def model_of(path: Path) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    data["model"].pop("provenance", None)
    return data


@pytest.mark.parametrize("algorithm", ["byte-bpe", "wordpiece"])
def test_count_shards_merge_and_train_equals_training_on_the_text(app, text, tmp_path, algorithm):
    whole, parts = text
    for i, part in enumerate(parts):
        r = run(app, "count", part, "--for", algorithm, "-o", tmp_path / f"{i}.swc", "-q")
        assert r.exit_code == 0, r.output
    r = run(app, "count", "--merge", *(tmp_path / f"{i}.swc" for i in range(3)), "-o", tmp_path / "all.swc")
    assert r.exit_code == 0, r.output
    assert "distinct words from 3 files (4,000 lines)" in r.output
    size = "500" if algorithm == "byte-bpe" else "300"
    r = run(app, "train", algorithm, "--from-counts", tmp_path / "all.swc", "--vocab-size", size, "-o",
            tmp_path / "fc.json", "-q")
    assert r.exit_code == 0, r.output
    r = run(app, "train", algorithm, whole, "--vocab-size", size, "-o", tmp_path / "tx.json", "-q")
    assert r.exit_code == 0, r.output
    assert model_of(tmp_path / "fc.json") == model_of(tmp_path / "tx.json")


def test_train_min_count_loads_only_the_frequent_words(app, tmp_path):
    """``train --from-counts F --min-count N`` equals training on a file counted with ``--min-count N``."""
    import itertools

    import corpora

    whole = tmp_path / "prose.txt"  # real prose: many words seen once or twice
    with open(corpora.builtin_corpus(), encoding="utf-8") as f:
        whole.write_text("".join(itertools.islice(f, 3000)), encoding="utf-8")
    for name, extra in (("all", []), ("cut", ["--min-count", "3"])):
        r = run(app, "count", whole, "--for", "bpe", "-o", tmp_path / f"{name}.swc", "-q", *extra)
        assert r.exit_code == 0, r.output
    out = {}
    for name, counts, extra in (("loaded", "all", ["--min-count", "3"]), ("counted", "cut", []), ("full", "all", [])):
        r = run(app, "train", "bpe", "--from-counts", tmp_path / f"{counts}.swc", "--vocab-size", "1000",
                "-o", tmp_path / f"{name}.json", *extra)
        assert r.exit_code == 0, r.output
        out[name] = (model_of(tmp_path / f"{name}.json"), r.output)
    assert out["loaded"][0] == out["counted"][0]
    assert out["loaded"][0] != out["full"][0]
    distinct = [int(re.search(r"trained from [\d,]+ of ([\d,]+) distinct words", o).group(1).replace(",", ""))
                for _, o in (out["loaded"], out["full"])]
    assert 0 < distinct[0] < distinct[1]


def test_max_memory_spills_and_gives_the_same_file_content(app, text, tmp_path):
    whole, _ = text
    from subword.counts import WordCounts

    assert run(app, "count", whole, "--for", "bpe", "-o", tmp_path / "a.swc", "-q").exit_code == 0
    r = run(app, "count", whole, "--for", "bpe", "--max-memory", "4k", "-o", tmp_path / "b.swc")
    assert r.exit_code == 0, r.output
    assert "spilled and merged" in r.output
    assert WordCounts.load(tmp_path / "a.swc").words() == WordCounts.load(tmp_path / "b.swc").words()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.swc", "b.swc"], "runs are removed"


def test_merge_refuses_other_pipelines_naming_the_difference(app, text, tmp_path):
    whole, _ = text
    run(app, "count", whole, "--for", "bpe", "-o", tmp_path / "a.swc", "-q")
    run(app, "count", whole, "--pre-tokenizer", "whitespace", "--normalizer", "nfkc", "-o", tmp_path / "b.swc", "-q")
    r = run(app, "count", "--merge", tmp_path / "a.swc", tmp_path / "b.swc", "-o", tmp_path / "c.swc")
    assert r.exit_code == 1
    assert "different pipelines (normalizer: none vs NFKC)" in r.output
    assert not (tmp_path / "c.swc").exists()


def test_train_refuses_counts_of_another_pipeline(app, text, tmp_path):
    whole, _ = text
    run(app, "count", whole, "--for", "bpe", "-o", tmp_path / "a.swc", "-q")
    r = run(app, "train", "byte-bpe", "--from-counts", tmp_path / "a.swc", "-o", tmp_path / "t.json")
    assert r.exit_code == 1
    assert "pre_tokenizer.type: ByteLevel vs Whitespace" in r.output
    r = run(app, "train", "bpe", whole, "--from-counts", tmp_path / "a.swc", "-o", tmp_path / "t.json")
    assert r.exit_code == 2 and "give no INPUT" in r.output


def test_bad_counts_files_exit_1_with_one_line(app, text, tmp_path):
    whole, _ = text
    run(app, "count", whole, "--for", "bpe", "-o", tmp_path / "a.swc", "-q")
    data = (tmp_path / "a.swc").read_bytes()
    (tmp_path / "cut.swc").write_bytes(data[: len(data) // 2])
    r = run(app, "train", "bpe", "--from-counts", tmp_path / "cut.swc", "-o", tmp_path / "t.json")
    assert r.exit_code == 1 and "truncated word-counts file" in r.output
    assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
    r = run(app, "count", "--merge", tmp_path / "a.swc", whole, "-o", tmp_path / "m.swc")
    assert r.exit_code == 1 and "not a subword word-counts file" in r.output


def test_usage_errors_exit_2(app, text, tmp_path):
    whole, _ = text
    r = run(app, "count", whole, "-o", tmp_path / "a.swc")
    assert r.exit_code == 2 and "exactly one of --for, --like or --pre-tokenizer" in r.output
    r = run(app, "count", whole, "--for", "bpe", "--like", whole, "-o", tmp_path / "a.swc")
    assert r.exit_code == 2
    r = run(app, "count", whole, "--pre-tokenizer", "nope", "-o", tmp_path / "a.swc")
    assert r.exit_code == 2 and "whitespace-split" in r.output


def test_unreachable_dask_scheduler_is_one_line_exit_1(app, text, tmp_path):
    pytest.importorskip("distributed")
    whole, _ = text
    r = run(app, "count", "--dask", "tcp://127.0.0.1:9", "--dask-timeout", "1", whole, "--for", "bpe", "-o",
            tmp_path / "a.swc")
    assert r.exit_code == 1
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9 within 1 s" in r.output
    assert not (tmp_path / "a.swc").exists()


def test_train_from_counts_min_frequency_reads_fewer_words_and_equals_hf(app, tmp_path):
    """``train byte-bpe --from-counts F --min-frequency 2``: the trainer holds fewer words than the file,
    and the model is HF tokenizers' trained on the text with min_frequency=2."""
    import itertools

    import corpora

    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    whole = tmp_path / "prose.txt"
    with open(corpora.builtin_corpus(), encoding="utf-8", newline="") as f:
        whole.write_text("".join(itertools.islice(f, 3000)), encoding="utf-8", newline="")
    assert run(app, "count", whole, "--for", "byte-bpe", "-o", tmp_path / "all.swc", "-q").exit_code == 0
    r = run(app, "train", "byte-bpe", "--from-counts", tmp_path / "all.swc", "--min-frequency", "2",
            "--vocab-size", "800", "-o", tmp_path / "fc.json")
    assert r.exit_code == 0, r.output
    held, total = (int(x.replace(",", "")) for x in
                   re.search(r"trained from ([\d,]+) of ([\d,]+) distinct words; --min-frequency 2 left out",
                             r.output).groups())
    assert 0 < held < total
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.train([str(whole)], trainers.BpeTrainer(vocab_size=800, min_frequency=2, show_progress=False,
                                               initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    want = json.loads(hf.to_str())["model"]
    got = model_of(tmp_path / "fc.json")["model"]
    assert got["vocab"] == want["vocab"]
    assert [list(m) for m in got["merges"]] == [m.split(" ") if isinstance(m, str) else m for m in want["merges"]]
    data = json.loads((tmp_path / "fc.json").read_text(encoding="utf-8"))
    provenance = data.get("provenance") or data["model"].get("provenance")
    assert provenance["training"]["corpus"]["words_trained"] == held
