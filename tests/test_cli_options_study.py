"""Every option of ``subword study`` reaches the work or changes what the command writes: the study's part
of the "no option silently ignored" guarantee (``test_cli_options.py`` and ``test_cli_options_jobs.py``
cover the other commands).

A real study takes seconds per option pair, so the probes spy instead: ``prepare`` and ``run_study`` are
replaced by recorders (``run_study`` returns a stub document, the renderers return fixed text), and each
option must change what they receive (the plan, the directory, the runner's arguments) or what the command
writes afterwards (``--json``, ``--html``, ``-q``). That the work itself honours what it receives is
``tests/test_study_cli.py``'s job (a real micro study, resume, ``--jobs``, Dask).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cli.main import cli

#: Arguments that are the command's subject or its help, not options to probe.
NOT_OPTIONS = {"help", "specs"}

#: option -> the arguments that set it to something other than the reference run's.
PROBES: dict[str, list[str]] = {
    "train": ["{corpus}"],
    "heldout": ["--heldout", "{corpus}"],
    "heldout_lines": ["--heldout-lines", "7"],
    "output_dir": ["-o", "{other_dir}"],
    "model": ["--model", "xlnet"],
    "preset": ["--preset", "mini"],
    "budget": ["--budget", "steps:3"],
    "seeds": ["--seeds", "2"],
    "seed": ["--seed", "5"],
    "batch_size": ["--batch-size", "3"],
    "seq_len": ["--seq-len", "17"],
    "lr": ["--lr", "0.01"],
    "device": ["--device", "auto"],
    "bootstrap": ["--bootstrap", "11"],
    "jobs": ["--jobs", "2"],
    "threads": ["--threads", "1"],
    "dask": ["--dask", "tcp://127.0.0.1:1"],
    "resume": ["--resume"],
    "json_out": ["--json", "{json}"],
    "html_out": ["--html", "{html}"],
    "quiet": ["-q"],
}


def test_every_study_option_has_a_probe() -> None:
    """A new option of ``study`` needs a probe here."""
    names = {p.name for p in cli.commands["study"].params} - NOT_OPTIONS
    assert names == set(PROBES), (names - set(PROBES), set(PROBES) - names)


def _observe(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, run: str, extra: list[str]) -> dict[str, Any]:
    """Run ``study`` with recorders in place of the work; what they received and what the command wrote."""
    import subword.study as study
    import subword.study.report as report

    seen: dict[str, Any] = {}

    def fake_prepare(plan: Any) -> Any:
        seen["plan"] = dataclasses.asdict(plan)
        return plan

    def fake_run_study(prepared: Any, output_dir: Path, **kwargs: Any) -> dict[str, Any]:
        seen["output_dir"] = Path(output_dir).name.replace(run, "RUN")  # the runs' own names aside
        seen["runner"] = {k: v for k, v in kwargs.items() if k != "progress"}
        (Path(output_dir) / "compare").mkdir(parents=True, exist_ok=True)
        (Path(output_dir) / "compare" / "compare.json").write_text("{}", encoding="utf-8")
        return {"stub": True, "timings": {"wall_s": 1.0, "overhead_s": 0.1}}

    monkeypatch.setattr(study, "prepare", fake_prepare)
    monkeypatch.setattr(study, "run_study", fake_run_study)
    monkeypatch.setattr(report, "render_html", lambda doc, compare_doc: "<html>stub</html>")
    monkeypatch.setattr(report, "render_terminal", lambda doc: "the tables\n")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a few words of text\n" * 5, encoding="utf-8")
    names = {"corpus": str(corpus), "other_dir": str(tmp_path / f"{run}-other"),
             "json": str(tmp_path / f"{run}.json"), "html": str(tmp_path / f"{run}.html")}
    args = ["study", "-t", "bpe:300", "-t", "wordpiece:300", "-o", str(tmp_path / f"{run}-dir"),
            *[a.format(**names) for a in extra]]
    result = CliRunner().invoke(cli, args, prog_name="subword")
    assert result.exit_code == 0, result.output
    out_dir = tmp_path / (f"{run}-other" if "-o" in extra else f"{run}-dir")
    seen["written"] = sorted(p.suffix for p in tmp_path.iterdir() if p.is_file() and p.name.startswith(run))
    seen["report"] = (out_dir / "report.html").exists()
    seen["stdout"] = result.stdout
    return seen


@pytest.mark.parametrize("option", sorted(PROBES))
def test_study_option_reaches_the_work(option: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The option changes the plan, the directory, the runner's arguments or what is written."""
    reference = _observe(monkeypatch, tmp_path, "ref", [])
    probe = _observe(monkeypatch, tmp_path, "probe", PROBES[option])
    assert reference != probe, f"--{option} changed nothing the study receives or writes"
