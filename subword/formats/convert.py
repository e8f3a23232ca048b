"""Conversions between SentencePiece ``.model`` files and HF ``tokenizer.json``, where exact.

What converts, and why the rest is refused:

* ``.model`` (BPE) -> ``tokenizer.json``: ``Precompiled`` normalizer (the model's own table),
  ``Strip`` + ``Replace(" {2,}", " ")`` for ``remove_extra_whitespaces``, ``Metaspace``
  (``prepend_scheme="always"``), and a BPE model whose merges are every split of every piece into
  two pieces, ranked by the merged piece's id (sentencepiece merges by piece score, highest
  first, and BPE scores fall with the id). HF ``tokenizers`` then gives sentencepiece's ids on
  real text (tests: English, CJK, ~100 languages) with one known exception: HF's ``Precompiled``
  looks up whole grapheme clusters, sentencepiece the longest key from left to right, so a
  character followed by combining marks that the table does not compose (``à́``) can normalize
  differently. Refused: ``treat_whitespace_as_suffix``, ``add_dummy_prefix``
  off, user-defined pieces (HF would need added tokens with other matching rules) and unused
  pieces.
* ``.model`` (Unigram) -> ``tokenizer.json``: refused. HF's Unigram sums scores in float64 where
  sentencepiece uses float32, so tied segmentations can differ (SPEC-tokenizers §4.6).
* ``tokenizer.json`` -> ``.model``: refused unless the file came from a ``.model`` (then the
  original travels inside it under ``model.provenance.sentencepiece_model``): sentencepiece has no
  byte-level alphabet, no pre-tokenizer other than splitting at ``▁``, and merges by score, so an
  HF BPE trained with other components has no exact sentencepiece equivalent.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

from subword.errors import FormatError

from subword.formats.spm import PIECE_TYPES, SpmModelFile

__all__ = ["ConversionError", "convert_file", "hf_json_to_spm", "spm_to_hf_json"]


class ConversionError(FormatError):
    """The conversion would not be exact; the message says why (a :class:`~subword.errors.FormatError`,
    so also a ``ValueError``)."""


def convert_file(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Convert a tokenizer file (any kind :meth:`subword.Tokenizer.from_file` reads) to the format the
    target's name asks for: ``.model`` (SentencePiece), ``.tiktoken`` (when tiktoken support is there),
    anything else ``tokenizer.json``. Written atomically; nothing is written when the conversion would
    not be exact.

    Raises:
        ConversionError: no exact conversion (the message says why).
        subword.errors.FormatError: the source is not a tokenizer file.

    >>> import tempfile, pathlib
    >>> from subword.formats.spm import SpmModelFile, write_model
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> write_model(d / "m.model", SpmModelFile(pieces=[("<unk>", 0.0, 2), ("▁a", 0.0, 1), ("▁", -1.0, 1),
    ...                                                 ("a", -2.0, 1)], model_type=2))
    >>> convert_file(d / "m.model", d / "tokenizer.json"); convert_file(d / "tokenizer.json", d / "back.model")
    >>> (d / "back.model").read_bytes() == (d / "m.model").read_bytes()
    True
    """
    from subword.tokenizer import Tokenizer

    tok = Tokenizer.from_file(source)
    if Path(target).suffix == ".tiktoken":
        import importlib

        try:
            tiktoken = importlib.import_module("subword.formats.tiktoken")
        except ImportError:
            tiktoken = None
        save = getattr(tiktoken, "save", None)
        if save is None:
            raise ConversionError(f"cannot write {target}: this build has no tiktoken writer")
        save(tok, target)
        return
    tok.save(target)


def spm_to_hf_json(model: SpmModelFile) -> dict[str, Any]:
    """An HF ``tokenizer.json`` dict that encodes like the sentencepiece BPE ``model``.

    Raises:
        ConversionError: the model is not one this conversion reproduces exactly.

    >>> m = SpmModelFile(pieces=[("<unk>", 0.0, 2), ("▁a", 0.0, 1), ("▁", -1.0, 1), ("a", -2.0, 1)], model_type=2)
    >>> spm_to_hf_json(m)["model"]["merges"]
    [['▁', 'a']]
    """
    if model.model_type != 2:
        raise ConversionError(
            "only BPE .model files convert to tokenizer.json exactly: HF's Unigram sums scores in float64 where "
            "sentencepiece uses float32, so tied segmentations can differ")
    trainer, norm = model.trainer_spec, model.normalizer_spec
    if trainer.get("treat_whitespace_as_suffix", False):
        raise ConversionError("treat_whitespace_as_suffix has no HF Metaspace equivalent")
    if not norm.get("add_dummy_prefix", True) or not norm.get("escape_whitespaces", True):
        raise ConversionError("add_dummy_prefix/escape_whitespaces off has no exact HF Metaspace equivalent")
    kinds = {t for _, _, t in model.pieces}
    if PIECE_TYPES["USER_DEFINED"] in kinds or PIECE_TYPES["UNUSED"] in kinds:
        raise ConversionError("user-defined and unused pieces have no exact HF BPE equivalent")
    vocab = {p: i for i, (p, _, _) in enumerate(model.pieces)}
    normal = [(i, p) for i, (p, _, t) in enumerate(model.pieces) if t == PIECE_TYPES["NORMAL"]]
    merges: list[tuple[int, int, int, str, str]] = []
    for i, piece in normal:
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in vocab and right in vocab:
                merges.append((i, vocab[left], vocab[right], left, right))
    merges.sort()
    normalizers: list[dict[str, Any]] = []
    charsmap = norm.get("precompiled_charsmap", b"")
    if charsmap:
        normalizers.append({"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode()})
    if norm.get("remove_extra_whitespaces", True):
        normalizers += [{"type": "Strip", "strip_left": True, "strip_right": True},
                        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]
    special = [(i, p) for i, (p, _, t) in enumerate(model.pieces) if t != PIECE_TYPES["NORMAL"]
               and t != PIECE_TYPES["BYTE"]]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": i, "content": p, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, p in special],
        "normalizer": {"type": "Sequence", "normalizers": normalizers} if normalizers else None,
        "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
        "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": model.pieces[model.unk_id][0],
            "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": True,
            "byte_fallback": bool(trainer.get("byte_fallback", False)), "ignore_merges": False,
            "vocab": vocab,
            "merges": [[left, right] for _, _, _, left, right in merges],
            "provenance": {"sentencepiece_model": base64.b64encode(model.to_bytes()).decode()},
        },
    }


def hf_json_to_spm(data: dict[str, Any]) -> SpmModelFile:
    """The ``.model`` a ``tokenizer.json`` was converted from (see the module docstring).

    Raises:
        ConversionError: the tokenizer did not come from a ``.model``; the message says why it
            cannot be converted exactly.

    >>> try:
    ...     hf_json_to_spm({"model": {"type": "BPE"}, "pre_tokenizer": {"type": "ByteLevel"}})
    ... except ConversionError as exc:
    ...     print(str(exc)[:46])
    byte-level BPE cannot be a SentencePiece model
    """
    model = data.get("model") or {}
    blob = (model.get("provenance") or {}).get("sentencepiece_model")
    if blob:
        return SpmModelFile.from_bytes(base64.b64decode(blob))
    pre = data.get("pre_tokenizer") or {}
    kinds = {pre.get("type")} | {p.get("type") for p in pre.get("pretokenizers", [])}
    if "ByteLevel" in kinds:
        raise ConversionError(
            "byte-level BPE cannot be a SentencePiece model: its pieces are bytes mapped to printable characters, "
            "and sentencepiece has no byte-level alphabet (byte_fallback only adds the 256 <0xXX> pieces)")
    if model.get("type") == "WordPiece":
        raise ConversionError("WordPiece (greedy longest match with ## continuations) has no SentencePiece model type")
    if kinds - {"Metaspace", None}:
        raise ConversionError(
            f"pre-tokenizer {sorted(k for k in kinds if k)} cannot be expressed: sentencepiece only splits at ▁")
    raise ConversionError(
        f"this {model.get('type', '?')} tokenizer.json was not converted from a .model; an exact SentencePiece "
        "equivalent would need sentencepiece's own normalizer table and piece scores that reproduce its merge order")
