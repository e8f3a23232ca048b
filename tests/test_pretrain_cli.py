"""``subword pretrain`` and ``subword fill-mask`` from the command line: a whole run, and every bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from tests._pretrain_helpers import small_corpus, small_tokenizer


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("pretrain_cli")
    corpus = small_corpus(d, lines=600)
    return {"dir": d, "corpus": corpus, "tok": small_tokenizer(d, corpus), "cache": d / "cache"}


def _run(fx: dict[str, Path], out: Path, *extra: str, inputs: list[Path] | None = None):
    args = ["pretrain", "--model", "bert", "--tokenizer", str(fx["tok"]), "-o", str(out), "--batch-size", "4",
            "--seq-len", "32", "--cache-dir", str(fx["cache"]), "-q",
            *[str(p) for p in (inputs if inputs is not None else [fx["corpus"]])], *extra]
    return _invoke(args)


def _invoke(args: list[str]):
    return CliRunner().invoke(cli, args, prog_name="subword")


@pytest.fixture(scope="module")
def finished(fx: dict[str, Path]) -> Path:
    out = fx["dir"] / "run"
    result = _run(fx, out, "--steps", "3", "--objective", "mlm", "--save-every", "1")
    assert result.exit_code == 0, result.output
    return out


def test_a_run_writes_everything_and_fill_mask_reads_it(finished: Path) -> None:
    assert (finished / "log.jsonl").exists() and (finished / "loss.png").exists()
    assert (finished / "hf" / "config.json").exists() and (finished / "model" / "model.safetensors").exists()
    assert len(list((finished / "checkpoints").glob("ckpt-*.pt"))) == 2  # --keep 2
    result = _invoke(["fill-mask", "-m", str(finished), "--top-k", "3", "--json", "the [MASK] of the list"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert len(rows) == 1 and len(rows[0]["candidates"]) == 3
    scores = [c["score"] for c in rows[0]["candidates"]]
    assert scores == sorted(scores, reverse=True) and 0 < sum(scores) <= 1


def test_fill_mask_reads_the_transformers_export_alike(finished: Path) -> None:
    """``-m run/hf`` (the transformers directory, an easy mistake) gives what ``-m run`` gives."""
    ours = _invoke(["fill-mask", "-m", str(finished), "--json", "the [MASK] of the list"])
    hf = _invoke(["fill-mask", "-m", str(finished / "hf"), "--json", "the [MASK] of the list"])
    assert ours.exit_code == hf.exit_code == 0, (ours.output, hf.output)
    a, b = json.loads(ours.output), json.loads(hf.output)
    assert [c["token"] for c in a["candidates"]] == [c["token"] for c in b["candidates"]]
    assert [c["score"] for c in a["candidates"]] == pytest.approx([c["score"] for c in b["candidates"]], rel=1e-4)
    assert a["mask"] == 1 and a["position"] == 2  # [CLS] the [MASK]


def test_fill_mask_plain_output_has_no_unexplained_column(finished: Path) -> None:
    one = _invoke(["fill-mask", "-m", str(finished), "--top-k", "3", "the [MASK] of the list"])
    assert one.exit_code == 0, one.output
    rows = [line.split() for line in one.output.splitlines()]
    assert len(rows) == 3 and all(len(r) == 2 for r in rows), one.output  # token, probability
    from subword import Tokenizer

    vocab = Tokenizer.from_file(finished / "model" / "tokenizer.json").get_vocab()
    assert all(r[0] in vocab and 0 < float(r[1]) <= 1 for r in rows)
    two = _invoke(["fill-mask", "-m", str(finished), "--top-k", "2", "the [MASK] of the [MASK]"])
    assert two.exit_code == 0, two.output
    lines = two.output.splitlines()
    assert lines[0] == "[MASK] 1 of 2:" and lines[3] == "[MASK] 2 of 2:" and len(lines) == 6
    assert all(line.startswith("  ") for line in lines[1:3] + lines[4:])


def test_fill_mask_on_a_directory_without_a_model(tmp_path: Path) -> None:
    result = _invoke(["fill-mask", "-m", str(tmp_path), "the [MASK]"])
    assert result.exit_code == 1 and "holds no pretrained model" in result.output and "DIR/hf" in result.output
    assert "Traceback" not in result.output and "KeyError" not in result.output
    (tmp_path / "config.json").write_text('{"model_type": "bert", "hidden_size": 8}')
    result = _invoke(["fill-mask", "-m", str(tmp_path), "the [MASK]"])
    assert result.exit_code == 1 and "transformers checkpoint" in result.output, result.output


def test_transformers_export_truncates_text_longer_than_the_model(finished: Path) -> None:
    """``model_max_length`` is written, so transformers truncates on request instead of failing with a
    tensor size error, and ``pipeline("fill-mask")`` reads a text longer than the model's 128 positions."""
    transformers = pytest.importorskip("transformers")
    config = json.loads((finished / "hf" / "tokenizer_config.json").read_text())
    assert config["model_max_length"] == 128
    tok = transformers.AutoTokenizer.from_pretrained(str(finished / "hf"))
    assert tok.model_max_length == 128
    long = "the [MASK] of the list " + "and the value " * 200
    assert len(tok(long)["input_ids"]) > 128
    assert len(tok(long, truncation=True)["input_ids"]) == 128
    fill = transformers.pipeline("fill-mask", model=str(finished / "hf"), device="cpu")
    top = fill(long, tokenizer_kwargs={"truncation": True})
    assert len(top) == 5 and all(0 < c["score"] <= 1 for c in top)
    # the same top token as our fill-mask on the text the model sees
    ours = _invoke(["fill-mask", "-m", str(finished), "--json", "the [MASK] of the list"])
    short = fill("the [MASK] of the list")
    assert short[0]["token"] == tok.convert_tokens_to_ids(json.loads(ours.output)["candidates"][0]["token"])


def test_fill_mask_without_a_mask(finished: Path) -> None:
    result = _invoke(["fill-mask", "-m", str(finished), "no mask here"])
    assert result.exit_code == 2 and "[MASK]" in result.output


def test_no_length_is_a_usage_error(fx: dict[str, Path], tmp_path: Path) -> None:
    result = _run(fx, tmp_path / "r")
    assert result.exit_code == 2 and "--steps" in result.output


def test_tokenizer_without_mask_token(fx: dict[str, Path], tmp_path: Path) -> None:
    from subword.trainers import WordPieceTrainer, train_wordpiece

    tok = train_wordpiece(fx["corpus"].read_text().splitlines(True)[:300],
                          WordPieceTrainer(vocab_size=200, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"]))
    tok.save(tmp_path / "nomask.json")
    result = _invoke(["pretrain", "--model", "bert", "-t", str(tmp_path / "nomask.json"), "-o", str(tmp_path / "r"),
                      "--steps", "1", "--cache-dir", str(fx["cache"]), str(fx["corpus"])])
    assert result.exit_code == 1
    assert "[MASK] or <mask>" in result.output and "Traceback" not in result.output


def test_sequence_longer_than_the_position_table(fx: dict[str, Path], tmp_path: Path) -> None:
    result = _run(fx, tmp_path / "r", "--steps", "1", "--seq-len", "256")
    assert result.exit_code == 1 and "--seq-len 256 exceeds the 128 positions" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("text, message", [("\n\n \n", "no tokens"), ("one short line\n", "fewer than one global batch")])
def test_empty_or_too_short_corpus(fx: dict[str, Path], tmp_path: Path, text: str, message: str) -> None:
    p = tmp_path / "small.txt"
    p.write_text(text)
    result = _run(fx, tmp_path / "r", "--steps", "1", "--objective", "mlm", inputs=[p])
    assert result.exit_code == 1 and message in result.output, result.output


def test_resume_with_nothing_to_resume(fx: dict[str, Path], tmp_path: Path) -> None:
    result = _run(fx, tmp_path / "r", "--steps", "1", "--resume")
    assert result.exit_code == 1 and "no checkpoint to resume" in result.output


def _copy_run(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_an_existing_run_is_never_overwritten(fx: dict[str, Path], finished: Path, tmp_path: Path) -> None:
    out = _copy_run(finished, tmp_path / "r")
    before = {p.name: p.read_bytes() for p in (out / "checkpoints").iterdir()}
    result = _run(fx, out, "--steps", "3", "--objective", "mlm")
    assert result.exit_code == 1 and "--resume" in result.output
    assert {p.name: p.read_bytes() for p in (out / "checkpoints").iterdir()} == before


def test_corrupt_checkpoint(fx: dict[str, Path], finished: Path, tmp_path: Path) -> None:
    out = _copy_run(finished, tmp_path / "r")
    last = sorted((out / "checkpoints").glob("ckpt-*.pt"))[-1]
    last.write_bytes(last.read_bytes()[:1000])  # truncated
    damaged = last.read_bytes()
    result = _run(fx, out, "--steps", "5", "--objective", "mlm", "--resume")
    assert result.exit_code == 1 and "corrupt or truncated" in result.output and last.name in result.output
    assert last.read_bytes() == damaged


def test_resume_with_a_changed_config_or_tokenizer(fx: dict[str, Path], finished: Path, tmp_path: Path) -> None:
    out = _copy_run(finished, tmp_path / "r")
    result = _run(fx, out, "--steps", "5", "--objective", "mlm", "--resume", "--lr", "1e-3")
    assert result.exit_code == 1 and "changed lr (0.0005 -> 0.001)" in result.output
    other = small_tokenizer(tmp_path, fx["corpus"], vocab_size=300)
    result = _invoke(["pretrain", "--model", "bert", "-t", str(other), "-o", str(out), "--batch-size", "4",
                      "--seq-len", "32", "--cache-dir", str(fx["cache"]), "--steps", "5", "--objective", "mlm",
                      "--resume", str(fx["corpus"])])
    assert result.exit_code == 1 and "tokenizer" in result.output


def test_teacher_with_another_vocabulary(fx: dict[str, Path], tmp_path: Path) -> None:
    from models import BertConfig, BertForPreTraining

    BertForPreTraining(BertConfig.preset("tiny", vocab_size=123)).to_hf(tmp_path / "teacher")
    result = _invoke(["pretrain", "--model", "distilbert", "-t", str(fx["tok"]), "-o", str(tmp_path / "r"),
                      "--teacher", str(tmp_path / "teacher"), "--steps", "1", "--cache-dir", str(fx["cache"]),
                      "--seq-len", "32", "--batch-size", "4", str(fx["corpus"])])
    assert result.exit_code == 1 and "vocabulary of 123" in result.output


def test_distilbert_without_a_teacher_is_a_usage_error(fx: dict[str, Path], tmp_path: Path) -> None:
    result = _invoke(["pretrain", "--model", "distilbert", "-t", str(fx["tok"]), "-o", str(tmp_path / "r"),
                      "--steps", "1"])
    assert result.exit_code == 2 and "--teacher" in result.output


def test_docstring_examples() -> None:
    import doctest

    import cli.pretrain

    result = doctest.testmod(cli.pretrain, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted >= 1


# ==== progress, resume and Ctrl-C as a user meets them ====


def _loud(fx: dict[str, Path], out: Path, *extra: str):
    """Like _run, without -q (progress and messages on stderr)."""
    args = ["pretrain", "--model", "bert", "--tokenizer", str(fx["tok"]), "-o", str(out), "--batch-size", "4",
            "--seq-len", "32", "--cache-dir", str(fx["cache"]), str(fx["corpus"]), *extra]
    return _invoke(args)


def test_progress_in_a_log_shows_step_loss_rate_and_time_left(fx: dict[str, Path], tmp_path: Path) -> None:
    """stderr is not a terminal here: the first and the last step get a line (then one every --progress-every)."""
    import re

    result = _loud(fx, tmp_path / "r", "--steps", "4", "--objective", "mlm")
    assert result.exit_code == 0, result.output
    lines = [x for x in result.stderr.splitlines() if x.startswith("step ")]
    pattern = r"step (\d)/4 \(\d+\.\d%\)  loss \d+\.\d{3}  [\d,]+ tok/s  \d+s left"
    assert [re.fullmatch(pattern, x).group(1) for x in lines] == ["1", "4"], result.stderr  # type: ignore[union-attr]
    fast = _loud(fx, tmp_path / "r2", "--steps", "4", "--objective", "mlm", "--progress-every", "0")
    assert fast.exit_code == 2  # a positive interval
    every = _loud(fx, tmp_path / "r3", "--steps", "4", "--objective", "mlm", "--progress-every", "0.000001")
    assert len([x for x in every.stderr.splitlines() if x.startswith("step ")]) == 4, every.stderr


def test_progress_bar_and_json_with_a_time_budget(fx: dict[str, Path], tmp_path: Path) -> None:
    bar = _loud(fx, tmp_path / "r", "--time-budget", "1s", "--objective", "mlm", "--progress", "bar")
    assert bar.exit_code == 0, bar.output
    drawn = [x for x in bar.stderr.split("\r") if x.startswith("train  [")]
    assert drawn and all("loss" in x and "tok/s" in x and "left" in x and "step " in x for x in drawn), bar.stderr
    js = _loud(fx, tmp_path / "r2", "--steps", "3", "--objective", "mlm", "--progress", "json")
    rows = [json.loads(x) for x in js.stderr.splitlines() if x.startswith('{"stage": "train"')]
    assert rows and rows[-1]["current"] == 3 and rows[-1]["total"] == 3
    assert all({"loss", "tokens_per_s", "seconds_left"} <= set(r) for r in rows)


def test_resuming_a_finished_run_says_so_and_changes_nothing(fx: dict[str, Path], finished: Path,
                                                             tmp_path: Path) -> None:
    out = _copy_run(finished, tmp_path / "r")
    before = {p: p.read_bytes() for p in [out / "log.jsonl", *sorted((out / "checkpoints").iterdir())]}
    result = _loud(fx, out, "--steps", "3", "--objective", "mlm", "--save-every", "1", "--resume")
    assert result.exit_code == 0, result.output
    assert "already finished: step 3" in result.stderr and "--steps 3" in result.stderr
    assert {p: p.read_bytes() for p in before} == before  # no duplicate eval line, no new checkpoint


def test_resuming_with_a_longer_run_says_what_the_schedule_does(fx: dict[str, Path], finished: Path,
                                                                tmp_path: Path) -> None:
    out = _copy_run(finished, tmp_path / "r")
    last_lr = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()][-1]["lr"]
    result = _loud(fx, out, "--steps", "6", "--objective", "mlm", "--save-every", "1", "--resume",
                   "--progress", "none")
    assert result.exit_code == 0, result.output
    (note,) = [x for x in result.stderr.splitlines() if "schedule is recomputed" in x]
    assert "--steps 6 (the run had --steps 3)" in note and f"from {last_lr:.3g} at its last step" in note
    rows = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines() if '"lr"' in x]
    assert f"to {rows[3]['lr']:.3g} at the next step" in note  # what step 4 really used
    assert "resumed" in result.stderr and "at step 3" in result.stderr


def test_a_changed_schedule_names_the_flags_that_keep_it(fx: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "r"
    first = _run(fx, out, "--time-budget", "0.5s", "--objective", "mlm")
    assert first.exit_code == 0, first.output
    result = _run(fx, out, "--steps", "50", "--objective", "mlm", "--resume")
    assert result.exit_code == 1
    assert "changed schedule ('budget' -> 'linear')" in result.output
    assert "pass --schedule budget --time-budget 0.5s" in result.output, result.output
    again = _run(fx, out, "--steps", "50", "--objective", "mlm", "--resume", "--schedule", "budget",
                 "--time-budget", "1s")
    assert again.exit_code == 0, again.output


def test_ctrl_c_names_the_checkpoint_and_the_command_that_resumes_it(fx: dict[str, Path], tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import shlex
    import signal

    from models import pretrain as loop

    original = loop._Job.train_step

    def step_then_ctrl_c(self, picks):  # type: ignore[no-untyped-def]
        row = original(self, picks)
        if self.state.step == 2 and not self.cfg.resume:
            os.kill(os.getpid(), signal.SIGINT)  # the user presses Ctrl-C during step 2
        return row

    monkeypatch.setattr(loop._Job, "train_step", step_then_ctrl_c)
    out = tmp_path / "r"
    result = _loud(fx, out, "--steps", "5", "--objective", "mlm", "--progress", "none")
    assert result.exit_code == 130
    ckpt = out / "checkpoints" / "ckpt-00000002.pt"
    assert ckpt.exists()
    lines = result.stderr.splitlines()
    assert lines[-2] == f"Interrupted after step 2: saved {ckpt}. Resume with:"
    command = shlex.split(lines[-1])
    assert command[:2] == ["subword", "pretrain"] and "--resume" in command and str(fx["corpus"]) in command
    resumed = _invoke(command[1:])
    assert resumed.exit_code == 0, resumed.output
    steps = [json.loads(x)["step"] for x in (out / "log.jsonl").read_text().splitlines() if '"loss"' in x]
    assert steps == [1, 2, 3, 4, 5]
