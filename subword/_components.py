"""Shared plumbing for the pipeline components (normalizers, pre-tokenizers, decoders, processors).

Each component is a frozen dataclass whose fields are exactly the keys of its HF ``tokenizer.json``
dict, so serialising is ``{"type": ..., **fields}`` and loading is the reverse with checks. The
per-section :class:`Registry` turns a dict back into an object and names the section and the type
in its errors, which is what a user needs when a file from elsewhere does not load.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, ClassVar, Generic, TypeVar

from subword.errors import FormatError, UnsupportedComponentError

__all__ = ["Component", "Registry", "check_bool", "check_str"]


def check_bool(owner: str, name: str, value: object) -> None:
    """Raise ``TypeError`` unless ``value`` is a real bool (``1`` and ``"yes"`` are refused)."""
    if not isinstance(value, bool):
        raise TypeError(f"{owner}.{name} must be a bool, got {type(value).__name__} {value!r}")


def check_str(owner: str, name: str, value: object, *, optional: bool = False) -> None:
    """Raise ``TypeError`` unless ``value`` is a str (or None when ``optional``)."""
    if value is None and optional:
        return
    if not isinstance(value, str):
        kind = "a str or None" if optional else "a str"
        raise TypeError(f"{owner}.{name} must be {kind}, got {type(value).__name__} {value!r}")


class Component:
    """Base of the serialisable pipeline components.

    Subclasses are frozen dataclasses and set ``type_name`` (the HF ``"type"`` value).
    """

    type_name: ClassVar[str]

    def __post_init__(self) -> None:
        # Validate field types once, so a bad value fails at construction, not deep inside Rust.
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.type in ("bool", bool):
                check_bool(type(self).__name__, f.name, value)
            elif f.type in ("str", str):
                check_str(type(self).__name__, f.name, value)
            elif f.type in ("str | None", "Optional[str]"):
                check_str(type(self).__name__, f.name, value, optional=True)

    def to_dict(self) -> dict[str, Any]:
        """The HF ``tokenizer.json`` dict of this component."""
        out: dict[str, Any] = {"type": self.type_name}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            out[f.name] = getattr(self, f.name)
        return out

    def to_json(self) -> str:
        """The component dict as compact JSON (what the ``_core`` constructors take)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def _from_fields(cls, fields: dict[str, Any], registry: "Registry[Any]", source: str) -> "Component":
        """Build from the dict's fields (the ``"type"`` key already removed). Overridden by containers."""
        return cls(**fields)


C = TypeVar("C", bound=Component)


class Registry(Generic[C]):
    """Maps the HF ``"type"`` names of one section (e.g. ``"normalizer"``) to our classes."""

    def __init__(self, section: str) -> None:
        self.section = section
        self._classes: dict[str, type[C]] = {}

    def register(self, cls: type[C]) -> type[C]:
        """Class decorator: make ``cls`` loadable under its ``type_name``."""
        self._classes[cls.type_name] = cls
        return cls

    @property
    def supported(self) -> list[str]:
        """The supported type names, sorted."""
        return sorted(self._classes)

    def from_dict(self, data: object, source: str = "<string>") -> C:
        """Build a component from its HF dict.

        Raises:
            UnsupportedComponentError: the ``"type"`` is not one we implement.
            FormatError: the dict is malformed (not a dict, missing ``"type"``, unknown or ill-typed field).
        """
        if not isinstance(data, dict):
            raise FormatError(f"{self.section} in {source} must be a JSON object, got {type(data).__name__}")
        if "type" not in data:
            raise FormatError(f"{self.section} in {source} has no 'type' key: {data!r:.200}")
        type_name = data["type"]
        cls = self._classes.get(type_name) if isinstance(type_name, str) else None
        if cls is None:
            raise UnsupportedComponentError(self.section, str(type_name), self.supported, source)
        fields = {k: v for k, v in data.items() if k != "type"}
        known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(fields) - known)
        if unknown:
            raise FormatError(
                f"{self.section} {type_name!r} in {source} has unknown field(s) {unknown} "
                f"(known: {sorted(known) or 'none'})"
            )
        try:
            return cls._from_fields(fields, self, source)  # type: ignore[return-value]
        except (TypeError, ValueError) as exc:
            if isinstance(exc, FormatError):
                raise
            raise FormatError(f"invalid {self.section} {type_name!r} in {source}: {exc}") from exc
