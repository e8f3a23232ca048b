"""What the compare views call each metric and how they print its numbers (shared by terminal and HTML).

The document (see ``subword.compare``) holds raw values; the views decide the label, the unit and the
number of digits here, once, so the terminal and the HTML report always agree.

>>> format_value("continued_words", 0.4567), format_value("tokens", 1234567), format_value("mb_per_s", 12.345)
('45.7%', '1,234,567', '12.3')
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any, NamedTuple

from subword.compare.metrics import METRICS as _METRICS

__all__ = ["MetricInfo", "METRICS", "metric_info", "format_value", "format_ci", "format_delta", "shown_significant",
           "display_width", "structured", "text_direction"]


class MetricInfo(NamedTuple):
    """A metric's label, its unit kind (``count``, ``percent``, ``ratio``, ``speed``) and a one-line meaning
    (with the direction that is better, from :data:`subword.compare.metrics.METRICS`)."""

    label: str
    kind: str
    meaning: str


# In the order the tables show them; a metric the document has but this table lacks is shown after these,
# under its own name. Built from the one metrics table, so a label, unit or direction is stated once.
METRICS: dict[str, MetricInfo] = {name: MetricInfo(m.label, m.kind, m.hint) for name, m in _METRICS.items()}

# Parts of a tokenizer's "metrics" that are not one number with an interval.
STRUCTURED = {"token_length_histogram", "tokens_per_word_by_script", "lossless_examples"}


def structured(entry: dict[str, Any], key: str) -> Any:
    """One of the :data:`STRUCTURED` parts of a tokenizer's entry (beside ``metrics``, or inside it).

    >>> structured({"metrics": {}, "lossless_examples": [1]}, "lossless_examples")
    [1]
    """
    value = entry.get(key)
    return value if value is not None else (entry.get("metrics") or {}).get(key)


def metric_info(name: str) -> MetricInfo:
    """The :class:`MetricInfo` of ``name`` (a generic ratio for a metric this module does not know).

    >>> metric_info("tokens").label, metric_info("new_metric").label
    ('tokens', 'new metric')
    """
    return METRICS.get(name, MetricInfo(name.replace("_", " "), "ratio", name.replace("_", " ")))


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def format_value(name: str, value: Any, *, signed: bool = False, digits: int = 3) -> str:
    """``value`` of metric ``name`` as the tables print it (``—`` when missing or not a finite number).

    ``digits``: decimals of a ratio (more where a small difference would otherwise print as zero).

    >>> format_value("tokens_per_word", 1.23456), format_value("unk_char_rate", 0.000123), format_value("x", None)
    ('1.235', '0.0123%', '—')
    >>> format_value("tokens", -12, signed=True)
    '−12'
    """
    if not _finite(value):
        return "—"
    kind = metric_info(name).kind
    sign = "+" if signed and value > 0 else ""
    if kind == "count":
        text = f"{sign}{value:,.0f}" if abs(value - round(value)) < 1e-9 else f"{sign}{value:,.1f}"
    elif kind == "percent":
        pct = value * 100
        places = 1 if pct == 0 or abs(pct) >= 1 else max(1, 2 - math.floor(math.log10(abs(pct))))
        text = f"{sign}{pct:.{min(places, 4)}f}%"
    elif kind == "speed":
        text = f"{sign}{value:.1f}" if abs(value) >= 1 else f"{sign}{value:.3f}"
    else:
        text = f"{sign}{value:.{digits}f}"
    return text.replace("-", "−")


def format_ci(name: str, ci: Any) -> str:
    """A 95% interval ``[lo, hi]`` as ``lo–hi`` in the metric's unit; '' when absent, or when both ends print
    the same (at this precision it says nothing: one timing, or no variation).

    >>> format_ci("chars_per_token", [3.9, 4.1]), format_ci("tokens", None), format_ci("mb_per_s", [8.01, 8.04])
    ('3.900–4.100', '', '')
    """
    if not isinstance(ci, (list, tuple)) or len(ci) != 2 or not all(_finite(x) for x in ci):
        return ""
    lo, hi = (round(x) for x in ci) if metric_info(name).kind == "count" else ci  # bootstrap counts: whole
    lo_text, hi_text = format_value(name, lo), format_value(name, hi)
    return "" if lo_text == hi_text else f"{lo_text}–{hi_text}"


def _delta_digits(name: str, values: list[Any]) -> int:
    """Decimals for a difference of a ratio metric: 3, or more (up to 6) until no non-zero value prints as 0."""
    digits = 3
    if metric_info(name).kind != "ratio":
        return digits
    while digits < 6 and any(_finite(v) and v != 0 and round(abs(v), digits) == 0 for v in values):
        digits += 1
    return digits


def format_delta(name: str, diff: dict[str, Any]) -> str:
    """A pairwise difference ``{value, ci, significant}`` as ``+1.2% [0.8%, 1.6%]``, with enough decimals
    that a difference and its interval ends do not print as zero when they are not.

    >>> format_delta("tokens", {"value": -30, "ci": [-40, -20], "significant": True})
    '−30 [−40, −20]'
    >>> format_delta("type_token_ratio", {"value": 0.00031, "ci": [0.00012, 0.0005], "significant": True})
    '+0.0003 [+0.0001, +0.0005]'
    """
    ci = diff.get("ci")
    has_ci = isinstance(ci, (list, tuple)) and len(ci) == 2 and all(_finite(x) for x in ci)
    digits = _delta_digits(name, [diff.get("value"), *(ci if has_ci else [])])
    text = format_value(name, diff.get("value"), signed=True, digits=digits)
    if has_ci:
        lo, hi = (round(x) for x in ci) if metric_info(name).kind == "count" else ci
        text += (f" [{format_value(name, lo, signed=True, digits=digits)}, "
                 f"{format_value(name, hi, signed=True, digits=digits)}]")
    return text


_ZERO = re.compile(r"[+−-]?0(\.0*)?%?")


def shown_significant(name: str, diff: dict[str, Any]) -> bool:
    """Whether a view marks a difference as significant: its interval excludes 0 (``significant``) and its
    value does not print as zero.

    >>> shown_significant("tokens", {"value": 0.04, "ci": [0.01, 0.07], "significant": True})
    False
    """
    if not diff.get("significant"):
        return False
    ci = diff.get("ci") or []
    digits = _delta_digits(name, [diff.get("value"), *ci])
    return not _ZERO.fullmatch(format_value(name, diff.get("value"), signed=True, digits=digits))


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes: wide (CJK) chars count 2, combining marks and format chars 0.

    >>> display_width("ab"), display_width("東京"), display_width("e\\u0301")
    (2, 4, 1)
    """
    width = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def text_direction(text: str) -> str:
    """``"rtl"`` when the first strong character of ``text`` is right-to-left (Arabic, Hebrew), else ``"ltr"``.

    >>> text_direction("  שלום world"), text_direction("5 apples"), text_direction("123")
    ('rtl', 'ltr', 'ltr')
    """
    for ch in text:
        kind = unicodedata.bidirectional(ch)
        if kind in ("R", "AL"):
            return "rtl"
        if kind == "L":
            return "ltr"
    return "ltr"
