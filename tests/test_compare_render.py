"""The sample data (``build_samples``) and the terminal view of a comparison.

Samples are built from real tokenizers of the three token alphabets: byte-level BPE (``Ġ``), SentencePiece
BPE with byte fallback (``▁``, ``<0xE2>``) and BERT WordPiece (``##``); the checks compare each group's
bytes with the text and the vocabulary, independently of how ``samples.py`` derives them.
"""

from __future__ import annotations

import io
import re
import unicodedata

import pytest

import _compare_fixtures as F
from subword import BPE, Tokenizer, decoders, pre_tokenizers
from subword.compare.render_terminal import render_terminal, use_color
from subword.compare.samples import build_samples, disagreement_spans, token_bytes, visible

NAMES = ["bytebpe", "spm", "bert"]
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def toks():
    return [F.byte_level(), F.sentencepiece_bpe(), F.wordpiece()]


@pytest.fixture(scope="module")
def samples(toks):
    lines = F.SAMPLE_LINES
    encodings = [t.encode_batch(lines, add_special_tokens=False) for t in toks]
    return build_samples(toks, NAMES, lines, encodings, list(range(len(lines))))


@pytest.fixture(scope="module")
def doc(toks):
    return F.simple_document(toks, NAMES, F.SAMPLE_LINES, list(range(len(F.SAMPLE_LINES))))


def _row(samples, line, name):
    return next(r for r in samples[line]["rows"] if r["name"] == name)["tokens"]


def _unbyte(display: str) -> str:
    return re.sub(r"⟨[0-9A-F]{2}⟩", "", display)


# ==== samples: bytes per token alphabet ====


def test_groups_cover_the_line_in_order_without_overlap(samples, toks):
    for sample, line in zip(samples, F.SAMPLE_LINES):
        assert sample["text"] == line
        for row, tok in zip(sample["rows"], toks):
            tokens = row["tokens"]
            ids = [i for t in tokens for i in t["ids"]]
            assert ids == tok.encode(line, add_special_tokens=False).ids  # every id, once, in order
            for a, b in zip(tokens, tokens[1:]):
                assert a["end"] <= b["start"]
            for t in tokens:
                assert t["text"] == line[t["start"]:t["end"]]


def test_byte_level_groups_are_exactly_the_line_bytes(samples):
    for i, line in enumerate(F.SAMPLE_LINES):
        tokens = _row(samples, i, "bytebpe")
        assert b"".join(bytes.fromhex(t["bytes_hex"]) for t in tokens) == line.encode("utf-8")
        for t in tokens:
            assert bytes.fromhex(t["bytes_hex"]).decode("utf-8") == t["text"]  # whole characters, the right ones
            assert t["display"] == visible(t["text"])


def test_utf8_splitting_tokens_are_grouped(samples, toks):
    """The small byte-level BPE splits each CJK char into 2-3 byte tokens: one group per char, several ids."""
    tokens = _row(samples, 4, "bytebpe")
    assert [t["text"] for t in tokens] == list(F.SAMPLE_LINES[4])
    assert all(len(t["ids"]) >= 2 for t in tokens)
    inverse = {i: s for s, i in toks[0].get_vocab().items()}
    for t in tokens:
        pieces = [inverse[i] for i in t["ids"]]
        # each id alone is not a whole character (that is why they were grouped)
        assert all(len(p) == 1 for p in pieces)


def test_sentencepiece_byte_fallback_pieces(samples, toks):
    spm = toks[1]
    tokens = _row(samples, 5, "spm")
    euro = next(t for t in tokens if t["text"] == "€")
    assert euro["display"] == "⟨E2⟩⟨82⟩⟨AC⟩" and euro["bytes_hex"] == "e282ac"
    assert [spm.id_to_token(i) for i in euro["ids"]] == ["<0xE2>", "<0x82>", "<0xAC>"]
    # ▁ pieces are spaces; the dummy prefix shows on the first token
    assert tokens[0]["display"].startswith("·") and bytes.fromhex(tokens[0]["bytes_hex"]).startswith(b" ")
    for t in tokens:
        data = bytes.fromhex(t["bytes_hex"])
        assert data.decode("utf-8").strip() == t["text"].strip()
        if "⟨" not in t["display"]:
            assert t["display"] == visible(data.decode("utf-8"))
    # the tab and the newline are byte pieces in this vocabulary
    assert "⟨09⟩" in [t["display"] for t in _row(samples, 1, "spm")]


def test_wordpiece_continuation_prefix_is_not_shown(samples, toks):
    bert = toks[2]
    tokens = _row(samples, 1, "bert")
    pieces = [bert.id_to_token(t["ids"][0]) for t in tokens]
    assert any(p.startswith("##") for p in pieces)
    assert [t["display"] for t in tokens] == [p.removeprefix("##") for p in pieces]
    # spaces are not tokens in WordPiece: text slices never contain one
    assert all(" " not in t["text"] for t in tokens)
    unk = [t for t in _row(samples, 5, "bert") if t["display"] == "[UNK]"]
    assert [t["text"] for t in unk] == ["🙂"]


def test_token_bytes_for_each_decoder_kind():
    assert token_bytes([decoders.ByteLevel()], "ĠâĤ¬") == (" €".encode(), False)
    llama = [decoders.Replace({"String": "▁"}, " "), decoders.ByteFallback(), decoders.Fuse(),
             decoders.Strip(" ", 1, 0)]
    assert token_bytes(llama, "▁hello") == (b" hello", False)
    assert token_bytes(llama, "<0xF0>") == (b"\xf0", True)
    assert token_bytes([decoders.BPEDecoder(suffix="</w>")], "lo</w>") == (b"lo", False)
    assert token_bytes([decoders.WordPiece()], "##ing") == (b"ing", False)
    assert token_bytes([], "plain") == (b"plain", False)


def test_a_tokenizer_without_a_decoder_is_read_from_its_pipeline():
    from subword.compare.samples import _decoder_steps

    byte_level = Tokenizer(BPE({"Ġ": 0, "a": 1}, []), pre_tokenizer=pre_tokenizers.ByteLevel(add_prefix_space=False))
    line = " a"
    s = build_samples([byte_level], ["t"], [line], [byte_level.encode_batch([line], add_special_tokens=False)], [0])
    assert [t["display"] for t in s[0]["rows"][0]["tokens"]] == ["·", "a"]
    assert [type(d).__name__ for d in _decoder_steps(byte_level)] == ["ByteLevel"]


def test_sentencepiece_model_types_without_a_decoder():
    """A ``.model`` file's own model types (``SentencePieceBPE`` / ``SentencePieceUnigram``): ``▁`` and bytes."""
    from types import SimpleNamespace

    from subword.compare.samples import _decoder_steps

    class SentencePieceBPE:
        byte_fallback = True

    tok = SimpleNamespace(decoder=None, pre_tokenizer=None, model=SentencePieceBPE())
    steps = _decoder_steps(tok)
    assert token_bytes(steps, "▁the") == (b" the", False)
    assert token_bytes(steps, "<0xE2>") == (b"\xe2", True)


def test_a_sentencepiece_model_file(tmp_path):
    """A ``.model`` file through ``Tokenizer.from_file`` (sentencepiece's Unigram, byte fallback, no decoder)."""
    spm = pytest.importorskip("sentencepiece")
    text = tmp_path / "train.txt"
    text.write_text("\n".join(F.training_lines()) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(tmp_path / "uni"), vocab_size=600,
                                   model_type="unigram", byte_fallback=True, minloglevel=2)
    tok = Tokenizer.from_file(tmp_path / "uni.model")
    lines = F.SAMPLE_LINES
    sample = build_samples([tok], ["uni"], lines, [tok.encode_batch(lines, add_special_tokens=False)], [5])[0]
    tokens = sample["rows"][0]["tokens"]
    euro = next(t for t in tokens if t["text"] == "€")
    assert euro["display"] == "⟨E2⟩⟨82⟩⟨AC⟩"
    assert [tok.id_to_token(i) for i in euro["ids"]] == ["<0xE2>", "<0x82>", "<0xAC>"]
    assert any(t["display"].startswith("·") and tok.id_to_token(t["ids"][0]).startswith("▁") for t in tokens)
    processor = spm.SentencePieceProcessor(model_file=str(tmp_path / "uni.model"))
    assert [i for t in tokens for i in t["ids"]] == processor.encode(lines[5])


def test_bad_arguments_are_refused(toks):
    with pytest.raises(ValueError, match="names"):
        build_samples(toks, NAMES[:2], ["a"], [[], [], []], [0])
    encs = [t.encode_batch(["a"], add_special_tokens=False) for t in toks]
    with pytest.raises(ValueError, match="line index 3"):
        build_samples(toks, NAMES, ["a"], encs, [3])


# ==== disagreements ====


def test_disagreement_spans_ignore_whitespace_and_find_different_cuts():
    line = "unhappy day"
    assert disagreement_spans(line, [[(0, 7), (7, 11)], [(0, 7), (8, 11)], [(0, 8), (8, 11)]]) == []
    assert disagreement_spans(line, [[(0, 2), (2, 7), (8, 11)], [(0, 7), (7, 11)]]) == [[0, 7]]
    assert disagreement_spans(line, [[(0, 7), (8, 9), (9, 11)], [(0, 11)]]) == [[0, 11]]
    assert disagreement_spans("ab", [[(0, 1), (1, 2)]]) == []  # one tokenizer agrees with itself


def test_disagreements_in_real_samples(samples):
    english = samples[0]
    # WordPiece keeps "quick" whole where both BPEs cut it
    assert [4, 9] in english["disagreements"]
    for span in english["disagreements"]:
        text = english["text"][span[0]:span[1]]
        assert text == text.strip() and text
    # a span with no disagreement: "the" is one token (plus its space) everywhere
    the = english["text"].index(" the ") + 1
    assert not any(a <= the < b for a, b in english["disagreements"])


# ==== terminal view ====


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_use_color_rules():
    assert use_color(_Tty(), {}) is True
    assert use_color(_Tty(), {"NO_COLOR": "1"}) is False
    assert use_color(_Tty(), {"NO_COLOR": ""}) is True  # no-color.org: only a non-empty value counts
    assert use_color(io.StringIO(), {}) is False  # a pipe or a file


def test_plain_output_has_no_escapes_and_shows_all_marks(doc):
    text = render_terminal(doc, color=False, show=6)
    assert "\x1b" not in text
    lines = text.splitlines()
    tokens_row = next(line for line in lines if line.startswith("tokens "))
    best = doc["best"]["tokens"]
    cells = re.findall(r"(\d[\d,]*) \(", tokens_row)
    assert cells == [f"{t['metrics']['tokens']['value']:,}" for t in doc["tokenizers"]]
    assert tokens_row.count("*") == 1 and tokens_row.rstrip().endswith("*") == (best == NAMES[-1])
    # differences: a column per pair; the tokens row is significant, tokens/word within noise
    diff_rows = [line for line in lines if line.startswith("  tokens ") or line.startswith("  tokens / word")]
    assert len(diff_rows) == 2
    assert "≈" not in diff_rows[0] and diff_rows[1].count("≈") == len(doc["pairwise"])
    for pair in doc["pairwise"]:
        assert f"{pair['differences']['tokens']['value']:+,}".replace("-", "−") in diff_rows[0]
    for sample in doc["samples"]:
        for row in sample["rows"]:
            expected = "│".join(t["display"] for t in row["tokens"])
            assert any(line.startswith(row["name"]) and expected in line for line in lines), row["name"]


def test_many_tokenizers_leave_the_intervals_out(doc):
    import copy

    wide = copy.deepcopy(doc)
    wide["tokenizers"] += [dict(t, name=t["name"] + "2") for t in doc["tokenizers"]]
    row = next(line for line in render_terminal(wide, color=False, show=0).splitlines() if line.startswith("tokens"))
    assert "(" not in row and len(re.findall(r"\d[\d,]*", row)) == 6


def test_show_limits_the_sample_lines(doc):
    def shown(text):
        return [line.split()[1] for line in text.splitlines() if re.match(r"line \d+ ", line)]

    assert shown(render_terminal(doc, color=False, show=0)) == []
    assert "Sample lines" not in render_terminal(doc, color=False, show=0)
    assert shown(render_terminal(doc, color=False, show=2)) == ["0", "1"]
    assert shown(render_terminal(doc, color=False, show=99)) == [str(i) for i in range(len(doc["samples"]))]


def test_colour_output_alternates_and_keeps_the_tokens(doc):
    text = render_terminal(doc, color=True, show=6)
    assert "\x1b[" in text
    row = next(line for line in text.splitlines() if line.startswith("spm") and "⟨E2⟩" in line)
    cells = re.findall(r"\x1b\[30;48;5;(\d+)m(?:\x1b\[1m)?(.*?)\x1b\[0m", row)
    want = [t["display"] for t in _row(doc["samples"], 5, "spm")]
    assert [c[1] for c in cells] == want
    assert all(a[0] != b[0] for a, b in zip(cells, cells[1:]))  # neighbours never share a background
    assert "│" not in ANSI.sub("", row)  # colours replace the separators


def test_disagreement_marks_sit_under_the_spans(doc):
    lines = render_terminal(doc, color=False, show=6).splitlines()
    for sample in doc["samples"]:
        head = next(i for i, line in enumerate(lines) if line.startswith(f"line {sample['line_index']} "))
        if not sample["disagreements"]:
            assert "^" not in lines[head + 1]
            continue
        indent = lines[head].index(visible(sample["text"])[:3])
        marks = lines[head + 1][indent:]
        text = sample["text"]
        columns = []
        for pos, ch in enumerate(text):
            w = 2 if unicodedata.east_asian_width(ch) in "WF" else 1
            columns += [any(a <= pos < b for a, b in sample["disagreements"])] * w
        assert [c == "^" for c in marks.ljust(len(columns))] == columns


def test_glyphs_for_whitespace(doc):
    text = render_terminal(doc, color=False, show=6)
    line1 = next(line for line in text.splitlines() if line.startswith("bytebpe") and "→" in line)
    assert "·d│" in line1 and "│↵" in line1  # space inside a token, tab and newline tokens


@pytest.mark.parametrize("module", ["subword.compare.samples", "subword.compare.render_terminal",
                                    "subword.compare.render_html", "subword.compare._format"])
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_round_trip_examples_show_the_text_around_the_difference():
    original = "a" * 150 + "XYZ" + "b" * 100
    decoded = "a" * 150 + "xyz" + "b" * 100
    doc = {"tokenizers": [{"name": "t", "metrics": {}, "lossless_examples": [
        {"line_index": 7, "original": original, "decoded": decoded, "first_difference": 150}]}]}
    line = next(x for x in render_terminal(doc, color=False, show=0).splitlines() if x.startswith("  t, line 7"))
    assert "…" + "a" * 30 + "XYZ" in line and "…" + "a" * 30 + "xyz" in line
    assert "a" * 31 not in line and line.endswith("(first difference at char 150)")


# ==== the views of a real comparison (issue 21): attribution, intervals, significance, whitespace ====


@pytest.fixture(scope="module")
def compared(toks):
    import subword

    lines = F.training_lines()[:200] + F.SAMPLE_LINES * 3
    return subword.compare(toks[:1] + toks[2:], lines, names=["bytebpe", "bert"], bootstrap_replicates=50, show=2)


def test_attribution_shows_decoded_tokens_and_a_cumulative_share_that_grows(compared):
    att = compared.words[0]
    shares = [w["cumulative_share"] for w in att["words"]]
    assert all(0 < x <= 1 for x in shares) and shares == sorted(shares)
    assert att["more_in_a"] + att["more_in_b"] == att["net"] and att["more_in_a"] >= 0 >= att["more_in_b"]
    for w in att["words"]:
        for side in ("a", "b"):
            groups, spelled = w[f"display_{side}"], w[f"segmentation_{side}"]
            assert sum(g["tokens"] for g in groups) == len(spelled)
        if w["kind"] == "letters" and w["script"] == "Latin" and w["display_a"]:
            # Byte-level BPE's tokens decoded: the word itself, with the space its first token carries as ·.
            assert "".join(g["display"] for g in w["display_a"]).lstrip("·") == w["word"], w
    arabic = next(w for w in att["words"] if w["script"] == "Arabic")
    # Byte-level BPE splits Arabic letters into bytes; the view shows the letters, never Ø§-style bytes.
    assert any(g["tokens"] > 1 for g in arabic["display_a"])
    shown = "".join(g["display"] for g in arabic["display_a"])
    assert shown == arabic["word"] and not re.search("[ØÙ]", shown)
    text = compared.render_terminal(color=False)
    table = text.split("Words behind the token-count gap")[1]
    assert arabic["word"] in table and "Ø" not in table
    assert "∅: no token ends in the word" in table and "cumulative: the share of all per-word differences" in table
    page = compared.to_html()
    assert "∅: no token ends inside the word" in page


def test_no_interval_that_is_not_one_and_no_significance_that_prints_as_zero():
    from subword.compare.render_html import render_html

    doc = {"schema_version": 2, "inputs": {"lines": 3},
           "tokenizers": [{"name": n, "metrics": {"mb_per_s": {"value": 8.0, "ci": ci},
                                                 "type_token_ratio": {"value": 0.2, "ci": [0.19, 0.21]}}}
                          for n, ci in (("a", [None, None]), ("b", [8.01, 8.04]))],
           "best": {}, "samples": [],
           "pairwise": [{"a": "a", "b": "b", "unique_a_examples": ["\t\t", " x"], "unique_b_examples": ["\n"],
                         "differences": {
                             "type_token_ratio": {"value": 0.00031, "ci": [0.00012, 0.0005], "significant": True},
                             "continued_words": {"value": 0.0, "ci": [0.0, 0.0], "significant": False},
                             "tokens": {"value": 0.04, "ci": [0.01, 0.07], "significant": True}}}]}
    page = render_html(doc)
    mb = [cell.split("</td>")[0] for cell in page.split('data-metric="mb_per_s"')[1:]]
    assert len(mb) == 2 and not any("CI" in cell for cell in mb)  # none, and one that prints 8.0–8.0
    ttr = page.split('data-diff="type_token_ratio"')[1].split("</td>")[0]
    assert "+0.0003 [+0.0001, +0.0005]" in ttr and "noise" not in ttr and 'class="num diff sig"' in \
        page.split('data-diff="type_token_ratio"')[0][-40:]
    tokens = page.split('data-diff="tokens"')[1].split("</td>")[0]
    assert "≈ noise" in tokens  # significant, but +0.0 at the shown precision
    assert '<span class="chip">→→</span>' in page and '<span class="chip">·x</span>' in page
    assert '<span class="chip">↵</span>' in page
    text = render_terminal(doc, color=False, show=0)
    row = next(line for line in text.splitlines() if line.strip().startswith("type / token") and "[" in line)
    assert "+0.0003 [+0.0001, +0.0005]" in row and "≈" not in row
    assert next(line for line in text.splitlines() if line.startswith("  tokens ")).rstrip().endswith("≈")


def test_a_difference_without_an_interval_gets_no_verdict(compared):
    diff = compared.pairwise[0]["differences"]["mb_per_s"]
    assert diff["ci"] == [None, None] and diff["significant"] is False
    page = compared.to_html()
    cell = page.split('data-diff="mb_per_s"')[1].split("</td>")[0]
    assert "noise" not in cell and 'class="num diff plain"' in page.split('data-diff="mb_per_s"')[0][-40:]
    row = next(line for line in compared.render_terminal(color=False).splitlines() if line.startswith("  MB/s"))
    assert "≈" not in row
