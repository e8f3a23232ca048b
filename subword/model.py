"""The model descriptions of a tokenizer pipeline: BPE (vocabulary, ranked merges, options), WordPiece and
Unigram (pieces with scores).

This is data plus validation; encoding happens in the Rust core (``_core.CoreTokenizer``), with the
readable reference in :mod:`subword.reference`. The fields and their meaning follow HF's models and their
``tokenizer.json`` ``"model"`` dicts, so a model round-trips through HF unchanged.

>>> m = BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")])
>>> m.vocab_size, m.merges
(3, [('a', 'b')])
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from typing import Any

from subword.errors import ModelError

__all__ = ["BPE", "WordPiece", "Unigram", "WordLevel", "Model"]

log = logging.getLogger(__name__)

_FIELDS = (
    "dropout",
    "unk_token",
    "continuing_subword_prefix",
    "end_of_word_suffix",
    "fuse_unk",
    "byte_fallback",
    "ignore_merges",
)


class _VocabModel:
    """What every vocabulary model shares: the vocab (token -> id) and its HF option fields.

    A model loaded by a fast reader (``Tokenizer.from_file``) may have *deferred data*: its options are
    set and checked at once, but its data fields (:attr:`_data_fields`, e.g. ``vocab`` and ``merges``)
    are built by a loader on first access. The file's data was checked in Rust by then, and the Rust
    pipeline is built from the same data (:meth:`_native_data`), so nothing is converted twice; a model
    whose data was never asked for never builds these Python objects.
    """

    vocab: dict[str, int]
    _option_fields: tuple[str, ...] = ()
    #: The fields a model with deferred data builds on first access.
    _data_fields: tuple[str, ...] = ("vocab",)

    def __getattr__(self, name: str) -> Any:
        # Called only when normal lookup fails: here, a data field not built yet.
        if name in type(self)._data_fields:
            loader = self.__dict__.get("_data_loader")
            if loader is not None:
                fields = loader()
                self.__dict__.update(fields)
                self.__dict__.pop("_data_loader", None)
                self.__dict__.pop("_native", None)
                return fields[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _defer(self, loader: Any, native: Any) -> None:
        """Leave the data fields to ``loader()`` (a dict of them); ``native`` is the Rust copy of the data."""
        self.__dict__["_data_loader"] = loader
        self.__dict__["_native"] = native

    def _native_data(self) -> Any:
        """The Rust ``_core.NativeModel`` holding this model's data while the Python data is not built
        (after that, Python code may have changed it, so the pipeline is built from the Python data)."""
        return self.__dict__.get("_native") if "_data_loader" in self.__dict__ else None

    def __getstate__(self) -> dict[str, Any]:
        # pickle and copy see the whole model
        for name in self._data_fields:
            getattr(self, name)
        return dict(self.__dict__)

    @property
    def vocab_size(self) -> int:
        """Number of tokens in the vocab (added tokens not included)."""
        return len(self.vocab)

    def id_to_token_map(self) -> dict[int, str]:
        """The inverse of ``vocab``."""
        return {i: t for t, i in self.vocab.items()}

    def options(self) -> dict[str, Any]:
        """The non-data fields, in HF's key order."""
        return {name: getattr(self, name) for name in self._option_fields}


#: BPE's options and the constructor's defaults for them.
_BPE_OPTION_DEFAULTS: dict[str, Any] = {
    "unk_token": None, "continuing_subword_prefix": None, "end_of_word_suffix": None, "fuse_unk": False,
    "byte_fallback": False, "dropout": None, "ignore_merges": False, "merge_by_token_id": False,
}


class BPE(_VocabModel):
    """A byte-pair-encoding model: ``vocab`` (token -> id) and ``merges`` (pairs in rank order).

    Args:
        vocab: Token -> id. Ids must be distinct non-negative ints (holes are allowed but logged, as HF does).
        merges: ``(left, right)`` pairs, best rank first. The legacy ``"left right"`` strings are accepted.
            ``left``, ``right`` and their concatenation (``right`` without ``continuing_subword_prefix``)
            must be in ``vocab``.
        unk_token: Token for characters the vocab cannot spell; must be in ``vocab``. ``None`` drops them
            (HF behaviour).
        continuing_subword_prefix: Prefix of every non-initial subword (e.g. ``"##"``).
        end_of_word_suffix: Suffix of every word-final subword (e.g. ``"</w>"``).
        fuse_unk: Merge consecutive unknown characters into one ``unk_token``.
        byte_fallback: Spell unknown characters as ``<0xXX>`` byte tokens when all of them are in ``vocab``.
        dropout: BPE-dropout probability in ``[0, 1]``, or ``None``.
        ignore_merges: Emit a whole pre-token directly when it is in ``vocab``.
        merge_by_token_id: tiktoken's rule instead of HF's: the adjacent pair whose merged token has the
            smallest id merges first (leftmost on ties), whatever the order of ``merges``. Saved as the extra
            model key ``"merge_by_token_id"`` only when set (HF ignores it and merges in list order).

    Raises:
        ModelError: inconsistent vocab/merges/options.
        TypeError: an argument of the wrong type.

    >>> BPE({"a": 0}, [], unk_token="b")
    Traceback (most recent call last):
    ...
    subword.errors.ModelError: unk_token 'b' is not in the vocab
    """

    _option_fields = _FIELDS
    _data_fields = ("vocab", "merges")

    def __init__(
        self,
        vocab: Mapping[str, int],
        merges: Iterable[tuple[str, str] | list[str] | str],
        *,
        unk_token: str | None = None,
        continuing_subword_prefix: str | None = None,
        end_of_word_suffix: str | None = None,
        fuse_unk: bool = False,
        byte_fallback: bool = False,
        dropout: float | None = None,
        ignore_merges: bool = False,
        merge_by_token_id: bool = False,
    ) -> None:
        if not isinstance(vocab, Mapping):
            raise TypeError(f"vocab must be a mapping token -> id, got {type(vocab).__name__}")
        self.vocab: dict[str, int] = dict(vocab)
        self.merges: list[tuple[str, str]] = [_parse_merge(m, i) for i, m in enumerate(merges)]
        self._set_options(unk_token=unk_token, continuing_subword_prefix=continuing_subword_prefix,
                          end_of_word_suffix=end_of_word_suffix, fuse_unk=fuse_unk, byte_fallback=byte_fallback,
                          dropout=dropout, ignore_merges=ignore_merges, merge_by_token_id=merge_by_token_id)
        self._validate_options()
        self._validate_data()

    @classmethod
    def _deferred(cls, loader: Any, native: Any, **options: Any) -> "BPE":
        """A BPE whose options are set and checked now and whose ``vocab`` and ``merges`` come from
        ``loader()`` on first access (a fast reader's model: the data was checked in Rust, ``native``).

        Raises:
            TypeError: an option of the wrong type (as the constructor).
            ModelError: an invalid option value.
        """
        self = cls.__new__(cls)
        self._defer(loader, native)
        self._set_checked_options(options)
        return self

    @classmethod
    def _from_trainer(cls, vocab: dict[str, int], merges: list[tuple[str, str]], **options: Any) -> "BPE":
        """A BPE of our Rust trainer's output: the options checked as the constructor checks them, the data
        taken as it is (not copied).

        The trainer adds each merge's token to the vocab as it makes the merge, from parts already there,
        with ids 0..n-1, so every check of the constructor's data validation holds by construction (the
        tests check the trainer against HF's on real text). Those checks, and the merges' parsing, were a
        third of ``train_from_counts`` on 5 MB (Python, on one thread, whatever the trainer's threads).

        >>> m = BPE._from_trainer({"a": 0, "b": 1, "ab": 2}, [("a", "b")], unk_token=None)
        >>> m.merges, m.vocab["ab"]
        ([('a', 'b')], 2)
        """
        self = cls.__new__(cls)
        self.vocab = vocab
        self.merges = merges
        self._set_checked_options(options)
        if self.unk_token is not None and self.unk_token not in self.vocab:
            raise ModelError(f"unk_token {self.unk_token!r} is not in the vocab")
        return self

    def _set_checked_options(self, options: dict[str, Any]) -> None:
        """Sets ``options`` over the constructor's defaults and checks them as the constructor does."""
        unknown = sorted(set(options) - set(_BPE_OPTION_DEFAULTS))
        if unknown:
            raise TypeError(f"BPE() got unexpected keyword argument(s) {unknown}")
        self._set_options(**{**_BPE_OPTION_DEFAULTS, **options})
        self._validate_options()

    def _set_options(self, **options: Any) -> None:
        for name, value in options.items():
            setattr(self, name, value)

    # ==== validation ====

    def _validate_options(self) -> None:
        for name in ("unk_token", "continuing_subword_prefix", "end_of_word_suffix"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"BPE.{name} must be a str or None, got {type(value).__name__}")
        for name in ("fuse_unk", "byte_fallback", "ignore_merges", "merge_by_token_id"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"BPE.{name} must be a bool, got {getattr(self, name)!r}")
        if self.dropout is not None:
            if isinstance(self.dropout, bool) or not isinstance(self.dropout, (int, float)):
                raise TypeError(f"BPE.dropout must be a float or None, got {self.dropout!r}")
            if not 0.0 <= self.dropout <= 1.0:
                raise ModelError(f"dropout must be in [0, 1], got {self.dropout}")
            self.dropout = float(self.dropout)

    def _validate_data(self) -> None:
        seen: dict[int, str] = {}
        for token, idx in self.vocab.items():
            if not isinstance(token, str):
                raise TypeError(f"vocab keys must be str, got {type(token).__name__} {token!r}")
            if isinstance(idx, bool) or not isinstance(idx, int) or idx < 0:
                raise ModelError(f"vocab id of {token!r} must be a non-negative int, got {idx!r}")
            if idx in seen:
                raise ModelError(f"vocab id {idx} is used by both {seen[idx]!r} and {token!r}")
            seen[idx] = token
        # Holes are legal (HF loads them; cl100k_base has them around its special tokens) and the embedding
        # table is sized by the largest id, so this is a note for debugging, not a warning to every user.
        if self.vocab and max(seen) + 1 != len(seen):
            log.debug("BPE vocab ids have holes: %d tokens, largest id %d", len(seen), max(seen))
        if self.unk_token is not None and self.unk_token not in self.vocab:
            raise ModelError(f"unk_token {self.unk_token!r} is not in the vocab")
        prefix = self.continuing_subword_prefix or ""
        for rank, (left, right) in enumerate(self.merges):
            for part in (left, right):
                if part not in self.vocab:
                    raise ModelError(f"merge #{rank} ({left!r}, {right!r}): {part!r} is not in the vocab")
            # With a continuing-subword prefix the right part carries it, the merged token does not.
            merged = left + (right[len(prefix):] if prefix and right.startswith(prefix) else right)
            if merged not in self.vocab:
                raise ModelError(
                    f"merge #{rank} ({left!r}, {right!r}): the merged token {merged!r} is not in the vocab"
                )

    # ==== accessors ====

    # ==== serialisation (HF "model" dict) ====

    def to_dict(self) -> dict[str, Any]:
        """The HF ``tokenizer.json`` ``"model"`` dict: vocab ordered by id, merges as pairs.

        >>> BPE({"b": 1, "a": 0, "ab": 2}, [("a", "b")]).to_dict()["vocab"]
        {'a': 0, 'b': 1, 'ab': 2}
        """
        out = self._header()
        out["vocab"] = dict(sorted(self.vocab.items(), key=lambda kv: kv[1]))
        out["merges"] = [[a, b] for a, b in self.merges]
        return out

    def _header(self) -> dict[str, Any]:
        """The ``"model"`` dict without its data (``vocab``, ``merges``)."""
        out: dict[str, Any] = {"type": "BPE", **self.options()}
        if self.merge_by_token_id:
            out["merge_by_token_id"] = True
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, deferred: tuple[Any, Any] | None = None) -> "BPE":
        """Build from an HF ``"model"`` dict (``type`` may be absent in old files; legacy merges accepted).

        Args:
            data: The ``"model"`` dict.
            deferred: ``(loader, native)`` of a fast reader: the dict's ``vocab`` and ``merges`` are
                placeholders, the data comes from ``loader()`` on first use (see ``_VocabModel``).

        Raises:
            ModelError: unknown keys, wrong types, or inconsistent contents.

        >>> BPE.from_dict({"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]}).merges
        [('a', 'b')]
        """
        data = dict(data)
        data.pop("type", None)
        unknown = sorted(set(data) - {"vocab", "merges", "merge_by_token_id", *_FIELDS})
        if unknown:
            raise ModelError(f"unknown BPE model field(s) {unknown}")
        if "vocab" not in data or "merges" not in data:
            raise ModelError("a BPE model needs 'vocab' and 'merges'")
        if not isinstance(data["merges"], list):
            raise ModelError(f"BPE 'merges' must be a list, got {type(data['merges']).__name__}")
        try:
            if deferred is not None:
                del data["vocab"], data["merges"]
                return cls._deferred(*deferred, **data)
            return cls(data.pop("vocab"), data.pop("merges"), **data)
        except TypeError as exc:
            raise ModelError(str(exc)) from exc

    # ==== dunder ====

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BPE):
            return NotImplemented
        return (self.vocab, self.merges, self.options(), self.merge_by_token_id) == (
            other.vocab, other.merges, other.options(), other.merge_by_token_id)

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options().items())
        return f"BPE(vocab=<{len(self.vocab)} tokens>, merges=<{len(self.merges)} merges>, {opts})"


def _parse_merge(m: object, rank: int) -> tuple[str, str]:
    if type(m) is tuple and len(m) == 2 and type(m[0]) is str and type(m[1]) is str:
        return m  # the common case first: a 200k-token vocabulary has ~500k merges
    if isinstance(m, str):
        # Legacy "a b" form. Splitting on the first space is HF's rule; tokens cannot contain spaces here.
        parts = m.split(" ")
        if len(parts) != 2:
            raise ModelError(f"merge #{rank} {m!r} is not of the form 'left right'")
        return parts[0], parts[1]
    if isinstance(m, (tuple, list)) and len(m) == 2 and all(isinstance(p, str) for p in m):
        return m[0], m[1]
    raise ModelError(f"merge #{rank} must be a pair of strings, got {m!r}")


# ==== WordPiece ====

_WP_FIELDS = ("unk_token", "continuing_subword_prefix", "max_input_chars_per_word")


class WordPiece(_VocabModel):
    """A WordPiece model (HF ``WordPiece``): a vocab encoded greedily, longest match first.

    Each word is cut from the left into the longest vocab token; every piece after the first is looked up
    with ``continuing_subword_prefix``. A word longer than ``max_input_chars_per_word`` chars, or one with a
    position no token matches, becomes a single ``unk_token``.

    Args:
        vocab: Token -> id (distinct non-negative ids).
        unk_token: The unknown token. It need not be in the vocab (HF accepts that) but encoding a word that
            needs it then fails.
        continuing_subword_prefix: Prefix of non-initial pieces.
        max_input_chars_per_word: Longer words become ``unk_token``.

    Raises:
        ModelError: duplicate ids, bad types or values.

    >>> m = WordPiece({"[UNK]": 0, "un": 1, "##able": 2})
    >>> m.vocab_size, m.to_dict()["type"]
    (3, 'WordPiece')
    """

    _option_fields = _WP_FIELDS

    def __init__(
        self,
        vocab: Mapping[str, int],
        *,
        unk_token: str = "[UNK]",
        continuing_subword_prefix: str = "##",
        max_input_chars_per_word: int = 100,
    ) -> None:
        if not isinstance(vocab, Mapping):
            raise TypeError(f"vocab must be a mapping token -> id, got {type(vocab).__name__}")
        self.vocab: dict[str, int] = dict(vocab)
        self._set_options(unk_token, continuing_subword_prefix, max_input_chars_per_word)
        seen: dict[int, str] = {}
        for token, idx in self.vocab.items():
            if not isinstance(token, str):
                raise ModelError(f"vocab keys must be str, got {type(token).__name__} {token!r}")
            if isinstance(idx, bool) or not isinstance(idx, int) or idx < 0:
                raise ModelError(f"vocab id of {token!r} must be a non-negative int, got {idx!r}")
            if idx in seen:
                raise ModelError(f"vocab id {idx} is used by both {seen[idx]!r} and {token!r}")
            seen[idx] = token
        if self.unk_token not in self.vocab:
            log.warning("WordPiece unk_token %r is not in the vocab: words it cannot spell will fail to encode",
                        self.unk_token)

    def _set_options(self, unk_token: Any, continuing_subword_prefix: Any, max_input_chars_per_word: Any) -> None:
        self.unk_token = unk_token
        self.continuing_subword_prefix = continuing_subword_prefix
        self.max_input_chars_per_word = max_input_chars_per_word
        for name in ("unk_token", "continuing_subword_prefix"):
            if not isinstance(getattr(self, name), str):
                raise ModelError(f"WordPiece.{name} must be a str, got {getattr(self, name)!r}")
        m = self.max_input_chars_per_word
        if isinstance(m, bool) or not isinstance(m, int) or m < 0:
            raise ModelError(f"WordPiece.max_input_chars_per_word must be an int >= 0, got {m!r}")

    @classmethod
    def _deferred(cls, loader: Any, native: Any, *, unk_token: str = "[UNK]", continuing_subword_prefix: str = "##",
                  max_input_chars_per_word: int = 100) -> "WordPiece":
        """A WordPiece whose options are checked now and whose ``vocab`` comes from ``loader()`` on first
        access (a fast reader's model; ``native`` holds the data, checked in Rust, with ``unk_token`` in it).

        Raises:
            ModelError: an invalid option.
        """
        self = cls.__new__(cls)
        self._defer(loader, native)
        self._set_options(unk_token, continuing_subword_prefix, max_input_chars_per_word)
        return self

    @classmethod
    def from_vocab_file(cls, path: str | os.PathLike[str], **options: Any) -> "WordPiece":
        """Load a BERT ``vocab.txt`` (one token per line, id = line number).

        Read exactly as HF's ``WordPiece.from_file`` (``BertWordPieceTokenizer``) reads it: lines end at
        ``\\n`` only (a ``\\r`` before it goes with the trailing whitespace; U+2028, U+0085 and the other
        Unicode line breaks stay inside a line), each line loses its trailing White_Space, and line ``n`` is
        id ``n - 1``. A blank line is the empty token (it never matches; logged), and a repeated token takes
        the id of its LAST line, the earlier id left unused (logged), as HF's reader and transformers'
        ``load_vocab`` do.

        Raises:
            ModelError: the file is empty or not UTF-8.

        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "vocab.txt"
        >>> _ = p.write_bytes("[UNK]\\r\\nun\\n\\u2028\\n##able \\n".encode())
        >>> WordPiece.from_vocab_file(p).vocab
        {'[UNK]': 0, 'un': 1, '': 2, '##able': 3}
        """
        from pathlib import Path

        try:
            text = Path(path).read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ModelError(f"{path}: not UTF-8 ({exc})") from exc
        return cls(cls._vocab_of_text(text, path), **options)

    @staticmethod
    def _vocab_of_text(text: str, path: str | os.PathLike[str]) -> dict[str, int]:
        """The vocab of a vocab.txt's text (decoded as it is, no newline translation), as HF reads it."""
        from subword.normalizers import WHITE_SPACE

        trailing = "".join(WHITE_SPACE)
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the newline ending the last line
        vocab: dict[str, int] = {}
        for index, line in enumerate(lines):
            token = line.rstrip(trailing)
            if token == "":
                log.warning("%s:%d: blank line: the empty token (it never matches) has id %d, as in HF",
                            path, index + 1, index)
            if token in vocab:
                log.warning("%s:%d: duplicate token %r: it takes this id, %d, not %d (as HF does)",
                            path, index + 1, token, index, vocab[token])
            vocab[token] = index
        if not any(vocab):
            raise ModelError(f"{path}: no tokens")
        return vocab

    def to_dict(self) -> dict[str, Any]:
        """The HF ``tokenizer.json`` ``"model"`` dict (vocab ordered by id).

        >>> list(WordPiece({"b": 1, "a": 0}).to_dict())
        ['type', 'unk_token', 'continuing_subword_prefix', 'max_input_chars_per_word', 'vocab']
        """
        return {**self._header(), "vocab": dict(sorted(self.vocab.items(), key=lambda kv: kv[1]))}

    def _header(self) -> dict[str, Any]:
        """The ``"model"`` dict without its ``vocab``."""
        return {"type": "WordPiece", **self.options()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, deferred: tuple[Any, Any] | None = None) -> "WordPiece":
        """Build from an HF ``"model"`` dict (``deferred``: as in :meth:`BPE.from_dict`).

        >>> WordPiece.from_dict({"type": "WordPiece", "vocab": {"a": 0}, "unk_token": "a"}).unk_token
        'a'
        """
        data = dict(data)
        data.pop("type", None)
        unknown = sorted(set(data) - {"vocab", *_WP_FIELDS})
        if unknown:
            raise ModelError(f"unknown WordPiece model field(s) {unknown}")
        if "vocab" not in data:
            raise ModelError("a WordPiece model needs 'vocab'")
        if deferred is not None:
            del data["vocab"]
            return cls._deferred(*deferred, **data)
        return cls(data.pop("vocab"), **data)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WordPiece):
            return NotImplemented
        return (self.vocab, self.options()) == (other.vocab, other.options())

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.options().items())
        return f"WordPiece(vocab=<{len(self.vocab)} tokens>, {opts})"


# ==== Unigram ====


class Unigram(_VocabModel):
    """A Unigram language model (HF ``Unigram``): pieces with log-probability scores; a text is cut into the
    pieces whose scores sum highest (Viterbi), as SentencePiece and HF do.

    HF's rules, which the Rust core follows: every piece can match (control pieces too); a char no piece
    covers is unknown, consecutive unknowns fuse into one ``unk_id`` token (scored ``min score - 10``), or,
    with ``byte_fallback``, into ``<0xXX>`` byte tokens when all of them exist.

    Args:
        vocab: ``(piece, score)`` pairs; the id is the position. A piece given twice keeps the later id in
            ``vocab`` lookups (HF's map), both positions stay.
        unk_id: Position of the unknown piece, or ``None`` (encoding a char no piece covers then fails).
        byte_fallback: Spell unknown chars as ``<0xXX>`` byte pieces.

    Raises:
        ModelError: an empty vocab, a bad pair, or ``unk_id`` out of range.

    >>> m = Unigram([("<unk>", 0.0), ("a", -1.0), ("ab", -1.5)], unk_id=0)
    >>> m.vocab_size, m.unk_token, m.vocab["ab"]
    (3, '<unk>', 2)
    """

    _option_fields = ("unk_id", "byte_fallback")
    _data_fields = ("pieces", "vocab")

    def __init__(
        self,
        vocab: Iterable[tuple[str, float] | list[Any]],
        *,
        unk_id: int | None = None,
        byte_fallback: bool = False,
    ) -> None:
        pieces: list[tuple[str, float]] = []
        for i, item in enumerate(vocab):
            if not (isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str)
                    and isinstance(item[1], (int, float)) and not isinstance(item[1], bool)):
                raise ModelError(f"Unigram vocab[{i}] must be (piece, score), got {item!r}")
            pieces.append((item[0], float(item[1])))
        if not pieces:
            raise ModelError("a Unigram model needs at least one piece")
        if unk_id is not None and (isinstance(unk_id, bool) or not isinstance(unk_id, int)
                                   or not 0 <= unk_id < len(pieces)):
            raise ModelError(f"Unigram unk_id must be an index of the vocab (0..{len(pieces) - 1}) or None, "
                             f"got {unk_id!r}")
        if not isinstance(byte_fallback, bool):
            raise ModelError(f"Unigram.byte_fallback must be a bool, got {byte_fallback!r}")
        self.pieces = pieces
        self.vocab: dict[str, int] = {p: i for i, (p, _) in enumerate(pieces)}
        self.unk_id = unk_id
        self.byte_fallback = byte_fallback

    @property
    def vocab_size(self) -> int:
        """Number of pieces (a repeated piece counts twice, as in HF)."""
        return len(self.pieces)

    @property
    def unk_token(self) -> str | None:
        """The unknown piece, or ``None``."""
        return None if self.unk_id is None else self.pieces[self.unk_id][0]

    def id_to_token_map(self) -> dict[int, str]:
        """Id -> piece (every position, repeated pieces included)."""
        return {i: p for i, (p, _) in enumerate(self.pieces)}

    def to_dict(self) -> dict[str, Any]:
        """The HF ``"model"`` dict (HF's key order).

        >>> Unigram([("a", -1.0)]).to_dict()
        {'type': 'Unigram', 'unk_id': None, 'vocab': [['a', -1.0]], 'byte_fallback': False}
        """
        return {"type": "Unigram", "unk_id": self.unk_id, "vocab": [[p, s] for p, s in self.pieces],
                "byte_fallback": self.byte_fallback}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Unigram":
        """Build from an HF ``"model"`` dict.

        >>> Unigram.from_dict({"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["a", -2.0]]}).unk_token
        '<unk>'
        """
        data = dict(data)
        data.pop("type", None)
        unknown = sorted(set(data) - {"vocab", "unk_id", "byte_fallback"})
        if unknown:
            raise ModelError(f"unknown Unigram model field(s) {unknown}")
        if not isinstance(data.get("vocab"), list):
            raise ModelError("a Unigram model needs 'vocab', a list of [piece, score]")
        return cls(data.pop("vocab"), **data)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Unigram):
            return NotImplemented
        return (self.pieces, self.options()) == (other.pieces, other.options())

    def __repr__(self) -> str:
        return f"Unigram(vocab=<{len(self.pieces)} pieces>, unk_id={self.unk_id!r}, byte_fallback={self.byte_fallback!r})"


class WordLevel(_VocabModel):
    """HF ``WordLevel``: each pre-tokenized word is looked up whole; a word not in ``vocab`` is ``unk_token``
    (encoding fails, as in HF, when ``unk_token`` is not in the vocab either).

    Args:
        vocab: Token -> id.
        unk_token: The unknown token (HF's default ``"<unk>"``).

    Raises:
        ModelError: a malformed vocab.

    >>> from subword import Tokenizer
    >>> from subword.pre_tokenizers import WhitespaceSplit
    >>> tok = Tokenizer(WordLevel({"hello": 0, "[UNK]": 1}, unk_token="[UNK]"), pre_tokenizer=WhitespaceSplit())
    >>> tok.encode("hello world").tokens
    ['hello', '[UNK]']
    """

    _option_fields = ("unk_token",)

    def __init__(self, vocab: Mapping[str, int], unk_token: str = "<unk>") -> None:
        if not isinstance(vocab, Mapping):
            raise ModelError(f"WordLevel vocab must be a dict of token -> id, got {type(vocab).__name__}")
        for token, idx in vocab.items():
            if not isinstance(token, str) or isinstance(idx, bool) or not isinstance(idx, int) or not 0 <= idx < 2**32:
                raise ModelError(f"WordLevel vocab entry {token!r}: {idx!r} must be a str and an id in 0..2^32-1")
        if not isinstance(unk_token, str):
            raise ModelError(f"WordLevel.unk_token must be a str, got {unk_token!r}")
        self.vocab = dict(vocab)
        self.unk_token = unk_token

    def to_dict(self) -> dict[str, Any]:
        """The HF ``"model"`` dict (HF's key order).

        >>> WordLevel({"a": 0}, "a").to_dict()
        {'type': 'WordLevel', 'vocab': {'a': 0}, 'unk_token': 'a'}
        """
        return {"type": "WordLevel", "vocab": dict(sorted(self.vocab.items(), key=lambda kv: kv[1])),
                "unk_token": self.unk_token}

    def _header(self) -> dict[str, Any]:
        return {"type": "WordLevel", "unk_token": self.unk_token}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "WordLevel":
        """Build from an HF ``"model"`` dict.

        >>> WordLevel.from_dict({"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"}).vocab
        {'a': 0}
        """
        data = dict(data)
        data.pop("type", None)
        unknown = sorted(set(data) - {"vocab", "unk_token"})
        if unknown:
            raise ModelError(f"unknown WordLevel model field(s) {unknown}")
        if not isinstance(data.get("vocab"), Mapping):
            raise ModelError("a WordLevel model needs 'vocab', an object of token -> id")
        return cls(data["vocab"], data.get("unk_token", "<unk>"))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WordLevel):
            return NotImplemented
        return (self.vocab, self.unk_token) == (other.vocab, other.unk_token)

    def __repr__(self) -> str:
        return f"WordLevel(vocab=<{len(self.vocab)} tokens>, unk_token={self.unk_token!r})"


#: Any model a :class:`~subword.tokenizer.Tokenizer` can hold.
Model = BPE | WordPiece | Unigram | WordLevel
