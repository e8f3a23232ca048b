"""``subword study`` end to end through the CLI: a micro study (two tokenizers, a few steps), its report in
Chromium, resume after a kill in the middle of the second pretraining, and bad input.

One micro study runs once per module (in-process, ``CliRunner``); the kill test runs the same plan in a
subprocess, kills it once the second pretraining has written a checkpoint, resumes it, and compares the
final documents (everything but ``timings``, which are wall-clock seconds).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli

STEPS = 30  # the kill lands in the second pretraining: its results file only comes after its scoring


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    import corpora

    root = tmp_path_factory.mktemp("study-data")
    lines = [line for _, line in zip(range(1500), open(corpora.builtin_corpus(), encoding="utf-8"))]
    train = root / "train.txt"
    train.write_text("".join(lines), encoding="utf-8")
    return train


def _args(corpus: Path, out: Path, *extra: str) -> list[str]:
    return ["study", str(corpus), "-t", "wordpiece:300", "-t", "bpe:300", "--budget", f"steps:{STEPS}",
            "--batch-size", "4", "--seq-len", "32", "--heldout-lines", "20", "--bootstrap", "20", "--threads", "1",
            "-o", str(out), *extra]


@pytest.fixture(scope="module")
def micro(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("study-run") / "study"
    result = CliRunner().invoke(cli, _args(corpus, out, "--json", str(out.parent / "copy.json")))
    assert result.exit_code == 0, result.output
    return out, result


def _without_timings(doc: dict) -> dict:
    return {k: v for k, v in doc.items() if k != "timings"}


def test_micro_study_end_to_end(micro):
    out, result = micro
    doc = json.loads((out / "study.json").read_text())
    assert [t["name"] for t in doc["tokenizers"]] == ["wordpiece-300", "bpe-300"]
    assert _without_timings(json.loads((out.parent / "copy.json").read_text())) == _without_timings(doc)
    for t in doc["tokenizers"]:
        assert t["runs"][0]["steps"] == STEPS
        assert 0 < t["extrinsic"]["pll_bits_per_byte"]["mean"] < 20
        assert 0 <= t["extrinsic"]["cloze_accuracy"]["mean"] <= 1
        assert t["intrinsic"]["tokens_per_word"]["ci"][0] <= t["intrinsic"]["tokens_per_word"]["value"]
    # The intrinsic values are the comparison's, untouched.
    cmp = json.loads((out / "compare" / "compare.json").read_text())
    assert cmp["schema_version"] == 2
    assert cmp["tokenizers"][1]["metrics"]["renyi_efficiency"] == doc["tokenizers"][1]["intrinsic"]["renyi_efficiency"]
    # The terminal shows both tables and the verdict.
    for needle in ("Intrinsic", "Extrinsic", "Verdict", "PLL-word-l2r bits/byte", "wordpiece-300"):
        assert needle in result.output
    assert doc["budget"]["kind"] == "steps" and "equal steps" in doc["budget"]["description"]
    assert len(doc["curves"]) == 2 and doc["curves"][0]["points"][-1][0] == STEPS
    assert doc["timings"]["overhead_share"] is not None


def test_resume_of_a_finished_study_changes_nothing(micro, corpus):
    out, _ = micro
    before = json.loads((out / "study.json").read_text())
    result = CliRunner().invoke(cli, _args(corpus, out, "--resume", "-q"))
    assert result.exit_code == 0, result.output
    assert _without_timings(json.loads((out / "study.json").read_text())) == _without_timings(before)
    again = CliRunner().invoke(cli, _args(corpus, out, "-q"))
    assert again.exit_code == 1 and "--resume" in again.output


def test_resume_after_kill_in_second_pretraining_gives_the_same_json(micro, corpus, tmp_path):
    out, _ = micro
    killed = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen([sys.executable, "-m", "cli", *_args(corpus, killed, "-q")], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    second = killed / "pretrain" / "bpe-300-seed0" / "checkpoints"
    deadline = time.time() + 120
    try:
        while time.time() < deadline and proc.poll() is None:
            if second.exists() and any(second.glob("ckpt-*.pt")):
                break
            time.sleep(0.01)
        assert proc.poll() is None, f"the study ended before the kill: {proc.stderr.read().decode()[-2000:]}"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert not (killed / "results" / "bpe-300-seed0.json").exists()  # killed inside the second task,
    assert not (second.parent / "model" / "model.safetensors").exists()  # before its pretraining ended
    assert (killed / "results" / "wordpiece-300-seed0.json").exists()
    result = CliRunner().invoke(cli, _args(corpus, killed, "--resume", "-q"))
    assert result.exit_code == 0, result.output
    resumed = json.loads((killed / "study.json").read_text())
    assert _without_timings(resumed) == _without_timings(json.loads((out / "study.json").read_text()))


def test_report_in_chromium_matches_the_json(micro, tmp_path):
    from _browser import dump_dom, require_chromium

    require_chromium()
    out, _ = micro
    doc = json.loads((out / "study.json").read_text())
    page = out / "report.html"
    text = page.read_text()
    assert "http://" not in text and "https://" not in text and "<link" not in text  # self-contained
    dom = dump_dom(page, tmp_path)
    assert dom.count('class="scatter"') == len(doc["correlations"]) > 0
    assert dom.count('class="curve"') == len(doc["curves"])
    for c in doc["correlations"]:
        shown = "n/a" if c["spearman"] is None else f"{c['spearman']:+.2f}"
        assert f'data-intrinsic="{c["intrinsic"]}" data-extrinsic="{c["extrinsic"]}"' in dom
        assert f'<b class="rho">{shown}</b>' in dom
    for t in doc["tokenizers"]:
        mean = f'{t["extrinsic"]["pll_bits_per_byte"]["mean"]:.4f}'
        assert f'data-measure="pll_bits_per_byte">{mean}' in dom
    assert 'id="metrics"' in dom  # the comparison's own metric table, with its intervals
    assert "95% CI" in dom


# ==== bad input: a clear error, exit 2 or 1, nothing written ====


def _fails(args: list[str], out: Path, code: int, *needles: str) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == code, result.output
    for needle in needles:
        assert needle in result.output, result.output
    assert not out.exists()


def test_bad_spec_names_the_grammar(corpus, tmp_path):
    out = tmp_path / "s"
    _fails(["study", str(corpus), "-t", "bpe8000", "-t", "wordpiece:300", "-o", str(out)], out, 2,
           "bpe8000", "ALGORITHM:VOCAB_SIZE")
    _fails(["study", str(corpus), "-t", "bpe:lots", "-t", "wordpiece:300", "-o", str(out)], out, 2, "VOCAB_SIZE")
    _fails(["study", str(corpus), "-t", "bpe:300:vocab_sise=3", "-t", "wordpiece:300", "-o", str(out)], out, 1,
           "vocab_sise")
    _fails(["study", str(corpus), "-t", "bpe:300", "-t", "wordpiece:300", "--budget", "tokens:lots",
            "-o", str(out)], out, 2, "tokens:N")


def test_given_tokenizer_without_specials_is_refused(corpus, tmp_path):
    from subword import train

    bare = tmp_path / "bare.json"
    train("bpe", lines=["the cat sat\n"] * 10, vocab_size=40).save(bare)
    out = tmp_path / "s"
    _fails(["study", str(corpus), "-t", str(bare), "-t", "wordpiece:300", "-o", str(out)], out, 1,
           "[MASK]", "used as it is")


def test_empty_heldout_and_tiny_budget(corpus, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    out = tmp_path / "s"
    _fails(["study", str(corpus), "--heldout", str(empty), "-t", "bpe:300", "-t", "wordpiece:300", "-o", str(out)],
           out, 1, "held-out text is empty")
    _fails(["study", str(corpus), "-t", "bpe:300", "-t", "wordpiece:300", "--budget", "tokens:100",
            "--batch-size", "4", "--seq-len", "32", "-o", str(out)], out, 1, "too small for one optimizer step")


def test_output_dir_that_holds_something_else_is_refused(corpus, tmp_path):
    out = tmp_path / "s"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    result = CliRunner().invoke(cli, ["study", str(corpus), "-t", "bpe:300", "-t", "wordpiece:300", "-o", str(out)])
    assert result.exit_code == 1 and "not empty" in result.output
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_dask_tasks_give_the_same_document(micro, corpus, tmp_path):
    """Each pretraining as a task on a Dask cluster (here an in-process one) gives the same study."""
    distributed = pytest.importorskip("distributed")
    out, _ = micro
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as lc:
        result = CliRunner().invoke(cli, _args(corpus, tmp_path / "dask", "--dask", lc.scheduler_address, "-q"))
    assert result.exit_code == 0, result.output
    got = json.loads((tmp_path / "dask" / "study.json").read_text())
    assert _without_timings(got) == _without_timings(json.loads((out / "study.json").read_text()))


def test_jobs_2_gives_the_same_document(micro, corpus, tmp_path):
    """Tasks in a pool of 2 spawned processes give the document of tasks run one after another."""
    out, _ = micro
    result = CliRunner().invoke(cli, _args(corpus, tmp_path / "pool", "--jobs", "2", "-q"))
    assert result.exit_code == 0, result.output
    got = json.loads((tmp_path / "pool" / "study.json").read_text())
    assert got["timings"]["jobs"] == 2
    assert _without_timings(got) == _without_timings(json.loads((out / "study.json").read_text()))
