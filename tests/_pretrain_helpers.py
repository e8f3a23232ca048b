"""Shared fixtures of the pretraining tests: a slice of the built-in corpus and a small WordPiece vocabulary."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import corpora
from models.pretrain import PretrainConfig


def small_corpus(directory: Path, lines: int = 1200) -> Path:
    """The first ``lines`` lines of the built-in corpus (English prose, blank lines between documents)."""
    path = directory / "corpus.txt"
    if not path.exists():
        with open(corpora.builtin_corpus(), encoding="utf-8") as f:
            path.write_text("".join(itertools.islice(f, lines)), encoding="utf-8")
    return path


def small_tokenizer(directory: Path, corpus: Path, vocab_size: int = 400) -> Path:
    """A BERT WordPiece tokenizer ([PAD] [UNK] [CLS] [SEP] [MASK]) trained on ``corpus``."""
    from subword.trainers import WordPieceTrainer, train_wordpiece

    path = directory / "tok.json"
    if not path.exists():
        tok = train_wordpiece(corpus.read_text(encoding="utf-8").splitlines(True),
                              WordPieceTrainer(vocab_size=vocab_size))
        tok.save(path)
    return path


def tiny_config(tmp: Path, fixtures: dict[str, Path], **overrides: Any) -> PretrainConfig:
    """A BERT tiny job of a few steps on the small corpus (seq 32, batch 4, no dropout)."""
    base: dict[str, Any] = dict(model="bert", tokenizer=str(fixtures["tok"]), inputs=[str(fixtures["corpus"])],
                                output_dir=str(tmp / "run"), steps=6, batch_size=4, seq_len=32, dropout=0.0,
                                cache_dir=str(fixtures["cache"]), stats_every=0, objective="mlm")
    base.update(overrides)
    return PretrainConfig(**base)
