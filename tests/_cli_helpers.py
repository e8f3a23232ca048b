"""Shared helpers for the CLI tests (test_cli.py, test_bad_input.py): generated corpora and a runner."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path


from _corpora import CORPORA, SHARED_CORPORA  # noqa: F401 - re-exported: real text, the shared corpora or stand-ins

# Words with a little of everything a tokenizer meets: ASCII, accents, CJK, digits, punctuation.
_WORDS = (
    "the of and to in is was for that with as on by at from his her they which this "
    "tokenizer vocabulary merge merges pair pairs byte bytes text corpus line lines word words "
    "café naïve façade Zürich 東京 日本語 ☃ 42 1999 3.14 don't e-mail , . ; : ! ? ( ) \""
).split()


def make_text(lines: int, seed: int = 0, words_per_line: tuple[int, int] = (3, 14)) -> str:
    """Deterministic pseudo-prose: ``lines`` lines, each ending in ``\\n``."""
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        n = rng.randint(*words_per_line)
        out.append(" ".join(rng.choice(_WORDS) for _ in range(n)) + "\n")
    return "".join(out)


def require_training() -> None:
    """The trainers and the compiled tokenizer must be importable: a missing or stale build is a failure
    (see tests/test_extension.py), not a reason to skip the CLI tests."""
    import subword.trainers  # noqa: F401
    from subword import _core

    assert hasattr(_core, "CoreTokenizer"), "subword._core has no CoreTokenizer: rebuild (pip install -e .)"


def run_subword(*args: str, input: bytes | None = None, timeout: float = 120, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Runs the real command in a subprocess (``python -m cli.main``, what the console script calls)."""
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        input=input,
        capture_output=True,
        timeout=timeout,
        cwd=cwd,
    )
