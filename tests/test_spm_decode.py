"""SentencePiece ``.model`` decode against ``sentencepiece.decode`` on every kind of model, on held-out ids.

Not only the ids of a text's own encoding: random id sequences too (pieces starting with ``▁``, the lone ``▁``
piece, control, unknown, user-defined and byte pieces in any order), because decoding must invert whatever
ids a model is given. The models are trained here by sentencepiece 0.2.3 with each option that changes
decoding: the dummy prefix on and off, ``remove_extra_whitespaces`` on and off (Llama 2 keeps whitespace:
``[▁, ▁x]`` decodes to ``" x"``), byte fallback, user-defined pieces, whitespace as a suffix, Unigram and BPE.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from corpora import builtin_corpus
from subword import Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _unicode_samples import TRICKY

spm = pytest.importorskip("sentencepiece")

KINDS = {
    "unigram-defaults": dict(model_type="unigram"),
    "unigram-no-dummy-prefix": dict(model_type="unigram", add_dummy_prefix=False),
    "unigram-keep-whitespace": dict(model_type="unigram", remove_extra_whitespaces=False),
    "unigram-keep-whitespace-no-prefix": dict(model_type="unigram", remove_extra_whitespaces=False,
                                              add_dummy_prefix=False),
    "llama2-bpe": dict(model_type="bpe", byte_fallback=True, split_digits=True, normalization_rule_name="identity",
                       remove_extra_whitespaces=False, allow_whitespace_only_pieces=True),
    "bpe-byte-fallback-user-defined": dict(model_type="bpe", byte_fallback=True,
                                           user_defined_symbols=["<sep>", "▁▁", "@@"], control_symbols=["<ctl>"]),
    "unigram-suffix": dict(model_type="unigram", treat_whitespace_as_suffix=True),
    "bpe-nfkc-no-prefix": dict(model_type="bpe", add_dummy_prefix=False, normalization_rule_name="nfkc"),
}


def _lines() -> list[str]:
    with open(builtin_corpus(), encoding="utf-8") as f:
        text = f.read(400_000)
    return [line for line in text.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("spm_decode")
    src = tmp / "train.txt"
    extra = ["中文字符，日本語のテキスト、한국어 텍스트。", "emoji 😀🎉 naïve café", "  two  spaces  here  "] * 20
    src.write_text("\n".join(_lines() + extra) + "\n", encoding="utf-8")
    out = {}
    for name, opts in KINDS.items():
        spm.SentencePieceTrainer.train(input=str(src), model_prefix=str(tmp / name), vocab_size=800, minloglevel=2,
                                       num_threads=1, character_coverage=0.9995, **opts)
        out[name] = tmp / f"{name}.model"
    return out


def _random_ids(sp, rng: random.Random, n: int) -> list[list[int]]:
    """Id sequences biased to what decoding treats specially: ▁-pieces, the lone ▁, control, unknown, bytes."""
    size = sp.get_piece_size()
    special = [i for i in range(size) if sp.is_control(i) or sp.is_unknown(i) or sp.is_byte(i)
               or sp.id_to_piece(i).startswith("▁")]
    lone = [i for i in range(size) if sp.id_to_piece(i) == "▁"]
    out = []
    for _ in range(n):
        k = rng.randint(0, 10)
        seq = [rng.choice(special if rng.random() < 0.6 else range(size)) for _ in range(k)]
        if lone and rng.random() < 0.3:
            seq.insert(rng.randint(0, len(seq)), lone[0])
        out.append(seq)
    return out


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_decode_equals_sentencepiece_on_random_and_encoded_ids(kind, models):
    path = models[kind]
    sp = spm.SentencePieceProcessor(model_file=str(path))
    ours = Tokenizer.from_file(path)
    rng = random.Random(hash(kind) & 0xFFFF)
    held_out = TRICKY + [" x", "  x", " ", "x ", "▁x", " \u2581 y"]
    sequences = _random_ids(sp, rng, 1500) + [sp.encode(t) for t in held_out]
    lone = [i for i in range(sp.get_piece_size()) if sp.id_to_piece(i) == "▁"]
    if lone:
        word = sp.piece_to_id("▁the")
        sequences += [[lone[0], word], [lone[0], lone[0], word], [word, lone[0]], [1, lone[0], word]]
    for ids in sequences:
        assert ours.decode(ids) == sp.decode(ids), (kind, ids, [sp.id_to_piece(i) for i in ids])


def test_llama2_style_leading_space_round_trips(models):
    """The issue's case: text with one leading space on a model that keeps whitespace."""
    path = models["llama2-bpe"]
    sp = spm.SentencePieceProcessor(model_file=str(path))
    ours = Tokenizer.from_file(path)
    for text in (" x", " the", "  the", " 中文"):
        ids = ours.encode(text).ids
        assert ids == sp.encode(text)
        assert ours.decode(ids) == sp.decode(ids) == text
