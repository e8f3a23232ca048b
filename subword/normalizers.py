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

import functools
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
    "Nmt",
    "Strip",
    "Prepend",
    "Replace",
    "Precompiled",
    "ByteLevel",
    "SentencePieceNormalizer",
    "replace_pattern",
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


# ==== SentencePiece conversions (T5, ALBERT, XLNet, Llama, SentencePieceUnigramTokenizer) ====

_NMT_REMOVED = frozenset([*range(0x01, 0x09), 0x0B, *range(0x0E, 0x20), 0x7F, 0x8F, 0x9F])
_NMT_SPACE = frozenset([0x09, 0x0A, 0x0C, 0x0D, 0x1680, *range(0x200B, 0x2010), 0x2028, 0x2029, 0x2581, 0xFEFF,
                        0xFFFD])


@REGISTRY.register
@dataclass(frozen=True)
class Nmt(Normalizer):
    """HF ``Nmt``: drop C0 controls (not NUL, tab, LF, FF, CR), DEL, U+008F, U+009F; turn tab, LF, FF, CR,
    U+1680, U+200B..U+200F, U+2028, U+2029, U+2581, U+FEFF and U+FFFD into spaces.

    >>> Nmt().normalize_str("a\\tb\\x07c\\u200bd")
    'a bc d'
    """

    type_name: ClassVar[str] = "Nmt"

    def normalize_str(self, text: str) -> str:
        return "".join(" " if ord(c) in _NMT_SPACE else c for c in text if ord(c) not in _NMT_REMOVED)


@REGISTRY.register
@dataclass(frozen=True)
class Strip(Normalizer):
    """HF ``Strip``: remove leading and/or trailing whitespace (Unicode White_Space).

    >>> Strip(strip_left=False).normalize_str("  a b  ")
    '  a b'
    """

    type_name: ClassVar[str] = "Strip"
    strip_left: bool = True
    strip_right: bool = True

    def normalize_str(self, text: str) -> str:
        chars = "".join(WHITE_SPACE)
        if self.strip_left:
            text = text.lstrip(chars)
        if self.strip_right:
            text = text.rstrip(chars)
        return text


@REGISTRY.register
@dataclass(frozen=True)
class Prepend(Normalizer):
    """HF ``Prepend``: put ``prepend`` before any non-empty text (Llama's ``"▁"``).

    >>> Prepend("▁").normalize_str("hi"), Prepend("▁").normalize_str("")
    ('▁hi', '')
    """

    type_name: ClassVar[str] = "Prepend"
    prepend: str = "\u2581"

    def normalize_str(self, text: str) -> str:
        return self.prepend + text if text else text


#: The regex engines a pattern can be read with: HF's (``tokenizer.json``) and tiktoken's.
ENGINES = ("oniguruma", "fancy-regex")


def _check_pattern(owner: str, pattern: object, engine: str = "oniguruma") -> None:
    """A pattern is ``{"String": s}`` or ``{"Regex": r}`` (HF's JSON form) that its engine compiles.

    Regexes run on the reference library's own engine in the core (Oniguruma for ``tokenizer.json``, as HF
    ``tokenizers`` runs them; fancy-regex for tiktoken's patterns), so any pattern its library accepts is
    accepted, and one it refuses is refused with that engine's message; the check asks the core itself.
    """
    if not (isinstance(pattern, dict) and len(pattern) == 1 and set(pattern) <= {"String", "Regex"}
            and isinstance(next(iter(pattern.values())), str) and next(iter(pattern.values()))):
        raise TypeError(f"{owner}.pattern must be {{'String': str}} or {{'Regex': str}}, got {pattern!r}")
    if engine not in ENGINES:
        raise ValueError(f"{owner}.engine must be one of {ENGINES}, got {engine!r}")
    if "Regex" in pattern:
        _compile_in_core(owner, pattern["Regex"], engine)


@functools.lru_cache(maxsize=256)
def _compile_in_core(owner: str, source: str, engine: str) -> None:
    import json

    from subword import _core

    spec = {"type": "Split", "pattern": {"Regex": source}, "behavior": "Isolated", "invert": False}
    if engine != "oniguruma":
        spec["engine"] = engine
    try:
        _core.PreTokenizer(json.dumps(spec))
    except ValueError as exc:
        reason = str(exc).split(": ", 1)[-1]
        raise ValueError(f"{owner} regex {source!r} is refused: {reason}") from None


#: Oniguruma's ``\\w`` (as in tokenizers 0.23.3, measured over every assigned code point) for the ``regex``
#: module: its own ``\\w`` minus Join_Control (ZWJ, ZWNJ), plus, outside brackets only, the Latin-1 number
#: signs ``² ³ ¹ ¼ ½ ¾`` (Oniguruma's ``[\\w]`` leaves them out, its ``\\w`` does not).
_ONIGURUMA_WORD = r"[[\w--\p{Join_Control}]\xB2\xB3\xB9\xBC-\xBE]"
_ONIGURUMA_WORD_IN_CLASS = r"[\w--\p{Join_Control}]"


#: An atom (``\p{..}``, an escape, a flat bracket class or a plain char) with an interval and a ``+`` after it.
_POSSESSIVE_INTERVAL = r"((?:\\[pP]\{[^}]*\}|\\.|\[(?:\\.|[^\]\\])*\]|[^\\\[\](){}|])\{\d+(?:,\d*)?\})\+"


@functools.lru_cache(maxsize=64)
def _compiled(source: str, engine: str = "oniguruma") -> Any:
    """The pattern for the ``regex`` module, read as its engine reads it where the module can say so.

    Oniguruma (HF): multi-line anchors, version 1 (set operations such as ``[\\p{L}&&\\p{Greek}]``), its
    reading of ``X{n,m}+`` and its word class for ``\\w`` / ``\\W``. fancy-regex (tiktoken): text anchors
    and possessive intervals, as the module reads them. This is the readable reference of the pipeline's
    behaviours, not of the engines: engine corners (case folding, Unicode versions) are the libraries' own,
    and the tests compare the core with the libraries themselves.
    """
    import regex

    if engine == "fancy-regex":
        return regex.compile(source, flags=regex.VERSION1)

    # Oniguruma's Ruby syntax reads `X{n,m}+` as `(?:X{n,m})+` (a repeated interval, so `\p{N}{1,3}+` is any
    # digit run); the regex module reads it as possessive, like tiktoken. Spell Oniguruma's reading out.
    source = regex.sub(_POSSESSIVE_INTERVAL, r"(?:\1)+", source)
    parts, depth = [], 0
    for token in regex.findall(r"\\.?|.", source, flags=regex.DOTALL):
        depth = depth + 1 if token == "[" else max(depth - 1, 0) if token == "]" else depth
        word = _ONIGURUMA_WORD_IN_CLASS if depth else _ONIGURUMA_WORD
        parts.append({"\\w": word, "\\W": "[^" + word + "]"}.get(token, token))
    source = "".join(parts)
    return regex.compile(source, flags=regex.MULTILINE | regex.VERSION1)


def replace_pattern(pattern: dict[str, str], content: str, text: str) -> str:
    """Replace every match of an HF pattern dict in ``text`` (the reference for ``Replace``).

    HF's rules: ``content`` is literal, ``^`` / ``$`` are line anchors, an empty text has no match, and
    after an empty match the next one starts one char later; an empty match where the previous match
    ended is skipped (so ``a*`` on ``baaac`` gives ``XbXcX``).

    >>> replace_pattern({"Regex": " {2,}"}, "▁", "a   b c"), replace_pattern({"Regex": "a*"}, "X", "baaac")
    ('a▁b c', 'XbXcX')
    """
    if "String" in pattern:
        return text.replace(pattern["String"], content)
    out, last = [], 0
    for a, b in pattern_matches(pattern, text):
        out.append(text[last:a])
        out.append(content)
        last = b
    out.append(text[last:])
    return "".join(out)


def pattern_matches(pattern: dict[str, str], text: str, engine: str = "oniguruma") -> list[tuple[int, int]]:
    """The (start, end) char spans HF's ``Replace`` / ``Split`` find for a pattern dict, left to right.

    No match in an empty text; after an empty match the next one starts one char later, and an empty match
    where the previous match ended is skipped.

    >>> pattern_matches({"Regex": "a*"}, "baaac"), pattern_matches({"String": "ab"}, "abab")
    ([(0, 0), (1, 4), (5, 5)], [(0, 2), (2, 4)])
    """
    if "String" in pattern:
        width = len(pattern["String"])
        spans, i = [], text.find(pattern["String"]) if text else -1
        while i >= 0:
            spans.append((i, i + width))
            i = text.find(pattern["String"], i + width)
        return spans
    compiled = _compiled(pattern["Regex"], engine)
    spans, pos, previous_end = [], 0, -1
    while text and pos <= len(text):
        m = compiled.search(text, pos)
        if m is None:
            break
        if m.start() == m.end() == previous_end:
            pos = m.start() + 1
            continue
        spans.append((m.start(), m.end()))
        previous_end = m.end()
        pos = m.end() + (m.start() == m.end())
    return spans


@REGISTRY.register
@dataclass(frozen=True, eq=True)
class Replace(Normalizer):
    """HF ``Replace``: every match of ``pattern`` (``{"String": s}`` or ``{"Regex": r}``) becomes ``content``.

    The Rust core runs a literal, or a regex on Oniguruma as HF does; a regex Oniguruma refuses is refused
    with its message.

    >>> Replace({"Regex": " {2,}"}, " ").normalize_str("a    b")
    'a b'
    """

    type_name: ClassVar[str] = "Replace"
    pattern: dict[str, str]
    content: str

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_pattern("Replace", self.pattern)

    def __hash__(self) -> int:
        return hash((self.type_name, tuple(self.pattern.items()), self.content))

    def normalize_str(self, text: str) -> str:
        return replace_pattern(self.pattern, self.content, text)


@REGISTRY.register
@dataclass(frozen=True, repr=False)
class Precompiled(Normalizer):
    """HF ``Precompiled``: SentencePiece's normalization table (``precompiled_charsmap``, base64 in the file).

    Reference semantics (HF's): the text is cut into extended grapheme clusters; a cluster of fewer than 6
    UTF-8 bytes is replaced as a whole by the replacement of the SHORTEST table key that is a prefix of it
    (so ``"ﬁ"`` + U+0301 becomes ``"fi"``), otherwise each of its chars is looked up alone.

    >>> from subword.formats.spm import build_charsmap
    >>> import base64
    >>> Precompiled(base64.b64encode(build_charsmap({"ﬁ": "fi"})).decode()).normalize_str("ﬁx")
    'fix'
    """

    type_name: ClassVar[str] = "Precompiled"
    precompiled_charsmap: str = ""

    def __repr__(self) -> str:
        # The table is ~300 KB of base64: show its size, not its text.
        return f"Precompiled(precompiled_charsmap=<{len(self.precompiled_charsmap)} base64 chars>)"

    def normalize_str(self, text: str) -> str:
        import regex

        table = _charsmap(self.precompiled_charsmap)
        out = []
        for cluster in regex.findall(r"\X", text):
            if len(cluster.encode("utf-8")) < 6:
                rep = table.shortest(cluster)
                if rep is not None:
                    out.append(rep)
                    continue
            for c in cluster:
                rep = table.shortest(c)
                out.append(c if rep is None else rep)
        return "".join(out)


class _CharsMap:
    """Reader of SentencePiece's precompiled charsmap: u32 LE trie size, a darts-clone double array over
    UTF-8 keys (unit: label in the low byte, bit 31 on value units, has-leaf bit 8, XOR offset in bits 10..,
    scaled by 256 when bit 9 is set), then NUL-terminated replacements the leaf values point into."""

    def __init__(self, blob: bytes) -> None:
        import struct

        size = int.from_bytes(blob[:4], "little")
        self.units = struct.unpack(f"<{size // 4}I", blob[4:4 + size])
        self.strings = blob[4 + size:]

    @staticmethod
    def _offset(unit: int) -> int:
        return (unit >> 10) << ((unit & (1 << 9)) >> 6)

    def shortest(self, key: str) -> str | None:
        """The replacement of the shortest key that is a prefix of ``key``."""
        units = self.units
        node = self._offset(units[0])
        for b in key.encode("utf-8"):
            node ^= b
            if node >= len(units) or units[node] & 0x800000FF != b:
                return None
            unit = units[node]
            node ^= self._offset(unit)
            if (unit >> 8) & 1:
                start = units[node] & 0x7FFFFFFF
                end = self.strings.find(b"\0", start)
                return self.strings[start:end if end >= 0 else len(self.strings)].decode("utf-8", "replace")
        return None


_CHARSMAP_CACHE: dict[str, _CharsMap] = {}


def _charsmap(b64: str) -> _CharsMap:
    if b64 not in _CHARSMAP_CACHE:
        import base64

        _CHARSMAP_CACHE[b64] = _CharsMap(base64.b64decode(b64))
    return _CHARSMAP_CACHE[b64]


@REGISTRY.register
@dataclass(frozen=True)
class ByteLevel(Normalizer):
    """HF ``ByteLevel`` normalizer: every UTF-8 byte of the text becomes its GPT-2 byte-level char.

    >>> ByteLevel().normalize_str("a é")
    'aĠÃ©'
    """

    type_name: ClassVar[str] = "ByteLevel"

    def normalize_str(self, text: str) -> str:
        from subword.pre_tokenizers import bytes_to_unicode

        table = bytes_to_unicode()
        return "".join(table[b] for b in text.encode("utf-8"))


@dataclass(frozen=True, repr=False)
class SentencePieceNormalizer(Normalizer):
    """sentencepiece's own normalizer, the one a ``.model`` file describes (its ``NormalizerSpec``).

    The character rules are the model's ``precompiled_charsmap`` (longest key first, left to right, as
    sentencepiece applies it; HF's ``Precompiled`` works per grapheme cluster instead), or the named
    built-in rules when the file has no table; then leading, trailing and repeated whitespace is removed
    (``remove_extra_whitespaces``), a ``▁`` is put in front (``add_dummy_prefix``; at the end with
    ``treat_whitespace_as_suffix``), and spaces become ``▁``. The tokenizer that holds it keeps the
    alignment to the original text, so offsets point into what the user passed.

    It has no ``tokenizer.json`` form: a ``.model`` converts to HF's components where that is exact
    (:mod:`subword.formats.convert`). :meth:`normalize_str` runs the Rust implementation.

    >>> SentencePieceNormalizer(name="identity").normalize_str("  Hello   world ")
    '▁Hello▁world'
    """

    type_name: ClassVar[str] = "SentencePiece"
    precompiled_charsmap: bytes = b""
    name: str = "identity"
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True
    treat_whitespace_as_suffix: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.precompiled_charsmap, (bytes, bytearray)):
            raise TypeError("SentencePieceNormalizer.precompiled_charsmap must be bytes, got "
                            f"{type(self.precompiled_charsmap).__name__}")
        if not self.escape_whitespaces:
            raise ValueError("SentencePieceNormalizer: escape_whitespaces=False is not supported "
                             "(spaces are always written as ▁)")
        if not self.precompiled_charsmap and self.name not in ("identity", "nfkc", "nmt_nfkc"):
            raise ValueError(f"SentencePieceNormalizer: no precompiled_charsmap and no built-in rules named "
                             f"{self.name!r} (built in: identity, nfkc, nmt_nfkc)")

    def __repr__(self) -> str:
        return (f"SentencePieceNormalizer(name={self.name!r}, precompiled_charsmap=<{len(self.precompiled_charsmap)} "
                f"bytes>, add_dummy_prefix={self.add_dummy_prefix}, remove_extra_whitespaces="
                f"{self.remove_extra_whitespaces}, treat_whitespace_as_suffix={self.treat_whitespace_as_suffix})")

    @classmethod
    def from_specs(cls, normalizer_spec: dict[str, Any], trainer_spec: dict[str, Any]) -> "SentencePieceNormalizer":
        """The normalizer a ``.model``'s NormalizerSpec and TrainerSpec describe (sentencepiece's defaults
        for the fields the file leaves out).

        >>> SentencePieceNormalizer.from_specs({"name": "identity", "add_dummy_prefix": False}, {}).add_dummy_prefix
        False
        """
        return cls(
            precompiled_charsmap=bytes(normalizer_spec.get("precompiled_charsmap") or b""),
            name=normalizer_spec.get("name") or "identity",
            add_dummy_prefix=bool(normalizer_spec.get("add_dummy_prefix", True)),
            remove_extra_whitespaces=bool(normalizer_spec.get("remove_extra_whitespaces", True)),
            escape_whitespaces=bool(normalizer_spec.get("escape_whitespaces", True)),
            treat_whitespace_as_suffix=bool(trainer_spec.get("treat_whitespace_as_suffix", False)),
        )

    def spec_json(self) -> str:
        """The options as the Rust normalizer reads them (a table replaces the named rules)."""
        import json

        return json.dumps({
            "normalization_rule_name": "identity" if self.precompiled_charsmap else self.name,
            "add_dummy_prefix": self.add_dummy_prefix,
            "remove_extra_whitespaces": self.remove_extra_whitespaces,
            "treat_whitespace_as_suffix": self.treat_whitespace_as_suffix,
        })

    def to_dict(self) -> dict[str, Any]:
        from subword.errors import FormatError

        raise FormatError(
            "the SentencePiece normalizer has no tokenizer.json form; save the tokenizer as a .model, or "
            "convert it with subword.formats.convert (exact for BPE models)")

    def native(self) -> Any:
        return _spm_native(self)

    def normalize_str(self, text: str) -> str:
        return _spm_native(self).normalize(text)


@functools.lru_cache(maxsize=16)
def _spm_native(norm: SentencePieceNormalizer) -> Any:
    """The Rust normalizer of ``norm``, built once (its table is parsed on construction)."""
    from subword._native import core_class

    return core_class("SpmTextNormalizer")(norm.spec_json(), bytes(norm.precompiled_charsmap) or None)
