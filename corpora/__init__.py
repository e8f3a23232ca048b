"""corpora: read training text from files, globs, directories, stdin and archives, lazily.

The pieces, one small module each:

* :mod:`corpora.sources` -- what the user named -> an ordered list of inputs (globs, directories).
* :mod:`corpora.compression` -- ``.gz``/``.bz2``/``.xz`` recognised by magic number.
* :mod:`corpora.readers` -- lines with their endings, UTF-8 checks, caps, JSON-lines fields.
* :mod:`corpora.sampling` -- reproducible reservoir sampling and first-N lines.
* :mod:`corpora.builtin` -- the default corpus built from the running Python's docstrings.
* :mod:`corpora.errors` -- :class:`CorpusError`, which names file and line.

>>> import corpora, tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp(), "t.txt"); _ = p.write_text("a b\\nc\\n")
>>> list(corpora.read_lines([p]))
['a b\\n', 'c\\n']
"""

from __future__ import annotations

from corpora.builtin import builtin_corpus as builtin_corpus
from corpora.builtin import cache_dir as cache_dir
from corpora.errors import CorpusError as CorpusError
from corpora.readers import CorpusReader as CorpusReader
from corpora.readers import read_lines as read_lines
from corpora.sampling import first_lines as first_lines
from corpora.sampling import sample_lines as sample_lines
from corpora.sources import Source as Source
from corpora.sources import expand_sources as expand_sources

__all__ = [
    "CorpusError",
    "CorpusReader",
    "Source",
    "builtin_corpus",
    "cache_dir",
    "expand_sources",
    "first_lines",
    "read_lines",
    "sample_lines",
]
