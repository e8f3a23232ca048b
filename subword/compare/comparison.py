"""``compare()``: many tokenizers on the same lines, and the :class:`Comparison` it returns.

The flow: prepare the tokenizers (padding and truncation off, no post-processor specials) ->
:func:`~subword.compare.collect.collect` (the one encoding pass) -> a per-line stats matrix ->
point values and paired bootstrap replicates of every metric -> pairwise tables, attribution,
gold and parallel scores -> one JSON document (schema in ``subword/compare/schema.json``,
described in ``docs/compare.md``), which the renderers turn into text or HTML.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from subword.compare import bootstrap
from subword.compare import native as _native
from subword.compare.align import gold_scores, prf, read_gold
from subword.compare.attribution import attribution, type_groups
from subword.compare.collect import Collected, collect
from subword.compare.metrics import (
    METRICS, RENYI_ALPHA, distribution_metrics, distribution_metrics_from_sums, ratio_metrics,
)
from subword.compare.vocab import tokenizer_kind

__all__ = ["compare", "Comparison", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1
#: Bootstrap replicates of the distribution metrics (Rényi, Shannon, utilisation, TTR): each costs a
#: sparse product over all tokens, so they use the first replicates of the shared draw.
DISTRIBUTION_REPLICATES = 200
_DIST = ("vocab_utilization", "type_token_ratio", "renyi_efficiency", "shannon_efficiency")


def _num(x: Any) -> float | int | None:
    if x is None:
        return None
    v = float(x)
    if not math.isfinite(v):
        return None
    return int(v) if float(v).is_integer() and abs(v) < 2**53 and isinstance(x, (int, np.integer)) else v


def _ci(pair: tuple[float | None, float | None]) -> list[float | None]:
    return [_num(pair[0]), _num(pair[1])]


class Comparison:
    """The result of :func:`compare`: the JSON document and views of it.

    Attributes:
        doc: The JSON document (a dict; see ``docs/compare.md``).
    """

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc

    @property
    def names(self) -> list[str]:
        """The tokenizers' names, in the order given."""
        return [t["name"] for t in self.doc["tokenizers"]]

    @property
    def metrics(self) -> dict[str, dict[str, float | None]]:
        """``{tokenizer name: {metric: value}}`` (plain numbers; intervals are in :attr:`doc`)."""
        return {t["name"]: {k: v["value"] for k, v in t["metrics"].items()} for t in self.doc["tokenizers"]}

    @property
    def intervals(self) -> dict[str, dict[str, list[float | None]]]:
        """``{tokenizer name: {metric: [low, high]}}``, the 95% bootstrap intervals."""
        return {t["name"]: {k: v["ci"] for k, v in t["metrics"].items()} for t in self.doc["tokenizers"]}

    @property
    def pairwise(self) -> list[dict[str, Any]]:
        """One entry per pair of tokenizers: boundary P/R/F1, vocabulary overlap, differences."""
        return self.doc["pairwise"]

    @property
    def words(self) -> list[dict[str, Any]]:
        """The attribution: per pair, the words behind the token-count difference."""
        return self.doc["attribution"]

    def to_json(self, indent: int | None = None) -> str:
        """The document as JSON text (compact by default: json's C encoder only runs without ``indent``)."""
        return json.dumps(self.doc, indent=indent, ensure_ascii=False, allow_nan=False)

    def render_terminal(self, *, color: bool = False, show: int | None = None) -> str:
        """The terminal view (metrics table, then sample lines)."""
        from subword.compare.render_terminal import render_terminal

        return render_terminal(self.doc, color=color, show=len(self.doc.get("samples", [])) if show is None else show)

    def to_html(self) -> str:
        """The self-contained HTML report."""
        from subword.compare.render_html import render_html

        return render_html(self.doc)

    def __repr__(self) -> str:
        return f"Comparison(tokenizers={self.names}, lines={self.doc['inputs']['lines']})"


def _prepare(tok: Any) -> Any:
    """A copy that encodes a line as it is: no padding, no truncation."""
    if tok.padding is None and tok.truncation is None:
        return tok
    copy = tok.with_options()
    copy.no_padding()
    copy.no_truncation()
    return copy


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
        return candidates
    step = len(candidates) / show
    return [candidates[int(i * step)] for i in range(show)]


def _column_arrays(c: Collected) -> dict[str, np.ndarray]:
    cols: dict[str, np.ndarray] = {
        "lines": np.ones(c.n), "chars": c.chars, "bytes": c.bytes, "words": c.words, "ws_words": c.ws_words,
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
            cols[f"{i}:tokens:{script}"] = d.script_tokens.get(script, np.zeros(c.n))
    for (a, b), arr in c.shared_boundaries.items():
        cols[f"{a}|{b}:shared"] = arr
    return cols


def _columns(c: Collected) -> tuple[list[str], np.ndarray]:
    """The per-line columns as one ``(n, columns)`` float64 matrix (the numpy path's operand)."""
    cols = _column_arrays(c)
    names = list(cols)
    return names, np.stack([np.asarray(cols[k], dtype=np.float64) for k in names], axis=1)


def _count_ids(ids: np.ndarray) -> np.ndarray:
    """``np.bincount(ids, minlength=1)``; by the core for uint32 ids (numpy first converts each id to int64).

    >>> _count_ids(np.array([2, 0, 2], dtype=np.uint32)).tolist()
    [1, 0, 2]
    """
    try:
        from subword import _core
    except ImportError:
        _core = None
    if _core is not None and hasattr(_core, "count_ids") and ids.dtype == np.uint32:
        return np.frombuffer(_core.count_ids(np.ascontiguousarray(ids), 1), dtype="<i8")
    return np.bincount(ids, minlength=1)


def _fast_column_sums() -> Any:
    """The core's ``bootstrap_column_sums``, or ``None`` (then weights and a matrix product are used)."""
    try:
        from subword import _core
    except ImportError:
        return None
    return getattr(_core, "bootstrap_column_sums", None)


def _values(sums: Mapping[str, Any], k: int, scripts: Sequence[str]) -> dict[str, Any]:
    """All ratio metrics of all tokenizers and pairs, from sums (scalars or replicate arrays)."""
    out: dict[str, Any] = {}
    for i in range(k):
        for name, v in ratio_metrics(sums, str(i), "0").items():
            out[f"{i}:{name}"] = v
        for script in scripts:
            with np.errstate(divide="ignore", invalid="ignore"):
                out[f"{i}:script:{script}"] = np.true_divide(sums[f"{i}:tokens:{script}"], sums[f"words:{script}"])
    for a in range(k):
        for b in range(a + 1, k):
            with np.errstate(divide="ignore", invalid="ignore"):
                shared = sums[f"{a}|{b}:shared"]
                out[f"{a}|{b}:f1"] = np.true_divide(2 * shared, sums[f"{a}:bnd"] + sums[f"{b}:bnd"])
    return out


class _TypeLineCounts:
    """count(type, line) as a matrix, so that ``counts @ w.T`` gives the type counts of replicates ``w``.

    With scipy, a sparse CSR matrix; without it, the same product from the token arrays with numpy.
    """

    def __init__(self, used: np.ndarray, compact: np.ndarray, id_line: np.ndarray, n: int) -> None:
        self.types, self.compact, self.id_line = len(used), compact, id_line

    def __matmul__(self, w_t: np.ndarray) -> np.ndarray:  # (n, b) -> (types, b)
        out = np.empty((self.types, w_t.shape[1]))
        for r in range(w_t.shape[1]):
            out[:, r] = np.bincount(self.compact, weights=w_t[self.id_line, r], minlength=self.types)
        return out


def _fast_type_counts() -> Any:
    """The core's ``type_count_replicates``, or ``None`` (then the sparse product below is used)."""
    try:
        from subword import _core
    except ImportError:
        return None
    return getattr(_core, "type_count_replicates", None)


def _distinct_columns(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(distinct, back)`` with ``distinct[:, back] == matrix``: each repeated column kept once.

    >>> m = np.array([[1.0, 0.0, 1.0], [2.0, 0.0, 2.0]])
    >>> d, back = _distinct_columns(m); d.shape, back.tolist()
    ((2, 2), [0, 1, 0])
    """
    keep: list[int] = []
    seen: dict[bytes, list[int]] = {}
    back = np.zeros(matrix.shape[1], dtype=np.int64)
    for j in range(matrix.shape[1]):
        col = np.ascontiguousarray(matrix[:, j])
        key = hashlib.blake2b(col.tobytes(), digest_size=16).digest()
        for at in seen.get(key, []):
            if np.array_equal(matrix[:, keep[at]], col):
                back[j] = at
                break
        else:
            seen.setdefault(key, []).append(len(keep))
            back[j] = len(keep)
            keep.append(j)
    return np.ascontiguousarray(matrix[:, keep]), back


def _type_line_counts(used: np.ndarray, compact: np.ndarray, id_line: np.ndarray, n: int) -> Any:
    try:
        from scipy import sparse as sp
    except ImportError:
        return _TypeLineCounts(used, compact, id_line, n)
    return sp.csr_matrix((np.ones(len(compact)), (compact, id_line)), shape=(len(used), n))


def _short_first(cores: set[bytes]) -> list[list[bytes]]:
    """The multi-byte cores of at most 6 bytes by length (``[k]``: those of ``k + 2`` bytes), where
    :func:`_vocab_overlap` finds its examples: a pass over the vocabulary, no sort."""
    by_length: list[list[bytes]] = [[] for _ in range(5)]
    for x in cores:
        if 1 < len(x) <= 6:
            by_length[len(x) - 2].append(x)
    return by_length


def _vocab_overlap(sa: set[bytes], sb: set[bytes], examples: int = 10,
                   short: tuple[list[list[bytes]], list[list[bytes]]] | None = None) -> dict[str, Any]:
    """Jaccard and the tokens unique to each, of two vocabularies' non-empty cores (``VocabTable.core``).

    ``short`` are :func:`_short_first` of both, when the caller keeps them across pairs.

    >>> _vocab_overlap({b"ab", b"x"}, {b"ab", b"cd"})["unique_b_examples"]
    ['cd']
    """
    shared = len(sa & sb)
    union = len(sa) + len(sb) - shared
    short_a, short_b = short if short is not None else (_short_first(sa), _short_first(sb))

    def show(mine: set[bytes], mine_short: list[list[bytes]], other: set[bytes]) -> list[str]:
        # The shortest multi-byte strings first (then in byte order): the most telling examples of what
        # one has and the other lacks. Only the lengths that hold the examples are sorted.
        picked: list[bytes] = []
        for same_length in mine_short:
            if len(picked) >= examples:
                break
            picked += sorted(x for x in same_length if x not in other)[: examples - len(picked)]
        if len(picked) < examples:  # few short ones: all multi-byte strings, else all strings
            only = mine - other
            picked = heapq.nsmallest(examples, [x for x in only if len(x) > 1] or only, key=lambda x: (len(x), x))
        return [x.decode("utf-8", errors="backslashreplace") for x in picked]

    return {
        "vocab_jaccard": shared / union if union else None,
        "unique_a_count": len(sa) - shared, "unique_b_count": len(sb) - shared,
        "unique_a_examples": show(sa, short_a, sb), "unique_b_examples": show(sb, short_b, sa),
    }


def _best(values: Mapping[str, Sequence[float | None]], names: Sequence[str]) -> dict[str, str | None]:
    best: dict[str, str | None] = {}
    for metric, row in values.items():
        better = METRICS[metric].better
        vals = [v for v in row if v is not None]
        if better is None or not vals or max(vals) == min(vals):
            best[metric] = None
            continue
        target = max(vals) if better == "higher" else min(vals)
        # A tie for the best marks nobody: no tokenizer is better than the other.
        best[metric] = names[list(row).index(target)] if vals.count(target) == 1 else None
    return best


def _speed(c: Collected, i: int, replicates: int, seed: int) -> dict[str, Any]:
    """Encode throughput and its interval from a bootstrap over the timed chunks."""
    secs = np.array(c.tokenizers[i].chunk_seconds)
    sizes = np.array(c.chunk_bytes, dtype=np.float64)
    value = sizes.sum() / 1e6 / secs.sum() if secs.sum() > 0 else None
    if len(secs) < 2 or value is None:
        return {"value": _num(value), "ci": [_num(value), _num(value)]}
    rng = np.random.default_rng([seed, i])
    idx = rng.integers(0, len(secs), size=(replicates, len(secs)))
    reps = sizes[idx].sum(axis=1) / 1e6 / secs[idx].sum(axis=1)
    return {"value": _num(value), "ci": _ci(bootstrap.interval(reps))}


def _replicates(c: Collected, arrays: Mapping[str, np.ndarray], keys: Sequence[str], id_counts: Sequence[np.ndarray],
                used_ids: Sequence[np.ndarray], scripts: Sequence[str], replicates: int,
                seed: int) -> tuple[dict[str, np.ndarray], list[dict[str, np.ndarray]]]:
    """The paired bootstrap: replicate values of every ratio metric (``keys``, as :func:`_values` names them)
    and of each tokenizer's distribution metrics (the first :data:`DISTRIBUTION_REPLICATES` replicates)."""
    k = len(c.tokenizers)
    col_names = list(arrays)
    reps: dict[str, list[np.ndarray]] = {key: [] for key in keys}
    dist_reps: list[dict[str, list[np.ndarray]]] = [{m: [] for m in _DIST} for _ in range(k)]
    if replicates:
        fast = _fast_type_counts()
        dist_r = min(replicates, DISTRIBUTION_REPLICATES)
        sparse = None
        if fast is not None:
            # One call for all tokenizers: the resampling counts are drawn once. The token types are the
            # ids themselves (the core skips the ids that never occur).
            all_sums = fast([np.ascontiguousarray(d.ids, dtype=np.uint32) for d in c.tokenizers],
                            [np.ascontiguousarray(d.id_line, dtype=np.uint32) for d in c.tokenizers],
                            [len(counts) for counts in id_counts], c.n, bootstrap.seed64(seed), dist_r, RENYI_ALPHA)
            for i, (buf, d) in enumerate(zip(all_sums, c.tokenizers)):
                sums = np.frombuffer(buf, dtype="<f8").reshape(dist_r, 4)
                for name, v in distribution_metrics_from_sums(sums, d.table.vocab_size).items():
                    dist_reps[i][name].append(v)
        else:
            sparse = []
            for used, counts, d in zip(used_ids, id_counts, c.tokenizers):
                renumber = np.cumsum(counts > 0) - 1  # the used ids as 0, 1, ...
                sparse.append(_type_line_counts(used, renumber[d.ids], d.id_line, c.n))
        column_sums = _fast_column_sums()
        if column_sums is not None and sparse is None:
            # The core draws the same replicates and sums every column exactly (no weights matrix).
            buf = column_sums([np.ascontiguousarray(a, dtype=np.int64) for a in arrays.values()], c.n,
                              bootstrap.seed64(seed), replicates)
            all_sums = np.frombuffer(buf, dtype="<f8").reshape(replicates, len(col_names))
            for key, v in _values(dict(zip(col_names, all_sums.T)), k, scripts).items():
                reps[key].append(v)
        else:
            # Identical columns (all-zero UNK counts, lossless == lines, ...) are summed once.
            distinct, back = _distinct_columns(_columns(c)[1])
            done = 0
            for w in bootstrap.weights(c.n, replicates, seed):
                sums = dict(zip(col_names, (w @ distinct)[:, back].T))
                for key, v in _values(sums, k, scripts).items():
                    reps[key].append(v)
                if sparse is not None and done < DISTRIBUTION_REPLICATES:
                    take = w[: DISTRIBUTION_REPLICATES - done]
                    for i, (m, d) in enumerate(zip(sparse, c.tokenizers)):
                        for name, v in distribution_metrics(m @ take.T, d.table.vocab_size).items():
                            dist_reps[i][name].append(v)
                done += len(w)
    rep = {key: np.concatenate(v) if v else np.full(1, np.nan) for key, v in reps.items()}
    drep = [{m: np.concatenate(v) if v else np.full(1, np.nan) for m, v in r.items()} for r in dist_reps]
    return rep, drep


def compare(
    tokenizers: Sequence[Any],
    lines: Sequence[str],
    names: Sequence[str] | None = None,
    *,
    sources: Sequence[str] | None = None,
    inputs: Mapping[str, Any] | None = None,
    show: int = 20,
    bootstrap_replicates: int = 1000,
    seed: int = 0,
    gold: str | Sequence[tuple[str, list[int]]] | None = None,
    parallel: Mapping[str, Sequence[str]] | None = None,
    pivot: str | None = None,
    top_words: int = 50,
) -> Comparison:
    """Compares how tokenizers segment the same lines.

    Args:
        tokenizers: Two or more :class:`subword.Tokenizer` objects.
        lines: The text, one line per item, without line endings (as ``subword encode`` reads it).
        names: A name per tokenizer (default ``t1``, ``t2``, ...); must be distinct.
        sources: Where each tokenizer came from (a path or tiktoken name), for the JSON.
        inputs: The ``files`` list for the JSON ``inputs`` (path, lines, bytes, sha256 of each file), and
            optionally ``lines_sha256``, the sha256 of ``lines`` joined by line feeds when the caller has it
            (the CLI, from the file it read; else it is computed here).
        show: Sample lines to keep for the sample view.
        bootstrap_replicates: Paired bootstrap replicates (0: intervals are the point value).
        seed: Seed of the bootstrap.
        gold: A gold morph file path, or ``[(word, boundary offsets)]``.
        parallel: ``{language: lines}``, line-aligned, with ``pivot`` among them.
        pivot: The reference language of ``parallel``.
        top_words: Words listed per pair in the attribution.

    Returns:
        A :class:`Comparison`.

    Raises:
        ValueError: fewer than two tokenizers, names that clash or do not match, no lines, a bad
            gold file (``file:line``), parallel texts of different lengths or without the pivot.

    >>> from subword import Tokenizer, WordPiece
    >>> from subword.pre_tokenizers import Whitespace
    >>> chars = Tokenizer(WordPiece({"[UNK]": 0, "a": 1, "b": 2, "##a": 3, "##b": 4}), pre_tokenizer=Whitespace())
    >>> words = Tokenizer(WordPiece({"[UNK]": 0, "ab": 1, "ba": 2}), pre_tokenizer=Whitespace())
    >>> result = compare([chars, words], ["ab ba", "ab"], names=["chars", "words"], bootstrap_replicates=50)
    >>> result.metrics["chars"]["tokens"], result.metrics["words"]["tokens_per_word"]
    (6, 1.0)
    """
    tokenizers = list(tokenizers)
    if len(tokenizers) < 2:
        raise ValueError(f"compare needs at least two tokenizers, got {len(tokenizers)}")
    names = [f"t{i + 1}" for i in range(len(tokenizers))] if names is None else [str(n) for n in names]
    if len(names) != len(tokenizers):
        raise ValueError(f"{len(names)} names for {len(tokenizers)} tokenizers")
    if len(set(names)) != len(names):
        raise ValueError(f"tokenizer names must be distinct, got {names}")
    lines = list(lines)
    if not set(map(type, lines)) <= {str}:  # one C pass; the loop below only finds the culprit
        for i, s in enumerate(lines):
            if not isinstance(s, str):
                raise TypeError(f"lines[{i}] is {type(s).__name__}, not str")
    if not lines or not any(lines):
        raise ValueError("the input is empty: there are no lines to compare")
    if bootstrap_replicates < 0:
        raise ValueError(f"bootstrap_replicates must be >= 0, got {bootstrap_replicates}")
    prepared = [_prepare(t) for t in tokenizers]
    if _native.available(prepared):
        # The core's pass counts each line's whitespace-split words: a line holds a character other than
        # whitespace (str.strip's) exactly when it has one, so the sample lines are chosen after the pass,
        # and only they are encoded again for the sample view.
        c = collect(prepared, names, lines, (), native=True)
        indices = _sample_indices(lines, show, np.flatnonzero(c.ws_words).tolist())
        c.samples = _native.sample_encodings(prepared, lines, indices)
    else:
        indices = _sample_indices(lines, show)
        c = collect(prepared, names, lines, indices, native=False)
    k = len(prepared)
    scripts = sorted(c.script_words)

    # ---- point values and the paired bootstrap ----
    arrays = _column_arrays(c)
    point = _values({name: np.float64(arr.sum()) for name, arr in arrays.items()}, k, scripts)
    # Per tokenizer: how often each id occurs (ids are bounded by |V|: bincount, not np.unique), the ids used.
    id_counts = [_count_ids(d.ids) for d in c.tokenizers]
    used_ids = [np.flatnonzero(counts) for counts in id_counts]
    dist_point = [distribution_metrics(counts[used], d.table.vocab_size)
                  for used, counts, d in zip(used_ids, id_counts, c.tokenizers)]
    # The resampling runs in the core with the GIL released (on all cores, though parts of it on one):
    # what does not need its replicates is built meanwhile, on this thread.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="compare-bootstrap") as pool:
        resampled = pool.submit(_replicates, c, arrays, list(point), id_counts, used_ids, scripts,
                                bootstrap_replicates, seed)
        cores = [set(d.table.core) - {b""} for d in c.tokenizers]
        short = [_short_first(x) for x in cores]
        overlaps = {(a, b): _vocab_overlap(cores[a], cores[b], short=(short[a], short[b]))
                    for a in range(k) for b in range(a + 1, k)}
        spellings: dict[tuple[int, str], list[str]] = {}  # (tokenizer, word) -> its tokens, shared by the pairs
        groups = type_groups(c)  # each segment type's (script, kind), shared by the pairs
        attributions = [attribution(c, prepared, lines, a, b, top_words, spellings, groups)
                        for a in range(k) for b in range(a + 1, k)]
        samples = _samples(prepared, names, lines, c, indices)
        rep, drep = resampled.result()

    def entry(value: Any, replicates: np.ndarray) -> dict[str, Any]:
        if not bootstrap_replicates:
            return {"value": _num(value), "ci": [_num(value), _num(value)]}
        return {"value": _num(value), "ci": _ci(bootstrap.interval(replicates))}

    def series(i: int, metric: str) -> tuple[Any, np.ndarray]:
        if metric in _DIST:
            # Counts of types are biased down under resampling (a line drawn twice adds no new type),
            # so these replicates are re-centred on the point value before the percentiles are read.
            value, values = dist_point[i][metric], drep[i][metric]
            finite = values[np.isfinite(values)]
            if finite.size and value is not None and np.isfinite(value):
                values = values - (finite.mean() - value)
            return value, values
        return point[f"{i}:{metric}"], rep[f"{i}:{metric}"]

    # ---- per tokenizer ----
    doc_tokenizers = []
    order = [m for m in METRICS if m != "mb_per_s"]
    for i, (tok, d) in enumerate(zip(prepared, c.tokenizers)):
        metrics = {m: entry(*series(i, m)) for m in order}
        metrics["tokens"]["value"] = int(d.tokens.sum())
        metrics["mb_per_s"] = _speed(c, i, max(bootstrap_replicates, 1), seed)
        # Token lengths weighted by each id's count: a pass over the vocabulary, not over the tokens.
        used = used_ids[i]
        lengths = (np.bincount(d.table.char_length[used], weights=id_counts[i][used]).astype(np.int64)
                   if len(d.ids) else np.zeros(0, np.int64))
        doc_tokenizers.append({
            "name": names[i],
            "source": (sources[i] if sources else None) or f"<{names[i]}>",
            "kind": tokenizer_kind(tok),
            "vocab_size": d.table.vocab_size,
            "metrics": metrics,
            "token_length_histogram": {str(n): int(v) for n, v in enumerate(lengths) if v},
            "tokens_per_word_by_script": {s: entry(point[f"{i}:script:{s}"], rep[f"{i}:script:{s}"]) for s in scripts
                                          if c.script_words[s].sum() > 0},
            "lossless_examples": d.lossless_examples,
        })

    # ---- pairs ----
    doc_pairs = []
    for a in range(k):
        for b in range(a + 1, k):
            shared = float(c.shared_boundaries[(a, b)].sum())
            p, r, f = prf(shared, float(c.tokenizers[a].boundaries.sum()), float(c.tokenizers[b].boundaries.sum()))
            differences = {}
            for m in list(order) + ["mb_per_s"]:
                if m == "mb_per_s":
                    va, vb = doc_tokenizers[a]["metrics"][m]["value"], doc_tokenizers[b]["metrics"][m]["value"]
                    diff = None if va is None or vb is None else va - vb
                    differences[m] = {"value": _num(diff), "ci": [None, None], "significant": False}
                    continue
                (pa, ra), (pb, rb) = series(a, m), series(b, m)
                ci = bootstrap.interval(ra - rb) if bootstrap_replicates else (None, None)
                differences[m] = {"value": _num(np.float64(pa) - np.float64(pb)), "ci": _ci(ci),
                                  "significant": bootstrap.significant(ci)}
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
        "schema_version": SCHEMA_VERSION,
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
                    "seed": seed, "renyi_alpha": 2.5, "confidence": 0.95},
        "tokenizers": doc_tokenizers,
        "best": _best(values, names),
        "pairwise": doc_pairs,
        "attribution": attributions,
    }
    if gold is not None:
        entries = read_gold(gold) if isinstance(gold, (str, bytes)) or hasattr(gold, "__fspath__") else list(gold)
        doc["gold"] = {name: gold_scores(t, entries) for name, t in zip(names, prepared)}
    if parallel is not None:
        doc["parallel"] = _parallel(prepared, names, parallel, pivot, bootstrap_replicates, seed)
    doc["samples"] = samples
    return Comparison(doc)


def _samples(tokenizers: Sequence[Any], names: Sequence[str], lines: Sequence[str], c: Collected,
             indices: Sequence[int]) -> list[dict[str, Any]]:
    """The sample lines, built by the renderers' ``build_samples`` (branch compare-render)."""
    try:
        from subword.compare.samples import build_samples
    except ImportError:
        return []
    encodings = [{i: c.samples[i][t] for i in indices} for t in range(len(tokenizers))]
    return build_samples(tokenizers, list(names), lines, encodings, list(indices))


def _parallel(tokenizers: Sequence[Any], names: Sequence[str], texts: Mapping[str, Sequence[str]],
              pivot: str | None, replicates: int, seed: int) -> dict[str, Any]:
    if pivot is None or pivot not in texts:
        raise ValueError(f"the pivot language {pivot!r} is not among the parallel texts ({', '.join(texts)})")
    sizes = {lang: len(v) for lang, v in texts.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"parallel texts have different line counts: {sizes}")
    n = sizes[pivot]
    counts = {lang: [np.array([len(x) for x in t.encode_batch_ids(list(v), add_special_tokens=False)], np.float64)
                     for t in tokenizers] for lang, v in texts.items()}
    languages = []
    premiums: dict[str, dict[str, float]] = {name: {} for name in names}
    for lang in texts:
        entry: dict[str, Any] = {}
        for i, name in enumerate(names):
            num, den = counts[lang][i], counts[pivot][i]
            value = num.sum() / den.sum() if den.sum() else None
            reps = [(w @ num) / (w @ den) for w in bootstrap.weights(n, replicates, seed)] if replicates else []
            ci = bootstrap.interval(np.concatenate(reps)) if reps else (value, value)
            entry[name] = {"value": _num(value), "ci": _ci(ci)}
            if value is not None and lang != pivot:
                premiums[name][lang] = float(value)
        languages.append({"language": lang, "premium": entry})
    parity = {}
    for name, by_lang in premiums.items():
        if not by_lang:
            continue
        worst = max(by_lang, key=by_lang.__getitem__)
        best = min(by_lang, key=by_lang.__getitem__)
        vals = np.array(list(by_lang.values()))
        parity[name] = {"mean_premium": float(vals.mean()), "max_premium": by_lang[worst], "max_language": worst,
                        "min_premium": by_lang[best], "min_language": best,
                        "within_10_percent": int(((vals >= 0.9) & (vals <= 1.1)).sum()), "languages": len(vals)}
    return {"pivot": pivot, "languages": languages, "parity": parity}
