"""``subword study``: its own overhead, and ``--jobs 2`` against one task after another.

Two measurements on the same small study (K tokenizers trained on the built-in corpus, tiny BERT, an equal
token budget), each run as the user runs it (``python -m cli study ...`` in a subprocess):

* **Overhead**: the command's wall time minus the time spent inside the tokenizer trainings, the
  comparison, the pretrainings and the scorings (``timings.parts`` of ``study.json``), as a share of the wall
  time. What is left is the study's own cost: interpreter start and imports, reading and splitting the text,
  saving tokenizers, the report. Target: at most 10%.
* **Parallel**: ``--jobs 2 --threads C/2`` against one task after another, both with ``--threads C`` (all
  C cores to one task, the default) and with ``--threads 1``: the wall-time ratios. Target: ``--jobs 2`` no
  slower (ratio <= 1). On a loaded machine ``--threads C`` can be much slower than ``--threads 1`` (torch's
  threads spin against the other work), so both sequential baselines are shown.

The load average is printed before and after: on a shared machine the figures are indicative.

Usage::

    python benchmarks/bench_study.py                 # 4 tokenizers, tokens:300k (a few minutes on 2 cores)
    python benchmarks/bench_study.py --quick         # 2 tokenizers, a few steps: proves the script
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from user_env import user_env  # noqa: E402


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_study(out: Path, specs: list[str], budget: str, jobs: int, threads: int) -> dict:
    """One study through the CLI; returns the wall time and the study's own timings."""
    cmd = [sys.executable, "-m", "cli", "study", *sum((["-t", s] for s in specs), []), "--budget", budget,
           "--batch-size", "16", "--seq-len", "64", "--heldout-lines", "200", "--jobs", str(jobs),
           "--threads", str(threads), "-o", str(out), "-q"]
    env = user_env()  # our bytecode compiled, as in a user's install (this machine does not write .pyc)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    doc = json.loads((out / "study.json").read_text())
    parts = doc["timings"]["parts"]
    work = sum(v for k, v in parts.items() if k.startswith(("train:", "pretrain:", "score:")) or k == "compare")
    return {"wall": wall, "work": work, "tasks_wall": parts.get("tasks_wall"), "inside_wall": doc["timings"]["wall_s"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--budget", default="tokens:300k")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    specs = ["bpe:2000", "wordpiece:2000", "unigram:2000", "byte-bpe:2000"]
    budget = args.budget
    if args.quick:
        specs, budget = specs[:2], "steps:5"
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {platform.python_version()}, {cores} cores; "
          f"load before: {_load()}")
    with tempfile.TemporaryDirectory() as tmp:
        one = run_study(Path(tmp) / "one", specs, budget, jobs=1, threads=1)
        print(f"  [load {_load()}]", flush=True)
        par = run_study(Path(tmp) / "par", specs, budget, jobs=2, threads=max(1, cores // 2))
        print(f"  [load {_load()}]", flush=True)
        seq = run_study(Path(tmp) / "seq", specs, budget, jobs=1, threads=cores)
    print(f"load after: {_load()}")
    print(f"study of {len(specs)} tokenizers, {budget}, tiny BERT (batch 16 x 64):")
    for label, r in ((f"--jobs 1 --threads 1", one), (f"--jobs 1 --threads {cores}", seq)):
        share = (r["wall"] - r["work"]) / r["wall"]
        print(f"  {label}: wall {r['wall']:.1f} s, inside trainings/compare/pretrain/scoring {r['work']:.1f} s -> "
              f"overhead {r['wall'] - r['work']:.1f} s = {share:.1%} (target <= 10%)")
    print(f"  --jobs 2 --threads {max(1, cores // 2)}: wall {par['wall']:.1f} s; ratio to --jobs 1 --threads 1 = "
          f"{par['wall'] / one['wall']:.2f}, to --jobs 1 --threads {cores} = {par['wall'] / seq['wall']:.2f} "
          "(target <= 1)")


if __name__ == "__main__":
    main()
