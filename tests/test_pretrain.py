"""models.pretrain: exact resume, Ctrl-C, DDP (gloo, 2 processes), the transformers export, dense equivalence."""

from __future__ import annotations

import json
import os
import signal
import socket
from pathlib import Path
from typing import Any

import pytest
import torch

from models.pretrain import PretrainConfig, find_checkpoints, iter_log, load_checkpoint, pretrain
from tests._pretrain_helpers import small_corpus, small_tokenizer, tiny_config


@pytest.fixture(scope="module")
def fx(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("pretrain")
    corpus = small_corpus(d, lines=1200)
    # A short corpus for the resume tests: about 6 steps of batch 4 per epoch, so runs cross epochs.
    short = d / "short.txt"
    short.write_text("".join(corpus.read_text(encoding="utf-8").splitlines(True)[:24]), encoding="utf-8")
    return {"corpus": corpus, "short": short, "tok": small_tokenizer(d, corpus), "cache": d / "cache"}


def _losses(run: Path) -> list[tuple[int, float]]:
    return [(r["step"], r["loss"]) for r in iter_log(run / "log.jsonl") if "loss" in r]


def _assert_same_final_state(a: Path, b: Path) -> None:
    sa, sb = load_checkpoint(find_checkpoints(a)[-1]), load_checkpoint(find_checkpoints(b)[-1])
    assert sa["step"] == sb["step"] and sa["tokens"] == sb["tokens"] and sa["data"] == sb["data"]
    for k, v in sa["model"].items():
        assert torch.equal(v, sb["model"][k]), k
    for pid, st in sa["optimizer"]["state"].items():
        for k, v in st.items():
            assert torch.equal(v, sb["optimizer"]["state"][pid][k]), (pid, k)
    assert torch.equal(sa["rng"]["torch"], sb["rng"]["torch"])


class _Killed(BaseException):
    """Stands in for SIGKILL: nothing catches it, nothing is saved."""


@pytest.mark.parametrize("options", [
    pytest.param(dict(masking="dynamic", whole_word=True), id="dynamic-whole-word"),
    pytest.param(dict(masking="static", objective="mlm+nsp"), id="static-nsp"),
])
def test_kill_mid_epoch_and_resume_is_bit_exact(fx: dict[str, Path], tmp_path: Path, options: dict[str, Any]) -> None:
    common = dict(inputs=[str(fx["short"])], steps=7, save_every=3, dropout=None, **options)  # dropout on: RNG matters
    straight = tiny_config(tmp_path / "a", fx, **common)
    pretrain(straight)
    killed = tiny_config(tmp_path / "b", fx, **common)

    def kill(step: int) -> None:
        if step == 5:
            raise _Killed

    with pytest.raises(_Killed):
        pretrain(killed, on_step=kill)
    assert [p.name for p in find_checkpoints(killed.output_dir)] == ["ckpt-00000003.pt"]
    state = load_checkpoint(find_checkpoints(killed.output_dir)[-1])
    assert state["data"]["offset"] > 0  # the checkpoint is mid-epoch
    pretrain(tiny_config(tmp_path / "b", fx, resume=True, **common))
    a, b = _losses(Path(straight.output_dir)), _losses(Path(killed.output_dir))
    assert [s for s, _ in b] == list(range(1, 8))  # the killed run's steps 4-5 were replaced, not repeated
    assert a == b
    assert load_checkpoint(find_checkpoints(straight.output_dir)[-1])["data"]["epoch"] >= 1
    _assert_same_final_state(Path(straight.output_dir), Path(killed.output_dir))


def test_ctrl_c_writes_a_checkpoint_and_resume_continues(fx: dict[str, Path], tmp_path: Path) -> None:
    common = dict(inputs=[str(fx["short"])], steps=5, dropout=None, masking="dynamic")
    straight = tiny_config(tmp_path / "a", fx, **common)
    pretrain(straight)

    def interrupt(step: int) -> None:
        if step == 3:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        pretrain(tiny_config(tmp_path / "b", fx, **common), on_step=interrupt)
    out = tmp_path / "b" / "run"
    assert [p.name for p in find_checkpoints(out)] == ["ckpt-00000003.pt"]
    pretrain(tiny_config(tmp_path / "b", fx, resume=True, **common))
    assert _losses(Path(straight.output_dir)) == _losses(out)
    _assert_same_final_state(Path(straight.output_dir), out)


def test_log_eval_plot_and_layer_stats(fx: dict[str, Path], tmp_path: Path) -> None:
    cfg = tiny_config(tmp_path, fx, objective="mlm+nsp", steps=4, eval_lines=20, eval_every=2, stats_every=2)
    result = pretrain(cfg)
    rows = list(iter_log(Path(cfg.output_dir) / "log.jsonl"))
    steps = [r for r in rows if "loss" in r]
    assert [r["step"] for r in steps] == [1, 2, 3, 4]
    for r in steps:
        assert set(r) >= {"step", "tokens", "loss", "mlm", "nsp", "lr", "grad_norm", "tokens_per_s"}
        assert r["loss"] == pytest.approx(r["mlm"] + r["nsp"], rel=1e-6)
    assert all(b["tokens"] > a["tokens"] for a, b in zip(steps, steps[1:]))
    evals = [r for r in rows if "eval_loss" in r]
    assert [r["step"] for r in evals] == [2, 4]
    stats = [r for r in rows if "layer_stats" in r]
    assert [r["step"] for r in stats] == [2, 4]
    layer = stats[0]["layer_stats"]["backbone.encoder.layers.0"]
    assert set(layer) == {"act_mean", "act_std", "act_max_abs", "grad_norm", "update_ratio"}
    assert (Path(cfg.output_dir) / "loss.png").stat().st_size > 1000
    assert result["eval_loss"] == evals[-1]["eval_loss"]


def test_eval_loss_uses_a_fixed_mask(fx: dict[str, Path], tmp_path: Path) -> None:
    # Learning rate ~0 after the first step: two evaluations of the same weights must agree exactly.
    cfg = tiny_config(tmp_path, fx, steps=3, lr=1e-12, warmup=0, eval_lines=20, eval_every=1, masking="dynamic")
    pretrain(cfg)
    evals = [r["eval_loss"] for r in iter_log(Path(cfg.output_dir) / "log.jsonl") if "eval_loss" in r]
    assert len(evals) == 3 and evals[1] == pytest.approx(evals[2], rel=1e-6)


def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(fx: dict[str, Path], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from models import pretrain as pt
    from models.pretrain import TrainingDiverged

    cfg = tiny_config(tmp_path, fx, steps=6, save_every=2)
    real = pt._Job._losses

    def poisoned(self: Any, *args: Any, **kwargs: Any) -> dict:
        out = real(self, *args, **kwargs)
        if self.state.step >= 3:
            out["mlm"] = out["mlm"] * float("nan")
        return out

    monkeypatch.setattr(pt._Job, "_losses", poisoned)
    with pytest.raises(TrainingDiverged, match="step 4.*ckpt-00000002"):
        pretrain(cfg)
    assert [p.name for p in find_checkpoints(cfg.output_dir)] == ["ckpt-00000002.pt"]


def test_hf_export_loads_in_transformers_with_the_same_logits(fx: dict[str, Path], tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    from models.pretrain import load_pretrained

    cfg = tiny_config(tmp_path, fx, steps=3)
    result = pretrain(cfg)
    hf_dir = Path(result["hf"])
    hf_model = transformers.AutoModelForMaskedLM.from_pretrained(hf_dir).eval()
    hf_tok = transformers.AutoTokenizer.from_pretrained(hf_dir)
    ours, tok, ids = load_pretrained(cfg.output_dir)
    text = "the value of the [MASK] is returned"
    enc = hf_tok(text, return_tensors="pt")
    assert enc["input_ids"][0].tolist() == tok.encode(text).ids
    with torch.no_grad():
        theirs = hf_model(**enc).logits
        mine = ours(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]).logits
    assert torch.allclose(theirs, mine, atol=1e-5)
    fill = transformers.pipeline("fill-mask", model=hf_model, tokenizer=hf_tok)
    top = fill(text)[0]["token"]
    pos = tok.encode(text).ids.index(ids["mask"])
    assert top == int(mine[0, pos].argmax())


def test_dense_prediction_matches_transformers_bert_for_masked_lm(fx: dict[str, Path], tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from benchmarks.bench_pretrain import hf_equivalence

    ours, theirs = hf_equivalence(tiny_config(tmp_path, fx, prediction="dense", steps=5))
    assert len(ours) == 5
    for a, b in zip(ours, theirs):
        assert abs(a - b) <= 1e-5 * abs(b), (ours, theirs)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ddp_worker(rank: int, world: int, port: int, cfg: PretrainConfig) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    torch.set_num_threads(1)
    try:
        pretrain(cfg)
    finally:
        torch.distributed.destroy_process_group()


def test_ddp_two_processes_match_one_process(fx: dict[str, Path], tmp_path: Path) -> None:
    import torch.multiprocessing as mp

    common = dict(steps=4, objective="mlm+nsp", device="cpu")
    one = tiny_config(tmp_path / "one", fx, batch_size=4, **common)
    pretrain(one)
    two = tiny_config(tmp_path / "two", fx, batch_size=2, **common)
    mp.spawn(_ddp_worker, args=(2, _free_port(), two), nprocs=2, join=True)
    a, b = _losses(Path(one.output_dir)), _losses(Path(two.output_dir))
    assert [s for s, _ in a] == [s for s, _ in b] == [1, 2, 3, 4]
    for (_, x), (_, y) in zip(a, b):
        assert abs(x - y) <= 1e-6 * abs(x), (a, b)
    rows_a = [r for r in iter_log(Path(one.output_dir) / "log.jsonl") if "loss" in r]
    rows_b = [r for r in iter_log(Path(two.output_dir) / "log.jsonl") if "loss" in r]
    assert [r["tokens"] for r in rows_a] == [r["tokens"] for r in rows_b]
    meta = json.loads((Path(two.output_dir) / "model" / "config.json").read_text())
    assert meta["step"] == 4


def test_every_model_trains_with_its_paper_objective(fx: dict[str, Path], tmp_path: Path) -> None:
    teacher = pretrain(tiny_config(tmp_path / "teacher", fx, steps=1))["hf"]
    expected = {"roberta": {"mlm"}, "albert": {"mlm", "sop"}, "bigbird": {"mlm"}, "xlnet": {"plm"},
                "distilbert": {"kd", "mlm", "cos"}}
    for model, names in expected.items():
        extra = {"teacher": teacher} if model == "distilbert" else {}
        cfg = tiny_config(tmp_path / model, fx, model=model, objective=None, steps=2, **extra)
        result = pretrain(cfg)
        rows = [r for r in iter_log(Path(cfg.output_dir) / "log.jsonl") if "loss" in r]
        assert len(rows) == 2 and all(names <= set(r) for r in rows), (model, rows[0])
        assert all(0 < r["loss"] < 50 for r in rows), (model, rows)
        assert result["hf"] is not None, (model, result.get("hf_note"))


def test_docstring_examples() -> None:
    import doctest

    from models import pretrain as module

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted >= 3


def test_gradient_accumulation_equals_one_big_batch(fx: dict[str, Path], tmp_path: Path) -> None:
    big = tiny_config(tmp_path / "big", fx, steps=3, batch_size=4, objective="mlm+nsp")
    acc = tiny_config(tmp_path / "acc", fx, steps=3, batch_size=2, grad_accum=2, objective="mlm+nsp")
    pretrain(big)
    pretrain(acc)
    for (s, x), (t, y) in zip(_losses(Path(big.output_dir)), _losses(Path(acc.output_dir)), strict=True):
        assert s == t and abs(x - y) <= 1e-6 * abs(x)


def test_exploding_and_vanishing_layers_are_named(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from models.pretrain import _Job

    job = _Job.__new__(_Job)
    job.dist, job.state = type("D", (), {"rank": 0})(), type("S", (), {"step": 7})()
    with caplog.at_level(logging.WARNING, logger="models.pretrain"):
        job._warn_extremes("backbone.encoder.layers.1", {"act_max_abs": 3e5, "act_std": 1.0, "grad_norm": 1.0})
        job._warn_extremes("mlm", {"grad_norm": 0.0})
        job._warn_extremes("backbone.encoder.layers.0", {"act_max_abs": 3.0, "act_std": 1.0, "grad_norm": 0.5})
    messages = [r.getMessage() for r in caplog.records]
    assert messages == ["step 7: activations of backbone.encoder.layers.1 explode (max |x| = 3e+05)",
                        "step 7: gradients of mlm vanish (norm = 0)"]
