"""Running a study: check everything, then the parts in order, each one resumable.

The study directory (``--output-dir``) holds, each file written atomically (temp + rename):

```
plan.json                      what was asked (a --resume must ask the same)
data/heldout.txt               the held-out lines (compare + scoring)
data/train.txt                 the training text when the held-out lines were cut from its end
data/word_counts.json          how often each held-out word occurs in the training text (cloze bands)
tokenizers/<name>.json         each tokenizer, with the specials the model needs
compare/compare.json           the intrinsic comparison (subword compare's schema_version 2 document)
pretrain/<name>-seed<k>/       models.pretrain's output directory (checkpoints: exact resume)
results/<name>-seed<k>.json    the pretraining's summary, its scores and its loss curve (the part's marker)
study.json, report.html        the report
```

A part is done when its output exists; ``--resume`` skips done parts and continues a pretraining from its
last checkpoint (bit-exact on CPU: :mod:`models.pretrain`). Pretraining + scoring of one (tokenizer, seed)
is one task: tasks run in this process (``jobs=1``), in a pool of ``jobs`` processes, or on a Dask cluster.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from subword.formats.atomic import atomic_write_text
from subword.study.spec import Budget, StudyError, TokenizerSpec, parse_budget, parse_spec

__all__ = ["StudyPlan", "prepare", "run_study", "check_fits", "ROLE_TOKENS"]

log = logging.getLogger("subword.study")

#: The specials added to a trained (or tiktoken) vocabulary, one per role pretraining needs.
ROLE_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PLAN_VERSION = 1


@dataclass
class StudyPlan:
    """Everything that decides a study's results (stored as ``plan.json``; ``--resume`` must match it)."""

    tokenizers: list[str]
    train: list[str] = field(default_factory=list)
    heldout: list[str] = field(default_factory=list)
    heldout_lines: int = 200
    model: str = "bert"
    preset: str = "tiny"
    budget: str = "steps:100"
    seeds: int = 1
    seed: int = 0
    batch_size: int = 16
    seq_len: int = 64
    lr: float = 5e-4
    device: str = "cpu"
    bootstrap: int = 1000
    version: int = PLAN_VERSION

    def objective(self) -> str:
        """XLNet trains its permutation LM; every other model plain MLM (the scores are MLM scores)."""
        return "plm" if self.model == "xlnet" else "mlm"


@dataclass
class Prepared:
    """A plan checked against the world: its specs, budget, the lines and what to write first."""

    plan: StudyPlan
    specs: list[TokenizerSpec]
    budget: Budget
    heldout: list[str]
    train_lines: list[str] | None  # None: train on plan.train as they are
    given: dict[str, Any]  # name -> loaded tokenizer (files and tiktoken names)


def _read_lines(sources: Sequence[str]) -> list[str]:
    import corpora

    return [line.rstrip("\n").rstrip("\r") for line in corpora.CorpusReader(list(sources))]


def _with_roles(tokenizer: Any) -> Any:
    """Append the role tokens a vocabulary lacks (as special tokens, at the end)."""
    from models.pretrain import missing_roles, role_tokens

    missing = [role_tokens(role)[0] for role in missing_roles(tokenizer)]
    if missing:
        tokenizer.add_special_tokens(missing)
    return tokenizer


def _roles_first(tokenizer: Any) -> Any:
    """A tiktoken encoding with :data:`ROLE_TOKENS` at ids 0..4 and its own ranks shifted up by 5: the layout
    of a trained vocabulary, which every model takes (RoBERTa counts positions from its pad id, so a
    ``[PAD]`` appended at id 100,280 would leave it no positions). Encoding is unchanged but for the shift:
    the merges follow the ranks' order, which the shift keeps."""
    from subword import Tokenizer

    doc = json.loads(tokenizer.to_json_str(pretty=False))
    model = doc["model"]
    k = len(ROLE_TOKENS)
    model["vocab"] = {**{t: i for i, t in enumerate(ROLE_TOKENS)}, **{t: i + k for t, i in model["vocab"].items()}}
    for added in doc["added_tokens"]:
        added["id"] += k
    roles = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
              "special": True} for i, t in enumerate(ROLE_TOKENS)]
    doc["added_tokens"] = roles + doc["added_tokens"]
    return Tokenizer.from_str(json.dumps(doc))


class _TrainedLayout:
    """What a tokenizer the study trains will look like to a model, before it is trained: ``vocab_size``
    ids with :data:`ROLE_TOKENS` at 0..4 (``_train`` puts them first)."""

    def __init__(self, vocab_size: int) -> None:
        self.vocab_size = max(int(vocab_size), len(ROLE_TOKENS))

    def token_to_id(self, token: str) -> int | None:
        return ROLE_TOKENS.index(token) if token in ROLE_TOKENS else None

    def get_vocab_size(self) -> int:
        return self.vocab_size

    def get_vocab(self) -> dict[str, int]:
        return {t: i for i, t in enumerate(ROLE_TOKENS)} | {"": self.vocab_size - 1}


def check_fits(tokenizer: Any, plan: StudyPlan, where: str) -> None:
    """Refuse, in one line naming ``where`` and the missing role (or the limit), a tokenizer the plan's model
    cannot pretrain on.

    Raises:
        StudyError: a role without a token, or ids or a ``--seq-len`` the model's configuration refuses.
    """
    from models.pretrain import PretrainError, check_tokenizer_fits, missing_roles, role_tokens

    missing = missing_roles(tokenizer)
    if missing:
        names = "; ".join(f"{role} ({' or '.join(role_tokens(role))})" for role in missing)
        raise StudyError(f"-t {where}: lacks the special token for {names}, which --model {plan.model} needs; a given "
                         "file is used as it is: add the tokens to it (subword train --special-token) or let the "
                         "study train one")
    try:
        check_tokenizer_fits(plan.model, tokenizer, preset=plan.preset, objective=plan.objective(),
                             seq_len=plan.seq_len)
    except PretrainError as exc:
        raise StudyError(f"-t {where}: cannot pretrain {plan.model} on it: {exc}") from exc


def prepare(plan: StudyPlan) -> Prepared:
    """Check ``plan`` before anything is written.

    Raises:
        StudyError: a bad ``-t`` spec (with the grammar), duplicate names, a given tokenizer without the
            specials the model needs (with the reason), empty held-out text, a budget too small for one
            optimizer step, an unknown model or preset.
    """
    from models.pretrain import DEFAULTS
    from subword.compare.sources import TokenizerLoadError, load

    if len(plan.tokenizers) < 2:
        raise StudyError(f"a study compares at least two tokenizers (-t A -t B), got {len(plan.tokenizers)}")
    specs = [parse_spec(t) for t in plan.tokenizers]
    names = [s.name for s in specs]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise StudyError(f"two -t values give the same name {', '.join(dupes)}; give distinct tokenizers")
    budget = parse_budget(plan.budget)
    if plan.model not in DEFAULTS:
        raise StudyError(f"unknown --model {plan.model!r}; choose from {', '.join(DEFAULTS)}")
    if plan.seeds < 1 or plan.heldout_lines < 1 or plan.batch_size < 1 or plan.seq_len < 3:
        raise StudyError("--seeds, --heldout-lines and --batch-size must be at least 1, --seq-len at least 3")
    step_tokens = plan.batch_size * plan.seq_len
    if budget.kind == "tokens" and budget.value < step_tokens:
        raise StudyError(f"--budget {plan.budget} is too small for one optimizer step, which takes "
                         f"{step_tokens:,} tokens (--batch-size {plan.batch_size} x --seq-len {plan.seq_len})")
    if budget.kind == "bytes" and budget.value < step_tokens:
        # A token carries at least one byte of text in every tokenizer the study trains or loads.
        raise StudyError(f"--budget {plan.budget} is too small for one optimizer step, which takes "
                         f"{step_tokens:,} tokens, so at least {step_tokens:,} bytes of text")
    # Every tokenizer against the model's needs, before anything is trained or written.
    given: dict[str, Any] = {}
    for spec in specs:
        if spec.kind == "train":
            extra = [t for t in spec.options.get("special_tokens", []) if t not in ROLE_TOKENS]
            check_fits(_TrainedLayout(int(spec.options["vocab_size"]) + len(extra)), plan, spec.text)
            continue
        try:
            tok, _ = load(spec.text)
        except TokenizerLoadError as exc:
            raise StudyError(str(exc)) from exc
        if spec.kind == "tiktoken":
            tok = _roles_first(tok)  # a tiktoken encoding has no [MASK]: the roles go first (documented)
        check_fits(tok, plan, spec.text)
        given[spec.name] = tok
    train_lines = None
    if plan.heldout:
        heldout = [line for line in _read_lines(plan.heldout) if line.strip()][: plan.heldout_lines]
        where = ", ".join(plan.heldout)
    else:
        import corpora

        sources = plan.train or [str(corpora.builtin_corpus())]
        train_lines = _read_lines(sources)
        keep = [i for i, line in enumerate(train_lines) if line.strip()][-plan.heldout_lines:]
        heldout = [train_lines[i] for i in keep]
        if keep:
            cut = keep[0]
            train_lines = train_lines[:cut]
        where = f"the last {plan.heldout_lines} lines of {', '.join(sources)}"
        if not any(line.strip() for line in train_lines):
            raise StudyError(f"no training text is left once the held-out lines are cut from {', '.join(sources)}; "
                             "give --heldout FILE")
    if not heldout:
        raise StudyError(f"the held-out text is empty: no text in {where}")
    return Prepared(plan, specs, budget, heldout, train_lines, given)


# ==== the study directory ====


class StudyDir:
    """Paths of a study directory and its atomic writes."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    def write_json(self, rel: str, doc: Any) -> Path:
        p = self.path(rel)
        p.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(p, json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=False) + "\n")
        return p

    def read_json(self, rel: str) -> Any:
        return json.loads(self.path(rel).read_text(encoding="utf-8"))

    def done(self, rel: str) -> bool:
        return self.path(rel).exists()


def _open_dir(prepared: Prepared, output_dir: str | os.PathLike[str], resume: bool) -> StudyDir:
    d = StudyDir(output_dir)
    plan_doc = asdict(prepared.plan)
    if d.done("plan.json"):
        if not resume:
            raise StudyError(f"{d.root} already holds a study; pass --resume to continue it or choose another "
                             "--output-dir")
        old = d.read_json("plan.json")
        changed = sorted(k for k in set(old) | set(plan_doc) if old.get(k) != plan_doc.get(k))
        if changed:
            raise StudyError(f"--resume: the study in {d.root} was started with other settings ("
                             + "; ".join(f"{k}: {old.get(k)!r} -> {plan_doc.get(k)!r}" for k in changed)
                             + "); give the same options or another --output-dir")
        return d
    if d.root.exists() and any(d.root.iterdir()):
        raise StudyError(f"{d.root} is not empty and holds no study; choose another --output-dir")
    if resume:
        log.warning("--resume: %s holds no study yet; starting one", d.root)
    d.write_json("plan.json", plan_doc)
    return d


# ==== parts run in this process: data, tokenizers, compare ====


def _data_part(d: StudyDir, p: Prepared) -> list[str]:
    """Held-out text, training text and word counts; returns the training sources."""
    if p.train_lines is not None:
        if not d.done("data/train.txt"):
            d.path("data").mkdir(parents=True, exist_ok=True)
            atomic_write_text(d.path("data/train.txt"), "".join(line + "\n" for line in p.train_lines))
        train = [str(d.path("data/train.txt"))]
    else:
        import corpora

        train = p.plan.train or [str(corpora.builtin_corpus())]
    if not d.done("data/heldout.txt"):
        d.path("data").mkdir(parents=True, exist_ok=True)
        atomic_write_text(d.path("data/heldout.txt"), "".join(line + "\n" for line in p.heldout))
    if not d.done("data/word_counts.json"):
        wanted = {w for line in p.heldout for w in line.split()}
        counts: Counter[str] = Counter()
        lines = p.train_lines if p.train_lines is not None else _read_lines(train)
        for line in lines:
            counts.update(w for w in line.split() if w in wanted)
        d.write_json("data/word_counts.json", {w: counts.get(w, 0) for w in sorted(wanted)})
    return train


def tokenizer_file(d: StudyDir, name: str) -> Path:
    """Where the study keeps tokenizer ``name`` (a tokenizer.json: what pretraining stores and exports)."""
    return d.path("tokenizers", name + ".json")


def _train(spec: TokenizerSpec, train: list[str]) -> Any:
    """Train ``spec`` with the role tokens first in the vocabulary (ids 0..; RoBERTa counts positions from
    its pad id) through the trainer's ``special_tokens``, or appended after training for a trainer
    without that option."""
    from dataclasses import fields

    from subword.trainers import trainer_class
    from subword.trainers import train as train_tokenizer

    options = dict(spec.options)
    compat = options.pop("compat", None)
    cls = trainer_class(str(spec.algorithm), compat)
    if "special_tokens" in {f.name for f in fields(cls)}:
        given = list(options.get("special_tokens", []))
        options["special_tokens"] = [*(t for t in ROLE_TOKENS if t not in given), *given]
        if getattr(cls, "algorithm", "") == "unigram":
            options.setdefault("unk_piece", "[UNK]")  # HF's Unigram: the unk piece is one of the specials
    return _with_roles(train_tokenizer(str(spec.algorithm), train, compat=compat, **options))


def _tokenizer_part(d: StudyDir, p: Prepared, spec: TokenizerSpec, train: list[str], timings: dict[str, float]) -> None:
    if tokenizer_file(d, spec.name).exists():
        return
    t0 = time.perf_counter()
    if spec.kind == "train":
        tok = _train(spec, train)
        timings[f"train:{spec.name}"] = time.perf_counter() - t0
        check_fits(tok, p.plan, spec.text)  # the plan checked its layout; this is the tokenizer itself
    else:
        tok = p.given[spec.name]
    d.path("tokenizers").mkdir(parents=True, exist_ok=True)
    tok.save(tokenizer_file(d, spec.name))  # atomic (subword.formats)


def _compare_part(d: StudyDir, p: Prepared, timings: dict[str, float]) -> dict[str, Any]:
    if d.done("compare/compare.json"):
        return d.read_json("compare/compare.json")
    from subword import Tokenizer
    from subword.compare import compare

    toks = [Tokenizer.from_file(tokenizer_file(d, s.name)) for s in p.specs]
    t0 = time.perf_counter()
    result = compare(toks, p.heldout, [s.name for s in p.specs], sources=[s.text for s in p.specs],
                     bootstrap_replicates=p.plan.bootstrap, seed=p.plan.seed, show=5)
    timings["compare"] = time.perf_counter() - t0
    d.path("compare").mkdir(parents=True, exist_ok=True)
    atomic_write_text(d.path("compare/compare.json"), result.to_json() + "\n")
    return result.doc


# ==== a task: one pretraining and its scores (runs anywhere: this process, a pool, a Dask worker) ====


def _task_id(name: str, seed: int) -> str:
    return f"{name}-seed{seed}"


def _lengths(plan: StudyPlan, budget: Budget, bytes_per_token: float) -> dict[str, Any]:
    if budget.kind == "tokens":
        return {"tokens": int(budget.value)}
    if budget.kind == "bytes":
        return {"tokens": max(1, math.ceil(budget.value / bytes_per_token))}
    if budget.kind == "steps":
        return {"steps": int(budget.value)}
    return {"time_budget": float(budget.value)}


def run_task(task: dict[str, Any]) -> dict[str, Any]:
    """Pretrain one model and score it; returns (and writes, atomically) ``results/<name>-seed<k>.json``.

    ``task`` is plain data (picklable for a process pool or Dask): the study directory, the plan, the
    tokenizer's name, the seed, its bytes per token, and the thread count.
    """
    import torch

    from models.pretrain import PretrainConfig, find_checkpoints, iter_log, pretrain

    if task.get("threads"):
        torch.set_num_threads(int(task["threads"]))
    d = StudyDir(task["dir"])
    plan = StudyPlan(**task["plan"])
    name, seed, bpt = task["name"], int(task["seed"]), float(task["bytes_per_token"])
    tid = _task_id(name, seed)
    out = d.path("pretrain", tid)
    lengths = _lengths(plan, parse_budget(plan.budget), bpt)
    total = lengths.get("steps") or (math.ceil(lengths["tokens"] / (plan.batch_size * plan.seq_len))
                                     if "tokens" in lengths else None)
    cfg = PretrainConfig(
        model=plan.model, tokenizer=str(tokenizer_file(d, name)), output_dir=str(out),
        inputs=list(task["train"]), preset=plan.preset, batch_size=plan.batch_size, seq_len=plan.seq_len,
        lr=plan.lr, objective=plan.objective(), seed=seed, embedding_init="shared", device=plan.device,  # type: ignore[arg-type]
        cache_dir=str(d.path("cache")), save_every=max(1, (total or 80) // 8), keep=1,
        resume=bool(find_checkpoints(out)), **lengths)
    t0 = time.perf_counter()
    summary = pretrain(cfg)
    seconds = {"pretrain": time.perf_counter() - t0}
    t0 = time.perf_counter()
    scores = score_model(out, d.path("data/heldout.txt"), d.read_json("data/word_counts.json"), plan)
    seconds["score"] = time.perf_counter() - t0
    rows = [(r["step"], r["tokens"], r["loss"]) for r in iter_log(out / "log.jsonl") if "loss" in r]
    every = max(1, len(rows) // 100)
    curve = [[step, tokens, round(tokens * bpt), loss] for step, tokens, loss in rows[::every]]
    if rows and curve[-1][0] != rows[-1][0]:
        curve.append([rows[-1][0], rows[-1][1], round(rows[-1][1] * bpt), rows[-1][2]])
    result = {"name": name, "seed": seed, "steps": summary["step"], "tokens": summary["tokens"],
              "bytes_seen": round(summary["tokens"] * bpt), "final_loss": summary.get("loss"),
              "scores": scores, "curve": curve, "seconds": seconds}
    d.write_json(f"results/{tid}.json", result)
    return result


def score_model(model_dir: Path, heldout: Path, counts: dict[str, int], plan: StudyPlan) -> dict[str, Any]:
    """The tokenizer-independent measures of one pretrained model on the held-out lines."""
    from models import scoring
    from models.pretrain import load_pretrained

    model, tokenizer, ids = load_pretrained(model_dir)
    lines = [line.rstrip("\n") for line in heldout.read_text(encoding="utf-8").splitlines()]
    limit = getattr(model.config, "max_position_embeddings", plan.seq_len) if plan.model != "xlnet" else plan.seq_len
    frame = scoring.Frame(cls_id=ids["cls"], sep_id=ids["sep"], mask_id=ids["mask"], pad_id=ids["pad"],
                          max_len=min(plan.seq_len, int(limit)))
    encoded = scoring.encode_lines(tokenizer, lines)
    if plan.model == "xlnet":
        bpb = scoring.bits_per_byte(scoring.xlnet_predictor(model), tokenizer, lines, frame, encoded=encoded)
        return {"bits_per_byte": bpb["bits_per_byte"], "scored_tokens": bpb["tokens"], "bytes": bpb["bytes"],
                "per_line": _per_line("bits_per_byte", bpb)}
    predict = scoring.masked_predictor(model)
    pll = scoring.pll_per_byte(predict, tokenizer, lines, frame, encoded=encoded)
    cloze = scoring.cloze_accuracy(predict, tokenizer, lines, frame, counts, encoded=encoded)
    return {"pll_bits_per_byte": pll["bits_per_byte"], "cloze_accuracy": cloze["accuracy"],
            "cloze_bands": cloze["bands"], "cloze_words": cloze["words"], "scored_tokens": pll["tokens"],
            "bytes": pll["bytes"], "per_line": _per_line("pll_bits_per_byte", pll)}


def _per_line(measure: str, scored: dict[str, Any]) -> dict[str, Any]:
    """Each held-out line's bits (6 decimals) and bytes: the verdict's noise estimate of a per-byte measure."""
    return {"bytes": scored["line_bytes"], measure: [round(b, 6) for b in scored["line_bits"]]}


def _run_tasks(tasks: list[dict[str, Any]], jobs: int, dask: str | None,
               on_done: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    if not tasks:
        return []
    if dask:
        try:
            from dask.distributed import Client
        except ImportError as exc:
            raise StudyError("--dask needs the distributed package: pip install 'dask[distributed]'") from exc
        with Client(dask) as client:
            futures = [client.submit(run_task, t, pure=False, key=f"study-{t['name']}-{t['seed']}") for t in tasks]
            results = []
            for f in futures:
                results.append(f.result())
                on_done(results[-1])
            return results
    if jobs <= 1:
        results = []
        for t in tasks:
            results.append(run_task(t))
            on_done(results[-1])
        return results
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    # spawn: a fresh interpreter per worker (fork after torch's thread pools start is unsafe).
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = [pool.submit(run_task, t) for t in tasks]
        results = []
        for f in futures:
            results.append(f.result())
            on_done(results[-1])
        return results
    except (KeyboardInterrupt, BrokenProcessPool) as exc:
        # Ctrl-C reaches the workers too (one process group): each pretraining writes a checkpoint of its
        # last step and its worker stops, which breaks the pool. Start nothing more; --resume continues.
        pool.shutdown(wait=True, cancel_futures=True)
        raise KeyboardInterrupt("study interrupted") from exc
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)


def run_study(prepared: Prepared, output_dir: str | os.PathLike[str], *, resume: bool = False, jobs: int = 1,
              threads: int | None = None, dask: str | None = None,
              progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run (or continue) the study; returns the study document (also written to ``study.json``).

    Args:
        prepared: what :func:`prepare` checked.
        output_dir: the study directory (see the module docstring).
        resume: continue the study already there (same plan), skipping finished parts.
        jobs: tasks (pretraining + scoring) run at once in separate processes.
        threads: torch threads per task (default ``cpu_count // jobs``). On a machine shared with other
            work, 1 avoids torch's threads spinning against each other (20x slower steps were seen at a
            load of 7 on 2 cores). A bit-exact resume needs the same value (float sums follow the threads).
        dask: the address of a Dask scheduler: each task is submitted to the cluster instead (the workers
            must see ``output_dir`` at the same path: a shared file system).
        progress: called with a one-line message as parts finish.
    """
    from subword.study.report import build_document

    say = progress or (lambda msg: None)
    wall0 = time.perf_counter()
    timings: dict[str, float] = {}
    d = _open_dir(prepared, output_dir, resume)
    train = _data_part(d, prepared)
    for spec in prepared.specs:
        _tokenizer_part(d, prepared, spec, train, timings)
        say(f"tokenizer {spec.name} ready")
    compare_doc = _compare_part(d, prepared, timings)
    say("intrinsic comparison done")
    bpt = {t["name"]: float(t["metrics"]["bytes_per_token"]["value"]) for t in compare_doc["tokenizers"]}
    threads = threads or max(1, (os.cpu_count() or 1) // max(1, jobs))
    plan = prepared.plan
    tasks, results = [], []
    for spec in prepared.specs:
        for k in range(plan.seeds):
            tid = _task_id(spec.name, plan.seed + k)
            if d.done(f"results/{tid}.json"):
                results.append(d.read_json(f"results/{tid}.json"))
                continue
            tasks.append({"dir": str(d.root), "plan": asdict(plan), "name": spec.name, "seed": plan.seed + k,
                          "bytes_per_token": bpt[spec.name], "train": train, "threads": threads})

    def finished(r: dict[str, Any]) -> None:
        say(f"pretrained and scored {r['name']} seed {r['seed']} ({r['steps']} steps)")

    t0 = time.perf_counter()
    results += _run_tasks(tasks, jobs, dask, finished)
    timings["tasks_wall"] = time.perf_counter() - t0
    for r in results:
        for k, v in r.get("seconds", {}).items():
            timings[f"{k}:{r['name']}-seed{r['seed']}"] = v
    order = {(s.name, plan.seed + k): i for i, (s, k) in enumerate((s, k) for s in prepared.specs
                                                                      for k in range(plan.seeds))}
    results.sort(key=lambda r: order[(r["name"], r["seed"])])
    doc = build_document(prepared, compare_doc, results)
    timings["wall"] = time.perf_counter() - wall0
    doc["timings"] = _timing_summary(timings, jobs)
    d.write_json("study.json", doc)
    return doc


def _timing_summary(t: dict[str, float], jobs: int) -> dict[str, Any]:
    """Seconds per part this run (a resumed run times only what it ran), and the study's own overhead:
    the wall time not spent inside a training, the comparison, a pretraining or a scoring (sequential
    runs; with jobs > 1 the tasks' time is their wall time together)."""
    work_inline = sum(v for k, v in t.items() if k.startswith("train:") or k == "compare")
    task_work = sum(v for k, v in t.items() if k.startswith(("pretrain:", "score:")))
    tasks = task_work if jobs <= 1 else t.get("tasks_wall", 0.0)
    wall = t.get("wall", 0.0)
    overhead = max(0.0, wall - work_inline - tasks)
    return {"parts": {k: round(v, 3) for k, v in t.items()}, "wall_s": round(wall, 3), "jobs": jobs,
            "overhead_s": round(overhead, 3), "overhead_share": round(overhead / wall, 4) if wall else None}
