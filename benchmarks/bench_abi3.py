"""What the stable ABI (abi3) would cost: instructions of `encode_batch` with the extension built both ways.

    cargo build --release --features python --lib --manifest-path rust/Cargo.toml
    cargo build --release --features python,pyo3/abi3-py311 --lib --manifest-path rust/Cargo.toml \\
        --target-dir /tmp/abi3-target
    python benchmarks/bench_abi3.py rust/target/release/libsubword_core.so /tmp/abi3-target/release/libsubword_core.so

The two builds differ only in pyo3's ABI: version-specific (what we ship) or the limited API (one wheel for every
CPython >= 3.11; 3.10's limited API lacks the buffer protocol the compare bindings read numpy arrays with).
Each run is a fresh interpreter under ``valgrind --tool=callgrind``, which counts instructions, so the figure does
not depend on what else the machine is doing. The work: a Unigram ``.model`` and a byte-level BPE
``tokenizer.json`` (4,000 / 8,000 tokens, trained here on the first 600 kB of the gutenberg corpus or of the
built-in corpus), ``encode_batch`` of 6,000 lines three times with the ids read out; a second run that only loads
is subtracted, so start-up and loading cancel.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_md import replace_section  # benchmarks/ is the script's own folder

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpora" / "gutenberg_en_20M.txt"
START, END = "<!-- bench_abi3:start -->", "<!-- bench_abi3:end -->"

_PROBE = """
import importlib.util, sys
so, mode, path, text = sys.argv[1:5]
spec = importlib.util.spec_from_file_location("subword._core", so)
module = importlib.util.module_from_spec(spec)
sys.modules["subword._core"] = module
spec.loader.exec_module(module)
from subword import Tokenizer
tok = Tokenizer.from_file(path)
lines = open(text, encoding="utf-8").read().splitlines()[:6000]
if mode == "encode":
    for _ in range(3):
        ids = [e.ids for e in tok.encode_batch(lines)]
"""


def _instructions(so: str, mode: str, path: Path, text: Path, tmp: Path) -> int:
    out = tmp / f"cg.{os.getpid()}.{time.monotonic_ns()}"
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable, "-c", _PROBE, so, mode,
         str(path), str(text)],
        capture_output=True, text=True, check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    match = re.search(r"Collected : (\d+)", done.stderr)
    if match is None:
        raise RuntimeError(f"callgrind printed no total: {done.stderr[-500:]}")
    return int(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("native", help="The extension built for this CPython (what we ship).")
    parser.add_argument("abi3", help="The same sources built with pyo3/abi3-py311.")
    parser.add_argument("--no-write", action="store_true", help="Print only; leave RESULTS.md alone.")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-abi3-"))
    text = tmp / "text.txt"
    if CORPUS.is_file():
        source = CORPUS.read_bytes()[:600_000]
    else:
        import corpora

        source = corpora.builtin_corpus().read_bytes()[:600_000]
    text.write_bytes(source[: source.rfind(b"\n") + 1])
    files = {"Unigram .model": tmp / "uni.model", "byte-level BPE tokenizer.json": tmp / "bbpe.json"}
    for algorithm, (name, out), size in (("unigram", list(files.items())[0], 4000),
                                         ("byte-bpe", list(files.items())[1], 8000)):
        subprocess.run([sys.executable, "-m", "cli.main", "train", algorithm, str(text), "-o", str(out),
                        "--vocab-size", str(size), "-q"], check=True, cwd=ROOT)
    rows = []
    for name, path in files.items():
        work = {}
        for label, so in (("native", args.native), ("abi3", args.abi3)):
            work[label] = (_instructions(so, "encode", path, text, tmp) - _instructions(so, "load", path, text, tmp))
        rows.append(f"| {name} | {work['native'] / 1e6:,.0f} M | {work['abi3'] / 1e6:,.0f} M | "
                    f"{(work['abi3'] / work['native'] - 1) * 100:+.1f}% |")
    block = "\n".join([
        START,
        "## The stable ABI's cost (`benchmarks/bench_abi3.py`)",
        "",
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; instructions counted by callgrind (independent of "
        "the machine's load) for `encode_batch` of 6,000 lines x 3 with the ids read out, loading subtracted.",
        "",
        "| tokenizer | built for this CPython (shipped) | abi3 (py311) | abi3's extra work |",
        "|---|---:|---:|---:|",
        *rows,
        END,
    ])
    print(block)
    if not args.no_write:
        replace_section(block, START, END)


if __name__ == "__main__":
    main()
