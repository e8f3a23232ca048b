"""Rewrite a tiktoken (fancy-regex) split pattern into the Oniguruma pattern HF reads the same way.

A tiktoken file's pattern runs on fancy-regex (over the Rust ``regex`` crate); a ``tokenizer.json`` pattern on
Oniguruma (Ruby syntax). To save a tiktoken-loaded tokenizer as ``tokenizer.json`` the pattern must be
spelled so that Oniguruma finds the same matches. Where the two read a construct differently it is
rewritten; where no rewrite is known to be exact the conversion is refused (never a silently different
tokenizer). The rules:

=========================  ==============================  =========================================
fancy-regex                Oniguruma (Ruby syntax)          written as
=========================  ==============================  =========================================
``X{n,m}+`` possessive     ``(?:X{n,m})+`` (repeated)       ``(?>X{n,m})`` (atomic = possessive)
``^`` / ``$`` text         line anchors                     ``\\A`` / ``\\z``
``\\w`` Alphabetic, M, Nd,  no Join_Control, + ``²³¹¼½¾``     the explicit property class
Pc, Join_Control
``\\d`` = ``\\p{Nd}``         the same                        ``\\p{Nd}``
``\\pL``, ``\\p{gc=L}``       ``\\p{L}`` only                  ``\\p{L}``
``\\u{..}``, ``\\U..``        not Ruby syntax                  ``\\x{..}``
``(?P<n>..)``              ``(?<n>..)``                     ``(?<n>..)``
=========================  ==============================  =========================================

Refused: ``\\b`` / ``\\B`` / ``\\<`` / ``\\>`` (word boundaries on different word classes), ``\\W`` or ``\\D``
inside a bracket class, class differences ``--`` / symmetric ``~~``, the inline flags ``m``, ``s``, ``u``,
``U``, ``R``, and case-insensitive parts whose text Oniguruma's multi-char case folding could read
differently (a char such as ``ß`` whose fold is several chars, or two letters that are such a fold, like
``ss``, or a property or ``\\w``-like class under ``(?i)``). ``\\s``, ``\\p{..}`` and ``.`` read the same (``.`` is any
char but ``\\n`` in both); only chars assigned in a newer Unicode version than one engine knows differ.

>>> oniguruma_spelling(r"\\p{N}{1,3}+|\\s+$")
'(?>\\\\p{N}{1,3})|\\\\s+\\\\z'
>>> oniguruma_spelling(r"\\bx")
Traceback (most recent call last):
...
subword.formats.fancy_to_oniguruma.NoExactSpelling: \\b: a word boundary (fancy-regex's word chars are not Oniguruma's)
"""

from __future__ import annotations

import functools
import re
import sys

from subword.errors import FormatError

__all__ = ["oniguruma_spelling", "NoExactSpelling"]


class NoExactSpelling(FormatError):
    """The pattern has a construct Oniguruma cannot be made to read as fancy-regex does."""


_WORD = r"\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}"
_GC_KEYS = ("gc=", "general_category=", "sc=", "script=")
_INTERVAL = re.compile(r"\{\d+(?:,\d*)?\}")


@functools.lru_cache(maxsize=1)
def _multi_char_folds() -> frozenset[str]:
    """Every string that is the full case fold of one char and longer than one char (``ss`` of ``ß``)."""
    return frozenset(f for f in (chr(c).casefold() for c in range(sys.maxunicode + 1)
                                 if not 0xD800 <= c < 0xE000) if len(f) > 1)


def _folds_to_many(c: str) -> bool:
    return len(c.casefold()) > 1 or len(c.lower()) > 1 or len(c.upper()) > 1


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str, int, str | None]:
    """Rewrite the escape at ``pattern[i]`` (a backslash); returns (text, next index, literal char or None)."""
    if i + 1 >= len(pattern):
        raise NoExactSpelling("a trailing backslash")
    c = pattern[i + 1]
    if c in "bB<>":
        raise NoExactSpelling(f"\\{c}: a word boundary (fancy-regex's word chars are not Oniguruma's)")
    if c == "w":
        return (_WORD if in_class else f"[{_WORD}]"), i + 2, None
    if c == "W":
        if in_class:
            raise NoExactSpelling("\\W inside a bracket class")
        return f"[^{_WORD}]", i + 2, None
    if c == "d":
        return r"\p{Nd}", i + 2, None
    if c == "D":
        if in_class:
            raise NoExactSpelling("\\D inside a bracket class")
        return r"\P{Nd}", i + 2, None
    if c in "zA":
        return pattern[i:i + 2], i + 2, None
    if c in "pP":
        if i + 2 < len(pattern) and pattern[i + 2] == "{":
            end = pattern.find("}", i + 3)
            if end < 0:
                raise NoExactSpelling("an unclosed \\p{")
            name = pattern[i + 3:end].strip()
            negate = name.startswith("^")
            name = name.lstrip("^")
            low = name.lower().replace(" ", "").replace("_", "")
            for key in _GC_KEYS:
                k = key.replace("_", "")
                if low.startswith(k) or low.startswith(k.replace("=", ":")):
                    name = name.split("=", 1)[-1].split(":", 1)[-1]
                    break
            else:
                if "=" in name or ":" in name:
                    raise NoExactSpelling(f"the property \\{c}{{{pattern[i + 3:end]}}}")
            letter = "P" if (c == "P") != negate else "p"
            return f"\\{letter}{{{name}}}", end + 1, None
        if i + 2 < len(pattern):
            return f"\\{c}{{{pattern[i + 2]}}}", i + 3, None
        raise NoExactSpelling("a truncated \\p")
    if c in "uU" or c == "x":
        if i + 2 < len(pattern) and pattern[i + 2] == "{":
            end = pattern.find("}", i + 3)
            if end < 0:
                raise NoExactSpelling(f"an unclosed \\{c}{{")
            digits = pattern[i + 3:end]
            return f"\\x{{{digits}}}", end + 1, chr(int(digits, 16))
        width = {"x": 2, "u": 4, "U": 8}[c]
        digits = pattern[i + 2:i + 2 + width]
        if len(digits) != width or not all(d in "0123456789abcdefABCDEF" for d in digits):
            raise NoExactSpelling(f"the escape \\{c}{digits}")
        return f"\\x{{{digits}}}", i + 2 + width, chr(int(digits, 16))
    if c.isascii() and c.isalnum() and c not in "sSntrfveaAzZ0123456789":
        raise NoExactSpelling(f"the escape \\{c}")
    if c in "Z":
        raise NoExactSpelling("\\Z")
    literal = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a", "e": "\x1b"}.get(c)
    if literal is None and not (c.isascii() and c.isalnum()):
        literal = c
    return pattern[i:i + 2], i + 2, literal


def _class(pattern: str, i: int, folding: bool) -> tuple[str, int]:
    """Rewrite the bracket class starting at ``pattern[i] == "["``; returns (text, index after it).

    Under ``(?i)`` a class may hold only literal chars and ranges of them none of which folds to several
    chars (a class is one char in both engines; Oniguruma expands multi-char folds of such chars only).
    """
    out = ["["]
    j = i + 1
    if j < len(pattern) and pattern[j] == "^":
        out.append("^")
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        out.append("\\]")  # a leading ] is a literal in both; spelled escaped
        j += 1
    previous: str | None = None  # the last literal char, for ranges
    while j < len(pattern):
        c = pattern[j]
        if c == "]":
            out.append("]")
            return "".join(out), j + 1
        if c == "\\":
            text, j, literal = _escape(pattern, j, in_class=True)
            if folding and (literal is None or _folds_to_many(literal)):
                raise NoExactSpelling(f"the class item {text} under (?i) (Oniguruma folds some chars to several)")
            out.append(text)
            previous = literal
        elif c == "[":
            if pattern.startswith("[:", j):
                raise NoExactSpelling("a POSIX class (ASCII in the regex crate, Unicode in Oniguruma)")
            text, j = _class(pattern, j, folding)
            out.append(text)
            previous = None
        elif pattern.startswith("--", j) or pattern.startswith("~~", j):
            raise NoExactSpelling(f"the class operator {pattern[j:j + 2]}")
        elif pattern.startswith("&&", j):
            out.append("&&")
            j += 2
            previous = None
        elif c == "-" and previous is not None and j + 1 < len(pattern) and pattern[j + 1] != "]":
            if pattern[j + 1] == "\\":
                text, k, high = _escape(pattern, j + 1, in_class=True)
            else:
                text, k, high = pattern[j + 1], j + 2, pattern[j + 1]
            if high is None:
                raise NoExactSpelling(f"the class range {previous}-{text}")
            if folding and any(_folds_to_many(chr(x)) for x in range(ord(previous), ord(high) + 1)):
                raise NoExactSpelling(f"the class range {previous!r}-{high!r} under (?i) holds a char whose case "
                                      "fold is several chars")
            out.append("-" + text)
            j = k
            previous = None
        else:
            if folding and _folds_to_many(c):
                raise NoExactSpelling(f"{c!r} under (?i) (its case fold is several chars in Oniguruma)")
            out.append(c)
            previous = c
            j += 1
    raise NoExactSpelling("an unclosed bracket class")


def _group_end(tokens: list[str], k: int) -> int:
    """Index of the token that opens the group closed by ``tokens[k] == ")"``."""
    depth = 0
    for j in range(k, -1, -1):
        if tokens[j] == ")":
            depth += 1
        elif tokens[j].startswith("("):
            depth -= 1
            if depth == 0:
                return j
    raise NoExactSpelling("an unbalanced parenthesis")


def oniguruma_spelling(pattern: str) -> str:
    """The Oniguruma pattern that finds the same matches as fancy-regex finds for ``pattern``.

    Args:
        pattern: A tiktoken split pattern (fancy-regex syntax).

    Raises:
        NoExactSpelling: a construct with no known exact rewrite (the message names it).

    >>> oniguruma_spelling(r"'(?i:[sdmt]|ll)")
    "'(?i:[sdmt]|ll)"
    >>> oniguruma_spelling(r"(?i:ss)")
    Traceback (most recent call last):
    ...
    subword.formats.fancy_to_oniguruma.NoExactSpelling: 'ss' under (?i) (the case fold of one char, which Oniguruma matches)
    >>> oniguruma_spelling(r"(?i:'s|'t|'re)|\\p{L}+")
    "(?i:'s|'t|'re)|\\\\p{L}+"
    """
    tokens: list[str] = []  # one atom, group bracket, quantifier or operator each
    literal_run: list[str] = []  # literal chars in a row under (?i), for the multi-char fold check
    folding_stack: list[bool] = [False]
    i = 0
    while i < len(pattern):
        c = pattern[i]
        folding = folding_stack[-1]
        if c == "\\":
            text, i, literal = _escape(pattern, i, in_class=False)
            tokens.append(text)
            _fold_check(literal, literal_run, folding)
        elif c == "[":
            text, i = _class(pattern, i, folding)
            tokens.append(text)
            literal_run.clear()
        elif c == "(":
            i, opener, fold = _open_group(pattern, i, folding)
            tokens.append(opener)
            folding_stack.append(fold)
            literal_run.clear()
        elif c == ")":
            if len(folding_stack) == 1:
                raise NoExactSpelling("an unbalanced parenthesis")
            folding_stack.pop()
            tokens.append(")")
            i += 1
            literal_run.clear()
        elif c == "{" and _INTERVAL.match(pattern, i):
            m = _INTERVAL.match(pattern, i)
            assert m is not None
            i = m.end()
            if i < len(pattern) and pattern[i] == "+":
                # Possessive interval: make the atom and its interval atomic.
                if not tokens:
                    raise NoExactSpelling("a quantifier with nothing before it")
                start = _group_end(tokens, len(tokens) - 1) if tokens[-1] == ")" else len(tokens) - 1
                atom = "".join(tokens[start:])
                del tokens[start:]
                tokens.append(f"(?>{atom}{m.group()})")
                i += 1
            else:
                tokens.append(m.group())
            literal_run.clear()
        elif c == "^":
            tokens.append(r"\A")
            i += 1
        elif c == "$":
            tokens.append(r"\z")
            i += 1
        else:
            tokens.append(c)
            i += 1
            if c in "|*+?{}.":
                literal_run.clear()
            else:
                _fold_check(c, literal_run, folding)
    if len(folding_stack) != 1:
        raise NoExactSpelling("an unclosed group")
    return "".join(tokens)


def _open_group(pattern: str, i: int, folding: bool) -> tuple[int, str, bool]:
    """Rewrite a group opener at ``pattern[i] == "("``: (index after it, its text, folding inside)."""
    if not pattern.startswith("(?", i):
        return i + 1, "(", folding
    rest = pattern[i + 2:]
    if rest.startswith("P<"):
        return i + 3, "(?<", folding
    if rest[:1] in ("=", "!", ">") or rest.startswith(("<=", "<!")):
        width = 3 if rest[:1] in ("=", "!", ">") else 4
        return i + width, pattern[i:i + width], folding
    if rest.startswith("<") or rest.startswith("P="):
        raise NoExactSpelling(f"the group {pattern[i:i + 4]}...")
    m = re.match(r"([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])", rest)
    if m is None:
        raise NoExactSpelling(f"the group {pattern[i:i + 4]}...")
    on, off = m.group(1), m.group(2) or ""
    bad = sorted(set(on + off) - set("ix"))
    if bad:
        raise NoExactSpelling(f"the inline flag {bad[0]}")
    fold = (folding or "i" in on) and "i" not in off
    if m.group(3) == ")":
        raise NoExactSpelling("an inline flag group without a body, (?i) (its scope rules differ)")
    return i + 2 + m.end(), pattern[i:i + 2 + m.end()], fold


def _fold_check(literal: str | None, run: list[str], folding: bool) -> None:
    """Refuse literal text under (?i) that Oniguruma's multi-char case folding could read differently."""
    if not folding:
        run.clear()
        return
    if literal is None:
        raise NoExactSpelling("an escape class under (?i) (Oniguruma folds some chars to several)")
    if _folds_to_many(literal):
        raise NoExactSpelling(f"{literal!r} under (?i) (its case fold is several chars in Oniguruma)")
    run.append(literal.casefold())
    text = "".join(run)
    for n in (2, 3):
        if len(text) >= n and text[-n:] in _multi_char_folds():
            raise NoExactSpelling(f"{text[-n:]!r} under (?i) (the case fold of one char, which Oniguruma matches)")
