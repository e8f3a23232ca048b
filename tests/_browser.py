"""Headless Chromium for the HTML report tests: the DOM after the page's scripts ran, and screenshots.

No Python driver: ``chromium --headless --dump-dom`` prints the serialized DOM once the page is loaded and
its (synchronous) scripts have run; ``--virtual-time-budget`` lets timers settle first. Tests skip when no
browser is installed (CI installs Debian's ``chromium``). Nothing here reaches the network: pages are
``file://`` URLs and host resolution is disabled.
"""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    return next((path for path in map(shutil.which, _NAMES) if path), None)


def require_chromium() -> str:
    path = find_chromium()
    if path is None:
        pytest.skip("no Chromium found (Debian: apt-get install chromium); the HTML report tests need a browser")
    return path


def _run(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    cmd = [require_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--no-first-run", "--disable-extensions", "--host-resolver-rules=MAP * ~NOTFOUND",
           f"--user-data-dir={profile}", "--virtual-time-budget=1000", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"chromium failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc


def dump_dom(page: Path, tmp: Path, query: str = "", width: int = 1280) -> str:
    """The DOM of ``page`` after its scripts ran (``query``: e.g. ``"?selfcheck"``)."""
    return _run([f"--window-size={width},2000", "--dump-dom", page.resolve().as_uri() + query],
                tmp / "chromium-profile").stdout


def screenshot(page: Path, out: Path, tmp: Path, width: int = 1280, height: int = 3200) -> Path:
    """A PNG of ``page`` at ``width`` x ``height`` CSS pixels."""
    _run(["--hide-scrollbars", f"--window-size={width},{height}", f"--screenshot={out}", page.resolve().as_uri()],
         tmp / "chromium-profile")
    return out


class ReportDom(HTMLParser):
    """What the tests check in a rendered report: samples -> rows -> token spans, metric cells, selfcheck."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.samples: list[dict] = []
        self.metric_cells: list[dict] = []
        self.selfcheck = ""
        self._tok: dict | None = None
        self._tok_depth = 0
        self._in_selfcheck = False
        self._cell: dict | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        classes = set(a.get("class", "").split())
        if self._tok is not None:
            self._tok_depth += 1
            if "b" in classes:
                self._tok["byte_pieces"] += 1
            return
        if "sample" in classes:
            self.samples.append({"line": a.get("data-line"), "rows": [], "dir": None})
        elif "linetext" in classes and self.samples:
            self.samples[-1]["dir"] = a.get("dir")
        elif "row" in classes and self.samples:
            self.samples[-1]["rows"].append({"name": a.get("data-name"), "dir": a.get("dir"), "tokens": []})
        elif "tok" in classes and self.samples and self.samples[-1]["rows"]:
            self._tok = {"ids": [int(x) for x in a.get("data-ids", "").split()], "start": int(a["data-s"]),
                         "end": int(a["data-e"]), "bytes": a.get("data-bytes"), "text": a.get("data-text"),
                         "style": a.get("style", ""), "classes": classes, "shown": "", "byte_pieces": 0}
            self._tok_depth = 0
        elif tag == "pre" and a.get("id") == "selfcheck":
            self._in_selfcheck = True
        elif tag == "td" and "data-metric" in a:
            self._cell = {"metric": a["data-metric"], "best": "best" in classes, "text": ""}

    def handle_endtag(self, tag: str) -> None:
        if self._tok is not None:
            if self._tok_depth == 0:
                self.samples[-1]["rows"][-1]["tokens"].append(self._tok)
                self._tok = None
            else:
                self._tok_depth -= 1
            return
        if tag == "pre":
            self._in_selfcheck = False
        if tag == "td" and self._cell is not None:
            self.metric_cells.append(self._cell)
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._tok is not None:
            self._tok["shown"] += data
        elif self._in_selfcheck:
            self.selfcheck += data
        elif self._cell is not None:
            self._cell["text"] += data
