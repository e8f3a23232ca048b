"""Bad input, end to end through the CLI (issue 2, item 7): every case ends in a clear message and
the documented exit code, never a traceback, and never a half-written output file.

Exit codes: 2 for bad command lines (unknown options, bad values), 1 for bad data or files.
"""

from __future__ import annotations

import gzip
import json
import random
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from _cli_helpers import make_text, require_training


@pytest.fixture(scope="module")
def cli_app() -> click.Group:
    require_training()
    from cli.main import cli

    return cli


def invoke(app: click.Group, args: list[str], input: str | bytes | None = None):
    return CliRunner().invoke(app, args, input=input, catch_exceptions=False)


def train(app: click.Group, inputs: list[Path | str], out: Path, *extra: str, algorithm: str = "bpe", input=None):
    return invoke(app, ["train", algorithm, *map(str, inputs), "-o", str(out), *extra], input=input)


def assert_clean_failure(result, code: int, *needles: str) -> None:
    assert result.exit_code == code, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in result.output, (needle, result.output)


@pytest.fixture(scope="module")
def good_tok(cli_app: click.Group, tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("good")
    src = d / "c.txt"
    src.write_text(make_text(500), encoding="utf-8")
    out = d / "tok.json"
    assert train(cli_app, [src], out, "--vocab-size", "300", "-q", algorithm="byte-bpe").exit_code == 0
    return out


# ==== empty and word-less input ====


@pytest.mark.parametrize("algorithm", ["bpe", "byte-bpe"])
def test_empty_file(cli_app: click.Group, tmp_path: Path, algorithm: str) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    out = tmp_path / "tok.json"
    result = train(cli_app, [empty], out, algorithm=algorithm)
    assert_clean_failure(result, 1, "empty", str(empty))
    assert not out.exists()


def test_empty_stdin(cli_app: click.Group, tmp_path: Path) -> None:
    out = tmp_path / "tok.json"
    assert_clean_failure(train(cli_app, ["-"], out, input=b""), 1, "empty")
    assert not out.exists()


@pytest.mark.parametrize("algorithm", ["bpe", "byte-bpe"])
def test_only_whitespace(cli_app: click.Group, tmp_path: Path, algorithm: str) -> None:
    blank = tmp_path / "blank.txt"
    blank.write_text(" \n\t\n\n   \r\n")
    out = tmp_path / "tok.json"
    assert_clean_failure(train(cli_app, [blank], out, algorithm=algorithm), 1, "no words", "whitespace")
    assert not out.exists()


def test_only_punctuation_is_text_for_whitespace_bpe(cli_app: click.Group, tmp_path: Path) -> None:
    """HF's Whitespace pre-tokenizer makes words of punctuation runs, so this trains (and says how far it got)."""
    punct = tmp_path / "punct.txt"
    punct.write_text("!!! ... ??? ,,, !!! ...\n" * 20)
    out = tmp_path / "tok.json"
    result = train(cli_app, [punct], out, "--vocab-size", "50")
    assert result.exit_code == 0, result.output
    from subword import Tokenizer

    vocab = Tokenizer.from_file(out).get_vocab()
    assert {"!", ".", "?", ","} <= set(vocab)


# ==== binary files and encodings ====


def test_binary_file_named_explicitly(cli_app: click.Group, tmp_path: Path) -> None:
    blob = tmp_path / "image.png"
    blob.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4)
    out = tmp_path / "tok.json"
    assert_clean_failure(train(cli_app, [blob], out), 1, str(blob), "binary")
    assert_clean_failure(train(cli_app, [blob], out, "--encoding-errors", "replace"), 1, "binary")
    assert not out.exists()


def test_binary_file_in_a_directory_is_skipped_with_a_warning(cli_app: click.Group, tmp_path: Path) -> None:
    d = tmp_path / "data"
    d.mkdir()
    (d / "text.txt").write_text(make_text(100), encoding="utf-8")
    (d / "blob.bin").write_bytes(bytes(range(256)))
    out = tmp_path / "tok.json"
    result = train(cli_app, [d], out, "--vocab-size", "120")
    assert result.exit_code == 0, result.output
    assert "warning: skipping" in result.stderr and "blob.bin" in result.stderr


def test_invalid_utf8_names_file_and_line(cli_app: click.Group, tmp_path: Path) -> None:
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("first line\nsecond line\nthird caf\xe9 line\n".encode("latin-1"))
    out = tmp_path / "tok.json"
    assert_clean_failure(train(cli_app, [bad], out), 1, f"{bad}:3", "invalid UTF-8", "--encoding-errors replace")
    assert not out.exists()


def test_invalid_utf8_replaced_on_request(cli_app: click.Group, tmp_path: Path) -> None:
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("caf\xe9 caf\xe9 caf\xe9\n".encode("latin-1") * 10)
    out = tmp_path / "tok.json"
    result = train(cli_app, [bad], out, "--encoding-errors", "replace", "--vocab-size", "30")
    assert result.exit_code == 0, result.output
    from subword import Tokenizer

    assert "\ufffd" in Tokenizer.from_file(out).get_vocab()


def test_invalid_utf8_at_encode_time(cli_app: click.Group, good_tok: Path) -> None:
    result = invoke(cli_app, ["encode", "-t", str(good_tok)], input=b"ok\nbad \xff\n")
    assert_clean_failure(result, 1, "<stdin>:2", "invalid UTF-8")
    replaced = invoke(cli_app, ["encode", "-t", str(good_tok), "--encoding-errors", "replace"], input=b"ok\nbad \xff\n")
    assert replaced.exit_code == 0 and len(replaced.stdout.splitlines()) == 2


def test_truncated_gzip_input(cli_app: click.Group, tmp_path: Path) -> None:
    gz = tmp_path / "corpus.txt.gz"
    gz.write_bytes(gzip.compress(make_text(3000).encode())[:3000])
    assert_clean_failure(train(cli_app, [gz], tmp_path / "tok.json"), 1, "corrupt or truncated")


def test_jsonl_without_the_field(cli_app: click.Group, tmp_path: Path) -> None:
    jl = tmp_path / "docs.jsonl"
    jl.write_text('{"text": "a b"}\n{"body": "c"}\n')
    result = train(cli_app, [jl], tmp_path / "tok.json", "--jsonl-field", "text")
    assert_clean_failure(result, 1, f"{jl}:2", "'text'")


# ==== one enormous line ====


@pytest.mark.slow
def test_single_100mb_line(cli_app: click.Group, tmp_path: Path) -> None:
    """100 MB without a newline trains in reasonable time (the reader never needs line breaks)."""
    rng = random.Random(0)
    words = [f"w{rng.randrange(5000)}" for _ in range(200_000)]
    chunk = (" ".join(words) + " ").encode()
    big = tmp_path / "one_line.txt"
    with big.open("wb") as f:
        written = 0
        while written < 100_000_000:
            f.write(chunk)
            written += len(chunk)
    out = tmp_path / "tok.json"
    started = time.monotonic()
    result = train(cli_app, [big], out, "--vocab-size", "400", "-q", algorithm="byte-bpe")
    elapsed = time.monotonic() - started
    assert result.exit_code == 0, result.output
    from subword import Tokenizer

    prov = Tokenizer.from_file(out).provenance["input"]
    assert prov["lines"] == 1 and prov["bytes_read"] >= 100_000_000
    assert elapsed < 120, f"took {elapsed:.0f} s"


def test_max_bytes_smaller_than_the_first_line(cli_app: click.Group, tmp_path: Path) -> None:
    src = tmp_path / "long.txt"
    src.write_text("word " * 1000 + "\n")
    result = train(cli_app, [src], tmp_path / "tok.json", "--max-bytes", "1k")
    assert_clean_failure(result, 1, "empty", "--max-bytes")


# ==== vocabulary sizes ====


def test_byte_level_vocab_smaller_than_alphabet(cli_app: click.Group, tmp_path: Path) -> None:
    src = tmp_path / "c.txt"
    src.write_text(make_text(50))
    out = tmp_path / "tok.json"
    result = train(cli_app, [src], out, "--vocab-size", "100", algorithm="byte-bpe")
    assert_clean_failure(result, 2, "256")
    result = train(cli_app, [src], out, "--vocab-size", "257", "--special-token", "<a>", "--special-token", "<b>",
                   algorithm="byte-bpe")
    assert_clean_failure(result, 2, "minimum is 258")
    assert not out.exists()


def test_whitespace_vocab_smaller_than_alphabet(cli_app: click.Group, tmp_path: Path) -> None:
    src = tmp_path / "c.txt"
    src.write_text("abcdefghij klmnopqrst\n" * 5)  # 20 distinct characters
    out = tmp_path / "tok.json"
    result = train(cli_app, [src], out, "--vocab-size", "5")
    assert_clean_failure(result, 1, "20")
    assert not out.exists()


def test_vocab_larger_than_reachable(cli_app: click.Group, tmp_path: Path) -> None:
    src = tmp_path / "c.txt"
    src.write_text("low lower lowest\n" * 3)
    out = tmp_path / "tok.json"
    result = train(cli_app, [src], out, "--vocab-size", "10000")
    assert result.exit_code == 0, result.output
    from subword import Tokenizer

    reached = Tokenizer.from_file(out).get_vocab_size()
    assert reached < 10000
    assert f"reached a vocabulary of {reached} tokens, not the 10000" in result.stderr


@pytest.mark.parametrize("value", ["0", "-5", "abc"])
def test_bad_vocab_size_values(cli_app: click.Group, tmp_path: Path, value: str) -> None:
    src = tmp_path / "c.txt"
    src.write_text(make_text(10))
    assert_clean_failure(train(cli_app, [src], tmp_path / "t.json", "--vocab-size", value), 2)


# ==== special tokens in the text ====


@pytest.mark.parametrize("algorithm", ["bpe", "byte-bpe"])
def test_special_token_in_text_is_never_merged_or_split(cli_app: click.Group, tmp_path: Path, algorithm: str) -> None:
    special = "<|endoftext|>"
    lines = make_text(400, seed=2).splitlines()
    src = tmp_path / "c.txt"
    src.write_text("".join(f"{line}{special}\n" for line in lines), encoding="utf-8")
    out = tmp_path / "tok.json"
    result = train(cli_app, [src], out, "--vocab-size", "500", "--special-token", special, "-q", algorithm=algorithm)
    assert result.exit_code == 0, result.output
    from subword import Tokenizer

    tok = Tokenizer.from_file(out)
    special_id = tok.token_to_id(special)
    assert special_id == 0
    # Like HF's trainer, ours counts the special token's text as ordinary text (so pieces such as
    # "endoftext" may be learned), but no learned token holds the special token or glues it to its
    # neighbours ("world<|endoftext|>"), and at encode time it is matched whole, first.
    data = json.loads(out.read_text(encoding="utf-8"))
    learned = [t for t in data["model"]["vocab"] if t != special]
    assert not [t for t in learned if "<|endoftext" in t or "endoftext|>" in t]
    encoded = invoke(cli_app, ["encode", "-t", str(out), "--format", "json"], input=f"hello{special}world\n")
    record = json.loads(encoded.stdout)
    assert record["ids"].count(special_id) == 1
    assert special in record["tokens"]
    tokenizers = pytest.importorskip("tokenizers")
    assert tokenizers.Tokenizer.from_file(str(out)).encode(f"hello{special}world").ids == record["ids"]


# ==== broken tokenizer files ====


@pytest.mark.parametrize(
    "content",
    [b"", b"not json at all", b'{"model": ', b'{"model": 3}', b'{"version": "1.0"}', b"\xff\xfe\x00"],
    ids=["empty", "garbage", "truncated", "wrong-shape", "no-model", "binary"],
)
@pytest.mark.parametrize("command", ["encode", "decode", "inspect"])
def test_corrupt_tokenizer_file(cli_app: click.Group, tmp_path: Path, content: bytes, command: str) -> None:
    bad = tmp_path / "tokenizer.json"
    bad.write_bytes(content)
    result = invoke(cli_app, [command, "-t", str(bad)], input="1 2\n")
    assert_clean_failure(result, 1, "cannot load tokenizer")
    assert len(result.output.strip().splitlines()) == 1


def test_truncated_real_tokenizer_file(cli_app: click.Group, good_tok: Path, tmp_path: Path) -> None:
    data = good_tok.read_bytes()
    bad = tmp_path / "half.json"
    bad.write_bytes(data[: len(data) // 2])
    assert_clean_failure(invoke(cli_app, ["encode", "-t", str(bad)], input="hi\n"), 1, "cannot load tokenizer", str(bad))


def test_missing_tokenizer_file_is_a_usage_error(cli_app: click.Group, tmp_path: Path) -> None:
    assert_clean_failure(invoke(cli_app, ["encode", "-t", str(tmp_path / "nope.json")], input="x\n"), 2, "does not exist")


# ==== command-line mistakes ====


@pytest.mark.parametrize(
    "args",
    [
        ["--frobnicate"],
        ["train", "bpe", "--frobnicate"],
        ["train", "word-piece", "-o", "x.json"],
        ["train", "bpe", "-o", "x.json", "--criterion", "frequency"],  # a wordpiece-only option
        ["train", "bpe"],  # -o is required
        ["train", "bpe", "-o", "x.json", "--engine", "fast"],
        ["train", "bpe", "-o", "x.json", "--max-bytes", "lots"],
        ["encode"],  # -t is required
        ["encode", "-t", "x.json", "--format", "xml"],
        ["nosuchcommand"],
    ],
    ids=lambda a: " ".join(a) or "none",
)
def test_usage_errors_exit_2(cli_app: click.Group, args: list[str], tmp_path: Path) -> None:
    # Paths go to tmp_path: were a check ever to regress, nothing would be written into the cwd.
    out = tmp_path / "x.json"
    result = invoke(cli_app, [str(out) if a == "x.json" else a for a in args])
    assert_clean_failure(result, 2, "Error")
    assert not out.exists()


def test_missing_input_file_is_a_usage_error(cli_app: click.Group, tmp_path: Path) -> None:
    result = train(cli_app, [tmp_path / "missing.txt"], tmp_path / "tok.json")
    assert_clean_failure(result, 2, "missing.txt", "no such file")


def test_output_directory_must_exist(cli_app: click.Group, tmp_path: Path) -> None:
    src = tmp_path / "c.txt"
    src.write_text(make_text(10))
    result = train(cli_app, [src], tmp_path / "no" / "such" / "dir" / "tok.json")
    assert_clean_failure(result, 2, "does not exist")
