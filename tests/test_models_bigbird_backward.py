"""BigBird's block-sparse attention function with its hand-written backward (models/block_sparse.py):
gradcheck, the same outputs and gradients as the fused-kernel path and as dense attention under the
equivalent mask, and which calls take it."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

import models.attention  # noqa: E402
from models import BlockSparseAttention  # noqa: E402
from models.attention import scaled_dot_product_attention  # noqa: E402

torch.set_num_threads(1)


def _inputs(B: int, nh: int, T: int, hs: int, dtype: Any = torch.float32, seed: int = 0) -> list[Any]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, nh, T, hs, generator=g, dtype=dtype).requires_grad_(True) for _ in range(3)]


def _run(attn: BlockSparseAttention, qkv: list[Any], key_mask: Any, cotangent: Any) -> tuple[Any, list[Any]]:
    """Output and gradients of ``sum(attn(q, k, v) * cotangent)``."""
    for t in qkv:
        t.grad = None
    out = attn(*qkv, key_mask)
    (out * cotangent).sum().backward()
    return out.detach(), [t.grad.clone() for t in qkv]


def _padded(B: int, T: int, cut: int) -> Any:
    key_mask = torch.ones(B, T, dtype=torch.bool)
    key_mask[-1, T - cut:] = False
    return key_mask


@pytest.mark.parametrize(("plan", "padded"), [("zeros", False), ("uniform", True)])
def test_gradcheck_in_float64(plan: str, padded: bool) -> None:
    """Finite differences agree with the hand-written backward, entry by entry (T = 21: padded to 22
    inside). The all-zero plan sends every random block to block 0: repeated indices in the scatter."""
    attn = BlockSparseAttention(num_heads=2, block_size=2, num_random_blocks=2, random_plan=plan, seed=3)
    T, B = 21, 2 if padded else 1  # 11 blocks once padded to 22: 9 middle query blocks
    # Chunks of 2 middle query blocks (the last one ragged): a block's gathered keys take B*nh*S*b*hs*8 bytes.
    attn.OWN_CHUNK_BYTES_CPU = 2 * B * 2 * 9 * 2 * 2 * 8
    key_mask = _padded(B, T, 5) if padded else None
    qkv = _inputs(B, 2, T, 2, torch.float64)
    assert torch.autograd.gradcheck(lambda q, k, v: attn(q, k, v, key_mask), qkv, atol=1e-7, rtol=1e-5)


@pytest.mark.parametrize("chunk_bytes", [1, 27000, 1 << 30])
@pytest.mark.parametrize("plan", ["uniform", "zeros"])
def test_same_output_and_gradients_as_the_fused_kernel_path(chunk_bytes: int, plan: str) -> None:
    attn = BlockSparseAttention(num_heads=3, block_size=4, num_random_blocks=2, random_plan=plan, seed=5)
    qkv = _inputs(2, 3, 101, 8)
    cotangent = torch.randn(2, 3, 101, 8, generator=torch.Generator().manual_seed(9))
    for key_mask in (None, _padded(2, 101, 24)):
        attn.OWN_BACKWARD, attn.CHUNK_BYTES = False, BlockSparseAttention.CHUNK_BYTES
        ref_out, ref_grads = _run(attn, qkv, key_mask, cotangent)
        attn.OWN_BACKWARD, attn.CHUNK_BYTES = True, chunk_bytes
        out, grads = _run(attn, qkv, key_mask, cotangent)
        torch.testing.assert_close(out, ref_out, atol=2e-6, rtol=0)
        for got, want in zip(grads, ref_grads):
            torch.testing.assert_close(got, want, atol=1e-5, rtol=0)


def test_gradients_equal_dense_attention_under_the_equivalent_mask() -> None:
    attn = BlockSparseAttention(num_heads=2, block_size=4, num_random_blocks=2, seed=1)
    T = 90
    key_mask = _padded(2, T, 11)
    qkv = _inputs(2, 2, T, 8, seed=2)
    cotangent = torch.randn(2, 2, T, 8, generator=torch.Generator().manual_seed(4))
    out, grads = _run(attn, qkv, key_mask, cotangent)

    nb = -(-T // 4)
    token_mask = attn.block_adjacency(nb).repeat_interleave(4, 1).repeat_interleave(4, 2)[:, :T, :T]  # (nh, T, T)
    dense = [t.detach().clone().requires_grad_(True) for t in qkv]
    ref = scaled_dot_product_attention(*dense, token_mask[None] & key_mask[:, None, None, :], impl="plain")
    ref = ref * key_mask[:, None, :, None]
    (ref * cotangent).sum().backward()
    torch.testing.assert_close(out, ref.detach(), atol=2e-6, rtol=0)
    for got, want in zip(grads, dense):
        torch.testing.assert_close(got, want.grad, atol=1e-5, rtol=0)


def test_a_batch_row_with_no_real_token_gives_zeros_not_nan() -> None:
    attn = BlockSparseAttention(num_heads=2, block_size=4, num_random_blocks=1)
    qkv = _inputs(2, 2, 48, 4)
    key_mask = torch.ones(2, 48, dtype=torch.bool)
    key_mask[1] = False
    out, grads = _run(attn, qkv, key_mask, torch.ones(2, 2, 48, 4))
    assert torch.equal(out[1], torch.zeros(2, 48, 4))
    for grad in grads:
        assert torch.isfinite(grad).all() and torch.equal(grad[1], torch.zeros(2, 48, 4))
    assert grads[0][0].abs().sum() > 0


def test_only_gradient_calls_without_dropout_take_the_function(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = models.attention.block_sparse_attention

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(models.attention, "block_sparse_attention", counted)
    attn = BlockSparseAttention(num_heads=2, block_size=4, num_random_blocks=1, dropout=0.1)
    q, k, v = _inputs(1, 2, 48, 4)

    def taken(**kw: Any) -> bool:
        calls.clear()
        attn(q, k, v, **kw)
        return bool(calls)

    attn.eval()
    assert taken()
    with torch.no_grad():
        assert not taken()  # inference keeps the fused kernel: no weights kept, flat memory
    attn.train()
    assert not taken()  # dropout is drawn inside the fused kernel
    attn.dropout = 0.0
    assert taken()
    attn.OWN_BACKWARD = False
    assert not taken()


def test_a_compiled_training_step_gives_the_same_gradients() -> None:
    """torch.compile traces the function and its backward (aot_eager: autograd's graph, no codegen)."""
    from models import BigBirdConfig, BigBirdForPreTraining

    torch.manual_seed(0)
    cfg = BigBirdConfig.preset("tiny", vocab_size=100, num_layers=1, hidden_dropout=0.0, attention_dropout=0.0)
    model = BigBirdForPreTraining(cfg).train()
    ids = torch.randint(5, 100, (2, 100))
    attn = torch.ones(2, 100, dtype=torch.long)
    attn[1, 70:] = 0
    assert model.backbone.encoder.layers[0].attn.sparse.is_sparse(100)

    def grads(m: Any) -> dict[str, Any]:
        model.zero_grad()
        m(ids, attn, labels=ids).loss.backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    eager = grads(model)
    compiled = grads(torch.compile(model, fullgraph=True, backend="aot_eager"))
    assert eager.keys() <= compiled.keys()
    for name in compiled.keys() - eager.keys():  # unused heads: compiled graphs give zeros, eager None
        assert not compiled[name].any(), name
    for name in eager:
        torch.testing.assert_close(compiled[name], eager[name], atol=1e-6, rtol=1e-5)
