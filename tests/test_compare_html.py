"""The HTML report, opened in a real browser (headless Chromium): DOM counts equal the document's, hover
highlighting, right-to-left and CJK layout, and a screenshot under the test's temp dir.

The documents' samples come from the real ``build_samples`` over three real tokenizers (byte-level BPE,
SentencePiece BPE with byte fallback, BERT WordPiece); their metric sections are simple counts
(``_compare_fixtures.simple_document``). Skips without Chromium (CI: ``apt-get install chromium``).
"""

from __future__ import annotations

import json
import re

import pytest

import _compare_fixtures as F
from _browser import ReportDom, dump_dom, require_chromium, screenshot
from subword.compare.render_html import render_html, token_hue

NAMES = ["bytebpe", "spm", "bert"]


@pytest.fixture(scope="module")
def doc():
    toks = [F.byte_level(), F.sentencepiece_bpe(), F.wordpiece()]
    return F.simple_document(toks, NAMES, F.SAMPLE_LINES, list(range(len(F.SAMPLE_LINES))))


@pytest.fixture(scope="module")
def page(doc, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "report.html"
    path.write_text(render_html(doc), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def checked(page, tmp_path_factory):
    """The report's DOM after its self-check hovered every token (hover classes are cleared afterwards)."""
    require_chromium()
    return ReportDom(dump_dom(page, tmp_path_factory.mktemp("chromium"), "?selfcheck"))


def _overlaps(s1, e1, s2, e2):
    if s1 == e1 and s2 == e2:
        return s1 == s2
    if s1 == e1:
        return s2 <= s1 < e2
    if s2 == e2:
        return s1 <= s2 < e1
    return max(s1, s2) < min(e1, e2)


# ==== static properties (no browser) ====


def test_page_is_self_contained(page):
    text = page.read_text(encoding="utf-8")
    assert "<link" not in text and "@import" not in text
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", text)
    assert "<svg" in text and "<style>" in text and "<script>" in text


def test_template_files_are_package_data():
    """The page is assembled from files beside the module (maturin ships them in the wheel: checked by hand
    with ``maturin build``; an editable install reads them from the source tree)."""
    from importlib import resources

    folder = resources.files("subword.compare")
    for name in ("report.html", "report.css", "report.js"):
        assert folder.joinpath(name).read_text(encoding="utf-8").strip(), name


def test_same_bytes_same_colour_in_every_row(doc):
    page = ReportDom(render_html(doc))
    hues: dict[str, set[str]] = {}
    rows_of: dict[str, set[int]] = {}
    for sample in page.samples:
        for r, row in enumerate(sample["rows"]):
            for tok in row["tokens"]:
                hues.setdefault(tok["bytes"], set()).add(re.search(r"--h:(\d+)", tok["style"]).group(1))
                rows_of.setdefault(tok["bytes"], set()).add(r)
    shared = [b for b, rows in rows_of.items() if len(rows) > 1]
    assert len(shared) > 10  # "."/"▁the"-like tokens appear under several tokenizers
    assert all(len(hues[b]) == 1 for b in hues)
    assert all(hues[b] == {str(token_hue(b))} for b in shared)
    assert len({h for hs in hues.values() for h in hs}) > 20  # colours actually vary


# ==== in the browser ====


def test_rendered_dom_counts_equal_the_document(doc, checked):
    dom = checked
    assert len(dom.samples) == len(doc["samples"])
    for sample, expected in zip(dom.samples, doc["samples"]):
        assert sample["line"] == str(expected["line_index"])
        assert [r["name"] for r in sample["rows"]] == NAMES  # a row per tokenizer, in order
        for row, want in zip(sample["rows"], expected["rows"]):
            assert len(row["tokens"]) == len(want["tokens"])  # one span per token group
            assert [t["ids"] for t in row["tokens"]] == [t["ids"] for t in want["tokens"]]
            assert [(t["start"], t["end"]) for t in row["tokens"]] == [(t["start"], t["end"]) for t in want["tokens"]]
            assert [t["shown"] for t in row["tokens"]] == [t["display"] for t in want["tokens"]]
            assert [t["bytes"] for t in row["tokens"]] == [t["bytes_hex"] for t in want["tokens"]]
            assert [t["text"] for t in row["tokens"]] == [t["text"] for t in want["tokens"]]
    # The metrics table: a cell per tokenizer per metric, the best one marked as the document says.
    by_metric: dict[str, list[dict]] = {}
    for cell in dom.metric_cells:
        by_metric.setdefault(cell["metric"], []).append(cell)
    for metric, cells in by_metric.items():
        assert len(cells) == len(NAMES)
        best = doc["best"].get(metric)
        assert [c["best"] for c in cells] == [name == best for name in NAMES], metric
    tokens = [c["text"] for c in by_metric["tokens"]]
    assert [t.split("★")[0].split("95%")[0].replace(",", "") for t in tokens] == [
        str(t["metrics"]["tokens"]["value"]) for t in doc["tokenizers"]]


def test_hover_highlights_the_overlapping_tokens_of_the_other_tokenizers(doc, checked):
    results = json.loads(checked.selfcheck)["hover"]
    assert len(results) == sum(len(r["tokens"]) for s in doc["samples"] for r in s["rows"])
    for res in results:
        sample = doc["samples"][res["sample"]]
        tok = sample["rows"][res["row"]]["tokens"][res["token"]]
        expected = sorted([oi, k] for oi, other in enumerate(sample["rows"]) if oi != res["row"]
                          for k, t in enumerate(other["tokens"])
                          if _overlaps(tok["start"], tok["end"], t["start"], t["end"]))
        assert sorted(res["highlighted"]) == expected, res
        assert res["active"] and res["tip_shown"] and res["tip_has_ids"] and res["tip_has_bytes"], res
        assert res["cleared"], res
    assert any(len(r["highlighted"]) >= 2 for r in results)  # real overlaps, not just one-to-one matches


def test_right_to_left_rows_start_at_the_right_and_bytes_read_left_to_right(doc, checked):
    dom = checked
    layout = json.loads(dom.selfcheck)["layout"]
    rtl_lines = {i for i, s in enumerate(doc["samples"]) if re.search(r"[\u0590-\u06FF]", s["text"])}
    assert rtl_lines == {2, 3}
    for entry in layout:
        if entry["sample"] in rtl_lines:
            assert entry["dir"] == "rtl" and entry["first_right_gap"] < 2, entry
        else:
            assert entry["dir"] == "ltr" and entry["first_left_gap"] < 2, entry
        assert entry["byte_pieces_ltr"], entry
    assert [s["dir"] for s in dom.samples] == ["rtl" if i in rtl_lines else "ltr" for i in range(len(dom.samples))]


def test_screenshot(page, tmp_path):
    require_chromium()
    shot = screenshot(page, tmp_path / "report.png", tmp_path)
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 3200)
    assert len(data) > 50_000  # a page with content, not a blank canvas


# ==== end to end: `subword compare --json --html`, the report opened in the browser ====


@pytest.fixture(scope="module")
def cli_outputs(tmp_path_factory):
    from click.testing import CliRunner

    from cli.main import cli

    d = tmp_path_factory.mktemp("compare-cli")
    text = d / "text.txt"
    # The sample lines (RTL, CJK, byte fallback) only, so every one of them is shown.
    text.write_text("\n".join(line.rstrip("\n") for line in F.SAMPLE_LINES) + "\n", encoding="utf-8")
    paths = []
    for name, tok in zip(NAMES, (F.byte_level(), F.sentencepiece_bpe(), F.wordpiece())):
        paths += ["-t", str(d / f"{name}.json")]
        tok.save(d / f"{name}.json")
    out_json, out_html = d / "out.json", d / "out.html"
    result = CliRunner().invoke(cli, ["compare", *paths, str(text), "--names", ",".join(NAMES), "--show", "10",
                                      "--bootstrap", "50", "--json", str(out_json), "--html", str(out_html),
                                      "--no-color"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(out_json.read_text(encoding="utf-8")), out_html, result.output


def test_cli_report_in_the_browser_matches_its_json(cli_outputs, tmp_path):
    require_chromium()
    doc, page, _ = cli_outputs
    assert len(doc["samples"]) == len(F.SAMPLE_LINES)
    dom = ReportDom(dump_dom(page, tmp_path))
    assert len(dom.samples) == len(doc["samples"])
    for sample, expected in zip(dom.samples, doc["samples"]):
        assert [r["name"] for r in sample["rows"]] == NAMES
        for row, want in zip(sample["rows"], expected["rows"]):
            assert len(row["tokens"]) == len(want["tokens"])
            assert [t["ids"] for t in row["tokens"]] == [t["ids"] for t in want["tokens"]]
    # the ids of each row are exactly the tokenizer's encoding of the line (the JSON's token counts)
    toks = dict(zip(NAMES, (F.byte_level(), F.sentencepiece_bpe(), F.wordpiece())))
    for sample, expected in zip(dom.samples, doc["samples"]):
        for row in sample["rows"]:
            ids = [i for t in row["tokens"] for i in t["ids"]]
            assert ids == toks[row["name"]].encode(expected["text"], add_special_tokens=False).ids
    total = {name: sum(len(t["ids"]) for s in dom.samples for r in s["rows"] if r["name"] == name
                       for t in r["tokens"]) for name in NAMES}
    assert total == {t["name"]: t["metrics"]["tokens"]["value"] for t in doc["tokenizers"]}  # all lines shown
    cells: dict[str, list[dict]] = {}
    for cell in dom.metric_cells:
        cells.setdefault(cell["metric"], []).append(cell)
    assert set(cells) >= {"tokens", "tokens_per_word", "chars_per_token", "renyi_efficiency"}
    for metric, row in cells.items():
        assert [c["best"] for c in row] == [doc["best"].get(metric) == n for n in NAMES], metric


def test_cli_terminal_view_matches_its_json(cli_outputs):
    doc, _, output = cli_outputs
    assert "\x1b" not in output
    row = next(line for line in output.splitlines() if line.startswith("tokens "))
    assert re.findall(r"(\d[\d,]*) \(", row) == [f"{t['metrics']['tokens']['value']:,}" for t in doc["tokenizers"]]
    for sample in doc["samples"]:
        for r in sample["rows"]:
            assert "│".join(t["display"] for t in r["tokens"]) in output
