"""Counting words on a Dask cluster: byte ranges of the inputs counted on the workers, merged tree-wise.

Each input file is cut into byte ranges of about ``chunk_bytes``. A range owns the lines that *start*
inside it: its task seeks to ``start``, skips the rest of a line begun before ``start`` (unless
``start`` is 0 or follows a newline), and reads up to and including the line that crosses ``end``.
So the ranges partition the lines exactly, whatever the cut points, and every range is counted by
the same Rust counter the single-process ``subword count`` uses. Compressed files (``.gz``, ``.bz2``,
``.xz``) cannot be cut and are one task each. Partial counts travel between processes pickled (a
sorted record stream, :class:`subword.counts.WordCounts`), and are merged pairwise in a tree, so no
process receives more than two partial tables at a time. The result equals the single-process count
(words and totals); only ``inputs`` lists ranges instead of whole files.

Tasks are pure functions of (path, range), so a worker that dies mid-task is harmless: Dask reruns
the task elsewhere and the count stays exact. Every worker must see the input files at the same
paths (a shared file system, or the same files copied to each machine).

Needs ``dask[distributed]`` (the ``subword[distributed]`` extra). On a real cluster::

    dask scheduler                         # on one machine; prints tcp://HOST:8786
    dask worker tcp://HOST:8786            # on each machine (as many as you like)
    subword count --dask tcp://HOST:8786 /shared/corpus/*.txt --for byte-bpe -o all.swc

Any Dask deployment works the same way (dask-jobqueue on SLURM, dask-kubernetes, Coiled...): give
``subword count --dask`` its scheduler address, or pass its ``Client`` to :func:`count_words`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from subword.counts import Counter, WordCounts, pipeline_for

__all__ = ["count_words", "byte_ranges", "count_range", "connect"]

#: Default bytes per task: big enough that scheduling costs little, small enough to spread the work.
CHUNK_BYTES = 64 * 2**20


def _require_distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("counting on a Dask cluster needs dask[distributed]: pip install 'subword[distributed]'") from exc
    return distributed


def connect(address: str, *, timeout: float = 10.0) -> Any:
    """A ``distributed.Client`` for the scheduler at ``address``, or a clear error within ``timeout`` seconds.

    Raises:
        ConnectionError: the scheduler cannot be reached in time.

    >>> connect("tcp://127.0.0.1:9", timeout=0.5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ConnectionError: cannot reach the Dask scheduler at tcp://127.0.0.1:9 within 0.5 s ...
    """
    distributed = _require_distributed()
    try:
        return distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ConnectionError(f"cannot reach the Dask scheduler at {address} within {timeout:g} s "
                              f"({type(exc).__name__}: {exc}); is `dask scheduler` running there?") from None


def _compressed(path: Path) -> bool:
    from corpora.compression import detect_compression

    with open(path, "rb") as fh:
        head = fh.read(8)
    return detect_compression(head, path.name) is not None


def byte_ranges(path: str | os.PathLike[str], chunk_bytes: int = CHUNK_BYTES) -> list[tuple[int, int]]:
    """Cuts a file into ``[start, end)`` ranges of about ``chunk_bytes`` (a compressed file: one range).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp(), "a.txt"); _ = p.write_bytes(b"x" * 10)
    >>> byte_ranges(p, 4)
    [(0, 4), (4, 8), (8, 10)]
    """
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes must be >= 1, got {chunk_bytes}")
    p = Path(path)
    size = p.stat().st_size
    if size == 0 or _compressed(p):
        return [(0, size)]
    return [(s, min(s + chunk_bytes, size)) for s in range(0, size, chunk_bytes)]


def _range_lines(path: Path, start: int, end: int, errors: str) -> Any:
    """The lines (with endings) that start in ``[start, end)``, decoded like :class:`corpora.CorpusReader`."""
    from corpora.errors import CorpusError

    with open(path, "rb") as fh:
        if start > 0:
            fh.seek(start - 1)
            if fh.read(1) != b"\n":
                fh.readline()  # the rest of a line that started in the previous range
        pos = fh.tell()
        while pos < end:
            raw = fh.readline()
            if not raw:
                break
            if b"\x00" in raw:
                raise CorpusError(f"NUL byte near byte {pos}: this looks like a binary file, not UTF-8 text",
                                  source=str(path))
            try:
                yield raw.decode("utf-8", errors)
            except UnicodeDecodeError as exc:
                raise CorpusError(f"invalid UTF-8 at byte {pos + exc.start}; convert the file to UTF-8 or use "
                                  "--encoding-errors replace", source=str(path)) from None
            pos += len(raw)


def count_range(path: str, start: int, end: int, pipeline: dict[str, Any], errors: str = "strict",
                threads: int | None = None) -> WordCounts:
    """Counts the lines starting in ``[start, end)`` of ``path`` (one Dask task; also usable alone).

    A compressed file is counted whole (its range is ``(0, size)``).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp(), "a.txt"); _ = p.write_bytes(b"one two\\nthree\\n")
    >>> count_range(str(p), 1, 9, pipeline_for("bpe")).words()  # the line starting at 0 belongs elsewhere
    [('three', 1)]
    """
    p = Path(path)
    counter = Counter(pipeline, threads=threads)
    if _compressed(p):
        import corpora

        counter.add_lines(corpora.CorpusReader([p], errors=errors), source=str(path), byte_range=(start, end))  # type: ignore[arg-type]
    else:
        counter.add_lines(_range_lines(p, start, end, errors), source=str(path), byte_range=(start, end))
    return counter.counts()


def _merge_two(a: WordCounts, b: WordCounts) -> WordCounts:
    # A new object, never `a` updated in place: a task's inputs may be reused if Dask reruns it.
    return WordCounts.merged([a, b])


def count_words(paths: Sequence[str | os.PathLike[str]], client: Any, like: Any = "byte-bpe", *,
                pipeline: dict[str, Any] | None = None, chunk_bytes: int = CHUNK_BYTES,
                errors: str = "strict", threads_per_task: int | None = 1, retries: int = 3) -> WordCounts:
    """Counts the words of ``paths`` on the workers of ``client`` (a ``distributed.Client``).

    Args:
        paths: Files (globs and directories are expanded as ``subword count`` does); the workers must
            see them at these paths.
        client: A connected ``distributed.Client`` (e.g. ``Client(LocalCluster())`` or :func:`connect`).
        like: Whose pipeline (see :func:`subword.counts.pipeline_for`); ignored when ``pipeline`` is given.
        pipeline: An explicit pipeline dict.
        chunk_bytes: About how many bytes each task counts.
        errors: ``"strict"`` or ``"replace"`` for bytes that are not UTF-8.
        threads_per_task: Rust threads per task (1: Dask's worker threads are the parallelism).
        retries: How often Dask may rerun a task whose worker died.

    Returns:
        The merged counts, equal to the single-process count of the same files in the same order.

    Raises:
        corpora.CorpusError: a file cannot be read or is not UTF-8 (raised from the worker).

    >>> from distributed import Client, LocalCluster  # doctest: +SKIP
    >>> client = Client(LocalCluster(n_workers=2, threads_per_worker=1))  # doctest: +SKIP
    >>> count_words(["corpus.txt"], client, like="byte-bpe").save("all.swc")  # doctest: +SKIP
    """
    import corpora

    if pipeline is None:
        pipeline = pipeline_for(like)
    sources = corpora.expand_sources([str(p) for p in paths])
    if any(s.path is None for s in sources):
        raise ValueError("standard input cannot be counted on a cluster: give files")
    tasks = []
    for source in sources:
        assert source.path is not None
        absolute = str(Path(source.path).resolve())
        for start, end in byte_ranges(absolute, chunk_bytes):
            tasks.append(client.submit(count_range, absolute, start, end, pipeline, errors, threads_per_task,
                                       retries=retries, pure=False))
    if not tasks:
        raise ValueError("no input files")
    # Pairwise in input order, so `inputs` stays in file and range order.
    level = tasks
    while len(level) > 1:
        nxt = [client.submit(_merge_two, level[i], level[i + 1], retries=retries, pure=False)
               for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    result: WordCounts = level[0].result()
    return result
