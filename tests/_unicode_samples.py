"""Shared inputs for the pipeline-component tests: Unicode-rich strings and real corpus lines."""

from __future__ import annotations

import unicodedata

from hypothesis import strategies as st

from _corpora import CORPORA  # the shared corpora, or stand-ins from the built-in corpus

TRICKY = [
    "",
    " ",
    "\n",
    "\n\n\n",
    "\r\n",
    "line one\r\nline two\r\n",
    "  leading and trailing  ",
    "tab\tseparated\tvalues",
    "Hello, world! It's 2026; we'll see.",
    "don't I'm you're they've she'd we'll IT'S",
    "naïve café résumé Ångström",
    "e\u0301 a\u0300\u0301 combining: q\u0323\u0307",
    "\u1e9b\u0323 \u212b \ufb01 \u2168 \u2460 \u00bd",  # compatibility forms
    "中文字符，日本語のテキスト、한국어 텍스트。",
    "emoji 😀🎉 ZWJ 👨\u200d👩\u200d👧\u200d👦 flag 🇫🇷 skin 👍🏽 keycap 1\ufe0f\u20e3",
    "\u200b\u200c\u200d zero-width \ufeff bom",
    "control \x00\x01\x07\x1b[31m\x7f\x85 chars",
    "العربية: مَرْحَبًا بِالعَالَم ١٢٣",
    "עברית: שָׁלוֹם עוֹלָם",
    "mixed RTL \u202eevil\u202c and LTR",
    "nbsp\u00a0here and ideographic\u3000space and thin\u2009space",
    "\u3000\u3000x",
    "ΣΑΣ ΟΔΥΣΣΕΥΣ İstanbul ẞ ǅ",
    "देवनागरी हिन्दी",
    "numbers 3.14 1,000,000 ² ٣ ⅷ",
    "   \n  \n",
    "a" * 300,
    "x 'll 's 're",
]


def corpus_lines(name: str, limit: int, max_bytes: int = 2_000_000) -> list[str]:
    """Up to ``limit`` lines (with their line endings) spread across the start of a corpus, or [] if absent."""
    path = CORPORA / name
    if not path.exists():
        return []
    with path.open("r", encoding="utf-8") as fh:
        lines = fh.read(max_bytes).splitlines(keepends=True)
    step = max(1, len(lines) // limit)
    return lines[::step][:limit]


def _assigned(c: str) -> bool:
    # Restrict generated text to code points assigned in Python's Unicode database: the reference uses
    # `unicodedata`, and chars assigned by a later Unicode version are the one legitimate source of drift.
    return unicodedata.category(c) not in ("Cn", "Cs")


ASSIGNED_TEXT = st.text(st.characters(blacklist_categories=("Cs",)).filter(_assigned), max_size=40)

# Heavier on the interesting classes: spaces of all kinds, marks, apostrophes, digits, emoji, CJK.
_SPECIAL_CHARS = list(" \t\n\r\x0b\x0c\x85\xa0\u1680\u2000\u2028\u3000'sdtlmrve\u0301\u0308\u05b0\u064e"
                      "\u200d\ufe0f😀👨中é1٣²")
MIXED_TEXT = st.lists(st.one_of(st.sampled_from(_SPECIAL_CHARS), ASSIGNED_TEXT), max_size=12).map("".join)
