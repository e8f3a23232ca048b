"""cli: the ``subword`` command line (click). Parsing, progress and errors only; no algorithms.

* :mod:`cli.main` -- the click group, exit codes, error translation, ``main()``.
* :mod:`cli.train` -- ``subword train ALGORITHM``, dispatched through the trainer registry.
* :mod:`cli.count` -- ``subword count`` (word counts files, ``--merge``, ``--max-memory``, ``--dask``).
* :mod:`cli.codec` -- ``subword encode`` and ``subword decode``.
* :mod:`cli.inspect_tokenizer` -- ``subword inspect``.
* :mod:`cli.convert` -- ``subword convert``.
* :mod:`cli.compare` -- ``subword compare``.
* :mod:`cli.pretrain`, :mod:`cli.fill_mask` -- ``subword pretrain`` and ``subword fill-mask``.
* :mod:`cli.loading` -- ``-t TOK`` for every command: any tokenizer file, or a tiktoken name.
* :mod:`cli.trainer_options` -- click options derived from the registry's options classes.
* :mod:`cli.progress` -- progress as a terminal bar, JSON lines, or nothing.

>>> from click.testing import CliRunner
>>> from cli.main import cli
>>> CliRunner().invoke(cli, ["--help"]).exit_code
0
"""

from __future__ import annotations

__all__ = ["cli", "main"]


def __getattr__(name: str):  # noqa: ANN202 - lazy, so `import cli.progress` stays cheap
    if name in __all__:
        from cli import main as _main

        return getattr(_main, name)
    raise AttributeError(f"module 'cli' has no attribute {name!r}")
