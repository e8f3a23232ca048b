"""Small BPE tokenizers trained with HF ``tokenizers`` on tinyshakespeare, as reference fixtures.

Trained at test time (no committed binaries). Vocab sizes are small so the whole module costs ~1 s.
"""

from __future__ import annotations

from functools import lru_cache

import pytest

from _unicode_samples import CORPORA, TRICKY, corpus_lines

SPECIALS_GPT2 = ["<|endoftext|>", "<pad>"]
SPECIALS_BERT = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]


@lru_cache(maxsize=1)
def training_lines() -> list[str]:
    path = CORPORA / "tinyshakespeare.txt"
    if not path.exists():
        pytest.skip(f"corpus {path} not found (the shared corpora live next to the repository)")
    return path.read_text(encoding="utf-8").splitlines(keepends=True)[:8000]


@lru_cache(maxsize=1)
def eval_lines() -> list[str]:
    """Held-out real lines plus Unicode-rich ones, with special tokens embedded in a few."""
    shakespeare = CORPORA / "tinyshakespeare.txt"
    held_out = shakespeare.read_text(encoding="utf-8").splitlines(keepends=True)[8000:8400]
    gutenberg = corpus_lines("gutenberg_en_20M.txt", 200)
    with_specials = [
        "Hello<|endoftext|>world",
        "<|endoftext|><|endoftext|> two in a row <pad>",
        "[CLS] the king [SEP] is [MASK] dead [PAD]",
        "nospace[SEP]around[UNK]",
    ]
    return held_out + gutenberg + TRICKY + with_specials


def byte_level_hf(vocab_size: int = 600):
    """GPT-2 style byte-level BPE (specials first), as ``subword train bytelevel`` makes it (a fresh copy)."""
    from tokenizers import Tokenizer

    return Tokenizer.from_str(_byte_level_json(vocab_size))


def whitespace_hf(vocab_size: int = 600):
    """Whitespace BPE with a normalizer, unk, end-of-word suffix and a BERT-like template (a fresh copy)."""
    from tokenizers import Tokenizer

    return Tokenizer.from_str(_whitespace_json(vocab_size))


# Trained once per process: tests mutate their copies (truncation, added tokens), never these strings.
@lru_cache(maxsize=None)
def _byte_level_json(vocab_size: int) -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=True)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIALS_GPT2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(training_lines(), trainer)
    return tok.to_str()


@lru_cache(maxsize=None)
def _whitespace_json(vocab_size: int) -> str:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]", end_of_word_suffix="</w>"))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.BPEDecoder(suffix="</w>")
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIALS_BERT, end_of_word_suffix="</w>", show_progress=False
    )
    tok.train_from_iterator(training_lines(), trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))],
    )
    return tok.to_str()
