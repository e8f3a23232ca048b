"""``subword compare``: the same text through many tokenizers, side by side.

Parsing, reading and errors only: the metrics are :func:`subword.compare` and the views are
``subword.compare.render_terminal`` / ``render_html``. The input lines are read as ``subword
encode`` reads them (one line per item, line ending removed).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import click

import corpora

__all__ = ["compare_command"]

EPILOG = """\b
Examples:
  subword compare -t ours.json -t spiece.model -t cl100k_base -t bert/vocab.txt notes.txt
  subword compare -t a.json -t b.json --names ours,theirs --show 5 --json out.json --html out.html
  subword compare -t a.json -t b.json --gold morph.tsv            # boundary F1 against gold morphs
  subword compare -t a.json -t b.json --parallel flores/ --pivot en   # premium per language
  cat text.txt | subword compare -t a.json -t b.json -
"""


def _read_whole(source: str, errors: str) -> tuple[list[str], dict[str, Any], str | None] | None:
    """One file read at once: the lines, digest and counts :func:`_read` gives, and the digest of the lines
    joined by line feeds (``None`` where a CR was dropped), or ``None`` to read it line by line.

    The line-by-line reader costs a few microseconds a line (2.4 s of a 20 MB comparison); this path
    decodes and splits the whole file in C. Any file it is not sure of (stdin, a glob or directory, a NUL
    byte, invalid UTF-8 under ``strict``) goes the line-by-line way, which says what is wrong and where.
    """
    try:
        found = corpora.expand_sources([source])
    except corpora.CorpusError:
        return None
    if len(found) != 1 or found[0].path is None:
        return None
    from corpora.compression import open_binary

    try:
        with open_binary(found[0].path, found[0].name) as stream:
            data = stream.read()
        if b"\x00" in data:
            return None
        text = data.decode("utf-8", errors)
    except (OSError, UnicodeDecodeError, EOFError, ValueError):
        return None
    # Binary line iteration splits after each b"\n"; UTF-8 never has that byte inside a character, so
    # decoding the whole file (strict or replace) gives the lines' decodings joined.
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    raw = data if errors == "strict" else text.encode("utf-8", "surrogatepass")
    lines = [line[:-1] if line.endswith("\r") else line for line in parts] if "\r" in text else parts
    # One pass gives both digests: the file's, and (with no CR to drop) that of its lines joined by
    # line feeds, which is the file without its last line feed; compare() then need not rebuild the text.
    digest = hashlib.sha256(raw[:-1] if raw.endswith(b"\n") else raw)
    joined = digest.hexdigest() if "\r" not in text else None
    if raw.endswith(b"\n"):
        digest.update(b"\n")
    entry = {"path": source, "lines": len(lines), "bytes": len(data), "sha256": digest.hexdigest()}
    return lines, entry, joined


def _read(sources: tuple[str, ...], errors: str,
          max_lines: int | None) -> tuple[list[str], list[dict[str, Any]], str | None]:
    """The lines of ``sources``, an entry per file for the JSON, and the sha256 of the lines joined by line
    feeds where one whole file gave it (else ``None``: compare() computes it)."""
    lines: list[str] = []
    files: list[dict[str, Any]] = []
    joined: str | None = None
    for source in sources:
        whole = _read_whole(source, errors) if max_lines is None else None
        if whole is not None:
            lines.extend(whole[0])
            files.append(whole[1])
            joined = whole[2] if len(sources) == 1 else None
            continue
        try:
            reader = corpora.CorpusReader([source], errors=errors)  # type: ignore[arg-type]
        except corpora.CorpusError as exc:
            raise click.BadParameter(str(exc), param_hint="FILE") from exc
        digest = hashlib.sha256()
        count = 0
        for raw in reader:
            if max_lines is not None and len(lines) >= max_lines:
                break
            digest.update(raw.encode("utf-8", "surrogatepass"))
            line = raw[:-1] if raw.endswith("\n") else raw
            lines.append(line[:-1] if line.endswith("\r") else line)
            count += 1
        files.append({"path": source, "lines": count, "bytes": reader.bytes_read, "sha256": digest.hexdigest()})
    return lines, files, joined


def _write(path: Path, text: str) -> None:
    from subword.formats.atomic import atomic_write_text

    atomic_write_text(path, text)


@click.command("compare", epilog=EPILOG)
@click.option("-t", "--tokenizer", "specs", multiple=True, required=True, metavar="TOK",
              help="A tokenizer: tokenizer.json, SentencePiece .model, .tiktoken rank file, BERT vocab.txt, a "
                   "directory holding one, or a tiktoken name (cl100k_base, o200k_base, ...). Give it 2 or more times.")
@click.argument("sources", nargs=-1, metavar="[FILE...|-]")
@click.option("--names", help="Comma-separated names for the tokenizers, in the order of -t (default: file names).")
@click.option("--show", type=click.IntRange(min=0), default=20, help="Sample lines shown with each segmentation.")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the whole comparison as one JSON document (schema: docs/compare.md).")
@click.option("--html", "html_out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write a self-contained HTML report.")
@click.option("--gold", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Gold morphs (word TAB morphs separated by spaces or +): boundary P/R/F1 per tokenizer.")
@click.option("--parallel", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A directory of line-aligned files, one per language (en.txt, de.txt, ...): premium per language.")
@click.option("--pivot", help="With --parallel: the reference language (its file name before the first dot).")
@click.option("--max-lines", type=click.IntRange(min=1), help="Read at most N lines (in order).")
@click.option("--sample", type=click.IntRange(min=1), metavar="N", help="Compare a random sample of N lines (--seed).")
@click.option("--seed", type=int, default=0, help="Seed of --sample and of the bootstrap.")
@click.option("--bootstrap", "replicates", type=click.IntRange(min=0), default=1000,
              help="Block-bootstrap replicates for the 95% intervals (0: none).")
@click.option("--color/--no-color", default=None, help="Colour the terminal view (default: when stdout is a terminal "
              "and NO_COLOR is unset).")
@click.option("--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict",
              help="On bytes that are not UTF-8: stop with an error naming the line, or replace them with U+FFFD.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing (with --json/--html): no terminal view, no 'Wrote' line.")
def compare_command(specs: tuple[str, ...], sources: tuple[str, ...], names: str | None, show: int,
                    json_out: Path | None, html_out: Path | None, gold: Path | None, parallel: Path | None,
                    pivot: str | None, max_lines: int | None, sample: int | None, seed: int, replicates: int,
                    color: bool | None, encoding_errors: str, quiet: bool) -> None:
    """Compare how tokenizers segment the same text: metrics with 95% intervals, samples, attribution."""
    from subword.compare import compare
    from subword.compare.align import GoldError, read_gold
    from subword.compare.parallel import ParallelError, read_parallel
    from subword.compare.sources import TokenizerLoadError, load

    if len(specs) < 2:
        raise click.UsageError("give at least two tokenizers (-t A -t B)")
    name_list = [n.strip() for n in names.split(",")] if names else None
    if name_list is not None:
        if len(name_list) != len(specs) or not all(name_list):
            raise click.BadParameter(f"{len(name_list)} names for {len(specs)} tokenizers", param_hint="--names")
        if len(set(name_list)) != len(name_list):
            raise click.BadParameter("names must be distinct", param_hint="--names")
    if (parallel is None) != (pivot is None):
        raise click.UsageError("--parallel and --pivot go together")

    tokenizers = []
    for spec in specs:
        try:
            tok, _kind = load(spec)
        except TokenizerLoadError as exc:
            raise click.ClickException(str(exc)) from exc
        tokenizers.append(tok)
    if name_list is None:
        name_list = _default_names(specs)

    if not sources:
        from cli.corpus import builtin_corpus

        sources = (str(builtin_corpus()),)
    lines, files, joined = _read(sources, encoding_errors, max_lines)
    if sample is not None:
        lines, joined = corpora.sample_lines(lines, sample, seed=seed), None
    if not any(lines):
        raise click.ClickException(f"the input is empty: no text in {', '.join(sources)}")

    gold_entries = None
    if gold is not None:
        try:
            gold_entries = read_gold(gold)
        except GoldError as exc:
            raise click.ClickException(str(exc)) from exc
    parallel_texts = None
    if parallel is not None:
        try:
            parallel_texts = read_parallel(parallel, str(pivot))
        except ParallelError as exc:
            raise click.ClickException(str(exc)) from exc

    result = compare(tokenizers, lines, name_list, sources=list(specs), inputs={"files": files, "lines_sha256": joined}, show=show,
                     bootstrap_replicates=replicates, seed=seed, gold=gold_entries, parallel=parallel_texts,
                     pivot=pivot)
    written = []
    if json_out is not None:
        _write(json_out, result.to_json() + "\n")
        written.append(f"{json_out} (JSON, schema {result.doc['schema_version']})")
    if html_out is not None:
        _write(html_out, result.to_html())
        written.append(f"{html_out} (HTML report)")
    if quiet:
        return
    if written:
        click.echo("Wrote " + " and ".join(written), err=True)
    from subword.compare.render_terminal import use_color

    text = result.render_terminal(color=use_color() if color is None else color, show=show)
    click.echo(text, nl=not text.endswith("\n"))


def _default_names(specs: tuple[str, ...]) -> list[str]:
    """File stems (the parent folder's name for generic file names), made distinct with a suffix."""
    out: list[str] = []
    for spec in specs:
        p = Path(spec)
        base = spec if not p.exists() else (p.parent.name if p.stem in {"tokenizer", "vocab", "spiece"} and p.parent.name
                                             else p.name if p.is_dir() else p.stem)
        name, k = base or spec, 2
        while name in out:
            name, k = f"{base}-{k}", k + 1
        out.append(name)
    return out
