"""Rough edges a new user meets on the command line: readable tokens from byte-level vocabularies, errors that
list what they searched, and help texts that say what the commands do."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.codec import readable_token
from cli.main import cli

from _corpora import CORPORA


def _invoke(args: list[str], input: str | None = None, **kw):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, args, input=input, prog_name="subword", **kw)


@pytest.fixture(scope="module")
def byte_tok(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from subword.trainers import ByteLevelBpeTrainer

    lines = (CORPORA / "tinyshakespeare.txt").read_text(encoding="utf-8").splitlines(keepends=True)[:2000]
    path = tmp_path_factory.mktemp("edges") / "byte.json"
    ByteLevelBpeTrainer(vocab_size=600, special_tokens=["<|endoftext|>"]).train(lines).save(path)
    return path


# ==== encode --format tokens ====


def test_tokens_of_a_byte_level_vocabulary_read_as_text(byte_tok: Path) -> None:
    """The readable form decodes each token on its own: joined (· back to spaces, the partial characters'
    bytes back to bytes) it gives the line again, token for token the raw form, and no byte-level spelling."""
    lines = ["naïve café, said the 🙂 king", "  two  spaces\tand a tab", "<|endoftext|>after"]
    text = "\n".join(lines) + "\n"
    readable = _invoke(["encode", "-t", str(byte_tok), "--format", "tokens"], input=text)
    raw = _invoke(["encode", "-t", str(byte_tok), "--format", "raw-tokens"], input=text)
    assert readable.exit_code == raw.exit_code == 0, readable.output
    from subword import Tokenizer

    tok = Tokenizer.from_file(byte_tok)
    for line, shown, spelled in zip(lines, readable.stdout.splitlines(), raw.stdout.splitlines(), strict=True):
        assert spelled.split(" ") == tok.encode(line).tokens
        items = shown.split(" ")
        assert len(items) == len(spelled.split(" "))
        assert not re.search("[ĠÃðĊĉ]", shown), shown  # no byte-level spelling left
        data = b"".join(_bytes_of(item) for item in items)
        assert data.decode("utf-8") == line


def _bytes_of(item: str) -> bytes:
    out = bytearray()
    for part in re.split(r"(⟨[0-9A-F ]+⟩)", item):
        if part.startswith("⟨"):
            out.extend(bytes.fromhex(part[1:-1]))
        else:
            out.extend(part.replace("·", " ").replace("→", "\t").encode("utf-8"))
    return bytes(out)


def test_readable_token_marks_partial_characters() -> None:
    from subword.pre_tokenizers import bytes_to_unicode

    alphabet = bytes_to_unicode()
    emoji = "🙂".encode()  # F0 9F 99 82, cut after two bytes
    first, second = "".join(alphabet[b] for b in emoji[:2]), "".join(alphabet[b] for b in emoji[2:])
    assert readable_token(alphabet[32] + first) == "·⟨F0 9F⟩" and readable_token(second) == "⟨99 82⟩"
    assert readable_token("".join(alphabet[b] for b in "é\n".encode())) == "é↵"


def test_tokens_of_other_vocabularies_are_unchanged(tmp_path: Path) -> None:
    from subword.trainers import WordPieceTrainer

    lines = (CORPORA / "tinyshakespeare.txt").read_text(encoding="utf-8").splitlines(keepends=True)[:500]
    WordPieceTrainer(vocab_size=300).train(lines).save(tmp_path / "wp.json")
    a = _invoke(["encode", "-t", str(tmp_path / "wp.json"), "--format", "tokens"], input="Unhappily, sirrah\n")
    b = _invoke(["encode", "-t", str(tmp_path / "wp.json"), "--format", "raw-tokens"], input="Unhappily, sirrah\n")
    assert a.exit_code == 0 and a.stdout == b.stdout and "##" in a.stdout


# ==== errors that list things list them ====


def test_a_missing_tiktoken_rank_file_lists_where_it_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from subword.formats import tiktoken as tk

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    places = tk._search_places(tk.ENCODINGS["r50k_base"][0])
    if any(p.is_file() for p in places):
        pytest.skip("a local r50k_base rank file exists here")
    result = _invoke(["encode", "-t", "r50k_base"], input="hi\n")
    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert "looked in: " in line and all(str(p) in line for p in places), line
    assert "TIKTOKEN_CACHE_DIR" in line and "r50k_base.tiktoken" in line


# ==== help ====


def test_top_level_help_names_every_command() -> None:
    result = _invoke(["--help"])
    assert result.exit_code == 0
    description = result.output.split("Options:")[0]
    for word in ("compare", "pretrain", "fill-mask", "train", "count"):
        assert word in description, (word, description)


def test_compare_help_names_tiktoken_files() -> None:
    result = _invoke(["compare", "--help"])
    assert result.exit_code == 0 and ".tiktoken" in result.output


def test_convert_help_reads_as_prose() -> None:
    result = _invoke(["convert", "--help"])
    assert result.exit_code == 0
    assert "takes: The tokenizer" not in result.output.replace("\n", " ")
