"""Post-processors: adjust an encoding after the model (add special tokens, trim offsets).

Each class serialises to the HF ``tokenizer.json`` ``"post_processor"`` dict; the Rust core applies them.

>>> TemplateProcessing("[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)]).num_special_tokens_to_add()
2
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Union

from subword._components import Component, Registry

__all__ = ["PostProcessor", "ByteLevel", "TemplateProcessing", "BertProcessing", "RobertaProcessing", "Sequence",
           "from_dict", "REGISTRY"]

REGISTRY: Registry["PostProcessor"] = Registry("post_processor")

TemplateSpec = Union[str, Sequence[Any]]


class PostProcessor(Component):
    """Base class of the serialisable post-processors."""

    def num_special_tokens_to_add(self, is_pair: bool = False) -> int:
        """How many tokens this processor adds (used to budget truncation).

        >>> ByteLevel().num_special_tokens_to_add()
        0
        """
        return 0


def from_dict(data: object, source: str = "<string>") -> PostProcessor:
    """Build a post-processor from its HF ``tokenizer.json`` dict.

    Raises:
        subword.errors.UnsupportedComponentError: unknown ``"type"``.
        subword.errors.FormatError: malformed dict.

    >>> from_dict({"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True})
    ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True)
    """
    return REGISTRY.from_dict(data, source)


@REGISTRY.register
@dataclass(frozen=True)
class ByteLevel(PostProcessor):
    """Byte-level offset trimming: with ``trim_offsets``, offsets exclude the leading/trailing spaces
    (``Ġ``) of each token.

    Args:
        add_prefix_space: Whether the pre-tokenizer added a prefix space (the first token then keeps one).
        trim_offsets: Trim the offsets.
        use_regex: Stored for round-trips only.

    >>> ByteLevel(trim_offsets=False).to_dict()["trim_offsets"]
    False
    """

    type_name: ClassVar[str] = "ByteLevel"
    add_prefix_space: bool = True
    trim_offsets: bool = True
    use_regex: bool = True


def _parse_piece(piece: Any) -> dict[str, dict[str, Any]]:
    """One template item: ``"$A"``, ``"$B:1"``, ``"$0"``, ``"[CLS]"``, ``"[SEP]:1"`` or the HF dict form."""
    if isinstance(piece, Mapping):
        if len(piece) != 1 or next(iter(piece)) not in ("Sequence", "SpecialToken"):
            raise ValueError(f"template item must be {{'Sequence': ...}} or {{'SpecialToken': ...}}, got {piece!r}")
        kind, body = next(iter(piece.items()))
        if not isinstance(body, Mapping) or set(body) != {"id", "type_id"}:
            raise ValueError(f"template item {piece!r} needs exactly 'id' and 'type_id'")
        if not isinstance(body["type_id"], int) or not isinstance(body["id"], str):
            raise ValueError(f"template item {piece!r} has ill-typed fields")
        if kind == "Sequence" and body["id"] not in ("A", "B"):
            raise ValueError(f"template sequence id must be 'A' or 'B', got {body['id']!r}")
        return {kind: {"id": body["id"], "type_id": body["type_id"]}}
    if not isinstance(piece, str) or not piece:
        raise ValueError(f"template item must be a non-empty str, got {piece!r}")
    name, type_id = piece, 0
    head, sep, tail = piece.rpartition(":")
    if sep and tail.isdigit() and head:
        name, type_id = head, int(tail)
    if name.startswith("$"):
        rest = name[1:]
        if rest in ("", "A", "B"):
            return {"Sequence": {"id": rest or "A", "type_id": type_id}}
        if rest.isdigit():  # "$1" = sequence A with type id 1 (HF shorthand)
            return {"Sequence": {"id": "A", "type_id": int(rest)}}
        raise ValueError(f"invalid template sequence {piece!r} (use $A, $B or $<type_id>)")
    return {"SpecialToken": {"id": name, "type_id": type_id}}


def _parse_template(spec: TemplateSpec | None, default: list[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
    if spec is None:
        return tuple(default)
    items = spec.split() if isinstance(spec, str) else list(spec)
    return tuple(_parse_piece(p) for p in items)


@REGISTRY.register
@dataclass(frozen=True)
class TemplateProcessing(PostProcessor):
    """Add special tokens around the sequence(s) following a template (minimal HF subset).

    Args:
        single: Template for one sequence, e.g. ``"[CLS] $A [SEP]"`` (or a list of items / HF dicts).
        pair: Template for a pair, e.g. ``"[CLS] $A [SEP] $B:1 [SEP]:1"``; HF's default is ``"$A $B:1"``.
        special_tokens: ``[(token, id), ...]`` or HF's ``{token: {"id", "ids", "tokens"}}`` dict; every
            special token in the templates must be listed.

    Raises:
        ValueError: a template uses an undeclared special token or is malformed.

    >>> t = TemplateProcessing("[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)])
    >>> t.to_dict()["single"][0]
    {'SpecialToken': {'id': '[CLS]', 'type_id': 0}}
    """

    type_name: ClassVar[str] = "TemplateProcessing"
    single: Any = "$A"
    pair: Any = None
    special_tokens: Any = field(default_factory=list)

    def __post_init__(self) -> None:
        single = _parse_template(self.single, [])
        pair = _parse_template(
            self.pair,
            [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        )
        specials: dict[str, dict[str, Any]] = {}
        if isinstance(self.special_tokens, Mapping):
            for key, body in self.special_tokens.items():
                if not isinstance(body, Mapping) or set(body) != {"id", "ids", "tokens"}:
                    raise ValueError(f"special token {key!r} needs exactly 'id', 'ids' and 'tokens'")
                if len(body["ids"]) != len(body["tokens"]):
                    raise ValueError(f"special token {key!r}: 'ids' and 'tokens' differ in length")
                specials[key] = {"id": body["id"], "ids": list(body["ids"]), "tokens": list(body["tokens"])}
        else:
            for item in self.special_tokens:
                if not (isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str)
                        and isinstance(item[1], int) and not isinstance(item[1], bool)):
                    raise ValueError(f"special_tokens items must be (token, id) pairs, got {item!r}")
                specials[item[0]] = {"id": item[0], "ids": [item[1]], "tokens": [item[0]]}
        for template in (single, pair):
            for piece in template:
                if "SpecialToken" in piece and piece["SpecialToken"]["id"] not in specials:
                    raise ValueError(f"template uses special token {piece['SpecialToken']['id']!r} "
                                     "that is not in special_tokens")
        object.__setattr__(self, "single", single)
        object.__setattr__(self, "pair", pair)
        object.__setattr__(self, "special_tokens", specials)

    def num_special_tokens_to_add(self, is_pair: bool = False) -> int:
        count = 0
        for piece in self.pair if is_pair else self.single:
            if "SpecialToken" in piece:
                count += len(self.special_tokens[piece["SpecialToken"]["id"]]["ids"])
        return count

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type_name,
            "single": [dict(p) for p in self.single],
            "pair": [dict(p) for p in self.pair],
            "special_tokens": {k: dict(v) for k, v in self.special_tokens.items()},
        }

    def __repr__(self) -> str:
        def show(template: tuple[dict[str, Any], ...]) -> str:
            out = []
            for p in template:
                kind, body = next(iter(p.items()))
                name = ("$" + body["id"]) if kind == "Sequence" else body["id"]
                out.append(name if body["type_id"] == 0 else f"{name}:{body['type_id']}")
            return " ".join(out)

        ids = {k: v["ids"] for k, v in self.special_tokens.items()}
        return f"TemplateProcessing(single={show(self.single)!r}, pair={show(self.pair)!r}, special_tokens={ids})"

    __hash__ = None  # type: ignore[assignment]  # holds dicts


def _token_and_id(owner: str, name: str, value: Any) -> tuple[str, int]:
    if (isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[0], str)
            and isinstance(value[1], int) and not isinstance(value[1], bool) and value[1] >= 0):
        return value[0], value[1]
    raise ValueError(f"{owner}.{name} must be a (token, id) pair, got {value!r}")


@REGISTRY.register
@dataclass(frozen=True)
class BertProcessing(PostProcessor):
    """HF ``BertProcessing`` (what ``BertWordPieceTokenizer`` writes): ``[CLS] A [SEP]`` and
    ``[CLS] A [SEP] B [SEP]``, type id 0 up to the first ``[SEP]`` and 1 after it.

    Args:
        sep: ``(token, id)`` of the separator.
        cls: ``(token, id)`` of the classifier token.

    >>> p = BertProcessing(("[SEP]", 102), ("[CLS]", 101))
    >>> p.to_dict(), p.num_special_tokens_to_add(is_pair=True)
    ({'type': 'BertProcessing', 'sep': ['[SEP]', 102], 'cls': ['[CLS]', 101]}, 3)
    """

    type_name: ClassVar[str] = "BertProcessing"
    sep: Any = ("[SEP]", 102)
    cls: Any = ("[CLS]", 101)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sep", _token_and_id("BertProcessing", "sep", self.sep))
        object.__setattr__(self, "cls", _token_and_id("BertProcessing", "cls", self.cls))

    def num_special_tokens_to_add(self, is_pair: bool = False) -> int:
        return 3 if is_pair else 2

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type_name, "sep": list(self.sep), "cls": list(self.cls)}


@REGISTRY.register
@dataclass(frozen=True)
class RobertaProcessing(PostProcessor):
    """HF ``RobertaProcessing`` (RoBERTa, BART, Longformer files): ``<s> A </s>`` and ``<s> A </s> </s> B </s>``,
    every type id 0, and, with ``trim_offsets``, byte-level offset trimming (as :class:`ByteLevel`).

    Args:
        sep: ``(token, id)`` of the separator.
        cls: ``(token, id)`` of the classifier token.
        trim_offsets: Trim the offsets of leading/trailing spaces (``Ġ``).
        add_prefix_space: Whether the pre-tokenizer added a prefix space.

    >>> p = RobertaProcessing(("</s>", 2), ("<s>", 0))
    >>> p.to_dict(), p.num_special_tokens_to_add(is_pair=True)
    ({'type': 'RobertaProcessing', 'sep': ['</s>', 2], 'cls': ['<s>', 0], 'trim_offsets': True, 'add_prefix_space': True}, 4)
    """

    type_name: ClassVar[str] = "RobertaProcessing"
    sep: Any = ("</s>", 2)
    cls: Any = ("<s>", 0)
    trim_offsets: bool = True
    add_prefix_space: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "sep", _token_and_id("RobertaProcessing", "sep", self.sep))
        object.__setattr__(self, "cls", _token_and_id("RobertaProcessing", "cls", self.cls))

    def num_special_tokens_to_add(self, is_pair: bool = False) -> int:
        return 4 if is_pair else 2

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type_name, "sep": list(self.sep), "cls": list(self.cls), "trim_offsets": self.trim_offsets,
                "add_prefix_space": self.add_prefix_space}


@REGISTRY.register
@dataclass(frozen=True)
class Sequence(PostProcessor):
    """HF ``Sequence``: post-processors applied in order (Llama 3's ``[ByteLevel, TemplateProcessing]``).

    >>> s = Sequence([ByteLevel(trim_offsets=False), TemplateProcessing("<s> $A", special_tokens=[("<s>", 1)])])
    >>> s.num_special_tokens_to_add(), [p["type"] for p in s.to_dict()["processors"]]
    (1, ['ByteLevel', 'TemplateProcessing'])
    """

    type_name: ClassVar[str] = "Sequence"
    processors: tuple[PostProcessor, ...] = ()

    def __post_init__(self) -> None:
        for i, p in enumerate(self.processors):
            if not isinstance(p, PostProcessor):
                raise TypeError(f"Sequence.processors[{i}] must be a PostProcessor, got {type(p).__name__}")
        object.__setattr__(self, "processors", tuple(self.processors))

    def num_special_tokens_to_add(self, is_pair: bool = False) -> int:
        return sum(p.num_special_tokens_to_add(is_pair) for p in self.processors)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type_name, "processors": [p.to_dict() for p in self.processors]}

    @classmethod
    def _from_fields(cls, fields: dict[str, Any], registry: Registry[Any], source: str) -> "Sequence":
        items = fields.get("processors", [])
        if not isinstance(items, list):
            raise TypeError("'processors' must be a list")
        return cls(tuple(registry.from_dict(item, source) for item in items))

    __hash__ = None  # type: ignore[assignment]  # may hold a TemplateProcessing
