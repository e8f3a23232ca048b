"""The Rust pre-tokenizers (``rust/src/pretok.rs``) vs HF, seen through the word counter.

``_core.WordCounter`` counts exactly the pieces our Rust pre-tokenizer produces, so comparing its
counts with a ``Counter`` of HF's ``pre_tokenize_str`` pieces checks the split and the byte mapping.
(Offsets are checked through ``_core.PreTokenizer`` in ``tests/test_pre_tokenizers.py``.)
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subword import _core as core
import tokenizers.pre_tokenizers as hf

MAX_EXAMPLES = int(os.environ.get("SUBWORD_MAX_EXAMPLES", "300"))

CONFIGS = {
    "Whitespace": ({"type": "Whitespace"}, hf.Whitespace()),
    "ByteLevel": ({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
                  hf.ByteLevel(add_prefix_space=False)),
    "ByteLevel-prefix": ({"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
                         hf.ByteLevel(add_prefix_space=True)),
    "ByteLevel-noregex": ({"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": False},
                          hf.ByteLevel(add_prefix_space=True, use_regex=False)),
}

TRICKY = [
    "",
    " ",
    "\n\n",
    "Hello world",
    "  leading and trailing  ",
    "it's we're they've I'm we'll he'd IT'S 'tis ''s",
    "tabs\tand\r\nCRLF\u000bvt\u000cff",
    "NBSP\u00a0and\u3000ideographic\u2009thin\u202fnarrow",
    "日本語のテキスト、句読点。中文，标点！",
    "emoji 🙂👍🏽 family 👨‍👩‍👧 flags 🇫🇷",
    "combining e\u0301 a\u0308 and precomposed é ä",
    "Arabic مرحبا بالعالم and Hebrew שלום",
    "control \x00\x01\x1f\x7f\x85 chars",
    "digits 123 ٣٤٥ ௰ Ⅻ ½ ²",
    "under_score snake_case __dunder__ ‿ connector",
    "circled Ⓐⓑ squared 🄰🅐 zero\u200bwidth\u200cjoin\u200dx",
    "punct!!! ??? ... --- ((()))",
    "a  \t b\n \nc",
]


def rust_counts(spec: dict, texts: list[str]) -> dict[str, int]:
    counter = core.WordCounter(json.dumps(spec))
    counter.feed(texts)
    return dict(counter.words())


def hf_counts(pre, texts: list[str]) -> dict[str, int]:
    return dict(Counter(p for t in texts for p, _ in pre.pre_tokenize_str(t)))


@pytest.mark.parametrize("name", CONFIGS)
@pytest.mark.parametrize("text", TRICKY, ids=range(len(TRICKY)))
def test_tricky_text(name, text):
    spec, pre = CONFIGS[name]
    assert rust_counts(spec, [text]) == hf_counts(pre, [text])


@pytest.mark.parametrize("name", CONFIGS)
@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(text=st.text(st.characters(blacklist_categories=["Cs"]), max_size=40))
def test_random_strings(name, text):
    spec, pre = CONFIGS[name]
    assert rust_counts(spec, [text]) == hf_counts(pre, [text])


@pytest.mark.parametrize("name", CONFIGS)
@settings(max_examples=MAX_EXAMPLES // 2, deadline=None)
@given(text=st.text(st.sampled_from(list(" \t\n\u00a0\u3000'sSmdlrevt1٣!?é\u0301🙂_-")), max_size=30))
def test_random_strings_from_the_tricky_alphabet(name, text):
    spec, pre = CONFIGS[name]
    assert rust_counts(spec, [text]) == hf_counts(pre, [text])


@pytest.mark.parametrize("name", ["Whitespace", "ByteLevel"])
def test_every_code_point_is_classified_like_hf(name):
    # Put every code point between known letters, digits, punctuation and spaces; if any one of them
    # is classified differently (letter/number/space/other, or \w vs not), some piece differs.
    # Planes 4-13 are unassigned and 15-16 are private use (uniform), so a sample of them is enough.
    spec, pre = CONFIGS[name]
    points = [*range(0xD800), *range(0xE000, 0x40000), *range(0xE0000, 0xE1000),
              *range(0x40000, sys.maxunicode + 1, 997)]
    chars = [chr(c) for c in points]
    lines = ["".join(f"a{c}1{c}!{c} {c}\n" for c in chars[i:i + 4096]) for i in range(0, len(chars), 4096)]
    assert rust_counts(spec, lines) == hf_counts(pre, lines)


def test_counter_is_independent_of_batching_and_threads():
    spec, _ = CONFIGS["ByteLevel"]
    lines = [f"line {i % 101} word{i % 7} {'é' * (i % 3)}\n" for i in range(30000)]
    one = core.WordCounter(json.dumps(spec), None, 1)
    one.feed(lines)
    many = core.WordCounter(json.dumps(spec), None, 2)
    for i in range(0, len(lines), 777):
        many.feed(lines[i:i + 777])
    assert one.words() == many.words() and len(one) == len(many)


def test_counter_rejects_non_str_lines():
    counter = core.WordCounter('{"type": "Whitespace"}')
    with pytest.raises(TypeError, match=r"lines\[1\] must be str"):
        counter.feed(["ok", b"bytes"])
