"""What each id of a vocabulary is, as bytes: the input of the per-id tables the metrics index.

A token's *surface* is the bytes it stands for in decoded text: byte-level characters mapped back
through the GPT-2 byte table, ``<0xXX>`` byte pieces as their byte, the Metaspace ``▁`` as a space,
WordPiece's ``##`` prefix dropped. Its *core* removes the word-start markers as well (one leading
space from ``Ġ``/``▁``): the form vocabularies are compared in, so ``Ġthe``, ``▁the``, ``the`` and
``##the`` are the same string. Special (added) tokens stand for their own text.

>>> from subword import Tokenizer, BPE
>>> from subword.decoders import ByteLevel
>>> tok = Tokenizer(BPE({"Ġthe": 0, "a": 1, "â": 2}, []), decoder=ByteLevel())
>>> table = VocabTable.of(tok)
>>> table.surface, table.core, table.char_length.tolist(), table.byte_token.tolist()
([b' the', b'a', b'\\xe2'], [b'the', b'a', b'\\xe2'], [4, 1, 1], [False, False, True])
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from subword.pre_tokenizers import bytes_to_unicode

__all__ = ["VocabTable", "is_byte_level", "tokenizer_kind", "unk_id"]

_BYTE_PIECE = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_BYTE_DECODE = {c: b for b, c in enumerate(bytes_to_unicode())}
# str.translate to one char per byte, then latin-1: the bytes of a byte-level token in two C calls.
_BYTE_TRANSLATE = {ord(c): b for c, b in _BYTE_DECODE.items()}


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


def unk_id(tok: Any) -> int | None:
    """The id of the unknown token, or ``None`` when the model has none."""
    model = tok.model
    if getattr(model, "unk_id", None) is not None and not hasattr(model, "vocab"):
        return int(model.unk_id)
    token = getattr(model, "unk_token", None)
    return None if token is None else tok.token_to_id(token)


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
        """Builds the table of ``tok`` (a :class:`subword.Tokenizer`).

        Where ``tok`` runs on the Rust core, the core builds it from its own token table (the
        tokenizer's Python model data, a dict of every token, is then never built); else
        :meth:`of_python`, the reference, does. Both give the same table.
        """
        table = _native_table(tok)
        return table if table is not None else cls.of_python(tok)

    @classmethod
    def of_python(cls, tok: Any) -> "VocabTable":
        """The reference of :meth:`of`: the table from ``tok.get_vocab()``, token by token in Python.

        >>> from subword import Tokenizer, WordPiece
        >>> VocabTable.of_python(Tokenizer(WordPiece({"[UNK]": 0, "##ab": 1}))).surface
        [b'[UNK]', b'ab']
        """
        vocab = tok.get_vocab(True)
        size = (max(vocab.values()) + 1) if vocab else 0
        surface = [b""] * size
        core = [b""] * size
        char_length = np.zeros(size, dtype=np.int32)
        byte_token = np.zeros(size, dtype=bool)
        special = np.zeros(size, dtype=bool)
        added = {i: t for i, t in tok.added_tokens}
        byte_level = is_byte_level(tok)
        metaspace = _metaspace(tok)
        prefix = getattr(tok.model, "continuing_subword_prefix", None) or ""
        byte_pieces = bool(getattr(tok.model, "byte_fallback", False))
        for token, i in vocab.items():
            if i in added:
                raw = token.encode("utf-8")
                special[i] = bool(getattr(added[i], "special", False))
                surface[i] = core[i] = raw
                char_length[i] = len(token)
                continue
            text = token
            continuing = False
            if prefix and text.startswith(prefix) and len(text) > len(prefix):
                text, continuing = text[len(prefix):], True
            piece = _BYTE_PIECE.fullmatch(text) if text.startswith("<0") else None
            if piece and (byte_pieces or not byte_level):
                raw = bytes([int(piece.group(1), 16)])
                byte_token[i] = True
                length = 1  # one byte decodes to one character (itself, or U+FFFD)
            elif byte_level:
                try:
                    raw = text.translate(_BYTE_TRANSLATE).encode("latin-1")
                except UnicodeEncodeError:  # a char outside the byte alphabet: its own UTF-8
                    raw = text.encode("utf-8")
                try:
                    length = len(raw.decode("utf-8"))
                except UnicodeDecodeError:
                    byte_token[i] = True
                    length = len(raw.decode("utf-8", errors="replace"))
            else:
                # SentencePiece's space, whether a Metaspace or a Replace decoder turns it back.
                text = text.replace(metaspace or "\u2581", " ")
                raw = text.encode("utf-8")
                length = len(text)  # UTF-8 of a str decodes back to it
            surface[i] = raw
            stripped = raw[1:] if raw.startswith(b" ") and len(raw) > 1 else raw
            core[i] = stripped if not continuing else raw
            char_length[i] = length
        # len(vocab) is get_vocab_size(True) (HF's definition), without building the vocabulary twice.
        return cls(size, len(vocab), surface, core, char_length, byte_token, special, unk_id(tok))


def _spelling(tok: Any) -> tuple[bool, str | None, str, bool]:
    """``(byte_level, metaspace, prefix, byte_pieces)``: how ``tok``'s tokens are spelled (see :class:`VocabTable`)."""
    return (is_byte_level(tok), _metaspace(tok), getattr(tok.model, "continuing_subword_prefix", None) or "",
            bool(getattr(tok.model, "byte_fallback", False)))


def _native_table(tok: Any) -> VocabTable | None:
    """:meth:`VocabTable.of` computed by the Rust core (``compare_vocab_table``), or ``None`` where ``tok``
    does not run on it (then the reference is used)."""
    try:
        from subword import _core
    except ImportError:
        return None
    build = getattr(_core, "compare_vocab_table", None)
    if build is None:
        return None
    try:
        core = tok._native()
        out = build(core, [(i, t.content) for i, t in tok.added_tokens], *_spelling(tok))
    except Exception:  # noqa: BLE001 - a tokenizer the core cannot build goes the reference way
        return None
    surface, core_bytes = out["surface"], out["core"]
    size = len(surface)
    special = np.zeros(size, dtype=bool)
    for i, t in tok.added_tokens:
        if i < size and surface[i] == t.content.encode("utf-8"):  # the id that kept this token (see the core)
            special[i] = bool(getattr(t, "special", False))
    return VocabTable(size, int(out["vocab_size"]), surface, core_bytes,
                      np.frombuffer(out["char_length"], dtype="<i4").astype(np.int32),
                      np.frombuffer(out["byte_token"], dtype=np.uint8).astype(bool), special,
                      None if out["unk"] is None else int(out["unk"]))
