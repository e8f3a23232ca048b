"""The study document (JSON), its terminal view and its HTML page.

The document gathers, per tokenizer, the intrinsic metrics of the comparison (with their 95% block-bootstrap
intervals) and the extrinsic measures of its models (mean over seeds, with the spread), then the rank
correlation of every intrinsic metric with every extrinsic measure across tokenizers, the loss curves
against bytes of text seen, and the verdict. Everything but ``timings`` is a function of the study's plan
and data, so a resumed study gives the same document as an uninterrupted one.

>>> spearman([1, 2, 3, 4], [10, 20, 40, 30])
0.8
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np

__all__ = ["build_document", "render_terminal", "render_html", "spearman", "spearman_interval", "spearman_p_value",
           "INTRINSIC", "EXTRINSIC"]

#: 2: the verdict weighs a difference against the measurement's noise too (``noise_se``, ``status``, ...),
#: and results keep per-line bits. Every field of 1 is still there with its meaning.
SCHEMA = "subword-study-2"
#: The verdict's level: a difference is beyond the noise when it exceeds Z_NOISE standard errors
#: (two-sided 5%).
Z_NOISE = 1.96
#: The comparison's metrics the study relates to the models (the compare metric names).
INTRINSIC = ["tokens_per_word", "bytes_per_token", "continued_words", "renyi_efficiency", "shannon_efficiency",
             "vocab_utilization", "type_token_ratio"]
#: Extrinsic measures: name -> (label, lower is better).
EXTRINSIC = {"pll_bits_per_byte": ("PLL-word-l2r bits/byte", True), "bits_per_byte": ("bits/byte", True),
             "cloze_accuracy": ("whole-word cloze accuracy", False)}


def _ranks(values: list[float]) -> np.ndarray:
    """Average ranks (ties share the mean of their positions)."""
    x = np.asarray(values, dtype=float)
    order = np.argsort(x, kind="stable")
    ranks = np.empty(len(x))
    i = 0
    while i < len(x):
        j = i
        while j + 1 < len(x) and x[order[j + 1]] == x[order[i]]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman's rank correlation (Pearson's r of average ranks); ``None`` when a side is constant."""
    ra, rb = _ranks(a), _ranks(b)
    if len(a) < 2 or ra.std() == 0 or rb.std() == 0:
        return None
    return round(float(np.corrcoef(ra, rb)[0, 1]), 12)  # rounding noise off: a perfect order gives 1.0


def _row_ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks along the last axis (ties share the mean of their positions), for many rows at once:
    ``rank_i = #{j: x_j < x_i} + (#{j: x_j = x_i} + 1) / 2`` (n is a handful of tokenizers: n x n per row)."""
    less = (x[..., None, :] < x[..., :, None]).sum(-1)
    equal = (x[..., None, :] == x[..., :, None]).sum(-1)
    return less + (equal + 1) / 2


def _row_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of each row pair (NaN where a row is constant), rounded as :func:`spearman` rounds."""
    xc = x - x.mean(-1, keepdims=True)
    yc = y - y.mean(-1, keepdims=True)
    den = np.sqrt((xc * xc).sum(-1) * (yc * yc).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (xc * yc).sum(-1) / den
    r[~(den > 0) | (xc.std(-1) == 0) | (yc.std(-1) == 0)] = np.nan
    return np.round(np.clip(r, -1.0, 1.0), 12)


def spearman_interval(a: list[float], b: list[float], *, replicates: int = 2000, seed: int = 0,
                      level: float = 0.95) -> list[float | None]:
    """Percentile bootstrap interval of :func:`spearman`, resampling tokenizers (pairs) with replacement.

    With a handful of tokenizers the interval is wide, and it says so: that is the uncertainty of a
    correlation across so few points. Replicates where a side is constant are skipped. The replicates are
    computed together (arrays of ranks), not one :func:`spearman` call each: 14 correlations of 4 tokenizers
    took 1.8 s one by one.

    >>> lo, hi = spearman_interval([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6])
    >>> lo, hi
    (1.0, 1.0)
    """
    n = len(a)
    if n < 3:
        return [None, None]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(replicates, n))
    rho = _row_pearson(_row_ranks(np.asarray(a, dtype=float)[picks]), _row_ranks(np.asarray(b, dtype=float)[picks]))
    values = rho[~np.isnan(rho)]
    if len(values) < replicates // 10:
        return [None, None]
    tail = (1 - level) / 2 * 100
    return [float(np.percentile(values, tail)), float(np.percentile(values, 100 - tail))]


def spearman_p_value(a: list[float], b: list[float], *, exact_up_to: int = 8, replicates: int = 10000,
                     seed: int = 0) -> float | None:
    """Two-sided permutation p-value of :func:`spearman`: the share of orderings of ``b`` whose |rho| is at
    least the observed one (every ordering up to ``exact_up_to`` points, else ``replicates`` random ones).

    With n points the smallest p is 2 / n! (a perfect order of 4 tokenizers: 2/24 = 0.083), which is the
    caution a bootstrap interval over 4 points does not give (resampling a perfect order keeps it perfect).
    The ranks of a reordered ``b`` are its ranks reordered, so every ordering is one row of an array (8
    tokenizers: 40,320 orderings, 3 s each correlation one by one).

    >>> round(spearman_p_value([1, 2, 3, 4], [1, 2, 3, 4]), 4)
    0.0833
    """
    import itertools

    observed = spearman(a, b)
    if observed is None:
        return None
    n = len(b)
    if n <= exact_up_to:
        orders = np.array(list(itertools.permutations(range(n))), dtype=np.intp)
    else:
        rng = np.random.default_rng(seed)
        orders = np.array([rng.permutation(n) for _ in range(replicates)], dtype=np.intp)
    ra, rb = _ranks(a), _ranks(b)
    rho = _row_pearson(np.broadcast_to(ra, orders.shape), rb[orders])
    return int((np.abs(rho) >= abs(observed) - 1e-9).sum()) / len(orders)


def _spread(values: list[float], words: int | None = None) -> dict[str, Any]:
    arr = np.asarray(values, dtype=float)
    out = {"mean": float(arr.mean()), "std": float(arr.std(ddof=1)) if len(arr) > 1 else None,
           "min": float(arr.min()), "max": float(arr.max()), "seeds": [float(v) for v in values]}
    if words is not None:
        out["words"] = int(words)  # the proportion's n (the same held-out words for every seed)
    return out


def build_document(prepared: Any, compare_doc: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    """The study document from the plan, the comparison document and the tasks' results."""
    from subword.study.spec import parse_budget

    plan = prepared.plan
    budget = parse_budget(plan.budget)
    by_name = {t["name"]: t for t in compare_doc["tokenizers"]}
    measures = [m for m in EXTRINSIC if any(r["scores"].get(m) is not None for r in results)]
    tokenizers = []
    for spec in prepared.specs:
        t = by_name[spec.name]
        mine = [r for r in results if r["name"] == spec.name]
        tokenizers.append({
            "name": spec.name, "source": spec.text, "kind": spec.kind, "tokenizer_kind": t.get("kind"),
            "vocab_size": t.get("vocab_size"),
            "intrinsic": {m: t["metrics"][m] for m in INTRINSIC if m in t["metrics"]},
            "extrinsic": {m: _spread([r["scores"][m] for r in mine],
                                     words=mine[0]["scores"].get("cloze_words") if m == "cloze_accuracy" else None)
                          for m in measures},
            "cloze_bands": _bands(mine),
            "runs": [{"seed": r["seed"], "steps": r["steps"], "tokens": r["tokens"], "bytes_seen": r["bytes_seen"],
                      "final_loss": r["final_loss"]} for r in mine],
        })
    correlations = []
    for m in INTRINSIC:
        for e in measures:
            xs = [t["intrinsic"][m]["value"] for t in tokenizers if m in t["intrinsic"]]
            ys = [t["extrinsic"][e]["mean"] for t in tokenizers if m in t["intrinsic"]]
            if len(xs) != len(tokenizers) or any(v is None for v in xs + ys):
                continue
            correlations.append({"intrinsic": m, "extrinsic": e, "n": len(xs), "spearman": spearman(xs, ys),
                                 "ci": spearman_interval(xs, ys, seed=plan.seed),
                                 "p_value": spearman_p_value(xs, ys, seed=plan.seed)})
    return {
        "schema": SCHEMA,
        "plan": {k: getattr(plan, k) for k in plan.__dataclass_fields__},
        "budget": {"kind": budget.kind, "value": budget.value, "description": budget.describe(),
                   "embedding_init": "shared (rows of token strings shared between vocabularies start alike)"},
        "heldout": {"lines": len(prepared.heldout), "bytes": sum(len(x.encode("utf-8")) + 1 for x in prepared.heldout)},
        "measures": {m: {"label": EXTRINSIC[m][0], "lower_is_better": EXTRINSIC[m][1]} for m in measures},
        "tokenizers": tokenizers,
        "correlations": correlations,
        "verdict": _verdict(tokenizers, measures, results),
        "curves": [{"name": r["name"], "seed": r["seed"], "points": r["curve"]} for r in results],
    }


def _bands(results: list[dict[str, Any]]) -> dict[str, Any]:
    bands: dict[str, Any] = {}
    for r in results:
        for band, entry in (r["scores"].get("cloze_bands") or {}).items():
            slot = bands.setdefault(band, {"words": entry["words"], "accuracy": []})
            if entry["accuracy"] is not None:
                slot["accuracy"].append(entry["accuracy"])
    return {b: {"words": v["words"], "accuracy": float(np.mean(v["accuracy"])) if v["accuracy"] else None}
            for b, v in bands.items()}


def _per_line_bits(results: list[dict[str, Any]], name: str, measure: str) -> tuple[list[float], list[int]] | None:
    """Per held-out line: the bits of ``measure`` averaged over the seeds of ``name``, and the line's bytes;
    ``None`` when a result does not hold them (a study written before they were kept)."""
    rows = [r["scores"].get("per_line") for r in results if r["name"] == name]
    if not rows or any(not p or measure not in p for p in rows):
        return None
    line_bytes = rows[0]["bytes"]
    if any(p["bytes"] != line_bytes for p in rows):
        return None
    bits = np.mean([p[measure] for p in rows], axis=0)
    return [float(b) for b in bits], list(line_bytes)


def noise_se(measure: str, best: dict[str, Any], second: dict[str, Any],
             results: list[dict[str, Any]] | None) -> float | None:
    """Standard error of the difference between two tokenizers' means that comes from the held-out sample.

    - Per-byte measures: the two models score the same lines, so the difference is the ratio
      ``D = sum_i d_i / sum_i y_i`` of per-line bit differences ``d_i`` (each averaged over seeds) to bytes
      ``y_i``; its linearised (delta-method) standard error over n lines is
      ``sqrt(n / (n - 1) * sum_i (d_i - D y_i)^2) / sum_i y_i``.
    - Cloze accuracy, a proportion over n scored words: the pooled two-proportion standard error
      ``sqrt(p (1 - p) (1/n1 + 1/n2))`` with ``p = (p1 n1 + p2 n2) / (n1 + n2)``.

    ``None`` when the data are not there (per-line bits of an old study, word counts).

    >>> r = [{"name": "a", "scores": {"per_line": {"bytes": [10, 10], "bits_per_byte": [10.0, 12.0]}}},
    ...      {"name": "b", "scores": {"per_line": {"bytes": [10, 10], "bits_per_byte": [12.0, 12.0]}}}]
    >>> noise_se("bits_per_byte", {"name": "a"}, {"name": "b"}, r)
    0.1
    """
    if measure == "cloze_accuracy":
        p1, p2 = best["extrinsic"][measure]["mean"], second["extrinsic"][measure]["mean"]
        n1, n2 = best["extrinsic"][measure].get("words"), second["extrinsic"][measure].get("words")
        if not n1 or not n2:
            return None
        p = (p1 * n1 + p2 * n2) / (n1 + n2)
        return math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))
    if results is None:
        return None
    a, b = _per_line_bits(results, best["name"], measure), _per_line_bits(results, second["name"], measure)
    if a is None or b is None or a[1] != b[1] or len(a[1]) < 2:
        return None
    d = np.asarray(a[0]) - np.asarray(b[0])
    y = np.asarray(a[1], dtype=float)
    n, total = len(y), float(y.sum())
    diff = float(d.sum()) / total
    return round(float(math.sqrt(n / (n - 1) * float(((d - diff * y) ** 2).sum())) / total), 12)


def _verdict(tokenizers: list[dict[str, Any]], measures: list[str],
             results: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Per measure: the best tokenizer by mean over seeds, the runner-up, and whether their difference is
    beyond both the seeds' spread (the larger of the two ranges over seeds; unknown with one seed) and the
    measurement's noise (more than :data:`Z_NOISE` times :func:`noise_se`). ``status`` says which:
    ``tie``, ``within noise``, ``within spread``, ``spread unknown``, ``noise unknown`` or
    ``beyond spread and noise`` (``beyond`` is true only for the last)."""
    out = []
    for m in measures:
        lower = EXTRINSIC[m][1]
        ranked = sorted(tokenizers, key=lambda t: t["extrinsic"][m]["mean"] * (1 if lower else -1))
        best, second = ranked[0], ranked[1]
        b, s = best["extrinsic"][m], second["extrinsic"][m]
        diff = abs(b["mean"] - s["mean"])
        spread = max(b["max"] - b["min"], s["max"] - s["min"]) if len(b["seeds"]) > 1 else None
        se = noise_se(m, best, second, results)
        exceeds_noise = None if se is None else diff > Z_NOISE * se
        exceeds_spread = None if spread is None else diff > spread
        if diff == 0:
            status = "tie"
        elif exceeds_noise is False:
            status = "within noise"
        elif exceeds_spread is False:
            status = "within spread"
        elif exceeds_spread is None:
            status = "spread unknown"
        elif exceeds_noise is None:
            status = "noise unknown"
        else:
            status = "beyond spread and noise"
        out.append({"measure": m, "best": best["name"] if diff > 0 else None, "tied": diff == 0,
                    "runner_up": second["name"], "difference": diff,
                    "spread": spread, "exceeds_spread": exceeds_spread,
                    "noise_se": se, "z": Z_NOISE, "exceeds_noise": exceeds_noise,
                    "beyond": status == "beyond spread and noise", "status": status})
    return out


# ==== terminal ====


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return f"{x:,}" if isinstance(x, int) else str(x)


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]


def _how(v: dict[str, Any]) -> str:
    """The verdict's reason in words: the difference, the spread, the noise and what they say."""
    if "status" not in v:  # a subword-study-1 document: the spread only
        if v["exceeds_spread"] is None:
            return "one seed: the spread is unknown (use --seeds 2 or more)"
        return (f"the difference {_fmt(v['difference'], 4)} "
                + ("exceeds" if v["exceeds_spread"] else "is within") + f" the seeds' spread {_fmt(v['spread'], 4)}")
    noise = "noise unknown" if v["noise_se"] is None else f"noise {v['z']:.2f} SE = {_fmt(v['z'] * v['noise_se'], 4)}"
    spread = "spread unknown (one seed)" if v["spread"] is None else f"seeds' spread {_fmt(v['spread'], 4)}"
    verdict = {"within noise": "within noise", "within spread": "within the seeds' spread: not resolved",
               "spread unknown": "beyond noise; use --seeds 2 or more for the spread",
               "noise unknown": "beyond spread; noise unknown",
               "beyond spread and noise": "beyond spread and noise"}[v["status"]]
    return f"difference {_fmt(v['difference'], 4)}, {spread}, {noise}: {verdict}"


def render_terminal(doc: dict[str, Any]) -> str:
    """The intrinsic table, the extrinsic table and the verdict, as plain text."""
    toks = doc["tokenizers"]
    lines = [f"Study: {len(toks)} tokenizers, {doc['plan']['model']} {doc['plan']['preset']}, "
             f"{doc['plan']['seeds']} seed(s); {doc['budget']['description']}", "", "Intrinsic (held-out text, 95% CI)"]
    rows = [["metric", *[t["name"] for t in toks]]]
    for m in INTRINSIC:
        row = [m]
        for t in toks:
            e = t["intrinsic"].get(m)
            ci = e.get("ci") if e else None
            row.append("-" if not e else _fmt(e["value"]) + (f" [{_fmt(ci[0])}, {_fmt(ci[1])}]"
                                                          if ci and None not in ci else ""))
        rows.append(row)
    lines += _table(rows) + ["", "Extrinsic (mean over seeds ± sd; lower bits are better, higher accuracy)"]
    rows = [["measure", *[t["name"] for t in toks]]]
    for m, info in doc["measures"].items():
        rows.append([info["label"], *[_fmt(t["extrinsic"][m]["mean"], 4)
                                      + (f" ± {_fmt(t['extrinsic'][m]['std'], 4)}" if t["extrinsic"][m]["std"] is not None else "")
                                      for t in toks]])
    rows.append(["steps / bytes seen", *[", ".join(f"{r['steps']}/{r['bytes_seen']:,}" for r in t["runs"][:1])
                                         for t in toks]])
    lines += _table(rows) + ["", "Verdict"]
    for v in doc["verdict"]:
        label = doc["measures"][v["measure"]]["label"]
        if v.get("tied"):
            lines.append(f"  {label}: tie between {v['runner_up']} and the best (no difference)")
            continue
        how = _how(v)
        lines.append(f"  {label}: best {v['best']} (next {v['runner_up']}); {how}")
    strong = sorted((c for c in doc["correlations"] if c["spearman"] is not None),
                    key=lambda c: -abs(c["spearman"]))[:3]
    if strong:
        lines.append("  strongest rank correlations (intrinsic vs extrinsic, across tokenizers): " + "; ".join(
            f"{c['intrinsic']} vs {c['extrinsic']}: {c['spearman']:+.2f}"
            + (f" [{c['ci'][0]:+.2f}, {c['ci'][1]:+.2f}]" if None not in c["ci"] else " [n too small for an interval]")
            + (f" p = {c['p_value']:.2f}" if c.get("p_value") is not None else "")
            for c in strong))
        lines.append(f"  (n = {strong[0]['n']} tokenizers; p: exact permutation test of no association)")
    return "\n".join(lines) + "\n"


# ==== HTML ====


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


def _axis_range(values: list[float]) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    if lo == hi:
        lo, hi = lo - (abs(lo) or 1) * 0.05, hi + (abs(hi) or 1) * 0.05
    pad = (hi - lo) * 0.08
    return lo - pad, hi + pad


def _scatter(c: dict[str, Any], doc: dict[str, Any]) -> str:
    w, h, m = 300, 220, 44
    toks = doc["tokenizers"]
    xs = [t["intrinsic"][c["intrinsic"]]["value"] for t in toks]
    ys = [t["extrinsic"][c["extrinsic"]]["mean"] for t in toks]
    x0, x1 = _axis_range(xs)
    y0, y1 = _axis_range(ys)

    def px(x: float) -> float:
        return m + (x - x0) / (x1 - x0) * (w - m - 8)

    def py(y: float) -> float:
        return h - m + 8 - (y - y0) / (y1 - y0) * (h - m - 8)

    dots = "".join(
        f'<circle class="dot" cx="{px(x):.1f}" cy="{py(y):.1f}" r="5" fill="{_COLOURS[i % len(_COLOURS)]}">'
        f'<title>{_e(t["name"])}: {_e(_fmt(x))}, {_e(_fmt(y, 4))}</title></circle>'
        f'<text x="{px(x) + (7 if px(x) < w * 0.6 else -7):.1f}" y="{py(y) + 4:.1f}" font-size="10" '
        f'text-anchor="{"start" if px(x) < w * 0.6 else "end"}">{_e(t["name"])}</text>'
        for i, (t, x, y) in enumerate(zip(toks, xs, ys)))
    ticks = (f'<text x="{m}" y="{h - m + 20}" font-size="9" text-anchor="middle">{x0:.3g}</text>'
             f'<text x="{w - 8}" y="{h - m + 20}" font-size="9" text-anchor="end">{x1:.3g}</text>'
             f'<text x="{m - 3}" y="{h - m + 8}" font-size="9" text-anchor="end">{y0:.3g}</text>'
             f'<text x="{m - 3}" y="14" font-size="9" text-anchor="end">{y1:.3g}</text>')
    rho = "n/a" if c["spearman"] is None else f"{c['spearman']:+.2f}"
    ci = "" if None in c["ci"] else f" [{c['ci'][0]:+.2f}, {c['ci'][1]:+.2f}]"
    if c.get("p_value") is not None:
        ci += f", p = {c['p_value']:.2f}"
    label_y = doc["measures"][c["extrinsic"]]["label"]
    return (f'<figure class="scatter" data-intrinsic="{_e(c["intrinsic"])}" data-extrinsic="{_e(c["extrinsic"])}">'
            f'<svg viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{_e(c["intrinsic"])} vs {_e(label_y)}">'
            f'<line x1="{m}" y1="{h - m + 8}" x2="{w - 8}" y2="{h - m + 8}" stroke="#888"/>'
            f'<line x1="{m}" y1="8" x2="{m}" y2="{h - m + 8}" stroke="#888"/>'
            f'<text x="{w / 2}" y="{h - 4}" text-anchor="middle" font-size="11">{_e(c["intrinsic"])}</text>'
            f'<text x="10" y="{h / 2}" font-size="11" transform="rotate(-90 10 {h / 2})" text-anchor="middle">{_e(label_y)}</text>'
            f'{ticks}{dots}</svg><figcaption>Spearman ρ = <b class="rho">{_e(rho)}</b>{_e(ci)} (n = {c["n"]})</figcaption></figure>')


def _curves(doc: dict[str, Any]) -> str:
    w, h, m = 640, 300, 50
    curves = [c for c in doc["curves"] if c["points"]]
    if not curves:
        return ""
    xs = [p[2] for c in curves for p in c["points"]]
    ys = [p[3] for c in curves for p in c["points"] if p[3] is not None]
    x0, x1 = 0.0, max(xs) or 1.0
    y0, y1 = _axis_range(ys)
    names = [t["name"] for t in doc["tokenizers"]]
    paths = []
    for c in curves:
        colour = _COLOURS[names.index(c["name"]) % len(_COLOURS)]
        pts = " ".join(f"{m + p[2] / x1 * (w - m - 10):.1f},{h - m - (p[3] - y0) / (y1 - y0) * (h - m - 10):.1f}"
                       for p in c["points"] if p[3] is not None)
        paths.append(f'<polyline class="curve" fill="none" stroke="{colour}" stroke-width="1.5" points="{pts}">'
                     f'<title>{_e(c["name"])} seed {c["seed"]}</title></polyline>')
    legend = "".join(f'<span class="key"><i style="background:{_COLOURS[i % len(_COLOURS)]}"></i>{_e(n)}</span>'
                     for i, n in enumerate(names))
    return (f'<section class="card" id="curves"><h2>Loss against bytes of text seen</h2>'
            f'<svg viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="loss curves">'
            f'<line x1="{m}" y1="{h - m}" x2="{w - 10}" y2="{h - m}" stroke="#888"/>'
            f'<line x1="{m}" y1="10" x2="{m}" y2="{h - m}" stroke="#888"/>'
            f'<text x="{w / 2}" y="{h - 12}" text-anchor="middle" font-size="12">bytes of training text seen '
            f'(0 to {x1:,.0f})</text><text x="{m - 4}" y="14" text-anchor="end" font-size="11">{y1:.2f}</text>'
            f'<text x="{m - 4}" y="{h - m}" text-anchor="end" font-size="11">{y0:.2f}</text>{"".join(paths)}</svg>'
            f'<p class="legend">{legend}</p><p class="note">Training loss per token: its scale differs between '
            "vocabularies, so read the shapes and the extrinsic table, not the levels.</p></section>")


def render_html(doc: dict[str, Any], compare_doc: dict[str, Any] | None = None) -> str:
    """The study as one self-contained page in the compare report's style (its CSS, header and metric table).

    >>> page = render_html({"plan": {"model": "bert", "preset": "tiny", "seeds": 1}, "budget": {"description": "x"},
    ...     "tokenizers": [], "measures": {}, "correlations": [], "verdict": [], "curves": []})
    >>> page.startswith("<!DOCTYPE html>") and "Which vocabulary" in page
    True
    """
    from subword.compare.render_html import _metrics_section, _resource

    toks = doc["tokenizers"]
    head = "".join(f'<th class="num"><span class="tkname">{_e(t["name"])}</span></th>' for t in toks)
    rows = []
    for m, info in doc["measures"].items():
        means = [t["extrinsic"][m]["mean"] for t in toks]
        best_value = (min if info["lower_is_better"] else max)(means) if means else None
        # A star only for a unique best (a tie has none).
        top = next((t["name"] for t in toks if t["extrinsic"][m]["mean"] == best_value), None) \
            if means.count(best_value) == 1 else None
        cells = "".join(
            f'<td class="num{" best" if t["name"] == top else ""}" data-measure="{_e(m)}">'
            f'{_e(_fmt(t["extrinsic"][m]["mean"], 4))}{"<span class=star>★</span>" if t["name"] == top else ""}'
            + (f'<span class="ci">sd {_e(_fmt(t["extrinsic"][m]["std"], 4))} · range '
               f'{_e(_fmt(t["extrinsic"][m]["min"], 4))}–{_e(_fmt(t["extrinsic"][m]["max"], 4))}</span>'
               if t["extrinsic"][m]["std"] is not None else "") + "</td>" for t in toks)
        rows.append(f'<tr><th class="metric" scope="row">{_e(info["label"])}<small>'
                    f'{"lower" if info["lower_is_better"] else "higher"} is better</small></th>{cells}</tr>')
    extrinsic = (f'<section class="card" id="extrinsic"><h2>Models</h2><div class="scroll"><table class="metrics">'
                 f'<thead><tr><th></th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
                 f'<p class="note">{_e(doc["budget"]["description"])}; mean over {doc["plan"]["seeds"]} seed(s). '
                 "Definitions: docs/study.md.</p></section>")
    def how(v: dict[str, Any]) -> str:
        return "no difference" if v.get("tied") else _how(v)

    verdict = "".join(
        f'<li data-measure="{_e(v["measure"])}"><b>{_e(doc["measures"][v["measure"]]["label"])}</b>: best '
        f'<b class="best-name">{_e(v["best"] or "tie")}</b>, next {_e(v["runner_up"])}; {_e(how(v))}</li>'
        for v in doc["verdict"])
    scatters = "".join(_scatter(c, doc) for c in doc["correlations"])
    sections = [
        ("verdict", "Verdict", f'<section class="card" id="verdict"><h2>Verdict</h2><ul>{verdict}</ul></section>'),
        ("metrics", "Intrinsic", _metrics_section(compare_doc) if compare_doc else ""),
        ("extrinsic", "Models", extrinsic),
        ("scatter", "Did the metrics predict it?",
         f'<section class="card" id="scatter"><h2>Intrinsic metrics against the models</h2>'
         f'<div class="grid">{scatters}</div><p class="note">Each point is a tokenizer. Spearman rank correlation '
         "across tokenizers, with a 95% percentile bootstrap interval over tokenizers and a permutation p-value "
         "(with n tokenizers the smallest possible p is 2/n!: 0.083 for 4)."
         "</p></section>" if scatters else ""),
        ("curves", "Curves", _curves(doc)),
    ]
    present = [(sid, label) for sid, label, body in sections if body]
    toc = "".join(f'<a href="#{sid}">{_e(label)}</a>' for sid, label in present)
    names = ", ".join(t["name"] for t in toks)
    body = (f'<header class="top"><div class="wrap"><h1>Which vocabulary? {_e(names)}</h1><p class="sub">'
            f'{_e(doc["plan"]["model"])} {_e(doc["plan"]["preset"])} · {_e(doc["budget"]["description"])}</p>'
            f'<nav class="toc">{toc}</nav></div></header><main class="wrap">'
            + "".join(b for _, _, b in sections if b) + '</main><footer class="wrap">subword study · '
            f'{_e(doc.get("schema", SCHEMA))}</footer>')
    extra_css = (".grid{display:flex;flex-wrap:wrap;gap:12px}.scatter{margin:0}.scatter figcaption{font-size:12px}"
                 ".legend .key{margin-right:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}")
    page = _resource("report.html").replace("<!--TITLE-->", _e(f"Which vocabulary? {names}"))
    page = page.replace('content="subword compare"', 'content="subword study"')
    page = page.replace("<!--CSS-->", _resource("report.css") + "\n" + extra_css)
    page = page.replace("<!--JS-->", _resource("report.js"))
    return page.replace("<!--BODY-->", body)
