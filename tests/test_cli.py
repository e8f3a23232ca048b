"""Tests for the ``subword`` command line: help, train, encode, decode, inspect, progress, exit codes.

Most run in-process through click's CliRunner; a few run the real command in a subprocess for what
only a process shows (exit status, ``| head``, Ctrl-C). Ids are cross-checked against HF tokenizers
loading the file we wrote.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from _cli_helpers import CORPORA, make_text, require_training, run_subword

pytestmark = pytest.mark.usefixtures("_needs_training")


@pytest.fixture(scope="module")
def _needs_training() -> None:
    require_training()


@pytest.fixture(scope="module")
def cli_app() -> click.Group:
    require_training()
    from cli.main import cli

    return cli


def invoke(app: click.Group, args: list[str], input: str | bytes | None = None):
    return CliRunner().invoke(app, args, input=input, catch_exceptions=False)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(make_text(3000, seed=1), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def byte_tok(cli_app: click.Group, corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tok") / "byte.json"
    result = invoke(
        cli_app,
        ["train", "byte-bpe", str(corpus), "-o", str(out), "--vocab-size", "400",
         "--special-token", "<|endoftext|>", "--min-frequency", "2", "-q"],
    )
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def ws_tok(cli_app: click.Group, corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tok") / "ws.json"
    result = invoke(cli_app, ["train", "bpe", str(corpus), "-o", str(out), "--vocab-size", "300", "-q"])
    assert result.exit_code == 0, result.output
    return out


# ==== help and options ====


def _all_commands(app: click.Group) -> list[tuple[str, click.Command]]:
    return [("subword", app)] + [(f"subword {n}", c) for n, c in app.commands.items()]


def test_help_for_every_command(cli_app: click.Group) -> None:
    for flag in ("-h", "--help"):
        result = invoke(cli_app, [flag])
        assert result.exit_code == 0 and "Usage: subword" in result.output
    for name, command in cli_app.commands.items():
        result = invoke(cli_app, [name, "-h"])
        assert result.exit_code == 0, name
        assert "Examples:" in result.output, f"{name} has no examples in its epilog"


def test_every_option_has_help_text(cli_app: click.Group) -> None:
    missing = [
        f"{label} {param.opts[0]}"
        for label, command in _all_commands(cli_app)
        for param in command.params
        if isinstance(param, click.Option) and not (param.help or "").strip()
    ]
    assert not missing, f"options without help: {missing}"


def test_version(cli_app: click.Group) -> None:
    from importlib.metadata import version

    result = invoke(cli_app, ["--version"])
    assert result.exit_code == 0 and version("subword") in result.output


def test_every_trainer_field_is_an_option(cli_app: click.Group) -> None:
    """The options come from the registry's classes: a field added to any of them appears here without
    more code (``compat`` is the one hand-written option, since it picks the class)."""
    from cli.trainer_options import trainer_option_specs
    from subword.trainers import algorithms, compats, trainer_class

    train_opts = {opt for p in cli_app.commands["train"].params for opt in getattr(p, "opts", [])}
    classes = {trainer_class(a, c) for a in algorithms() for c in compats(a)}
    assert len(classes) == 5
    for cls in classes:
        specs = trainer_option_specs(cls)
        hidden = {f.name for f in dataclasses.fields(cls) if f.init and "cli" in f.metadata and f.metadata["cli"] is None}
        assert hidden <= {"compat", "end_of_word_suffix"}, (cls, hidden)  # the latter: WordPiece has none
        assert {s.field for s in specs} | hidden == {f.name for f in dataclasses.fields(cls) if f.init}, cls
        for spec in specs:
            assert spec.flag in train_opts, (cls, spec)
    assert {"--special-token", "--vocab-size", "--compat"} <= train_opts


@pytest.mark.parametrize(
    "module", ["cli", "cli.main", "cli.train", "cli.progress", "cli.trainer_options", "cli.codec", "cli.inspect_tokenizer"]
)
def test_docstring_examples(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, result


# ==== train ====


def test_train_byte_bpe_records_options_and_corpus(byte_tok: Path, corpus: Path) -> None:
    data = json.loads(byte_tok.read_text(encoding="utf-8"))
    from subword import Tokenizer

    tok = Tokenizer.from_file(byte_tok)
    assert tok.get_vocab_size() == 400
    assert data["pre_tokenizer"]["type"] == "ByteLevel" and data["decoder"]["type"] == "ByteLevel"
    assert tok.token_to_id("<|endoftext|>") == 0
    prov = tok.provenance
    assert prov["input"]["sources"] == [str(corpus)]
    assert prov["input"]["lines"] == 3000
    text = json.dumps(prov)
    # The options given on the command line are recorded somewhere in the provenance block.
    assert '"min_frequency": 2' in text and '"special_tokens": ["<|endoftext|>"]' in text


def test_train_is_byte_identical_when_repeated(cli_app: click.Group, corpus: Path, tmp_path: Path) -> None:
    outs = []
    for name in ("a.json", "b.json"):
        out = tmp_path / name
        assert invoke(cli_app, ["train", "bpe", str(corpus), "-o", str(out), "--vocab-size", "250", "-q"]).exit_code == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_train_bpe_loads_in_hf_and_gives_same_ids(ws_tok: Path, corpus: Path, cli_app: click.Group) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_file(str(ws_tok))
    lines = corpus.read_text(encoding="utf-8").splitlines()[:200]
    result = invoke(cli_app, ["encode", "-t", str(ws_tok)], input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.output
    ours = [list(map(int, row.split())) for row in result.stdout.splitlines()]
    assert ours == [e.ids for e in hf.encode_batch(lines)]


def test_train_without_input_uses_builtin_corpus(cli_app: click.Group, tmp_path: Path, monkeypatch) -> None:
    import corpora

    fake = tmp_path / "builtin.txt"
    fake.write_text(make_text(200, seed=5), encoding="utf-8")
    monkeypatch.setattr(corpora, "builtin_corpus", lambda **_: fake)
    out = tmp_path / "tok.json"
    result = invoke(cli_app, ["train", "byte-bpe", "-o", str(out), "--vocab-size", "300", "--progress", "none"])
    assert result.exit_code == 0, result.output
    assert "built-in corpus" in result.stderr
    from subword import Tokenizer

    assert Tokenizer.from_file(out).provenance["input"]["sources"] == ["<builtin>"]


def test_train_sample_and_max_lines(cli_app: click.Group, corpus: Path, tmp_path: Path) -> None:
    from subword import Tokenizer

    def corpus_hash() -> str:
        return Tokenizer.from_file(out).provenance["training"]["corpus"]["sha256"]

    out = tmp_path / "s.json"
    args = ["train", "bpe", str(corpus), "-o", str(out), "--vocab-size", "200", "-q"]
    assert invoke(cli_app, [*args, "--sample", "100", "--seed", "4"]).exit_code == 0
    first = Tokenizer.from_file(out).provenance["input"]
    assert first["lines"] == 100 and first["sample"] == 100
    first_hash = corpus_hash()
    assert invoke(cli_app, [*args, "--sample", "100", "--seed", "4"]).exit_code == 0
    assert corpus_hash() == first_hash
    assert invoke(cli_app, [*args, "--sample", "100", "--seed", "5"]).exit_code == 0
    assert corpus_hash() != first_hash
    assert invoke(cli_app, [*args, "--max-lines", "50"]).exit_code == 0
    assert Tokenizer.from_file(out).provenance["input"]["lines"] == 50


def test_train_from_glob_gz_and_jsonl(cli_app: click.Group, tmp_path: Path) -> None:
    import gzip

    (tmp_path / "a.txt.gz").write_bytes(gzip.compress(make_text(100, seed=2).encode()))
    (tmp_path / "b.txt").write_text(make_text(100, seed=3), encoding="utf-8")
    out = tmp_path / "g.json"
    result = invoke(cli_app, ["train", "bpe", str(tmp_path / "*.txt*"), "-o", str(out), "--vocab-size", "200", "-q"])
    assert result.exit_code == 0, result.output
    jl = tmp_path / "docs.jsonl"
    jl.write_text("".join(json.dumps({"text": line}) + "\n" for line in make_text(50).splitlines()))
    result = invoke(cli_app, ["train", "bpe", str(jl), "--jsonl-field", "text", "-o", str(out), "--vocab-size", "150", "-q"])
    assert result.exit_code == 0, result.output


def test_train_reads_stdin(cli_app: click.Group, tmp_path: Path) -> None:
    out = tmp_path / "in.json"
    result = invoke(cli_app, ["train", "bpe", "-", "-o", str(out), "--vocab-size", "150", "-q"], input=make_text(300))
    assert result.exit_code == 0, result.output
    assert out.exists()


def test_progress_json_lines(cli_app: click.Group, corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    result = invoke(
        cli_app, ["train", "byte-bpe", str(corpus), "-o", str(out), "--vocab-size", "400", "--progress", "json"]
    )
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    assert events, result.stderr
    assert all(set(e) == {"stage", "current", "total"} for e in events)
    stages = {e["stage"] for e in events}
    assert "read" in stages and len(stages) >= 2, stages
    assert result.stdout == ""


def test_quiet_prints_nothing_on_success(cli_app: click.Group, corpus: Path, tmp_path: Path) -> None:
    result = invoke(cli_app, ["train", "bpe", str(corpus), "-o", str(tmp_path / "q.json"), "--vocab-size", "100", "-q"])
    assert result.exit_code == 0 and result.output == ""


def test_progress_bar_renders_stages() -> None:
    import contextlib
    import io

    from cli.progress import ProgressReporter

    buf = io.StringIO()
    with contextlib.redirect_stderr(buf):
        rep = ProgressReporter("bar", units={"read": "bytes"})
        rep("read", 2_000_000, 4_000_000)
        rep("merge", 5, 10)
        rep("merge", 10, 10)
        rep.close()
    text = buf.getvalue()
    assert "read" in text and "2.0 MB/4.0 MB" in text and "100.0%" in text and text.endswith("\n")


# ==== encode / decode / inspect ====


def test_encode_formats_agree_with_hf(cli_app: click.Group, byte_tok: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_file(str(byte_tok))
    lines = ["Hello world", "café naïve 東京 ☃", "", "  two  spaces", "<|endoftext|>after"]
    text = "\n".join(lines) + "\n"
    ids = invoke(cli_app, ["encode", "-t", str(byte_tok)], input=text)
    tokens = invoke(cli_app, ["encode", "-t", str(byte_tok), "--format", "raw-tokens"], input=text)
    js = invoke(cli_app, ["encode", "-t", str(byte_tok), "--format", "json"], input=text)
    for result in (ids, tokens, js):
        assert result.exit_code == 0, result.output
        assert len(result.stdout.splitlines()) == len(lines)
    expected = hf.encode_batch(lines)
    assert [list(map(int, r.split())) for r in ids.stdout.splitlines()] == [e.ids for e in expected]
    assert [r.split(" ") if r else [] for r in tokens.stdout.splitlines()] == [e.tokens for e in expected]
    records = [json.loads(r) for r in js.stdout.splitlines()]
    for line, record, enc in zip(lines, records, expected):
        assert list(record) == ["ids", "tokens", "offsets"]
        assert record["ids"] == enc.ids
        # Offsets are characters of the line: each token covers text that is really there.
        for (start, end) in record["offsets"]:
            assert 0 <= start <= end <= len(line)
    # The special token is one id, not split.
    assert records[-1]["ids"][0] == 0 and records[-1]["tokens"][0] == "<|endoftext|>"


def test_encode_byte_offsets(cli_app: click.Group, byte_tok: Path) -> None:
    lines = ["café naïve 東京 ☃ 🙂", "plain ascii"]
    text = "\n".join(lines) + "\n"
    chars = invoke(cli_app, ["encode", "-t", str(byte_tok), "--format", "json"], input=text)
    raw = invoke(cli_app, ["encode", "-t", str(byte_tok), "--format", "json", "--byte-offsets"], input=text)
    for line, c, b in zip(lines, chars.stdout.splitlines(), raw.stdout.splitlines()):
        c_rec, b_rec = json.loads(c), json.loads(b)
        assert c_rec["ids"] == b_rec["ids"]
        data = line.encode("utf-8")
        for (cs, ce), (bs, be) in zip(c_rec["offsets"], b_rec["offsets"]):
            assert data[bs:be].decode("utf-8") == line[cs:ce]
    assert chars.stdout != raw.stdout


def test_encode_stream_equals_batch_and_crlf(cli_app: click.Group, byte_tok: Path, tmp_path: Path) -> None:
    text = make_text(50, seed=9)
    batch = invoke(cli_app, ["encode", "-t", str(byte_tok)], input=text)
    stream = invoke(cli_app, ["encode", "-t", str(byte_tok), "--stream"], input=text)
    crlf_file = tmp_path / "crlf.txt"
    crlf_file.write_bytes(text.replace("\n", "\r\n").encode())
    crlf = invoke(cli_app, ["encode", "-t", str(byte_tok), str(crlf_file)])
    assert batch.stdout == stream.stdout == crlf.stdout
    assert len(batch.stdout.splitlines()) == 50


def test_encode_decode_round_trip(cli_app: click.Group, byte_tok: Path) -> None:
    lines = make_text(40, seed=11).splitlines() + ["", "émoji 🙂 and tabs\tinside"]
    text = "\n".join(lines) + "\n"
    ids = invoke(cli_app, ["encode", "-t", str(byte_tok)], input=text)
    back = invoke(cli_app, ["decode", "-t", str(byte_tok)], input=ids.stdout)
    assert back.exit_code == 0, back.output
    assert back.stdout == text
    as_json = invoke(cli_app, ["encode", "-t", str(byte_tok), "--format", "json"], input=text)
    back_json = invoke(cli_app, ["decode", "-t", str(byte_tok)], input=as_json.stdout)
    assert back_json.stdout == text


def test_decode_specials_and_bad_ids(cli_app: click.Group, byte_tok: Path) -> None:
    ids = invoke(cli_app, ["encode", "-t", str(byte_tok)], input="<|endoftext|>hi\n").stdout
    assert invoke(cli_app, ["decode", "-t", str(byte_tok)], input=ids).stdout == "hi\n"
    kept = invoke(cli_app, ["decode", "-t", str(byte_tok), "--keep-special"], input=ids).stdout
    assert kept == "<|endoftext|>hi\n"
    bad = invoke(cli_app, ["decode", "-t", str(byte_tok)], input="1 2\n3 999999\n")
    assert bad.exit_code == 1 and "<stdin>:2" in bad.output and "999999" in bad.output
    word = invoke(cli_app, ["decode", "-t", str(byte_tok)], input="1 two\n")
    assert word.exit_code == 1 and "'two'" in word.output


def test_inspect_text_and_json(cli_app: click.Group, byte_tok: Path) -> None:
    text = invoke(cli_app, ["inspect", "-t", str(byte_tok)])
    assert text.exit_code == 0, text.output
    for needle in ("BPE", "400", "<|endoftext|> (0)", "ByteLevel", "sources"):
        assert needle in text.stdout, needle
    js = invoke(cli_app, ["inspect", "-t", str(byte_tok), "--json"])
    info = json.loads(js.stdout)
    assert info["model"] == "BPE" and info["vocab_size"] == 400
    assert info["added_tokens"][0] == {"id": 0, "content": "<|endoftext|>", "special": True}
    assert info["pre_tokenizer"]["type"] == "ByteLevel"
    assert info["provenance"]["input"]["lines"] == 3000


def test_inspect_reads_a_file_hf_wrote(cli_app: click.Group, tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="[UNK]"))
    hf.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=120, special_tokens=["[UNK]"], show_progress=False)
    hf.train_from_iterator(make_text(200).splitlines(), trainer)
    path = tmp_path / "hf.json"
    hf.save(str(path))
    result = invoke(cli_app, ["inspect", "-t", str(path)])
    assert result.exit_code == 0, result.output
    assert "training: not recorded" in result.stdout and "Whitespace" in result.stdout


# ==== real processes: exit codes, pipes, Ctrl-C ====


def test_process_exit_codes(byte_tok: Path, tmp_path: Path) -> None:
    assert run_subword("--version").returncode == 0
    usage = run_subword("train", "bpe", "--no-such-option")
    assert usage.returncode == 2 and b"No such option" in usage.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"model": ')
    runtime = run_subword("inspect", "-t", str(bad))
    assert runtime.returncode == 1
    assert runtime.stderr.decode().count("\n") == 1 and b"Traceback" not in runtime.stderr
    debug = run_subword("--debug", "inspect", "-t", str(bad))
    assert debug.returncode == 1 and b"Traceback" in debug.stderr


def test_broken_pipe_is_quiet(byte_tok: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_text(make_text(20000, seed=4), encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "encode", "-t", str(byte_tok), str(big)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    assert first.strip()
    proc.stdout.close()  # what `| head -1` does after its line
    err = proc.stderr.read()
    proc.wait(timeout=60)
    assert proc.returncode == 141, err
    assert err == b"", err


def test_shell_pipe_to_head(byte_tok: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_text(make_text(20000, seed=4), encoding="utf-8")
    cmd = f'"{sys.executable}" -m cli.main encode -t "{byte_tok}" "{big}" | head -n 3'
    done = subprocess.run(["bash", "-c", cmd], capture_output=True, timeout=60)
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 3
    assert b"Traceback" not in done.stderr and b"BrokenPipe" not in done.stderr


def _default_sigint() -> None:
    """Runs in the child before it starts: SIGINT back to its default action.

    A test run started in the background of a non-interactive shell (``pytest &``, some CI runners)
    ignores SIGINT, and children inherit that: Python then installs no KeyboardInterrupt handler, the
    signal is lost, and the test would see a run that finished instead of one that was interrupted.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_stage(proc: subprocess.Popen, stage: str) -> bytes:
    """Reads the child's JSON progress lines until one of ``stage`` arrives; returns what it read."""
    assert proc.stderr is not None
    seen = b""
    needle = f'"stage": "{stage}"'.encode()
    while needle not in seen:
        line = proc.stderr.readline()
        if not line:
            break
        seen += line
    return seen


def test_ctrl_c_while_reading_and_counting(tmp_path: Path) -> None:
    """SIGINT while the input is read (Python code runs between batches): exit 130, nothing left behind.

    The text comes through a pipe the test holds open, so the run cannot end before the signal: it is
    sent once the child has said it is reading, while the child still waits for the rest of its input.
    """
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "train", "bpe", "-", "-o", str(out_dir / "tok.json"),
         "--vocab-size", "5000", "--engine", "reference", "--progress", "json"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_default_sigint,
    )
    assert proc.stdin is not None
    text = make_text(20000, seed=8, words_per_line=(20, 40)).encode("utf-8")  # ~3 MB: past the first report
    writer = threading.Thread(target=_write_quietly, args=(proc.stdin, text), daemon=True)
    writer.start()
    seen = _wait_for_stage(proc, "read")
    assert proc.poll() is None, seen  # stdin is still open: the child cannot have finished
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    writer.join(timeout=60)
    err = seen + err
    assert proc.returncode == 130, err
    assert b"Traceback" not in err and b"Interrupted" in err
    assert sorted(os.listdir(out_dir)) == [], "files left behind"


def _write_quietly(pipe, data: bytes) -> None:
    """Writes ``data`` and leaves the pipe open (the child must not see the end of its input)."""
    try:
        pipe.write(data)
        pipe.flush()
    except (BrokenPipeError, ValueError):  # the child was interrupted first, as the test wants
        pass


def test_ctrl_c_during_rust_merges(tmp_path: Path) -> None:
    """The Rust trainer checks for signals through its progress callback, so SIGINT stops the merge loop.

    The signal goes out when the child reports its first merges; the corpus has about a million distinct
    random words, so 30,000 merges leave the loop seconds of work after that report.
    """
    rng = random.Random(8)
    letters = "abcdefghijklmnopqrstuvwxyz"
    corpus = tmp_path / "big.txt"
    corpus.write_text(
        "".join(" ".join("".join(rng.choices(letters, k=rng.randint(3, 12))) for _ in range(30)) + "\n"
                for _ in range(40000)),
        encoding="utf-8",
    )
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "train", "bpe", str(corpus), "-o", str(out_dir / "tok.json"),
         "--vocab-size", "30000", "--engine", "rust", "--progress", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_default_sigint,
    )
    seen = _wait_for_stage(proc, "merge")
    assert proc.poll() is None, f"the training ended before its merges could be interrupted: {seen!r}"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    err = seen + err
    assert proc.returncode == 130, err
    assert b"Traceback" not in err
    assert sorted(os.listdir(out_dir)) == [], "files left behind"


@pytest.mark.parametrize("algorithm", ["bpe", "byte-bpe"])
@pytest.mark.parametrize("line_ending", ["lf", "crlf"])
def test_cli_training_equals_hf_train_from_files(
    cli_app: click.Group, tmp_path: Path, algorithm: str, line_ending: str
) -> None:
    """`subword train` on a file == HF's Tokenizer.train([file]) with the same options: same vocab, ids, merges.

    This checks the whole path: the reader keeps line endings (``\\r\\n`` included) as HF's file
    reader does, and the CLI passes the options through unchanged.
    """
    tokenizers = pytest.importorskip("tokenizers")
    text = (CORPORA / "tinyshakespeare.txt").read_text(encoding="utf-8")[:400_000]
    src = tmp_path / "corpus.txt"
    src.write_bytes((text.replace("\n", "\r\n") if line_ending == "crlf" else text).encode("utf-8"))
    out = tmp_path / "ours.json"
    result = invoke(
        cli_app,
        ["train", algorithm, str(src), "-o", str(out), "--vocab-size", "1500", "--special-token", "<s>",
         "--min-frequency", "2", "-q"],
    )
    assert result.exit_code == 0, result.output
    hf = tokenizers.Tokenizer(tokenizers.models.BPE())
    extra = {}
    if algorithm == "byte-bpe":
        hf.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        extra["initial_alphabet"] = tokenizers.pre_tokenizers.ByteLevel.alphabet()
    else:
        hf.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=1500, min_frequency=2, special_tokens=["<s>"], show_progress=False, **extra
    )
    hf.train([str(src)], trainer)
    theirs = json.loads(hf.to_str())["model"]
    ours = json.loads(out.read_text(encoding="utf-8"))["model"]
    assert ours["vocab"] == theirs["vocab"]
    assert ours["merges"] == theirs["merges"]


def test_real_corpus_round_trip(cli_app: click.Group, tmp_path: Path) -> None:
    path = CORPORA / "tinyshakespeare.txt"
    out = tmp_path / "shakespeare.json"
    result = invoke(cli_app, ["train", "byte-bpe", str(path), "-o", str(out), "--vocab-size", "1000", "-q"])
    assert result.exit_code == 0, result.output
    sample = "".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:500])
    ids = invoke(cli_app, ["encode", "-t", str(out)], input=sample)
    assert invoke(cli_app, ["decode", "-t", str(out)], input=ids.stdout).stdout == sample
