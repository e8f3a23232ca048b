"""How our parallel paths scale from 1 to all cores, beside HF ``tokenizers`` on the same work.

Paths, each timed in a child process per thread count ``n`` (``RAYON_NUM_THREADS=n`` for both libraries,
and our ``threads=n`` option where one exists), median of ``--runs`` calls, then median over ``--rounds``
such processes, the thread counts alternating:

* training byte-level BPE (``--vocab`` tokens) on ``--mb`` of English: ours split into its two stages,
  **counting** (``subword.counts.count_words``, parallel over batches of lines) and **merging**
  (``train_from_counts``), and in one call (``ByteLevelBpeTrainer(threads=n).train``), against HF's
  ``BpeTrainer`` with the ``ByteLevel`` pre-tokenizer (``train_from_iterator``, counting and merging in one);
* ``encode_batch`` of the corpus lines with cl100k_base (the ``tokenizer.json`` ``Tokenizer.save`` writes,
  loaded by both): ours ``encode_batch`` (full Encodings), ``encode_batch_ids`` (lists of ints) and
  ``encode_batch_ids_flat``, HF ``encode_batch`` and ``encode_batch_fast``;
* compare's one pass over the lines (:func:`subword.compare.collect.collect`, two tokenizers: cl100k_base and
  the trained one); HF has no counterpart.

Reported: seconds per path and thread count, and the speed-up ``t(1) / t(n)``. On a machine shared with other
jobs the figures are indicative only; the load is recorded with them.

Usage::

    PYTHONPATH=. python benchmarks/bench_scaling.py --mb 5 --runs 5 --rounds 3
    PYTHONPATH=. python benchmarks/bench_scaling.py --mb 1 --runs 1 --rounds 1   # proves the script in a minute
    PYTHONPATH=. python benchmarks/bench_scaling.py --encode-only         # the encode paths alone
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = next((p / "shared" / "corpora" for p in ROOT.parents if (p / "shared" / "corpora").is_dir()),
              ROOT.parent / "shared" / "corpora")


def _lines(mb: float) -> list[str]:
    path = SHARED / "gutenberg_en_20M.txt"
    if not path.exists():
        import corpora

        path = corpora.builtin_corpus()
    with open(path, encoding="utf-8") as f:
        text = f.read(int(mb * 1_000_000))
    return text.splitlines(keepends=True)[:-1]


def _median(fn: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def child(mb: float, runs: int, threads: int, vocab: int, encode_only: bool = False) -> dict[str, float]:
    import tokenizers as hf

    from subword.compare.collect import collect
    from subword.counts import count_words, train_from_counts
    from subword.trainers import ByteLevelBpeTrainer

    lines = _lines(mb)
    out: dict[str, float] = {}
    trainer = ByteLevelBpeTrainer(vocab_size=vocab, threads=threads)
    if encode_only:
        _encode_paths(lines, runs, out)
        return out
    out["ours train: count"] = _median(lambda: count_words(lines, like="byte-bpe", threads=threads), runs)
    counts = count_words(lines, like="byte-bpe", threads=threads)
    out["ours train: merge"] = _median(lambda: train_from_counts(trainer, counts), runs)
    out["ours train (one call)"] = _median(lambda: trainer.train(lines), runs)

    def hf_train() -> None:
        tok = hf.Tokenizer(hf.models.BPE())
        tok.pre_tokenizer = hf.pre_tokenizers.ByteLevel(add_prefix_space=False)
        t = hf.trainers.BpeTrainer(vocab_size=vocab, initial_alphabet=hf.pre_tokenizers.ByteLevel.alphabet(),
                                   show_progress=False)
        tok.train_from_iterator(lines, t)

    out["HF train"] = _median(hf_train, runs)
    ours = _encode_paths(lines, runs, out)

    trained = trainer.train(lines)
    plain = [x.rstrip("\n") for x in lines]
    block = max(1, int(len(plain) ** 0.5))
    out["ours compare pass"] = _median(lambda: collect([ours, trained], ["cl100k", "trained"], plain, block), runs)
    return out


def _encode_paths(lines: list[str], runs: int, out: dict[str, float]) -> Any:
    """Times the encode paths of both libraries into ``out``; returns our cl100k tokenizer."""
    import tokenizers as hf

    from subword import Tokenizer

    json_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-scaling-cl100k-{os.getpid()}.json"
    Tokenizer.from_tiktoken("cl100k_base").save(json_path)
    ours = Tokenizer.from_file(json_path)
    theirs = hf.Tokenizer.from_file(str(json_path))
    json_path.unlink()
    out["ours encode_batch"] = _median(lambda: ours.encode_batch(lines, add_special_tokens=False), runs)
    out["ours encode_batch_ids"] = _median(lambda: ours.encode_batch_ids(lines, add_special_tokens=False), runs)
    out["ours encode_batch_ids_flat"] = _median(lambda: ours.encode_batch_ids_flat(lines, add_special_tokens=False),
                                                runs)
    out["HF encode_batch"] = _median(lambda: theirs.encode_batch(lines, add_special_tokens=False), runs)
    out["HF encode_batch_fast"] = _median(lambda: theirs.encode_batch_fast(lines, add_special_tokens=False), runs)
    return ours


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=5.0)
    ap.add_argument("--runs", type=int, default=3, help="timed calls per process (median)")
    ap.add_argument("--rounds", type=int, default=3, help="processes per thread count, alternating (median)")
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--max-threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--encode-only", action="store_true", help="time the encode paths only (no training, no compare)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        json.dump(child(args.mb, args.runs, args.child, args.vocab, args.encode_only), sys.stdout)
        return
    # The machine's speed drifts by 10-30% over minutes: the thread counts' processes alternate, round after
    # round, and each cell is the median over the rounds of a process's median.
    rounds: dict[int, list[dict[str, float]]] = {n: [] for n in range(1, args.max_threads + 1)}
    for _ in range(args.rounds):
        for n in rounds:
            env = dict(os.environ, RAYON_NUM_THREADS=str(n), TOKENIZERS_PARALLELISM="true")
            res = subprocess.run([sys.executable, __file__, "--mb", str(args.mb), "--runs", str(args.runs), "--vocab",
                                  str(args.vocab), "--child", str(n)] + ["--encode-only"] * args.encode_only, env=env,
                                 capture_output=True, text=True, check=False)
            if res.returncode != 0:
                raise SystemExit(f"child with {n} threads failed:\n{res.stderr[-3000:]}")
            rounds[n].append(json.loads(res.stdout))
    per_n = {n: {path: statistics.median(r[path] for r in rs) for path in rs[0]} for n, rs in rounds.items()}
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    ns = sorted(per_n)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load `{uptime}`, {args.mb} MB of English, "
          f"byte-level BPE {args.vocab}, median of {args.rounds} alternating processes' medians of {args.runs} calls\n")
    print("| path | " + " | ".join(f"{n} thr s" for n in ns) + " | " + " | ".join(f"speed-up x{n}" for n in ns[1:])
          + " |")
    print("|---|" + "---:|" * (2 * len(ns) - 1))
    for path in per_n[1]:
        t = [per_n[n][path] for n in ns]
        print(f"| {path} | " + " | ".join(f"{x:.3f}" for x in t) + " | "
              + " | ".join(f"{t[0] / x:.2f}" for x in t[1:]) + " |")


if __name__ == "__main__":
    main()
