"""The front door: loading (and encoding through) ``Tokenizer.from_file`` vs each file's own library.

    python benchmarks/bench_front_door.py                 # 32k models, 5 runs, writes benchmarks/RESULTS.md
    python benchmarks/bench_front_door.py --quick --no-write

Files: a sentencepiece 0.2.3 Unigram and a BPE ``.model`` (vocab 32k, byte fallback, trained on the first
200,000 lines of ../shared/corpora/gutenberg_en_20M.txt, or of the built-in corpus when it is absent), and a
BERT ``vocab.txt`` (30k, HF ``BertWordPieceTokenizer`` trained on the same lines). Loading is timed in a
fresh process per run (imports excluded), up to the first encoded line so the compiled core is built:
``Tokenizer.from_file(path)`` vs ``SentencePieceProcessor(model_file=path)`` and
``BertWordPieceTokenizer(vocab.txt)``. Encoding: held-out lines, ``Tokenizer.encode_batch_ids`` vs
``sp.encode(list)`` / HF ``encode_batch``, ids asserted identical. Runs are interleaved; medians; the
load average is recorded before and after.
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
from user_env import user_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's subword, not an installed one

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpora" / "gutenberg_en_20M.txt"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
START, END = "<!-- bench_front_door:start -->", "<!-- bench_front_door:end -->"
log = logging.getLogger("bench_front_door")

_LOAD = r"""
import json, sys, time
kind, path = sys.argv[1], sys.argv[2]
if kind == "ours":
    from subword import Tokenizer
    t = time.perf_counter(); tok = Tokenizer.from_file(path); tok.encode_batch_ids(["Hello world."])
elif kind == "spm":
    import sentencepiece as spm
    t = time.perf_counter(); sp = spm.SentencePieceProcessor(model_file=path); sp.encode(["Hello world."])
else:
    from tokenizers.implementations import BertWordPieceTokenizer
    t = time.perf_counter(); tok = BertWordPieceTokenizer(path); tok.encode_batch(["Hello world."])
print(json.dumps({"seconds": time.perf_counter() - t}))
"""


def corpus_lines(n: int) -> list[str]:
    if CORPUS.exists():
        with open(CORPUS, encoding="utf-8") as fh:
            return [line for line in (fh.readline().rstrip("\n") for _ in range(n)) if line.strip()]
    sys.path.insert(0, str(ROOT))
    from corpora.builtin import builtin_corpus

    with open(builtin_corpus(), encoding="utf-8") as fh:
        return [line.rstrip("\n") for line in fh if line.strip()][:n]


def make_files(tmp: Path, train: list[str], vocab: int, wp_vocab: int) -> dict[str, Path]:
    import sentencepiece as spm
    from tokenizers.implementations import BertWordPieceTokenizer

    corpus = tmp / "train.txt"
    corpus.write_text("\n".join(train) + "\n", encoding="utf-8")
    files = {}
    for kind in ("unigram", "bpe"):
        spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp / kind), vocab_size=vocab,
                                       model_type=kind, byte_fallback=True, minloglevel=2, hard_vocab_limit=False)
        files[kind] = tmp / f"{kind}.model"
    bert = BertWordPieceTokenizer()
    bert.train_from_iterator(train, vocab_size=wp_vocab)
    bert.save_model(str(tmp))
    files["vocab.txt"] = tmp / "vocab.txt"
    return files


_ENV = user_env()  # bytecode compiled, as in a user's install (see benchmarks/user_env.py)


def load_seconds(kind: str, path: Path) -> float:
    out = subprocess.run([sys.executable, "-c", _LOAD, kind, str(path)], check=True, capture_output=True, text=True,
                         env=_ENV)
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def encode_seconds(files: dict[str, Path], held: list[str], runs: int) -> dict[str, dict[str, float | bool]]:
    import sentencepiece as spm
    from tokenizers.implementations import BertWordPieceTokenizer

    from subword import Tokenizer

    out: dict[str, dict[str, float | bool]] = {}
    for name, path in files.items():
        ours = Tokenizer.from_file(path)
        if name == "vocab.txt":
            ref = BertWordPieceTokenizer(str(path))

            def theirs() -> list[list[int]]:
                return [e.ids for e in ref.encode_batch(held)]
        else:
            sp = spm.SentencePieceProcessor(model_file=str(path))

            def theirs() -> list[list[int]]:
                return sp.encode(held)
        a_times, b_times, same = [], [], True
        for _ in range(runs):
            t = time.perf_counter()
            a = theirs()
            a_times.append(time.perf_counter() - t)
            t = time.perf_counter()
            b = ours.encode_batch_ids(held)
            b_times.append(time.perf_counter() - t)
            same = same and a == b
        out[name] = {"theirs": statistics.median(a_times), "ours": statistics.median(b_times), "identical": same}
    return out


def render(load: dict[str, dict[str, list[float]]], enc: dict, meta: dict) -> str:
    names = {"unigram": "sentencepiece `SentencePieceProcessor`", "bpe": "sentencepiece `SentencePieceProcessor`",
             "vocab.txt": "HF `BertWordPieceTokenizer(vocab.txt)`"}
    rows = []
    for name, t in load.items():
        theirs, ours = statistics.median(t["theirs"]), statistics.median(t["ours"])
        rows.append(f"| {name} | {names[name]} | {theirs * 1000:.0f} | {ours * 1000:.0f} | {theirs / ours:.2f}x |")
    enc_rows = []
    for name, e in enc.items():
        enc_rows.append(f"| {name} | {meta['mb'] / e['theirs']:.1f} | {meta['mb'] / e['ours']:.1f} | "
                        f"{e['theirs'] / e['ours']:.2f}x | {e['identical']} |")
    return "\n".join([
        START,
        "## One front door: `Tokenizer.from_file` vs each file's own library",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; load average "
        f"{meta['load'][0][0]:.1f} before, {meta['load'][1][0]:.1f} after. Command: `{meta['command']}`. "
        f"Files: sentencepiece Unigram and BPE `.model`, vocab {meta['vocab']}, byte fallback; BERT `vocab.txt` "
        f"({meta['wp_vocab']}, HF-trained); trained on {meta['train_lines']:,} lines of {meta['corpus']}.",
        "",
        f"Loading up to the first encoded line, fresh process per run, imports excluded, median of {meta['runs']} "
        "interleaved runs (ms; ratio > 1: ours loads faster):",
        "",
        "| file | reference | reference ms | `Tokenizer.from_file` ms | ratio |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"Encoding {meta['held']:,} held-out lines ({meta['mb']:.1f} MB) through the loaded tokenizer, "
        "`Tokenizer.encode_batch_ids` vs `sp.encode(list)` / HF `encode_batch` (MB/s, median):",
        "",
        "| file | reference MB/s | ours MB/s | ratio | ids identical |",
        "|---|---|---|---|---|",
        *enc_rows,
        END,
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small files and inputs, 1 run (a smoke test)")
    parser.add_argument("--no-write", action="store_true", help="print only, do not update RESULTS.md")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    runs = 1 if args.quick else args.runs
    vocab, wp_vocab, n_train, n_held = (2000, 2000, 20_000, 5_000) if args.quick else (32_000, 30_000, 200_000, 50_000)
    before = os.getloadavg()
    lines = corpus_lines(n_train + n_held)
    train, held = lines[:-n_held], lines[-n_held:]
    tmp = Path(tempfile.mkdtemp())
    files = make_files(tmp, train, vocab, wp_vocab)
    load: dict[str, dict[str, list[float]]] = {name: {"theirs": [], "ours": []} for name in files}
    for i in range(runs):
        for name, path in files.items():
            load[name]["theirs"].append(load_seconds("bert" if name == "vocab.txt" else "spm", path))
            load[name]["ours"].append(load_seconds("ours", path))
            log.info("run %d %s: theirs %.3f s, ours %.3f s", i, name, load[name]["theirs"][-1], load[name]["ours"][-1])
    enc = encode_seconds(files, held, runs)
    command = "python benchmarks/bench_front_door.py" + (" --quick" if args.quick else f" --runs {runs}")
    meta = {"load": (before, os.getloadavg()), "command": command, "vocab": vocab, "wp_vocab": wp_vocab,
            "train_lines": len(train), "held": len(held), "runs": runs,
            "corpus": CORPUS.name if CORPUS.exists() else "the built-in corpus",
            "mb": sum(len(x.encode("utf-8")) + 1 for x in held) / 1e6}
    text = render(load, enc, meta)
    print(text)
    if not args.no_write:
        replace_section(text, START, END, RESULTS)
        log.info("updated %s", RESULTS)


if __name__ == "__main__":
    main()
