"""Byte-level BPE training: subword (Rust engine) vs HF ``tokenizers``, plus our reference engine.

Each run is a fresh Python subprocess, so its peak RSS (``os.wait4`` rusage) is its own. A run reads the
corpus, pre-tokenizes, counts and trains; the wall time is measured inside the child from just before
the file is opened to the trained tokenizer (interpreter start and imports excluded, for both sides).
HF reads the file itself (``Tokenizer.train``, its fastest path); we stream the file's lines into
``subword.trainers.train_bpe``. The merges and vocab of every run must be identical to HF's.

Usage::

    python benchmarks/bench_train_bpe.py                       # 5 runs each, writes benchmarks/RESULTS.md
    python benchmarks/bench_train_bpe.py --runs 3 --no-write   # just print

Run it on a quiet machine (``uptime`` load < 1.0); the load is recorded with the results.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_md import replace_section  # benchmarks/ is the script's own folder

log = logging.getLogger("bench_train_bpe")

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpora" / "gutenberg_en_20M.txt"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
START, END = "<!-- bench_train_bpe:start -->", "<!-- bench_train_bpe:end -->"

# The child programs. Each prints one JSON line: seconds and a digest of (vocab in id order, merges).
_OURS = """
import hashlib, json, sys, time
from subword.trainers import BpeTrainer, train_bpe
path, vocab_size, engine = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t0 = time.perf_counter()
with open(path, encoding="utf-8", newline="") as f:
    tok = train_bpe(f, BpeTrainer(vocab_size=vocab_size, engine=engine), byte_level=True)
seconds = time.perf_counter() - t0
vocab = sorted(tok.model.vocab, key=tok.model.vocab.__getitem__)
digest = hashlib.sha256(json.dumps([vocab, [list(m) for m in tok.model.merges]]).encode()).hexdigest()
print(json.dumps({"seconds": seconds, "digest": digest, "vocab": len(vocab), "merges": len(tok.model.merges)}))
"""

_HF = """
import hashlib, json, sys, time
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
path, vocab_size = sys.argv[1], int(sys.argv[2])
t0 = time.perf_counter()
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                              show_progress=False)
tok.train([path], trainer)
seconds = time.perf_counter() - t0
model = json.loads(tok.to_str())["model"]
vocab = sorted(model["vocab"], key=model["vocab"].__getitem__)
digest = hashlib.sha256(json.dumps([vocab, model["merges"]]).encode()).hexdigest()
print(json.dumps({"seconds": seconds, "digest": digest, "vocab": len(vocab), "merges": len(model["merges"])}))
"""


def run_child(program: str, args: list[str]) -> dict:
    """Run one child; return its JSON result plus wall time and peak RSS (MiB) of that child alone."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", program, *args], stdout=out, stderr=subprocess.PIPE)
        _, status, rusage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode() if proc.stderr else ""
        if proc.returncode != 0:
            raise RuntimeError(f"benchmark child failed ({proc.returncode}):\n{err}")
        out.seek(0)
        result = json.loads(out.read().decode().strip().splitlines()[-1])
    result["process_seconds"] = wall
    result["peak_rss_mib"] = rusage.ru_maxrss / 1024  # Linux: KiB
    return result


def series(name: str, program: str, args: list[str], runs: int) -> dict:
    results = []
    for i in range(runs):
        r = run_child(program, args)
        log.info("%s run %d: %.3f s (process %.2f s), peak RSS %.0f MiB", name, i + 1, r["seconds"],
                 r["process_seconds"], r["peak_rss_mib"])
        results.append(r)
    digests = {r["digest"] for r in results}
    if len(digests) != 1:
        raise RuntimeError(f"{name}: runs disagree with each other ({len(digests)} different results)")
    return {
        "name": name,
        "median_s": statistics.median(r["seconds"] for r in results),
        "min_s": min(r["seconds"] for r in results),
        "max_s": max(r["seconds"] for r in results),
        "median_process_s": statistics.median(r["process_seconds"] for r in results),
        "peak_rss_mib": max(r["peak_rss_mib"] for r in results),
        "digest": results[0]["digest"],
        "vocab": results[0]["vocab"],
        "merges": results[0]["merges"],
        "runs": runs,
    }


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} logical CPUs, Linux {platform.release()}, Python {platform.python_version()}"


def render(corpus: Path, ours: dict, hf: dict, ref: dict | None, load: tuple[float, float, float], cmd: str) -> str:
    import tokenizers

    mb = corpus.stat().st_size / 1e6
    lines = [
        START,
        "## BPE training (bench_train_bpe.py)",
        "",
        f"Byte-level BPE to {ours['vocab']:,} tokens on `{corpus.name}` ({mb:.1f} MB); wall time from opening the "
        "file to the trained tokenizer (reading, pre-tokenization, counting, merges), median of "
        f"{ours['runs']} runs, each in a fresh process; peak RSS is the largest of that process over the runs.",
        "",
        "| engine | median s | min-max s | peak RSS MiB | speed-up vs HF | memory vs HF |",
        "|---|---|---|---|---|---|",
        f"| HF tokenizers {tokenizers.__version__} (`Tokenizer.train`) | {hf['median_s']:.3f} | "
        f"{hf['min_s']:.3f}-{hf['max_s']:.3f} | {hf['peak_rss_mib']:.0f} | 1.00x | 1.00x |",
        f"| subword, engine=rust | {ours['median_s']:.3f} | {ours['min_s']:.3f}-{ours['max_s']:.3f} | "
        f"{ours['peak_rss_mib']:.0f} | **{hf['median_s'] / ours['median_s']:.2f}x** | "
        f"{ours['peak_rss_mib'] / hf['peak_rss_mib']:.2f}x |",
        "",
        f"Identical vocab (with ids) and merges to HF: **{'yes' if ours['digest'] == hf['digest'] else 'NO'}** "
        f"({ours['merges']:,} merges, sha256 `{ours['digest'][:16]}`).",
    ]
    if ref is not None:
        lines += [
            "",
            f"Reference engine (pure Python, `subword/reference/bpe.py`) to {ref['vocab']:,} tokens: "
            f"{ref['median_s']:.1f} s ({ref['runs']} run(s), peak RSS {ref['peak_rss_mib']:.0f} MiB); "
            f"identical to the Rust engine at that size: **{'yes' if ref.get('same_as_rust') else 'NO'}**.",
        ]
    lines += [
        "",
        f"Machine: {machine()}. Load average before the runs: {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} "
        f"(1/5/15 min). Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        f"Command: `{cmd}`",
        END,
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reference-vocab-size", type=int, default=8000, help="0 skips the reference engine")
    parser.add_argument("--no-write", action="store_true", help="print only, do not update RESULTS.md")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if not args.corpus.exists():
        raise SystemExit(f"corpus not found: {args.corpus}")
    load = os.getloadavg()
    if load[0] >= 1.0:
        log.warning("load average is %.2f (>= 1.0): the figures will be noisy", load[0])

    corpus = str(args.corpus)
    hf = series("hf", _HF, [corpus, str(args.vocab_size)], args.runs)
    ours = series("subword", _OURS, [corpus, str(args.vocab_size), "rust"], args.runs)
    if ours["digest"] != hf["digest"]:
        raise SystemExit("subword and HF produced different vocab/merges")
    ref = None
    if args.reference_vocab_size:
        ref = series("reference", _OURS, [corpus, str(args.reference_vocab_size), "reference"], 1)
        rust_small = run_child(_OURS, [corpus, str(args.reference_vocab_size), "rust"])
        ref["same_as_rust"] = rust_small["digest"] == ref["digest"]
        if not ref["same_as_rust"]:
            raise SystemExit("the reference and Rust engines produced different vocab/merges")
    cmd = "python benchmarks/bench_train_bpe.py " + " ".join(sys.argv[1:])
    text = render(args.corpus, ours, hf, ref, load, cmd.strip())
    print(text)
    if not args.no_write:
        replace_section(text, START, END, RESULTS)
        log.info("updated %s", RESULTS)


if __name__ == "__main__":
    main()
