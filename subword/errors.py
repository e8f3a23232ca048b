"""Exceptions raised by :mod:`subword`.

Every error a user can cause derives from :class:`SubwordError`, so callers can catch the
family in one clause. The value-like errors also derive from :class:`ValueError`, so code
written against the standard library's conventions keeps working.

>>> from subword.errors import FormatError, SubwordError
>>> issubclass(FormatError, SubwordError) and issubclass(FormatError, ValueError)
True
"""

from __future__ import annotations

__all__ = [
    "SubwordError",
    "FormatError",
    "UnsupportedComponentError",
    "ModelError",
    "CoreUnavailableError",
]


class SubwordError(Exception):
    """Base class of every error raised on purpose by :mod:`subword`."""


class FormatError(SubwordError, ValueError):
    """A file or JSON document is corrupt, truncated, or does not follow the format.

    The message names the file (or ``<string>``) and what is wrong with it.
    """


class UnsupportedComponentError(FormatError):
    """A ``tokenizer.json`` uses a component type this library does not implement.

    Attributes:
        section: The section of the file, e.g. ``"pre_tokenizer"``.
        type_name: The unsupported ``"type"`` value, e.g. ``"Metaspace"``.
        supported: The type names that are supported in that section.
    """

    def __init__(self, section: str, type_name: str, supported: list[str], source: str = "<string>") -> None:
        self.section = section
        self.type_name = type_name
        self.supported = list(supported)
        self.source = source
        super().__init__(
            f"unsupported {section} type {type_name!r} in {source} (supported: {', '.join(self.supported)})"
        )

    def __reduce__(self):  # keep the error picklable (multiprocessing re-raises it in the parent)
        return (type(self), (self.section, self.type_name, self.supported, self.source))


class ModelError(SubwordError, ValueError):
    """A model description is inconsistent, e.g. a merge refers to a token missing from the vocab."""


class CoreUnavailableError(SubwordError, RuntimeError):
    """The compiled extension ``subword._core`` lacks a class this operation needs.

    This happens with a stale build; rebuild with ``pip install -e . --no-deps``.
    """
