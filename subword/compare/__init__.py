"""``subword.compare``: the same text through many tokenizers, side by side.

``subword.compare(tokenizers, lines, names=None, **options)`` is the function
:func:`subword.compare.comparison.compare` (``subword`` binds the name to it), and returns a
:class:`Comparison`. The modules of this package are imported with ``from subword.compare import
metrics`` (``import subword.compare.metrics as m`` would look ``metrics`` up on the function).

>>> import subword
>>> from subword import Tokenizer, WordPiece
>>> from subword.pre_tokenizers import Whitespace
>>> a = Tokenizer(WordPiece({"[UNK]": 0, "x": 1, "##x": 2}), pre_tokenizer=Whitespace())
>>> subword.compare([a, a], ["xx x"], names=["a", "b"], bootstrap_replicates=0).pairwise[0]["boundary_f1"]
1.0
"""

from __future__ import annotations

from subword.compare.comparison import SCHEMA_VERSION, Comparison, compare

__all__ = ["compare", "Comparison", "SCHEMA_VERSION"]
