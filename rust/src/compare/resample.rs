//! The paired bootstrap's resampling counts, and the replicates of the type-count metrics.
//!
//! Replicate `r` of seed `s` draws `n` lines with replacement; draw `i` is a pure function of
//! `(s, r, i)` (a counter-based SplitMix64: the `i`-th output of SplitMix64 started at
//! `mix(mix(s) ^ r)`), mapped to a line by the high 64 bits of `x * n` (bias at most n / 2^64).
//! So every replicate can be drawn on any thread, in any order, with the same result, and the numpy
//! reference (`subword/compare/bootstrap.py`) computes the same draws.

use rayon::prelude::*;

const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's output function of state `z` (after its increment).
#[inline]
pub fn finalize(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// One SplitMix64 step from state `z`: `finalize(z + GAMMA)`.
#[inline]
pub fn mix(z: u64) -> u64 {
    finalize(z.wrapping_add(GAMMA))
}

/// The starting state of replicate `r`.
pub fn replicate_key(seed: u64, r: u64) -> u64 {
    mix(mix(seed) ^ r)
}

/// Draw `i` (0-based) of replicate key `key`, as a line in `0..n`.
#[inline]
pub fn draw(key: u64, i: u64, n: u64) -> u64 {
    let x = finalize(key.wrapping_add(GAMMA.wrapping_mul(i + 1)));
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

/// Adds replicate `r`'s draw counts into `counts` (length `n`).
pub fn add_counts(seed: u64, r: u64, counts: &mut [u32]) {
    let n = counts.len() as u64;
    let key = replicate_key(seed, r);
    for i in 0..n {
        counts[draw(key, i, n) as usize] += 1;
    }
}

/// Replicate `r`'s counts as bytes (an `n`-byte array stays in cache, where `u32` counts do not),
/// or `None` if a line is drawn 255 times or more (then the caller counts in `u32`).
pub fn counts_u8(seed: u64, r: u64, n: usize) -> Option<Vec<u8>> {
    let mut counts = vec![0u8; n];
    let key = replicate_key(seed, r);
    let mut full = false;
    for i in 0..n as u64 {
        let c = &mut counts[draw(key, i, n as u64) as usize];
        full |= *c == u8::MAX;
        *c = c.wrapping_add(1);
    }
    (!full).then_some(counts)
}

/// Rows `rows[k][l]` as one line-major array `t[l * rows.len() + k]`, in tiles of lines so that
/// both sides stay in cache.
fn transpose<T: Copy + Default>(rows: &[Vec<T>], n: usize) -> Vec<T> {
    let b = rows.len();
    let mut t = vec![T::default(); n * b];
    for l0 in (0..n).step_by(64) {
        let l1 = (l0 + 64).min(n);
        for (k, row) in rows.iter().enumerate() {
            for l in l0..l1 {
                t[l * b + k] = row[l];
            }
        }
    }
    t
}

/// Resampling counts of replicates `first..first + rows` as little-endian `f64` bytes, row-major
/// `rows x n` (`out` holds `rows * n * 8` bytes): the buffer numpy reads as the weights matrix.
pub fn weights_f64_le(n: usize, seed: u64, first: u64, out: &mut [u8]) {
    if n == 0 {
        return;
    }
    let fill = |(k, row): (usize, &mut [u8])| {
        let r = first + k as u64;
        match counts_u8(seed, r, n) {
            Some(counts) => {
                for (w, &c) in row.chunks_exact_mut(8).zip(&counts) {
                    w.copy_from_slice(&f64::from(c).to_le_bytes());
                }
            }
            None => {
                let mut counts = vec![0u32; n];
                add_counts(seed, r, &mut counts);
                for (w, &c) in row.chunks_exact_mut(8).zip(&counts) {
                    w.copy_from_slice(&f64::from(c).to_le_bytes());
                }
            }
        }
    };
    if crate::parallel::parallel_allowed() {
        out.par_chunks_mut(n * 8).enumerate().for_each(fill);
    } else {
        out.chunks_mut(n * 8).enumerate().for_each(fill);
    }
}

/// Per replicate, the sums the type-count metrics need: `[types used, tokens, sum c^alpha, sum c log2 c]`
/// over the token types' counts `c` in the replicate.
///
/// `types[t]` is token `t`'s type (`0..ntypes`), `lines[t]` its line (`0..n`, non-decreasing).
/// The count of type v in replicate r is `sum over lines l of count(v, l) * w_r(l)`, computed for a
/// block of replicates at once per (type, line) pair, with the block's counts stored line-major.
pub fn type_count_replicates(
    types: &[u32],
    lines: &[u32],
    ntypes: usize,
    n: usize,
    seed: u64,
    replicates: usize,
    alpha: f64,
) -> Result<Vec<[f64; 4]>, String> {
    let mut all = type_count_replicates_many(&[(types, lines, ntypes)], n, seed, replicates, alpha)?;
    Ok(all.pop().unwrap_or_default())
}

/// [`type_count_replicates`] of several tokenizers `(types, lines, ntypes)` over the same lines:
/// each block of resampling counts is drawn once for all of them.
pub fn type_count_replicates_many(
    sets: &[(&[u32], &[u32], usize)],
    n: usize,
    seed: u64,
    replicates: usize,
    alpha: f64,
) -> Result<Vec<Vec<[f64; 4]>>, String> {
    let grouped: Vec<(Vec<(u32, u32)>, Vec<usize>)> =
        sets.iter().map(|&(t, l, v)| type_line_pairs(t, l, v, n)).collect::<Result<_, _>>()?;
    let mut out = vec![vec![[0.0f64; 4]; replicates]; sets.len()];
    // Blocks of replicates: counts as u8 (a line drawn 255+ times in one replicate is next to
    // impossible; then the block is redone with u32), at most 32 MB of them per block.
    let block = (32usize << 20).checked_div(n.max(1)).unwrap_or(1).clamp(1, 256);
    let mut first = 0;
    while first < replicates {
        let b = block.min(replicates - first);
        let small: Vec<Option<Vec<u8>>> = par_collect(b, |k| counts_u8(seed, (first + k) as u64, n));
        if small.iter().all(Option::is_some) {
            let rows: Vec<Vec<u8>> = small.into_iter().flatten().collect();
            let t = transpose(&rows, n);
            drop(rows);
            for (o, (pairs, starts)) in out.iter_mut().zip(&grouped) {
                o[first..first + b].copy_from_slice(&block_sums(&t, b, pairs, starts, alpha));
            }
        } else {
            drop(small);
            let rows: Vec<Vec<u32>> = par_collect(b, |k| {
                let mut c = vec![0u32; n];
                add_counts(seed, (first + k) as u64, &mut c);
                c
            });
            let t = transpose(&rows, n);
            drop(rows);
            for (o, (pairs, starts)) in out.iter_mut().zip(&grouped) {
                o[first..first + b].copy_from_slice(&block_sums(&t, b, pairs, starts, alpha));
            }
        }
        first += b;
    }
    Ok(out)
}

/// `(pairs, pair_start)`: the (line, tokens) pairs of each type, type after type (`pair_start[v]..
/// pair_start[v + 1]`), lines increasing.
fn type_line_pairs(
    types: &[u32],
    lines: &[u32],
    ntypes: usize,
    n: usize,
) -> Result<(Vec<(u32, u32)>, Vec<usize>), String> {
    if types.len() != lines.len() {
        return Err(format!("{} token types but {} token lines", types.len(), lines.len()));
    }
    if let Some(&t) = types.iter().find(|&&t| t as usize >= ntypes) {
        return Err(format!("token type {t} is not below {ntypes}"));
    }
    if let Some(&l) = lines.iter().find(|&&l| l as usize >= n) {
        return Err(format!("token line {l} is not below {n}"));
    }
    // (type, line) pairs with their token counts, grouped by type, lines increasing (counting sort).
    let mut start = vec![0usize; ntypes + 1];
    for &t in types {
        start[t as usize + 1] += 1;
    }
    for v in 0..ntypes {
        start[v + 1] += start[v];
    }
    let mut fill = start.clone();
    let mut by_type = vec![0u32; types.len()];
    for (&t, &l) in types.iter().zip(lines) {
        by_type[fill[t as usize]] = l;
        fill[t as usize] += 1;
    }
    let mut pair_start = Vec::with_capacity(ntypes + 1);
    let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(types.len());
    for v in 0..ntypes {
        pair_start.push(pairs.len());
        let mut last: Option<u32> = None;
        for &l in &by_type[start[v]..start[v + 1]] {
            if last == Some(l) {
                if let Some(p) = pairs.last_mut() {
                    p.1 += 1;
                }
            } else {
                pairs.push((l, 1));
                last = Some(l);
            }
        }
    }
    pair_start.push(pairs.len());
    drop(by_type);

    Ok((pairs, pair_start))
}

/// The accumulator of [`block_sums`]: u32 or u64.
trait Acc: Copy + Send + Sync {
    const ZERO: Self;
    fn from_u32(x: u32) -> Self;
    fn mul_add(self, x: Self, c: Self) -> Self;
    fn add(self, x: Self) -> Self;
    fn to_u64(self) -> u64;
}

impl Acc for u32 {
    const ZERO: Self = 0;
    #[inline(always)]
    fn from_u32(x: u32) -> Self {
        x
    }
    #[inline(always)]
    fn mul_add(self, x: Self, c: Self) -> Self {
        self + x * c
    }
    #[inline(always)]
    fn add(self, x: Self) -> Self {
        self + x
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
}

impl Acc for u64 {
    const ZERO: Self = 0;
    #[inline(always)]
    fn from_u32(x: u32) -> Self {
        u64::from(x)
    }
    #[inline(always)]
    fn mul_add(self, x: Self, c: Self) -> Self {
        self + x * c
    }
    #[inline(always)]
    fn add(self, x: Self) -> Self {
        self + x
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self
    }
}

fn par_collect<T: Send>(k: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    if crate::parallel::parallel_allowed() {
        (0..k).into_par_iter().map(f).collect()
    } else {
        (0..k).map(f).collect()
    }
}

/// The four sums for a block of `b` replicates whose counts are `w[l * b + k]`. Types are taken in
/// fixed groups and the groups' partial sums added in order, so the result does not depend on threads.
fn block_sums<W: Copy + Into<u32> + Sync>(
    w: &[W],
    b: usize,
    pairs: &[(u32, u32)],
    pair_start: &[usize],
    alpha: f64,
) -> Vec<[f64; 4]> {
    // A type's count in a replicate is at most (its tokens) x (the largest line count): 32-bit
    // accumulators (twice the SIMD lanes) when that cannot overflow.
    let tokens: u64 = pairs.iter().map(|&(_, c)| u64::from(c)).sum();
    let most = w.iter().map(|&x| u64::from(x.into())).max().unwrap_or(0);
    if tokens.saturating_mul(most) < u64::from(u32::MAX) {
        block_sums_with::<W, u32>(w, b, pairs, pair_start, alpha)
    } else {
        block_sums_with::<W, u64>(w, b, pairs, pair_start, alpha)
    }
}

/// `acc[r] += c * w[l * b + r]` over the `(l, c)` pairs of one type. The body is compiled twice, once
/// with AVX2 (32-bit multiplies in eight lanes; the baseline x86-64 target has no packed 32-bit
/// multiply, so the portable build spends most of the type-count replicates here), chosen at run time.
fn accumulate<W: Copy + Into<u32>, A: Acc>(acc: &mut [A], pairs: &[(u32, u32)], w: &[W], b: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above); the body is the portable one.
            unsafe { accumulate_avx2(acc, pairs, w, b) };
            return;
        }
    }
    accumulate_generic(acc, pairs, w, b);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn accumulate_avx2<W: Copy + Into<u32>, A: Acc>(acc: &mut [A], pairs: &[(u32, u32)], w: &[W], b: usize) {
    accumulate_generic(acc, pairs, w, b);
}

#[inline(always)]
fn accumulate_generic<W: Copy + Into<u32>, A: Acc>(acc: &mut [A], pairs: &[(u32, u32)], w: &[W], b: usize) {
    let acc = &mut acc[..b];
    for &(l, c) in pairs {
        let row = &w[l as usize * b..(l as usize + 1) * b];
        if c == 1 {
            // Most (type, line) pairs are one token: no multiply.
            for (a, &x) in acc.iter_mut().zip(row) {
                *a = a.add(A::from_u32(x.into()));
            }
        } else {
            let c = A::from_u32(c);
            for (a, &x) in acc.iter_mut().zip(row) {
                *a = a.mul_add(A::from_u32(x.into()), c);
            }
        }
    }
}

fn block_sums_with<W: Copy + Into<u32> + Sync, A: Acc>(
    w: &[W],
    b: usize,
    pairs: &[(u32, u32)],
    pair_start: &[usize],
    alpha: f64,
) -> Vec<[f64; 4]> {
    let ntypes = pair_start.len() - 1;
    const GROUP: usize = 512;
    let table: Vec<(f64, f64)> = (0..1u32 << 14)
        .map(|c| {
            let x = f64::from(c);
            (if c == 0 { 0.0 } else { x.powf(alpha) }, if c == 0 { 0.0 } else { x * x.log2() })
        })
        .collect();
    // A task takes TASK groups of types and walks the lines in tiles, each type's pairs inside the
    // tile at a time: the tile's counts are read from cache by every type of the task, where a type at
    // a time would fetch a frequent type's rows from memory again for every type. The sums stay per
    // group of GROUP types, added in type order, so the result does not depend on TASK or TILE.
    const TASK: usize = 4;
    const TILE: usize = 4096;
    let n_lines = w.len() / b.max(1);
    let task = |k: usize| -> Vec<Vec<[f64; 4]>> {
        let v0 = k * TASK * GROUP;
        let v1 = ((k + 1) * TASK * GROUP).min(ntypes);
        let mut acc = vec![A::ZERO; (v1 - v0) * b];
        let mut pos: Vec<usize> = pair_start[v0..v1].to_vec();
        for t1 in (TILE..n_lines + TILE).step_by(TILE) {
            for (vi, v) in (v0..v1).enumerate() {
                let (from, end) = (pos[vi], pair_start[v + 1]);
                let upto = from + pairs[from..end].partition_point(|&(l, _)| (l as usize) < t1);
                if upto > from {
                    accumulate(&mut acc[vi * b..(vi + 1) * b], &pairs[from..upto], w, b);
                    pos[vi] = upto;
                }
            }
        }
        let mut parts = Vec::with_capacity(TASK);
        for g0 in (v0..v1).step_by(GROUP) {
            let mut part = vec![[0.0f64; 4]; b];
            for v in g0..(g0 + GROUP).min(v1) {
                for (p, &a) in part.iter_mut().zip(&acc[(v - v0) * b..(v - v0 + 1) * b]) {
                    let a = a.to_u64();
                    if a == 0 {
                        continue;
                    }
                    let (pa, pl) = match table.get(a as usize) {
                        Some(&t) => t,
                        None => {
                            let x = a as f64;
                            (x.powf(alpha), x * x.log2())
                        }
                    };
                    p[0] += 1.0;
                    p[1] += a as f64;
                    p[2] += pa;
                    p[3] += pl;
                }
            }
            parts.push(part);
        }
        parts
    };
    let tasks = ntypes.div_ceil(GROUP * TASK);
    let parts: Vec<Vec<[f64; 4]>> = par_collect(tasks, task).into_iter().flatten().collect();
    let mut out = vec![[0.0f64; 4]; b];
    for part in parts {
        for (o, p) in out.iter_mut().zip(part) {
            for q in 0..4 {
                o[q] += p[q];
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_a_function_of_seed_replicate_and_index() {
        let mut a = vec![0u32; 100];
        let mut b = vec![0u32; 100];
        add_counts(7, 3, &mut a);
        add_counts(7, 3, &mut b);
        assert_eq!(a, b);
        assert_eq!(a.iter().sum::<u32>(), 100);
        add_counts(7, 4, &mut b);
        assert_ne!(a.iter().map(|&x| 2 * x).collect::<Vec<_>>(), b);
        assert!((0..1000).all(|i| draw(replicate_key(1, 2), i, 10) < 10));
    }

    #[test]
    fn byte_counts_equal_wide_counts_and_transpose_is_exact() {
        let mut wide = vec![0u32; 1000];
        add_counts(3, 9, &mut wide);
        let small = counts_u8(3, 9, 1000).unwrap();
        assert!(wide.iter().zip(&small).all(|(&a, &b)| a == u32::from(b)));
        let rows = vec![vec![1u8, 2, 3], vec![4, 5, 6]];
        assert_eq!(transpose(&rows, 3), [1, 4, 2, 5, 3, 6]);
        // 300 draws of one line overflow a byte: the caller then counts in u32.
        assert!(counts_u8(0, 0, 1).is_some());
    }

    #[test]
    fn type_counts_match_a_direct_count() {
        // Tokens of types [0, 1, 0 | 1 | 2, 2] on lines 0, 1, 2.
        let types = [0u32, 1, 0, 1, 2, 2];
        let lines = [0u32, 0, 0, 1, 2, 2];
        let got = type_count_replicates(&types, &lines, 3, 3, 5, 4, 2.5).unwrap();
        for (r, sums) in got.iter().enumerate() {
            let mut w = vec![0u32; 3];
            add_counts(5, r as u64, &mut w);
            let c: Vec<f64> = (0..3)
                .map(|v| {
                    types.iter().zip(&lines).filter(|(&t, _)| t == v).map(|(_, &l)| f64::from(w[l as usize])).sum()
                })
                .collect();
            let used = c.iter().filter(|&&x| x > 0.0).count() as f64;
            let pa: f64 = c.iter().filter(|&&x| x > 0.0).map(|x| x.powf(2.5)).sum();
            let pl: f64 = c.iter().filter(|&&x| x > 0.0).map(|x| x * x.log2()).sum();
            assert_eq!(sums[0], used);
            assert_eq!(sums[1], c.iter().sum::<f64>());
            assert!((sums[2] - pa).abs() < 1e-9 && (sums[3] - pl).abs() < 1e-9);
        }
    }
}
