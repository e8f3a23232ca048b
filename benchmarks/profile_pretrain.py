"""Where one optimizer step of ``subword pretrain`` spends its time, phase by phase and op by op.

For one size (the ``bench_pretrain.py`` configs: BERT tiny 64 x 2, mini 256 x 4, base; MLM,
dynamic masking, sparse prediction, dropout 0.1, batch 32 x 128, a 30k WordPiece vocabulary on the
built-in corpus) three loops run on the same job, after ``--warmup`` untimed steps each:

* ``loop``: the real loop, :meth:`models.pretrain._Job.train_step` (what ``subword pretrain`` runs);
* ``phases``: the same work spelled out with a clock between phases -- batch building (order,
  packing, masking, counts), forward + loss, backward, gradient clipping, the AdamW step;
* ``bare``: forward + loss (the loop's own call) + backward + AdamW only, on batches built
  beforehand (no clipping, no logging): what the loop would cost with a free pipeline.

Then ``torch.profiler`` records ``--profile-steps`` real steps and prints the ops with the most self
CPU time. Median seconds per step are reported (the machine may be shared).

Usage::

    python benchmarks/profile_pretrain.py --size tiny
    python benchmarks/profile_pretrain.py --size mini --steps 10 --no-profiler
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.bench_pretrain import SIZES  # noqa: E402
from models.pretrain import PretrainConfig, _Job  # noqa: E402


def tokenizer(work: Path, vocab: int) -> Path:
    """A WordPiece vocabulary on the built-in corpus, cached in ``work``."""
    import corpora
    from subword.trainers import WordPieceTrainer, train_wordpiece

    path = work / f"tok{vocab}.json"
    if not path.exists():
        lines = corpora.builtin_corpus().read_text(encoding="utf-8").splitlines(True)
        train_wordpiece(lines, WordPieceTrainer(vocab_size=vocab)).save(path)
    return path


def make_job(work: Path, size: str, vocab: int, batch: int, seq_len: int, steps: int) -> _Job:
    import corpora

    cfg = PretrainConfig(model="bert", preset=SIZES[size]["preset"], model_overrides=SIZES[size]["overrides"],
                         tokenizer=str(tokenizer(work, vocab)), inputs=[str(corpora.builtin_corpus())],
                         output_dir=tempfile.mkdtemp(prefix="profile_pretrain."), batch_size=batch, seq_len=seq_len,
                         objective="mlm", stats_every=0, cache_dir=str(work / "cache"), device="cpu",
                         masking="dynamic", steps=steps)
    return _Job(cfg.resolved(), progress=None, on_step=None)


#: The clock: wall time, or with ``--cpu-time`` this process's CPU time (all threads), which a
#: shared machine disturbs much less (use ``--threads 1`` then: waiting OpenMP threads burn CPU).
_clock = time.perf_counter


def median(xs: list[float]) -> float:
    """The median, or with ``--min`` the minimum (the least disturbed run on a busy machine)."""
    if not xs:
        return float("nan")
    return min(xs) if _USE_MIN else statistics.median(xs)


_USE_MIN = False


def time_loop(job: _Job, steps: int, warmup: int) -> list[float]:
    out = []
    for i in range(warmup + steps):
        t0 = _clock()
        job.train_step(job.order.take(job.global_batch))
        if i >= warmup:
            out.append(_clock() - t0)
    return out


def time_phases(job: _Job, steps: int, warmup: int) -> dict[str, list[float]]:
    """train_step's work with a clock between phases (grad_accum 1, one process)."""
    cfg = job.cfg
    phases: dict[str, list[float]] = {k: [] for k in ("batch", "forward+loss", "backward", "clip", "optimizer",
                                                      "total")}
    sparse = cfg.prediction == "sparse"
    for i in range(warmup + steps):
        t = [_clock()]
        picks = job.order.take(job.global_batch)
        batch = job._batch(job.train_set, picks, job.mask_cfg, cfg.seed)
        n_pred, _ = job._count(batch)
        int(batch["tokens"])
        t.append(_clock())
        job.model.train()
        job.optimizer.zero_grad(set_to_none=True)
        parts = job._losses(job.model, batch, n_pred, 0, sparse)
        total = sum(parts.values())
        float(total.detach())
        t.append(_clock())
        total.backward()
        t.append(_clock())
        float(torch.nn.utils.clip_grad_norm_(job.model.parameters(), cfg.clip))
        t.append(_clock())
        job.optimizer.step()
        t.append(_clock())
        if i >= warmup:
            for k, a, b in zip(list(phases)[:-1], t, t[1:]):
                phases[k].append(b - a)
            phases["total"].append(t[-1] - t[0])
    return phases


def time_bare(job: _Job, steps: int, warmup: int) -> list[float]:
    """Forward + backward + AdamW on prebuilt batches."""
    cfg = job.cfg
    batches = [job._batch(job.train_set, job.order.take(job.global_batch), job.mask_cfg, cfg.seed)
               for _ in range(warmup + steps)]
    model, opt = job.model, job.optimizer
    model.train()
    out = []
    for i, b in enumerate(batches):
        t0 = _clock()
        opt.zero_grad(set_to_none=True)
        n_pred, _ = job._count(b)
        sum(job._losses(model, b, n_pred, 0, cfg.prediction == "sparse").values()).backward()
        opt.step()
        if i >= warmup:
            out.append(_clock() - t0)
    return out


def profile(job: _Job, steps: int, rows: int) -> str:
    from torch.profiler import ProfilerActivity, profile as tprofile, record_function

    job.train_step(job.order.take(job.global_batch))
    with tprofile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            with record_function("train_step"):
                job.train_step(job.order.take(job.global_batch))
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", default="tiny", choices=sorted(SIZES))
    ap.add_argument("--vocab-size", type=int, default=30000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20, help="timed steps per loop")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--profile-steps", type=int, default=5)
    ap.add_argument("--rows", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-profiler", action="store_true")
    ap.add_argument("--cpu-time", action="store_true", help="time with the process's CPU time, not wall time")
    ap.add_argument("--min", action="store_true", help="report the fastest step, not the median")
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "profile_pretrain"))
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    global _clock, _USE_MIN
    _clock = time.process_time if a.cpu_time else time.perf_counter
    _USE_MIN = a.min
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    load0 = " ".join(f"{x:.2f}" for x in os.getloadavg())
    job = make_job(work, a.size, a.vocab_size, a.batch, a.seq_len, 10**6)
    tokens = a.batch * a.seq_len
    loop = time_loop(job, a.steps, a.warmup)
    phases = time_phases(job, a.steps, a.warmup)
    bare = time_bare(job, a.steps, a.warmup)
    print(f"# {a.size}: batch {a.batch} x {a.seq_len}, vocab {a.vocab_size}, {a.threads} threads, "
          f"torch {torch.__version__}, {'CPU' if a.cpu_time else 'wall'} time, {'min' if a.min else 'median'} of "
          f"{a.steps} steps, load before {load0}")
    print(f"loop   {median(loop) * 1e3:8.1f} ms/step  {tokens / median(loop):9,.0f} tok/s")
    print(f"bare   {median(bare) * 1e3:8.1f} ms/step  {tokens / median(bare):9,.0f} tok/s")
    tot = median(phases["total"])
    print(f"phases {tot * 1e3:8.1f} ms/step  {tokens / tot:9,.0f} tok/s")
    for k, v in phases.items():
        if k != "total":
            print(f"  {k:14s} {median(v) * 1e3:8.2f} ms  {100 * median(v) / tot:5.1f}%")
    if not a.no_profiler:
        print(profile(job, a.profile_steps, a.rows))
    print(f"# load after {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
