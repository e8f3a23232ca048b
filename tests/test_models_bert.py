"""The shared encoder and the BERT family: configs, counts, options, bad input."""

from __future__ import annotations

import math
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from models import (  # noqa: E402
    AlbertConfig,
    AlbertModel,
    BertConfig,
    BertForPreTraining,
    BertModel,
    DistilBertConfig,
    DistilBertForMaskedLM,
    DistilBertModel,
    RobertaConfig,
    RobertaForMaskedLM,
    RobertaModel,
    build_model,
    count_parameters,
    preset,
)
from models.encoder import get_activation  # noqa: E402

torch.set_num_threads(1)

V = 100


def tiny(cls: type[BertConfig] = BertConfig, **kw: Any) -> BertConfig:
    return cls.preset("tiny", vocab_size=V, **kw)


# ==== Configs and parameter counts ====


@pytest.mark.parametrize(
    "model_type, expected",
    [("bert", 109_482_240), ("roberta", 124_645_632), ("albert", 11_683_584), ("distilbert", 66_362_880),
     ("big_bird", 127_468_800)],
)
def test_base_presets_have_the_published_parameter_counts(model_type: str, expected: int) -> None:
    # BERT-base 109.5M, RoBERTa-base 124.6M, ALBERT-base 11.7M, DistilBERT 66.4M;
    # BigBird-roberta-base 127.5M (transformers' BigBirdModel at its default config).
    assert count_parameters(preset(model_type, "base")) == expected


@pytest.mark.parametrize(
    "share, embedding_size, expected",
    [("none", 128, 89_650_176), ("attention", 128, 63_647_232), ("ffn", 128, 37_686_528),
     ("all", 768, 31_705_344), ("attention", 768, 83_668_992), ("ffn", 768, 57_708_288)],
)
def test_albert_sharing_modes_match_the_paper_table(share: str, embedding_size: int, expected: int) -> None:
    assert count_parameters(AlbertConfig(share=share, embedding_size=embedding_size)) == expected


def test_heads_add_the_expected_parameters() -> None:
    # MLM transform H*H + H + 2H (norm) + V bias; NSP 2H + 2; decoder tied.
    H = 768
    extra = H * H + H + 2 * H + 30522 + 2 * H + 2
    assert count_parameters(preset("bert"), heads=True) == 109_482_240 + extra
    assert count_parameters(preset("distilbert"), heads=True) == 66_985_530


def test_config_pins_eps_gelu_and_positions() -> None:
    assert BertConfig().layer_norm_eps == 1e-12 and BertConfig().hidden_act == "gelu"
    r = RobertaConfig()
    assert (r.layer_norm_eps, r.max_position_embeddings, r.type_vocab_size, r.position_offset) == (1e-5, 514, 1, 2)
    assert r.head_act == "gelu" and r.max_sequence_length == 512
    assert AlbertConfig().hidden_act == "gelu_new" and AlbertConfig().embed_dim == 128
    assert DistilBertConfig().type_vocab_size == 0 and not DistilBertConfig().add_pooler


def test_config_round_trips_and_rejects_unknown_options() -> None:
    cfg = tiny(AlbertConfig, share="ffn")
    assert BertConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(TypeError):
        BertConfig(vocab_sizee=10)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="unknown model_type 'gpt'"):
        BertConfig.from_dict({"model_type": "gpt"})
    with pytest.raises(ValueError, match="unknown preset 'huge'"):
        BertConfig.preset("huge")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kw, message",
    [(dict(hidden_size=30, num_heads=4), "not divisible"), (dict(hidden_act="gelu_fancy"), "unknown hidden_act"),
     (dict(norm="middle"), "norm must be one of"), (dict(num_layers=0), "num_layers must be a positive"),
     (dict(pad_token_id=V), "outside the vocabulary"), (dict(share="all", num_hidden_groups=3), "exceeds num_layers")],
)
def test_config_validation_messages(kw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tiny(**kw)


def test_gelu_variants_differ_as_documented() -> None:
    x = torch.linspace(-6, 6, 10001)
    erf, tanh = get_activation("gelu")(x), get_activation("gelu_new")(x)
    torch.testing.assert_close(erf, x * 0.5 * (1 + torch.erf(x / math.sqrt(2))))
    torch.testing.assert_close(tanh, 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))))
    assert 4e-4 < (erf - tanh).abs().max().item() < 5e-4
    with pytest.raises(ValueError, match="unknown activation"):
        get_activation("swishy")


@pytest.mark.parametrize("name", ["gelu", "gelu_python", "gelu_new", "gelu_pytorch_tanh", "gelu_fast",
                                  "quick_gelu", "relu", "silu"])
def test_activations_match_transformers(name: str) -> None:
    activations = pytest.importorskip("transformers.activations")
    from models.config import ACTIVATIONS

    assert name in ACTIVATIONS
    x = torch.linspace(-8, 8, 4001)
    assert (get_activation(name)(x) - activations.ACT2FN[name](x)).abs().max().item() <= 1e-6


# ==== Embeddings ====


def test_roberta_positions_count_real_tokens_from_pad_plus_one() -> None:
    model = RobertaModel(tiny(RobertaConfig)).eval()
    ids = torch.tensor([[0, 7, 8, 2, 1, 1], [1, 1, 0, 7, 8, 2]])  # right and left padding
    pos = model.embeddings.position_ids(ids)
    assert pos.tolist() == [[2, 3, 4, 5, 1, 1], [1, 1, 2, 3, 4, 5]]
    # The padding row of the position table starts at zero.
    assert torch.equal(model.embeddings.position.weight[1], torch.zeros(64))


def test_bert_positions_and_padding_rows() -> None:
    model = BertModel(tiny()).eval()
    assert model.embeddings.position_ids(torch.zeros(2, 4, dtype=torch.long)).tolist() == [[0, 1, 2, 3]] * 2
    assert torch.equal(model.embeddings.word.weight[0], torch.zeros(64))


def test_albert_embeddings_are_factorised() -> None:
    model = AlbertModel(tiny(AlbertConfig))
    assert model.embeddings.word.weight.shape == (V, 32)
    assert model.embeddings.project.weight.shape == (64, 32)
    assert len(model.encoder.layers) == 1 and model.encoder.schedule == [[0], [0]]


def test_distilbert_has_no_segments_or_pooler() -> None:
    model = DistilBertModel(tiny(DistilBertConfig)).eval()
    assert model.embeddings.token_type is None and model.pooler is None
    out = model(torch.tensor([[1, 2, 3]]))
    assert out.pooler_output is None
    with pytest.raises(ValueError, match="no segment embedding"):
        model(torch.tensor([[1, 2, 3]]), token_type_ids=torch.zeros(1, 3, dtype=torch.long))


# ==== Encoder behaviour ====


def test_padding_does_not_change_real_tokens() -> None:
    torch.manual_seed(0)
    for cfg in (tiny(), tiny(RobertaConfig), tiny(AlbertConfig), tiny(DistilBertConfig), tiny(norm="pre")):
        model = build_model(cfg).eval()
        pad = cfg.pad_token_id
        ids = torch.tensor([[5, 6, 7, 8]])
        padded = torch.tensor([[5, 6, 7, 8, pad, pad, pad]])
        mask = torch.tensor([[1, 1, 1, 1, 0, 0, 0]])
        with torch.no_grad():
            a = model(ids).last_hidden_state
            b = model(padded, attention_mask=mask).last_hidden_state[:, :4]
        torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


def test_fast_and_plain_paths_agree_in_a_whole_model() -> None:
    torch.manual_seed(0)
    model = BertModel(tiny()).eval()
    ids = torch.randint(1, V, (2, 10))
    mask = torch.ones(2, 10, dtype=torch.long)
    mask[1, 7:] = 0
    with torch.no_grad():
        fast = model(ids, mask).last_hidden_state
        for layer in model.encoder.layers:
            layer.attn.impl = "plain"
        plain = model(ids, mask).last_hidden_state
    assert (fast - plain).abs().max().item() <= 1e-5


def test_post_ln_layer_is_the_bert_block() -> None:
    torch.manual_seed(0)
    cfg = tiny()
    model = BertModel(cfg).eval()
    layer = model.encoder.layers[0]
    x = torch.randn(2, 5, 64)
    a = layer.attn_norm(x + layer.attn(x))
    expected = layer.ffn_norm(a + layer.ffn.fc_out(torch.nn.functional.gelu(layer.ffn.fc_in(a))))
    torch.testing.assert_close(layer(x), expected)


def test_recipe_options_pre_ln_no_bias_gated() -> None:
    torch.manual_seed(0)
    cfg = tiny(norm="pre", bias=False, gated_ffn=True)
    model = BertForPreTraining(cfg).eval()
    assert all(m.bias is None for m in model.modules() if isinstance(m, (torch.nn.Linear, torch.nn.LayerNorm)))
    assert model.backbone.encoder.final_norm is not None
    layer = model.backbone.encoder.layers[0]
    assert layer.ffn.fc_in.weight.shape == (2 * 256, 64)
    x = torch.randn(1, 4, 64)
    h = x + layer.attn(layer.attn_norm(x))
    gate, up = layer.ffn.fc_in(layer.ffn_norm(h)).chunk(2, -1)
    torch.testing.assert_close(layer(x), h + layer.ffn.fc_out(torch.nn.functional.gelu(gate) * up))
    out = model(torch.tensor([[1, 2, 3]]), labels=torch.tensor([[1, -100, 3]]))
    assert torch.isfinite(out.loss)


@pytest.mark.parametrize("share", ["attention", "ffn"])
def test_partial_sharing_shares_exactly_one_block(share: str) -> None:
    model = AlbertModel(tiny(AlbertConfig, share=share, num_layers=3))
    layers = model.encoder.layers
    assert len(layers) == 3
    shared, own = ("attn", "ffn") if share == "attention" else ("ffn", "attn")
    assert getattr(layers[0], shared) is getattr(layers[2], shared)
    assert getattr(layers[0], own) is not getattr(layers[2], own)


def test_albert_groups_follow_transformers_schedule() -> None:
    model = AlbertModel(tiny(AlbertConfig, num_layers=6, num_hidden_groups=2, inner_group_num=2))
    assert len(model.encoder.layers) == 4
    assert model.encoder.schedule == [[0, 1]] * 3 + [[2, 3]] * 3
    out = model(torch.tensor([[1, 2]]), output_hidden_states=True)
    assert len(out.hidden_states) == 13


def test_losses_and_gradients() -> None:
    torch.manual_seed(0)
    model = BertForPreTraining(tiny())
    ids = torch.randint(1, V, (2, 6))
    labels = torch.full((2, 6), -100)
    labels[0, 2] = 7
    out = model(ids, labels=labels, sentence_label=torch.tensor([0, 1]))
    mlm = torch.nn.functional.cross_entropy(out.logits[0, 2:3], torch.tensor([7]))
    nsp = torch.nn.functional.cross_entropy(out.sentence_logits, torch.tensor([0, 1]))
    torch.testing.assert_close(out.loss, mlm + nsp)
    out.loss.backward()
    assert model.backbone.embeddings.word.weight.grad is not None
    assert all(p.grad is not None for p in model.backbone.encoder.parameters())
    with pytest.raises(ValueError, match="no sentence head"):
        RobertaForMaskedLM(tiny(RobertaConfig))(ids, sentence_label=torch.tensor([0, 1]))


def test_sparse_prediction_gives_the_same_loss_and_logits() -> None:
    torch.manual_seed(0)
    model = BertForPreTraining(tiny()).eval()
    ids = torch.randint(1, V, (2, 6))
    labels = torch.full((2, 6), -100)
    labels[0, 1], labels[1, 4], labels[1, 5] = 7, 8, 9
    with torch.no_grad():
        dense = model(ids, labels=labels)
        sparse = model(ids, labels=labels, sparse_prediction=True)
    assert sparse.logits.shape == (3, V)
    torch.testing.assert_close(sparse.logits, dense.logits[labels != -100])
    torch.testing.assert_close(sparse.loss, dense.loss)
    with pytest.raises(ValueError, match="needs labels"):
        model(ids, sparse_prediction=True)


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(tiny(), id="bert-post-ln-nsp"),
        pytest.param(tiny(norm="pre", bias=False, gated_ffn=True), id="pre-ln-gated"),
        pytest.param(tiny(AlbertConfig, share="all"), id="albert-shared-sop"),
        pytest.param(tiny(RobertaConfig), id="roberta-no-pooler"),
    ],
)
def test_sparse_prediction_last_layer_subset_keeps_loss_and_gradients(config: BertConfig) -> None:
    """sparse_prediction skips the last layer's FFN at unlabelled positions: same loss, same gradients."""
    torch.manual_seed(0)
    cls = RobertaForMaskedLM if isinstance(config, RobertaConfig) else BertForPreTraining
    model = cls(config).eval()
    ids = torch.randint(3, V, (3, 9))
    mask = torch.ones_like(ids)
    mask[2, 6:] = 0
    labels = torch.full_like(ids, -100)
    labels[0, 1], labels[1, 4], labels[1, 8], labels[2, 0] = 7, 8, 9, 10
    kw: dict[str, Any] = {"attention_mask": mask, "labels": labels}
    if model.sentence is not None:
        kw["sentence_label"] = torch.tensor([0, 1, 1])
    results = []
    for sparse in (False, True):
        model.zero_grad(set_to_none=True)
        out = model(ids, sparse_prediction=sparse, **kw)
        out.loss.backward()
        results.append((out, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
    (dense, dense_grads), (sparse, sparse_grads) = results
    assert sparse.last_hidden_state is None
    torch.testing.assert_close(sparse.loss, dense.loss, atol=1e-6, rtol=0)
    torch.testing.assert_close(sparse.logits, dense.logits[labels != -100], atol=1e-5, rtol=0)
    if dense.pooler_output is not None:
        torch.testing.assert_close(sparse.pooler_output, dense.pooler_output, atol=1e-6, rtol=0)
    assert dense_grads.keys() == sparse_grads.keys()
    for name, grad in dense_grads.items():
        torch.testing.assert_close(sparse_grads[name], grad, atol=1e-6, rtol=1e-5, msg=name)
    with pytest.raises(ValueError, match="rows must"):
        model.backbone(ids, rows=labels != -100 if model.backbone.pooler is not None else labels)


def test_decoder_is_tied_to_the_word_embeddings() -> None:
    model = DistilBertForMaskedLM(tiny(DistilBertConfig)).eval()
    names = [n for n, _ in model.named_parameters()]
    assert not any("decoder" in n for n in names)
    with torch.no_grad():
        model.backbone.embeddings.word.weight.zero_()
        model.mlm.bias.copy_(torch.arange(V, dtype=torch.float))
    logits = model(torch.tensor([[3, 4]])).logits
    torch.testing.assert_close(logits, torch.arange(V, dtype=torch.float).expand(1, 2, V))


# ==== Bad input ====


def test_sequence_longer_than_the_position_table() -> None:
    model = BertModel(tiny(max_position_embeddings=8))
    with pytest.raises(ValueError, match="sequence length 9 exceeds the 8 positions"):
        model(torch.ones(1, 9, dtype=torch.long))
    roberta = RobertaModel(tiny(RobertaConfig, max_position_embeddings=10))
    roberta(torch.full((1, 8), 5))
    with pytest.raises(ValueError, match="sequence length 9 exceeds the 8 positions.*padding offset 2"):
        roberta(torch.full((1, 9), 5))


@pytest.mark.parametrize("shape", [(2, 5), (1, 6), (1, 1, 6), (1, 6, 5)])
def test_attention_mask_of_the_wrong_shape(shape: tuple[int, ...]) -> None:
    model = BertModel(tiny())
    with pytest.raises(ValueError, match=r"attention_mask has shape .* but input_ids has shape \(1, 5\)"):
        model(torch.ones(1, 5, dtype=torch.long), attention_mask=torch.ones(shape, dtype=torch.long))


def test_other_bad_inputs_are_named() -> None:
    model = BertModel(tiny())
    ids = torch.ones(1, 5, dtype=torch.long)
    with pytest.raises(TypeError, match="attention_mask must hold 0/1"):
        model(ids, attention_mask=torch.ones(1, 5))
    with pytest.raises(ValueError, match=r"input_ids must lie in \[0, 100\)"):
        model(torch.tensor([[1, 100]]))
    with pytest.raises(ValueError, match=r"token_type_ids must lie in \[0, 2\)"):
        model(ids, token_type_ids=torch.full((1, 5), 2))
    with pytest.raises(ValueError, match="token_type_ids has shape"):
        model(ids, token_type_ids=torch.zeros(1, 4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"input_ids must have shape \(B, T\)"):
        model(torch.ones(5, dtype=torch.long))
    with pytest.raises(TypeError, match="config must be a BertConfig"):
        BertModel({"hidden_size": 8})  # type: ignore[arg-type]


def test_a_per_query_mask_is_accepted() -> None:
    torch.manual_seed(0)
    model = BertModel(tiny()).eval()
    ids = torch.randint(1, V, (1, 4))
    causal = torch.ones(4, 4, dtype=torch.long).tril()[None]
    with torch.no_grad():
        full = model(ids, attention_mask=causal).last_hidden_state
        prefix = model(ids[:, :2], attention_mask=causal[:, :2, :2]).last_hidden_state
        bidirectional = model(ids).last_hidden_state
    # Under a causal mask the first tokens cannot see what follows them.
    torch.testing.assert_close(full[:, :2], prefix, atol=1e-5, rtol=0)
    assert (full[:, :2] - bidirectional[:, :2]).abs().max().item() > 1e-3


# ==== DistilBERT from a teacher ====


def test_student_with_all_teacher_layers_reproduces_the_teacher() -> None:
    from models import init_from_teacher

    torch.manual_seed(0)
    teacher = BertForPreTraining(tiny(num_layers=3)).eval()
    with torch.no_grad():
        teacher.backbone.embeddings.token_type.weight[0].zero_()  # the student has no segments
    student = init_from_teacher(teacher, [0, 1, 2]).eval()
    ids = torch.randint(1, V, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[0, 5:] = 0
    with torch.no_grad():
        a, b = teacher(ids, mask), student(ids, mask)
    torch.testing.assert_close(a.last_hidden_state, b.last_hidden_state, atol=1e-6, rtol=0)
    torch.testing.assert_close(a.logits, b.logits, atol=1e-6, rtol=0)


def test_student_layer_choices() -> None:
    from models.distilbert import HF_TEACHER_LAYERS, init_from_teacher

    teacher = BertModel(tiny(num_layers=12, hidden_size=16, num_heads=2, intermediate_size=16))
    for choice, expected in (("hf", HF_TEACHER_LAYERS), ("every_other", (0, 2, 4, 6, 8, 10)), ([11, 3], (11, 3))):
        student = init_from_teacher(teacher, choice)
        assert student.config.num_layers == len(expected) and student.config.type_vocab_size == 0
        for s_idx, t_idx in enumerate(expected):
            for (k, x), (_, y) in zip(student.backbone.encoder.layers[s_idx].state_dict().items(),
                                      teacher.encoder.layers[t_idx].state_dict().items(), strict=True):
                assert torch.equal(x, y), (choice, s_idx, k)
    with pytest.raises(ValueError, match="needs a 12-layer teacher"):
        init_from_teacher(BertModel(tiny(num_layers=4)), "hf")
    with pytest.raises(ValueError, match=r"in \[0, 12\)"):
        init_from_teacher(teacher, [0, 12])


def test_models_pickle_and_deepcopy() -> None:
    import copy
    import io

    configs = (tiny(), tiny(AlbertConfig), preset("big_bird", "tiny", vocab_size=V),
               preset("xlnet", "tiny", vocab_size=V))
    for cfg in configs:
        model = build_model(cfg, heads=True).eval()
        buf = io.BytesIO()
        torch.save(model, buf)
        buf.seek(0)
        loaded = torch.load(buf, weights_only=False)
        clone = copy.deepcopy(model)
        ids = torch.randint(6, V, (1, 5))
        with torch.no_grad():
            torch.testing.assert_close(loaded(ids).logits, model(ids).logits)
            torch.testing.assert_close(clone(ids).logits, model(ids).logits)


def test_albert_has_no_dropout_on_the_ffn_output() -> None:
    model = AlbertModel(tiny(AlbertConfig, hidden_dropout=0.5)).train()
    layer = model.encoder.layers[0]
    assert layer.ffn_dropout.p == 0.0 and layer.dropout.p == 0.5
