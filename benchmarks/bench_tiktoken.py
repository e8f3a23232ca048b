"""tiktoken vocabularies (cl100k_base, o200k_base): ours vs tiktoken vs bpe-openai vs HF, identical ids first.

For each encoding, one rank file (``bpe_openai/data/*.tiktoken.gz``, found by ``subword.formats.tiktoken.resolve``)
feeds every contestant:

* tiktoken: ``tiktoken.Encoding(name, pat_str, mergeable_ranks, special_tokens)``; ``encode_ordinary`` on one
  string (one thread), and over lines: ``encode_ordinary_batch`` (its thread pool) and a plain loop;
* ours from the rank file: ``Tokenizer.from_tiktoken(path)``; ``encode_batch_ids([text])`` on one string (one
  thread) and ``encode_batch_ids(lines)`` over lines (the core's thread pool);
* bpe-openai (the rust-gems encoder): its compiled tokenizer (``_bindings.tokenizer_for_encoding(name).encode``,
  no Python wrapper) on one string and per line;
* HF: the tokenizer.json ``transformers.integrations.tiktoken.convert_tiktoken_to_fast`` writes, with
  ``tokenizers`` ``encode_batch(lines)``, vs ours loading that same file (``Tokenizer.from_file``,
  ``encode_batch``: full Encodings), whose ids must equal HF's (HF's, not tiktoken's: see docs/pretokenizers.md).

Before timing, every line's ids are compared (ours vs tiktoken from the rank file, ours vs HF on the
tokenizer.json; the one-string ids too); the run fails on any difference. bpe-openai's ids are compared and
the count of differing lines is reported (it is not our oracle). Median of ``--repeat`` runs, caches warm.

Quick proof on a small sample (what the helper ran)::

    python benchmarks/bench_tiktoken.py --max-bytes 2000000 --repeat 1

The full run (quiet machine, ``uptime`` load below 1)::

    python benchmarks/bench_tiktoken.py --results benchmarks/RESULTS.md
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from results_md import replace_section  # benchmarks/ is the script's own folder

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpora" / "gutenberg_en_20M.txt"

log = logging.getLogger("bench_tiktoken")


def timed(fn, repeat: int) -> tuple[float, float]:
    """Median wall time and median CPU time of this process (all threads)."""
    wall, cpu = [], []
    for _ in range(repeat):
        c0 = _cpu()
        t0 = time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(_cpu() - c0)
    return statistics.median(wall), statistics.median(cpu)


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _first_diff(a: list[list[int]], b: list[list[int]]) -> list[int]:
    return [i for i, (x, y) in enumerate(zip(a, b)) if x != y]


def bench_encoding(name: str, lines: list[str], args) -> dict:
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    from subword import Tokenizer
    from subword.formats import tiktoken as tkfmt

    path = tkfmt.resolve(name)
    t0 = time.perf_counter()
    ours = Tokenizer.from_tiktoken(path)
    ours.encode_batch_ids(["warm up"])
    load_ours = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / f"{name}.tiktoken"
        plain.write_bytes(tkfmt._open_bytes(path))
        t0 = time.perf_counter()
        _, pattern, specials, _ = tkfmt.ENCODINGS[name]
        enc = tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=load_tiktoken_bpe(str(plain)),
                                special_tokens=specials)
        load_tk = time.perf_counter() - t0
        log.info("%s: loaded ours in %.2f s, tiktoken in %.2f s", name, load_ours, load_tk)
        hf_json = Path(tmp) / "hf"
        from transformers.integrations.tiktoken import convert_tiktoken_to_fast

        convert_tiktoken_to_fast(enc, str(hf_json))
        import tokenizers

        hf = tokenizers.Tokenizer.from_file(str(hf_json / "tokenizer.json"))
        ours_hf = Tokenizer.from_file(hf_json / "tokenizer.json")

    whole = "".join(lines)
    nbytes = len(whole.encode("utf-8"))
    # ==== identical ids ====
    tk_ids = enc.encode_ordinary_batch(lines, num_threads=args.threads)
    our_ids = ours.encode_batch_ids(lines, add_special_tokens=False)
    bad = _first_diff(tk_ids, our_ids)
    if bad or len(tk_ids) != len(our_ids):
        raise SystemExit(f"{name}: ours differs from tiktoken on {len(bad)} of {len(lines)} lines, first {bad[:5]}")
    if ours.encode_batch_ids([whole], add_special_tokens=False)[0] != enc.encode_ordinary(whole):
        raise SystemExit(f"{name}: one string: ours differs from tiktoken")
    hf_ids = [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]
    ours_hf_ids = [e.ids for e in ours_hf.encode_batch(lines, add_special_tokens=False)]
    bad = _first_diff(hf_ids, ours_hf_ids)
    if bad:
        raise SystemExit(f"{name}: ours on HF's tokenizer.json differs from HF on {len(bad)} lines, first {bad[:5]}")
    hf_vs_tk = len(_first_diff(hf_ids, tk_ids))
    log.info("%s: ids identical on all %d lines (ours = tiktoken, ours on tokenizer.json = HF); HF's converted "
             "file differs from tiktoken on %d lines", name, len(lines), hf_vs_tk)
    bpe = None
    bpe_diff = None
    try:
        from bpe_openai import _bindings

        bpe = _bindings.tokenizer_for_encoding(name)
        bpe_diff = sum(bpe.encode(x) != t for x, t in zip(lines, tk_ids))
        log.info("%s: bpe-openai differs from tiktoken on %d lines", name, bpe_diff)
    except ImportError:
        log.warning("bpe-openai is not installed: its rows are skipped")

    # ==== timings ====
    runs = {
        "tiktoken encode_ordinary, one string (1 thread)": lambda: enc.encode_ordinary(whole),
        "ours encode_batch_ids([text]), one string (1 thread)": lambda: ours.encode_batch_ids([whole], False),
        f"tiktoken encode_ordinary_batch(lines, num_threads={args.threads})":
            lambda: enc.encode_ordinary_batch(lines, num_threads=args.threads),
        "tiktoken encode_ordinary per line (plain loop)": lambda: [enc.encode_ordinary(x) for x in lines],
        "ours encode_batch_ids(lines)": lambda: ours.encode_batch_ids(lines, False),
        "HF encode_batch(lines) on the converted tokenizer.json": lambda: hf.encode_batch(lines, add_special_tokens=False),
        "ours encode_batch(lines) on the converted tokenizer.json": lambda: ours_hf.encode_batch(lines, False),
    }
    if bpe is not None:
        runs["bpe-openai encode, one string (1 thread)"] = lambda: bpe.encode(whole)
        runs["bpe-openai encode per line (plain loop)"] = lambda: [bpe.encode(x) for x in lines]
    mbs: dict[str, float] = {}
    cpu_mbs: dict[str, float] = {}
    for label, fn in runs.items():
        wall, cpu = timed(fn, args.repeat)
        mbs[label] = nbytes / 1e6 / wall
        cpu_mbs[label] = nbytes / 1e6 / cpu if cpu > 0 else float("nan")
        log.info("%s  %-60s %8.2f MB/s %8.2f MB/CPU-s", name, label, mbs[label], cpu_mbs[label])
    tk_lines = max(v for k, v in mbs.items() if k.startswith("tiktoken") and "one string" not in k)
    ratios = {
        "one string: ours / tiktoken": mbs["ours encode_batch_ids([text]), one string (1 thread)"]
        / mbs["tiktoken encode_ordinary, one string (1 thread)"],
        "lines: ours / best tiktoken": mbs["ours encode_batch_ids(lines)"] / tk_lines,
        "tokenizer.json: ours / HF encode_batch": mbs["ours encode_batch(lines) on the converted tokenizer.json"]
        / mbs["HF encode_batch(lines) on the converted tokenizer.json"],
    }
    if bpe is not None:
        ratios["one string: ours / bpe-openai"] = (mbs["ours encode_batch_ids([text]), one string (1 thread)"]
                                                   / mbs["bpe-openai encode, one string (1 thread)"])
        ratios["lines: ours / bpe-openai per line"] = (mbs["ours encode_batch_ids(lines)"]
                                                       / mbs["bpe-openai encode per line (plain loop)"])
    for k, v in ratios.items():
        log.info("%s  %-45s %.2fx", name, k, v)
    return {"mbs": mbs, "cpu": cpu_mbs, "ratios": ratios, "hf_vs_tk": hf_vs_tk, "bpe_diff": bpe_diff,
            "load": (load_ours, load_tk)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--max-bytes", type=int, default=None, help="only the first N bytes of the corpus")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2, help="tiktoken's batch threads")
    ap.add_argument("--encodings", nargs="+", default=["cl100k_base", "o200k_base"])
    ap.add_argument("--results", type=Path, default=None, help="replace our section of this RESULTS.md")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    with args.corpus.open(encoding="utf-8") as fh:
        text = fh.read(args.max_bytes) if args.max_bytes else fh.read()
    lines = text.splitlines(keepends=True)
    load_before = os.getloadavg()
    log.info("%d lines, %.1f MB; load before %s", len(lines), len(text.encode()) / 1e6, load_before)
    results = {name: bench_encoding(name, lines, args) for name in args.encodings}
    load_after = os.getloadavg()
    log.info("load after %s", load_after)
    if args.results:
        write_section(args, results, len(lines), len(text.encode()), load_before, load_after)


def write_section(args, results: dict, nlines: int, nbytes: int, load_before, load_after) -> None:
    start, end = "<!-- bench_tiktoken:start -->", "<!-- bench_tiktoken:end -->"
    body = [
        start,
        "## tiktoken vocabularies: cl100k_base and o200k_base (bench_tiktoken.py)",
        "",
        f"Corpus: `{args.corpus.name}`, {nlines} lines (line endings kept), {nbytes / 1e6:.1f} MB. Rank files from "
        "`bpe-openai`. Before timing, ours (from the rank file) gave tiktoken's ids on every line and on the whole "
        "text as one string, and ours on transformers' converted tokenizer.json gave HF's ids on every line. "
        f"Median of {args.repeat} runs, caches warm; tiktoken batch threads: {args.threads}. Machine: "
        f"{os.cpu_count()} logical CPUs; load before {load_before[0]:.2f} / {load_before[1]:.2f} / "
        f"{load_before[2]:.2f}, after {load_after[0]:.2f} / {load_after[1]:.2f} / {load_after[2]:.2f}. "
        f"Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
        "",
    ]
    for name, r in results.items():
        body += [
            f"### {name}",
            "",
            f"HF's converted tokenizer.json differs from tiktoken on {r['hf_vs_tk']} lines (digit runs: "
            "docs/pretokenizers.md); bpe-openai differs from tiktoken on "
            f"{r['bpe_diff'] if r['bpe_diff'] is not None else 'n/a'} lines. Load: ours {r['load'][0]:.2f} s, "
            f"tiktoken {r['load'][1]:.2f} s.",
            "",
            "| encoder | MB/s (wall) | MB per CPU-second |",
            "|---|---:|---:|",
            *[f"| {k} | {v:.2f} | {r['cpu'][k]:.2f} |" for k, v in r["mbs"].items()],
            "",
            "| ratio | value |",
            "|---|---:|",
            *[f"| {k} | **{v:.2f}x** |" for k, v in r["ratios"].items()],
            "",
        ]
    body += ["Command: `python benchmarks/bench_tiktoken.py --results benchmarks/RESULTS.md`", end]
    replace_section("\n".join(body), start, end, args.results)


if __name__ == "__main__":
    main()
