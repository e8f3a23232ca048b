"""Prose out of Python sources: the docstrings and comment paragraphs the built-in corpus is made of.

:func:`file_pieces` is the extraction rule for one module (see :mod:`corpora.builtin` for the whole
corpus); run as ``python -m corpora.prose --worker LIST OUT`` it is one of the corpus builder's child
processes: it writes the prose of the files named in LIST (one path a line) to OUT, in order, and prints
a line on stdout after each file so the parent can show progress.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
import warnings
from collections import deque
from collections.abc import Iterator
from pathlib import Path

__all__ = ["file_pieces", "prose_of"]

_DOC_NODES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
# The nodes whose list fields can hold statements.
_BLOCK_NODES = (ast.stmt, ast.excepthandler, ast.match_case)


def _is_rule(text: str) -> bool:
    """A comment made only of punctuation (``# ------``) or empty."""
    return not any(ch.isalnum() for ch in text)


def _clean_docstring(doc: str) -> str:
    kept = [line for line in doc.splitlines() if not line.lstrip().startswith((">>>", "... "))]
    return "\n".join(kept).strip()


def _statements(tree: ast.Module) -> Iterator[ast.AST]:
    """The module and every statement in it (with except handlers and match cases), in ``ast.walk``'s order.

    Docstrings belong to modules, classes and functions, which are statements, and a statement sits only in
    a list field of another statement, an except handler or a match case. So a breadth-first walk of those
    lists alone meets every class and function in the order ``ast.walk`` would, without visiting the
    expressions, nine nodes in ten of a module (``ast.walk`` was two thirds of the corpus's build time).
    """
    queue: deque[ast.AST] = deque([tree])
    while queue:
        node = queue.popleft()
        yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                queue.extend(child for child in value if isinstance(child, _BLOCK_NODES))


def file_pieces(source: bytes) -> list[tuple[int, str]]:
    """``(line number, text)`` of every docstring and comment paragraph of one module."""
    with warnings.catch_warnings():
        # Old escape sequences in some stdlib files raise SyntaxWarning on newer Pythons.
        warnings.simplefilter("ignore")
        tree = ast.parse(source)
    pieces: list[tuple[int, str]] = []
    for node in _statements(tree):
        if isinstance(node, _DOC_NODES):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                text = _clean_docstring(doc)
                if text:
                    pieces.append((getattr(node, "lineno", 0), text))
    text = importlib.util.decode_source(source)
    block: list[str] = []
    start = 0
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("#") and not stripped.startswith("#!") and "-*-" not in stripped:
            body = stripped.lstrip("#").strip()
            if not _is_rule(body):
                if not block:
                    start = lineno
                block.append(body)
                continue
        if block:
            pieces.append((start, "\n".join(block)))
            block = []
    if block:
        pieces.append((start, "\n".join(block)))
    pieces.sort(key=lambda piece: piece[0])
    return pieces


def prose_of(path: Path) -> str:
    """The corpus text of one file: its pieces, each followed by a blank line ("" if it does not parse).

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp(), "m.py"); _ = p.write_text("def f():\\n    \'\'\'Doc.\'\'\'\\n")
    >>> prose_of(p)
    'Doc.\\n\\n'
    """
    try:
        pieces = file_pieces(path.read_bytes())
    except (SyntaxError, ValueError, UnicodeDecodeError, OSError, RecursionError):
        return ""
    return "".join(text + "\n\n" for _, text in pieces)


def _worker(list_file: Path, out_file: Path) -> None:
    """A child's job: the prose of the files named in ``list_file`` (one per line) into ``out_file``."""
    paths = [Path(line) for line in list_file.read_text(encoding="utf-8").splitlines()]
    with open(out_file, "w", encoding="utf-8", newline="\n") as out:
        for path in paths:
            out.write(_prose_of(path))
            sys.stdout.write("1\n")
            sys.stdout.flush()


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"] and len(sys.argv) == 4:
    _worker(Path(sys.argv[2]), Path(sys.argv[3]))
