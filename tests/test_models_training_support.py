"""What pretraining needs from models/: no host syncs, per-loss outputs, stable init, checkpointing, config families."""

from __future__ import annotations

import pytest
import torch

from models import (
    AlbertConfig,
    AlbertForPreTraining,
    AlbertModel,
    BertConfig,
    BertForPreTraining,
    BertModel,
    BigBirdConfig,
    BigBirdForPreTraining,
    BigBirdModel,
    DistilBertConfig,
    DistilBertForMaskedLM,
    DistilBertModel,
    RobertaConfig,
    RobertaForMaskedLM,
    RobertaModel,
    XLNetConfig,
    XLNetLMHeadModel,
    XLNetModel,
)
from models.checks import debug_checks
from models.objectives import PlmConfig, plm_inputs

V = 100
FAMILIES = {
    "bert": (BertConfig, BertModel, BertForPreTraining),
    "roberta": (RobertaConfig, RobertaModel, RobertaForMaskedLM),
    "albert": (AlbertConfig, AlbertModel, AlbertForPreTraining),
    "distilbert": (DistilBertConfig, DistilBertModel, DistilBertForMaskedLM),
    "big_bird": (BigBirdConfig, BigBirdModel, BigBirdForPreTraining),
    "xlnet": (XLNetConfig, XLNetModel, XLNetLMHeadModel),
}
MLM_FAMILIES = [k for k in FAMILIES if k != "xlnet"]


def tiny(kind: str, **kw):
    return FAMILIES[kind][0].preset("tiny", vocab_size=V, hidden_dropout=0.0, attention_dropout=0.0, **kw)


def mlm_batch(T: int = 24, B: int = 3, k: int = 4):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, V, (B, T), generator=g)
    labels = torch.full((B, T), -100)
    for b in range(B):
        pos = torch.randperm(T - 1, generator=g)[:k] + 1
        labels[b, pos] = ids[b, pos]
    attn = torch.ones(B, T, dtype=torch.long)
    attn[-1, T - 3:] = 0
    labels[-1, T - 3:] = -100
    return ids, attn, labels


# ==== No host-device synchronisation, no graph breaks ====


@pytest.mark.parametrize("kind", list(FAMILIES))
def test_forward_and_backward_read_no_tensor_value(kind: str) -> None:
    """On the meta device a tensor has no values: any .item()/int()/bool() on one raises."""
    cfg = tiny(kind)
    with torch.device("meta"):
        model = FAMILIES[kind][2](cfg).train()
    T = 200 if kind == "big_bird" else 24  # BigBird sparse from (5 + 2R) b + 1 = 73 tokens
    ids = torch.randint(5, V, (2, T)).to("meta")
    attn = torch.ones(2, T, dtype=torch.long, device="meta")
    if kind == "xlnet":
        p = plm_inputs(torch.randint(5, V, (2, T)), special_mask=torch.zeros(2, T, dtype=torch.bool),
                       cfg=PlmConfig(), seed=0, epoch=0, example_index=torch.arange(2))
        out = model(ids, attn, perm_mask=p["perm_mask"].to("meta"),
                    target_mapping=p["target_mapping"].to("meta"), labels=p["labels"].to("meta"))
    else:
        out = model(ids, attn, labels=ids, sparse_prediction=True, num_masked=5)
    out.loss.backward()
    assert out.loss.device.type == "meta"
    # With debug checks forced on, the same forward does read values (so the test above can fail).
    with debug_checks(True), pytest.raises((RuntimeError, NotImplementedError)):
        model(ids, attn)


def test_value_checks_still_guard_eager_cpu_input() -> None:
    model = BertModel(tiny("bert"))
    with pytest.raises(ValueError, match="input_ids must lie in"):
        model(torch.tensor([[1, V]]))
    with debug_checks(False):
        with pytest.raises(IndexError):  # unchecked: the embedding lookup itself fails
            model(torch.tensor([[1, V]]))


def test_models_compile_with_fullgraph() -> None:
    """torch.compile(fullgraph=True) raises on any graph break (dynamo only: the eager backend)."""
    torch.manual_seed(0)
    ids, attn, labels = mlm_batch(T=16, B=2, k=3)
    bert = BertForPreTraining(tiny("bert")).eval()
    ref = bert(ids, attn, labels=labels, sentence_label=torch.tensor([0, 1]))
    compiled = torch.compile(bert, fullgraph=True, backend="eager")
    static = compiled(ids, attn, labels=labels, sentence_label=torch.tensor([0, 1]), sparse_prediction=True,
                      num_masked=3)
    assert torch.allclose(static.loss, ref.loss, atol=1e-5)
    assert set(static.losses) == {"mlm", "nsp"}

    bigbird = BigBirdForPreTraining(tiny("big_bird", num_layers=1)).eval()
    ids2 = torch.randint(5, V, (2, 200))
    attn2 = torch.ones(2, 200, dtype=torch.long)
    attn2[1, 150:] = 0
    ref2 = bigbird(ids2, attn2).logits
    assert bigbird.backbone.encoder.layers[0].attn.sparse.is_sparse(200)
    got2 = torch.compile(bigbird, fullgraph=True, backend="eager")(ids2, attn2).logits
    assert torch.allclose(got2, ref2, atol=1e-5)

    xlnet = XLNetLMHeadModel(tiny("xlnet", num_layers=1)).eval()
    p = plm_inputs(ids, special_mask=attn == 0, cfg=PlmConfig(), seed=0, epoch=0, example_index=torch.arange(2))
    kw = dict(perm_mask=p["perm_mask"], target_mapping=p["target_mapping"], labels=p["labels"])
    got3 = torch.compile(xlnet, fullgraph=True, backend="eager")(ids, attn, **kw)
    assert torch.allclose(got3.loss, xlnet(ids, attn, **kw).loss, atol=1e-5)


# ==== Losses one by one; sparse prediction for every MLM head ====


@pytest.mark.parametrize("kind", MLM_FAMILIES)
def test_losses_are_returned_separately_and_sum_to_the_loss(kind: str) -> None:
    torch.manual_seed(0)
    cfg = tiny(kind)
    model = FAMILIES[kind][2](cfg).eval()
    T = 96 if kind == "big_bird" else 24
    ids, attn, labels = mlm_batch(T=T)
    sentence = torch.tensor([0, 1, 1]) if cfg.sentence_head else None
    out = model(ids, attn, labels=labels, sentence_label=sentence)
    mlm = torch.nn.functional.cross_entropy(out.logits.reshape(-1, V), labels.reshape(-1), ignore_index=-100)
    assert torch.allclose(out.losses["mlm"], mlm)
    expected = {"mlm"} | ({cfg.sentence_head} if cfg.sentence_head else set())
    assert set(out.losses) == expected
    if cfg.sentence_head:
        s_loss = torch.nn.functional.cross_entropy(out.sentence_logits, sentence)
        assert torch.allclose(out.losses[cfg.sentence_head], s_loss)
    assert torch.allclose(out.loss, sum(out.losses.values()))


@pytest.mark.parametrize("kind", MLM_FAMILIES)
def test_sparse_prediction_dynamic_and_static_match_dense(kind: str) -> None:
    torch.manual_seed(0)
    cfg = tiny(kind)
    model = FAMILIES[kind][2](cfg).eval()
    T = 96 if kind == "big_bird" else 24
    ids, attn, labels = mlm_batch(T=T)
    labels[-1, 1:] = -100  # a row with fewer labels than num_masked pads with unscored positions
    labels[-1, 2] = ids[-1, 2]
    sentence = torch.tensor([0, 1, 1]) if cfg.sentence_head else None
    dense = model(ids, attn, labels=labels, sentence_label=sentence)
    sel = labels != -100
    for kw in (dict(sparse_prediction=True), dict(sparse_prediction=True, num_masked=4)):
        sparse = model(ids, attn, labels=labels, sentence_label=sentence, **kw)
        assert torch.allclose(sparse.loss, dense.loss, atol=1e-5), kw
        logits = sparse.logits if "num_masked" not in kw else sparse.logits.view(3, 4, V)
        if "num_masked" in kw:
            # Rows 0 and 1 have exactly 4 labels: their logits in position order.
            assert torch.allclose(logits[:2].reshape(-1, V), dense.logits[:2][sel[:2]], atol=1e-5)
        else:
            assert torch.allclose(logits, dense.logits[sel], atol=1e-5)
        if cfg.sentence_head:
            assert torch.allclose(sparse.sentence_logits, dense.sentence_logits, atol=1e-5)
    with pytest.raises(ValueError, match="num_masked"):
        model(ids, attn, labels=labels, sparse_prediction=True, num_masked=0)


def test_xlnet_returns_its_loss_by_name() -> None:
    model = XLNetLMHeadModel(tiny("xlnet")).eval()
    ids = torch.randint(5, V, (2, 9))
    out = model(ids, labels=ids)
    assert set(out.losses) == {"plm"} and torch.equal(out.losses["plm"], out.loss)


# ==== The same weights for the same seed, whichever head class ====


@pytest.mark.parametrize("kind", list(FAMILIES))
def test_backbone_weights_do_not_depend_on_the_head_class(kind: str) -> None:
    cfg = tiny(kind)
    _, base_cls, head_cls = FAMILIES[kind]
    torch.manual_seed(123)
    base = base_cls(cfg).state_dict()
    torch.manual_seed(123)
    full = head_cls(cfg).state_dict()
    shared = 0
    for name, tensor in base.items():
        key = f"backbone.{name}"
        if key in full:
            assert torch.equal(full[key], tensor), name
            shared += 1
    assert shared >= len(base) - 2  # everything but a pooler the head class may leave out
    torch.manual_seed(124)
    assert not torch.equal(head_cls(cfg).state_dict()[f"backbone.{next(iter(base))}"], next(iter(base.values())))


# ==== Gradient checkpointing ====


@pytest.mark.parametrize("kind", ["bert", "big_bird", "xlnet"])
def test_gradient_checkpointing_gives_the_same_gradients(kind: str) -> None:
    torch.manual_seed(0)
    model = FAMILIES[kind][2](tiny(kind)).train()
    T = 96 if kind == "big_bird" else 24
    ids, attn, labels = mlm_batch(T=T)

    def grads() -> dict[str, torch.Tensor]:
        model.zero_grad()
        out = model(ids, attn, labels=labels)
        out.loss.backward()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    layers = model.backbone.layers if kind == "xlnet" else model.backbone.encoder.layers
    calls = []
    # A pre-hook: the recomputation stops once it has what backward needs, before post-hooks.
    hook = layers[0].register_forward_pre_hook(lambda *a: calls.append(1))
    plain = grads()
    assert len(calls) == 1
    model.set_gradient_checkpointing(True)
    calls.clear()
    checked = grads()
    assert len(calls) == 2  # recomputed in the backward pass
    hook.remove()
    assert plain.keys() == checked.keys()
    for name in plain:
        assert torch.allclose(plain[name], checked[name], atol=1e-6), name
    model.eval()
    calls.clear()
    with torch.no_grad():
        model(ids, attn)


# ==== Config families ====


@pytest.mark.parametrize(
    "cls, config",
    [
        (RobertaModel, BertConfig()),
        (RobertaForMaskedLM, BertConfig()),
        (AlbertModel, BertConfig()),
        (DistilBertForMaskedLM, RobertaConfig()),
        (BigBirdModel, BertConfig()),
        (BertModel, XLNetConfig()),
        (BertForPreTraining, XLNetConfig()),
        (XLNetModel, BertConfig()),
    ],
    ids=lambda x: type(x).__name__ if not isinstance(x, type) else x.__name__,
)
def test_a_config_of_the_wrong_family_is_refused(cls, config) -> None:
    with torch.device("meta"), pytest.raises(TypeError, match="Config"):
        cls(config)


def test_bert_classes_still_build_the_bert_like_variants() -> None:
    # BertModel is the backbone of every BERT-like variant.
    with torch.device("meta"):
        assert BertModel(RobertaConfig.preset("tiny")).config.model_type == "roberta"


@pytest.mark.parametrize("field, value", [("max_position_embeddings", 128), ("sentence_head", "nsp"),
                                          ("add_pooler", True), ("block_size", 16), ("type_vocab_size", 2),
                                          ("attn_impl", "plain")])
def test_xlnet_config_refuses_bert_fields_it_ignores(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=f"XLNet does not use {field}"):
        XLNetConfig(**{field: value})
    XLNetConfig.preset("tiny")  # the presets set none of them
