"""Pre-tokenizers: the Python reference vs HF ``tokenizers`` vs our Rust core, pieces and char offsets."""

from __future__ import annotations

import json
import os
import pickle

import pytest
from hypothesis import given, settings

from subword import pre_tokenizers as ours
from subword.errors import FormatError, UnsupportedComponentError
from _unicode_samples import MIXED_TEXT, TRICKY, corpus_lines

import tokenizers.pre_tokenizers as hf

MAX_EXAMPLES = int(os.environ.get("SUBWORD_MAX_EXAMPLES", "300"))

CONFIGS = [
    pytest.param(ours.Whitespace(), hf.Whitespace(), id="Whitespace"),
    pytest.param(ours.ByteLevel(), hf.ByteLevel(), id="ByteLevel-default"),
    pytest.param(ours.ByteLevel(add_prefix_space=False), hf.ByteLevel(add_prefix_space=False), id="ByteLevel-noprefix"),
    pytest.param(
        ours.ByteLevel(add_prefix_space=False, use_regex=False),
        hf.ByteLevel(add_prefix_space=False, use_regex=False),
        id="ByteLevel-noregex",
    ),
    pytest.param(
        ours.ByteLevel(add_prefix_space=True, use_regex=False, trim_offsets=False),
        hf.ByteLevel(add_prefix_space=True, use_regex=False, trim_offsets=False),
        id="ByteLevel-prefix-noregex",
    ),
]


REAL_LINES = corpus_lines("tinyshakespeare.txt", 400) + corpus_lines("gutenberg_en_20M.txt", 400)


def _hf_pieces(pre, text):
    return [(p, tuple(o)) for p, o in pre.pre_tokenize_str(text)]


# ==== reference vs HF ====


@pytest.mark.parametrize("ref, pre", CONFIGS)
@pytest.mark.parametrize("text", TRICKY, ids=range(len(TRICKY)))
def test_reference_matches_hf_on_tricky_text(ref, pre, text):
    assert ref.pre_tokenize_str(text) == _hf_pieces(pre, text)


@pytest.mark.parametrize("ref, pre", CONFIGS)
def test_reference_matches_hf_on_corpus_lines(ref, pre):
    if not REAL_LINES:
        pytest.skip("corpora not found next to the repository (../shared/corpora)")
    for line in REAL_LINES:
        assert ref.pre_tokenize_str(line) == _hf_pieces(pre, line), repr(line)


@pytest.mark.parametrize("ref, pre", CONFIGS)
@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(text=MIXED_TEXT)
def test_reference_matches_hf_on_generated_text(ref, pre, text):
    assert ref.pre_tokenize_str(text) == _hf_pieces(pre, text)


def test_byte_table_matches_hf_alphabet():
    table = ours.bytes_to_unicode()
    assert len(set(table)) == 256
    assert sorted(table) == sorted(hf.ByteLevel.alphabet())
    assert ours.ByteLevel.alphabet() == sorted(hf.ByteLevel.alphabet())
    assert (table[0x20], table[0x0A], table[0x41]) == ("Ġ", "Ċ", "A")


def test_prefix_space_takes_the_first_char_span():
    """HF aligns the added prefix space with the text's first char, even when it becomes its own piece."""
    assert ours.ByteLevel().pre_tokenize_str("\nab") == [("Ġ", (0, 1)), ("Ċ", (0, 1)), ("ab", (1, 3))]
    assert ours.ByteLevel().pre_tokenize_str("\nab") == _hf_pieces(hf.ByteLevel(), "\nab")


# ==== Rust vs reference ====


@pytest.mark.parametrize("ref, pre", CONFIGS)
def test_rust_matches_reference_on_tricky_and_corpus_text(ref, pre):
    native = ref.native()
    for text in TRICKY + REAL_LINES:
        assert [(p, tuple(o)) for p, o in native.pre_tokenize_str(text)] == ref.pre_tokenize_str(text), repr(text)


@pytest.mark.parametrize("ref, pre", CONFIGS)
@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(text=MIXED_TEXT)
def test_rust_matches_reference_on_generated_text(ref, pre, text):
    native = ref.native()
    assert [(p, tuple(o)) for p, o in native.pre_tokenize_str(text)] == ref.pre_tokenize_str(text)


# ==== serialisation ====


@pytest.mark.parametrize("ref, pre", CONFIGS)
def test_dict_equals_hf_serialisation(ref, pre):
    assert ref.to_dict() == json.loads(pre.__getstate__())
    assert ours.from_dict(json.loads(pre.__getstate__())) == ref
    assert pickle.loads(pickle.dumps(ref)) == ref


def test_unsupported_type_names_section_and_choices():
    with pytest.raises(UnsupportedComponentError) as err:
        ours.from_dict({"type": "Deduplication"}, source="tok.json")
    msg = str(err.value)
    assert "pre_tokenizer" in msg and "'Deduplication'" in msg and "tok.json" in msg
    assert "ByteLevel" in msg and "Whitespace" in msg


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "ByteLevel", "add_prefix_space": 1, "trim_offsets": True, "use_regex": True},
        {"type": "ByteLevel", "add_prefix_space": True, "prefix": True},
        {"type": "Whitespace", "x": 1},
        {"add_prefix_space": True},
        ["ByteLevel"],
    ],
)
def test_malformed_dicts_are_format_errors(bad):
    with pytest.raises(FormatError):
        ours.from_dict(bad)


def test_constructor_rejects_unknown_options_and_bad_types():
    with pytest.raises(TypeError, match="unexpected keyword"):
        ours.ByteLevel(add_prefix=True)
    with pytest.raises(TypeError, match="must be a bool"):
        ours.ByteLevel(add_prefix_space="yes")


@pytest.mark.parametrize("ref, pre", CONFIGS[:2])
def test_reference_matches_hf_on_every_code_point(ref, pre):
    """Each assigned code point in letter, digit, space, apostrophe and repeat contexts (a few seconds)."""
    import unicodedata

    for code in range(0x110000):
        c = chr(code)
        if unicodedata.category(c) in ("Cn", "Cs"):
            continue
        text = f"x{c}x {c}1 {c}{c}'{c}"
        assert ref.pre_tokenize_str(text) == _hf_pieces(pre, text), hex(code)
