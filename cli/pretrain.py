"""``subword pretrain --model M --tokenizer TOK [INPUT...] --output-dir DIR``: pretrain a small encoder.

The options map one to one onto :class:`models.pretrain.PretrainConfig` (the loop, data pipeline and
checkpoints live in :mod:`models.pretrain` and :mod:`models.data`); this module parses, shows
progress (:class:`cli.progress.TrainingProgress`) and maps failures to the exit codes of :mod:`cli.main`
(bad input and a diverged run: 1; Ctrl-C: a checkpoint of the last finished step is written, its path
and the command that resumes it are printed, then 130). Under ``torchrun`` every process runs this
command and the job is data-parallel (DDP).
"""

from __future__ import annotations

import json
import logging
import re
import shlex
from pathlib import Path
from typing import Any

import click

from cli.progress import TrainingProgress, resolve_mode

__all__ = ["pretrain_command", "Duration"]


class Duration(click.ParamType):
    """A time span: ``90`` or ``90s``, ``30m``, ``1.5h``, ``1h30m`` -> seconds.

    >>> Duration().convert("1h30m", None, None), Duration().convert("45", None, None)
    (5400.0, 45.0)
    """

    name = "duration"
    _UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, (int, float)):
            return float(value)
        text = str(value).strip().lower()
        parts = re.findall(r"(\d+(?:\.\d+)?)\s*([smhd]?)", text)
        if not parts or re.sub(r"(\d+(?:\.\d+)?)\s*([smhd]?)", "", text).strip():
            self.fail(f"{value!r} is not a duration (examples: 90s, 30m, 1.5h, 1h30m)", param, ctx)
        return float(sum(float(n) * self._UNITS[u or "s"] for n, u in parts))


EPILOG = """\b
Examples:
  subword train wordpiece --vocab-size 8000 -o tok.json
  subword pretrain --model bert --preset tiny --tokenizer tok.json --output-dir run --time-budget 2m
  subword pretrain --model roberta --tokenizer tok.json corpus/*.txt --output-dir run --steps 10000
  subword pretrain --model bert --tokenizer tok.json --output-dir run --steps 10000 --resume
  torchrun --nproc-per-node 2 -m cli pretrain --model bert --tokenizer tok.json --output-dir run --steps 1000
"""


@click.command("pretrain", epilog=EPILOG)
@click.argument("inputs", nargs=-1, type=click.Path(path_type=str))
@click.option("--model", "model", required=True,
              type=click.Choice(["bert", "roberta", "albert", "distilbert", "xlnet", "bigbird"]),
              help="The architecture; its paper's objective is the default.")
@click.option("--preset", type=click.Choice(["tiny", "small", "base"]), default="tiny", help="Model size.")
@click.option("--tokenizer", "-t", required=True, type=click.Path(exists=True, dir_okay=False, path_type=str),
              help="The tokenizer (tokenizer.json): vocabulary size and special tokens come from it.")
@click.option("--output-dir", "-o", required=True, type=click.Path(file_okay=False, path_type=str),
              help="Where checkpoints, log.jsonl, loss.png and the final model go.")
@click.option("--steps", type=int, help="Optimizer steps to train.")
@click.option("--tokens", type=int, help="Train until this many tokens (alternative to --steps).")
@click.option("--time-budget", type=Duration(), help="Train for this long (e.g. 30m); with --schedule budget "
              "the learning rate decays to 0 when it runs out (Cramming).")
@click.option("--batch-size", type=int, default=32, help="Sequences per micro-batch per process.")
@click.option("--grad-accum", type=int, default=1, help="Micro-batches per optimizer step.")
@click.option("--seq-len", "--max-seq-length", type=int, default=128, help="Tokens per sequence, specials included.")
@click.option("--lr", type=float, default=5e-4, help="Peak learning rate (AdamW).")
@click.option("--warmup", type=float, default=0.06, help="Warmup: a fraction of the run (< 1) or a step count.")
@click.option("--schedule", type=click.Choice(["linear", "cosine", "budget"]),
              help="Decay after warmup [default: linear; budget with --time-budget alone].")
@click.option("--weight-decay", type=float, default=0.01, help="AdamW weight decay (not on biases and norms).")
@click.option("--clip", type=float, default=1.0, help="Clip the gradient norm to this (0: no clipping).")
@click.option("--objective", type=click.Choice(["mlm", "mlm+nsp", "mlm+sop", "plm", "distill"]),
              help="[default: the model's: BERT mlm+nsp, RoBERTa/BigBird mlm, ALBERT mlm+sop, XLNet plm, "
                   "DistilBERT distill]")
@click.option("--mask-rate", "--mlm-probability", type=float, default=0.15, help="Fraction of tokens predicted.")
@click.option("--masking", type=click.Choice(["static", "dynamic"]),
              help="static: one mask per example; dynamic: a new one each epoch [default: the model's].")
@click.option("--whole-word", is_flag=True, help="Mask whole words (from the tokenizer's offsets).")
@click.option("--prediction", type=click.Choice(["sparse", "dense"]), default="sparse",
              help="sparse: the MLM head only at masked positions; dense: everywhere (as transformers).")
@click.option("--packing", type=click.Choice(["full", "document"]), default="full",
              help="full: documents run on across sequences with a separator; document: one per sequence.")
@click.option("--split", type=click.Choice(["blank", "line"]), default="blank",
              help="Documents are separated by blank lines, or one per line.")
@click.option("--jsonl-field", help="Read JSON lines; this field of each record is a document.")
@click.option("--dropout", type=float, help="Dropout everywhere [default: the preset's].")
@click.option("--teacher", type=click.Path(exists=True, path_type=str), help="Teacher for distillation (DistilBERT).")
@click.option("--eval-lines", type=int, default=0, help="Hold out the last N documents for evaluation.")
@click.option("--eval-every", type=int, default=0, help="Evaluate (and redraw loss.png) every N steps.")
@click.option("--save-every", type=int, default=0, help="Checkpoint every N steps (and always at the end).")
@click.option("--keep", type=int, default=2, help="Keep the last K checkpoints.")
@click.option("--stats-every", type=int, default=100, help="Log per-layer activation/gradient statistics every N steps.")
@click.option("--resume", is_flag=True, help="Continue the run in --output-dir from its last checkpoint.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", help="Where to train.")
@click.option("--precision", type=click.Choice(["fp32", "bf16", "fp16"]), default="fp32", help="Autocast precision.")
@click.option("--compile", "compile_", is_flag=True, help="torch.compile the model.")
@click.option("--seed", type=int, default=0, help="Seed of the initialisation, order, masks and dropout.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=str),
              help="Where token shards are cached [default: the subword cache directory].")
@click.option("--progress", type=click.Choice(["auto", "bar", "json", "log", "none"]), default="auto",
              help="Progress on stderr: step, loss, tokens/s and time left. auto: redrawn in place on a terminal, "
                   "else a line every --progress-every (log); json: JSON lines; none.")
@click.option("--progress-every", type=Duration(), default="30s", metavar="DURATION",
              help="Seconds between two progress lines when stderr is not a terminal (--progress log).")
@click.option("-q", "--quiet", is_flag=True, help="No progress and no summary.")
def pretrain_command(inputs: tuple[str, ...], model: str, preset: str, tokenizer: str, output_dir: str,
                     compile_: bool, progress: str, progress_every: float, quiet: bool, **options: Any) -> None:
    """Pretrain a BERT-family encoder on a tokenizer's vocabulary (the built-in corpus without INPUT).

    Writes to --output-dir: log.jsonl (one JSON line per step), loss.png, checkpoints/, model/ (for
    `subword fill-mask -m DIR`) and hf/ (transformers' format). Ctrl-C stops after the current step,
    writes a checkpoint and prints the command that resumes it (exit 130); --resume continues a run
    exactly where its last checkpoint left it.
    """
    from models.pretrain import PretrainConfig, PretrainError, TrainingDiverged, pretrain

    if options["steps"] is None and options["tokens"] is None and options["time_budget"] is None:
        raise click.UsageError("say how long to train: --steps N, --tokens N or --time-budget 30m")
    if progress_every <= 0:
        raise click.BadParameter("must be positive", param_hint="--progress-every")
    try:
        cfg = PretrainConfig(model=model, preset=preset, tokenizer=tokenizer, output_dir=output_dir,
                             inputs=list(inputs), compile=compile_, **options).resolved()
    except PretrainError as exc:
        raise click.UsageError(str(exc)) from exc
    if not quiet:  # what the loop says it does (resuming, the schedule) is worth a line
        named = logging.getLogger("models")
        named.setLevel(min(logging.INFO, named.getEffectiveLevel()))
    reporter = TrainingProgress(resolve_mode(progress, quiet, not_a_terminal="log"),  # type: ignore[arg-type]
                                every=progress_every)
    try:
        result = pretrain(cfg, progress=reporter, on_row=reporter.row)
    except (PretrainError, TrainingDiverged) as exc:
        raise click.ClickException(str(exc)) from exc
    except KeyboardInterrupt as exc:
        reporter.close()
        click.echo(_interrupted(exc, Path(output_dir)), err=True)
        raise click.exceptions.Exit(130) from None
    finally:
        reporter.close()
    if result.get("already_finished"):
        click.echo(result["already_finished"], err=True)
        return
    if not quiet:
        summary = {k: v for k, v in result.items() if k != "hf_note"}
        click.echo(json.dumps(summary), err=True)
        if result.get("hf_note"):
            click.echo(f"note: {result['hf_note']}", err=True)
        elif result.get("hf"):
            click.echo(f"transformers: AutoModelForMaskedLM.from_pretrained({str(Path(result['hf']))!r})", err=True)


def _interrupted(exc: BaseException, output_dir: Path) -> str:
    """What Ctrl-C left: the checkpoint and the command that resumes it (or that there is none)."""
    from models.pretrain import PretrainInterrupted, find_checkpoints

    resume = _resume_command()
    if isinstance(exc, PretrainInterrupted):
        return (f"Interrupted after step {exc.step}: saved {exc.checkpoint}. Resume with:\n  {resume}")
    ckpts = find_checkpoints(output_dir)
    if ckpts:
        step = int(ckpts[-1].stem.split("-")[1])
        return (f"Interrupted; the last checkpoint is {ckpts[-1]} (step {step}; the steps after it are lost). "
                f"Resume with:\n  {resume}")
    return "Interrupted before the first checkpoint was written: there is nothing to resume; run the command again."


def _resume_command() -> str:
    """This command as typed (options given on the command line, values as parsed), with --resume."""
    ctx = click.get_current_context()
    words = ["subword", ctx.info_name or "pretrain"]
    positional: list[str] = []
    for param in ctx.command.params:
        name = param.name or ""
        if ctx.get_parameter_source(name) != click.core.ParameterSource.COMMANDLINE or name == "resume":
            continue
        value = ctx.params.get(name)
        if isinstance(param, click.Argument):
            positional += [str(v) for v in (value if isinstance(value, (list, tuple)) else [value])]
        elif isinstance(param, click.Option) and param.is_flag:
            words.append(param.opts[0] if value else (param.secondary_opts or [param.opts[0]])[0])
        else:
            shown = f"{value:g}s" if isinstance(param.type, Duration) else str(value)
            words += [max(param.opts, key=len), shown]
    return shlex.join([*words, "--resume", *positional])
