"""models.linear_ce: the decoder + cross-entropy without the logits equals the two done the usual way."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from models import BertConfig, BertForPreTraining, RobertaConfig, RobertaForMaskedLM
from models.linear_ce import linear_cross_entropy


def _grads(fn, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, t: torch.Tensor) -> list[torch.Tensor]:
    leaves = [v.detach().clone().requires_grad_() for v in (x, w) + ((b,) if b is not None else ())]
    loss = fn(leaves[0], leaves[1], leaves[2] if b is not None else None, t)
    (loss * 0.37).backward()  # a scale, as the loop's division by the global count
    return [loss.detach()] + [v.grad for v in leaves]


def _reference(x, w, b, t):
    return F.cross_entropy(F.linear(x, w, b), t, reduction="sum")


@pytest.mark.parametrize("bias", [True, False])
def test_loss_and_gradients_equal_the_usual_way(bias: bool) -> None:
    g = torch.Generator().manual_seed(0)
    N, E, V = 11, 8, 50
    x, w = torch.randn(N, E, generator=g) * 3, torch.randn(V, E, generator=g)
    b = torch.randn(V, generator=g) if bias else None
    t = torch.randint(0, V, (N,), generator=g)
    ours, ref = _grads(linear_cross_entropy, x, w, b, t), _grads(_reference, x, w, b, t)
    for a, r in zip(ours, ref):
        torch.testing.assert_close(a, r, rtol=1e-5, atol=1e-5)


def test_large_logits_do_not_overflow() -> None:
    """Row 0's target has probability e^-100 (underflows): its loss of 100 nats comes from log-sum-exp."""
    x = torch.tensor([[100.0, -100.0], [0.0, 0.0]])
    w = torch.tensor([[1.0, 0.0], [0.0, 1.0], [2.0, 0.0]])
    t = torch.tensor([0, 2])
    ours = _grads(linear_cross_entropy, x, w, None, t)
    assert all(bool(torch.isfinite(v).all()) for v in ours)
    for a, r in zip(ours, _grads(_reference, x, w, None, t)):
        torch.testing.assert_close(a, r)
    assert float(ours[0]) == pytest.approx(100.0 + float(torch.logsumexp(torch.tensor([0.0, 0.0, 0.0]), 0)), rel=1e-6)


def test_without_gradients_only_the_loss() -> None:
    x, w, t = torch.randn(4, 3), torch.randn(6, 3), torch.tensor([0, 1, 5, 2])
    with torch.no_grad():
        loss = linear_cross_entropy(x, w, None, t)
    torch.testing.assert_close(loss, _reference(x, w, None, t))
    assert loss.grad_fn is None


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="expected x"):
        linear_cross_entropy(torch.randn(4, 3), torch.randn(6, 2), None, torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="float32"):
        linear_cross_entropy(torch.randn(4, 3, dtype=torch.float64), torch.randn(6, 3, dtype=torch.float64), None,
                             torch.zeros(4, dtype=torch.long))


@pytest.mark.parametrize("num_masked", [None, 3])
@pytest.mark.parametrize("cls,config", [
    pytest.param(BertForPreTraining, BertConfig.preset("tiny", vocab_size=120, hidden_dropout=0.0,
                                                       attention_dropout=0.0, sentence_head="nsp"), id="bert-nsp"),
    pytest.param(RobertaForMaskedLM, RobertaConfig.preset("tiny", vocab_size=120, hidden_dropout=0.0,
                                                          attention_dropout=0.0), id="roberta"),
])
def test_the_model_without_logits_gives_the_same_loss_and_gradients(cls, config, num_masked) -> None:
    """BertForPreTraining(return_logits=False, reduction="sum"): the loss sums, gradients, no logits."""
    torch.manual_seed(0)
    model = cls(config).eval()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 120, (3, 10), generator=g)
    attn = torch.ones_like(ids)
    attn[2, 7:] = 0
    labels = torch.full_like(ids, -100)
    labels[0, [1, 4, 6]] = ids[0, [1, 4, 6]]
    labels[1, [2, 3, 8]] = ids[1, [2, 3, 8]]
    labels[2, [5]] = ids[2, [5]]  # fewer than num_masked: padded with unscored rows
    kw = dict(labels=labels, sparse_prediction=True, num_masked=num_masked, reduction="sum")
    if config.sentence_head:
        kw["sentence_label"] = torch.tensor([0, 1, 0])
    results = []
    for return_logits in (True, False):
        model.zero_grad(set_to_none=True)
        out = model(ids, attn, **kw, return_logits=return_logits)
        out.loss.backward()
        results.append((out, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
    (usual, usual_grads), (fused, fused_grads) = results
    assert fused.logits is None and usual.logits is not None
    assert fused.losses.keys() == usual.losses.keys()
    for name in usual.losses:
        torch.testing.assert_close(fused.losses[name], usual.losses[name], rtol=1e-5, atol=1e-5)
    mean = model(ids, attn, labels=labels, sparse_prediction=True, return_logits=False).losses["mlm"]
    torch.testing.assert_close(mean, usual.losses["mlm"] / 7, rtol=1e-5, atol=1e-6)
    assert usual_grads.keys() == fused_grads.keys()
    for name, grad in usual_grads.items():
        torch.testing.assert_close(fused_grads[name], grad, rtol=1e-4, atol=1e-6, msg=name)
    with pytest.raises(ValueError, match="reduction"):
        model(ids, attn, labels=labels, reduction="none")
