"""The HTML report of a comparison document: one self-contained file (inline CSS, JS and SVG; no network).

Sections: the metrics table (intervals, best value marked), charts (token-length distribution, tokens per
word by script, the premium per language when the document has parallel text), the sample lines (one row
per tokenizer, one span per token group), pairwise differences (significant or within the noise), the
words behind each token-count gap, gold boundaries, and the lines that do not round-trip.

A token's colour is a hue derived from a hash of its bytes, so the same string has the same colour under
every tokenizer. Each sample's rows take the direction of the line's first strong character, and every
token is a bidi isolate, so Arabic and Hebrew read right to left and byte pieces (``⟨D9⟩``) stay readable.
The page and its template (``report.html``, ``report.css``, ``report.js`` beside this module) are read
with :mod:`importlib.resources`.

>>> page = render_html({"tokenizers": [{"name": "a", "metrics": {"tokens": {"value": 3, "ci": [2, 4]}}}],
...                     "best": {"tokens": "a"}, "samples": []})
>>> page.startswith("<!DOCTYPE html>") and "http" not in page.split("<body>")[1]
True
"""

from __future__ import annotations

import html
import math
from importlib import resources
from typing import Any

from subword.compare._format import (STRUCTURED, METRICS, format_ci, format_delta, format_value, metric_info,
                                     shown_significant, structured, text_direction)
from subword.compare.samples import visible

__all__ = ["render_html", "token_hue"]

# Distinct series colours for the charts (one per tokenizer, reused after ten).
_SERIES = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac")
_GLYPHS = "·→↵␍"


def _e(text: Any) -> str:
    return html.escape("" if text is None else str(text), quote=True)


def token_hue(bytes_hex: str) -> int:
    """The hue of a token: one of 24 hues 15° apart picked by FNV-1a of its bytes, so equal bytes get equal
    colours under every tokenizer (and three lightness steps from the same hash, see :func:`_token_style`).

    >>> token_hue("616263") == token_hue("616263"), token_hue("616263") % 15
    (True, 0)
    """
    return (_fnv1a(bytes_hex) % 24) * 15


def _fnv1a(bytes_hex: str) -> int:
    h = 0x811C9DC5
    for byte in bytes.fromhex(bytes_hex):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def _token_style(bytes_hex: str) -> str:
    """``--h`` (hue) and ``--dl`` (a lightness step) for one token; the CSS turns them into a colour."""
    return f"--h:{token_hue(bytes_hex)};--dl:{(_fnv1a(bytes_hex) >> 16) % 3 * 4}%"


def _resource(name: str) -> str:
    return resources.files("subword.compare").joinpath(name).read_text(encoding="utf-8")


# ==== metrics ====


def _metric_names(toks: list[dict[str, Any]]) -> list[str]:
    names = [m for m in METRICS if any(m in t.get("metrics", {}) for t in toks)]
    for t in toks:
        names += [m for m in t.get("metrics", {}) if m not in names and m not in STRUCTURED]
    return names


def _metrics_section(doc: dict[str, Any]) -> str:
    toks = doc.get("tokenizers", [])
    best = doc.get("best") or {}
    head = ["<th></th>"]
    for t in toks:
        meta = " · ".join(x for x in (str(t.get("kind", "")),
                                      f"{t['vocab_size']:,} tokens" if isinstance(t.get("vocab_size"), int) else "")
                          if x)
        head.append(f'<th class="num"><span class="tkname">{_e(t.get("name"))}</span>'
                    f'<span class="tkmeta">{_e(meta)}</span>'
                    f'<span class="tkmeta" title="{_e(t.get("source"))}">{_e(t.get("source", ""))}</span></th>')
    body = []
    if not _metric_names(toks) or not toks:
        return ""
    for m in _metric_names(toks):
        info = metric_info(m)
        cells = [f'<th class="metric" scope="row">{_e(info.label)}<small>{_e(info.meaning)}</small></th>']
        for t in toks:
            entry = t.get("metrics", {}).get(m)
            entry = entry if isinstance(entry, dict) else {"value": entry}
            ci = format_ci(m, entry.get("ci"))
            is_best = best.get(m) is not None and best.get(m) == t.get("name")
            star = '<span class="star" title="best in the row">★</span>' if is_best else ""
            cells.append(f'<td class="num{" best" if is_best else ""}" data-metric="{_e(m)}">'
                         f'{_e(format_value(m, entry.get("value")))}{star}'
                         + (f'<span class="ci">95% CI {_e(ci)}</span>' if ci else "") + "</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<section class="card" id="metrics"><h2>Metrics</h2><div class="scroll"><table class="metrics">'
            f'<thead><tr>{"".join(head)}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'
            '<p class="note">★ best value in the row. Intervals: 95% block bootstrap (blocks of consecutive lines, '
            "see the JSON's options.bootstrap); none where both ends print the same. MB/s is one timed run, "
            "with an interval over its timed chunks only when there are several. Micro averages "
            "(totals over the whole input) unless the metric says otherwise.</p></section>")


# ==== charts (inline SVG) ====


def _nice_max(value: float) -> float:
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exp = 10 ** math.floor(math.log10(value))
    for step in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if step * exp >= value:
            return step * exp
    return 10 * exp


def _bar_chart(categories: list[str], series: list[tuple[str, str, list[Any], list[Any] | None]], *,
               y_label: str, unit: str = "", ref: float | None = None, title: str = "") -> str:
    """Grouped vertical bars; ``series`` is ``(name, colour, values, intervals or None)`` per tokenizer."""
    width, height = 560, 280
    left, right, top = 52, 12, 14
    rotate = len(categories) > 10 or max((len(c) for c in categories), default=0) > 7
    bottom = 70 if rotate else 42
    plot_w, plot_h = width - left - right, height - top - bottom
    highs = [v for _, _, vals, cis in series for v in vals if isinstance(v, (int, float))]
    highs += [ci[1] for _, _, _, cis in series if cis for ci in cis
              if isinstance(ci, (list, tuple)) and len(ci) == 2 and isinstance(ci[1], (int, float))]
    if ref is not None:
        highs.append(ref)
    top_value = _nice_max(max(highs, default=1.0) * 1.05)

    def y(v: float) -> float:
        return top + plot_h - plot_h * max(0.0, v) / top_value

    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}">']
    for k in range(5):
        v = top_value * k / 4
        parts.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}"/>'
                     f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{_e(_tick(v))}{_e(unit)}</text>')
    parts.append(f'<line class="axis" x1="{left}" x2="{width - right}" y1="{y(0):.1f}" y2="{y(0):.1f}"/>')
    parts.append(f'<text x="12" y="{top + plot_h / 2:.1f}" text-anchor="middle" '
                 f'transform="rotate(-90 12 {top + plot_h / 2:.1f})">{_e(y_label)}</text>')
    group = plot_w / max(1, len(categories))
    bar = group * 0.8 / max(1, len(series))
    for c, cat in enumerate(categories):
        x0 = left + c * group + group * 0.1
        for s, (name, colour, values, cis) in enumerate(series):
            v = values[c] if c < len(values) else None
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                continue
            x = x0 + s * bar
            parts.append(f'<rect x="{x:.1f}" y="{y(v):.1f}" width="{max(1.0, bar - 1):.1f}" '
                         f'height="{y(0) - y(v):.1f}" fill="{colour}" rx="1.5"><title>{_e(name)} · {_e(cat)}: '
                         f'{_e(_tick(v))}{_e(unit)}</title></rect>')
            ci = cis[c] if cis and c < len(cis) else None
            if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(isinstance(z, (int, float)) for z in ci):
                cx = x + (bar - 1) / 2
                parts.append(f'<line class="whisker" x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(ci[0]):.1f}" '
                             f'y2="{y(ci[1]):.1f}"/>')
        cx = left + c * group + group / 2
        if rotate:
            parts.append(f'<text x="{cx:.1f}" y="{y(0) + 12:.1f}" text-anchor="end" '
                         f'transform="rotate(-40 {cx:.1f} {y(0) + 12:.1f})">{_e(cat)}</text>')
        else:
            parts.append(f'<text x="{cx:.1f}" y="{y(0) + 16:.1f}" text-anchor="middle">{_e(cat)}</text>')
    if ref is not None:
        parts.append(f'<line class="ref" x1="{left}" x2="{width - right}" y1="{y(ref):.1f}" y2="{y(ref):.1f}"/>')
    parts.append("</svg>")
    legend = "".join(f'<span><span class="swatch" style="background:{colour}"></span>{_e(name)}</span>'
                     for name, colour, _, _ in series)
    return f'<figure><figcaption>{_e(title)}</figcaption>{"".join(parts)}<div class="legend">{legend}</div></figure>'


def _tick(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.0f}" if v == int(v) else f"{v:.1f}"
    return f"{v:.2f}".rstrip("0").rstrip(".")


def _charts_section(doc: dict[str, Any]) -> str:
    toks = doc.get("tokenizers", [])
    colours = [_SERIES[i % len(_SERIES)] for i in range(len(toks))]
    figures = []
    hists = [structured(t, "token_length_histogram") or {} for t in toks]
    lengths = sorted({int(k) for h in hists for k in h if str(k).isdigit()})
    if lengths:
        cap = 16
        cats = [str(n) for n in range(1, min(max(lengths), cap - 1) + 1)]
        if max(lengths) >= cap:
            cats.append(f"{cap}+")
        series = []
        for t, h, colour in zip(toks, hists, colours):
            total = sum(v for v in h.values() if isinstance(v, (int, float))) or 1
            shares = []
            for cat in cats:
                if cat.endswith("+"):
                    count = sum(v for k, v in h.items() if str(k).isdigit() and int(k) >= cap)
                else:
                    count = h.get(cat, 0)
                shares.append(100 * count / total)
            series.append((t.get("name", "?"), colour, shares, None))
        figures.append(_bar_chart(cats, series, y_label="share of tokens", unit="%",
                                  title="Token length (characters)"))
    by_script = [structured(t, "tokens_per_word_by_script") or {} for t in toks]
    scripts = sorted({s for d in by_script for s in d}, key=lambda s: (-sum(1 for d in by_script if s in d), s))
    if scripts:
        series = [(t.get("name", "?"), colour, [(d.get(s) or {}).get("value") for s in scripts],
                   [(d.get(s) or {}).get("ci") for s in scripts]) for t, d, colour in zip(toks, by_script, colours)]
        figures.append(_bar_chart(scripts, series, y_label="tokens per word", title="Tokens per word, by script"))
    par = doc.get("parallel") or {}
    langs = par.get("languages") or []
    if langs:
        cats = [str(lang.get("language", "?")) for lang in langs]
        series = [(t.get("name", "?"), colour,
                   [((lang.get("premium") or {}).get(t.get("name")) or {}).get("value") for lang in langs],
                   [((lang.get("premium") or {}).get(t.get("name")) or {}).get("ci") for lang in langs])
                  for t, colour in zip(toks, colours)]
        figures.append(_bar_chart(cats, series, y_label="tokens / pivot tokens", unit="×", ref=1.0,
                                  title=f"Tokenization premium against {par.get('pivot', 'the pivot')}"))
    if not figures:
        return ""
    return (f'<section class="card" id="charts"><h2>Charts</h2><div class="charts">{"".join(figures)}</div>'
            '<p class="note">Whiskers: 95% bootstrap intervals.'
            + (" Dashed line: parity with the pivot language." if langs else "") + "</p>"
            "</section>")


# ==== samples ====


def _overlaps(s1: int, e1: int, s2: int, e2: int) -> bool:
    if s1 == e1 and s2 == e2:
        return s1 == s2
    if s1 == e1:
        return s2 <= s1 < e2
    if s2 == e2:
        return s1 <= s2 < e1
    return max(s1, s2) < min(e1, e2)


def _display_html(display: str) -> str:
    """The token's display text with whitespace glyphs muted and byte pieces as left-to-right isolates."""
    out, i = [], 0
    while i < len(display):
        ch = display[i]
        if ch == "⟨" and i + 3 < len(display) and display[i + 3] == "⟩":
            out.append(f'<span class="b" dir="ltr">{_e(display[i:i + 4])}</span>')
            i += 4
            continue
        out.append(f'<span class="ws">{_e(ch)}</span>' if ch in _GLYPHS else _e(ch))
        i += 1
    return "".join(out)


_LINE_GLYPHS = {"\t": '<span class="ws">→</span>', "\n": '<span class="ws">↵</span>',
                "\r": '<span class="ws">␍</span>'}


def _line_html(text: str, spans: list[list[int]]) -> str:
    """The line as text, tabs and line ends shown as muted glyphs, disagreement spans in ``<mark>``."""
    marked = [False] * len(text)
    for start, end in spans:
        for p in range(max(0, start), min(len(text), end)):
            marked[p] = True
    out, p = [], 0
    while p < len(text):
        q = p
        while q < len(text) and marked[q] == marked[p]:
            q += 1
        chunk = "".join(_LINE_GLYPHS.get(c) or _e(c) for c in text[p:q])
        out.append(f"<mark>{chunk}</mark>" if marked[p] else chunk)
        p = q
    return "".join(out)


def _sample_html(sample: dict[str, Any]) -> str:
    text = sample.get("text", "")
    spans = sample.get("disagreements") or []
    direction = text_direction(text)
    parts = [f'<div class="sample" data-line="{_e(sample.get("line_index"))}"><div class="grid">',
             f'<div class="lineno">line {_e(sample.get("line_index"))}</div>',
             f'<div class="linetext" dir="{direction}">{_line_html(text, spans)}</div>']
    for row in sample.get("rows", []):
        tokens = row.get("tokens", [])
        n_ids = sum(len(t.get("ids", ())) for t in tokens)
        cells = []
        for t in tokens:
            s, e = int(t.get("start", 0)), int(t.get("end", 0))
            ids = t.get("ids", [])
            cls = "tok" + (" multi" if len(ids) > 1 else "") + (
                " dis" if any(_overlaps(s, e, a, b) for a, b in spans) else "")
            bytes_hex = str(t.get("bytes_hex", ""))
            # dir="auto" per token: a byte-piece token reads left to right even inside a right-to-left row.
            cells.append(f'<span class="{cls}" dir="auto" style="{_token_style(bytes_hex)}" data-s="{s}" data-e="{e}" '
                         f'data-ids="{_e(" ".join(str(i) for i in ids))}" data-bytes="{_e(bytes_hex)}" '
                         f'data-text="{_e(t.get("text", ""))}">{_display_html(str(t.get("display", "")))}</span>')
        parts.append(f'<div class="rname">{_e(row.get("name"))}<span class="n">{n_ids} tokens</span></div>'
                     f'<div class="row toks" dir="{direction}" data-name="{_e(row.get("name"))}">'
                     f'{"".join(cells)}</div>')
    parts.append("</div></div>")
    return "".join(parts)


def _samples_section(doc: dict[str, Any]) -> str:
    samples = doc.get("samples") or []
    if not samples:
        return ""
    legend = ('<div class="legend"><span><span class="tok" style="--h:210">·</span> space, '
              '<span class="tok" style="--h:210">→</span> tab, <span class="tok" style="--h:210">↵</span> '
              'newline</span><span><span class="tok" style="--h:30"><span class="b">⟨E2⟩</span></span> '
              'byte token</span><span><span class="tok multi" style="--h:120">é</span> several ids, one '
              'character</span><span><mark style="background:none;text-decoration:underline wavy '
              'var(--mark)">text</mark> boundaries differ</span></div>')
    return (f'<section class="card" id="samples"><h2>Sample lines</h2>{legend}'
            + "".join(_sample_html(s) for s in samples)
            + '<p class="note">Hover a token: the tokens of the other tokenizers that cover the same '
              "characters light up, with its ids and bytes. Same bytes, same colour, in every row.</p></section>")


# ==== pairwise, attribution, gold, round trips ====


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _chips(items: Any, limit: int = 10) -> str:
    """Token strings as chips, whitespace made visible (``·`` a space, ``→`` a tab, ``↵`` a newline)."""
    chips = "".join(f'<span class="chip">{_e(visible(str(x)))}</span>' for x in (items or [])[:limit])
    return f'<div class="chips">{chips}</div>' if chips else ""


def _pairwise_section(doc: dict[str, Any]) -> str:
    pairs = [p for p in doc.get("pairwise") or [] if isinstance(p, dict)]
    if not pairs:
        return ""
    # Boundaries and vocabulary: one row per pair.
    rows = []
    for pair in pairs:
        a, b = pair.get("a", "?"), pair.get("b", "?")
        f1, ci = pair.get("boundary_f1"), pair.get("boundary_f1_ci")
        f1_text = f"{f1:.3f}" if _number(f1) else "—"
        if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(_number(x) for x in ci):
            f1_text += f'<span class="ci">95% CI {ci[0]:.3f}–{ci[1]:.3f}</span>'
        cells = [f'<th scope="row">{_e(a)} vs {_e(b)}</th>', f'<td class="num">{f1_text}</td>']
        for key in ("boundary_precision", "boundary_recall", "vocab_jaccard"):
            value = pair.get(key)
            cells.append(f'<td class="num">{value:.3f}</td>' if _number(value) else '<td class="num">—</td>')
        for side in ("a", "b"):
            count = pair.get(f"unique_{side}_count")
            cells.append(f"<td>{f'{count:,}' if isinstance(count, int) else '—'}"
                         f"{_chips(pair.get(f'unique_{side}_examples'))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    summary = ('<div class="scroll"><table class="pairs"><thead><tr><th>pair</th><th class="num">boundary F1</th>'
               '<th class="num">precision</th><th class="num">recall</th><th class="num">vocab Jaccard</th>'
               '<th>tokens only in the first</th><th>only in the second</th></tr></thead>'
               f'<tbody>{"".join(rows)}</tbody></table></div>')
    # Differences: one row per metric, one column per pair.
    with_diffs = [p for p in pairs if isinstance(p.get("differences"), dict) and p["differences"]]
    table = ""
    if with_diffs:
        metrics = [m for m in METRICS if any(m in p["differences"] for p in with_diffs)]
        metrics += [m for p in with_diffs for m in p["differences"] if m not in metrics]
        head = "".join(f'<th class="num">{_e(p.get("a"))} − {_e(p.get("b"))}</th>' for p in with_diffs)
        body = []
        for m in metrics:
            cells = [f'<th class="metric" scope="row">{_e(metric_info(m).label)}</th>']
            for p in with_diffs:
                diff = p["differences"].get(m)
                if not isinstance(diff, dict):
                    cells.append('<td class="num">—</td>')
                    continue
                ci = diff.get("ci")
                has_ci = isinstance(ci, (list, tuple)) and len(ci) == 2 and all(_number(x) for x in ci)
                verdict = "sig" if shown_significant(m, diff) else "noise" if has_ci else "plain"
                mark = "" if verdict != "noise" else (' <span class="badge noise" title="the 95% interval contains 0, '
                                                      'or the difference prints as 0">≈ noise</span>')
                cells.append(f'<td class="num diff {verdict}" data-diff="{_e(m)}">{_e(format_delta(m, diff))}'
                             f"{mark}</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")
        table = (f'<h3>Differences [95% CI]</h3><div class="scroll"><table class="diffs"><thead><tr><th>metric</th>'
                 f'{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>')
    return ('<section class="card" id="pairwise"><h2>Pairwise</h2>' + summary + table
            + '<p class="note">Boundary precision and recall: the first tokenizer\'s cuts inside each line against '
              "the second's (whitespace transparent). "
              "A difference marked <em>≈ noise</em> has a 95% paired block-bootstrap interval that contains 0 (or "
              "prints as 0 at this precision); the others are significant. Examples of tokens only one vocabulary "
              "has: those the text uses most, then the shortest; · is a space, → a tab, ↵ a newline.</p></section>")


def _segmentation_html(groups: Any, mean: Any = None) -> str:
    """A word's tokens as decoded-text chips (``⟨E2⟩`` a byte piece, ``·`` a space); a chip several tokens
    make is marked ``×n``; ``∅`` for none; ``avg`` when other occurrences take another number of tokens."""
    if not isinstance(groups, (list, tuple)):
        return "—"
    shown = sum(g.get("tokens", 1) for g in groups if isinstance(g, dict))
    avg = (f' <small title="tokens per occurrence, over all occurrences">avg {mean:.2f}</small>'
           if _number(mean) and f"{mean:.2f}" != f"{shown:.2f}" else "")
    if not groups:
        return '<span class="chip empty" title="no token ends inside this word">∅</span>' + avg
    chips = []
    for g in groups:
        n = g.get("tokens", 1) if isinstance(g, dict) else 1
        count = f'<sub title="{n} tokens make this piece">×{n}</sub>' if n > 1 else ""
        chips.append(f'<span class="chip" dir="auto">{_display_html(str(g.get("display", "")))}{count}</span>')
    return '<span class="chips">' + "".join(chips) + "</span>" + avg


def _per_word(delta: Any) -> str:
    """A per-word token difference: whole numbers as such, averages over contexts with two decimals."""
    if not _number(delta):
        return "—"
    text = f"{delta:+.0f}" if float(delta).is_integer() else f"{delta:+.2f}"
    return text.replace("-", "−")


def _attribution_section(doc: dict[str, Any], top: int = 25) -> str:
    atts = [a for a in doc.get("attribution") or [] if a.get("words")]
    if not atts:
        return ""
    blocks = []
    for att in atts:
        a, b = att.get("a", "?"), att.get("b", "?")
        rows = []
        for w in att["words"][:top]:
            share = w.get("cumulative_share")
            bar = (f'<span class="bar" style="width:{max(0.0, min(1.0, share)) * 4:.2f}rem"></span>'
                   if _number(share) else "")
            rows.append(
                f'<tr><td><bdi class="chip">{_e(visible(str(w.get("word", ""))))}</bdi></td>'
                f'<td>{_e(w.get("script", ""))}</td>'
                f'<td class="num">{_e(format_value("tokens", w.get("count")))}</td>'
                f'<td>{_segmentation_html(w.get("display_a"), w.get("tokens_a"))}</td>'
                f'<td>{_segmentation_html(w.get("display_b"), w.get("tokens_b"))}</td>'
                f'<td class="num">{_e(_per_word(w.get("delta")))}</td>'
                f'<td class="num">{_e(format_value("tokens", w.get("contribution"), signed=True))}</td>'
                f'<td class="num">{bar}{_e(format_value("lossless_lines", share))}</td></tr>')
        head = (f'<thead><tr><th>word</th><th>script</th><th class="num">count</th><th>{_e(a)}</th><th>{_e(b)}</th>'
                '<th class="num">Δ / word</th><th class="num">contribution</th><th class="num">cumulative</th>'
                "</tr></thead>")
        net, more_a, more_b = att.get("net"), att.get("more_in_a"), att.get("more_in_b")
        summary = (f'<p class="sub">{_e(a)} − {_e(b)} = <b>{_e(format_value("tokens", net, signed=True))}</b> tokens: '
                   f'{_e(format_value("tokens", more_a, signed=True))} from words where {_e(a)} needs more tokens, '
                   f'{_e(format_value("tokens", more_b, signed=True))} from words where {_e(b)} does.</p>'
                   if all(_number(x) for x in (net, more_a, more_b)) else "")
        groups = att.get("by_group") or []
        group_rows = "".join(
            f'<tr><td>{_e(g.get("script"))}</td><td>{_e(g.get("kind"))}</td>'
            f'<td class="num">{_e(format_value("tokens", g.get("contribution"), signed=True))}</td>'
            f'<td class="num">{_e(format_value("lossless_lines", g.get("share")))}</td></tr>' for g in groups)
        group_table = ('<h3>By script and kind</h3><table class="groups"><thead><tr><th>script</th><th>kind</th>'
                       '<th class="num">contribution'
                       f'</th><th class="num">share of the gap</th></tr></thead><tbody>{group_rows}</tbody></table>'
                       ) if groups else ""
        blocks.append(f'<h3>{_e(a)} − {_e(b)}: the words behind the gap</h3>{summary}<div class="scroll">'
                      f'<table class="attribution">{head}<tbody>{"".join(rows)}</tbody></table></div>{group_table}')
    return ('<section class="card" id="attribution"><h2>Where the token counts differ</h2>' + "".join(blocks)
            + '<p class="note">Each token counts for the word that holds its last character. The columns under the '
              "tokenizers' names show a word's tokens at its first occurrence, decoded (· a space, ⟨E2⟩ a byte "
              "piece; ×n: n tokens make that piece of whole characters; avg: tokens per occurrence, where other "
              "occurrences take another number); ∅: no token ends inside the word (the "
              "tokenizer drops it, as WordPiece drops spaces, or joins it to the next word's first token, as "
              "SentencePiece's ▁ does). Contribution: count × (tokens under the first − tokens under the second); "
              "the contributions of all words add up to the difference in tokens. Cumulative: the share of all "
              "per-word differences, of either sign, that the words down to this row account for. Share of the "
              "gap: a group's contribution over the difference in tokens (groups of the other sign make it "
              "negative).</p></section>")


def _gold_section(doc: dict[str, Any]) -> str:
    gold = doc.get("gold")
    if not gold:
        return ""
    rows = "".join(f'<tr><th scope="row">{_e(name)}</th>' + "".join(
        f'<td class="num">{prf.get(k):.3f}</td>' if isinstance(prf.get(k), (int, float)) else '<td class="num">—</td>'
        for k in ("precision", "recall", "f1")) + "</tr>" for name, prf in gold.items())
    return ('<section class="card" id="gold"><h2>Boundaries against the gold segmentation</h2><table>'
            '<thead><tr><th>tokenizer</th><th class="num">precision</th><th class="num">recall</th>'
            f'<th class="num">F1</th></tr></thead><tbody>{rows}</tbody></table></section>')


def _premium_table(doc: dict[str, Any]) -> str:
    par = doc.get("parallel") or {}
    langs = par.get("languages") or []
    if not langs:
        return ""
    names = [t.get("name", "?") for t in doc.get("tokenizers", [])]
    head = "".join(f'<th class="num">{_e(n)}</th>' for n in names)
    rows = []
    for lang in langs:
        cells = []
        for n in names:
            entry = (lang.get("premium") or {}).get(n) or {}
            value = entry.get("value")
            ci = entry.get("ci")
            text = f"{value:.2f}×" if isinstance(value, (int, float)) else "—"
            ci_text = (f'<span class="ci">{ci[0]:.2f}–{ci[1]:.2f}</span>'
                       if isinstance(ci, (list, tuple)) and len(ci) == 2
                       and all(isinstance(x, (int, float)) for x in ci) else "")
            cells.append(f'<td class="num">{text}{ci_text}</td>')
        rows.append(f'<tr><th scope="row">{_e(lang.get("language"))}</th>{"".join(cells)}</tr>')
    parity = par.get("parity") or {}
    if isinstance(parity, dict) and any(isinstance(parity.get(n), dict) for n in names):
        for key, label in (("mean_premium", "mean premium"), ("max_premium", "worst language")):
            cells = []
            for n in names:
                entry = parity.get(n) or {}
                value = entry.get(key)
                lang = entry.get("max_language") if key == "max_premium" else None
                text = f"{value:.2f}×" if isinstance(value, (int, float)) else "—"
                cells.append(f'<td class="num">{text}' + (f'<span class="ci">{_e(lang)}</span>' if lang else "")
                             + "</td>")
            rows.append(f'<tr class="parity"><th scope="row">{label}</th>{"".join(cells)}</tr>')
    return (f'<section class="card" id="premium"><h2>Tokenization premium against {_e(par.get("pivot", "the pivot"))}'
            f'</h2><table><thead><tr><th>language</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
            '<p class="note">Tokens for the language / tokens for the pivot on the same parallel lines '
            "(Petrov et al. 2023); 1.00× is parity.</p></section>")


def _lossless_section(doc: dict[str, Any]) -> str:
    rows = []
    for t in doc.get("tokenizers", []):
        for ex in structured(t, "lossless_examples") or []:
            rows.append(f'<tr><th scope="row">{_e(t.get("name"))}</th><td class="num">{_e(ex.get("line_index"))}</td>'
                        f'<td><bdi class="mono">{_e(ex.get("original"))}</bdi></td>'
                        f'<td><bdi class="mono">{_e(ex.get("decoded"))}</bdi></td>'
                        f'<td class="num">{_e(ex.get("first_difference"))}</td></tr>')
    if not rows:
        return ""
    return ('<section class="card" id="lossless"><h2>Lines that do not decode back to the input</h2>'
            '<div class="scroll"><table><thead><tr><th>tokenizer</th><th class="num">line</th><th>original</th>'
            f'<th>decoded</th><th class="num">first difference (char)</th></tr></thead><tbody>{"".join(rows)}'
            "</tbody></table></div></section>")


def _header(doc: dict[str, Any], sections: list[tuple[str, str]]) -> str:
    inputs = doc.get("inputs") or {}
    names = [t.get("name", "?") for t in doc.get("tokenizers", [])]
    files = inputs.get("files") or []
    facts = [f"{inputs[k]:,} {k}" for k in ("lines", "words", "chars", "bytes") if isinstance(inputs.get(k), int)]
    where = ", ".join(str(f.get("path", "?")) for f in files) or "standard input"
    toc = "".join(f'<a href="#{sid}">{_e(label)}</a>' for sid, label in sections)
    return (f'<header class="top"><div class="wrap"><h1>Tokenizer comparison: {_e(", ".join(names))}</h1>'
            f'<p class="sub">{_e(where)}' + (f" · {_e(' · '.join(facts))}" if facts else "")
            + f'</p><nav class="toc">{toc}</nav></div></header>')


def render_html(doc: dict[str, Any]) -> str:
    """The comparison document as one self-contained HTML page.

    Args:
        doc: The comparison document (``schema_version`` 1; see ``subword.compare``).

    Returns:
        The page (UTF-8 text): inline CSS, JS and SVG, nothing fetched from the network.

    >>> doc = {"tokenizers": [{"name": "a", "metrics": {}}], "samples": [{"line_index": 0, "text": "ab",
    ...        "disagreements": [], "rows": [{"name": "a", "tokens": [{"start": 0, "end": 2, "text": "ab",
    ...        "ids": [7], "bytes_hex": "6162", "display": "ab"}]}]}]}
    >>> render_html(doc).count('class="tok" dir="auto"')
    1
    """
    parts = [
        ("metrics", "Metrics", _metrics_section(doc)),
        ("charts", "Charts", _charts_section(doc)),
        ("samples", "Samples", _samples_section(doc)),
        ("pairwise", "Pairwise", _pairwise_section(doc)),
        ("attribution", "Attribution", _attribution_section(doc)),
        ("premium", "Premium", _premium_table(doc)),
        ("gold", "Gold", _gold_section(doc)),
        ("lossless", "Round trip", _lossless_section(doc)),
    ]
    present = [(sid, label) for sid, label, body in parts if body]
    body = (_header(doc, present) + '<main class="wrap">' + "".join(b for _, _, b in parts if b) + "</main>"
            + f'<footer class="wrap">subword compare · document schema {_e(doc.get("schema_version", 1))}</footer>')
    names = ", ".join(str(t.get("name", "?")) for t in doc.get("tokenizers", []))
    page = _resource("report.html")
    page = page.replace("<!--TITLE-->", _e(f"Tokenizer comparison: {names}"))
    page = page.replace("<!--CSS-->", _resource("report.css"))
    page = page.replace("<!--JS-->", _resource("report.js"))
    return page.replace("<!--BODY-->", body)
