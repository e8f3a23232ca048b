"""The tokenizers' Rust pipelines, which the pass and the vocabulary table run on.

>>> from subword import Tokenizer, WordPiece
>>> type(native_core(Tokenizer(WordPiece({"[UNK]": 0})))).__name__
'CoreTokenizer'
"""

from __future__ import annotations

from typing import Any

__all__ = ["native_core", "NotNativeError"]


class NotNativeError(ValueError):
    """A tokenizer the Rust core cannot run (the message names it and says why)."""


def native_core(tok: Any, name: str = "a tokenizer") -> Any:
    """``tok``'s Rust pipeline (a ``CoreTokenizer`` or ``CoreSpmTokenizer``), which compare runs on.

    Raises:
        NotNativeError: the core cannot build it (the message names ``name`` and the reason).
    """
    try:
        return tok._native()
    except Exception as exc:  # noqa: BLE001 - whatever the core refuses is named
        raise NotNativeError(f"{name}: the Rust core cannot run this tokenizer, which compare needs: "
                             f"{' '.join(str(exc).split()) or type(exc).__name__}") from exc
