"""Unigram language-model tokenization: training (``compat="spm"`` as sentencepiece 0.2.3 trains it,
or ``compat="hf"`` as HF's ``UnigramTrainer``) and encoding (Viterbi, n-best, sampling).

:class:`UnigramTrainer` extends sentencepiece's options (:class:`subword.spm.SpmOptions`) with the
Unigram ones (``shrinking_factor``, ``num_sub_iterations``, ``seed_sentencepiece_size``,
``num_threads``). :func:`train_unigram` returns the ``.model`` content; encoding goes through the one
front door, ``Tokenizer.from_file("x.model")`` or :func:`subword.formats.spm.tokenizer_from_model`, which
runs sentencepiece's algorithm exactly (float32 Viterbi, its tie rule) and offers n-best and sampling
from the exact distribution ``p(x) ∝ exp(alpha * score(x))`` (``Tokenizer.nbest`` / ``Tokenizer.sample``).
:class:`UnigramEncoder` and :class:`HfUnigramEncoder` remain for one release as thin wrappers.

Results depend on ``num_threads`` (the E-step is split into that many stripes whose float sums are
added in order, as in sentencepiece), never on the number of CPU threads actually used.

>>> from subword.formats.spm import tokenizer_from_model
>>> lines = ["the cat sat on the mat", "the dog sat on the log"] * 20
>>> model = train_unigram(lines, UnigramTrainer(vocab_size=30, normalization_rule_name="identity",
...                                             hard_vocab_limit=False))
>>> tok = tokenizer_from_model(model)
>>> tok.decode(tok.encode("the cat sat").ids)
'the cat sat'
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, ClassVar, Literal

from subword.formats.spm import MODEL_TYPES, SpmModelFile
from subword.spm import SpmOptions, _assemble, _select

if TYPE_CHECKING:
    from subword.tokenizer import Tokenizer

__all__ = ["UnigramTrainer", "train_unigram", "UnigramEncoder", "metaspace_words", "train_unigram_hf", "HfUnigramEncoder"]

log = logging.getLogger(__name__)

WS = "\u2581"


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass
class UnigramTrainer(SpmOptions):
    """Unigram training options: sentencepiece's (same names, same defaults) plus how to run it.

    >>> UnigramTrainer(vocab_size=100).shrinking_factor
    0.75
    >>> UnigramTrainer(shrinking_factor=1.0)
    Traceback (most recent call last):
    ...
    ValueError: shrinking_factor must be in (0, 1), got 1.0
    """

    shrinking_factor: float = field(default=0.75, metadata=_help(
        "Fraction of the pieces kept by each pruning round."))
    num_sub_iterations: int = field(default=2, metadata=_help("EM iterations between two pruning rounds."))
    seed_sentencepiece_size: int = field(default=1_000_000, metadata=_help(
        "Number of seed substrings (the most frequent x length)."))
    num_threads: int = field(default=16, metadata=_help(
        "E-step stripes, as sentencepiece's num_threads (the scores depend on it; the CPU threads used do not)."))
    engine: Literal["rust", "reference"] = field(default="rust", metadata=_help(
        "'rust' (fast) or 'reference' (the readable pure-Python trainer; identical result)."))
    seed: int = field(default=0, metadata=_help("Seed for --input-sentence-size sampling."))
    compat: Literal["spm", "hf"] = field(default="spm", metadata={"cli": None, "help": (
        "Whose rules: spm (sentencepiece 0.2.3's trainer and pipeline; a .model file) or hf (HF "
        "UnigramTrainer on Metaspace words; a tokenizer.json).")})
    special_tokens: list[str] = field(default_factory=list, metadata=_help(
        "compat hf: a special token placed first in the vocabulary (repeatable; default: the unk piece)."))

    algorithm: ClassVar[str] = "unigram"

    #: The options HF's UnigramTrainer has (compat="hf"); the others must keep their defaults there.
    HF_FIELDS: ClassVar[frozenset[str]] = frozenset({
        "vocab_size", "max_sentencepiece_length", "unk_piece", "shrinking_factor", "num_sub_iterations",
        "seed_sentencepiece_size", "engine", "compat", "special_tokens"})

    def applicable_fields(self) -> frozenset[str]:
        """The options that matter under this ``compat`` (the CLI refuses the others).

        >>> "character_coverage" in UnigramTrainer(compat="hf").applicable_fields()
        False
        """
        every = frozenset(f.name for f in fields(self) if f.init)
        return self.HF_FIELDS if self.compat == "hf" else every - {"special_tokens"}

    def validate(self) -> None:
        super().validate()
        if self.compat not in ("spm", "hf"):
            raise ValueError(f"compat must be 'spm' or 'hf', got {self.compat!r}")
        # An option the chosen rules do not have is refused, never silently dropped.
        defaults = UnigramTrainer.__dataclass_fields__
        for f in fields(self):
            if not f.init or f.name in self.applicable_fields():
                continue
            default = f.default_factory() if f.default_factory is not MISSING else f.default  # type: ignore[misc]
            if getattr(self, f.name) != default and f.name in defaults:
                rules = "HF's UnigramTrainer (compat='hf')" if self.compat == "hf" else "sentencepiece (compat='spm')"
                fix = ("use user_defined_symbols / control_symbols" if f.name == "special_tokens"
                       else "it only exists in the other rules")
                raise ValueError(f"{f.name} is not an option of {rules}; {fix}")
        if not 0.0 < float(self.shrinking_factor) < 1.0:
            raise ValueError(f"shrinking_factor must be in (0, 1), got {self.shrinking_factor}")
        for name in ("num_sub_iterations", "num_threads", "seed_sentencepiece_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if self.engine not in ("rust", "reference"):
            raise ValueError(f"engine must be 'rust' or 'reference', got {self.engine!r}")

    def train(self, lines: Iterable[str], progress: Callable[[str, int, int], None] | None = None) -> "Tokenizer":
        """Train on ``lines`` (the :class:`subword.trainers.Trainer` protocol): sentencepiece's Unigram
        (:func:`train_unigram`, lines read without their endings) or, with ``compat="hf"``, HF's
        (:func:`train_unigram_hf`, lines with their endings, as HF's ``train_from_files``).

        >>> tok = UnigramTrainer(compat="hf", vocab_size=20).train(["the cat sat on the mat\\n"] * 10)
        >>> tok.model.vocab_size, tok.provenance["training"]["trainer"]
        (20, 'UnigramTrainer')
        """
        if self.compat == "hf":
            return train_unigram_hf(lines, trainer=self, progress=progress)
        from subword.trainers import spm_tokenizer

        stripped = (line.rstrip("\r\n") if isinstance(line, str) else line for line in lines)
        return spm_tokenizer(train_unigram(stripped, self, progress=progress))


#: Why a Unigram trainer returns fewer pieces than asked (said in its warning).
_UNIGRAM_RAN_OUT = ("the corpus yields no more pieces (its characters and seed substrings are all kept, "
                    "or EM dropped the rest as too rare)")


def train_unigram(
    lines: Iterable[str],
    trainer: UnigramTrainer,
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> SpmModelFile:
    """Trains a SentencePiece-compatible Unigram model; returns the ``.model`` content (write it
    with :func:`subword.formats.spm.write_model`).

    On the same lines and options the pieces are those of sentencepiece 0.2.3 (tests compare them),
    and the scores agree to a few float32 ulps. Lines longer than ``max_sentence_length`` bytes are
    skipped as sentencepiece does; we log a warning with their number.

    Raises:
        ValueError: no usable line, ``vocab_size`` too small for the characters and reserved pieces,
            or (with ``hard_vocab_limit``) larger than what the corpus allows.

    >>> m = train_unigram(["ab ab ba"] * 4, UnigramTrainer(vocab_size=8, normalization_rule_name="identity",
    ...                                                  hard_vocab_limit=False))
    >>> [p for p, _, _ in m.pieces]
    ['<unk>', '<s>', '</s>', 'a', 'b', '▁', '▁ba']
    """
    from subword import _core

    trainer.validate()
    selected = _select(lines, trainer, trainer.seed)
    bad = next((i for i, line in enumerate(selected) if not isinstance(line, str)), None)
    if bad is not None:
        raise TypeError(f"lines[{bad}] must be str, got {type(selected[bad]).__name__}")
    if not selected:
        raise ValueError("no lines to train on (the input, after --input-sentence-size sampling, is empty)")
    kw = dict(shrinking_factor=trainer.shrinking_factor, num_sub_iterations=trainer.num_sub_iterations,
              num_threads=trainer.num_threads)
    if trainer.engine == "reference":
        pieces, stats = _reference_train(selected, trainer)
    else:
        pieces, stats = _core.train_unigram_spm(selected, trainer.spec_json(), progress=progress,
                                                seed_sentencepiece_size=trainer.seed_sentencepiece_size, **kw)
    if stats["skipped_too_long"]:
        log.warning("skipped %d line(s) longer than max_sentence_length=%d bytes (sentencepiece skips them "
                    "silently)", stats["skipped_too_long"], trainer.max_sentence_length)
    from subword.trainers import warn_short_vocabulary

    warn_short_vocabulary(len(pieces), trainer.vocab_size, _UNIGRAM_RAN_OUT + " (hard_vocab_limit is off)")
    return SpmModelFile(
        pieces=[(p, float(s), int(t)) for p, s, t in pieces],
        model_type=MODEL_TYPES["unigram"],
        trainer_spec=trainer.trainer_spec("unigram") | {"vocab_size": len(pieces)},
        normalizer_spec=trainer.normalizer_spec(),
    )


def _validity(spec_json: str) -> Callable[[str], bool]:
    """SentencePiece's piece validity (its Rust implementation holds the Unicode script table), memoized,
    with a spec that leaves out the normalizer's large charsmap (validity does not read it)."""
    import functools

    from subword import _core

    spec = json.dumps({k: v for k, v in json.loads(spec_json).items() if k != "precompiled_charsmap_hex"})
    return functools.lru_cache(maxsize=1 << 20)(lambda piece: _core.spm_is_valid_piece(piece, spec))


def _reference_train(lines: list[str], trainer: UnigramTrainer) -> tuple[list[tuple[str, float, int]], dict]:
    """The pure-Python trainer behind the same pipeline (``_core.spm_prepare``) and id layout."""
    from subword import _core
    from subword.reference.unigram import train_unigram as ref_train

    spec = trainer.spec_json()
    sentences, required, meta, stats = _core.spm_prepare(lines, spec)
    if not sentences:
        raise ValueError("no usable line to train on (all empty, too long, or skipped)")
    words = _core.spm_words(lines, spec)
    pieces = ref_train(sentences, words, required, vocab_size=trainer.vocab_size, meta_pieces=len(meta),
                       shrinking_factor=trainer.shrinking_factor, num_sub_iterations=trainer.num_sub_iterations,
                       max_sentencepiece_length=trainer.max_sentencepiece_length,
                       seed_sentencepiece_size=trainer.seed_sentencepiece_size, num_threads=trainer.num_threads,
                       valid=_validity(spec))
    return _assemble(meta, pieces, trainer), stats


class UnigramEncoder:
    """Deprecated alias, kept for one release: use ``Tokenizer.from_file("x.model")`` (or
    :func:`subword.formats.spm.tokenizer_from_model`), whose SentencePiece Unigram pipeline this wraps.

    Encodes text with a Unigram ``.model`` as sentencepiece does (its normalizer, float32 Viterbi with
    its tie rule, user-defined pieces matched whole, unknown runs fused into one ``<unk>`` or spelled as
    ``<0xXX>`` pieces with byte fallback), and offers n-best and sampling; every method forwards to the
    :class:`~subword.Tokenizer` in :attr:`tokenizer`.

    Args:
        model: A Unigram :class:`~subword.formats.spm.SpmModelFile`.
        compat: ``"spm"`` only (HF's float64 Unigram is what a ``tokenizer.json`` loads into).

    Raises:
        ValueError: the model is not a Unigram model, or ``compat`` is not ``"spm"``.
    """

    def __init__(self, model: SpmModelFile, compat: Literal["spm"] = "spm") -> None:
        from subword.formats.spm import tokenizer_from_model

        if model.model_type != MODEL_TYPES["unigram"]:
            raise ValueError(f"not a Unigram model (model_type={model.model_type})")
        if compat != "spm":
            raise ValueError("UnigramEncoder follows sentencepiece (compat='spm'); for HF's rules load the "
                             "tokenizer.json with Tokenizer.from_file")
        self.model = model
        self.tokenizer = tokenizer_from_model(model)

    def normalize(self, text: str) -> str:
        """The text as the model sees it (normalized, spaces as ``▁``).

        >>> enc = UnigramEncoder(train_unigram(["a b"] * 3, UnigramTrainer(vocab_size=7,
        ...     normalization_rule_name="identity", hard_vocab_limit=False)))
        >>> enc.normalize("  a  b ")
        '▁a▁b'
        """
        return self.tokenizer._native().normalize(text)

    def encode(self, text: str) -> list[int]:
        """Viterbi ids (sentencepiece's ``encode``)."""
        return self.tokenizer.encode(text).ids

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Viterbi ids with character offsets into ``text``, as sentencepiece's ``return_type="proto"``
        reports them.

        >>> enc = UnigramEncoder(train_unigram(["ab ab"] * 4, UnigramTrainer(vocab_size=7,
        ...     normalization_rule_name="identity", hard_vocab_limit=False)))
        >>> enc.encode_pieces("  ab   ab")
        ['▁', 'a', 'b', '▁', 'a', 'b']
        >>> enc.encode_with_offsets("  ab   ab")[1]
        [(2, 2), (2, 3), (3, 4), (4, 7), (7, 8), (8, 9)]
        """
        e = self.tokenizer.encode(text)
        return e.ids, e.offsets

    def encode_pieces(self, text: str) -> list[str]:
        """Viterbi pieces (an unknown piece reads as ``<unk>``)."""
        pieces = self.model.pieces
        return [pieces[i][0] for i in self.encode(text)]

    def encode_batch(self, texts: Sequence[str], *, word_cache: bool = True) -> list[list[int]]:
        """Viterbi ids of many texts (in parallel). ``word_cache=False`` runs the whole-line Viterbi on
        every text (the same ids, slower; see ``Tokenizer.encode_batch_ids`` for the cache).

        >>> enc = UnigramEncoder(train_unigram(["ab ab ba"] * 4, UnigramTrainer(vocab_size=8,
        ...     normalization_rule_name="identity", hard_vocab_limit=False)))
        >>> enc.encode_batch(["ab ba", "ba"]) == [enc.encode("ab ba"), enc.encode("ba")]
        True
        """
        texts = texts if isinstance(texts, list) else list(texts)
        if word_cache:
            return self.tokenizer.encode_batch_ids(texts)
        return [e.ids for e in self.tokenizer.encode_batch(texts)]

    def nbest(self, text: str, n: int) -> list[tuple[list[int], float]]:
        """The ``n`` best segmentations with their scores, best first (``Tokenizer.nbest``)."""
        if n < 1:
            raise ValueError(f"n must be at least 1, got {n}")
        return [(e.ids, s) for e, s in self.tokenizer.nbest(text, n)]

    def sample(self, text: str, *, alpha: float = 0.1, nbest_size: int = -1, seed: int = 0,
               count: int = 1) -> list[list[int]]:
        """Sampled segmentations for subword regularisation (``Tokenizer.sample``).

        Raises:
            ValueError: ``alpha`` negative or not finite.
        """
        return [e.ids for e in self.tokenizer.sample(text, alpha=alpha, nbest_size=nbest_size, seed=seed,
                                                     count=count)]

    def decode(self, ids: Sequence[int]) -> str:
        """sentencepiece's decode."""
        return self.tokenizer.decode(ids)

    def __repr__(self) -> str:
        return (f"UnigramEncoder(pieces={len(self.model.pieces)}, "
                f"byte_fallback={self.model.trainer_spec.get('byte_fallback', False)})")

    def pieces(self) -> list[str]:
        """The piece strings in id order."""
        return [p for p, _, _ in self.model.pieces]


# ==== HF-compatible Unigram (compat="hf") and tokenizer.json ====


def metaspace_words(text: str) -> list[tuple[str, tuple[int, int]]]:
    """HF ``Metaspace(prepend_scheme="always", split=True)``: spaces become ``▁``, a ``▁`` is
    prepended, and the text splits before every ``▁``; offsets are character spans of ``text``.

    >>> metaspace_words(" hello  world")
    [('▁hello', (0, 6)), ('▁', (6, 7)), ('▁world', (7, 13))]
    >>> metaspace_words("hi")
    [('▁hi', (0, 2))]
    """
    if not text:
        return []
    mapped = text.replace(" ", WS)
    shift = 0
    if not mapped.startswith(WS):
        mapped, shift = WS + mapped, 1
    starts = [i for i, ch in enumerate(mapped) if ch == WS] or [0]
    if starts[0] != 0:
        starts.insert(0, 0)
    out = []
    for k, a in enumerate(starts):
        b = starts[k + 1] if k + 1 < len(starts) else len(mapped)
        out.append((mapped[a:b], (max(0, a - shift), b - shift)))
    return out


def train_unigram_hf(
    lines: Iterable[str],
    trainer: UnigramTrainer | None = None,
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> "Tokenizer":
    """Trains as HF's ``UnigramTrainer`` does on Metaspace words; returns the tokenizer (saved, an HF
    ``tokenizer.json`` with the options in its provenance).

    The piece set equals HF's (tests compare them); HF places the required characters missing from
    the model in hash order, we in (count desc, code point asc) order, so a few of their scores differ
    by multiples of 1e-4.

    Args:
        lines: The corpus, one str per line (line endings kept, as HF's ``train_from_files`` reads).
        trainer: The options, ``UnigramTrainer(compat="hf", ...)`` (default: its defaults).
        progress: ``progress(stage, current, total)``; reports the lines read.

    >>> tok = train_unigram_hf(["the cat sat on the mat"] * 10, UnigramTrainer(compat="hf", vocab_size=20))
    >>> tok.model.to_dict()["type"], tok.id_to_token(0)
    ('Unigram', '<unk>')
    """
    import hashlib
    from collections import Counter

    from subword import _core
    from subword.formats import hf_json

    trainer = trainer if trainer is not None else UnigramTrainer(compat="hf")
    if trainer.compat != "hf":
        raise ValueError("train_unigram_hf takes UnigramTrainer(compat='hf', ...)")
    trainer.validate()
    unk_token = trainer.unk_piece
    specials = list(dict.fromkeys(trainer.special_tokens or [unk_token]))
    if unk_token not in specials:
        specials.insert(0, unk_token)
    words: Counter[str] = Counter()
    sha = hashlib.sha256()
    n_lines = 0
    for line in lines:
        if not isinstance(line, str):
            raise TypeError(f"lines must be str, got {type(line).__name__}")
        sha.update(line.encode("utf-8"))
        n_lines += 1
        if progress is not None and n_lines % 65536 == 0:
            progress("read", n_lines, 0)
        for w, _ in metaspace_words(line):  # line endings kept, as HF's train_from_files reads lines
            words[w] += 1
    if not words:
        raise ValueError("no training text (every line is empty)")
    chars: Counter[str] = Counter()
    for w, c in words.items():
        for ch in w:
            chars[ch] += c
    req = sorted(chars.items(), key=lambda x: (-x[1], x[0]))
    wl = sorted(words.items())
    kw = dict(vocab_size=trainer.vocab_size, meta_pieces=len(specials), compat="hf",
              shrinking_factor=trainer.shrinking_factor, num_sub_iterations=trainer.num_sub_iterations,
              max_piece_length=trainer.max_sentencepiece_length, seed_size=trainer.seed_sentencepiece_size)
    if trainer.engine == "reference":
        from subword.reference.unigram import train_unigram as ref_train
        pieces = ref_train([], wl, req, vocab_size=trainer.vocab_size, meta_pieces=len(specials), compat="hf",
                           shrinking_factor=trainer.shrinking_factor, num_sub_iterations=trainer.num_sub_iterations,
                           max_sentencepiece_length=trainer.max_sentencepiece_length,
                           seed_sentencepiece_size=trainer.seed_sentencepiece_size)
    else:
        pieces = _core.train_unigram([], wl, req, **kw)
    vocab = [[t, 0.0] for t in specials] + [[p, s] for p, s in pieces if p not in specials]
    meta = {"type": "Metaspace", "replacement": WS, "prepend_scheme": "always", "split": True}
    data = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, t in enumerate(specials)],
        "normalizer": None, "pre_tokenizer": meta, "post_processor": None, "decoder": dict(meta),
        "model": {"type": "Unigram", "unk_id": specials.index(unk_token), "vocab": vocab, "byte_fallback": False},
    }
    from subword.trainers import warn_short_vocabulary

    warn_short_vocabulary(len(vocab), trainer.vocab_size, _UNIGRAM_RAN_OUT)
    tok = hf_json.from_dict(data, source="<train_unigram_hf>")
    tok.provenance["training"] = {
        "trainer": "UnigramTrainer",
        "options": trainer.to_dict(),
        "engine": trainer.engine,
        "corpus": {"sha256": sha.hexdigest(), "lines": n_lines, "distinct_words": len(words)},
        "vocab_size_reached": len(vocab),
    }
    return tok


class HfUnigramEncoder:
    """Deprecated alias, kept for one release: use ``Tokenizer.from_str`` / ``Tokenizer.from_file`` on the
    ``tokenizer.json``, which this wraps. Encodes like HF ``tokenizers`` with a Unigram ``tokenizer.json``:
    the same ids, and character offsets into the original text.

    Raises:
        ValueError: the JSON is not a Unigram model (or not a tokenizer we can load).
    """

    def __init__(self, tokenizer_json: dict) -> None:
        from subword.tokenizer import Tokenizer

        model = tokenizer_json.get("model", {})
        if model.get("type") != "Unigram":
            raise ValueError(f"not a Unigram model: {model.get('type')!r}")
        self.vocab = [p for p, _ in model["vocab"]]
        self.tokenizer = Tokenizer.from_str(json.dumps(tokenizer_json, ensure_ascii=False), source="<tokenizer.json>")

    def encode(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        """Ids and character offsets of ``text``.

        >>> enc = HfUnigramEncoder(train_unigram_hf(["ab ab"] * 5, vocab_size=8))
        >>> enc.encode("ab")
        ([3, 1, 2], [(0, 1), (0, 1), (1, 2)])
        """
        e = self.tokenizer.encode(text)
        return e.ids, e.offsets
