"""``subword study``: the three jobs (train, compare, pretrain) as one experiment.

Parsing, progress and errors only: the work is :mod:`subword.study` (which composes the trainer registry,
``subword compare`` and ``models.pretrain``).
"""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["study_command"]

EPILOG = """\b
Examples:
  subword study -t bpe:8000 -t unigram:8000 -t wordpiece:8000 -t cl100k_base --output-dir study/
  subword study corpus.txt --heldout dev.txt -t bpe:8000 -t path/to/tokenizer.json \\
      --budget tokens:5M --seeds 2 --jobs 2 --output-dir study/ --html report.html
  subword study ... --output-dir study/ --resume      # continue after Ctrl-C or a crash
"""


@click.command("study", epilog=EPILOG)
@click.argument("train", nargs=-1, type=click.Path(exists=True, path_type=Path), metavar="[TRAIN...]")
@click.option("-t", "--tokenizer", "specs", multiple=True, required=True, metavar="SPEC",
              help="ALGORITHM:VOCAB_SIZE[:key=value...] to train (bpe, byte-bpe, wordpiece, unigram; the train "
                   "command's options), a tokenizer file, or a tiktoken name. Give it 2 or more times.")
@click.option("--heldout", multiple=True, type=click.Path(exists=True, path_type=Path), metavar="FILE",
              help="Held-out text for the comparison and the scores (default: the last --heldout-lines lines of "
                   "the training text, cut from it).")
@click.option("--heldout-lines", type=click.IntRange(min=1), default=200, help="Held-out lines used.")
@click.option("-o", "--output-dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The study directory (resumable).")
@click.option("--model", type=click.Choice(["bert", "roberta", "albert", "distilbert", "xlnet", "bigbird"]),
              default="bert", help="The model pretrained on every vocabulary (MLM; XLNet: permutation LM).")
@click.option("--preset", default="tiny", help="The model size preset.")
@click.option("--budget", default="steps:100", metavar="KIND:N",
              help="What every model gets the same of: tokens:N, bytes:N, time:10m or steps:N.")
@click.option("--seeds", type=click.IntRange(min=1), default=1, help="Pretrainings per tokenizer (seeds seed, seed+1, ...).")
@click.option("--seed", type=int, default=0, help="The first seed (also the bootstrap's).")
@click.option("--batch-size", type=click.IntRange(min=1), default=16, help="Sequences per optimizer step.")
@click.option("--seq-len", type=click.IntRange(min=3), default=64, help="Tokens per sequence.")
@click.option("--lr", type=float, default=5e-4, help="Peak learning rate.")
@click.option("--device", type=click.Choice(["cpu", "cuda", "auto"]), default="cpu", help="Where models train.")
@click.option("--bootstrap", type=click.IntRange(min=0), default=1000, help="Bootstrap replicates of the comparison.")
@click.option("--jobs", type=click.IntRange(min=1), default=1, help="Pretrainings run at once (processes).")
@click.option("--threads", type=click.IntRange(min=1), help="Torch threads per pretraining (default: cores / --jobs; "
              "1 on a busy machine). Resume with the same value for bit-exact results.")
@click.option("--dask", metavar="ADDRESS", help="Run each pretraining as a task on this Dask scheduler.")
@click.option("--resume", is_flag=True, help="Continue the study in --output-dir (same options).")
@click.option("--json", "json_out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the study document here.")
@click.option("--html", "html_out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the HTML report here (default: OUTPUT_DIR/report.html).")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines and no tables.")
def study_command(train: tuple[Path, ...], specs: tuple[str, ...], heldout: tuple[Path, ...], heldout_lines: int,
                  output_dir: Path, model: str, preset: str, budget: str, seeds: int, seed: int, batch_size: int,
                  seq_len: int, lr: float, device: str, bootstrap: int, jobs: int, threads: int | None, dask: str | None, resume: bool,
                  json_out: Path | None, html_out: Path | None, quiet: bool) -> None:
    """Which vocabulary should my model use? Train, compare, pretrain and score several tokenizers."""
    from subword.formats.atomic import atomic_write_text
    from subword.study import StudyError, StudyPlan, prepare, run_study
    from subword.study.report import render_html, render_terminal

    if len(specs) < 2:
        raise click.UsageError("give at least two tokenizers (-t A -t B)")
    if dask and jobs > 1:
        raise click.UsageError("--jobs and --dask do not go together (the cluster decides the parallelism)")
    plan = StudyPlan(tokenizers=list(specs), train=[str(p) for p in train], heldout=[str(p) for p in heldout],
                     heldout_lines=heldout_lines, model=model, preset=preset, budget=budget, seeds=seeds, seed=seed,
                     batch_size=batch_size, seq_len=seq_len, lr=lr, device=device, bootstrap=bootstrap)
    try:
        prepared = prepare(plan)
    except StudyError as exc:
        # A -t spec or --budget that does not parse is a usage error (exit 2); the rest exit 1.
        if "grammar" in str(exc):
            raise click.UsageError(str(exc)) from exc
        raise click.ClickException(str(exc)) from exc

    def say(msg: str) -> None:
        if not quiet:
            click.echo(f"study: {msg}", err=True)

    try:
        doc = run_study(prepared, output_dir, resume=resume, jobs=jobs, threads=threads, dask=dask, progress=say)
    except KeyboardInterrupt:
        click.echo(f"study: interrupted; the finished parts and the pretrainings' checkpoints are kept in "
                   f"{output_dir}: run the same command with --resume to continue", err=True)
        raise
    import json

    compare_doc = json.loads((output_dir / "compare" / "compare.json").read_text(encoding="utf-8"))
    page = render_html(doc, compare_doc)
    html_path = html_out or output_dir / "report.html"
    atomic_write_text(html_path, page)
    if json_out is not None:
        atomic_write_text(json_out, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    if not quiet:
        click.echo(render_terminal(doc), nl=False)
        t = doc["timings"]
        click.echo(f"Wrote {output_dir / 'study.json'} and {html_path}; {t['wall_s']:.1f} s, of which "
                   f"{t['overhead_s']:.1f} s outside trainings, comparison, pretrainings and scoring", err=True)
