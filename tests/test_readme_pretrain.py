"""The README's pretraining example, run as written with a smaller budget: the tiny BERT it trains must fill
``[MASK]`` with whole words (not ``##`` pieces), which is what the example promises a new user.

The commands are read from README.md itself (the block after "Pretrain a tiny BERT"), so the test follows the
README when it changes; only the length of the run is cut (``--steps N`` or ``--time-budget T`` becomes
``--steps 60``) and the token shards are cached in the test's folder.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli

README = Path(__file__).resolve().parents[1] / "README.md"
STEPS = "100"


def readme_commands() -> list[list[str]]:
    """The ``subword`` commands of the README's pretraining block, comments dropped, continuations joined."""
    text = README.read_text(encoding="utf-8")
    start = text.index("Pretrain a tiny BERT")
    block = text[text.index("```bash", start) + len("```bash"):text.index("```", text.index("```bash", start) + 7)]
    joined = re.sub(r"\\\n\s*", " ", block)
    commands = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] == "subword":
            commands.append(words[1:])
    return commands


def _shorter(args: list[str]) -> list[str]:
    out, skip = [], False
    for i, word in enumerate(args):
        if skip:
            skip = False
            continue
        if word in ("--steps", "--time-budget", "--tokens"):
            skip = True
            continue
        out.append(word)
    return [*out, "--steps", STEPS]


def test_the_readme_block_is_train_pretrain_fill_mask() -> None:
    names = [c[0] for c in readme_commands()]
    assert names == ["train", "pretrain", "fill-mask"], names


@pytest.mark.slow
def test_readme_pretraining_example_fills_masks_with_whole_words(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the README's relative paths (bert-tok.json, run) land here
    train, pretrain, fill = readme_commands()
    runner = CliRunner()
    r = runner.invoke(cli, train, prog_name="subword")
    assert r.exit_code == 0, r.output
    r = runner.invoke(cli, [*_shorter(pretrain), "--cache-dir", str(tmp_path / "cache"), "-q"], prog_name="subword")
    assert r.exit_code == 0, r.output
    out = Path(pretrain[pretrain.index("--output-dir") + 1])
    losses = [json.loads(x)["loss"] for x in (out / "log.jsonl").read_text().splitlines() if '"loss"' in x]
    assert len(losses) == int(STEPS) and sum(losses[-10:]) < sum(losses[:10]) - 10 * 1.0  # it learns
    r = runner.invoke(cli, fill, prog_name="subword")
    assert r.exit_code == 0, r.output
    rows = [line.split() for line in r.stdout.splitlines()]
    assert len(rows) == 5 and all(len(row) == 2 for row in rows), r.stdout
    from subword import Tokenizer

    tok = Tokenizer.from_file(out / "model" / "tokenizer.json")
    specials = set(tok.special_tokens)
    for token, _ in rows:
        assert not token.startswith("##") and token not in specials, r.stdout  # whole words
        assert tok.encode(token, add_special_tokens=False).tokens == [token]
