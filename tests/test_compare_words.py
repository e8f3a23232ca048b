"""The word segmentation of the ``words`` metric against Unicode's own conformance data.

UAX #29 default word boundaries, Unicode 17.0.0, no tailoring. The oracle is Unicode's
``WordBreakTest-17.0.0.txt`` (vendored in ``tests/data/unicode/``, see its README): all 1,944 cases,
through every path that segments (the core's pass, whose ASCII fast path and ``unicode-segmentation``
path are also checked one by one by the Rust unit tests, and ``words.segments``). The ``regex``
package, the tests' second oracle (the readable reference segments with it), passes the same file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import regex

from _compare_fixtures import UNICODE_LINES, training_lines
from _corpora import CORPORA
from subword import BPE, Tokenizer, _core
from subword.compare.collect import SCRIPT_LABELS
from subword.compare.words import segments

DATA = Path(__file__).parent / "data" / "unicode" / "WordBreakTest-17.0.0.txt"
ROOT = Path(__file__).resolve().parents[1]


def _cases() -> list[tuple[str, list[str]]]:
    """``(text, its segments)`` per data line: ``÷`` marks a break, ``×`` none, between hex code points."""
    out = []
    for raw in DATA.read_text(encoding="utf-8").splitlines():
        fields = raw.split("#", 1)[0].split()
        if not fields:
            continue
        text, segs, current = "", [], ""
        for field in fields:
            if field == "÷":
                if current:
                    segs.append(current)
                    current = ""
            elif field != "×":
                text += chr(int(field, 16))
                current += chr(int(field, 16))
        out.append((text, segs))
    return out


CASES = _cases()


def test_the_vendored_file_is_the_version_the_core_implements():
    header = DATA.read_text(encoding="utf-8").splitlines()[0]
    assert header == f"# WordBreakTest-{_core.WORD_BREAK_UNICODE_VERSION}.txt"
    assert len(CASES) == 1944
    docs = (ROOT / "docs" / "compare.md").read_text(encoding="utf-8")
    assert f"Unicode {_core.WORD_BREAK_UNICODE_VERSION}" in docs and "UAX #29" in docs


def test_words_segments_pass_every_case():
    failed = [(text, want, segments(text)) for text, want in CASES if segments(text) != want]
    assert not failed, failed[:3]


def test_the_pass_segments_every_case_as_unicode_says():
    # Each case as one line of a chunk: the new types come back in order of occurrence, and the first
    # occurrence of each is in the case's own line.
    collector = _core.CompareCollector([Tokenizer(BPE({"a": 0}, []))._native()], [None], [b"\0"], len(SCRIPT_LABELS))
    texts = [text for text, _ in CASES if "\n" not in text and "\r" not in text]
    new, first = collector.segment(texts, True)
    seen: set[str] = set()
    want_new, want_first = [], []
    for j, (text, segs) in enumerate((t, s) for t, s in CASES if "\n" not in t and "\r" not in t):
        for seg in segs + (["\n"] if j < len(texts) - 1 else []):
            if seg not in seen:
                seen.add(seg)
                want_new.append(seg)
                want_first.append(j)
    assert (new, list(first)) == (want_new, want_first)
    assert len(texts) > 1700


def test_the_regex_oracle_passes_the_same_file():
    pattern = regex.compile(r"(?wsV1).+?\b")
    failed = [text for text, want in CASES if pattern.findall(text) != want]
    assert not failed, [[hex(ord(c)) for c in t] for t in failed[:3]]


def test_an_apostrophe_at_a_word_start_is_a_segment_of_its_own():
    # Issue 20: the core used to copy an older `regex` tailoring that kept 'em together.
    assert segments("'em 'a ’Ère l'amour can't") == ["'", "em", " ", "'", "a", " ", "’", "Ère", " ", "l'amour", " ",
                                                        "can't"]


def test_the_pass_agrees_with_the_regex_oracle_on_real_text():
    lines = UNICODE_LINES + training_lines()
    for name in ("tinyshakespeare.txt", "gutenberg_en_20M.txt"):
        with open(CORPORA / name, encoding="utf-8", newline="") as f:
            lines += f.read(1_000_000).split("\n")[:-1]
    collector = _core.CompareCollector([Tokenizer(BPE({"a": 0}, []))._native()], [None], [b"\0"], len(SCRIPT_LABELS))
    new, _ = collector.segment(lines, True)
    assert new == list(dict.fromkeys(regex.compile(r"(?wsV1).+?\b").findall("\n".join(lines))))


def test_docs_name_the_rules():
    docs = (ROOT / "docs" / "compare.md").read_text(encoding="utf-8")
    assert re.search(r"no tailoring", docs)
