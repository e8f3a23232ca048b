"""The SentencePiece model types of the pipeline: :class:`SentencePieceUnigram` and
:class:`SentencePieceBPE`, read from (and written back to) a ``.model`` file.

They hold the file's pieces (text, score, type) and the rest of its ``ModelProto`` (so that
``Tokenizer.save("x.model")`` writes the file back byte for byte), and run sentencepiece's own
algorithms in the Rust core: float32 Viterbi with sentencepiece's tie rule, n-best and exact sampling
for Unigram; score-ordered merges for BPE; user-defined pieces matched whole; unknown runs fused into
one ``<unk>``, or spelled as ``<0xXX>`` pieces with byte fallback. A :class:`~subword.Tokenizer` with one
of these models pairs it with a :class:`~subword.normalizers.SentencePieceNormalizer`.

How they differ from :class:`~subword.model.Unigram` / :class:`~subword.model.BPE` (HF's models): HF's
Unigram sums scores in float64 and matches control pieces; HF's BPE merges by rank, not by score.
Which one a file gets is decided by its format: a ``.model`` gives sentencepiece's ids, a
``tokenizer.json`` HF's.

>>> from subword.formats.spm import SpmModelFile
>>> m = SentencePieceUnigram(SpmModelFile(pieces=[("<unk>", 0.0, 2), ("▁a", -1.0, 1)], model_type=1))
>>> m.vocab, m.unk_token
({'<unk>': 0, '▁a': 1}, '<unk>')
"""

from __future__ import annotations

from typing import Any

from subword.errors import ModelError
from subword.formats.spm import MODEL_TYPES, PIECE_TYPES, SpmFormatError, SpmModelFile

__all__ = ["SentencePieceModel", "SentencePieceUnigram", "SentencePieceBPE"]


class SentencePieceModel:
    """What both SentencePiece model types share: the ``.model`` content and its vocabulary.

    Args:
        model_file: The parsed ``.model`` (:class:`~subword.formats.spm.SpmModelFile`).

    Raises:
        ModelError: the file's model type is not this class's, or it has no single unknown piece.
    """

    model_type: int = 0
    type_name: str = ""
    #: Built on first access for a model read by the fast reader (:meth:`_deferred`).
    _data_fields = ("file", "unk_id", "vocab")

    def __getattr__(self, name: str) -> Any:
        # Called only when normal lookup fails: a data field of a deferred model, not built yet.
        if name in type(self)._data_fields:
            loader = self.__dict__.get("_data_loader")
            if loader is not None:
                full = loader()
                self.__dict__.update({k: full.__dict__[k] for k in self._data_fields})
                self.__dict__.pop("_data_loader", None)
                return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @classmethod
    def _deferred(cls, data: bytes, trainer_spec: dict[str, Any]) -> "SentencePieceModel":
        """The model of a ``.model`` file's bytes whose pipeline was built in Rust from the same bytes: its
        ``file`` (the parsed :class:`~subword.formats.spm.SpmModelFile`), ``vocab`` and ``unk_id`` are
        built on first access. ``trainer_spec`` is the file's, decoded already."""
        self = cls.__new__(cls)
        self.__dict__["_data_loader"] = lambda: cls(SpmModelFile.from_bytes(data))
        self.__dict__["_trainer_spec"] = trainer_spec
        return self

    def _spec(self) -> dict[str, Any]:
        """The TrainerSpec (without building the file of a deferred model)."""
        if "file" not in self.__dict__ and "_trainer_spec" in self.__dict__:
            return self.__dict__["_trainer_spec"]
        return self.file.trainer_spec

    def __getstate__(self) -> dict[str, Any]:
        for name in self._data_fields:
            getattr(self, name)
        return dict(self.__dict__)

    def __init__(self, model_file: SpmModelFile) -> None:
        if not isinstance(model_file, SpmModelFile):
            raise TypeError(f"{type(self).__name__} takes an SpmModelFile, got {type(model_file).__name__}")
        if model_file.model_type != self.model_type:
            names = {v: k for k, v in MODEL_TYPES.items()}
            raise ModelError(f"{type(self).__name__} needs a {names[self.model_type]} model, this one is "
                             f"{names.get(model_file.model_type, model_file.model_type)}")
        try:
            self.unk_id = model_file.unk_id
        except SpmFormatError as exc:
            raise ModelError(str(exc)) from None
        self.file = model_file
        pieces = model_file.pieces
        vocab = {p[0]: i for i, p in enumerate(pieces)}
        if len(vocab) != len(pieces):  # a piece given twice: its first id, as sentencepiece's piece_to_id
            vocab = {}
            for i, (piece, _, _) in enumerate(pieces):
                vocab.setdefault(piece, i)
        self.vocab = vocab

    @property
    def pieces(self) -> list[tuple[str, float, int]]:
        """``(piece, score, type)`` in id order (type numbers as ``PIECE_TYPES``)."""
        return self.file.pieces

    @property
    def vocab_size(self) -> int:
        """Number of pieces."""
        return len(self.file.pieces)

    @property
    def unk_token(self) -> str:
        """The unknown piece (``<unk>`` by default)."""
        return self.file.pieces[self.unk_id][0]

    @property
    def byte_fallback(self) -> bool:
        """Unknown characters are spelled as ``<0xXX>`` pieces."""
        return bool(self._spec().get("byte_fallback", False))

    @property
    def unk_surface(self) -> str:
        """What decoding writes for an unknown piece (sentencepiece's default ``" ⁇ "``)."""
        return self._spec().get("unk_surface", " \u2047 ")

    def control_tokens(self) -> list[str]:
        """The CONTROL pieces (``<s>``, ``</s>``, ...): never produced by encoding, dropped by decoding."""
        return [p for p, _, t in self.file.pieces if t == PIECE_TYPES["CONTROL"]]

    def id_to_token_map(self) -> dict[int, str]:
        """Id -> piece."""
        return {i: p for i, (p, _, _) in enumerate(self.file.pieces)}

    def to_dict(self) -> dict[str, Any]:
        from subword.errors import FormatError

        raise FormatError(
            f"a {type(self).__name__} model has no tokenizer.json form of its own; save it as a .model, or "
            "convert it with subword.formats.convert.spm_to_hf_json (exact for BPE models)")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SentencePieceModel):
            return NotImplemented
        return type(self) is type(other) and self.file.to_bytes() == other.file.to_bytes()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(pieces=<{self.vocab_size}>, unk_token={self.unk_token!r}, "
                f"byte_fallback={self.byte_fallback})")


class SentencePieceUnigram(SentencePieceModel):
    """sentencepiece's Unigram model (float32 Viterbi, n-best, sampling); see the module docstring."""

    model_type = MODEL_TYPES["unigram"]
    type_name = "SentencePieceUnigram"


class SentencePieceBPE(SentencePieceModel):
    """sentencepiece's BPE model (merges by piece score); see the module docstring."""

    model_type = MODEL_TYPES["bpe"]
    type_name = "SentencePieceBPE"


def model_for(model_file: SpmModelFile) -> SentencePieceModel:
    """The model type of a ``.model`` file's content.

    Raises:
        ModelError: a WORD or CHAR model (not supported), or an invalid one.

    >>> model_for(SpmModelFile(pieces=[("<unk>", 0.0, 2)], model_type=2)).type_name
    'SentencePieceBPE'
    """
    kinds = {MODEL_TYPES["unigram"]: SentencePieceUnigram, MODEL_TYPES["bpe"]: SentencePieceBPE}
    cls = kinds.get(model_file.model_type)
    if cls is None:
        names = {v: k for k, v in MODEL_TYPES.items()}
        raise ModelError(f"SentencePiece model type {names.get(model_file.model_type, model_file.model_type)!r} "
                         "is not supported (unigram and bpe are)")
    return cls(model_file)
