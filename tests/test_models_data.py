"""models.data: documents, cached token shards, packing, segment pairs and the epoch order."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from models import data
from models.data import EpochOrder, PackedSequences, SegmentPairs, TokenShards, read_documents
from subword import Tokenizer
from tests._pretrain_helpers import small_corpus, small_tokenizer


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> dict:
    d = tmp_path_factory.mktemp("data")
    corpus = small_corpus(d, lines=600)
    tok = Tokenizer.from_file(small_tokenizer(d, corpus))
    return {"dir": d, "corpus": corpus, "tok": tok}


def _expected_docs(path: Path) -> list[list[str]]:
    docs, cur = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            cur.append(line)
        elif cur:
            docs.append(cur)
            cur = []
    return docs + ([cur] if cur else [])


def test_read_documents_modes(tmp_path: Path) -> None:
    p = tmp_path / "c.txt"
    p.write_text("a b\nc\n\n\nd\n  \ne\n", encoding="utf-8")
    assert list(read_documents([p])) == [["a b", "c"], ["d"], ["e"]]
    assert list(read_documents([p], split="line")) == [["a b"], ["c"], ["d"], ["e"]]
    j = tmp_path / "c.jsonl"
    j.write_text(json.dumps({"text": "x y\nz"}) + "\n" + json.dumps({"text": ""}) + "\n", encoding="utf-8")
    assert list(read_documents([j], jsonl_field="text")) == [["x y", "z"]]
    with pytest.raises(ValueError, match="stdin"):
        list(read_documents(["-"]))


def test_shards_hold_every_document_in_order(fx: dict) -> None:
    shards = TokenShards.build([fx["corpus"]], fx["tok"], cache_dir=fx["dir"] / "c1")
    docs = _expected_docs(fx["corpus"])
    assert shards.num_documents == len(docs)
    assert shards.tokens.dtype == np.uint16  # 400 ids do not fit in a byte
    for d in (0, 7, len(docs) - 1):
        got = [seg.tolist() for seg in shards.document(d)]
        assert got == fx["tok"].encode_batch_ids(docs[d], add_special_tokens=False)


def test_shards_are_cached_by_corpus_and_tokenizer(fx: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = TokenShards.build([fx["corpus"]], fx["tok"], cache_dir=tmp_path)

    def fail(*a: object, **k: object) -> None:
        raise AssertionError("tokenized again")

    monkeypatch.setattr(data, "_write_shards", fail)
    again = TokenShards.build([fx["corpus"]], fx["tok"], cache_dir=tmp_path)
    assert again.directory == first.directory
    other = tmp_path / "other.txt"
    other.write_text(fx["corpus"].read_text() + "one more line\n")
    with pytest.raises(AssertionError, match="tokenized again"):
        TokenShards.build([other], fx["tok"], cache_dir=tmp_path)
    with pytest.raises(AssertionError, match="tokenized again"):
        TokenShards.build([fx["corpus"]], fx["tok"], cache_dir=tmp_path, split="line")


def test_shards_stream_in_batches(fx: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = TokenShards.build([fx["corpus"]], fx["tok"], cache_dir=tmp_path / "a")
    monkeypatch.setattr(data, "_ENCODE_BATCH", 7)  # many small batches: same shards
    parts = TokenShards.build([fx["corpus"]], fx["tok"], cache_dir=tmp_path / "b")
    assert np.array_equal(whole.tokens, parts.tokens)
    assert np.array_equal(whole.segment_offsets, parts.segment_offsets)
    assert np.array_equal(whole.document_segments, parts.document_segments)


def test_empty_corpus_is_refused_and_leaves_nothing(fx: dict, tmp_path: Path) -> None:
    p = tmp_path / "empty.txt"
    p.write_text("\n\n  \n")
    with pytest.raises(ValueError, match="no tokens"):
        TokenShards.build([p], fx["tok"], cache_dir=tmp_path / "cache")
    assert not any((tmp_path / "cache").iterdir())


def test_full_packing_is_the_separator_joined_stream(fx: dict) -> None:
    shards = TokenShards.build([fx["corpus"]], fx["tok"], cache_dir=fx["dir"] / "c1")
    stream: list[int] = []
    for d in range(shards.num_documents):
        for seg in shards.document(d):
            stream.extend(seg.tolist())
        stream.append(3)
    T = 24
    packed = PackedSequences(shards, seq_len=T, cls_id=2, sep_id=3, pad_id=0)
    assert len(packed) == len(stream) // (T - 2)
    idx = [0, 5, len(packed) - 1]
    got = packed.get(idx)
    for row, i in enumerate(idx):
        assert got["input_ids"][row].tolist() == [2, *stream[i * (T - 2):(i + 1) * (T - 2)], 3]
    assert got["attention_mask"].all()
    assert got["special_mask"][:, 0].all() and got["special_mask"][:, -1].all()
    assert (got["special_mask"] == np.isin(got["input_ids"], [2, 3])).all()
    with pytest.raises(IndexError):
        packed.get([len(packed)])


def test_document_packing_truncates_and_pads(fx: dict) -> None:
    shards = TokenShards.build([fx["corpus"]], fx["tok"], cache_dir=fx["dir"] / "c1")
    packed = PackedSequences(shards, seq_len=16, cls_id=2, sep_id=3, pad_id=0, packing="document",
                             documents=range(3))
    got = packed.get([0, 1, 2])
    for d in range(3):
        doc = [t for seg in shards.document(d) for t in seg.tolist()][:14]
        row = got["input_ids"][d].tolist()
        assert row[:len(doc) + 2] == [2, *doc, 3]
        assert row[len(doc) + 2:] == [0] * (14 - len(doc))
        assert got["attention_mask"][d].sum() == len(doc) + 2


def test_whole_word_shards_give_word_ids(fx: dict) -> None:
    shards = TokenShards.build([fx["corpus"]], fx["tok"], cache_dir=fx["dir"] / "w", words=True)
    packed = PackedSequences(shards, seq_len=32, cls_id=2, sep_id=3, pad_id=0)
    got = packed.get([3])
    ids, wid = got["input_ids"][0], got["word_ids"][0]
    tokens = [fx["tok"].id_to_token(int(i)) for i in ids]
    assert wid[0] == -1 and wid[-1] == -1
    for k in range(2, len(ids) - 1):
        if wid[k] >= 0 and wid[k - 1] >= 0:
            # WordPiece: a continuation piece (##) belongs to the word before it.
            assert (wid[k] == wid[k - 1]) == tokens[k].startswith("##"), (tokens[k - 1], tokens[k])


def test_segment_pairs(fx: dict) -> None:
    shards = TokenShards.build([fx["corpus"]], fx["tok"], cache_dir=fx["dir"] / "c1")
    pairs = SegmentPairs(shards, task="nsp", seq_len=32, cls_id=2, sep_id=3, pad_id=0, seed=0)
    assert len(pairs) == int(shards.meta["num_segments"])
    got = pairs.get(np.arange(40), epoch=0)
    ids, types = got["input_ids"], got["token_type_ids"]
    assert (ids[:, 0] == 2).all() and ids.shape == (40, 32)
    assert set(got["sentence_label"].tolist()) == {0, 1}
    for row in range(40):
        n = int(got["attention_mask"][row].sum())
        seps = np.flatnonzero(ids[row, :n] == 3)
        assert seps[-1] == n - 1 and len(seps) == 2
        assert (types[row, :seps[0] + 1] == 0).all() and (types[row, seps[0] + 1:n] == 1).all()
    again = pairs.get(np.arange(40), epoch=0)
    assert np.array_equal(again["input_ids"], ids)


def test_epoch_order_is_a_permutation_with_a_resumable_position() -> None:
    order = EpochOrder(num_examples=10, seed=3)
    seen = order.take(7) + order.take(7)
    assert sorted(i for e, i in seen if e == 0) == list(range(10))
    assert [e for e, _ in seen].count(1) == 4
    state = order.state_dict()
    rest = order.take(9)
    resumed = EpochOrder(num_examples=10, seed=3)
    resumed.load_state_dict(state)
    assert resumed.take(9) == rest
    with pytest.raises(ValueError, match="seed"):
        EpochOrder(num_examples=10, seed=4).load_state_dict(state)


def test_docstring_examples() -> None:
    import doctest

    result = doctest.testmod(data, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 5


# ==== what the NSP and SOP labels of a batch mean ====

#: The labels as transformers defines them (``BertForPreTraining``'s ``next_sentence_label``,
#: ``AlbertForPreTraining``'s ``sentence_order_label``); checked against its docstrings below.
LABELS = {
    "nsp": {0: "sequence B is a continuation of sequence A", 1: "sequence B is a random sequence"},
    "sop": {0: "original order (sequence A, then sequence B)", 1: "switched order (sequence B, then sequence A)"},
}


def test_label_meanings_are_transformers_definitions() -> None:
    transformers = pytest.importorskip("transformers")
    import inspect

    docs = {"nsp": inspect.getdoc(transformers.BertForPreTraining.forward) or "",
            "sop": inspect.getdoc(transformers.AlbertForPreTraining.forward) or ""}
    for task, meanings in LABELS.items():
        text = " ".join(docs[task].replace("`", "").split())
        for label, meaning in meanings.items():
            assert f"{label} indicates {meaning}" in text, (task, label, meaning)


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A corpus whose every word is unique and names where it stands (document, line, word), with a
    tokenizer that keeps each word one token: every token of a batch traces back to its source."""
    from subword.trainers import WordPieceTrainer, train_wordpiece

    d = tmp_path_factory.mktemp("traced")
    rng = np.random.default_rng(0)
    docs = [[" ".join(f"d{k}l{i}w{j}" for j in range(int(rng.integers(1, 6)))) for i in range(int(rng.integers(1, 6)))]
            for k in range(40)]
    corpus = d / "traced.txt"
    corpus.write_text("\n\n".join("\n".join(lines) for lines in docs) + "\n", encoding="utf-8")
    words = [w for lines in docs for line in lines for w in line.split()]
    tok = train_wordpiece([w + "\n" for w in words] * 2, WordPieceTrainer(vocab_size=20000))
    assert all(tok.encode(w, add_special_tokens=False).tokens == [w] for w in words)
    where = {}  # token id -> (document, position of the word in the document)
    for k, lines in enumerate(docs):
        for pos, w in enumerate(w for line in lines for w in line.split()):
            where[tok.token_to_id(w)] = (k, pos)
    shards = TokenShards.build([corpus], tok, cache_dir=d / "cache")
    return {"shards": shards, "tok": tok, "where": where, "docs": len(docs)}


@pytest.mark.parametrize("task", ["nsp", "sop"])
def test_batch_labels_mean_what_transformers_says(traced: dict, task: str) -> None:
    """Every example of every epoch, traced to the documents its segments came from: NSP 0 = B continues A
    in A's document, 1 = B comes from another document; SOP 0 = A comes before B, 1 = B comes before A."""
    tok, where = traced["tok"], traced["where"]
    cls_id, sep_id, pad_id = (tok.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]"))
    pairs = SegmentPairs(traced["shards"], task=task, seq_len=24, cls_id=cls_id, sep_id=sep_id, pad_id=pad_id, seed=3)
    seen = {0: 0, 1: 0}
    for epoch in range(3):
        got = pairs.get(np.arange(len(pairs)), epoch=epoch)
        for row, label in zip(got["input_ids"], got["sentence_label"].tolist()):
            seps = np.flatnonzero(row == sep_id)
            a = [where[int(t)] for t in row[1:seps[0]]]
            b = [where[int(t)] for t in row[seps[0] + 1:seps[1]]]
            assert a and b
            a_doc, b_doc = {k for k, _ in a}, {k for k, _ in b}
            assert len(a_doc) == 1 and len(b_doc) == 1
            a_pos, b_pos = [p for _, p in a], [p for _, p in b]
            if task == "nsp" and label == 0:  # B is a continuation of A
                assert a_doc == b_doc and b_pos[0] > a_pos[-1]
            elif task == "nsp":  # B is a random sequence, from another document
                assert a_doc != b_doc
            elif label == 0:  # original order: A, then B
                assert a_doc == b_doc and b_pos[0] > a_pos[-1]
            else:  # switched: B, then A
                assert a_doc == b_doc and a_pos[0] > b_pos[-1]
            seen[label] += 1
    assert min(seen.values()) > 0.3 * sum(seen.values()), seen
