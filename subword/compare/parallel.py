"""Parallel text: the tokenization premium of each language against a pivot (Petrov et al. 2023).

A directory holds one file per language, named by the language (``en.txt``, ``de.txt``: the name
before the first dot), line-aligned: line i of every file says the same thing. The premium of a
language for a tokenizer is |T(D_lang)| / |T(D_pivot)| (1.0 = as many tokens as the pivot); its
interval comes from the paired bootstrap over aligned line indices.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "en.txt").write_text("a\\nb\\n"); _ = (d / "de.txt").write_text("x\\ny\\n")
>>> sorted(read_parallel(d, "en"))
['de', 'en']
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["read_parallel", "ParallelError"]


class ParallelError(ValueError):
    """Parallel files that cannot be compared (missing pivot, different lengths)."""


def read_parallel(directory: str | os.PathLike[str], pivot: str) -> dict[str, list[str]]:
    """Reads the per-language files of ``directory``: ``{language: lines}``.

    Raises:
        ParallelError: not a directory, fewer than two languages, no file for ``pivot``, or files
            of different line counts (the message names them).
    """
    root = Path(directory)
    if not root.is_dir():
        raise ParallelError(f"--parallel {root}: not a directory")
    texts: dict[str, list[str]] = {}
    for path in sorted(p for p in root.iterdir() if p.is_file() and not p.name.startswith(".")):
        language = path.name.split(".", 1)[0]
        if language in texts:
            raise ParallelError(f"{root}: two files for language {language!r}")
        texts[language] = path.read_text(encoding="utf-8").split("\n")
        if texts[language] and texts[language][-1] == "":
            texts[language].pop()
        texts[language] = [line[:-1] if line.endswith("\r") else line for line in texts[language]]
    if pivot not in texts:
        raise ParallelError(f"--pivot {pivot!r}: no file for it in {root} (languages: {', '.join(texts) or 'none'})")
    if len(texts) < 2:
        raise ParallelError(f"{root}: need the pivot and at least one other language")
    sizes = {lang: len(lines) for lang, lines in texts.items()}
    if len(set(sizes.values())) > 1:
        detail = ", ".join(f"{lang}: {n}" for lang, n in sizes.items())
        raise ParallelError(f"{root}: parallel files have different line counts ({detail})")
    if sizes[pivot] == 0:
        raise ParallelError(f"{root}: the parallel files are empty")
    return texts
