"""Every option of every command either changes what the command produces, or is refused (exit 2).

The options are read from the click commands themselves: each needs a probe in ``TRAIN_PROBES`` /
``FILE_PROBES`` below, so an option added later without one fails ``test_every_option_has_a_probe``,
and an option that a command accepts but ignores fails ``test_train_option`` / ``test_file_option``.
That is the guarantee "no option silently ignored": a new option cannot be dropped without a failing
test.
``count``, ``compare``, ``pretrain`` and ``fill-mask`` are probed the same way in
``test_cli_options_jobs.py``, which also fails for a new command that neither file probes.

What "changes what the command produces" means:

* ``train``: the tokenizer file, without its provenance record (options recorded there but never used
  would otherwise look like changes), loaded and compared as data; for a ``.model`` its pieces,
  normalizer spec and sentencepiece's own ids on a probe text. Options that by design change nothing in
  the result (``--threads``, ``--engine``: the same tokenizer faster or slower) must instead reach the
  trainer that runs: the test captures the options object ``train()`` is called on.
* ``encode`` / ``decode`` / ``inspect``: standard output (or the exit status, for ``--encoding-errors``).
* ``--progress`` / ``-q``: standard error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cli.main import cli

# ==== inputs ====

# Words that exercise every option: accents (strip-accents, lowercase), mixed letters and digits
# (split-by-number), mixed scripts (split-by-unicode-script), CJK (character coverage), double spaces.
_WORDS = (
    "the of and to in is was for that with as on by at from his her they which this Tokenizer vocabulary "
    "merge merges pair pairs byte bytes text corpus line lines word words café naïve façade Zürich 東京 日本語 "
    "mp3 covid19 abc123 Tōkyō東京 42 1999 3.14 don't e-mail , . ; : ! ?"
).split()


def _corpus_text(lines: int, seed: int) -> str:
    import random

    rng = random.Random(seed)
    # Made-up words from syllables, so the word list is long enough for pruning and frequency cut-offs.
    syllables = ["ka", "to", "ri", "ne", "sa", "mu", "lo", "pi", "be", "dan", "ter", "ion", "ing", "str"]
    vocabulary = _WORDS + ["".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(400)]
    out = []
    for i in range(lines):
        words = [rng.choice(vocabulary) for _ in range(rng.randint(3, 12))]
        sep = "  " if i % 7 == 0 else " "  # some runs of spaces
        out.append(sep.join(words) + "\n")
    return "".join(out)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("inputs")
    text = _corpus_text(600, seed=3)
    files = {"corpus": root / "corpus.txt", "jsonl": root / "docs.jsonl", "badutf8": root / "bad.txt"}
    files["corpus"].write_text(text, encoding="utf-8")
    files["jsonl"].write_text("".join(json.dumps({"text": line, "id": i}) + "\n"
                                      for i, line in enumerate(text.splitlines())), encoding="utf-8")
    # Word counts of the first 200 lines, one file per pipeline (train --from-counts reads them).
    head = root / "head.txt"
    head.write_text("".join(text.splitlines(keepends=True)[:200]), encoding="utf-8")
    for algorithm in ("bpe", "byte-bpe", "wordpiece"):
        files[f"counts-{algorithm}"] = root / f"{algorithm}.swc"
        result = run(["count", str(head), "--for", algorithm, "-o", str(files[f"counts-{algorithm}"]), "-q"])
        assert result.exit_code == 0, result.output
    files["badutf8"].write_bytes(text.encode("utf-8")[:3000] + b"\xff\xfe broken\n" + text.encode("utf-8")[3000:6000])
    return files


def run(args: list[str], input: str | bytes | None = None) -> Any:
    return CliRunner().invoke(cli, args, input=input, catch_exceptions=False)


# ==== train ====

#: context -> (algorithm, arguments every run of that context gets, output suffix)
TRAIN_CONTEXTS: dict[str, tuple[str, list[str], str]] = {
    "bpe": ("bpe", ["--vocab-size", "160"], ".json"),
    "byte-bpe": ("byte-bpe", ["--vocab-size", "300"], ".json"),
    "wordpiece": ("wordpiece", ["--vocab-size", "160"], ".json"),
    # (sentencepiece's BPE needs a larger vocabulary before the split_by_* rules show on this text)
    "bpe-spm": ("bpe", ["--compat", "spm", "--vocab-size", "800", "--no-hard-vocab-limit"], ".model"),
    "unigram-spm": ("unigram", ["--vocab-size", "150", "--no-hard-vocab-limit"], ".model"),
    "unigram-hf": ("unigram", ["--vocab-size", "150"], ".json"),
}

_SPM = {"bpe-spm", "unigram-spm"}

# A probe: (extra base arguments, the option's arguments, what to observe), or None where the option
# cannot be probed in that context on its own; observe is "result" (the tokenizer), "trainer" (the
# value reaches the trainer), "stderr", or "exit" (the exit status, plus the result).
Probe = tuple[list[str], list[str], str]


def _p(option: list[str], *, base: list[str] | None = None, observe: str = "result") -> Probe:
    return (base or [], option, observe)


def _seed_probe(ctx: str) -> Probe:
    if ctx in _SPM:
        return _p(["--seed", "7"], base=["--input-sentence-size", "200"])
    return _p(["--seed", "7"], base=["--sample", "300"])


def _unk_token_probe(ctx: str) -> Probe:
    if ctx == "wordpiece":
        return _p(["--unk-token", "[MASK]"])
    if ctx in ("bpe", "byte-bpe"):
        return _p(["--unk-token", "<unk>"], base=["--special-token", "<unk>"])
    return _p(["--unk-token", "<unk>"])  # sentencepiece's rules call it --unk-piece


TRAIN_PROBES: dict[str, Callable[[str], Probe]] = {
    "compat": lambda ctx: _p(["--compat", "hf" if ctx in _SPM else "spm"]),
    "vocab_size": lambda ctx: _p(["--vocab-size", "280" if ctx == "byte-bpe" else "120"]),
    "min_frequency": lambda ctx: _p(["--min-frequency", "300"]),
    "special_tokens": lambda ctx: _p(["--special-token", "<x>"]),
    "initial_alphabet": lambda ctx: _p(["--initial-alphabet", "Ω"]),
    "limit_alphabet": lambda ctx: _p(["--limit-alphabet", "20"]),
    "max_token_length": lambda ctx: _p(["--max-token-length", "3"]),
    "continuing_subword_prefix": lambda ctx: _p(["--continuing-subword-prefix", "@@"],
                                                base=["--vocab-size", "700"] if ctx == "byte-bpe" else None),
    "end_of_word_suffix": lambda ctx: _p(["--end-of-word-suffix", "</w>"]),
    "unk_token": _unk_token_probe,
    "engine": lambda ctx: _p(["--engine", "reference"], observe="trainer"),
    "threads": lambda ctx: _p(["--threads", "1"], observe="trainer"),
    "criterion": lambda ctx: _p(["--criterion", "frequency"]),
    "lowercase": lambda ctx: _p(["--no-lowercase"]),
    "strip_accents": lambda ctx: _p(["--no-strip-accents"]),
    "max_input_chars_per_word": lambda ctx: _p(["--max-input-chars-per-word", "5"]),
    "character_coverage": lambda ctx: _p(["--character-coverage", "0.95"]),
    "normalization_rule_name": lambda ctx: _p(["--normalization-rule-name", "identity"]),
    "add_dummy_prefix": lambda ctx: _p(["--no-add-dummy-prefix"]),
    "remove_extra_whitespaces": lambda ctx: _p(["--no-remove-extra-whitespaces"]),
    "treat_whitespace_as_suffix": lambda ctx: _p(["--treat-whitespace-as-suffix"]),
    "split_by_whitespace": lambda ctx: _p(["--no-split-by-whitespace"]),
    "split_by_number": lambda ctx: _p(["--no-split-by-number"]),
    "split_by_unicode_script": lambda ctx: _p(["--no-split-by-unicode-script"]),
    "split_digits": lambda ctx: _p(["--split-digits"]),
    "allow_whitespace_only_pieces": lambda ctx: _p(["--allow-whitespace-only-pieces"],
                                                   base=["--no-remove-extra-whitespaces"] if ctx in _SPM else None),
    "max_sentencepiece_length": lambda ctx: _p(["--max-sentencepiece-length", "3"]),
    "max_sentence_length": lambda ctx: _p(["--max-sentence-length", "40"]),
    "byte_fallback": lambda ctx: _p(["--byte-fallback", "--vocab-size", "420"]),
    "required_chars": lambda ctx: _p(["--required-chars", "Ω"]),
    "user_defined_symbols": lambda ctx: _p(["--user-defined-symbol", "<x>"]),
    "control_symbols": lambda ctx: _p(["--control-symbol", "<c>"]),
    "unk_id": lambda ctx: _p(["--unk-id", "3"]),
    "bos_id": lambda ctx: _p(["--bos-id", "-1"]),
    "eos_id": lambda ctx: _p(["--eos-id", "-1"]),
    "pad_id": lambda ctx: _p(["--pad-id", "3"]),
    "unk_piece": lambda ctx: _p(["--unk-piece", "<UNK>"]),
    "bos_piece": lambda ctx: _p(["--bos-piece", "<BOS>"]),
    "eos_piece": lambda ctx: _p(["--eos-piece", "<EOS>"]),
    "pad_piece": lambda ctx: _p(["--pad-piece", "<PAD>"], base=["--pad-id", "3"] if ctx in _SPM else None),
    "hard_vocab_limit": lambda ctx: _p(["--hard-vocab-limit", "--vocab-size", "5000"], observe="exit"),
    "input_sentence_size": lambda ctx: _p(["--input-sentence-size", "100"]),
    "shuffle_input_sentence": lambda ctx: _p(["--no-shuffle-input-sentence"],
                                             base=["--input-sentence-size", "200"] if ctx in _SPM else None),
    "seed": _seed_probe,
    "shrinking_factor": lambda ctx: _p(["--shrinking-factor", "0.5"]),
    "num_sub_iterations": lambda ctx: _p(["--num-sub-iterations", "1"]),
    "seed_sentencepiece_size": lambda ctx: _p(["--seed-sentencepiece-size", "60"]),
    "num_threads": lambda ctx: _p(["--num-threads", "1"]),
    "from_counts": lambda ctx: _p(["--from-counts", "{counts-%s}" % TRAIN_CONTEXTS[ctx][0]]
                                  if ctx in ("bpe", "byte-bpe", "wordpiece") else ["--from-counts", "{counts-bpe}"]),
    "min_count": lambda ctx: _p(["--min-count", "2"], base=["--from-counts", "{counts-%s}" % TRAIN_CONTEXTS[ctx][0]]
                                if ctx in ("bpe", "byte-bpe", "wordpiece") else None),
    "max_lines": lambda ctx: _p(["--max-lines", "100"]),
    "max_bytes": lambda ctx: _p(["--max-bytes", "3k"]),
    "sample": lambda ctx: _p(["--sample", "100"]),
    "jsonl_field": lambda ctx: _p(["--jsonl-field", "text"], base=["{jsonl}"]),
    "encoding_errors": lambda ctx: _p(["--encoding-errors", "replace"], base=["{badutf8}"], observe="exit"),
    "progress_mode": lambda ctx: _p(["--progress", "json"], observe="stderr"),
    "quiet": lambda ctx: _p(["-q"], observe="stderr"),
}

_NOT_OPTIONS = {"algorithm", "inputs", "output", "help"}


def _train_params() -> list[str]:
    return [p.name for p in cli.commands["train"].params if p.name not in _NOT_OPTIONS and p.name]


def _fingerprint(path: Path) -> Any:
    """What a tokenizer file does, without the record of how it was made."""
    data = path.read_bytes()
    if path.suffix == ".model":
        import sentencepiece as spm

        from subword.formats.spm import SpmModelFile

        model = SpmModelFile.from_bytes(data)
        sp = spm.SentencePieceProcessor(model_proto=data)
        probe = "The café in Zürich, 東京 mp3 covid19 1999  words"
        return (model.pieces, model.normalizer_spec, sp.encode(probe), model.model_type)
    doc = json.loads(data)
    doc.get("model", {}).pop("provenance", None)
    doc.pop("provenance", None)
    return doc


def _train(ctx: str, extra: list[str], inputs: dict[str, Path], out: Path) -> Any:
    algorithm, base, _ = TRAIN_CONTEXTS[ctx]
    given = [str(inputs[a[1:-1]]) if a.startswith("{") else a for a in extra]
    source = [] if any(a.startswith(str(inputs["corpus"].parent)) for a in given) else [str(inputs["corpus"])]
    return run(["train", algorithm, *source, *base, *given, "-o", str(out), "--progress", "none"])


def _assert_names_an_option(message: str, args: list[str]) -> None:
    """A refusal names the option it refuses (one of those given)."""
    flags = {a.split("=")[0] for a in args if a.startswith("--")}
    flags |= {"--" + f[5:] for f in flags if f.startswith("--no-")}
    assert "Error:" in message and any(f in message for f in flags), message


#: (context, base arguments) -> the baseline's outcome (one training per distinct baseline).
_BASELINES: dict[tuple[str, tuple[str, ...]], tuple[int, Any, str]] = {}


def _normalized_stderr(text: str) -> str:
    return re.sub(r"\d+(\.\d+)?", "#", text)


def _outcome(ctx: str, extra: list[str], inputs: dict[str, Path], root: Path, name: str) -> tuple[int, Any, str]:
    out = root / (name + TRAIN_CONTEXTS[ctx][2])
    result = _train(ctx, extra, inputs, out)
    value = _fingerprint(out) if result.exit_code == 0 and out.exists() else None
    return result.exit_code, value, result.output


@pytest.mark.parametrize("ctx", list(TRAIN_CONTEXTS))
@pytest.mark.parametrize("option", _train_params())
def test_train_option(option: str, ctx: str, inputs: dict[str, Path], tmp_path: Path,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``subword train CTX --OPTION`` changes the trained tokenizer, or exits 2 naming the option."""
    base, probe, observe = TRAIN_PROBES[option](ctx)
    code, value, output = _outcome(ctx, [*base, *probe], inputs, tmp_path, "probe")
    if code == 2:
        _assert_names_an_option(output, [*base, *probe])
        return
    key = (ctx, tuple(base))
    if key not in _BASELINES:
        _BASELINES[key] = _outcome(ctx, base, inputs, tmp_path, "base")
    ref_code, ref_value, ref_output = _BASELINES[key]
    assert ref_code == 0 or observe == "exit", f"baseline failed: {ref_output}"
    if observe == "exit":
        assert (code, value) != (ref_code, ref_value), f"{probe} changed nothing in train {ctx}"
    elif observe == "stderr":
        assert code == 0, output
        assert _normalized_stderr(output) != _normalized_stderr(ref_output), f"{probe} changed nothing on stderr"
    elif observe == "trainer":
        assert code == 0, output
        _assert_reaches_trainer(ctx, [*base, *probe], option, inputs, tmp_path, monkeypatch)
    else:
        assert code == 0, output
        assert value != ref_value, f"{probe} was accepted by train {ctx} but changed nothing"


def _assert_reaches_trainer(ctx: str, args: list[str], option: str, inputs: dict[str, Path], tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The option's value is on the options object whose ``train`` runs."""
    from subword.trainers import trainer_class

    algorithm, base, _ = TRAIN_CONTEXTS[ctx]
    compat = "spm" if ctx in _SPM else "hf"
    cls = trainer_class(algorithm, compat)
    seen: list[Any] = []
    original = cls.train

    def spy(self: Any, *a: Any, **k: Any) -> Any:
        seen.append(self)
        return original(self, *a, **k)

    monkeypatch.setattr(cls, "train", spy)
    _outcome(ctx, args, inputs, tmp_path, "spied")
    assert seen, "the registry's trainer did not run"
    value = {"engine": "reference", "threads": 1}[option]
    assert getattr(seen[0], option) == value


def test_every_option_has_a_probe() -> None:
    """A new option of train, encode, decode or inspect needs a probe here: it cannot be silently ignored."""
    missing = [p for p in _train_params() if p not in TRAIN_PROBES]
    assert not missing, f"add probes for the new train options {missing}"
    for command in (*FILE_COMMANDS, "convert"):
        names = [p.name for p in cli.commands[command].params if p.name not in _FILE_NOT_OPTIONS | {"target"}]
        missing = [n for n in names if (command, n) not in FILE_PROBES]
        assert not missing, f"add probes for the new {command} options {missing}"


# ==== encode, decode, inspect: every file kind ====

FILE_COMMANDS = ("encode", "decode", "inspect")
_FILE_NOT_OPTIONS = {"tokenizer_spec", "source", "help"}

#: (command, option) -> (base arguments, the option's arguments, observe: "stdout" | "exit" | "stream").
FILE_PROBES: dict[tuple[str, str], tuple[list[str], list[str], str]] = {
    ("encode", "output_format"): ([], ["--format", "tokens"], "stdout"),
    ("encode", "byte_offsets"): (["--format", "json"], ["--byte-offsets"], "stdout"),
    ("encode", "add_special"): ([], ["--no-add-special"], "stdout"),
    ("encode", "stream"): ([], ["--stream"], "stream"),
    ("encode", "encoding_errors"): (["{badutf8}"], ["--encoding-errors", "replace"], "exit"),
    ("encode", "sample"): ([], ["--sample", "--alpha", "0"], "stdout"),
    ("encode", "alpha"): (["--sample", "--alpha", "0"], ["--alpha", "50"], "stdout"),
    ("encode", "nbest_size"): (["--sample", "--alpha", "0"], ["--nbest-size", "1"], "stdout"),
    ("encode", "seed"): (["--sample", "--alpha", "0"], ["--seed", "9"], "stdout"),
    ("encode", "nbest"): ([], ["--nbest", "2"], "stdout"),
    ("decode", "skip_special"): ([], ["--keep-special"], "stdout"),
    ("decode", "stream"): ([], ["--stream"], "stream"),
    ("inspect", "as_json"): ([], ["--json"], "stdout"),
    ("convert", "to"): ([], ["--to", "spm"], "exit"),  # a file, or the reason there is no exact one
}

#: file kind -> (algorithm and options to train it with, output name)
FILE_KINDS: dict[str, tuple[list[str], str]] = {
    "bpe.json": (["bpe", "--vocab-size", "160"], "bpe.json"),
    "byte-bpe.json": (["byte-bpe", "--vocab-size", "300", "--special-token", "<|endoftext|>"], "byte.json"),
    "wordpiece.json": (["wordpiece", "--vocab-size", "160"], "wp.json"),
    "unigram.json": (["unigram", "--vocab-size", "150"], "uni.json"),
    "unigram.model": (["unigram", "--vocab-size", "150", "--no-hard-vocab-limit"], "uni.model"),
    "bpe.model": (["bpe", "--compat", "spm", "--vocab-size", "150", "--no-hard-vocab-limit"], "bpe.model"),
}


@pytest.fixture(scope="module")
def tokenizer_files(inputs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("toks")
    files: dict[str, Path] = {}
    for kind, (args, name) in FILE_KINDS.items():
        out = root / name
        result = run(["train", args[0], str(inputs["corpus"]), *args[1:], "-o", str(out), "-q"])
        assert result.exit_code == 0, (kind, result.output)
        files[kind] = out
    files["vocab.txt"] = root / "vocab.txt"
    vocab = json.loads(files["wordpiece.json"].read_text(encoding="utf-8"))["model"]["vocab"]
    files["vocab.txt"].write_text("".join(t + "\n" for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])),
                                  encoding="utf-8")
    return files


def _command_input(command: str, tok: Path, inputs: dict[str, Path]) -> str:
    """What the command reads on stdin: text to encode, or ids (with the specials) to decode."""
    text = "The café in Zürich, 東京 mp3 covid19 1999  words and more words to segment\n" * 3 + "the line of text\n"
    if command != "decode":
        return text
    from subword import Tokenizer

    t = Tokenizer.from_file(tok)
    ids = t.encode_batch(text.splitlines(), add_special_tokens=True)
    specials = [t.token_to_id(s) for s in t.special_tokens][:2]
    return "".join(" ".join(map(str, [*specials, *e.ids])) + "\n" for e in ids)


def _file_run(command: str, tok: Path, args: list[str], inputs: dict[str, Path]) -> Any:
    if command == "convert":
        # OUT's name says tokenizer.json; --to may say otherwise. The "output" is the file written.
        out = tok.parent / f"converted-{len(args)}-{tok.name}.out.json"
        out.unlink(missing_ok=True)
        result = run(["convert", str(tok), str(out), *args])
        return _Converted(result.exit_code, result.output + (out.read_bytes().hex() if out.exists() else ""))
    given = [str(inputs[a[1:-1]]) if a.startswith("{") else a for a in args]
    stdin = None if any(a.startswith(str(inputs["corpus"].parent)) for a in given) else _command_input(command, tok, inputs)
    if command == "inspect":
        stdin = None
    return run([command, "-t", str(tok), *given], input=stdin)


@pytest.mark.parametrize("kind", [*FILE_KINDS, "vocab.txt"])
@pytest.mark.parametrize(("command", "option"), list(FILE_PROBES))
def test_file_option(command: str, option: str, kind: str, tokenizer_files: dict[str, Path],
                     inputs: dict[str, Path]) -> None:
    """``subword COMMAND -t KIND --OPTION`` changes the output, or exits 2 naming the option."""
    tok = tokenizer_files[kind]
    base, probe, observe = FILE_PROBES[(command, option)]
    result = _file_run(command, tok, [*base, *probe], inputs)
    if result.exit_code == 2:
        _assert_names_an_option(result.output, [*base, *probe])
        return
    ref = _file_run(command, tok, base, inputs)
    if observe == "stream":
        assert result.exit_code == 0 and ref.exit_code == 0, result.output
        _assert_streams(command, tok, inputs)
        return
    if observe == "exit":
        assert (result.exit_code, result.output) != (ref.exit_code, ref.output), f"{probe} changed nothing"
        return
    assert ref.exit_code == 0, ref.output
    assert result.exit_code == 0, result.output
    assert result.output != ref.output, f"{command} {probe} on {kind} was accepted but changed nothing"


class _Converted:
    """A convert run, shaped like a CliRunner result: its output is its messages plus the file written."""

    def __init__(self, exit_code: int, output: str) -> None:
        self.exit_code, self.output = exit_code, output


def _assert_streams(command: str, tok: Path, inputs: dict[str, Path]) -> None:
    """With --stream, the answer to a line arrives before the input ends (a real process and pipe)."""
    import select
    import subprocess
    import sys

    line = _command_input(command, tok, inputs).splitlines()[0] + "\n"
    proc = subprocess.Popen([sys.executable, "-m", "cli.main", command, "-t", str(tok), "--stream"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(line.encode("utf-8"))
        proc.stdin.flush()
        # Without streaming the line would wait for a full batch or the end of the input: no answer.
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, f"{command} --stream gave no answer before the input ended"
        assert proc.stdout.readline().strip()
    finally:
        proc.kill()
        proc.wait(timeout=30)
