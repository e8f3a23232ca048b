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

import logging
import os
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from corpora.errors import CorpusError
from corpora.prose import file_pieces, prose_of

__all__ = ["builtin_corpus", "cache_dir", "stdlib_prose"]

logger = logging.getLogger(__name__)

# Bump when the extraction rules change, so stale caches are not reused.
_FORMAT_VERSION = 1
# Below this, the standard library sources are missing or stripped (e.g. a .pyc-only install).
_MIN_BYTES = 100_000
_SKIP_DIRS = {"site-packages", "dist-packages", "__pycache__"}


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


def _stdlib_files(root: Path) -> list[Path]:
    """The ``*.py`` files under ``root`` in the corpus's order (sorted by relative path parts)."""
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        files.extend(Path(dirpath, name) for name in filenames if name.endswith(".py"))
    files.sort(key=lambda p: p.relative_to(root).parts)
    return files


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
    for path in _stdlib_files(root):
        try:
            pieces = file_pieces(path.read_bytes())
        except (SyntaxError, ValueError, UnicodeDecodeError, OSError, RecursionError):
            continue
        for _, text in pieces:
            yield text + "\n\n"


# ==== building the corpus on several cores ====
#
# Parsing 1,800 files is CPU work under the GIL, so the build splits the file list into contiguous runs
# of about equal size and hands all runs but the first to child interpreters (`python -m corpora.prose
# --worker`), which write their text to a part file and report each file done on stdout; the parent does
# the first run and joins the parts in order. Plain subprocesses, not multiprocessing: a library function
# must not fork a process that may hold other threads, nor re-import a caller's unguarded main script as
# spawn does. A child that cannot start or fails leaves its run to the parent, so the text is the same
# in every case.


def _runs(files: list[Path], parts: int) -> list[list[Path]]:
    """``files`` cut into ``parts`` contiguous runs of about equal total size."""
    sizes = [max(path.stat().st_size, 1) if path.exists() else 1 for path in files]
    total = sum(sizes)
    runs: list[list[Path]] = [[] for _ in range(parts)]
    done = 0
    for path, size in zip(files, sizes):
        runs[min(parts - 1, done * parts // total)].append(path)
        done += size
    return [run for run in runs if run]


def _build_text(root: Path, write: Callable[[str], None], progress: Callable[[int, int], None] | None,
                workers: int) -> None:
    """Writes the corpus text of ``root`` through ``write``, using up to ``workers`` processes."""
    files = _stdlib_files(root)
    total = len(files)
    done = 0
    runs = _runs(files, max(1, min(workers, total or 1)))
    children: list[tuple[subprocess.Popen[bytes], Path, list[Path]]] = []
    with tempfile.TemporaryDirectory(prefix="subword-builtin-") as tmp:
        for k, run in enumerate(runs[1:], start=1):
            listing, part = Path(tmp, f"run-{k}.txt"), Path(tmp, f"part-{k}.txt")
            listing.write_text("".join(f"{path}\n" for path in run), encoding="utf-8")
            try:
                child = subprocess.Popen(
                    [sys.executable, "-m", "corpora.prose", "--worker", str(listing), str(part)],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                    env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
                )
            except OSError:
                child = None
            if child is None:
                runs[0] = runs[0] + run  # nobody else will do it
            else:
                children.append((child, part, run))
        for path in runs[0]:
            write(prose_of(path))
            done += 1
            if progress is not None and done % 50 == 0:
                progress(done, total)
        for child, part, run in children:
            assert child.stdout is not None
            for _ in child.stdout:
                done += 1
                if progress is not None and done % 50 == 0:
                    progress(done, total)
            if child.wait() == 0 and part.is_file():
                write(part.read_text(encoding="utf-8"))
            else:  # the child failed: its run is done here, so the text is the same
                logger.debug("a corpus worker failed (exit %s); parsing its %d files here", child.returncode, len(run))
                for path in run:
                    write(prose_of(path))
    if progress is not None:
        progress(total, total)


def builtin_corpus(*, rebuild: bool = False, progress: Callable[[int, int], None] | None = None) -> Path:
    """Returns the path of the built-in corpus, building and caching it on first use.

    The first call takes a few seconds (it parses the standard library on every core); later calls
    return the cached file at once.

    Args:
        rebuild: Build it again even if a cached copy exists.
        progress: Called as ``progress(files_done, files_total)`` while the corpus is built.

    Returns:
        A UTF-8 text file of several MB.

    Raises:
        CorpusError: The standard-library sources are missing, or the cache cannot be written.

    >>> path = builtin_corpus()  # doctest: +SKIP
    >>> path.stat().st_size > 1_000_000  # doctest: +SKIP
    True
    """
    from subword.formats.atomic import atomic_path  # the one atomic-write helper (imported late: heavy)

    impl = sys.implementation.name
    version = ".".join(map(str, sys.version_info[:3]))
    target = cache_dir() / f"builtin-{impl}-{version}-v{_FORMAT_VERSION}.txt"
    if target.is_file() and not rebuild:
        return target
    root = Path(sysconfig.get_paths()["stdlib"])
    logger.debug("building the built-in corpus from %s into %s", root, target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # On any failure (Ctrl-C included) the temp file is removed.
        with atomic_path(target) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as out:
            size = 0

            def write(text: str) -> None:
                nonlocal size
                out.write(text)
                size += len(text)

            _build_text(root, write, progress, workers=os.cpu_count() or 1)
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

