"""Readable Unigram: the lattice, Viterbi, sampling and the EM trainer, in plain Python.

This is the spec the Rust core (``rust/src/unigram/``) is tested against; both give identical
pieces and scores. How it differs from its neighbours:

* vs :mod:`subword.reference.bpe`: no merges. A Unigram model is a set of pieces with
  log-probabilities; a string is segmented by the best path through the lattice of all piece
  matches, and training starts from many seed substrings and prunes them by how much the corpus
  likelihood would drop without each piece.
* vs SentencePiece 0.2.3 (``compat="spm"``): the same seeding (LCP intervals of a suffix array of
  the sentences' bytes, :mod:`subword.reference.unigram_seed`), EM (over the words, or over the
  sentences when pieces may span a ``▁``, i.e. ``split_by_whitespace=false``), pruning and
  finalisation, with every sum rounded to float32 (:func:`_f32`) and the E-step split into
  ``num_threads`` stripes as SentencePiece does.
  Not reproducible: its ``shuffle_input_sentence`` sample (an absl generator salted per process
  picks other lines on every run); the first ``input_sentence_size`` lines (no shuffle) match.
* vs HF ``UnigramTrainer`` (``compat="hf"``): seeds from distinct words counted once, a ``<UNK>``
  placeholder at id 0, f64, the ``alternatives.len()`` loss quirk and model-order finalisation.

>>> words = [("\u2581ab", 5), ("\u2581abc", 3), ("\u2581b", 2)]
>>> viterbi("\u2581abc", {"\u2581": -2.0, "a": -3.0, "b": -3.0, "c": -3.0, "\u2581ab": -2.5})
['▁ab', 'c']
"""

from __future__ import annotations

import heapq
import math
import random
import struct
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from subword.reference.unigram_seed import suffix_array_seeds

__all__ = ["best_ends", "digamma", "sample", "train_unigram", "viterbi"]

UNK_PENALTY = 10.0
#: SentencePiece 0.2.3's encoder resets its float sums at a start whose value is past this magnitude
#: (``kScoreResetThreshold``; see :func:`best_ends`).
SCORE_RESET = 100_000.0


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def _f64(x: float) -> float:
    return x


def digamma(x: float) -> float:
    """Digamma by recurrence and asymptotic series (as SentencePiece and HF).

    >>> round(digamma(1.0), 6)
    -0.577216
    """
    r = 0.0
    while x < 7.0:
        r -= 1.0 / x
        x += 1.0
    x -= 0.5
    xx = 1.0 / x
    xx2 = xx * xx
    xx4 = xx2 * xx2
    return r + math.log(x) + (1.0 / 24.0) * xx2 - (7.0 / 960.0) * xx4 + (31.0 / 8064.0) * xx4 * xx2 - (
        127.0 / 30720.0
    ) * xx4 * xx4


# ==== Lattice ====


class Lattice:
    """Nodes ``(id, begin, end, score)`` over the chars of one string; node 0 is BOS, 1 is EOS."""

    def __init__(self, text: str, pieces: Mapping[str, tuple[int, float]], unk: tuple[int, float],
                 r: Callable[[float], float], max_len: int, skip: int | None = None) -> None:
        n = len(text)
        self.n, self.r = n, r
        self.nodes: list[tuple[int, int, int, float]] = [(-1, 0, 0, 0.0), (-1, n, n, 0.0)]
        self.begin: list[list[int]] = [[] for _ in range(n + 1)]
        self.end: list[list[int]] = [[] for _ in range(n + 1)]
        self.end[0].append(0)
        self.begin[n].append(1)
        for s in range(n):
            single = False
            for e in range(s + 1, min(n, s + max_len) + 1):
                hit = pieces.get(text[s:e])
                if hit is not None and hit[0] != skip:
                    single = single or e == s + 1
                    self._add(hit[0], s, e, hit[1])
            if not single:
                self._add(unk[0], s, s + 1, unk[1])

    def _add(self, pid: int, b: int, e: int, score: float) -> None:
        self.begin[b].append(len(self.nodes))
        self.end[e].append(len(self.nodes))
        self.nodes.append((pid, b, e, score))

    def forward_best(self) -> tuple[list[float], list[int]]:
        r, nodes = self.r, self.nodes
        best, prev = [0.0] * len(nodes), [-1] * len(nodes)
        for pos in range(self.n + 1):
            for k in self.begin[pos]:
                bs, bn = 0.0, -1
                for j in self.end[pos]:
                    s = r(best[j] + nodes[k][3])
                    if bn < 0 or s > bs:
                        bs, bn = s, j
                best[k], prev[k] = bs, bn
        return best, prev

    def viterbi(self) -> tuple[list[int], float]:
        best, prev = self.forward_best()
        path, k = [], prev[1]
        while k > 0:
            path.append(k)
            k = prev[k]
        return path[::-1], best[1]

    def marginal(self, freq: float, expected: list[float]) -> float:
        """Add ``freq * P(node)`` to ``expected`` (SentencePiece's forward-backward); return freq * log Z."""
        r, nodes = self.r, self.nodes

        def lse(x: float, y: float, init: bool) -> float:
            if init:
                return y
            lo, hi = (x, y) if x < y else (y, x)
            if hi > lo + 50.0:
                return hi
            if r is _f32:  # SentencePiece: float difference, log1p(exp(.)) in double, rounded once
                return r(hi + math.log1p(math.exp(r(lo - hi))))
            return hi + math.log(math.exp(lo - hi) + 1.0)

        alpha, beta = [0.0] * len(nodes), [0.0] * len(nodes)
        for pos in range(self.n + 1):  # the chain does not depend on the right node: once per position
            acc = 0.0
            for i, j in enumerate(self.end[pos]):
                acc = lse(acc, r(nodes[j][3] + alpha[j]), i == 0)
            for k in self.begin[pos]:
                alpha[k] = acc
        for pos in range(self.n, -1, -1):
            acc = 0.0
            for i, k in enumerate(self.begin[pos]):
                acc = lse(acc, r(nodes[k][3] + beta[k]), i == 0)
            for j in self.end[pos]:
                beta[j] = acc
        z = alpha[1]
        for k in range(2, len(nodes)):
            pid, score = nodes[k][0], nodes[k][3]
            if pid >= 0:
                p = math.exp(r(r(r(alpha[k] + score) + beta[k]) - z))
                expected[pid] = r(expected[pid] + freq * p)
        return r(freq * z)

    def nbest(self, n: int) -> list[tuple[list[int], float]]:
        """A* from EOS; among equal priorities the older hypothesis first."""
        if n == 1:
            return [self.viterbi()]
        r, nodes = self.r, self.nodes
        best, _ = self.forward_best()
        seq, out = 0, []
        agenda = [(-best[1], 0, 1, 0.0, ())]
        while agenda:
            negfx, _, k, gx, suffix = heapq.heappop(agenda)
            if k == 0:
                out.append(([x for x in suffix if x != 1], -negfx))
                if len(out) == n:
                    break
                continue
            for j in self.end[nodes[k][1]]:
                seq += 1
                heapq.heappush(agenda, (-r(best[j] + gx), seq, j, r(nodes[j][3] + gx), (k,) + suffix))
        return out


# ==== Encoding ====


def best_ends(text: str, pieces: Mapping[str, tuple[int, float]], unk: tuple[int, float],
              r: Callable[[float], float], max_len: int, reset: bool) -> list[tuple[int, int]]:
    """The encoder's Viterbi, as SentencePiece's ``EncodeOptimized`` (and HF's port of it) run it:
    ``(start, piece id)`` of the best path's last piece at every char boundary.

    Starts in order; each offers ``r(V[start] + score)`` to the end of every piece that matches there
    (and the unknown char when no one-char piece does), kept on a strict ``>`` (the earliest start
    wins a tie). With ``reset`` (SentencePiece 0.2.3), a start whose value is past
    :data:`SCORE_RESET` first has that value subtracted from every value already held from it on, and
    goes on from 0: the float sums stay small, and near-ties round as they do there.

    >>> best_ends("ab", {"a": (0, -1.0), "b": (1, -1.0), "ab": (2, -3.0)}, (-2, -11.0), _f32, 2, True)
    [(-1, -1), (0, 0), (1, 1)]
    """
    n = len(text)
    value = [0.0] * (n + 1)
    best = [(-1, -1)] * (n + 1)
    frontier = 0

    def offer(start: int, end: int, pid: int, cand: float) -> None:
        if best[end][0] < 0 or cand > value[end]:
            value[end], best[end] = cand, (start, pid)

    for s in range(n):
        base = value[s]
        if reset and not -SCORE_RESET <= base <= SCORE_RESET:
            for i in range(s, max(frontier, s) + 1):
                if i == s or best[i][0] >= 0:
                    value[i] = r(value[i] - base)
            base = 0.0
        single = False
        for e in range(s + 1, min(n, s + max_len) + 1):
            hit = pieces.get(text[s:e])
            if hit is not None:
                single = single or e == s + 1
                frontier = max(frontier, e)
                offer(s, e, hit[0], r(base + hit[1]))
        if not single:
            frontier = max(frontier, s + 1)
            offer(s, s + 1, unk[0], r(base + unk[1]))
    return best


def viterbi(text: str, scores: Mapping[str, float], *, compat: str = "spm", unk: str = "<unk>") -> list[str]:
    """Best segmentation of ``text`` (:func:`best_ends`); unknown chars become ``unk`` (consecutive
    ones fused).

    >>> viterbi("www", {"w": -1.0, "ww": -2.0}, compat="hf")  # tie: the longest last piece wins
    ['w', 'ww']
    """
    r = _f32 if compat == "spm" else _f64
    pieces = {p: (i, r(s)) for i, (p, s) in enumerate(scores.items())}
    names = list(scores)
    unk_score = r(min(r(s) for s in scores.values()) - UNK_PENALTY)
    best = best_ends(text, pieces, (-2, unk_score), r, max(map(len, scores)), compat == "spm")
    pids: list[int] = []
    end = len(text)
    while end > 0:
        start, pid = best[end]
        pids.append(pid)
        end = start
    out: list[str] = []
    for pid in reversed(pids):
        if pid < 0 and out and out[-1] == unk:
            continue
        out.append(names[pid] if pid >= 0 else unk)
    return out


def sample(text: str, scores: Mapping[str, float], theta: float, rng: random.Random) -> list[str]:
    """Draw a segmentation from the exact ``p ∝ exp(theta * score)`` (forward filtering, backward sampling).

    >>> sample("ab", {"a": -1.0, "b": -1.0}, 0.5, random.Random(0))
    ['a', 'b']
    """
    pieces = {p: (i, s) for i, (p, s) in enumerate(scores.items())}
    names = list(scores)
    lat = Lattice(text, pieces, (-2, min(scores.values()) - UNK_PENALTY), _f64, max(map(len, scores)))
    nodes = lat.nodes
    alpha = [0.0] * len(nodes)
    for pos in range(lat.n + 1):
        for k in lat.begin[pos]:
            alpha[k] = math.log(math.fsum(math.exp(alpha[j] + theta * nodes[j][3]) for j in lat.end[pos]))
    path, k = [], 1
    while True:
        cands = lat.end[nodes[k][1]]
        w = [math.exp(alpha[j] + theta * nodes[j][3] - alpha[k]) for j in cands]
        k = rng.choices(cands, weights=w)[0]
        if k == 0:
            break
        path.append(k)
    return [names[nodes[k][0]] if nodes[k][0] >= 0 else "<unk>" for k in reversed(path)]


# ==== Training ====


def _stats(units: Sequence[tuple[str, int, int, int]], max_len: int, follower: Callable[[str], int],
           valid: Callable[[str], bool]) -> dict[str, list[int]]:
    """substring -> [freq, follower, branching, zfreq, zfollower, zbranching] over units
    ``(text, count, byte after it, byte after the sentence's NUL or -1)``."""
    st: dict[str, list[int]] = {}
    for w, cnt, end_f, after_f in units:
        n = len(w)
        for i in range(n):
            for j in range(i + 2, min(n, i + max_len) + 1):
                s = w[i:j]
                if not valid(s):
                    break
                f, zf = (follower(w[j]), -1) if j < n else (end_f, after_f)
                e = st.get(s)
                if e is None:
                    st[s] = [cnt, f, 0, cnt if zf >= 0 else 0, zf, 0]
                    continue
                e[0] += cnt
                e[2] |= e[1] != f
                if zf >= 0:
                    if e[3] == 0:
                        e[4] = zf
                    e[5] |= e[4] != zf
                    e[3] += cnt
    return st


def _seeds(sentences: Sequence[tuple[str, int]], words: Sequence[tuple[str, int]],
           required: Sequence[tuple[str, int]], compat: str, max_len: int, seed_size: int,
           valid: Callable[[str], bool]) -> list[tuple[str, float]]:
    if compat == "spm":
        # SentencePiece's LCP intervals of the sentences' bytes, after all the characters (but the
        # unknown U+2585 and the boundary U+001F; counts held in float32 as SentencePiece does)
        chars: Counter[str] = Counter()
        for s, f in sentences:
            for ch in s:
                if ch not in "\u2585\x1f":
                    chars[ch] += f
        subs = suffix_array_seeds(sentences, max_len=max_len, seed_size=seed_size, valid=valid)
        return [(c, _f32(float(n))) for c, n in sorted(chars.items(), key=lambda x: (-x[1], x[0]))] + subs
    st = _stats(sorted((w, 1, 0, -1) for w, _ in words), max_len, lambda ch: ord(ch) + 1, lambda s: True)
    chars = Counter()
    for w, c in words:
        for ch in w:
            chars[ch] += c
    seeds = [(c, float(n)) for c, n in sorted(chars.items(), key=lambda x: (-x[1], -ord(x[0])))]
    subs2 = sorted(((s, e[0] * len(s)) for s, e in st.items() if e[2] and e[0] >= 2), reverse=True)
    subs2.sort(key=lambda x: -x[1])  # score desc, then string desc (stable)
    for s, sc in subs2:
        if len(seeds) >= seed_size:
            break
        seeds.append((s, float(sc)))
    return seeds


class _Model:
    def __init__(self, pieces: list[tuple[str, float]], r: Callable[[float], float], max_len: int) -> None:
        self.pieces, self.r, self.max_len = pieces, r, max_len
        self.index: dict[str, tuple[int, float]] = {}
        for i, (p, s) in enumerate(pieces):
            self.index.setdefault(p, (i, s))
        self.min_score = min((s for _, s in pieces if not math.isnan(s)), default=0.0)

    def lattice(self, text: str, skip: int | None = None) -> Lattice:
        return Lattice(text, self.index, (0, self.r(self.min_score - UNK_PENALTY)), self.r, self.max_len, skip)


def _striped(words: Sequence[tuple[str, int]], threads: int, size: int, r: Callable[[float], float],
             f: Callable[[str, float, list[float]], float]) -> tuple[list[float], float]:
    total, obj = [0.0] * size, 0.0
    for t in range(threads):
        acc = [0.0] * size
        for w, c in words[t::threads]:
            obj += f(w, float(c), acc)
        total = [r(x + y) for x, y in zip(total, acc)]
    return total, obj


def _m_step(m: _Model, expected: list[float], hf: bool) -> list[tuple[str, float]]:
    r = m.r
    kept, total = [], 0.0
    for i, (p, _) in enumerate(m.pieces):
        if hf and i == 0:
            kept.append((p, math.nan))
        elif expected[i] >= 0.5:
            kept.append((p, expected[i]))
            total = r(total + expected[i])
    logsum = r(digamma(total))
    return [(p, e if (hf and i == 0) else r(digamma(e) - logsum)) for i, (p, e) in enumerate(kept)]


def _prune(m: _Model, words: Sequence[tuple[str, int]], threads: int, shrinking: float, desired: int,
           hf: bool) -> list[tuple[str, float]]:
    r, n = m.r, len(m.pieces)
    keep, alts = [True] * n, [[] for _ in range(n)]
    for i, (p, _) in enumerate(m.pieces):
        if hf and i == 0:
            continue
        lat = m.lattice(p)
        nb = lat.nbest(2)
        if len(nb) > 1 and len(nb[0][0]) >= 2:
            keep[i] = False
        elif len(nb) > 1:
            alts[i] = [lat.nodes[k][0] for k in nb[1][0]]

    def count(w: str, c: float, acc: list[float]) -> float:
        lat = m.lattice(w)
        for k in lat.viterbi()[0]:
            acc[lat.nodes[k][0]] = r(acc[lat.nodes[k][0]] + c)
        return 0.0

    freq, _ = _striped(words, threads, n, r, count)
    total = r(sum(f for i, f in enumerate(freq) if not (hf and i == 0)))
    logsum = r(math.log(total))
    new, cands = [], []
    for i in range(n):
        fi = freq[i]
        if hf and i == 0:
            new.append(m.pieces[0])
            continue
        if (fi == 0.0 or not keep[i]) if not hf else (fi == 0.0 and not keep[i]):
            continue
        if not alts[i]:
            new.append(m.pieces[i])
            continue
        if fi == 0.0:  # HF: no occurrence, no loss to compute
            continue
        alt_len = n if hf else len(alts[i])  # HF's quirk: the number of pieces (#1536/#2069)
        logsum_alt = r(math.log(r(total + r(fi * r(alt_len - 1.0)))))
        lp_alt = 0.0
        for a in alts[i]:
            lp_alt = r(lp_alt + (math.log(r(freq[a] + fi)) - logsum_alt))
        loss = r(r(fi / total) * r(r(math.log(fi) - logsum) - lp_alt))
        cands.append((i, loss))
    size = max(desired, int(shrinking * n))
    for i, _ in sorted(cands, key=lambda x: -x[1]):
        if len(new) >= size:
            break
        new.append(m.pieces[i])
    return new


def train_unigram(sentences: Sequence[tuple[str, int]], words: Sequence[tuple[str, int]],
                  required_chars: Sequence[tuple[str, int]], *, vocab_size: int, meta_pieces: int = 3,
                  compat: str = "spm", shrinking_factor: float = 0.75, num_sub_iterations: int = 2,
                  max_sentencepiece_length: int = 16, seed_sentencepiece_size: int = 1_000_000,
                  num_threads: int = 16, valid: Callable[[str], bool] | None = None) -> list[tuple[str, float]]:
    """Train a Unigram model; return ``(piece, score)`` without meta pieces, best first.

    The arguments are sentencepiece's option names (as :class:`subword.unigram.UnigramTrainer`'s) and
    mean what ``subword._core.train_unigram``'s do (which gives the same result).

    >>> s = [("\u2581the\u2581cat\u2581sat", 3), ("\u2581the\u2581dog\u2581sat", 3)]
    >>> w = [("\u2581sat", 6), ("\u2581the", 6), ("\u2581cat", 3), ("\u2581dog", 3)]
    >>> req = [("\u2581", 12), ("t", 12), ("a", 9), ("e", 6), ("h", 6), ("s", 6), ("c", 3), ("d", 3), ("g", 3), ("o", 3)]
    >>> [p for p, _ in train_unigram(s, w, req, vocab_size=16)][:3]
    ['▁', 't', 'e']
    """
    if compat not in ("spm", "hf"):
        raise ValueError(f"unknown compat {compat!r}: expected 'spm' or 'hf'")
    hf = compat == "hf"
    r = _f64 if hf else _f32
    if valid is None:
        def valid(s: str) -> bool:
            return all(c not in "\u2585\0\x1f " for c in s) and "\u2581" not in s[1:]
    if not words:
        raise ValueError("no training text (the word list is empty)")
    max_piece_length, seed_size = max_sentencepiece_length, seed_sentencepiece_size
    if vocab_size < len(required_chars) + meta_pieces:
        raise ValueError(f"vocab_size {vocab_size} is smaller than the {len(required_chars)} required "
                         f"characters plus {meta_pieces} meta pieces")
    if not hf and seed_size == 0:  # sentencepiece 0.2.3: 8x the vocabulary, at least 100k
        seed_size = max(100_000, 8 * vocab_size)
    seeds = _seeds(sentences, words, required_chars, compat, max_piece_length, seed_size, valid)
    logsum = math.log(sum(x for _, x in seeds))
    pieces = [(p, r(math.log(x) - logsum)) for p, x in seeds]
    if hf:
        pieces.insert(0, ("<UNK>", math.nan))
    desired = vocab_size * 11 // 10 if hf else int(vocab_size * 1.1)
    # SentencePiece runs EM over the words only with split_by_whitespace, i.e. when no piece may
    # hold a "▁" between two letters (probed on ASCII letters, to which no other rule applies)
    if not hf and valid("a\u2581a"):
        words = sentences
    m = _Model(pieces, r, max_piece_length)
    while True:
        for _ in range(max(1, num_sub_iterations)):
            exp, _ = _striped(words, num_threads, len(m.pieces), r,
                              lambda w, c, acc, m=m: m.lattice(w).marginal(c, acc))
            m = _Model(_m_step(m, exp, hf), r, max_piece_length)
        if hf and len(m.pieces) <= desired:
            break
        pruned = _prune(m, words, num_threads, shrinking_factor, desired, hf)
        stop = len(pruned) >= len(m.pieces)
        m = _Model(pruned, r, max_piece_length)
        if (not hf and len(m.pieces) <= desired) or stop:
            break
    if not hf:  # drop pieces their own string segments strictly better without
        m = _Model([(p, s) for i, (p, s) in enumerate(m.pieces)
                    if len(p) < 2 or m.lattice(p, skip=i).viterbi()[1] <= s], r, max_piece_length)
    return _finalize(m, required_chars, vocab_size - meta_pieces, hf)


def _finalize(m: _Model, required: Sequence[tuple[str, int]], budget: int, hf: bool) -> list[tuple[str, float]]:
    scores = {p: s for p, s in m.pieces}
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    penalty = 0.0
    for ch, _ in required:
        s = scores.get(ch)
        if s is None or math.isnan(s):
            s = m.r(m.min_score + penalty)
            penalty += 0.0001
        if ch not in seen:
            seen.add(ch)
            out.append((ch, s))
    if not hf:
        for p, s in sorted(m.pieces, key=lambda x: (-x[1], x[0])):
            if len(out) >= budget:
                break
            if p not in seen:
                seen.add(p)
                out.append((p, s))
        return sorted(out, key=lambda x: (-x[1], x[0]))
    seen.add(m.pieces[0][0])
    if len(out) < budget:
        for p, s in m.pieces[1:]:
            if p in seen:
                continue
            seen.add(p)
            out.append((p, 0.0 if math.isnan(s) else s))
            if len(out) == budget:
                break
    return sorted(out, key=lambda x: -x[1])
