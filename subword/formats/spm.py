"""SentencePiece ``.model`` files (a ``ModelProto`` protobuf), read and written by hand.

No protobuf library is needed: the wire format is small (varints, fixed32 floats and
length-delimited fields). Field numbers follow sentencepiece 0.2.3's ``sentencepiece_model.proto``.
Fields we do not know are kept as raw bytes and written back unchanged, so a file read and
written again is identical in content.

>>> m = SpmModelFile(pieces=[("<unk>", 0.0, 2), ("a", -1.0, 1)], model_type=2)
>>> SpmModelFile.from_bytes(m.to_bytes()).pieces
[('<unk>', 0.0, 2), ('a', -1.0, 1)]
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterable
from typing import Any

from subword.errors import FormatError

__all__ = [
    "MODEL_TYPES",
    "PIECE_TYPES",
    "SpmFormatError",
    "SpmModelFile",
    "build_charsmap",
    "model_specs",
    "normalization_charsmap",
    "read_model",
    "write_model",
    "load_tokenizer",
    "tokenizer_from_model",
    "model_file_of",
]

#: ``ModelProto.SentencePiece.Type`` numbers.
PIECE_TYPES = {"NORMAL": 1, "UNKNOWN": 2, "CONTROL": 3, "USER_DEFINED": 4, "UNUSED": 5, "BYTE": 6}
#: ``TrainerSpec.ModelType`` numbers.
MODEL_TYPES = {"unigram": 1, "bpe": 2, "word": 3, "char": 4}


class SpmFormatError(FormatError):
    """The bytes are not a (complete) SentencePiece model (a :class:`~subword.errors.FormatError`, so also
    a ``ValueError``)."""


# (name, number, kind): kind is str | int | uint | bool | float | bytes | enum, "[]" suffix = repeated.
_TRAINER_FIELDS: list[tuple[str, int, str]] = [
    ("input", 1, "str[]"), ("model_prefix", 2, "str"), ("model_type", 3, "enum"), ("vocab_size", 4, "int"),
    ("accept_language", 5, "str[]"), ("self_test_sample_size", 6, "int"), ("input_format", 7, "str"),
    ("character_coverage", 10, "float"), ("input_sentence_size", 11, "uint"), ("mining_sentence_size", 12, "int"),
    ("training_sentence_size", 13, "int"), ("seed_sentencepiece_size", 14, "int"), ("shrinking_factor", 15, "float"),
    ("num_threads", 16, "int"), ("num_sub_iterations", 17, "int"), ("max_sentence_length", 18, "int"),
    ("shuffle_input_sentence", 19, "bool"), ("max_sentencepiece_length", 20, "int"),
    ("split_by_unicode_script", 21, "bool"), ("split_by_whitespace", 22, "bool"), ("split_by_number", 23, "bool"),
    ("treat_whitespace_as_suffix", 24, "bool"), ("split_digits", 25, "bool"),
    ("allow_whitespace_only_pieces", 26, "bool"), ("control_symbols", 30, "str[]"),
    ("user_defined_symbols", 31, "str[]"), ("vocabulary_output_piece_score", 32, "bool"),
    ("hard_vocab_limit", 33, "bool"), ("use_all_vocab", 34, "bool"), ("byte_fallback", 35, "bool"),
    ("required_chars", 36, "str"), ("unk_id", 40, "int"), ("bos_id", 41, "int"), ("eos_id", 42, "int"),
    ("pad_id", 43, "int"), ("unk_surface", 44, "str"), ("unk_piece", 45, "str"), ("bos_piece", 46, "str"),
    ("eos_piece", 47, "str"), ("pad_piece", 48, "str"), ("train_extremely_large_corpus", 49, "bool"),
    ("pretokenization_delimiter", 53, "str"), ("seed_sentencepieces_file", 54, "str"),
]
_NORMALIZER_FIELDS: list[tuple[str, int, str]] = [
    ("name", 1, "str"), ("precompiled_charsmap", 2, "bytes"), ("add_dummy_prefix", 3, "bool"),
    ("remove_extra_whitespaces", 4, "bool"), ("escape_whitespaces", 5, "bool"), ("normalization_rule_tsv", 6, "str"),
]


# ==== wire format ====

def _varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64  # int32/int64 negatives: ten-byte two's complement
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _read_varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(buf):
            raise SpmFormatError("truncated SentencePiece model (a number runs past the end of the data)")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise SpmFormatError("not a SentencePiece model (malformed number)")


def _fields(buf: bytes) -> list[tuple[int, int, Any, bytes]]:
    """Splits a message into (number, wire type, value, raw bytes of the whole field)."""
    out = []
    i = 0
    while i < len(buf):
        start = i
        key, i = _read_varint(buf, i)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise SpmFormatError("not a SentencePiece model (field number 0)")
        if wire == 0:
            value, i = _read_varint(buf, i)
        elif wire == 1:
            if i + 8 > len(buf):
                raise SpmFormatError("truncated SentencePiece model")
            value, i = buf[i:i + 8], i + 8
        elif wire == 2:
            n, i = _read_varint(buf, i)
            if i + n > len(buf):
                raise SpmFormatError("truncated SentencePiece model (a field runs past the end of the data)")
            value, i = buf[i:i + n], i + n
        elif wire == 5:
            if i + 4 > len(buf):
                raise SpmFormatError("truncated SentencePiece model")
            value, i = buf[i:i + 4], i + 4
        else:
            raise SpmFormatError(f"not a SentencePiece model (unknown wire type {wire})")
        out.append((number, wire, value, buf[start:i]))
    return out


def _decode_spec(buf: bytes, table: list[tuple[str, int, str]]) -> tuple[dict[str, Any], list[bytes]]:
    by_number = {n: (name, kind) for name, n, kind in table}
    spec: dict[str, Any] = {}
    extra: list[bytes] = []
    for number, wire, value, raw in _fields(buf):
        if number not in by_number:
            extra.append(raw)
            continue
        name, kind = by_number[number]
        base = kind.rstrip("[]")
        try:
            if base == "str":
                v: Any = bytes(value).decode("utf-8")
            elif base == "bytes":
                v = bytes(value)
            elif base == "float":
                v = struct.unpack("<f", value)[0]
            elif base == "bool":
                v = bool(value)
            elif base in ("int", "enum"):
                v = value - (1 << 64) if value >= 1 << 63 else value
            else:
                v = value
        except (UnicodeDecodeError, struct.error, TypeError) as exc:
            raise SpmFormatError(f"not a SentencePiece model (field {name!r} is malformed: {exc})") from None
        if kind.endswith("[]"):
            spec.setdefault(name, []).append(v)
        else:
            spec[name] = v
    return spec, extra


def _encode_spec(spec: dict[str, Any], table: list[tuple[str, int, str]], extra: list[bytes]) -> bytes:
    out = bytearray()
    for name, number, kind in sorted(table, key=lambda t: t[1]):
        if name not in spec or spec[name] is None:
            continue
        values = spec[name] if kind.endswith("[]") else [spec[name]]
        base = kind.rstrip("[]")
        for v in values:
            if base in ("str", "bytes"):
                data = v.encode("utf-8") if base == "str" else bytes(v)
                out += _key(number, 2) + _varint(len(data)) + data
            elif base == "float":
                out += _key(number, 5) + struct.pack("<f", float(v))
            else:
                out += _key(number, 0) + _varint(int(v))
    for raw in extra:
        out += raw
    return bytes(out)


# ==== precompiled_charsmap: the normalizer table ====
#
# sentencepiece stores its character normalization as a "precompiled charsmap": a darts-clone
# double-array trie over the UTF-8 keys, whose values are offsets into a block of NUL-terminated
# replacement strings, preceded by the trie's size in bytes (u32 little-endian). A unit (u32) holds a
# label (low byte; bit 31 set for value units), a has-leaf flag (bit 8) and the XOR offset to its
# children (bits 10.., scaled by 256 when bit 9 is set). We build our own tables from Python's
# unicodedata; sentencepiece's own nmt_nfkc table is not copied.

def build_charsmap(mapping: dict[str, str]) -> bytes:
    """Builds a precompiled charsmap (longest-match rewriting table) from ``key -> replacement``.

    >>> blob = build_charsmap({"\u00bd": "1/2", "ﬁ": "fi"})
    >>> int.from_bytes(blob[:4], "little") % 1024, blob.endswith(bytes([102, 105, 0]))
    (0, True)
    """
    strings = bytearray()
    offsets: dict[str, int] = {}
    trie: dict[Any, Any] = {}
    for key in sorted(mapping, key=lambda k: k.encode("utf-8")):
        if not key or "\0" in key:
            raise ValueError(f"charsmap keys must be non-empty and without NUL, got {key!r}")
        value = mapping[key]
        if value not in offsets:
            offsets[value] = len(strings)
            strings += value.encode("utf-8") + b"\0"
        node = trie
        for b in key.encode("utf-8"):
            node = node.setdefault(b, {})
        node[None] = offsets[value]
    units: list[int] = [0]
    used: set[int] = {0}
    bases: set[int] = set()
    free_from = 1
    queue: list[tuple[dict[Any, Any], int]] = [(trie, 0)]
    while queue:
        node, index = queue.pop()
        labels = sorted(k for k in node if k is not None)
        slots = labels + [0]  # slot 0: the leaf's value, or a filler so a NUL byte never matches
        base = free_from
        while base in bases or any((base ^ label) in used for label in slots) or (index ^ base) >= 1 << 21:
            base += 1
        bases.add(base)
        top = max(base ^ label for label in slots) if slots else 0
        if top >= len(units):
            units.extend([0] * (top + 1 - len(units)))
        units[index] |= (index ^ base) << 10
        if None in node:
            units[index] |= 1 << 8
        units[base] = node.get(None, 0) | (1 << 31)
        used.add(base)
        for label in labels:
            child = base ^ label
            units[child] = label
            used.add(child)
            queue.append((node[label], child))
        while free_from in used or free_from in bases:
            free_from += 1
    units.extend([0] * (-len(units) % 256))  # sentencepiece wants the trie in whole 1024-byte blocks
    trie_bytes = struct.pack(f"<{len(units)}I", *units)
    return struct.pack("<I", len(trie_bytes)) + trie_bytes + bytes(strings)


_NMT_SPACE = {0x09, 0x0A, 0x0C, 0x0D, 0x1680, 0x200B, 0x200C, 0x200E, 0x200F, 0x2028, 0x2029, 0x2581, 0xFEFF, 0xFFFD}
_NMT_DROP = set(range(0x09)) | {0x0B} | set(range(0x0E, 0x20)) | {0x7F, 0x8F, 0x9F}
_CHARSMAPS: dict[str, bytes] = {}


def _nmt(text: str) -> str:
    return "".join(" " if ord(c) in _NMT_SPACE else c for c in text if ord(c) not in _NMT_DROP)


def normalization_charsmap(name: str) -> bytes:
    """Our precompiled charsmap for ``nmt_nfkc``, ``nfkc`` (b"" for ``identity``).

    Built from Python's unicodedata: every character whose NFKC (plus, for
    nmt_nfkc, SentencePiece's NMT rules: odd spaces become spaces, control characters go, U+FF5E
    stays) differs from itself, and every base + combining mark pair that NFC composes.
    sentencepiece's own table also composes longer mark sequences after compatibility
    characters; text with those normalizes differently (rare; see subword.spm).

    >>> len(normalization_charsmap("identity")), len(normalization_charsmap("nfkc")) > 50000
    (0, True)
    """
    import unicodedata

    if name == "identity":
        return b""
    if name not in ("nmt_nfkc", "nfkc"):
        raise ValueError(f"no charsmap for normalization {name!r} (nmt_nfkc, nfkc, identity)")
    if name in _CHARSMAPS:
        return _CHARSMAPS[name]
    cache = _charsmap_cache_path(name, unicodedata.unidata_version)
    if cache is not None and cache.is_file():
        _CHARSMAPS[name] = cache.read_bytes()
        return _CHARSMAPS[name]
    nmt = name == "nmt_nfkc"
    mapping: dict[str, str] = {}
    decomposition = unicodedata.decomposition
    forced = {cp >> 8 for cp in _NMT_SPACE | _NMT_DROP}

    def candidates() -> Any:
        # skip whole 256-code-point blocks that NFKD leaves alone (no decomposition inside)
        for block in range(0x1100):
            if 0xD8 <= block < 0xE0:
                continue
            chars = "".join(map(chr, range(block << 8, (block + 1) << 8)))
            if block in forced or not unicodedata.is_normalized("NFKD", chars):
                yield from range(max(1, block << 8), (block + 1) << 8)

    for cp in candidates():
        if nmt and cp == 0xFF5E:
            continue
        c = chr(cp)
        # only characters with a decomposition (and Hangul syllables, decomposed by rule) can change
        # under NFKC or be the composition of a pair
        if not decomposition(c) and not 0xAC00 <= cp <= 0xD7A3 and cp not in _NMT_SPACE and cp not in _NMT_DROP:
            continue
        out = _nmt(c) if nmt and (cp in _NMT_SPACE or cp in _NMT_DROP) else unicodedata.normalize("NFKC", c)
        if nmt:
            out = _nmt(out)
        if out != c:
            mapping[c] = out
        decomposed = unicodedata.normalize("NFD", c)
        if len(decomposed) == 2 and unicodedata.combining(decomposed[1]) and \
                unicodedata.normalize("NFC", decomposed) == c:
            pair_out = unicodedata.normalize("NFKC", decomposed)
            mapping[decomposed] = _nmt(pair_out) if nmt else pair_out
    _CHARSMAPS[name] = build_charsmap(mapping)
    if cache is not None:
        try:  # a cache only: any failure just means building it again next time
            from subword.formats.atomic import atomic_write_bytes

            cache.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(cache, _CHARSMAPS[name])
        except OSError:
            pass
    return _CHARSMAPS[name]


def _charsmap_cache_path(name: str, unicode_version: str) -> Path | None:
    """Where a generated table is cached (``$SUBWORD_CACHE_DIR`` or ``~/.cache/subword``), or None."""
    root = os.environ.get("SUBWORD_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "subword")
    if not root:
        return None
    return Path(root) / f"charsmap-{name}-unicode{unicode_version}-v1.bin"


# ==== the model ====

@dataclass
class SpmModelFile:
    """The content of a ``.model`` file.

    Attributes:
        pieces: ``(piece, score, type)`` in id order; type numbers as :data:`PIECE_TYPES`.
        model_type: 1 unigram, 2 bpe, 3 word, 4 char (:data:`MODEL_TYPES`).
        trainer_spec: TrainerSpec fields by name (``model_type`` is kept in sync on write).
        normalizer_spec: NormalizerSpec fields by name (``name``, ``precompiled_charsmap``, ...).
        denormalizer_spec: the optional denormalizer, or None.

    >>> SpmModelFile(pieces=[("<unk>", 0.0, 2)]).unk_id
    0
    """

    pieces: list[tuple[str, float, int]]
    model_type: int = 1
    trainer_spec: dict[str, Any] = field(default_factory=dict)
    normalizer_spec: dict[str, Any] = field(default_factory=dict)
    denormalizer_spec: dict[str, Any] | None = None
    _extra: dict[str, list[bytes]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def unk_id(self) -> int:
        """Id of the UNKNOWN piece (a model has exactly one)."""
        kinds = [p[2] for p in self.pieces]
        found = kinds.count(PIECE_TYPES["UNKNOWN"])
        if found != 1:
            raise SpmFormatError(f"a SentencePiece model needs exactly one unknown piece, found {found}")
        return kinds.index(PIECE_TYPES["UNKNOWN"])

    def to_bytes(self) -> bytes:
        """Serialises the ModelProto."""
        out = bytearray()
        for piece, score, ptype in self.pieces:
            data = piece.encode("utf-8")
            body = _key(1, 2) + _varint(len(data)) + data + _key(2, 5) + struct.pack("<f", float(score))
            if ptype != 1:
                body += _key(3, 0) + _varint(int(ptype))
            out += _key(1, 2) + _varint(len(body)) + body
        trainer = dict(self.trainer_spec)
        if self.model_type != 1 or "model_type" in trainer:  # Unigram is the default, often left unset
            trainer["model_type"] = self.model_type
        for number, spec, table, extra in (
            (2, trainer, _TRAINER_FIELDS, self._extra.get("trainer", [])),
            (3, self.normalizer_spec, _NORMALIZER_FIELDS, self._extra.get("normalizer", [])),
        ):
            body = _encode_spec(spec, table, extra)
            out += _key(number, 2) + _varint(len(body)) + body
        if self.denormalizer_spec is not None:
            body = _encode_spec(self.denormalizer_spec, _NORMALIZER_FIELDS, self._extra.get("denormalizer", []))
            out += _key(5, 2) + _varint(len(body)) + body
        for raw in self._extra.get("model", []):
            out += raw
        return bytes(out)

    @classmethod
    def from_bytes(cls, data: bytes) -> SpmModelFile:
        """Parses a ModelProto; raises :class:`SpmFormatError` on anything else.

        The pieces are split out by the Rust core (``_core.spm_parse_model``: parsing 32k small
        messages here took 250 ms); the specs are decoded here. :meth:`_from_bytes_python` is the
        same reader in Python alone, kept as the tests' oracle.
        """
        from subword import _core

        data = bytes(data)
        try:
            pieces, raw_fields = _core.spm_parse_model(data)
        except ValueError as exc:
            raise SpmFormatError(str(exc)) from None
        fields = ((number, wire, data[v0:v1], data[w0:w1]) for number, wire, (w0, w1), (v0, v1) in raw_fields)
        return cls._assemble(pieces, fields)

    @classmethod
    def _from_bytes_python(cls, data: bytes) -> SpmModelFile:
        """:meth:`from_bytes` without the Rust core (slower; the same result)."""
        pieces: list[tuple[str, float, int]] = []
        rest = []
        for number, wire, value, raw in _fields(bytes(data)):
            if number == 1 and wire == 2:
                pieces.append(_piece(value))
            else:
                rest.append((number, wire, value, raw))
        return cls._assemble(pieces, rest)

    @classmethod
    def _assemble(cls, pieces: list[tuple[str, float, int]],
                  fields: Iterable[tuple[int, int, Any, bytes]]) -> SpmModelFile:
        """The model from its pieces and its other top-level fields (number, wire, value, raw)."""
        trainer: dict[str, Any] = {}
        normalizer: dict[str, Any] = {}
        denormalizer: dict[str, Any] | None = None
        extra: dict[str, list[bytes]] = {}
        for number, wire, value, raw in fields:
            if number == 2 and wire == 2:
                trainer, extra["trainer"] = _decode_spec(value, _TRAINER_FIELDS)
            elif number == 3 and wire == 2:
                normalizer, extra["normalizer"] = _decode_spec(value, _NORMALIZER_FIELDS)
            elif number == 5 and wire == 2:
                denormalizer, extra["denormalizer"] = _decode_spec(value, _NORMALIZER_FIELDS)
            elif wire in (0, 1, 2, 5) and number >= 4:  # 4: self-test data, kept as it is
                extra.setdefault("model", []).append(raw)
            else:
                raise SpmFormatError(f"not a SentencePiece model (unexpected field {number})")
        if not pieces:
            raise SpmFormatError("not a SentencePiece model (no pieces)")
        model = cls(pieces=pieces, model_type=int(trainer.get("model_type", 1)), trainer_spec=trainer,
                    normalizer_spec=normalizer, denormalizer_spec=denormalizer, _extra=extra)
        _ = model.unk_id  # validates: exactly one unknown piece
        return model


def _piece(value: bytes) -> tuple[str, float, int]:
    """One ``ModelProto.SentencePiece`` message: (piece, score, type)."""
    piece, score, ptype = None, 0.0, 1
    for n2, w2, v2, _ in _fields(value):
        if n2 == 1 and w2 == 2:
            try:
                piece = bytes(v2).decode("utf-8")
            except UnicodeDecodeError:
                raise SpmFormatError("not a SentencePiece model (a piece is not UTF-8)") from None
        elif n2 == 2 and w2 == 5:
            score = struct.unpack("<f", v2)[0]
        elif n2 == 3 and w2 == 0:
            ptype = v2
    if not piece:
        raise SpmFormatError("not a SentencePiece model (a piece is empty)")
    if ptype not in PIECE_TYPES.values():
        raise SpmFormatError(f"not a SentencePiece model (unknown piece type {ptype})")
    return piece, score, ptype


def model_specs(data: bytes) -> tuple[int, dict[str, Any], dict[str, Any]]:
    """``(model_type, trainer_spec, normalizer_spec)`` of a ``.model`` file's bytes, without decoding
    its pieces: for a reader that hands the pieces to the Rust core
    (``_core.SpmBpeEncoder.from_model_bytes``) and would only throw the Python list away.

    Raises:
        SpmFormatError: malformed data (the pieces are checked to be well-formed messages).

    >>> model_specs(SpmModelFile(pieces=[("<unk>", 0.0, 2)], model_type=2).to_bytes())[0]
    2
    """
    from subword import _core

    data = bytes(data)
    try:
        _, raw_fields = _core.spm_parse_model(data, pieces=False)
    except ValueError as exc:
        raise SpmFormatError(str(exc)) from None
    trainer: dict[str, Any] = {}
    normalizer: dict[str, Any] = {}
    for number, wire, _, (v0, v1) in raw_fields:
        if number == 2 and wire == 2:
            trainer, _ = _decode_spec(data[v0:v1], _TRAINER_FIELDS)
        elif number == 3 and wire == 2:
            normalizer, _ = _decode_spec(data[v0:v1], _NORMALIZER_FIELDS)
    return int(trainer.get("model_type", 1)), trainer, normalizer


def read_model(path: str | os.PathLike[str]) -> SpmModelFile:
    """Reads a ``.model`` file.

    Raises:
        SpmFormatError: the file is truncated or is not a SentencePiece model.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "m.model"
    >>> write_model(p, SpmModelFile(pieces=[("<unk>", 0.0, 2), ("▁a", -1.0, 1)], model_type=2))
    >>> read_model(p).pieces[1]
    ('▁a', -1.0, 1)
    """
    data = Path(path).read_bytes()
    try:
        return SpmModelFile.from_bytes(data)
    except SpmFormatError as exc:
        raise SpmFormatError(f"{path}: {exc}") from None


def write_model(path: str | os.PathLike[str], model: SpmModelFile) -> None:
    """Writes ``model`` atomically (temp file in the same folder, then rename).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "m.model"
    >>> write_model(p, SpmModelFile(pieces=[("<unk>", 0.0, 2)]))
    >>> p.stat().st_size > 0
    True
    """
    from subword.formats.atomic import atomic_write_bytes

    _ = model.unk_id  # validates: exactly one unknown piece
    atomic_write_bytes(path, model.to_bytes())


# ==== the Tokenizer of a .model ====

def tokenizer_from_model(model: SpmModelFile):  # -> Tokenizer
    """The :class:`~subword.Tokenizer` of a ``.model``'s content: a
    :class:`~subword.normalizers.SentencePieceNormalizer` and a SentencePiece Unigram or BPE model
    (:mod:`subword.model_spm`), which give sentencepiece's ids, pieces, offsets and decode.

    Raises:
        subword.errors.ModelError: a model type other than Unigram and BPE, or an invalid model.

    >>> tok = tokenizer_from_model(SpmModelFile(pieces=[("<unk>", 0.0, 2), ("▁a", -1.0, 1), ("a", -2.0, 1)]))
    >>> tok.encode("a a").tokens
    ['▁a', '▁a']
    """
    from subword.model_spm import model_for
    from subword.normalizers import SentencePieceNormalizer
    from subword.tokenizer import Tokenizer

    return Tokenizer(model_for(model),
                     normalizer=SentencePieceNormalizer.from_specs(model.normalizer_spec, model.trainer_spec))


def load_tokenizer(path: str | os.PathLike[str]):  # -> Tokenizer
    """:func:`tokenizer_from_model` of the file at ``path`` (any name: ``tokenizer.model``, ``x.model.v3``).

    Raises:
        SpmFormatError: truncated or not a SentencePiece model (the message names the path).
    """
    from subword.errors import ModelError

    tok = _load_fast(Path(path).read_bytes())
    if tok is not None:
        return tok
    model = read_model(path)
    try:
        tok = tokenizer_from_model(model)
        tok._native()  # builds the core now, so an unusable model fails here, naming the file
    except (ModelError, ValueError) as exc:
        raise SpmFormatError(f"{path}: {exc}") from None
    return tok


def _load_fast(data: bytes):  # -> Tokenizer | None
    """The tokenizer of a ``.model``'s bytes with its pipeline built in Rust straight from the bytes
    (``_core.CoreSpmTokenizer.from_model_bytes``) and its Python pieces built only when asked for. ``None``
    for anything :func:`load_tokenizer`'s Python reader would refuse or read differently (it then reports)."""
    from subword._native import has_core_class

    if not has_core_class("CoreSpmTokenizer"):
        return None
    from subword import _core
    from subword.model_spm import SentencePieceBPE, SentencePieceUnigram
    from subword.normalizers import SentencePieceNormalizer
    from subword.tokenizer import Tokenizer

    core_cls = _core.CoreSpmTokenizer
    if not hasattr(core_cls, "from_model_bytes"):
        return None
    try:
        _, raw_fields = _core.spm_parse_model(data, pieces=False)
        trainer: dict[str, Any] = {}
        normalizer: dict[str, Any] = {}
        for number, wire, _, (v0, v1) in raw_fields:  # the fields SpmModelFile._assemble accepts
            if number == 2 and wire == 2:
                trainer, _ = _decode_spec(data[v0:v1], _TRAINER_FIELDS)
            elif number == 3 and wire == 2:
                normalizer, _ = _decode_spec(data[v0:v1], _NORMALIZER_FIELDS)
            elif number == 5 and wire == 2:
                _decode_spec(data[v0:v1], _NORMALIZER_FIELDS)
            elif not (wire in (0, 1, 2, 5) and number >= 4):
                return None
        model_type = int(trainer.get("model_type", 1))
        cls = {MODEL_TYPES["unigram"]: SentencePieceUnigram, MODEL_TYPES["bpe"]: SentencePieceBPE}.get(model_type)
        if cls is None:
            return None
        norm = SentencePieceNormalizer.from_specs(normalizer, trainer)
        core = core_cls.from_model_bytes(data, model_type, norm.spec_json(), bytes(norm.precompiled_charsmap) or None,
                                         bool(trainer.get("byte_fallback", False)),
                                         trainer.get("unk_surface", " \u2047 "))
    except (SpmFormatError, ValueError, TypeError):
        return None
    tok = Tokenizer(cls._deferred(data, trainer), normalizer=norm)
    tok._core = core
    return tok


def model_file_of(tok: Any) -> SpmModelFile:
    """The ``.model`` content of a tokenizer: its own file (with the normalizer's current options) for a
    SentencePiece model, or the file a ``tokenizer.json`` was converted from.

    Raises:
        subword.formats.convert.ConversionError: no exact SentencePiece equivalent (the message says why).
    """
    import dataclasses

    from subword.formats.convert import ConversionError, hf_json_to_spm
    from subword.model_spm import SentencePieceModel
    from subword.normalizers import SentencePieceNormalizer

    if not isinstance(tok.model, SentencePieceModel):
        from subword.formats import hf_json

        return hf_json_to_spm(hf_json.to_dict(tok))
    original = tok.model.file
    norm = tok.normalizer
    if not isinstance(norm, SentencePieceNormalizer):
        raise ConversionError(f"a .model needs the SentencePiece normalizer, this tokenizer has {norm!r}")
    if norm == SentencePieceNormalizer.from_specs(original.normalizer_spec, original.trainer_spec):
        return original
    nspec = dict(original.normalizer_spec, name=norm.name, add_dummy_prefix=norm.add_dummy_prefix,
                 remove_extra_whitespaces=norm.remove_extra_whitespaces, escape_whitespaces=norm.escape_whitespaces)
    if norm.precompiled_charsmap:
        nspec["precompiled_charsmap"] = bytes(norm.precompiled_charsmap)
    else:
        nspec.pop("precompiled_charsmap", None)
    tspec = dict(original.trainer_spec, treat_whitespace_as_suffix=norm.treat_whitespace_as_suffix)
    return dataclasses.replace(original, normalizer_spec=nspec, trainer_spec=tspec)
