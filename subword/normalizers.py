"""Normalizers: text -> text transforms applied before pre-tokenization.

Each class is a spec that serialises to the HF ``tokenizer.json`` ``"normalizer"`` dict and carries a
short pure-Python *reference* ``normalize_str``; the Rust core (``_core.Normalizer``) implements the same
semantics fast and the tests hold the three (reference, Rust, HF) equal.

Semantics worth knowing (checked against ``tokenizers`` 0.23.3):

* ``Lowercase`` lowercases **char by char** (``"ΣΑΣ"`` -> ``"σασ"``, no final-sigma rule, unlike
  ``str.lower``), and a char may expand (``"İ"`` -> ``"i̇"``).
* ``StripAccents`` only removes combining marks (General_Category M*); it does not decompose, so
  ``"é"`` (precomposed) survives. Use ``Sequence([NFD(), StripAccents()])`` to strip accents.
* Unicode version: we use the running Python's Unicode database (14.0 on Python 3.11), like our Rust core.
  HF's tables are older, so for code points whose decomposition or mark status came later (about 300 rare
  ones, e.g. U+32FF SQUARE ERA NAME REIWA under NFKC) HF leaves the char unchanged and we do not.
  ``tests/test_normalizers.py`` scans every code point and pins that this is the only kind of difference.

>>> Sequence([NFD(), StripAccents(), Lowercase()]).normalize_str("Héllo")
'hello'
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any, ClassVar

from subword._components import Component, Registry

__all__ = [
    "Normalizer",
    "NFC",
    "NFD",
    "NFKC",
    "NFKD",
    "Lowercase",
    "StripAccents",
    "Sequence",
    "BertNormalizer",
    "from_dict",
    "REGISTRY",
]

REGISTRY: Registry["Normalizer"] = Registry("normalizer")


class Normalizer(Component):
    """Base class: a serialisable text transform with a reference implementation."""

    def normalize_str(self, text: str) -> str:
        """Return the normalized text (pure-Python reference implementation).

        Args:
            text: Any string.

        Returns:
            The normalized string.

        >>> Lowercase().normalize_str("ABC")
        'abc'
        """
        raise NotImplementedError

    def native(self) -> Any:
        """The equivalent Rust normalizer, ``_core.Normalizer(self.to_json())``.

        Raises:
            CoreUnavailableError: the compiled core has no ``Normalizer`` class.
        """
        from subword._native import core_class

        return core_class("Normalizer")(self.to_json())


def from_dict(data: object, source: str = "<string>") -> Normalizer:
    """Build a normalizer from its HF ``tokenizer.json`` dict.

    Args:
        data: The dict, e.g. ``{"type": "NFKC"}``.
        source: Where it came from, for error messages.

    Raises:
        subword.errors.UnsupportedComponentError: unknown ``"type"``.
        subword.errors.FormatError: malformed dict.

    >>> from_dict({"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]})
    Sequence(normalizers=(NFC(), Lowercase()))
    """
    return REGISTRY.from_dict(data, source)


class _UnicodeForm(Normalizer):
    """Shared body of the four Unicode normalization forms (the form is the ``type_name``)."""

    def normalize_str(self, text: str) -> str:
        return unicodedata.normalize(self.type_name, text)  # type: ignore[arg-type]


@REGISTRY.register
@dataclass(frozen=True)
class NFC(_UnicodeForm):
    """Unicode canonical composition. ``NFC().normalize_str("e\\u0301") == "é"``"""

    type_name: ClassVar[str] = "NFC"


@REGISTRY.register
@dataclass(frozen=True)
class NFD(_UnicodeForm):
    """Unicode canonical decomposition. ``NFD().normalize_str("é") == "e\\u0301"``"""

    type_name: ClassVar[str] = "NFD"


@REGISTRY.register
@dataclass(frozen=True)
class NFKC(_UnicodeForm):
    """Unicode compatibility composition. ``NFKC().normalize_str("ﬁ") == "fi"``"""

    type_name: ClassVar[str] = "NFKC"


@REGISTRY.register
@dataclass(frozen=True)
class NFKD(_UnicodeForm):
    """Unicode compatibility decomposition. ``NFKD().normalize_str("ﬁ") == "fi"``"""

    type_name: ClassVar[str] = "NFKD"


@REGISTRY.register
@dataclass(frozen=True)
class Lowercase(Normalizer):
    """Lowercase each character independently (HF semantics: no context-dependent final sigma).

    >>> Lowercase().normalize_str("ΣΑΣ İ")
    'σασ i̇'
    """

    type_name: ClassVar[str] = "Lowercase"

    def normalize_str(self, text: str) -> str:
        # str.lower() applies the final-sigma rule to whole strings; HF maps chars one at a time.
        return "".join(c.lower() for c in text)


@REGISTRY.register
@dataclass(frozen=True)
class StripAccents(Normalizer):
    """Remove combining marks (General_Category Mn, Mc, Me); does not decompose first.

    >>> StripAccents().normalize_str("e\\u0301t\\u00e9")
    'eté'
    """

    type_name: ClassVar[str] = "StripAccents"

    def normalize_str(self, text: str) -> str:
        return "".join(c for c in text if not unicodedata.category(c).startswith("M"))


@REGISTRY.register
@dataclass(frozen=True)
class Sequence(Normalizer):
    """Apply normalizers in order.

    Args:
        normalizers: The normalizers, applied left to right (a list is accepted and stored as a tuple;
            nested sequences are flattened).

    >>> Sequence([NFKC(), Lowercase()]).normalize_str("ＡＢＣ")
    'abc'
    """

    type_name: ClassVar[str] = "Sequence"
    normalizers: tuple[Normalizer, ...] = ()

    def __post_init__(self) -> None:
        flat: list[Normalizer] = []
        for i, n in enumerate(self.normalizers):
            if not isinstance(n, Normalizer):
                raise TypeError(f"Sequence.normalizers[{i}] must be a Normalizer, got {type(n).__name__}")
            # Nested sequences are flattened, as HF's Python constructor does; the result is the same.
            flat.extend(n.normalizers if isinstance(n, Sequence) else [n])
        object.__setattr__(self, "normalizers", tuple(flat))

    def normalize_str(self, text: str) -> str:
        for n in self.normalizers:
            text = n.normalize_str(text)
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type_name, "normalizers": [n.to_dict() for n in self.normalizers]}

    @classmethod
    def _from_fields(cls, fields: dict[str, Any], registry: Registry[Any], source: str) -> "Sequence":
        items = fields.get("normalizers", [])
        if not isinstance(items, list):
            raise TypeError("'normalizers' must be a list")
        return cls(tuple(registry.from_dict(item, source) for item in items))


# ==== BERT ====

#: Unicode White_Space (what Rust's ``char::is_whitespace`` tests, and HF's BERT components use).
WHITE_SPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000"
                        + "".join(chr(c) for c in range(0x2000, 0x200B)))

#: HF's CJK ranges (``normalizers/bert.rs::is_chinese_char``); note U+2B920, not Google's U+2B820.
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
               (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def is_chinese_char(c: str) -> bool:
    """True for the CJK ideographs BERT puts spaces around.

    >>> is_chinese_char("中"), is_chinese_char("a")
    (True, False)
    """
    cp = ord(c)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def _bert_removed(c: str) -> bool:
    # HF clean_text: NUL, U+FFFD and Cc/Cf/Co/Cs except \t \n \r. Unassigned chars (Cn) stay: HF's
    # category tables have no Cn entries (measured on tokenizers 0.23.3).
    if c in "\t\n\r":
        return False
    return c == "\x00" or c == "\ufffd" or unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs")


@REGISTRY.register
@dataclass(frozen=True)
class BertNormalizer(Normalizer):
    """HF ``BertNormalizer``: BERT's text clean-up, CJK spacing, accent stripping and lowercasing.

    Steps, in HF's order:

    1. ``clean_text``: drop NUL, U+FFFD and every char of general category Cc, Cf, Co or Cs (control,
       format, private use, surrogate) except tab, newline and carriage return; map White_Space to ``" "``.
       Unassigned chars (Cn) are kept, as HF does;
    2. ``handle_chinese_chars``: put a space on each side of every CJK ideograph (HF's ranges);
    3. strip accents (``strip_accents``, which defaults to ``lowercase`` when None): NFD, then drop
       nonspacing marks (Mn only; Mc/Me stay, unlike :class:`StripAccents`);
    4. ``lowercase``: char by char.

    Unicode version: we use the running Python's tables (Rust: Unicode 16), HF older ones; the few chars
    that became Cf or Mn since are kept by HF and removed here. ``tests/test_bert_pipeline.py`` pins the list.

    >>> BertNormalizer().normalize_str("Héllo\\tWörld 中文\\x00!")
    'hello world  中  文 !'
    """

    type_name: ClassVar[str] = "BertNormalizer"
    clean_text: bool = True
    handle_chinese_chars: bool = True
    strip_accents: bool | None = None
    lowercase: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.strip_accents is not None and not isinstance(self.strip_accents, bool):
            raise TypeError(f"BertNormalizer.strip_accents must be a bool or None, got {self.strip_accents!r}")

    def normalize_str(self, text: str) -> str:
        if self.clean_text:
            text = "".join(" " if c in WHITE_SPACE else c for c in text if not _bert_removed(c))
        if self.handle_chinese_chars:
            text = "".join(f" {c} " if is_chinese_char(c) else c for c in text)
        strip = self.lowercase if self.strip_accents is None else self.strip_accents
        if strip:
            text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
        if self.lowercase:
            text = "".join(c.lower() for c in text)
        return text
