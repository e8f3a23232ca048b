"""The one atomic-write helper every writer of :mod:`subword` goes through.

Readers see the old file or the new one, never a part: the data goes to a temporary file in the
target's own folder (so the final ``os.replace`` is a rename on one file system), is flushed to disk,
gets the permissions a plain ``open(path, "w")`` would give (``0o666`` minus the umask; ``mkstemp``
alone would leave ``0600``), and replaces the target. On any failure, KeyboardInterrupt included, the
temporary file is removed and the target is left as it was.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "x.bin"
>>> atomic_write_bytes(p, b"hi"); p.read_bytes()
b'hi'
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "atomic_write_bytes", "atomic_write_text"]


def _umask() -> int:
    # os.umask can only be read by setting it; put it straight back.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary file in ``path``'s folder to write (by name, in any number of steps); on a clean exit
    it is synced, given normal permissions (``0o666`` minus the umask) and renamed over ``path``; on any
    error (Ctrl-C included) it is removed and ``path`` is untouched.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "counts.swc"
    >>> with atomic_path(p) as tmp:
    ...     _ = tmp.write_bytes(b"part one, ")
    ...     with open(tmp, "ab") as fh: _ = fh.write(b"part two")
    >>> p.read_bytes()
    b'part one, part two'
    """
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    import tempfile  # here: its import (shutil, random) is ~9 ms of every first tokenizer load, which never writes

    fd, tmp_name = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_path`).

    Raises:
        OSError: the folder does not exist or is not writable (nothing is left behind).

    >>> import tempfile, pathlib, stat
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "m.model"
    >>> atomic_write_bytes(p, b"\\x0a\\x00"); stat.S_IMODE(p.stat().st_mode) == 0o666 & ~_umask()
    True
    """
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` as UTF-8 (``\\n`` line ends, as given) to ``path`` atomically.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x.txt"
    >>> atomic_write_text(p, "hi"); p.read_text()
    'hi'
    """
    atomic_write_bytes(path, text.encode("utf-8"))
