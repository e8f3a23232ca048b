"""``subword count [INPUT...] -o counts.swc``: count the words a trainer would see, to merge and train later.

Three ways to run: one process (optionally within ``--max-memory``, spilling sorted runs next to the
output), on a Dask cluster (``--dask ADDRESS``), or ``--merge`` of ``.swc`` files. ``subword train
... --from-counts`` trains from the result (:func:`train_from_counts_file`, called by ``cli/train.py``).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

import corpora
from cli.corpus import builtin_corpus
from cli.progress import ProgressReporter, resolve_mode
from cli.train import ByteSize

__all__ = ["count_command", "train_from_counts_file"]

logger = logging.getLogger("cli")

# Short names for the pre-tokenizers and normalizers people count with; any HF JSON object works too.
_PRE_TOKENIZERS: dict[str, dict[str, Any]] = {
    "whitespace": {"type": "Whitespace"},
    "whitespace-split": {"type": "WhitespaceSplit"},
    "byte-level": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    "bert": {"type": "BertPreTokenizer"},
    "metaspace": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
}
_NORMALIZERS: dict[str, dict[str, Any] | None] = {
    "none": None,
    "nfc": {"type": "NFC"},
    "nfkc": {"type": "NFKC"},
    "lowercase": {"type": "Lowercase"},
    "bert": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None,
             "lowercase": True},
    "bert-cased": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                   "strip_accents": None, "lowercase": False},
}

EPILOG = """\b
Examples:
  subword count shard1.txt -o s1.swc --for byte-bpe
  subword count shard2.txt -o s2.swc --for byte-bpe
  subword count --merge s1.swc s2.swc -o all.swc
  subword train byte-bpe --from-counts all.swc --vocab-size 32000 -o tok.json
  subword count big/*.txt --for byte-bpe --max-memory 2G -o all.swc      # bounded memory
  subword count --dask tcp://scheduler:8786 /shared/*.txt --for wordpiece -o all.swc
  subword count data.txt --like tok.json -o counts.swc                   # a tokenizer's pipeline
  subword count data.txt --pre-tokenizer whitespace-split --normalizer nfkc -o c.swc
"""


def _component(value: str, table: dict[str, Any], hint: str) -> Any:
    if value.lstrip().startswith("{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise click.BadParameter(f"not valid JSON: {exc}", param_hint=hint) from None
    if value not in table:
        raise click.BadParameter(f"{value!r}: use one of {', '.join(table)} or an HF JSON object", param_hint=hint)
    return table[value]


def _pipeline(for_: str | None, like: Path | None, pre: str | None, norm: str | None) -> dict[str, Any]:
    from subword.counts import make_pipeline, pipeline_for

    chosen = [name for name, v in (("--for", for_), ("--like", like), ("--pre-tokenizer", pre)) if v is not None]
    if len(chosen) != 1:
        raise click.UsageError("say whose words to count: exactly one of --for, --like or --pre-tokenizer "
                               f"(got {', '.join(chosen) or 'none'})")
    if norm is not None and pre is None:
        raise click.UsageError("--normalizer goes with --pre-tokenizer (--for and --like bring their own)")
    try:
        if for_ is not None:
            return pipeline_for(for_)
        if like is not None:
            return pipeline_for(like)
        return make_pipeline(_component(norm, _NORMALIZERS, "'--normalizer'") if norm else None,
                             _component(pre or "", _PRE_TOKENIZERS, "'--pre-tokenizer'"))
    except click.ClickException:
        raise
    except (ValueError, TypeError) as exc:
        raise click.BadParameter(str(exc), param_hint="'--like'" if like else "'--pre-tokenizer'") from exc


@click.command("count", epilog=EPILOG)
@click.argument("inputs", nargs=-1, metavar="[INPUT]...")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="The word-counts file to write (.swc; written atomically).")
@click.option("--for", "for_", type=click.Choice(["bpe", "byte-bpe", "wordpiece"]),
              help="Count the words this `subword train` algorithm sees (its default pipeline).")
@click.option("--like", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Count with the normalizer and pre-tokenizer of this tokenizer file.")
@click.option("--pre-tokenizer", "pre", metavar="NAME|JSON",
              help=f"The pre-tokenizer: {', '.join(_PRE_TOKENIZERS)}, or an HF JSON object.")
@click.option("--normalizer", "norm", metavar="NAME|JSON",
              help=f"With --pre-tokenizer, the normalizer: {', '.join(_NORMALIZERS)}, or an HF JSON object.")
@click.option("--merge", is_flag=True, help="INPUTs are .swc files: add their counts (same pipeline only).")
@click.option("--dask", "dask_address", metavar="ADDRESS",
              help="Count on the Dask cluster whose scheduler is here (tcp://host:8786); workers must see the files.")
@click.option("--dask-timeout", type=click.FloatRange(min=0.1), default=10.0,
              help="Seconds to wait for the Dask scheduler before giving up.")
@click.option("--chunk-size", type=ByteSize(), default="64Mi",
              help="With --dask: bytes of input per task (files are cut at line boundaries).")
@click.option("--max-memory", type=ByteSize(),
              help="Budget for the word table (e.g. 2G): past it, sorted runs spill next to the output and are "
                   "merged at the end; the counts stay exact, and peak memory stays within the budget plus "
                   "about 100 MiB.")
@click.option("--min-count", type=click.IntRange(min=1), default=1,
              help="Leave out words counted fewer times (smaller file; training on it differs from the full text).")
@click.option("--threads", type=click.IntRange(min=1), help="Counting threads (default: all cores).")
@click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict",
              help="On bytes that are not UTF-8: stop with an error, or replace them with U+FFFD.")
@click.option("--progress", "progress_mode", type=click.Choice(["auto", "bar", "json", "none"]), default="auto",
              help="Progress on stderr: a bar on a terminal (auto), JSON lines, or none.")
@click.option("-q", "--quiet", is_flag=True, help="No progress and no informational messages.")
def count_command(inputs: tuple[str, ...], output: Path, for_: str | None, like: Path | None, pre: str | None,
                  norm: str | None, merge: bool, dask_address: str | None, dask_timeout: float, chunk_size: int,
                  max_memory: int | None, min_count: int, threads: int | None, encoding_errors: str,
                  progress_mode: str, quiet: bool) -> None:
    """Count the distinct words of a corpus (after normalizer and pre-tokenizer) into a .swc file.

    The counts of shards merge (--merge) into the counts of their concatenation, and `subword train
    ALGORITHM --from-counts FILE` trains the same tokenizer as on the text itself.

    INPUT is files, globs, directories or - for stdin, as for `subword train`; without INPUT, the
    built-in corpus.
    """
    say: Callable[[str], None] = (lambda msg: None) if quiet else (lambda msg: click.echo(msg, err=True))
    if not output.parent.exists():
        raise click.BadParameter(f"directory {str(output.parent)!r} does not exist", param_hint="'-o' / '--output'")
    started = time.monotonic()
    source = click.get_current_context().get_parameter_source
    typed = {name for name in ("dask_timeout", "chunk_size", "threads", "encoding_errors", "progress_mode")
             if source(name) is not click.core.ParameterSource.DEFAULT}
    if merge:
        if any(v is not None for v in (for_, like, pre, norm, dask_address, max_memory)):
            raise click.UsageError("--merge takes .swc files only (their pipeline is in them)")
        if typed:
            flag = "--" + sorted(typed)[0].replace("_mode", "").replace("_", "-")
            raise click.UsageError(f"{flag} applies to counting text, not to --merge (it adds .swc files)")
        _merge(inputs, output, min_count, say)
        return
    pipeline = _pipeline(for_, like, pre, norm)
    # Options with defaults are always set: only what the user typed counts as given.
    if dask_address is None and typed & {"dask_timeout", "chunk_size"}:
        flag = "--" + sorted(typed & {"dask_timeout", "chunk_size"})[0].replace("_", "-")
        raise click.UsageError(f"{flag} applies to counting on a Dask cluster: give --dask ADDRESS too")
    if dask_address is not None:
        if max_memory is not None:
            raise click.UsageError("--max-memory applies to counting in this process, not with --dask")
        if typed & {"threads", "progress_mode"}:
            flag = "--threads" if "threads" in typed else "--progress"
            raise click.UsageError(f"{flag} applies to counting in this process; with --dask the workers decide")
        _count_on_dask(inputs, output, pipeline, dask_address, dask_timeout, chunk_size, min_count,
                       encoding_errors, say, started)
        return
    _count_here(inputs, output, pipeline, max_memory, min_count, threads, encoding_errors, progress_mode, quiet,
                say, started)


def _sources(inputs: tuple[str, ...], say: Callable[[str], None], progress_mode: str = "auto",
             quiet: bool = False) -> list[corpora.Source]:
    if not inputs:
        path = builtin_corpus(progress_mode, quiet)  # type: ignore[arg-type]
        say(f"No INPUT given: counting the built-in corpus ({path}).")
        inputs = (str(path),)
    try:
        return corpora.expand_sources(list(inputs))
    except corpora.CorpusError as exc:
        raise click.BadParameter(str(exc), param_hint="INPUT") from exc


def _count_here(inputs: tuple[str, ...], output: Path, pipeline: dict[str, Any], max_memory: int | None,
                min_count: int, threads: int | None, errors: str, progress_mode: str, quiet: bool,
                say: Callable[[str], None], started: float) -> None:
    from subword.counts import Counter

    sources = _sources(inputs, say, progress_mode, quiet)
    mode = resolve_mode(progress_mode, quiet)  # type: ignore[arg-type]
    reporter = ProgressReporter(mode, units={"read": "bytes"})
    total = sum(s.size() or 0 for s in sources) or None
    counter = Counter(pipeline, threads=threads, max_memory=max_memory, spill_dir=output.parent)
    done = 0
    try:
        for source in sources:
            reader = corpora.CorpusReader(["-" if source.path is None else str(source.path)],
                                          errors=errors)  # type: ignore[arg-type]
            base = done
            counter.add_lines(reader, source=source.name, progress=lambda n: reporter("read", base + n, total))
            done = base + reader.bytes_read
        runs = len(counter.runs)
        counter.write(output, min_count=min_count)
    except OSError as exc:
        # Disk full while spilling or writing, an unwritable folder: one line, and no output file.
        where = f" (spilling sorted runs to {output.parent})" if counter.runs else ""
        raise click.ClickException(f"counting failed{where}: {exc}; no output was written") from exc
    finally:
        counter.close()
        reporter.close()
    from subword.formats.counts import read_header

    header = read_header(output)
    spilled = f", {runs} sorted run{'s' if runs != 1 else ''} spilled and merged" if runs else ""
    say(f"Wrote {output}: {header['words']:,} distinct words ({header['occurrences']:,} occurrences) from "
        f"{header['lines']:,} lines ({header['bytes'] / 1e6:.1f} MB) in {time.monotonic() - started:.1f} s{spilled}.")


def _count_on_dask(inputs: tuple[str, ...], output: Path, pipeline: dict[str, Any], address: str, timeout: float,
                   chunk_size: int, min_count: int, errors: str, say: Callable[[str], None], started: float) -> None:
    from subword import distributed
    from subword.formats.counts import write_counts

    if not inputs or "-" in inputs:
        raise click.UsageError("--dask counts files the workers can read: give INPUT files (not stdin)")
    try:
        client = distributed.connect(address, timeout=timeout)
    except ImportError as exc:
        raise click.ClickException(str(exc)) from exc
    except ConnectionError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        counts = distributed.count_words(list(inputs), client, pipeline=pipeline, chunk_bytes=chunk_size,
                                         errors=errors)
    finally:
        client.close()
    write_counts(output, counts, min_count=min_count)
    say(f"Wrote {output}: {len(counts):,} distinct words from {counts.lines:,} lines "
        f"({counts.bytes / 1e6:.1f} MB, {len(counts.inputs)} tasks on {address}) in "
        f"{time.monotonic() - started:.1f} s.")


def _merge(inputs: tuple[str, ...], output: Path, min_count: int, say: Callable[[str], None]) -> None:
    from subword.counts import merge_files

    if not inputs:
        raise click.UsageError("--merge needs the .swc files to merge")
    for name in inputs:
        if not Path(name).is_file():
            raise click.BadParameter(f"{name!r} is not a file", param_hint="INPUT")
    # A k-way merge of the sorted word lists: memory for one word per file, whatever their size.
    header = merge_files(list(inputs), output, min_count=min_count)
    say(f"Wrote {output}: {header['words']:,} distinct words from {len(inputs)} files ({header['lines']:,} lines).")


def train_from_counts_file(algorithm: str, trainer: Any, path: Path, inputs: tuple[str, ...], output: Path,
                           say: Callable[[str], None], reporter: Any, *, min_count: int = 0) -> None:
    """``subword train ALGORITHM --from-counts FILE``: train from a .swc file and write the tokenizer.

    The file is not loaded: the Rust trainer reads its word list and keeps only the words it
    needs. ``--min-frequency N`` (HF's threshold on *pair* counts) leaves out, exactly, the words
    none of whose adjacent character pairs occurs N times in the whole corpus: those can never
    take part in a merge, so the tokenizer is the one every word gives. ``min_count``
    (``--min-count``) is another thing: it drops the words counted fewer times, which changes the
    result (two words seen once each that share a pair give it a count of 2).
    """
    from subword.counts import CountsFile, make_pipeline, pipeline_difference, pipeline_for
    from subword.errors import FormatError
    from subword.pre_tokenizers import BertPreTokenizer
    from subword.trainers import WordPieceTrainer

    if inputs:
        raise click.UsageError("--from-counts trains from the counts file: give no INPUT")
    if algorithm not in ("bpe", "byte-bpe", "wordpiece") or getattr(trainer, "compat", "hf") != "hf":
        raise click.UsageError("--from-counts works for bpe, byte-bpe and wordpiece (HF rules); unigram and "
                               "--compat spm train on sentences, not word counts")
    started = time.monotonic()
    counts = CountsFile(path, min_count=min_count)
    if isinstance(trainer, WordPieceTrainer):
        want = make_pipeline(trainer.normalizer(), BertPreTokenizer())
    else:
        want = pipeline_for(algorithm)
    diff = pipeline_difference(want, counts.pipeline)
    if diff:
        raise click.ClickException(f"{path} was counted with another pipeline than `train {algorithm}` uses "
                                   f"(train vs counts: {diff}); count with `subword count --for {algorithm}`")
    # Measured (rust/src/bpe/train.rs's performance notes): ~280 bytes per distinct word the trainer
    # holds, ~60 MiB base; with --min-frequency it holds fewer (known once the file is read).
    bound = "at most " if trainer.min_frequency >= 2 or min_count > 1 else ""
    skip = f"; --min-count {min_count} skips the rarer ones" if min_count > 1 else ""
    say(f"Training on {counts.words:,} distinct words ({counts.lines:,} lines counted{skip}): expect {bound}about "
        f"{(60 * 2**20 + 280 * counts.words) / 1e6:,.0f} MB of memory.")
    try:
        tokenizer = trainer.train_from_counts(counts, progress=reporter)
    except FormatError as exc:
        raise click.ClickException(str(exc)) from exc
    except ValueError as exc:
        raise click.ClickException(f"training failed: {exc}") from exc
    finally:
        reporter.close()
    corpus = tokenizer.provenance["training"]["corpus"]
    tokenizer.provenance["input"] = {"command": f"train {algorithm}", "from_counts": str(path),
                                     "lines": counts.lines, "bytes": counts.bytes, "min_count": min_count,
                                     "sources": [i["source"] for i in counts.inputs][:100]}
    tokenizer.save(output)
    held = corpus["words_trained"]
    why = (f"; --min-frequency {trainer.min_frequency} left out the {corpus['distinct_words'] - held:,} that can "
           "never merge" if held < corpus["distinct_words"] else "")
    say(f"Wrote {output}: {algorithm}, vocab size {tokenizer.get_vocab_size(with_added_tokens=True)}, trained from "
        f"{held:,} of {corpus['distinct_words']:,} distinct words{why} ({counts.lines:,} lines counted) in "
        f"{time.monotonic() - started:.1f} s.")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(count_command())
