"""Where BigBird's eval forward spends its time: ours against transformers', op by op.

For one length (default 8192) both models (BigBird-base width, ``--layers`` layers, the same setup as
``bench_models_bigbird.py``) are timed per call after a warm-up, then profiled with
``torch.profiler``; the table lists the ops with the most self time on the device (CUDA) or the CPU.
Our attention is also timed with a single chunk of middle query blocks (``CHUNK_BYTES`` unbounded),
to see whether chunking costs anything there.

Usage::

    python benchmarks/profile_bigbird.py --device cuda --seq-len 8192
    python benchmarks/profile_bigbird.py --seq-len 4096 --layers 1 --repeats 2   # CPU
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import models  # noqa: E402
from models.attention import BlockSparseAttention  # noqa: E402


def build(impl: str, layers: int, seq_len: int, device: str) -> torch.nn.Module:
    """Our or transformers' BigBird at base width, random weights, eval mode."""
    torch.manual_seed(0)
    positions = max(4096, seq_len)
    if impl == "hf":
        from transformers import BigBirdConfig, BigBirdModel

        model = BigBirdModel(BigBirdConfig(num_hidden_layers=layers, max_position_embeddings=positions,
                                           attention_type="block_sparse", block_size=64, num_random_blocks=3))
    else:
        model = models.BigBirdModel(models.BigBirdConfig(
            hidden_size=768, num_heads=12, intermediate_size=3072, num_layers=layers,
            max_position_embeddings=positions, block_size=64, num_random_blocks=3, random_plan="zeros"))
    return model.to(device).eval()


def forward_call(model: torch.nn.Module, impl: str, ids: torch.Tensor) -> Callable[[], object]:
    """One eval forward of ``model`` on ``ids`` (transformers' models take keyword ids)."""

    def call() -> object:
        with torch.no_grad():
            return model(input_ids=ids) if impl == "hf" else model(ids)

    return call


def timed(call: Callable[[], object], repeats: int, device: str) -> float:
    """Median seconds per call after one warm-up."""
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    call()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def profile_table(call: Callable[[], object], device: str, rows: int) -> str:
    """The ``rows`` ops with the most self time on the device (or CPU) over three calls."""
    from torch.profiler import ProfilerActivity, profile

    cuda = device.startswith("cuda")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        for _ in range(3):
            call()
        if cuda:
            torch.cuda.synchronize()
    averages = prof.key_averages()
    for key in (("self_device_time_total", "self_cuda_time_total") if cuda else ("self_cpu_time_total",)):
        try:
            return averages.table(sort_by=key, row_limit=rows)
        except (AttributeError, KeyError, RuntimeError):
            continue
    return averages.table(row_limit=rows)


def main(argv: list[str] | None = None) -> int:
    """Time and profile both models at one length."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seq-len", type=int, default=8192)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--rows", type=int, default=25)
    p.add_argument("--device", default="cpu")
    args = p.parse_args(argv)
    ids = torch.randint(1000, 30000, (1, args.seq_len), device=args.device)
    for impl in ("ours", "hf"):
        call = forward_call(build(impl, args.layers, args.seq_len, args.device), impl, ids)
        t = timed(call, args.repeats, args.device)
        print(f"\n== {impl}: {t * 1e3:.2f} ms per eval forward (T={args.seq_len}, {args.layers} layers, "
              f"{args.device})", flush=True)
        if impl == "ours":
            default_chunk = BlockSparseAttention.CHUNK_BYTES
            BlockSparseAttention.CHUNK_BYTES = 1 << 40
            t1 = timed(call, args.repeats, args.device)
            BlockSparseAttention.CHUNK_BYTES = default_chunk
            print(f"   ours with one chunk of middle blocks: {t1 * 1e3:.2f} ms", flush=True)
        print(profile_table(call, args.device, args.rows), flush=True)
        del call  # frees the model before the next one is built
    return 0


if __name__ == "__main__":
    sys.exit(main())
