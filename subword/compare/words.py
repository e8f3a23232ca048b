"""Words for the per-word metrics: Unicode word segmentation, and each word's script and kind.

A *segment* is a span between two default word boundaries of UAX #29 ("Unicode Text Segmentation"),
Unicode 17.0.0, with no tailoring, as the Rust core finds them (the ``unicode-segmentation`` crate; see
``rust/src/compare/segment.rs``; the tests check it against Unicode's own ``WordBreakTest.txt``).
Every character of the text is in exactly one segment: words, numbers, single punctuation marks,
whitespace runs, and each CJK ideograph on its own (UAX #29 has no dictionary, so ideographs are one
segment each). A *word* is a segment that holds a letter, a mark or a digit; the rest (punctuation,
symbols, whitespace) are segments but not words. The whitespace-split variant counts maximal runs of
non-whitespace characters instead.

>>> segments("It's 3.14, naïve! 'em")
["It's", ' ', '3.14', ',', ' ', 'naïve', '!', ' ', "'", 'em']
>>> classify("naïve"), classify("3.14"), classify("  "), classify("日"), classify("!")
(('Latin', 'letters'), ('Common', 'digits'), ('Common', 'whitespace'), ('Han', 'cjk'), ('Common', 'punctuation'))
"""

from __future__ import annotations

from functools import lru_cache

import regex

__all__ = ["segments", "classify", "is_word", "SCRIPTS", "KINDS", "WHITESPACE_CODEPOINTS"]

_WORDLIKE = regex.compile(r"[\p{L}\p{M}\p{Nd}\p{Nl}\p{No}]")

#: Scripts named in the tables; a word in any other script is grouped as "Other".
SCRIPTS = (
    "Latin", "Cyrillic", "Greek", "Armenian", "Georgian", "Arabic", "Hebrew", "Syriac", "Thaana",
    "Devanagari", "Bengali", "Gurmukhi", "Gujarati", "Oriya", "Tamil", "Telugu", "Kannada", "Malayalam",
    "Sinhala", "Thai", "Lao", "Tibetan", "Myanmar", "Khmer", "Ethiopic", "Han", "Hiragana", "Katakana",
    "Hangul",
)
_SCRIPT_RES = [(name, regex.compile(rf"\p{{Script={name}}}")) for name in SCRIPTS]
_CJK = {"Han", "Hiragana", "Katakana", "Hangul"}
_LETTER = regex.compile(r"\p{L}")
_LETTER_OR_MARK = regex.compile(r"[\p{L}\p{M}]")
_NUMBER = regex.compile(r"\p{N}")

#: The kinds a segment can be, in the order the tables list them.
KINDS = ("letters", "digits", "cjk", "punctuation", "whitespace")

#: Every code point for which ``str.isspace`` holds (the whitespace-split variant splits on these);
#: listed rather than computed at import (a scan of all code points), a test checks the list.
WHITESPACE_CODEPOINTS = (
    9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 133, 160, 5760, 8192, 8193, 8194, 8195, 8196, 8197, 8198, 8199,
    8200, 8201, 8202, 8232, 8233, 8239, 8287, 12288,
)


def segments(text: str) -> list[str]:
    """The UAX #29 word segments of ``text``, in order, as the compare pass cuts each line; they
    concatenate to ``text``.

    >>> segments("a  b\\n")
    ['a', '  ', 'b', '\\n']
    """
    from subword import _core

    return [text[a:b] for a, b in _core.word_segments(text)]


def _has_alnum(segment: str) -> bool:
    return any(map(str.isalnum, segment))


@lru_cache(maxsize=1 << 18)
def is_word(segment: str) -> bool:
    """Whether a segment counts as a word (it holds a letter, mark or digit).

    >>> is_word("don't"), is_word("42"), is_word("--"), is_word(" ")
    (True, True, False, False)
    """
    if segment.isascii():  # in ASCII, the letters and digits are exactly what str.isalnum says
        return _has_alnum(segment)
    return _WORDLIKE.search(segment) is not None


@lru_cache(maxsize=1 << 18)
def classify(segment: str) -> tuple[str, str]:
    """``(script, kind)`` of a segment.

    The script is the first named script (:data:`SCRIPTS`) among its characters, "Other" for an
    unnamed one, "Common" when it has none (digits, punctuation, whitespace). The kind is
    "whitespace" (only whitespace), "cjk" (Han, kana or Hangul), "letters" (any letter or mark),
    "digits" (numbers without letters) or "punctuation" (everything else: punctuation, symbols).

    >>> classify("Привет"), classify("カタカナ"), classify("x2")
    (('Cyrillic', 'letters'), ('Katakana', 'cjk'), ('Latin', 'letters'))
    """
    if segment.isspace():
        return "Common", "whitespace"
    if segment.isascii():
        # ASCII's only letters are A-Z and a-z (script Latin), its only numbers 0-9, and it has no marks:
        # the same answers as the patterns below, without running 29 of them.
        if any(map(str.isalpha, segment)):
            return "Latin", "letters"
        return "Common", "digits" if any(map(str.isdigit, segment)) else "punctuation"
    return _classify_by_patterns(segment)


def _classify_by_patterns(segment: str) -> tuple[str, str]:
    """:func:`classify` of a segment that is not all whitespace, by the Unicode property patterns."""
    script = "Common"
    for name, pattern in _SCRIPT_RES:
        if pattern.search(segment):
            script = name
            break
    else:
        if _LETTER.search(segment):
            script = "Other"
    if script in _CJK:
        return script, "cjk"
    if _LETTER_OR_MARK.search(segment):
        return script, "letters"
    if _NUMBER.search(segment):
        return script, "digits"
    return script, "punctuation"
