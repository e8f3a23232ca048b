"""Unigram tokenizer.json files through `subword.Tokenizer`, cross-checked against HF `tokenizers`.

The files are made at test time, offline, by the reference tools themselves:
- ``tokenizers.SentencePieceUnigramTokenizer`` trained on corpus text (Nmt + NFKC + Replace normalizer,
  no unk id);
- sentencepiece-trained ``.model`` files converted by transformers' ``T5Converter`` (Precompiled + Strip +
  Replace, an ``</s>`` template), ``AlbertConverter`` (Replace, NFKD, StripAccents, Precompiled, a
  [CLS]/[SEP] template with type ids) and ``LlamaConverter`` on a byte-fallback model (legacy: Prepend +
  Replace normalizer; non-legacy: Metaspace ``first`` without split; decoders Replace/ByteFallback/Fuse/Strip);
- our own ``subword train unigram -o X.json``.

For each, ids, tokens and character offsets of ``encode`` / ``encode_batch`` must equal HF's on real
gutenberg and shakespeare lines plus tricky ones, and so must ``decode``; the Python reference components
(``normalize_str``, ``pre_tokenize_str``, ``decode``) are held to HF too.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

from _unicode_samples import CORPORA, TRICKY, corpus_lines
from subword import Tokenizer, Unigram
from subword.errors import FormatError, UnsupportedComponentError

import tokenizers
import sentencepiece as spm

EXTRA = [
    "Hello  world ☃☃ x", "ﬁ\u0301 a", "  lead", "trail  ", "a   b", "   ", "ﬁ ① ＡＢＣ ㎏ ｶﾞ",
    "e\u0301\u0323 x", "\t tab\nnew", "<s> x </s>y", "</s></s> two", "a☃b", "snow ☃ 🎉🎉 ok",
    "Ωμέγα ελληνικά", "``quoted'' text", "x\u0000y\u0007z", "▁already▁spaced",
]


@lru_cache(maxsize=1)
def training_text() -> str:
    path = CORPORA / "gutenberg_en_20M.txt"
    if not path.exists():
        pytest.skip(f"corpus {path} not found")
    with path.open(encoding="utf-8") as fh:
        return fh.read(400_000)


@lru_cache(maxsize=1)
def eval_lines() -> list[str]:
    """Real lines not used for training, plus the tricky ones."""
    held_out = [line.rstrip("\n") for line in corpus_lines("gutenberg_en_20M.txt", 2500, max_bytes=6_000_000)[-1800:]]
    shakespeare = [line.rstrip("\n") for line in corpus_lines("tinyshakespeare.txt", 400)]
    return held_out + shakespeare + TRICKY + EXTRA


@lru_cache(maxsize=None)
def _spm_model(tmp: str, byte_fallback: bool) -> str:
    corpus = Path(tmp) / "corpus.txt"
    if not corpus.exists():
        corpus.write_text(training_text(), encoding="utf-8")
    prefix = str(Path(tmp) / f"sp{int(byte_fallback)}")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=prefix, vocab_size=1000, model_type="unigram",
                                   byte_fallback=byte_fallback, minloglevel=2, num_threads=1)
    return prefix + ".model"


class _SlowStandIn:
    """What transformers' converters read from a slow tokenizer, answered by sentencepiece itself."""

    def __init__(self, model_file: str, legacy: bool = True) -> None:
        self.vocab_file = model_file
        self.legacy = legacy
        self.add_prefix_space = True
        self.do_lower_case = False
        self.remove_space = True
        self.keep_accents = False
        self._extra_ids = 2  # T5's sentinel pieces <extra_id_0>, <extra_id_1> at the end of the vocab
        self._sp = spm.SentencePieceProcessor(model_file=model_file)

    def convert_tokens_to_ids(self, token: str) -> int:
        return self._sp.piece_to_id(token)

    def convert_ids_to_tokens(self, i: int) -> str:
        return self._sp.id_to_piece(i)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("unigram_pipeline"))


def _convert(tmp: str, kind: str) -> str:
    converters = pytest.importorskip("transformers.convert_slow_tokenizer")
    if kind == "t5":
        tok = converters.T5Converter(_SlowStandIn(_spm_model(tmp, False))).converted()
    elif kind == "albert":
        tok = converters.AlbertConverter(_SlowStandIn(_spm_model(tmp, False))).converted()
    else:
        legacy = kind == "llama_legacy"
        tok = converters.LlamaConverter(_SlowStandIn(_spm_model(tmp, True), legacy=legacy)).converted()
    return tok.to_str()


def _sentencepiece_unigram() -> str:
    tok = tokenizers.SentencePieceUnigramTokenizer()
    tok.train_from_iterator(training_text().splitlines(), vocab_size=1000, show_progress=False)
    return tok._tokenizer.to_str()


def _ours_cli(tmp: str) -> str:
    from click.testing import CliRunner

    from cli.main import cli

    corpus = Path(tmp) / "corpus_cli.txt"
    corpus.write_text(training_text(), encoding="utf-8")
    out = Path(tmp) / "ours.json"
    r = CliRunner().invoke(cli, ["train", "unigram", str(corpus), "--vocab-size", "1000", "-o", str(out)])
    assert r.exit_code == 0, r.output
    return out.read_text(encoding="utf-8")


KINDS = ["t5", "albert", "llama_legacy", "llama", "sp_unigram", "ours_cli"]


@lru_cache(maxsize=None)
def _json_of(tmp: str, kind: str) -> str:
    if kind == "sp_unigram":
        return _sentencepiece_unigram()
    if kind == "ours_cli":
        return _ours_cli(tmp)
    return _convert(tmp, kind)


@pytest.fixture(params=KINDS)
def pair(request: pytest.FixtureRequest, tmp: str):
    """(HF tokenizer, ours, the file) for one kind of Unigram tokenizer.json."""
    text = _json_of(tmp, request.param)
    path = Path(tmp) / f"{request.param}.json"
    path.write_text(text, encoding="utf-8")
    hf = tokenizers.Tokenizer.from_file(str(path))
    return hf, Tokenizer.from_file(path), path


def _encodable(hf, lines: list[str]) -> list[str]:
    """Lines HF can encode (a file without unk id fails on chars outside its vocab; checked separately)."""
    out = []
    for line in lines:
        try:
            hf.encode(line)
        except Exception:  # noqa: BLE001 - HF raises a bare Exception
            continue
        out.append(line)
    return out


def test_encode_and_batch_equal_hf(pair) -> None:
    hf, ours, _ = pair
    lines = _encodable(hf, eval_lines())
    assert len(lines) > 2000
    ours_batch = ours.encode_batch(lines)
    hf_batch = hf.encode_batch(lines)
    for line, h, o in zip(lines, hf_batch, ours_batch):
        assert (o.ids, o.tokens, o.offsets) == (h.ids, h.tokens, h.offsets), line
    for line in lines[::7]:
        o, h = ours.encode(line), hf.encode(line)
        assert (o.ids, o.tokens, o.offsets, o.type_ids) == (h.ids, h.tokens, h.offsets, h.type_ids), line
    assert ours.encode_batch_ids(lines) == [h.ids for h in hf_batch]


def test_decode_equals_hf(pair) -> None:
    hf, ours, _ = pair
    lines = _encodable(hf, eval_lines())[::5]
    for line in lines:
        ids = hf.encode(line).ids
        for skip in (True, False):
            assert ours.decode(ids, skip_special_tokens=skip) == hf.decode(ids, skip_special_tokens=skip), line
    ids = [h.ids for h in hf.encode_batch(lines)]
    assert ours.decode_batch(ids) == hf.decode_batch(ids)


def test_unknown_chars_fail_or_fuse_like_hf(pair) -> None:
    hf, ours, _ = pair
    for text in ("☃", "a☃☃b 🎉", "中文 x"):
        try:
            expected = hf.encode(text)
        except Exception:  # noqa: BLE001
            with pytest.raises(ValueError, match="unk"):
                ours.encode(text)
            continue
        got = ours.encode(text)
        assert (got.ids, got.tokens, got.offsets) == (expected.ids, expected.tokens, expected.offsets)


def test_reference_components_equal_hf(pair) -> None:
    hf, ours, _ = pair
    lines = _encodable(hf, eval_lines())[::4]
    for line in lines:
        if ours.normalizer is not None:
            assert ours.normalizer.normalize_str(line) == hf.normalizer.normalize_str(line), line
        if ours.pre_tokenizer is not None:
            assert ours.pre_tokenizer.pre_tokenize_str(line) == hf.pre_tokenizer.pre_tokenize_str(line), line
        if ours.decoder is not None:
            tokens = hf.encode(line, add_special_tokens=False).tokens
            assert ours.decoder.decode(tokens) == hf.decoder.decode(tokens), line


def test_save_load_round_trip(pair, tmp_path: Path) -> None:
    hf, ours, path = pair
    assert isinstance(ours.model, Unigram)
    out = tmp_path / "again.json"
    ours.save(out)
    again = Tokenizer.from_file(out)
    assert again == ours
    assert json.loads(out.read_text(encoding="utf-8"))["model"] == json.loads(path.read_text(encoding="utf-8"))["model"]
    hf_again = tokenizers.Tokenizer.from_file(str(out))
    lines = _encodable(hf, eval_lines())[::20]
    assert [e.ids for e in hf_again.encode_batch(lines)] == [e.ids for e in hf.encode_batch(lines)]
    assert [e.ids for e in again.encode_batch(lines)] == [e.ids for e in hf.encode_batch(lines)]
    assert ours.get_vocab() == hf.get_vocab()
    saved, original = json.loads(out.read_text(encoding="utf-8")), json.loads(path.read_text(encoding="utf-8"))
    for section in ("normalizer", "pre_tokenizer", "post_processor", "decoder", "added_tokens"):
        assert saved[section] == original[section], section


def test_pairs_truncation_padding_equal_hf(pair) -> None:
    hf, ours, _ = pair
    lines = _encodable(hf, eval_lines())
    firsts, seconds = lines[:300:3], lines[1:301:3]
    for a, b in zip(firsts, seconds):
        o, h = ours.encode(a, pair=b), hf.encode(a, b)
        assert (o.ids, o.tokens, o.offsets, o.type_ids) == (h.ids, h.tokens, h.offsets, h.type_ids)
    ours.enable_truncation(12, stride=2)
    hf.enable_truncation(12, stride=2)
    ours.enable_padding(pad_id=0, pad_token=hf.id_to_token(0), length=16)
    hf.enable_padding(pad_id=0, pad_token=hf.id_to_token(0), length=16)
    got = ours.encode_batch(firsts, pairs=seconds)
    expected = hf.encode_batch(list(zip(firsts, seconds)))
    for o, h in zip(got, expected):
        assert (o.ids, o.tokens, o.offsets, o.attention_mask) == (h.ids, h.tokens, h.offsets, h.attention_mask)
        assert [x.ids for x in o.overflowing] == [x.ids for x in h.overflowing]


@pytest.mark.parametrize("kind", ["t5", "albert", "llama_legacy"])
def test_random_unicode_strings_equal_hf(tmp: str, kind: str) -> None:
    """Short random strings over scripts with combining marks, jamo, flags, emoji, zero-width and full-width
    chars: where the Precompiled grapheme rule, Replace alignment and byte fallback meet."""
    import random

    text = _json_of(tmp, kind)
    hf, ours = tokenizers.Tokenizer.from_str(text), Tokenizer.from_str(text)
    pools = [(0x20, 0x7E), (0xC0, 0x17F), (0x300, 0x36F), (0x900, 0x97F), (0x1100, 0x11FF), (0xAC00, 0xAC40),
             (0x1F1E6, 0x1F1FF), (0x1F300, 0x1F3FF), (0x200B, 0x200F), (0xFF00, 0xFFEF), (0x3000, 0x30FF),
             (0xE00, 0xE7F), (0x600, 0x6FF)]
    rng = random.Random(7)
    lines = ["".join(chr(rng.randint(*rng.choice(pools))) for _ in range(rng.randint(1, 12))) for _ in range(1500)]
    native = ours.normalizer.native()
    for line in lines:
        expected = hf.normalizer.normalize_str(line)
        assert native.normalize_str(line) == expected, ascii(line)
        assert ours.normalizer.normalize_str(line) == expected, ascii(line)
    for line, o, h in zip(lines, ours.encode_batch(lines), hf.encode_batch(lines)):
        assert (o.ids, o.tokens, o.offsets) == (h.ids, h.tokens, h.offsets), ascii(line)


# Pieces that build extended grapheme clusters of every kind (UAX #29): bases, combining / enclosing marks,
# kana voicing marks, ZWJ emoji sequences, skin tones, flags, tag sequences, keycaps, Hangul jamo L/V/T,
# Indic conjuncts (consonant + virama + consonant, the GB9c rule), Thai SARA AM, Arabic prepend marks,
# CR LF and controls, plus the compatibility chars the charsmap rewrites (so short clusters hit its keys).
_CLUSTER_PIECES = [
    "a", "Z", "e", " ", "\u00e9", "\u00df", "\u03b1", "\u0436", "\ufb01", "\ufb02", "\u2460", "\uff21", "\uff76",
    "\u338f", "\u00bc", "\u2122", "\u304b", "\u30ab", "\u0301", "\u0323", "\u0308", "\u20dd", "\u20e3", "\u3099",
    "\uff9e", "\ufe0f", "\u200d", "\u200c", "\U0001f468", "\U0001f469", "\U0001f467", "\U0001f44d", "\U0001f3fd",
    "\u2764", "\U0001f1eb", "\U0001f1f7", "\U0001f3f4", "\U000e0067", "\U000e007f", "1", "#", "\u1100", "\u1161",
    "\u11a8", "\uac00", "\uac01", "\u0915", "\u094d", "\u0937", "\u093f", "\u0995", "\u09cd", "\u09b7", "\u0e01",
    "\u0e33", "\u0600", "\u0628", "\r", "\n", "\x07", "\u00ad", "\u0345", "\u1e9b",
]


@pytest.mark.parametrize("kind", ["t5", "albert"])
def test_precompiled_grapheme_clusters_equal_hf(tmp: str, kind: str) -> None:
    """Precompiled looks short grapheme clusters up whole: on random sequences of cluster-building pieces the
    Rust normalizer (unicode-segmentation, as HF), the Python reference (``regex``'s ``\\X``) and the
    encodings (ids, tokens, offsets) equal HF's."""
    import random

    text = _json_of(tmp, kind)
    hf, ours = tokenizers.Tokenizer.from_str(text), Tokenizer.from_str(text)
    rng = random.Random(11)
    lines = ["".join(rng.choice(_CLUSTER_PIECES) for _ in range(rng.randint(1, 10))) for _ in range(2000)]
    native = ours.normalizer.native()
    for line in lines:
        expected = hf.normalizer.normalize_str(line)
        assert native.normalize_str(line) == expected, ascii(line)
        assert ours.normalizer.normalize_str(line) == expected, ascii(line)
    lines = _encodable(hf, lines)
    assert len(lines) > 1000
    for line, o, h in zip(lines, ours.encode_batch(lines), hf.encode_batch(lines)):
        assert (o.ids, o.tokens, o.offsets) == (h.ids, h.tokens, h.offsets), ascii(line)


def test_regex_replace_in_a_unigram_pipeline_equals_hf(tmp: str) -> None:
    """The T5 file with its ``Replace`` normalizer made a general regex (runs of whitespace or punctuation
    become one space): encodings and the Python reference equal HF's on real and tricky lines."""
    data = json.loads(_json_of(tmp, "t5"))
    replaces = [n for n in data["normalizer"]["normalizers"] if n["type"] == "Replace"]
    assert replaces
    replaces[0]["pattern"] = {"Regex": r"[\s\p{Pd}]{2,}|\.\.\.|\b\d+\b"}
    text = json.dumps(data)
    hf, ours = tokenizers.Tokenizer.from_str(text), Tokenizer.from_str(text)
    lines = _encodable(hf, eval_lines())
    for line, o, h in zip(lines, ours.encode_batch(lines), hf.encode_batch(lines)):
        assert (o.ids, o.tokens, o.offsets) == (h.ids, h.tokens, h.offsets), line
    for line in lines[::5]:
        assert ours.normalizer.normalize_str(line) == hf.normalizer.normalize_str(line), line
    assert ours.encode_batch_ids(lines) == [h.ids for h in hf.encode_batch(lines)]


def test_split_then_metaspace_in_a_unigram_pipeline_equals_hf(tmp: str) -> None:
    """The T5 file with ``Sequence[Split(punctuation, Isolated), Metaspace]``: pieces and encodings
    equal HF's, with Metaspace's ``always`` and ``first`` schemes (``first``: only the piece at the start gets ``▁``)."""
    for scheme in ("always", "first"):
        data = json.loads(_json_of(tmp, "t5"))
        split = {"type": "Split", "pattern": {"Regex": r"\p{P}+"}, "behavior": "Isolated", "invert": False}
        data["pre_tokenizer"]["prepend_scheme"] = scheme
        data["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [split, data["pre_tokenizer"]]}
        text = json.dumps(data)
        hf, ours = tokenizers.Tokenizer.from_str(text), Tokenizer.from_str(text)
        lines = _encodable(hf, eval_lines())[::2] + ["(a) b", "...x", "\"q\" r"]
        for line, o, h in zip(lines, ours.encode_batch(lines), hf.encode_batch(lines)):
            assert (o.ids, o.tokens, o.offsets) == (h.ids, h.tokens, h.offsets), (scheme, line)
        for line in lines[::10] + lines[-3:]:
            assert ours.pre_tokenizer.pre_tokenize_str(line) == hf.pre_tokenizer.pre_tokenize_str(line), line
        assert ours.encode_batch_ids(lines) == [h.ids for h in hf.encode_batch(lines)]


def test_inspect_summarises_the_charsmap(tmp: str, tmp_path: Path) -> None:
    """``subword inspect`` gives the Precompiled table's size, not its ~300 KB of base64."""
    import base64

    from click.testing import CliRunner

    from cli.main import cli

    path = tmp_path / "t5.json"
    path.write_text(_json_of(tmp, "t5"), encoding="utf-8")
    charsmap = next(n for n in json.loads(path.read_text(encoding="utf-8"))["normalizer"]["normalizers"]
                    if n["type"] == "Precompiled")["precompiled_charsmap"]
    size = len(base64.b64decode(charsmap))
    for args in (["inspect", "-t", str(path)], ["inspect", "-t", str(path), "--json"]):
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 0, r.output
        assert charsmap[:200] not in r.output and len(r.output) < 20_000
    assert f"Precompiled(charsmap of {size:,} bytes)" in CliRunner().invoke(cli, ["inspect", "-t", str(path)]).output
    info = json.loads(CliRunner().invoke(cli, ["inspect", "-t", str(path), "--json"]).output)
    assert {"bytes": size, "base64_chars": len(charsmap)} in [n.get("precompiled_charsmap")
                                                              for n in info["normalizer"]["normalizers"]]


def test_metaspace_first_scheme_after_added_tokens(tmp: str) -> None:
    """``prepend_scheme: first`` prepends only to the text at original offset 0 (not after an added token,
    nor when a normalizer stripped the start)."""
    data = json.loads(_json_of(tmp, "t5"))
    data["pre_tokenizer"]["prepend_scheme"] = "first"
    data["normalizer"]["normalizers"].insert(1, {"type": "Strip", "strip_left": True, "strip_right": True})
    data["added_tokens"].append({"id": len(data["model"]["vocab"]), "content": "XX", "single_word": False,
                                 "lstrip": False, "rstrip": False, "normalized": False, "special": True})
    text = json.dumps(data)
    hf, ours = tokenizers.Tokenizer.from_str(text), Tokenizer.from_str(text)
    for line in ["  lead x", "XXab cd", "ab XXcd", " XX cd", "plain text", ""]:
        o, h = ours.encode(line), hf.encode(line)
        assert (o.ids, o.tokens, o.offsets) == (h.ids, h.tokens, h.offsets), line
        assert ours.encode_batch_ids([line]) == [h.ids]


def test_legacy_hub_form_whitespace_split_then_metaspace(tmp: str, tmp_path: Path) -> None:
    """Older T5 / ALBERT files on the Hub: ``Sequence[WhitespaceSplit, Metaspace(add_prefix_space)]`` and a
    Metaspace decoder in the tokenizers < 0.19 form; HF still loads them, and so must we, with its results."""
    data = json.loads(_json_of(tmp, "t5"))
    legacy = {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}
    data["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, legacy]}
    data["decoder"] = dict(legacy)
    text = json.dumps(data)
    hf, ours = tokenizers.Tokenizer.from_str(text), Tokenizer.from_str(text)
    lines = eval_lines()[::3]
    got, expected = ours.encode_batch(lines), hf.encode_batch(lines)
    for line, o, h in zip(lines, got, expected):
        assert (o.ids, o.tokens, o.offsets) == (h.ids, h.tokens, h.offsets), line
        assert ours.pre_tokenizer.pre_tokenize_str(line) == hf.pre_tokenizer.pre_tokenize_str(line), line
        assert ours.decode(h.ids) == hf.decode(h.ids), line
    assert ours.encode_batch_ids(lines) == [h.ids for h in expected]
    out = tmp_path / "modern.json"
    ours.save(out)  # written in today's form, which HF reads with the same results
    assert json.loads(out.read_text(encoding="utf-8"))["pre_tokenizer"] == json.loads(hf.to_str())["pre_tokenizer"]
    assert [e.ids for e in tokenizers.Tokenizer.from_file(str(out)).encode_batch(lines)] == [h.ids for h in expected]


def test_unsupported_components_are_named(tmp: str, tmp_path: Path) -> None:
    data = json.loads(_json_of(tmp, "t5"))
    # A general Sequence (a member that rewrites before one that cuts) loads and gives HF's ids.
    seq = dict(data, pre_tokenizer={"type": "Sequence", "pretokenizers": [
        {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        {"type": "WhitespaceSplit"}]})
    text = json.dumps(seq)
    theirs, ours = tokenizers.Tokenizer.from_str(text), Tokenizer.from_str(text)
    for line in ["Hello  world", " a b ", "x"]:
        assert ours.encode(line).ids == theirs.encode(line).ids
    # The Rust core names what it does not know (it is what `_core.CoreTokenizer` users meet).
    from subword import _core

    for section, component in [("normalizer", {"type": "Replace", "pattern": {"Regex": "(a"}, "content": ""}),
                               ("decoder", {"type": "Cyrillic"}), ("pre_tokenizer", {"type": "Deduplication"})]:
        with pytest.raises(ValueError, match=section):
            _core.CoreTokenizer(json.dumps(dict(data, **{section: component})))
    bad_model = dict(data, model={"type": "Unigram", "unk_id": 5000, "vocab": [["a", -1.0]]})
    with pytest.raises(FormatError, match="unk_id"):
        Tokenizer.from_str(json.dumps(bad_model))
