"""Counting and training at scale: `subword count` + `train --from-counts` vs HF `tokenizers`, bounded
memory, Dask, and the cost per GB as the corpus grows.

The corpus is built at benchmark time (no multi-GB file is committed or downloaded), from the shared
corpora (``../shared/corpora/*.txt``, when present) and the built-in corpus, by a seeded generator:

* lines are resampled uniformly from the pool of source lines;
* the output is cut into shards (files) of ``1/8`` of the smallest size; in shard ``k``, half of
  the lines get one word (alphabetic, >= 4 letters) replaced by a *spelling variant* (letters
  inserted, a deterministic function of word and variant number), the variant number drawn from
  ``1 + 40 * sqrt(k + 1)`` per word. So the vocabulary keeps growing with the size, about as
  Heaps' law ``V ~ n^beta`` (beta ~ 0.5) says real corpora do (names, typos, inflections), instead
  of saturating at the source vocabulary. Measured: 104k distinct byte-level words at 12.5 MB,
  150k at 25 MB (beta ~ 0.53), which extrapolates to ~1.5M at 2 GB; the run reports the true count.

Every size is a prefix of the largest (its first shards), so one build serves all sizes. The
distinct-word count of each size is reported (from the counts file).

Measured, each run in a fresh process (wall time of the process, interpreter start included on
both sides; peak RSS from ``os.wait4``):

1. at the largest size: ``subword count --for byte-bpe`` then ``subword train byte-bpe --from-counts
   --vocab-size 32000``, against HF ``tokenizers`` training byte-level BPE 32k on the same files;
   merges and vocab must be identical;
2. ``subword count --max-memory BUDGET`` against the unbounded count (peak RSS and time; same words);
3. a Dask ``LocalCluster`` of 2 worker processes (1 thread each) against the single-process count
   (2 threads): the engine's overhead;
4. at every size: count time, count peak RSS, train-from-counts time and peak RSS; from them the
   cost per GB and the trainer's memory per distinct word.

Usage::

    python benchmarks/bench_scale.py                      # 0.25, 0.5, 1, 2 GB; writes RESULTS.md
    python benchmarks/bench_scale.py --quick --no-write   # 12.5, 25, 50 MB, budget 8M: proves the script

Needs ~2.2 GB of free disk in ``--workdir`` (default: a temporary folder, removed at the end), and a
quiet machine; the load is recorded with the results.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_train_bpe import machine, run_child  # benchmarks/ is the script's own folder
from results_md import replace_section

log = logging.getLogger("bench_scale")

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "corpora"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
START, END = "<!-- bench_scale:start -->", "<!-- bench_scale:end -->"
GB = 10**9

# ==== the corpus ====


def source_paths() -> list[Path]:
    """The shared corpora (if present) and the built-in corpus."""
    sys.path.insert(0, str(ROOT))
    import corpora

    paths = sorted(SHARED.glob("*.txt")) if SHARED.is_dir() else []
    paths.append(corpora.builtin_corpus())
    return paths


def source_lines() -> tuple[list[str], list[str]]:
    """Non-blank lines of the shared corpora (if present) and of the built-in corpus, and their names."""
    paths = source_paths()
    pool: list[str] = []
    for path in paths:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            pool.extend(line if line.endswith("\n") else line + "\n" for line in fh if line.strip())
    return pool, [p.name for p in paths]


_LETTERS = "etaoinshrdlucmfwyp"


def variant(word: str, v: int) -> str:
    """The v-th spelling variant of ``word`` (v >= 0): letters inserted, one per base-digit of v, so
    different v give different strings (deterministic in word and v).

    >>> variant("word", 0), variant("word", 1), variant("word", 60)
    ('wtord', 'waord', 'wthord')
    """
    v += 1
    out = word
    while v:
        v, digit = divmod(v, len(_LETTERS) * (len(word) - 1))
        pos, letter = divmod(digit, len(_LETTERS))
        out = out[:1 + pos] + _LETTERS[letter] + out[1 + pos:]
    return out


def build_corpus(workdir: Path, total_bytes: int, shard_bytes: int, seed: int) -> list[Path]:
    """Writes shards ``shard_000.txt``... of about ``shard_bytes`` until ``total_bytes``; returns them."""
    pool, _ = source_lines()
    rng = random.Random(seed)
    shards: list[Path] = []
    written = 0
    k = 0
    while written < total_bytes:
        path = workdir / f"shard_{k:03d}.txt"
        variants = 1 + int(40 * math.sqrt(k + 1))
        size = 0
        with open(path, "w", encoding="utf-8", newline="") as fh:
            while size < shard_bytes and written + size < total_bytes:
                block = rng.choices(pool, k=4096)
                for i in range(0, len(block), 2):  # half of the lines get a variant
                    words = block[i].split(" ")
                    j = rng.randrange(len(words))
                    w = words[j]
                    if len(w) >= 4 and w.isalpha():
                        words[j] = variant(w, rng.randrange(variants))
                        block[i] = " ".join(words)
                text = "".join(block)
                fh.write(text)
                size += len(text.encode("utf-8"))
        shards.append(path)
        written += size
        k += 1
    return shards


def prefix(shards: list[Path], size: int) -> list[Path]:
    """The first shards whose total reaches ``size`` bytes."""
    out, total = [], 0
    for p in shards:
        if total >= size:
            break
        out.append(p)
        total += p.stat().st_size
    return out


# ==== the runs ====

_HF = """
import hashlib, json, sys, time
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
vocab_size, files = int(sys.argv[1]), sys.argv[2:]
t0 = time.perf_counter()
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                              show_progress=False)
tok.train(files, trainer)
seconds = time.perf_counter() - t0
model = json.loads(tok.to_str())["model"]
vocab = sorted(model["vocab"], key=model["vocab"].__getitem__)
digest = hashlib.sha256(json.dumps([vocab, model["merges"]]).encode()).hexdigest()
print(json.dumps({"seconds": seconds, "digest": digest, "vocab": len(vocab), "merges": len(model["merges"])}))
"""

_DIGEST = """
import hashlib, json, sys
model = json.load(open(sys.argv[1], encoding="utf-8"))["model"]
vocab = sorted(model["vocab"], key=model["vocab"].__getitem__)
merges = [m.split(" ") if isinstance(m, str) else m for m in model["merges"]]
print(json.dumps({"digest": hashlib.sha256(json.dumps([vocab, merges]).encode()).hexdigest()}))
"""

# Facts about a counts file, read in a child so the parent stays small (see run_cli).
_HEADER = """
import hashlib, json, sys
from subword.counts import WordCounts
from subword.formats.counts import read_header
h = read_header(sys.argv[1])
digest = hashlib.sha256(json.dumps(WordCounts.load(sys.argv[1]).words()).encode()).hexdigest()
print(json.dumps({"words": h["words"], "lines": h["lines"], "words_digest": digest}))
"""

_DASK = """
import json, sys, time
from distributed import Client, LocalCluster
from subword import distributed as sd
from subword.formats.counts import write_counts
if __name__ == "__main__":
    out, files = sys.argv[1], sys.argv[2:]
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                           host="127.0.0.1")
    client = Client(cluster)
    t0 = time.perf_counter()
    counts = sd.count_words(files, client, like="byte-bpe")
    write_counts(out, counts)
    seconds = time.perf_counter() - t0
    client.close(); cluster.close()
    print(json.dumps({"seconds": seconds, "tasks": len(counts.inputs), "words": len(counts)}))
"""


def run_cli(args: list[str]) -> dict:
    """Runs ``subword ARGS`` in a fresh process; returns wall seconds, peak RSS (MiB) and stderr.

    A child's ``ru_maxrss`` includes the parent's RSS at the fork (Python forks with vfork, and Linux
    keeps the larger high-water mark across exec), so this process never holds big data: the corpus is
    built, and counts files are read, in children.
    """
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "cli.main", *args], stdout=subprocess.DEVNULL, stderr=err,
                                env=env, cwd=ROOT)
        _, status, rusage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        err.seek(0)
        text = err.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"subword {' '.join(args)} failed:\n{text}")
    return {"seconds": wall, "peak_rss_mib": rusage.ru_maxrss / 1024, "stderr": text}


def header_of(path: Path) -> dict:
    """Distinct words, lines and a digest of the word list of a counts file (read in a child)."""
    return run_child(_HEADER, [str(path)])


def same_words(a: Path, b: Path) -> bool:
    """Equal word lists (the headers differ only in provenance)."""
    return header_of(a)["words_digest"] == header_of(b)["words_digest"]


def count_and_train(files: list[Path], workdir: Path, tag: str, vocab_size: int) -> dict:
    swc, tok = workdir / f"{tag}.swc", workdir / f"{tag}.json"
    count = run_cli(["count", *map(str, files), "--for", "byte-bpe", "-o", str(swc), "-q", "--threads", "2"])
    train = run_cli(["train", "byte-bpe", "--from-counts", str(swc), "--vocab-size", str(vocab_size), "-o", str(tok),
                     "-q"])
    header = header_of(swc)
    digest = run_child(_DIGEST, [str(tok)])["digest"]
    row = {"bytes": sum(p.stat().st_size for p in files), "words": header["words"], "lines": header["lines"],
           "count_s": count["seconds"], "count_rss": count["peak_rss_mib"], "train_s": train["seconds"],
           "train_rss": train["peak_rss_mib"], "swc_mb": swc.stat().st_size / 1e6, "digest": digest, "swc": swc}
    log.info("%s: %.0f MB, %d distinct words: count %.1f s / %.0f MiB, train %.1f s / %.0f MiB", tag,
             row["bytes"] / 1e6, row["words"], row["count_s"], row["count_rss"], row["train_s"], row["train_rss"])
    return row


def fmt_size(n: float) -> str:
    """``2 GB``, ``0.25 GB``, ``50 MB``, ``12.5 MB`` (3 significant digits)."""
    return f"{n / GB:.3g} GB" if n >= GB / 4 else f"{n / 1e6:.3g} MB"


def render(rows: list[dict], hf: dict, bounded: list[dict], baseline: dict, dask: dict, single: dict,
           sources: list[str], load: tuple[float, float, float], cmd: str, seed: int) -> str:
    import tokenizers

    big = rows[-1]
    ours_s = big["count_s"] + big["train_s"]
    ours_rss = max(big["count_rss"], big["train_rss"])
    same = big["digest"] == hf["digest"]
    lines = [
        START,
        "## Counting and training at scale (bench_scale.py)",
        "",
        f"Corpus built at benchmark time from {', '.join(f'`{s}`' for s in sources)}: lines resampled with seed "
        f"{seed}, half of them with one word replaced by a per-shard spelling variant (1 + 40 sqrt(k+1) variants "
        "per word in shard k), so the vocabulary grows with the size. Every size is a prefix of the largest. "
        "Wall time of each process (interpreter start included on both sides), peak RSS from `wait4`.",
        "",
        f"### {fmt_size(big['nominal'])}: byte-level BPE 32k, subword vs HF tokenizers {tokenizers.__version__}",
        "",
        "| | wall s | peak RSS MiB |",
        "|---|---|---|",
        f"| HF `Tokenizer.train` (files) | {hf['process_seconds']:.1f} | {hf['peak_rss_mib']:.0f} |",
        f"| `subword count --for byte-bpe` | {big['count_s']:.1f} | {big['count_rss']:.0f} |",
        f"| `subword train byte-bpe --from-counts` | {big['train_s']:.1f} | {big['train_rss']:.0f} |",
        f"| subword, count + train | **{ours_s:.1f}** ({hf['process_seconds'] / ours_s:.2f}x HF's speed) | "
        f"**{ours_rss:.0f}** ({ours_rss / hf['peak_rss_mib']:.2f}x HF's memory) |",
        "",
        f"{big['words']:,} distinct words, {big['lines']:,} lines; counts file {big['swc_mb']:.1f} MB. "
        f"Identical vocab (with ids) and merges to HF: **{'yes' if same else 'NO'}** ({hf['merges']:,} merges).",
        "",
        f"### Bounded memory: `--max-memory` on {fmt_size(big['nominal'])}",
        "",
        "| count | wall s | peak RSS MiB | peak RSS - budget MiB | runs spilled | same words |",
        "|---|---|---|---|---|---|",
        f"| unbounded | {big['count_s']:.1f} | {big['count_rss']:.0f} | | 0 | |",
        *[f"| `--max-memory {fmt_size(b['budget'])}` | {b['seconds']:.1f} | {b['peak_rss_mib']:.0f} | "
          f"{b['peak_rss_mib'] - b['budget'] / 2**20:.0f} | {b['runs']} | {'yes' if b['same'] else '**NO**'} |"
          for b in bounded],
        "",
        f"The second budget is a quarter of the unbounded table (unbounded peak RSS minus the "
        f"{baseline['peak_rss_mib']:.0f} MiB of `subword count` on a one-line file), so it has to spill. Peak RSS "
        "stays under the budget plus that baseline plus one batch (65,536 lines, their word map and rayon's "
        "chunk maps) and the merge buffers.",
        "",
        f"### Dask LocalCluster (2 worker processes x 1 thread) vs one process (2 threads), {fmt_size(big['nominal'])}",
        "",
        "| count | wall s |",
        "|---|---|",
        f"| one process (`subword count`) | {single['seconds']:.1f} |",
        f"| Dask, {dask['tasks']} tasks (count only, cluster start excluded) | {dask['seconds']:.1f} |",
        f"| Dask process, cluster start and shutdown included | {dask['process_seconds']:.1f} |",
        "",
        f"Engine overhead: {dask['seconds'] / single['seconds']:.2f}x the single-process time; same words: "
        f"**{'yes' if dask['same'] else 'NO'}**.",
        "",
        "### Cost as the corpus grows",
        "",
        "| size | distinct words | count s | count s/GB | count RSS MiB | train s | train RSS MiB | .swc MB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {fmt_size(r['nominal'])} | {r['words']:,} | {r['count_s']:.1f} | "
                     f"{r['count_s'] / (r['bytes'] / GB):.1f} | {r['count_rss']:.0f} | {r['train_s']:.1f} | "
                     f"{r['train_rss']:.0f} | {r['swc_mb']:.1f} |")
    if len(rows) >= 2 and rows[-1]["words"] > rows[0]["words"]:
        per_word = (rows[-1]["train_rss"] - rows[0]["train_rss"]) * 2**20 / (rows[-1]["words"] - rows[0]["words"])
        count_per_word = (rows[-1]["count_rss"] - rows[0]["count_rss"]) * 2**20 / (rows[-1]["words"] - rows[0]["words"])
        lines += ["", f"Trainer memory per distinct word (slope of train peak RSS over distinct words): "
                      f"**{per_word:.0f} bytes**; counter: {count_per_word:.0f} bytes per distinct word."]
    lines += [
        "",
        f"Machine: {machine()}. Load average before the runs: {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} "
        f"(1/5/15 min). Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        f"Command: `{cmd}`",
        END,
    ]
    return "\n".join(lines)


def parse_size(text: str) -> int:
    """``250M`` -> 250000000 (powers of 1000; ``Mi``/``Gi`` for 1024), as ``subword count --max-memory``."""
    import re

    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgG]i?)?", text.strip())
    if not match:
        raise SystemExit(f"not a size: {text!r}")
    unit = (match.group(2) or "").lower()
    scale = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}[unit]
    return int(float(match.group(1)) * scale)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="250M,500M,1G,2G", help="corpus sizes, comma-separated")
    parser.add_argument("--max-memory", default="1G", help="the --max-memory budget of the bounded count")
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, help="where the corpus goes (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the generated corpus")
    parser.add_argument("--quick", action="store_true", help="12.5M,25M,50M and an 8M budget: proves the script")
    parser.add_argument("--no-write", action="store_true", help="print only, do not update RESULTS.md")
    parser.add_argument("--build-only", nargs=3, metavar=("DIR", "TOTAL", "SHARD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_only:  # the child that builds the corpus (its memory never touches the parent's)
        shards = build_corpus(Path(args.build_only[0]), int(args.build_only[1]), int(args.build_only[2]), args.seed)
        print(json.dumps({"shards": [str(p) for p in shards], "sources": [p.name for p in source_paths()]}))
        return
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    # The children (and Dask's worker processes) import subword from this checkout.
    os.environ["PYTHONPATH"] = str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")
    if args.quick:
        args.sizes, args.max_memory = "12.5M,25M,50M", "8M"
    sizes = sorted(parse_size(s) for s in args.sizes.split(","))
    budget = parse_size(args.max_memory)
    load = os.getloadavg()
    if load[0] >= 1.0:
        log.warning("load average is %.2f (>= 1.0): the figures will be noisy", load[0])

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_scale_"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, __file__, "--seed", str(args.seed), "--build-only", str(workdir),
                              str(sizes[-1]), str(max(1, sizes[0] // 8))], check=True, capture_output=True, text=True)
        built = json.loads(out.stdout.strip().splitlines()[-1])
        shards, sources = [Path(p) for p in built["shards"]], built["sources"]
        log.info("built %d shards, %.0f MB, in %.0f s", len(shards), sum(p.stat().st_size for p in shards) / 1e6,
                 time.perf_counter() - t0)
        rows = [count_and_train(prefix(shards, size), workdir, f"size{i}", args.vocab_size)
                for i, size in enumerate(sizes)]
        for row, size in zip(rows, sizes):
            row["nominal"] = size
        big_files = prefix(shards, sizes[-1])
        files = list(map(str, big_files))

        hf = run_child(_HF, [str(args.vocab_size), *files])
        log.info("HF: %.1f s, %.0f MiB", hf["process_seconds"], hf["peak_rss_mib"])
        if hf["digest"] != rows[-1]["digest"]:
            log.error("subword and HF produced different vocab/merges")

        tiny = workdir / "tiny.txt"
        tiny.write_text("a few words\n", encoding="utf-8")
        baseline = run_cli(["count", str(tiny), "--for", "byte-bpe", "-o", str(workdir / "tiny.swc"), "-q"])
        # The budget, and one that must spill: a quarter of what the unbounded table took.
        table_mib = max(1.0, rows[-1]["count_rss"] - baseline["peak_rss_mib"])
        budgets = [budget, max(4 * 2**20, int(table_mib * 2**20 / 4))]
        bounded = []
        for i, limit in enumerate(dict.fromkeys(budgets)):
            swc = workdir / f"bounded{i}.swc"
            b = run_cli(["count", *files, "--for", "byte-bpe", "-o", str(swc), "--threads", "2",
                         "--max-memory", str(limit), "--progress", "none"])
            runs = 0
            if "sorted run" in b["stderr"]:
                runs = int(b["stderr"].rsplit(" sorted run", 1)[0].rsplit(" ", 1)[-1])
            bounded.append({**b, "budget": limit, "runs": runs, "same": same_words(swc, rows[-1]["swc"])})
            log.info("bounded %s: %.1f s, %.0f MiB, %d runs", fmt_size(limit), b["seconds"], b["peak_rss_mib"], runs)

        single = {"seconds": rows[-1]["count_s"]}
        dask_swc = workdir / "dask.swc"
        d = run_child(_DASK, [str(dask_swc), *files])
        d["same"] = same_words(dask_swc, rows[-1]["swc"])
        log.info("dask: %.1f s (process %.1f s), %d tasks", d["seconds"], d["process_seconds"], d["tasks"])

        cmd = ("python benchmarks/bench_scale.py " + " ".join(sys.argv[1:])).strip()
        text = render(rows, hf, bounded, baseline, d, single, sources, load, cmd, args.seed)
        print(text)
        if not args.no_write:
            replace_section(text, START, END, RESULTS)
            log.info("updated %s", RESULTS)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
