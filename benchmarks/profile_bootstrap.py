"""What the paired bootstrap of ``subword compare`` costs, on the real inputs of ``bench_compare.py``.

The bootstrap is two core calls (``subword/compare/comparison.py``): ``bootstrap_column_sums`` (1000
replicates of every per-line column) and ``type_count_replicates`` (200 replicates of the token-type
counts of every tokenizer). This script captures the arguments of both calls from one real
``subword.compare`` of the corpus through the four ``bench_compare.py`` tokenizers (cached in
``/tmp/subword-bench-compare``, so the capture runs once per corpus and size), then times the two
calls alone, for the core of this checkout and, with ``--baseline``, for another build of the core
(an older ``_core*.so``) on the same inputs, and checks that both give the same kind of results.

Usage::

    python benchmarks/profile_bootstrap.py                       # gutenberg_en_20M, all 394,899 lines
    python benchmarks/profile_bootstrap.py --baseline /tmp/boot_before/_core.cpython-311-x86_64-linux-gnu.so
    python benchmarks/profile_bootstrap.py --quick               # the first 20,000 lines: proves the script
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

CORPUS = ROOT.parent / "shared" / "corpora" / "gutenberg_en_20M.txt"
CACHE = Path(tempfile.gettempdir()) / "subword-bench-compare"


class _Captured(Exception):
    """Raised by the capturing column-sums call: the rest of the comparison is not needed."""


def read_lines(path: Path, limit: int | None) -> list[str]:
    """The corpus lines as ``subword compare`` reads them (no line endings)."""
    with open(path, encoding="utf-8", newline="") as f:
        lines = [l[:-1] if l.endswith("\n") else l for l in f]
    lines = [l[:-1] if l.endswith("\r") else l for l in lines]
    return lines[:limit] if limit else lines


def capture(corpus: Path, limit: int | None, replicates: int) -> dict[str, Any]:
    """The two bootstrap calls' arguments, from a real comparison (cached as ``.npz``)."""
    cache = CACHE / f"bootstrap-inputs-{corpus.stem}-{limit or 'all'}.npz"
    if cache.exists():
        z = np.load(cache)
        k = int(z["k"])
        return {"columns": list(z["columns"]), "n": int(z["n"]),
                "types": [z[f"types{i}"] for i in range(k)], "lines": [z[f"lines{i}"] for i in range(k)],
                "ntypes": [int(x) for x in z["ntypes"]]}
    from bench_compare import prepare_tokenizers
    import subword.compare.comparison as comparison
    from subword.compare.sources import load

    specs = prepare_tokenizers(corpus, CACHE, 32000, 5.0)
    toks = [load(spec)[0] for spec in specs.values()]
    got: dict[str, Any] = {}

    def type_counts(types: list[bytes], lines: list[bytes], ntypes: list[int], n: int, *rest: Any) -> list[bytes]:
        got.update(types=[np.frombuffer(t, "<u4") for t in types], lines=[np.frombuffer(l, "<u4") for l in lines],
                   ntypes=list(ntypes), n=n)
        return [bytes(rest[1] * 32) for _ in types]

    def column_sums(columns: list[bytes], n: int, *rest: Any) -> bytes:
        got["columns"] = [np.frombuffer(c, "<i8") for c in columns]
        raise _Captured

    comparison._fast_type_counts = lambda: type_counts
    comparison._fast_column_sums = lambda: column_sums
    try:
        comparison.compare(toks, read_lines(corpus, limit), bootstrap_replicates=replicates)
    except _Captured:
        pass
    CACHE.mkdir(parents=True, exist_ok=True)
    k = len(got["types"])
    tmp = cache.with_suffix(".tmp.npz")
    np.savez(tmp, columns=np.stack(got["columns"]), n=got["n"], k=k, ntypes=np.array(got["ntypes"]),
             **{f"types{i}": got["types"][i] for i in range(k)}, **{f"lines{i}": got["lines"][i] for i in range(k)})
    os.replace(tmp, cache)
    return got


def load_core(path: str | None) -> Any:
    """The core extension at ``path`` (any build of ``_core*.so``), or this checkout's."""
    if path is None:
        from subword import _core

        return _core
    spec = importlib.util.spec_from_file_location("_core", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def time_core(core: Any, inputs: dict[str, Any], replicates: int, dist_replicates: int, runs: int,
              seed: int = 0) -> dict[str, Any]:
    """Median seconds of each bootstrap call (and the results of the last run)."""
    cols = [np.ascontiguousarray(c, dtype="<i8").tobytes() for c in inputs["columns"]]
    types = [np.asarray(t, "<u4").tobytes() for t in inputs["types"]]
    lines = [np.asarray(l, "<u4").tobytes() for l in inputs["lines"]]
    n = inputs["n"]
    out: dict[str, Any] = {"column_sums": [], "type_counts": []}
    for _ in range(runs):
        t0 = time.perf_counter()
        sums = core.bootstrap_column_sums(cols, n, seed, replicates)
        t1 = time.perf_counter()
        dist = core.type_count_replicates(types, lines, inputs["ntypes"], n, seed, dist_replicates, 2.5)
        t2 = time.perf_counter()
        out["column_sums"].append(t1 - t0)
        out["type_counts"].append(t2 - t1)
    out["sums"] = np.frombuffer(sums, "<f8").reshape(replicates, len(cols))
    out["dist"] = [np.frombuffer(b, "<f8").reshape(dist_replicates, 4) for b in dist]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--lines", type=int, default=None, help="the first LINES lines only (default: all)")
    ap.add_argument("--quick", action="store_true", help="the first 20,000 lines, one run")
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--distribution-replicates", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", help="another build of the core (a _core*.so) to time on the same inputs")
    args = ap.parse_args()
    if args.quick:
        args.lines, args.runs = args.lines or 20_000, 1
    inputs = capture(args.corpus, args.lines, args.replicates)
    n = inputs["n"]
    distinct = len({c.tobytes() for c in inputs["columns"]})
    print(f"{args.corpus.name}: {n:,} lines, {len(inputs['columns'])} columns ({distinct} distinct), "
          f"tokens per tokenizer {[len(t) for t in inputs['types']]}, types {inputs['ntypes']}")
    print(f"load average before: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rows = [("this checkout", load_core(None))]
    if args.baseline:
        rows.append((f"baseline {Path(args.baseline).name}", load_core(args.baseline)))
    results = {}
    for name, core in rows:
        r = time_core(core, inputs, args.replicates, args.distribution_replicates, args.runs)
        results[name] = r
        cs, tc = statistics.median(r["column_sums"]), statistics.median(r["type_counts"])
        print(f"{name:>40}: bootstrap_column_sums {cs:.3f} s, type_count_replicates {tc:.3f} s, "
              f"both {cs + tc:.3f} s (median of {args.runs})")
    if args.baseline:
        new, old = results["this checkout"], results[rows[1][0]]
        # Different generators draw different replicates: compare the spread, not the values.
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = [float(np.nanmax(np.abs(a.std(0) / b.std(0) - 1))) for a, b in
                   [(new["sums"], old["sums"])] + list(zip(new["dist"], old["dist"]))]
        print(f"largest relative difference of the replicate standard deviations (new vs baseline): "
              f"column sums {rel[0]:.3f}, type counts {max(rel[1:]):.3f}")
    print(f"load average after: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
