"""XLNet: relative two-stream attention, partial prediction, memory, and parity
with transformers' XLNetLMHeadModel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from models import XLNetConfig, XLNetLMHeadModel, XLNetModel, count_parameters, from_hf, preset  # noqa: E402
from models.xlnet import relative_positions  # noqa: E402

torch.set_num_threads(1)

V = 99


def tiny(**kw: Any) -> XLNetConfig:
    return XLNetConfig.preset("tiny", vocab_size=V, hidden_size=32, num_heads=4, intermediate_size=37, **kw)


def _batch() -> dict[str, Any]:
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(6, V, (2, 8), generator=g)
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 6:] = 0
    ids[mask == 0] = 5
    types = torch.zeros(2, 8, dtype=torch.long)
    types[:, 4:] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def _two_stream() -> tuple[Any, Any]:
    perm = torch.zeros(2, 8, 8)
    perm[:, :, 2] = perm[:, :, 5] = 1  # nobody sees tokens 2 and 5 ...
    perm[:, 5, 2] = 0  # ... except 5, which comes after 2 in the factorisation order
    target = torch.zeros(2, 2, 8)
    target[:, 0, 2] = target[:, 1, 5] = 1
    return perm, target


def test_base_parameter_count() -> None:
    assert count_parameters(preset("xlnet", "base")) == 116_718_336


def test_relative_encodings_are_sin_cos_halves_of_the_distance() -> None:
    pe = relative_positions(3, 5, 8)  # distances 5, 4, ..., -2
    assert pe.shape == (8, 8)
    inv = 1 / 10000 ** (torch.arange(0, 8, 2).float() / 8)
    for p, dist in enumerate(range(5, -3, -1)):
        torch.testing.assert_close(pe[p], torch.cat([torch.sin(dist * inv), torch.cos(dist * inv)]))
    assert relative_positions(3, 5, 8, clamp_len=2)[0].equal(relative_positions(3, 5, 8)[3])


def test_query_stream_does_not_see_its_own_token() -> None:
    torch.manual_seed(0)
    model = XLNetModel(tiny()).eval()
    b = _batch()
    perm, target = _two_stream()
    ids2 = b["input_ids"].clone()
    ids2[:, 2] = 7  # change the token being predicted at position 2
    with torch.no_grad():
        out1 = model(**b, perm_mask=perm, target_mapping=target).last_hidden_state
        out2 = model(ids2, b["attention_mask"], b["token_type_ids"], perm_mask=perm,
                     target_mapping=target).last_hidden_state
        content1 = model(**b, perm_mask=perm).last_hidden_state
        content2 = model(ids2, b["attention_mask"], b["token_type_ids"], perm_mask=perm).last_hidden_state
    torch.testing.assert_close(out1[:, 0], out2[:, 0])  # prediction for position 2: blind to token 2
    assert (out1[:, 1] - out2[:, 1]).abs().max() > 1e-4  # position 5 may see token 2
    assert (content1[:, 2] - content2[:, 2]).abs().max() > 1e-4  # the content stream sees itself


def test_partial_prediction_equals_the_full_query_stream_rows() -> None:
    torch.manual_seed(0)
    model = XLNetLMHeadModel(tiny()).eval()
    b = _batch()
    perm, target = _two_stream()
    with torch.no_grad():
        partial = model(**b, perm_mask=perm, target_mapping=target).logits  # (B, 2, V)
        full = model(**b, perm_mask=perm, target_mapping=torch.eye(8).expand(2, 8, 8)).logits  # (B, 8, V)
        padded = torch.cat([target, torch.zeros(2, 1, 8)], 1)  # an all-zero padding row
        with_pad = model(**b, perm_mask=perm, target_mapping=padded).logits
    torch.testing.assert_close(partial, full[:, [2, 5]], atol=1e-6, rtol=0)
    torch.testing.assert_close(with_pad[:, :2], partial, atol=1e-6, rtol=0)


def test_memory_is_cut_to_mem_len_and_detached() -> None:
    model = XLNetModel(tiny(mem_len=5)).eval()
    out = model(torch.randint(6, V, (1, 8)))
    assert len(out.mems) == 2 and out.mems[0].shape == (1, 5, 32) and not out.mems[0].requires_grad
    out2 = model(torch.randint(6, V, (1, 3)), mems=out.mems)
    assert out2.mems[0].shape == (1, 5, 32)
    model.train()
    assert model(torch.randint(6, V, (1, 3))).mems is None  # training default, as in transformers
    reuse = XLNetModel(tiny(mem_len=None, reuse_len=2)).eval()
    assert reuse(torch.randint(6, V, (1, 8))).mems[0].shape == (1, 2, 32)


def test_bad_inputs_are_named() -> None:
    model = XLNetModel(tiny())
    ids = torch.randint(6, V, (2, 8))
    with pytest.raises(ValueError, match=r"perm_mask has shape \(2, 8\); expected \(2, 8, 8\)"):
        model(ids, perm_mask=torch.zeros(2, 8))
    with pytest.raises(ValueError, match="target_mapping has shape"):
        model(ids, target_mapping=torch.zeros(2, 3, 7))
    with pytest.raises(ValueError, match="one-hot"):
        model(ids, target_mapping=torch.full((2, 1, 8), 0.5))
    with pytest.raises(ValueError, match="one per layer"):
        model(ids, mems=[torch.zeros(2, 3, 32)])
    with pytest.raises(ValueError, match="attention_mask has shape"):
        model(ids, attention_mask=torch.ones(2, 9))
    with pytest.raises(ValueError, match="XLNet does not support norm='pre'"):
        tiny(norm="pre")


# ==== Parity with transformers ====

transformers = pytest.importorskip("transformers")
transformers.logging.set_verbosity_error()


def _hf_model(tmp_path: Path, cls: Any = None) -> Any:
    cls = cls or transformers.XLNetLMHeadModel
    cfg = transformers.XLNetConfig(vocab_size=V, d_model=32, n_layer=2, n_head=4, d_inner=37, mem_len=6)
    torch.manual_seed(0)
    model = cls(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(tmp_path)
    return model


def test_single_stream_with_padding_segments_and_mems(tmp_path: Path) -> None:
    hf = _hf_model(tmp_path)
    ours = from_hf(tmp_path)
    assert isinstance(ours, XLNetLMHeadModel)
    b = _batch()
    with torch.no_grad():
        a, o = hf(**b, output_hidden_states=True), ours(**b, output_hidden_states=True)
        assert (a.logits - o.logits).abs().max().item() <= 1e-5
        for x, y in zip(a.hidden_states, o.hidden_states, strict=True):
            assert (x - y).abs().max().item() <= 1e-5
        for x, y in zip(a.mems, o.mems, strict=True):  # transformers keeps mems time-major
            assert (x.transpose(0, 1) - y).abs().max().item() <= 1e-5
        nxt = torch.randint(6, V, (2, 5))
        types = torch.ones(2, 5, dtype=torch.long)
        a2 = hf(nxt, token_type_ids=types, mems=a.mems)
        o2 = ours(nxt, token_type_ids=types, mems=o.mems)
    assert (a2.logits - o2.logits).abs().max().item() <= 1e-5


def test_two_stream_with_perm_mask_and_target_mapping(tmp_path: Path) -> None:
    hf = _hf_model(tmp_path)
    ours = from_hf(tmp_path)
    b = _batch()
    perm, target = _two_stream()
    with torch.no_grad():
        a = hf(**b, perm_mask=perm, target_mapping=target)
        o = ours(**b, perm_mask=perm, target_mapping=target)
    assert a.logits.shape == o.logits.shape == (2, 2, V)
    assert (a.logits - o.logits).abs().max().item() <= 1e-5


def test_two_stream_after_memory(tmp_path: Path) -> None:
    hf = _hf_model(tmp_path)
    ours = from_hf(tmp_path)
    b = _batch()
    nxt = torch.randint(6, V, (2, 4))
    perm = torch.ones(2, 4, 4).triu()  # causal order: i sees j < i
    target = torch.eye(4).expand(2, 4, 4)
    with torch.no_grad():
        mems_a, mems_o = hf(**b).mems, ours(**b).mems
        a = hf(nxt, mems=mems_a, perm_mask=perm, target_mapping=target)
        o = ours(nxt, mems=mems_o, perm_mask=perm, target_mapping=target)
    # Row 0 sees only the memory; no row is fully masked.
    assert (a.logits - o.logits).abs().max().item() <= 1e-5


@pytest.mark.parametrize("heads", [True, False], ids=["lm-head", "base"])
def test_to_hf_loads_in_transformers(heads: bool, tmp_path: Path) -> None:
    torch.manual_seed(0)
    ours = (XLNetLMHeadModel if heads else XLNetModel)(tiny(mem_len=6)).eval()
    with torch.no_grad():
        for p in ours.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    ours.to_hf(tmp_path)
    arch = json.loads((tmp_path / "config.json").read_text())["architectures"][0]
    hf = getattr(transformers, arch).from_pretrained(tmp_path).eval()
    b = _batch()
    perm, target = _two_stream()
    with torch.no_grad():
        a = hf(**b, perm_mask=perm, target_mapping=target)
        o = ours(**b, perm_mask=perm, target_mapping=target)
    got = o.logits if heads else o.last_hidden_state
    want = a.logits if heads else a.last_hidden_state
    assert (want - got).abs().max().item() <= 1e-5
