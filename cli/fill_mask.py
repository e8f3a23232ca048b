"""``subword fill-mask -m DIR "text with [MASK]"``: the top-k fillers of a pretrained model.

Reads the model ``subword pretrain`` exported (``DIR`` or ``DIR/model``), or its transformers export
(``DIR/hf``), with its tokenizer. For each ``[MASK]`` (or ``<mask>``) in the text: the candidates, one per
line with their probabilities (under a ``[MASK] i of n`` header when the text holds several), or with
``--json`` one object per mask: ``{"mask": i, "position": p, "candidates": [{"token", "score"}]}``, where
``p`` is the mask's index among the model's input tokens (``[CLS]`` is 0).
"""

from __future__ import annotations

import json

import click

__all__ = ["fill_mask_command"]


EPILOG = """\b
Examples:
  subword fill-mask -m run "the [MASK] of the function"
  subword fill-mask -m run/hf "the [MASK] of the function"      # the transformers export reads the same
  subword fill-mask -m run --top-k 10 --json "return the [MASK] of the [MASK]"
"""


@click.command("fill-mask", epilog=EPILOG)
@click.argument("text")
@click.option("--model", "-m", "model_dir", required=True, type=click.Path(exists=True, file_okay=False),
              help="The output directory of `subword pretrain` (or its model/ or hf/ folder, or another "
                   "transformers checkpoint with its tokenizer.json).")
@click.option("--top-k", "-k", type=int, default=5, help="Candidates per mask.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per mask: mask (1, 2, ...), position "
              "(its index among the input tokens, [CLS] = 0) and candidates (token, score).")
def fill_mask_command(text: str, model_dir: str, top_k: int, as_json: bool) -> None:
    """Print the most likely tokens for each [MASK] in TEXT."""
    import torch

    from models.pretrain import PretrainError, load_pretrained

    if top_k < 1:
        raise click.BadParameter("must be at least 1", param_hint="--top-k")
    try:
        model, tokenizer, ids = load_pretrained(model_dir)
    except PretrainError as exc:
        raise click.ClickException(str(exc)) from exc
    mask_token = tokenizer.id_to_token(ids["mask"])
    if mask_token not in text:
        raise click.UsageError(f"the text holds no {mask_token} to fill")
    enc = tokenizer.encode(text, add_special_tokens=True)
    input_ids = list(enc.ids)
    if not input_ids or input_ids[0] != ids["cls"]:  # a tokenizer without a post-processor
        input_ids = [ids["cls"], *input_ids, ids["sep"]]
    limit = getattr(model.config, "max_sequence_length", len(input_ids))
    if len(input_ids) > limit:
        raise click.UsageError(f"the text is {len(input_ids)} tokens long; the model takes at most {limit}")
    x = torch.tensor([input_ids])
    with torch.no_grad():
        logits = model(x).logits[0]  # (T, V)
    probs = logits.softmax(-1)
    positions = [i for i, t in enumerate(input_ids) if t == ids["mask"]]
    for n, pos in enumerate(positions, start=1):
        p, top = probs[pos].topk(min(top_k, probs.shape[-1]))
        cands = [(tokenizer.id_to_token(int(i)), float(q)) for q, i in zip(p, top)]
        if as_json:
            click.echo(json.dumps({"mask": n, "position": pos,
                                   "candidates": [{"token": t, "score": s} for t, s in cands]}))
            continue
        if len(positions) > 1:
            click.echo(f"{mask_token} {n} of {len(positions)}:")
        indent = "  " if len(positions) > 1 else ""
        width = max(len(t) for t, _ in cands)
        for t, s in cands:
            click.echo(f"{indent}{t:<{width}}  {s:.3g}")
