"""BigBird's block-sparse attention *operation* alone: ours vs transformers', forward + backward.

transformers' ``BigBirdBlockSparseAttention.bigbird_block_sparse_attention`` (what its module
runs after the query/key/value projections) against :class:`models.attention.BlockSparseAttention`.
Both get the same q, k, v (1, 12, T, 64) with ``requires_grad`` (BigBird-base: 12 heads of 64),
b = 64, R = 3; one call is forward, ``sum(out * g)`` for a fixed random ``g`` of the output's
shape, and backward to q, k and v. The projections are left out on purpose: they are the same
fp32 GEMMs in both and would only dilute the ratio of the operations.

Both run in eval mode with gradients on: transformers' eval mode points every random block at
block 0, and ours does the same with ``random_plan="zeros"``, so both do exactly the same work
and their outputs and gradients are checked equal first (at ``--check-length``). (In training
mode transformers reseeds numpy per call and the two plans differ; the work is the same.)

This isolates the operation from the GEMMs that both models share (FFN, projections), which bound
any whole-model ratio (``bench_models_bigbird.py``). Each configuration runs in a fresh
subprocess: on the CPU its memory figure is that child's peak RSS minus a *baseline* child that
builds the same module and inputs without calling them; on CUDA it is
``torch.cuda.max_memory_allocated`` minus what was allocated before the call. Time is the median
of ``--repeats`` calls after one warm-up, and the figure the median over ``--runs`` children,
which alternate ours / transformers.

Usage::

    python benchmarks/bench_bigbird_op.py                          # 4096 and 8192, CPU
    python benchmarks/bench_bigbird_op.py --device cuda
    python benchmarks/bench_bigbird_op.py --quick --no-write       # a small proof that it runs
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
MIB = 1024 * 1024
START, END = "<!-- bench_bigbird_op:start -->", "<!-- bench_bigbird_op:end -->"
HIDDEN, HEADS, BLOCK, RANDOM = 768, 12, 64, 3


def load() -> str:
    """The 1/5/15-minute load averages as text."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# ==== Children ====


def build(spec: dict[str, Any]) -> tuple[Any, Any, Any, Any]:
    """The module of ``spec["impl"]``, its inputs q, k, v, the output cotangent, and the call."""
    import torch

    if spec["threads"]:
        torch.set_num_threads(spec["threads"])
    from transformers import BigBirdConfig
    from transformers.models.big_bird.modeling_big_bird import BigBirdBlockSparseAttention, BigBirdModel

    sys.path.insert(0, str(ROOT))
    from models.attention import BlockSparseAttention

    device, T = spec["device"], spec["seq_len"]
    torch.manual_seed(0)
    cfg = BigBirdConfig(hidden_size=HIDDEN, num_attention_heads=HEADS, attention_type="block_sparse",
                        block_size=BLOCK, num_random_blocks=RANDOM, max_position_embeddings=max(4096, T))
    g = torch.Generator().manual_seed(1)
    hs = HIDDEN // HEADS
    qkv = [torch.randn(1, HEADS, T, hs, generator=g).to(device).requires_grad_(True) for _ in range(3)]
    cotangent = torch.randn(1, T, HIDDEN, generator=g).to(device)
    mask = torch.ones(1, T, device=device)

    if spec["impl"] == "hf":
        module = BigBirdBlockSparseAttention(cfg, seed=0).to(device).eval()
        blocked, band, from_mask, to_mask = BigBirdModel.create_masks_for_block_sparse_attn(mask, BLOCK)

        def call() -> Any:
            # The operation itself, after the projections: (B, T, nh, hs) -> (B, T, C).
            out, _ = module.bigbird_block_sparse_attention(
                *qkv, band, from_mask, to_mask, blocked, blocked, HEADS, RANDOM, hs, BLOCK, BLOCK, 1, T, T,
                seed=0, plan_from_length=None, plan_num_rand_blocks=None)
            return out.reshape(1, T, HIDDEN)
    else:
        module = BlockSparseAttention(HEADS, BLOCK, RANDOM, random_plan="zeros").to(device).eval()

        def call() -> Any:
            return module(*qkv).transpose(1, 2).reshape(1, T, HIDDEN)  # (B, nh, T, hs) -> (B, T, C)

    return module, qkv, cotangent, call


def _sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def child_op(spec: dict[str, Any]) -> dict[str, Any]:
    """Time forward + backward of one implementation; report CUDA peak memory where there is one."""
    import torch

    module, qkv, cotangent, call = build(spec)
    device = spec["device"]
    times: list[float] = []
    cpu: list[float] = []
    out: dict[str, Any] = {}
    if spec["baseline"]:
        return {"times": [], "cpu_times": []}
    for i in range(1 + spec["repeats"]):
        for t in qkv:
            t.grad = None
        _sync(device)
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats()
            before = torch.cuda.memory_allocated()
        c0, t0 = time.process_time(), time.perf_counter()
        (call() * cotangent).sum().backward()
        _sync(device)
        if device.startswith("cuda"):
            out["cuda_net_bytes"] = max(out.get("cuda_net_bytes", 0), torch.cuda.max_memory_allocated() - before)
        if i:  # the first call is a warm-up
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
    out.update(times=times, cpu_times=cpu)
    return out


def child_check(spec: dict[str, Any]) -> dict[str, Any]:
    """Versions, and max |ours - transformers| of the output and of every gradient, same inputs."""
    import torch
    import transformers

    results = {}
    for impl in ("ours", "hf"):
        module, qkv, cotangent, call = build({**spec, "impl": impl})
        out = call()
        (out * cotangent).sum().backward()
        results[impl] = (out.detach(), [t.grad.detach().clone() for t in qkv])
    (o1, g1), (o2, g2) = results["ours"], results["hf"]
    diffs = {"output": float((o1 - o2).abs().max())}
    for name, a, b in zip("qkv", g1, g2):
        diffs[f"grad_{name}"] = float((a - b).abs().max())
    return {"torch": torch.__version__, "transformers": transformers.__version__, "maxdiff": diffs,
            "scale": float(o2.abs().max())}


def run_child(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    """One fresh child; its JSON plus its own peak RSS (``os.wait4``) and wall time."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", kind, json.dumps(spec)]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, rusage = os.wait4(proc.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if code != 0:
        raise RuntimeError(f"child {kind} {spec} failed ({code}):\n{stderr[-3000:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    result["maxrss_bytes"] = rusage.ru_maxrss * 1024  # Linux reports KiB
    result["wall_s"] = time.perf_counter() - t0
    return result


# ==== Parent ====


def bench(args: argparse.Namespace) -> dict[str, Any]:
    """Per length: median time and net peak memory of each implementation, and the ratios."""
    results: dict[str, Any] = {}
    cuda = args.device.startswith("cuda")
    for T in args.lengths:
        base = {"device": args.device, "seq_len": T, "repeats": args.repeats, "threads": args.threads}
        row: dict[str, Any] = {"load_before": load()}
        baseline = {impl: run_child("op", {**base, "impl": impl, "baseline": True})["maxrss_bytes"]
                    for impl in ("ours", "hf")}
        runs: dict[str, list[dict[str, Any]]] = {"ours": [], "hf": []}
        for r in range(args.runs):
            for impl in (("ours", "hf") if r % 2 == 0 else ("hf", "ours")):
                res = run_child("op", {**base, "impl": impl, "baseline": False})
                res["net"] = res["cuda_net_bytes"] if cuda else res["maxrss_bytes"] - baseline[impl]
                runs[impl].append(res)
                print(f"  T={T} {impl}: {statistics.median(res['times']):.4f} s, net peak {res['net'] / MIB:,.0f} MiB"
                      f" (load {load()})", flush=True)
        for impl, rs in runs.items():
            row[f"{impl}_time"] = statistics.median(statistics.median(x["times"]) for x in rs)
            row[f"{impl}_cpu"] = statistics.median(statistics.median(x["cpu_times"]) for x in rs)
            row[f"{impl}_net"] = max(x["net"] for x in rs)
        row["speedup"] = row["hf_time"] / row["ours_time"]
        row["memory_ratio"] = row["hf_net"] / max(row["ours_net"], 1)
        row["load_after"] = load()
        results[str(T)] = row
    return results


def section(args: argparse.Namespace, info: dict[str, Any], results: dict[str, Any], command: str) -> str:
    """The RESULTS.md section: the table, the check, the conditions."""
    mem = "CUDA max_memory_allocated above the allocation before the call" if args.device.startswith("cuda") \
        else "peak RSS of a fresh subprocess minus a baseline child (same module and inputs, not called)"
    worst = max(info["maxdiff"].values())
    lines = [
        START,
        "## BigBird block-sparse attention operation, forward + backward (`bench_bigbird_op.py`)",
        "",
        f"Ours (`models.attention.BlockSparseAttention`) vs transformers {info['transformers']} "
        f"`BigBirdBlockSparseAttention.bigbird_block_sparse_attention`, the operation alone on the same q, k, v "
        f"(1, 12, T, 64), "
        f"b = {BLOCK}, R = {RANDOM}, fp32, eval mode with gradients (both use the all-zero random plan, so "
        f"the work is identical). One call = forward, `sum(out * g)`, backward to q, k, v. Output and gradients "
        f"agree to {worst:.1e} (max abs, T = {args.check_length}; output scale {info['scale']:.2f}).",
        "",
        "| T | ours (s) | transformers (s) | speed-up | CPU-s ours / transformers (ratio) | ours net peak (MiB) "
        "| transformers net peak (MiB) | memory ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for T, row in results.items():
        cpu_ratio = row["hf_cpu"] / max(row["ours_cpu"], 1e-9)
        lines.append(f"| {T} | {row['ours_time']:.3f} | {row['hf_time']:.3f} | **{row['speedup']:.2f}x** | "
                     f"{row['ours_cpu']:.2f} / {row['hf_cpu']:.2f} ({cpu_ratio:.2f}x) | "
                     f"{row['ours_net'] / MIB:,.0f} | {row['hf_net'] / MIB:,.0f} | **{row['memory_ratio']:.2f}x** |")
    first, last = next(iter(results.values())), list(results.values())[-1]
    lines += [
        "",
        f"Device {args.device}; {platform.machine()}, {os.cpu_count()} CPUs, torch {info['torch']}"
        f"{f', {args.threads} torch threads' if args.threads else ''}; memory = {mem}; median of "
        f"{args.repeats} calls after a warm-up, median over {args.runs} children per implementation. "
        f"Load average before {first['load_before']}, after {last['load_after']} (CPU seconds are the "
        f"steadier figure on a busy machine).",
        "",
        f"Command: `{command}`",
        END,
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, check equality, benchmark, write the RESULTS.md section."""
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--child"]:
        kind, spec = argv[1], json.loads(argv[2])
        print(json.dumps({"op": child_op, "check": child_check}[kind](spec)))
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lengths", type=int, nargs="+", default=[4096, 8192])
    p.add_argument("--runs", type=int, default=2, help="children per (implementation, length), alternating")
    p.add_argument("--repeats", type=int, default=3, help="timed calls per child after one warm-up")
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads in children (0: default)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--check-length", type=int, default=1024)
    p.add_argument("--quick", action="store_true", help="small sizes, one run: proves the script works")
    p.add_argument("--write", action=argparse.BooleanOptionalAction, default=True,
                   help="write the section of benchmarks/RESULTS.md")
    p.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = p.parse_args(argv)
    if args.quick:
        args.lengths, args.runs, args.repeats, args.check_length = [1024, 2048], 1, 1, 1024
    # The parent never imports torch: a child's ru_maxrss would start from a heavy parent's RSS.
    if args.device.startswith("cuda"):
        probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                               capture_output=True, text=True, check=True)
        if probe.stdout.strip() != "True":
            print(f"--device {args.device}: no CUDA device on this machine; skipped.")
            return 0
    info = run_child("check", {"device": args.device, "seq_len": args.check_length, "threads": args.threads})
    worst = max(info["maxdiff"].values())
    print(f"check at T={args.check_length}: max |ours - transformers| over output and gradients = {worst:.2e}")
    if worst > 1e-3 * max(1.0, info["scale"]):
        print("ours and transformers disagree; not benchmarking", file=sys.stderr)
        return 1
    results = bench(args)
    for T, row in results.items():
        print(f"T={T}: speed-up {row['speedup']:.2f}x, memory ratio {row['memory_ratio']:.2f}x")
    command = "python benchmarks/bench_bigbird_op.py " + " ".join(argv)
    if args.json:
        args.json.write_text(json.dumps({"info": info, "results": results}, indent=2))
    if args.write:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from results_md import replace_section

        replace_section(section(args, info, results, command.strip()), START, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
