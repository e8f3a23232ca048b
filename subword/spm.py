"""SentencePiece-compatible training: the shared options and BPE with ``compat="spm"``.

:class:`SpmOptions` holds sentencepiece's trainer and normalizer options (its names, its
defaults); the Unigram trainer and :class:`SpmBpeTrainer` both build on it, and the CLI
generates ``--character-coverage``, ``--byte-fallback``, ... from its fields.

:func:`train_spm_bpe` reproduces sentencepiece 0.2.3's BPE trainer: on the same lines and
options the piece list, ids and scores are identical (tests compare them with
``sentencepiece.SentencePieceTrainer``). The pipeline in front of it (normalization, whitespace
as ``▁``, character coverage, reserved ids) is SentencePiece's ``LoadSentences``.

Known differences from sentencepiece (none shows on the test corpora):

* ``nmt_nfkc``/``nfkc`` use our own precompiled table
  (:func:`subword.formats.spm.normalization_charsmap`, built from Python's unicodedata) for
  training, for encoding and inside the ``.model`` files we write, so sentencepiece loading our
  files normalizes exactly as we do. sentencepiece's own table agrees with it on the test text
  (English, CJK, ~100 languages, compatibility characters, combining marks); it also lists
  longer sequences (a compatibility character followed by combining marks, e.g. U+1F149
  U+0301) that ours does not compose.
* Unicode scripts for the piece-validity rule come from the ``regex`` package's (newer) tables;
  sentencepiece's table is older, so characters assigned since then (its "Common") may be judged
  differently.
* ``input_sentence_size`` sampling uses our reservoir sampler (``--seed``), not sentencepiece's
  random generator, so the sampled lines differ; with the same lines the result is identical.
  sentencepiece's own sample cannot be reproduced: 0.2.3 seeds absl's ``BitGen`` with a fixed seed,
  but absl salts it per process, so two sentencepiece runs on the same file pick different lines
  (measured). Without shuffling both take the first usable lines, and the models are identical.
* Lines are read as sentencepiece reads files: split at ``\n`` only (a trailing ``\r`` stays).

>>> model = train_spm_bpe(["low lower lowest"] * 3, SpmBpeTrainer(vocab_size=20,
...     normalization_rule_name="identity", hard_vocab_limit=False))
>>> [p for p, _, _ in model.pieces[:6]]
['<unk>', '<s>', '</s>', 'lo', 'low', '▁low']
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar, Literal

from subword.formats.spm import MODEL_TYPES, SpmModelFile

__all__ = ["SPM_VERSION", "SpmBpeTrainer", "SpmOptions", "train_spm_bpe"]

log = logging.getLogger(__name__)

#: The sentencepiece release whose results we reproduce.
SPM_VERSION = "0.2.3"


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass
class SpmOptions:
    """sentencepiece's training and normalization options (same names and defaults).

    Raises:
        ValueError: an option out of range (e.g. ``character_coverage`` outside (0, 1]).
        TypeError: an option of the wrong type.

    >>> SpmOptions(character_coverage=1.0).spec()["character_coverage"]
    1.0
    >>> SpmOptions(character_coverage=0)
    Traceback (most recent call last):
    ...
    ValueError: character_coverage must be in (0, 1], got 0
    """

    vocab_size: int = field(default=8000, metadata=_help(
        "Vocabulary size, reserved pieces (<unk>, <s>, </s>, ...) included."))
    character_coverage: float = field(default=0.9995, metadata=_help(
        "Fraction of the characters (by count) that get their own piece; the rest become <unk> "
        "(1.0 keeps every character; sentencepiece's default 0.9995)."))
    normalization_rule_name: Literal["nmt_nfkc", "nfkc", "identity"] = field(default="nmt_nfkc", metadata=_help(
        "Character normalization: nmt_nfkc (NFKC plus NMT clean-up), nfkc, or identity."))
    add_dummy_prefix: bool = field(default=True, metadata=_help(
        "Add a ▁ before the text, so a word at the start is the same piece as inside a sentence."))
    remove_extra_whitespaces: bool = field(default=True, metadata=_help(
        "Drop leading and trailing spaces and collapse runs of spaces."))
    treat_whitespace_as_suffix: bool = field(default=False, metadata=_help(
        "Put ▁ at the end of words instead of the start."))
    split_by_whitespace: bool = field(default=True, metadata=_help(
        "Pieces never cross a ▁ boundary (off: pieces may span words, for text without spaces)."))
    split_by_number: bool = field(default=True, metadata=_help(
        "Digits never join letters in one piece."))
    split_by_unicode_script: bool = field(default=True, metadata=_help(
        "A piece holds one Unicode script (Hiragana and Katakana count as Han)."))
    split_digits: bool = field(default=False, metadata=_help("Every digit is its own piece."))
    allow_whitespace_only_pieces: bool = field(default=False, metadata=_help(
        "Allow pieces made only of ▁ (runs of spaces)."))
    max_sentencepiece_length: int = field(default=16, metadata=_help("Longest piece, in characters."))
    max_sentence_length: int = field(default=4192, metadata=_help(
        "Longer lines (in bytes) are skipped, as sentencepiece does; we log how many."))
    byte_fallback: bool = field(default=False, metadata=_help(
        "Reserve the 256 <0xXX> byte pieces, so unknown characters are spelled as bytes."))
    required_chars: str = field(default="", metadata=_help(
        "Characters that always get a piece, whatever the coverage."))
    user_defined_symbols: list[str] = field(default_factory=list, metadata=_help(
        "A piece that is always one token, never split (repeatable)."))
    control_symbols: list[str] = field(default_factory=list, metadata=_help(
        "A reserved control piece (repeatable), e.g. <sep>; never produced from text."))
    unk_id: int = field(default=0, metadata=_help("Id of <unk> (required)."))
    bos_id: int = field(default=1, metadata=_help("Id of <s>, -1 for none."))
    eos_id: int = field(default=2, metadata=_help("Id of </s>, -1 for none."))
    pad_id: int = field(default=-1, metadata=_help("Id of <pad>, -1 for none."))
    unk_piece: str = field(default="<unk>", metadata=_help("Spelling of the unknown piece."))
    bos_piece: str = field(default="<s>", metadata=_help("Spelling of the begin-of-sentence piece."))
    eos_piece: str = field(default="</s>", metadata=_help("Spelling of the end-of-sentence piece."))
    pad_piece: str = field(default="<pad>", metadata=_help("Spelling of the padding piece."))
    hard_vocab_limit: bool = field(default=True, metadata=_help(
        "Fail when the corpus cannot fill vocab_size (off: return a smaller vocabulary)."))
    input_sentence_size: int = field(default=0, metadata=_help(
        "Train on at most this many lines (0 = all), drawn at random with --seed unless "
        "--no-shuffle-input-sentence (then the first ones)."))
    shuffle_input_sentence: bool = field(default=True, metadata=_help(
        "With --input-sentence-size: sample lines at random (else take the first ones)."))

    #: Fields passed to the Rust pipeline (the rest is Python policy).
    _SPEC_FIELDS = (
        "vocab_size", "character_coverage", "normalization_rule_name", "add_dummy_prefix",
        "remove_extra_whitespaces", "treat_whitespace_as_suffix", "split_by_whitespace", "split_by_number",
        "split_by_unicode_script", "split_digits", "allow_whitespace_only_pieces", "max_sentencepiece_length",
        "max_sentence_length", "byte_fallback", "required_chars", "user_defined_symbols", "control_symbols",
        "unk_id", "bos_id", "eos_id", "pad_id", "unk_piece", "bos_piece", "eos_piece", "pad_piece",
        "hard_vocab_limit",
    )

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Checks every option (called on construction)."""
        for f in fields(self):
            if f.name.startswith("_"):
                continue
            value = getattr(self, f.name)
            kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
            if kind == "bool" and not isinstance(value, bool):
                raise TypeError(f"{f.name} must be a bool, got {value!r}")
            if kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
                raise TypeError(f"{f.name} must be an int, got {value!r}")
            if kind == "str" and not isinstance(value, str):
                raise TypeError(f"{f.name} must be a str, got {value!r}")
            if kind == "list[str]":
                if isinstance(value, str) or not all(isinstance(v, str) and v for v in value):
                    raise TypeError(f"{f.name} must be a list of non-empty strings, got {value!r}")
                setattr(self, f.name, list(value))
        cov = self.character_coverage
        if isinstance(cov, bool) or not isinstance(cov, (int, float)) or not 0 < cov <= 1:
            raise ValueError(f"character_coverage must be in (0, 1], got {cov!r}")
        if self.normalization_rule_name not in ("nmt_nfkc", "nfkc", "identity"):
            raise ValueError(f"normalization_rule_name must be nmt_nfkc, nfkc or identity, "
                             f"got {self.normalization_rule_name!r}")
        if self.vocab_size < 1:
            raise ValueError(f"vocab_size must be >= 1, got {self.vocab_size}")
        if not 1 <= self.max_sentencepiece_length <= 512:
            raise ValueError(f"max_sentencepiece_length must be in [1, 512], got {self.max_sentencepiece_length}")
        if self.max_sentence_length < 10:
            raise ValueError(f"max_sentence_length must be >= 10, got {self.max_sentence_length}")
        if self.unk_id < 0:
            raise ValueError("unk_id must be >= 0: a SentencePiece model needs an unknown piece")
        if self.input_sentence_size < 0:
            raise ValueError(f"input_sentence_size must be >= 0, got {self.input_sentence_size}")

    def spec(self) -> dict[str, Any]:
        """The options the Rust pipeline reads (sentencepiece names), with our precompiled table
        for the normalization rule (the one a ``.model`` we write carries)."""
        from subword.formats.spm import normalization_charsmap

        spec = {k: getattr(self, k) for k in self._SPEC_FIELDS}
        spec["precompiled_charsmap_hex"] = normalization_charsmap(self.normalization_rule_name).hex()
        return spec

    def spec_json(self) -> str:
        """:meth:`spec` as JSON (what ``_core.spm_prepare`` and the trainers take)."""
        return json.dumps(self.spec(), ensure_ascii=False)

    def trainer_spec(self, model_type: str) -> dict[str, Any]:
        """The TrainerSpec recorded in a ``.model`` file."""
        out = {k: getattr(self, k) for k in self._SPEC_FIELDS if k != "normalization_rule_name"}
        out["model_type"] = MODEL_TYPES[model_type]
        out["input_sentence_size"] = self.input_sentence_size
        out["shuffle_input_sentence"] = self.shuffle_input_sentence
        return out

    def normalizer_spec(self) -> dict[str, Any]:
        """The NormalizerSpec recorded in a ``.model`` file, with our precompiled table for the rule
        (:func:`subword.formats.spm.normalization_charsmap`)."""
        from subword.formats.spm import normalization_charsmap

        spec: dict[str, Any] = {"name": self.normalization_rule_name}
        charsmap = normalization_charsmap(self.normalization_rule_name)
        if charsmap:
            spec["precompiled_charsmap"] = charsmap
        spec.update(add_dummy_prefix=self.add_dummy_prefix, remove_extra_whitespaces=self.remove_extra_whitespaces,
                    escape_whitespaces=True)
        return spec

    def to_dict(self) -> dict[str, Any]:
        """All options (for provenance)."""
        return asdict(self)


@dataclass
class SpmBpeTrainer(SpmOptions):
    """Options of SentencePiece-compatible BPE (:class:`SpmOptions` plus how to run it).

    >>> SpmBpeTrainer(vocab_size=100).engine
    'rust'
    """

    engine: Literal["rust", "reference"] = field(default="rust", metadata=_help(
        "'rust' (fast) or 'reference' (the readable pure-Python trainer; identical result)."))
    threads: int | None = field(default=None, metadata=_help("Worker threads for normalization (default: all cores)."))
    seed: int = field(default=0, metadata=_help("Seed for --input-sentence-size sampling."))
    compat: Literal["spm"] = field(default="spm", metadata={"cli": None, "help": "sentencepiece's rules (only)."})

    algorithm: ClassVar[str] = "bpe"

    def validate(self) -> None:
        super().validate()
        if self.compat != "spm":
            raise ValueError(f"SpmBpeTrainer follows sentencepiece's rules (compat='spm'), got {self.compat!r}; "
                             "HF's BPE is BpeTrainer")
        if self.engine not in ("rust", "reference"):
            raise ValueError(f"engine must be 'rust' or 'reference', got {self.engine!r}")
        if self.threads is not None and (isinstance(self.threads, bool) or not isinstance(self.threads, int)
                                         or self.threads < 1):
            raise ValueError(f"threads must be a positive int or None, got {self.threads!r}")

    def train(self, lines: Iterable[str], progress: Callable[[str, int, int], None] | None = None) -> Any:
        """Train on ``lines`` (the :class:`subword.trainers.Trainer` protocol): :func:`train_spm_bpe`,
        as a :class:`subword.Tokenizer` that encodes as sentencepiece does and saves as a ``.model``.

        >>> tok = SpmBpeTrainer(vocab_size=20, hard_vocab_limit=False).train(["low lower lowest"] * 3)
        >>> tok.id_to_token(3)
        'lo'
        """
        from subword.trainers import spm_tokenizer

        return spm_tokenizer(train_spm_bpe(lines, self, progress=progress))


def _assemble(meta: list[tuple[int, str, int]], pieces: Iterable[tuple[str, float]],
              opts: SpmOptions) -> list[tuple[str, float, int]]:
    """The vocabulary in id order, as sentencepiece assembles it: meta pieces (``<unk>``, ``<s>``,
    user-defined, ...) at their ids with score 0, trained pieces (type NORMAL) in the free ids in
    order. Raises when the pieces run out before ``vocab_size`` under ``hard_vocab_limit``.

    >>> _assemble([(0, "<unk>", 2)], [("a", -1.0), ("b", -2.0)], SpmOptions(vocab_size=3))
    [('<unk>', 0.0, 2), ('a', -1.0, 1), ('b', -2.0, 1)]
    """
    by_id = {i: (p, t) for i, p, t in meta}
    out: list[tuple[str, float, int]] = []
    rest = iter(pieces)
    for i in range(opts.vocab_size):
        if i in by_id:
            out.append((by_id[i][0], 0.0, by_id[i][1]))
            continue
        nxt = next(rest, None)
        if nxt is None:
            break
        out.append((nxt[0], nxt[1], 1))
    if opts.hard_vocab_limit and len(out) != opts.vocab_size:
        raise ValueError(f"Vocabulary size too high ({opts.vocab_size}): this corpus gives at most {len(out)} "
                         "pieces. Lower vocab_size or set hard_vocab_limit=False")
    return out


def _select(lines: Iterable[str], opts: SpmOptions, seed: int) -> list[str]:
    """``input_sentence_size``: like sentencepiece, count only lines it would load (non-empty, not
    longer than ``max_sentence_length`` bytes, without U+2585), then keep the first N or a sample.

    The input is read once, as a stream; only the kept lines are held (a reservoir of N with
    ``shuffle_input_sentence``), so a corpus far larger than memory can be sampled. How many lines
    were seen, loadable and kept is logged (INFO), since the rest are dropped.
    """
    if opts.input_sentence_size <= 0:
        return list(lines)

    def loadable(line: str) -> bool:
        body = line[:-1] if line.endswith("\n") else line
        return bool(body) and "\u2585" not in body and len(body.encode("utf-8")) <= opts.max_sentence_length

    seen = [0]

    def counted(it: Iterable[str]) -> Iterable[str]:
        for line in it:
            seen[0] += 1
            yield line

    usable = (line for line in counted(lines) if loadable(line))
    if not opts.shuffle_input_sentence:
        out = []
        for line in usable:
            out.append(line)
            if len(out) >= opts.input_sentence_size:
                break
        log.info("input_sentence_size=%d: kept the first %d loadable lines (read %d lines, stopped there)",
                 opts.input_sentence_size, len(out), seen[0])
        return out
    from corpora import sample_lines
    kept = list(sample_lines(usable, opts.input_sentence_size, seed=seed))
    log.info("input_sentence_size=%d: kept %d of the %d lines seen (reservoir sample, seed %d)",
             opts.input_sentence_size, len(kept), seen[0], seed)
    return kept


def train_spm_bpe(
    lines: Iterable[str],
    trainer: SpmBpeTrainer,
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> SpmModelFile:
    """Trains SentencePiece-compatible BPE; returns the ``.model`` content (write it with
    :func:`subword.formats.spm.write_model`).

    Lines longer than ``max_sentence_length`` bytes are skipped as sentencepiece does; we log a
    warning with their number (sentencepiece only logs at INFO level).

    Raises:
        ValueError: no usable line, ``vocab_size`` too small for the characters and reserved
            pieces, or (with ``hard_vocab_limit``) too large for what the corpus allows.

    >>> m = train_spm_bpe(["ab ab ab"], SpmBpeTrainer(vocab_size=7, normalization_rule_name="identity"))
    >>> [(p, s) for p, s, _ in m.pieces[3:]]
    [('ab', -0.0), ('a', -1.0), ('b', -2.0), ('▁', -3.0)]
    """
    from subword import _core

    selected = _select(lines, trainer, trainer.seed)
    if trainer.input_sentence_size and not selected:
        raise ValueError(f"no usable line to train on after selecting input_sentence_size="
                         f"{trainer.input_sentence_size} lines: every line is empty, longer than "
                         f"max_sentence_length={trainer.max_sentence_length} bytes, or contains U+2585")
    bad = next((i for i, line in enumerate(selected) if not isinstance(line, str)), None)
    if bad is not None:
        raise TypeError(f"lines[{bad}] must be str, got {type(selected[bad]).__name__}")
    if trainer.engine == "reference":
        from subword.reference.spm_bpe import train as reference_train
        pieces, stats = reference_train(selected, trainer)
    else:
        pieces, stats = _core.train_spm_bpe(selected, trainer.spec_json(), progress, trainer.threads)
    if stats["skipped_too_long"]:
        log.warning("skipped %d line(s) longer than max_sentence_length=%d bytes (sentencepiece skips them "
                    "silently)", stats["skipped_too_long"], trainer.max_sentence_length)
    if stats["skipped_unk_char"]:
        log.warning("skipped %d line(s) containing the reserved character U+2585", stats["skipped_unk_char"])
    if stats["sentences"] == 0:
        raise ValueError("no usable line to train on (all empty, too long, or skipped)")
    from subword.trainers import warn_short_vocabulary

    warn_short_vocabulary(len(pieces), trainer.vocab_size, "every word of the corpus is a single piece already "
                          "(no pair is left to merge; hard_vocab_limit is off)")
    model = SpmModelFile(
        pieces=[(p, float(s), int(t)) for p, s, t in pieces],
        model_type=MODEL_TYPES["bpe"],
        trainer_spec=trainer.trainer_spec("bpe") | {"vocab_size": len(pieces)},
        normalizer_spec=trainer.normalizer_spec(),
    )
    return model


class SpmBpeTokenizer:
    """Deprecated alias, kept for one release: use ``Tokenizer.from_file("x.model")`` (or
    :func:`subword.formats.spm.tokenizer_from_model`), whose SentencePiece BPE pipeline this wraps.

    Encodes and decodes a SentencePiece BPE model (ours or sentencepiece's ``.model``) as
    ``sentencepiece.SentencePieceProcessor`` does (same ids; tests compare them on real text).

    >>> m = train_spm_bpe(["low lower lowest"] * 3, SpmBpeTrainer(vocab_size=20, hard_vocab_limit=False))
    >>> tok = SpmBpeTokenizer(m)
    >>> [tok.id_to_piece(i) for i in tok.encode("lowest low")]
    ['▁lowest', '▁low']
    >>> tok.decode(tok.encode("lowest  low"))
    'lowest low'
    """

    def __init__(self, model: SpmModelFile) -> None:
        from subword.formats.spm import tokenizer_from_model

        if model.model_type != MODEL_TYPES["bpe"]:
            raise ValueError("SpmBpeTokenizer needs a BPE model (model_type 2); Unigram models: see subword.unigram")
        self.model = model
        self.tokenizer = tokenizer_from_model(model)

    @classmethod
    def from_file(cls, path: str | Any) -> SpmBpeTokenizer:
        """Loads a ``.model`` file (raises :class:`subword.formats.spm.SpmFormatError` on a bad file)."""
        from subword.formats.spm import read_model

        return cls(read_model(path))

    def encode(self, text: str) -> list[int]:
        """Ids of ``text``."""
        return self.tokenizer.encode(text).ids

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        """Ids of each text (parallel)."""
        return self.tokenizer.encode_batch_ids(list(texts))

    def normalize(self, text: str) -> str:
        """The normalized text (with ``▁``), as the model sees it."""
        return self.tokenizer._native().normalize(text)

    def id_to_piece(self, i: int) -> str:
        """The piece of id ``i``."""
        return self.model.pieces[i][0]

    def piece_to_id(self, piece: str) -> int | None:
        """The id of ``piece``, or None."""
        return self.tokenizer.token_to_id(piece)

    def decode(self, ids: list[int]) -> str:
        """Text of ``ids`` as sentencepiece decodes it."""
        return self.tokenizer.decode(ids)
