"""The built-in default corpus: English prose that every Python installation already has.

``subword train bpe`` without an input file trains on this, so the quick start needs no
download. The text is the docstrings and comments of the running Python's standard library
(several MB of technical English), extracted deterministically:

* files: every ``*.py`` under ``sysconfig.get_paths()["stdlib"]``, sorted by relative path parts,
  skipping ``site-packages``, ``__pycache__`` and hidden directories (third-party code differs
  between machines; the standard library of one Python version does not);
* docstrings: module, class and function docstrings via ``ast`` (``ast.get_docstring``, which
  dedents them), with doctest lines (``>>>``/``...``) dropped since they are code;
* comments: runs of ``#`` comment lines joined into paragraphs, without shebang/coding lines or
  rules made only of punctuation;
* within a file, pieces in source order; every piece ends with a blank line.

The result is cached as ``<cache>/builtin-<impl>-<version>-v<N>.txt`` (see :func:`cache_dir`),
written atomically, and rebuilt only when the Python version or the extraction rules
(``_FORMAT_VERSION``) change.
"""

from __future__ import annotations

import ast
import importlib.util
import logging
import os
import sys
import sysconfig
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path

from corpora.errors import CorpusError
from subword.formats.atomic import atomic_path

__all__ = ["builtin_corpus", "cache_dir", "stdlib_prose"]

logger = logging.getLogger(__name__)

# Bump when the extraction rules change, so stale caches are not reused.
_FORMAT_VERSION = 1
# Below this, the standard library sources are missing or stripped (e.g. a .pyc-only install).
_MIN_BYTES = 100_000
_SKIP_DIRS = {"site-packages", "dist-packages", "__pycache__"}
_DOC_NODES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The directory subword caches files in.

    ``$SUBWORD_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/subword`` (when absolute, as the XDG
    spec requires), else ``~/.cache/subword``.

    Args:
        environ: The environment to read (default: ``os.environ``).

    >>> cache_dir({"XDG_CACHE_HOME": "/tmp/xdg"})
    PosixPath('/tmp/xdg/subword')
    >>> cache_dir({"SUBWORD_CACHE_DIR": "/srv/cache", "XDG_CACHE_HOME": "/tmp/xdg"})
    PosixPath('/srv/cache')
    """
    env = os.environ if environ is None else environ
    explicit = env.get("SUBWORD_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = env.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "subword"


def _is_rule(text: str) -> bool:
    """A comment made only of punctuation (``# ------``) or empty."""
    return not any(ch.isalnum() for ch in text)


def _clean_docstring(doc: str) -> str:
    kept = [line for line in doc.splitlines() if not line.lstrip().startswith((">>>", "... "))]
    return "\n".join(kept).strip()


def _file_pieces(source: bytes) -> list[tuple[int, str]]:
    """``(line number, text)`` of every docstring and comment paragraph of one module."""
    with warnings.catch_warnings():
        # Old escape sequences in some stdlib files raise SyntaxWarning on newer Pythons.
        warnings.simplefilter("ignore")
        tree = ast.parse(source)
    pieces: list[tuple[int, str]] = []
    for node in ast.walk(tree):
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


def stdlib_prose(root: Path) -> Iterator[str]:
    """Yields the prose pieces (docstrings, comment paragraphs) of the ``*.py`` files under ``root``.

    Files that do not parse (the standard library ships a few deliberately broken test files)
    are skipped. Each piece ends with ``"\\n\\n"``.

    Args:
        root: A directory of Python sources, normally the standard library.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "m.py").write_text("'''A module.'''\\n# Why we do this.\\nx = 1\\n")
    >>> list(stdlib_prose(d))
    ['A module.\\n\\n', 'Why we do this.\\n\\n']
    """
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        files.extend(Path(dirpath, name) for name in filenames if name.endswith(".py"))
    files.sort(key=lambda p: p.relative_to(root).parts)
    for path in files:
        try:
            pieces = _file_pieces(path.read_bytes())
        except (SyntaxError, ValueError, UnicodeDecodeError, OSError, RecursionError):
            continue
        for _, text in pieces:
            yield text + "\n\n"


def builtin_corpus(*, rebuild: bool = False) -> Path:
    """Returns the path of the built-in corpus, building and caching it on first use.

    The first call takes a few seconds (it parses the standard library); later calls return the
    cached file at once.

    Args:
        rebuild: Build it again even if a cached copy exists.

    Returns:
        A UTF-8 text file of several MB.

    Raises:
        CorpusError: The standard-library sources are missing, or the cache cannot be written.

    >>> path = builtin_corpus()  # doctest: +SKIP
    >>> path.stat().st_size > 1_000_000  # doctest: +SKIP
    True
    """
    impl = sys.implementation.name
    version = ".".join(map(str, sys.version_info[:3]))
    target = cache_dir() / f"builtin-{impl}-{version}-v{_FORMAT_VERSION}.txt"
    if target.is_file() and not rebuild:
        return target
    root = Path(sysconfig.get_paths()["stdlib"])
    logger.info("building the built-in corpus from %s (once) into %s", root, target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # The one atomic-write helper: on any failure (Ctrl-C included) the temp file is removed.
        with atomic_path(target) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as out:
            size = 0
            for piece in stdlib_prose(root):
                out.write(piece)
                size += len(piece)
            if size < _MIN_BYTES:
                raise CorpusError(
                    f"the standard library here holds too little source text ({size} characters) "
                    "to build the built-in corpus; give an input file instead",
                    source=str(root),
                )
    except OSError as exc:
        raise CorpusError(
            f"cannot write the built-in corpus cache ({exc.strerror or exc}); "
            "set SUBWORD_CACHE_DIR or XDG_CACHE_HOME to a writable directory",
            source=str(target.parent),
        ) from exc
    return target
