"""``subword.compare``: the same text through many tokenizers, side by side.

The package is also callable: ``subword.compare(tokenizers, lines, names=None, **options)`` is
:func:`subword.compare.comparison.compare` and returns a :class:`Comparison`.

>>> import subword
>>> from subword import Tokenizer, WordPiece
>>> from subword.pre_tokenizers import Whitespace
>>> a = Tokenizer(WordPiece({"[UNK]": 0, "x": 1, "##x": 2}), pre_tokenizer=Whitespace())
>>> subword.compare([a, a], ["xx x"], names=["a", "b"], bootstrap_replicates=0).pairwise[0]["boundary_f1"]
1.0
"""

from __future__ import annotations

import sys
import types
from typing import Any

from subword.compare.comparison import SCHEMA_VERSION, Comparison, compare

__all__ = ["compare", "Comparison", "SCHEMA_VERSION"]


class _CallableModule(types.ModuleType):
    """Lets ``subword.compare(...)`` call the function while ``subword.compare.x`` stays the package."""

    def __call__(self, *args: Any, **kwargs: Any) -> Comparison:
        return compare(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
