"""Training: one options class per algorithm behind one protocol, and the registry that picks them.

Every trainer is a dataclass of options with ``train(lines, progress=None) -> Tokenizer`` (the
:class:`Trainer` protocol); :func:`train` is the one entry point, used by Python callers and by
``subword train`` alike:

==============  ==========  ============================================  ==========================
algorithm       compat      options class                                 rules
==============  ==========  ============================================  ==========================
``bpe``         ``hf``      :class:`BpeTrainer`                           HF ``BpeTrainer``
``bpe``         ``spm``     :class:`subword.spm.SpmBpeTrainer`            sentencepiece's BPE
``byte-bpe``    ``hf``      :class:`ByteLevelBpeTrainer`                  HF, GPT-2 byte level
``wordpiece``   ``hf``      :class:`WordPieceTrainer`                     likelihood, PMI or HF frequency
``unigram``     ``spm``     :class:`subword.unigram.UnigramTrainer`       sentencepiece's Unigram
``unigram``     ``hf``      :class:`subword.unigram.UnigramTrainer`       HF ``UnigramTrainer``
==============  ==========  ============================================  ==========================

The ``compat`` field of each class names the rules it follows; ``UnigramTrainer`` implements both.


:class:`BpeTrainer` is the one definition of the training options: it is what Python callers pass,
what the command line is generated from (``cli.trainer_options`` reads the fields and their
``metadata["help"]``), and what is recorded in the tokenizer's provenance (:meth:`BpeTrainer.to_dict`).

The result equals HF ``tokenizers`` 0.23.3 trained on the same lines (same vocab, ids and merges),
except where HF is random (ties in ``limit_alphabet``, ids of ``##x``/``x</w>`` variants), where
we follow a documented deterministic rule (see :mod:`subword.reference.bpe`).

>>> tok = train_bpe(["low lower lowest\\n"] * 3, BpeTrainer(vocab_size=12))
>>> tok.model.merges[:4]
[('l', 'o'), ('lo', 'w'), ('low', 'e'), ('s', 't')]
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar, Literal, Protocol

from subword import decoders, pre_tokenizers, processors
from subword.model import BPE
from subword.normalizers import Normalizer
from subword.tokenizer import AddedToken, Tokenizer

__all__ = ["Trainer", "BpeTrainer", "ByteLevelBpeTrainer", "ProgressCallback", "train_bpe", "WordPieceTrainer",
           "train_wordpiece", "bert_pipeline", "BERT_SPECIAL_TOKENS", "train", "make_trainer", "trainer_class",
           "algorithms", "compats", "warn_short_vocabulary"]

log = logging.getLogger(__name__)

#: ``progress(stage, current, total)``. Stages: ``"read"`` (lines counted so far, total 0 = unknown),
#: ``"count"`` (initial pair counting, in words) and ``"merge"`` (merges done / at most). An exception
#: raised by the callback (e.g. KeyboardInterrupt) stops training and propagates.
ProgressCallback = Callable[[str, int, int], None]

#: Lines handed to the Rust word counter at once (big enough to keep both cores busy).
_BATCH_LINES = 1 << 16

#: Whether the Rust engine leaves out the words that ``min_frequency`` keeps from ever merging
#: (exact; ``rust/src/bpe/select.rs``). False trains on every word: tests compare the two.
_PRUNE_WORDS = True


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass
class BpeTrainer:
    """Options of the BPE trainer (HF ``BpeTrainer`` names and defaults, plus how to run it).

    Raises:
        ValueError: an option out of range, or an unknown option in :meth:`from_dict`.
        TypeError: an option of the wrong type.

    >>> BpeTrainer(vocab_size=1000, special_tokens=["<unk>"]).to_dict()["special_tokens"]
    ['<unk>']
    >>> BpeTrainer(vocab_size=0)
    Traceback (most recent call last):
    ...
    ValueError: BpeTrainer.vocab_size must be >= 1, got 0
    """

    vocab_size: int = field(default=30000, metadata=_help(
        "Target vocabulary size, special tokens and the alphabet included."))
    min_frequency: int = field(default=0, metadata=_help(
        "Stop at the first pair occurring fewer times than this (HF's rule). From 2 up, the words that can "
        "never reach it (every adjacent pair of their characters occurs fewer times in the whole corpus) are "
        "left out before training, exactly: same tokenizer, less memory. Unlike --min-count, which drops rare "
        "words and changes the result."))
    special_tokens: list[str] = field(default_factory=list, metadata=_help(
        "A special token (repeatable): ids 0.. in the order given, never split; added as special tokens."))
    initial_alphabet: list[str] = field(default_factory=list, metadata=_help(
        "A character always kept in the alphabet, even if absent from the corpus (repeatable; as in HF, "
        "only the first character of each value counts)."))
    limit_alphabet: int | None = field(default=None, metadata=_help(
        "Keep at most this many characters in the alphabet (the most frequent; ties drop the larger "
        "code point first)."))
    max_token_length: int | None = field(default=None, metadata=_help(
        "Do not create merged tokens of this many characters or more (HF's strict rule; the first "
        "two-character merges are always allowed)."))
    continuing_subword_prefix: str | None = field(default=None, metadata=_help(
        "Prefix of every non-initial subword, e.g. '##'."))
    end_of_word_suffix: str | None = field(default=None, metadata=_help(
        "Suffix of every word-final subword, e.g. '</w>'."))
    unk_token: str | None = field(default=None, metadata=_help(
        "The model's unknown token; must be one of the special tokens (default: unknown characters are dropped, as HF)."))
    compat: Literal["hf"] = field(default="hf", metadata={"cli": None, "help": (
        "Whose rules decide ids, merge order and tie-breaks: hf, HF tokenizers' (sentencepiece's BPE is "
        "SpmBpeTrainer, compat 'spm').")})
    engine: Literal["rust", "reference"] = field(default="rust", metadata=_help(
        "'rust' (fast) or 'reference' (the readable pure-Python trainer; slow, identical result)."))
    threads: int | None = field(default=None, metadata=_help(
        "Worker threads for the Rust engine (default: all cores)."))

    #: The registry key (see :func:`trainer_class`): the algorithm these options train.
    algorithm: ClassVar[str] = "bpe"

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check every option; called on construction (call again after changing fields)."""
        name = type(self).__name__

        def integer(key: str, minimum: int, optional: bool = False) -> None:
            value = getattr(self, key)
            if value is None and optional:
                return
            if isinstance(value, bool) or not isinstance(value, int):
                kind = "an int or None" if optional else "an int"
                raise TypeError(f"{name}.{key} must be {kind}, got {type(value).__name__} {value!r}")
            if value < minimum:
                raise ValueError(f"{name}.{key} must be >= {minimum}, got {value}")

        def strings(key: str) -> None:
            value = getattr(self, key)
            if isinstance(value, str) or not isinstance(value, (list, tuple)):
                raise TypeError(f"{name}.{key} must be a list of str, got {type(value).__name__} {value!r}")
            for item in value:
                if not isinstance(item, str) or not item:
                    raise TypeError(f"{name}.{key} must hold non-empty strings, got {item!r}")
            setattr(self, key, list(value))

        integer("vocab_size", 1)
        integer("min_frequency", 0)
        integer("limit_alphabet", 0, optional=True)
        integer("max_token_length", 1, optional=True)
        integer("threads", 1, optional=True)
        strings("special_tokens")
        strings("initial_alphabet")
        for key in ("continuing_subword_prefix", "end_of_word_suffix", "unk_token"):
            value = getattr(self, key)
            if value is not None and (not isinstance(value, str) or not value):
                raise TypeError(f"{name}.{key} must be a non-empty str or None, got {value!r}")
        if self.unk_token is not None and self.unk_token not in self.special_tokens:
            raise ValueError(f"{name}.unk_token {self.unk_token!r} must also be one of special_tokens")
        if self.compat != "hf":
            hint = (" (sentencepiece's BPE is SpmBpeTrainer: subword.train('bpe', compat='spm'))"
                    if self.compat == "spm" and self.algorithm == "bpe" else "")
            raise ValueError(f"{name}.compat must be 'hf', got {self.compat!r}{hint}")
        if self.engine not in ("rust", "reference"):
            raise ValueError(f"{name}.engine must be 'rust' or 'reference', got {self.engine!r}")
        if any(len(s) > 1 for s in self.initial_alphabet):
            log.warning("initial_alphabet: only the first character of each string is used (as HF does)")
        specials = len(dict.fromkeys(self.special_tokens))
        if self.vocab_size < specials:
            raise ValueError(
                f"{name}.vocab_size {self.vocab_size} is smaller than the {specials} special tokens; "
                f"the minimum is {specials} plus the alphabet"
            )

    def to_dict(self) -> dict[str, Any]:
        """The options as a JSON-ready dict (recorded in the tokenizer's provenance).

        >>> BpeTrainer().to_dict()["vocab_size"]
        30000
        """
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BpeTrainer:
        """Build from :meth:`to_dict` output; unknown keys are an error.

        >>> BpeTrainer.from_dict({"vocab_sise": 10})
        Traceback (most recent call last):
        ...
        ValueError: unknown BpeTrainer option(s): vocab_sise (known: vocab_size, min_frequency, ...)
        """
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"unknown BpeTrainer option(s): {', '.join(unknown)} (known: {', '.join(known[:2])}, ...)")
        return cls(**data)

    def train(self, lines: Iterable[str], progress: ProgressCallback | None = None) -> Tokenizer:
        """Train on ``lines`` with these options (the :class:`Trainer` protocol): :func:`train_bpe`.

        >>> BpeTrainer(vocab_size=12).train(["low lower lowest\\n"] * 3).model.merges[:2]
        [('l', 'o'), ('lo', 'w')]
        """
        return train_bpe(lines, self, progress=progress)

    def train_from_counts(self, counts: Any, progress: ProgressCallback | None = None) -> Tokenizer:
        """Train on word counts (:func:`subword.count_words`, a ``.swc`` file loaded with
        ``subword.counts.WordCounts.load``, or a ``.swc`` path or :class:`subword.counts.CountsFile`,
        read without loading it): the same tokenizer as training on the counted text.

        The pipeline comes from the counts (``ByteLevel`` counts give byte-level BPE) and must be the
        one this trainer counts with; WordPiece options pick BERT's. With ``min_frequency >= 2`` the
        trainer holds only the words that can reach it (``provenance["training"]["corpus"]
        ["words_trained"]``); the result is the same.

        Raises:
            ValueError: the counts were made by another pipeline (the message names the difference).

        >>> from subword import count_words
        >>> BpeTrainer(vocab_size=260).train_from_counts(count_words(["hello help\\n"], like="byte-bpe")).model.merges
        [('e', 'l'), ('h', 'el'), ('l', 'o'), ('Ġ', 'hel')]
        """
        from subword.counts import train_from_counts

        return train_from_counts(self, counts, progress=progress)

    def trainer_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of the training functions (``_core.train_bpe`` and the reference)."""
        keys = ("vocab_size", "min_frequency", "special_tokens", "initial_alphabet", "limit_alphabet",
                "max_token_length", "continuing_subword_prefix", "end_of_word_suffix")
        return {k: getattr(self, k) for k in keys}


def _batches(lines: Iterable[str], sha: Any, stats: dict[str, int], size: int) -> Iterator[list[str]]:
    """Cut ``lines`` into lists of ``size`` (islice keeps the per-line cost in C), hashing as we go."""
    it = iter(lines)
    while batch := list(islice(it, size)):
        try:
            sha.update("".join(batch).encode("utf-8"))
        except TypeError:
            bad = next(i for i, line in enumerate(batch) if not isinstance(line, str))
            raise TypeError(
                f"lines must be str, got {type(batch[bad]).__name__} at line {stats['lines'] + bad + 1}"
            ) from None
        stats["lines"] += len(batch)
        yield batch


def _count(
    lines: Iterable[str],
    trainer: Any,
    pre: pre_tokenizers.PreTokenizer,
    normalizer: Normalizer | None,
    progress: ProgressCallback | None,
) -> tuple[Any, Any, dict[str, int], int]:
    """Count the words of ``lines`` with the trainer's engine (shared by every trainer).

    Returns ``(words, sha256 of the text, {"lines": n}, distinct words)``, where ``words`` is a
    ``_core.WordCounter`` for the Rust engine and a ``{word: count}`` dict for the reference.

    Raises:
        ValueError: the input has no words (or, for word counts, another pipeline made them).
    """
    from subword.counts import CountsFile, WordCounts

    if isinstance(lines, (WordCounts, CountsFile)):  # already counted (train_from_counts)
        return lines._for_training(trainer, pre, normalizer)
    stats = {"lines": 0}
    words: Any
    sha: Any
    if trainer.engine == "rust":
        from subword._native import core_class
        from subword.counts import feed_lines

        words = core_class("WordCounter")(pre.to_json(), normalizer.to_json() if normalizer else None, trainer.threads)
        sha = core_class("InputDigest")()  # hashed in Rust beside the counting
        it = iter(lines)
        while batch := list(islice(it, _BATCH_LINES)):
            feed_lines(words, batch, sha, stats["lines"])
            stats["lines"] += len(batch)
            if progress is not None:
                progress("read", stats["lines"], 0)
    else:
        from subword.reference import bpe as reference

        sha = hashlib.sha256()

        words = {}
        for batch in _batches(lines, sha, stats, _BATCH_LINES):
            for word, count in reference.count_words(batch, pre, normalizer).items():
                words[word] = words.get(word, 0) + count
            if progress is not None:
                progress("read", stats["lines"], 0)
    n_words = len(words)
    if n_words == 0:
        raise ValueError(f"the input has no words ({stats['lines']} lines)")
    return words, sha, stats, n_words


def _select(words: Any, kwargs: dict[str, Any]) -> Any:
    """The words the Rust trainer needs, as a ``_core.TrainingWords`` made for ``kwargs`` (the
    trainer's keyword arguments): with ``min_frequency >= 2``, the words none of whose pairs can
    reach it are left out, exactly, before the trainer builds its tables."""
    from subword._native import core_class
    from subword.counts import FileRecords

    if isinstance(words, FileRecords):
        selected = words.select(_PRUNE_WORDS, **kwargs)
    else:
        selected = core_class("TrainingWords").select(words, prune=_PRUNE_WORDS, **kwargs)
    log.info("training on %d of %d distinct words (min_frequency=%d)", selected.loaded, selected.distinct,
             kwargs.get("min_frequency", 0))
    return selected


def warn_short_vocabulary(reached: int, asked: int, why: str) -> None:
    """Log one warning when training stopped short of ``vocab_size``: the size reached, the size asked and
    why (every trainer calls this, so ``subword train`` prints exactly one line for every algorithm).

    The line reads ``reached a vocabulary of 24 tokens, not the 5000 asked for: <why>``; nothing is logged
    when the size was reached:

    >>> warn_short_vocabulary(5000, 5000, "unused")
    """
    if reached < asked:
        log.warning("reached a vocabulary of %d tokens, not the %d asked for: %s", reached, asked, why)


def _merges_ran_out(trainer: BpeTrainer, rule: str) -> str:
    """Why a BPE or WordPiece trainer made fewer merges than asked (``rule``: how min_frequency acts)."""
    if trainer.min_frequency >= 2:
        why = f"no pair occurring at least min_frequency={trainer.min_frequency} times is left to merge ({rule})"
    else:
        why = "no pair is left to merge: every word of the corpus is a single token already (give more text)"
    if trainer.max_token_length is not None:
        why += f", or every pair left would make a token longer than max_token_length={trainer.max_token_length}"
    return why


def _corpus_record(sha: Any, stats: dict[str, int], n_words: int, trained: int) -> dict[str, Any]:
    """The provenance's ``corpus``: what was read, and how many distinct words the trainer held."""
    return {"sha256": sha.hexdigest(), "lines": stats["lines"], "distinct_words": n_words, "words_trained": trained}


@dataclass
class ByteLevelBpeTrainer(BpeTrainer):
    """Options of byte-level BPE (GPT-2): :class:`BpeTrainer`'s, on the 256-byte alphabet with the
    ``ByteLevel`` pre-tokenizer, decoder and post-processor.

    >>> tok = ByteLevelBpeTrainer(vocab_size=258).train(["hello hello\\n"])
    >>> tok.model.merges
    [('e', 'l'), ('h', 'el')]
    """

    algorithm: ClassVar[str] = "byte-bpe"

    def validate(self) -> None:
        """Check every option; the vocabulary must hold the 256 bytes and the special tokens."""
        super().validate()
        minimum = 256 + len(dict.fromkeys(self.special_tokens))
        if self.vocab_size < minimum:
            raise ValueError(
                f"{type(self).__name__}.vocab_size {self.vocab_size} is smaller than the byte-level alphabet (256) "
                f"plus {minimum - 256} special tokens; the minimum is {minimum}"
            )


def train_bpe(
    lines: Iterable[str],
    trainer: BpeTrainer,
    *,
    byte_level: bool | None = None,
    normalizer: Normalizer | None = None,
    progress: ProgressCallback | None = None,
) -> Tokenizer:
    """Train a BPE tokenizer on ``lines`` (keep their line endings to match HF's ``train_from_files``).

    Args:
        lines: The corpus, one str per line.
        trainer: The options.
        byte_level: GPT-2 style: ``ByteLevel`` pre-tokenizer (no prefix space), the 256 byte chars as the
            initial alphabet, ``ByteLevel`` decoder and post-processor. Otherwise the ``Whitespace``
            pre-tokenizer (and a ``BPEDecoder`` when ``end_of_word_suffix`` is set). Default: byte-level
            exactly when ``trainer`` is a :class:`ByteLevelBpeTrainer`.
        normalizer: Applied to every line before pre-tokenization, and kept in the tokenizer.
        progress: ``progress(stage, current, total)``, see :data:`ProgressCallback`.

    Returns:
        The tokenizer. ``tok.provenance["training"]`` records the options, engine, corpus sha256 and
        the vocabulary size actually reached (smaller than asked when the corpus runs out of pairs or
        ``min_frequency`` stops training; a warning is logged then).

    Raises:
        ValueError: ``vocab_size`` is smaller than the special tokens plus the alphabet (the message names
            the minimum), or the input has no words.
        TypeError: a line is not a str.

    >>> tok = train_bpe(["hello hello help\\n"], BpeTrainer(vocab_size=260), byte_level=True)
    >>> tok.model.merges, tok.get_vocab_size()
    ([('e', 'l'), ('h', 'el'), ('l', 'o'), ('Ġ', 'hel')], 260)
    """
    if isinstance(lines, (str, bytes)):
        raise TypeError("lines must be an iterable of lines (e.g. a list of str or an open file), not a single string")
    if not isinstance(trainer, BpeTrainer):
        raise TypeError(f"trainer must be a BpeTrainer, got {type(trainer).__name__}")
    trainer.validate()
    if byte_level is None:
        byte_level = isinstance(trainer, ByteLevelBpeTrainer)
    if normalizer is not None and not isinstance(normalizer, Normalizer):
        raise TypeError(f"normalizer must be a subword.normalizers.Normalizer, got {type(normalizer).__name__}")
    if byte_level:
        pre: pre_tokenizers.PreTokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    else:
        pre = pre_tokenizers.Whitespace()
    kwargs = trainer.trainer_kwargs()
    if byte_level:
        kwargs["initial_alphabet"] = pre_tokenizers.ByteLevel.alphabet() + list(trainer.initial_alphabet)
        specials = len(dict.fromkeys(trainer.special_tokens))
        if trainer.vocab_size < 256 + specials:
            raise ValueError(
                f"vocab_size {trainer.vocab_size} is smaller than the byte-level alphabet (256) plus "
                f"{specials} special tokens; the minimum is {256 + specials}"
            )

    words, sha, stats, n_words = _count(lines, trainer, pre, normalizer, progress)
    trained = n_words
    if trainer.engine == "rust":
        from subword._native import core_class

        selected = _select(words, kwargs)
        n_words, trained = selected.distinct, selected.loaded
        vocab, merges = core_class("train_bpe")(selected, progress=progress, **kwargs)
    else:
        from subword.reference import bpe as reference

        vocab, merges = reference.train_bpe(words, progress=progress, **kwargs)

    reached = len(vocab)
    if reached > trainer.vocab_size:
        raise ValueError(
            f"vocab_size {trainer.vocab_size} is smaller than the special tokens plus the alphabet of this "
            f"corpus: the minimum is {reached} (or lower limit_alphabet)"
        )
    warn_short_vocabulary(reached, trainer.vocab_size, _merges_ran_out(trainer, "BPE stops at the first pair below it"))

    options = {"unk_token": trainer.unk_token, "continuing_subword_prefix": trainer.continuing_subword_prefix,
               "end_of_word_suffix": trainer.end_of_word_suffix}
    vocab_ids = dict(zip(vocab, range(len(vocab))))
    # The Rust trainer's output is consistent by construction (BPE._from_trainer); the reference's is checked.
    model = (BPE._from_trainer(vocab_ids, merges, **options) if trainer.engine == "rust"
             else BPE(vocab_ids, merges, **options))
    if byte_level:
        decoder: decoders.Decoder | None = decoders.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
        post: processors.PostProcessor | None = processors.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
    else:
        decoder = decoders.BPEDecoder(suffix=trainer.end_of_word_suffix) if trainer.end_of_word_suffix else None
        post = None
    provenance = {
        "training": {
            "trainer": "BpeTrainer",
            "options": trainer.to_dict(),
            "engine": trainer.engine,
            "byte_level": byte_level,
            "normalizer": normalizer.to_dict() if normalizer is not None else None,
            "corpus": _corpus_record(sha, stats, n_words, trained),
            "vocab_size_reached": reached,
            "merges": len(merges),
        }
    }
    return Tokenizer(
        model,
        normalizer=normalizer,
        pre_tokenizer=pre,
        post_processor=post,
        decoder=decoder,
        special_tokens=[AddedToken(t, special=True, normalized=False) for t in trainer.special_tokens],
        provenance=provenance,
    )


# ==== WordPiece ====

#: BERT's special tokens, in the order BERT's vocabularies list them.
BERT_SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@dataclass
class WordPieceTrainer(BpeTrainer):
    """Options of the WordPiece trainer: BPE's options, plus the merge criterion and the BERT pipeline.

    ``criterion="likelihood"`` (the default) merges the pair whose merge most increases the likelihood of
    the training words under the unigram model of their current segmentation, WordPiece as Schuster &
    Nakajima (2012) describe it, computed exactly from counts; ``"pmi"`` merges the pair with the highest
    ``count(ab) / (count(a) * count(b))``, the score the HF course describes (it favours rare units that
    always co-occur: rare scripts and digit runs before common words); ``"frequency"`` is HF's
    ``WordPieceTrainer`` (BPE with the ``##`` prefix, vocab only). See :mod:`subword.reference.wordpiece`
    for the exact rules, ties included, and ``benchmarks/RESULTS.md`` for the three compared on held-out text.

    >>> WordPieceTrainer().special_tokens
    ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']
    >>> WordPieceTrainer(criterion="best")
    Traceback (most recent call last):
    ...
    ValueError: WordPieceTrainer.criterion must be 'likelihood', 'pmi' or 'frequency', got 'best'
    """

    min_frequency: int = field(default=0, metadata=_help(
        "frequency: stop at the first pair occurring fewer times (HF); likelihood, pmi: never merge such a pair. "
        "Words that can never reach it are left out before training, exactly (same vocab, less memory)."))
    special_tokens: list[str] = field(default_factory=lambda: list(BERT_SPECIAL_TOKENS), metadata=_help(
        "A special token (repeatable): ids 0.. in the order given, never split. Default: BERT's five."))
    max_token_length: int | None = field(default=None, metadata=_help(
        "Never create tokens of more than this many characters."))
    continuing_subword_prefix: str | None = field(default="##", metadata=_help(
        "Prefix of every non-initial subword."))
    end_of_word_suffix: str | None = field(default=None, metadata={"cli": None, "help": "Not used by WordPiece."})
    unk_token: str | None = field(default="[UNK]", metadata=_help(
        "The model's unknown token (a word it cannot spell becomes this token); must be a special token."))
    criterion: Literal["likelihood", "pmi", "frequency"] = field(default="likelihood", metadata=_help(
        "wordpiece: likelihood merges the pair that most raises the training likelihood under a unigram model "
        "(Schuster & Nakajima); pmi the pair maximising count(ab)/(count(a)count(b)) (the HF course's score); "
        "frequency the most frequent pair (HF's WordPieceTrainer)."))
    lowercase: bool = field(default=True, metadata=_help("wordpiece: the BERT normalizer lowercases (uncased model)."))
    strip_accents: bool | None = field(default=None, metadata=_help(
        "BERT normalizer: strip accents (default: when lowercasing)."))
    max_input_chars_per_word: int = field(default=100, metadata=_help(
        "wordpiece: when encoding, longer words become the unk token."))

    def validate(self) -> None:
        """Check every option (BPE's checks plus WordPiece's)."""
        super().validate()
        name = type(self).__name__
        if self.criterion not in ("likelihood", "pmi", "frequency"):
            raise ValueError(f"{name}.criterion must be 'likelihood', 'pmi' or 'frequency', got {self.criterion!r}")
        if self.end_of_word_suffix is not None:
            raise ValueError(f"{name}.end_of_word_suffix is not used by WordPiece; leave it None")
        if self.continuing_subword_prefix is None:
            raise ValueError(f"{name}.continuing_subword_prefix must be a non-empty str")
        if self.unk_token is None:
            raise ValueError(f"{name}.unk_token must be set (WordPiece spells unknown words with it)")
        for key in ("lowercase",):
            if not isinstance(getattr(self, key), bool):
                raise TypeError(f"{name}.{key} must be a bool, got {getattr(self, key)!r}")
        if self.strip_accents is not None and not isinstance(self.strip_accents, bool):
            raise TypeError(f"{name}.strip_accents must be a bool or None, got {self.strip_accents!r}")
        m = self.max_input_chars_per_word
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ValueError(f"{name}.max_input_chars_per_word must be an int >= 1, got {m!r}")

    def trainer_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``_core.train_wordpiece`` and :func:`subword.reference.wordpiece.train_wordpiece`."""
        keys = ("vocab_size", "criterion", "min_frequency", "special_tokens", "initial_alphabet", "limit_alphabet",
                "max_token_length", "continuing_subword_prefix")
        return {k: getattr(self, k) for k in keys}

    algorithm: ClassVar[str] = "wordpiece"

    def train(self, lines: Iterable[str], progress: ProgressCallback | None = None) -> Tokenizer:
        """Train on ``lines`` with these options (the :class:`Trainer` protocol): :func:`train_wordpiece`.

        >>> WordPieceTrainer(vocab_size=40).train(["the cat\\n"] * 3).encode("cat").tokens
        ['[CLS]', 'cat', '[SEP]']
        """
        return train_wordpiece(lines, self, progress=progress)

    def normalizer(self) -> Normalizer:
        """The BERT normalizer these options describe.

        >>> WordPieceTrainer(lowercase=False).normalizer()
        BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=False)
        """
        from subword.normalizers import BertNormalizer

        return BertNormalizer(strip_accents=self.strip_accents, lowercase=self.lowercase)


def bert_pipeline(model: Any, special_tokens: list[str], *, normalizer: Normalizer | None = None,
                  provenance: dict[str, Any] | None = None) -> Tokenizer:
    """A BERT tokenizer around a WordPiece ``model``: BERT normalizer and pre-tokenizer,
    ``[CLS] A [SEP]`` / ``[CLS] A [SEP] B [SEP]`` with token type ids, the WordPiece decoder.

    ``[CLS]`` and ``[SEP]`` must be in ``model.vocab``; ``special_tokens`` become added special tokens.

    Raises:
        ValueError: ``[CLS]`` or ``[SEP]`` is missing from the vocab.

    >>> from subword.model import WordPiece
    >>> tok = bert_pipeline(WordPiece({"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "hi": 3}), ["[UNK]", "[CLS]", "[SEP]"])
    >>> tok.encode("Hi!").tokens
    ['[CLS]', 'hi', '[UNK]', '[SEP]']
    """
    from subword.normalizers import BertNormalizer

    missing = [t for t in ("[CLS]", "[SEP]") if t not in model.vocab]
    if missing:
        raise ValueError(f"a BERT pipeline needs {' and '.join(missing)} in the vocab")
    cls_id, sep_id = model.vocab["[CLS]"], model.vocab["[SEP]"]
    post = processors.TemplateProcessing(
        "[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)])
    return Tokenizer(
        model,
        normalizer=normalizer if normalizer is not None else BertNormalizer(),
        pre_tokenizer=pre_tokenizers.BertPreTokenizer(),
        post_processor=post,
        decoder=decoders.WordPiece(prefix=model.continuing_subword_prefix, cleanup=True),
        special_tokens=[AddedToken(t, special=True, normalized=False) for t in special_tokens],
        provenance=provenance,
    )


def train_wordpiece(
    lines: Iterable[str],
    trainer: WordPieceTrainer | None = None,
    *,
    progress: ProgressCallback | None = None,
) -> Tokenizer:
    """Train a BERT-style WordPiece tokenizer on ``lines``.

    The words are counted after :class:`~subword.normalizers.BertNormalizer` and
    :class:`~subword.pre_tokenizers.BertPreTokenizer` (as HF's ``BertWordPieceTokenizer`` does); the result
    is a full BERT pipeline (see :func:`bert_pipeline`), with ``[CLS]``/``[SEP]`` when they are among the
    special tokens (otherwise no post-processor).

    Args:
        lines: The corpus, one str per line.
        trainer: The options (default: ``WordPieceTrainer()``).
        progress: ``progress(stage, current, total)``, see :data:`ProgressCallback`.

    Raises:
        ValueError: ``vocab_size`` below the special tokens plus the alphabet, or no words.
        TypeError: a line is not a str.

    >>> tok = train_wordpiece(["the quick brown fox\\n", "the lazy dog\\n"] * 5, WordPieceTrainer(vocab_size=80))
    >>> tok.encode("The dog").tokens[:2]
    ['[CLS]', 'the']
    """
    if isinstance(lines, (str, bytes)):
        raise TypeError("lines must be an iterable of lines (e.g. a list of str or an open file), not a single string")
    trainer = trainer if trainer is not None else WordPieceTrainer()
    if not isinstance(trainer, WordPieceTrainer):
        raise TypeError(f"trainer must be a WordPieceTrainer, got {type(trainer).__name__}")
    trainer.validate()
    normalizer = trainer.normalizer()
    pre = pre_tokenizers.BertPreTokenizer()
    words, sha, stats, n_words = _count(lines, trainer, pre, normalizer, progress)
    kwargs = trainer.trainer_kwargs()
    trained = n_words
    if trainer.engine == "rust":
        from subword._native import core_class

        selected = _select(words, kwargs)
        n_words, trained = selected.distinct, selected.loaded
        vocab = core_class("train_wordpiece")(selected, progress=progress, **kwargs)
    else:
        from subword.reference import wordpiece as reference

        vocab = reference.train_wordpiece(words, progress=progress, **kwargs)
    reached = len(vocab)
    if reached > trainer.vocab_size:
        raise ValueError(
            f"vocab_size {trainer.vocab_size} is smaller than the special tokens plus the alphabet of this "
            f"corpus: the minimum is {reached} (or lower limit_alphabet)"
        )
    rule = ("HF's rule: stop at the first pair below it" if trainer.criterion == "frequency"
            else "pairs below it are never merged")
    warn_short_vocabulary(reached, trainer.vocab_size, _merges_ran_out(trainer, rule))
    from subword.model import WordPiece

    model = WordPiece({t: i for i, t in enumerate(vocab)}, unk_token=trainer.unk_token or "[UNK]",
                      continuing_subword_prefix=trainer.continuing_subword_prefix or "##",
                      max_input_chars_per_word=trainer.max_input_chars_per_word)
    provenance = {
        "training": {
            "trainer": "WordPieceTrainer",
            "options": trainer.to_dict(),
            "engine": trainer.engine,
            "normalizer": normalizer.to_dict(),
            "corpus": _corpus_record(sha, stats, n_words, trained),
            "vocab_size_reached": reached,
        }
    }
    if "[CLS]" in model.vocab and "[SEP]" in model.vocab:
        return bert_pipeline(model, trainer.special_tokens, normalizer=normalizer, provenance=provenance)
    return Tokenizer(model, normalizer=normalizer, pre_tokenizer=pre,
                     decoder=decoders.WordPiece(prefix=model.continuing_subword_prefix),
                     special_tokens=[AddedToken(t, special=True, normalized=False) for t in trainer.special_tokens],
                     provenance=provenance)


# ==== the registry: one protocol, one entry point ====


class Trainer(Protocol):
    """What every options class offers: its registry key, its rules, and ``train``."""

    algorithm: ClassVar[str]
    compat: str

    def train(self, lines: Iterable[str], progress: ProgressCallback | None = None) -> Tokenizer: ...

    def to_dict(self) -> dict[str, Any]: ...


def spm_tokenizer(model: Any) -> Tokenizer:
    """The :class:`Tokenizer` of a trained SentencePiece model (``SpmModelFile``): it encodes as
    sentencepiece does and ``save("x.model")`` writes the model back unchanged."""
    from subword.formats.spm import tokenizer_from_model

    return tokenizer_from_model(model)


def _registry() -> dict[str, dict[str, type]]:
    """algorithm -> compat -> options class; the first compat listed is the algorithm's default."""
    from subword.spm import SpmBpeTrainer
    from subword.unigram import UnigramTrainer

    return {
        "bpe": {"hf": BpeTrainer, "spm": SpmBpeTrainer},
        "byte-bpe": {"hf": ByteLevelBpeTrainer},
        "wordpiece": {"hf": WordPieceTrainer},
        "unigram": {"spm": UnigramTrainer, "hf": UnigramTrainer},
    }


def algorithms() -> list[str]:
    """The algorithms :func:`train` knows.

    >>> algorithms()
    ['bpe', 'byte-bpe', 'wordpiece', 'unigram']
    """
    return list(_registry())


def compats(algorithm: str) -> list[str]:
    """The rule sets ``algorithm`` can follow, its default first.

    >>> compats("unigram"), compats("wordpiece")
    (['spm', 'hf'], ['hf'])
    """
    return list(_lookup(algorithm))


def _lookup(algorithm: str) -> dict[str, type]:
    table = _registry()
    if algorithm not in table:
        raise ValueError(f"unknown algorithm {algorithm!r} (known: {', '.join(table)})")
    return table[algorithm]


def trainer_class(algorithm: str, compat: str | None = None) -> type:
    """The options class for ``algorithm`` under ``compat``'s rules (``None``: the algorithm's default).

    Raises:
        ValueError: an unknown algorithm, or rules the algorithm does not have (the message lists them).

    >>> trainer_class("bpe", "spm").__name__
    'SpmBpeTrainer'
    >>> trainer_class("wordpiece", "spm")
    Traceback (most recent call last):
    ...
    ValueError: wordpiece has no 'spm' rules (it has: hf)
    """
    table = _lookup(algorithm)
    if compat is None:
        return next(iter(table.values()))
    if compat not in table:
        raise ValueError(f"{algorithm} has no {compat!r} rules (it has: {', '.join(table)})")
    return table[compat]


def make_trainer(algorithm: str, compat: str | None = None, **options: Any) -> Trainer:
    """The options object for ``algorithm`` (see :func:`trainer_class`) built from ``options``.

    Raises:
        TypeError: an option the chosen class does not have (named, with the closest known name).
        ValueError: an unknown algorithm or compat, or an option out of range.

    >>> make_trainer("unigram", "hf", vocab_size=100).compat
    'hf'
    >>> make_trainer("bpe", vocab_sise=100)
    Traceback (most recent call last):
    ...
    TypeError: BpeTrainer has no option 'vocab_sise' (did you mean 'vocab_size'?)
    """
    import difflib

    cls = trainer_class(algorithm, compat)
    known = [f.name for f in fields(cls) if f.init]
    for name in options:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"{cls.__name__} has no option {name!r}{hint}")
    if compat is not None and "compat" in known:
        options = {**options, "compat": compat}
    return cls(**options)


def train(
    algorithm: str,
    inputs: Any = None,
    *,
    lines: Iterable[str] | None = None,
    compat: str | None = None,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> Tokenizer:
    """Train a tokenizer: the one entry point (``subword train`` runs through it too).

    Args:
        algorithm: ``"bpe"``, ``"byte-bpe"``, ``"wordpiece"`` or ``"unigram"``.
        inputs: Files, globs or directories (a path or a list of them; ``.gz``/``.bz2``/``.xz`` are
            read through), read as ``subword train`` reads them: lines with their endings.
        lines: Or the text itself, one str per line (give ``inputs`` or ``lines``, not both; neither:
            the built-in corpus).
        compat: Whose rules to follow (see the table in this module); ``None``: the algorithm's default.
        progress: ``progress(stage, current, total)``, see :data:`ProgressCallback`.
        **options: The options of the chosen class (e.g. ``vocab_size=8000``).

    Returns:
        The trained :class:`Tokenizer`, with its training options in ``provenance``.

    Raises:
        TypeError: an option the algorithm does not have.
        ValueError: a bad option value, or an input without words.

    >>> tok = train("wordpiece", lines=["the cat sat on the mat\\n"] * 5, vocab_size=60)
    >>> tok.encode("the cat").tokens
    ['[CLS]', 'the', 'cat', '[SEP]']
    """
    trainer = make_trainer(algorithm, compat, **options)
    if inputs is not None and lines is not None:
        raise TypeError("give inputs (files) or lines (text), not both")
    if lines is None:
        import corpora

        if inputs is None:
            inputs = [corpora.builtin_corpus()]
        elif isinstance(inputs, (str, bytes)) or hasattr(inputs, "__fspath__"):
            inputs = [inputs]
        lines = corpora.CorpusReader([str(p) for p in inputs])
    return trainer.train(lines, progress=progress)
