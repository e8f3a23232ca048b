"""Word counts as a value: count a corpus once (in shards, on many machines), merge, train from the counts.

Counting is the expensive, embarrassingly parallel part of BPE and WordPiece training, and its
result is small. :func:`count_words` runs a pipeline's normalizer and pre-tokenizer over lines and
returns a :class:`WordCounts`: mergeable (same pipeline only), picklable, savable as a ``.swc``
file (:mod:`subword.formats.counts`). ``trainer.train_from_counts(counts)`` then trains exactly as
training on the concatenated text would, because BPE and WordPiece training see the corpus only
through these counts (HF ``BpeTrainer::feed`` keeps the same word -> count map).

:class:`CountsFile` is a ``.swc`` file opened for training without loading it: the Rust trainer
reads its word list and keeps only the words that can take part in a merge under the trainer's
``min_frequency`` (exactly: the result is the one every word gives; see ``rust/src/bpe/select.rs``),
so the words left out never take memory. ``load(path, min_count=N)`` and ``--min-count`` are
different: they drop the words counted fewer than N times, which changes the result.

:class:`Counter` is the streaming side: it counts sources one by one, records what it read (per
source: name, sha256, lines, bytes), and with ``max_memory`` spills sorted runs to disk whenever the
word table passes the budget, merging them when the file is written, so memory stays bounded
whatever the corpus size: peak RSS stays within the budget plus about 100 MiB. That constant is
the interpreter with the extension (~30 MiB), one batch of 65,536 lines with its chunk maps, and
the k-way merge's buffers. Measured by ``benchmarks/bench_scale.py``: 174 MiB at a 78.7 MB budget
on 2 GB, three runs spilled.

>>> a = count_words(["low lower\\n"], like="bpe")
>>> b = count_words(["lowest low\\n"], like="bpe")
>>> a.update(b); sorted(a.words())
[('low', 2), ('lower', 1), ('lowest', 1)]
>>> from subword.trainers import BpeTrainer
>>> BpeTrainer(vocab_size=12).train_from_counts(a).model.merges[:2]
[('l', 'o'), ('lo', 'w')]
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from subword import normalizers as _normalizers
from subword import pre_tokenizers as _pre_tokenizers

__all__ = ["WordCounts", "CountsFile", "Counter", "count_words", "merge_files", "train_from_counts", "pipeline_for", "make_pipeline",
           "pipeline_difference", "ALGORITHMS"]

log = logging.getLogger(__name__)

#: The algorithms whose pipeline ``like=`` / ``--for`` can name.
ALGORITHMS = ("bpe", "byte-bpe", "wordpiece")
#: Lines handed to the Rust counter at once.
_BATCH_LINES = 1 << 16


def pipeline_for(like: Any) -> dict[str, Any]:
    """The pipeline (``{"normalizer": dict | None, "pre_tokenizer": dict}``) whose words a trainer counts.

    Args:
        like: An algorithm name (``"bpe"``, ``"byte-bpe"``, ``"wordpiece"``: the pipelines of
            :func:`subword.trainers.train_bpe` and :func:`subword.trainers.train_wordpiece` with their
            defaults), a :class:`subword.Tokenizer`, or the path of a tokenizer file.

    Raises:
        ValueError: an unknown name, or a tokenizer without a pre-tokenizer.

    >>> pipeline_for("bpe")
    {'normalizer': None, 'pre_tokenizer': {'type': 'Whitespace'}}
    """
    from subword.tokenizer import Tokenizer

    if isinstance(like, str) and like in ALGORITHMS:
        if like == "bpe":
            return make_pipeline(None, _pre_tokenizers.Whitespace())
        if like == "byte-bpe":
            return make_pipeline(None, _pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True,
                                                                 use_regex=True))
        from subword.trainers import WordPieceTrainer

        return make_pipeline(WordPieceTrainer().normalizer(), _pre_tokenizers.BertPreTokenizer())
    if isinstance(like, (str, os.PathLike)):
        if not Path(like).exists():
            raise ValueError(f"like={str(like)!r} is neither one of {', '.join(ALGORITHMS)} nor an existing "
                             "tokenizer file")
        like = Tokenizer.from_file(like)
    if isinstance(like, Tokenizer):
        if like.pre_tokenizer is None:
            raise ValueError("the tokenizer has no pre-tokenizer: its words cannot be counted apart")
        return make_pipeline(like.normalizer, like.pre_tokenizer)
    raise TypeError(f"like must be an algorithm name, a Tokenizer or a tokenizer file, got {type(like).__name__}")


def make_pipeline(normalizer: Any, pre_tokenizer: Any) -> dict[str, Any]:
    """The pipeline dict of a normalizer (or None) and a pre-tokenizer (objects or their HF dicts)."""
    norm = normalizer.to_dict() if hasattr(normalizer, "to_dict") else normalizer
    pre = pre_tokenizer.to_dict() if hasattr(pre_tokenizer, "to_dict") else pre_tokenizer
    # Round-trip through our classes: defaults filled in, so equal pipelines compare equal.
    if norm is not None:
        norm = _normalizers.from_dict(norm, "normalizer").to_dict()
    pre = _pre_tokenizers.from_dict(pre, "pre_tokenizer").to_dict()
    return {"normalizer": norm, "pre_tokenizer": pre}


def pipeline_difference(a: dict[str, Any], b: dict[str, Any]) -> str | None:
    """None if the pipelines are equal, else the first difference in words.

    >>> pipeline_difference(pipeline_for("bpe"), pipeline_for("byte-bpe"))
    'pre_tokenizer.type: Whitespace vs ByteLevel'
    """

    def walk(x: Any, y: Any, where: str) -> str | None:
        if isinstance(x, dict) and isinstance(y, dict):
            for key in sorted(set(x) | set(y), key=lambda k: (k != "type", k)):
                found = walk(x.get(key), y.get(key), f"{where}.{key}" if where else key)
                if found:
                    return found
            return None
        if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
            for i, (u, v) in enumerate(zip(x, y)):
                found = walk(u, v, f"{where}[{i}]")
                if found:
                    return found
            return None
        if x != y:
            def show(v: Any) -> str:
                if isinstance(v, dict) and "type" in v:
                    return str(v["type"])
                if isinstance(v, str):
                    return v
                return "none" if v is None else json.dumps(v, ensure_ascii=False)
            return f"{where}: {show(x)} vs {show(y)}"
        return None

    return walk(a, b, "")


def feed_lines(counter: Any, batch: list[str], digest: Any, first_line: int, where: str = "") -> None:
    """``counter.feed(batch, digest)``: the words of ``batch`` counted into a ``_core.WordCounter`` and
    its text hashed into a ``_core.InputDigest``, both in Rust without the GIL. ``first_line`` (lines
    before this batch) and ``where`` name a line that is not a str.

    Raises:
        TypeError: a line is not a str.
    """
    try:
        counter.feed(batch, digest)
    except TypeError:
        bad = next((i for i, line in enumerate(batch) if not isinstance(line, str)), None)
        if bad is None:
            raise
        raise TypeError(f"lines must be str, got {type(batch[bad]).__name__} at line "
                        f"{first_line + bad + 1}{where}") from None


def _core_counter(pipeline: dict[str, Any], threads: int | None) -> Any:
    from subword._native import core_class

    norm = pipeline["normalizer"]
    return core_class("WordCounter")(json.dumps(pipeline["pre_tokenizer"], ensure_ascii=False),
                                     None if norm is None else json.dumps(norm, ensure_ascii=False), threads)


class WordCounts:
    """Distinct words of a corpus with their counts, and the pipeline and inputs that produced them.

    Attributes:
        pipeline: ``{"normalizer": dict | None, "pre_tokenizer": dict}`` (HF ``tokenizer.json`` dicts).
        inputs: One dict per counted source or range: ``source``, ``sha256``, ``lines``, ``bytes``,
            ``range`` (``[start, end)`` bytes of the file, or None for all of it).

    >>> c = count_words(["the cat the\\n"], like="bpe")
    >>> len(c), c.occurrences, c.lines
    (2, 3, 1)
    >>> import pickle; sorted(pickle.loads(pickle.dumps(c)).words())
    [('cat', 1), ('the', 2)]
    """

    def __init__(self, pipeline: dict[str, Any], *, threads: int | None = None) -> None:
        self.pipeline = pipeline
        self.inputs: list[dict[str, Any]] = []
        self._counter = _core_counter(pipeline, threads)

    @classmethod
    def _from_header(cls, header: dict[str, Any], threads: int | None = None) -> WordCounts:
        counts = cls(header["pipeline"], threads=threads)
        counts.inputs = list(header["inputs"])
        return counts

    # ==== what they hold ====

    def __len__(self) -> int:
        return len(self._counter)

    def __repr__(self) -> str:
        pre = self.pipeline["pre_tokenizer"].get("type")
        norm = (self.pipeline["normalizer"] or {}).get("type")
        return (f"WordCounts({len(self):,} distinct words, {self.lines:,} lines, pre_tokenizer={pre}, "
                f"normalizer={norm})")

    @property
    def lines(self) -> int:
        return sum(int(i["lines"]) for i in self.inputs)

    @property
    def bytes(self) -> int:
        return sum(int(i["bytes"]) for i in self.inputs)

    @property
    def occurrences(self) -> int:
        return int(self._counter.occurrences())

    def words(self) -> list[tuple[str, int]]:
        """The words as the model sees them (byte-level mapped for ``ByteLevel``), sorted, with counts."""
        return list(self._counter.words())

    def sha256(self) -> str:
        """A hash of the inputs (their sha256 in order): what a tokenizer trained on these counts records."""
        return _inputs_sha256(self.inputs)

    def normalizer(self) -> Any:
        norm = self.pipeline["normalizer"]
        return None if norm is None else _normalizers.from_dict(norm, "word counts")

    def pre_tokenizer(self) -> Any:
        return _pre_tokenizers.from_dict(self.pipeline["pre_tokenizer"], "word counts")

    def header(self, *, min_count: int = 0) -> dict[str, Any]:
        """What a ``.swc`` file records besides the words."""
        return {"pipeline": self.pipeline, "inputs": self.inputs, "lines": self.lines, "bytes": self.bytes,
                "min_count": min_count, "made_by": _made_by()}

    # ==== combining ====

    def check_same_pipeline(self, other: WordCounts, what: str = "counts") -> None:
        """Raises ValueError naming the first difference when ``other`` was made by another pipeline."""
        diff = pipeline_difference(self.pipeline, other.pipeline)
        if diff:
            raise ValueError(f"cannot merge {what} made by different pipelines: {diff}")

    def update(self, other: WordCounts) -> None:
        """Adds the counts (and the inputs) of ``other``, made by the same pipeline.

        Raises:
            ValueError: the pipelines differ (the message names the difference).
        """
        if not isinstance(other, WordCounts):
            raise TypeError(f"can only merge WordCounts, got {type(other).__name__}")
        self.check_same_pipeline(other)
        self._counter.merge(other._counter)
        self.inputs.extend(other.inputs)

    @classmethod
    def merged(cls, parts: Sequence[WordCounts]) -> WordCounts:
        """A new WordCounts holding the sum of ``parts`` (at least one).

        >>> WordCounts.merged([count_words(["a\\n"], like="bpe"), count_words(["a b\\n"], like="bpe")]).words()
        [('a', 2), ('b', 1)]
        """
        if not parts:
            raise ValueError("nothing to merge")
        out = cls(parts[0].pipeline)
        for part in parts:
            out.update(part)
        return out

    def __getstate__(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "inputs": self.inputs, "records": self._counter.to_records()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.pipeline = state["pipeline"]
        self.inputs = state["inputs"]
        self._counter = _core_counter(self.pipeline, None)
        self._counter.add_records(state["records"])

    # ==== files ====

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write a ``.swc`` file atomically (see :mod:`subword.formats.counts`)."""
        from subword.formats.counts import write_counts

        write_counts(path, self)

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, min_count: int = 0, threads: int | None = None) -> WordCounts:
        """Read a ``.swc`` file; words seen fewer than ``min_count`` times are skipped while loading.

        Raises:
            subword.errors.FormatError: truncated, corrupt, or of another version.
        """
        from subword.formats.counts import read_counts

        return read_counts(path, min_count=min_count, threads=threads)

    # ==== training ====

    def _for_training(self, trainer: Any, pre: Any, normalizer: Any) -> tuple[Any, Any, dict[str, int], int]:
        """What :func:`subword.trainers._count` returns, from these counts (after checking the pipeline)."""
        _check_training_pipeline(self.pipeline, pre, normalizer)
        if len(self) == 0:
            raise ValueError(f"the word counts hold no words ({self.lines} lines)")
        sha = hashlib.sha256()
        sha.update(self.sha256().encode())
        if trainer.engine == "rust":
            if trainer.threads is not None:
                self._counter.set_threads(trainer.threads)
            words: Any = self._counter
        else:
            words = dict(self.words())
        return words, sha, {"lines": self.lines}, len(self)


def _check_training_pipeline(pipeline: dict[str, Any], pre: Any, normalizer: Any) -> None:
    want = make_pipeline(normalizer, pre)
    diff = pipeline_difference(want, pipeline)
    if diff:
        raise ValueError(f"these word counts were made by another pipeline than this trainer's "
                         f"(trainer vs counts: {diff}); count again with `subword count --for ...` "
                         "or --like the tokenizer")


def _inputs_sha256(inputs: list[dict[str, Any]]) -> str:
    h = hashlib.sha256()
    for item in inputs:
        h.update(f"{item['sha256']}:{item.get('range')}\n".encode())
    return h.hexdigest()


class CountsFile:
    """A ``.swc`` file opened for training without loading its words.

    ``trainer.train_from_counts(CountsFile(path))`` (or the path itself) streams the word list
    into the Rust trainer, which keeps only the words that can take part in a merge under its
    ``min_frequency``: the same tokenizer as training on every word (or on the text), in less
    memory. Only the header is read here; the word list is checked (checksum, records) as it is read.

    Args:
        path: The ``.swc`` file.
        min_count: Skip the words counted fewer times (``--min-count``: this one changes the result).

    Raises:
        subword.errors.FormatError: not a counts file, another version, truncated, or a bad header.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp(), "c.swc")
    >>> count_words(["low lower lowest\\n"] * 3, like="bpe").save(path)
    >>> f = CountsFile(path); f.words, f.lines
    (3, 3)
    >>> from subword.trainers import BpeTrainer
    >>> BpeTrainer(vocab_size=12, min_frequency=2).train_from_counts(f).model.merges[:2]
    [('l', 'o'), ('lo', 'w')]
    """

    def __init__(self, path: str | os.PathLike[str], *, min_count: int = 0) -> None:
        from subword.formats.counts import read_header, record_stream

        if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 0:
            raise ValueError(f"min_count must be an int >= 0, got {min_count!r}")
        self.path = Path(path)
        self.header, self._run = record_stream(self.path)
        trailer = read_header(self.path)
        #: Distinct words and word occurrences in the file (before ``min_count``).
        self.words: int = int(trailer["words"])
        self.occurrences: int = int(trailer["occurrences"])
        self.min_count = min_count

    def __repr__(self) -> str:
        return f"CountsFile({str(self.path)!r}, {self.words:,} distinct words, {self.lines:,} lines)"

    @property
    def pipeline(self) -> dict[str, Any]:
        return self.header["pipeline"]

    @property
    def inputs(self) -> list[dict[str, Any]]:
        return list(self.header["inputs"])

    @property
    def lines(self) -> int:
        return sum(int(i["lines"]) for i in self.header["inputs"])

    @property
    def bytes(self) -> int:
        return sum(int(i["bytes"]) for i in self.header["inputs"])

    def sha256(self) -> str:
        """As :meth:`WordCounts.sha256`: what a tokenizer trained on these counts records."""
        return _inputs_sha256(self.header["inputs"])

    def normalizer(self) -> Any:
        norm = self.pipeline["normalizer"]
        return None if norm is None else _normalizers.from_dict(norm, "word counts")

    def pre_tokenizer(self) -> Any:
        return _pre_tokenizers.from_dict(self.pipeline["pre_tokenizer"], "word counts")

    def load(self, threads: int | None = None) -> WordCounts:
        """All the words (after ``min_count``) as a :class:`WordCounts`."""
        return WordCounts.load(self.path, min_count=self.min_count, threads=threads)

    def _for_training(self, trainer: Any, pre: Any, normalizer: Any) -> tuple[Any, Any, dict[str, int], int]:
        """What :func:`subword.trainers._count` returns: for the Rust engine, a :class:`FileRecords`
        the trainer selects from; for the reference engine, every word."""
        _check_training_pipeline(self.pipeline, pre, normalizer)
        sha = hashlib.sha256()
        sha.update(self.sha256().encode())
        if trainer.engine != "rust":
            return self.load()._for_training(trainer, pre, normalizer)
        path, offset, length, crc = self._run
        if self.words == 0:
            raise ValueError(f"the word counts hold no words ({self.lines} lines)")
        records = FileRecords(path=path, offset=offset, length=length, crc32=crc, min_count=self.min_count,
                              pre_tokenizer=json.dumps(self.pipeline["pre_tokenizer"], ensure_ascii=False),
                              threads=trainer.threads, words=self.words)
        return records, sha, {"lines": self.lines}, self.words


class FileRecords:
    """Where the word list of a counts file is, for the Rust trainer to select from while reading it."""

    def __init__(self, *, path: str, offset: int, length: int, crc32: int | None, min_count: int,
                 pre_tokenizer: str, threads: int | None, words: int) -> None:
        self.path, self.offset, self.length, self.crc32 = path, offset, length, crc32
        self.min_count, self.pre_tokenizer, self.threads, self.words = min_count, pre_tokenizer, threads, words

    def select(self, prune: bool, **options: Any) -> Any:
        """A ``_core.TrainingWords`` for the trainer ``options``.

        Raises:
            subword.errors.FormatError: the word list is corrupt (bad record or checksum).
        """
        from subword._native import core_class
        from subword.errors import FormatError

        try:
            words, crc = core_class("TrainingWords").from_file(
                self.path, self.offset, self.length, self.pre_tokenizer, min_count=self.min_count, prune=prune,
                threads=self.threads, **options)
        except ValueError as exc:
            if not str(exc).startswith(str(self.path)):  # an option, not the file
                raise
            raise FormatError(f"corrupt word-counts file {exc}") from None
        if self.crc32 is not None and crc != self.crc32:
            raise FormatError(f"{self.path}: corrupt word-counts file (checksum mismatch in the word list)")
        if self.min_count <= 1 and words.distinct != self.words:
            raise FormatError(f"{self.path}: corrupt word-counts file ({words.distinct} words, the trailer says "
                              f"{self.words})")
        if words.distinct == 0:
            raise ValueError(f"{self.path}: no word is counted {self.min_count} times or more (--min-count)")
        return words


def _made_by() -> str:
    try:
        from importlib.metadata import version

        return f"subword {version('subword')}"
    except Exception:  # noqa: BLE001 - a source checkout without metadata
        return "subword"


class Counter:
    """Counts sources one after another into one table, optionally within a memory budget.

    Args:
        pipeline: What :func:`pipeline_for` returns.
        threads: Counting threads (default: all cores).
        max_memory: Budget in bytes for the word table; past it, the table is written to a sorted
            run in ``spill_dir`` and emptied. None: no budget.
        spill_dir: Where runs go (default: the system temporary folder); they are removed by
            :meth:`write` and :meth:`close`.

    >>> c = Counter(pipeline_for("bpe"))
    >>> entry = c.add_lines(["a b a\\n"], source="x")
    >>> c.counts().words()
    [('a', 2), ('b', 1)]
    """

    def __init__(self, pipeline: dict[str, Any], *, threads: int | None = None, max_memory: int | None = None,
                 spill_dir: str | os.PathLike[str] | None = None) -> None:
        if max_memory is not None and max_memory <= 0:
            raise ValueError(f"max_memory must be > 0 bytes, got {max_memory}")
        self._counts = WordCounts(pipeline, threads=threads)
        self.max_memory = max_memory
        self.spill_dir = Path(spill_dir) if spill_dir is not None else Path(tempfile.gettempdir())
        self.runs: list[tuple[Path, int, int]] = []  # (file, bytes, crc32)
        self.spilled_bytes = 0

    def add_lines(self, lines: Iterable[str], *, source: str, byte_range: tuple[int, int] | None = None,
                  progress: Callable[[int], None] | None = None) -> dict[str, Any]:
        """Counts ``lines`` (with their endings) as one input; returns and records its entry.

        Raises:
            TypeError: a line is not a str.
        """
        from subword._native import core_class

        digest = core_class("InputDigest")()
        n_lines = 0
        it = iter(lines)
        while batch := list(islice(it, _BATCH_LINES)):
            feed_lines(self._counts._counter, batch, digest, n_lines, f" of {source}")
            n_lines += len(batch)
            self._maybe_spill()
            if progress is not None:
                progress(digest.bytes)
        entry = {"source": source, "sha256": digest.hexdigest(), "lines": n_lines, "bytes": digest.bytes,
                 "range": list(byte_range) if byte_range is not None else None}
        self._counts.inputs.append(entry)
        return entry

    def _maybe_spill(self) -> None:
        # Spill before the next batch could push the table (or its rehash) past the budget.
        if self.max_memory is None or self._counts._counter.peak_after_next_feed() <= self.max_memory:
            return
        fd, name = tempfile.mkstemp(dir=self.spill_dir, prefix=".subword-count-run-", suffix=".tmp")
        os.close(fd)
        os.unlink(name)  # the Rust side creates it exclusively
        path = Path(name)
        self.runs.append((path, 0, 0))  # listed first, so close() removes a half-written run too
        words, _, nbytes, crc = self._counts._counter.spill(str(path))
        self.runs[-1] = (path, nbytes, crc)
        self.spilled_bytes += nbytes
        log.info("spilled %d words (%.1f MB) to %s", words, nbytes / 1e6, path)

    def counts(self) -> WordCounts:
        """The counts in memory (only without spilled runs; use :meth:`write` then)."""
        if self.runs:
            raise RuntimeError("the counts were spilled to disk; write them with Counter.write(path)")
        return self._counts

    @property
    def distinct_in_memory(self) -> int:
        return len(self._counts)

    def write(self, path: str | os.PathLike[str], *, min_count: int = 0) -> None:
        """Writes the ``.swc`` file (merging the spilled runs) and removes the runs."""
        from subword.formats.counts import write_counts

        try:
            write_counts(path, self._counts, runs=[(str(p), 0, n, crc) for p, n, crc in self.runs],
                         min_count=min_count)
        finally:
            self.close()

    def close(self) -> None:
        """Removes the spilled runs."""
        for run, _, _ in self.runs:
            try:
                run.unlink()
            except FileNotFoundError:
                pass
        self.runs = []


def merge_files(paths: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str], *,
                min_count: int = 0) -> dict[str, Any]:
    """Merge ``.swc`` files into ``output`` without loading them: a k-way merge of their sorted word
    lists, holding one word per input in memory. Returns the output's header.

    Raises:
        ValueError: the files were made by different pipelines (the message names the difference).
        subword.errors.FormatError: a file is truncated, corrupt or of another version.

    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> count_words(["a b\\n"], like="bpe").save(d / "1.swc"); count_words(["b\\n"], like="bpe").save(d / "2.swc")
    >>> merge_files([d / "1.swc", d / "2.swc"], d / "all.swc")["words"]
    2
    >>> WordCounts.load(d / "all.swc").words()
    [('a', 1), ('b', 2)]
    """
    from subword.formats.counts import read_header, record_stream, write_counts

    if not paths:
        raise ValueError("nothing to merge")
    streams = [record_stream(p) for p in paths]
    first = streams[0][0]
    for p, (header, _) in zip(paths[1:], streams[1:]):
        diff = pipeline_difference(first["pipeline"], header["pipeline"])
        if diff:
            raise ValueError(f"cannot merge {p} with {paths[0]}: made by different pipelines ({diff})")
    total = WordCounts(first["pipeline"])
    for header, _ in streams:
        total.inputs.extend(header["inputs"])
    write_counts(output, total, runs=[run for _, run in streams], min_count=min_count)
    return read_header(output)


def count_words(lines: Iterable[str], like: Any = None, *, normalizer: Any = None, pre_tokenizer: Any = None,
                threads: int | None = None, source: str = "<lines>") -> WordCounts:
    """Count the words a trainer would see in ``lines`` (keep their line endings, as HF does).

    Args:
        lines: The corpus, one str per line.
        like: Whose pipeline to run: ``"bpe"``, ``"byte-bpe"``, ``"wordpiece"``, a Tokenizer or a tokenizer
            file (see :func:`pipeline_for`). Or give ``pre_tokenizer`` (and ``normalizer``) instead.
        normalizer: A :mod:`subword.normalizers` object (with ``pre_tokenizer``, not with ``like``).
        pre_tokenizer: A :mod:`subword.pre_tokenizers` object.
        threads: Counting threads (default: all cores).
        source: How the inputs list names these lines.

    Returns:
        A mergeable, picklable :class:`WordCounts`.

    Raises:
        ValueError: neither or both of ``like`` and ``pre_tokenizer``.

    >>> from subword.pre_tokenizers import WhitespaceSplit
    >>> count_words(["a-b a-b\\n"], pre_tokenizer=WhitespaceSplit()).words()
    [('a-b', 2)]
    """
    if isinstance(lines, (str, bytes)):
        raise TypeError("lines must be an iterable of lines (e.g. a list of str or an open file), not a single string")
    if (like is None) == (pre_tokenizer is None):
        raise ValueError("give like= (an algorithm or a tokenizer) or pre_tokenizer= (and normalizer=), not both "
                         "or neither")
    if like is not None and normalizer is not None:
        raise ValueError("normalizer= goes with pre_tokenizer=, not with like=")
    pipeline = pipeline_for(like) if like is not None else make_pipeline(normalizer, pre_tokenizer)
    counter = Counter(pipeline, threads=threads)
    counter.add_lines(lines, source=source)
    return counter.counts()


def train_from_counts(trainer: Any, counts: WordCounts | CountsFile | str | os.PathLike[str], *,
                      progress: Any = None) -> Any:
    """Train ``trainer`` (a BpeTrainer or WordPieceTrainer) on ``counts`` (a path is opened as a
    :class:`CountsFile`); see ``BpeTrainer.train_from_counts``."""
    from subword.trainers import BpeTrainer, WordPieceTrainer, train_bpe, train_wordpiece

    if isinstance(counts, (str, os.PathLike)):
        counts = CountsFile(counts)
    if not isinstance(counts, (WordCounts, CountsFile)):
        raise TypeError(f"counts must be a subword.counts.WordCounts, a CountsFile or a .swc path, got "
                        f"{type(counts).__name__}")
    if isinstance(trainer, WordPieceTrainer):
        return train_wordpiece(counts, trainer, progress=progress)  # type: ignore[arg-type]
    if isinstance(trainer, BpeTrainer):
        byte_level = counts.pipeline["pre_tokenizer"].get("type") == "ByteLevel"
        return train_bpe(counts, trainer, byte_level=byte_level, normalizer=counts.normalizer(),  # type: ignore[arg-type]
                         progress=progress)
    raise TypeError(f"trainer must be a BpeTrainer or WordPieceTrainer, got {type(trainer).__name__}")
