"""The Tokenizer front: configuration, added tokens, truncation/padding policy, pickling, repr, and (with the
Rust core built) encode/decode parity with HF ``tokenizers`` on real text."""

from __future__ import annotations

import json
import pickle

import pytest

from _hf_fixtures import SPECIALS_GPT2, byte_level_hf, eval_lines, whitespace_hf
from subword import BPE, AddedToken, Tokenizer, decoders, normalizers, pre_tokenizers, processors

import tokenizers



def tiny_model() -> BPE:
    vocab = {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4}
    return BPE(vocab, [("a", "b"), ("ab", "c")])


# ==== construction and validation ====


def test_added_token_ids_follow_hf_rules():
    """An added token already in the vocab keeps its id; new ones are numbered from the vocab size."""
    ours = Tokenizer(tiny_model())
    theirs = tokenizers.Tokenizer(tokenizers.models.BPE(tiny_model().vocab, tiny_model().merges))
    batches = [["<s>", "ab"], ["</s>", "<s>"], [tokenizers.AddedToken("<mask>", lstrip=True)]]
    for batch in batches:
        ours_batch = [AddedToken(t.content, lstrip=t.lstrip, special=True) if not isinstance(t, str) else t
                      for t in batch]
        assert ours.add_special_tokens(ours_batch) == theirs.add_special_tokens(batch)
    assert ours.get_vocab() == theirs.get_vocab(with_added_tokens=True)
    assert ours.add_tokens(["xyz"]) == theirs.add_tokens(["xyz"]) == 1
    assert ours.get_vocab() == theirs.get_vocab(with_added_tokens=True)
    assert json.loads(ours.to_json_str())["added_tokens"] == json.loads(theirs.to_str())["added_tokens"]


def test_components_are_type_checked():
    with pytest.raises(TypeError, match="pre_tokenizer must be a PreTokenizer"):
        Tokenizer(tiny_model(), pre_tokenizer=normalizers.NFC())
    with pytest.raises(TypeError, match="model must be a BPE"):
        Tokenizer({"a": 0})
    with pytest.raises(TypeError, match="unexpected keyword"):
        Tokenizer(tiny_model(), pretokenizer=pre_tokenizers.Whitespace())
    with pytest.raises(TypeError, match="not a single token"):
        Tokenizer(tiny_model(), special_tokens="<s>")
    tok = Tokenizer(tiny_model())
    with pytest.raises(TypeError, match="decoder must be a Decoder"):
        tok.decoder = processors.ByteLevel()
    with pytest.raises(TypeError, match="unknown option"):
        tok.with_options(pre_tokeniser=pre_tokenizers.Whitespace())


@pytest.mark.parametrize(
    "vocab, merges, kwargs, message",
    [
        ({"a": 0, "b": 1}, [("a", "b")], {}, "merged token 'ab' is not in the vocab"),
        ({"a": 0, "ab": 1}, [("a", "b")], {}, "'b' is not in the vocab"),
        ({"a": 0, "b": 0}, [], {}, "used by both"),
        ({"a": -1}, [], {}, "non-negative"),
        ({"a": 0}, [], {"unk_token": "<unk>"}, "unk_token '<unk>' is not in the vocab"),
        ({"a": 0}, [], {"dropout": 1.5}, "dropout must be in"),
        ({"a": 0}, ["a b c"], {}, "not of the form"),
    ],
)
def test_bpe_validation(vocab, merges, kwargs, message):
    with pytest.raises(ValueError, match=message):
        BPE(vocab, merges, **kwargs)


def test_bpe_prefix_merges_validate_like_hf():
    vocab = {"a": 0, "##b": 1, "ab": 2}
    BPE(vocab, [("a", "##b")], continuing_subword_prefix="##")
    tokenizers.models.BPE(vocab, [("a", "##b")], continuing_subword_prefix="##")  # HF accepts it as well
    with pytest.raises(ValueError):
        BPE({"a": 0, "##b": 1}, [("a", "##b")], continuing_subword_prefix="##")


# ==== truncation and padding policy ====


@pytest.mark.parametrize(
    "trunc, pad",
    [
        ({"max_length": 16}, {}),
        ({"max_length": 32, "stride": 4, "strategy": "only_first", "direction": "left"},
         {"direction": "left", "pad_id": 3, "pad_token": "[PAD]", "length": 40}),
        ({"max_length": 8, "strategy": "only_second"}, {"pad_to_multiple_of": 8, "pad_type_id": 1}),
    ],
)
def test_truncation_and_padding_settings_match_hf(trunc, pad):
    ours = Tokenizer(tiny_model())
    theirs = tokenizers.Tokenizer(tokenizers.models.BPE(tiny_model().vocab, tiny_model().merges))
    ours.enable_truncation(**trunc)
    theirs.enable_truncation(**trunc)
    ours.enable_padding(**pad)
    theirs.enable_padding(**pad)
    assert ours.truncation == theirs.truncation
    assert ours.padding == theirs.padding
    ours_json, their_json = json.loads(ours.to_json_str()), json.loads(theirs.to_str())
    assert (ours_json["truncation"], ours_json["padding"]) == (their_json["truncation"], their_json["padding"])
    ours.no_truncation()
    ours.no_padding()
    assert ours.truncation is None and ours.padding is None
    assert json.loads(ours.to_json_str())["truncation"] is None


@pytest.mark.parametrize(
    "call, exc",
    [
        (lambda t: t.enable_truncation(0), ValueError),
        (lambda t: t.enable_truncation(8, stride=8), ValueError),
        (lambda t: t.enable_truncation(8, strategy="longest"), ValueError),
        (lambda t: t.enable_truncation(8, direction="up"), ValueError),
        (lambda t: t.enable_truncation("8"), TypeError),
        (lambda t: t.enable_truncation(8, strides=2), TypeError),
        (lambda t: t.enable_padding(pad_id=-1), ValueError),
        (lambda t: t.enable_padding(length=0), ValueError),
        (lambda t: t.enable_padding(pad_token=3), TypeError),
        (lambda t: t.enable_padding(side="left"), TypeError),
    ],
)
def test_bad_policy_arguments_are_errors(call, exc):
    with pytest.raises(exc):
        call(Tokenizer(tiny_model()))


# ==== pickling and repr ====


@pytest.mark.parametrize("make", [byte_level_hf, whitespace_hf], ids=["byte-level", "whitespace"])
def test_can_pickle(make):
    tok = Tokenizer.from_str(make().to_str())
    tok.enable_truncation(20)
    tok.provenance = {"seed": 1}
    clone = pickle.loads(pickle.dumps(tok))
    assert isinstance(clone, Tokenizer)
    assert clone == tok
    assert clone.to_json_str() == tok.to_json_str()
    assert clone.truncation == tok.truncation and clone.provenance == {"seed": 1}


def test_repr_shows_configuration_and_elides_vocabulary():
    tok = Tokenizer.from_str(byte_level_hf().to_str())
    tok.provenance = {"trainer": "BpeTrainer", "seed": 0}
    text = repr(tok)
    assert len(text) < 1000
    assert "vocab=<600 tokens>" in text and "merges=<" in text
    assert "pre_tokenizer=ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)" in text
    assert "decoder=ByteLevel(" in text and "'<|endoftext|>'" in text
    assert "provenance=<seed, trainer>" in text
    assert "Ġthe" not in text  # no vocabulary entries


def test_with_options_copies():
    tok = Tokenizer(tiny_model(), special_tokens=["<s>"])
    other = tok.with_options(normalizer=normalizers.Lowercase(), decoder=decoders.BPEDecoder())
    assert tok.normalizer is None and other.normalizer == normalizers.Lowercase()
    assert other.get_vocab() == tok.get_vocab()


# ==== decoders and post-processors: reference and serialisation vs HF ====


@pytest.mark.parametrize("make", [byte_level_hf, whitespace_hf], ids=["byte-level", "whitespace"])
def test_reference_decoders_match_hf(make):
    hf_tok = make()
    ours = Tokenizer.from_str(hf_tok.to_str())
    for line in eval_lines()[::5]:
        tokens = hf_tok.encode(line, add_special_tokens=False).tokens
        assert ours.decoder.decode(tokens) == hf_tok.decoder.decode(tokens), repr(line)
    # Invalid UTF-8 from a cut multi-byte char becomes U+FFFD in both.
    odd = ["Ġh", "Ã", "Ċ", "ðŁĺ"]
    assert decoders.ByteLevel().decode(odd) == tokenizers.decoders.ByteLevel().decode(odd)
    assert decoders.BPEDecoder("_").decode(["a_b", "c_"]) == tokenizers.decoders.BPEDecoder("_").decode(["a_b", "c_"])


@pytest.mark.parametrize(
    "single, pair",
    [
        ("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1"),
        ("$A [SEP]", None),
        ("[CLS]:1 $0 [SEP]:2", "$A:0 $B:1"),
        (["[CLS]", "$A", "[SEP]"], ["$A", "[SEP]", "$B:1"]),
    ],
)
def test_template_processing_serialises_like_hf(single, pair):
    specials = [("[CLS]", 1), ("[SEP]", 2)]
    kwargs = {} if pair is None else {"pair": pair}
    ours = processors.TemplateProcessing(single, special_tokens=specials, **kwargs)
    theirs = tokenizers.processors.TemplateProcessing(single=single, special_tokens=specials, **kwargs)
    assert ours.to_dict() == json.loads(theirs.__getstate__())
    assert processors.from_dict(ours.to_dict()) == ours
    assert ours.num_special_tokens_to_add(False) == theirs.num_special_tokens_to_add(False)
    assert ours.num_special_tokens_to_add(True) == theirs.num_special_tokens_to_add(True)


def test_template_with_undeclared_special_token_is_refused_like_hf():
    with pytest.raises(ValueError, match="not in special_tokens"):
        processors.TemplateProcessing("[CLS] $A [EOS]", special_tokens=[("[CLS]", 1)])
    with pytest.raises(Exception):
        tokenizers.processors.TemplateProcessing(single="[CLS] $A [EOS]", special_tokens=[("[CLS]", 1)])


# ==== encoding through the Rust core: parity with HF on real text ====


def _pairs(make):
    hf_tok = make()
    return hf_tok, Tokenizer.from_str(hf_tok.to_str())


@pytest.mark.parametrize("make", [byte_level_hf, whitespace_hf], ids=["byte-level", "whitespace"])
def test_encode_matches_hf_ids_tokens_offsets(make):
    hf_tok, ours = _pairs(make)
    for line in eval_lines():
        for add_special in (True, False):
            expected = hf_tok.encode(line, add_special_tokens=add_special)
            got = ours.encode(line, add_special_tokens=add_special)
            assert got.ids == expected.ids, repr(line)
            assert got.tokens == expected.tokens, repr(line)
            assert [tuple(o) for o in got.offsets] == [tuple(o) for o in expected.offsets], repr(line)
            assert got.type_ids == expected.type_ids
            assert got.special_tokens_mask == expected.special_tokens_mask
            assert got.attention_mask == expected.attention_mask
            assert len(got) == len(expected)


@pytest.mark.parametrize("make", [byte_level_hf, whitespace_hf], ids=["byte-level", "whitespace"])
def test_encode_batch_and_decode_match_hf(make):
    hf_tok, ours = _pairs(make)
    lines = eval_lines()
    expected = hf_tok.encode_batch(lines)
    got = ours.encode_batch(lines)
    assert [e.ids for e in got] == [e.ids for e in expected]
    assert ours.encode_batch_ids(lines) == [e.ids for e in expected]
    for skip in (True, False):
        assert ours.decode_batch([e.ids for e in expected], skip_special_tokens=skip) == hf_tok.decode_batch(
            [e.ids for e in expected], skip_special_tokens=skip
        )


def test_special_tokens_in_text_are_never_split():
    hf_tok, ours = _pairs(byte_level_hf)
    text = "a<|endoftext|>b <pad><|endoftext|>"
    enc = ours.encode(text)
    assert enc.ids == hf_tok.encode(text).ids
    assert enc.tokens.count("<|endoftext|>") == 2 and "<pad>" in enc.tokens
    assert ours.decode(enc.ids, skip_special_tokens=False) == text
    assert ours.decode(enc.ids) == hf_tok.decode(enc.ids)
    assert all(ours.token_to_id(t) is not None for t in SPECIALS_GPT2)


@pytest.mark.parametrize(
    "trunc, pad",
    [
        ({"max_length": 12}, None),
        ({"max_length": 12, "stride": 3}, {"pad_to_multiple_of": 8}),
        ({"max_length": 10, "direction": "left"}, {"direction": "left", "length": 16}),
        (None, {}),
    ],
)
@pytest.mark.parametrize("make", [byte_level_hf, whitespace_hf], ids=["byte-level", "whitespace"])
def test_truncation_and_padding_match_hf(make, trunc, pad):
    hf_tok, ours = _pairs(make)
    pad_token = "<pad>" if make is byte_level_hf else "[PAD]"
    for tok in (hf_tok, ours):
        if trunc is not None:
            tok.enable_truncation(**trunc)
        if pad is not None:
            tok.enable_padding(pad_id=hf_tok.token_to_id(pad_token), pad_token=pad_token, **pad)
    lines = eval_lines()[:120]

    def view(e):
        return (e.ids, e.tokens, [tuple(o) for o in e.offsets], e.attention_mask, e.special_tokens_mask,
                [(o.ids, [tuple(x) for x in o.offsets]) for o in e.overflowing])

    assert [view(e) for e in ours.encode_batch(lines)] == [view(e) for e in hf_tok.encode_batch(lines)]
    for line in lines[:30]:
        assert view(ours.encode(line)) == view(hf_tok.encode(line))


def test_pickled_tokenizer_encodes_the_same():
    hf_tok, ours = _pairs(byte_level_hf)
    clone = pickle.loads(pickle.dumps(ours))
    lines = eval_lines()[:50]
    assert [e.ids for e in clone.encode_batch(lines)] == [e.ids for e in hf_tok.encode_batch(lines)]


def test_configuration_changes_reach_the_core():
    hf_tok, ours = _pairs(byte_level_hf)
    line = "A line of real text, long enough to truncate."
    before = ours.encode(line).ids
    ours.enable_truncation(3)
    assert ours.encode(line).ids == before[:3]
    ours.no_truncation()
    assert ours.encode(line).ids == before
    ours.add_special_tokens(["line"])
    assert ours.token_to_id("line") in ours.encode(line).ids


# ==== the docstring examples run ====


@pytest.mark.parametrize(
    "module",
    ["subword", "subword.errors", "subword.model", "subword.tokenizer", "subword.normalizers",
     "subword.pre_tokenizers", "subword.decoders", "subword.processors", "subword.formats.hf_json",
     "subword._native"],
)
def test_docstring_examples(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# ==== hand-made models with every BPE option: ours vs HF loading the very same file ====


def _hand_made(**options):
    vocab = {"[UNK]": 0, "<0x61>": 1, "<0xC3>": 2, "<0xA9>": 3, "a": 4, "b": 5, "c": 6, "##b": 7, "##c": 8,
             "ab": 9, "abc": 10, "b</w>": 11, "c</w>": 12, "ab</w>": 13, "bc": 14, "bca": 15}
    merges = [("a", "b"), ("ab", "c"), ("b", "c")]
    if options.get("continuing_subword_prefix") == "##":
        merges = [("a", "##b")]
    elif options.get("end_of_word_suffix") == "</w>":
        merges = [("a", "b</w>")]
    elif options.get("ignore_merges"):
        merges = [("a", "b")]
    return BPE(vocab, merges, **options)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"unk_token": "[UNK]"},
        {"unk_token": "[UNK]", "fuse_unk": True},
        {"byte_fallback": True, "unk_token": "[UNK]"},
        {"continuing_subword_prefix": "##", "unk_token": "[UNK]"},
        {"end_of_word_suffix": "</w>", "unk_token": "[UNK]"},
        {"ignore_merges": True},
    ],
    ids=lambda o: ",".join(o) or "plain",
)
@pytest.mark.parametrize("decoder", [None, decoders.BPEDecoder("</w>")], ids=["no-decoder", "bpe-decoder"])
def test_hand_made_models_encode_and_decode_like_hf(options, decoder):
    ours = Tokenizer(_hand_made(**options), pre_tokenizer=pre_tokenizers.Whitespace(), decoder=decoder,
                     special_tokens=["<s>"])
    theirs = tokenizers.Tokenizer.from_str(ours.to_json_str())
    for text in ["abc", "ab ab abc bca", "aé xyz éé", "a<s>b c", "", "  ", "bcab cba zzz é a"]:
        expected = theirs.encode(text)
        got = ours.encode(text)
        assert (got.ids, got.tokens, got.offsets) == (expected.ids, expected.tokens, expected.offsets), text
        for skip in (True, False):
            assert ours.decode(got.ids, skip) == theirs.decode(expected.ids, skip_special_tokens=skip), text


@pytest.mark.parametrize("add_prefix_space", [True, False], ids=["prefix", "noprefix"])
@pytest.mark.parametrize("trim_offsets", [True, False], ids=["trim", "notrim"])
@pytest.mark.parametrize("use_regex", [True, False], ids=["regex", "noregex"])
def test_byte_level_variants_match_hf(add_prefix_space, trim_offsets, use_regex):
    """Every ByteLevel flag combination, with special tokens splitting the text (the prefix space is added to
    each segment between them) and offsets trimmed by the post-processor."""
    base = Tokenizer.from_str(byte_level_hf().to_str())
    ours = base.with_options(
        pre_tokenizer=pre_tokenizers.ByteLevel(add_prefix_space, trim_offsets, use_regex),
        post_processor=processors.ByteLevel(add_prefix_space, trim_offsets, use_regex),
    )
    theirs = tokenizers.Tokenizer.from_str(ours.to_json_str())
    lines = eval_lines()[::4]
    expected = theirs.encode_batch(lines)
    got = ours.encode_batch(lines)
    for line, e, g in zip(lines, expected, got):
        assert (g.ids, g.tokens, [tuple(o) for o in g.offsets]) == (e.ids, e.tokens, [tuple(o) for o in e.offsets]), repr(line)
    assert ours.decode_batch([e.ids for e in expected]) == theirs.decode_batch([e.ids for e in expected])


@pytest.mark.parametrize(
    "normalizer",
    [normalizers.NFC(), normalizers.NFKC(), normalizers.NFKD(), normalizers.Lowercase(), normalizers.StripAccents(),
     normalizers.Sequence([normalizers.NFKD(), normalizers.StripAccents(), normalizers.Lowercase()])],
    ids=repr,
)
def test_normalizer_offsets_match_hf(normalizer):
    """Offsets point into the ORIGINAL text even when normalization expands (ﬁ -> fi) or removes chars."""
    ours = Tokenizer.from_str(whitespace_hf().to_str()).with_options(normalizer=normalizer)
    theirs = tokenizers.Tokenizer.from_str(ours.to_json_str())
    lines = eval_lines()[::3] + ["ﬁnally Ⅻ ½ ﬀ İstanbul ΣΑΣ", "e\u0301te\u0301 ǅ ẞ ㍿"]
    for line, e, g in zip(lines, theirs.encode_batch(lines), ours.encode_batch(lines)):
        assert (g.ids, g.tokens, [tuple(o) for o in g.offsets]) == (e.ids, e.tokens, [tuple(o) for o in e.offsets]), repr(line)


@pytest.mark.parametrize(
    "trunc",
    [None, {"max_length": 20}, {"max_length": 60, "strategy": "only_first"},
     {"max_length": 24, "stride": 2, "direction": "left"}],
    ids=["none", "longest_first", "only_first", "left-stride"],
)
def test_pairs_match_hf(trunc):
    hf_tok, ours = _pairs(whitespace_hf)
    for tok in (hf_tok, ours):
        if trunc is not None:
            tok.enable_truncation(**trunc)
        tok.enable_padding(pad_id=hf_tok.token_to_id("[PAD]"), pad_token="[PAD]")
    lines = [line for line in eval_lines()[:160] if line.strip()]
    firsts, seconds = lines[0::2], lines[1::2]
    n = min(len(firsts), len(seconds))
    firsts, seconds = firsts[:n], seconds[:n]

    def view(e):
        return (e.ids, e.type_ids, e.tokens, [tuple(o) for o in e.offsets], e.special_tokens_mask,
                e.attention_mask, [o.ids for o in e.overflowing])

    expected = hf_tok.encode_batch(list(zip(firsts, seconds)))
    assert [view(e) for e in ours.encode_batch(firsts, pairs=seconds)] == [view(e) for e in expected]
    for a, b in list(zip(firsts, seconds))[:20]:
        assert view(ours.encode(a, pair=b)) == view(hf_tok.encode(a, b))
    if trunc is not None and trunc.get("strategy") == "only_first":
        # HF refuses when the first sequence alone cannot absorb the cut; so must we.
        short, long = "to be", " ".join(lines[:10])
        with pytest.raises(Exception, match="Truncation error"):
            hf_tok.encode(short, long)
        with pytest.raises(ValueError):
            ours.encode(short, pair=long)
    with pytest.raises(ValueError, match="pairs has"):
        ours.encode_batch(firsts, pairs=seconds[:-1])


@pytest.mark.parametrize(
    "flags",
    [{}, {"lstrip": True}, {"rstrip": True}, {"single_word": True}, {"normalized": True}, {"normalized": False},
     {"lstrip": True, "rstrip": True, "single_word": True}],
    ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()) or "defaults",
)
@pytest.mark.parametrize("special", [True, False], ids=["special", "added"])
@pytest.mark.parametrize("make", [byte_level_hf, whitespace_hf], ids=["byte-level", "whitespace"])
def test_added_token_flags_match_hf(make, special, flags):
    """Added tokens are matched before the pipeline (on the normalized text when ``normalized``), with HF's
    lstrip/rstrip/single_word rules, and never split."""
    hf_tok = make()
    hf_tok.add_tokens([tokenizers.AddedToken(t, special=special, **flags) for t in ("<mask>", "hello")])
    ours = Tokenizer.from_str(hf_tok.to_str())
    texts = ["HELLO world hello", "say <mask> now", "say<mask>now", "xhello hellox hello", "a  <mask>  b",
             "Hello<mask>", "<MASK> hello", " hello\n", "hello"]
    for text in texts:
        e, g = hf_tok.encode(text), ours.encode(text)
        assert (g.ids, g.tokens, g.offsets) == (e.ids, e.tokens, e.offsets), repr(text)
        assert ours.decode(g.ids, skip_special_tokens=False) == hf_tok.decode(e.ids, skip_special_tokens=False)


@pytest.mark.parametrize(
    "normalizer",
    [None, normalizers.Lowercase(), normalizers.NFKC(), normalizers.NFD(),
     normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents()])],
    ids=repr,
)
def test_byte_fallback_offsets_through_normalizers_match_hf(normalizer):
    """Byte tokens of one char all span that whole char, also when normalization moved or expanded it."""
    ours = Tokenizer(_hand_made(byte_fallback=True, unk_token="[UNK]"), normalizer=normalizer,
                     pre_tokenizer=pre_tokenizers.Whitespace())
    theirs = tokenizers.Tokenizer.from_str(ours.to_json_str())
    for text in ["aé xyz éé", "ÉA ﬁé", "e\u0301a", "İé", "中a😀"]:
        e, g = theirs.encode(text), ours.encode(text)
        assert (g.ids, g.tokens, g.offsets) == (e.ids, e.tokens, e.offsets), repr(text)
