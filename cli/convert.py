"""``subword convert IN OUT``: any tokenizer file to tokenizer.json, SentencePiece ``.model`` or ``.tiktoken``,
only where the result encodes identically (otherwise: the reason, exit 1, nothing written)."""

from __future__ import annotations

from pathlib import Path

import click

from cli.loading import load_tokenizer

__all__ = ["convert_command"]

EPILOG = """\b
Examples:
  subword convert spm.model tokenizer.json     # a sentencepiece model for HF tokenizers
  subword convert tokenizer.json spm.model     # back (for files converted from a .model)
  subword convert tok.json gpt.tiktoken        # a byte-level BPE as a tiktoken rank file
  subword convert cl100k_base cl100k.json      # a tiktoken encoding as an HF tokenizer.json
"""

_SUFFIXES = {".json": "hf", ".model": "spm", ".tiktoken": "tiktoken"}


def _kind(target: Path, to: str | None) -> str:
    if to:
        return to
    for suffix in reversed(target.suffixes):  # x.model.v3 is a .model
        if suffix in _SUFFIXES:
            return _SUFFIXES[suffix]
    raise click.UsageError(f"cannot tell the format of {str(target)!r} from its name: use .json, .model or "
                           ".tiktoken (or --to)")


HELP = """Convert a tokenizer between tokenizer.json, a SentencePiece .model and a .tiktoken rank file where
the result encodes identically; otherwise stop and say why (e.g. byte-level BPE has no SentencePiece form,
and HF's float64 Unigram can break ties unlike sentencepiece's float32).

IN is any tokenizer the other commands take with -t: a tokenizer.json (or a directory holding one), a
SentencePiece .model (any name), a .tiktoken rank file, a BERT vocab.txt, or a tiktoken encoding name
(cl100k_base, o200k_base, ...). OUT's name says the format (.json, .model, .tiktoken) unless --to does."""


@click.command("convert", epilog=EPILOG, help=HELP)
@click.argument("source", metavar="IN")
@click.argument("target", type=click.Path(dir_okay=False, writable=True, path_type=Path), metavar="OUT")
@click.option("--to", type=click.Choice(["hf", "spm", "tiktoken"]),
              help="Output format: hf (tokenizer.json), spm (.model) or tiktoken (rank file); default: from OUT's name.")
def convert_command(source: str, target: Path, to: str | None) -> None:
    """The ``convert`` command (its help text is :data:`HELP`)."""
    kind = _kind(target, to)
    if to is None and Path(source).exists() and Path(source).resolve() == target.resolve():
        raise click.UsageError("IN and OUT are the same file")
    tok = load_tokenizer(source)
    from subword.errors import FormatError

    try:
        if kind == "tiktoken":
            from subword.formats import tiktoken as tiktoken_format

            tiktoken_format.save(tok, target)
        elif kind == "spm":
            from subword.formats.spm import model_file_of, write_model

            write_model(target, model_file_of(tok))
        else:
            from subword.formats.atomic import atomic_write_text

            atomic_write_text(target, tok.to_json_str(pretty=True))
    except (FormatError, ValueError) as exc:
        raise click.ClickException(f"cannot convert {source} exactly: {exc}") from exc
    click.echo(f"Wrote {target}", err=True)
