//! The paired bootstrap's resampling counts: how often each of `n` lines is drawn in replicate `r`.
//!
//! A replicate is Efron's bootstrap: `n` draws with replacement, so its counts are
//! multinomial(n; 1/n, ..., 1/n). They are drawn in two steps, both pure functions of
//! `(seed, r)` (so any replicate can be drawn on any thread, in any order, with the same result, and
//! the numpy reference `subword/compare/bootstrap.py` computes the same counts):
//!
//! 1. Every line gets a Poisson(1) count `p(l)`, by inverse CDF from a 32-bit uniform: line `l` takes
//!    half `l % 2` (low 32 bits first) of output `l / 2` of a counter-based SplitMix64 started at
//!    `key = mix(mix(seed) ^ r)`, and `p(l)` is how many of the thresholds [`POISSON`]
//!    (`round(2^32 P(X < k))`, k = 1..12) it reaches. Sequential writes, no scatter.
//! 2. The total `S = sum p(l)` is corrected to `n`, from a second SplitMix64 stream started at
//!    `mix(key ^ CORRECTION)`: if `S < n`, `n - S` more uniform draws are added (output `i` to line
//!    `hi64(x_i * n)`); if `S > n`, `S - n` of the `S` draws are removed, a uniform subset of the draw
//!    positions `0..S` chosen by Floyd's algorithm (output `i`, for `j = S - m + i`, picks
//!    `t = hi64(x_i * (j + 1))`, or `j` if `t` is taken), position `q` being a draw of the line `l`
//!    with `p(0) + ... + p(l - 1) <= q < p(0) + ... + p(l)`.
//!
//! Given `S`, Poisson counts are multinomial(S; 1/n, ...); adding independent uniform draws, or
//! keeping a uniform subset of `n` of the `S` exchangeable draws, leaves multinomial(n; 1/n, ...)
//! exactly, up to the 2^-32 rounding of the Poisson CDF (and the `j / 2^64` bias of `hi64`).
//! Step 1 costs about one SplitMix64 output per two lines and a few compares (AVX2: 32 lines per
//! loop); step 2 touches about `sqrt(2n / pi)` lines.

const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;
const M1: u64 = 0xbf58_476d_1ce4_e5b9;
const M2: u64 = 0x94d0_49bb_1331_11eb;

/// Mixed into a replicate's key to start its correction stream (any odd constant would do).
pub const CORRECTION: u64 = 0x5851_f42d_4c95_7f2d;

/// Thresholds of the Poisson(1) inverse CDF on 32-bit uniforms: `POISSON[k - 1] = round(2^32 P(X < k))`
/// for k = 1..12 (`round(2^32 P(X < 13))` is 2^32, so no line is drawn more than 12 times in step 1).
pub const POISSON: [u32; 12] = [
    0x5e2d_58d9,
    0xbc5a_b1b1,
    0xeb71_5e1e,
    0xfb23_9797,
    0xff10_25f6,
    0xffd9_0f3c,
    0xfffa_8b72,
    0xffff_540c,
    0xffff_ed1f,
    0xffff_fe21,
    0xffff_ffd5,
    0xffff_fffc,
];

/// SplitMix64's output function of state `z` (after its increment).
#[inline]
pub fn finalize(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(M1);
    z = (z ^ (z >> 27)).wrapping_mul(M2);
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

/// Output `i` (0-based) of the SplitMix64 stream started at `key`.
#[inline]
fn output(key: u64, i: u64) -> u64 {
    finalize(key.wrapping_add(GAMMA.wrapping_mul(i + 1)))
}

/// The high 64 bits of `x * m`: `x` as a uniform integer in `0..m`.
#[inline]
fn below(x: u64, m: u64) -> u64 {
    ((u128::from(x) * u128::from(m)) >> 64) as u64
}

/// The Poisson(1) count of a 32-bit uniform.
#[inline]
pub fn poisson(u: u32) -> u8 {
    POISSON.iter().map(|&t| u8::from(u >= t)).sum()
}

/// Step 1 for lines `l0..l0 + out.len()` of the replicate with key `key` (`l0` even).
pub fn poisson_counts(key: u64, l0: usize, out: &mut [u8]) {
    debug_assert!(l0 % 2 == 0);
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            done = unsafe { poisson_avx2(key, l0, out) };
        }
    }
    poisson_generic(key, l0 + done, &mut out[done..]);
}

/// [`poisson_counts`] without SIMD (the tails of the AVX2 loop, and CPUs without AVX2).
pub fn poisson_generic(key: u64, l0: usize, out: &mut [u8]) {
    debug_assert!(l0 % 2 == 0);
    for (j, pair) in out.chunks_mut(2).enumerate() {
        let x = output(key, (l0 / 2 + j) as u64);
        pair[0] = poisson(x as u32);
        if let Some(c) = pair.get_mut(1) {
            *c = poisson((x >> 32) as u32);
        }
    }
}

/// [`poisson_generic`] on whole groups of 32 lines, four SplitMix64 states per vector (the 64-bit
/// multiplies from 32-bit ones); returns how many lines it did.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn poisson_avx2(key: u64, l0: usize, out: &mut [u8]) -> usize {
    use std::arch::x86_64::*;
    let len = out.len() / 32 * 32;
    let k = Avx2Consts::new();
    let j0 = (l0 / 2) as u64;
    let state = |j: u64| key.wrapping_add(GAMMA.wrapping_mul(j + 1)) as i64;
    let lanes = |j: u64| _mm256_set_epi64x(state(j + 3), state(j + 2), state(j + 1), state(j));
    let (mut s0, mut s1, mut s2, mut s3) = (lanes(j0), lanes(j0 + 4), lanes(j0 + 8), lanes(j0 + 12));
    let step = _mm256_set1_epi64x(GAMMA.wrapping_mul(16) as i64);
    // Bytes of the packed counts come out as dwords [0-3, 8-11, 16-19, 24-27 | 4-7, 12-15, 20-23, 28-31].
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let p = out.as_mut_ptr();
    for i in (0..len).step_by(32) {
        let a = counts8(finalize4(s0, &k), &k);
        let b = counts8(finalize4(s1, &k), &k);
        let c = counts8(finalize4(s2, &k), &k);
        let d = counts8(finalize4(s3, &k), &k);
        let bytes = _mm256_packus_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
        _mm256_storeu_si256(p.add(i).cast(), _mm256_permutevar8x32_epi32(bytes, order));
        s0 = _mm256_add_epi64(s0, step);
        s1 = _mm256_add_epi64(s1, step);
        s2 = _mm256_add_epi64(s2, step);
        s3 = _mm256_add_epi64(s3, step);
    }
    len
}

/// The constants of [`poisson_avx2`] in registers.
#[cfg(target_arch = "x86_64")]
struct Avx2Consts {
    m1: std::arch::x86_64::__m256i,
    m1h: std::arch::x86_64::__m256i,
    m2: std::arch::x86_64::__m256i,
    m2h: std::arch::x86_64::__m256i,
    sign: std::arch::x86_64::__m256i,
    t: [std::arch::x86_64::__m256i; 12],
}

#[cfg(target_arch = "x86_64")]
impl Avx2Consts {
    #[inline(always)]
    unsafe fn new() -> Self {
        use std::arch::x86_64::*;
        Avx2Consts {
            m1: _mm256_set1_epi64x(M1 as i64),
            m1h: _mm256_set1_epi64x((M1 >> 32) as i64),
            m2: _mm256_set1_epi64x(M2 as i64),
            m2h: _mm256_set1_epi64x((M2 >> 32) as i64),
            sign: _mm256_set1_epi32(i32::MIN),
            // Unsigned compares as signed ones, both sides with the sign bit flipped.
            t: std::array::from_fn(|k| _mm256_set1_epi32((POISSON[k] ^ 0x8000_0000) as i32)),
        }
    }
}

/// `a * m` in four 64-bit lanes from 32-bit multiplies (`lo` = m, `hi` = m >> 32, broadcast).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn mul64(a: std::arch::x86_64::__m256i, lo: std::arch::x86_64::__m256i, hi: std::arch::x86_64::__m256i) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    let low = _mm256_mul_epu32(a, lo);
    let cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), lo), _mm256_mul_epu32(a, hi));
    _mm256_add_epi64(low, _mm256_slli_epi64(cross, 32))
}

/// [`finalize`] of four states.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn finalize4(z: std::arch::x86_64::__m256i, k: &Avx2Consts) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    let z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), k.m1, k.m1h);
    let z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), k.m2, k.m2h);
    _mm256_xor_si256(z, _mm256_srli_epi64(z, 31))
}

/// [`poisson`] of eight 32-bit uniforms, as `i32` lanes.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn counts8(u: std::arch::x86_64::__m256i, k: &Avx2Consts) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    let u = _mm256_xor_si256(u, k.sign);
    // cmpgt(t_k, u) is -1 where u < T_k. Lines at or above T_5 (0.37%) take the slow path.
    let mut c = _mm256_set1_epi32(4);
    for tk in &k.t[..4] {
        c = _mm256_add_epi32(c, _mm256_cmpgt_epi32(*tk, u));
    }
    if _mm256_movemask_epi8(_mm256_cmpgt_epi32(k.t[4], u)) != -1 {
        c = _mm256_set1_epi32(12);
        for tk in &k.t {
            c = _mm256_add_epi32(c, _mm256_cmpgt_epi32(*tk, u));
        }
    }
    c
}

/// Step 2: the changes `(line, +1 or -1)` that make the Poisson counts `p` (all `n` lines of the
/// replicate with key `key`) sum to `n`; a line may appear more than once.
pub fn corrections(key: u64, p: &[u8]) -> Vec<(u32, i32)> {
    const CHUNK: usize = 64;
    let n = p.len() as u64;
    let chunk_sums: Vec<u32> = p.chunks(CHUNK).map(|c| c.iter().map(|&x| u32::from(x)).sum()).collect();
    let total: u64 = chunk_sums.iter().map(|&s| u64::from(s)).sum();
    let ckey = mix(key ^ CORRECTION);
    if total <= n {
        return (0..n - total).map(|i| (below(output(ckey, i), n) as u32, 1)).collect();
    }
    // Floyd: m distinct positions out of 0..total, uniformly.
    let m = total - n;
    let mut chosen: ahash::AHashSet<u64> = ahash::AHashSet::with_capacity(m as usize);
    for (i, j) in (total - m..total).enumerate() {
        let t = below(output(ckey, i as u64), j + 1);
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    let mut positions: Vec<u64> = chosen.into_iter().collect();
    positions.sort_unstable();
    // Position -> line: whole chunks by their sums, then the lines of the chunk.
    let mut out = Vec::with_capacity(positions.len());
    let (mut k, mut base) = (0usize, 0u64);
    let mut next = positions.iter().peekable();
    while let Some(&&q) = next.peek() {
        while base + u64::from(chunk_sums[k]) <= q {
            base += u64::from(chunk_sums[k]);
            k += 1;
        }
        let mut cum = base;
        for (i, &c) in p[k * CHUNK..(k * CHUNK + CHUNK).min(p.len())].iter().enumerate() {
            cum += u64::from(c);
            while next.peek().is_some_and(|&&q| q < cum) {
                next.next();
                out.push(((k * CHUNK + i) as u32, -1));
            }
        }
        base = cum;
        k += 1;
    }
    out
}

/// The counts of replicate `r` of `seed` over `n` lines as bytes, or `None` if a line is drawn more
/// than 255 times (next to impossible: step 1 gives at most 12).
pub fn counts_u8(seed: u64, r: u64, n: usize) -> Option<Vec<u8>> {
    let mut counts = vec![0u8; n];
    counts_u8_into(seed, r, &mut counts).then_some(counts)
}

/// [`counts_u8`] into `out` (length `n`); `false` (and `out` unspecified) if a count exceeds 255.
pub fn counts_u8_into(seed: u64, r: u64, out: &mut [u8]) -> bool {
    let key = replicate_key(seed, r);
    poisson_counts(key, 0, out);
    for (l, d) in corrections(key, out) {
        let c = &mut out[l as usize];
        match (*c).checked_add_signed(d as i8) {
            Some(v) => *c = v,
            None => return false,
        }
    }
    true
}

/// Replicate `r`'s counts as `u32` (any count).
pub fn counts_u32(seed: u64, r: u64, n: usize) -> Vec<u32> {
    let key = replicate_key(seed, r);
    let mut p = vec![0u8; n];
    poisson_counts(key, 0, &mut p);
    let mut counts: Vec<u32> = p.iter().map(|&c| u32::from(c)).collect();
    for (l, d) in corrections(key, &p) {
        let c = &mut counts[l as usize];
        *c = c.wrapping_add_signed(d);
    }
    counts
}

/// Resampling counts of replicates `first..first + rows` as little-endian `f64` bytes, row-major
/// `rows x n` (`out` holds `rows * n * 8` bytes): the buffer numpy reads as the weights matrix.
pub fn weights_f64_le(n: usize, seed: u64, first: u64, out: &mut [u8]) {
    use rayon::prelude::*;
    if n == 0 {
        return;
    }
    let fill = |(k, row): (usize, &mut [u8])| {
        let r = first + k as u64;
        let counts = counts_u32(seed, r, n);
        for (w, &c) in row.chunks_exact_mut(8).zip(&counts) {
            w.copy_from_slice(&f64::from(c).to_le_bytes());
        }
    };
    if crate::parallel::parallel_allowed() {
        out.par_chunks_mut(n * 8).enumerate().for_each(fill);
    } else {
        out.chunks_mut(n * 8).enumerate().for_each(fill);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_are_the_rounded_poisson_cdf() {
        let (mut cdf, mut p) = (0.0f64, (-1.0f64).exp());
        for (k, &t) in POISSON.iter().enumerate() {
            cdf += p;
            p /= (k + 1) as f64;
            let want = cdf * 4_294_967_296.0;
            assert!((f64::from(t) - want).abs() <= 0.5 + 1e-3, "threshold {k}: {t} vs {want}");
        }
        assert!((cdf + p) * 4_294_967_296.0 > 4_294_967_295.5); // the next one rounds to 2^32
        assert_eq!(poisson(0), 0);
        assert_eq!(poisson(u32::MAX), 12);
        assert_eq!(poisson(POISSON[0] - 1), 0);
        assert_eq!(poisson(POISSON[0]), 1);
    }

    #[test]
    fn simd_and_portable_poisson_counts_agree() {
        let key = replicate_key(3, 5);
        for (l0, len) in [(0, 1000), (2, 33), (64, 31), (10, 0), (4, 4097)] {
            let mut a = vec![0u8; len];
            let mut b = vec![0u8; len];
            poisson_counts(key, l0, &mut a);
            poisson_generic(key, l0, &mut b);
            assert_eq!(a, b, "l0 {l0} len {len}");
            // Lines are a function of their index: the same as a run from line 0.
            let mut whole = vec![0u8; l0 + len];
            poisson_generic(key, 0, &mut whole);
            assert_eq!(&whole[l0..], &b[..]);
        }
        // The counts are Poisson(1): mean and variance 1 (n = 200k: both within 0.02).
        let mut p = vec![0u8; 200_000];
        poisson_counts(key, 0, &mut p);
        let mean = p.iter().map(|&c| f64::from(c)).sum::<f64>() / p.len() as f64;
        let var = p.iter().map(|&c| (f64::from(c) - mean).powi(2)).sum::<f64>() / p.len() as f64;
        assert!((mean - 1.0).abs() < 0.02 && (var - 1.0).abs() < 0.02, "{mean} {var}");
    }

    #[test]
    fn counts_sum_to_n_and_are_a_function_of_seed_and_replicate() {
        for n in [1usize, 2, 7, 100, 1000, 65_537] {
            let mut seen_both = [false, false];
            for r in 0..20 {
                let c = counts_u32(7, r, n);
                assert_eq!(c.iter().map(|&x| u64::from(x)).sum::<u64>(), n as u64, "n {n} r {r}");
                assert_eq!(c, counts_u32(7, r, n));
                let small = counts_u8(7, r, n).unwrap();
                assert!(small.iter().zip(&c).all(|(&a, &b)| u32::from(a) == b));
                let key = replicate_key(7, r);
                let mut p = vec![0u8; n];
                poisson_counts(key, 0, &mut p);
                let total: usize = p.iter().map(|&x| x as usize).sum();
                seen_both[usize::from(total > n)] |= total != n;
                // Removals only take lines that were drawn.
                for (l, d) in corrections(key, &p) {
                    assert!(d == 1 || p[l as usize] > 0);
                }
            }
            if n >= 100 {
                assert!(seen_both[0] && seen_both[1], "n {n}: both corrections should occur in 20 replicates");
            }
        }
        assert_ne!(counts_u32(7, 1, 1000), counts_u32(7, 2, 1000));
        assert_ne!(counts_u32(7, 1, 1000), counts_u32(8, 1, 1000));
    }

    #[test]
    fn counts_are_multinomial() {
        // n = 4 lines, 20000 replicates: each line's count is Binomial(4, 1/4) (mean 1, variance 3/4),
        // and the count of line 0 is 4 with probability 1/256.
        let n = 4;
        let reps = 20_000;
        let mut hist = [0u32; 5];
        let (mut sum, mut sq) = (0.0, 0.0);
        for r in 0..reps {
            let c = counts_u32(11, r, n);
            hist[c[0] as usize] += 1;
            sum += f64::from(c[1]);
            sq += f64::from(c[1]) * f64::from(c[1]);
        }
        let mean = sum / reps as f64;
        let var = sq / reps as f64 - mean * mean;
        assert!((mean - 1.0).abs() < 0.03 && (var - 0.75).abs() < 0.04, "{mean} {var}");
        let want = [81.0, 108.0, 54.0, 12.0, 1.0].map(|x: f64| x / 256.0 * reps as f64);
        for (k, (&h, w)) in hist.iter().zip(want).enumerate() {
            assert!((f64::from(h) - w).abs() < 4.0 * w.sqrt() + 5.0, "count {k}: {h} vs {w}");
        }
    }
}
