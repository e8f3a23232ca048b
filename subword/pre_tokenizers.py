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

from subword._components import Component, Registry

__all__ = [
    "PreTokenizer",
    "Whitespace",
    "ByteLevel",
    "BertPreTokenizer",
    "Metaspace",
    "WhitespaceSplit",
    "Split",
    "Digits",
    "Punctuation",
    "CharDelimiterSplit",
    "FixedLength",
    "UnicodeScripts",
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
# U+001C..U+001F as space and misses Join_Control), hence `regex`. Compiled on first use: importing `regex`
# is ~10 ms of every `import subword`, and only these Python references (the tests' oracles) use it.
@lru_cache(maxsize=None)
def _whitespace_re() -> Any:
    import regex

    return regex.compile(r"\w+|[^\w\s]+")


#: The GPT-2 split pattern used by HF's ByteLevel (Oniguruma there; the same matches here).
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


@lru_cache(maxsize=None)
def _gpt2_re() -> Any:
    import regex

    return regex.compile(GPT2_PATTERN)


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
        return [(m.group(), m.span()) for m in _whitespace_re().finditer(text)]


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
            matches = [m.span() for m in _gpt2_re().finditer(work)]
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
        return _pieces(text, segments, self.behavior)


def _pieces(text: str, segments: list[tuple[int, int, bool]], behavior: str) -> list[Piece]:
    """HF's ``NormalizedString::split``: ``(start, end, is_match)`` segments covering ``text`` grouped into
    pieces by ``behavior`` (see :class:`Split`); empty pieces dropped."""
    spans: list[list[int]] = []
    if behavior == "Removed":
        spans = [[a, b] for a, b, m in segments if not m]
    elif behavior == "Isolated":
        spans = [[a, b] for a, b, _ in segments]
    elif behavior == "MergedWithNext":
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
            join = (m and not previous_match) if behavior == "MergedWithPrevious" else m == previous_match
            if join and spans:
                spans[-1][1] = b
            else:
                spans.append([a, b])
            previous_match = m
    return [(text[a:b], (a, b)) for a, b in spans if a < b]


def _char_rule_segments(text: str, rule: Any) -> list[tuple[int, int, bool]]:
    """HF's char pattern: every char for which ``rule`` holds is a match of its own."""
    segments, last = [], 0
    for i, c in enumerate(text):
        if rule(c):
            if last < i:
                segments.append((last, i, False))
            segments.append((i, i + 1, True))
            last = i + 1
    if last < len(text):
        segments.append((last, len(text), False))
    return segments


@REGISTRY.register
@dataclass(frozen=True)
class Digits(PreTokenizer):
    """HF ``Digits``: numeric chars (general category N*) apart from the rest, each alone with
    ``individual_digits``, else in runs.

    >>> Digits(individual_digits=True).pre_tokenize_str("a12b")
    [('a', (0, 1)), ('1', (1, 2)), ('2', (2, 3)), ('b', (3, 4))]
    >>> Digits().pre_tokenize_str("a12b")
    [('a', (0, 1)), ('12', (1, 3)), ('b', (3, 4))]
    """

    type_name: ClassVar[str] = "Digits"
    individual_digits: bool = False

    def pre_tokenize_str(self, text: str) -> list[Piece]:
        segments = _char_rule_segments(text, lambda c: unicodedata.category(c)[0] == "N")
        return _pieces(text, segments, "Isolated" if self.individual_digits else "Contiguous")


@REGISTRY.register
@dataclass(frozen=True)
class Punctuation(PreTokenizer):
    """HF ``Punctuation``: every punctuation char (ASCII punctuation or general category P*) is a match, the
    pieces grouped by ``behavior`` (as :class:`Split`'s).

    >>> Punctuation().pre_tokenize_str("Hi!?")
    [('Hi', (0, 2)), ('!', (2, 3)), ('?', (3, 4))]
    """

    type_name: ClassVar[str] = "Punctuation"
    behavior: str = "Isolated"

    def __post_init__(self) -> None:
        super().__post_init__()
        behavior = {b.lower(): b for b in _SPLIT_BEHAVIORS}.get(str(self.behavior).lower(), self.behavior)
        object.__setattr__(self, "behavior", behavior)
        if self.behavior not in _SPLIT_BEHAVIORS:
            raise ValueError(f"Punctuation.behavior must be one of {', '.join(_SPLIT_BEHAVIORS)}, got {self.behavior!r}")

    def pre_tokenize_str(self, text: str) -> list[Piece]:
        return _pieces(text, _char_rule_segments(text, is_bert_punctuation), self.behavior)


@REGISTRY.register
@dataclass(frozen=True)
class CharDelimiterSplit(PreTokenizer):
    """HF ``CharDelimiterSplit``: split on one char, which is dropped.

    >>> CharDelimiterSplit("|").pre_tokenize_str("a|b||c")
    [('a', (0, 1)), ('b', (2, 3)), ('c', (5, 6))]
    """

    type_name: ClassVar[str] = "CharDelimiterSplit"
    delimiter: str

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.delimiter) != 1:
            raise ValueError(f"CharDelimiterSplit.delimiter must be one char, got {self.delimiter!r}")

    def pre_tokenize_str(self, text: str) -> list[Piece]:
        return _pieces(text, _char_rule_segments(text, lambda c: c == self.delimiter), "Removed")


@REGISTRY.register
@dataclass(frozen=True)
class FixedLength(PreTokenizer):
    """HF ``FixedLength``: pieces of ``length`` chars (the last may be shorter; ``0`` gives none).

    >>> FixedLength(2).pre_tokenize_str("abcde")
    [('ab', (0, 2)), ('cd', (2, 4)), ('e', (4, 5))]
    """

    type_name: ClassVar[str] = "FixedLength"
    length: int = 5

    def __post_init__(self) -> None:
        if isinstance(self.length, bool) or not isinstance(self.length, int) or self.length < 0:
            raise TypeError(f"FixedLength.length must be a non-negative int, got {self.length!r}")

    def pre_tokenize_str(self, text: str) -> list[Piece]:
        if self.length == 0:
            return []
        return [(text[i:i + self.length], (i, min(i + self.length, len(text))))
                for i in range(0, len(text), self.length)]


@REGISTRY.register
@dataclass(frozen=True)
class UnicodeScripts(PreTokenizer):
    """HF ``UnicodeScripts``: a cut wherever the Unicode script changes. A space belongs to any script (never
    cuts); Hiragana, Katakana and U+30FC count as Han; text before the first char with a script is dropped
    (HF's cuts start there). Scripts are the ``regex`` package's; HF's table is Unicode 9.0, so chars assigned
    since can cut differently (the core does the same as this reference; unassigned chars belong to any script).

    >>> UnicodeScripts().pre_tokenize_str("どこで生れ。Yes")
    [('どこで生れ', (0, 5)), ('。', (5, 6)), ('Yes', (6, 9))]
    """

    type_name: ClassVar[str] = "UnicodeScripts"

    def pre_tokenize_str(self, text: str) -> list[Piece]:
        cuts, last = [], None
        for i, c in enumerate(text):
            script = _script(c)
            if script is not None:
                if script != last:
                    cuts.append(i)
                last = script
        cuts.append(len(text))
        return [(text[a:b], (a, b)) for a, b in zip(cuts, cuts[1:]) if a < b]


@lru_cache(maxsize=4096)
def _script(c: str) -> int | None:
    """The script of ``c`` as UnicodeScripts sees it (the ``regex`` package's Script property values, Hiragana
    and Katakana as Han); None: any script."""
    if c == " " or unicodedata.category(c) == "Cn":
        return None
    values, patterns = _script_table()
    if c == "\u30fc":
        return values["HAN"]
    for value, pattern in patterns:
        if pattern.match(c):
            return values["HAN"] if value in (values["HIRAGANA"], values["KATAKANA"]) else value
    return values["COMMON"]


@lru_cache(maxsize=1)
def _script_table() -> tuple[dict[str, int], tuple[tuple[int, Any], ...]]:
    import regex
    import regex._regex_core as core

    _, values = core.PROPERTIES["SCRIPT"]
    names: dict[int, str] = {}
    for name, value in values.items():
        names.setdefault(value, name)
    skip = (values["COMMON"], values["UNKNOWN"])
    return values, tuple((v, regex.compile(rf"\p{{Script={n}}}")) for v, n in names.items() if v not in skip)


@REGISTRY.register
@dataclass(frozen=True)
class Sequence(PreTokenizer):
    """HF ``Sequence``: each pre-tokenizer splits (and may rewrite) the pieces of the previous one.

    Any members combine, as in HF: members that rewrite their pieces (``ByteLevel`` maps bytes and may prepend a
    space to each piece, ``Metaspace`` maps spaces and may prepend ``▁``) carry every char's original span, so
    a member after them still reports offsets into the input (Falcon's ``[Punctuation, ByteLevel, Digits,
    Split]``). The core runs the sequences whose members before the last only cut on faster paths.

    >>> Sequence([WhitespaceSplit(), Metaspace()]).pre_tokenize_str("Hey  you")
    [('▁Hey', (0, 3)), ('▁you', (5, 8))]
    >>> Sequence([ByteLevel(add_prefix_space=False), Digits()]).pre_tokenize_str("a 12")
    [('a', (0, 1)), ('Ġ', (1, 2)), ('12', (2, 4))]
    """

    type_name: ClassVar[str] = "Sequence"
    pretokenizers: tuple[PreTokenizer, ...] = ()

    def __post_init__(self) -> None:
        for i, p in enumerate(self.pretokenizers):
            if not isinstance(p, PreTokenizer):
                raise TypeError(f"Sequence.pretokenizers[{i}] must be a PreTokenizer, got {type(p).__name__}")
        object.__setattr__(self, "pretokenizers", tuple(self.pretokenizers))

    def pre_tokenize_str(self, text: str) -> list[Piece]:
        # Each piece: its text and, per char, the (start, end) span of the input it stands for.
        pieces: list[tuple[str, list[tuple[int, int]]]] = [(text, [(i, i + 1) for i in range(len(text))])]
        for pre in self.pretokenizers:
            pieces = [out for piece in pieces for out in _apply(pre, *piece) if out[0]]
        return [(t, (a[0][0], a[-1][1])) for t, a in pieces]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type_name, "pretokenizers": [p.to_dict() for p in self.pretokenizers]}

    @classmethod
    def _from_fields(cls, fields: dict[str, Any], registry: Registry[Any], source: str) -> "Sequence":
        items = fields.get("pretokenizers", [])
        if not isinstance(items, list):
            raise TypeError("'pretokenizers' must be a list")
        return cls(tuple(registry.from_dict(item, source) for item in items))


def _apply(pre: PreTokenizer, text: str, align: list[tuple[int, int]]) -> list[tuple[str, list[tuple[int, int]]]]:
    """One Sequence member on one aligned piece (``align[i]``: the input span of char ``i``)."""
    if not text:
        return []
    if isinstance(pre, ByteLevel):
        if pre.add_prefix_space and not text.startswith(" "):
            text, align = " " + text, [align[0], *align]
        bounds = [m.span() for m in _gpt2_re().finditer(text)] if pre.use_regex else [(0, len(text))]
        table = bytes_to_unicode()
        out = []
        for a, b in bounds:
            chars, spans = [], []
            for c, span in zip(text[a:b], align[a:b]):
                for byte in c.encode("utf-8"):
                    chars.append(table[byte])
                    spans.append(span)
            out.append(("".join(chars), spans))
        return out
    if isinstance(pre, Metaspace):
        mapped = text.replace(" ", pre.replacement)
        prepend = pre.prepend_scheme == "always" or (pre.prepend_scheme == "first" and align[0][0] == 0)
        if prepend and not mapped.startswith(pre.replacement):
            mapped, align = pre.replacement + mapped, [align[0], *align]
        cuts = [i for i, c in enumerate(mapped) if c == pre.replacement and i > 0] if pre.split else []
        return [(mapped[a:b], align[a:b]) for a, b in zip([0, *cuts], [*cuts, len(mapped)])]
    if isinstance(pre, Sequence):
        pieces = [(text, align)]
        for member in pre.pretokenizers:
            pieces = [out for piece in pieces for out in _apply(member, *piece) if out[0]]
        return pieces
    return [(piece, align[a:b]) for piece, (a, b) in pre.pre_tokenize_str(text)]
