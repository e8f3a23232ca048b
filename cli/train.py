"""``subword train ALGORITHM [INPUT...] -o OUT``: train a tokenizer from text.

The command dispatches through the trainer registry (:func:`subword.trainers.trainer_class`): the
algorithm and ``--compat`` pick one options class, whose fields are the training options (generated
by :mod:`cli.trainer_options` from all the registry's classes). An option given on the command line
that the chosen class does not have, or that its rules do not use, is refused (exit 2) rather than
dropped. This module adds what is about the *input* (which files, how much of them, how to decode
them) and the output file, and checks the results a user would otherwise misread: an empty input,
an input without words, a vocabulary smaller than asked for.
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
from cli.corpus import builtin_corpus
from cli.progress import ProgressReporter, resolve_mode
from cli.trainer_options import add_registry_options, build_trainer, registry_fields, trainer_option_specs
from subword.spm import SpmBpeTrainer
from subword.trainers import BpeTrainer, ByteLevelBpeTrainer, WordPieceTrainer, algorithms, trainer_class
from subword.unigram import UnigramTrainer

__all__ = ["train_command", "ByteSize"]

logger = logging.getLogger("cli")

#: Every options class of the registry, labelled as the help text names them.
_CLASSES: dict[str, type] = {
    "bpe": BpeTrainer, "byte-bpe": ByteLevelBpeTrainer, "wordpiece": WordPieceTrainer,
    "bpe --compat spm": SpmBpeTrainer, "unigram": UnigramTrainer,
}
_FIELDS = registry_fields(_CLASSES)
#: Options of other tools that users reach for, and ours that mean the same.
_SPELLED_ELSEWHERE = {"unk_token": "--unk-piece", "unk_piece": "--unk-token", "threads": "--num-threads"}


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
  subword train wordpiece corpus.txt --criterion frequency -o hf.json  # = HF's WordPieceTrainer
  subword train wordpiece corpus.txt --criterion frequency --no-lowercase -o cased.json
  subword train bpe corpus.txt --compat spm --vocab-size 8000 -o spm.model   # = sentencepiece's BPE
  subword train unigram corpus.txt --vocab-size 8000 -o uni.model   # = sentencepiece's Unigram
  subword train unigram corpus.txt --character-coverage 1.0 --num-threads 16 -o uni.model
  subword train unigram corpus.txt --vocab-size 8000 -o uni.json    # HF UnigramTrainer's rules, tokenizer.json
"""


@click.command("train", epilog=EPILOG)
@click.argument("algorithm", type=click.Choice(algorithms()), metavar="{" + "|".join(algorithms()) + "}")
@click.argument("inputs", nargs=-1, metavar="[INPUT]...")
@click.option(
    "-o", "--output", required=True,
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Where to write the tokenizer (written atomically): NAME.json (HF tokenizer.json), NAME.model "
         "(SentencePiece, for --compat spm and unigram), NAME.tiktoken (byte-bpe rank file, written only "
         "when tiktoken would give the same ids).",
)
@click.option(
    "--compat", type=click.Choice(["hf", "spm"]), default=None,
    help="Whose rules to follow: hf (HF tokenizers) or spm (sentencepiece; bpe and unigram). Default: hf, "
         "except unigram, where -o NAME.model means spm and NAME.json means hf.",
)
@add_registry_options(_CLASSES)

@click.option("--from-counts", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Train from a word-counts file made by `subword count` (bpe, byte-bpe, wordpiece; no INPUT).")
@click.option("--min-count", type=click.IntRange(min=1), metavar="N",
              help="With --from-counts: skip the words counted fewer than N times (less memory; the result "
                   "differs from training on every word, unlike --min-frequency, whose leaving-out is exact).")
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
    compat: str | None,
    max_lines: int | None,
    max_bytes: int | None,
    sample: int | None,
    jsonl_field: str | None,
    encoding_errors: str,
    progress_mode: str,
    quiet: bool,
    from_counts: Path | None = None,
    min_count: int | None = None,
    **trainer_values: Any,
) -> None:
    """Train a tokenizer: BPE (whitespace words), byte-level BPE (GPT-2 style), WordPiece (BERT style) or
    Unigram (SentencePiece's, or HF's with -o NAME.json).

    wordpiece uses BERT's normalizer and pre-tokenizer, BERT's special tokens unless --special-token is
    given, the ## prefix, and --criterion likelihood: each merge is the one that most raises the training
    text's likelihood under a unigram model (Schuster & Nakajima); pmi is the HF course's score
    count(ab)/(count(a)count(b)), frequency HF's WordPieceTrainer.
    bpe --compat spm and unigram follow sentencepiece 0.2.3 (same pieces, ids and scores) with its
    option names. An option the chosen algorithm does not have is refused.

    INPUT is files, globs, directories or - for stdin; .gz, .bz2 and .xz are decompressed.
    Directories are read recursively in sorted order, skipping hidden entries and (with a warning)
    files that are not UTF-8 text. Lines keep their line endings, as HF tokenizers'
    train_from_files reads them (sentencepiece's trainers read lines without them).
    Without INPUT, trains on the built-in corpus (the docstrings and comments of the running
    Python's standard library, extracted once and cached).
    """
    say = (lambda msg: None) if quiet else (lambda msg: click.echo(msg, err=True))
    if not quiet:
        # Show what the reader and the trainer say they are doing (e.g. building the built-in corpus).
        for name in ("corpora", "cli"):
            named = logging.getLogger(name)
            named.setLevel(min(logging.INFO, named.getEffectiveLevel()))

    trainer = _choose_trainer(algorithm, compat, output, trainer_values, sample)
    if not output.parent.exists():
        raise click.BadParameter(f"directory {str(output.parent)!r} does not exist", param_hint="'-o' / '--output'")

    if min_count is not None and from_counts is None:
        raise click.UsageError("--min-count applies to training from a counts file: give --from-counts FILE")
    if from_counts is not None:
        from cli.count import train_from_counts_file

        if any(v is not None for v in (max_lines, max_bytes, sample, jsonl_field)):
            raise click.UsageError("--max-lines, --max-bytes, --sample and --jsonl-field are about reading text; "
                                   "with --from-counts, apply them when counting")
        train_from_counts_file(algorithm, trainer, from_counts, inputs, output, say,
                               ProgressReporter(resolve_mode(progress_mode, quiet), units={}),  # type: ignore[arg-type]
                               min_count=min_count or 0)
        return
    if inputs:
        sources: list[str] = list(inputs)
    else:
        path = builtin_corpus(progress_mode, quiet)  # type: ignore[arg-type]
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
        lines = corpora.sample_lines(reader, sample, seed=trainer_values.get("seed") or 0)
    watch = _Watch(lines)

    started = time.monotonic()
    try:
        tokenizer = trainer.train(watch, progress=_without_stage(reporter, "read"))
    except corpora.CorpusError:
        raise
    except (ValueError, RuntimeError) as exc:
        # Say "empty input" plainly if that is why the trainer gave up.
        _check_input(reader, watch, sources)
        raise click.ClickException(f"training failed: {_in_flags(str(exc))}") from exc
    finally:
        reporter.close()
    _check_input(reader, watch, sources)

    reached = tokenizer.get_vocab_size(with_added_tokens=True)
    if reached > trainer.vocab_size:
        # The trainers refuse this themselves; kept so the promise "never more than asked" holds here too.
        raise click.ClickException(
            f"--vocab-size {trainer.vocab_size} is smaller than the alphabet plus special tokens of this corpus: "
            f"the minimum is {reached} (or lower --limit-alphabet)"
        )
    # (A vocabulary smaller than asked is reported by the trainer's own warning, one line on stderr.)
    tokenizer.provenance["input"] = {
        "command": f"train {algorithm}",
        "sources": [str(s) for s in sources] if inputs else ["<builtin>"],
        "lines": watch.count,
        "bytes_read": reader.bytes_read,
        "truncated": reader.truncated,
        "max_lines": max_lines,
        "max_bytes": max_bytes,
        "sample": sample,
        "seed": trainer_values.get("seed") if sample is not None else None,
        "jsonl_field": jsonl_field,
        "encoding_errors": encoding_errors,
    }
    try:
        tokenizer.save(output)
    except ValueError as exc:
        raise click.ClickException(f"cannot write {output}: {exc}") from exc
    say(
        f"Wrote {output}: {_label(trainer)}, vocab size {reached}, trained on {watch.count:,} "
        f"line{'' if watch.count == 1 else 's'} "
        f"({reader.bytes_read / 1e6:.1f} MB) in {time.monotonic() - started:.1f} s."
    )


def _in_flags(message: str) -> str:
    """A trainer's message with its option names as this command spells them (sentencepiece's hard
    vocabulary limit names ``vocab_size`` and ``hard_vocab_limit=False``).

    >>> _in_flags("at most 18 pieces. Lower vocab_size or set hard_vocab_limit=False")
    'at most 18 pieces. Lower --vocab-size or pass --no-hard-vocab-limit (then it warns and writes them)'
    """
    return (message.replace("set hard_vocab_limit=False", "pass --no-hard-vocab-limit (then it warns and writes them)")
            .replace("Lower vocab_size", "Lower --vocab-size"))


def _label(trainer: Any) -> str:
    rules = {"SpmBpeTrainer": "SentencePiece BPE", "UnigramTrainer": "SentencePiece Unigram"}
    if isinstance(trainer, UnigramTrainer) and trainer.compat == "hf":
        return "HF Unigram"
    return rules.get(type(trainer).__name__, trainer.algorithm)


def _flag(field: str) -> str:
    return next((spec.flag for _, spec in _FIELDS.get(field, [])), "--" + field.replace("_", "-"))


def _choose_trainer(algorithm: str, compat: str | None, output: Path, values: dict[str, Any],
                    sample: int | None) -> Any:
    """The registry's options class for ``algorithm`` / ``--compat`` / the output kind, built from the
    options given on the command line; any other option given is refused, naming it."""
    ctx = click.get_current_context()
    given = [k for k in values if ctx.get_parameter_source(k) == click.core.ParameterSource.COMMANDLINE]
    suffix = output.suffix.lower()
    if algorithm == "unigram" and compat is None:
        if suffix not in (".model", ".json"):
            raise click.UsageError("train unigram writes NAME.model (sentencepiece's trainer) or NAME.json "
                                   "(HF UnigramTrainer's rules, an HF tokenizer.json)")
        compat = "spm" if suffix == ".model" else "hf"
    try:
        cls = trainer_class(algorithm, compat)
    except ValueError as exc:
        raise click.UsageError(f"--compat: {exc}") from None
    where = f"train {algorithm}" + (f" --compat {compat}" if compat and len(_compats(algorithm)) > 1 else "")
    base = cls(compat=compat) if compat and "compat" in cls.__dataclass_fields__ else cls()
    applicable = {spec.field for spec in trainer_option_specs(cls)}
    if hasattr(base, "applicable_fields"):
        applicable &= set(base.applicable_fields())
    seeded = sample is not None or bool(values.get("input_sentence_size"))
    if "seed" in given and not seeded:
        raise click.UsageError("--seed does nothing here: it seeds --sample (and --input-sentence-size)")
    for name in given:
        if name == "seed":
            continue  # --seed also seeds --sample, whatever the trainer
        if name not in applicable:
            other = _SPELLED_ELSEWHERE.get(name)
            if other and other.lstrip("-").replace("-", "_") in applicable:
                hint = f" (did you mean {other}?)"
            else:
                owners = [label for label, _ in _FIELDS.get(name, [])]
                hint = f" (it is an option of: {', '.join(owners)})" if owners else ""
            raise click.UsageError(f"{_flag(name)} does not apply to {where}{hint}")
    spm_rules = getattr(base, "compat", "hf") == "spm"
    if spm_rules and suffix != ".model":
        raise click.UsageError(f"{where} writes a SentencePiece model: give -o NAME.model "
                               "(convert it to tokenizer.json with `subword convert`)")
    if not spm_rules and suffix == ".model":
        raise click.UsageError(f"{where} follows HF's rules and writes a tokenizer.json, not a .model "
                               "(for sentencepiece's rules use --compat spm with bpe, or unigram)")
    if suffix == ".tiktoken" and cls is not ByteLevelBpeTrainer:
        raise click.UsageError("a .tiktoken rank file holds byte-level BPE only: use train byte-bpe")
    picked = {k: values[k] for k in given if k in applicable}
    if compat and "compat" in cls.__dataclass_fields__:
        picked["compat"] = compat
    return build_trainer(cls, picked)


def _compats(algorithm: str) -> list[str]:
    from subword.trainers import compats

    return compats(algorithm)


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
