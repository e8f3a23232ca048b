"""The `>>>` examples in models/ docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

pytest.importorskip("torch")
pytest.importorskip("safetensors")

MODULES = ["models", "models.attention", "models.config", "models.encoder", "models.bert", "models.roberta",
           "models.albert", "models.distilbert", "models.bigbird", "models.xlnet", "models.hf", "models.registry",
           "models.objectives", "models.counter", "models.checks", "models.block_sparse", "models.scoring",
           "models.shared_init"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
