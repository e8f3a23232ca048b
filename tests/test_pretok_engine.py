"""The general pre-tokenizer engine (``rust/src/pretok/engine.rs``) against the scanners and the references.

* Each hand-written scanner is a fast path: on the same text it must give exactly the matches the general
  engine gives for the same pattern, under each engine's reading (Oniguruma for tokenizer.json strings,
  fancy-regex for tiktoken's). The general engine is reached with the pattern wrapped in ``(?:...)``, which
  means the same but is not a string the scanners recognise.
* Patterns no scanner covers (DeepSeek's, Kimi's, patterns with look-behind, case folding, ``\\X``, class
  intersection) must give HF's pieces (tokenizer.json) and tiktoken's ids (tiktoken files), and a tiktoken
  file saved as tokenizer.json must give tiktoken's ids in HF.
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subword import Tokenizer
from subword import _core
from subword.formats import tiktoken as tkfmt
from tests._unicode_samples import MIXED_TEXT, TRICKY, corpus_lines

hf = pytest.importorskip("tokenizers")

MAX_EXAMPLES = int(os.environ.get("SUBWORD_MAX_EXAMPLES", "200"))

QWEN2 = tkfmt.LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")
GPT2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""

#: The scanners' strings, as tokenizer.json files hold them (Oniguruma) and as tiktoken runs them.
SCANNED = {
    "cl100k-tiktoken-spelling": tkfmt.CL100K_PATTERN,
    "cl100k-three-digits": tkfmt.hf_pattern(tkfmt.CL100K_PATTERN),
    "llama3": tkfmt.LLAMA3_PATTERN,
    "qwen2": QWEN2,
    "o200k": tkfmt.O200K_PATTERN,
    "r50k": tkfmt.R50K_PATTERN,
    "gpt2": GPT2,
}

#: Kimi K2's tiktoken pattern (Han runs first, class intersection, case-insensitive contractions).
KIMI = "|".join([
    r"""[\p{Han}]+""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])

#: DeepSeek V3's tokenizer.json pre-tokenizer (a Sequence of Splits before a ByteLevel).
DEEPSEEK_SPLITS = [
    r"\p{N}{1,3}",
    "[一-龥\u3040-ゟ゠-ヿ]+",
    r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
]

#: Other patterns outside the scanners, each with a construct the regex crate lacks or reads otherwise.
GENERAL = [
    KIMI,
    r"(?<=\p{L})(?=\p{N})|\s+",              # look-behind, empty matches
    r"(?i:the|ss|straße)|\w+|\W",            # case folding (ß = ss in Oniguruma)
    r"\X",                                   # extended grapheme clusters
    r"[[:alpha:]]+|[[:digit:]]+|\s+|.",      # POSIX classes (Unicode in Oniguruma)
    r"(?>\p{L}+)|\p{N}{1,3}+|\s++$|\s",      # atomic group, possessive, anchor
    r"\h+|\R|\S",                            # Oniguruma's \h is a hex digit; \R a line break
    *DEEPSEEK_SPLITS,
]

EXTRA = [
    "12345 678901 1 22 333 4444 ٣٤٥٦٧ ²³¹ ⅠⅡⅢⅣ 𝟘𝟙𝟚𝟛 ༢༣ ໑໒",
    "a\n  ", "a\n  b", "x\r\n\r\n  y", "  \t\n \u00a0\u3000end   ", "\u2028a\u2029b\x85c\x0bd\x0c",
    "'ſx 'Sx 'Kx I'LL WE'VE they'RE 'tis STRASSE Straße ﬁne",
    "HelloWORLDFoo CamelCaseWord ABCdef ǅungla ǈ \u0301A \u0301! e\u0301\u0308x",
    "日本語。a/b//\n/ 中文，标点！한국어 カタカナ ｶﾀｶﾅ ＡＢＣ",
    "emoji 🙂👍🏽 👨\u200d👩\u200d👧 🇫🇷 1\ufe0f\u20e3 ❤️",
    " " * 40 + "x" + "\n" * 5 + "\t" * 3,
    "path/to//file.txt http://example.com/a/b?c=d&e=f deadBEEF 0x1F",
    "ΣΑΣ ΟΔΥΣΣΕΥΣ İstanbul ẞ ǅ ﬀ ŉ",
    "\u0e01\u0e34\u0e19 ไทย ລາວ ខ្មែរ မြန်မာ ᠮᠣᠩ ትግርኛ ᏣᎳᎩ",
]

TEXTS = TRICKY + EXTRA
REAL_LINES = corpus_lines("tinyshakespeare.txt", 200) + corpus_lines("gutenberg_en_20M.txt", 200)
_PATTERN_CHARS = list("  \r\n\r\n\t'''/!sSſlLvVeErRdDmMtTAbZ0123456789٣²Ⅻ\u0301ǅ中ßﬁ")
GENERATED = st.lists(st.one_of(st.sampled_from(_PATTERN_CHARS), MIXED_TEXT), max_size=24).map("".join)


def _split(pattern: str, engine: str = "oniguruma") -> _core.PreTokenizer:
    spec = {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False}
    if engine != "oniguruma":
        spec.update(behavior="Removed", invert=True, engine=engine)  # tiktoken keeps the matches only
    return _core.PreTokenizer(json.dumps(spec))


def _hf_split(pattern: str):
    return hf.pre_tokenizers.Split(hf.Regex(pattern), "isolated")


# ==== scanners = the general engine, on the same text ====


@pytest.mark.parametrize("name", sorted(SCANNED))
@pytest.mark.parametrize("engine", ["oniguruma", "fancy-regex"])
def test_scanner_equals_general_engine(name, engine):
    pattern = SCANNED[name]
    scanner, general = _split(pattern, engine), _split(f"(?:{pattern})", engine)
    for text in TEXTS + REAL_LINES:
        assert scanner.pre_tokenize_str(text) == general.pre_tokenize_str(text), (name, engine, text)


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(text=GENERATED)
def test_scanners_equal_general_engine_on_generated_text(text):
    for pattern in SCANNED.values():
        for engine in ("oniguruma", "fancy-regex"):
            assert _split(pattern, engine).pre_tokenize_str(text) == \
                _split(f"(?:{pattern})", engine).pre_tokenize_str(text), (pattern, engine)


def test_engines_read_the_cl100k_string_each_their_way():
    """The scanner table is per engine: cl100k's ``\\p{N}{1,3}+`` is possessive in fancy-regex only."""
    onig, fancy = _split(tkfmt.CL100K_PATTERN), _split(tkfmt.CL100K_PATTERN, "fancy-regex")
    assert [p for p, _ in onig.pre_tokenize_str("x 12345")] == ["x", " ", "12345"]
    assert [p for p, _ in fancy.pre_tokenize_str("x 12345")] == ["x", " ", "123", "45"]


# ==== patterns outside the scanners vs HF (Oniguruma) ====


@pytest.mark.parametrize("pattern", GENERAL, ids=range(len(GENERAL)))
def test_general_pattern_pieces_equal_hf(pattern):
    ours, theirs = _split(pattern), _hf_split(pattern)
    for text in TEXTS + REAL_LINES:
        assert ours.pre_tokenize_str(text) == theirs.pre_tokenize_str(text), ascii(text)


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(text=GENERATED)
def test_general_patterns_equal_hf_on_generated_text(text):
    for pattern in GENERAL:
        assert _split(pattern).pre_tokenize_str(text) == _hf_split(pattern).pre_tokenize_str(text), pattern


def test_deepseek_style_sequence_tokenizer_equals_hf():
    """A whole tokenizer.json with DeepSeek's pre-tokenizer (three Splits, then ByteLevel): ids and offsets."""
    vocab = {c: i for i, c in enumerate(sorted(set(hf.pre_tokenizers.ByteLevel.alphabet())))}
    for merged in ("Ġt", "he", "Ġthe", "in", "er", "Ġa", "ä¸", "12"):
        vocab.setdefault(merged, len(vocab))
    merges = [["Ġ", "t"], ["h", "e"], ["Ġt", "he"], ["i", "n"], ["e", "r"], ["Ġ", "a"], ["ä", "¸"], ["1", "2"]]
    data = {
        "version": "1.0",
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": p}, "behavior": "Isolated", "invert": False}
            for p in DEEPSEEK_SPLITS
        ] + [{"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "vocab": vocab, "merges": merges},
    }
    text = json.dumps(data)
    ours, theirs = Tokenizer.from_str(text), hf.Tokenizer.from_str(text)
    for line in TEXTS + REAL_LINES:
        got, want = ours.encode(line), theirs.encode(line)
        assert (got.ids, got.offsets) == (want.ids, want.offsets), ascii(line)
        assert ours.decode(got.ids) == theirs.decode(want.ids)


# ==== tiktoken files with patterns outside the scanners vs tiktoken (fancy-regex) ====


@pytest.fixture(scope="module")
def cl100k_ranks():
    try:
        path = tkfmt.resolve("cl100k_base")
    except Exception as exc:  # noqa: BLE001 - no local copy on a plain clone
        pytest.skip(f"no local cl100k_base rank file ({exc})")
    return path, tkfmt.read_ranks(path)


TIKTOKEN_PATTERNS = [
    KIMI,
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,2}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    r"""\w+|[^\w\s]+|\s+(?!\S)|\s+""",       # \w is the regex crate's (Join_Control included)
    r"""\d{1,3}(?=(?:\d{3})*\b)|\p{L}+|\s|.""",
]


@pytest.mark.parametrize("pattern", TIKTOKEN_PATTERNS, ids=range(len(TIKTOKEN_PATTERNS)))
def test_tiktoken_general_pattern_ids_equal_tiktoken(pattern, cl100k_ranks):
    tiktoken = pytest.importorskip("tiktoken")
    path, ranks = cl100k_ranks
    theirs = tiktoken.Encoding("custom", pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    ours = Tokenizer.from_tiktoken(path, pattern=pattern, special_tokens={})
    for line in TEXTS + REAL_LINES:
        assert ours.encode(line, add_special_tokens=False).ids == theirs.encode_ordinary(line), ascii(line)


def test_kimi_pattern_saved_as_tokenizer_json_gives_tiktoken_ids_in_hf(cl100k_ranks, tmp_path):
    tiktoken = pytest.importorskip("tiktoken")
    path, ranks = cl100k_ranks
    theirs = tiktoken.Encoding("kimi", pat_str=KIMI, mergeable_ranks=ranks, special_tokens={})
    ours = Tokenizer.from_tiktoken(path, pattern=KIMI, special_tokens={})
    out = tmp_path / "tokenizer.json"
    ours.save(out)
    reloaded, hf_tok = Tokenizer.from_file(out), hf.Tokenizer.from_file(str(out))
    for line in TEXTS + REAL_LINES:
        want = theirs.encode_ordinary(line)
        assert hf_tok.encode(line, add_special_tokens=False).ids == want, ascii(line)
        assert reloaded.encode(line, add_special_tokens=False).ids == want, ascii(line)


def test_tiktoken_pattern_with_no_oniguruma_spelling_loads_but_is_not_saved_as_json(cl100k_ranks, tmp_path):
    from subword.formats.convert import ConversionError

    path, _ = cl100k_ranks
    tok = Tokenizer.from_tiktoken(path, pattern=r"\b\w+\b|\s+|.", special_tokens={})
    assert tok.encode("hi there", add_special_tokens=False).ids
    with pytest.raises(ConversionError, match="word boundary"):
        tok.save(tmp_path / "tokenizer.json")
    assert not (tmp_path / "tokenizer.json").exists()
    # Pickles keep the engine (their own form, not HF's).
    import pickle

    again = pickle.loads(pickle.dumps(tok))
    assert again.encode("hi  there1", add_special_tokens=False).ids == tok.encode("hi  there1", add_special_tokens=False).ids
