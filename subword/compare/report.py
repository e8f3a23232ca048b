"""The comparison document: the pass, point values, the block bootstrap, pairs, attribution, samples.

The flow: :func:`~subword.compare.collect.collect` (the one pass, in the Rust core) -> per-line columns
and per-block type counts -> point values and block-bootstrap replicates of every metric
(:mod:`subword.compare.bootstrap`) -> pairwise tables, attribution, gold and parallel scores -> one JSON
document (schema in ``schema.json``, described in ``docs/compare.md``). :func:`subword.compare` checks
its arguments and calls :func:`build`.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from subword.compare import bootstrap
from subword.compare.align import gold_scores, prf, read_gold
from subword.compare.attribution import attribution, type_groups
from subword.compare.collect import Collected, collect
from subword.compare.metrics import (DISTRIBUTION_METRICS, METRICS, RENYI_ALPHA, best, distribution_metrics,
                                     distribution_point, ratio_metrics)
from subword.compare.vocab import tokenizer_kind

__all__ = ["build", "DISTRIBUTION_REPLICATES"]

#: Replicates of the distribution metrics (Rényi, Shannon, utilisation, TTR): each resamples the sparse
#: per-block type counts, so they use the first replicates of the shared draw.
DISTRIBUTION_REPLICATES = 200


def _num(x: Any) -> float | int | None:
    if x is None:
        return None
    v = float(x)
    if not math.isfinite(v):
        return None
    return int(v) if float(v).is_integer() and abs(v) < 2**53 and isinstance(x, (int, np.integer)) else v


def _ci(pair: tuple[float | None, float | None]) -> list[float | None]:
    return [_num(pair[0]), _num(pair[1])]


def _sample_indices(lines: Sequence[str], show: int, candidates: Sequence[int] | None = None) -> list[int]:
    """``show`` non-empty lines spread evenly over the input, in order (``candidates``: the lines that hold
    a character other than whitespace, when the caller knows them).

    >>> _sample_indices(["a", " ", "b", "c"], 2), _sample_indices([], 2, candidates=[0, 2, 3])
    ([0, 2], [0, 2])
    """
    if candidates is None:
        candidates = list(itertools.compress(range(len(lines)), map(str.strip, lines)))
    if show <= 0 or not candidates:
        return []
    if len(candidates) <= show:
        return list(candidates)
    step = len(candidates) / show
    return [candidates[int(i * step)] for i in range(show)]


def _columns(c: Collected) -> dict[str, np.ndarray]:
    """The per-line columns every ratio metric is a ratio of sums of."""
    cols: dict[str, np.ndarray] = {
        "lines": np.ones(c.n, np.int64), "chars": c.chars, "bytes": c.bytes, "words": c.words, "ws_words": c.ws_words,
    }
    for script, arr in c.script_words.items():
        cols[f"words:{script}"] = arr
    for i, d in enumerate(c.tokenizers):
        cols[f"{i}:tokens"] = d.tokens
        cols[f"{i}:continued"] = d.continued
        cols[f"{i}:unk"] = d.unk_chars
        cols[f"{i}:bytetok"] = d.byte_tokens
        cols[f"{i}:lossless"] = d.lossless
        cols[f"{i}:bnd"] = d.boundaries
        for script in c.script_words:
            cols[f"{i}:tokens:{script}"] = d.script_tokens.get(script, np.zeros(c.n, np.int64))
    for (a, b), arr in c.shared_boundaries.items():
        cols[f"{a}|{b}:shared"] = arr
    return cols


def _values(sums: Mapping[str, Any], k: int, scripts: Sequence[str]) -> dict[str, Any]:
    """All ratio metrics of all tokenizers and pairs, from sums (scalars or replicate arrays)."""
    out: dict[str, Any] = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(k):
            for name, v in ratio_metrics(sums, str(i), "0").items():
                out[f"{i}:{name}"] = v
            for script in scripts:
                out[f"{i}:script:{script}"] = np.true_divide(sums[f"{i}:tokens:{script}"], sums[f"words:{script}"])
        for a in range(k):
            for b in range(a + 1, k):
                out[f"{a}|{b}:f1"] = np.true_divide(2 * sums[f"{a}|{b}:shared"], sums[f"{a}:bnd"] + sums[f"{b}:bnd"])
    return out


def _replicates(c: Collected, columns: Mapping[str, np.ndarray], scripts: Sequence[str], replicates: int,
                seed: int) -> tuple[dict[str, np.ndarray], list[dict[str, np.ndarray]]]:
    """The block bootstrap: replicate values of every ratio metric (keys as :func:`_values` names them) and
    of each tokenizer's distribution metrics (the first :data:`DISTRIBUTION_REPLICATES` replicates)."""
    sums, weights = bootstrap.replicate_sums(columns, c.block_lines, replicates, seed)
    rep = _values(sums, len(c.tokenizers), scripts)
    take = weights[:DISTRIBUTION_REPLICATES]
    drep = [distribution_metrics(bootstrap.type_count_sums(d.block_types.matrix(d.table.size), take, RENYI_ALPHA),
                                 d.table.vocab_size) for d in c.tokenizers]
    return rep, drep


def _short_first(cores: set[bytes]) -> list[list[bytes]]:
    """The multi-byte cores of at most 6 bytes by length (``[k]``: those of ``k + 2`` bytes)."""
    by_length: list[list[bytes]] = [[] for _ in range(5)]
    for x in cores:
        if 1 < len(x) <= 6:
            by_length[len(x) - 2].append(x)
    return by_length


def _by_frequency(table: Any, counts: np.ndarray) -> list[bytes]:
    """The marker-free token strings (``VocabTable.core``) the text uses, most frequent first (then shortest,
    then in byte order): several ids can share one (``Ġthe`` and ``the``), their counts add up."""
    freq: dict[bytes, int] = {}
    used = np.flatnonzero(counts[: table.size])
    for key, c in zip([table.core[i] for i in used.tolist()], counts[used].tolist()):
        if key:
            freq[key] = freq.get(key, 0) + c
    return sorted(freq, key=lambda x: (-freq[x], len(x), x))


def _vocab_overlap(sa: set[bytes], sb: set[bytes], used_a: Sequence[bytes], used_b: Sequence[bytes],
                   examples: int = 10) -> dict[str, Any]:
    """Jaccard and the tokens unique to each, of two vocabularies' non-empty cores (``VocabTable.core``).

    The examples of what one has and the other lacks are the most frequent in the text (``used_*``: the
    cores the text uses, most frequent first, :func:`_by_frequency`), then the shortest multi-byte ones.

    >>> _vocab_overlap({b"ab", b"x"}, {b"ab", b"cd", b"e"}, [], [b"e"])["unique_b_examples"]
    ['e', 'cd']
    """
    shared = len(sa & sb)
    union = len(sa) + len(sb) - shared

    def show(mine: set[bytes], used: Sequence[bytes], other: set[bytes]) -> list[str]:
        picked = list(itertools.islice((x for x in used if x not in other), examples))
        if len(picked) < examples:  # then tokens the text never used: the shortest multi-byte ones first
            rest = mine - other - set(picked)
            for same_length in _short_first(rest):
                picked += sorted(same_length)[: examples - len(picked)]
                if len(picked) >= examples:
                    break
            if len(picked) < examples:
                rest -= set(picked)
                picked += sorted(rest, key=lambda x: (len(x) <= 1, len(x), x))[: examples - len(picked)]
        return [x.decode("utf-8", errors="backslashreplace") for x in picked]

    return {
        "vocab_jaccard": shared / union if union else None,
        "unique_a_count": len(sa) - shared, "unique_b_count": len(sb) - shared,
        "unique_a_examples": show(sa, used_a, sb), "unique_b_examples": show(sb, used_b, sa),
    }


def _speed(c: Collected, i: int, replicates: int, seed: int) -> dict[str, Any]:
    """Encode throughput, and its interval from a bootstrap over the timed chunks (none with one chunk)."""
    secs = np.array(c.tokenizers[i].chunk_seconds)
    sizes = np.array(c.chunk_bytes, dtype=np.float64)
    value = sizes.sum() / 1e6 / secs.sum() if secs.sum() > 0 else None
    if not replicates:
        return {"value": _num(value), "ci": [_num(value), _num(value)]}  # intervals off: they equal the value
    if len(secs) < 2 or value is None:
        return {"value": _num(value), "ci": [None, None]}  # one timing is not a distribution
    rng = np.random.default_rng([seed, i])
    idx = rng.integers(0, len(secs), size=(replicates, len(secs)))
    reps = sizes[idx].sum(axis=1) / 1e6 / secs[idx].sum(axis=1)
    return {"value": _num(value), "ci": _ci(bootstrap.interval(reps))}


def _sample_encodings(tokenizers: Sequence[Any], lines: Sequence[str], indices: Sequence[int]) -> list[dict[int, Any]]:
    """Per tokenizer, ``{line: Encoding}`` of the sample lines."""
    out: list[dict[int, Any]] = []
    for tok in tokenizers:
        encs = tok.encode_batch([lines[i] for i in indices], add_special_tokens=False) if indices else []
        out.append(dict(zip(indices, encs)))
    return out


def build(tokenizers: Sequence[Any], names: Sequence[str], lines: Sequence[str], *, sources: Sequence[str] | None,
          inputs: Mapping[str, Any] | None, show: int, bootstrap_replicates: int, seed: int, gold: Any,
          parallel: Mapping[str, Sequence[str]] | None, pivot: str | None, top_words: int) -> dict[str, Any]:
    """The comparison document of ``tokenizers`` (padding and truncation off) on ``lines`` (checked by the caller)."""
    from subword.compare.samples import build_samples

    n = len(lines)
    c = collect(tokenizers, names, lines, bootstrap.block_length(n))
    k = len(tokenizers)
    scripts = sorted(c.script_words)
    # A line holds a character other than whitespace exactly when it has a whitespace-split word.
    indices = _sample_indices(lines, show, np.flatnonzero(c.ws_words).tolist())

    columns = _columns(c)
    point = _values({name: np.float64(arr.sum()) for name, arr in columns.items()}, k, scripts)
    id_counts = [d.block_types.id_counts(d.table.size) for d in c.tokenizers]
    dist_point = [distribution_point(counts, d.table.vocab_size) for counts, d in zip(id_counts, c.tokenizers)]
    # The bootstrap runs on a worker thread (numpy and scipy release the GIL in their products) while the
    # parts that do not need its replicates are built on this one.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="compare-bootstrap") as pool:
        resampled = pool.submit(_replicates, c, columns, scripts, bootstrap_replicates, seed) \
            if bootstrap_replicates else None
        cores = [set(d.table.core) - {b""} for d in c.tokenizers]
        used = [_by_frequency(d.table, counts) for d, counts in zip(c.tokenizers, id_counts)]
        overlaps = {(a, b): _vocab_overlap(cores[a], cores[b], used[a], used[b])
                    for a in range(k) for b in range(a + 1, k)}
        spellings: dict[tuple[int, str], Any] = {}  # (tokenizer, word) -> its tokens, shared by the pairs
        groups = type_groups(c)  # each segment type's (script, kind), shared by the pairs
        attributions = [attribution(c, tokenizers, lines, a, b, top_words, spellings, groups)
                        for a in range(k) for b in range(a + 1, k)]
        samples = build_samples(tokenizers, list(names), lines, _sample_encodings(tokenizers, lines, indices), indices)
        rep, drep = resampled.result() if resampled is not None else ({}, [{} for _ in range(k)])

    def series(i: int, metric: str) -> tuple[Any, np.ndarray | None]:
        if not bootstrap_replicates:
            return (dist_point[i][metric] if metric in DISTRIBUTION_METRICS else point[f"{i}:{metric}"]), None
        if metric in DISTRIBUTION_METRICS:
            # Type counts are biased down under resampling (a block drawn twice adds no new type), so these
            # replicates are re-centred on the point value before the percentiles are read.
            value, values = dist_point[i][metric], drep[i][metric]
            finite = values[np.isfinite(values)]
            if finite.size and np.isfinite(value):
                values = values - (finite.mean() - value)
            return value, values
        return point[f"{i}:{metric}"], rep[f"{i}:{metric}"]

    def entry(value: Any, replicates: np.ndarray | None) -> dict[str, Any]:
        if replicates is None:
            return {"value": _num(value), "ci": [_num(value), _num(value)]}
        return {"value": _num(value), "ci": _ci(bootstrap.interval(replicates))}

    # ---- per tokenizer ----
    doc_tokenizers = []
    order = [m for m in METRICS if m != "mb_per_s"]
    for i, (tok, d) in enumerate(zip(tokenizers, c.tokenizers)):
        metrics = {m: entry(*series(i, m)) for m in order}
        metrics["tokens"]["value"] = int(d.tokens.sum())
        metrics["mb_per_s"] = _speed(c, i, bootstrap_replicates, seed)
        used = np.flatnonzero(id_counts[i])
        lengths = np.bincount(d.table.char_length[used], weights=id_counts[i][used]).astype(np.int64) \
            if used.size else np.zeros(0, np.int64)
        doc_tokenizers.append({
            "name": names[i],
            "source": (sources[i] if sources else None) or f"<{names[i]}>",
            "kind": tokenizer_kind(tok),
            "vocab_size": d.table.vocab_size,
            "metrics": metrics,
            "token_length_histogram": {str(length): int(v) for length, v in enumerate(lengths) if v},
            "tokens_per_word_by_script": {
                s: entry(point[f"{i}:script:{s}"], rep[f"{i}:script:{s}"] if bootstrap_replicates else None)
                for s in scripts if c.script_words[s].sum() > 0},
            "lossless_examples": d.lossless_examples,
        })

    # ---- pairs ----
    doc_pairs = []
    for a in range(k):
        for b in range(a + 1, k):
            shared = float(c.shared_boundaries[(a, b)].sum())
            p, r, f = prf(shared, float(c.tokenizers[a].boundaries.sum()), float(c.tokenizers[b].boundaries.sum()))
            differences = {}
            for m in order:
                (pa, ra), (pb, rb) = series(a, m), series(b, m)
                ci = bootstrap.interval(ra - rb) if ra is not None and rb is not None else (None, None)
                differences[m] = {"value": _num(np.float64(pa) - np.float64(pb)), "ci": _ci(ci),
                                  "significant": bootstrap.significant(ci)}
            va, vb = doc_tokenizers[a]["metrics"]["mb_per_s"]["value"], doc_tokenizers[b]["metrics"]["mb_per_s"]["value"]
            differences["mb_per_s"] = {"value": _num(None if va is None or vb is None else va - vb), "ci": [None, None],
                                       "significant": False}
            f1_ci = bootstrap.interval(rep[f"{a}|{b}:f1"]) if bootstrap_replicates else (f, f)
            doc_pairs.append({
                "a": names[a], "b": names[b],
                "boundary_precision": _num(p), "boundary_recall": _num(r), "boundary_f1": _num(f),
                "boundary_f1_ci": _ci(f1_ci),
                **overlaps[(a, b)],
                "differences": differences,
            })

    values = {m: [t["metrics"][m]["value"] for t in doc_tokenizers] for m in METRICS}
    doc: dict[str, Any] = {
        "inputs": {
            "files": list((inputs or {}).get("files", [])),
            "lines": c.n,
            "bytes": int(c.bytes.sum()),
            "chars": int(c.chars.sum()),
            "words": int(c.words.sum()),
            "sha256": (inputs or {}).get("lines_sha256")
            or hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass")).hexdigest(),
        },
        "options": {"bootstrap_replicates": bootstrap_replicates,
                    "distribution_replicates": min(bootstrap_replicates, DISTRIBUTION_REPLICATES),
                    "seed": seed, "renyi_alpha": RENYI_ALPHA, "confidence": bootstrap.LEVEL,
                    "bootstrap": {"method": "non-overlapping block bootstrap, percentile intervals",
                                  "level": bootstrap.LEVEL, "block_lines": c.block_lines,
                                  "blocks": len(bootstrap.block_starts(c.n, c.block_lines)),
                                  "block_rule": "floor(square root of the number of lines)"}},
        "tokenizers": doc_tokenizers,
        "best": best(values, list(names)),
        "pairwise": doc_pairs,
        "attribution": attributions,
    }
    if gold is not None:
        entries = read_gold(gold) if isinstance(gold, (str, bytes)) or hasattr(gold, "__fspath__") else list(gold)
        doc["gold"] = {name: gold_scores(t, entries) for name, t in zip(names, tokenizers)}
    if parallel is not None:
        doc["parallel"] = _parallel(tokenizers, names, parallel, pivot, bootstrap_replicates, seed)
    doc["samples"] = samples
    return doc


def _parallel(tokenizers: Sequence[Any], names: Sequence[str], texts: Mapping[str, Sequence[str]],
              pivot: str | None, replicates: int, seed: int) -> dict[str, Any]:
    """The tokenization premium per language, with a block bootstrap over the aligned line indices."""
    if pivot is None or pivot not in texts:
        raise ValueError(f"the pivot language {pivot!r} is not among the parallel texts ({', '.join(texts)})")
    sizes = {lang: len(v) for lang, v in texts.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"parallel texts have different line counts: {sizes}")
    n = sizes[pivot]
    starts = bootstrap.block_starts(n, bootstrap.block_length(n))
    weights = bootstrap.block_weights(len(starts), replicates, seed) if replicates else None
    counts = {lang: [bootstrap.block_sums([len(x) for x in t.encode_batch_ids(list(v), add_special_tokens=False)],
                                          starts) for t in tokenizers] for lang, v in texts.items()}
    languages = []
    premiums: dict[str, dict[str, float]] = {name: {} for name in names}
    for lang in texts:
        entry: dict[str, Any] = {}
        for i, name in enumerate(names):
            num, den = counts[lang][i], counts[pivot][i]
            value = num.sum() / den.sum() if den.sum() else None
            if weights is not None:
                with np.errstate(divide="ignore", invalid="ignore"):
                    ci = bootstrap.interval((weights @ num) / (weights @ den))
            else:
                ci = (value, value)
            entry[name] = {"value": _num(value), "ci": _ci(ci)}
            if value is not None and lang != pivot:
                premiums[name][lang] = float(value)
        languages.append({"language": lang, "premium": entry})
    parity = {}
    for name, by_lang in premiums.items():
        if not by_lang:
            continue
        worst = max(by_lang, key=by_lang.__getitem__)
        fewest = min(by_lang, key=by_lang.__getitem__)
        vals = np.array(list(by_lang.values()))
        parity[name] = {"mean_premium": float(vals.mean()), "max_premium": by_lang[worst], "max_language": worst,
                        "min_premium": by_lang[fewest], "min_language": fewest,
                        "within_10_percent": int(((vals >= 0.9) & (vals <= 1.1)).sum()), "languages": len(vals)}
    return {"pivot": pivot, "languages": languages, "parity": parity}
