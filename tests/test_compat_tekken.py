"""Mistral Tekken files against ``mistral_common``'s own ``Tekkenizer`` (the oracle).

The two real files ``mistral_common`` ships (``tekken_240718.json``: Mistral Nemo; ``tekken_240911.json``:
Pixtral) load through ``Tokenizer.from_file`` (detected by content) and give ``Tekkenizer.encode(text, bos=False,
eos=False)``'s ids on Unicode-rich text and corpus lines, and its ``decode`` (specials ignored, or kept) on
those ids and on random id sequences. Broken files are refused naming the file and the field.
"""

from __future__ import annotations

import base64
import json
import os
import random

import pytest

from subword import Tokenizer
from subword.errors import FormatError
from tests._unicode_samples import TRICKY, corpus_lines

mistral_common = pytest.importorskip("mistral_common")
from mistral_common.tokens.tokenizers.tekken import SpecialTokenPolicy, Tekkenizer  # noqa: E402

DATA = os.path.join(os.path.dirname(mistral_common.__file__), "data")
FILES = sorted(f for f in os.listdir(DATA) if f.startswith("tekken") and f.endswith(".json"))
EXTRA = ["中文字符，日本語のテキスト、한국어 텍스트。", "emoji 😀🎉 👨\u200d👩\u200d👧 🇫🇷 1\ufe0f\u20e3", "12345 ٣٤٥ ²³",
         "  x\r\n\r\n y \t\u2028z\u2029", "ﬁ Å Ω ÅÅ", "e\u0301\u0308 \u0915\u094d\u0937 ไทย", "a" * 200]
TEXTS = TRICKY + EXTRA + corpus_lines("gutenberg_en_20M.txt", 400) + corpus_lines("tinyshakespeare.txt", 100)


@pytest.fixture(scope="module", params=FILES)
def pair(request):
    path = os.path.join(DATA, request.param)
    return Tekkenizer.from_file(path), Tokenizer.from_file(path)


def test_ids_and_decode_equal_tekkenizer(pair):
    ref, ours = pair
    for text in TEXTS:
        want = ref.encode(text, bos=False, eos=False)
        got = ours.encode(text, add_special_tokens=False).ids
        assert got == want, ascii(text)
        assert ours.decode(got) == ref.decode(want)
    batch = ours.encode_batch_ids(TEXTS, add_special_tokens=False)
    assert batch == [ref.encode(t, bos=False, eos=False) for t in TEXTS]


def test_random_ids_decode_and_special_tokens_equal_tekkenizer(pair):
    ref, ours = pair
    n = ref.num_special_tokens
    rng = random.Random(7)
    for _ in range(1500):
        ids = [rng.randrange(n, ref.n_words) for _ in range(rng.randint(0, 10))]
        assert ours.decode(ids) == ref.decode(ids), ids
        with_specials = [rng.randrange(0, n) for _ in range(2)] + ids + [ref.eos_id]
        keep = ref.decode(with_specials, special_token_policy=SpecialTokenPolicy.KEEP)
        assert ours.decode(with_specials, skip_special_tokens=False) == keep, with_specials
    for name in ("<s>", "</s>", "<unk>", "[INST]", "[IMG]", "<pad>"):
        assert ours.token_to_id(name) == ref.get_special_token(name)
    assert ours.token_to_id("<SPECIAL_999>") == 999
    assert ours.get_vocab_size() == ref.n_words


def _tiny(**changes) -> dict:
    vocab = [{"rank": b, "token_bytes": base64.b64encode(bytes([b])).decode(), "token_str": None} for b in range(256)]
    vocab.append({"rank": 256, "token_bytes": base64.b64encode(b"ab").decode(), "token_str": "ab"})
    data = {"config": {"pattern": r"\p{L}+|\s+|.", "default_vocab_size": 282, "default_num_special_tokens": 25,
                       "version": "v3", "num_vocab_tokens": 257}, "vocab": vocab}
    for key, value in changes.items():
        section, _, field = key.partition("__")
        if field:
            data[section][field] = value
        else:
            data[section] = value
    return data


def test_tiny_file_equals_tekkenizer(tmp_path):
    path = tmp_path / "tekken.json"
    path.write_text(json.dumps(_tiny()), encoding="utf-8")
    ref, ours = Tekkenizer.from_file(path), Tokenizer.from_file(path)
    for text in ("abab a b", "xyz ab", ""):
        assert ours.encode(text, add_special_tokens=False).ids == ref.encode(text, bos=False, eos=False)


@pytest.mark.parametrize("change, message", [
    ({"vocab": None}, "a list 'vocab'"),
    ({"config__version": "v99"}, "config.version 'v99'"),
    ({"config__pattern": "(?<=a+"}, "fancy-regex"),
    ({"config__default_num_special_tokens": -1}, "default_num_special_tokens must be an integer"),
    ({"extra_field": 1}, r"unknown Tekken field\(s\) \['extra_field'\]"),
])
def test_bad_files_name_the_field(tmp_path, change, message):
    path = tmp_path / "tekken.json"
    path.write_text(json.dumps(_tiny(**change)), encoding="utf-8")
    with pytest.raises(FormatError, match=message) as err:
        Tokenizer.from_file(path)
    assert str(path) in str(err.value)


def test_bad_base64_and_rank_gap_are_refused(tmp_path):
    for mutate, message in ((lambda d: d["vocab"][256].update(token_bytes="Y$I="), r"vocab\[256\].token_bytes"),
                            (lambda d: d["vocab"][256].update(rank=300), r"vocab\[256\] has rank 300"),
                            (lambda d: d["vocab"][65].update(token_bytes="Qg=="), r"vocab\[65\] must be the single byte")):
        data = _tiny()
        mutate(data)
        path = tmp_path / "tekken.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        with pytest.raises(FormatError, match=message):
            Tokenizer.from_file(path)


def test_cli_reports_a_bad_tekken_file_in_one_line(tmp_path):
    from click.testing import CliRunner

    from cli.main import cli

    data = _tiny()
    data["vocab"][256]["token_bytes"] = "%%%"
    path = tmp_path / "tekken.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    result = CliRunner().invoke(cli, ["encode", "-t", str(path)], input="hello\n")
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "vocab[256].token_bytes" in lines[0] and str(path) in lines[0], result.output
    assert "Traceback" not in result.output


def test_saved_as_tokenizer_json_hf_keeps_the_special_ids(tmp_path):
    """HF renumbers added tokens that are not in the model's vocab; the saved file puts the special tokens in the
    vocab at their ids (as transformers' conversions do), so HF gives the Tekken ids, specials included."""
    tokenizers = pytest.importorskip("tokenizers")
    path = tmp_path / "tekken.json"
    path.write_text(json.dumps(_tiny()), encoding="utf-8")
    tok = Tokenizer.from_file(path)
    out = tmp_path / "tokenizer.json"
    tok.save(out)
    hf = tokenizers.Tokenizer.from_file(str(out))
    for text in ("<s>[INST] abab [/INST]</s>", "ab a", "<SPECIAL_24>x"):
        assert hf.encode(text, add_special_tokens=False).ids == tok.encode(text, add_special_tokens=False).ids
    assert hf.token_to_id("<SPECIAL_24>") == 24
