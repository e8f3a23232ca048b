"""Decoders: turn a list of tokens back into text.

Each class serialises to the HF ``tokenizer.json`` ``"decoder"`` dict and has a reference ``decode``.

>>> ByteLevel().decode(["Hello", "Ġworld"])
'Hello world'
>>> BPEDecoder().decode(["hel", "lo</w>", "world</w>"])
'hello world'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from subword._components import Component, Registry
from subword.pre_tokenizers import bytes_to_unicode

__all__ = ["Decoder", "ByteLevel", "BPEDecoder", "WordPiece", "Sequence", "Metaspace", "ByteFallback", "Fuse",
           "Replace", "Strip", "CTC", "from_dict", "REGISTRY"]

REGISTRY: Registry["Decoder"] = Registry("decoder")


class Decoder(Component):
    """Base class: a serialisable token-list -> text function."""

    def decode(self, tokens: list[str]) -> str:
        """Join ``tokens`` into text (reference implementation).

        >>> BPEDecoder(suffix="_").decode(["a_", "b_"])
        'a b'
        """
        if type(self).decode_chain is Decoder.decode_chain:
            raise NotImplementedError
        return "".join(self.decode_chain(tokens))

    def decode_chain(self, tokens: list[str]) -> list[str]:
        """HF's ``decode_chain``: tokens in, tokens out (what a :class:`Sequence` passes along); by default
        the whole decoded text as one token.

        >>> Fuse().decode_chain(["a", "b"])
        ['ab']
        """
        return [self.decode(tokens)]


def from_dict(data: object, source: str = "<string>") -> Decoder:
    """Build a decoder from its HF ``tokenizer.json`` dict.

    Raises:
        subword.errors.UnsupportedComponentError: unknown ``"type"``.
        subword.errors.FormatError: malformed dict.

    >>> from_dict({"type": "BPEDecoder", "suffix": "</w>"})
    BPEDecoder(suffix='</w>')
    """
    return REGISTRY.from_dict(data, source)


@REGISTRY.register
@dataclass(frozen=True)
class ByteLevel(Decoder):
    """Map byte-level chars back to bytes and decode UTF-8, replacing invalid sequences with U+FFFD.

    The three flags are HF's (it shares one struct between pre-tokenizer, processor and decoder); they do
    not change decoding and are kept so files round-trip unchanged.

    >>> ByteLevel().decode(["Ġh", "Ã"])
    ' h\\ufffd'
    """

    type_name: ClassVar[str] = "ByteLevel"
    add_prefix_space: bool = True
    trim_offsets: bool = True
    use_regex: bool = True

    def decode(self, tokens: list[str]) -> str:
        inverse = {c: b for b, c in enumerate(bytes_to_unicode())}
        data = bytearray()
        for ch in "".join(tokens):
            if ch in inverse:
                data.append(inverse[ch])
            else:  # a char outside the table (e.g. an added token): keep its own UTF-8 bytes
                data.extend(ch.encode("utf-8"))
        return data.decode("utf-8", errors="replace")


@REGISTRY.register
@dataclass(frozen=True)
class BPEDecoder(Decoder):
    """Decoder for models with an end-of-word suffix: the suffix becomes a space (none after the last token).

    Args:
        suffix: The model's ``end_of_word_suffix``.

    >>> BPEDecoder().decode(["a</w>", "b</w>"])
    'a b'
    """

    type_name: ClassVar[str] = "BPEDecoder"
    suffix: str = "</w>"

    def decode(self, tokens: list[str]) -> str:
        last = len(tokens) - 1
        return "".join(t.replace(self.suffix, "" if i == last else " ") for i, t in enumerate(tokens))


_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
            (" do not", " don't"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


@REGISTRY.register
@dataclass(frozen=True)
class WordPiece(Decoder):
    """HF ``decoders.WordPiece``: glue ``##`` pieces to the previous token, a space before the others.

    Args:
        prefix: The model's continuing-subword prefix.
        cleanup: Apply HF's English detokenization fix-ups to each token (``" ."`` -> ``"."``, ``" n't"``
            -> ``"n't"``, ...).

    >>> WordPiece().decode(["un", "##aff", "##able", "!", "do", "n't"])
    "unaffable! don't"
    """

    type_name: ClassVar[str] = "WordPiece"
    prefix: str = "##"
    cleanup: bool = True

    def decode(self, tokens: list[str]) -> str:
        out = []
        for i, t in enumerate(tokens):
            if i:
                t = t[len(self.prefix):] if t.startswith(self.prefix) else " " + t
            if self.cleanup:
                for a, b in _CLEANUP:
                    t = t.replace(a, b)
            out.append(t)
        return "".join(out)


# ==== SentencePiece-style decoders (T5/ALBERT: Metaspace; Llama: Replace, ByteFallback, Fuse, Strip) ====
# These work token-wise in HF (`decode_chain`: tokens in, tokens out), which matters inside a Sequence.


@REGISTRY.register
@dataclass(frozen=True)
class Sequence(Decoder):
    """Apply decoders in order, each to the token list the previous one returned.

    >>> Sequence([Replace({"String": "▁"}, " "), Fuse(), Strip(" ", 1, 0)]).decode(["▁Hi", "▁there"])
    'Hi there'
    """

    type_name: ClassVar[str] = "Sequence"
    decoders: tuple[Decoder, ...] = ()

    def __post_init__(self) -> None:
        for i, d in enumerate(self.decoders):
            if not isinstance(d, Decoder):
                raise TypeError(f"Sequence.decoders[{i}] must be a Decoder, got {type(d).__name__}")
        object.__setattr__(self, "decoders", tuple(self.decoders))

    def decode_chain(self, tokens: list[str]) -> list[str]:
        for d in self.decoders:
            tokens = d.decode_chain(tokens)
        return tokens

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type_name, "decoders": [d.to_dict() for d in self.decoders]}

    @classmethod
    def _from_fields(cls, fields: dict[str, Any], registry: Registry[Any], source: str) -> "Sequence":
        items = fields.get("decoders", [])
        if not isinstance(items, list):
            raise TypeError("'decoders' must be a list")
        return cls(tuple(registry.from_dict(item, source) for item in items))


@REGISTRY.register
@dataclass(frozen=True)
class Metaspace(Decoder):
    """HF ``Metaspace`` decoder: ``▁`` back to spaces; in the first token they are dropped unless
    ``prepend_scheme`` is ``"never"``.

    >>> Metaspace().decode(["▁Hey", "▁friend", "!"])
    'Hey friend!'
    """

    type_name: ClassVar[str] = "Metaspace"
    replacement: str = "\u2581"
    prepend_scheme: str = "always"
    split: bool = True

    def decode_chain(self, tokens: list[str]) -> list[str]:
        drop_first = self.prepend_scheme != "never"
        return [t.replace(self.replacement, "" if i == 0 and drop_first else " ") for i, t in enumerate(tokens)]


@REGISTRY.register
@dataclass(frozen=True)
class ByteFallback(Decoder):
    """HF ``ByteFallback``: runs of ``<0xXX>`` tokens become their UTF-8 text, or one U+FFFD per byte when
    the run is not valid UTF-8.

    >>> ByteFallback().decode(["a", "<0xE2>", "<0x98>", "<0x83>", "b", "<0xFF>"]) == "a☃b\\ufffd"
    True
    """

    type_name: ClassVar[str] = "ByteFallback"

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out: list[str] = []
        run = bytearray()

        def flush() -> None:
            if run:
                try:
                    out.append(run.decode("utf-8"))
                except UnicodeDecodeError:
                    out.extend("\ufffd" * len(run))
                run.clear()

        for t in tokens:
            byte = _byte_token(t)
            if byte is None:
                flush()
                out.append(t)
            else:
                run.append(byte)
        flush()
        return out


def _byte_token(t: str) -> int | None:
    if len(t) == 6 and t.startswith("<0x") and t.endswith(">"):
        try:
            return int(t[3:5], 16)
        except ValueError:
            return None
    return None


@REGISTRY.register
@dataclass(frozen=True)
class Fuse(Decoder):
    """HF ``Fuse``: all tokens joined into one. ``Fuse().decode(["a", "b"]) == "ab"``"""

    type_name: ClassVar[str] = "Fuse"

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return ["".join(tokens)]


@REGISTRY.register
@dataclass(frozen=True)
class Replace(Decoder):
    """HF ``Replace`` decoder: ``pattern`` (``{"String": s}`` or ``{"Regex": r}``) -> ``content`` in each token.

    >>> Replace({"String": "▁"}, " ").decode(["▁a", "▁b"])
    ' a b'
    """

    type_name: ClassVar[str] = "Replace"
    pattern: dict[str, str]
    content: str

    def __post_init__(self) -> None:
        super().__post_init__()
        from subword.normalizers import _check_pattern

        _check_pattern("Replace", self.pattern)

    def __hash__(self) -> int:
        return hash((self.type_name, tuple(self.pattern.items()), self.content))

    def decode_chain(self, tokens: list[str]) -> list[str]:
        from subword.normalizers import replace_pattern

        return [replace_pattern(self.pattern, self.content, t) for t in tokens]


@REGISTRY.register
@dataclass(frozen=True)
class Strip(Decoder):
    """HF ``Strip`` decoder: up to ``start`` leading and ``stop`` trailing ``content`` chars off each token.

    >>> Strip(" ", 1, 0).decode([" a", "  b"])
    'a b'
    """

    type_name: ClassVar[str] = "Strip"
    content: str = " "
    start: int = 0
    stop: int = 0

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = []
        for t in tokens:
            a = 0
            while a < min(self.start, len(t)) and t[a] == self.content:
                a += 1
            b = len(t)
            while len(t) - b < min(self.stop, len(t) - a) and t[b - 1] == self.content:
                b -= 1
            out.append(t[a:b])
        return out


@REGISTRY.register
@dataclass(frozen=True)
class CTC(Decoder):
    """HF ``CTC`` (speech models such as Wav2Vec2): consecutive repeated tokens collapse into one, the pad
    token is removed from each, then with ``cleanup`` the WordPiece clean-up runs and the word delimiter
    becomes a space; tokens left empty are dropped.

    >>> CTC().decode(["<pad>", "h", "h", "e", "l", "<pad>", "l", "o", "|", "w", "o"])
    'hello wo'
    """

    type_name: ClassVar[str] = "CTC"
    pad_token: str = "<pad>"
    word_delimiter_token: str = "|"
    cleanup: bool = True

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out: list[str] = []
        previous: str | None = None
        for t in tokens:
            if t == previous:
                continue
            previous = t
            piece = _replace_all(t, self.pad_token, "")
            if self.cleanup:
                for a, b in _CLEANUP:
                    piece = piece.replace(a, b)
                piece = _replace_all(piece, self.word_delimiter_token, " ")
            if piece:
                out.append(piece)
        return out


def _replace_all(text: str, old: str, new: str) -> str:
    """``str.replace`` as Rust's (an empty pattern matches before every char and at the end, like Python's)."""
    return text.replace(old, new)
