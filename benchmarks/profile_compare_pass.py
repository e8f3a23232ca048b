"""Where the one pass of ``subword compare`` over its input spends its time (the Rust core's share).

Loads the four tokenizers of ``bench_compare.py`` (its ``prepare_tokenizers``; the trained models are
cached in ``$TMPDIR/subword-bench-compare``), reads the corpus the way its encode child does, and
times :func:`subword.compare.collect.collect` on it (blocks of ⌊√n⌋ lines, as ``subword compare``), split
by the ``CompareCollector`` calls:

* ``segment``: UAX #29 word segmentation of each chunk and interning of the segment types;
* ``reduce``: encoding of the chunk by every tokenizer, then the per-line reduction; the encoders'
  own seconds (measured inside, ``chunk_seconds``) are reported apart, and ``reduce - encode`` is the
  reduction itself;
* ``python``: the rest of ``collect`` (classifying the new types, filling the arrays).

``--digest`` prints a hash of every array of the result, to check that a change of the core leaves
the outputs identical (run it before and after the change, on the same input).

Usage::

    python benchmarks/profile_compare_pass.py                # the 20 MB corpus, 3 runs (median)
    python benchmarks/profile_compare_pass.py --mb 2 --runs 1 --digest
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from bench_compare import CORPUS, prepare_tokenizers

log = logging.getLogger("profile_compare_pass")


def read_lines(path: Path, mb: float | None) -> list[str]:
    """The corpus's lines (line feeds and a trailing ``\\r`` dropped), the first ``mb`` MB of whole lines."""
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read(int(mb * 1e6)) if mb else f.read()
    if mb:
        text = text.rsplit("\n", 1)[0] + "\n"
    lines = text.split("\n")  # line feeds only, as the benchmark's `for line in file` (newline="")
    if lines and not lines[-1]:
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


class _Timed:
    """``CompareCollector`` with a clock around ``segment`` and ``reduce``."""

    def __init__(self, inner: Any, clock: dict[str, float]) -> None:
        self._inner, self._clock = inner, clock

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._inner, name)
        if name not in ("segment", "reduce"):
            return fn

        def run(*a: Any) -> Any:
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                return fn(*a)
            finally:
                self._clock[name] += time.perf_counter() - t0
                self._clock[name + "_cpu"] += time.process_time() - c0
        return run


def digest(c: Any) -> str:
    """A hash of every array and list of a ``Collected`` (timings and samples left out)."""
    h = hashlib.sha256()

    def add(x: Any) -> None:
        h.update(np.ascontiguousarray(x).tobytes() if isinstance(x, np.ndarray) else repr(x).encode())

    for name in ("chars", "bytes", "words", "ws_words", "type_count", "type_first_line"):
        add(getattr(c, name))
    add(c.types)
    for label in sorted(c.script_words):
        add(label), add(c.script_words[label])
    for d in c.tokenizers:
        for name in ("tokens", "continued", "unk_chars", "byte_tokens", "lossless", "boundaries", "type_tokens"):
            add(getattr(d, name))
        add(d.block_types.indptr), add(d.block_types.ids), add(d.block_types.counts)
        for label in sorted(d.script_tokens):
            add(label), add(d.script_tokens[label])
        add([(e["line_index"], e["first_difference"]) for e in d.lossless_examples])
    for pair in sorted(c.shared_boundaries):
        add(pair), add(c.shared_boundaries[pair])
    return h.hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--mb", type=float, default=None, help="Only the first MB of the corpus (whole lines).")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--vocab-size", type=int, default=32000)
    ap.add_argument("--train-mb", type=float, default=5.0)
    ap.add_argument("--digest", action="store_true", help="Print a hash of the result's arrays.")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    from subword import _core
    from subword.compare import bootstrap
    from subword.compare.collect import collect
    from subword.compare.comparison import _prepare
    from subword.compare.sources import load

    cache = Path(tempfile.gettempdir()) / "subword-bench-compare"
    specs = prepare_tokenizers(args.corpus, cache, args.vocab_size, args.train_mb)
    toks = [_prepare(load(spec)[0]) for spec in specs.values()]
    lines = read_lines(args.corpus, args.mb)
    log.info("%d lines, %.1f MB; load average %.2f / %.2f / %.2f", len(lines),
             sum(map(len, lines)) / 1e6, *os.getloadavg())
    real = _core.CompareCollector
    rows = []
    for run in range(args.runs):
        clock = {"segment": 0.0, "reduce": 0.0, "segment_cpu": 0.0, "reduce_cpu": 0.0}
        _core.CompareCollector = lambda *a, clock=clock: _Timed(real(*a), clock)  # the timed core, for this run
        t0 = time.perf_counter()
        try:
            c = collect(toks, list(specs), lines, bootstrap.block_length(len(lines)))
        finally:
            _core.CompareCollector = real
        total = time.perf_counter() - t0
        encode = [sum(d.chunk_seconds) for d in c.tokenizers]
        row = {"total": total, "segment": clock["segment"], "reduce": clock["reduce"], "encode": sum(encode),
               "reduction": clock["reduce"] - sum(encode), "python": total - clock["segment"] - clock["reduce"],
               "segment_cpu": clock["segment_cpu"], "reduce_cpu": clock["reduce_cpu"]}
        rows.append(row)
        log.info("run %d: total %.2f s = segment %.2f + reduce %.2f (encode %.2f [%s], reduction %.2f) + python %.2f; "
                 "segment + reduction %.2f s; CPU seconds (all threads): segment %.2f, reduce %.2f", run + 1, total,
                 row["segment"], row["reduce"], row["encode"], " ".join(f"{e:.2f}" for e in encode), row["reduction"],
                 row["python"], row["segment"] + row["reduction"], row["segment_cpu"], row["reduce_cpu"])
        if args.digest and run == 0:
            log.info("digest %s", digest(c))
        del c
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
    print(f"median of {len(rows)}: total {med['total']:.2f} s, segment {med['segment']:.2f}, reduce {med['reduce']:.2f} "
          f"(encode {med['encode']:.2f}, reduction {med['reduction']:.2f}), python {med['python']:.2f}; "
          f"segment + reduction {med['segment'] + med['reduction']:.2f} s; CPU s: segment {med['segment_cpu']:.2f}, "
          f"reduce {med['reduce_cpu']:.2f}; load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
