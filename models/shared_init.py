"""A shared initialisation of the word embeddings: one row per token *string*, the same in every vocabulary.

When several models differ only in their tokenizer, rows of tokens that spell the same bytes should start
from the same values, so that the tokenizer is the only difference between the runs (TokSuite, Altıntaş et
al. 2025, initialise a "super vocabulary" the same way). The row of a token is drawn from a generator seeded
by ``(seed, blake2b(key))``, where the key is:

- the bytes the token stands for (its decoder's per-token meaning: byte-level ``Ġthe``, SentencePiece
  ``▁the`` and a raw ``b" the"`` all give ``b" the"``; WordPiece's ``##ing`` gives ``b"ing"``), read with
  the compare report's :func:`subword.compare.samples.token_bytes`;
- for the tokens playing a role in pretraining (mask, cls, sep, pad, whatever their spelling), the role;
- for other special tokens, their string, marked as special.

So the value of a row depends on its key, the seed, the width and the standard deviation only, never on
the vocabulary it sits in or on its id.

>>> from subword import Tokenizer, WordPiece
>>> a = Tokenizer(WordPiece({"[PAD]": 0, "[UNK]": 1, "the": 2, "##s": 3}, unk_token="[UNK]"))
>>> b = Tokenizer(WordPiece({"[UNK]": 0, "s": 1, "the": 2, "[PAD]": 3}, unk_token="[UNK]"))
>>> ra, rb = shared_rows(a, 8, seed=0), shared_rows(b, 8, seed=0)
>>> bool((ra[2] == rb[2]).all()), bool((ra[3] == rb[1]).all()), bool((ra[0] == rb[3]).all())
(True, True, True)
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import torch
from torch import nn

__all__ = ["token_keys", "shared_rows", "apply_shared_init"]

#: Role names of models.pretrain's special tokens: a [MASK] and a <mask> share their row.
_ROLE_SPELLINGS = {"[MASK]": "mask", "<mask>": "mask", "[CLS]": "cls", "<s>": "cls", "<cls>": "cls",
                   "[SEP]": "sep", "</s>": "sep", "<sep>": "sep", "[PAD]": "pad", "<pad>": "pad",
                   "[UNK]": "unk", "<unk>": "unk"}


def token_keys(tokenizer: Any) -> list[bytes]:
    """The key of every id of ``tokenizer`` (ids with no token get a key of their own id).

    >>> from subword import Tokenizer, WordPiece
    >>> token_keys(Tokenizer(WordPiece({"[MASK]": 0, "##ab": 1, "ab": 2}, unk_token="[MASK]")))
    [b'role:mask', b'text:ab', b'text:ab']
    """
    from subword.compare.samples import _decoder_steps, token_bytes

    steps = _decoder_steps(tokenizer)
    specials = set(getattr(tokenizer, "special_tokens", ()) or ())
    vocab = tokenizer.get_vocab()
    size = max(max(vocab.values(), default=-1) + 1, tokenizer.get_vocab_size())
    keys: list[bytes] = [b"unused:%d" % i for i in range(size)]
    for token, i in vocab.items():
        if token in _ROLE_SPELLINGS:
            keys[i] = b"role:" + _ROLE_SPELLINGS[token].encode()
        elif token in specials:
            keys[i] = b"special:" + token.encode("utf-8")
        else:
            keys[i] = b"text:" + token_bytes(steps, token)[0]
    return keys


def _row(key: bytes, seed: int, width: int, std: float) -> np.ndarray:
    digest = hashlib.blake2b(key, digest_size=16).digest()
    words = [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng([seed & 0xFFFFFFFF, *words]).normal(0.0, std, width)


def shared_rows(tokenizer: Any, width: int, *, seed: int, std: float = 0.02) -> np.ndarray:
    """The (V, width) float32 table: row ``i`` is a function of the key of id ``i``, ``seed`` and ``std``.

    Args:
        tokenizer: A :class:`subword.Tokenizer`.
        width: The embedding width.
        seed: The study's seed (the same for every vocabulary).
        std: Standard deviation of the normal draw (the model's ``initializer_range``).
    """
    keys = token_keys(tokenizer)
    table = np.empty((len(keys), width), dtype=np.float32)
    cache: dict[bytes, np.ndarray] = {}
    for i, key in enumerate(keys):
        row = cache.get(key)
        if row is None:
            row = cache[key] = _row(key, seed, width, std)
        table[i] = row
    return table


def _word_embedding(model: nn.Module, vocab_size: int) -> nn.Embedding:
    """The model's token embedding: the one ``nn.Embedding`` with ``vocab_size`` rows."""
    found = [m for m in model.modules() if isinstance(m, nn.Embedding) and m.num_embeddings == vocab_size]
    if len(found) != 1:
        raise ValueError(f"expected one embedding of {vocab_size} rows in {type(model).__name__}, found {len(found)}")
    return found[0]


def apply_shared_init(model: nn.Module, tokenizer: Any, *, seed: int, std: float) -> None:
    """Overwrite ``model``'s word embedding with :func:`shared_rows` (in place; the decoder is tied to it).

    Raises:
        ValueError: the model has no single embedding of the tokenizer's size.
    """
    emb = _word_embedding(model, int(getattr(getattr(model, "config", None), "vocab_size", 0)))
    table = shared_rows(tokenizer, emb.embedding_dim, seed=seed, std=std)
    if table.shape[0] > emb.num_embeddings:
        raise ValueError(f"the tokenizer has {table.shape[0]} ids, the embedding {emb.num_embeddings} rows")
    with torch.no_grad():
        emb.weight[: table.shape[0]].copy_(torch.from_numpy(table))
        if emb.padding_idx is not None:
            emb.weight[emb.padding_idx].zero_()
