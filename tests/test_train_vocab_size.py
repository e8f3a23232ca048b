"""An unreachable ``--vocab-size`` says so: one line on stderr with the size reached and why, for every
algorithm and both compat modes (sentencepiece's rules fail by default, as sentencepiece does, and name the flag
that writes the smaller vocabulary instead).
"""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from cli.main import cli

TEXT = "the cat sat on the mat\nthe dog ate the bone\n"

# (command after `train`, output name, how min_frequency or the rules explain it)
CASES = [
    (["bpe"], "o.json", "every word of the corpus is a single token"),
    (["byte-bpe"], "o.json", "every word of the corpus is a single token"),
    (["wordpiece"], "o.json", "every word of the corpus is a single token"),
    (["wordpiece", "--criterion", "pmi"], "o.json", "every word of the corpus is a single token"),
    (["wordpiece", "--criterion", "frequency", "--min-frequency", "2"], "o.json",
     "no pair occurring at least min_frequency=2 times"),
    (["bpe", "--min-frequency", "2"], "o.json", "no pair occurring at least min_frequency=2 times"),
    (["bpe", "--max-token-length", "2"], "o.json", "max_token_length=2"),
    (["unigram"], "o.json", "the corpus yields no more pieces"),
    (["unigram", "--no-hard-vocab-limit"], "o.model", "the corpus yields no more pieces"),
    (["bpe", "--compat", "spm", "--no-hard-vocab-limit"], "o.model", "single piece already"),
]


def _size(path, name: str) -> int:
    if name.endswith(".json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        vocab = data["model"]["vocab"]
        return len(vocab) + sum(t["content"] not in (vocab if isinstance(vocab, dict) else {v[0] for v in vocab})
                                for t in data["added_tokens"])
    from subword.formats.spm import read_model

    return len(read_model(path).pieces)


@pytest.mark.parametrize("args, name, why", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_unreachable_vocab_size_says_so_in_one_line(tmp_path, args, name, why):
    corpus = tmp_path / "tiny.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    out = tmp_path / name
    r = CliRunner().invoke(cli, ["train", *args, str(corpus), "--vocab-size", "5000", "-o", str(out),
                                 "--progress", "none"])
    assert r.exit_code == 0, r.output
    lines = [line for line in r.stderr.splitlines() if "asked for" in line]
    assert len(lines) == 1, r.stderr
    reached = _size(out, name)
    assert re.search(rf"reached a vocabulary of {reached} tokens, not the 5000 asked for: ", lines[0]), lines[0]
    assert why in lines[0]
    assert lines[0].startswith("warning: ")


@pytest.mark.parametrize("args", [["bpe", "--compat", "spm"], ["unigram"]], ids=["bpe spm", "unigram spm"])
def test_sentencepiece_rules_fail_and_name_the_flag(tmp_path, args):
    corpus = tmp_path / "tiny.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    r = CliRunner().invoke(cli, ["train", *args, str(corpus), "--vocab-size", "5000", "-o", str(tmp_path / "o.model"),
                                 "--progress", "none"])
    assert r.exit_code == 1
    (line,) = [x for x in r.stderr.splitlines() if x.strip()]
    assert re.search(r"at most \d+ pieces", line) and "--no-hard-vocab-limit" in line and "--vocab-size" in line, line
    assert not (tmp_path / "o.model").exists()


def test_reachable_vocab_size_says_nothing(tmp_path):
    corpus = tmp_path / "tiny.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    r = CliRunner().invoke(cli, ["train", "wordpiece", str(corpus), "--vocab-size", "30", "-o",
                                 str(tmp_path / "o.json"), "--progress", "none"])
    assert r.exit_code == 0, r.output
    assert "asked for" not in r.stderr
