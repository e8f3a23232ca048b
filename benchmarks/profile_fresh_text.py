"""Ours vs fastokens on text the word cache has never seen, slice by slice, in one process (issue 23).

bench_peers.py reports medians; this prints every round, so the cost of new words (the miss path) and any drift
as our cache fills are visible. ``--warm`` first encodes round 0 with both (as bench_peers' id check does), so
round 0 is then a repeat and the later rounds are fresh; ``--seen`` times each slice again right after, so a
round's fresh minus seen time is what its new words cost. Run it alone, in the peers environment::

    RAYON_NUM_THREADS=1 PYTHONPATH=. /work/venv-peers/bin/python benchmarks/profile_fresh_text.py --row o200k_base --warm

Under ``perf record -g`` it shows where a fresh slice's time goes.
"""
from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_peers  # noqa: E402  (the rows and texts of the peers benchmark)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--row", default="o200k_base", help="a tiktoken row of bench_peers (cl100k_base, o200k_base, ...)")
    ap.add_argument("--text", default="en", help="en, de, zh, code or mixed")
    ap.add_argument("--mb", type=float, default=0.3, help="size of one slice")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warm", action="store_true", help="encode round 0 once before timing")
    ap.add_argument("--seen", action="store_true",
                    help="time each slice a second time right after its fresh pass (what the caches save)")
    args = ap.parse_args()

    variants = {k: bench_peers._rounds_of(t, args.rounds)
                for k, t in bench_peers.load_texts(args.mb * args.rounds).items()}
    row = {r.name: r for r in bench_peers.build_rows({k: v[0] for k, v in variants.items()}, [args.row])}[args.row]
    if row.kind != "tiktoken" or row.missing:
        raise SystemExit(f"{args.row}: not a usable tiktoken row ({row.missing or row.kind})")
    # The same contestants bench_peers times (its one-string form), so the two scripts measure one thing.
    contestants = {"ours": bench_peers.make_ours(row, 1).one, "fastokens": bench_peers._peer_fastokens(row, 1).one}
    slices = variants[args.text]
    if args.warm:
        for fn in contestants.values():
            fn(slices[0])
    for rnd, text in enumerate(slices):
        for label in ("fresh", "seen") if args.seen else ("fresh",):
            for name, fn in contestants.items():
                own = (text + " ")[:-1]  # a new str each call: each pays its own UTF-8 conversion
                gc.collect()
                t0 = time.perf_counter()
                fn(own)
                ms = 1000 * (time.perf_counter() - t0)
                mbs = len(text.encode()) / ms / 1000
                sys.stdout.write(f"round {rnd} {label:5s} {name:9s} {ms:8.2f} ms  {mbs:7.1f} MB/s\n")


if __name__ == "__main__":
    main()
