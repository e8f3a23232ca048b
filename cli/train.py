"""``subword train {bpe,byte-bpe} [INPUT...] -o OUT``: train a tokenizer from text.

The training options come from :class:`subword.trainers.BpeTrainer` (see
:mod:`cli.trainer_options`); this module adds what is about the *input* (which files, how much of
them, how to decode them) and the output file, and checks the results a user would otherwise
misread: an empty input, an input without words, a vocabulary smaller than asked for.
"""

from __future__ import annotations

import logging
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import click

import corpora
from cli.progress import ProgressReporter, resolve_mode
from cli.trainer_options import add_trainer_options, build_trainer
from subword.formats.spm import write_model
from subword.spm import SpmBpeTrainer, SpmOptions, train_spm_bpe
from subword.trainers import BERT_SPECIAL_TOKENS, BpeTrainer, WordPieceTrainer, train_bpe, train_wordpiece
from subword.unigram import UnigramTrainer, train_unigram

__all__ = ["train_command", "ByteSize"]

logger = logging.getLogger("cli")

# byte-bpe starts from all 256 byte symbols (GPT-2's alphabet), so smaller vocabularies cannot exist.
_BYTE_ALPHABET = 256


class ByteSize(click.ParamType):
    """A size in bytes: ``5000``, ``64k``, ``100M``, ``1.5G`` (powers of 1000; ``Ki``/``Mi``/``Gi`` for 1024).

    >>> ByteSize().convert("100M", None, None)
    100000000
    >>> ByteSize().convert("2Ki", None, None)
    2048
    """

    name = "size"
    _UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]i?)?[bB]?\s*", str(value))
        if not match:
            self.fail(f"{value!r} is not a size (examples: 5000, 64k, 100M, 1.5G)", param, ctx)
        number, unit = match.group(1), (match.group(2) or "").lower()
        return int(float(number) * self._UNITS[unit])


class _Watch:
    """Passes lines through, noting how many there were and whether any held a non-space character.

    That tells "the input is empty" from "the input has only whitespace" after the (lazy) training
    pass, without reading the input twice.
    """

    def __init__(self, lines: Iterable[str]) -> None:
        self._lines = lines
        self.has_text = False
        self.count = 0

    def __iter__(self) -> Iterator[str]:
        for line in self._lines:
            self.count += 1
            if not self.has_text and line.strip():
                self.has_text = True
            yield line


def _without_stage(reporter: ProgressReporter, stage: str) -> Callable[[str, int, int | None], None]:
    """The reporter, minus one stage: the trainer's line-count "read" events, which the reader's
    byte-based "read" events (with a known total for files) replace."""

    def report(name: str, current: int, total: int | None) -> None:
        if name != stage:
            reporter(name, current, total)

    return report


EPILOG = """\b
Examples:
  subword train byte-bpe -o tok.json                   # built-in corpus, GPT-2 style
  subword train bpe data/*.txt --vocab-size 8000 -o tok.json
  subword train byte-bpe corpus.txt.gz --vocab-size 32000 \\
      --special-token "<|endoftext|>" -o tok.json
  subword train bpe docs.jsonl --jsonl-field text --sample 100000 --seed 1 -o tok.json
  zcat big.gz | subword train byte-bpe - --progress json -o tok.json
  subword train wordpiece corpus.txt --vocab-size 30522 -o bert.json   # BERT-style, likelihood merges
  subword train wordpiece corpus.txt --criterion frequency --no-lowercase -o cased.json
  subword train bpe corpus.txt --compat spm --vocab-size 8000 -o spm.model   # = sentencepiece's BPE
  subword train unigram corpus.txt --vocab-size 8000 -o uni.model   # = sentencepiece's Unigram
  subword train unigram corpus.txt --character-coverage 1.0 --num-threads 16 -o uni.model
  subword train unigram corpus.txt --vocab-size 8000 -o uni.json    # HF UnigramTrainer's rules, tokenizer.json
"""

# Options only WordPiece has (its BERT normalizer and merge criterion); refused for the BPE algorithms.
_WORDPIECE_ONLY = ("criterion", "lowercase", "strip_accents", "max_input_chars_per_word")


@click.command("train", epilog=EPILOG)
@click.argument("algorithm", type=click.Choice(["bpe", "byte-bpe", "wordpiece", "unigram"]),
                metavar="{bpe|byte-bpe|wordpiece|unigram}")
@click.argument("inputs", nargs=-1, metavar="[INPUT]...")
@click.option(
    "-o", "--output", required=True,
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Where to write the tokenizer (HF tokenizer.json; written atomically).",
)
@add_trainer_options(BpeTrainer)
@add_trainer_options(WordPieceTrainer, exclude=frozenset({"strip_accents", *BpeTrainer.__dataclass_fields__}))
@add_trainer_options(SpmOptions, exclude=frozenset({*BpeTrainer.__dataclass_fields__, *WordPieceTrainer.__dataclass_fields__}))
@add_trainer_options(UnigramTrainer, exclude=frozenset({*BpeTrainer.__dataclass_fields__,
                                                        *WordPieceTrainer.__dataclass_fields__,
                                                        *SpmOptions.__dataclass_fields__}))
@click.option(
    "--strip-accents/--no-strip-accents", "strip_accents", default=None,
    help="wordpiece: strip accents in the BERT normalizer (default: when lowercasing).",
)
@click.option("--from-counts", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Train from a word-counts file made by `subword count` (bpe, byte-bpe, wordpiece; no INPUT).")
@click.option("--max-lines", type=click.IntRange(min=1), help="Read only the first N lines of the input.")
@click.option("--max-bytes", type=ByteSize(), help="Read only this much of the input (e.g. 100M); lines are never cut.")
@click.option(
    "--sample", type=click.IntRange(min=1), metavar="N",
    help="Train on N lines drawn uniformly at random (reservoir sampling, seeded by --seed) from what is read.",
)
@click.option("--jsonl-field", metavar="FIELD", help="Inputs are JSON lines; train on this field (dots for nesting: meta.text).")
@click.option(
    "--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict",
    help="On bytes that are not UTF-8: stop with an error naming file and line, or replace them with U+FFFD.",
)
@click.option(
    "--progress", "progress_mode", type=click.Choice(["auto", "bar", "json", "none"]), default="auto",
    help="Progress on stderr: a bar on a terminal (auto), JSON lines {stage, current, total} for logs, or none.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress and no informational messages (warnings and errors still show).")
def train_command(
    algorithm: str,
    inputs: tuple[str, ...],
    output: Path,
    max_lines: int | None,
    max_bytes: int | None,
    sample: int | None,
    jsonl_field: str | None,
    encoding_errors: str,
    progress_mode: str,
    quiet: bool,
    from_counts: Path | None = None,
    **trainer_values: Any,
) -> None:
    """Train a BPE (whitespace words), byte-level BPE (GPT-2 style) or WordPiece (BERT style) tokenizer.

    wordpiece uses BERT's normalizer and pre-tokenizer, BERT's special tokens unless --special-token is
    given, the ## prefix, and likelihood merges (--criterion frequency: HF's WordPieceTrainer).

    INPUT is files, globs, directories or - for stdin; .gz, .bz2 and .xz are decompressed.
    Directories are read recursively in sorted order, skipping hidden entries and (with a warning)
    files that are not UTF-8 text. Lines keep their line endings, as HF tokenizers'
    train_from_files reads them.
    Without INPUT, trains on the built-in corpus (the docstrings and comments of the running
    Python's standard library, extracted once and cached).
    """
    say = (lambda msg: None) if quiet else (lambda msg: click.echo(msg, err=True))
    byte_level = algorithm == "byte-bpe"
    if not quiet:
        # Show what the reader and the trainer say they are doing (e.g. building the built-in corpus).
        for name in ("corpora", "cli"):
            named = logging.getLogger(name)
            named.setLevel(min(logging.INFO, named.getEffectiveLevel()))

    wordpiece = algorithm == "wordpiece"
    spm_bpe = algorithm == "bpe" and trainer_values.get("compat") == "spm"
    unigram = algorithm == "unigram"
    unigram_hf = unigram and output.suffix == ".json"  # HF UnigramTrainer rules, HF tokenizer.json
    _check_unigram_options(algorithm, trainer_values, output)
    _check_spm_options(algorithm, spm_bpe or (unigram and not unigram_hf), trainer_values, output)
    if unigram_hf:
        trainer = build_trainer(BpeTrainer, {k: v for k, v in trainer_values.items()
                                             if k in BpeTrainer.__dataclass_fields__ and k != "compat"})
    elif unigram:
        trainer = _unigram_trainer(trainer_values)
    elif spm_bpe:
        trainer = _spm_trainer(trainer_values)
    elif wordpiece:
        values = {k: v for k, v in trainer_values.items() if v is not None or k == "strip_accents"}
        if not values.get("special_tokens"):
            values["special_tokens"] = list(BERT_SPECIAL_TOKENS)
        trainer = build_trainer(WordPieceTrainer, values)
    else:
        ctx = click.get_current_context()
        given = [k for k in _WORDPIECE_ONLY
                 if ctx.get_parameter_source(k) == click.core.ParameterSource.COMMANDLINE]
        if given:
            raise click.UsageError(f"--{given[0].replace('_', '-')} applies to wordpiece only")
        trainer = build_trainer(BpeTrainer, trainer_values)
    _check_vocab_size(trainer, byte_level)
    if not output.parent.exists():
        raise click.BadParameter(f"directory {str(output.parent)!r} does not exist", param_hint="'-o' / '--output'")

    if from_counts is not None:
        from cli.count import train_from_counts_file

        if any(v is not None for v in (max_lines, max_bytes, sample, jsonl_field)):
            raise click.UsageError("--max-lines, --max-bytes, --sample and --jsonl-field are about reading text; "
                                   "with --from-counts, apply them when counting")
        train_from_counts_file(algorithm, trainer, from_counts, inputs, output, say,
                               ProgressReporter(resolve_mode(progress_mode, quiet), units={}))  # type: ignore[arg-type]
        return
    if inputs:
        sources: list[str] = list(inputs)
    else:
        path = corpora.builtin_corpus()
        say(
            f"No INPUT given: training on the built-in corpus ({path.stat().st_size / 1e6:.1f} MB of "
            f"Python {sys.version_info[0]}.{sys.version_info[1]} standard-library docstrings and comments, {path})."
        )
        sources = [str(path)]

    mode = resolve_mode(progress_mode, quiet)  # type: ignore[arg-type]
    reporter = ProgressReporter(mode, units={"read": "bytes"})
    try:
        reader = corpora.CorpusReader(
            sources, jsonl_field=jsonl_field, errors=encoding_errors,  # type: ignore[arg-type]
            max_bytes=max_bytes, max_lines=max_lines,
            progress=lambda done, total: reporter("read", done, total),
        )
    except corpora.CorpusError as exc:
        # A missing file or a pattern matching nothing is a bad argument, like click.Path(exists=True).
        raise click.BadParameter(str(exc), param_hint="INPUT") from exc

    lines: Iterable[str] = reader
    if sample is not None:
        lines = corpora.sample_lines(reader, sample, seed=trainer.seed)
    watch = _Watch(lines)

    started = time.monotonic()
    if unigram_hf:
        _train_unigram_hf(watch, trainer, trainer_values, output, reporter, reader, sources, say)
        return
    if unigram:
        _train_unigram(watch, trainer, output, reporter, reader, sources, say)
        return
    if spm_bpe:
        _train_spm(watch, trainer, output, reporter, reader, sources, say)
        return
    try:
        if wordpiece:
            tokenizer = train_wordpiece(watch, trainer, progress=_without_stage(reporter, "read"))
        else:
            tokenizer = train_bpe(watch, trainer, byte_level=byte_level, progress=_without_stage(reporter, "read"))
    except corpora.CorpusError:
        raise
    except (ValueError, RuntimeError) as exc:
        # Say "empty input" plainly if that is why the trainer gave up.
        _check_input(reader, watch, sources)
        raise click.ClickException(f"training failed: {exc}") from exc
    finally:
        reporter.close()
    _check_input(reader, watch, sources)

    reached = tokenizer.get_vocab_size(with_added_tokens=True)
    if reached > trainer.vocab_size:
        # The trainer refuses this itself; kept so the promise "never more than asked" holds here too.
        raise click.ClickException(
            f"--vocab-size {trainer.vocab_size} is smaller than the alphabet plus special tokens of this corpus: "
            f"the minimum is {reached} (or lower --limit-alphabet)"
        )
    # (A vocabulary smaller than asked is reported by the trainer's own warning, shown on stderr.)
    tokenizer.provenance["input"] = {
        "command": f"train {algorithm}",
        "sources": [str(s) for s in sources] if inputs else ["<builtin>"],
        "lines": watch.count,
        "bytes_read": reader.bytes_read,
        "truncated": reader.truncated,
        "max_lines": max_lines,
        "max_bytes": max_bytes,
        "sample": sample,
        "jsonl_field": jsonl_field,
        "encoding_errors": encoding_errors,
    }
    tokenizer.save(output)
    say(
        f"Wrote {output}: {algorithm}, vocab size {reached}, trained on {watch.count:,} "
        f"line{'' if watch.count == 1 else 's'} "
        f"({reader.bytes_read / 1e6:.1f} MB) in {time.monotonic() - started:.1f} s."
    )


# SentencePiece options (subword.spm.SpmOptions) that only `train bpe --compat spm` takes.
_SPM_ONLY = tuple(f for f in SpmOptions.__dataclass_fields__
                  if f not in BpeTrainer.__dataclass_fields__ and f not in WordPieceTrainer.__dataclass_fields__)
# HF BpeTrainer options that SentencePiece's BPE does not have.
_HF_ONLY = ("min_frequency", "special_tokens", "initial_alphabet", "limit_alphabet", "max_token_length",
            "continuing_subword_prefix", "end_of_word_suffix", "unk_token", "engine")


def _check_spm_options(algorithm: str, spm_bpe: bool, values: dict[str, Any], output: Path) -> None:
    """Refuses options given on the command line that the chosen trainer does not have."""
    ctx = click.get_current_context()
    given = {k for k in values if ctx.get_parameter_source(k) == click.core.ParameterSource.COMMANDLINE}
    if spm_bpe:
        wrong = [k for k in (*_HF_ONLY, *_WORDPIECE_ONLY) if k in given and k != "engine"]
        if wrong:
            raise click.UsageError(f"--{wrong[0].replace('_', '-')} is not a SentencePiece option (--compat spm)")
        if output.suffix != ".model":
            raise click.UsageError("--compat spm writes a SentencePiece model: give -o NAME.model "
                                   "(convert it to tokenizer.json with `subword convert`)")
        return
    wrong = [k for k in _SPM_ONLY if k in given]
    if wrong:
        raise click.UsageError(f"--{wrong[0].replace('_', '-')} applies to SentencePiece training only "
                               f"(train bpe --compat spm)")


def _spm_trainer(values: dict[str, Any]) -> SpmBpeTrainer:
    ctx = click.get_current_context()
    picked = {k: v for k, v in values.items() if k in SpmBpeTrainer.__dataclass_fields__}
    if ctx.get_parameter_source("vocab_size") != click.core.ParameterSource.COMMANDLINE:
        picked["vocab_size"] = SpmOptions.vocab_size  # sentencepiece's default, 8000
    return build_trainer(SpmBpeTrainer, picked)


def _train_to_model_file(train: Callable[[Any], Any], label: str, watch: Any, output: Path, reporter: Any,
                         reader: Any, sources: list[str], say: Callable[[str], None]) -> None:
    """Runs a SentencePiece-style trainer (`train(progress) -> SpmModelFile`) and writes its .model file."""
    try:
        model = train(_without_stage(reporter, "read"))
    except (ValueError, RuntimeError) as exc:
        _check_input(reader, watch, sources)
        raise click.ClickException(f"training failed: {exc}") from exc
    finally:
        reporter.close()
    try:
        write_model(output, model)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    say(f"Wrote {output}: {label}, vocab size {len(model.pieces)}, trained on {watch.count:,} lines.")


def _train_spm(watch: Any, trainer: SpmBpeTrainer, output: Path, reporter: Any, reader: Any,
               sources: list[str], say: Callable[[str], None]) -> None:
    """`train bpe --compat spm`: sentencepiece's BPE, written as a .model file."""
    _train_to_model_file(lambda progress: train_spm_bpe(watch, trainer, progress=progress), "SentencePiece BPE",
                         watch, output, reporter, reader, sources, say)


# Options only `train unigram` has (subword.unigram.UnigramTrainer beyond SentencePiece's shared ones).
_UNIGRAM_ONLY = tuple(f for f in UnigramTrainer.__dataclass_fields__
                      if f not in SpmOptions.__dataclass_fields__ and f not in BpeTrainer.__dataclass_fields__)


def _check_unigram_options(algorithm: str, values: dict[str, Any], output: Path) -> None:
    """Refuses Unigram-only options for the other algorithms; for unigram, the output suffix decides the
    rules (.model: sentencepiece, .json: HF) and --compat must agree with it."""
    ctx = click.get_current_context()
    given = {k for k in values if ctx.get_parameter_source(k) == click.core.ParameterSource.COMMANDLINE}
    if algorithm != "unigram":
        wrong = [k for k in _UNIGRAM_ONLY if k in given]
        if wrong:
            raise click.UsageError(f"--{wrong[0].replace('_', '-')} applies to train unigram only")
        return
    if output.suffix not in (".model", ".json"):
        raise click.UsageError("train unigram writes NAME.model (sentencepiece's trainer) or NAME.json "
                               "(HF UnigramTrainer's rules, an HF tokenizer.json)")
    want = "spm" if output.suffix == ".model" else "hf"
    if "compat" in given and values.get("compat") != want:
        raise click.UsageError(f"--compat {values.get('compat')} does not match -o {output.name}: .model is "
                               "sentencepiece's Unigram (compat spm), .json is HF's (compat hf)")
    if want == "hf":
        wrong = [k for k in ("min_frequency", "initial_alphabet", "limit_alphabet", "max_token_length",
                             "continuing_subword_prefix", "end_of_word_suffix", "num_threads") if k in given]
        if wrong:
            raise click.UsageError(f"--{wrong[0].replace('_', '-')} is not an option of HF's UnigramTrainer")


def _unigram_trainer(values: dict[str, Any]) -> UnigramTrainer:
    ctx = click.get_current_context()
    picked = {k: v for k, v in values.items() if k in UnigramTrainer.__dataclass_fields__ and v is not None}
    if ctx.get_parameter_source("vocab_size") != click.core.ParameterSource.COMMANDLINE:
        picked["vocab_size"] = SpmOptions.vocab_size  # sentencepiece's default, 8000
    if ctx.get_parameter_source("engine") != click.core.ParameterSource.COMMANDLINE:
        picked.pop("engine", None)
    return build_trainer(UnigramTrainer, picked)


def _train_unigram(watch: Any, trainer: UnigramTrainer, output: Path, reporter: Any, reader: Any,
                   sources: list[str], say: Callable[[str], None]) -> None:
    """`train unigram`: sentencepiece's Unigram, written as a .model file."""
    lines = (line.rstrip("\r\n") for line in watch)
    _train_to_model_file(lambda progress: train_unigram(lines, trainer, progress=progress), "SentencePiece Unigram",
                         watch, output, reporter, reader, sources, say)


def _train_unigram_hf(watch: Any, trainer: BpeTrainer, values: dict[str, Any], output: Path, reporter: Any,
                      reader: Any, sources: list[str], say: Callable[[str], None]) -> None:
    """`train unigram -o NAME.json`: HF UnigramTrainer's rules on Metaspace words, an HF tokenizer.json."""
    import json
    import os
    import tempfile

    from subword.unigram import train_unigram_hf

    try:
        data = train_unigram_hf(
            watch, vocab_size=trainer.vocab_size, unk_token=trainer.unk_token or "<unk>",
            special_tokens=trainer.special_tokens or ["<unk>"], shrinking_factor=values["shrinking_factor"],
            n_sub_iterations=values["num_sub_iterations"], seed_size=values["seed_sentencepiece_size"],
            engine=trainer.engine,
        )
    except (ValueError, RuntimeError) as exc:
        _check_input(reader, watch, sources)
        raise click.ClickException(f"training failed: {exc}") from exc
    finally:
        reporter.close()
    fd, tmp = tempfile.mkstemp(dir=output.parent, prefix=output.name + ".", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    os.replace(tmp, output)
    say(f"Wrote {output}: HF Unigram tokenizer.json, vocab size {len(data['model']['vocab'])}, "
        f"trained on {watch.count:,} lines.")


def _check_vocab_size(trainer: Any, byte_level: bool) -> None:
    """Refuses a byte-level vocabulary that cannot hold its own alphabet (before any work is done)."""
    if not byte_level:
        return
    specials = len(dict.fromkeys(trainer.special_tokens))
    minimum = _BYTE_ALPHABET + specials
    if trainer.vocab_size < minimum:
        raise click.BadParameter(
            f"{trainer.vocab_size} is smaller than the byte-level alphabet ({_BYTE_ALPHABET} bytes"
            f"{f' + {specials} special tokens' if specials else ''}); the minimum is {minimum}",
            param_hint="'--vocab-size'",
        )


def _check_input(reader: corpora.CorpusReader, watch: _Watch, sources: list[str]) -> None:
    """Turns an empty or word-less input into a clear error instead of a useless tokenizer."""
    names = ", ".join(sources) if len(sources) <= 3 else f"{', '.join(sources[:3])}, ... ({len(sources)} inputs)"
    if reader.lines_read == 0 or watch.count == 0:
        why = " (--max-bytes stopped before the first whole line)" if reader.truncated else ""
        raise click.ClickException(f"the input is empty: no lines read from {names}{why}")
    if not watch.has_text:
        raise click.ClickException(
            f"the input has no words: its {watch.count:,} lines hold only whitespace ({names})"
        )
