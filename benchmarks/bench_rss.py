"""Memory of one loaded tokenizer: resident set size (RSS) of a fresh process after loading each row's file,
and after a first encode of 1 MB of English (the word cache and the pre-tokenizer's tables are made then).

The rows are ``bench_peers.py``'s (the same files). Each measurement is its own process: RSS after the imports
(``base``), after ``Tokenizer.from_*`` (``loaded``), and after ``encode_batch_ids_flat([1 MB])`` (``encoded``);
the table gives ``loaded - base`` (the tokenizer itself) and ``encoded - base``. Run it on two builds to compare
(``--label`` names the column set). Peak RSS of the process is read from ``/proc/self/status``.

Usage::

    PYTHONPATH=. python benchmarks/bench_rss.py --label after
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(row_name: str) -> dict[str, float]:
    import bench_peers as bp

    text = bp.load_texts(1.0)["en"]
    row = bp.build_rows({}, [row_name])[0]
    base = _rss_mb()
    bp.make_ours(row, 1)  # warms the imports the loader makes on first use
    import gc

    gc.collect()
    base = _rss_mb()
    tok = bp.load_ours(row)
    tok.encode_batch_ids_flat(["warm up"])  # the core is built lazily
    loaded = _rss_mb()
    tok.encode_batch_ids_flat([text], add_special_tokens=False)
    encoded = _rss_mb()
    return {"loaded": loaded - base, "encoded": encoded - base}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", default="cl100k_base,o200k_base,llama3,qwen3,spm_bpe,spm_unigram,bert")
    ap.add_argument("--label", default="")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        json.dump(child(args.child), sys.stdout)
        return
    print(f"| row | {args.label} loaded MiB | {args.label} after 1 MB encode MiB |\n|---|---:|---:|")
    for row in args.rows.split(","):
        env = dict(os.environ, RAYON_NUM_THREADS="1")
        res = subprocess.run([sys.executable, __file__, "--child", row], env=env, capture_output=True, text=True,
                             check=False)
        if res.returncode != 0:
            print(f"| {row} | failed: {res.stderr.strip().splitlines()[-1][:80]} | |")
            continue
        r = json.loads(res.stdout)
        print(f"| {row} | {r['loaded']:.1f} | {r['encoded']:.1f} |")


if __name__ == "__main__":
    main()
