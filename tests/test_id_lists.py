"""The id lists of the batch ids paths (``encode_batch_ids``) are made of shared int objects (see
``id_list`` in ``rust/src/py.rs``): they must still be plain, independent lists of the right ints,
also for ids at the edges of the shared blocks and past them."""

from __future__ import annotations

from subword import BPE, Tokenizer

# ids at the block edges (4096), in the last block, and past the shared range (262,144)
EDGE_IDS = {"a": 0, "b": 4095, "c": 4096, "d": 262_143, "e": 262_144, "f": 1_000_000}


def test_ids_at_and_past_the_shared_blocks_come_back_as_they_are():
    tok = Tokenizer(BPE(EDGE_IDS, []))
    lists = tok.encode_batch_ids(["abcdef", "fedcba", "a"], add_special_tokens=False)
    assert lists == [[0, 4095, 4096, 262_143, 262_144, 1_000_000], [1_000_000, 262_144, 262_143, 4096, 4095, 0], [0]]
    assert all(type(i) is int for ids in lists for i in ids)


def test_lists_are_independent_and_ints_behave_as_ints():
    tok = Tokenizer(BPE(EDGE_IDS, []))
    first, second = tok.encode_batch_ids(["bc", "bc"], add_special_tokens=False)
    first.append(7)
    first[0] += 1
    assert second == [4095, 4096]
    assert first == [4096, 4096, 7]
    # a later batch sees the same values
    assert tok.encode_batch_ids(["cb"], add_special_tokens=False) == [[4096, 4095]]
