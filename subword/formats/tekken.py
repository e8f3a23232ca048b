"""Mistral's Tekken tokenizer files (``tekken.json``: Mistral Nemo, Pixtral, Large 2 and later), read as
``mistral_common``'s own ``Tekkenizer`` reads them.

A Tekken file is JSON: ``config`` (the split ``pattern``, ``default_vocab_size``, ``default_num_special_tokens``,
``version``), ``vocab`` (a list of ``{"rank", "token_bytes" (base64), "token_str"}``, rank = position) and, from
version v7 on, ``special_tokens`` (a list of ``{"rank", "token_str", "is_control"}``; older files use Mistral's
default list). The model is tiktoken's byte-level BPE over the first ``default_vocab_size -
default_num_special_tokens`` ranks, split with the pattern on fancy-regex (tiktoken's engine); the special
tokens take ids ``0..n-1`` (the listed ones, then ``<SPECIAL_{id}>`` fillers) and the rank-``r`` token id
``r + n``.

Policy difference kept from our Tokenizer (as for tiktoken files): the special tokens are added tokens, so a
special-token string in the text (``"[INST]"``) is matched as that token; ``Tekkenizer.encode`` spells it out
as text. Texts without special-token strings get ``Tekkenizer.encode(text, bos=False, eos=False)``'s ids;
``decode(ids)`` is its ``decode`` (specials ignored), ``decode(ids, skip_special_tokens=False)`` its ``KEEP``.

>>> import json, tempfile, pathlib, base64
>>> vocab = [{"rank": b, "token_bytes": base64.b64encode(bytes([b])).decode(), "token_str": None} for b in range(256)]
>>> data = {"config": {"pattern": r"\\p{L}+|\\s+|.", "default_vocab_size": 259, "default_num_special_tokens": 3,
...         "version": "v7"}, "vocab": vocab, "special_tokens": [{"rank": 0, "token_str": "<unk>", "is_control": True},
...         {"rank": 1, "token_str": "<s>", "is_control": True}, {"rank": 2, "token_str": "</s>", "is_control": True}]}
>>> p = pathlib.Path(tempfile.mkdtemp()) / "tekken.json"
>>> _ = p.write_text(json.dumps(data))
>>> tok = load(p)
>>> tok.encode("hi", add_special_tokens=False).ids, tok.token_to_id("</s>")
([107, 108], 2)
"""

from __future__ import annotations

import binascii
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from subword.errors import FormatError

if TYPE_CHECKING:
    from subword.tokenizer import Tokenizer

__all__ = ["load", "sniff", "DEFAULT_SPECIAL_TOKENS", "VERSIONS"]

log = logging.getLogger(__name__)

#: The Tekken versions ``mistral_common`` 1.13 knows (it refuses others).
VERSIONS = ("v1", "v2", "v3", "v7", "v11", "v13", "v15")

#: The special tokens of Tekken files without a ``special_tokens`` list (versions up to v7), in rank order
#: (public facts of ``mistral_common``'s ``Tekkenizer.DEPRECATED_SPECIAL_TOKENS``).
DEFAULT_SPECIAL_TOKENS = (
    "<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]", "[TOOL_CALLS]", "[IMG]", "<pad>", "[IMG_BREAK]", "[IMG_END]", "[PREFIX]", "[MIDDLE]",
    "[SUFFIX]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]",
)
_FILLER = "<SPECIAL_{id}>"
#: Top-level keys that do not concern the text tokenizer (image / audio encoders, model settings).
_OTHER_KEYS = ("image", "audio", "multimodal", "model_settings_builder")


def sniff(head: bytes) -> bool:
    """Whether a JSON file's first bytes are a Tekken file's (a ``config`` with Tekken's fields).

    >>> sniff(b'{"config": {"pattern": "x", "num_vocab_tokens": 3, "default_vocab_size": 3'), sniff(b'{"model": {}}')
    (True, False)
    """
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text.startswith(b"{") and b'"config"' in head and (
        b'"default_num_special_tokens"' in head or b'"default_vocab_size"' in head or b'"num_vocab_tokens"' in head)


def _int(source: str, where: str, value: Any, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise FormatError(f"{source}: {where} must be an integer >= {minimum}, got {value!r}")
    return value


def load(path: str | os.PathLike[str]) -> "Tokenizer":
    """A Tekken file as a :class:`~subword.Tokenizer` giving ``Tekkenizer``'s ids.

    Raises:
        FileNotFoundError: no such file.
        subword.errors.FormatError: not JSON, a missing or ill-typed field, an unknown version, a bad base64
            token, a rank that is not its position (a gap), a first-256 token that is not its byte, repeated
            tokens, or a pattern fancy-regex refuses; the message names the file and the field.
    """
    from subword.formats.tiktoken import _pipeline
    from subword.model import BPE
    from subword.tokenizer import AddedToken

    p = Path(path)
    source = str(p)
    try:
        data = json.loads(p.read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(f"{source}: not a valid Tekken JSON file ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("config"), dict) or not isinstance(data.get("vocab"), list):
        raise FormatError(f"{source}: a Tekken file needs an object 'config' and a list 'vocab'")
    unknown = sorted(set(data) - {"config", "vocab", "special_tokens", *_OTHER_KEYS})
    if unknown:
        raise FormatError(f"{source}: unknown Tekken field(s) {unknown} (known: config, vocab, special_tokens, "
                          f"{', '.join(_OTHER_KEYS)})")
    config = data["config"]
    for key in ("pattern", "default_vocab_size", "default_num_special_tokens", "version"):
        if key not in config:
            raise FormatError(f"{source}: config has no '{key}'")
    pattern = config["pattern"]
    if not isinstance(pattern, str) or not pattern:
        raise FormatError(f"{source}: config.pattern must be a non-empty string, got {pattern!r}")
    version = config["version"]
    if version not in VERSIONS:
        raise FormatError(f"{source}: config.version {version!r} is not a Tekken version ({', '.join(VERSIONS)})")
    vocab_size = _int(source, "config.default_vocab_size", config["default_vocab_size"], 1)
    n_special = _int(source, "config.default_num_special_tokens", config["default_num_special_tokens"])
    inner = vocab_size - n_special
    if inner < 256 or inner > len(data["vocab"]):
        raise FormatError(f"{source}: config.default_vocab_size {vocab_size} minus {n_special} special tokens leaves "
                          f"{inner} ranks; the vocab has {len(data['vocab'])} and needs at least the 256 bytes")
    specials = _special_tokens(data.get("special_tokens"), version, n_special, source)
    blob = _rank_file(data["vocab"][:inner], source)
    native = _read_native(blob, n_special)
    if native is None:
        _find_repeat(blob, source)
        raise FormatError(f"{source}: the vocab does not make a byte-level BPE")
    added = [(i, AddedToken(t, special=True, normalized=False)) for i, t in enumerate(specials)]
    if not native.added_tokens_fit([(i, t.content) for i, t in added]):
        raise FormatError(f"{source}: a special token's string is also a vocab token's")

    def loader() -> dict:
        vocab, merges = native.tiktoken_vocab_merges()
        return {"vocab": vocab, "merges": merges}

    tok = _pipeline(BPE._deferred(loader, native, ignore_merges=True, merge_by_token_id=True), pattern, source)
    tok._added = added
    tok.provenance = {"source": "tekken", "version": version, "pattern": pattern}
    return tok


def _special_tokens(items: Any, version: str, n_special: int, source: str) -> list[str]:
    """The special tokens' strings by id: the file's list (or the default one up to v7), then fillers."""
    if items is None:
        if VERSIONS.index(version) > VERSIONS.index("v7"):
            raise FormatError(f"{source}: a {version} Tekken file must list its special_tokens")
        names = list(DEFAULT_SPECIAL_TOKENS)
    else:
        if not isinstance(items, list):
            raise FormatError(f"{source}: special_tokens must be a list")
        names = []
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not isinstance(item.get("token_str"), str):
                raise FormatError(f"{source}: special_tokens[{i}] needs a string 'token_str'")
            if item.get("rank") != i:
                raise FormatError(f"{source}: special_tokens[{i}] has rank {item.get('rank')!r}; ranks must be 0, 1, 2, "
                                  "... in order")
            names.append(item["token_str"])
    if len(names) > n_special:
        raise FormatError(f"{source}: {len(names)} special tokens but config.default_num_special_tokens is {n_special}")
    names += [_FILLER.format(id=i) for i in range(len(names), n_special)]
    if len(set(names)) != len(names):
        raise FormatError(f"{source}: special_tokens repeat a token_str")
    return names


def _rank_file(vocab: list[Any], source: str) -> bytes:
    """The vocab as tiktoken rank-file bytes (``base64 rank`` lines), each entry checked."""
    lines = []
    for i, item in enumerate(vocab):
        if not isinstance(item, dict) or not isinstance(item.get("token_bytes"), str):
            raise FormatError(f"{source}: vocab[{i}] needs a string 'token_bytes'")
        if item.get("rank") != i:
            raise FormatError(f"{source}: vocab[{i}] has rank {item.get('rank')!r}; ranks must be 0, 1, 2, ... without "
                              "gaps")
        raw = item["token_bytes"].encode("ascii", "replace")
        try:
            token = binascii.a2b_base64(raw, strict_mode=True)
        except (binascii.Error, ValueError):
            raise FormatError(f"{source}: vocab[{i}].token_bytes {item['token_bytes'][:40]!r} is not valid base64") from None
        if i < 256 and token != bytes([i]):
            raise FormatError(f"{source}: vocab[{i}] must be the single byte {bytes([i])!r}, got {token!r}")
        lines.append(b"%s %d\n" % (raw, i))
    return b"".join(lines)


def _read_native(blob: bytes, offset: int):
    from subword import _core

    return _core.read_tiktoken(blob, offset)


def _find_repeat(blob: bytes, source: str) -> None:
    seen: dict[bytes, int] = {}
    for i, line in enumerate(blob.splitlines()):
        token = binascii.a2b_base64(line.split()[0])
        if token in seen:
            raise FormatError(f"{source}: vocab[{i}] repeats the token of vocab[{seen[token]}] ({token!r})")
        seen[token] = i
