"""Which kind of tokenizer file a path holds, decided by its content (never its name), and the loader
of each kind. :meth:`subword.Tokenizer.from_file` is :func:`load`.

Kinds, in the order they are tried:

* Mistral Tekken (``tekken.json``): JSON whose ``config`` holds Tekken's fields (:func:`subword.formats.tekken.sniff`);
* HF ``tokenizer.json``: the text starts with ``{`` or ``[`` (after whitespace or a BOM);
* tiktoken ranks (``base64 rank`` lines): :func:`subword.formats.tiktoken.sniff`, when that module exists;
* SentencePiece ``ModelProto``: starts with a piece (protobuf field 1, holding field 1);
* BERT ``vocab.txt``: UTF-8 lines of one token each, no whitespace inside a token.

A directory is read through the file it holds: ``tokenizer.json`` (what ``save_pretrained`` writes),
else ``tokenizer.model`` / ``spiece.model`` / ``sentencepiece.bpe.model``, else ``vocab.txt``,
else ``*.tiktoken``.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "vocab.bin"
>>> _ = p.write_bytes(b"[UNK]\\nthe\\n##s\\n")
>>> kind_of(p.read_bytes())
'vocab.txt'
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from subword.errors import FormatError

__all__ = ["KINDS", "kind_of", "load"]

#: The kinds :func:`load` knows, as error messages name them.
KINDS = ("tokenizer.json (HF JSON)", "Mistral tekken.json", "tiktoken ranks", "SentencePiece .model (protobuf)",
         "BERT vocab.txt")

_HEAD = 4096
_DIR_FILES = ("tokenizer.json", "tokenizer.model", "spiece.model", "sentencepiece.bpe.model", "vocab.txt")


def _tiktoken() -> Any | None:
    """``subword.formats.tiktoken`` when it is there (it comes with tiktoken support), else None."""
    try:
        mod = importlib.import_module("subword.formats.tiktoken")
    except ImportError:
        return None
    return mod if hasattr(mod, "sniff") and hasattr(mod, "load") else None


def _is_spm(head: bytes) -> bool:
    # ModelProto field 1 (a SentencePiece message, length-delimited) whose own first field is the piece
    # text (field 1, length-delimited): 0x0A <varint> 0x0A.
    if len(head) < 3 or head[0] != 0x0A:
        return False
    i = 1
    while i < len(head) and head[i] & 0x80:
        i += 1
    return i + 1 < len(head) and head[i + 1] == 0x0A


def kind_of(head: bytes) -> str | None:
    """The kind of a file from its first bytes: ``"tekken"``, ``"json"``, ``"tiktoken"``, ``"spm"``, ``"vocab.txt"``, or
    None.

    >>> kind_of(b'{"version": "1.0"}'), kind_of(b"\\x0a\\x09\\x0a\\x05<unk>"), kind_of(b"\\x00\\x01")
    ('json', 'spm', None)
    """
    from subword.formats import vocab_txt

    stripped = head.lstrip(b" \t\r\n")
    if stripped.startswith(b"\xef\xbb\xbf"):
        stripped = stripped[3:].lstrip(b" \t\r\n")
    if stripped.startswith(b"{"):
        from subword.formats import tekken  # only for JSON: its import is ~0.5 ms of every other first load

        return "tekken" if tekken.sniff(stripped) else "json"
    if _json_array(stripped):
        return "json"
    tiktoken = _tiktoken()
    if tiktoken is not None and tiktoken.sniff(head):
        return "tiktoken"
    if _is_spm(head):
        return "spm"
    if vocab_txt.sniff(head):
        return "vocab.txt"
    return None


def _json_array(text: bytes) -> bool:
    """``[`` then a JSON value (the JSON reader then refuses it with its reason), not a vocab.txt's
    ``[PAD]``."""
    if not text.startswith(b"["):
        return False
    rest = text[1:].lstrip(b" \t\r\n")
    return rest[:1] in (b"", *(bytes([c]) for c in b'0123456789-"{[]')) or \
        rest.startswith((b"true", b"false", b"null"))


def _in_directory(directory: Path) -> Path:
    for name in _DIR_FILES:
        if (directory / name).is_file():
            return directory / name
    ranks = sorted(directory.glob("*.tiktoken"))
    if ranks:
        return ranks[0]
    raise FormatError(f"{directory} is a directory without a tokenizer file (looked for {', '.join(_DIR_FILES)}, "
                      "*.tiktoken)")


def load(path: str | os.PathLike[str]):  # -> Tokenizer
    """Load any tokenizer file (or a directory holding one) into a :class:`~subword.Tokenizer`.

    Raises:
        FileNotFoundError: no such file or directory.
        FormatError: a file of no known kind (the message lists the kinds tried), or a truncated or
            corrupt file of a known kind (the message names the file and the kind).
    """
    p = Path(path)
    if p.is_dir():
        p = _in_directory(p)
    if not p.exists():
        raise FileNotFoundError(f"no such file: {p}")
    try:
        with open(p, "rb") as fh:
            head = fh.read(_HEAD)
    except IsADirectoryError:
        raise FormatError(f"{p} is not a file") from None
    if not head.strip() and len(head) < _HEAD:
        raise FormatError(f"{p} is empty: not a tokenizer file (tried: {', '.join(KINDS)})")
    kind = kind_of(head)
    if kind == "tekken":
        from subword.formats import tekken

        return tekken.load(p)
    if kind == "json":
        from subword.formats import hf_json

        return hf_json.load(p)
    if kind == "tiktoken":
        return _tiktoken().load(p)  # type: ignore[union-attr]
    if kind == "spm":
        from subword.formats.spm import load_tokenizer

        return load_tokenizer(p)
    if kind == "vocab.txt":
        from subword.formats import vocab_txt

        return vocab_txt.load(p)
    if b"\0" in head or not _utf8(head):
        what = "it is not UTF-8 text and not a known binary format"
    else:
        what = "it is text, but not JSON, tiktoken ranks or one token per line"
    raise FormatError(f"{p} is not a tokenizer file of any known kind: {what} (tried: {', '.join(KINDS)})")


def _utf8(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3 and len(head) >= _HEAD
    return True
