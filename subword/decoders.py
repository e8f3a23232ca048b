"""Decoders: turn a list of tokens back into text.

Each class serialises to the HF ``tokenizer.json`` ``"decoder"`` dict and has a reference ``decode``.

>>> ByteLevel().decode(["Hello", "Ġworld"])
'Hello world'
>>> BPEDecoder().decode(["hel", "lo</w>", "world</w>"])
'hello world'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from subword._components import Component, Registry
from subword.pre_tokenizers import bytes_to_unicode

__all__ = ["Decoder", "ByteLevel", "BPEDecoder", "WordPiece", "from_dict", "REGISTRY"]

REGISTRY: Registry["Decoder"] = Registry("decoder")


class Decoder(Component):
    """Base class: a serialisable token-list -> text function."""

    def decode(self, tokens: list[str]) -> str:
        """Join ``tokens`` into text (reference implementation).

        >>> BPEDecoder(suffix="_").decode(["a_", "b_"])
        'a b'
        """
        raise NotImplementedError


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
