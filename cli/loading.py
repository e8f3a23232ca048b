"""``-t TOK`` for every command: any file :meth:`subword.Tokenizer.from_file` reads, or a tiktoken name.

One loader for ``encode``, ``decode``, ``inspect``, ``convert`` (and ``compare``): the file's kind is
found from its content (tokenizer.json or a directory holding one, SentencePiece ``.model`` under any
name, tiktoken ranks, BERT ``vocab.txt``, Mistral ``tekken.json``), never from its suffix, and every way a file can be broken
becomes one line and exit status 1.
"""

from __future__ import annotations

from pathlib import Path

import click

from subword import Tokenizer

__all__ = ["load_tokenizer", "TOKENIZER_HELP", "tokenizer_option"]

TOKENIZER_HELP = (
    "The tokenizer: a tokenizer.json (or a directory holding one), a SentencePiece .model (any name), "
    "a .tiktoken rank file, a BERT vocab.txt, a Mistral tekken.json, or a tiktoken encoding name (cl100k_base, "
    "o200k_base, ...)."
)


def _tiktoken_names() -> list[str]:
    try:
        from subword.formats import tiktoken as tiktoken_format
    except ImportError:  # the tiktoken reader is optional at this layer
        return []
    return sorted(getattr(tiktoken_format, "ENCODINGS", {}))


def load_tokenizer(spec: str | Path) -> Tokenizer:
    """Loads ``spec`` (a path or a tiktoken encoding name), turning every failure into one clear error.

    Args:
        spec: A file or directory :meth:`Tokenizer.from_file` accepts, or a tiktoken name.

    Raises:
        click.BadParameter: no such file and not a tiktoken name (a usage error, exit 2).
        click.ClickException: the file is unreadable, corrupt, truncated or unsupported (exit 1).

    >>> import tempfile
    >>> bad = Path(tempfile.mkdtemp(), "tok.json"); _ = bad.write_text('{"model": ')
    >>> load_tokenizer(bad)
    Traceback (most recent call last):
    ...
    click.exceptions.ClickException: cannot load tokenizer: ...
    """
    path = Path(spec)
    try:
        if path.exists():
            return Tokenizer.from_file(path)
        names = _tiktoken_names()
        if str(spec) in names:
            return Tokenizer.from_tiktoken(str(spec))
    except (ValueError, OSError, KeyError, TypeError, LookupError) as exc:
        detail = _one_line(str(exc)) or type(exc).__name__
        if str(spec) not in detail:
            detail = f"{spec}: {detail}"
        raise click.ClickException(f"cannot load tokenizer: {detail}") from exc
    known = f" (tiktoken names: {', '.join(names)})" if names else ""
    raise click.BadParameter(f"{str(spec)!r} does not exist, and is not a tiktoken encoding name{known}",
                             param_hint="'-t' / '--tokenizer'")


def _one_line(message: str) -> str:
    r"""A message whose continuation lines list things (``looked in:`` and one place per line), on one line:
    the list comma-separated, a parenthesised last remark after it. Nothing is dropped.

    >>> _one_line("no file; looked in:\n  /a\n  /b\n(set X)")
    'no file; looked in: /a, /b (set X)'
    """
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    items = [x for x in lines[1:] if not x.startswith("(")]
    remarks = [x for x in lines[1:] if x.startswith("(")]
    return " ".join([lines[0] + (" " + ", ".join(items) if items else ""), *remarks])


#: The ``-t/--tokenizer`` option every command shares.
tokenizer_option = click.option(
    "-t", "--tokenizer", "tokenizer_spec", required=True, metavar="TOK", help=TOKENIZER_HELP,
)
