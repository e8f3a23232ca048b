"""Peak memory of a BigBird training step grows linearly in the sequence length.

Memory is counted exactly, not sampled: a dispatch mode sees every tensor an
operation creates, adds its storage's bytes to the live total when first seen,
and subtracts them when the storage is freed (a weakref finaliser). The peak
of that total over forward + backward is the step's peak tensor memory. It
does not depend on the machine's load, the allocator or other processes, so
the test is stable on 2 busy cores. (Wall-clock figures belong in
``benchmarks/bench_bigbird_op.py``.)
"""

from __future__ import annotations

import weakref
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from models import BertConfig, BertForPreTraining, BigBirdConfig, BigBirdForPreTraining

LENGTHS = (256, 512, 1024, 2048)


class PeakTensorMemory(TorchDispatchMode):
    """Live bytes of the CPU storages created inside the block, and their peak."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, int] = {}
        self.current = 0
        self.peak = 0

    def _free(self, key: int) -> None:
        self.current -= self.live.pop(key, 0)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.device.type == "cpu":
                storage = t.untyped_storage()
                key = id(storage)
                if key not in self.live:
                    self.live[key] = storage.nbytes()
                    self.current += storage.nbytes()
                    weakref.finalize(storage, self._free, key)
        self.peak = max(self.peak, self.current)
        return out


def step_peaks(model: torch.nn.Module) -> list[int]:
    """Peak tensor bytes of one forward + backward at each length."""
    peaks = []
    torch.manual_seed(0)
    for T in LENGTHS:
        ids = torch.randint(5, 100, (1, T))
        with PeakTensorMemory() as meter:
            out = model(ids, labels=ids, sparse_prediction=True)
            out.loss.backward()
        model.zero_grad(set_to_none=True)
        del out
        peaks.append(meter.peak)
    return peaks


def growth(peaks: list[int]) -> list[float]:
    """Ratios of consecutive peaks: 2 for memory linear in T (lengths double), 4 for quadratic."""
    return [b / a for a, b in zip(peaks, peaks[1:])]


def is_linear(peaks: list[int]) -> bool:
    """A line through the first two points predicts the others within 10% (never below them by more)."""
    slope = (peaks[1] - peaks[0]) / (LENGTHS[1] - LENGTHS[0])
    predicted = [peaks[0] + slope * (T - LENGTHS[0]) for T in LENGTHS]
    return all(p <= 1.10 * q for p, q in zip(peaks, predicted))


def tiny(cls: type, **kw: Any) -> Any:
    cfg = cls.preset("tiny", vocab_size=100, num_layers=1, hidden_size=32, intermediate_size=64,
                     max_position_embeddings=max(LENGTHS), hidden_dropout=0.0, attention_dropout=0.0, **kw)
    return cfg


def test_bigbird_training_step_memory_is_linear_in_length() -> None:
    model = BigBirdForPreTraining(tiny(BigBirdConfig)).train()
    assert all(model.backbone.encoder.layers[0].attn.sparse.is_sparse(T) for T in LENGTHS)
    peaks = step_peaks(model)
    assert is_linear(peaks), (peaks, growth(peaks))
    assert max(growth(peaks)) < 2.2


def test_the_check_catches_quadratic_attention_memory() -> None:
    """Dense attention spelled out (T x T scores and weights kept for backward) fails the same check."""
    model = BertForPreTraining(tiny(BertConfig, attn_impl="plain")).train()
    peaks = step_peaks(model)
    assert not is_linear(peaks), (peaks, growth(peaks))
    assert growth(peaks)[-1] > 3.0
