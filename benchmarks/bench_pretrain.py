"""Pretraining: ``subword pretrain`` against HF Trainer + DataCollatorForLanguageModeling + BertForMaskedLM.

Three measurements, side by side in one run:

* **Throughput** (tokens/s of whole optimizer steps, data pipeline included) for BERT tiny (64 x 2),
  mini (256 x 4) and base, MLM only, the same packed sequences, batch, AdamW settings and mask rate.
  Ours: :func:`models.pretrain.pretrain` (its token shards, packing, counter-based masking, sparse
  prediction). HF: ``Trainer`` with ``DataCollatorForLanguageModeling`` (mlm_probability = our mask
  rate) on ``group_texts``-style chunks, built as run_mlm.py does (texts tokenized with specials,
  concatenated per map batch of 1,000, cut into ``seq_len`` pieces, the remainder of each batch
  dropped), training ``BertForMaskedLM`` with the same initial weights. The first ``--warmup`` steps
  of each are not timed.
* **Equivalence**: ``--prediction dense`` with identical initial weights, batches and masks gives the
  per-step loss of ``BertForMaskedLM`` (same AdamW, clipping, schedule) within 1e-5 relative for
  ``--equiv-steps`` steps (fp32, CPU, no dropout). Exit status 1 if not.
* **Quality**: evaluation MLM loss (held-out documents, one fixed mask) of a tiny BERT trained by
  each for the same number of tokens; both curves in ``benchmarks/pretrain_quality.png``.

Usage::

    python benchmarks/bench_pretrain.py --quick        # tiny only, small batches and vocabulary: proves the script
    python benchmarks/bench_pretrain.py                # the full run (30k vocabulary, tiny/mini/base)
    python benchmarks/bench_pretrain.py --sizes tiny,mini   # those throughput rows only (a few minutes)

The RESULTS.md section is a table with one row per size, each noting when and how it was measured:
a run replaces the rows (and check lines) it measured and keeps the others as they were.

The load average is printed before and after (the machine may be shared).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from models.pretrain import PretrainConfig, _Job, _param_groups, iter_log, pretrain  # noqa: E402

SIZES: dict[str, dict[str, Any]] = {
    "tiny": {"preset": "tiny", "overrides": {}},
    "mini": {"preset": "small", "overrides": {"hidden_size": 256, "num_heads": 4, "intermediate_size": 1024}},
    "base": {"preset": "base", "overrides": {}},
}
START, END = "<!-- bench_pretrain:start -->", "<!-- bench_pretrain:end -->"


def load() -> str:
    """The 1/5/15-minute load averages as text."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# ==== Equivalence (also used by tests/test_pretrain.py) ====


def _hf_twin(job: _Job, directory: Path) -> torch.nn.Module:
    """transformers' BertForMaskedLM with the job's initial weights."""
    from transformers import BertForMaskedLM

    job.model.to_hf(directory)
    return BertForMaskedLM.from_pretrained(directory).to(job.device)


def hf_equivalence(config: PretrainConfig) -> tuple[list[float], list[float]]:
    """Per-step losses of our loop (``prediction="dense"``) and of BertForMaskedLM on the same batches.

    Both start from the same weights; each step uses the same examples and masks (our data
    pipeline's), the same learning rate, AdamW (decay on matrices only), and clipping.
    """
    cfg = config.resolved()
    if cfg.model != "bert" or cfg.objective != "mlm":
        raise ValueError("the equivalence check is for --model bert --objective mlm")
    job = _Job(cfg, progress=None, on_step=None)
    with tempfile.TemporaryDirectory() as d:
        hf = _hf_twin(job, Path(d))
    hf.train()
    opt = torch.optim.AdamW(_param_groups(hf, cfg.weight_decay), lr=cfg.lr, betas=tuple(cfg.betas), eps=cfg.eps,
                            fused=True)  # as ours, and as HF Trainer's default optim="adamw_torch_fused"
    ours, theirs = [], []
    for _ in range(job.total_steps() or 0):
        picks = job.order.take(job.global_batch)
        batch = job._batch(job.train_set, picks, job.mask_cfg, cfg.seed)
        row = job.train_step(picks)
        ours.append(float(row["loss"]))
        for g in opt.param_groups:
            g["lr"] = row["lr"]
        opt.zero_grad(set_to_none=True)
        out = hf(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                 token_type_ids=batch["token_type_ids"], labels=batch["labels"])
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(hf.parameters(), cfg.clip)
        opt.step()
        theirs.append(float(out.loss.detach()))
    return ours, theirs


# ==== HF Trainer baseline ====


def group_texts_like_run_mlm(tok: Any, docs: list[str], seq_len: int) -> list[dict[str, list[int]]]:
    """run_mlm.py's data: tokenize with specials, concatenate per 1,000 texts, cut into seq_len chunks."""
    out = []
    for s in range(0, len(docs), 1000):
        enc = tok(docs[s:s + 1000], return_special_tokens_mask=True)
        cat = {k: [t for row in v for t in row] for k, v in enc.items()}
        n = (len(cat["input_ids"]) // seq_len) * seq_len
        for i in range(0, n, seq_len):
            out.append({k: v[i:i + seq_len] for k, v in cat.items()})
    return out


def run_hf(job: _Job, docs: list[str], steps: int, warmup_steps: int, eval_every: int,
           eval_batches: list[dict[str, torch.Tensor]] | None) -> dict[str, Any]:
    """HF Trainer on BertForMaskedLM (the job's initial weights); tokens/s after warmup, eval curve."""
    from transformers import (AutoTokenizer, DataCollatorForLanguageModeling, Trainer, TrainerCallback,
                              TrainingArguments)

    cfg = job.cfg
    with tempfile.TemporaryDirectory() as d:
        model = _hf_twin(job, Path(d))
        job.tokenizer.save_pretrained(d, mask_token="[MASK]", cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]")
        tok = AutoTokenizer.from_pretrained(d)
    data = group_texts_like_run_mlm(tok, docs, cfg.seq_len)
    times: list[float] = []
    curve: list[tuple[int, float]] = []

    def eval_loss() -> float:
        model.eval()
        total, count = 0.0, 0
        with torch.no_grad():
            for b in eval_batches or []:
                logits = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"],
                               token_type_ids=b["token_type_ids"]).logits
                total += float(torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                                 b["labels"].reshape(-1), reduction="sum"))
                count += int((b["labels"] != -100).sum())
        model.train()
        return total / max(count, 1)

    class Clock(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            times.append(time.perf_counter())
            if eval_batches and eval_every and state.global_step % eval_every == 0:
                t = time.perf_counter()
                curve.append((state.global_step * cfg.batch_size * cfg.seq_len, eval_loss()))
                _pause.append(time.perf_counter() - t)

    _pause: list[float] = []
    with tempfile.TemporaryDirectory() as out_dir:
        args = TrainingArguments(
            output_dir=out_dir, max_steps=steps, per_device_train_batch_size=cfg.batch_size,
            learning_rate=cfg.lr, warmup_steps=cfg.warmup if cfg.warmup >= 1 else math.ceil(cfg.warmup * steps), weight_decay=cfg.weight_decay,
            adam_beta1=cfg.betas[0], adam_beta2=cfg.betas[1], adam_epsilon=cfg.eps, max_grad_norm=cfg.clip,
            lr_scheduler_type="linear", logging_steps=10**9, save_strategy="no", report_to=[],
            dataloader_num_workers=0, use_cpu=job.device.type == "cpu", disable_tqdm=True, seed=cfg.seed,
            bf16=cfg.precision == "bf16")
        collator = DataCollatorForLanguageModeling(tok, mlm_probability=cfg.mask_rate)
        trainer = Trainer(model=model, args=args, train_dataset=data, data_collator=collator,
                          callbacks=[Clock()])
        trainer.train()
    timed = times[warmup_steps:]
    # Evaluations (quality runs only) happen between steps; their time is taken out.
    span = timed[-1] - times[warmup_steps - 1] - sum(_pause) if timed else float("nan")
    n = len(timed) * cfg.batch_size * cfg.seq_len
    return {"tokens_per_s": n / span if span > 0 else float("nan"), "curve": curve}


# ==== Ours ====


def run_ours(cfg: PretrainConfig, warmup_steps: int) -> dict[str, Any]:
    """``subword pretrain`` in-process; tokens/s over the steps after warmup (pipeline included)."""
    pretrain(cfg)
    rows = [r for r in iter_log(Path(cfg.output_dir) / "log.jsonl") if "loss" in r]
    seconds, count = 0.0, 0
    for prev, r in zip(rows, rows[1:]):
        if r["step"] <= warmup_steps:
            continue
        step_tokens = r["tokens"] - prev["tokens"]  # each row's tokens_per_s is its step's tokens / time
        seconds += step_tokens / r["tokens_per_s"]
        count += step_tokens
    curve = [(r["tokens"], r["eval_loss"]) for r in iter_log(Path(cfg.output_dir) / "log.jsonl") if "eval_loss" in r]
    return {"tokens_per_s": count / seconds if seconds else float("nan"), "curve": curve}


def documents_text(job: _Job) -> list[str]:
    """The training documents as text for HF (decoded back is lossy; read them from the corpus instead)."""
    from models.data import read_documents

    docs = [" ".join(d) for d in read_documents(job.inputs, split=job.cfg.split)]
    return docs[:len(docs) - job.cfg.eval_lines] if job.cfg.eval_lines else docs


# ==== The RESULTS.md section, row by row ====

ROW = re.compile(r"^\| (\w+) \| ([\d,.]+|nan) \| ([\d,.]+|nan) \| ([\d.]+x|nanx) \|(?: (.*) \|)?$")
OLD_COMMAND = re.compile(r"^Command: `[^`]*` \(([^;]+); load before ([\d. ]+), after ([\d. ]+)\)\. BERT MLM only, "
                         r"(vocabulary \d+, batch \d+ x \d+, \d+ steps each \(\d+ untimed\), mask rate [\d.]+)")


@dataclass
class Section:
    """What the RESULTS.md section holds: the config, a row per size, the two check lines."""

    config: str = ""
    rows: dict[str, tuple[str, str, str, str]] = field(default_factory=dict)  # size -> ours, HF, ratio, measured
    equivalence: str = ""
    quality: str = ""


def parse_section(text: str) -> Section:
    """The section as :func:`render_section` writes it (or as the script wrote it before rows
    carried their own run: those rows are marked as from the earlier run, with its load).

    >>> old = ("Command: `python benchmarks/bench_pretrain.py` (x86_64, torch 2, 2 threads, device cpu, fp32; "
    ...        "load before 1.2 1.4 2.5, after 1.8 1.9 1.9). BERT MLM only, vocabulary 30000, batch 32 x 128, "
    ...        "30 steps each (3 untimed), mask rate 0.15, AdamW.\\n\\n| base | 187 | 155 | 1.21x |")
    >>> sec = parse_section(old)
    >>> sec.config, sec.rows["base"][2:]
    ('vocabulary 30000, batch 32 x 128, 30 steps each (3 untimed), mask rate 0.15; x86_64, torch 2, 2 threads, device cpu, fp32', ('1.21x', 'an earlier full run, load 1.2 1.4 2.5 -> 1.8 1.9 1.9'))
    """
    sec = Section()
    old_note = "an earlier run"
    for line in text.splitlines():
        if line.startswith("Config: "):
            sec.config = line[len("Config: "):].rstrip(".")
        elif m := OLD_COMMAND.match(line):
            sec.config = f"{m.group(4)}; {m.group(1)}"
            old_note = f"an earlier full run, load {m.group(2).strip()} -> {m.group(3).strip()}"
        elif m := ROW.match(line):
            sec.rows[m.group(1)] = (m.group(2), m.group(3), m.group(4), m.group(5) or old_note)
        elif line.startswith("Equivalence"):
            sec.equivalence = line if "(measured" in line else f"{line.rstrip('.')} (measured in {old_note})."
        elif line.startswith("Quality"):
            sec.quality = line if "(measured" in line else f"{line.rstrip('.')} (measured in {old_note})."
    return sec


def render_section(sec: Section) -> str:
    """The marked block for RESULTS.md; rows in the order tiny, mini, base."""
    lines = [START, "## Pretraining: `subword pretrain` vs HF Trainer + DataCollatorForLanguageModeling", "",
             "BERT MLM only (dynamic masking, dropout 0.1), the same packed data, batch, mask rate and AdamW "
             "settings on both sides; AdamW fused on both (HF Trainer's default `optim=\"adamw_torch_fused\"`). "
             "Tokens/s of whole optimizer steps after the untimed ones, data pipeline included.", "",
             f"Config: {sec.config}.", "",
             "Full run: `python benchmarks/bench_pretrain.py` (throughput of every size, equivalence, quality). "
             "Some sizes alone: `python benchmarks/bench_pretrain.py --sizes tiny,mini` (only those rows are "
             "replaced; each row says when it was measured, and the config of a row measured otherwise).", "",
             "| size | ours tokens/s | HF tokens/s | ratio | measured |", "|---|---:|---:|---:|---|"]
    for size in sorted(sec.rows, key=lambda k: (list(SIZES).index(k) if k in SIZES else len(SIZES), k)):
        o, h, r, note = sec.rows[size]
        lines.append(f"| {size} | {o} | {h} | {r} | {note} |")
    for check in (sec.equivalence, sec.quality):
        if check:
            lines += ["", check]
    return "\n".join(lines + [END])


def merge_section(old: Section, config: str, rows: dict[str, tuple[float, float]], note: str,
                  equivalence: str | None, quality: str | None) -> Section:
    """The old section with this run's rows and lines in place of theirs; the rest kept as it was.

    A kept row measured under another config says so in its note.

    >>> old = Section("c1", {"base": ("187", "155", "1.21x", "run A")}, "Equivalence x (measured A)", "Quality y (measured A)")
    >>> new = merge_section(old, "c1", {"tiny": (5000.0, 1000.0)}, "run B", None, None)
    >>> new.rows["tiny"], new.rows["base"][3], new.quality
    (('5,000', '1,000', '5.00x', 'run B'), 'run A', 'Quality y (measured A)')
    >>> merge_section(old, "c2", {}, "run B", None, None).rows["base"][3]
    'run A; config: c1'
    """
    kept = {}
    for size, (o, h, r, n) in old.rows.items():
        if size in rows:
            continue
        kept[size] = (o, h, r, n if old.config == config or "config:" in n else f"{n}; config: {old.config}")
    for size, (o, h) in rows.items():
        kept[size] = (f"{o:,.0f}", f"{h:,.0f}", f"{o / h:.2f}x", note)
    return Section(config, kept, equivalence if equivalence is not None else old.equivalence,
                   quality if quality is not None else old.quality)


def read_section(path: Path) -> Section:
    if not path.exists():
        return Section()
    text = path.read_text(encoding="utf-8")
    if START not in text or END not in text:
        return Section()
    return parse_section(text[text.index(START):text.index(END)])


# ==== The run ====


PARTS = ("throughput", "equivalence", "quality")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes: vocabulary 2000, tiny/mini, few steps")
    ap.add_argument("--sizes", default=None,
                    help="comma list of tiny,mini,base [all; tiny with --quick]; given alone, only their throughput "
                         "rows are measured and replaced (the other rows and the two checks are kept)")
    ap.add_argument("--parts", default=None,
                    help=f"comma list of {','.join(PARTS)} [all, or throughput when --sizes is given]")
    ap.add_argument("--vocab-size", type=int, default=None)
    ap.add_argument("--batch", type=int, default=None, help="[32; 8 with --quick]")
    ap.add_argument("--seq-len", type=int, default=None, help="[128; 64 with --quick]")
    ap.add_argument("--eval-docs", type=int, default=None, help="held-out documents [200; 40 with --quick]")
    ap.add_argument("--steps", type=int, default=None, help="timed + warmup steps per contestant")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--equiv-steps", type=int, default=None)
    ap.add_argument("--quality-steps", type=int, default=None)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--no-write", action="store_true", help="do not update RESULTS.md")
    a = ap.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    quick = a.quick
    sizes = (a.sizes or ("tiny" if quick else ",".join(SIZES))).split(",")
    unknown = [x for x in sizes if x not in SIZES]
    if unknown:
        ap.error(f"--sizes: unknown {', '.join(unknown)}; choose from {', '.join(SIZES)}")
    parts = (a.parts or ("throughput" if a.sizes else ",".join(PARTS))).split(",")
    if [x for x in parts if x not in PARTS]:
        ap.error(f"--parts: choose from {', '.join(PARTS)}")
    vocab = a.vocab_size or (2000 if quick else 30000)
    steps = a.steps or (8 if quick else 30)
    equiv_steps = a.equiv_steps or (10 if quick else 100)
    quality_steps = a.quality_steps or (20 if quick else 600)
    a.batch = a.batch or (8 if quick else 32)
    a.seq_len = a.seq_len or (64 if quick else 128)
    eval_docs = a.eval_docs or (40 if quick else 200)
    load_before = load()
    work = Path(tempfile.mkdtemp(prefix="bench_pretrain."))
    import corpora
    from subword.trainers import WordPieceTrainer, train_wordpiece

    corpus = corpora.builtin_corpus()
    lines = corpus.read_text(encoding="utf-8").splitlines(True)
    if quick:
        lines = lines[:20000]
    (work / "corpus.txt").write_text("".join(lines), encoding="utf-8")
    t0 = time.perf_counter()
    tok = train_wordpiece(lines, WordPieceTrainer(vocab_size=vocab))
    tok.save(work / "tok.json")
    print(f"vocabulary {tok.get_vocab_size()} trained in {time.perf_counter() - t0:.1f}s", file=sys.stderr)

    def config(name: str, size: str, **kw: Any) -> PretrainConfig:
        base = dict(model="bert", preset=SIZES[size]["preset"], model_overrides=SIZES[size]["overrides"],
                    tokenizer=str(work / "tok.json"), inputs=[str(work / "corpus.txt")], output_dir=str(work / name),
                    batch_size=a.batch, seq_len=a.seq_len, objective="mlm", stats_every=0, cache_dir=str(work / "cache"),
                    device=a.device, precision=a.precision, masking="dynamic")
        base.update(kw)
        return PretrainConfig(**base)

    rows: dict[str, tuple[float, float]] = {}
    for size in sizes if "throughput" in parts else []:
        cfg = config(f"ours-{size}", size, steps=steps)
        ours = run_ours(cfg, a.warmup)
        job = _Job(config(f"hf-{size}", size, steps=steps).resolved(), progress=None, on_step=None)
        hf = run_hf(job, documents_text(job), steps, a.warmup, 0, None)
        rows[size] = (ours["tokens_per_s"], hf["tokens_per_s"])
        print(f"{size}: ours {ours['tokens_per_s']:,.0f} tok/s, HF {hf['tokens_per_s']:,.0f} tok/s, "
              f"{ours['tokens_per_s'] / hf['tokens_per_s']:.2f}x (load {load()})", file=sys.stderr)

    worst = 0.0
    equivalence = quality = None
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    if "equivalence" in parts:
        ours_eq, hf_eq = hf_equivalence(config("equiv", "tiny", steps=equiv_steps, prediction="dense", dropout=0.0,
                                               device="cpu", precision="fp32"))
        worst = max(abs(x - y) / abs(y) for x, y in zip(ours_eq, hf_eq))
        print(f"equivalence over {equiv_steps} steps: worst relative difference {worst:.2e}", file=sys.stderr)
        equivalence = (f"Equivalence (`--prediction dense` vs `BertForMaskedLM`, same weights, batches and masks, "
                       f"fp32 CPU): worst relative per-step loss difference over {equiv_steps} steps {worst:.2e} "
                       f"(measured {stamp}).")
    if "quality" in parts:
        final_ours, final_hf = quality_run(a, work, config, quality_steps, eval_docs, tok.get_vocab_size())
        quality = (f"Quality (BERT tiny, {quality_steps} steps, eval MLM loss on {eval_docs} held-out documents, "
                   f"fixed mask): ours {final_ours:.3f}, HF {final_hf:.3f}; curves in "
                   f"`benchmarks/pretrain_quality.png` (measured {stamp}).")
    load_after = load()
    run_config = (f"vocabulary {tok.get_vocab_size()}, batch {a.batch} x {a.seq_len}, {steps} steps each "
                  f"({a.warmup} untimed), mask rate 0.15; {platform.processor() or platform.machine()}, "
                  f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {a.device}, {a.precision}")
    command = "python benchmarks/bench_pretrain.py" + (" " + " ".join(argv if argv is not None else sys.argv[1:])
                                                       if (argv if argv is not None else sys.argv[1:]) else "")
    note = f"{stamp}, `{command.strip()}`, load {load_before} -> {load_after}"
    path = ROOT / "benchmarks" / "RESULTS.md"
    section = merge_section(read_section(path), run_config, rows, note, equivalence, quality)
    block = render_section(section)
    print(block)
    if not a.no_write:
        from benchmarks.results_md import replace_section

        replace_section(block, START, END)
    return 0 if worst <= 1e-5 else 1


def quality_run(a: argparse.Namespace, work: Path, config: Callable[..., PretrainConfig], quality_steps: int,
                eval_docs: int, vocab: int) -> tuple[float, float]:
    """Eval loss curves of a tiny BERT, ours and HF's, for the same tokens; the PNG of both."""
    every = max(1, quality_steps // 10)
    qcfg = config("quality-ours", "tiny", steps=quality_steps, eval_lines=eval_docs, eval_every=every)
    q_ours = run_ours(qcfg, 0)
    job = _Job(config("quality-hf", "tiny", steps=quality_steps, eval_lines=eval_docs).resolved(), progress=None,
               on_step=None)
    n_eval = len(job.eval_set)
    eval_batches = [job._batch(job.eval_set, [(0, i) for i in range(s, min(n_eval, s + a.batch))], job.eval_mask_cfg,
                               job.cfg.seed + 1) for s in range(0, n_eval, a.batch)]
    q_hf = run_hf(job, documents_text(job), quality_steps, 1, every, eval_batches)
    png = (work if a.no_write else ROOT / "benchmarks") / "pretrain_quality.png"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(*zip(*q_ours["curve"]), "o-", label="subword pretrain (sparse prediction)")
    if q_hf["curve"]:
        ax.plot(*zip(*q_hf["curve"]), "s-", label="HF Trainer + DataCollatorForLanguageModeling")
    ax.set_xlabel("training tokens")
    ax.set_ylabel("eval MLM loss (fixed mask)")
    ax.set_title(f"BERT tiny, vocabulary {vocab}, batch {a.batch} x {a.seq_len}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    final_hf = q_hf["curve"][-1][1] if q_hf["curve"] else float("nan")
    return q_ours["curve"][-1][1], final_hf


if __name__ == "__main__":
    raise SystemExit(main())
