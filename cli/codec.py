"""``subword encode`` and ``subword decode``: one line in, one line out, streaming.

Encoding batches lines (``_BATCH_LINES`` at a time) through ``Tokenizer.encode_batch``, which
runs in parallel in the Rust core; ``--stream`` (or an interactive stdin) instead encodes and
flushes each line as it arrives, for use in pipes that wait for answers.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

import click

import corpora
from cli.loading import load_tokenizer, tokenizer_option
from subword import Tokenizer, decoders, pre_tokenizers
from subword.model_spm import SentencePieceUnigram

__all__ = ["encode_command", "decode_command", "load_tokenizer"]

# Lines per encode_batch call: large enough to keep all cores busy, small enough that the first
# output appears quickly and memory stays flat for any input size.
_BATCH_LINES = 2048


def _strip_eol(line: str) -> str:
    if line.endswith("\n"):
        line = line[:-1]
        if line.endswith("\r"):
            line = line[:-1]
    return line


def _input_lines(source: str, errors: str) -> Iterator[str]:
    try:
        reader = corpora.CorpusReader([source], errors=errors)  # type: ignore[arg-type]
    except corpora.CorpusError as exc:
        raise click.BadParameter(str(exc), param_hint="FILE") from exc
    for line in reader:
        yield _strip_eol(line)


def _byte_offsets(line: str, offsets: list[tuple[int, int]]) -> list[list[int]]:
    """Character offsets into ``line`` -> UTF-8 byte offsets.

    >>> _byte_offsets("né x", [(0, 2), (3, 4)])
    [[0, 3], [4, 5]]
    """
    if line.isascii():
        return [list(o) for o in offsets]
    starts = [0]
    for ch in line:
        starts.append(starts[-1] + len(ch.encode("utf-8", "surrogatepass")))
    return [[starts[a], starts[b]] for a, b in offsets]


# ==== readable tokens ====

#: Byte-level alphabet char -> the byte it stands for (GPT-2's map).
_BYTE_OF = {c: b for b, c in enumerate(pre_tokenizers.bytes_to_unicode())}
_WHITESPACE = {" ": "·", "\t": "→", "\n": "↵", "\r": "␍"}


def _is_byte_level(tok: Tokenizer) -> bool:
    """Whether the tokens are spelled in the byte-level alphabet (a ByteLevel pre-tokenizer or decoder)."""
    def has(component: Any, kind: type, inner: str) -> bool:
        if isinstance(component, kind):
            return True
        return any(has(c, kind, inner) for c in getattr(component, inner, ()) or ())

    return has(tok.pre_tokenizer, pre_tokenizers.ByteLevel, "pretokenizers") or has(
        tok.decoder, decoders.ByteLevel, "decoders")


def readable_token(token: str) -> str:
    """A byte-level token as the text it stands for: spaces and other whitespace visible (``·`` ``→`` ``↵``
    ``␍``), and the bytes of a partial character (an emoji or accented letter cut between tokens) as
    ``⟨F0 9F⟩``. A token outside the byte alphabet (an added token) is shown as it is.

    >>> [readable_token(t) for t in ["ĠcafÃ©", "Ġð", "ŁĻ", "Ċ", "<|endoftext|>"]]
    ['·café', '·⟨F0⟩', '⟨9F 99⟩', '↵', '<|endoftext|>']
    """
    if not token or any(ch not in _BYTE_OF for ch in token):
        return token
    text = bytes(_BYTE_OF[ch] for ch in token).decode("utf-8", errors="surrogateescape")
    out: list[str] = []
    partial: list[str] = []
    for ch in text + "\0":
        if "\udc80" <= ch <= "\udcff":  # a byte that is not a whole character
            partial.append(f"{ord(ch) - 0xDC00:02X}")
            continue
        if partial:
            out.append("⟨" + " ".join(partial) + "⟩")
            partial = []
        out.append(_WHITESPACE.get(ch, "·" if ch.isspace() else ch))
    return "".join(out[:-1])


def _batches(lines: Iterator[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _interactive(source: str) -> bool:
    if source != "-":
        return False
    stdin = sys.stdin
    return bool(getattr(stdin, "isatty", lambda: False)())


_input_argument = click.argument("source", default="-", metavar="[FILE|-]")
_errors_option = click.option(
    "--encoding-errors", type=click.Choice(["strict", "replace"]), default="strict",
    help="On bytes that are not UTF-8: stop with an error naming the line, or replace them with U+FFFD.",
)
_stream_option = click.option(
    "--stream", is_flag=True,
    help="Handle and flush one line at a time (default when stdin is a terminal); otherwise lines are batched.",
)

ENCODE_EPILOG = """\b
Examples:
  echo "Hello world" | subword encode -t tok.json
  subword encode -t tok.json --format tokens notes.txt        # readable tokens (raw-tokens: as spelled)
  subword encode -t tok.json --format json corpus.txt.gz > corpus.jsonl
  subword encode -t spiece.model --nbest 3 notes.txt          # Unigram: the 3 best segmentations
  subword encode -t spiece.model --sample --alpha 0.1 --seed 1 notes.txt
  echo "Hello world" | subword encode -t cl100k_base
  tail -f log.txt | subword encode -t tok.json --stream
"""


def _given(name: str) -> bool:
    return click.get_current_context().get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE


def _adds_special_tokens(tok: Tokenizer) -> bool:
    """Whether the post-processor adds tokens (``[CLS]``, ``<s>``, ...) around a text: what
    ``--add-special/--no-add-special`` switches."""
    probe = "a"
    return tok.encode(probe, add_special_tokens=True).ids != tok.encode(probe, add_special_tokens=False).ids


def _check_encode_options(tok: Tokenizer, spec: str, output_format: str, sample: bool, nbest: int | None) -> None:
    """Refuses every option that would change nothing for this tokenizer and these other options."""
    if _given("byte_offsets") and output_format != "json":
        raise click.UsageError("--byte-offsets applies to --format json only (the other formats have no offsets)")
    if (_given("add_special")) and not _adds_special_tokens(tok):
        raise click.UsageError(f"--add-special/--no-add-special: {spec} adds no special tokens "
                               "(its post-processor adds none), so there is nothing to switch")
    for name in ("alpha", "nbest_size", "seed"):
        if _given(name) and not sample:
            raise click.UsageError(f"--{name.replace('_', '-')} applies to --sample only")
    if sample and nbest is not None:
        raise click.UsageError("--sample and --nbest exclude each other")
    if (sample or nbest is not None) and not isinstance(tok.model, SentencePieceUnigram):
        kind = type(tok.model).__name__
        raise click.UsageError(f"--{'sample' if sample else 'nbest'} needs a SentencePiece Unigram model (a Unigram "
                               f".model file); {spec} holds a {kind} model")
    if (sample or nbest is not None) and _given("add_special"):
        raise click.UsageError("--add-special/--no-add-special do not apply to --sample and --nbest "
                               "(they return the model's segmentations only)")


@click.command("encode", epilog=ENCODE_EPILOG)
@tokenizer_option
@_input_argument
@click.option(
    "--format", "output_format", type=click.Choice(["ids", "tokens", "raw-tokens", "json"]), default="ids",
    help='ids: space-separated ids; tokens: space-separated tokens, readable (byte-level tokens as the text they '
    "stand for, whitespace as · → ↵, partial characters as ⟨F0 9F⟩ bytes); raw-tokens: the tokens as the "
    'vocabulary spells them (ĠcafÃ©); json: {"ids", "tokens" (raw), "offsets"} per line, offsets in characters '
    "of the line.",
)
@click.option(
    "--byte-offsets", is_flag=True,
    help="With --format json: offsets count UTF-8 bytes of the line instead of characters.",
)
@click.option("--add-special/--no-add-special", default=True,
              help="Let the post-processor add its special tokens (refused for tokenizers that add none).")
@_stream_option
@_errors_option
@click.option("--sample", is_flag=True, help="Unigram .model: sample a segmentation (subword regularisation).")
@click.option("--alpha", type=float, default=0.1, show_default=True,
              help="With --sample: inverse temperature; p(segmentation) ∝ exp(alpha * score).")
@click.option("--nbest-size", type=int, default=-1, show_default=True,
              help="With --sample: -1 samples from all segmentations exactly; 0/1 is Viterbi; N samples among the N best.")
@click.option("--seed", type=int, default=0, show_default=True, help="With --sample: line k uses seed + k.")
@click.option("--nbest", type=click.IntRange(min=1), metavar="N",
              help="Unigram .model: the N best segmentations of each line (tab-separated; JSON with scores).")
def encode_command(
    tokenizer_spec: str, source: str, output_format: str, byte_offsets: bool, add_special: bool, stream: bool,
    encoding_errors: str, sample: bool = False, alpha: float = 0.1, nbest_size: int = -1, seed: int = 0,
    nbest: int | None = None,
) -> None:
    """Encode text, one line of FILE (or stdin) to one line of output.

    The line ending is not part of the text encoded. Every tokenizer kind gives its own library's ids
    (a .model sentencepiece's, a .tiktoken tiktoken's, a tokenizer.json HF tokenizers'); Unigram models
    also give the N best (--nbest) or sampled (--sample) segmentations.
    """
    tok = load_tokenizer(tokenizer_spec)
    _check_encode_options(tok, tokenizer_spec, output_format, sample, nbest)
    if sample and not alpha >= 0:  # also refuses NaN
        raise click.BadParameter(f"must be >= 0, got {alpha}", param_hint="'--alpha'")
    out = sys.stdout
    byte_level = _is_byte_level(tok)
    stream = stream or _interactive(source)
    size = 1 if stream else _BATCH_LINES
    lineno = 0
    for batch in _batches(_input_lines(source, encoding_errors), size):
        if sample or nbest is not None:
            text = "".join(_segmentations(tok, line, lineno + k, output_format, nbest, alpha, nbest_size, seed)
                           for k, line in enumerate(batch))
        elif output_format == "ids":
            rows = tok.encode_batch_ids(batch, add_special_tokens=add_special)
            text = "".join(" ".join(map(str, ids)) + "\n" for ids in rows)
        else:
            encodings = tok.encode_batch(batch, add_special_tokens=add_special)
            if output_format == "tokens" and byte_level:
                text = "".join(" ".join(map(readable_token, e.tokens)) + "\n" for e in encodings)
            elif output_format in ("tokens", "raw-tokens"):
                text = "".join(" ".join(e.tokens) + "\n" for e in encodings)
            else:
                text = "".join(
                    json.dumps(
                        {
                            "ids": list(e.ids),
                            "tokens": list(e.tokens),
                            "offsets": _byte_offsets(line, e.offsets) if byte_offsets else [list(o) for o in e.offsets],
                        },
                        ensure_ascii=False,
                    )
                    + "\n"
                    for line, e in zip(batch, encodings)
                )
        lineno += len(batch)
        out.write(text)
        if stream:
            out.flush()


def _segmentations(tok: Tokenizer, line: str, k: int, output_format: str, nbest: int | None, alpha: float,
                   nbest_size: int, seed: int) -> str:
    """One output line for ``--nbest`` (tab-separated, or a JSON list with scores) or ``--sample``
    (line ``k`` uses seed ``seed + k``, so a run is reproducible)."""
    if nbest is not None:
        segs: list[tuple[list[int], float | None]] = [(list(e.ids), score) for e, score in tok.nbest(line, nbest)]
    else:
        segs = [(list(tok.sample(line, alpha=alpha, nbest_size=nbest_size, seed=seed + k)[0].ids), None)]
    if output_format == "json":
        rows = [{"ids": ids, "tokens": [tok.id_to_token(i) for i in ids], **({} if s is None else {"score": s})}
                for ids, s in segs]
        return json.dumps(rows if nbest is not None else rows[0], ensure_ascii=False) + "\n"
    if output_format in ("tokens", "raw-tokens"):  # sentencepiece's pieces: readable as they are
        return "\t".join(" ".join(str(tok.id_to_token(i)) for i in ids) for ids, _ in segs) + "\n"
    return "\t".join(" ".join(map(str, ids)) for ids, _ in segs) + "\n"


def _parse_ids(line: str, where: str, vocab_size: int) -> list[int]:
    text = line.strip()
    if not text:
        return []
    value: Any
    if text[0] in "[{":
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise click.ClickException(f"{where}: not valid JSON ({exc.msg})") from None
        if isinstance(value, dict):
            if "ids" not in value:
                raise click.ClickException(f"{where}: JSON object has no \"ids\" field")
            value = value["ids"]
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise click.ClickException(f"{where}: expected a list of integer ids")
        ids = value
    else:
        try:
            ids = [int(tok) for tok in text.split()]
        except ValueError:
            bad = next(t for t in text.split() if not t.lstrip("-").isdigit())
            raise click.ClickException(f"{where}: {bad!r} is not an integer id") from None
    for i in ids:
        if not 0 <= i < vocab_size:
            raise click.ClickException(f"{where}: id {i} is outside the vocabulary (0..{vocab_size - 1})")
    return ids


DECODE_EPILOG = """\b
Examples:
  echo "15496 995" | subword decode -t tok.json
  subword encode -t tok.json notes.txt | subword decode -t tok.json
  subword encode -t tok.json --format json notes.txt | subword decode -t tok.json
"""


@click.command("decode", epilog=DECODE_EPILOG)
@tokenizer_option
@_input_argument
@click.option(
    "--skip-special/--keep-special", default=True,
    help="Leave special tokens out of the decoded text, or keep them (refused for tokenizers without any).",
)
@_stream_option
def decode_command(tokenizer_spec: str, source: str, skip_special: bool, stream: bool) -> None:
    """Decode ids back to text, one line of ids to one line of text.

    A line holds space-separated ids, a JSON list of ids, or a JSON object with an "ids"
    field (what encode --format json writes). Any tokenizer kind encode takes.
    """
    tok = load_tokenizer(tokenizer_spec)
    if _given("skip_special") and not tok.special_tokens:
        raise click.UsageError(f"--skip-special/--keep-special: {tokenizer_spec} has no special tokens")
    vocab_size = tok.get_vocab_size(with_added_tokens=True)
    out = sys.stdout
    stream = stream or _interactive(source)
    size = 1 if stream else _BATCH_LINES
    name = "<stdin>" if source == "-" else source
    lineno = 0
    for batch in _batches(_input_lines(source, "strict"), size):
        rows = []
        for line in batch:
            lineno += 1
            rows.append(_parse_ids(line, f"{name}:{lineno}", vocab_size))
        texts = tok.decode_batch(rows, skip_special_tokens=skip_special)
        out.write("".join(t + "\n" for t in texts))
        if stream:
            out.flush()
