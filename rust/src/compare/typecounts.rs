//! The replicates of the type-count metrics (types used, Rényi efficiency, entropy) of `subword compare`.
//!
//! Per replicate of the paired bootstrap ([`super::resample`]'s counts `w`), every token type's count
//! is `c(v) = sum over lines l of count(v, l) * w(l)`, and the metrics need `[types used, tokens,
//! sum c^alpha, sum c log2 c]` over the types.
//!
//! Performance notes: a block of replicates is drawn at once (in parallel, as bytes, into buffers
//! reused by every block) and stored line-major (`w[l * bp + k]`, `bp` a multiple of 16: whole vectors
//! of `u16` lanes). Types are ranked by frequency and go in tasks of `TASK * GROUP` ranks; a task's
//! (type, line) pairs are stored once, before the first block, in the order (tile of lines, type,
//! line), as runs of one type ("segments"), so a tile's counts are read from cache by every type of
//! the task, with no search for where each type's pairs of a tile start (that search was most of the
//! cost before). The first task holds the frequent types and most pairs; it is cut into jobs of about
//! `JOB_PAIRS` pairs that run in parallel and add their integer accumulators into the task's. A run
//! of pairs is summed in `u16` lanes in registers (AVX2; runs are cut so that no lane passes 65535),
//! then added into `u32`. The rows of rare types are fetched ahead (they are far apart in memory).
//! The floating-point sums stay per group of `GROUP` ranks, added in rank order, so the result does
//! not depend on the threads, the jobs or the blocks.

use rayon::prelude::*;

use super::resample::{counts_u32, counts_u8_into};

/// Types per group of partial sums, groups per task, lines per tile.
const GROUP: usize = 512;
const TASK: usize = 4;
const TILE: usize = 4096;

/// Per replicate, the sums the type-count metrics need: `[types used, tokens, sum c^alpha, sum c log2 c]`
/// over the token types' counts `c` in the replicate.
///
/// `types[t]` is token `t`'s type (`0..ntypes`), `lines[t]` its line (`0..n`, non-decreasing).
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

/// One task's (type, line) pairs in (tile, type, line) order, as segments `(type - v0, end)`.
struct TaskPairs {
    v0: usize,
    v1: usize,
    pairs: Vec<(u32, u32)>,
    segments: Vec<(u32, u32)>,
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
    let prepare = |&(t, l, v): &(&[u32], &[u32], usize)| task_pairs(t, l, v, n);
    let tasks: Vec<(Vec<TaskPairs>, u64)> = if crate::parallel::parallel_allowed() {
        sets.par_iter().map(prepare).collect::<Result<_, String>>()?
    } else {
        sets.iter().map(prepare).collect::<Result<_, String>>()?
    };
    let mut out = vec![vec![[0.0f64; 4]; replicates]; sets.len()];
    // Blocks of at most 32 MB of byte counts, a multiple of 16 replicates (the kernel's lanes).
    let block = ((32usize << 20) / n.max(1) / 16 * 16).clamp(16, 256);
    // The buffers are reused by every block (fresh ones cost as much in page faults as the draws).
    let mut rows = vec![0u8; block.min(replicates) * n];
    let mut w8 = vec![0u8; block.min(replicates).next_multiple_of(16) * n];
    let mut first = 0;
    while first < replicates {
        let b = block.min(replicates - first);
        let bp = b.next_multiple_of(16);
        let fits: Vec<bool> = if crate::parallel::parallel_allowed() {
            rows.par_chunks_mut(n.max(1)).take(b).enumerate().map(|(k, row)| counts_u8_into(seed, (first + k) as u64, row)).collect()
        } else {
            rows.chunks_mut(n.max(1)).take(b).enumerate().map(|(k, row)| counts_u8_into(seed, (first + k) as u64, row)).collect()
        };
        if fits.iter().all(|&f| f) {
            let most = rows[..b * n].iter().fold(0u8, |m, &x| m.max(x));
            let w = &mut w8[..n * bp];
            line_major(&rows[..b * n], b, n, bp, w);
            let w: &[u8] = w;
            for (o, (tp, tokens)) in out.iter_mut().zip(&tasks) {
                o[first..first + b].copy_from_slice(&block_sums(w, u64::from(most), b, bp, tp, *tokens, alpha));
            }
        } else {
            // A line drawn 256+ times in one replicate (next to impossible): this block in u32.
            let wide: Vec<u32> = par_collect(b, |k| counts_u32(seed, (first + k) as u64, n)).concat();
            let most = wide.iter().fold(0u32, |m, &x| m.max(x));
            let mut w = vec![0u32; n * bp];
            line_major(&wide, b, n, bp, &mut w);
            for (o, (tp, tokens)) in out.iter_mut().zip(&tasks) {
                o[first..first + b].copy_from_slice(&block_sums(&w, u64::from(most), b, bp, tp, *tokens, alpha));
            }
        }
        first += b;
    }
    Ok(out)
}

/// Rows `rows[k * n + l]` (`k < b`) as the line-major `t[l * bp + k]` (lanes `b..bp` zero), in
/// parallel over tiles of lines.
fn line_major<T: Copy + Default + Send + Sync>(rows: &[T], b: usize, n: usize, bp: usize, t: &mut [T]) {
    let fill = |(i, tile): (usize, &mut [T])| {
        let l0 = i * 256;
        let m = (n - l0).min(256);
        for j in 0..m {
            tile[j * bp + b..(j + 1) * bp].fill(T::default());
        }
        for k in 0..b {
            for (j, &x) in rows[k * n + l0..k * n + l0 + m].iter().enumerate() {
                tile[j * bp + k] = x;
            }
        }
    };
    if crate::parallel::parallel_allowed() {
        t[..n * bp].par_chunks_mut(256 * bp).enumerate().for_each(fill);
    } else {
        t[..n * bp].chunks_mut(256 * bp).enumerate().for_each(fill);
    }
}

/// The tasks of one tokenizer and its number of tokens. Types are ranked by their token counts
/// (most first, ties by type), and task `k` takes ranks `k * TASK * GROUP..`: the first task holds the
/// frequent types, whose pairs cover most lines, and reads the block's counts once, in line order;
/// the others touch only the few lines of their rare types (tasks of types in vocabulary order would
/// each read the whole block). Within a tile, tokens are sorted by rank, and equal (type, line)
/// neighbours become one pair.
fn task_pairs(types: &[u32], lines: &[u32], ntypes: usize, n: usize) -> Result<(Vec<TaskPairs>, u64), String> {
    if types.len() != lines.len() {
        return Err(format!("{} token types but {} token lines", types.len(), lines.len()));
    }
    if let Some(&t) = types.iter().find(|&&t| t as usize >= ntypes) {
        return Err(format!("token type {t} is not below {ntypes}"));
    }
    if let Some(&l) = lines.iter().find(|&&l| l as usize >= n) {
        return Err(format!("token line {l} is not below {n}"));
    }
    if lines.windows(2).any(|w| w[0] > w[1]) {
        return Err("token lines must be non-decreasing".to_string());
    }
    const TG: usize = TASK * GROUP;
    let mut count = vec![0u64; ntypes];
    for &t in types {
        count[t as usize] += 1;
    }
    let mut by_rank: Vec<u32> = (0..ntypes as u32).collect();
    by_rank.sort_by_key(|&t| (std::cmp::Reverse(count[t as usize]), t));
    let mut rank = vec![0u32; ntypes];
    for (k, &t) in by_rank.iter().enumerate() {
        rank[t as usize] = k as u32;
    }
    // Types that never occur rank last: the work below covers the ranks of those that do, so the
    // caller may pass raw ids with the vocabulary's size (no renumbering of every token first).
    let ntypes = count.iter().filter(|&&c| c > 0).count();
    let ntasks = ntypes.div_ceil(TG);
    // Capacities: at most a pair and a segment per token of the task's types.
    let mut task_tokens = vec![0usize; ntasks];
    for (k, &t) in by_rank[..ntypes].iter().enumerate() {
        task_tokens[k / TG] += count[t as usize] as usize;
    }
    let mut tasks: Vec<TaskPairs> = (0..ntasks)
        .map(|k| TaskPairs {
            v0: k * TG,
            v1: ((k + 1) * TG).min(ntypes),
            pairs: Vec::with_capacity(task_tokens[k]),
            segments: Vec::with_capacity(task_tokens[k]),
        })
        .collect();
    // Tokens are in line order, so a tile's tokens are one range; each is sorted by rank (counting
    // sort: stable, lines stay increasing within a rank) in a buffer that stays in cache.
    let ranked: Vec<u32> = types.iter().map(|&t| rank[t as usize]).collect();
    // at[v] (after the scatter): where rank v's lines end in `order`, i.e. where rank v + 1's begin.
    let mut at = vec![0u32; ntypes + 1];
    let mut order: Vec<u32> = Vec::new();
    let mut from = 0;
    while from < lines.len() {
        let tile_end = (lines[from] as usize / TILE + 1) * TILE;
        let to = from + lines[from..].partition_point(|&l| (l as usize) < tile_end);
        at.iter_mut().for_each(|c| *c = 0);
        for &v in &ranked[from..to] {
            at[v as usize + 1] += 1;
        }
        for v in 0..ntypes {
            at[v + 1] += at[v];
        }
        order.clear();
        order.resize(to - from, 0);
        for (&v, &l) in ranked[from..to].iter().zip(&lines[from..to]) {
            order[at[v as usize] as usize] = l;
            at[v as usize] += 1;
        }
        for (k, task) in tasks.iter_mut().enumerate() {
            let mut s = if k == 0 { 0 } else { at[k * TG - 1] as usize };
            for v in k * TG..((k + 1) * TG).min(ntypes) {
                let e = at[v] as usize;
                if e == s {
                    continue;
                }
                let mut last = u32::MAX; // no line: lines are below n < 2^32 - 1
                for &l in &order[s..e] {
                    if l == last {
                        if let Some(p) = task.pairs.last_mut() {
                            p.1 += 1;
                        }
                    } else {
                        task.pairs.push((l, 1));
                        last = l;
                    }
                }
                task.segments.push(((v % TG) as u32, task.pairs.len() as u32));
                s = e;
            }
        }
        from = to;
    }
    Ok((tasks, types.len() as u64))
}

/// The accumulator of [`block_sums`]: u32 or u64.
trait Acc: Copy + Send + Sync {
    const ZERO: Self;
    fn from_u32(x: u32) -> Self;
    fn mul_add(self, x: Self, c: Self) -> Self;
    fn add(self, x: Self) -> Self;
    fn to_u64(self) -> u64;
    /// The accumulators as `u32` when they are (the kernel of [`accumulate_u16_avx2`] adds into `u32`).
    fn as_u32(acc: &mut [Self]) -> Option<&mut [u32]>;
}

/// A count of the line-major block: u8 (almost always) or u32.
trait Count: Copy + Into<u32> + Sync {
    fn as_u8(w: &[Self]) -> Option<&[u8]>;
}

impl Count for u8 {
    fn as_u8(w: &[Self]) -> Option<&[u8]> {
        Some(w)
    }
}

impl Count for u32 {
    fn as_u8(_: &[Self]) -> Option<&[u8]> {
        None
    }
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
    fn as_u32(acc: &mut [Self]) -> Option<&mut [u32]> {
        Some(acc)
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
    fn as_u32(_: &mut [Self]) -> Option<&mut [u32]> {
        None
    }
}

fn par_collect<T: Send>(k: usize, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    if crate::parallel::parallel_allowed() {
        (0..k).into_par_iter().map(f).collect()
    } else {
        (0..k).map(f).collect()
    }
}

/// The four sums for a block of `b` replicates whose counts are `w[l * bp + k]`.
fn block_sums<W: Count>(
    w: &[W],
    most: u64,
    b: usize,
    bp: usize,
    tasks: &[TaskPairs],
    tokens: u64,
    alpha: f64,
) -> Vec<[f64; 4]> {
    // A type's count in a replicate is at most (its tokens) x (the largest line count): 32-bit
    // accumulators (twice the SIMD lanes) when that cannot overflow.
    if tokens.saturating_mul(most) < u64::from(u32::MAX) {
        block_sums_with::<W, u32>(w, most as u32, b, bp, tasks, alpha)
    } else {
        block_sums_with::<W, u64>(w, most as u32, b, bp, tasks, alpha)
    }
}

/// `acc[r] += c * w[l * b + r]` over the `(l, c)` pairs of one type. The body is compiled twice, once
/// with AVX2 (32-bit multiplies in eight lanes; the baseline x86-64 target has no packed 32-bit
/// multiply, so the portable build spends most of the type-count replicates here), chosen at run time.
fn accumulate<W: Count, A: Acc>(acc: &mut [A], pairs: &[(u32, u32)], w: &[W], b: usize, most: u32) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && !force_portable() {
            if let (Some(acc), Some(w)) = (A::as_u32(acc), W::as_u8(w)) {
                if b % 16 == 0 {
                    // SAFETY: AVX2 is present; `acc` holds `b` lanes and every pair's line has a row
                    // `l * b..(l + 1) * b` in `w` (the callers' layout), which the kernel checks.
                    unsafe { accumulate_u16_avx2(acc, pairs, w, b, most) };
                    return;
                }
            }
            // SAFETY: the CPU has AVX2 (checked just above); the body is the portable one.
            unsafe { accumulate_avx2(acc, pairs, w, b) };
            return;
        }
    }
    accumulate_generic(acc, pairs, w, b);
}

/// Pairs per job of [`block_sums_with`] (a few ms of work).
const JOB_PAIRS: usize = 1 << 18;

/// Segments ahead whose rows [`prefetch`] asks for.
const AHEAD: usize = 8;

/// Asks the CPU to bring `x` into cache (a hint only; nothing on other targets).
#[inline(always)]
fn prefetch<T>(x: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let bytes = std::mem::size_of_val(x);
        let p = x.as_ptr().cast::<i8>();
        for off in (0..bytes).step_by(64) {
            // SAFETY: prefetching is a hint and never faults; the address is inside `x`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.add(off)) };
        }
    }
}

/// Whether the tests asked for the portable kernels (so that they are tested where AVX2 is present).
fn force_portable() -> bool {
    #[cfg(test)]
    {
        tests::PORTABLE.load(std::sync::atomic::Ordering::Relaxed)
    }
    #[cfg(not(test))]
    {
        false
    }
}

/// [`accumulate_generic`] for byte counts into `u32`, `b` a multiple of 16: runs of pairs whose
/// partial counts cannot pass 65535 (tokens x `most`, the largest count) are summed in `u16` lanes in
/// registers, 64 lanes at a time, then added into `acc` (twice the lanes of `u32`, one load and store
/// of the accumulators per run instead of per pair).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn accumulate_u16_avx2(acc: &mut [u32], pairs: &[(u32, u32)], w: &[u8], b: usize, most: u32) {
    assert!(acc.len() >= b && pairs.iter().all(|&(l, _)| (l as usize + 1) * b <= w.len()));
    let limit = 65_535 / most.max(1);
    let mut from = 0;
    while from < pairs.len() {
        let (mut tokens, mut to) = (0u32, from);
        while to < pairs.len() && tokens + pairs[to].1 <= limit {
            tokens += pairs[to].1;
            to += 1;
        }
        if to == from {
            // One pair of more tokens than a u16 run holds.
            accumulate_generic(acc, &pairs[from..from + 1], w, b);
            from += 1;
            continue;
        }
        let run = &pairs[from..to];
        let mut q0 = 0;
        while q0 < b {
            let a = acc.as_mut_ptr().add(q0);
            q0 += 16 * match (b - q0) / 16 {
                1 => run_u16::<1>(a, run, w.as_ptr().add(q0), b),
                2 => run_u16::<2>(a, run, w.as_ptr().add(q0), b),
                3 => run_u16::<3>(a, run, w.as_ptr().add(q0), b),
                _ => run_u16::<4>(a, run, w.as_ptr().add(q0), b),
            };
        }
        from = to;
    }
}

/// `N x 16` lanes of [`accumulate_u16_avx2`]: `acc[i] += sum over the run of c * w[l * b + i]`; returns `N`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn run_u16<const N: usize>(acc: *mut u32, run: &[(u32, u32)], w: *const u8, b: usize) -> usize {
    use std::arch::x86_64::*;
    let mut s = [_mm256_setzero_si256(); N];
    for &(l, c) in run {
        let row = w.add(l as usize * b);
        if c == 1 {
            for (i, si) in s.iter_mut().enumerate() {
                *si = _mm256_add_epi16(*si, _mm256_cvtepu8_epi16(_mm_loadu_si128(row.add(16 * i).cast())));
            }
        } else {
            // c * w <= 65535 (the run's bound), so the low 16 bits of the product are the product.
            let cc = _mm256_set1_epi16(c as u16 as i16);
            for (i, si) in s.iter_mut().enumerate() {
                let x = _mm256_cvtepu8_epi16(_mm_loadu_si128(row.add(16 * i).cast()));
                *si = _mm256_add_epi16(*si, _mm256_mullo_epi16(x, cc));
            }
        }
    }
    for (i, si) in s.iter().enumerate() {
        let a = acc.add(16 * i);
        let lo = _mm256_cvtepu16_epi32(_mm256_castsi256_si128(*si));
        let hi = _mm256_cvtepu16_epi32(_mm256_extracti128_si256::<1>(*si));
        _mm256_storeu_si256(a.cast(), _mm256_add_epi32(_mm256_loadu_si256(a.cast()), lo));
        _mm256_storeu_si256(a.add(8).cast(), _mm256_add_epi32(_mm256_loadu_si256(a.add(8).cast()), hi));
    }
    N
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn accumulate_avx2<W: Count, A: Acc>(acc: &mut [A], pairs: &[(u32, u32)], w: &[W], b: usize) {
    accumulate_generic(acc, pairs, w, b);
}

#[inline(always)]
fn accumulate_generic<W: Count, A: Acc>(acc: &mut [A], pairs: &[(u32, u32)], w: &[W], b: usize) {
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

fn block_sums_with<W: Count, A: Acc>(
    w: &[W],
    most: u32,
    b: usize,
    bp: usize,
    tasks: &[TaskPairs],
    alpha: f64,
) -> Vec<[f64; 4]> {
    let table: Vec<(f64, f64)> = (0..1u32 << 14)
        .map(|c| {
            let x = f64::from(c);
            (if c == 0 { 0.0 } else { x.powf(alpha) }, if c == 0 { 0.0 } else { x * x.log2() })
        })
        .collect();
    // Jobs: runs of about JOB_PAIRS pairs of a task's segments (the first task holds most pairs, so
    // tasks alone would leave a thread idle). Their accumulators are exact integers, added per task.
    let mut jobs: Vec<(usize, usize, usize)> = Vec::new();
    for (k, tp) in tasks.iter().enumerate() {
        let (mut s0, mut p0) = (0usize, 0usize);
        for (i, &(_, end)) in tp.segments.iter().enumerate() {
            if end as usize - p0 >= JOB_PAIRS {
                jobs.push((k, s0, i + 1));
                (s0, p0) = (i + 1, end as usize);
            }
        }
        if s0 < tp.segments.len() {
            jobs.push((k, s0, tp.segments.len()));
        }
    }
    let per_task: Vec<std::sync::Mutex<Vec<A>>> =
        tasks.iter().map(|tp| std::sync::Mutex::new(vec![A::ZERO; (tp.v1 - tp.v0) * bp])).collect();
    // A job sums into its thread's buffer, then adds it into its task's accumulators.
    let job = |acc: &mut Vec<A>, q: usize| {
        let (k, s0, s1) = jobs[q];
        let tp = &tasks[k];
        acc.clear();
        acc.resize((tp.v1 - tp.v0) * bp, A::ZERO);
        let mut from = if s0 == 0 { 0 } else { tp.segments[s0 - 1].1 as usize };
        for (i, &(vi, end)) in tp.segments.iter().enumerate().take(s1).skip(s0) {
            // The rare types' rows are scattered over the block (memory, not cache): fetch the rows
            // of a few segments ahead, and their accumulators, while this one is summed.
            if let Some(&(va, ea)) = tp.segments.get(i + AHEAD) {
                if let Some(&(l, _)) = tp.pairs.get(ea as usize - 1) {
                    prefetch(&w[l as usize * bp..(l as usize + 1) * bp]);
                }
                prefetch(&acc[va as usize * bp..(va as usize + 1) * bp]);
            }
            let vi = vi as usize;
            accumulate(&mut acc[vi * bp..(vi + 1) * bp], &tp.pairs[from..end as usize], w, bp, most);
            from = end as usize;
        }
        // Integer sums: the order in which jobs add them does not change them.
        let mut total = per_task[k].lock().unwrap_or_else(|e| e.into_inner());
        for (a, &x) in total.iter_mut().zip(acc.iter()) {
            *a = a.add(x);
        }
    };
    if crate::parallel::parallel_allowed() {
        (0..jobs.len()).into_par_iter().for_each_init(Vec::new, job);
    } else {
        let mut acc = Vec::new();
        (0..jobs.len()).for_each(|q| job(&mut acc, q));
    }
    let per_task: Vec<Vec<A>> = per_task.into_iter().map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner())).collect();
    let task = |k: usize| -> Vec<Vec<[f64; 4]>> {
        let tp = &tasks[k];
        let acc = &per_task[k];
        let mut parts = Vec::with_capacity(TASK);
        for g0 in (tp.v0..tp.v1).step_by(GROUP) {
            let mut part = vec![[0.0f64; 4]; b];
            for v in g0..(g0 + GROUP).min(tp.v1) {
                let row = &acc[(v - tp.v0) * bp..(v - tp.v0) * bp + b];
                for (p, &a) in part.iter_mut().zip(row) {
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
    let parts: Vec<Vec<[f64; 4]>> = par_collect(tasks.len(), task).into_iter().flatten().collect();
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

    /// Set by the test of the portable kernel (the other tests pass either way: both kernels agree).
    pub static PORTABLE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    fn direct(types: &[u32], lines: &[u32], ntypes: u32, w: &[u32]) -> [f64; 4] {
        let c: Vec<f64> = (0..ntypes)
            .map(|v| types.iter().zip(lines).filter(|(&t, _)| t == v).map(|(_, &l)| f64::from(w[l as usize])).sum())
            .collect();
        let used = c.iter().filter(|&&x| x > 0.0).count() as f64;
        let pa: f64 = c.iter().filter(|&&x| x > 0.0).map(|x| x.powf(2.5)).sum();
        let pl: f64 = c.iter().filter(|&&x| x > 0.0).map(|x| x * x.log2()).sum();
        [used, c.iter().sum::<f64>(), pa, pl]
    }

    #[test]
    fn type_counts_match_a_direct_count() {
        // Tokens of types [0, 1, 0 | 1 | 2, 2] on lines 0, 1, 2.
        let types = [0u32, 1, 0, 1, 2, 2];
        let lines = [0u32, 0, 0, 1, 2, 2];
        let got = type_count_replicates(&types, &lines, 3, 3, 5, 4, 2.5).unwrap();
        for (r, sums) in got.iter().enumerate() {
            let want = direct(&types, &lines, 3, &counts_u32(5, r as u64, 3));
            assert_eq!(sums[0], want[0]);
            assert_eq!(sums[1], want[1]);
            assert!((sums[2] - want[2]).abs() < 1e-9 && (sums[3] - want[3]).abs() < 1e-9);
        }
    }

    #[test]
    fn many_types_across_tiles_and_tasks_match_a_direct_count() {
        // More types than one task holds and more lines than one tile: segments cross both.
        let n = 3 * TILE + 17;
        let ntypes = 2 * TASK * GROUP + 5;
        let mut state = 12345u64;
        let mut next = |m: u64| {
            state = super::super::resample::mix(state);
            state % m
        };
        let mut lines: Vec<u32> = (0..20_000).map(|_| next(n as u64) as u32).collect();
        lines.sort_unstable();
        // A third of the tokens in 7 frequent types (long runs, split at the u16 bound), one type with
        // a pair of 6000 tokens (more than a run holds), the rest spread.
        let mut types: Vec<u32> =
            (0..lines.len()).map(|i| if i % 3 == 0 { next(7) as u32 } else { next(ntypes as u64) as u32 }).collect();
        lines.extend(std::iter::repeat_n(lines[lines.len() - 1], 6000));
        types.extend(std::iter::repeat_n(ntypes as u32 - 1, 6000));
        let r = 21;
        let got = type_count_replicates(&types, &lines, ntypes, n, 9, r, 2.5).unwrap();
        PORTABLE.store(true, std::sync::atomic::Ordering::Relaxed);
        let portable = type_count_replicates(&types, &lines, ntypes, n, 9, r, 2.5).unwrap();
        PORTABLE.store(false, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(got, portable);
        for (k, sums) in got.iter().enumerate() {
            let want = direct(&types, &lines, ntypes as u32, &counts_u32(9, k as u64, n));
            assert_eq!((sums[0], sums[1]), (want[0], want[1]), "replicate {k}");
            assert!((sums[2] / want[2] - 1.0).abs() < 1e-12 && (sums[3] / want[3] - 1.0).abs() < 1e-12);
        }
    }
}
