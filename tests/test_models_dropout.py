"""models.dropout: masks drawn from geometric gaps have F.dropout's distribution; attention uses them."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from models import dropout as drop
from models.attention import MultiHeadAttention, scaled_dot_product_attention
from models.dropout import Dropout, dropout, keep_mask

N = 1_000_000


def _sd(n: int, p: float) -> float:
    return math.sqrt(n * p * (1 - p))


@pytest.mark.parametrize("p", [0.01, 0.1, 0.3, 0.5])
def test_drop_rate_and_scale(p: float) -> None:
    torch.manual_seed(0)
    m = keep_mask(N, p)
    dropped = int((m == 0).sum())
    assert abs(dropped - N * p) < 6 * _sd(N, p), (dropped, N * p)
    assert torch.all((m == 0) | (m == torch.tensor(1 / (1 - p), dtype=m.dtype)))


def test_drops_are_independent_of_position_and_of_each_other() -> None:
    """Bernoulli trials: the rate is the same at every offset, and a drop says nothing about the next."""
    torch.manual_seed(1)
    p = 0.1
    d = (keep_mask(N, p) == 0).view(1000, 1000).float()
    # The first element, the last, and every column: the rate does not depend on the position.
    for col in (d[:, 0], d[:, -1]):
        assert abs(float(col.sum()) - 1000 * p) < 6 * _sd(1000, p)
    cols = d.sum(0)  # (1000,) drops per column: binomial(1000, p) each
    assert float(((cols - 1000 * p) ** 2).mean()) == pytest.approx(1000 * p * (1 - p), rel=0.15)
    # P(next dropped | dropped) = p; pairs straddling the row boundary included.
    flat = d.reshape(-1)
    both = float((flat[1:] * flat[:-1]).sum())
    first = float(flat[:-1].sum())
    assert abs(both / first - p) < 6 * math.sqrt(p * (1 - p) / first)
    # Gaps between drops are geometric: P(gap = 1) = p, mean 1 / p.
    gaps = torch.diff(torch.nonzero(flat).squeeze(1)).double()
    assert float((gaps == 1).double().mean()) == pytest.approx(p, abs=6 * math.sqrt(p * (1 - p) / len(gaps)))
    assert float(gaps.mean()) == pytest.approx(1 / p, rel=0.02)


def test_more_rounds_of_gaps_give_the_same_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    """A round of gaps that stops short of the end is continued from where it stopped."""
    monkeypatch.setattr(drop, "_SD_MARGIN", -3.0)  # every round falls short: several rounds per mask
    calls = []
    real = torch.rand
    monkeypatch.setattr(torch, "rand", lambda *a, **k: calls.append(a) or real(*a, **k))
    torch.manual_seed(2)
    p = 0.2
    m = keep_mask(200_000, p)
    assert len(calls) > 1
    assert abs(int((m == 0).sum()) - 200_000 * p) < 6 * _sd(200_000, p)


def test_the_mask_follows_the_global_generator() -> None:
    """The draws come from torch's generator, whose state a checkpoint stores: same seed, same mask."""
    torch.manual_seed(3)
    a = keep_mask(5000, 0.1)
    torch.manual_seed(3)
    b = keep_mask(5000, 0.1)
    assert torch.equal(a, b)
    assert not torch.equal(a, keep_mask(5000, 0.1))


def test_dropout_matches_f_dropout_where_it_must() -> None:
    x = torch.randn(4, 7, 9, requires_grad=True)
    assert dropout(x, 0.1, training=False) is x
    assert dropout(x, 0.0) is x
    torch.manual_seed(4)
    y = dropout(x, 0.25)
    kept = y != 0
    torch.testing.assert_close(y[kept], (x / 0.75)[kept])
    y.sum().backward()
    torch.testing.assert_close(x.grad, kept.float() / 0.75)
    # Above p = 0.5 it is F.dropout itself (same generator draws).
    torch.manual_seed(5)
    a = dropout(x.detach(), 0.7)
    torch.manual_seed(5)
    assert torch.equal(a, F.dropout(x.detach(), 0.7))
    with pytest.raises(ValueError, match="drop probability"):
        keep_mask(3, 1.0)


def test_the_module_is_an_nn_dropout() -> None:
    d = Dropout(0.1)
    assert isinstance(d, torch.nn.Dropout) and d.p == 0.1
    assert torch.equal(d.eval()(torch.ones(3)), torch.ones(3))
    x = torch.ones(10_000)
    y = d.train()(x)
    assert 0.07 < float((y == 0).float().mean()) < 0.13


def test_attention_dropout_is_unbiased() -> None:
    """Averaged over many draws, attention with dropout on the weights gives the output without it."""
    torch.manual_seed(6)
    q, k, v = torch.randn(1, 2, 6, 4), torch.randn(1, 2, 6, 4), torch.randn(1, 2, 6, 4)
    mask = torch.tensor([True, True, True, True, True, False])[None, None, None, :]
    exact = scaled_dot_product_attention(q, k, v, mask)
    mean = torch.stack([scaled_dot_product_attention(q, k, v, mask, dropout_p=0.3) for _ in range(4000)]).mean(0)
    torch.testing.assert_close(mean, exact, atol=0.05, rtol=0)
    one = scaled_dot_product_attention(q, k, v, mask, dropout_p=0.3)
    assert not torch.allclose(one, exact)


def test_multi_head_attention_trains_with_dropout_and_rows() -> None:
    """Train mode with attention dropout, whole and with only some query rows: shapes and gradients."""
    torch.manual_seed(7)
    mha = MultiHeadAttention(8, 2, dropout=0.1).train()
    x = torch.randn(3, 5, 8, requires_grad=True)
    rows = torch.tensor([[True, False, True, False, False], [False] * 5, [True] * 5])
    out = mha(x, rows=rows)
    assert out.shape == (7, 8)
    out.sum().backward()
    assert x.grad is not None and bool(torch.isfinite(x.grad).all())
    assert mha(x).shape == (3, 5, 8)
