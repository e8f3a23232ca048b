"""BigBird block-sparse attention: dense equivalence, linear memory, per-call
fallback, seeded and injectable plans, and parity with transformers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from models import BigBirdConfig, BigBirdModel, BlockSparseAttention, build_model, from_hf  # noqa: E402
from models.attention import scaled_dot_product_attention  # noqa: E402

torch.set_num_threads(1)

V = 99


def _dense_reference(attn: BlockSparseAttention, q: Any, k: Any, v: Any, key_mask: Any) -> Any:
    """Dense attention under the block mask the sparse attention claims to equal."""
    B, nh, T, hs = q.shape
    b = attn.block_size
    nb = -(-T // b)
    adj = attn.block_adjacency(nb)
    token_mask = adj.repeat_interleave(b, 1).repeat_interleave(b, 2)[:, :T, :T]  # (nh, T, T)
    mask = token_mask[None] & key_mask[:, None, None, :]
    return scaled_dot_product_attention(q, k, v, mask, impl="plain") * key_mask[:, None, :, None]


@pytest.mark.parametrize("T", [64, 61, 100])
def test_block_sparse_equals_dense_under_the_equivalent_mask(T: int) -> None:
    torch.manual_seed(0)
    attn = BlockSparseAttention(num_heads=3, block_size=4, num_random_blocks=2, seed=5)
    q, k, v = (torch.randn(2, 3, T, 8) for _ in range(3))
    key_mask = torch.ones(2, T, dtype=torch.bool)
    key_mask[1, T - 13:] = False
    out = attn(q, k, v, key_mask)
    assert (out - _dense_reference(attn, q, k, v, key_mask)).abs().max().item() <= 1e-6
    assert torch.equal(out[1, :, T - 13:], torch.zeros(3, 13, 8))


@pytest.mark.parametrize("chunk_bytes", [1, 27000])
def test_chunking_the_middle_blocks_changes_nothing(chunk_bytes: int) -> None:
    """Middle query blocks are processed in chunks of about CHUNK_BYTES; any chunking gives the same result."""
    torch.manual_seed(0)
    attn = BlockSparseAttention(num_heads=3, block_size=4, num_random_blocks=2, seed=5)
    q, k, v = (torch.randn(2, 3, 101, 8) for _ in range(3))
    key_mask = torch.ones(2, 101, dtype=torch.bool)
    key_mask[1, 77:] = False
    whole = attn(q, k, v, key_mask), attn(q, k, v)
    attn.CHUNK_BYTES = chunk_bytes  # 1: a block per chunk; 27000: 5 blocks, ragged last chunk
    chunked = attn(q, k, v, key_mask), attn(q, k, v)
    for a, b in zip(whole, chunked):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)
    assert (chunked[0] - _dense_reference(attn, q, k, v, key_mask)).abs().max().item() <= 1e-6
    # Without padding the inner chunks run with no mask at all (only the first and last middle rows
    # have a duplicate window slot to switch off): still dense attention under the equivalent mask.
    no_padding = torch.ones(2, 101, dtype=torch.bool)
    assert (chunked[1] - _dense_reference(attn, q, k, v, no_padding)).abs().max().item() <= 1e-6


def test_cached_key_table_gives_way_to_an_injected_plan() -> None:
    """The key-block table is cached per length; injecting a plan afterwards must still take effect."""
    torch.manual_seed(0)
    attn = BlockSparseAttention(num_heads=2, block_size=4, num_random_blocks=1, seed=3)
    q, k, v = (torch.randn(1, 2, 52, 8) for _ in range(3))
    seeded = attn(q, k, v)  # fills the cache for 13 blocks
    plan = BlockSparseAttention(num_heads=2, block_size=4, num_random_blocks=1, seed=4).plan(13)
    assert not torch.equal(plan, attn.plan(13))
    attn.rand_attn = plan  # another valid plan: random blocks outside the window, not global
    injected = attn(q, k, v)
    assert not torch.allclose(seeded, injected)
    assert (injected - _dense_reference(attn, q, k, v, torch.ones(1, 52, dtype=torch.bool))).abs().max() <= 1e-6
    attn.rand_attn = None
    torch.testing.assert_close(attn(q, k, v), seeded, atol=0, rtol=0)


def test_block_sparse_equals_dense_for_random_shapes() -> None:
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies

    @hypothesis.settings(max_examples=30, deadline=None)
    @hypothesis.given(b=st.integers(1, 4), R=st.integers(0, 2), extra=st.integers(0, 30), seed=st.integers(0, 999))
    def check(b: int, R: int, extra: int, seed: int) -> None:
        attn = BlockSparseAttention(num_heads=2, block_size=b, num_random_blocks=R, seed=seed)
        T = attn.min_sparse_length() + extra
        g = torch.Generator().manual_seed(seed)
        q, k, v = (torch.randn(1, 2, T, 4, generator=g) for _ in range(3))
        key_mask = torch.arange(T)[None] < int(torch.randint(1, T + 1, (1,), generator=g))
        out = attn(q, k, v, key_mask)
        assert (out - _dense_reference(attn, q, k, v, key_mask)).abs().max().item() <= 1e-5

    check()


def test_pattern_has_globals_window_and_random_blocks() -> None:
    attn = BlockSparseAttention(num_heads=2, block_size=2, num_random_blocks=3, seed=0)
    nb = 16
    adj = attn.block_adjacency(nb)
    assert adj[:, 0].all() and adj[:, -1].all() and adj[:, :, 0].all() and adj[:, :, -1].all()
    # Middle rows: 2 globals + 3 window + R random, all distinct under the uniform plan.
    for q in range(2, nb - 2):
        assert adj[:, q, q - 1: q + 2].all()
        assert adj[:, q].sum(-1).tolist() == [8, 8]
    # Row 1 and row nb-2 share a window block with a global column.
    assert adj[:, 1].sum(-1).tolist() == [7, 7] and adj[:, nb - 2].sum(-1).tolist() == [7, 7]


def test_plan_is_seeded_distinct_outside_the_window_and_the_same_in_train_and_eval() -> None:
    a = BlockSparseAttention(4, 8, 3, seed=1)
    b = BlockSparseAttention(4, 8, 3, seed=1)
    c = BlockSparseAttention(4, 8, 3, seed=2)
    nb = 20
    assert torch.equal(a.plan(nb), b.plan(nb)) and not torch.equal(a.plan(nb), c.plan(nb))
    a.train()
    before = a.plan(nb).clone()
    a.eval()
    assert torch.equal(a.plan(nb), before)
    plan = a.plan(nb)
    qs = torch.arange(1, nb - 1)[None, :, None]
    assert ((plan - qs).abs() > 1).all() and (plan > 0).all() and (plan < nb - 1).all()
    assert (plan.sort(-1).values.diff(dim=-1) > 0).all()  # distinct
    # Random blocks are drawn from the whole sequence, not only the first 2R+5 blocks.
    assert int(BlockSparseAttention(4, 8, 3, seed=0).plan(200).max()) > 2 * 3 + 5


def test_injected_plan_is_used_and_checked() -> None:
    attn = BlockSparseAttention(num_heads=2, block_size=4, num_random_blocks=1)
    nb = 12
    plan = torch.full((2, nb - 2, 1), 6)
    attn.rand_attn = plan
    assert torch.equal(attn.plan(nb), plan)
    assert attn.block_adjacency(nb)[:, :, 6].all()
    with pytest.raises(ValueError, match=r"rand_attn has shape \(2, 10, 1\) but 13 blocks need"):
        attn.plan(13)
    attn.rand_attn = torch.full((2, nb - 2, 1), nb)
    with pytest.raises(ValueError, match="outside"):
        attn.plan(nb)


def test_fallback_is_decided_per_call_and_is_not_sticky() -> None:
    torch.manual_seed(0)
    config = BigBirdConfig.preset("tiny", vocab_size=V, block_size=4, num_random_blocks=1)
    model = BigBirdModel(config).eval()
    long_ids = torch.randint(1, V, (1, 60))
    with torch.no_grad():
        first = model(long_ids).last_hidden_state
        model(long_ids[:, :20])  # short: dense for this call only
        again = model(long_ids).last_hidden_state
        dense = BigBirdModel(config.replace(attention_type="original_full"))
        dense.load_state_dict(model.state_dict())
        full = dense.eval()(long_ids).last_hidden_state
    assert torch.equal(first, again)
    assert (first - full).abs().max().item() > 1e-3  # the long call really is sparse
    attn = model.encoder.layers[0].attn.sparse
    assert not attn.is_sparse(28) and attn.is_sparse(29)


class _LargestTensor(TorchDispatchMode):
    """Records the largest tensor any operation produces."""

    def __init__(self) -> None:
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


def test_memory_is_linear_in_sequence_length() -> None:
    attn = BlockSparseAttention(num_heads=2, block_size=8, num_random_blocks=2)
    largest = {}
    for T in (1024, 2048, 4096):
        q = k = v = torch.randn(1, 2, T, 8)
        with _LargestTensor() as mode, torch.no_grad():
            attn(q, k, v, torch.ones(1, T, dtype=torch.bool))
        largest[T] = mode.largest
        assert mode.largest < 2 * T * T / 8  # far from the (nh, T, T) score tensor
    assert largest[4096] / largest[2048] < 2.2 and largest[2048] / largest[1024] < 2.2


def test_block_sparse_layers_refuse_per_query_masks() -> None:
    model = BigBirdModel(BigBirdConfig.preset("tiny", vocab_size=V, block_size=4, num_random_blocks=1))
    ids = torch.ones(1, 40, dtype=torch.long)
    with pytest.raises(ValueError, match="block-sparse attention takes a padding mask"):
        model(ids, attention_mask=torch.ones(1, 40, 40, dtype=torch.long))


# ==== Parity with transformers ====

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()


def _hf_bigbird(cls: Any, tmp_path: Path, **kw: Any) -> Any:
    cfg = transformers.BigBirdConfig(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=37, max_position_embeddings=128, block_size=4,
                                     num_random_blocks=2, **kw)
    torch.manual_seed(0)
    model = cls(cfg)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(tmp_path)
    return model


def _batch(T: int) -> dict[str, Any]:
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, V, (2, T), generator=g)
    mask = torch.ones(2, T, dtype=torch.long)
    mask[1, T - 9:] = 0
    ids[mask == 0] = 0
    types = torch.zeros_like(ids)
    types[:, 10:] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


@pytest.mark.parametrize("T", [42, 48, 20], ids=["sparse-padded", "sparse", "dense-fallback"])
def test_from_hf_bigbird_matches_transformers_in_eval(T: int, tmp_path: Path) -> None:
    _hf_bigbird(transformers.BigBirdForPreTraining, tmp_path)
    hf = transformers.BigBirdForPreTraining.from_pretrained(tmp_path).eval()  # fresh: HF's fallback is sticky
    ours = from_hf(tmp_path)
    assert ours.config.random_plan == "zeros"
    batch = _batch(T)
    with torch.no_grad():
        a, b = hf(**batch), ours(**batch)
    assert (a.prediction_logits - b.logits).abs().max().item() <= 1e-5
    assert (a.seq_relationship_logits - b.sentence_logits).abs().max().item() <= 1e-5


def test_injected_plan_reproduces_transformers_training_mode(tmp_path: Path) -> None:
    """transformers reseeds numpy per layer in training; capture its plan and inject it."""
    _hf_bigbird(transformers.BigBirdModel, tmp_path, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    hf = transformers.BigBirdModel.from_pretrained(tmp_path).train()
    captured: list[Any] = []
    for layer in hf.encoder.layer:
        self_attn = layer.attention.self
        original = self_attn._bigbird_block_rand_mask_with_head

        def capture(*args: Any, _orig: Any = original, **kwargs: Any) -> Any:
            plan = _orig(*args, **kwargs)
            captured.append(torch.tensor(__import__("numpy").stack(plan, axis=0)))
            return plan

        self_attn._bigbird_block_rand_mask_with_head = capture
    batch = _batch(48)
    with torch.no_grad():
        a = hf(**batch).last_hidden_state
    ours = from_hf(tmp_path)
    for layer, plan in zip(ours.encoder.layers, captured, strict=True):
        layer.attn.sparse.rand_attn = plan
    with torch.no_grad():
        b = ours(**batch).last_hidden_state
    assert len(captured) == 2 and int(captured[0].max()) > 0
    assert (a - b).abs().max().item() <= 1e-5


def test_to_hf_bigbird_loads_in_transformers(tmp_path: Path) -> None:
    config = BigBirdConfig.preset("tiny", vocab_size=V, hidden_size=32, num_heads=4, block_size=4,
                                  num_random_blocks=2, random_plan="zeros")
    torch.manual_seed(0)
    ours = build_model(config, heads=True).eval()
    with torch.no_grad():
        for p in ours.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    ours.to_hf(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["architectures"] == ["BigBirdForPreTraining"]
    hf = transformers.BigBirdForPreTraining.from_pretrained(tmp_path).eval()
    batch = _batch(42)
    with torch.no_grad():
        a, b = hf(**batch), ours(**batch)
    assert (a.prediction_logits - b.logits).abs().max().item() <= 1e-5
