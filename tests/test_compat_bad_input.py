"""Bad files from elsewhere: one line naming the file, the component and the field, exit 1 from the CLI, never a
traceback, never a silently different tokenizer.

Covered here for tokenizer.json (a component field we do not know, a regex the reference engine itself
rejects, a type nobody knows) and tiktoken files (a pattern fancy-regex rejects); Tekken files in
``tests/test_compat_tekken.py``.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cli.main import cli

tokenizers = pytest.importorskip("tokenizers")


def _file(tmp_path, section: str, component: dict) -> str:
    data = {"version": "1.0", "model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []}, section: component}
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def _one_line_error(args: list[str]) -> str:
    result = CliRunner().invoke(cli, args, input="ab\n")
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.mark.parametrize("section, component, words", [
    ("pre_tokenizer", {"type": "Digits", "individual_digits": True, "max_digits": 3}, ["Digits", "max_digits"]),
    ("normalizer", {"type": "Strip", "strip_left": True, "strip_right": True, "strip_middle": True},
     ["Strip", "strip_middle"]),
    ("post_processor", {"type": "RobertaProcessing", "sep": ["b", 1], "cls": ["a", 0], "bos": 1}, ["RobertaProcessing", "bos"]),
    ("decoder", {"type": "CTC", "pad_token": "<pad>", "blank": "_"}, ["CTC", "blank"]),
])
def test_unknown_field_names_file_component_and_field(tmp_path, section, component, words):
    path = _file(tmp_path, section, component)
    line = _one_line_error(["encode", "-t", path])
    assert path in line and section in line and all(w in line for w in words), line


@pytest.mark.parametrize("regex", ["(", "[b-a]", "\\p{NoSuchProperty}", "(?P<x>a)"])
def test_regex_the_reference_engine_rejects(tmp_path, regex):
    component = {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False}
    path = _file(tmp_path, "pre_tokenizer", component)
    with pytest.raises(Exception):
        tokenizers.Tokenizer.from_file(path)  # HF rejects it too
    line = _one_line_error(["encode", "-t", path])
    assert path in line and "Split" in line and "Oniguruma" in line and repr(regex) in line, line


def test_regex_the_reference_engine_accepts_loads(tmp_path):
    component = {"type": "Split", "pattern": {"Regex": r"(?<=\p{L})(?=\p{N})|\s+(?!\S)|\s+"}, "behavior": "Isolated",
                 "invert": False}
    path = _file(tmp_path, "pre_tokenizer", component)
    result = CliRunner().invoke(cli, ["encode", "-t", path], input="ab\n")
    assert result.exit_code == 0, result.output


def test_unknown_type_names_file_and_section(tmp_path):
    path = _file(tmp_path, "pre_tokenizer", {"type": "Deduplication"})
    line = _one_line_error(["encode", "-t", path])
    assert path in line and "pre_tokenizer" in line and "Deduplication" in line, line


def test_tiktoken_pattern_fancy_regex_rejects(tmp_path):
    import base64

    from subword import Tokenizer
    from subword.errors import FormatError

    ranks = b"".join(base64.b64encode(bytes([b])) + b" %d\n" % b for b in range(256))
    path = tmp_path / "r.tiktoken"
    path.write_bytes(ranks)
    with pytest.raises(FormatError, match=r"fancy-regex.*refuses") as err:
        Tokenizer.from_tiktoken(path, pattern=r"\p{L}+|(")
    assert str(path) in str(err.value)
