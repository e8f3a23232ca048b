"""``Tokenizer.encode_batch_ids_flat``: ids and offsets as two numpy arrays, the same ids as
``encode_batch_ids`` and as each file's own library (tiktoken, HF tokenizers, sentencepiece) on real text.
"""

from __future__ import annotations

import numpy as np
import pytest

from subword import BPE, Tokenizer
from subword.errors import FormatError
from subword.formats import tiktoken as tkfmt
from tests._unicode_samples import TRICKY, corpus_lines


def _split(ids: np.ndarray, offsets: np.ndarray) -> list[list[int]]:
    return [ids[s:e].tolist() for s, e in zip(offsets[:-1], offsets[1:])]


def _lines() -> list[str]:
    # Real prose, the tricky Unicode samples, and empty lines (a text with no ids keeps its offset slot).
    return corpus_lines("gutenberg_en_20M.txt", 3000) + TRICKY + ["", "", " "]


@pytest.mark.parametrize("method", ["encode_batch", "encode_batch_ids", "encode_batch_ids_flat"])
def test_batch_calls_name_the_item_that_is_not_a_str(method: str) -> None:
    """The core checks the items' types (no Python loop over a batch); its refusal is reported with the
    index of the first item that is not a str, and any iterable of str is taken."""
    tok = Tokenizer(BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]))
    call = getattr(tok, method)
    for bad, index in ((["ab", 3], 1), ([b"ab"], 0), (["a", "b", None], 2)):
        with pytest.raises(TypeError, match=rf"texts\[{index}\] must be a str"):
            call(bad)
    with pytest.raises(TypeError, match="not a single str"):
        call("ab")
    if method == "encode_batch":  # with pairs, the texts are checked the same way
        with pytest.raises(TypeError, match=r"texts\[1\] must be a str"):
            call(["ab", 3], pairs=["a", None])

    def ids(result):
        return _split(*result) if method == "encode_batch_ids_flat" else [
            r.ids if method == "encode_batch" else r for r in result]

    want = ids(call(["ab", "ba"]))
    assert ids(call(("ab", "ba"))) == ids(call(t for t in ["ab", "ba"])) == want == [[2], [1, 0]]


def test_shapes_dtypes_and_empty_batch() -> None:
    tok = Tokenizer(BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]))
    ids, offsets = tok.encode_batch_ids_flat(["abab", "", "ba", "b"])
    assert ids.dtype == np.uint32 and offsets.dtype == np.int64
    assert offsets.tolist() == [0, 2, 2, 4, 5]
    assert _split(ids, offsets) == tok.encode_batch_ids(["abab", "", "ba", "b"])
    ids[0] = 7  # writable: the arrays own their buffers
    empty_ids, empty_offsets = tok.encode_batch_ids_flat([])
    assert empty_ids.size == 0 and empty_offsets.tolist() == [0]


def test_bad_input_is_refused() -> None:
    tok = Tokenizer(BPE({"a": 0}, []))
    with pytest.raises(TypeError, match="list of str"):
        tok.encode_batch_ids_flat("a")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        tok.encode_batch_ids_flat(["a", 3])  # type: ignore[list-item]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_tiktoken_vocabularies_equal_tiktoken(name: str) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    try:
        path = tkfmt.resolve(name)
    except FormatError:
        pytest.skip(f"no local {name} rank file (pip install bpe-openai)")
    from tests.test_tiktoken import _oracle

    ref = _oracle(name, path)
    assert isinstance(ref, tiktoken.Encoding)
    tok = Tokenizer.from_tiktoken(path)
    lines = _lines()
    ids, offsets = tok.encode_batch_ids_flat(lines)
    got = _split(ids, offsets)
    assert got == tok.encode_batch_ids(lines)
    assert got == ref.encode_ordinary_batch(lines)
    assert len(offsets) == len(lines) + 1 and offsets[-1] == len(ids)


def test_hf_tokenizer_json_with_specials_and_padding_equals_hf() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    from tests._hf_fixtures import eval_lines, whitespace_hf

    hf = whitespace_hf()
    ours = Tokenizer.from_str(hf.to_str())
    lines = eval_lines()
    ids, offsets = ours.encode_batch_ids_flat(lines)
    assert _split(ids, offsets) == [e.ids for e in hf.encode_batch(lines)]
    # Padding applies to the batch, as in encode_batch: every text then has the same length.
    hf.enable_padding(pad_id=0, pad_token=hf.id_to_token(0))
    padded = Tokenizer.from_str(hf.to_str())
    ids, offsets = padded.encode_batch_ids_flat(lines[:50])
    assert _split(ids, offsets) == [e.ids for e in hf.encode_batch(lines[:50])]
    assert len(set(np.diff(offsets).tolist())) == 1
    assert isinstance(hf, tokenizers.Tokenizer)


def test_sentencepiece_model_equals_sentencepiece(tmp_path) -> None:
    spm = pytest.importorskip("sentencepiece")
    lines = corpus_lines("tinyshakespeare.txt", 4000)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "m"), vocab_size=500,
                                   model_type="unigram", minloglevel=2, num_threads=1)
    ref = spm.SentencePieceProcessor(model_file=str(tmp_path / "m.model"))
    tok = Tokenizer.from_file(tmp_path / "m.model")
    # Fresh str objects of every kind: the pool's workers make their UTF-8 (``py/text.rs``).
    probe = _lines()[:1500] + [(t + " ")[:-1] for t in _str_kinds()]
    ids, offsets = tok.encode_batch_ids_flat(probe)
    assert _split(ids, offsets) == ref.encode(probe) == tok.encode_batch_ids(probe)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_one_long_text_cut_over_threads_equals_tiktoken(name: str) -> None:
    """A text of over 600 KB is cut after newlines and encoded on several threads (``newline_cuts`` in
    ``rust/src/tokenizer.rs``); its ids must be tiktoken's for the whole text, whatever sits around the
    newlines (punctuation tails, o200k's ``/`` tail, spaces, CRLF, CJK, contractions)."""
    pytest.importorskip("tiktoken")
    try:
        path = tkfmt.resolve(name)
    except FormatError:
        pytest.skip(f"no local {name} rank file (pip install bpe-openai)")
    from tests.test_tiktoken import _oracle

    ref = _oracle(name, path)
    tok = Tokenizer.from_tiktoken(path)
    edges = ["end.\n/path", "a\nb", "x  \nY", "x\r\nY", "中\n文", "。\n中", "word\n's", "q!\n\n!q", "1\n2", "é\nx",
             "x\n é", "HTTP\nServer", "a \n/b", "z\n\u3000z"]
    body = corpus_lines("gutenberg_en_20M.txt", 4000) + TRICKY
    unit = "".join(line + edges[i % len(edges)] for i, line in enumerate(body))
    text = unit * (1 + 600_000 // len(unit.encode()))
    assert len(text.encode()) > 600_000  # cut from 128 KB on (twice `PAR_PART_BYTES`), into several parts
    ids, offsets = tok.encode_batch_ids_flat([text])
    assert ids.tolist() == ref.encode_ordinary(text)
    assert offsets.tolist() == [0, len(ids)]


def _str_kinds() -> list[str]:
    """One text of each internal kind of CPython's str: ASCII, Latin-1 (1 byte per char), UCS-2 and UCS-4,
    and mixed lines of real text; the ids path encodes non-ASCII ones to UTF-8 itself (``py/text.rs``)."""
    return [
        "plain ASCII text, nothing else",
        "Grüße aus Köln, ½ Stück Käse für 3,50 €"[:30],  # Latin-1 only (the euro sign is cut off)
        "Grüße aus Köln — 世界, ½ Stück",  # UCS-2
        "crab 🦀, clef 𝄞 and 中文 mixed",  # UCS-4
        "\u00e9" * 5000 + " end",  # a long Latin-1 run
        *TRICKY,
        *corpus_lines("gutenberg_en_20M.txt", 200),
    ]


def test_every_str_kind_gives_hf_ids_on_every_ids_path() -> None:
    pytest.importorskip("tokenizers")
    from tests._hf_fixtures import byte_level_hf

    hf = byte_level_hf()
    ours = Tokenizer.from_str(hf.to_str())
    texts = _str_kinds()
    assert {max(map(ord, t), default=0) > 0xFFFF for t in texts} == {True, False}  # UCS-4 among them
    want = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    fresh = [(t + " ")[:-1] for t in texts]  # new str objects: no UTF-8 cached on them yet
    assert _split(*ours.encode_batch_ids_flat(fresh, add_special_tokens=False)) == want
    assert ours.encode_batch_ids([(t + " ")[:-1] for t in texts], add_special_tokens=False) == want
    # And a str whose UTF-8 an earlier call already made (read in place).
    for t in fresh:
        ours.encode(t, add_special_tokens=False)
    assert _split(*ours.encode_batch_ids_flat(fresh, add_special_tokens=False)) == want

    class Text(str):  # a str subclass keeps its chars outside the object (not "compact"): the interpreter's path
        pass

    assert _split(*ours.encode_batch_ids_flat([Text(t) for t in texts], add_special_tokens=False)) == want


def test_a_lone_surrogate_is_refused_as_python_refuses_it() -> None:
    tok = Tokenizer(BPE({"a": 0}, []))
    with pytest.raises(UnicodeEncodeError):
        tok.encode_batch_ids_flat(["a\ud800b"])
    with pytest.raises(UnicodeEncodeError):
        "a\ud800b".encode()
    # Deep in a large batch (found by a pool worker as it makes the text's UTF-8), in each kind of str,
    # on both batch outputs and with batch padding.
    padded = Tokenizer(BPE({"a": 0, "[PAD]": 1}, []))
    padded.enable_padding(pad_id=1, pad_token="[PAD]")
    for bad in ["a\ud800b", "\u00e9\udfff", "\U0001f980\ud800"]:
        batch = ["\u00e9a b", "a \u4e16"] * 2000
        batch[3001] = bad
        for call in (tok.encode_batch_ids_flat, tok.encode_batch_ids, padded.encode_batch_ids_flat,
                     padded.encode_batch_ids):
            with pytest.raises(UnicodeEncodeError):
                call(batch)


def test_flat_arrays_outlive_the_tokenizer_and_stay_writable() -> None:
    tok = Tokenizer(BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]))
    ids, offsets = tok.encode_batch_ids_flat(["abab" * 1000, "ba"])
    del tok
    import gc

    gc.collect()
    assert ids.flags.writeable and offsets.flags.writeable
    assert ids[:3].tolist() == [2, 2, 2] and offsets.tolist() == [0, 2000, 2002]
    ids[0] = 9
    assert int(ids[0]) == 9


@pytest.mark.parametrize("method", ["encode_batch_ids", "encode_batch_ids_flat"])
def test_strs_the_workers_cannot_read_send_the_batch_the_long_way(method: str) -> None:
    """The pool's workers read exact, compact strs themselves (``py/held_batch.rs``); a str subclass, a
    non-str or a surrogate anywhere in a large batch makes them give up, and the batch is encoded again
    with the interpreter's help: the same ids as encoding each text alone, or the interpreter's error."""
    pytest.importorskip("tokenizers")
    from tests._hf_fixtures import byte_level_hf

    hf = byte_level_hf()
    ours = Tokenizer.from_str(hf.to_str())
    call = getattr(ours, method)

    def ids(result):
        return _split(*result) if method == "encode_batch_ids_flat" else result

    class Text(str):
        pass

    texts = _lines()[:2000] + [(t + " ")[:-1] for t in _str_kinds()]
    want = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    mixed = list(texts)
    mixed[1500] = Text(mixed[1500])
    mixed[-3] = Text(mixed[-3])
    assert ids(call(mixed, add_special_tokens=False)) == want
    assert ids(call(tuple(texts), add_special_tokens=False)) == want
    bad = list(texts)
    bad[1700] = 7
    with pytest.raises(TypeError, match=r"texts\[1700\] must be a str"):
        call(bad)
