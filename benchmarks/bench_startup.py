"""What a command costs before it does anything: the CLI's start-up, and the built-in corpus's first build.

    python benchmarks/bench_startup.py              # 15 runs each, writes benchmarks/RESULTS.md
    python benchmarks/bench_startup.py --runs 5 --no-write

Rows, each a fresh process, interleaved, median of the runs:

* ``subword --help`` and ``subword encode -t tok.json`` on one line (the tokenizer: a byte-level BPE of
  8,000 tokens trained at the start), beside what the same costs without our CLI: a bare interpreter
  (``python -c pass``) and HF ``tokenizers`` loading the same ``tok.json`` and encoding the line in a
  ``python -c`` one-liner.
* The built-in corpus built from scratch (a new cache directory each run): on every core as
  ``corpora.builtin_corpus`` does it, and in one process (the same extraction, serial), so the gain of the
  parallel build and the cost a newcomer's first ``subword train`` pays are both on record.

The load average is recorded before and after.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_md import replace_section  # benchmarks/ is the script's own folder
from user_env import user_env

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- bench_startup:start -->", "<!-- bench_startup:end -->"
LINE = "Hello world, the first line of the day.\n"

_SERIAL_BUILD = """
import sys, sysconfig
from pathlib import Path
from corpora.builtin import stdlib_prose
with open(sys.argv[1], "w", encoding="utf-8", newline="\\n") as out:
    for piece in stdlib_prose(Path(sysconfig.get_paths()["stdlib"])):
        out.write(piece)
"""
_PARALLEL_BUILD = """
import corpora
corpora.builtin_corpus(rebuild=True)
"""


_ENV = user_env()  # bytecode compiled, as in a user's install (see benchmarks/user_env.py)


def _timed(cmd: list[str], stdin: bytes | None = None, env: dict[str, str] | None = None) -> float:
    env = _ENV if env is None else env
    started = time.perf_counter()
    subprocess.run(cmd, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env=env, cwd=ROOT)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--corpus-runs", type=int, default=3, help="Builds of the corpus (each takes seconds).")
    parser.add_argument("--no-write", action="store_true", help="Print only; leave RESULTS.md alone.")
    args = parser.parse_args()

    py = sys.executable
    tmp = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    tok = tmp / "tok.json"
    subprocess.run([py, "-m", "cli.main", "train", "byte-bpe", "-o", str(tok), "--vocab-size", "8000", "-q"],
                   check=True, cwd=ROOT)
    hf = ("import sys, tokenizers; t = tokenizers.Tokenizer.from_file(sys.argv[1]); "
          "sys.stdout.write(' '.join(map(str, t.encode(sys.stdin.readline()).ids)))")
    rows: dict[str, tuple[list[str], bytes | None]] = {
        "python -c pass (the interpreter alone)": ([py, "-c", "pass"], None),
        "subword --help": ([py, "-m", "cli.main", "--help"], None),
        "subword encode -t tok.json (one line)": ([py, "-m", "cli.main", "encode", "-t", str(tok)], LINE.encode()),
        "HF tokenizers: load tok.json, encode the line (python -c)": ([py, "-c", hf, str(tok)], LINE.encode()),
    }
    load_before = os.getloadavg()
    times: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(args.runs):
        for name, (cmd, stdin) in rows.items():
            times[name].append(_timed(cmd, stdin))

    builds: dict[str, list[float]] = {"on every core (corpora.builtin_corpus)": [], "in one process (serial)": []}
    for k in range(args.corpus_runs):
        env = dict(_ENV, SUBWORD_CACHE_DIR=str(tmp / f"cache-{k}"))
        builds["on every core (corpora.builtin_corpus)"].append(_timed([py, "-c", _PARALLEL_BUILD], env=env))
        builds["in one process (serial)"].append(_timed([py, "-c", _SERIAL_BUILD, str(tmp / f"serial-{k}.txt")]))
    load_after = os.getloadavg()

    bare = statistics.median(times["python -c pass (the interpreter alone)"])
    lines = [
        START,
        "## Start-up: the CLI, and the built-in corpus's first build (`benchmarks/bench_startup.py`)",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load {load_before[0]:.2f} before / {load_after[0]:.2f} after; "
        f"median of {args.runs} fresh processes each, interleaved.",
        "",
        "| command | median | beyond the bare interpreter |",
        "|---|---:|---:|",
    ]
    for name, values in times.items():
        med = statistics.median(values)
        lines.append(f"| {name} | {med * 1000:.0f} ms | {(med - bare) * 1000:+.0f} ms |")
    lines += [
        "",
        f"The built-in corpus from scratch ({os.cpu_count()} cores, median of {args.corpus_runs} builds):",
        "",
        "| build | median |",
        "|---|---:|",
    ]
    for name, values in builds.items():
        lines.append(f"| {name} | {statistics.median(values):.1f} s |")
    lines.append(END)
    block = "\n".join(lines)
    print(block)
    if not args.no_write:
        replace_section(block, START, END)


if __name__ == "__main__":
    main()
