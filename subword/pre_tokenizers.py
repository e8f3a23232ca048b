"""Pre-tokenizers: split (normalized) text into the pieces the model encodes one at a time.

Each class serialises to the HF ``tokenizer.json`` ``"pre_tokenizer"`` dict and has a short pure-Python
*reference* ``pre_tokenize_str`` returning ``[(piece, (start, end)), ...]`` with **character** offsets into
the input, exactly what HF's Python ``pre_tokenize_str`` returns. The Rust core
(``_core.PreTokenizer``) implements the same; tests hold reference, Rust and HF equal.

>>> Whitespace().pre_tokenize_str("Hi, there!")
[('Hi', (0, 2)), (',', (2, 3)), ('there', (4, 9)), ('!', (9, 10))]
>>> ByteLevel(add_prefix_space=False).pre_tokenize_str("a é")
[('a', (0, 1)), ('ĠÃ©', (1, 3))]
"""

from __future__ import annotations

import unicodedata

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import regex

from subword._components import Component, Registry

__all__ = [
    "PreTokenizer",
    "Whitespace",
    "ByteLevel",
    "BertPreTokenizer",
    "Metaspace",
    "WhitespaceSplit",
    "Split",
    "Sequence",
    "is_bert_punctuation",
    "bytes_to_unicode",
    "from_dict",
    "REGISTRY",
    "GPT2_PATTERN",
]

REGISTRY: Registry["PreTokenizer"] = Registry("pre_tokenizer")

Piece = tuple[str, tuple[int, int]]

# HF's Whitespace uses the Rust `regex` crate, whose Unicode \w is Alphabetic|M|Nd|Pc|Join_Control and \s is
# White_Space; the `regex` module's \w and \s are defined the same way (stdlib `re` differs: it counts
# U+001C..U+001F as space and misses Join_Control), hence `regex`.
_WHITESPACE_RE = regex.compile(r"\w+|[^\w\s]+")

#: The GPT-2 split pattern used by HF's ByteLevel (Oniguruma there; the same matches here).
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
_GPT2_RE = regex.compile(GPT2_PATTERN)


@lru_cache(maxsize=1)
def bytes_to_unicode() -> tuple[str, ...]:
    """The GPT-2 byte -> printable char table: ``bytes_to_unicode()[b]`` is the char for byte ``b``.

    The 188 printable Latin-1 bytes map to themselves; the others, in byte order, to U+0100 upwards.

    >>> bytes_to_unicode()[ord(" ")], bytes_to_unicode()[ord("\\n")], bytes_to_unicode()[ord("a")]
    ('Ġ', 'Ċ', 'a')
    """
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return tuple(table[b] for b in range(256))


class PreTokenizer(Component):
    """Base class: a serialisable splitter with a reference implementation."""

    def pre_tokenize_str(self, text: str) -> list[Piece]:
        """Split ``text`` into ``(piece, (start, end))`` with character offsets (reference implementation).

        Args:
            text: Any string.

        Returns:
            The pieces as the model sees them, each with its character span in ``text``.

        >>> Whitespace().pre_tokenize_str("a b")
        [('a', (0, 1)), ('b', (2, 3))]
        """
        raise NotImplementedError

    def native(self) -> Any:
        """The equivalent Rust pre-tokenizer, ``_core.PreTokenizer(self.to_json())``.

        Raises:
            CoreUnavailableError: the compiled core has no ``PreTokenizer`` class.
        """
        from subword._native import core_class

        return core_class("PreTokenizer")(self.to_json())


def from_dict(data: object, source: str = "<string>") -> PreTokenizer:
    """Build a pre-tokenizer from its HF ``tokenizer.json`` dict.

    Args:
        data: The dict, e.g. ``{"type": "Whitespace"}``.
        source: Where it came from, for error messages.

    Raises:
        subword.errors.UnsupportedComponentError: unknown ``"type"``.
        subword.errors.FormatError: malformed dict.

    >>> from_dict({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True})
    ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    """
    return REGISTRY.from_dict(data, source)


@REGISTRY.register
@dataclass(frozen=True)
class Whitespace(PreTokenizer):
    """Split into runs of word characters and runs of other non-space characters (``\\w+|[^\\w\\s]+``).

    Whitespace is dropped. ``\\w`` is Unicode-aware: letters, marks, decimal digits, connector
    punctuation and the zero-width joiners.

    >>> Whitespace().pre_tokenize_str("don't  stop")
    [('don', (0, 3)), ("'", (3, 4)), ('t', (4, 5)), ('stop', (7, 11))]
    """

    type_name: ClassVar[str] = "Whitespace"

    def pre_tokenize_str(self, text: str) -> list[Piece]:
        return [(m.group(), m.span()) for m in _WHITESPACE_RE.finditer(text)]


@REGISTRY.register
@dataclass(frozen=True)
class ByteLevel(PreTokenizer):
    """GPT-2 byte-level pre-tokenizer: optional prefix space, GPT-2 regex split, bytes mapped to chars.

    Args:
        add_prefix_space: Prepend ``" "`` when the text does not start with one, so the first word is
            encoded like the others.
        trim_offsets: Stored for the file (the post-processor trims offsets; splitting ignores it).
        use_regex: Split with :data:`GPT2_PATTERN`; when False the whole text is one piece.

    The offsets are character spans of the original text. The added prefix space has no character of its
    own: it takes the span of the text's first character (HF's alignment rule), so a piece made only of
    that space spans the first character too.

    >>> ByteLevel().pre_tokenize_str("hi\\n")
    [('Ġhi', (0, 2)), ('Ċ', (2, 3))]
    """

    type_name: ClassVar[str] = "ByteLevel"
    add_prefix_space: bool = True
    trim_offsets: bool = True
    use_regex: bool = True

    @staticmethod
    def alphabet() -> list[str]:
        """The 256 chars a byte-level model starts from (sorted by code point, as HF assigns their ids).

        >>> len(ByteLevel.alphabet()), ByteLevel.alphabet()[:3]
        (256, ['!', '"', '#'])
        """
        return sorted(bytes_to_unicode())

    def pre_tokenize_str(self, text: str) -> list[Piece]:
        if not text:
            return []  # HF adds no prefix space to an empty text
        # spans[i] = the original character span that char i of `work` stands for.
        spans = [(i, i + 1) for i in range(len(text))]
        work = text
        if self.add_prefix_space and not text.startswith(" "):
            work = " " + text
            spans.insert(0, spans[0])
        if self.use_regex:
            matches = [m.span() for m in _GPT2_RE.finditer(work)]
        else:
            matches = [(0, len(work))]
        table = bytes_to_unicode()
        out: list[Piece] = []
        for start, end in matches:
            mapped = "".join(table[b] for b in work[start:end].encode("utf-8"))
            out.append((mapped, (spans[start][0], spans[end - 1][1])))
        return out


def is_bert_punctuation(c: str) -> bool:
    """HF ``BertPreTokenizer``'s punctuation: ASCII punctuation or general category P*.

    >>> is_bert_punctuation("$"), is_bert_punctuation("¿"), is_bert_punctuation("a")
    (True, True, False)
    """
    if c < "\x80":
        return c in _ASCII_PUNCT
    return unicodedata.category(c).startswith("P")


_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


@REGISTRY.register
@dataclass(frozen=True)
class BertPreTokenizer(PreTokenizer):
    """HF ``BertPreTokenizer``: split on whitespace (dropped), then every punctuation char on its own.

    Whitespace is Unicode White_Space; punctuation is :func:`is_bert_punctuation`.

    >>> BertPreTokenizer().pre_tokenize_str("Hey, don't!")
    [('Hey', (0, 3)), (',', (3, 4)), ('don', (5, 8)), ("'", (8, 9)), ('t', (9, 10)), ('!', (10, 11))]
    """

    type_name: ClassVar[str] = "BertPreTokenizer"

    def pre_tokenize_str(self, text: str) -> list[Piece]:
        from subword.normalizers import WHITE_SPACE

        out: list[Piece] = []
        start: int | None = None
        for i, c in enumerate(text):
            space = c in WHITE_SPACE
            if space or is_bert_punctuation(c):
                if start is not None:
                    out.append((text[start:i], (start, i)))
                    start = None
                if not space:
                    out.append((c, (i, i + 1)))
            elif start is None:
                start = i
        if start is not None:
            out.append((text[start:], (start, len(text))))
        return out


_PREPEND_SCHEMES = ("always", "first", "never")


@REGISTRY.register
@dataclass(frozen=True)
class Metaspace(PreTokenizer):
    """HF ``Metaspace`` (SentencePiece-style words): spaces become ``replacement``, one is prepended, and the
    text is cut before every ``replacement`` (each piece keeps the one that opens it).

    Args:
        replacement: The char that stands for a space (``"▁"``).
        prepend_scheme: ``"always"``: prepend unless the text starts with one; ``"first"``: only for the text
            at the start of the input (not after an added token); ``"never"``.
        split: Cut the text into words; when False the whole text is one piece.

    The prepended ``▁`` has no char of its own: it takes the span of the text's first char (HF's rule).

    >>> Metaspace().pre_tokenize_str("Hey  you")
    [('▁Hey', (0, 3)), ('▁', (3, 4)), ('▁you', (4, 8))]
    >>> Metaspace(prepend_scheme="never", split=False).pre_tokenize_str("a b")
    [('a▁b', (0, 3))]
    """

    type_name: ClassVar[str] = "Metaspace"
    replacement: str = "\u2581"
    prepend_scheme: str = "always"
    split: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.replacement) != 1:
            raise ValueError(f"Metaspace.replacement must be one char, got {self.replacement!r}")
        if self.prepend_scheme not in _PREPEND_SCHEMES:
            raise ValueError(f"Metaspace.prepend_scheme must be one of {_PREPEND_SCHEMES}, got {self.prepend_scheme!r}")

    def pre_tokenize_str(self, text: str, at_start: bool = True) -> list[Piece]:
        """Pieces with char spans; ``at_start``: the text begins the input (for ``prepend_scheme="first"``)."""
        if not text:
            return []
        work = text.replace(" ", self.replacement)
        spans = [(i, i + 1) for i in range(len(text))]
        prepend = self.prepend_scheme == "always" or (self.prepend_scheme == "first" and at_start)
        if prepend and not work.startswith(self.replacement):
            work = self.replacement + work
            spans.insert(0, spans[0])
        if self.split:
            cuts = [i for i, c in enumerate(work) if c == self.replacement and i > 0]
            bounds = list(zip([0, *cuts], [*cuts, len(work)]))
        else:
            bounds = [(0, len(work))]
        return [(work[a:b], (spans[a][0], spans[b - 1][1])) for a, b in bounds]


@REGISTRY.register
@dataclass(frozen=True)
class WhitespaceSplit(PreTokenizer):
    """HF ``WhitespaceSplit``: the runs of non-whitespace chars (Unicode White_Space separates, and is dropped).

    >>> WhitespaceSplit().pre_tokenize_str("a  b\\tc!")
    [('a', (0, 1)), ('b', (3, 4)), ('c!', (5, 7))]
    """

    type_name: ClassVar[str] = "WhitespaceSplit"

    def pre_tokenize_str(self, text: str) -> list[Piece]:
        from subword.normalizers import WHITE_SPACE

        out: list[Piece] = []
        start: int | None = None
        for i, c in enumerate(text):
            if c in WHITE_SPACE:
                if start is not None:
                    out.append((text[start:i], (start, i)))
                    start = None
            elif start is None:
                start = i
        if start is not None:
            out.append((text[start:], (start, len(text))))
        return out


_SPLIT_BEHAVIORS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")


@REGISTRY.register
@dataclass(frozen=True)
class Split(PreTokenizer):
    """HF ``Split``: pieces around the matches of ``pattern`` (``{"String": s}`` or ``{"Regex": r}``).

    ``behavior`` says what becomes of a match: ``Removed`` (dropped), ``Isolated`` (a piece of its own),
    ``MergedWithPrevious`` / ``MergedWithNext`` (joined to the text before / after it; a match right after a
    match stays alone), ``Contiguous`` (runs of matches, and of non-matches, joined). ``invert`` swaps matches
    and non-matches. Empty pieces are dropped.

    ``engine`` says whose regex engine reads the pattern: ``"oniguruma"`` (HF ``tokenizers``, every
    ``tokenizer.json``) or ``"fancy-regex"`` (tiktoken, for the patterns of tiktoken files, which read some
    constructs differently; see ``docs/pretokenizers.md``). The core runs each on that engine. A
    ``fancy-regex`` Split has no ``tokenizer.json`` form of its own: saving one writes the Oniguruma spelling
    of the pattern where one reads the same (:func:`subword.formats.tiktoken.oniguruma_spelling`), else
    refuses.

    >>> Split({"String": "-"}, "MergedWithPrevious").pre_tokenize_str("the-final--countdown")
    [('the-', (0, 4)), ('final-', (4, 10)), ('-', (10, 11)), ('countdown', (11, 20))]
    >>> Split({"Regex": r"\\w+"}, "Removed", invert=True).pre_tokenize_str("ab, cd")
    [('ab', (0, 2)), ('cd', (4, 6))]
    """

    type_name: ClassVar[str] = "Split"
    pattern: dict[str, str]
    behavior: str
    invert: bool = False
    engine: str = "oniguruma"

    def __post_init__(self) -> None:
        super().__post_init__()
        from subword.normalizers import _check_pattern

        # HF's lower-case spellings ("isolated") are its Python API's; the file holds the enum names.
        behavior = {b.lower(): b for b in _SPLIT_BEHAVIORS}.get(str(self.behavior).lower(), self.behavior)
        object.__setattr__(self, "behavior", behavior)
        if self.behavior not in _SPLIT_BEHAVIORS:
            raise ValueError(f"Split.behavior must be one of {', '.join(_SPLIT_BEHAVIORS)}, got {self.behavior!r}")
        _check_pattern("Split", self.pattern, self.engine)

    def __hash__(self) -> int:
        return hash((self.type_name, tuple(self.pattern.items()), self.behavior, self.invert, self.engine))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type_name, "pattern": dict(self.pattern), "behavior": self.behavior,
                               "invert": self.invert}
        if self.engine != "oniguruma":
            out["engine"] = self.engine  # our extension (HF has one engine); see oniguruma_spelling
        return out

    def pre_tokenize_str(self, text: str) -> list[Piece]:
        from subword.normalizers import pattern_matches

        segments: list[tuple[int, int, bool]] = []  # (start, end, is_match) covering the text
        prev = 0
        for a, b in pattern_matches(self.pattern, text, self.engine):
            if a != prev:
                segments.append((prev, a, self.invert))
            segments.append((a, b, not self.invert))
            prev = b
        if prev != len(text):
            segments.append((prev, len(text), self.invert))
        spans: list[list[int]] = []
        if self.behavior == "Removed":
            spans = [[a, b] for a, b, m in segments if not m]
        elif self.behavior == "Isolated":
            spans = [[a, b] for a, b, _ in segments]
        elif self.behavior == "MergedWithNext":
            previous_match = False
            for a, b, m in reversed(segments):
                if m and not previous_match and spans:
                    spans[-1][0] = a
                else:
                    spans.append([a, b])
                previous_match = m
            spans.reverse()
        else:  # MergedWithPrevious, Contiguous
            previous_match = False
            for a, b, m in segments:
                join = (m and not previous_match) if self.behavior == "MergedWithPrevious" else m == previous_match
                if join and spans:
                    spans[-1][1] = b
                else:
                    spans.append([a, b])
                previous_match = m
        return [(text[a:b], (a, b)) for a, b in spans if a < b]


@REGISTRY.register
@dataclass(frozen=True)
class Sequence(PreTokenizer):
    """HF ``Sequence``: each pre-tokenizer splits the pieces of the previous one.

    The Rust core runs sequences whose members before the last cut the text into slices (Whitespace,
    WhitespaceSplit, BertPreTokenizer, Split) and whose last member is not a ByteLevel with
    ``add_prefix_space``, e.g. older T5 / ALBERT files' ``[WhitespaceSplit, Metaspace]`` and the tiktoken
    conversions' ``[Split, ByteLevel(add_prefix_space=False, use_regex=False)]``.

    >>> Sequence([WhitespaceSplit(), Metaspace()]).pre_tokenize_str("Hey  you")
    [('▁Hey', (0, 3)), ('▁you', (5, 8))]
    """

    type_name: ClassVar[str] = "Sequence"
    pretokenizers: tuple[PreTokenizer, ...] = ()

    def __post_init__(self) -> None:
        for i, p in enumerate(self.pretokenizers):
            if not isinstance(p, PreTokenizer):
                raise TypeError(f"Sequence.pretokenizers[{i}] must be a PreTokenizer, got {type(p).__name__}")
        object.__setattr__(self, "pretokenizers", tuple(self.pretokenizers))
        *head, last = self.pretokenizers or (None,)
        # A ByteLevel last maps each piece's bytes (transformers' tiktoken conversions: [Split, ByteLevel]); the
        # core aligns offsets of a prefix space only for a ByteLevel on its own.
        prefixed = isinstance(last, ByteLevel) and last.add_prefix_space
        if not all(isinstance(p, (Whitespace, WhitespaceSplit, BertPreTokenizer, Split)) for p in head) or prefixed or (
                isinstance(last, Sequence)):
            names = [type(p).__name__ for p in self.pretokenizers]
            raise ValueError(f"unsupported pre_tokenizer Sequence {names}: only Whitespace, WhitespaceSplit, "
                             "BertPreTokenizer or Split followed by one more pre-tokenizer (not a ByteLevel with "
                             "add_prefix_space) is supported")

    def pre_tokenize_str(self, text: str) -> list[Piece]:
        pieces: list[Piece] = [(text, (0, len(text)))]
        for pre in self.pretokenizers:
            out: list[Piece] = []
            for piece, (s, _) in pieces:
                # Metaspace's "first" scheme: only the piece at offset 0 starts the input.
                parts = pre.pre_tokenize_str(piece, s == 0) if isinstance(pre, Metaspace) else pre.pre_tokenize_str(piece)
                out.extend((p, (s + a, s + b)) for p, (a, b) in parts)
            pieces = out
        return pieces

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type_name, "pretokenizers": [p.to_dict() for p in self.pretokenizers]}

    @classmethod
    def _from_fields(cls, fields: dict[str, Any], registry: Registry[Any], source: str) -> "Sequence":
        items = fields.get("pretokenizers", [])
        if not isinstance(items, list):
            raise TypeError("'pretokenizers' must be a list")
        return cls(tuple(registry.from_dict(item, source) for item in items))
