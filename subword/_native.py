"""Access to the compiled core, with a clear error when a class is missing from a stale build."""

from __future__ import annotations

from typing import Any

from subword.errors import CoreUnavailableError

__all__ = ["core_class", "has_core_class"]


def has_core_class(name: str) -> bool:
    """True when ``subword._core`` can be imported and defines ``name``.

    >>> has_core_class("NoSuchClass")
    False
    """
    try:
        from subword import _core
    except ImportError:
        return False
    return hasattr(_core, name)


def core_class(name: str) -> Any:
    """Return ``subword._core.<name>``.

    Raises:
        CoreUnavailableError: the extension is missing or does not define ``name``.
    """
    try:
        from subword import _core
    except ImportError as exc:
        raise CoreUnavailableError(
            f"the compiled extension subword._core could not be imported ({exc}); "
            "build it with `pip install -e . --no-deps`"
        ) from exc
    try:
        return getattr(_core, name)
    except AttributeError:
        raise CoreUnavailableError(
            f"subword._core has no {name!r}; the compiled extension is stale or incomplete "
            "(rebuild with `pip install -e . --no-deps`)"
        ) from None
