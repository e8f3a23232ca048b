"""The command line starts light: commands that do not need numpy or torch never import them.

``subword --help`` and ``subword encode`` on a line are what people run most; importing torch (seconds,
several GB of libraries) or numpy for them would be paid on every call. Each command runs in a fresh
interpreter, and the modules it imported are read back from it. Start-up time itself is measured by
``benchmarks/bench_startup.py``, not here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from _cli_helpers import make_text, require_training

# Runs the CLI in-process in a fresh interpreter, then prints the heavy top-level packages it imported.
_PROBE = """
import json, runpy, sys
sys.argv = ["subword", *json.loads(sys.argv[1])]
try:
    runpy.run_module("cli.main", run_name="__main__")
except SystemExit as exit:
    code = exit.code
else:
    code = 0
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"numpy", "torch", "scipy", "transformers", "models"})
print(json.dumps({"code": code, "heavy": heavy}), file=sys.stderr)
"""


def _imports(args: list[str], stdin: bytes = b"") -> list[str]:
    done = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(args)], input=stdin, capture_output=True,
                          timeout=120)
    report = json.loads(done.stderr.decode().strip().splitlines()[-1])
    assert report["code"] in (0, None), done.stderr.decode()
    return report["heavy"]


@pytest.fixture(scope="module")
def tok(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_training()
    tmp = tmp_path_factory.mktemp("startup")
    corpus = tmp / "corpus.txt"
    corpus.write_text(make_text(2000, seed=3), encoding="utf-8")
    out = tmp / "tok.json"
    subprocess.run([sys.executable, "-m", "cli.main", "train", "bpe", str(corpus), "-o", str(out),
                    "--vocab-size", "300", "-q"], check=True, timeout=120)
    return out


@pytest.mark.parametrize("args", [["--help"], ["train", "--help"], ["pretrain", "--help"], ["compare", "--help"]])
def test_help_imports_neither_numpy_nor_torch(args: list[str]) -> None:
    assert _imports(args) == []


def test_tokenizer_commands_import_neither_numpy_nor_torch(tok: Path, tmp_path: Path) -> None:
    assert _imports(["encode", "-t", str(tok)], b"Hello world\n") == []
    assert _imports(["encode", "-t", str(tok), "--format", "json"], b"Hello world\n") == []
    assert _imports(["decode", "-t", str(tok)], b"5 6 7\n") == []
    assert _imports(["inspect", "-t", str(tok)]) == []
    assert _imports(["convert", str(tok), str(tmp_path / "copy.json")]) == []
    corpus = tmp_path / "c.txt"
    corpus.write_text(make_text(200, seed=4), encoding="utf-8")
    assert _imports(["train", "bpe", str(corpus), "-o", str(tmp_path / "t.json"), "--vocab-size", "300", "-q"]) == []
    assert _imports(["count", str(corpus), "-o", str(tmp_path / "c.swc"), "--for", "bpe", "-q"]) == []


def test_the_probe_sees_heavy_imports(tok: Path, tmp_path: Path) -> None:
    """The check can fail: compare needs numpy, and the probe reports it."""
    corpus = tmp_path / "c.txt"
    corpus.write_text(make_text(200, seed=4), encoding="utf-8")
    assert "numpy" in _imports(["compare", "-t", str(tok), "-t", str(tok), "--names", "a,b", str(corpus)])
