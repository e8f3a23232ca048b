"""The terminal view of a comparison document: metric tables, then sample lines segmented by each tokenizer.

Tables: one column per tokenizer, the best value of a row marked ``*``; pairwise differences say whether
they are outside the bootstrap noise. Samples: each tokenizer's tokens in alternating colours (separated by
``│`` without colour), whitespace shown as ``·`` ``→`` ``↵``, byte pieces as ``⟨E2⟩``, and a ``^`` line
under the text where the tokenizers' boundaries disagree.

Colour is the caller's choice (:func:`use_color` gives the usual rule: a terminal, and no ``NO_COLOR``);
the marks that carry meaning (``*``, ``^``, ``≈``) are there in plain text too.

>>> doc = {"inputs": {"lines": 1}, "tokenizers": [{"name": "a", "metrics": {"tokens": {"value": 3}}}],
...        "best": {"tokens": "a"}, "samples": []}
>>> print(render_terminal(doc, color=False, show=0).splitlines()[4])
tokens   3 *
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, TextIO

from subword.compare._format import (STRUCTURED, METRICS, display_width, format_ci, format_delta, format_value,
                                     metric_info, shown_significant, structured)
from subword.compare.samples import visible

__all__ = ["render_terminal", "use_color"]

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_DIM = "\x1b[2m"
_GREEN = "\x1b[32m"
_RED = "\x1b[31m"
_YELLOW = "\x1b[33m"
# Two light backgrounds with a dark foreground: readable on dark and light terminals alike.
_TOKEN_COLOURS = ("\x1b[30;48;5;153m", "\x1b[30;48;5;223m")
_BYTE_PIECE = re.compile(r"⟨[0-9A-F]{2}⟩")


def use_color(stream: TextIO | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether to colour output for ``stream``: it is a terminal and ``NO_COLOR`` is unset or empty.

    Args:
        stream: The output stream (default ``sys.stdout``).
        environ: The environment (default ``os.environ``).

    >>> import io
    >>> use_color(io.StringIO(), {})
    False
    """
    import sys

    environ = os.environ if environ is None else environ
    if environ.get("NO_COLOR"):
        return False
    stream = sys.stdout if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if self.color and text else text


def _pad(text: str, width: int, plain: str | None = None, right: bool = False) -> str:
    """``text`` padded to ``width`` columns; ``plain`` is its uncoloured form, used to measure it."""
    gap = " " * max(0, width - display_width(plain if plain is not None else text))
    return gap + text if right else text + gap


def _table(rows: list[list[tuple[str, str]]], right_from: int = 1) -> list[str]:
    """Align cells given as ``(shown, plain)`` pairs; columns from ``right_from`` on are right-aligned."""
    widths = [max(display_width(row[c][1]) for row in rows if c < len(row)) for c in range(max(map(len, rows)))]
    out = []
    for row in rows:
        cells = [_pad(shown, widths[c], plain, right=c >= right_from) for c, (shown, plain) in enumerate(row)]
        out.append("   ".join(cells).rstrip())
    return out


# ==== sections ====


def _header(doc: dict[str, Any]) -> str:
    inputs = doc.get("inputs", {})
    names = [t.get("name", "?") for t in doc.get("tokenizers", [])]
    files = inputs.get("files") or []
    where = ", ".join(str(f.get("path", "?")) for f in files[:3]) + (" …" if len(files) > 3 else "")
    parts = [f"{inputs[k]:,} {k if inputs[k] != 1 else k[:-1]}" for k in ("lines", "words", "chars", "bytes")
             if isinstance(inputs.get(k), int)]
    head = f"Comparing {len(names)} tokenizer{'s' * (len(names) != 1)}: {', '.join(names)}"
    body = f"Input: {where or 'standard input'}" + (f" ({', '.join(parts)})" if parts else "")
    return head + "\n" + body


def _metric_rows(doc: dict[str, Any], style: _Style, max_with_ci: int = 3) -> list[str]:
    toks = doc.get("tokenizers", [])
    with_ci = len(toks) <= max_with_ci  # beyond that the table gets wider than a terminal
    best = doc.get("best", {}) or {}
    names = [t.get("name", "?") for t in toks]
    seen: list[str] = [m for m in METRICS if any(m in t.get("metrics", {}) for t in toks)]
    for t in toks:
        seen += [m for m in t.get("metrics", {}) if m not in seen and m not in STRUCTURED]
    rows: list[list[tuple[str, str]]] = [[("", "")] + [(style(_BOLD, n), n) for n in names]]
    if any("vocab_size" in t for t in toks):
        cells = []
        for t in toks:
            text = f"{t.get('kind', '')} {t['vocab_size']:,}".strip() if isinstance(t.get("vocab_size"), int) else "—"
            cells.append((text, text))
        rows.append([("vocab", "vocab")] + cells)
    for m in seen:
        label = metric_info(m).label
        row = [(label, label)]
        for t in toks:
            entry = t.get("metrics", {}).get(m)
            entry = entry if isinstance(entry, dict) else {"value": entry}
            value = format_value(m, entry.get("value"))
            ci = format_ci(m, entry.get("ci")) if with_ci else ""
            mark = " *" if best.get(m) is not None and best.get(m) == t.get("name") else "  "
            plain = value + (f" ({ci})" if ci else "") + mark
            shown = (style(_BOLD + _GREEN, value) if mark.strip() else value) + (
                " " + style(_DIM, f"({ci})") if ci else "") + (style(_GREEN, mark) if mark.strip() else mark)
            row.append((shown, plain))
        rows.append(row)
    lines = _table(rows)
    lines.append(style(_DIM, "* best in the row; " + ("(lo–hi): 95% block-bootstrap interval" if with_ci else
                                                     "intervals left out to fit (see --json or --html)")))
    return lines


def _pairwise(doc: dict[str, Any], style: _Style, per_table: int = 3) -> list[str]:
    pairs = [p for p in doc.get("pairwise", []) or [] if isinstance(p, dict)]
    out: list[str] = []
    for pair in pairs:
        a, b = pair.get("a", "?"), pair.get("b", "?")
        f1, p, r = (pair.get(k) for k in ("boundary_f1", "boundary_precision", "boundary_recall"))
        bits = []
        if _number(f1):
            ci = pair.get("boundary_f1_ci")
            bits.append(f"boundary F1 {f1:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if _pair(ci) else "")
                        + (f" (P {p:.3f}, R {r:.3f})" if _number(p) and _number(r) else ""))
        if _number(pair.get("vocab_jaccard")):
            bits.append(f"vocabulary Jaccard {pair['vocab_jaccard']:.3f}")
        if isinstance(pair.get("unique_a_count"), int) and isinstance(pair.get("unique_b_count"), int):
            bits.append(f"{pair['unique_a_count']:,} tokens only in {a}, {pair['unique_b_count']:,} only in {b}")
        out.append(style(_BOLD, f"{a} vs {b}") + (": " + "; ".join(bits) if bits else ""))
    # The differences: one row per metric, one column per pair (a few pairs per table, to stay narrow).
    with_diffs = [p for p in pairs if isinstance(p.get("differences"), dict) and p["differences"]]
    for first in range(0, len(with_diffs), per_table):
        chunk = with_diffs[first:first + per_table]
        metrics = [m for m in METRICS if any(m in p["differences"] for p in chunk)]
        metrics += [m for p in chunk for m in p["differences"] if m not in metrics]
        head = [("  difference [95% CI]", "  difference [95% CI]")]
        head += [(style(_BOLD, t), t) for t in (f"{p.get('a', '?')} − {p.get('b', '?')}" for p in chunk)]
        rows = [head]
        for m in metrics:
            label = "  " + metric_info(m).label
            row = [(label, label)]
            for p in chunk:
                diff = p["differences"].get(m)
                if not isinstance(diff, dict):
                    row.append(("—  ", "—  "))
                    continue
                delta = format_delta(m, diff)
                ci = diff.get("ci")
                if shown_significant(m, diff):
                    row.append((style(_YELLOW, delta) + "  ", delta + "  "))
                elif not (isinstance(ci, (list, tuple)) and len(ci) == 2 and all(_number(x) for x in ci)):
                    row.append((delta + "  ", delta + "  "))  # no interval (MB/s: one timed run): no verdict
                else:
                    row.append((style(_DIM, delta + " ≈"), delta + " ≈"))
            rows.append(row)
        out.append("")
        out += _table(rows)
    if with_diffs:
        out.append(style(_DIM, "≈ within noise: the 95% block-bootstrap interval contains 0 (or the difference prints "
                               "as 0); the others are significant"))
    return out


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _pair(x: Any) -> bool:
    return isinstance(x, (list, tuple)) and len(x) == 2 and all(_number(v) for v in x)


def _segmentation(groups: Any, mean: Any = None, limit: int = 36) -> str:
    """A word's tokens as decoded text, ``│`` between them (``⟨E2⟩`` a byte piece, ``·`` a space), ``∅`` for
    none; a piece that took several tokens to make whole characters is followed by ``×n``; ``(avg x)`` when
    other occurrences take another number of tokens than the one shown (``mean``). Cut at ``limit``."""
    if not isinstance(groups, (list, tuple)):
        return "—"
    parts = [str(g.get("display", "")) + (f"×{g['tokens']}" if g.get("tokens", 1) > 1 else "") for g in groups
             if isinstance(g, dict)]
    text = "│".join(parts) or "∅"
    shown = sum(g.get("tokens", 1) for g in groups if isinstance(g, dict))
    avg = f" (avg {mean:.2f})" if _number(mean) and f"{mean:.2f}" != f"{shown:.2f}" else ""
    if display_width(text + avg) > limit:
        text = text[:max(1, limit - display_width(avg) - 1)] + "…"
    return text + avg


def _attribution(doc: dict[str, Any], style: _Style, top: int = 8) -> list[str]:
    out: list[str] = []
    for att in doc.get("attribution", []) or []:
        a, b = att.get("a", "?"), att.get("b", "?")
        words = att.get("words") or []
        if not words:
            continue
        out.append(style(_BOLD, f"Words behind the token-count gap, {a} − {b}") + f" (top {min(top, len(words))})")
        net, more_a, more_b = att.get("net"), att.get("more_in_a"), att.get("more_in_b")
        if all(_number(x) for x in (net, more_a, more_b)):
            out.append(f"  {a} − {b} = {format_value('tokens', net, signed=True)} tokens: "
                       f"{format_value('tokens', more_a, signed=True)} from words where {a} needs more tokens, "
                       f"{format_value('tokens', more_b, signed=True)} from words where {b} does")
        rows = [[(h, h) for h in ("  word", "count", a, b, "contribution", "cumulative")]]
        for w in words[:top]:
            word = "  " + visible(str(w.get("word", "")))
            if display_width(word) > 30:
                word = word[:29] + "…"
            cells = [word, f"{w.get('count', 0):,}", _segmentation(w.get("display_a"), w.get("tokens_a")),
                     _segmentation(w.get("display_b"), w.get("tokens_b")),
                     format_value("tokens", w.get("contribution"), signed=True),
                     format_value("lossless_lines", w.get("cumulative_share"))]
            rows.append([(c, c) for c in cells])
        out += _table(rows, right_from=4)
        out.append(style(_DIM, f"  contribution: count × (tokens under {a} − under {b}), per occurrence; cumulative: "
                               "the share of all per-word differences, either sign, down to this row; "
                               "│ between the tokens of its first occurrence, ×n: n tokens make that piece, ∅: no token ends in "
                               "the word (dropped, or joined to the next word's first token), avg: tokens per "
                               "occurrence over all of them"))
        groups = att.get("by_group") or []
        if groups:
            parts = [f"{g.get('script', '?')}/{g.get('kind', '?')} {format_value('tokens', g.get('contribution'), signed=True)}"
                     for g in groups[:6]]
            out.append(style(_DIM, "  by script/kind: " + ", ".join(parts)))
    return out


def _window(text: str, at: Any, radius: int = 30) -> str:
    """``text`` around char ``at`` (``…`` where cut), whitespace made visible."""
    if not isinstance(at, int) or len(text) <= 2 * radius:
        return visible(text)
    start, end = max(0, at - radius), min(len(text), at + radius)
    return ("…" if start else "") + visible(text[start:end]) + ("…" if end < len(text) else "")


def _gold(doc: dict[str, Any], style: _Style) -> list[str]:
    gold = doc.get("gold")
    if not gold:
        return []
    rows = [[("  tokenizer", "  tokenizer"), ("precision", "precision"), ("recall", "recall"), ("F1", "F1")]]
    for name, prf in gold.items():
        cells = ["  " + name] + [f"{prf.get(k):.3f}" if isinstance(prf.get(k), (int, float)) else "—"
                                 for k in ("precision", "recall", "f1")]
        rows.append([(c, c) for c in cells])
    return [style(_BOLD, "Boundaries against the gold segmentation")] + _table(rows)


def _parallel(doc: dict[str, Any], style: _Style) -> list[str]:
    par = doc.get("parallel")
    if not par or not par.get("languages"):
        return []
    names = [t.get("name", "?") for t in doc.get("tokenizers", [])]
    rows = [[("  language", "  language")] + [(n, n) for n in names]]
    for lang in par["languages"]:
        cells = ["  " + str(lang.get("language", "?"))]
        for n in names:
            entry = (lang.get("premium") or {}).get(n) or {}
            value = entry.get("value")
            cells.append(f"{value:.2f}×" if isinstance(value, (int, float)) else "—")
        rows.append([(c, c) for c in cells])
    return [style(_BOLD, f"Tokenization premium against {par.get('pivot', 'the pivot')}") + " (tokens / pivot tokens)"
            ] + _table(rows)


def _lossless(doc: dict[str, Any], style: _Style) -> list[str]:
    out: list[str] = []
    for t in doc.get("tokenizers", []):
        examples = structured(t, "lossless_examples") or []
        for ex in examples[:2]:
            at = ex.get("first_difference")
            out.append(f"  {t.get('name', '?')}, line {ex.get('line_index', '?')}: "
                       f"{_window(str(ex.get('original', '')), at)} → {_window(str(ex.get('decoded', '')), at)}"
                       + (f" (first difference at char {at})" if at is not None else ""))
    return ([style(_BOLD, "Lines that do not decode back to the input")] + out) if out else []


# ==== samples ====


def _token_row(tokens: list[dict[str, Any]], style: _Style) -> str:
    if not style.color:
        return "│".join(t.get("display", "") for t in tokens)
    parts = []
    for i, t in enumerate(tokens):
        code = _TOKEN_COLOURS[i % 2] + (_BOLD if len(t.get("ids", ())) > 1 else "")
        parts.append(style(code, t.get("display", "")))
    return "".join(parts)


def _marks(text: str, spans: list[list[int]]) -> str:
    """A line of ``^`` under the columns of ``text`` covered by ``spans``."""
    marked = [False] * len(text)
    for start, end in spans:
        for p in range(max(0, start), min(len(text), end)):
            marked[p] = True
    return "".join(("^" if m else " ") * display_width(visible(ch)) for ch, m in zip(text, marked)).rstrip()


def _samples(doc: dict[str, Any], style: _Style, show: int) -> list[str]:
    samples = (doc.get("samples") or [])[:show]
    if not samples:
        return []
    names = [row.get("name", "?") for s in samples for row in s.get("rows", [])]
    width = max(display_width(n) for n in names + [f"line {s.get('line_index', 0)}" for s in samples])
    out = [style(_BOLD, "Sample lines") + " (^ where the tokenizers' boundaries differ"
           + ("; bold: several ids decode to one character" if style.color else "") + ")"]
    for s in samples:
        text = s.get("text", "")
        label = f"line {s.get('line_index', '?')}"
        out.append("")
        out.append(_pad(style(_DIM, label), width, label) + "  " + visible(text))
        marks = _marks(text, s.get("disagreements") or [])
        if marks:
            out.append(" " * width + "  " + style(_RED, marks))
        for row in s.get("rows", []):
            name = row.get("name", "?")
            tokens = row.get("tokens", [])
            ids = sum(len(t.get("ids", ())) for t in tokens)
            count = style(_DIM, f"  ({ids} tokens)")
            out.append(_pad(name, width) + "  " + _token_row(tokens, style) + count)
    return out


def render_terminal(doc: dict[str, Any], *, color: bool, show: int) -> str:
    """The comparison document as terminal text.

    Args:
        doc: The comparison document (``schema_version`` 1; see ``subword.compare``).
        color: Use ANSI colours (see :func:`use_color`); without them the same marks are shown.
        show: How many sample lines to show (0: none).

    Returns:
        The text, ending with a newline.

    >>> doc = {"tokenizers": [{"name": "a", "metrics": {}}], "samples": [{"line_index": 0, "text": "a b",
    ...        "disagreements": [], "rows": [{"name": "a", "tokens": [{"display": "a", "ids": [0]},
    ...        {"display": "·b", "ids": [1]}]}]}]}
    >>> print(render_terminal(doc, color=False, show=1).splitlines()[-1])
    a       a│·b  (2 tokens)
    """
    style = _Style(color)
    sections = [
        [_header(doc)],
        _metric_rows(doc, style),
        _pairwise(doc, style),
        _gold(doc, style),
        _parallel(doc, style),
        _attribution(doc, style),
        _lossless(doc, style),
        _samples(doc, style, max(0, show)),
    ]
    text = "\n\n".join("\n".join(s) for s in sections if s)
    if not color:
        text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return text + "\n"
