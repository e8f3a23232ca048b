"""``compare()``: many tokenizers on the same lines, and the :class:`Comparison` it returns.

:func:`compare` checks its arguments, prepares the tokenizers (padding and truncation off, no
post-processor specials) and hands over to :func:`subword.compare.report.build`, which runs the one pass
through the Rust core, the metrics and the block bootstrap, and returns the JSON document (schema in
``subword/compare/schema.json``, described in ``docs/compare.md``); the renderers turn it into text or
HTML. This module imports nothing heavy: ``import subword`` binds ``subword.compare`` to :func:`compare`
without loading numpy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["compare", "Comparison", "SCHEMA_VERSION"]

#: The version of the JSON document: 2 since the intervals come from the block bootstrap (``options.bootstrap``)
#: and ``cumulative_share`` counts absolute contributions.
SCHEMA_VERSION = 2


class Comparison:
    """The result of :func:`compare`: the JSON document and views of it.

    Attributes:
        doc: The JSON document (a dict; see ``docs/compare.md``).
    """

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc

    @property
    def names(self) -> list[str]:
        """The tokenizers' names, in the order given."""
        return [t["name"] for t in self.doc["tokenizers"]]

    @property
    def metrics(self) -> dict[str, dict[str, float | None]]:
        """``{tokenizer name: {metric: value}}`` (plain numbers; intervals are in :attr:`intervals`)."""
        return {t["name"]: {k: v["value"] for k, v in t["metrics"].items()} for t in self.doc["tokenizers"]}

    @property
    def intervals(self) -> dict[str, dict[str, list[float | None]]]:
        """``{tokenizer name: {metric: [low, high]}}``: the block-bootstrap intervals at :attr:`level`."""
        return {t["name"]: {k: v["ci"] for k, v in t["metrics"].items()} for t in self.doc["tokenizers"]}

    @property
    def level(self) -> float:
        """The confidence level of the intervals (0.95)."""
        return float(self.doc["options"]["confidence"])

    @property
    def pairwise(self) -> list[dict[str, Any]]:
        """One entry per pair of tokenizers: boundary P/R/F1, vocabulary overlap, differences."""
        return self.doc["pairwise"]

    @property
    def words(self) -> list[dict[str, Any]]:
        """The attribution: per pair, the words behind the token-count difference."""
        return self.doc["attribution"]

    def to_json(self, indent: int | None = None) -> str:
        """The document as JSON text (compact by default: json's C encoder only runs without ``indent``)."""
        return json.dumps(self.doc, indent=indent, ensure_ascii=False, allow_nan=False)

    def render_terminal(self, *, color: bool = False, show: int | None = None) -> str:
        """The terminal view (metrics table, then sample lines)."""
        from subword.compare.render_terminal import render_terminal

        return render_terminal(self.doc, color=color, show=len(self.doc.get("samples", [])) if show is None else show)

    def to_html(self) -> str:
        """The self-contained HTML report."""
        from subword.compare.render_html import render_html

        return render_html(self.doc)

    def __repr__(self) -> str:
        return f"Comparison(tokenizers={self.names}, lines={self.doc['inputs']['lines']})"


def _prepare(tok: Any) -> Any:
    """A copy that encodes a line as it is: no padding, no truncation."""
    if tok.padding is None and tok.truncation is None:
        return tok
    copy = tok.with_options()
    copy.no_padding()
    copy.no_truncation()
    return copy


def compare(
    tokenizers: Sequence[Any],
    lines: Sequence[str],
    names: Sequence[str] | None = None,
    *,
    sources: Sequence[str] | None = None,
    inputs: Mapping[str, Any] | None = None,
    show: int = 20,
    bootstrap_replicates: int = 1000,
    seed: int = 0,
    gold: str | Sequence[tuple[str, list[int]]] | None = None,
    parallel: Mapping[str, Sequence[str]] | None = None,
    pivot: str | None = None,
    top_words: int = 50,
) -> Comparison:
    """Compares how tokenizers segment the same lines.

    Args:
        tokenizers: Two or more :class:`subword.Tokenizer` objects.
        lines: The text, one line per item, without line endings (as ``subword encode`` reads it).
        names: A name per tokenizer (default ``t1``, ``t2``, ...); must be distinct.
        sources: Where each tokenizer came from (a path or tiktoken name), for the JSON.
        inputs: The ``files`` list for the JSON ``inputs`` (path, lines, bytes, sha256 of each file), and
            optionally ``lines_sha256``, the sha256 of ``lines`` joined by line feeds when the caller has it
            (the CLI, from the file it read; else it is computed here).
        show: Sample lines to keep for the sample view.
        bootstrap_replicates: Block-bootstrap replicates (0: intervals are the point value).
        seed: Seed of the bootstrap.
        gold: A gold morph file path, or ``[(word, boundary offsets)]``.
        parallel: ``{language: lines}``, line-aligned, with ``pivot`` among them.
        pivot: The reference language of ``parallel``.
        top_words: Words listed per pair in the attribution.

    Returns:
        A :class:`Comparison`.

    Raises:
        ValueError: fewer than two tokenizers, names that clash or do not match, no lines, a bad
            gold file (``file:line``), parallel texts of different lengths or without the pivot, a
            tokenizer the Rust core cannot run.

    >>> from subword import Tokenizer, WordPiece
    >>> from subword.pre_tokenizers import Whitespace
    >>> chars = Tokenizer(WordPiece({"[UNK]": 0, "a": 1, "b": 2, "##a": 3, "##b": 4}), pre_tokenizer=Whitespace())
    >>> words = Tokenizer(WordPiece({"[UNK]": 0, "ab": 1, "ba": 2}), pre_tokenizer=Whitespace())
    >>> result = compare([chars, words], ["ab ba", "ab"], names=["chars", "words"], bootstrap_replicates=50)
    >>> result.metrics["chars"]["tokens"], result.metrics["words"]["tokens_per_word"]
    (6, 1.0)
    """
    tokenizers = list(tokenizers)
    if len(tokenizers) < 2:
        raise ValueError(f"compare needs at least two tokenizers, got {len(tokenizers)}")
    names = [f"t{i + 1}" for i in range(len(tokenizers))] if names is None else [str(n) for n in names]
    if len(names) != len(tokenizers):
        raise ValueError(f"{len(names)} names for {len(tokenizers)} tokenizers")
    if len(set(names)) != len(names):
        raise ValueError(f"tokenizer names must be distinct, got {names}")
    lines = list(lines)
    if not set(map(type, lines)) <= {str}:  # one C pass; the loop below only finds the culprit
        for i, s in enumerate(lines):
            if not isinstance(s, str):
                raise TypeError(f"lines[{i}] is {type(s).__name__}, not str")
    if not lines or not any(lines):
        raise ValueError("the input is empty: there are no lines to compare")
    if bootstrap_replicates < 0:
        raise ValueError(f"bootstrap_replicates must be >= 0, got {bootstrap_replicates}")
    from subword.compare.report import build

    doc = build([_prepare(t) for t in tokenizers], names, lines, sources=sources, inputs=inputs, show=show,
                bootstrap_replicates=bootstrap_replicates, seed=seed, gold=gold, parallel=parallel, pivot=pivot,
                top_words=top_words)
    return Comparison({"schema_version": SCHEMA_VERSION, **doc})
