"""The :class:`Tokenizer`: normalizer -> pre-tokenizer -> model -> post-processor (+ decoder).

The Python object holds the configuration (and validates it); the work is done by the Rust
``_core.CoreTokenizer``, built lazily from the HF ``tokenizer.json`` text of this configuration and rebuilt
when the configuration changes. Added special tokens are matched in the input text before anything else and
are never split, as in HF ``tokenizers``.

>>> from subword import BPE, Tokenizer
>>> from subword.pre_tokenizers import Whitespace
>>> tok = Tokenizer(BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]), pre_tokenizer=Whitespace(),
...                 special_tokens=["<eos>"])
>>> tok.token_to_id("<eos>"), tok.vocab_size
(3, 4)
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from subword.decoders import Decoder
from subword.errors import ModelError
from subword.model import BPE, Unigram, WordLevel, WordPiece
from subword.model_spm import SentencePieceModel, SentencePieceUnigram
from subword.normalizers import Normalizer
from subword.pre_tokenizers import PreTokenizer
from subword.processors import PostProcessor

if TYPE_CHECKING:
    import numpy

    from subword._core import Encoding

__all__ = ["Tokenizer", "AddedToken"]

log = logging.getLogger(__name__)

_TRUNCATION_STRATEGIES = {"longest_first": "LongestFirst", "only_first": "OnlyFirst", "only_second": "OnlySecond"}
_DIRECTIONS = {"left": "Left", "right": "Right"}


@dataclass(frozen=True)
class AddedToken:
    """A token matched in the raw text before the pipeline runs, and never split.

    Args:
        content: The token text, e.g. ``"<|endoftext|>"``.
        special: Special tokens are skipped by ``decode(..., skip_special_tokens=True)``.
        single_word: Match only when not inside a word.
        lstrip: Also swallow whitespace on the left.
        rstrip: Also swallow whitespace on the right.
        normalized: Match against the normalized text instead of the raw text; defaults to
            ``not special`` (HF's rule).

    >>> AddedToken("<pad>", special=True).normalized
    False
    """

    content: str
    special: bool = False
    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False
    normalized: bool | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.content, str) or not self.content:
            raise TypeError(f"AddedToken.content must be a non-empty str, got {self.content!r}")
        for name in ("special", "single_word", "lstrip", "rstrip"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"AddedToken.{name} must be a bool, got {getattr(self, name)!r}")
        if self.normalized is None:
            object.__setattr__(self, "normalized", not self.special)
        elif not isinstance(self.normalized, bool):
            raise TypeError(f"AddedToken.normalized must be a bool or None, got {self.normalized!r}")

    def to_dict(self, token_id: int) -> dict[str, Any]:
        """The HF ``added_tokens`` entry (key order as HF writes it)."""
        return {
            "id": token_id,
            "content": self.content,
            "single_word": self.single_word,
            "lstrip": self.lstrip,
            "rstrip": self.rstrip,
            "normalized": self.normalized,
            "special": self.special,
        }


class Tokenizer:
    """A tokenizer pipeline: the one class for every tokenizer file (:meth:`from_file` reads HF
    ``tokenizer.json``, SentencePiece ``.model``, tiktoken ranks and BERT ``vocab.txt``).

    Two model families run here. HF's (:class:`~subword.model.BPE`, :class:`~subword.model.WordPiece`,
    :class:`~subword.model.Unigram`) give HF ``tokenizers``' ids; sentencepiece's
    (:class:`~subword.model_spm.SentencePieceUnigram`, :class:`~subword.model_spm.SentencePieceBPE`, with a
    :class:`~subword.normalizers.SentencePieceNormalizer`) give ``sentencepiece``'s ids, and a
    SentencePiece Unigram model also offers :meth:`nbest` and :meth:`sample`. A SentencePiece pipeline is
    exactly what the ``.model`` describes: no pre-tokenizer, post-processor, decoder (decoding is
    sentencepiece's), added tokens (user-defined pieces live in the file), truncation or padding.

    Args:
        model: The :class:`~subword.model.BPE`, :class:`~subword.model.WordPiece`,
            :class:`~subword.model.Unigram`, or a SentencePiece model.
        normalizer: Applied to the text first (``None``: identity).
        pre_tokenizer: Splits the text into pieces (``None``: the whole text is one piece).
        post_processor: Adds special tokens / trims offsets after the model.
        decoder: Turns tokens back into text (``None``: tokens joined with a space, as HF does).
        special_tokens: Added special tokens (strings or :class:`AddedToken`); a token already in the vocab
            keeps its id, others get ids after the vocab.
        provenance: Free-form JSON-serialisable record of how the tokenizer was made (training options,
            corpus hash); saved in the file (see :mod:`subword.formats.hf_json`).

    Raises:
        TypeError: a component of the wrong kind.

    The compiled core is built on first use; mutating ``model`` in place afterwards is not seen, assign a
    new model instead.

    >>> from subword.pre_tokenizers import ByteLevel
    >>> tok = Tokenizer(BPE({"a": 0}, []), pre_tokenizer=ByteLevel(add_prefix_space=False))
    >>> tok.get_vocab()
    {'a': 0}
    """

    def __init__(
        self,
        model: BPE | WordPiece | Unigram | WordLevel,
        *,
        normalizer: Normalizer | None = None,
        pre_tokenizer: PreTokenizer | None = None,
        post_processor: PostProcessor | None = None,
        decoder: Decoder | None = None,
        special_tokens: Iterable[str | AddedToken] = (),
        provenance: dict[str, Any] | None = None,
    ) -> None:
        self._core: Any = None
        self.model = model
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        self.post_processor = post_processor
        self.decoder = decoder
        self._added: list[tuple[int, AddedToken]] = []
        self._truncation: dict[str, Any] | None = None
        self._padding: dict[str, Any] | None = None
        if provenance is not None and not isinstance(provenance, dict):
            raise TypeError(f"provenance must be a dict or None, got {type(provenance).__name__}")
        self.provenance: dict[str, Any] = dict(provenance or {})  # JSON-serialisable, saved in the file
        if isinstance(special_tokens, (str, AddedToken)):
            raise TypeError("special_tokens must be a list of tokens, not a single token")
        self.add_special_tokens(list(special_tokens))

    # ==== configuration (each setter drops the compiled core) ====

    def __setattr__(self, name: str, value: Any) -> None:
        kinds = {
            "model": ((BPE, WordPiece, Unigram, WordLevel, SentencePieceModel), False),
            "normalizer": (Normalizer, True),
            "pre_tokenizer": (PreTokenizer, True),
            "post_processor": (PostProcessor, True),
            "decoder": (Decoder, True),
        }
        if name in kinds:
            kind, optional = kinds[name]
            if not (isinstance(value, kind) or (optional and value is None)):
                names = " or ".join(k.__name__ for k in kind) if isinstance(kind, tuple) else kind.__name__
                expected = names + (" or None" if optional else "")
                raise TypeError(f"Tokenizer.{name} must be a {expected}, got {type(value).__name__}")
            object.__setattr__(self, "_core", None)
        elif name == "provenance" and not isinstance(value, dict):
            raise TypeError(f"Tokenizer.provenance must be a dict, got {type(value).__name__}")
        object.__setattr__(self, name, value)

    def add_special_tokens(self, tokens: Sequence[str | AddedToken]) -> int:
        """Add special tokens (never split, skipped when decoding with ``skip_special_tokens``).

        Args:
            tokens: Strings or :class:`AddedToken` (strings become ``AddedToken(t, special=True)``).

        Returns:
            How many tokens were new.

        >>> tok = Tokenizer(BPE({"a": 0}, []))
        >>> tok.add_special_tokens(["<s>", "a", "<s>"]), tok.token_to_id("<s>"), tok.token_to_id("a")
        (2, 1, 0)
        """
        return self._add([t if isinstance(t, AddedToken) else AddedToken(t, special=True) for t in tokens])

    def add_tokens(self, tokens: Sequence[str | AddedToken]) -> int:
        """Add ordinary (non-special) tokens that are matched before the pipeline and never split.

        >>> tok = Tokenizer(BPE({"a": 0}, []))
        >>> tok.add_tokens(["hello"]), tok.token_to_id("hello")
        (1, 1)
        """
        return self._add([t if isinstance(t, AddedToken) else AddedToken(t) for t in tokens])

    def _add(self, tokens: list[AddedToken]) -> int:
        if tokens and isinstance(self.model, SentencePieceModel):
            raise ModelError("a SentencePiece model takes no added tokens: its user-defined and control pieces are "
                             "part of the .model (train with user_defined_symbols / control_symbols)")
        new = 0
        for token in tokens:
            if not isinstance(token, AddedToken):
                raise TypeError(f"expected a str or AddedToken, got {type(token).__name__}")
            existing = [i for i, (_, t) in enumerate(self._added) if t.content == token.content]
            if existing:
                # HF updates the flags of a token added twice but keeps its id.
                idx = existing[0]
                self._added[idx] = (self._added[idx][0], token)
                continue
            token_id = self.model.vocab.get(token.content)
            if token_id is None:
                # HF's rule: the first new id is the model's vocab size, then one past the last added id.
                ids = [i for i, _ in self._added]
                token_id = max([self.model.vocab_size, *(i + 1 for i in ids)])
            self._added.append((token_id, token))
            new += 1
        self._core = None
        return new

    def _set_added(self, entries: list[tuple[int, AddedToken]]) -> None:
        """Install added tokens with explicit ids (used by the file loader)."""
        seen: dict[int, str] = {}
        by_id = self.model.id_to_token_map() if entries else {}  # once: it is the whole vocab inverted
        for token_id, token in entries:
            in_vocab = self.model.vocab.get(token.content)
            if in_vocab is not None and in_vocab != token_id:
                raise ModelError(f"added token {token.content!r} has id {token_id} but the vocab says {in_vocab}")
            other = by_id.get(token_id)
            if other is not None and other != token.content:
                raise ModelError(f"added token {token.content!r} has id {token_id}, already used by {other!r}")
            if token_id in seen:
                raise ModelError(f"added tokens {seen[token_id]!r} and {token.content!r} share id {token_id}")
            seen[token_id] = token.content
        self._added = list(entries)
        self._core = None

    @property
    def added_tokens(self) -> list[tuple[int, AddedToken]]:
        """The added tokens as ``(id, AddedToken)``, in insertion order."""
        return list(self._added)

    @property
    def special_tokens(self) -> list[str]:
        """The contents of the added *special* tokens, in insertion order.

        >>> Tokenizer(BPE({"a": 0}, []), special_tokens=["<s>", "</s>"]).special_tokens
        ['<s>', '</s>']
        """
        return [t.content for _, t in self._added if t.special]

    # ==== truncation and padding (HF's policy and JSON forms) ====

    def enable_truncation(
        self, max_length: int, stride: int = 0, strategy: str = "longest_first", direction: str = "right"
    ) -> None:
        """Truncate encodings to ``max_length`` tokens (special tokens included); the rest goes to
        ``Encoding.overflowing``, windows overlapping by ``stride`` tokens.

        Args:
            max_length: Positive maximum length.
            stride: Tokens repeated from the previous window in each overflowing piece.
            strategy: ``"longest_first"``, ``"only_first"`` or ``"only_second"``.
            direction: ``"right"`` (drop the end) or ``"left"``.

        Raises:
            ValueError: invalid values.

        >>> tok = Tokenizer(BPE({"a": 0}, []))
        >>> tok.enable_truncation(8); tok.truncation
        {'max_length': 8, 'stride': 0, 'strategy': 'longest_first', 'direction': 'right'}
        """
        _check_int("max_length", max_length, minimum=1)
        _check_int("stride", stride, minimum=0)
        if stride >= max_length:
            raise ValueError(f"stride ({stride}) must be smaller than max_length ({max_length})")
        if strategy not in _TRUNCATION_STRATEGIES:
            raise ValueError(f"strategy must be one of {sorted(_TRUNCATION_STRATEGIES)}, got {strategy!r}")
        if direction not in _DIRECTIONS:
            raise ValueError(f"direction must be 'left' or 'right', got {direction!r}")
        self._truncation = {
            "direction": _DIRECTIONS[direction],
            "max_length": max_length,
            "strategy": _TRUNCATION_STRATEGIES[strategy],
            "stride": stride,
        }
        self._core = None

    def no_truncation(self) -> None:
        """Disable truncation."""
        self._truncation = None
        self._core = None

    @property
    def truncation(self) -> dict[str, Any] | None:
        """The truncation settings as HF's Python API shows them, or ``None``."""
        t = self._truncation
        if t is None:
            return None
        strategy = {v: k for k, v in _TRUNCATION_STRATEGIES.items()}[t["strategy"]]
        return {"max_length": t["max_length"], "stride": t["stride"], "strategy": strategy,
                "direction": t["direction"].lower()}

    def enable_padding(
        self,
        direction: str = "right",
        pad_id: int = 0,
        pad_type_id: int = 0,
        pad_token: str = "[PAD]",
        length: int | None = None,
        pad_to_multiple_of: int | None = None,
    ) -> None:
        """Pad encodings: to ``length`` when given, else (in batches) to the longest in the batch.

        Args:
            direction: ``"right"`` or ``"left"``.
            pad_id: Id of the padding token.
            pad_type_id: Type id of the padding.
            pad_token: Text of the padding token.
            length: Fixed length, or ``None`` for the batch's longest.
            pad_to_multiple_of: Round the padded length up to a multiple of this.

        Raises:
            ValueError: invalid values.

        >>> tok = Tokenizer(BPE({"a": 0}, []), special_tokens=["<pad>"])
        >>> tok.enable_padding(pad_id=1, pad_token="<pad>", length=4); tok.padding["length"]
        4
        """
        if direction not in _DIRECTIONS:
            raise ValueError(f"direction must be 'left' or 'right', got {direction!r}")
        _check_int("pad_id", pad_id, minimum=0)
        _check_int("pad_type_id", pad_type_id, minimum=0)
        if not isinstance(pad_token, str):
            raise TypeError(f"pad_token must be a str, got {type(pad_token).__name__}")
        if length is not None:
            _check_int("length", length, minimum=1)
        if pad_to_multiple_of is not None:
            _check_int("pad_to_multiple_of", pad_to_multiple_of, minimum=1)
        self._padding = {
            "strategy": "BatchLongest" if length is None else {"Fixed": length},
            "direction": _DIRECTIONS[direction],
            "pad_to_multiple_of": pad_to_multiple_of,
            "pad_id": pad_id,
            "pad_type_id": pad_type_id,
            "pad_token": pad_token,
        }
        self._core = None

    def no_padding(self) -> None:
        """Disable padding."""
        self._padding = None
        self._core = None

    @property
    def padding(self) -> dict[str, Any] | None:
        """The padding settings as HF's Python API shows them, or ``None``."""
        p = self._padding
        if p is None:
            return None
        strategy = p["strategy"]
        return {
            "length": None if strategy == "BatchLongest" else strategy["Fixed"],
            "pad_to_multiple_of": p["pad_to_multiple_of"],
            "pad_id": p["pad_id"],
            "pad_token": p["pad_token"],
            "pad_type_id": p["pad_type_id"],
            "direction": p["direction"].lower(),
        }

    # ==== encoding and decoding (delegated to the Rust core) ====

    def _native(self) -> Any:
        if self._core is None:
            from subword._native import core_class

            if isinstance(self.model, SentencePieceModel):
                self._core = self._spm_core(core_class("CoreSpmTokenizer"))
            else:
                from subword.formats import hf_json

                native = self.model._native_data()
                if native is not None:
                    # A model read by a fast reader whose Python data was never built: the core takes
                    # the data from its Rust copy and the rest from the configuration.
                    self._core = core_class("CoreTokenizer").from_parts(hf_json.core_skeleton(self), native)
                else:
                    # The core gets the file minus our provenance record, which it has no use for.
                    self._core = core_class("CoreTokenizer")(hf_json.dumps(self, include_provenance=False, for_hf=False))
        return self._core

    def _spm_core(self, core_cls: Any) -> Any:
        """The Rust SentencePiece pipeline; refuses the components a ``.model`` cannot have."""
        from subword.normalizers import SentencePieceNormalizer

        norm = self.normalizer
        if not isinstance(norm, SentencePieceNormalizer):
            raise ModelError(f"a {type(self.model).__name__} model runs with a SentencePieceNormalizer, got {norm!r}")
        extra = [name for name in ("pre_tokenizer", "post_processor", "decoder") if getattr(self, name) is not None]
        if self._truncation is not None:
            extra.append("truncation")
        if self._padding is not None:
            extra.append("padding")
        if extra:
            raise ModelError(f"a SentencePiece model runs sentencepiece's own pipeline; {', '.join(extra)} "
                             "cannot be added to it (encode, then cut or pad the ids)")
        m = self.model
        try:
            return core_cls(m.pieces, m.model_type, norm.spec_json(), bytes(norm.precompiled_charsmap) or None,
                            m.byte_fallback, m.unk_surface)
        except ValueError as exc:
            raise ModelError(f"invalid SentencePiece model: {exc}") from None

    def nbest(self, text: str, n: int) -> list[tuple["Encoding", float]]:
        """The ``n`` best segmentations of ``text`` with their scores, best first (sentencepiece's
        ``NBestEncode``). SentencePiece Unigram models only.

        Raises:
            ModelError: another model.
            ValueError: ``n`` < 1.

        >>> from subword.formats.spm import SpmModelFile, tokenizer_from_model
        >>> tok = tokenizer_from_model(SpmModelFile(pieces=[("<unk>", 0.0, 2), ("▁ab", -1.0, 1), ("▁", -1.0, 1),
        ...                                                 ("a", -1.0, 1), ("b", -1.0, 1)]))
        >>> [(e.tokens, s) for e, s in tok.nbest("ab", 2)]
        [(['▁ab'], -1.0), (['▁', 'a', 'b'], -3.0)]
        """
        self._need_unigram("nbest()")
        if not isinstance(text, str):
            raise TypeError(f"nbest() takes a str, got {type(text).__name__}")
        _check_int("n", n, minimum=1)
        return self._native().nbest(text, n)

    def sample(self, text: str, *, alpha: float = 0.1, nbest_size: int = -1, seed: int = 0,
               count: int = 1) -> list["Encoding"]:
        """Sampled segmentations of ``text`` for subword regularisation (sentencepiece's ``SampleEncode``).
        SentencePiece Unigram models only.

        ``nbest_size=-1`` draws from the exact distribution over all segmentations, ``p ∝ exp(alpha *
        score)`` (forward filtering, backward sampling); ``0`` or ``1`` is Viterbi; ``n > 1`` samples among
        the n best with the same weights. Draws are deterministic for a ``seed``.

        Raises:
            ModelError: another model.
            ValueError: ``alpha`` negative or not finite, ``count`` < 1.

        >>> from subword.formats.spm import SpmModelFile, tokenizer_from_model
        >>> tok = tokenizer_from_model(SpmModelFile(pieces=[("<unk>", 0.0, 2), ("▁ab", -1.0, 1), ("▁", -1.0, 1),
        ...                                                 ("a", -1.0, 1), ("b", -1.0, 1)]))
        >>> len(tok.sample("ab", alpha=0.5, count=3, seed=1))
        3
        """
        import math

        self._need_unigram("sample()")
        if not isinstance(text, str):
            raise TypeError(f"sample() takes a str, got {type(text).__name__}")
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not math.isfinite(alpha) or alpha < 0:
            raise ValueError(f"alpha must be a finite number >= 0, got {alpha!r}")
        _check_int("nbest_size", nbest_size, minimum=-(1 << 62))
        _check_int("seed", seed, minimum=0)
        _check_int("count", count, minimum=1)
        return self._native().sample(text, float(alpha), nbest_size, seed, count)

    def _need_unigram(self, what: str) -> None:
        if not isinstance(self.model, SentencePieceUnigram):
            raise ModelError(f"{what} needs a SentencePiece Unigram model (a Unigram .model file); this tokenizer's "
                             f"model is {type(self.model).__name__}")

    def encode(self, text: str, add_special_tokens: bool | str = True, *, pair: str | None = None) -> "Encoding":
        """Encode one text (or a pair of texts).

        Args:
            text: The text; added tokens in it are matched first and never split.
            add_special_tokens: Apply the post-processor's special tokens (e.g. ``[CLS]``). A str here is
                read as ``pair``, so HF's ``encode(a, b)`` works too.
            pair: An optional second sequence (its tokens get the pair template's type ids).

        Returns:
            An :class:`~subword.Encoding` with ``ids``, ``tokens`` and character ``offsets``.

        >>> tok = Tokenizer(BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]))
        >>> tok.encode("abab").tokens
        ['ab', 'ab']
        >>> tok.encode("ab", "b").type_ids  # a pair, as HF's encode(a, b)
        [0, 1]
        """
        if not isinstance(text, str):
            raise TypeError(f"encode() takes a str, got {type(text).__name__}")
        if isinstance(add_special_tokens, str):
            if pair is not None:
                raise TypeError("encode() got the pair twice (second argument and pair=)")
            pair, add_special_tokens = add_special_tokens, True
        if not isinstance(add_special_tokens, bool):
            raise TypeError(f"add_special_tokens must be a bool, got {type(add_special_tokens).__name__}")
        if pair is None:
            return self._native().encode(text, add_special_tokens)
        if not isinstance(pair, str):
            raise TypeError(f"pair must be a str or None, got {type(pair).__name__}")
        return self._native().encode(text, add_special_tokens, pair)

    def encode_batch(
        self, texts: Sequence[str], add_special_tokens: bool = True, *, pairs: Sequence[str | None] | None = None
    ) -> list["Encoding"]:
        """Encode many texts in parallel (the GIL is released); padding applies to the whole batch.

        Args:
            texts: The texts.
            add_special_tokens: Apply the post-processor's special tokens.
            pairs: Optional second sequences, one per text (``None`` for a single sequence).

        >>> tok = Tokenizer(BPE({"a": 0}, []))
        >>> [e.ids for e in tok.encode_batch(["a", "aa"])]
        [[0], [0, 0]]
        """
        texts = _check_texts(texts)
        if pairs is None:
            return _native_batch(lambda ts: self._native().encode_batch(ts, add_special_tokens), texts)
        if isinstance(pairs, str):
            raise TypeError("pairs must be a list of str or None, not a single str")
        pairs = list(pairs)
        if len(pairs) != len(texts):
            raise ValueError(f"pairs has {len(pairs)} items but texts has {len(texts)}")
        for i, p in enumerate(pairs):
            if p is not None and not isinstance(p, str):
                raise TypeError(f"pairs[{i}] must be a str or None, got {type(p).__name__}")
        return _native_batch(lambda ts: self._native().encode_batch(ts, add_special_tokens, pairs), texts)

    def encode_batch_ids(self, texts: Sequence[str], add_special_tokens: bool = True) -> list[list[int]]:
        """Like :meth:`encode_batch` but return only the ids (faster: no offsets or tokens are built).

        >>> Tokenizer(BPE({"a": 0}, [])).encode_batch_ids(["aa"])
        [[0, 0]]
        """
        texts = _check_texts(texts)
        return _native_batch(lambda ts: self._native().encode_batch_ids(ts, add_special_tokens), texts)

    def encode_batch_ids_flat(
        self, texts: Sequence[str], add_special_tokens: bool = True
    ) -> tuple["numpy.ndarray", "numpy.ndarray"]:
        """Like :meth:`encode_batch_ids`, as two numpy arrays instead of a list of lists: ``ids`` (uint32,
        every text's ids back to back) and ``offsets`` (int64, ``len(texts) + 1`` entries), so text ``i``'s
        ids are ``ids[offsets[i]:offsets[i + 1]]``. No Python object is made per token or per text (on
        short lines building the lists costs as much as encoding them); the arrays are writable views of
        buffers the core filled, with no further copy. This is the form to feed a model, a memory-mapped
        shard or ``torch.from_numpy``.

        Args:
            texts: The texts (encoded in parallel, the GIL released).
            add_special_tokens: Apply the post-processor's special tokens.

        Returns:
            ``(ids, offsets)``: ``ids.dtype == uint32``, ``offsets.dtype == int64``, ``offsets[0] == 0`` and
            ``offsets[-1] == len(ids)``.

        >>> tok = Tokenizer(BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]))
        >>> ids, offsets = tok.encode_batch_ids_flat(["abab", "", "ba"])
        >>> ids.tolist(), offsets.tolist()
        ([2, 2, 1, 0], [0, 2, 2, 4])
        >>> [ids[s:e].tolist() for s, e in zip(offsets[:-1], offsets[1:])] == tok.encode_batch_ids(["abab", "", "ba"])
        True
        """
        import numpy

        texts = _check_texts(texts)
        ids, offsets = _native_batch(lambda ts: self._native().encode_batch_ids_flat(ts, add_special_tokens), texts)
        return numpy.frombuffer(ids, dtype=numpy.uint32), numpy.frombuffer(offsets, dtype=numpy.int64)

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        """Turn ids back into text through the decoder.

        >>> Tokenizer(BPE({"a": 0}, [])).decode([0, 0])  # no decoder: joined with spaces, as in HF
        'a a'
        """
        return self._native().decode(list(ids), skip_special_tokens)

    def decode_batch(self, sequences: Sequence[Sequence[int]], skip_special_tokens: bool = True) -> list[str]:
        """Decode many id lists.

        >>> Tokenizer(BPE({"a": 0}, [])).decode_batch([[0], [0, 0]])
        ['a', 'a a']
        """
        return self._native().decode_batch([list(s) for s in sequences], skip_special_tokens)

    # ==== vocabulary ====

    def get_vocab(self, with_added_tokens: bool = True) -> dict[str, int]:
        """Token -> id, ordered by id.

        >>> Tokenizer(BPE({"b": 1, "a": 0}, []), special_tokens=["<s>"]).get_vocab()
        {'a': 0, 'b': 1, '<s>': 2}
        """
        vocab = dict(self.model.vocab)
        if with_added_tokens:
            vocab.update({t.content: i for i, t in self._added})
        return dict(sorted(vocab.items(), key=lambda kv: kv[1]))

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        """Number of distinct tokens (HF's ``get_vocab_size``).

        >>> Tokenizer(BPE({"a": 0}, []), special_tokens=["<s>"]).get_vocab_size()
        2
        """
        return len(self.get_vocab(with_added_tokens))

    @property
    def vocab_size(self) -> int:
        """Number of distinct tokens, added tokens included."""
        return self.get_vocab_size(True)

    def token_to_id(self, token: str) -> int | None:
        """The id of ``token``, or ``None``.

        >>> Tokenizer(BPE({"a": 0}, [])).token_to_id("zz") is None
        True
        """
        for i, t in self._added:
            if t.content == token:
                return i
        return self.model.vocab.get(token)

    def id_to_token(self, token_id: int) -> str | None:
        """The token of ``token_id``, or ``None``.

        >>> Tokenizer(BPE({"a": 0}, []), special_tokens=["<s>"]).id_to_token(1)
        '<s>'
        """
        for i, t in self._added:
            if i == token_id:
                return t.content
        if not hasattr(self, "_inverse") or self._inverse[0] is not self.model:
            object.__setattr__(self, "_inverse", (self.model, self.model.id_to_token_map()))
        return self._inverse[1].get(token_id)

    # ==== files ====

    def to_json_str(self, pretty: bool = False) -> str:
        """The HF ``tokenizer.json`` text (provenance included, inside ``"model"``). For a SentencePiece
        model: its exact HF conversion (:func:`subword.formats.convert.spm_to_hf_json`).

        Raises:
            subword.formats.convert.ConversionError: a SentencePiece model with no exact HF form (the
                message says why).

        >>> '"type":"BPE"' in Tokenizer(BPE({"a": 0}, [])).to_json_str()
        True
        """
        import json

        from subword.formats import hf_json

        if isinstance(self.model, SentencePieceModel):
            from subword.formats.convert import spm_to_hf_json
            from subword.formats.spm import model_file_of

            data = spm_to_hf_json(model_file_of(self))
            if pretty:
                return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
            return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return hf_json.dumps(self, pretty=pretty)

    @classmethod
    def from_str(cls, text: str, source: str = "<string>") -> "Tokenizer":
        """Load from ``tokenizer.json`` text.

        Raises:
            subword.errors.FormatError: corrupt JSON or unsupported content (the message names ``source``).

        >>> Tokenizer.from_str(Tokenizer(BPE({"a": 0}, [])).to_json_str()).get_vocab()
        {'a': 0}
        """
        from subword.formats import hf_json

        return hf_json.loads(text, source=source)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> "Tokenizer":
        """Load any tokenizer file; the format is detected from the content, not the name
        (:mod:`subword.formats.detect`): HF ``tokenizer.json`` (or a directory holding one, as
        ``save_pretrained`` writes it), a SentencePiece ``.model`` of any name (``tokenizer.model``,
        ``spiece.model``, ``x.model.v3``), tiktoken ranks, or a BERT ``vocab.txt``.

        Raises:
            FileNotFoundError: no such file.
            subword.errors.FormatError: a file of no known kind (the message lists the kinds tried), or a
                corrupt, truncated or unsupported one (the message names the path).

        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "tok.json"
        >>> Tokenizer(BPE({"a": 0}, [])).save(p); Tokenizer.from_file(p).get_vocab()
        {'a': 0}
        """
        from subword.formats import detect

        return detect.load(path)

    @classmethod
    def from_tiktoken(
        cls,
        path_or_name: str | os.PathLike[str],
        pattern: str | None = None,
        special_tokens: dict[str, int] | None = None,
    ) -> "Tokenizer":
        """Load a tiktoken rank file (``.tiktoken``, plain or gzip) or a known encoding name; gives tiktoken's ids.

        Args:
            path_or_name: A rank file, or ``gpt2``, ``r50k_base``, ``p50k_base``, ``p50k_edit``, ``cl100k_base``,
                ``o200k_base`` (found in tiktoken's cache or an installed package that ships it).
            pattern: The split regex (default: the known encoding's).
            special_tokens: Token -> id (default: the known encoding's).

        Raises:
            FileNotFoundError: no such file.
            subword.errors.FormatError: a bad file, an unknown name, or a pattern that cannot be run exactly.

        >>> Tokenizer.from_tiktoken("o100k")
        Traceback (most recent call last):
        ...
        subword.errors.FormatError: unknown tiktoken encoding 'o100k' (known: cl100k_base, gpt2, o200k_base, p50k_base, p50k_edit, r50k_base)
        """
        from subword.formats import tiktoken

        return tiktoken.load(path_or_name, pattern=pattern, special_tokens=special_tokens)

    def save(self, path: str | os.PathLike[str], pretty: bool = True, *, legacy_merges: bool = False) -> None:
        """Write the tokenizer atomically (a temporary file in the same folder, then a rename).

        A ``.tiktoken`` path gets a tiktoken rank file (byte-level BPE only). A path whose name has a
        ``.model`` suffix (``x.model``, ``x.model.v3``) gets a SentencePiece ``.model``: a SentencePiece model's own file, byte for byte, or the file a ``tokenizer.json`` was
        converted from. Any other path gets ``tokenizer.json`` (for a SentencePiece model, its exact HF
        conversion). Where no exact form exists the error says why and nothing is written.

        Args:
            path: The file to (over)write.
            pretty: Indented JSON (default) or compact.
            legacy_merges: Write merges as ``"left right"`` strings, for ``tokenizers`` < 0.20.

        Raises:
            subword.formats.convert.ConversionError: no exact form in the format asked for.

        >>> import tempfile, pathlib
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "tok.json"
        >>> Tokenizer(BPE({"a": 0}, [])).save(p); p.exists()
        True
        """
        from subword.formats import hf_json
        from subword.formats.atomic import atomic_write_text

        if ".model" in Path(path).suffixes:
            from subword.formats.spm import model_file_of, write_model

            write_model(path, model_file_of(self))
        elif Path(path).suffix == ".tiktoken":
            from subword.formats import tiktoken

            tiktoken.save(self, path)
        elif isinstance(self.model, SentencePieceModel):
            atomic_write_text(path, self.to_json_str(pretty=pretty))
        else:
            hf_json.save(self, path, pretty=pretty, legacy_merges=legacy_merges)

    def save_pretrained(self, directory: str | os.PathLike[str], *, model_max_length: int | None = None,
                        **special_token_roles: str) -> list[str]:
        """Write ``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json`` for transformers.

        Args:
            directory: Created if missing.
            model_max_length: The longest input the model takes, for transformers' truncation (default: the
                truncation ``max_length`` when set, else none recorded).
            **special_token_roles: ``pad_token=``, ``eos_token=``, ... (see
                :func:`subword.formats.hf_json.save_pretrained_files`).

        Returns:
            The written file paths.

        >>> import tempfile
        >>> len(Tokenizer(BPE({"a": 0}, [])).save_pretrained(tempfile.mkdtemp()))
        3
        """
        from subword.formats import hf_json

        # A SentencePiece model goes to transformers as its exact HF conversion (or is refused with the reason).
        tok = type(self).from_str(self.to_json_str()) if isinstance(self.model, SentencePieceModel) else self
        return hf_json.save_pretrained_files(tok, directory, model_max_length=model_max_length, **special_token_roles)

    # ==== dunder ====

    def __getstate__(self) -> dict[str, Any]:
        if isinstance(self.model, SentencePieceModel):
            from subword.formats.spm import model_file_of

            return {"spm": model_file_of(self).to_bytes()}
        from subword.formats import hf_json

        # Our own form: a tiktoken pattern stays on its engine (the HF form may not exist).
        return {"json": hf_json.dumps(self, for_hf=False)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if "spm" in state:
            from subword.formats.spm import SpmModelFile, tokenizer_from_model

            other = tokenizer_from_model(SpmModelFile.from_bytes(state["spm"]))
        else:
            other = type(self).from_str(state["json"], source="<pickle>")
        self.__dict__.update(other.__dict__)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tokenizer):
            return NotImplemented
        return self.__getstate__() == other.__getstate__()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        specials = [t.content for _, t in self._added]
        shown = specials if len(specials) <= 8 else [*specials[:8], "..."]
        parts = [
            f"model={self.model!r}",
            f"normalizer={self.normalizer!r}",
            f"pre_tokenizer={self.pre_tokenizer!r}",
            f"post_processor={self.post_processor!r}",
            f"decoder={self.decoder!r}",
            f"added_tokens={shown!r}",
            f"truncation={self.truncation!r}",
            f"padding={self.padding!r}",
        ]
        if self.provenance:
            parts.append(f"provenance=<{', '.join(sorted(self.provenance))}>")
        return "Tokenizer(" + ", ".join(parts) + ")"

    def with_options(self, **changes: Any) -> "Tokenizer":
        """A copy with some pipeline components replaced (``model=``, ``normalizer=``, ...).

        Raises:
            TypeError: an unknown component name.

        >>> from subword.pre_tokenizers import Whitespace
        >>> Tokenizer(BPE({"a": 0}, [])).with_options(pre_tokenizer=Whitespace()).pre_tokenizer
        Whitespace()
        """
        allowed = {"model", "normalizer", "pre_tokenizer", "post_processor", "decoder", "provenance"}
        unknown = sorted(set(changes) - allowed)
        if unknown:
            raise TypeError(f"with_options() got unknown option(s) {unknown} (allowed: {sorted(allowed)})")
        copy = type(self).__new__(type(self))
        copy.__setstate__(self.__getstate__())
        for name, value in changes.items():
            setattr(copy, name, value)
        return copy


def _check_int(name: str, value: object, *, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")


_T = TypeVar("_T")


def _check_texts(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list for the core, which checks each item's type itself (a Python loop over a batch
    of short lines cost ~5% of encoding them with BERT, 2026-12-06); see :func:`_native_batch` for the
    error that names the first item that is not a str."""
    if isinstance(texts, str):
        raise TypeError("encode_batch() takes a list of str, not a single str")
    return texts if type(texts) is list else list(texts)


def _native_batch(call: Callable[[list[str]], _T], texts: list[str]) -> _T:
    """``call(texts)``, with the core's TypeError for an item that is not a str replaced by one that says
    which item it was."""
    try:
        return call(texts)
    except TypeError:
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise TypeError(f"texts[{i}] must be a str, got {type(t).__name__}") from None
        raise

