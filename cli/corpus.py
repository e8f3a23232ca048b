"""The built-in corpus for commands run without an input: its first use builds it, with progress shown.

Building it parses the running Python's standard library once (a few seconds, then cached), so a
newcomer's first ``subword train`` says what it is doing instead of going quiet.
"""

from __future__ import annotations

from pathlib import Path

import click

from cli.progress import ProgressMode, ProgressReporter, resolve_mode

__all__ = ["builtin_corpus"]


def builtin_corpus(progress_mode: ProgressMode = "auto", quiet: bool = False) -> Path:
    """The built-in corpus's path; when it must be built first, one line says so and progress is shown.

    Args:
        progress_mode: The command's ``--progress`` choice (a bar on a terminal by default).
        quiet: The command's ``-q``: no message (progress only if asked for by name).

    >>> builtin_corpus().is_file()  # doctest: +SKIP
    True
    """
    import corpora

    reporter = ProgressReporter(resolve_mode(progress_mode, quiet))
    announced = False

    def progress(done: int, total: int) -> None:
        nonlocal announced
        if not announced:
            announced = True
            if not quiet:
                click.echo(
                    f"Building the built-in corpus (once, then cached in {corpora.cache_dir()}): the docstrings and "
                    f"comments of {total:,} standard-library files.",
                    err=True,
                )
        reporter("corpus", done, total)

    try:
        return corpora.builtin_corpus(progress=progress)
    finally:
        reporter.close()
