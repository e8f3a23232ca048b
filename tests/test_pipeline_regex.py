r"""``Replace`` with general regexes (normalizer and decoder) and the ``Split`` pre-tokenizer against HF
``tokenizers`` 0.23.3.

HF compiles ``Replace`` patterns with Oniguruma; so does the Rust core (the general engine,
``rust/src/pretok/engine.rs``), and the Python reference reads them with the ``regex`` module. For each
pattern and content below, on real gutenberg lines and random multi-script strings, the normalized text
AND its alignment (read through HF's pipeline as in ``test_normalizers_rust.py``: a pre-tokenizer isolating
every char, offsets of each) must equal HF's, and so must the Python reference and the decoder. The
Oniguruma-only constructs (look-around, atomic groups, possessive quantifiers, case folding, POSIX classes,
``\h``, ``\R``, ``\K``, ...) run in the core exactly as in HF; patterns Oniguruma itself refuses are refused
with its message. ``Split`` (every behavior, inverted or not) must give HF's pieces and offsets, alone, in a
Sequence and in whole pipelines.
"""

from __future__ import annotations

import json
import random

import pytest
from _unicode_samples import TRICKY, corpus_lines

import tokenizers
from subword import _core as _core

from subword import Tokenizer
from subword.decoders import Replace as ReplaceDecoder
from subword.normalizers import Replace
from subword.pre_tokenizers import Split

# (pattern dict, content): what SentencePiece conversions write, plus classes, alternations, anchors,
# empty matches, word classes, Unicode properties and a content with regex-replacement syntax.
CASES = [
    ({"Regex": " {2,}"}, "\u2581"),
    ({"Regex": r"\s+"}, " "),
    ({"Regex": r"\s+"}, ""),
    ({"Regex": r"\d+"}, "<num>"),
    ({"Regex": "[aeiou]"}, "XY"),
    ({"Regex": r"\w+"}, "W"),
    ({"Regex": r"\W"}, "|"),
    ({"Regex": "x*|b"}, "_"),
    ({"Regex": r"\p{P}+"}, "."),
    ({"Regex": r"^\s+|\s+$"}, ""),
    ({"Regex": "^."}, "^"),
    ({"Regex": "$"}, "$"),
    ({"Regex": "e*"}, "-"),
    ({"Regex": r"[^\w\s]"}, ""),
    ({"Regex": r"\bth\w*"}, "T"),
    ({"Regex": "ab|a"}, "Q"),
    ({"Regex": r"\.{3}|\u2026"}, "..."),
    ({"Regex": "[\u0300-\u036f]"}, ""),
    ({"Regex": r"(?:th|sh)e?"}, "$1\\"),
    ({"Regex": r"\p{Han}|\p{Hangul}"}, "#"),
    ({"Regex": r"[\p{L}&&\p{Greek}]+"}, "G"),
    ({"String": "``"}, "\""),
    ({"String": "  "}, " "),
]

ONIGURUMA_ONLY = ["(?i)the", "(?i)ss", "(?<=a)b", "(?<!\\s)e", "a(?!b)", "(a)\\1", "(?>ab)", "a++", "\\Z", "[[:alpha:]]",
                  "(?m).", "\\h", "\\R", "x\\K", "\\s+(?!\\S)|\\s+", "\\X", "\\p{N}{1,3}+"]
#: Patterns Oniguruma refuses (HF cannot load them).
INVALID = ["(", "[b-a]", "\\p{NoSuchProperty}", "(?P<x>a)", ")", "\\"]


def _random_lines(n: int, seed: int) -> list[str]:
    """Short strings over scripts with combining marks, jamo, emoji, zero-width and full-width chars."""
    pools = [(0x20, 0x7E), (0x20, 0x7E), (0xC0, 0x17F), (0x300, 0x36F), (0x370, 0x3FF), (0x900, 0x97F),
             (0x1100, 0x11FF), (0xAC00, 0xAC40), (0x1F300, 0x1F3FF), (0x2000, 0x200F), (0xFF00, 0xFFEF),
             (0x4E00, 0x4E40), (0x600, 0x6FF), (0x9, 0xD)]
    rng = random.Random(seed)
    return ["".join(chr(rng.randint(*rng.choice(pools))) for _ in range(rng.randint(1, 16))) for _ in range(n)]


TEXTS = (TRICKY + ["x\u00b2 \u00bd \u2167 \u24b6 a\u200db\u200c \u30fb", "STRA\u00dfE \ufb01"] + corpus_lines("gutenberg_en_20M.txt", 150) + corpus_lines("tinyshakespeare.txt", 60)
         + _random_lines(250, 3) + ["a\nb\n", "baaac", "x", "the\n  then\nshe  "])


def _spec(pattern: dict[str, str], content: str) -> dict:
    return {"type": "Replace", "pattern": pattern, "content": content}


def _hf(normalizer: dict):
    """An HF tokenizer with ``normalizer``, a pre-tokenizer isolating every char and a WordLevel [UNK] model:
    the offsets of its tokens are the original span of each normalized char."""
    data = {
        "version": "1.0",
        "normalizer": normalizer,
        "pre_tokenizer": {"type": "Split", "pattern": {"Regex": r"[\s\S]"}, "behavior": "Isolated", "invert": False},
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"},
    }
    return tokenizers.Tokenizer.from_str(json.dumps(data))


@pytest.mark.parametrize("pattern,content", CASES, ids=[f"{next(iter(p.values()))}->{c}" for p, c in CASES])
def test_replace_normalizer_text_and_alignment_equal_hf(pattern: dict[str, str], content: str) -> None:
    spec = _spec(pattern, content)
    hf = _hf(spec)
    ours = _core.Normalizer(json.dumps(spec))
    reference = Replace(pattern, content)
    for text in TEXTS:
        expected = hf.normalizer.normalize_str(text)
        assert ours.normalize_with_alignment(text) == (expected, hf.encode(text).offsets), ascii(text)
        assert ours.normalize_str(text) == expected, ascii(text)
        assert reference.normalize_str(text) == expected, ascii(text)


def test_replace_after_other_normalizers_equal_hf() -> None:
    """A regex Replace in a Sequence after NFKD + StripAccents: alignments compose as HF's."""
    spec = {"type": "Sequence", "normalizers": [{"type": "NFKD"}, {"type": "StripAccents"},
                                                _spec({"Regex": r"\s+|\p{Nd}"}, "_"), {"type": "Lowercase"}]}
    hf, ours = _hf(spec), _core.Normalizer(json.dumps(spec))
    for text in TEXTS:
        assert ours.normalize_with_alignment(text) == (hf.normalizer.normalize_str(text), hf.encode(text).offsets)


@pytest.mark.parametrize("pattern,content", CASES[:8])
def test_replace_decoder_equals_hf(pattern: dict[str, str], content: str) -> None:
    data = {"version": "1.0", "decoder": _spec(pattern, content),
            "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}}
    hf = tokenizers.Tokenizer.from_str(json.dumps(data))
    ours = ReplaceDecoder(pattern, content)
    for text in TEXTS[::3]:
        tokens = text.split(" ") if text else []
        assert ours.decode(tokens) == hf.decoder.decode(tokens), ascii(text)


@pytest.mark.parametrize("regex", ONIGURUMA_ONLY)
def test_oniguruma_only_constructs_run_as_hf(regex: str) -> None:
    spec = _spec({"Regex": regex}, "|")
    hf = _hf(spec)
    ours = _core.Normalizer(json.dumps(spec))
    Replace({"Regex": regex}, "|")  # accepted by the Python side too
    for text in TEXTS:
        assert ours.normalize_with_alignment(text) == (hf.normalizer.normalize_str(text), hf.encode(text).offsets), \
            ascii(text)


@pytest.mark.parametrize("regex", INVALID)
def test_what_oniguruma_refuses_is_refused_with_its_message(regex: str) -> None:
    spec = _spec({"Regex": regex}, "x")
    with pytest.raises(Exception, match="Oniguruma"):
        _hf(spec)
    with pytest.raises(ValueError, match="Oniguruma"):
        _core.Normalizer(json.dumps(spec))
    with pytest.raises(ValueError, match="Oniguruma"):
        Replace({"Regex": regex}, "x")


@pytest.mark.parametrize("regex", [r"\w", r"[\w]", r"\W", r"[^\w\s]", r"\d", r"\s", r"\p{P}", "."])
def test_class_escapes_equal_hf_on_every_code_point(regex: str) -> None:
    """Oniguruma's ``\\w`` leaves out ZWJ / ZWNJ and, outside brackets only, takes ``² ³ ¹ ¼ ½ ¾``: the core
    and the reference rewrite it so (``\\b`` is not rewritten: a known difference). Every assigned code point,
    in runs of 4,000."""
    import unicodedata

    spec = _spec({"Regex": regex}, "|")
    hf, ours, reference = _hf(spec).normalizer, _core.Normalizer(json.dumps(spec)), Replace({"Regex": regex}, "|")
    points = [chr(c) for c in range(0x21, 0x110000)
              if not 0xD800 <= c < 0xE000 and unicodedata.category(chr(c)) not in ("Cn", "Co")]
    for i in range(0, len(points), 4000):
        text = " x".join(points[i:i + 4000])
        expected = hf.normalize_str(text)
        assert ours.normalize_str(text) == expected, i
        assert reference.normalize_str(text) == expected, i


SPLIT_PATTERNS = [{"String": " "}, {"String": "--"}, {"Regex": r"\s+"}, {"Regex": r"\p{P}"}, {"Regex": r"\d"},
                  {"Regex": r"\w+|[^\w\s]+"}, {"Regex": "x*"}, {"Regex": "$"}]
BEHAVIORS = ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]


@pytest.mark.parametrize("pattern", SPLIT_PATTERNS, ids=[next(iter(p.values())) for p in SPLIT_PATTERNS])
def test_split_pieces_equal_hf(pattern: dict[str, str]) -> None:
    for behavior in BEHAVIORS:
        for invert in (False, True):
            spec = {"type": "Split", "pattern": pattern, "behavior": behavior, "invert": invert}
            hf = tokenizers.Tokenizer.from_str(json.dumps({
                "version": "1.0", "pre_tokenizer": spec,
                "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}})).pre_tokenizer
            native, reference = _core.PreTokenizer(json.dumps(spec)), Split(pattern, behavior, invert)
            for text in TEXTS[::2] + ["the-final--countdown", "--a--", "  a  b  "]:
                expected = hf.pre_tokenize_str(text)
                assert reference.pre_tokenize_str(text) == expected, (behavior, invert, ascii(text))
                assert native.pre_tokenize_str(text) == expected, (behavior, invert, ascii(text))


def _bpe_file() -> str:
    """A small byte-free BPE trained by HF on gutenberg text (WordLevel cannot say much about offsets)."""
    from tokenizers import models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    lines = corpus_lines("gutenberg_en_20M.txt", 3000)
    tok.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=600, special_tokens=["[UNK]"], show_progress=False))
    return tok.to_str()


@pytest.mark.parametrize("pre_tokenizer", [
    {"type": "Split", "pattern": {"Regex": r"\s+|\p{P}"}, "behavior": "Isolated", "invert": False},
    {"type": "Split", "pattern": {"Regex": r"\w+"}, "behavior": "Removed", "invert": True},
    {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithNext", "invert": False},
        {"type": "Split", "pattern": {"Regex": r"\d"}, "behavior": "Isolated", "invert": False}]},
], ids=["isolated", "inverted", "sequence"])
def test_split_in_a_bpe_pipeline_equals_hf(pre_tokenizer: dict) -> None:
    data = json.loads(_bpe_file())
    data["pre_tokenizer"] = pre_tokenizer
    text = json.dumps(data)
    hf, ours = tokenizers.Tokenizer.from_str(text), Tokenizer.from_str(text)
    lines = corpus_lines("gutenberg_en_20M.txt", 400)[-200:] + TEXTS[:40]
    for line, o, h in zip(lines, ours.encode_batch(lines), hf.encode_batch(lines)):
        assert (o.ids, o.tokens, o.offsets) == (h.ids, h.tokens, h.offsets), ascii(line)
    assert ours.encode_batch_ids(lines) == [h.ids for h in hf.encode_batch(lines)]
    assert json.loads(ours.to_json_str())["pre_tokenizer"] == json.loads(hf.to_str())["pre_tokenizer"]


def test_split_runs_look_around_and_refuses_what_oniguruma_refuses() -> None:
    for regex in ("(?=a)", r"\s+(?!\S)|\s+|\S+"):
        spec = {"type": "Split", "pattern": {"Regex": regex}, "behavior": "Isolated", "invert": False}
        hf = tokenizers.Tokenizer.from_str(json.dumps({"version": "1.0", "pre_tokenizer": spec, "model": {
            "type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}}))
        ours = _core.PreTokenizer(json.dumps(spec))
        for text in TEXTS[:80]:
            # Both give byte offsets here.
            assert ours.pre_tokenize_str(text) == hf.pre_tokenizer.pre_tokenize_str(text), ascii(text)
    bad = {"type": "Split", "pattern": {"Regex": "(?=a"}, "behavior": "Isolated", "invert": False}
    with pytest.raises(ValueError, match="Oniguruma.*end pattern with unmatched parenthesis"):
        _core.PreTokenizer(json.dumps(bad))
    with pytest.raises(ValueError, match="Split regex '\\(\\?=a' is refused"):
        Split({"Regex": "(?=a"}, "Isolated")

