"""SentencePiece-compatible BPE: training and encoding, ours vs sentencepiece, same input and options.

    python benchmarks/bench_spm_bpe.py                  # 3 runs each, writes benchmarks/RESULTS.md
    python benchmarks/bench_spm_bpe.py --runs 1 --no-write
    python benchmarks/bench_spm_bpe.py --llama-only --quick --no-write   # the Llama-style rows, small

Training: 8k vocab on ../shared/corpora/gutenberg_en_20M.txt with sentencepiece's defaults
(nmt_nfkc, character_coverage 0.9995), ours from the same file (reading included); runs are
interleaved and each runs in a fresh subprocess (peak RSS from getrusage). The piece lists must be
identical. Encoding: the sentencepiece-trained model, the last 200,000 lines of the corpus,
sentencepiece's ``encode(list)`` (its own thread pool) vs our ``SpmBpeEncoder.encode_batch``;
the ids must be identical. The load average is recorded before and after.

Llama-style encoding: sentencepiece trains a 32k BPE model with the options Llama 2 and Mistral
ship (byte fallback, ``split_digits``, normalization ``identity``, ``remove_extra_whitespaces=false``,
``allow_whitespace_only_pieces=true``, coverage 0.99995) and, for comparison, one with its default
options, both on the first 8 MB of the corpus plus 2 MB of generated CJK text
(:func:`corpora.synthetic.cjk_lines`, seed 0); both encode held-out English (the last 200,000
lines) and held-out generated CJK (4 MB, seed 1): ``sp.encode(list)`` vs our
``SpmBpeTokenizer.encode_batch``, ids identical, wall time and CPU time (all threads).
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

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpora" / "gutenberg_en_20M.txt"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
START, END = "<!-- bench_spm:start -->", "<!-- bench_spm:end -->"
LLAMA_START, LLAMA_END = "<!-- bench_spm_llama:start -->", "<!-- bench_spm_llama:end -->"
log = logging.getLogger("bench_spm_bpe")

_SPM = r"""
import json, resource, sys, time
import sentencepiece as spm
corpus, prefix, vocab = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = time.perf_counter()
spm.SentencePieceTrainer.train(input=corpus, model_prefix=prefix, vocab_size=vocab, model_type="bpe", minloglevel=2)
print(json.dumps({"seconds": time.perf_counter() - t, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

_OURS = r"""
import json, resource, sys, time
from subword.formats.spm import write_model
from subword.spm import SpmBpeTrainer, train_spm_bpe
corpus, out, vocab = sys.argv[1], sys.argv[2], int(sys.argv[3])
t = time.perf_counter()
with open(corpus, encoding="utf-8", newline="") as f:  # lines split at \n only, as sentencepiece reads them
    model = train_spm_bpe(f.read().removesuffix("\n").split("\n"), SpmBpeTrainer(vocab_size=vocab))
write_model(out, model)
print(json.dumps({"seconds": time.perf_counter() - t, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def child(program: str, args: list[str]) -> dict:
    out = subprocess.run([sys.executable, "-c", program, *args], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def encode_bench(model_path: Path, runs: int) -> dict:
    import sentencepiece as spm

    from subword import _core
    from subword.formats.spm import read_model

    model = read_model(model_path)
    spec = {"normalization_rule_name": "identity"}
    enc = _core.SpmBpeEncoder(model.pieces, json.dumps(spec), model.normalizer_spec.get("precompiled_charsmap"), False)
    sp = spm.SentencePieceProcessor(model_file=str(model_path))
    lines = CORPUS.read_bytes().decode("utf-8").removesuffix("\n").split("\n")[-200_000:]
    ours, theirs, same = [], [], True
    for _ in range(runs):
        t = time.perf_counter()
        a = sp.encode(lines)
        theirs.append(time.perf_counter() - t)
        t = time.perf_counter()
        b = enc.encode_batch(lines)
        ours.append(time.perf_counter() - t)
        same = same and a == b
    mb = sum(len(x.encode("utf-8")) + 1 for x in lines) / 1e6
    return {"lines": len(lines), "mb": mb, "ours": statistics.median(ours), "spm": statistics.median(theirs),
            "identical": same, "tokens": sum(len(x) for x in a)}


def llama_bench(tmp: Path, runs: int, quick: bool) -> list[dict]:
    """The Llama-style rows: both models, English and CJK held out, ours vs sentencepiece."""
    import sentencepiece as spm

    from corpora.synthetic import cjk_lines
    from subword.spm import SpmBpeTokenizer

    with open(CORPUS, encoding="utf-8") as f:
        english = f.read(8_000_000).rsplit("\n", 1)[0]
    train = tmp / "llama_train.txt"
    train.write_text(english + "\n" + "\n".join(cjk_lines(2_000_000, seed=0)) + "\n", encoding="utf-8")
    llama = dict(byte_fallback=True, split_digits=True, normalization_rule_name="identity",
                 remove_extra_whitespaces=False, allow_whitespace_only_pieces=True, character_coverage=0.99995)
    held_out = {
        "English": CORPUS.read_bytes().decode("utf-8").removesuffix("\n").split("\n")[-(20_000 if quick else 200_000):],
        "CJK": cjk_lines(400_000 if quick else 4_000_000, seed=1),
    }
    rows = []
    for name, opts in (("Llama-style", llama), ("sentencepiece defaults", {})):
        prefix = tmp / name.split()[0].lower()
        spm.SentencePieceTrainer.train(input=str(train), model_prefix=str(prefix), model_type="bpe", vocab_size=32000,
                                       minloglevel=2, **opts)
        sp = spm.SentencePieceProcessor(model_file=f"{prefix}.model")
        ours = SpmBpeTokenizer.from_file(f"{prefix}.model")
        for text_name, lines in held_out.items():
            t: dict[str, list[float]] = {"sp": [], "ours": [], "sp_cpu": [], "ours_cpu": []}
            same = True
            for _ in range(runs):
                for who, f in (("sp", sp.encode), ("ours", ours.encode_batch)):
                    w, c = time.perf_counter(), time.process_time()
                    ids = f(lines)
                    t[who].append(time.perf_counter() - w)
                    t[who + "_cpu"].append(time.process_time() - c)
                    if who == "sp":
                        expected = ids
                    else:
                        same = same and ids == expected
            mb = sum(len(x.encode("utf-8")) + 1 for x in lines) / 1e6
            rows.append({"model": name, "text": text_name, "mb": mb, "identical": same,
                         **{k: statistics.median(v) for k, v in t.items()}})
            log.info("%s / %s: %s", name, text_name, rows[-1])
    return rows


def render_llama(rows: list[dict], runs: int, load: tuple[tuple[float, ...], tuple[float, ...]], quick: bool) -> str:
    out = [
        LLAMA_START,
        "## SentencePiece BPE encoding with the Llama 2 / Mistral options (bench_spm_bpe.py)",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; load average "
        f"{load[0][0]:.1f} before, {load[1][0]:.1f} after. 32k BPE models trained by sentencepiece on 8 MB "
        "English + 2 MB generated CJK; held-out text; median of "
        f"{runs}. Command: `python benchmarks/bench_spm_bpe.py --llama-only{' --quick' if quick else ''} "
        f"--runs {runs}`.",
        "",
        "| model | held-out text | MB | sp `encode(list)` s | ours `encode_batch` s | wall ratio | CPU ratio | ids identical |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        out.append(f"| {r['model']} | {r['text']} | {r['mb']:.1f} | {r['sp']:.3f} | {r['ours']:.3f} | "
                   f"**{r['sp'] / r['ours']:.2f}x** | {r['sp_cpu'] / r['ours_cpu']:.2f}x | {r['identical']} |")
    out += ["", "CPU ratio: sentencepiece's CPU seconds (all threads) over ours.", LLAMA_END]
    return "\n".join(out)


def render(train: dict, enc: dict, load: tuple[tuple[float, ...], tuple[float, ...]], runs: int) -> str:
    o, s = train["ours"], train["spm"]
    return "\n".join([
        START,
        "## SentencePiece-compatible BPE (`compat=\"spm\"`) vs sentencepiece 0.2.3",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; load average "
        f"{load[0][0]:.1f} before, {load[1][0]:.1f} after. Command: `python benchmarks/bench_spm_bpe.py --runs {runs}`.",
        "",
        f"Training, 8k vocab, gutenberg_en_20M.txt, sentencepiece defaults (nmt_nfkc, coverage 0.9995), "
        f"median of {runs} interleaved runs, each in its own process:",
        "",
        "| | seconds | peak RSS MB | pieces identical |",
        "|---|---|---|---|",
        f"| sentencepiece `SentencePieceTrainer.train` | {statistics.median(s['seconds']):.2f} | "
        f"{max(s['rss_mb']):.0f} | |",
        f"| ours `train_spm_bpe` (reading the file included) | {statistics.median(o['seconds']):.2f} | "
        f"{max(o['rss_mb']):.0f} | {train['identical']} |",
        f"| ratio (sentencepiece / ours) | {statistics.median(s['seconds']) / statistics.median(o['seconds']):.2f}x | | |",
        "",
        f"Encoding with the sentencepiece-trained model, {enc['lines']:,} lines ({enc['mb']:.1f} MB, "
        f"{enc['tokens']:,} tokens), median of {runs}:",
        "",
        "| | seconds | MB/s | ids identical |",
        "|---|---|---|---|",
        f"| sentencepiece `encode(list)` | {enc['spm']:.2f} | {enc['mb'] / enc['spm']:.1f} | |",
        f"| ours `SpmBpeEncoder.encode_batch` | {enc['ours']:.2f} | {enc['mb'] / enc['ours']:.1f} | {enc['identical']} |",
        f"| ratio | {enc['spm'] / enc['ours']:.2f}x | | |",
        END,
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--no-write", action="store_true", help="print only, do not update RESULTS.md")
    parser.add_argument("--llama-only", action="store_true", help="only the Llama-style encoding rows")
    parser.add_argument("--no-llama", action="store_true", help="without the Llama-style encoding rows")
    parser.add_argument("--quick", action="store_true", help="Llama rows on 10x less held-out text")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if not CORPUS.exists():
        sys.exit(f"{CORPUS} is not available")
    tmp = Path(tempfile.mkdtemp())
    if not args.no_llama:
        before = os.getloadavg()
        rows = llama_bench(tmp, args.runs, args.quick)
        text = render_llama(rows, args.runs, (before, os.getloadavg()), args.quick)
        print(text)
        if not args.no_write:
            replace_section(text, LLAMA_START, LLAMA_END, RESULTS)
        if args.llama_only:
            return
    before = os.getloadavg()
    times: dict[str, dict[str, list[float]]] = {k: {"seconds": [], "rss_mb": []} for k in ("spm", "ours")}
    for i in range(args.runs):
        for name, program, target in (("spm", _SPM, str(tmp / "spm")), ("ours", _OURS, str(tmp / "ours.model"))):
            r = child(program, [str(CORPUS), target, str(args.vocab)])
            times[name]["seconds"].append(r["seconds"])
            times[name]["rss_mb"].append(r["rss_mb"])
            log.info("run %d %s: %.2f s, %.0f MB", i, name, r["seconds"], r["rss_mb"])
    from subword.formats.spm import read_model

    identical = read_model(tmp / "spm.model").pieces == read_model(tmp / "ours.model").pieces
    enc = encode_bench(tmp / "spm.model", args.runs)
    after = os.getloadavg()
    text = render({**times, "identical": identical}, enc, (before, after), args.runs)
    print(text)
    if not args.no_write:
        replace_section(text, START, END, RESULTS)
        log.info("updated %s", RESULTS)


if __name__ == "__main__":
    main()
