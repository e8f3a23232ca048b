"""Turn what a user typed (files, globs, directories, ``-``) into an ordered list of sources.

Rules, chosen so that the same command line always reads the same bytes in the same order:

* ``-`` is standard input.
* An existing file is read as given; if it turns out to be binary, reading it fails with a
  :class:`~corpora.CorpusError` (the user named it, so silently skipping it would hide a mistake).
* An existing directory is walked recursively in sorted order. Hidden entries (names starting
  with ``.``, e.g. ``.git``) are skipped, and so are files that are obviously not text (a NUL byte,
  or bytes that are not UTF-8, in their first 8 KiB): each skip is logged as a warning.
* Anything else containing ``*``, ``?`` or ``[`` is a glob (``**`` recurses); its matches are
  sorted. A pattern that matches nothing is an error, as is a path that does not exist.
"""

from __future__ import annotations

import codecs
import glob
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from corpora.errors import CorpusError
from corpora.compression import open_binary

__all__ = ["Source", "expand_sources", "STDIN"]

logger = logging.getLogger(__name__)

#: The spelling of standard input on a command line.
STDIN = "-"

# How much of a file to look at when deciding whether a file met during a directory walk is text.
_SNIFF_BYTES = 8192


@dataclass(frozen=True)
class Source:
    """One input: a file on disk, or standard input (``path is None``).

    Attributes:
        name: How messages refer to it: the path as found, or ``<stdin>``.
        path: The file, or ``None`` for standard input.

    >>> Source.from_arg("-").name
    '<stdin>'
    >>> Source.from_arg("data/a.txt").path
    PosixPath('data/a.txt')
    """

    name: str
    path: Path | None

    @classmethod
    def from_arg(cls, arg: str | os.PathLike[str]) -> Source:
        """Builds a source from one command-line word without checking that it exists."""
        if str(arg) == STDIN:
            return cls("<stdin>", None)
        return cls(str(arg), Path(arg))

    def size(self) -> int | None:
        """The size on disk in bytes (compressed size for compressed files), or ``None`` for stdin."""
        if self.path is None:
            return None
        try:
            return self.path.stat().st_size
        except OSError:
            return None


def _is_glob(text: str) -> bool:
    return any(ch in text for ch in "*?[")


def looks_like_text(path: Path) -> tuple[bool, str]:
    """Says whether the start of a (possibly compressed) file looks like UTF-8 text.

    Args:
        path: The file to sniff.

    Returns:
        ``(True, "")`` for text, else ``(False, reason)``.

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp()
    >>> p = Path(d, "x.bin"); _ = p.write_bytes(b"\\x89PNG\\r\\n\\x1a\\n\\x00\\x00")
    >>> looks_like_text(p)
    (False, 'contains NUL bytes')
    >>> _ = p.write_bytes("caf\\u00e9\\n".encode()); looks_like_text(p)
    (True, '')
    """
    try:
        with open_binary(path, path.name) as stream:
            head = stream.read(_SNIFF_BYTES)
    except (OSError, EOFError, CorpusError) as exc:
        return False, f"cannot be read ({exc})"
    if b"\x00" in head:
        return False, "contains NUL bytes"
    try:
        # final=False: the sniffed block may end in the middle of a multi-byte character.
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False, "is not UTF-8 text"
    return True, ""


def _walk_dir(root: Path) -> list[Source]:
    paths: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        paths.extend(Path(dirpath, name) for name in filenames if not name.startswith("."))
    # Sort by path components, so a/b/c.txt sorts like the path it is ("a" < "a0"), the same on
    # every file system whatever order the directory listing came in.
    paths.sort(key=lambda p: p.relative_to(root).parts)
    found: list[Source] = []
    for path in paths:
        if not path.is_file():
            continue
        ok, why = looks_like_text(path)
        if not ok:
            logger.warning("skipping %s: it %s", path, why)
            continue
        found.append(Source(str(path), path))
    return found


def expand_sources(sources: Sequence[str | os.PathLike[str]] | str | os.PathLike[str]) -> list[Source]:
    """Expands files, globs, directories and ``-`` into the ordered list of inputs to read.

    Args:
        sources: What the user named, in order. A single string or path is one source.

    Returns:
        The inputs, in reading order (argument order; sorted within a glob or directory).

    Raises:
        CorpusError: A path does not exist, or a glob matches nothing.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> for n in ("b.txt", "a.txt", ".hidden"): _ = (d / n).write_text("hi\\n")
    >>> [Path(s.name).name for s in expand_sources([d])]
    ['a.txt', 'b.txt']
    >>> [Path(s.name).name for s in expand_sources([str(d / "*.txt"), "-"])]
    ['a.txt', 'b.txt', '<stdin>']
    """
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    out: list[Source] = []
    for arg in sources:
        text = os.fspath(arg)
        if text == STDIN:
            out.append(Source.from_arg(STDIN))
            continue
        path = Path(text)
        if path.is_dir():
            out.extend(_walk_dir(path))
        elif path.exists():
            out.append(Source(text, path))
        elif _is_glob(text):
            matches = sorted(glob.glob(text, recursive=True))
            files: list[Source] = []
            for match in matches:
                mpath = Path(match)
                if mpath.is_dir():
                    files.extend(_walk_dir(mpath))
                elif mpath.is_file():
                    files.append(Source(match, mpath))
            if not files:
                raise CorpusError("no files match this pattern", source=text)
            out.extend(files)
        else:
            raise CorpusError("no such file or directory", source=text)
    return out
