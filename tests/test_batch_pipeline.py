"""The batch paths that return Python objects (``encode_batch_ids``: lists of ints, ``encode_batch``:
Encodings) encode in chunks on the pool while the calling thread builds the objects of the chunks
already done (``pipelined`` in ``rust/src/py.rs``). Whatever thread encodes a chunk and whatever order
the chunks finish in, the results must be those of HF ``tokenizers`` and sentencepiece on the same
files, in text order, at 1 thread, at more threads than cores, and in a forked child (no pool).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import subprocess
import sys
from pathlib import Path

import pytest

from subword import Tokenizer

ROOT = Path(__file__).resolve().parents[1]

# Enough texts for many chunks (at least 64 texts per chunk), with empty lines in between.
N_TEXTS = 5000


def _lines() -> list[str]:
    import corpora

    with open(corpora.builtin_corpus(), encoding="utf-8") as f:
        lines = f.read(600_000).splitlines()
    step = max(1, len(lines) // N_TEXTS)
    picked = lines[::step][:N_TEXTS]
    return [x if k % 97 else "" for k, x in enumerate(picked)]


@pytest.fixture(scope="module")
def lines() -> list[str]:
    return _lines()


@pytest.fixture(scope="module")
def bpe_json(lines: list[str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A byte-level BPE tokenizer.json trained by HF on the probe text."""
    hf = pytest.importorskip("tokenizers")
    tok = hf.Tokenizer(hf.models.BPE())
    tok.pre_tokenizer = hf.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = hf.decoders.ByteLevel()
    trainer = hf.trainers.BpeTrainer(vocab_size=600, initial_alphabet=hf.pre_tokenizers.ByteLevel.alphabet(),
                                     show_progress=False)
    tok.train_from_iterator(lines, trainer)
    path = tmp_path_factory.mktemp("bpe") / "tokenizer.json"
    tok.save(str(path))
    return path


def test_tokenizer_json_lists_and_encodings_equal_hf(lines: list[str], bpe_json: Path) -> None:
    import tokenizers as hf

    ref = hf.Tokenizer.from_file(str(bpe_json)).encode_batch(lines, add_special_tokens=False)
    ours = Tokenizer.from_file(bpe_json)
    assert ours.encode_batch_ids(lines, add_special_tokens=False) == [e.ids for e in ref]
    encs = ours.encode_batch(lines, add_special_tokens=False)
    assert [e.ids for e in encs] == [e.ids for e in ref]
    assert [e.offsets for e in encs] == [e.offsets for e in ref]


def test_pairs_equal_hf(lines: list[str], bpe_json: Path) -> None:
    import tokenizers as hf

    firsts, seconds = lines[: len(lines) // 2], lines[len(lines) // 2:][: len(lines) // 2]
    pairs: list[str | None] = [s if k % 3 else None for k, s in enumerate(seconds)]
    ref = hf.Tokenizer.from_file(str(bpe_json)).encode_batch(
        [(a, b) if b is not None else a for a, b in zip(firsts, pairs)])
    encs = Tokenizer.from_file(bpe_json).encode_batch(firsts, pairs=pairs)
    assert [e.ids for e in encs] == [e.ids for e in ref]
    assert [e.offsets for e in encs] == [e.offsets for e in ref]


def test_sentencepiece_model_lists_and_encodings_equal_sentencepiece(lines: list[str], tmp_path: Path) -> None:
    spm = pytest.importorskip("sentencepiece")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines[:3000]) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "m"), vocab_size=400,
                                   model_type="bpe", minloglevel=2, num_threads=1)
    ref = spm.SentencePieceProcessor(model_file=str(tmp_path / "m.model")).encode(lines)
    tok = Tokenizer.from_file(tmp_path / "m.model")
    assert tok.encode_batch_ids(lines) == ref
    assert [e.ids for e in tok.encode_batch(lines)] == ref


_CHILD = """
import json, sys
from subword import Tokenizer
lines = json.load(open(sys.argv[1]))
tok = Tokenizer.from_file(sys.argv[2])
json.dump([tok.encode_batch_ids(lines, add_special_tokens=False),
           [e.ids for e in tok.encode_batch(lines, add_special_tokens=False)]], sys.stdout)
"""


@pytest.mark.parametrize("threads", [1, 3])
def test_same_results_at_1_thread_and_at_more_threads_than_cores(
        lines: list[str], bpe_json: Path, tmp_path: Path, threads: int) -> None:
    # 1: the calling thread encodes and builds alone; 3 on a small machine: helpers outnumber cores,
    # so chunks finish out of order and wait for the builder.
    texts = tmp_path / "lines.json"
    texts.write_text(json.dumps(lines), encoding="utf-8")
    env = dict(os.environ, RAYON_NUM_THREADS=str(threads), PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", _CHILD, str(texts), str(bpe_json)], env=env, capture_output=True,
                         text=True, check=True)
    ids, enc_ids = json.loads(res.stdout)
    want = Tokenizer.from_file(bpe_json).encode_batch_ids(lines, add_special_tokens=False)
    assert ids == want
    assert enc_ids == want


def _in_child(path: str, lines: list[str]) -> list[list[int]]:
    return Tokenizer.from_file(path).encode_batch_ids(lines, add_special_tokens=False)


def test_forked_child_without_the_pool_gets_the_same_lists(lines: list[str], bpe_json: Path) -> None:
    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork on this platform")
    want = Tokenizer.from_file(bpe_json).encode_batch_ids(lines, add_special_tokens=False)  # the pool runs here
    with mp.get_context("fork").Pool(1) as pool:
        got = pool.apply(_in_child, (str(bpe_json), lines))
    assert got == want
