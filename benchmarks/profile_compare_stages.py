"""Where a whole ``subword compare`` command spends its time: each call into the Rust core, and the rest.

Runs ``subword compare`` on the four tokenizers of ``bench_compare.py`` (its ``prepare_tokenizers``;
trained models cached in ``$TMPDIR/subword-bench-compare``) in this process, with every call into the
core that does real work wrapped in a timer (the ``CompareCollector`` methods ``segment``, ``reduce``,
..., and ``compare_vocab_table``), and the block bootstrap's two numpy stages (``replicate_sums``: the
ratio metrics; ``type_count_sums``: the sparse type counts). What is left of the wall time, minus
loading the tokenizers, is Python (reading, assembling the arrays, metrics, attribution, JSON, HTML).
The compare's own encoding is read off the JSON (``mb_per_s``). The bootstrap runs on a worker thread
while Python builds the attribution, so the sum of the parts can exceed the wall time.

Usage::

    python benchmarks/profile_compare_stages.py            # the 20 MB corpus
    python benchmarks/profile_compare_stages.py --mb 2     # its first 2 MB
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "benchmarks"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from bench_compare import CORPUS, prepare_tokenizers

log = logging.getLogger("profile_compare_stages")
CORE_FUNCTIONS = ("compare_vocab_table",)
BOOTSTRAP_FUNCTIONS = ("replicate_sums", "type_count_sums")


def _timed(acc: dict[str, float], name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[name] = acc.get(name, 0.0) + time.perf_counter() - t0
    return run


def profile(corpus: Path, specs: list[str], out_dir: Path) -> tuple[float, dict[str, float], float]:
    """``(wall seconds, seconds per stage, encode seconds inside the pass)`` of one compare of ``corpus``."""
    from click.testing import CliRunner

    import subword.compare.render_html  # noqa: F401  (imported untimed, as bench_compare does)
    from cli.main import cli
    from subword import _core
    from subword.compare import bootstrap, collect, sources

    acc: dict[str, float] = {}
    for name in CORE_FUNCTIONS:
        if hasattr(_core, name):
            setattr(_core, name, _timed(acc, name, getattr(_core, name)))
    collector_class = _core.CompareCollector

    class Collector:  # delegates to the core's collector, timing each method
        def __init__(self, *args: Any) -> None:
            self._inner = _timed(acc, "CompareCollector()", collector_class)(*args)

        def __getattr__(self, name: str) -> Any:
            return _timed(acc, f"CompareCollector.{name}", getattr(self._inner, name))

    _core.CompareCollector = Collector
    for name in BOOTSTRAP_FUNCTIONS:
        setattr(bootstrap, name, _timed(acc, f"bootstrap.{name}", getattr(bootstrap, name)))
    sources.load = _timed(acc, "loading", sources.load)
    collect.warm_up = _timed(acc, "loading", collect.warm_up)
    args = ["compare", *[a for s in specs for a in ("-t", s)], str(corpus), "--json", str(out_dir / "c.json"),
            "--html", str(out_dir / "c.html"), "-q"]
    t0 = time.perf_counter()
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    wall = time.perf_counter() - t0
    if result.exit_code != 0:
        raise SystemExit(result.output)
    doc = json.loads((out_dir / "c.json").read_text(encoding="utf-8"))
    encode = sum(doc["inputs"]["bytes"] / 1e6 / t["metrics"]["mb_per_s"]["value"] for t in doc["tokenizers"])
    return wall, acc, encode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--mb", type=float, default=None, help="Only the first MB of the corpus (whole lines).")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    cache = Path(tempfile.gettempdir()) / "subword-bench-compare"
    corpus = args.corpus
    if args.mb:
        cache.mkdir(parents=True, exist_ok=True)
        corpus = cache / f"head-{args.mb:g}MB.txt"
        with open(args.corpus, encoding="utf-8", newline="") as f:
            corpus.write_text(f.read(int(args.mb * 1e6)).rsplit("\n", 1)[0] + "\n", encoding="utf-8")
    specs = list(prepare_tokenizers(corpus, cache, 32000, 5.0).values())
    with tempfile.TemporaryDirectory() as out_dir:
        wall, acc, encode = profile(corpus, specs, Path(out_dir))
    loading = acc.pop("loading", 0.0)
    core = sum(acc.values())
    log.info("%s: %.2f s without loading the tokenizers (%.2f s loading)", corpus.name, wall - loading, loading)
    log.info("  %-34s %6.2f s", "encoding inside the pass (mb_per_s)", encode)
    for name, seconds in sorted(acc.items(), key=lambda kv: -kv[1]):
        log.info("  %-34s %6.2f s", name, seconds)
    log.info("  %-34s %6.2f s", "Python (the rest)", wall - loading - core)


if __name__ == "__main__":
    main()
