"""BigBird at long sequence lengths: our ``models.BigBirdModel`` vs transformers' ``BigBirdModel``.

Two parts.

**Model** (``--lengths 4096 8192``): both models with the same config -- BigBird-base width (hidden 768,
12 heads, FFN 3072, ``block_sparse``, b = 64, R = 3, vocab 50,358) and ``--layers`` layers -- run an
*eval forward* (``--mode eval``, the default, under ``torch.no_grad``) or a *training step* (``--mode
train``: forward, ``mean(h**2)``, backward) on one random sequence of T tokens. In eval mode ours uses
``random_plan="zeros"``, which is what transformers computes in eval mode, so both do the same work
(the outputs are checked equal first, at T = 1024 on converted weights); in train mode ours uses its
seeded uniform plan and transformers its per-call random plan.

Every configuration runs in a *fresh subprocess*, so its peak resident memory is its own: the parent
reads ``ru_maxrss`` from ``os.wait4`` for that child. A *baseline* child imports torch and builds the
same model and input without running it; ``net = raw - baseline`` is what the forward (or step) itself
adds. The children alternate ours / transformers ``--runs`` times; each child times ``--repeats``
calls after one untimed warm-up and reports the median; the figure is the median over children.

**Attention scaling** (``--scaling``): attention alone, (B, nh, T, hs) = (1, 12, T, 64), eval forward,
for T = 512 .. 8192: dense attention spelled out (``impl="plain"``: the T x T scores and weights
exist), ``torch.nn.functional.scaled_dot_product_attention`` (``impl="sdpa"``) and our
``BlockSparseAttention`` (b = 64, R = 3). Time and net peak RSS per configuration, each in its own
subprocess again; plotted to ``benchmarks/attention_scaling.png``.

Usage::

    python benchmarks/bench_models_bigbird.py                       # model part, eval, 4096 and 8192
    python benchmarks/bench_models_bigbird.py --mode train --lengths 4096
    python benchmarks/bench_models_bigbird.py --scaling --no-model  # the plot only
    python benchmarks/bench_models_bigbird.py --device cuda         # skipped without a GPU

On CUDA the memory figure is ``torch.cuda.max_memory_allocated`` instead of RSS, and all the
configurations of a part run one after another in a single child (peak statistics reset and memory freed
between them): a fresh process per configuration would only add CUDA start-up time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PLOT = ROOT / "benchmarks" / "attention_scaling.png"
MIB = 1024 * 1024


def load() -> str:
    """The 1/5/15-minute load averages as text."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# ==== Children: each runs one configuration and prints one JSON line ====


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def child_model(spec: dict[str, Any]) -> dict[str, Any]:
    """Build one model (ours or transformers'), optionally run it, and time the runs."""
    import torch

    if spec["threads"]:
        torch.set_num_threads(spec["threads"])
    device, T, mode = spec["device"], spec["seq_len"], spec["mode"]
    torch.manual_seed(0)
    width = {"hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 3072}
    positions = max(4096, T)
    if spec["impl"] == "hf":
        from transformers import BigBirdConfig, BigBirdModel

        model = BigBirdModel(BigBirdConfig(num_hidden_layers=spec["layers"], max_position_embeddings=positions,
                                           attention_type="block_sparse", block_size=64, num_random_blocks=3,
                                           **width))
    else:
        sys.path.insert(0, str(ROOT))
        import models

        model = models.BigBirdModel(models.BigBirdConfig(
            hidden_size=768, num_heads=12, intermediate_size=3072, num_layers=spec["layers"],
            max_position_embeddings=positions, block_size=64, num_random_blocks=3,
            random_plan="zeros" if mode == "eval" else "uniform",
        ))
    model = model.to(device).train(mode == "train")
    ids = torch.randint(1000, 30000, (1, T), device=device)

    def call() -> None:
        if spec["impl"] == "hf":
            h = model(input_ids=ids).last_hidden_state
        else:
            h = model(ids).last_hidden_state
        if mode == "train":
            h.pow(2).mean().backward()
            model.zero_grad(set_to_none=True)

    times: list[float] = []
    cpu: list[float] = []
    if not spec["baseline"]:
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats()
        with torch.set_grad_enabled(mode == "train"):
            for i in range(1 + spec["repeats"]):
                _sync(device)
                c0, t0 = time.process_time(), time.perf_counter()
                call()
                _sync(device)
                if i:  # the first call is a warm-up
                    times.append(time.perf_counter() - t0)
                    cpu.append(time.process_time() - c0)
    out: dict[str, Any] = {"times": times, "cpu_times": cpu}
    if device.startswith("cuda"):
        out["cuda_peak_bytes"] = torch.cuda.max_memory_allocated()
    return out


def child_attention(spec: dict[str, Any]) -> dict[str, Any]:
    """Attention alone on (1, 12, T, 64): dense plain, SDPA, or block-sparse."""
    import torch

    sys.path.insert(0, str(ROOT))
    from models.attention import BlockSparseAttention, scaled_dot_product_attention

    if spec["threads"]:
        torch.set_num_threads(spec["threads"])
    device, T = spec["device"], spec["seq_len"]
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 12, T, 64, generator=g).to(device) for _ in range(3))
    sparse = BlockSparseAttention(12, block_size=64, num_random_blocks=3).eval()
    impl = spec["impl"]

    def call() -> None:
        if impl == "block_sparse":
            sparse(q, k, v)
        else:
            scaled_dot_product_attention(q, k, v, impl=impl)

    times: list[float] = []
    cpu: list[float] = []
    if not spec["baseline"]:
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats()
        with torch.no_grad():
            for i in range(1 + spec["repeats"]):
                _sync(device)
                c0, t0 = time.process_time(), time.perf_counter()
                call()
                _sync(device)
                if i:
                    times.append(time.perf_counter() - t0)
                    cpu.append(time.process_time() - c0)
    out: dict[str, Any] = {"times": times, "cpu_times": cpu}
    if device.startswith("cuda"):
        out["cuda_peak_bytes"] = torch.cuda.max_memory_allocated()
    return out


def child_batch(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Several configurations in this one process (on CUDA, where peak memory is per-allocation and
    resettable, so a fresh process per configuration only costs start-up time)."""
    import gc

    import torch

    results = []
    for kind, item in spec["items"]:
        gc.collect()
        if item["device"].startswith("cuda"):
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        results.append({"model": child_model, "attention": child_attention}[kind](item))
    return results


def run_children(kind: str, specs: list[dict[str, Any]], device: str) -> list[dict[str, Any]]:
    """Run configurations: each in a fresh child on the CPU (its own peak RSS); on CUDA all in one child."""
    if not device.startswith("cuda"):
        return [run_child(kind, spec) for spec in specs]
    return run_child("batch", {"items": [[kind, spec] for spec in specs]})["results"]


def run_child(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Run one child; return its JSON plus ``maxrss_bytes`` (this child's own peak RSS) and wall time."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", kind, json.dumps(spec)]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, rusage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise RuntimeError(f"child {kind} {spec} failed ({proc.returncode}):\n{stderr[-3000:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    result["maxrss_bytes"] = rusage.ru_maxrss * 1024  # Linux reports KiB
    result["wall_s"] = time.perf_counter() - t0
    return result


def peak(result: dict[str, Any], device: str) -> int:
    """The memory figure of one child: CUDA peak allocated on a GPU, else peak RSS."""
    return result["cuda_peak_bytes"] if device.startswith("cuda") else result["maxrss_bytes"]


# ==== Parent ====


def child_check(spec: dict[str, Any]) -> dict[str, Any]:
    """Versions, and max |ours - transformers| of the last hidden state on converted weights (eval)."""
    import torch
    import transformers

    info = {"torch": torch.__version__, "transformers": transformers.__version__}
    if spec.get("layers"):
        info["maxdiff"] = check_equal(spec["layers"])
    return info


def check_equal(layers: int, seq_len: int = 1024) -> float:
    """Max |ours - transformers| of the last hidden state on converted weights, eval mode."""
    import torch
    from transformers import BigBirdConfig, BigBirdModel

    sys.path.insert(0, str(ROOT))
    import models

    torch.manual_seed(0)
    hf = BigBirdModel(BigBirdConfig(num_hidden_layers=layers, attention_type="block_sparse",
                                    block_size=64, num_random_blocks=3)).eval()
    with tempfile.TemporaryDirectory() as d:
        hf.save_pretrained(d)
        ours = models.from_hf(d).eval()
    ids = torch.randint(1000, 30000, (1, seq_len))
    with torch.no_grad():
        a = ours(ids).last_hidden_state
        b = hf(input_ids=ids).last_hidden_state
    return float((a - b).abs().max())


def bench_model(args: argparse.Namespace) -> dict[str, Any]:
    """Ours vs transformers at each length: median time, raw and net peak memory."""
    results: dict[str, Any] = {}
    for T in args.lengths:
        base = {"device": args.device, "seq_len": T, "layers": args.layers, "mode": args.mode,
                "repeats": args.repeats, "threads": args.threads}
        row: dict[str, Any] = {"load_before": load()}
        order = [("ours", True), ("hf", True)]
        for r in range(args.runs):
            order += [(impl, False) for impl in (("ours", "hf") if r % 2 == 0 else ("hf", "ours"))]
        done = run_children("model", [{**base, "impl": impl, "baseline": bl} for impl, bl in order], args.device)
        runs: dict[str, list[dict[str, Any]]] = {"ours": [], "hf": []}
        for (impl, is_baseline), res in zip(order, done):
            if is_baseline:
                row[f"{impl}_baseline"] = peak(res, args.device)
                continue
            runs[impl].append(res)
            print(f"  T={T} {impl}: {statistics.median(res['times']):.4f} s "
                  f"({statistics.median(res['cpu_times']):.4f} CPU-s), "
                  f"peak {peak(res, args.device) / MIB:,.0f} MiB", flush=True)
        for impl, rs in runs.items():
            row[f"{impl}_time"] = statistics.median(statistics.median(x["times"]) for x in rs)
            row[f"{impl}_cpu"] = statistics.median(statistics.median(x["cpu_times"]) for x in rs)
            row[f"{impl}_raw"] = max(peak(x, args.device) for x in rs)
            row[f"{impl}_net"] = row[f"{impl}_raw"] - row[f"{impl}_baseline"]
        row["load_after"] = load()
        results[str(T)] = row
    return results


def bench_scaling(args: argparse.Namespace) -> dict[str, Any]:
    """Attention-only time and net peak memory for dense, SDPA and block-sparse."""
    results: dict[str, Any] = {"load_before": load()}
    order = [(T, impl) for T in args.scaling_lengths for impl in ("baseline", "plain", "sdpa", "block_sparse")]
    specs = [{"device": args.device, "seq_len": T, "repeats": args.repeats, "threads": args.threads,
              "impl": "sdpa" if impl == "baseline" else impl, "baseline": impl == "baseline"} for T, impl in order]
    baseline = 0
    for (T, impl), res in zip(order, run_children("attention", specs, args.device)):
        raw = peak(res, args.device)
        if impl == "baseline":
            baseline = raw
            continue
        results[f"{impl}/{T}"] = {"time": statistics.median(res["times"]), "cpu": statistics.median(res["cpu_times"]),
                                  "raw": raw, "net": raw - baseline, "baseline": baseline}
        print(f"  attention T={T} {impl}: {results[f'{impl}/{T}']['time'] * 1e3:.2f} ms, "
              f"net {(raw - baseline) / MIB:,.0f} MiB", flush=True)
    results["load_after"] = load()
    return results


def plot_title(device: str, torch_version: str, threads: int, mem: str) -> str:
    """The plot's caption: what ran, where, and how memory was measured."""
    where = f"{threads} torch thread(s)" if threads else "torch's default threads"
    return (f"attention (1, 12, T, 64), fp32, eval, {device}, torch {torch_version}, {where} on "
            f"{os.cpu_count()} CPU cores; memory = {mem} minus baseline")


def plot(scaling: dict[str, Any], lengths: list[int], path: Path, title: str) -> None:
    """Two log-log panels: attention CPU time and net peak memory against sequence length.

    CPU time rather than wall time: on a shared machine it measures the work, not the neighbours.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    labels = {"plain": "dense (plain: T x T scores)", "sdpa": "dense (PyTorch SDPA, fused)",
              "block_sparse": "block-sparse (ours, b=64, R=3)"}
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4.5))
    for impl, style in (("plain", "o-"), ("sdpa", "s-"), ("block_sparse", "^-")):
        ax_t.plot(lengths, [scaling[f"{impl}/{T}"]["cpu"] * 1e3 for T in lengths], style, label=labels[impl])
        ax_m.plot(lengths, [max(scaling[f"{impl}/{T}"]["net"], MIB) / MIB for T in lengths], style,
                  label=labels[impl])
    for ax, ylabel in ((ax_t, "CPU time per call (ms)"), (ax_m, "net peak memory (MiB)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xticks(lengths)
        ax.set_xticklabels([str(T) for T in lengths])
        ax.set_xlabel("sequence length T")
        ax.set_ylabel(ylabel)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    ax_t.set_title("attention time (eval forward)")
    ax_m.set_title("peak memory above baseline")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments; run the model comparison and/or the attention scaling."""
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--child"]:
        kind, spec = argv[1], json.loads(argv[2])
        if kind == "batch":
            print(json.dumps({"results": child_batch(spec)}))
            return 0
        child = {"model": child_model, "attention": child_attention, "check": child_check}[kind]
        print(json.dumps(child(spec)))
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lengths", type=int, nargs="+", default=[4096, 8192])
    p.add_argument("--layers", type=int, default=4, help="encoder layers of both models (base has 12)")
    p.add_argument("--mode", choices=["eval", "train"], default="eval")
    p.add_argument("--runs", type=int, default=2, help="children per (model, length), alternating")
    p.add_argument("--repeats", type=int, default=2, help="timed calls per child after one warm-up")
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads in children (0: default)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--model", action=argparse.BooleanOptionalAction, default=True, help="run the model part")
    p.add_argument("--scaling", action=argparse.BooleanOptionalAction, default=False,
                   help="run the attention scaling part and write the plot")
    p.add_argument("--scaling-lengths", type=int, nargs="+", default=[512, 1024, 2048, 4096, 8192])
    p.add_argument("--plot", type=Path, default=PLOT)
    p.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = p.parse_args(argv)

    # The parent never imports torch: a forked child's ru_maxrss starts from the parent's RSS, so a
    # heavy parent would inflate every child's figure. Everything torch happens in children.
    if args.device.startswith("cuda"):
        probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                               capture_output=True, text=True, check=True)
        if probe.stdout.strip() != "True":
            print(f"--device {args.device}: no CUDA device on this machine; skipped.")
            return 0
    info = run_child("check", {"layers": 2 if args.model else 0})
    mem = "CUDA max_memory_allocated" if args.device.startswith("cuda") else "peak RSS of a fresh subprocess"
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, torch {info['torch']}, "
          f"transformers {info['transformers']}; device {args.device}; memory = {mem}")
    out: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "versions": info}
    if args.model:
        diff = info["maxdiff"]
        out["check_maxdiff"] = diff
        print(f"eval check at T=1024, 2 layers, converted weights: max |ours - transformers| = {diff:.2e}")
        print(f"model: BigBird-base width, {args.layers} layers, {args.mode} "
              f"{'forward' if args.mode == 'eval' else 'step (fwd + bwd)'}, batch 1")
        res = bench_model(args)
        out["model"] = res
        print("\n| T | ours wall (CPU) s | transformers wall (CPU) s | speed-up wall (CPU) | "
              "ours peak raw / net (MiB) | transformers peak raw / net (MiB) | memory ratio raw / net | "
              "load before -> after |")
        print("|---:|---:|---:|---:|---:|---:|---:|---|")
        for T, r in res.items():
            digits = 4 if args.device.startswith("cuda") else 2  # GPU calls take milliseconds
            print(f"| {T} | {r['ours_time']:.{digits}f} ({r['ours_cpu']:.{digits}f}) | "
                  f"{r['hf_time']:.{digits}f} ({r['hf_cpu']:.{digits}f}) | "
                  f"{r['hf_time'] / r['ours_time']:.2f}x ({r['hf_cpu'] / r['ours_cpu']:.2f}x) | "
                  f"{r['ours_raw'] / MIB:,.0f} / {r['ours_net'] / MIB:,.0f} | "
                  f"{r['hf_raw'] / MIB:,.0f} / {r['hf_net'] / MIB:,.0f} | "
                  f"{r['hf_raw'] / r['ours_raw']:.2f}x / {r['hf_net'] / max(r['ours_net'], 1):.2f}x | "
                  f"{r['load_before']} -> {r['load_after']} |")
    if args.scaling:
        res = bench_scaling(args)
        out["scaling"] = res
        lengths = args.scaling_lengths
        print("\n| T | " + " | ".join(f"{i}: wall ms (CPU ms) / net MiB"
                                      for i in ("dense plain", "SDPA", "block-sparse")) + " |")
        print("|---:|---:|---:|---:|")
        for T in lengths:
            cells = [f"{res[f'{i}/{T}']['time'] * 1e3:,.1f} ({res[f'{i}/{T}']['cpu'] * 1e3:,.1f}) / "
                     f"{res[f'{i}/{T}']['net'] / MIB:,.0f}" for i in ("plain", "sdpa", "block_sparse")]
            print(f"| {T} | " + " | ".join(cells) + " |")
        print(f"load {res['load_before']} -> {res['load_after']}")
        plot(res, lengths, args.plot, plot_title(args.device, info["torch"], args.threads, mem))
        print(f"plot: {args.plot}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
