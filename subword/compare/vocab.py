"""What each id of a vocabulary is, as bytes: the input of the per-id tables the metrics index.

A token's *surface* is the bytes it stands for in decoded text: byte-level characters mapped back
through the GPT-2 byte table, ``<0xXX>`` byte pieces as their byte, the Metaspace ``▁`` as a space,
WordPiece's ``##`` prefix dropped. Its *core* removes the word-start markers as well (one leading
space from ``Ġ``/``▁``): the form vocabularies are compared in, so ``Ġthe``, ``▁the``, ``the`` and
``##the`` are the same string. Added tokens stand for their own text. The Rust core builds the table
from the tokenizer's own token table (``rust/src/compare/vocab.rs``); the readable reference is in
the tests (``tests/_compare_reference.py``).

>>> from subword import Tokenizer, BPE
>>> from subword.decoders import ByteLevel
>>> tok = Tokenizer(BPE({"Ġthe": 0, "a": 1, "â": 2}, []), decoder=ByteLevel())
>>> table = VocabTable.of(tok)
>>> table.surface, table.core, table.char_length.tolist(), table.byte_token.tolist()
([b' the', b'a', b'\\xe2'], [b'the', b'a', b'\\xe2'], [4, 1, 1], [False, False, True])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["VocabTable", "is_byte_level", "tokenizer_kind", "spelling"]


def _components(component: Any) -> list[Any]:
    """A component and, for a ``Sequence``, the ones inside it."""
    if component is None:
        return []
    inner = getattr(component, "decoders", None) or getattr(component, "pretokenizers", None)
    if isinstance(inner, (list, tuple)):
        return [c for part in inner for c in _components(part)]
    return [component]


def _type_name(component: Any) -> str:
    return str(getattr(component, "type_name", type(component).__name__))


def is_byte_level(tok: Any) -> bool:
    """Whether tokens are spelled in the GPT-2 byte alphabet (a ``ByteLevel`` decoder or pre-tokenizer)."""
    parts = _components(getattr(tok, "decoder", None)) + _components(getattr(tok, "pre_tokenizer", None))
    return any(_type_name(p) == "ByteLevel" for p in parts)


def _metaspace(tok: Any) -> str | None:
    parts = _components(getattr(tok, "decoder", None)) + _components(getattr(tok, "pre_tokenizer", None))
    for p in parts:
        if _type_name(p) == "Metaspace":
            return str(getattr(p, "replacement", "\u2581"))
    return None


def tokenizer_kind(tok: Any) -> str:
    """A short name for the kind of model: ``byte-level bpe``, ``bpe``, ``wordpiece``, ``unigram``,
    ``sentencepiece unigram``, ``sentencepiece bpe`` (a ``.model`` run by sentencepiece's pipeline).

    >>> from subword import Tokenizer, WordPiece
    >>> tokenizer_kind(Tokenizer(WordPiece({"[UNK]": 0})))
    'wordpiece'
    """
    name = type(tok.model).__name__
    name = {"SentencePieceUnigram": "sentencepiece unigram", "SentencePieceBPE": "sentencepiece bpe"}.get(
        name, name.lower())
    return f"byte-level {name}" if is_byte_level(tok) else name


@dataclass
class VocabTable:
    """Per-id facts of one tokenizer's vocabulary (added tokens included), indexed by id.

    Attributes:
        size: The number of ids (``max id + 1``; gaps are empty entries).
        vocab_size: The number of distinct tokens (``Tokenizer.get_vocab_size()``), |V| of the metrics.
        surface: The bytes each token stands for (see the module docstring).
        core: ``surface`` without word-start markers (vocabulary overlap compares these).
        char_length: Characters of the decoded token (``surface`` decoded as UTF-8, U+FFFD for a
            partial character counted as one).
        byte_token: The token is a byte: a ``<0xXX>`` piece, or a byte-level token that is not a
            whole UTF-8 sequence (it splits a character).
        special: The token is an added special token.
        unk: The id of the unknown token or ``None``.
    """

    size: int
    vocab_size: int
    surface: list[bytes]
    core: list[bytes]
    char_length: np.ndarray
    byte_token: np.ndarray
    special: np.ndarray
    unk: int | None

    @classmethod
    def of(cls, tok: Any) -> "VocabTable":
        """Builds the table of ``tok`` (a :class:`subword.Tokenizer`) in the Rust core, from the core's own
        token table: the tokenizer's Python model data (a dict of every token, the merges) is never built.

        Raises:
            subword.compare.core.NotNativeError: the core cannot run ``tok``.
        """
        from subword import _core
        from subword.compare.core import native_core

        out = _core.compare_vocab_table(native_core(tok), [(i, t.content) for i, t in tok.added_tokens],
                                        *spelling(tok))
        surface, core_bytes = out["surface"], out["core"]
        size = len(surface)
        special = np.zeros(size, dtype=bool)
        for i, t in tok.added_tokens:
            if i < size and surface[i] == t.content.encode("utf-8"):  # the id that kept this token (see the core)
                special[i] = bool(getattr(t, "special", False))
        return cls(size, int(out["vocab_size"]), surface, core_bytes,
                   np.frombuffer(out["char_length"], dtype="<i4").astype(np.int32),
                   np.frombuffer(out["byte_token"], dtype=np.uint8).astype(bool), special,
                   None if out["unk"] is None else int(out["unk"]))


def spelling(tok: Any) -> tuple[bool, str | None, str, bool]:
    """``(byte_level, metaspace, prefix, byte_pieces)``: how ``tok``'s tokens are spelled (see :class:`VocabTable`)."""
    return (is_byte_level(tok), _metaspace(tok), getattr(tok.model, "continuing_subword_prefix", None) or "",
            bool(getattr(tok.model, "byte_fallback", False)))
