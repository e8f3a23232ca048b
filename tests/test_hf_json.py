"""HF ``tokenizer.json`` reading and writing: parity with what HF writes and reads, errors, atomic writes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from _hf_fixtures import byte_level_hf, eval_lines, training_lines, whitespace_hf
from subword import BPE, Tokenizer
from subword.errors import FormatError, UnsupportedComponentError
from subword.pre_tokenizers import ByteLevel

import tokenizers

FIXTURES = [pytest.param(byte_level_hf, id="byte-level"), pytest.param(whitespace_hf, id="whitespace")]


def _hf_encodings(tok, lines):
    return [(e.ids, e.tokens, e.offsets) for e in tok.encode_batch(lines)]


@pytest.fixture(scope="module", params=FIXTURES)
def hf_tok(request):
    tok = request.param()
    if request.param is whitespace_hf:
        tok.enable_truncation(48, stride=8)
        tok.enable_padding(pad_id=tok.token_to_id("[PAD]"), pad_token="[PAD]", pad_to_multiple_of=8)
    return tok


# ==== what HF writes, we read (and write back unchanged) ====


def test_hf_file_roundtrips_through_us_unchanged(hf_tok, tmp_path):
    path = tmp_path / "hf.json"
    hf_tok.save(str(path))  # HF's pretty form
    ours = Tokenizer.from_file(path)
    assert json.loads(ours.to_json_str()) == json.loads(hf_tok.to_str())
    # The key order of every section matches HF's too (readers diff these files).
    assert list(json.loads(ours.to_json_str())) == list(json.loads(hf_tok.to_str()))
    assert list(json.loads(ours.to_json_str())["model"]) == list(json.loads(hf_tok.to_str())["model"])


def test_vocab_and_added_tokens_match_hf(hf_tok):
    ours = Tokenizer.from_str(hf_tok.to_str())
    assert ours.get_vocab() == hf_tok.get_vocab(with_added_tokens=True)
    assert ours.get_vocab_size() == hf_tok.get_vocab_size() == ours.vocab_size
    assert ours.get_vocab(with_added_tokens=False) == hf_tok.get_vocab(with_added_tokens=False)
    for token, idx in list(hf_tok.get_vocab().items())[::37]:
        assert ours.token_to_id(token) == idx
        assert ours.id_to_token(idx) == hf_tok.id_to_token(idx)
    assert ours.token_to_id("definitely not a token") is None
    assert ours.id_to_token(10**6) is None
    assert ours.truncation == hf_tok.truncation
    assert ours.padding == hf_tok.padding


def test_legacy_string_merges_are_accepted(tmp_path):
    hf_tok = byte_level_hf()
    data = json.loads(hf_tok.to_str())
    data["model"]["merges"] = [" ".join(pair) for pair in data["model"]["merges"]]
    path = tmp_path / "legacy.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    ours = Tokenizer.from_file(path)
    assert json.loads(ours.to_json_str()) == json.loads(hf_tok.to_str())  # written back as pairs


# ==== what we write, HF reads with the same results ====


def test_our_file_loads_in_hf_with_identical_encodings(hf_tok, tmp_path):
    ours = Tokenizer.from_str(hf_tok.to_str())
    path = tmp_path / "ours.json"
    ours.save(path)
    reloaded = tokenizers.Tokenizer.from_file(str(path))
    lines = eval_lines()
    assert _hf_encodings(reloaded, lines) == _hf_encodings(hf_tok, lines)
    assert json.loads(reloaded.to_str()) == json.loads(hf_tok.to_str())


def test_hand_built_tokenizer_loads_in_hf(tmp_path):
    vocab = {c: i for i, c in enumerate(sorted(ByteLevel.alphabet()))}
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    tok = Tokenizer(BPE(vocab, merges), pre_tokenizer=ByteLevel(add_prefix_space=False),
                    special_tokens=["<|endoftext|>"])
    path = tmp_path / "tok.json"
    tok.save(path)
    hf = tokenizers.Tokenizer.from_file(str(path))
    enc = hf.encode("the the<|endoftext|>")
    assert enc.tokens == ["t", "he", "Ġthe", "<|endoftext|>"]
    assert hf.token_to_id("<|endoftext|>") == 259 == tok.token_to_id("<|endoftext|>")


# ==== provenance ====


def test_provenance_is_stored_where_hf_and_transformers_tolerate_it(tmp_path):
    hf_tok = byte_level_hf()
    ours = Tokenizer.from_str(hf_tok.to_str())
    ours.provenance = {"trainer": "BpeTrainer", "vocab_size": 600, "seed": 0, "corpus_sha256": "ab" * 32}
    path = tmp_path / "tok.json"
    ours.save(path)
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert "provenance" not in raw and raw["model"]["provenance"]["seed"] == 0
    assert Tokenizer.from_file(path).provenance == ours.provenance

    lines = eval_lines()[:100]
    reloaded = tokenizers.Tokenizer.from_file(str(path))
    assert _hf_encodings(reloaded, lines) == _hf_encodings(hf_tok, lines)
    transformers = pytest.importorskip("transformers")
    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(path))
    assert fast(lines)["input_ids"] == [e.ids for e in hf_tok.encode_batch(lines)]


def test_hf_rejects_unknown_top_level_keys(tmp_path):
    """Why provenance lives inside "model": if HF ever accepts top-level extras, this test says so."""
    data = json.loads(byte_level_hf().to_str())
    data["provenance"] = {"seed": 0}
    path = tmp_path / "top.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(Exception):
        tokenizers.Tokenizer.from_file(str(path))
    with pytest.raises(FormatError, match="unknown top-level key"):
        Tokenizer.from_file(path)


# ==== unsupported components ====


def _unsupported_cases():
    from tokenizers import models, normalizers, pre_tokenizers

    return [
        ("pre_tokenizer", "Punctuation", lambda d: d.__setitem__("pre_tokenizer", json.loads(
            pre_tokenizers.Punctuation().__getstate__()))),
        ("pre_tokenizer", "Digits", lambda d: d.__setitem__("pre_tokenizer", json.loads(
            pre_tokenizers.Sequence([pre_tokenizers.Whitespace(), pre_tokenizers.Digits()]).__getstate__()))),
        ("normalizer", "ByteLevel", lambda d: d.__setitem__("normalizer", json.loads(normalizers.ByteLevel().__getstate__()))),
        ("model", "WordLevel", lambda d: d.__setitem__("model", json.loads(
            tokenizers.Tokenizer(models.WordLevel({"a": 0}, "a")).to_str())["model"])),
    ]


@pytest.mark.parametrize("index", range(4))
def test_components_once_refused_now_load_with_hf_ids(index, tmp_path):
    _, _, mutate = _unsupported_cases()[index]
    data = json.loads(byte_level_hf().to_str())
    mutate(data)
    path = tmp_path / "tok.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    theirs, ours = tokenizers.Tokenizer.from_file(str(path)), Tokenizer.from_file(path)
    for text in ("Hello, world! 123 45", "a", "naïve café 1,000"):
        try:
            want = theirs.encode(text).ids
        except Exception:  # noqa: BLE001 - WordLevel without the word and no unknown token: HF errors too
            with pytest.raises(Exception):
                ours.encode(text)
            continue
        assert ours.encode(text).ids == want


@pytest.mark.parametrize("section", ["normalizer", "pre_tokenizer", "post_processor", "decoder", "model"])
def test_unknown_component_type_error_names_it(section, tmp_path):
    data = json.loads(byte_level_hf().to_str())
    data[section] = {"type": "Cyrillic"}
    path = tmp_path / "tok.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(Exception):
        tokenizers.Tokenizer.from_file(str(path))  # HF refuses it too
    with pytest.raises(UnsupportedComponentError) as err:
        Tokenizer.from_file(path)
    msg = str(err.value)
    assert f"unsupported {section} type 'Cyrillic' in {path}" in msg
    assert "(supported: " in msg


# ==== corrupt files ====


def test_truncated_file_is_a_clear_format_error(tmp_path):
    text = byte_level_hf().to_str(pretty=True)
    for fraction in (0.001, 0.1, 0.5, 0.9, 0.999):
        path = tmp_path / f"cut-{fraction}.json"
        path.write_text(text[: int(len(text) * fraction)], encoding="utf-8")
        with pytest.raises(FormatError, match=r"is not valid JSON \(truncated or corrupt\?\)") as err:
            Tokenizer.from_file(path)
        assert str(path) in str(err.value)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "is empty"),
        (b"   \n", "is empty"),
        (b"\xff\xfe\x00garbage", "is not UTF-8"),
        (b"[1, 2, 3]", "must be a JSON object"),
        (b'{"version": "1.0"}', "no 'model' section"),
        (b'{"version": "2.0", "model": {}}', "unsupported tokenizer.json version"),
        (b'{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "b"]]}}', "'b' is not in the vocab"),
        (b'{"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []}}', "vocab id 0 is used by both"),
        (b'{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "unk_token": "<unk>"}}', "unk_token"),
        (b'{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "dropout": 2.0}}', "dropout"),
        (b'{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [], "colour": 1}}', "unknown BPE model field"),
        (b'{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "truncation": {"max_length": 0, '
         b'"strategy": "LongestFirst", "stride": 0}}', "max_length must be >= 1"),
        (b'{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "padding": {"strategy": "Longest", '
         b'"pad_id": 0, "pad_type_id": 0, "pad_token": "a"}}', "padding strategy"),
        (b'{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "added_tokens": [{"id": 1, '
         b'"content": "<s>", "special": "yes"}]}', "must be a bool"),
    ],
)
def test_malformed_files_are_format_errors_naming_the_path(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(FormatError) as err:
        Tokenizer.from_file(path)
    assert message in str(err.value) and str(path) in str(err.value)


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        Tokenizer.from_file(tmp_path / "nope.json")


# ==== atomic writes ====


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name != "tok.json")


@pytest.mark.parametrize("failure", [OSError("disk full"), KeyboardInterrupt()], ids=["oserror", "ctrl-c"])
@pytest.mark.parametrize("where", ["fsync", "replace"])
def test_failed_save_leaves_old_file_and_no_temp_files(tmp_path, monkeypatch, failure, where):
    path = tmp_path / "tok.json"
    old = Tokenizer(BPE({"a": 0}, []))
    old.save(path)
    before = path.read_bytes()
    big = Tokenizer.from_str(byte_level_hf().to_str())

    written = []
    real_fsync = os.fsync

    def failing(*args, **kwargs):
        # By the time fsync/replace runs, the temporary file holds (part of) the new text.
        written.extend(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp"))
        raise failure

    monkeypatch.setattr(os, where, failing)
    with pytest.raises(type(failure)):
        big.save(path)
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert written, "the write should have gone through a temporary file"
    assert path.read_bytes() == before
    assert _leftovers(tmp_path) == []


def test_failed_first_save_creates_nothing(tmp_path, monkeypatch):
    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        Tokenizer(BPE({"a": 0}, [])).save(tmp_path / "tok.json")
    assert list(tmp_path.iterdir()) == []


def test_saved_file_has_normal_permissions(tmp_path):
    path = tmp_path / "tok.json"
    Tokenizer(BPE({"a": 0}, [])).save(path)
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


# ==== transformers side files ====


def test_save_pretrained_loads_in_transformers_with_same_ids(tmp_path):
    transformers = pytest.importorskip("transformers")
    hf_tok = whitespace_hf()
    ours = Tokenizer.from_str(hf_tok.to_str())
    ours.enable_padding(pad_id=ours.token_to_id("[PAD]"), pad_token="[PAD]")
    names = [Path(p).name for p in ours.save_pretrained(
        tmp_path, cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")]
    assert names == ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]

    auto = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    assert (auto.pad_token, auto.unk_token, auto.cls_token, auto.mask_token) == ("[PAD]", "[UNK]", "[CLS]", "[MASK]")
    assert auto.pad_token_id == hf_tok.token_to_id("[PAD]")
    lines = eval_lines()[:200]
    expected = [e.ids for e in hf_tok.encode_batch(lines)]
    assert auto(lines)["input_ids"] == expected
    assert auto.decode(expected[3], skip_special_tokens=True) == hf_tok.decode(expected[3])

    fast = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tmp_path / "tokenizer.json"))
    assert fast(lines)["input_ids"] == expected


def test_save_pretrained_byte_level_decodes_like_hf(tmp_path):
    transformers = pytest.importorskip("transformers")
    hf_tok = byte_level_hf()
    Tokenizer.from_str(hf_tok.to_str()).save_pretrained(tmp_path, eos_token="<|endoftext|>", pad_token="<pad>")
    auto = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    for line in eval_lines()[::40]:
        ids = hf_tok.encode(line).ids
        assert auto(line)["input_ids"] == ids
        assert auto.decode(ids) == hf_tok.decode(ids, skip_special_tokens=False)


def test_save_pretrained_rejects_unknown_roles_and_missing_tokens(tmp_path):
    tok = Tokenizer(BPE({"a": 0}, []))
    with pytest.raises(TypeError, match="unknown argument"):
        tok.save_pretrained(tmp_path, padding_token="a")
    with pytest.raises(ValueError, match="not a token"):
        tok.save_pretrained(tmp_path, eos_token="</s>")
    assert list(tmp_path.iterdir()) == []


# ==== end to end: a tokenizer we train, saved by us, used by HF and transformers ====


@pytest.mark.parametrize("byte_level", [True, False], ids=["byte-level", "whitespace"])
def test_our_trained_tokenizer_gives_the_same_ids_everywhere(tmp_path, byte_level):
    trainers = pytest.importorskip("subword.trainers")
    transformers = pytest.importorskip("transformers")
    specials = ["<|endoftext|>", "<pad>"] if byte_level else ["[UNK]", "[PAD]"]
    options = {"unk_token": "[UNK]"} if not byte_level else {}
    tok = trainers.train_bpe(training_lines()[:3000],
                             trainers.BpeTrainer(vocab_size=500, special_tokens=specials, **options),
                             byte_level=byte_level)
    tok.save(tmp_path / "tokenizer.json")
    tok.save_pretrained(tmp_path / "hf", pad_token=specials[1])
    lines = eval_lines()[::3]
    ours = [e.ids for e in tok.encode_batch(lines)]
    assert [e.ids for e in tokenizers.Tokenizer.from_file(str(tmp_path / "tokenizer.json")).encode_batch(lines)] == ours
    assert transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))(lines)["input_ids"] == ours
    assert Tokenizer.from_file(tmp_path / "tokenizer.json").provenance == tok.provenance != {}


def test_legacy_merges_option_loads_in_hf_with_same_ids(tmp_path):
    hf_tok = byte_level_hf()
    path = tmp_path / "legacy.json"
    Tokenizer.from_str(hf_tok.to_str()).save(path, legacy_merges=True)
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert all(isinstance(m, str) and m.count(" ") == 1 for m in raw["model"]["merges"])
    lines = eval_lines()[::4]
    assert _hf_encodings(tokenizers.Tokenizer.from_file(str(path)), lines) == _hf_encodings(hf_tok, lines)
    spaced = Tokenizer(BPE({"a": 0, " ": 1, "a ": 2}, [("a", " ")]))
    with pytest.raises(ValueError, match="cannot hold tokens with spaces"):
        spaced.save(tmp_path / "x.json", legacy_merges=True)
    assert not (tmp_path / "x.json").exists()


def test_provenance_must_be_json(tmp_path):
    tok = Tokenizer(BPE({"a": 0}, []))
    with pytest.raises(TypeError, match="must be a dict"):
        tok.provenance = ["not", "a", "dict"]
    tok.provenance = {"when": object()}
    with pytest.raises(TypeError, match="provenance JSON-serialisable"):
        tok.save(tmp_path / "tok.json")
    assert list(tmp_path.iterdir()) == []


def test_added_token_ids_are_given_as_hf_gives_them(tmp_path, caplog):
    """HF ignores declared added-token ids: a token the model has keeps the model's id, a new one gets the next
    free id in file order (a file declaring id 0 for a new token, or id 9 after a 2-token vocab)."""
    import logging

    flags = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
    data = {"version": "1.0", "model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []},
            "added_tokens": [{"id": 0, "content": "<s>", **flags}, {"id": 9, "content": "</s>", **flags},
                             {"id": 7, "content": "b", **flags}]}
    path = tmp_path / "tok.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    theirs = tokenizers.Tokenizer.from_file(str(path))
    with caplog.at_level(logging.WARNING):
        ours = Tokenizer.from_file(path)
    assert "declared with id 0 but HF gives it id 2" in caplog.text
    for text in ("<s>ab</s>", "b<s>", "a"):
        assert ours.encode(text).ids == theirs.encode(text).ids
    assert ours.get_vocab() == theirs.get_vocab()
    assert ours.decode([2, 0, 3, 1], skip_special_tokens=False) == theirs.decode([2, 0, 3, 1], skip_special_tokens=False)
