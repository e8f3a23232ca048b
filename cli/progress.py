"""Show progress of long work: a bar on a terminal, plain lines or JSON lines for logs, or nothing.

Trainers and readers call a reporter as ``reporter(stage, current, total)``; the reporter chooses
how (and how often) to show it, so the algorithms never write to the terminal themselves.
All output goes to stderr, keeping stdout for data. :class:`TrainingProgress` adds what a training
loop knows besides its step (loss, tokens per second, time left).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Literal, TextIO

import click

__all__ = ["ProgressReporter", "ProgressMode", "TrainingProgress", "resolve_mode", "end_bar_line", "format_seconds"]

ProgressMode = Literal["auto", "bar", "json", "log", "none"]

# Redraws per second on a terminal, and JSON lines per second at most: enough to look alive,
# few enough that reporting never costs measurable time.
_BAR_INTERVAL = 0.1
_JSON_INTERVAL = 0.5
_BAR_WIDTH = 30

# The bar currently drawn on stderr (at most one; a ProgressReporter or a TrainingProgress), so other
# messages can move below it first.
_open_bar: Any = None


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


def resolve_mode(mode: ProgressMode, quiet: bool, stream: TextIO | None = None, *,
                 not_a_terminal: Literal["none", "log"] = "none") -> Literal["bar", "json", "log", "none"]:
    """Turns the user's ``--progress`` choice into what to do here.

    ``auto`` means a bar when stderr is a terminal and ``--quiet`` is not given; otherwise nothing, or
    (``not_a_terminal="log"``, for long jobs whose log should show they are alive) a plain line now and
    then. An explicit ``json``, ``log`` or ``bar`` wins over ``--quiet`` (the user asked for it by name).

    >>> import io
    >>> resolve_mode("auto", quiet=False, stream=io.StringIO())
    'none'
    >>> resolve_mode("auto", quiet=False, stream=io.StringIO(), not_a_terminal="log")
    'log'
    >>> resolve_mode("json", quiet=True)
    'json'
    """
    if mode != "auto":
        return mode
    if quiet:
        return "none"
    stream = stream if stream is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    return "bar" if (isatty is not None and isatty()) else not_a_terminal


class ProgressReporter:
    """A ``(stage, current, total)`` callback that renders progress on stderr.

    Args:
        mode: ``"bar"`` (redrawn in place), ``"json"`` (one object per line:
            ``{"stage": ..., "current": ..., "total": ...}``), ``"log"`` (a plain line at most every
            ``every`` seconds, for a log file) or ``"none"``.
        units: Optional per-stage unit; ``"bytes"`` shows MB instead of a count.
        every: Seconds between two lines in ``"log"`` mode.

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

    def __init__(self, mode: Literal["bar", "json", "log", "none"], units: dict[str, str] | None = None,
                 every: float = 30.0) -> None:
        self.mode = mode
        self.units = dict(units or {})
        self.every = every
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
        interval = {"bar": _BAR_INTERVAL, "json": _JSON_INTERVAL}.get(self.mode, self.every)
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
        if self._pending is not None and (self.mode in ("json", "log") or self._bar_open):
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
        if self.mode == "log":
            click.echo(self._bar_text(stage, current, total, bar=False), err=True)
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

    def _bar_text(self, stage: str, current: int, total: int | None, bar: bool = True) -> str:
        bytes_unit = self.units.get(stage) == "bytes"

        def fmt(n: int) -> str:
            return f"{n / 1e6:.1f} MB" if bytes_unit else f"{n:,}"

        if total is None:
            return f"{stage:<6} {fmt(current)}"
        frac = min(1.0, current / total) if total else 1.0
        if not bar:
            return f"{stage} {fmt(current)}/{fmt(total)} ({frac * 100:.1f}%)"
        return f"{stage:<6} {_bar(frac)} {frac * 100:5.1f}% {fmt(current)}/{fmt(total)}"


def _bar(frac: float) -> str:
    filled = int(min(1.0, max(0.0, frac)) * _BAR_WIDTH)
    return "[" + "#" * filled + "-" * (_BAR_WIDTH - filled) + "]"


def format_seconds(seconds: float) -> str:
    """A duration for people: ``45s``, ``2m05s``, ``1h02m``.

    >>> format_seconds(45.2), format_seconds(125), format_seconds(3725)
    ('45s', '2m05s', '1h02m')
    """
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class TrainingProgress:
    """Progress of a training loop: ``reporter(stage, current, total)`` for its preparation (tokenizing),
    and :meth:`row` after every optimizer step with what the loop logged.

    A step shows the step (of the total, when steps or tokens bound the run), the loss (a moving average
    over about 20 steps), tokens per second (since the previous line) and the time left (of the time
    budget, or the remaining steps at the recent pace): redrawn in place on a terminal (``bar``), a line
    every ``every`` seconds in a log (``log``; the first step and the last always), one JSON object per
    line at most twice a second (``json``: ``stage``, ``current``, ``total``, ``loss``, ``tokens_per_s``,
    ``seconds_left``), or nothing.

    >>> import io, contextlib
    >>> buf = io.StringIO()
    >>> with contextlib.redirect_stderr(buf):
    ...     rep = TrainingProgress("log", every=60)
    ...     rep.row({"step": 1, "loss": 9.0, "tokens": 4096, "elapsed": 0.5, "total_steps": 100, "time_budget": None})
    ...     rep.close()
    >>> buf.getvalue().split()[:4]
    ['step', '1/100', '(1.0%)', 'loss']
    """

    def __init__(self, mode: Literal["bar", "json", "log", "none"], every: float = 30.0) -> None:
        self.mode = mode
        self.every = every
        self._stages = ProgressReporter(mode, units={"read": "bytes"}, every=every)
        self._loss: float | None = None
        self._mark: tuple[int, float] | None = None  # (tokens, elapsed) at the previous line
        self._rate = 0.0
        self._pace: tuple[int, float] | None = None  # (step, elapsed) when this process started training
        self._last_emit = float("-inf")
        self._pending: dict | None = None
        self._bar_open = False
        self._last_len = 0

    def __call__(self, stage: str, current: int, total: int | None) -> None:
        if stage != "train":  # the loop's own step counter: row() shows more
            self._stages(stage, current, total)

    def row(self, info: dict) -> None:
        """After each step: ``step``, ``loss``, ``tokens`` (so far), ``elapsed`` (training seconds so far),
        ``total_steps`` (or None) and ``time_budget`` (seconds, or None)."""
        if self.mode == "none":
            return
        self._stages.close()
        loss = float(info["loss"])
        self._loss = loss if self._loss is None else 0.9 * self._loss + 0.1 * loss
        if self._pace is None:
            self._pace = (int(info["step"]), float(info["elapsed"]))
            self._mark = (0, 0.0)
        now = time.monotonic()
        interval = {"bar": _BAR_INTERVAL, "json": _JSON_INTERVAL}.get(self.mode, self.every)
        first = self._last_emit == float("-inf")
        if first or now - self._last_emit >= interval or self._finished(info):
            self._emit(info)
            self._last_emit = now
        else:
            self._pending = info

    def close(self) -> None:
        """Shows the last step if it was not shown, and ends the bar's line."""
        self._stages.close()
        if self._pending is not None:
            self._emit(self._pending)
        if self._bar_open:
            end_bar_line()

    @staticmethod
    def _finished(info: dict) -> bool:
        total, budget = info.get("total_steps"), info.get("time_budget")
        return bool((total and info["step"] >= total) or (budget and info["elapsed"] >= budget))

    def _emit(self, info: dict) -> None:
        self._pending = None
        step, elapsed, tokens = int(info["step"]), float(info["elapsed"]), int(info["tokens"])
        total, budget = info.get("total_steps"), info.get("time_budget")
        assert self._mark is not None and self._pace is not None
        if self._mark[0] and elapsed > self._mark[1]:
            self._rate = (tokens - self._mark[0]) / (elapsed - self._mark[1])
        elif elapsed > 0 and not self._mark[0]:
            self._rate = float(info.get("tokens_per_s") or 0.0)
        self._mark = (tokens, elapsed)
        fractions, lefts = [], []
        if budget:
            fractions.append(elapsed / budget)
            lefts.append(budget - elapsed)
        if total:
            fractions.append(step / total)
            done, spent = step - self._pace[0], elapsed - self._pace[1]
            if done > 0 and spent > 0:  # the pace of this process (a resumed run may have run elsewhere)
                lefts.append((total - step) * spent / done)
            elif step > 0:
                lefts.append((total - step) * elapsed / step)
        frac = max(fractions) if fractions else None
        left = min(lefts) if lefts else None
        if self.mode == "json":
            click.echo(json.dumps({"stage": "train", "current": step, "total": total, "loss": self._loss,
                                   "tokens_per_s": round(self._rate, 1),
                                   "seconds_left": None if left is None else round(max(0.0, left), 1)}), err=True)
            return
        where = f"step {step:,}/{total:,}" if total else f"step {step:,}"
        parts = [f"loss {self._loss:.3f}", f"{self._rate:,.0f} tok/s"]
        if left is not None:
            parts.append(f"{format_seconds(left)} left")
        if self.mode == "log":
            pct = f" ({frac * 100:.1f}%)" if frac is not None else ""
            click.echo(f"{where}{pct}  " + "  ".join(parts), err=True)
            return
        head = f"train  {_bar(frac)} {frac * 100:5.1f}%  " if frac is not None else "train  "
        text = head + where + "  " + "  ".join(parts)
        padded = text.ljust(self._last_len) if self._bar_open else text
        click.echo("\r" + padded, err=True, nl=False)
        self._last_len = len(text)
        self._bar_open = True
        global _open_bar
        _open_bar = self
