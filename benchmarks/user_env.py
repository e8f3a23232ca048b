"""The environment a user's fresh Python process has, for benchmarks that time one.

A user's install has compiled bytecode: pip writes the ``.pyc`` of every installed module, an editable
install writes them on the first import. A machine with ``PYTHONDONTWRITEBYTECODE=1`` (this project's
build machines set it) never writes them, so every fresh process compiles our modules again, while the
reference libraries' modules were compiled when pip installed them: a timing of a first load or of a
start-up would then time Python's compiler on our side only. :func:`user_env` compiles this checkout's
packages once and gives the environment to run children in.

>>> env = user_env()
>>> "PYTHONDONTWRITEBYTECODE" in env, env["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT)
(False, True)
"""

from __future__ import annotations

import compileall
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_PACKAGES = ("subword", "cli", "corpora", "models")


def precompile() -> None:
    """Write the ``.pyc`` of this checkout's packages (what ``pip install`` does for an installed package)."""
    for package in _PACKAGES:
        if (ROOT / package).is_dir():
            compileall.compile_dir(ROOT / package, quiet=1)


def user_env(**extra: str) -> dict[str, str]:
    """``os.environ`` with bytecode caching on, this checkout first on ``PYTHONPATH``, and ``extra`` set;
    the checkout is compiled first (see the module's docstring)."""
    precompile()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    env.update(extra)
    return env
