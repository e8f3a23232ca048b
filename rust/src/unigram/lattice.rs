//! The segmentation lattice of one string: one node per (start, piece) match, plus BOS/EOS.
//!
//! Node order follows SentencePiece's `Lattice`: nodes that begin at a position are in insertion
//! order (trie order = increasing length, then the unk node), and nodes that end at a position are
//! in order of their start (earliest start = longest first). Ties in Viterbi go to the first
//! candidate in that order (strict `>`), as in both SentencePiece and HF.
//!
//! Arithmetic is done in f64 and rounded with [`Compat::r`] after every operation, so the
//! SentencePiece mode reproduces float32 sums.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::Compat;

/// Id of the BOS/EOS nodes.
pub const NO_ID: i64 = -1;

#[derive(Clone, Debug)]
pub struct Node {
    /// Piece id (or the unk id), `-1` for BOS/EOS.
    pub id: i64,
    /// Start and end, in characters.
    pub begin: usize,
    pub end: usize,
    pub score: f64,
}

/// A lattice over `len` characters.
pub struct Lattice {
    pub len: usize,
    pub compat: Compat,
    pub nodes: Vec<Node>,
    begin_nodes: Vec<Vec<u32>>,
    end_nodes: Vec<Vec<u32>>,
    /// Reused forward/backward buffers.
    alpha: Vec<f64>,
    beta: Vec<f64>,
}

const BOS: usize = 0;
const EOS: usize = 1;

/// `log(exp(x) + exp(y))` as SentencePiece computes it (`init` returns `y`; gaps over 50 are cut).
#[inline]
fn log_sum_exp(c: Compat, x: f64, y: f64, init: bool) -> f64 {
    if init {
        return y;
    }
    let (vmin, vmax) = if x < y { (x, y) } else { (y, x) };
    if vmax > vmin + 50.0 {
        vmax
    } else {
        match c {
            // float difference, then log1p(exp(.)) in double, rounded once (SentencePiece)
            Compat::Spm => c.r(vmax + c.r(vmin - vmax).exp().ln_1p()),
            Compat::Hf => vmax + ((vmin - vmax).exp() + 1.0).ln(),
        }
    }
}

/// A small deterministic RNG (SplitMix64) for sampling; seeded by the caller.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Index drawn with probability proportional to `exp(logw[i] - max)`.
    pub fn categorical_log(&mut self, logw: &[f64]) -> usize {
        let m = logw.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let w: Vec<f64> = logw.iter().map(|&x| (x - m).exp()).collect();
        let total: f64 = w.iter().sum();
        let mut u = self.next_f64() * total;
        for (i, x) in w.iter().enumerate() {
            if u < *x {
                return i;
            }
            u -= x;
        }
        w.len().saturating_sub(1)
    }
}

struct Hyp {
    node: u32,
    next: Option<u32>, // index into the hypothesis arena
    fx: f64,
    gx: f64,
}

#[derive(PartialEq)]
struct Agenda {
    fx: f64,
    seq: u64,
    hyp: u32,
}
impl Eq for Agenda {}
impl PartialOrd for Agenda {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Agenda {
    fn cmp(&self, o: &Self) -> Ordering {
        // Max-heap on fx; among equal fx the older hypothesis first.
        self.fx.partial_cmp(&o.fx).unwrap_or(Ordering::Equal).then(o.seq.cmp(&self.seq))
    }
}

impl Lattice {
    /// An empty lattice over `len` characters (BOS and EOS only).
    pub fn new(len: usize, compat: Compat) -> Lattice {
        let mut l = Lattice {
            len,
            compat,
            nodes: Vec::with_capacity(len * 4 + 2),
            begin_nodes: Vec::new(),
            end_nodes: Vec::new(),
            alpha: Vec::new(),
            beta: Vec::new(),
        };
        l.reset(len);
        l
    }

    /// Empties the lattice for a string of `len` characters, keeping the allocations.
    pub fn reset(&mut self, len: usize) {
        self.len = len;
        self.nodes.clear();
        if self.begin_nodes.len() < len + 1 {
            self.begin_nodes.resize_with(len + 1, Vec::new);
            self.end_nodes.resize_with(len + 1, Vec::new);
        }
        for v in &mut self.begin_nodes[..=len] {
            v.clear();
        }
        for v in &mut self.end_nodes[..=len] {
            v.clear();
        }
        self.nodes.push(Node { id: NO_ID, begin: 0, end: 0, score: 0.0 });
        self.nodes.push(Node { id: NO_ID, begin: len, end: len, score: 0.0 });
        self.end_nodes[0].push(BOS as u32);
        self.begin_nodes[len].push(EOS as u32);
    }

    /// Adds a node for piece `id` over characters `begin..end`.
    pub fn insert(&mut self, begin: usize, end: usize, id: i64, score: f64) {
        let k = self.nodes.len() as u32;
        self.nodes.push(Node { id, begin, end, score });
        self.begin_nodes[begin].push(k);
        self.end_nodes[end].push(k);
    }

    /// Nodes starting at `pos` (insertion order).
    pub fn begin_nodes(&self, pos: usize) -> &[u32] {
        &self.begin_nodes[pos]
    }

    /// Forward pass: best score of a path from BOS through each node (inclusive), and its predecessor.
    fn forward_best(&self) -> (Vec<f64>, Vec<u32>) {
        let c = self.compat;
        let mut best = vec![0.0f64; self.nodes.len()];
        let mut prev = vec![u32::MAX; self.nodes.len()];
        for pos in 0..=self.len {
            for &r in &self.begin_nodes[pos] {
                let r = r as usize;
                let mut best_score = 0.0;
                let mut best_node = u32::MAX;
                for &l in &self.end_nodes[pos] {
                    let s = c.r(best[l as usize] + self.nodes[r].score);
                    if best_node == u32::MAX || s > best_score {
                        best_score = s;
                        best_node = l;
                    }
                }
                best[r] = best_score;
                prev[r] = best_node;
            }
        }
        (best, prev)
    }

    /// The best path (node indices, BOS/EOS excluded) and its score.
    pub fn viterbi(&self) -> (Vec<usize>, f64) {
        let (best, prev) = self.forward_best();
        let mut path = Vec::new();
        let mut k = prev[EOS];
        while k != u32::MAX && k as usize != BOS {
            path.push(k as usize);
            k = prev[k as usize];
        }
        path.reverse();
        (path, best[EOS])
    }

    /// Adds `freq * P(node)` to `expected[id]` for every node with an id and returns `freq * log Z`.
    /// Forward-backward exactly as SentencePiece's `PopulateMarginal`.
    pub fn populate_marginal(&mut self, freq: f64, expected: &mut [f64]) -> f64 {
        let c = self.compat;
        let n = self.nodes.len();
        let mut alpha = std::mem::take(&mut self.alpha);
        let mut beta = std::mem::take(&mut self.beta);
        alpha.clear();
        alpha.resize(n, 0.0);
        beta.clear();
        beta.resize(n, 0.0);
        // SentencePiece recomputes the same log-sum-exp chain for every node of a position (it does
        // not depend on that node); we compute it once per position, with the same operations in the
        // same order, so the result is bit-identical.
        for pos in 0..=self.len {
            let mut acc = 0.0f64;
            for (j, &l) in self.end_nodes[pos].iter().enumerate() {
                let l = l as usize;
                acc = log_sum_exp(c, acc, c.r(self.nodes[l].score + alpha[l]), j == 0);
            }
            for &r in &self.begin_nodes[pos] {
                alpha[r as usize] = acc;
            }
        }
        for pos in (0..=self.len).rev() {
            let mut acc = 0.0f64;
            for (j, &r) in self.begin_nodes[pos].iter().enumerate() {
                let r = r as usize;
                acc = log_sum_exp(c, acc, c.r(self.nodes[r].score + beta[r]), j == 0);
            }
            for &l in &self.end_nodes[pos] {
                beta[l as usize] = acc;
            }
        }
        let z = alpha[EOS];
        for (k, node) in self.nodes.iter().enumerate().skip(2) {
            if node.id >= 0 {
                // the exponent is a float sum, the product and the addition are done in double
                let p = c.r(c.r(c.r(alpha[k] + node.score) + beta[k]) - z).exp();
                let slot = &mut expected[node.id as usize];
                *slot = c.r(*slot + freq * p);
            }
        }
        self.alpha = alpha;
        self.beta = beta;
        c.r(freq * z)
    }

    /// The `n` best paths (node indices, BOS/EOS excluded) with their scores, best first (A* from EOS).
    pub fn nbest(&self, n: usize) -> Vec<(Vec<usize>, f64)> {
        let c = self.compat;
        let mut out = Vec::new();
        if n == 0 {
            return out;
        }
        if n == 1 {
            let (p, s) = self.viterbi();
            return vec![(p, s)];
        }
        let (best, _) = self.forward_best();
        let mut hyps: Vec<Hyp> = Vec::new();
        let mut agenda = BinaryHeap::new();
        let mut seq = 0u64;
        hyps.push(Hyp { node: EOS as u32, next: None, fx: best[EOS], gx: 0.0 });
        agenda.push(Agenda { fx: best[EOS], seq, hyp: 0 });
        while let Some(top) = agenda.pop() {
            let h = top.hyp as usize;
            let node = hyps[h].node as usize;
            if node == BOS {
                let mut path = Vec::new();
                let mut k = hyps[h].next;
                while let Some(i) = k {
                    let nd = hyps[i as usize].node as usize;
                    if nd != EOS {
                        path.push(nd);
                    }
                    k = hyps[i as usize].next;
                }
                out.push((path, hyps[h].fx));
                if out.len() == n {
                    break;
                }
                continue;
            }
            let gx_top = hyps[h].gx;
            let begin = self.nodes[node].begin;
            for &l in &self.end_nodes[begin] {
                let l = l as usize;
                seq += 1;
                let fx = c.r(best[l] + gx_top);
                let gx = c.r(self.nodes[l].score + gx_top);
                let idx = hyps.len() as u32;
                hyps.push(Hyp { node: l as u32, next: Some(h as u32), fx, gx });
                agenda.push(Agenda { fx, seq, hyp: idx });
            }
            // Keep memory bounded as SentencePiece does.
            if agenda.len() > 10_000 {
                let keep = std::cmp::min(512, 10 * n);
                let mut v: Vec<Agenda> = Vec::with_capacity(keep);
                while v.len() < keep {
                    match agenda.pop() {
                        Some(a) => v.push(a),
                        None => break,
                    }
                }
                agenda = v.into_iter().collect();
            }
        }
        out
    }

    /// Draws one path from the exact distribution `p(path) ∝ exp(theta * score(path))`
    /// (forward filtering, backward sampling).
    pub fn sample(&self, theta: f64, rng: &mut Rng) -> Vec<usize> {
        let n = self.nodes.len();
        let mut alpha = vec![0.0f64; n];
        for pos in 0..=self.len {
            let ends = &self.end_nodes[pos];
            for &r in &self.begin_nodes[pos] {
                let r = r as usize;
                let mut acc = f64::NEG_INFINITY;
                for &l in ends {
                    let l = l as usize;
                    let v = theta * self.nodes[l].score + alpha[l];
                    acc = if acc == f64::NEG_INFINITY {
                        v
                    } else {
                        let (a, b) = if acc > v { (acc, v) } else { (v, acc) };
                        a + (b - a).exp().ln_1p()
                    };
                }
                alpha[r] = acc;
            }
        }
        let mut path = Vec::new();
        let mut node = EOS;
        loop {
            let ends = &self.end_nodes[self.nodes[node].begin];
            let logw: Vec<f64> =
                ends.iter().map(|&l| alpha[l as usize] + theta * self.nodes[l as usize].score).collect();
            let pick = ends[rng.categorical_log(&logw)] as usize;
            if pick == BOS {
                break;
            }
            path.push(pick);
            node = pick;
        }
        path.reverse();
        path
    }

    /// Log of the partition function `log Σ_paths exp(theta * score(path))` (f64).
    pub fn log_partition(&self, theta: f64) -> f64 {
        let n = self.nodes.len();
        let mut alpha = vec![f64::NEG_INFINITY; n];
        alpha[BOS] = 0.0;
        for pos in 0..=self.len {
            for &r in &self.begin_nodes[pos] {
                let r = r as usize;
                let mut acc = f64::NEG_INFINITY;
                for &l in &self.end_nodes[pos] {
                    let v = alpha[l as usize] + theta * self.nodes[l as usize].score;
                    let (a, b) = if acc > v { (acc, v) } else { (v, acc) };
                    acc = if a == f64::NEG_INFINITY { a } else { a + (b - a).exp().ln_1p() };
                }
                alpha[r] = acc;
            }
        }
        alpha[EOS]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toy() -> Lattice {
        // "abc": a b c ab bc abc
        let mut l = Lattice::new(3, Compat::Hf);
        l.insert(0, 1, 0, -1.0);
        l.insert(0, 2, 3, -1.5);
        l.insert(0, 3, 5, -3.5);
        l.insert(1, 2, 1, -1.0);
        l.insert(1, 3, 4, -1.2);
        l.insert(2, 3, 2, -1.0);
        l
    }

    fn ids(l: &Lattice, p: &[usize]) -> Vec<i64> {
        p.iter().map(|&k| l.nodes[k].id).collect()
    }

    #[test]
    fn viterbi_and_nbest() {
        let l = toy();
        let (p, s) = l.viterbi();
        assert_eq!(ids(&l, &p), vec![0, 4]);
        assert!((s + 2.2).abs() < 1e-12);
        let nb = l.nbest(4);
        let got: Vec<Vec<i64>> = nb.iter().map(|(p, _)| ids(&l, p)).collect();
        assert_eq!(got, vec![vec![0, 4], vec![3, 2], vec![0, 1, 2], vec![5]]);
        assert!((nb[1].1 + 2.5).abs() < 1e-12);
    }

    #[test]
    fn marginals_sum_to_expected_length() {
        let mut l = toy();
        let mut e = vec![0.0; 6];
        l.populate_marginal(1.0, &mut e);
        // every char is covered exactly once: P(a)+P(ab)+P(abc) == 1
        assert!((e[0] + e[3] + e[5] - 1.0).abs() < 1e-9);
        assert!((e[2] + e[4] + e[5] - 1.0).abs() < 1e-9);
    }

    #[test]
    fn sampling_matches_exact_distribution() {
        let l = toy();
        let theta = 0.3;
        let z = l.log_partition(theta);
        let paths = l.nbest(4);
        let mut rng = Rng::new(7);
        let mut counts = std::collections::HashMap::new();
        let n = 40_000;
        for _ in 0..n {
            *counts.entry(ids(&l, &l.sample(theta, &mut rng))).or_insert(0usize) += 1;
        }
        let mut tv = 0.0;
        for (p, s) in &paths {
            let exact = (theta * s - z).exp();
            let got = *counts.get(&ids(&l, p)).unwrap_or(&0) as f64 / n as f64;
            tv += (exact - got).abs() / 2.0;
        }
        assert!(tv < 0.01, "tv {tv}");
    }
}
