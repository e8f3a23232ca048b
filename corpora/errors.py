"""The one exception type of :mod:`corpora`: bad input text, named by file and line."""

from __future__ import annotations

__all__ = ["CorpusError"]


class CorpusError(ValueError):
    """A corpus could not be read as text.

    The message always names the source (a path, ``<stdin>`` or a glob) and,
    where one applies, the 1-based line number, so a user can open the file at
    the offending line. ``source`` and ``line`` hold the same facts for code.

    Args:
        message: What went wrong, without the location prefix.
        source: The file (or ``<stdin>``) the problem is in, if any.
        line: The 1-based line number, if the problem is on one line.

    >>> err = CorpusError("invalid UTF-8", source="a.txt", line=3)
    >>> str(err)
    'a.txt:3: invalid UTF-8'
    >>> (err.source, err.line)
    ('a.txt', 3)
    """

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None) -> None:
        self.source = source
        self.line = line
        self.reason = message
        where = ""
        if source is not None:
            where = f"{source}:{line}: " if line is not None else f"{source}: "
        super().__init__(where + message)
