"""``embedding_init='shared'``: rows of token strings shared between vocabularies start from the same values."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models.shared_init import apply_shared_init, shared_rows, token_keys
from subword import Tokenizer, train


@pytest.fixture(scope="module")
def vocabularies():
    lines = ["the cat sat on the mat\n", "the dog ate the cat food\n", "a mat on a cat\n"] * 20
    wp = train("wordpiece", lines=lines, vocab_size=60)
    bpe = train("byte-bpe", lines=lines, vocab_size=300, special_tokens=["[PAD]", "[CLS]", "[SEP]", "[MASK]"])
    return wp, bpe


def test_identical_strings_get_identical_rows_across_vocabularies(vocabularies):
    wp, bpe = vocabularies
    ka, kb = token_keys(wp), token_keys(bpe)
    ra, rb = shared_rows(wp, 16, seed=3), shared_rows(bpe, 16, seed=3)
    shared = set(ka) & set(kb)
    assert len(shared) > 10  # letters, "cat"-like pieces, the role tokens
    for key in shared:
        np.testing.assert_array_equal(ra[ka.index(key)], rb[kb.index(key)])
    assert b"role:mask" in shared  # [MASK] in both: one row
    # Different strings get different rows.
    only = next(k for k in ka if k not in kb)
    assert not any(np.array_equal(ra[ka.index(only)], row) for row in rb)


def test_byte_level_and_plain_spellings_share_a_key():
    from subword import BPE
    from subword.pre_tokenizers import ByteLevel
    from subword import decoders

    byte_level = Tokenizer(BPE({"Ġthe": 0, "a": 1}, []), pre_tokenizer=ByteLevel(), decoder=decoders.ByteLevel())
    assert token_keys(byte_level)[0] == b"text: the"


def test_rows_depend_on_seed_and_std_only(vocabularies):
    wp, _ = vocabularies
    a = shared_rows(wp, 8, seed=0, std=0.02)
    assert np.array_equal(a, shared_rows(wp, 8, seed=0, std=0.02))
    assert not np.array_equal(a, shared_rows(wp, 8, seed=1, std=0.02))
    assert abs(float(a.std()) - 0.02) < 0.005


def test_models_start_with_the_shared_rows(vocabularies):
    from models.config import preset
    from models.registry import build_model

    wp, bpe = vocabularies
    tables = []
    for tok in (wp, bpe):
        model = build_model(preset("bert", "tiny", vocab_size=tok.get_vocab_size()), heads=True)
        apply_shared_init(model, tok, seed=5, std=0.02)
        tables.append((token_keys(tok), model.backbone.embeddings.word.weight.detach()))
    (ka, ta), (kb, tb) = tables
    i, j = ka.index(b"role:mask"), kb.index(b"role:mask")
    assert torch.equal(ta[i], tb[j])
