"""The readable reference of ``subword compare``'s pass: the test oracle of the Rust core, small inputs only.

Plain Python, one line and one token at a time, written from ``docs/compare.md`` rather than from the
core: the core (``rust/src/compare/``, driven by ``subword.compare.collect``) must give the same
integers. It segments with the ``regex`` package's ``(?w)`` word boundaries (``regex`` >= 2026.11 passes
all of Unicode's ``WordBreakTest.txt``, 17.0.0 and 18.0.0), takes the tokens from ``encode`` and the
round trip from ``decode``, and builds the vocabulary table from ``get_vocab()`` token by token.

- :func:`vocab_table`: what each id stands for (surface and core bytes, characters, byte token).
- :func:`reference_pass`: the per-line counts, the segment types and the per-block type counts.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import regex

from subword.compare.vocab import is_byte_level, spelling
from subword.compare.words import classify, is_word
from subword.pre_tokenizers import bytes_to_unicode

_SEGMENT = regex.compile(r"(?wsV1).+?\b")
_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_BYTE_OF_CHAR = {c: b for b, c in enumerate(bytes_to_unicode())}


# ==== the vocabulary table ====


@dataclass
class Table:
    """Per id: the bytes it stands for, without word-start markers, its characters, byte token or not."""

    surface: dict[int, bytes]
    core: dict[int, bytes]
    char_length: dict[int, int]
    byte_token: dict[int, bool]
    special: dict[int, bool]
    vocab_size: int
    unk: int | None


def unk_id(tok: Any) -> int | None:
    """The id of the unknown token, or ``None`` when the model has none."""
    model = tok.model
    if getattr(model, "unk_id", None) is not None and not hasattr(model, "vocab"):
        return int(model.unk_id)
    token = getattr(model, "unk_token", None)
    return None if token is None else tok.token_to_id(token)


def vocab_table(tok: Any) -> Table:
    """The table of ``tok`` from ``tok.get_vocab()``, token by token (see ``subword/compare/vocab.py``)."""
    vocab = tok.get_vocab(True)
    added = {i: t for i, t in tok.added_tokens}
    byte_level, metaspace, prefix, byte_pieces = spelling(tok)
    t = Table({}, {}, {}, {}, {}, len(vocab), unk_id(tok))
    for token, i in vocab.items():
        t.byte_token[i] = False
        t.special[i] = False
        if i in added:
            t.surface[i] = t.core[i] = token.encode("utf-8")
            t.char_length[i] = len(token)
            t.special[i] = bool(getattr(added[i], "special", False))
            continue
        text, continuing = token, False
        if prefix and text.startswith(prefix) and len(text) > len(prefix):
            text, continuing = text[len(prefix):], True
        piece = _BYTE_PIECE.fullmatch(text)
        if piece and (byte_pieces or not byte_level):
            raw = bytes([int(piece.group(1), 16)])
            t.byte_token[i] = True
            length = 1
        elif byte_level:
            if all(c in _BYTE_OF_CHAR for c in text):
                raw = bytes(_BYTE_OF_CHAR[c] for c in text)
            else:  # a character outside the byte alphabet: the token is its own UTF-8
                raw = text.encode("utf-8")
            try:
                length = len(raw.decode("utf-8"))
            except UnicodeDecodeError:
                t.byte_token[i] = True
                length = len(raw.decode("utf-8", errors="replace"))
        else:
            text = text.replace(metaspace or "\u2581", " ")
            raw = text.encode("utf-8")
            length = len(text)
        t.surface[i] = raw
        t.core[i] = raw if continuing or not raw.startswith(b" ") or len(raw) == 1 else raw[1:]
        t.char_length[i] = length
    return t


# ==== the pass ====


@dataclass
class TokenizerCounts:
    """One tokenizer's counts: per line, unless said otherwise."""

    tokens: list[int] = field(default_factory=list)
    continued: list[int] = field(default_factory=list)
    unk_chars: list[int] = field(default_factory=list)
    byte_tokens: list[int] = field(default_factory=list)
    lossless: list[bool] = field(default_factory=list)
    boundaries: list[int] = field(default_factory=list)
    #: script -> per line: tokens attributed to words of that script.
    script_tokens: dict[str, list[int]] = field(default_factory=dict)
    #: segment type -> tokens attributed to it.
    type_tokens: Counter = field(default_factory=Counter)
    #: per block of lines: id -> count.
    blocks: list[Counter] = field(default_factory=list)
    keys: list[set[int]] = field(default_factory=list)


@dataclass
class PassCounts:
    chars: list[int]
    bytes: list[int]
    words: list[int]
    ws_words: list[int]
    script_words: dict[str, list[int]]
    #: segment types in order of first occurrence, with their count and first line.
    types: list[str]
    type_count: dict[str, int]
    type_first_line: dict[str, int]
    tokenizers: list[TokenizerCounts]
    #: (a, b) -> per line: boundaries both have.
    shared: dict[tuple[int, int], list[int]]


def _segments(lines: list[str]) -> list[list[tuple[int, int, str]]]:
    """Per line, its segments ``(start, end, text)`` in line offsets; the line feed after a line (``\\r\\n``
    when the line ends with ``\\r``) is the line's last segment, and starts at its length (or one before)."""
    text = "\n".join(lines)
    starts, at = [], 0
    for line in lines:
        starts.append(at)
        at += len(line) + 1
    out: list[list[tuple[int, int, str]]] = [[] for _ in lines]
    at = 0
    for seg in _SEGMENT.findall(text):
        j = bisect.bisect_right(starts, at) - 1
        out[j].append((at - starts[j], at - starts[j] + len(seg), seg))
        at += len(seg)
    return out


def _keys(line: str, offsets: list[tuple[int, int]]) -> set[int]:
    """Internal boundaries, whitespace transparent: the non-space characters before each token edge."""
    ns = [0]
    for ch in line:
        ns.append(ns[-1] + (not ch.isspace()))
    return {ns[min(o, len(line))] for s, e in offsets for o in (s, e)} - {0, ns[-1]}


def reference_pass(tokenizers: list[Any], lines: list[str], block_lines: int) -> PassCounts:
    """Every count of the pass over ``lines`` (tokenizers already without padding and truncation)."""
    segs = _segments(lines)
    types: list[str] = []
    type_count: Counter = Counter()
    first_line: dict[str, int] = {}
    words, scripts_of = [], {}
    script_words: dict[str, list[int]] = {}
    for j, line_segs in enumerate(segs):
        n_words = 0
        for _, _, seg in line_segs:
            if seg not in first_line:
                first_line[seg] = j
                types.append(seg)
            type_count[seg] += 1
            if is_word(seg):
                n_words += 1
                script = classify(seg)[0]
                scripts_of[seg] = script
                script_words.setdefault(script, [0] * len(lines))[j] += 1
        words.append(n_words)
    out = PassCounts([len(s) for s in lines], [len(s.encode("utf-8", "surrogatepass")) for s in lines], words,
                     [len(s.split()) for s in lines], script_words, types, dict(type_count), first_line, [], {})

    for tok in tokenizers:
        table = vocab_table(tok)
        t = TokenizerCounts()
        for j, line in enumerate(lines):
            enc = tok.encode(line, add_special_tokens=False)
            ids, offsets = enc.ids, enc.offsets
            t.tokens.append(len(ids))
            t.unk_chars.append(sum(e - s for i, (s, e) in zip(ids, offsets) if i == table.unk))
            t.byte_tokens.append(sum(table.byte_token.get(i, False) for i in ids))
            t.lossless.append(tok.decode(ids, skip_special_tokens=False) == line)
            # Attribution: each token goes to the segment holding its last character.
            line_segs = segs[j]
            seg_starts = [s for s, _, _ in line_segs]
            for s, e in offsets:
                p = min(max(s, e - 1), max(len(line) - 1, 0))
                if line_segs:
                    seg = line_segs[max(bisect.bisect_right(seg_starts, p) - 1, 0)][2]
                else:  # the input's last line, empty: the line feed before it
                    seg = segs[j - 1][-1][2]
                t.type_tokens[seg] += 1
                if seg in scripts_of:
                    t.script_tokens.setdefault(scripts_of[seg], [0] * len(lines))[j] += 1
            # Continued words: 2 or more tokens of non-zero width overlap the word.
            t.continued.append(sum(
                1 for ws, we, seg in line_segs if is_word(seg)
                and sum(1 for s, e in offsets if e > s and s < we and e > ws) >= 2))
            keys = _keys(line, offsets)
            t.keys.append(keys)
            t.boundaries.append(len(keys))
            if j % block_lines == 0:
                t.blocks.append(Counter())
            t.blocks[-1].update(ids)
        out.tokenizers.append(t)
    for a in range(len(tokenizers)):
        for b in range(a + 1, len(tokenizers)):
            ka, kb = out.tokenizers[a].keys, out.tokenizers[b].keys
            out.shared[(a, b)] = [len(x & y) for x, y in zip(ka, kb)]
    return out


def is_byte_level_tokenizer(tok: Any) -> bool:
    """Re-exported for the tests: whether ``tok`` spells tokens in the GPT-2 byte alphabet."""
    return is_byte_level(tok)
