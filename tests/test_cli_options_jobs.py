"""Every option of ``count``, ``compare``, ``pretrain`` and ``fill-mask`` changes what the command
produces, or is refused (exit 2 naming it): the second half of the "no option silently ignored"
guarantee (``test_cli_options.py`` covers ``train``, ``encode``, ``decode``, ``inspect`` and ``convert``).

Each option needs a probe in ``PROBES``; ``test_every_command_and_option_has_a_probe`` fails for an
option (or a whole command) added without one. A probe is ``(reference arguments, probe arguments,
observe)``: both runs get the command's common arguments, and ``observe`` says what must differ:

* ``"result"``: what the command makes, read back as data with run-to-run noise left out: the
  ``.swc`` words, counts and pipeline (``count``); the JSON document without timings (``compare``);
  the JSON lines of ``log.jsonl`` without ``tokens_per_s``, the files written and the final weights
  (``pretrain``); standard output (``fill-mask``);
* ``"messages"``: standard error and output with the digits masked (progress, ``-q``);
* ``"exit"``: the exit status or the message (an option that turns a failure into a success, or a
  cluster address that cannot be reached);
* ``"spy"``: options that by design change nothing in the result (threads, device, compile, cache
  folder, sparse vs dense prediction: the same numbers by another road) must reach the function that
  runs; the test captures its arguments instead of the output.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cli.main import cli
from tests._pretrain_helpers import small_corpus, small_tokenizer

#: Commands covered here; the others are covered by test_cli_options.py.
COMMANDS = ("count", "compare", "pretrain", "fill-mask")
#: Arguments that are the command's subject, not options to probe.
NOT_OPTIONS = {
    "count": {"help", "output"},
    "compare": {"help"},
    "pretrain": {"help", "output_dir"},
    "fill-mask": {"help", "model_dir", "text"},
}

Probe = tuple[list[str], list[str], str]

# ==== probes (the {name} placeholders are files of the fixture) ====

PROBES: dict[str, dict[str, Probe]] = {
    "count": {
        "inputs": (["--for", "bpe", "{corpus}"], ["--for", "bpe", "{half}"], "result"),
        "for_": (["--pre-tokenizer", "whitespace"], ["--for", "byte-bpe"], "result"),
        "like": (["--for", "bpe"], ["--like", "{tok}"], "result"),
        "pre": (["--for", "bpe"], ["--pre-tokenizer", "whitespace-split"], "result"),
        "norm": (["--pre-tokenizer", "whitespace"], ["--pre-tokenizer", "whitespace", "--normalizer", "lowercase"],
                 "result"),
        "merge": (["--for", "bpe", "{half}"], ["--merge", "{swc_a}", "{swc_b}"], "result"),
        "dask_address": (["--for", "bpe"], ["--for", "bpe", "--dask", "tcp://127.0.0.1:9", "--dask-timeout", "0.5"],
                         "exit"),
        "dask_timeout": (["--for", "bpe"], ["--for", "bpe", "--dask-timeout", "3"], "exit"),
        "chunk_size": (["--for", "bpe"], ["--for", "bpe", "--chunk-size", "1Ki"], "exit"),
        "max_memory": (["--for", "bpe"], ["--for", "bpe", "--max-memory", "4Ki"], "messages"),
        "min_count": (["--for", "bpe"], ["--for", "bpe", "--min-count", "3"], "result"),
        "threads": (["--for", "bpe"], ["--for", "bpe", "--threads", "1"], "spy"),
        "encoding_errors": (["--for", "bpe", "{badutf8}"], ["--for", "bpe", "{badutf8}", "--encoding-errors",
                                                               "replace"], "exit"),
        "progress_mode": (["--for", "bpe"], ["--for", "bpe", "--progress", "json"], "messages"),
        "quiet": (["--for", "bpe"], ["--for", "bpe", "-q"], "messages"),
    },
    "compare": {
        "specs": (["-t", "{tok}", "-t", "{tok}"], ["-t", "{tok}", "-t", "{tok2}"], "result"),
        "sources": (["{corpus}"], ["{half}"], "result"),
        "names": ([], ["--names", "a,b"], "result"),
        "show": ([], ["--show", "5"], "messages"),
        "json_out": ([], ["--json", "{out}/other.json"], "result"),
        "html_out": ([], ["--html", "{out}/report.html"], "result"),
        "gold": ([], ["--gold", "{gold}"], "result"),
        "parallel": ([], ["--parallel", "{parallel}", "--pivot", "en"], "result"),
        "pivot": (["--parallel", "{parallel}", "--pivot", "en"], ["--parallel", "{parallel}", "--pivot", "de"],
                  "result"),
        "max_lines": ([], ["--max-lines", "50"], "result"),
        "sample": ([], ["--sample", "50"], "result"),
        "seed": (["--sample", "50"], ["--sample", "50", "--seed", "7"], "result"),
        "replicates": ([], ["--bootstrap", "0"], "result"),
        "color": ([], ["--color"], "messages"),
        "encoding_errors": (["{badutf8}"], ["{badutf8}", "--encoding-errors", "replace"], "exit"),
        "quiet": ([], ["-q"], "messages"),
    },
    "pretrain": {
        "inputs": ([], ["{half}"], "result"),
        "model": ([], ["--model", "roberta"], "result"),
        "preset": ([], ["--preset", "small"], "result"),
        "tokenizer": ([], ["--tokenizer", "{tok2}"], "result"),
        "steps": ([], ["--steps", "5"], "result"),
        "tokens": ([], ["--tokens", "40"], "result"),
        "time_budget": ([], ["--time-budget", "1s"], "result"),
        "batch_size": ([], ["--batch-size", "3"], "result"),
        "grad_accum": ([], ["--grad-accum", "2"], "result"),
        "seq_len": ([], ["--seq-len", "24"], "result"),
        "lr": ([], ["--lr", "0.01"], "result"),
        "warmup": ([], ["--warmup", "0"], "result"),
        "schedule": ([], ["--schedule", "cosine"], "result"),
        "weight_decay": ([], ["--weight-decay", "0.5", "--lr", "0.01"], "result"),
        "clip": ([], ["--clip", "0.01"], "result"),
        "objective": ([], ["--objective", "mlm+nsp"], "result"),
        "mask_rate": ([], ["--mask-rate", "0.4"], "result"),
        # Dynamic masking draws again in each epoch: the short corpus makes 8 steps several epochs.
        "masking": (["{tiny}", "--masking", "static", "--steps", "8"], ["{tiny}", "--masking", "dynamic", "--steps", "8"],
                    "result"),
        "whole_word": ([], ["--whole-word"], "result"),
        "prediction": ([], ["--prediction", "dense"], "spy"),
        "packing": ([], ["--packing", "document"], "result"),
        "split": ([], ["--split", "line"], "result"),
        "jsonl_field": (["{jsonl}"], ["{jsonl}", "--jsonl-field", "text"], "result"),
        "dropout": ([], ["--dropout", "0.3"], "result"),
        "teacher": (["--model", "distilbert", "--objective", "mlm"],
                    ["--model", "distilbert", "--objective", "mlm", "--teacher", "{teacher}"], "result"),
        "eval_lines": ([], ["--eval-lines", "5"], "result"),
        "eval_every": (["--eval-lines", "5"], ["--eval-lines", "5", "--eval-every", "2"], "result"),
        "save_every": ([], ["--save-every", "1"], "result"),
        "keep": (["--save-every", "1"], ["--save-every", "1", "--keep", "3"], "result"),
        "stats_every": ([], ["--stats-every", "1"], "result"),
        "resume": ([], ["--resume"], "exit"),
        "device": ([], ["--device", "cpu"], "spy"),
        "precision": ([], ["--precision", "bf16"], "result"),
        "compile_": ([], ["--compile"], "spy"),
        "seed": ([], ["--seed", "5"], "result"),
        "cache_dir": ([], ["--cache-dir", "{out}/other-cache"], "spy"),
        "progress": ([], ["--progress", "json"], "messages"),
        # Not a terminal: a line for the first and the last of the 4 steps, or (every microsecond) for each.
        "progress_every": ([], ["--progress-every", "0.000001"], "messages"),
        "quiet": ([], ["-q"], "messages"),
    },
    "fill-mask": {
        "top_k": ([], ["--top-k", "2"], "result"),
        "as_json": ([], ["--json"], "result"),
    },
}

#: What a spied option must set on the object the command hands over: (attribute, value).
SPIED: dict[tuple[str, str], tuple[str, Any]] = {
    ("count", "threads"): ("threads", 1),
    ("pretrain", "prediction"): ("prediction", "dense"),
    ("pretrain", "device"): ("device", "cpu"),
    ("pretrain", "compile_"): ("compile", True),
    ("pretrain", "cache_dir"): ("cache_dir", "other-cache"),
}


def test_every_command_and_option_has_a_probe() -> None:
    """A new command or option needs a probe (here or in test_cli_options.py): none is silently ignored."""
    elsewhere = {"train", "encode", "decode", "inspect", "convert", "study"}  # study: test_cli_options_study.py
    assert set(cli.commands) <= elsewhere | set(COMMANDS), f"probe the new commands {set(cli.commands) - elsewhere}"
    for command in COMMANDS:
        names = [p.name for p in cli.commands[command].params if p.name not in NOT_OPTIONS[command]]
        missing = [n for n in names if n not in PROBES[command]]
        assert not missing, f"add probes for the new {command} options {missing}"
        stale = set(PROBES[command]) - set(names)
        assert not stale, f"probes for {command} options that no longer exist: {stale}"


# ==== fixtures ====


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("jobs")
    corpus = small_corpus(root, lines=600)
    text = corpus.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    f: dict[str, Path] = {"corpus": corpus, "tok": small_tokenizer(root, corpus), "cache": root / "cache"}
    other = root / "other"
    other.mkdir()
    f["tok2"] = small_tokenizer(other, corpus, vocab_size=300)
    f["half"] = root / "half.txt"
    f["half"].write_text("".join(lines[:300]), encoding="utf-8")
    f["tiny"] = root / "tiny.txt"  # a few sequences only: several epochs in a short run
    f["tiny"].write_text("".join([line for line in lines if line.strip()][:3]), encoding="utf-8")
    f["jsonl"] = root / "docs.jsonl"
    f["jsonl"].write_text("".join(json.dumps({"text": line.strip(), "n": i}) + "\n"
                                  for i, line in enumerate(lines[:300]) if line.strip()), encoding="utf-8")
    f["badutf8"] = root / "bad.txt"
    f["badutf8"].write_bytes(text.encode("utf-8")[:3000] + b"\xff\xfe broken\n" + text.encode("utf-8")[3000:6000])
    f["gold"] = root / "gold.tsv"
    f["gold"].write_text("reading\tread ing\nwritten\twrit ten\nfunctions\tfunction s\n", encoding="utf-8")
    f["parallel"] = root / "parallel"
    f["parallel"].mkdir()
    for lang, sample in (("en", lines[:50]), ("de", [line.upper() for line in lines[:50]])):
        (f["parallel"] / f"{lang}.txt").write_text("".join(sample), encoding="utf-8")
    for name, part in (("swc_a", lines[:300]), ("swc_b", lines[300:])):
        src = root / f"{name}.txt"
        src.write_text("".join(part), encoding="utf-8")
        f[name] = root / f"{name}.swc"
        result = run(["count", str(src), "--for", "bpe", "-o", str(f[name]), "-q"])
        assert result.exit_code == 0, result.output
    teacher = root / "teacher"
    result = run(_pretrain_common(f, teacher) + ["--steps", "2", "-q"])
    assert result.exit_code == 0, result.output
    f["teacher"] = teacher
    f["model_dir"] = teacher
    return f


def run(args: list[str], input: str | None = None) -> Any:
    return CliRunner().invoke(cli, args, input=input, catch_exceptions=False)


def _fill(args: list[str], f: dict[str, Path], out: Path) -> list[str]:
    def one(a: str) -> str:
        return re.sub(r"\{(\w+)\}", lambda m: str(out) if m[1] == "out" else str(f[m[1]]), a)

    return [one(a) for a in args]


def _pretrain_common(f: dict[str, Path], out: Path) -> list[str]:
    return ["pretrain", "--model", "bert", "--tokenizer", str(f["tok"]), "-o", str(out), "--batch-size", "2",
            "--seq-len", "16", "--cache-dir", str(f["cache"]), "--objective", "mlm"]


def _common(command: str, f: dict[str, Path], out: Path, extra: list[str]) -> list[str]:
    """The whole command line: the command's subject, then the probe's arguments."""
    if command == "count":
        # A named input (a file placeholder without an option before it) replaces the default corpus.
        inputs = [] if any(a.startswith("{") and (i == 0 or not extra[i - 1].startswith("-"))
                           for i, a in enumerate(extra)) else [str(f["corpus"])]
        return ["count", *inputs, "-o", str(out / "out.swc")]
    if command == "compare":
        has_specs = "-t" in extra
        has_source = any(a in ("{corpus}", "{half}", "{badutf8}") for a in extra)
        return ["compare", *([] if has_specs else ["-t", str(f["tok"]), "-t", str(f["tok2"])]),
                *([] if has_source else [str(f["corpus"])]), "--max-lines", "200", "--bootstrap", "20",
                "--show", "2", "--no-color", "--json", str(out / "out.json")]
    if command == "pretrain":
        inputs = [] if any(a in ("{half}", "{tiny}", "{jsonl}") for a in extra) else [str(f["corpus"])]
        # One length for every run; a probe of another length (--tokens, --time-budget) replaces it.
        length = [] if {"--tokens", "--time-budget"} & set(extra) else ["--steps", "4"]
        return [*_pretrain_common(f, out / "run"), *length, *inputs]
    return ["fill-mask", "-m", str(f["model_dir"]), "the [MASK] of the list"]


def _invoke(command: str, f: dict[str, Path], out: Path, extra: list[str]) -> Any:
    out.mkdir(parents=True, exist_ok=True)
    args = _common(command, f, out, extra)
    if command == "count" and "--merge" in extra:
        args = ["count", "-o", str(out / "out.swc")]
    return run([*args, *_fill(extra, f, out)])


# ==== what a run produced ====


def _result(command: str, out: Path, result: Any) -> Any:
    if command == "count":
        from subword.counts import WordCounts

        path = out / "out.swc"
        if not path.exists():
            return None
        counts = WordCounts.load(path)
        return sorted(counts.words()), json.dumps(counts.header()["pipeline"], sort_keys=True)
    if command == "compare":
        docs = []
        for path in sorted(out.glob("*.json")) + sorted(out.glob("*.html")):
            if path.suffix == ".json":
                docs.append((path.name, _without_timings(json.loads(path.read_text(encoding="utf-8")))))
            else:
                docs.append((path.name, "html"))
        return docs
    if command == "pretrain":
        run_dir = out / "run"
        log = [{k: v for k, v in json.loads(line).items() if k != "tokens_per_s"}
               for line in (run_dir / "log.jsonl").read_text(encoding="utf-8").splitlines()]
        written = sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*") if p.is_file())
        weights = hashlib.sha256((run_dir / "model" / "model.safetensors").read_bytes()).hexdigest()
        return log, written, weights
    return result.output


def _without_timings(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: _without_timings(v) for k, v in doc.items() if k not in ("mb_per_s", "seconds", "created")}
    if isinstance(doc, list):
        return [_without_timings(v) for v in doc]
    return doc


def _messages(result: Any, out: Path) -> str:
    """The output with the run's own folder and every number (times, rates) masked."""
    return re.sub(r"\d+", "0", result.output.replace(str(out), "OUT"))


def _assert_names_an_option(output: str, args: list[str]) -> None:
    options = {a.split("=")[0] for a in args if a.startswith("-")}
    assert any(o in output for o in options), f"exit 2 without naming one of {options}: {output}"


# ==== the probes ====


@pytest.mark.parametrize(("command", "option"), [(c, o) for c in COMMANDS for o in PROBES[c]])
def test_option(command: str, option: str, files: dict[str, Path], tmp_path: Path,
                tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """``subword COMMAND --OPTION`` changes what the command produces, or exits 2 naming the option."""
    ref_args, probe_args, observe = PROBES[command][option]
    if observe == "spy":
        _assert_reaches(command, option, probe_args, files, tmp_path, monkeypatch)
        return
    probe = _invoke(command, files, tmp_path / "probe", probe_args)
    if probe.exit_code == 2:
        _assert_names_an_option(probe.output, probe_args)
        return
    ref_code, ref_output, want = _reference(command, ref_args, files, tmp_path_factory)
    if observe == "exit":
        assert (probe.exit_code, _messages(probe, tmp_path / "probe")) != (ref_code, ref_output), \
            f"{command} {probe_args} changed nothing"
        return
    assert ref_code == 0, ref_output
    assert probe.exit_code == 0, probe.output
    if observe == "messages":
        assert _messages(probe, tmp_path / "probe") != ref_output, f"{command} {probe_args} changed no message"
        return
    got = _result(command, tmp_path / "probe", probe)
    assert got != want, f"{command} {probe_args} was accepted but changed nothing"


#: Reference runs, shared by the probes with the same reference arguments (most have none).
_REFERENCES: dict[tuple[str, ...], tuple[int, str, Any]] = {}


def _reference(command: str, ref_args: list[str], files: dict[str, Path],
               tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str, Any]:
    key = (command, *ref_args)
    if key not in _REFERENCES:
        out = tmp_path_factory.mktemp("ref")
        ref = _invoke(command, files, out, ref_args)
        result = _result(command, out, ref) if ref.exit_code == 0 else None
        _REFERENCES[key] = (ref.exit_code, _messages(ref, out), result)
    return _REFERENCES[key]


def _assert_reaches(command: str, option: str, probe_args: list[str], f: dict[str, Path], tmp_path: Path,
                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The option's value arrives where the work is done (the spied function's arguments)."""
    attribute, value = SPIED[(command, option)]
    seen: list[Any] = []
    if command == "count":
        import subword.counts

        real = subword.counts.Counter

        class Spy(real):  # type: ignore[misc, valid-type]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                seen.append(kwargs)
                super().__init__(*args, **kwargs)

        monkeypatch.setattr(subword.counts, "Counter", Spy)
        monkeypatch.setattr("cli.count.Counter", Spy, raising=False)
        result = _invoke(command, f, tmp_path / "probe", probe_args)
        assert result.exit_code == 0, result.output
        assert seen and seen[0].get(attribute) == value, seen
        return
    import models.pretrain

    def spy(config: Any, **kwargs: Any) -> dict[str, Any]:
        seen.append(config)
        return {}

    monkeypatch.setattr(models.pretrain, "pretrain", spy)
    result = _invoke(command, f, tmp_path / "probe", probe_args)
    assert seen, result.output
    got = getattr(seen[0], attribute)
    if attribute == "cache_dir":
        got = Path(got).name
    assert got == value, (attribute, got)
