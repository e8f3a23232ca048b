"""When a forward pass may read tensor *values* to check its inputs.

Reading a value (``int(t.max())``, ``bool(mask.all())``) copies it to the host:
on an accelerator that waits for every queued kernel, and under
``torch.compile`` it breaks the graph. So the models check only shapes and
dtypes by default, and check values (ids within the vocabulary, one-hot target
mappings, ...) only where that costs nothing: eager mode on the CPU. Set the
environment variable ``SUBWORD_MODELS_DEBUG=1``, or use :func:`debug_checks`,
to check values everywhere (an out-of-range id on a GPU then raises a clear
``ValueError`` instead of a device-side assert).

>>> import torch
>>> values_checked(torch.zeros(1))
True
>>> with debug_checks(False):
...     values_checked(torch.zeros(1))
False
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import torch
from torch import Tensor

__all__ = ["debug_checks", "values_checked"]

# None: the default rule (eager CPU only); True / False: forced.
_forced: bool | None = True if os.environ.get("SUBWORD_MODELS_DEBUG", "") not in ("", "0") else None


def values_checked(t: Tensor) -> bool:
    """Whether a forward pass should read values of ``t`` to check them."""
    if _forced is not None:
        return _forced and not torch.compiler.is_compiling()
    return t.device.type == "cpu" and not torch.compiler.is_compiling()


@contextlib.contextmanager
def debug_checks(enabled: bool = True) -> Iterator[None]:
    """Force value checks on (or off) inside the block, whatever the device.

    >>> import torch
    >>> with debug_checks():
    ...     values_checked(torch.zeros(1, device="meta"))
    True
    """
    global _forced
    previous = _forced
    _forced = enabled
    try:
        yield
    finally:
        _forced = previous
