"""Training works in a process forked after the Rust core's thread pool has run (no hang).

rayon's global pool exists only in the parent; a DataLoader worker or a multiprocessing child that
handed work to it would wait forever. The bindings give such a child a pool of its own per call.
"""

from __future__ import annotations

import multiprocessing as mp

import pytest

from subword import _core

BYTE_LEVEL = '{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}'
LINES = [
    f"line {i}: the quick brown fox jumps over the lazy dog, {i * 7919 % 1000} times\n" for i in range(5000)
]

# Built in the parent before the fork, used in the child: the case that used to hang.
_COUNTER = _core.WordCounter(BYTE_LEVEL)


def _count_and_train_in_child() -> tuple[list[tuple[str, int]], list[tuple[str, str]]]:
    _COUNTER.feed(LINES)
    words = _COUNTER.words()
    _vocab, merges = _core.train_bpe(_COUNTER, vocab_size=400)
    return words, merges


@pytest.fixture()
def fork_context() -> mp.context.BaseContext:
    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork on this platform")
    return mp.get_context("fork")


def test_word_counting_and_training_in_a_forked_child(fork_context: mp.context.BaseContext) -> None:
    parent = _core.WordCounter(BYTE_LEVEL)
    parent.feed(LINES)  # the global pool is running in the parent now
    _vocab, want_merges = _core.train_bpe(parent, vocab_size=400)
    with fork_context.Pool(1) as pool:
        words, merges = pool.apply_async(_count_and_train_in_child).get(timeout=60)
    assert words == parent.words()
    assert merges == want_merges


def _unigram_in_child(lines: list[str]) -> tuple[list[str], list[list[int]]]:
    from subword.unigram import UnigramEncoder, UnigramTrainer, train_unigram

    model = train_unigram(lines, UnigramTrainer(vocab_size=200, hard_vocab_limit=False))
    return [p for p, _, _ in model.pieces], UnigramEncoder(model).encode_batch(lines[:300])


def test_unigram_training_and_encoding_in_a_forked_child(fork_context: mp.context.BaseContext) -> None:
    lines = [line.rstrip("\n") for line in LINES]
    want = _unigram_in_child(lines)  # runs the EM and the batch encoder on the parent's pool
    with fork_context.Pool(1) as pool:
        got = pool.apply_async(_unigram_in_child, (lines,)).get(timeout=60)
    assert got == want
