"""What ``-t`` accepts: a tokenizer file or directory, or a tiktoken encoding name.

Files and directories go through :meth:`subword.Tokenizer.from_file`, the one front door
(``tokenizer.json``, SentencePiece ``.model``, BERT ``vocab.txt``, tiktoken rank files, directories).
A known tiktoken name (``cl100k_base``, ``o200k_base``, ...) that is not also a file goes through
:meth:`subword.Tokenizer.from_tiktoken`, which finds a local rank file (tiktoken's cache,
``TIKTOKEN_CACHE_DIR``, or a package that ships it); nothing is downloaded.

>>> is_tiktoken_name("cl100k_base"), is_tiktoken_name("tok.json")
(True, False)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["load", "is_tiktoken_name", "TokenizerLoadError", "TIKTOKEN_NAMES"]

TIKTOKEN_NAMES = ("gpt2", "r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base")


class TokenizerLoadError(ValueError):
    """A ``-t`` value that does not load (the message names it)."""


def is_tiktoken_name(spec: str) -> bool:
    """Whether ``spec`` is a tiktoken encoding name rather than a path (a file of that name wins)."""
    return spec in TIKTOKEN_NAMES and not Path(spec).exists()


def load(spec: str) -> tuple[Any, str]:
    """Loads one ``-t`` value: ``(tokenizer, "tiktoken" or "file")``.

    Raises:
        TokenizerLoadError: it does not exist or does not load (the message names it and says why).

    >>> try:
    ...     load("no/such/file.json")
    ... except TokenizerLoadError as exc:
    ...     print(exc)
    -t no/such/file.json: no such file or directory
    """
    from subword import Tokenizer

    if is_tiktoken_name(spec):
        try:
            return Tokenizer.from_tiktoken(spec), "tiktoken"
        except Exception as exc:  # noqa: BLE001 - any failure is this tokenizer's, and is named
            raise TokenizerLoadError(f"-t {spec}: cannot load the tiktoken encoding: {_one_line(exc)}") from exc
    if not Path(spec).exists():
        raise TokenizerLoadError(f"-t {spec}: no such file or directory")
    try:
        return Tokenizer.from_file(spec), "file"
    except Exception as exc:  # noqa: BLE001 - corrupt, truncated, unsupported: all named the same way
        detail = _one_line(exc)
        raise TokenizerLoadError(f"-t {spec}: cannot load: {detail}") from exc


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
