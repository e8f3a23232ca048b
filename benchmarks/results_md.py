"""Writing one benchmark's section of ``benchmarks/RESULTS.md``.

Each benchmark script owns the text between its two markers (``<!-- bench_X:start -->`` and
``<!-- bench_X:end -->``) and replaces only that, so the scripts can be rerun in any order.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def replace_section(block: str, start: str, end: str, path: Path = RESULTS) -> None:
    """Put ``block`` (which begins with ``start`` and ends with ``end``) where the old one was, or
    append it; the file is replaced atomically, so an interrupted run leaves the old one whole.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "R.md"
    >>> replace_section("<!-- a -->\\nx\\n<!-- /a -->", "<!-- a -->", "<!-- /a -->", p)
    >>> replace_section("<!-- a -->\\ny\\n<!-- /a -->", "<!-- a -->", "<!-- /a -->", p)
    >>> p.read_text()
    '# Benchmark results\\n\\n<!-- a -->\\ny\\n<!-- /a -->\\n'
    """
    if not (block.startswith(start) and block.endswith(end)):
        raise ValueError(f"a section must begin with {start!r} and end with {end!r}")
    old = path.read_text(encoding="utf-8") if path.exists() else "# Benchmark results\n"
    if start in old and end in old:
        new = old[: old.index(start)] + block + old[old.index(end) + len(end):]
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(tmp, path)
