"""Show progress of long work: a bar on a terminal, JSON lines for logs, or nothing.

Trainers and readers call a reporter as ``reporter(stage, current, total)``; the reporter chooses
how (and how often) to show it, so the algorithms never write to the terminal themselves.
All output goes to stderr, keeping stdout for data.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Literal, TextIO

import click

__all__ = ["ProgressReporter", "ProgressMode", "resolve_mode", "end_bar_line"]

ProgressMode = Literal["auto", "bar", "json", "none"]

# Redraws per second on a terminal, and JSON lines per second at most: enough to look alive,
# few enough that reporting never costs measurable time.
_BAR_INTERVAL = 0.1
_JSON_INTERVAL = 0.5
_BAR_WIDTH = 30

# The bar currently drawn on stderr (at most one), so other messages can move below it first.
_open_bar: ProgressReporter | None = None


def end_bar_line() -> None:
    """Ends the line of a bar being drawn, so a message printed next starts on a line of its own.

    >>> end_bar_line()  # no bar: nothing happens
    """
    global _open_bar
    if _open_bar is not None and _open_bar._bar_open:
        click.echo("", err=True)
        _open_bar._bar_open = False
        _open_bar._last_len = 0
    _open_bar = None


def resolve_mode(mode: ProgressMode, quiet: bool, stream: TextIO | None = None) -> Literal["bar", "json", "none"]:
    """Turns the user's ``--progress`` choice into what to do here.

    ``auto`` means a bar when stderr is a terminal and ``--quiet`` is not given, else nothing.
    An explicit ``json`` or ``bar`` wins over ``--quiet`` (the user asked for it by name).

    >>> import io
    >>> resolve_mode("auto", quiet=False, stream=io.StringIO())
    'none'
    >>> resolve_mode("json", quiet=True)
    'json'
    """
    if mode != "auto":
        return mode
    stream = stream if stream is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    return "bar" if (not quiet and isatty is not None and isatty()) else "none"


class ProgressReporter:
    """A ``(stage, current, total)`` callback that renders progress on stderr.

    Args:
        mode: ``"bar"`` (redrawn in place), ``"json"`` (one object per line:
            ``{"stage": ..., "current": ..., "total": ...}``) or ``"none"``.
        units: Optional per-stage unit; ``"bytes"`` shows MB instead of a count.

    A total of 0 or ``None`` means "unknown": the bar then shows the count only, and JSON has
    ``"total": null``. The last update of each stage is always shown.

    >>> import io, contextlib
    >>> buf = io.StringIO()
    >>> with contextlib.redirect_stderr(buf):
    ...     rep = ProgressReporter("json")
    ...     rep("merge", 10, 10); rep.close()
    >>> buf.getvalue()
    '{"stage": "merge", "current": 10, "total": 10}\\n'
    """

    def __init__(self, mode: Literal["bar", "json", "none"], units: dict[str, str] | None = None) -> None:
        self.mode = mode
        self.units = dict(units or {})
        self._stage: str | None = None
        self._last_emit = 0.0
        self._pending: tuple[str, int, int | None] | None = None
        self._bar_open = False
        self._last_len = 0
        self._stage_shown: str | None = None

    def __call__(self, stage: str, current: int, total: int | None) -> None:
        if self.mode == "none":
            return
        total = total if total else None
        now = time.monotonic()
        stage_changed = stage != self._stage
        finished = total is not None and current >= total
        interval = _BAR_INTERVAL if self.mode == "bar" else _JSON_INTERVAL
        if stage_changed and self._pending is not None and self._pending[0] == self._stage:
            # Show where the previous stage really ended before moving on.
            self._emit(*self._pending)
        if not (stage_changed or finished or now - self._last_emit >= interval):
            self._pending = (stage, current, total)
            return
        self._stage = stage
        self._emit(stage, current, total)
        self._last_emit = now

    def close(self) -> None:
        """Flushes the last pending update and ends the bar's line."""
        # A bar line that a message already ended is not redrawn below that message.
        if self._pending is not None and (self.mode == "json" or self._bar_open):
            self._emit(*self._pending)
        self._pending = None
        if self._bar_open:
            end_bar_line()

    # ==== rendering ====

    def _emit(self, stage: str, current: int, total: int | None) -> None:
        self._pending = None
        if self.mode == "json":
            click.echo(json.dumps({"stage": stage, "current": current, "total": total}), err=True)
            return
        if self._bar_open and stage != self._stage_shown:
            end_bar_line()
        self._stage_shown = stage
        text = self._bar_text(stage, current, total)
        # Pad over the rest of a longer previous text (no terminal escape codes needed).
        padded = text.ljust(self._last_len) if self._bar_open else text
        click.echo("\r" + padded, err=True, nl=False)
        self._last_len = len(text)
        self._bar_open = True
        global _open_bar
        _open_bar = self

    def _bar_text(self, stage: str, current: int, total: int | None) -> str:
        bytes_unit = self.units.get(stage) == "bytes"

        def fmt(n: int) -> str:
            return f"{n / 1e6:.1f} MB" if bytes_unit else f"{n:,}"

        if total is None:
            return f"{stage:<6} {fmt(current)}"
        frac = min(1.0, current / total) if total else 1.0
        filled = int(frac * _BAR_WIDTH)
        bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
        return f"{stage:<6} [{bar}] {frac * 100:5.1f}% {fmt(current)}/{fmt(total)}"
