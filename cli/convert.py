"""``subword convert IN OUT``: SentencePiece ``.model`` <-> HF ``tokenizer.json``, only where exact."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import click

from subword.formats.convert import ConversionError, hf_json_to_spm, spm_to_hf_json
from subword.formats.spm import SpmFormatError, read_model, write_model

__all__ = ["convert_command"]

EPILOG = """\b
Examples:
  subword convert spm.model tokenizer.json     # a sentencepiece BPE model for HF tokenizers
  subword convert tokenizer.json spm.model     # back (only for files converted from a .model)
"""


def _kind(path: Path, to: str | None) -> str:
    if to:
        return to
    if path.suffix == ".model":
        return "spm"
    if path.suffix == ".json":
        return "hf"
    raise click.UsageError(f"cannot tell the format of {str(path)!r} from its suffix: use .model or .json (or --to)")


@click.command("convert", epilog=EPILOG)
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("target", type=click.Path(dir_okay=False, writable=True, path_type=Path))
@click.option("--to", type=click.Choice(["hf", "spm"]), help="Output format (default: from OUT's suffix).")
def convert_command(source: Path, target: Path, to: str | None) -> None:
    """Convert between a SentencePiece .model and an HF tokenizer.json where the result encodes
    identically; otherwise stop and say why (e.g. byte-level BPE has no SentencePiece form, and
    HF's float64 Unigram can break ties unlike sentencepiece's float32)."""
    src_kind, dst_kind = _kind(source, None), _kind(target, to)
    try:
        if src_kind == "spm":
            model = read_model(source)
            if dst_kind == "spm":
                write_model(target, model)
                return
            data = spm_to_hf_json(model)
            fd, tmp = tempfile.mkstemp(dir=target.parent or ".", prefix=target.name + ".", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, ensure_ascii=False)
            os.replace(tmp, target)
        else:
            try:
                data = json.loads(source.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise click.ClickException(f"{source}: not a tokenizer.json ({exc})") from exc
            if dst_kind == "hf":
                raise click.UsageError("both files are tokenizer.json: nothing to convert")
            write_model(target, hf_json_to_spm(data))
    except (ConversionError, SpmFormatError) as exc:
        raise click.ClickException(f"cannot convert {source} exactly: {exc}") from exc
    click.echo(f"Wrote {target}", err=True)
