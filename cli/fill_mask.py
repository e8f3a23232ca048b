"""``subword fill-mask -m DIR "text with [MASK]"``: the top-k fillers of a pretrained model.

Reads the model ``subword pretrain`` exported (``DIR/model``) with its tokenizer; one line per
``[MASK]`` (or ``<mask>``) in the text: the candidates and their probabilities, or JSON with ``--json``.
"""

from __future__ import annotations

import json

import click

__all__ = ["fill_mask_command"]


EPILOG = """\b
Examples:
  subword fill-mask -m run "the [MASK] of the function"
  subword fill-mask -m run --top-k 10 --json "return the [MASK] of the list"
"""


@click.command("fill-mask", epilog=EPILOG)
@click.argument("text")
@click.option("--model", "-m", "model_dir", required=True, type=click.Path(exists=True, file_okay=False),
              help="The output directory of `subword pretrain` (or its model/ folder).")
@click.option("--top-k", "-k", type=int, default=5, help="Candidates per mask.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per mask.")
def fill_mask_command(text: str, model_dir: str, top_k: int, as_json: bool) -> None:
    """Print the most likely tokens for each [MASK] in TEXT."""
    import torch

    from models.pretrain import load_pretrained

    if top_k < 1:
        raise click.BadParameter("must be at least 1", param_hint="--top-k")
    model, tokenizer, ids = load_pretrained(model_dir)
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
    for pos in [i for i, t in enumerate(input_ids) if t == ids["mask"]]:
        p, top = probs[pos].topk(min(top_k, probs.shape[-1]))
        cands = [(tokenizer.id_to_token(int(i)), float(q)) for q, i in zip(p, top)]
        if as_json:
            click.echo(json.dumps({"position": pos, "candidates": [{"token": t, "score": s} for t, s in cands]}))
        else:
            click.echo(f"{pos}\t" + "  ".join(f"{t} {s:.3g}" for t, s in cands))
