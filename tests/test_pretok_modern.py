"""The Split scanners for modern patterns (``rust/src/pretok/modern.rs``) vs the Python reference vs HF.

Three-way: HF ``tokenizers`` (Oniguruma) on the pattern string gives the pieces and offsets a
tokenizer.json must give; the reference (``subword.pre_tokenizers.Split``, the ``regex`` module with
Oniguruma's reading of ``{n,m}+``) must equal HF, and the Rust scanner must equal the reference, on fixed
tricky strings, corpus lines and hypothesis-generated Unicode text. The tiktoken side (fancy-regex) is
checked through ids in ``tests/test_tiktoken.py``; here the ``regex`` module, which reads ``{n,m}+`` as
fancy-regex does, checks that ``hf_pattern`` keeps tiktoken's pieces.
"""

from __future__ import annotations

import functools
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subword import pre_tokenizers as ours
from subword.formats import tiktoken as tkfmt
from tests._unicode_samples import MIXED_TEXT, TRICKY, corpus_lines

hf = pytest.importorskip("tokenizers")
regex = pytest.importorskip("regex")

MAX_EXAMPLES = int(os.environ.get("SUBWORD_MAX_EXAMPLES", "200"))

QWEN2_PATTERN = tkfmt.LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

#: The pattern strings as they appear in tokenizer.json files.
PATTERNS = {
    "cl100k-tiktoken-spelling": tkfmt.CL100K_PATTERN,
    "cl100k-three-digits": tkfmt.hf_pattern(tkfmt.CL100K_PATTERN),
    "llama3": tkfmt.LLAMA3_PATTERN,
    "qwen2": QWEN2_PATTERN,
    "o200k": tkfmt.O200K_PATTERN,
    "r50k": tkfmt.R50K_PATTERN,
    "gpt2": GPT2_PATTERN,
}

EXTRA = [
    "12345 678901 1 22 333 4444 ٣٤٥٦٧ ²³¹ ⅠⅡⅢⅣ 𝟘𝟙𝟚𝟛",
    "a\n  ", "a\n  b", "x\r\n\r\n  y", "  \t\n \u00a0\u3000end   ",
    "'ſx 'Sx 'Kx I'LL WE'VE they'RE 'tis",
    "HelloWORLDFoo CamelCaseWord ABCdef ǅungla ǈ \u0301A \u0301! e\u0301\u0308x",
    "日本語。a/b//\n/ 中文，标点！한국어",
    "emoji 🙂👍🏽 👨\u200d👩\u200d👧 🇫🇷 1\ufe0f\u20e3",
    " " * 40 + "x" + "\n" * 5 + "\t" * 3,
    "path/to//file.txt http://example.com/a/b?c=d&e=f",
]

# MIXED_TEXT plus what tells these patterns' alternatives apart: case changes, contraction letters of both
# cases (and U+017F, which folds to s), digit runs, slashes, CR/LF.
_PATTERN_CHARS = list("  \r\n\r\n\t'''/!sSſlLvVeErRdDmMtTAbZ0123456789٣²Ⅻ\u0301ǅ中")
GENERATED = st.lists(st.one_of(st.sampled_from(_PATTERN_CHARS), MIXED_TEXT), max_size=24).map("".join)

REAL_LINES = corpus_lines("tinyshakespeare.txt", 300) + corpus_lines("gutenberg_en_20M.txt", 300)
TEXTS = TRICKY + EXTRA


@functools.lru_cache(maxsize=None)
def _hf_split(pattern: str):
    return hf.pre_tokenizers.Split(hf.Regex(pattern), "isolated")


@functools.lru_cache(maxsize=None)
def _ours(pattern: str) -> ours.Split:
    return ours.Split({"Regex": pattern}, "Isolated")


def _hf_pieces(pattern: str, text: str) -> list[tuple[str, tuple[int, int]]]:
    split = _hf_split(pattern)
    return [(p, tuple(o)) for p, o in split.pre_tokenize_str(text)]


@functools.lru_cache(maxsize=None)
def _native(ref: ours.Split):
    return ref.native()


def _native_pieces(ref: ours.Split, text: str) -> list[tuple[str, tuple[int, int]]]:
    return [(p, tuple(o)) for p, o in _native(ref).pre_tokenize_str(text)]


@pytest.fixture(scope="module", params=list(PATTERNS), ids=list(PATTERNS))
def split(request) -> tuple[str, ours.Split]:
    pattern = PATTERNS[request.param]
    return pattern, ours.Split({"Regex": pattern}, "Isolated")


def test_known_patterns_and_other_look_around_patterns_load():
    # Look-ahead runs on the general engine; the known strings on the scanners.
    ours.Split({"Regex": r"\s+(?!\S)|\s+"}, "Isolated")
    for pattern in PATTERNS.values():
        ours.Split({"Regex": pattern}, "Isolated")


def test_reference_and_rust_match_hf_on_tricky_and_corpus_text(split):
    pattern, ref = split
    for text in TEXTS + REAL_LINES:
        expected = _hf_pieces(pattern, text)
        assert ref.pre_tokenize_str(text) == expected, repr(text)
        assert _native_pieces(ref, text) == expected, repr(text)


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(text=GENERATED)
def test_rust_matches_reference_and_hf_on_generated_text(text):
    for pattern in PATTERNS.values():
        ref = _ours(pattern)
        expected = ref.pre_tokenize_str(text)
        assert _native_pieces(ref, text) == expected, (pattern, text)
        assert _hf_pieces(pattern, text) == expected, (pattern, text)


def test_hf_reads_the_possessive_interval_as_a_repetition():
    # The documented disagreement (docs/pretokenizers.md): same string, two readings.
    hf_reading = [p for p, _ in _hf_pieces(tkfmt.CL100K_PATTERN, "12345")]
    fancy_reading = regex.findall(tkfmt.CL100K_PATTERN, "12345")  # possessive, as in fancy-regex
    assert hf_reading == ["12345"]
    assert fancy_reading == ["123", "45"]
    assert [p for p, _ in _hf_pieces(tkfmt.hf_pattern(tkfmt.CL100K_PATTERN), "12345")] == fancy_reading


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "r50k_base"])
def test_hf_pattern_keeps_tiktoken_pieces(name):
    # The regex module reads the tiktoken strings as fancy-regex does (possessive, `$` at the end only).
    original = tkfmt.ENCODINGS[name][1]
    rewritten = ours.Split({"Regex": tkfmt.hf_pattern(original)}, "Isolated")
    for text in TEXTS + REAL_LINES[:100]:
        tiktoken_reading = regex.findall(original, text)
        assert [p for p, _ in _native_pieces(rewritten, text)] == tiktoken_reading, repr(text)


@pytest.mark.parametrize(
    "pattern, construct",
    [
        (r"\bx|\s", "word boundary"),
        (r"(?i:ss)|\s", "under \\(\\?i\\)"),
        (r"(?s:.)|\s", "inline flag s"),
        (r"[[:alpha:]]|\s", "POSIX class"),
    ],
)
def test_hf_pattern_refuses_constructs_with_no_exact_rewrite(pattern, construct):
    with pytest.raises(ValueError, match=construct):
        tkfmt.hf_pattern(pattern)


# The ASCII fast paths (`cl100k_word`, `o200k_word` in modern.rs) answer for a prefix char plus an ASCII
# letter run; this text is mostly that, with what ends a run early (a case change, a contraction, a
# non-ASCII letter or mark right after the letters, a digit, a newline).
_ASCII_WORDS = st.lists(st.one_of(st.sampled_from(["the", "The", "THE", "tHe", "HTTPServer", "iPhone", "don't", "WE'LL",
                                                   "I'M", "x'S", "'", " ", "  ", "\t", "\n", "(", ".", "/", "-", "1",
                                                   "é", "\u0301", "ǅ", "中", "ſ", "'ſ"]),
                                   st.text(st.sampled_from("aAzZ ' .\n\u0301é"), max_size=4)), max_size=16).map("".join)


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(text=_ASCII_WORDS)
def test_ascii_fast_paths_match_the_reference_and_hf(text):
    for name in ("cl100k-tiktoken-spelling", "llama3", "qwen2", "o200k"):
        pattern = PATTERNS[name]
        expected = _hf_pieces(pattern, text)
        assert _native_pieces(_ours(pattern), text) == expected, (name, text)
