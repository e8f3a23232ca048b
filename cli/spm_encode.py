"""`subword encode` for SentencePiece BPE `.model` files (ids identical to sentencepiece's encode)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

import click

from subword.formats.spm import MODEL_TYPES, SpmFormatError, read_model
from subword.spm import SpmBpeTokenizer

__all__ = ["is_spm_bpe_model", "encode_bpe_lines"]

_BATCH = 4096


def is_spm_bpe_model(path: Path) -> bool:
    """True when ``path`` is a SentencePiece ``.model`` file holding a BPE model.

    >>> is_spm_bpe_model(Path("tokenizer.json"))
    False
    """
    if path.suffix != ".model":
        return False
    try:
        return read_model(path).model_type == MODEL_TYPES["bpe"]
    except (SpmFormatError, OSError):
        return False


def encode_bpe_lines(path: Path, lines: Iterable[str], out: TextIO, *, output_format: str, stream: bool) -> None:
    """Encodes each line (without its line ending) to one output line: ids, tokens, or JSON
    ``{"ids", "tokens"}`` (no offsets: sentencepiece's normalizer does not keep an alignment here)."""
    try:
        tok = SpmBpeTokenizer.from_file(path)
    except (SpmFormatError, ValueError) as exc:
        raise click.ClickException(f"{path}: {exc}") from None
    batch: list[str] = []

    def flush() -> None:
        rows = tok.encode_batch(batch)
        if output_format == "ids":
            text = "".join(" ".join(map(str, ids)) + "\n" for ids in rows)
        elif output_format == "tokens":
            text = "".join(" ".join(tok.id_to_piece(i) for i in ids) + "\n" for ids in rows)
        else:
            text = "".join(json.dumps({"ids": ids, "tokens": [tok.id_to_piece(i) for i in ids]},
                                      ensure_ascii=False) + "\n" for ids in rows)
        out.write(text)
        if stream:
            out.flush()
        batch.clear()

    for line in lines:
        batch.append(line)
        if stream or len(batch) >= _BATCH:
            flush()
    if batch:
        flush()
