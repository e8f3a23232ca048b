"""Every component type HF ``tokenizers`` 0.23.3 deserializes, one tokenizer.json per kind, against HF.

Each case is a tokenizer.json built around one component (``docs/components.md`` lists them all): HF trains
the model on corpus lines with that component in the pipeline, so the vocabulary fits its segmentation; then
``tokenizers.Tokenizer`` and ours load the same file and must give the same ids, tokens, offsets (chars of
the original text) and decode, on Unicode-rich text (every script, combining marks, emoji sequences, digits of
many scripts, control chars, ``\\r\\n``, U+2028/U+2029, NFKC-sensitive chars, long whitespace runs) and corpus
lines; decoders also on random id sequences.
"""

from __future__ import annotations

import base64
import json
import random

import pytest

from subword import Tokenizer
from tests._unicode_samples import TRICKY, corpus_lines

hf = pytest.importorskip("tokenizers")

EXTRA = [
    "12345 678901 ٣٤٥٦٧ ²³¹ ⅠⅡⅢⅣ 𝟘𝟙𝟚𝟛 ༢༣ ໑໒ ١٢", "a\r\nb\u2028c\u2029d\x85e\x0bf\x0cg",
    "ﬁ ﬀ ① ㍿ ＡＢＣ ｶﾀｶﾅ ℌ ẛ̣ Å Ω ﬃ", " " * 30 + "x" + "\t" * 5 + "y" + "\n" * 4,
    "'ſx I'LL WE'VE STRASSE Straße ǅ İstanbul", "どこで生れたかとんと見当がつかぬ。Yes ありがとう ー カタカナ",
    "e\u0301\u0308 \u0915\u094d\u0937 \u0e01\u0e34\u0e19 \u1100\u1161\u11a8", "<s>, </s> [CLS] [SEP] |a|b|| -- hyphen-ated!?",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 👩🏽‍🚀 🏳️‍🌈 ❤️ 1️⃣ 🇯🇵", "\x00\x01 \x7f \ufeff\u200b\u200d\u00ad",
]
TEXTS = TRICKY + EXTRA + corpus_lines("gutenberg_en_20M.txt", 60) + corpus_lines("tinyshakespeare.txt", 30)


def _charsmap() -> str:
    from subword.formats.spm import build_charsmap

    return base64.b64encode(build_charsmap({"ﬁ": "fi", "Ａ": "A", "①": "1", "\u3000": " ", "é": "e\u0301"})).decode()


WS_SPLIT = {"type": "WhitespaceSplit"}
BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
BYTE_LEVEL_NO_PREFIX = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}
METASPACE = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}

NORMALIZERS = {
    "BertNormalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
    "ByteLevel": {"type": "ByteLevel"},
    "Lowercase": {"type": "Lowercase"},
    "NFC": {"type": "NFC"}, "NFD": {"type": "NFD"}, "NFKC": {"type": "NFKC"}, "NFKD": {"type": "NFKD"},
    "Nmt": {"type": "Nmt"},
    "Precompiled": {"type": "Precompiled", "precompiled_charsmap": _charsmap()},
    "Prepend": {"type": "Prepend", "prepend": "▁"},
    "Replace": {"type": "Replace", "pattern": {"Regex": r"\s{2,}|(?<=\d),(?=\d)"}, "content": " "},
    "Sequence": {"type": "Sequence", "normalizers": [{"type": "NFKD"}, {"type": "StripAccents"},
                                                     {"type": "Lowercase"}]},
    "Strip": {"type": "Strip", "strip_left": True, "strip_right": False},
    "StripAccents": {"type": "StripAccents"},
}

PRE_TOKENIZERS = {
    "BertPreTokenizer": {"type": "BertPreTokenizer"},
    "ByteLevel": BYTE_LEVEL,
    "CharDelimiterSplit": {"type": "CharDelimiterSplit", "delimiter": " "},
    "Digits": {"type": "Digits", "individual_digits": True},
    "Digits-runs": {"type": "Digits", "individual_digits": False},
    "FixedLength": {"type": "FixedLength", "length": 3},
    "Metaspace": METASPACE,
    "Metaspace-first": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False},
    "Punctuation": {"type": "Punctuation", "behavior": "MergedWithPrevious"},
    "Sequence": {"type": "Sequence", "pretokenizers": [WS_SPLIT, {"type": "Digits", "individual_digits": True},
                                                       {"type": "Punctuation", "behavior": "Isolated"},
                                                       BYTE_LEVEL_NO_PREFIX]},
    "Split": {"type": "Split", "pattern": {"Regex": r"(?i)\p{L}+(?:'s)?|\p{N}{1,3}|\s+(?!\S)|\s+|[^\s\p{L}\p{N}]+"},
              "behavior": "MergedWithNext", "invert": False},
    "UnicodeScripts": {"type": "UnicodeScripts"},
    "Whitespace": {"type": "Whitespace"},
    # General sequences: a member that rewrites its pieces before others (Falcon's), prefix spaces per piece.
    "Sequence-falcon": {"type": "Sequence", "pretokenizers": [
        {"type": "Punctuation", "behavior": "Contiguous"},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        {"type": "Digits", "individual_digits": False},
        {"type": "Split", "pattern": {"Regex": "[0-9][0-9][0-9]"}, "behavior": "Isolated", "invert": False}]},
    "Sequence-bytelevel-prefix-per-piece": {"type": "Sequence", "pretokenizers": [WS_SPLIT, BYTE_LEVEL]},
    "Sequence-metaspace-then-cut": {"type": "Sequence", "pretokenizers": [
        {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False},
        {"type": "Digits", "individual_digits": True}, {"type": "Punctuation", "behavior": "MergedWithNext"}]},
    "WhitespaceSplit": WS_SPLIT,
}


def _train(model: str, normalizer=None, pre_tokenizer=None, *, texts=TEXTS, vocab_size: int = 400) -> dict:
    """A tokenizer.json dict: HF trains ``model`` with the pipeline given on the texts and corpus lines."""
    from tokenizers import models, trainers

    kind = {"BPE": (models.BPE, trainers.BpeTrainer), "WordPiece": (models.WordPiece, trainers.WordPieceTrainer),
            "WordLevel": (models.WordLevel, trainers.WordLevelTrainer),
            "Unigram": (models.Unigram, trainers.UnigramTrainer)}
    model_cls, trainer_cls = kind[model]
    unk = {"unk_token": "[UNK]"} if model != "Unigram" else {}
    tok = hf.Tokenizer(model_cls(**unk))
    data = json.loads(tok.to_str())
    data["normalizer"], data["pre_tokenizer"] = normalizer, pre_tokenizer
    tok = hf.Tokenizer.from_str(json.dumps(data))
    extra = {"unk_token": "[UNK]"} if model == "Unigram" else {}
    trainer = trainer_cls(vocab_size=vocab_size, special_tokens=["[UNK]", "[CLS]", "[SEP]", "<s>", "</s>", "<pad>"],
                          show_progress=False, **extra)
    tok.train_from_iterator(texts * 2, trainer)
    return json.loads(tok.to_str())


def _compare(data: dict, texts=TEXTS, pairs: bool = False) -> None:
    text = json.dumps(data)
    theirs, ours = hf.Tokenizer.from_str(text), Tokenizer.from_str(text)
    for line in texts:
        want, got = theirs.encode(line), ours.encode(line)
        assert got.ids == want.ids, ("ids", ascii(line))
        assert got.tokens == want.tokens, ("tokens", ascii(line))
        assert [tuple(o) for o in got.offsets] == [tuple(o) for o in want.offsets], ("offsets", ascii(line))
        assert ours.decode(got.ids) == theirs.decode(want.ids), ("decode", ascii(line))
        assert ours.decode(got.ids, skip_special_tokens=False) == theirs.decode(want.ids, skip_special_tokens=False)
    if pairs:
        for a, b in zip(texts[::7], texts[3::7]):
            want, got = theirs.encode(a, b), ours.encode(a, b)
            assert (got.ids, got.type_ids, [tuple(o) for o in got.offsets]) == \
                (want.ids, want.type_ids, [tuple(o) for o in want.offsets]), ascii((a, b))


# ==== normalizers ====


@pytest.mark.parametrize("name", sorted(NORMALIZERS))
def test_normalizer_equals_hf(name):
    _compare(_train("WordPiece", NORMALIZERS[name], {"type": "Whitespace"}))


# ==== pre-tokenizers ====


@pytest.mark.parametrize("name", sorted(PRE_TOKENIZERS))
def test_pre_tokenizer_equals_hf(name):
    pre = PRE_TOKENIZERS[name]
    byte_level = name in ("ByteLevel", "Sequence", "Sequence-falcon", "Sequence-bytelevel-prefix-per-piece")
    model = "BPE" if byte_level else "Unigram" if "etaspace" in name else "WordPiece"
    data = _train(model, None, pre)
    if model == "BPE":
        data["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    _compare(data)


# ==== models ====


@pytest.mark.parametrize("model", ["BPE", "WordPiece", "WordLevel", "Unigram"])
def test_model_equals_hf(model):
    _compare(_train(model, {"type": "NFKC"}, {"type": "Whitespace"}))


def test_untyped_models_load_as_hf_infers_them():
    for model in ("BPE", "WordPiece", "WordLevel", "Unigram"):
        data = _train(model, None, {"type": "Whitespace"}, vocab_size=600)
        del data["model"]["type"]
        if model == "WordPiece":
            assert {"continuing_subword_prefix", "max_input_chars_per_word"} <= set(data["model"])
        _compare(data, TEXTS[:40])
        assert type(Tokenizer.from_str(json.dumps(data)).model).__name__ == model


# ==== post-processors ====

_SPECIALS = {"<s>": 3, "</s>": 4, "[CLS]": 1, "[SEP]": 2}
PROCESSORS = {
    "BertProcessing": {"type": "BertProcessing", "sep": ["[SEP]", 2], "cls": ["[CLS]", 1]},
    "ByteLevel": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "RobertaProcessing": {"type": "RobertaProcessing", "sep": ["</s>", 4], "cls": ["<s>", 3], "trim_offsets": True,
                          "add_prefix_space": True},
    "RobertaProcessing-untrimmed": {"type": "RobertaProcessing", "sep": ["</s>", 4], "cls": ["<s>", 3],
                                    "trim_offsets": False, "add_prefix_space": False},
    "TemplateProcessing": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}},
                                    {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [3], "tokens": ["<s>"]},
                                              "</s>": {"id": "</s>", "ids": [4], "tokens": ["</s>"]}}},
}
PROCESSORS["Sequence"] = {"type": "Sequence", "processors": [
    {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
    PROCESSORS["TemplateProcessing"]]}


@pytest.mark.parametrize("name", sorted(PROCESSORS))
def test_post_processor_equals_hf(name):
    data = _train("BPE", None, BYTE_LEVEL)
    data["post_processor"] = PROCESSORS[name]
    data["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    _compare(data, pairs=True)


def test_python_objects_of_new_processors_round_trip():
    from subword.processors import from_dict

    for name in ("RobertaProcessing", "Sequence"):
        assert from_dict(PROCESSORS[name]).to_dict() == PROCESSORS[name]


# ==== decoders ====

DECODERS = {
    "BPEDecoder": {"type": "BPEDecoder", "suffix": "</w>"},
    "ByteFallback": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]},
    "ByteLevel": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "CTC": {"type": "CTC", "pad_token": "<pad>", "word_delimiter_token": "|", "cleanup": True},
    "CTC-no-cleanup": {"type": "CTC", "pad_token": "<pad>", "word_delimiter_token": "|", "cleanup": False},
    "Fuse": {"type": "Fuse"},
    "Metaspace": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
    "Replace": {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
    "Sequence": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"Regex": "▁+"}, "content": " "},
                                                  {"type": "ByteFallback"}, {"type": "Fuse"},
                                                  {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    "Strip": {"type": "Strip", "content": "▁", "start": 1, "stop": 0},  # HF panics on some other settings
    "WordPiece": {"type": "WordPiece", "prefix": "##", "cleanup": True},
}


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_decoder_equals_hf_on_encodings_and_random_ids(name):
    data = _train("BPE", None, METASPACE)
    data["decoder"] = DECODERS[name]
    vocab = data["model"]["vocab"]
    for extra in ("<0xE2>", "<0x98>", "<0x83>", "<0xFF>", "|", "a</w>", "##x", "aab"):
        vocab.setdefault(extra, len(vocab))
    _compare(data, TEXTS[:60])
    text = json.dumps(data)
    theirs, ours = hf.Tokenizer.from_str(text), Tokenizer.from_str(text)
    rng = random.Random(len(name))
    ids = list(vocab.values())
    for _ in range(400):
        seq = [rng.choice(ids) for _ in range(rng.randint(0, 12))]
        seq += [vocab["<0xE2>"], vocab["<0x98>"], vocab["<0x83>"]][: rng.randint(0, 3)]
        rng.shuffle(seq)
        for skip in (True, False):
            assert ours.decode(seq, skip_special_tokens=skip) == theirs.decode(seq, skip_special_tokens=skip), seq


def test_every_type_hf_deserializes_is_listed_and_loads():
    """The registries hold every type name HF 0.23.3's Python module exposes per section."""
    from subword.formats.hf_json import SUPPORTED

    sections = {"normalizer": hf.normalizers, "pre_tokenizer": hf.pre_tokenizers, "post_processor": hf.processors,
                "decoder": hf.decoders, "model": hf.models}
    skip = {"Normalizer", "PreTokenizer", "PostProcessor", "Decoder", "Model", "DecodeStream"}
    for section, module in sections.items():
        theirs = {n for n in dir(module) if n[:1].isupper() and n not in skip and isinstance(getattr(module, n), type)}
        assert theirs <= set(SUPPORTED[section]), (section, sorted(theirs - set(SUPPORTED[section])))


def test_python_reference_of_general_sequences_equals_hf():
    """The readable reference composes any members as HF does (pieces and char offsets)."""
    from subword.pre_tokenizers import from_dict

    for name in ("Sequence-falcon", "Sequence-bytelevel-prefix-per-piece", "Sequence-metaspace-then-cut"):
        spec = PRE_TOKENIZERS[name]
        ours = from_dict(spec)
        theirs = hf.Tokenizer.from_str(json.dumps(
            {"version": "1.0", "pre_tokenizer": spec, "model": {"type": "WordLevel", "vocab": {"[UNK]": 0},
                                                                 "unk_token": "[UNK]"}}))
        for line in TEXTS:
            assert ours.pre_tokenize_str(line) == theirs.pre_tokenizer.pre_tokenize_str(line), (name, ascii(line))
