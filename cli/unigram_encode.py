"""`subword encode` for SentencePiece Unigram `.model` files: Viterbi (ids identical to sentencepiece),
`--nbest N`, and `--sample` (subword regularisation: `--alpha`, `--nbest-size`, `--seed`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

import click

from subword.formats.spm import MODEL_TYPES, SpmFormatError, read_model
from subword.unigram import UnigramEncoder

__all__ = ["is_unigram_model", "encode_lines"]


def is_unigram_model(path: Path) -> bool:
    """True when ``path`` is a SentencePiece ``.model`` file holding a Unigram model."""
    if path.suffix != ".model":
        return False
    try:
        return read_model(path).model_type == MODEL_TYPES["unigram"]
    except (SpmFormatError, OSError):
        return False


def encode_lines(path: Path, lines: Iterable[str], out: TextIO, *, output_format: str, nbest: int | None,
                 sample: bool, alpha: float, nbest_size: int, seed: int, stream: bool) -> None:
    """Encodes each line (without its line ending) to one output line.

    ``nbest``: the N best segmentations, tab-separated (``ids``/``tokens``) or a JSON list with scores.
    ``sample``: one segmentation drawn with ``alpha`` / ``nbest_size``; line ``k`` uses seed ``seed + k``,
    so a run is reproducible.
    """
    try:
        enc = UnigramEncoder(read_model(path))
    except (SpmFormatError, ValueError) as exc:
        raise click.ClickException(f"{path}: {exc}") from None
    pieces = enc.pieces()
    if sample and not alpha >= 0:  # also refuses NaN
        raise click.BadParameter(f"must be >= 0, got {alpha}", param_hint="'--alpha'")
    for k, line in enumerate(lines):
        offsets = None
        if nbest is not None:
            segs = enc.nbest(line, nbest)
        elif sample:
            segs = [(enc.sample(line, alpha=alpha, nbest_size=nbest_size, seed=seed + k)[0], None)]
        elif output_format == "json":
            try:
                ids, offsets = enc.encode_with_offsets(line)
            except ValueError:  # the normalizer folds a character: no alignment, ids only
                ids = enc.encode(line)
            segs = [(ids, None)]
        else:
            segs = [(enc.encode(line), None)]
        if output_format == "json":
            rows = [{"ids": ids, "tokens": [pieces[i] for i in ids], **({} if s is None else {"score": s})}
                    for ids, s in segs]
            if offsets is not None:
                rows[0]["offsets"] = [list(o) for o in offsets]
            text = json.dumps(rows if nbest is not None else rows[0], ensure_ascii=False)
        elif output_format == "tokens":
            text = "\t".join(" ".join(pieces[i] for i in ids) for ids, _ in segs)
        else:
            text = "\t".join(" ".join(map(str, ids)) for ids, _ in segs)
        out.write(text + "\n")
        if stream:
            out.flush()
