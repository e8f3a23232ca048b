"""Attention building blocks: closed forms, masking, and fast path == plain path."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from models.attention import (  # noqa: E402
    AdditiveAttention,
    MultiHeadAttention,
    NadarayaWatsonRegression,
    masked_softmax,
    nadaraya_watson,
    scaled_dot_product_attention,
)

torch.set_num_threads(1)


# ==== masked_softmax ====


def test_masked_softmax_valid_lens_1d_gives_uniform_over_visible_keys() -> None:
    scores = torch.zeros(2, 3, 5)
    w = masked_softmax(scores, torch.tensor([2, 4]))
    assert torch.equal(w[0, :, 2:], torch.zeros(3, 3))  # exactly zero, not tiny
    torch.testing.assert_close(w[0, :, :2], torch.full((3, 2), 0.5))
    torch.testing.assert_close(w[1, :, :4], torch.full((3, 4), 0.25))
    assert torch.equal(w[1, :, 4], torch.zeros(3))


def test_masked_softmax_valid_lens_2d_is_per_query() -> None:
    scores = torch.randn(1, 3, 4)
    w = masked_softmax(scores, torch.tensor([[1, 2, 4]]))
    assert torch.equal(w[0, 0], torch.tensor([1.0, 0, 0, 0]))
    assert torch.equal(w[0, 1, 2:], torch.zeros(2))
    torch.testing.assert_close(w[0, 2], torch.softmax(scores[0, 2], -1))


def test_masked_softmax_bool_mask_matches_softmax_of_visible_entries() -> None:
    scores = torch.randn(2, 2, 3, 6)
    mask = torch.rand(2, 1, 3, 6) > 0.4
    mask[..., 0] = True
    w = masked_softmax(scores, mask=mask)
    assert torch.all(w[~mask.expand_as(w)] == 0)
    expected = torch.exp(scores) * mask
    expected = expected / expected.sum(-1, keepdim=True)
    torch.testing.assert_close(w, expected)


def test_masked_softmax_fully_masked_row_is_zero_and_gradients_finite() -> None:
    scores = torch.randn(1, 2, 3, requires_grad=True)
    mask = torch.tensor([[[True, False, True], [False, False, False]]])
    w = masked_softmax(scores, mask=mask)
    assert torch.equal(w[0, 1], torch.zeros(3))
    w.sum().backward()
    assert torch.isfinite(scores.grad).all()


def test_masked_softmax_without_mask_is_softmax() -> None:
    s = torch.randn(3, 4)
    assert torch.equal(masked_softmax(s), torch.softmax(s, -1))


@pytest.mark.parametrize(
    "mask_shape",
    [(2, 5), (3, 1, 5), (1, 1, 4)],
    ids=["missing-query-axis", "wrong-batch", "wrong-keys"],
)
def test_masked_softmax_rejects_mask_of_wrong_shape(mask_shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="does not broadcast"):
        masked_softmax(torch.zeros(2, 3, 5), mask=torch.ones(mask_shape, dtype=torch.bool))


def test_masked_softmax_rejects_bad_valid_lens_and_float_masks() -> None:
    with pytest.raises(ValueError, match="valid_lens has 3 entries"):
        masked_softmax(torch.zeros(2, 3, 5), torch.tensor([1, 2, 3]))
    with pytest.raises(ValueError, match=r"\(B, T_q\)"):
        masked_softmax(torch.zeros(2, 3, 5), torch.ones(2, 2, dtype=torch.long))
    with pytest.raises(TypeError, match="boolean"):
        masked_softmax(torch.zeros(2, 3, 5), mask=torch.zeros(2, 3, 5))


# ==== Nadaraya-Watson ====


def test_nadaraya_watson_closed_forms() -> None:
    keys = torch.tensor([0.0, 1.0, 3.0])
    values = torch.tensor([1.0, 2.0, 10.0])
    # Equal keys distance -> uniform weights -> average pooling.
    pred, w = nadaraya_watson(torch.tensor([1.0]), torch.tensor([0.0, 2.0]), torch.tensor([4.0, 8.0]))
    assert torch.allclose(pred, torch.tensor([6.0])) and torch.allclose(w, torch.tensor([[0.5, 0.5]]))
    # Gaussian kernel weights, computed by hand.
    pred, w = nadaraya_watson(torch.tensor([0.0]), keys, values)
    k = torch.exp(-0.5 * keys**2)
    torch.testing.assert_close(w[0], k / k.sum())
    torch.testing.assert_close(pred[0], (k * values).sum() / k.sum())
    # Tiny bandwidth -> nearest neighbour; huge bandwidth -> mean.
    pred, _ = nadaraya_watson(torch.tensor([2.9]), keys, values, bandwidth=1e-2)
    torch.testing.assert_close(pred, torch.tensor([10.0]))
    pred, _ = nadaraya_watson(torch.tensor([2.9]), keys, values, bandwidth=1e4)
    torch.testing.assert_close(pred, values.mean().reshape(1))
    with pytest.raises(ValueError, match="bandwidth"):
        nadaraya_watson(torch.tensor([0.0]), keys, values, bandwidth=0)


def test_parametric_nadaraya_watson_matches_closed_form_and_trains() -> None:
    torch.manual_seed(0)
    m = NadarayaWatsonRegression(w=2.0)
    q = torch.tensor([0.5, 1.5])
    keys = torch.tensor([0.0, 1.0, 2.0])
    values = torch.tensor([0.0, 1.0, 4.0])
    expected, _ = nadaraya_watson(q, keys, values, bandwidth=0.5)
    torch.testing.assert_close(m(q, keys, values), expected)
    # The bandwidth is a real parameter: one SGD step changes the loss.
    x = torch.sort(torch.rand(30) * 5).values
    y = 2 * torch.sin(x) + x**0.8
    opt = torch.optim.SGD(m.parameters(), lr=0.5)
    mask = ~torch.eye(30, dtype=torch.bool)
    keys_loo = x.expand(30, 30)[mask].view(30, 29)
    vals_loo = y.expand(30, 30)[mask].view(30, 29)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = ((m(x, keys_loo, vals_loo) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


# ==== Additive attention ====


def test_additive_attention_equal_keys_give_uniform_weights_and_mean_value() -> None:
    torch.manual_seed(0)
    attn = AdditiveAttention(query_size=4, key_size=3, num_hiddens=8).eval()
    q = torch.randn(2, 2, 4)
    k = torch.ones(2, 6, 3)
    v = torch.randn(2, 6, 5)
    out, w = attn(q, k, v, torch.tensor([2, 6]), return_weights=True)
    torch.testing.assert_close(w[0, :, :2], torch.full((2, 2), 0.5))
    assert torch.equal(w[0, :, 2:], torch.zeros(2, 4))
    torch.testing.assert_close(out[0], v[0, :2].mean(0).expand(2, 5))
    torch.testing.assert_close(out[1], v[1].mean(0).expand(2, 5))


def test_additive_attention_score_formula() -> None:
    torch.manual_seed(1)
    attn = AdditiveAttention(2, 2, 3).eval()
    q, k, v = torch.randn(1, 1, 2), torch.randn(1, 4, 2), torch.randn(1, 4, 1)
    _, w = attn(q, k, v, return_weights=True)
    scores = torch.stack(
        [attn.w_v.weight[0] @ torch.tanh(attn.W_q.weight @ q[0, 0] + attn.W_k.weight @ k[0, j]) for j in range(4)]
    )
    torch.testing.assert_close(w[0, 0], torch.softmax(scores, -1))


# ==== Scaled dot-product attention ====


def test_sdpa_equal_keys_give_mean_of_values() -> None:
    q = torch.randn(2, 3, 5, 8)
    k = torch.randn(2, 3, 1, 8).expand(2, 3, 7, 8)
    v = torch.randn(2, 3, 7, 4)
    for impl in ("sdpa", "plain"):
        out = scaled_dot_product_attention(q, k, v, impl=impl)
        torch.testing.assert_close(out, v.mean(-2, keepdim=True).expand(2, 3, 5, 4))


def test_sdpa_formula_and_scale() -> None:
    q, k, v = torch.randn(1, 2, 3), torch.randn(1, 4, 3), torch.randn(1, 4, 2)
    out, w = scaled_dot_product_attention(q, k, v, return_weights=True)
    expected_w = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(3), -1)
    torch.testing.assert_close(w, expected_w)
    torch.testing.assert_close(out, expected_w @ v)
    out2 = scaled_dot_product_attention(q, k, v, scale=1.0, impl="plain")
    torch.testing.assert_close(out2, torch.softmax(q @ k.transpose(1, 2), -1) @ v)


@pytest.mark.parametrize("mask_kind", ["none", "padding", "causal", "per-head", "empty-row"])
def test_sdpa_fast_path_equals_plain_path(mask_kind: str) -> None:
    torch.manual_seed(0)
    B, nh, T, hs = 3, 4, 9, 16
    q, k, v = (torch.randn(B, nh, T, hs) for _ in range(3))
    mask = None
    if mask_kind == "padding":
        lens = torch.tensor([9, 5, 1])
        mask = (torch.arange(T) < lens[:, None])[:, None, None, :]  # (B, 1, 1, T)
    elif mask_kind == "causal":
        mask = torch.ones(T, T, dtype=torch.bool).tril()
    elif mask_kind == "per-head":
        mask = torch.rand(B, nh, T, T) > 0.5
        mask[..., 0] = True
    elif mask_kind == "empty-row":
        mask = torch.rand(B, 1, T, T) > 0.5
        mask[0, 0, 3] = False
    fast = scaled_dot_product_attention(q, k, v, mask, impl="sdpa")
    plain = scaled_dot_product_attention(q, k, v, mask, impl="plain")
    auto = scaled_dot_product_attention(q, k, v, mask)
    assert (fast - plain).abs().max().item() <= 1e-6
    assert torch.equal(auto, fast)
    if mask_kind == "empty-row":
        assert torch.equal(fast[0, :, 3], torch.zeros(nh, hs))


def test_sdpa_masked_keys_do_not_influence_output() -> None:
    torch.manual_seed(0)
    q, k, v = torch.randn(1, 1, 4, 8), torch.randn(1, 1, 6, 8), torch.randn(1, 1, 6, 8)
    mask = torch.tensor([True, True, True, False, False, False])
    for impl in ("sdpa", "plain"):
        a = scaled_dot_product_attention(q, k, v, mask, impl=impl)
        k2, v2 = k.clone(), v.clone()
        k2[..., 3:, :] = 100.0
        v2[..., 3:, :] = -100.0
        b = scaled_dot_product_attention(q, k2, v2, mask, impl=impl)
        torch.testing.assert_close(a, b)


def test_sdpa_bad_arguments() -> None:
    q = torch.zeros(1, 3, 4)
    with pytest.raises(ValueError, match="does not broadcast"):
        scaled_dot_product_attention(q, q, q, torch.ones(2, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="impl"):
        scaled_dot_product_attention(q, q, q, impl="fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="plain path"):
        scaled_dot_product_attention(q, q, q, impl="sdpa", return_weights=True)
    with pytest.raises(ValueError, match="keys have size"):
        scaled_dot_product_attention(q, torch.zeros(1, 3, 5), q)


# ==== Multi-head attention ====


def test_multihead_attention_matches_per_head_computation() -> None:
    torch.manual_seed(0)
    C, nh = 12, 3
    mha = MultiHeadAttention(C, nh).eval()
    x = torch.randn(2, 5, C)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], dtype=torch.bool)[:, None, None, :]
    out = mha(x, mask=mask)
    hs = C // nh
    q, k, v = mha.q(x), mha.k(x), mha.v(x)
    heads = []
    for h in range(nh):
        sl = slice(h * hs, (h + 1) * hs)
        s = q[..., sl] @ k[..., sl].transpose(1, 2) / math.sqrt(hs)
        s = s.masked_fill(~mask[:, 0], float("-inf"))
        heads.append(torch.softmax(s, -1) @ v[..., sl])
    expected = mha.o(torch.cat(heads, -1))
    torch.testing.assert_close(out, expected)
    mha.impl = "plain"
    assert (mha(x, mask=mask) - out).abs().max().item() <= 1e-6


def test_multihead_cross_attention_and_weights() -> None:
    mha = MultiHeadAttention(8, 2, bias=False).eval()
    assert mha.q.bias is None
    out, w = mha(torch.randn(2, 3, 8), torch.randn(2, 7, 8), return_weights=True)
    assert out.shape == (2, 3, 8) and w.shape == (2, 2, 3, 7)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 2, 3))


def test_multihead_rejects_bad_sizes() -> None:
    with pytest.raises(ValueError, match="not divisible"):
        MultiHeadAttention(10, 3)


# ==== Properties ====

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(
    B=st.integers(1, 3), Tq=st.integers(1, 5), Tk=st.integers(1, 6), seed=st.integers(0, 2**16),
    p=st.floats(0.0, 1.0),
)
def test_masked_softmax_properties(B: int, Tq: int, Tk: int, seed: int, p: float) -> None:
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(B, Tq, Tk, generator=g) * 10
    mask = torch.rand(B, Tq, Tk, generator=g) >= p
    w = masked_softmax(scores, mask=mask)
    assert torch.all(w[~mask] == 0) and torch.all(w >= 0)
    sums = w.sum(-1)
    expected = mask.any(-1).float()
    torch.testing.assert_close(sums, expected)
    # Shifting a row's scores changes nothing (softmax is shift-invariant).
    torch.testing.assert_close(masked_softmax(scores + 3.0, mask=mask), w)


@settings(max_examples=25, deadline=None)
@given(B=st.integers(1, 2), nh=st.integers(1, 3), T=st.integers(1, 12), seed=st.integers(0, 2**16))
def test_sdpa_paths_agree_on_random_padding(B: int, nh: int, T: int, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, nh, T, 8, generator=g) for _ in range(3))
    lens = torch.randint(0, T + 1, (B,), generator=g)
    mask = (torch.arange(T) < lens[:, None])[:, None, None, :]
    fast = scaled_dot_product_attention(q, k, v, mask, impl="sdpa")
    plain = scaled_dot_product_attention(q, k, v, mask, impl="plain")
    assert torch.isfinite(fast).all()
    assert (fast - plain).abs().max().item() <= 1e-6
