"""Where BigBird's block-sparse attention operation spends forward and backward time, op by op.

The operation of ``bench_bigbird_op.py`` (q, k, v (1, 12, T, 64) with gradients, b = 64, R = 3,
the all-zero random plan, eval mode): ``--impl own`` is our autograd function with its
hand-written backward (``BlockSparseAttention.OWN_BACKWARD``), ``--impl sdpa`` the earlier path
(the fused kernel per (head, query block) and its autograd backward), ``--impl hf`` transformers'
``bigbird_block_sparse_attention``. It times forward and backward separately (median of
``--repeats`` after a warm-up), then profiles them with ``torch.profiler`` (``record_shapes``) and
prints the ops with the most self CPU time in each pass.

Usage::

    python benchmarks/profile_bigbird_op.py --seq-len 4096 --threads 1
    python benchmarks/profile_bigbird_op.py --seq-len 4096 --threads 2 --impl sdpa --rows 30
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.attention import BlockSparseAttention  # noqa: E402

HEADS, HS, BLOCK, RANDOM = 12, 64, 64, 3


def op(impl: str, T: int) -> tuple[Callable[[], torch.Tensor], list[torch.Tensor], torch.Tensor]:
    """The operation as a call returning (1, T, 768), its inputs, and the output cotangent."""
    g = torch.Generator().manual_seed(1)
    qkv = [torch.randn(1, HEADS, T, HS, generator=g).requires_grad_(True) for _ in range(3)]
    cotangent = torch.randn(1, T, HEADS * HS, generator=g)
    if impl == "hf":
        from transformers import BigBirdConfig
        from transformers.models.big_bird.modeling_big_bird import BigBirdBlockSparseAttention, BigBirdModel

        cfg = BigBirdConfig(hidden_size=HEADS * HS, num_attention_heads=HEADS, attention_type="block_sparse",
                            block_size=BLOCK, num_random_blocks=RANDOM, max_position_embeddings=max(4096, T))
        module = BigBirdBlockSparseAttention(cfg, seed=0).eval()
        blocked, band, from_mask, to_mask = BigBirdModel.create_masks_for_block_sparse_attn(torch.ones(1, T), BLOCK)

        def call() -> torch.Tensor:
            out, _ = module.bigbird_block_sparse_attention(
                *qkv, band, from_mask, to_mask, blocked, blocked, HEADS, RANDOM, HS, BLOCK, BLOCK, 1, T, T,
                seed=0, plan_from_length=None, plan_num_rand_blocks=None)
            return out.reshape(1, T, HEADS * HS)
    else:
        attn = BlockSparseAttention(HEADS, BLOCK, RANDOM, random_plan="zeros").eval()
        attn.OWN_BACKWARD = impl == "own"

        def call() -> torch.Tensor:
            return attn(*qkv).transpose(1, 2).reshape(1, T, HEADS * HS)  # (B, nh, T, hs) -> (B, T, C)

    return call, qkv, cotangent


def passes(call: Callable[[], torch.Tensor], qkv: list[torch.Tensor], cotangent: torch.Tensor) -> tuple[float, float]:
    """Seconds of one forward (to the scalar loss) and one backward."""
    for t in qkv:
        t.grad = None
    t0 = time.perf_counter()
    loss = (call() * cotangent).sum()
    t1 = time.perf_counter()
    loss.backward()
    return t1 - t0, time.perf_counter() - t1


def table(prof: Any, rows: int) -> str:
    """The ``rows`` ops with the most self CPU time, grouped by input shape."""
    return prof.key_averages(group_by_input_shape=True).table(sort_by="self_cpu_time_total", row_limit=rows,
                                                              max_name_column_width=40,
                                                              max_shapes_column_width=70)


def main(argv: list[str] | None = None) -> int:
    """Time, then profile forward and backward separately."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seq-len", type=int, default=4096)
    p.add_argument("--impl", choices=["own", "sdpa", "hf"], default="own")
    p.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: default)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--rows", type=int, default=20)
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    from torch.profiler import ProfilerActivity, profile

    call, qkv, cotangent = op(args.impl, args.seq_len)
    passes(call, qkv, cotangent)  # warm-up
    times = [passes(call, qkv, cotangent) for _ in range(args.repeats)]
    fwd, bwd = statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{args.impl}, T={args.seq_len}, {torch.get_num_threads()} threads: forward {fwd * 1e3:.1f} ms, "
          f"backward {bwd * 1e3:.1f} ms, total {(fwd + bwd) * 1e3:.1f} ms (load {load})", flush=True)
    for t in qkv:
        t.grad = None
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof_fwd:
        loss = (call() * cotangent).sum()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof_bwd:
        loss.backward()
    print("\n== forward\n" + table(prof_fwd, args.rows))
    print("\n== backward\n" + table(prof_bwd, args.rows), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
