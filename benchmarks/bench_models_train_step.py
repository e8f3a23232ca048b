"""Training-step throughput: our ``models.BertForPreTraining`` vs transformers' ``BertForPreTraining``.

One step is forward (MLM + NSP losses) + backward (+ an AdamW step with ``--optimizer``), on the same
weights (ours are loaded from the transformers model through ``models.from_hf``), the same batch
(random ids, two segments, 15% of positions labelled, NSP labels) and the same config, both in train
mode (dropout 0.1). Three contestants run interleaved, in a rotating order, ``--runs`` times each, after
``--warmup`` untimed steps each; the figure is the median step time, reported as tokens per second
(``batch * seq_len / median``):

* ``hf``: transformers' ``BertForPreTraining`` (its default attention, SDPA);
* ``ours-dense``: ours, MLM logits at every position (the same computation as ``hf``);
* ``ours``: ours with ``sparse_prediction=True``: the MLM head at labelled positions only and the last
  layer's FFN only at labelled positions and [CLS]. Same loss and gradients -- checked below.

Before timing, the script checks in eval mode (no dropout) that all three losses agree to 1e-5 and
reports the largest gradient difference; it exits with status 1 if the losses do not agree.

Usage::

    python benchmarks/bench_models_train_step.py                     # BERT-base, batch 4, seq 128, CPU
    python benchmarks/bench_models_train_step.py --runs 9 --optimizer
    python benchmarks/bench_models_train_step.py --device cuda --batch 32   # skipped without a GPU

The load average is printed before and after; the machine is shared, hence the interleaving, and the
CPU time (``time.process_time``, all threads of the process) reported beside the wall time: on a loaded
machine wall time mostly measures the other jobs, CPU time much less so (use ``--threads 1``, since
OpenMP threads that wait for a descheduled peer also burn CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import models

PRESETS: dict[str, dict[str, int]] = {
    "base": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072},
    "small": {"hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8, "intermediate_size": 2048},
    "tiny": {"hidden_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 512},
}


def load() -> str:
    """The 1/5/15-minute load averages as text."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def build(preset: str, device: torch.device) -> tuple[torch.nn.Module, torch.nn.Module]:
    """transformers' BertForPreTraining and ours with identical weights."""
    from transformers import BertConfig as HFConfig
    from transformers import BertForPreTraining as HFBert

    torch.manual_seed(0)
    hf = HFBert(HFConfig(**PRESETS[preset]))
    with tempfile.TemporaryDirectory() as d:
        hf.save_pretrained(d)
        ours = models.from_hf(d, heads=True)
    if not isinstance(ours, models.BertForPreTraining):
        raise TypeError(f"from_hf gave {type(ours).__name__}, expected BertForPreTraining")
    return hf.to(device), ours.to(device)


def make_batch(batch: int, seq_len: int, vocab: int, device: torch.device) -> dict[str, torch.Tensor]:
    """A pretraining batch: ids, two segments, a full attention mask, 15% MLM labels, NSP labels."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(1000, vocab, (batch, seq_len), generator=g)
    token_types = torch.zeros_like(ids)
    token_types[:, seq_len // 2 :] = 1
    labels = torch.full_like(ids, -100)
    chosen = torch.rand(batch, seq_len, generator=g) < 0.15
    chosen[:, 0] = False  # [CLS] is never a target
    labels[chosen] = ids[chosen]
    nsp = torch.randint(0, 2, (batch,), generator=g)
    out = {"ids": ids, "mask": torch.ones_like(ids), "types": token_types, "labels": labels, "nsp": nsp}
    return {k: v.to(device) for k, v in out.items()}


def losses(hf: torch.nn.Module, ours: torch.nn.Module, b: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The three contestants' losses (graphs attached)."""
    return {
        "hf": hf(input_ids=b["ids"], attention_mask=b["mask"], token_type_ids=b["types"],
                 labels=b["labels"], next_sentence_label=b["nsp"]).loss,
        "ours-dense": ours(b["ids"], b["mask"], b["types"], labels=b["labels"], sentence_label=b["nsp"]).loss,
        "ours": ours(b["ids"], b["mask"], b["types"], labels=b["labels"], sentence_label=b["nsp"],
                     sparse_prediction=True).loss,
    }


def check_equal(hf: torch.nn.Module, ours: torch.nn.Module, b: dict[str, torch.Tensor]) -> dict[str, float]:
    """Eval-mode (no dropout) loss and gradient differences of ours against transformers."""
    hf.eval()
    ours.eval()
    names = models.hf._name_map(ours, "bert.")  # ours -> transformers parameter names
    hf_params = dict(hf.named_parameters())
    ours_params = dict(ours.named_parameters())
    grads: dict[str, dict[str, torch.Tensor]] = {}
    values: dict[str, float] = {}
    for name in ("hf", "ours-dense", "ours"):
        hf.zero_grad(set_to_none=True)
        ours.zero_grad(set_to_none=True)
        loss = losses(hf, ours, b)[name]
        loss.backward()
        values[name] = loss.detach().item()
        if name == "hf":
            grads[name] = {o: hf_params[t].grad.clone() for o, t in names.items()
                           if t in hf_params and hf_params[t].grad is not None}
        else:
            grads[name] = {o: p.grad.clone() for o, p in ours_params.items() if p.grad is not None}
    hf.zero_grad(set_to_none=True)
    ours.zero_grad(set_to_none=True)
    report = {"loss_hf": values["hf"]}
    for name in ("ours-dense", "ours"):
        report[f"loss_diff_{name}"] = abs(values[name] - values["hf"])
        common = grads["hf"].keys() & grads[name].keys()
        report[f"grad_maxdiff_{name}"] = max(float((grads[name][k] - grads["hf"][k]).abs().max()) for k in common)
        report[f"grads_compared_{name}"] = len(common)
    hf.train()
    ours.train()
    return report


def step_fns(
    hf: torch.nn.Module, ours: torch.nn.Module, b: dict[str, torch.Tensor], optimizer: bool
) -> dict[str, Callable[[], None]]:
    """One training step per contestant (zero_grad, forward, backward[, AdamW step])."""
    opts: dict[str, torch.optim.Optimizer | None] = {"hf": None, "ours": None}
    if optimizer:
        # foreach=True on both: the same optimizer code path, so only the models differ.
        opts = {"hf": torch.optim.AdamW(hf.parameters(), lr=1e-5, foreach=True),
                "ours": torch.optim.AdamW(ours.parameters(), lr=1e-5, foreach=True)}

    def make(name: str) -> Callable[[], None]:
        model, opt = (hf, opts["hf"]) if name == "hf" else (ours, opts["ours"])

        def step() -> None:
            model.zero_grad(set_to_none=True)
            if name == "hf":
                loss = model(input_ids=b["ids"], attention_mask=b["mask"], token_type_ids=b["types"],
                             labels=b["labels"], next_sentence_label=b["nsp"]).loss
            else:
                loss = model(b["ids"], b["mask"], b["types"], labels=b["labels"], sentence_label=b["nsp"],
                             sparse_prediction=name == "ours").loss
            loss.backward()
            if opt is not None:
                opt.step()

        return step

    return {name: make(name) for name in ("hf", "ours-dense", "ours")}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print a table (and JSON with ``--json``)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", choices=sorted(PRESETS), default="base")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--runs", type=int, default=7, help="timed steps per contestant (median reported)")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps per contestant first")
    p.add_argument("--optimizer", action="store_true", help="include an AdamW step (both sides)")
    p.add_argument("--device", default="cpu", help="cpu or cuda; cuda is skipped when no GPU is present")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    p.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = p.parse_args(argv)

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"--device {args.device}: no CUDA device on this machine; skipped.")
        return 0
    device = torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    cuda = device.type == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(device)

    import transformers

    load_before = load()
    hf, ours = build(args.preset, device)
    b = make_batch(args.batch, args.seq_len, hf.config.vocab_size, device)
    tokens = args.batch * args.seq_len
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
          f"torch {torch.__version__} ({torch.get_num_threads()} threads), transformers {transformers.__version__}")
    print(f"config: BERT-{args.preset} {PRESETS[args.preset]}, batch {args.batch} x seq {args.seq_len} "
          f"= {tokens} tokens, {int(b['labels'].ne(-100).sum())} MLM targets, device {device}, "
          f"optimizer step: {'AdamW' if args.optimizer else 'no'}")
    print(f"load before: {load_before}")

    check = check_equal(hf, ours, b)
    print("eval-mode check vs transformers: loss {loss_hf:.6f}; |loss diff| ours-dense {loss_diff_ours-dense:.2e}, "
          "ours (sparse) {loss_diff_ours:.2e}; max |grad diff| ours-dense {grad_maxdiff_ours-dense:.2e}, "
          "ours (sparse) {grad_maxdiff_ours:.2e} over {grads_compared_ours} tensors".format(**check))
    ok = check["loss_diff_ours-dense"] <= 1e-5 and check["loss_diff_ours"] <= 1e-5

    steps = step_fns(hf, ours, b, args.optimizer)
    names = list(steps)
    for _ in range(args.warmup):
        for name in names:
            steps[name]()
    sync()
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for r in range(args.runs):
        order = names[r % len(names):] + names[: r % len(names)]  # rotate who goes first
        for name in order:
            sync()
            c0, t0 = time.process_time(), time.perf_counter()
            steps[name]()
            sync()
            times[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    load_after = load()

    # Wall time is what a user waits; CPU time (all threads of this process) is the work done and
    # is far less sensitive to other jobs on a shared machine, especially with --threads 1.
    med = {name: statistics.median(ts) for name, ts in times.items()}
    med_cpu = {name: statistics.median(ts) for name, ts in cpu.items()}
    print("\n| contestant | median wall step (s) | min..max (s) | tokens/s (wall) | vs hf (wall) | "
          "median CPU step (s) | tokens per CPU-s | vs hf (CPU) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in names:
        ts = times[name]
        print(f"| {name} | {med[name]:.3f} | {min(ts):.3f}..{max(ts):.3f} | {tokens / med[name]:,.0f} | "
              f"{med['hf'] / med[name]:.2f}x | {med_cpu[name]:.3f} | {tokens / med_cpu[name]:,.0f} | "
              f"{med_cpu['hf'] / med_cpu[name]:.2f}x |")
    print(f"\nload after: {load_after}")
    if args.json:
        args.json.write_text(json.dumps({
            "args": {k: str(v) for k, v in vars(args).items()}, "check": check, "times": times,
            "cpu_times": cpu, "median": med, "median_cpu": med_cpu, "tokens": tokens, "load_before": load_before, "load_after": load_after,
            "torch": torch.__version__, "transformers": transformers.__version__,
        }, indent=1))
    if not ok:
        print("ERROR: losses differ from transformers' by more than 1e-5", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
