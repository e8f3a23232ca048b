//! The paired bootstrap's replicate sums of per-line columns, without a weights matrix.
//!
//! Every ratio metric of `subword compare` is a ratio of sums over lines, so a replicate needs, for
//! every column `x` (tokens, characters, boundaries, ... of every tokenizer), `sum_l w_r(l) x(l)`
//! where `w_r` are replicate `r`'s resampling counts ([`super::resample`], the same as
//! `bootstrap_weights`). The Python path built `w` as a float64 matrix (`replicates x n`, 3 GB for
//! 1000 x 400k lines, in batches) and multiplied it by the `n x columns` matrix with BLAS.
//!
//! Performance notes: each task draws the counts of a block of [`BLOCK`] replicates as bytes (one row
//! per replicate) and streams the columns over them in tiles of lines. Columns are first sorted by
//! shape: a column equal to an earlier one is summed once; a constant column `v` sums to `v * n` (the
//! counts of a replicate sum to `n`); a column with few non-zero lines is summed over those lines only;
//! the other ("dense") columns whose values fit in `i8` are multiplied by the byte counts with AVX2's
//! `vpmaddubsw` (32 products per instruction, into `i16` lanes widened before they can overflow),
//! those that fit in `i16` with `vpmaddwd` (the counts widened to `i16`, 16 products per
//! instruction), both into `i32` lanes that cannot overflow within a tile, added into `i64` per tile;
//! wider dense columns take a plain `i64` loop.
//! Every sum is an exact integer (below 2^53, checked), so the result equals the BLAS product bit for
//! bit, on every path.

use rayon::prelude::*;

use super::resample::{counts_u32, counts_u8_into};

/// Replicates per task: their byte counts are `BLOCK x n` bytes (a multiple of 4: the kernel's groups).
const BLOCK: usize = 16;
/// Lines per tile: `BLOCK x TILE` count bytes and `TILE x 2` bytes per `i16` column stay in L2, and
/// `TILE / 16` steps of `vpmaddwd` (each at most 2 x 255 x 32768 per lane) stay below 2^31.
const TILE: usize = 2048;

/// What is done with one column.
enum Plan {
    Same(usize),
    Constant(f64),
    Sparse,
    Byte(usize),
    Narrow(usize),
    Wide(usize),
}

/// `out[r * columns + c] = sum_l count_r(l) * cols[c][l]` for replicates `0..replicates` of `seed`.
pub fn column_sums(cols: &[&[i64]], n: usize, seed: u64, replicates: usize) -> Result<Vec<f64>, String> {
    let c = cols.len();
    if let Some(bad) = cols.iter().position(|x| x.len() != n) {
        return Err(format!("column {bad} has {} values for {n} lines", cols[bad].len()));
    }
    let mut plans: Vec<Plan> = Vec::with_capacity(c);
    let mut seen: ahash::AHashMap<&[i64], usize> = ahash::AHashMap::new();
    let mut byte: Vec<usize> = Vec::new();
    let mut narrow: Vec<usize> = Vec::new();
    let mut wide: Vec<usize> = Vec::new();
    // Non-zero values of the sparse columns, by line: (line, column, value).
    let mut sparse: Vec<(u32, u32, i64)> = Vec::new();
    for (j, &col) in cols.iter().enumerate() {
        let total: i128 = col.iter().map(|&x| i128::from(x).abs()).sum();
        // A replicate's sum is at most n * (the largest |x|) and at most (largest count) * total.
        if total.saturating_mul(n as i128) >= 1i128 << 53 {
            return Err(format!("column {j} is too large to be summed exactly in float64"));
        }
        if let Some(&i) = seen.get(col) {
            plans.push(Plan::Same(i));
            continue;
        }
        seen.insert(col, j);
        let nonzero = col.iter().filter(|&&x| x != 0).count();
        if n == 0 || col.iter().all(|&x| x == col[0]) {
            plans.push(Plan::Constant(col.first().map_or(0.0, |&v| v as f64)));
        } else if nonzero * 16 <= n {
            sparse.extend(col.iter().enumerate().filter(|(_, &x)| x != 0).map(|(l, &x)| (l as u32, j as u32, x)));
            plans.push(Plan::Sparse);
        } else if col.iter().all(|&x| i8::try_from(x).is_ok()) {
            plans.push(Plan::Byte(byte.len()));
            byte.push(j);
        } else if col.iter().all(|&x| i16::try_from(x).is_ok()) {
            plans.push(Plan::Narrow(narrow.len()));
            narrow.push(j);
        } else {
            plans.push(Plan::Wide(wide.len()));
            wide.push(j);
        }
    }
    sparse.sort_unstable_by_key(|&(l, j, _)| (l, j));
    // The byte and narrow columns as i8 / i16, column after column over `np` lines (zero padded), an
    // even number of each.
    let np = n.next_multiple_of(32);
    let db = byte.len().next_multiple_of(2);
    let mut x8 = vec![0i8; db * np];
    for (k, &j) in byte.iter().enumerate() {
        for (a, &x) in x8[k * np..k * np + n].iter_mut().zip(cols[j]) {
            *a = x as i8; // fits: checked above
        }
    }
    let dp = narrow.len().next_multiple_of(2);
    let mut x16 = vec![0i16; dp * np];
    for (k, &j) in narrow.iter().enumerate() {
        for (a, &x) in x16[k * np..k * np + n].iter_mut().zip(cols[j]) {
            *a = x as i16; // fits: checked above
        }
    }
    let wide_cols: Vec<&[i64]> = wide.iter().map(|&j| cols[j]).collect();

    // `counts` is the task's buffer (reused: rows past `n` stay zero, rows past `b` are not read).
    let block = |counts: &mut Vec<u8>, b0: usize| -> Vec<f64> {
        let b = BLOCK.min(replicates - b0);
        let mut wider: Vec<usize> = Vec::new();
        for (r, row) in counts.chunks_mut(np).take(b).enumerate() {
            if !counts_u8_into(seed, (b0 + r) as u64, &mut row[..n]) {
                // A line drawn 256+ times (next to impossible): this replicate is summed from u32 counts.
                row.fill(0);
                wider.push(r);
            }
        }
        let most = counts.iter().fold(0u8, |m, &x| m.max(x));
        let mut byte_sums = vec![0i64; BLOCK * db];
        let mut narrow_sums = vec![0i64; BLOCK * dp];
        let mut wide_sums = vec![0i64; BLOCK * wide.len()];
        let mut sums = vec![0i64; BLOCK * c];
        let mut next_sparse = 0;
        for t0 in (0..np).step_by(TILE) {
            let t1 = (t0 + TILE).min(np);
            if most <= 127 {
                byte_tile(counts, np, &x8, db, t0, t1, most, &mut byte_sums);
            } else {
                byte_tile_generic(counts, np, &x8, db, t0, t1, &mut byte_sums);
            }
            narrow_tile(counts, np, &x16, dp, t0, t1, &mut narrow_sums);
            for (k, col) in wide_cols.iter().enumerate() {
                let x = &col[t0..t1.min(n)];
                for r in 0..b {
                    let w = &counts[r * np + t0..r * np + t0 + x.len()];
                    wide_sums[r * wide.len() + k] += w.iter().zip(x).map(|(&w, &x)| i64::from(w) * x).sum::<i64>();
                }
            }
            while let Some(&(l, j, x)) = sparse.get(next_sparse).filter(|e| (e.0 as usize) < t1) {
                for r in 0..b {
                    sums[r * c + j as usize] += i64::from(counts[r * np + l as usize]) * x;
                }
                next_sparse += 1;
            }
        }
        for r in 0..b {
            for (j, p) in plans.iter().enumerate() {
                match *p {
                    Plan::Byte(k) => sums[r * c + j] = byte_sums[r * db + k],
                    Plan::Narrow(k) => sums[r * c + j] = narrow_sums[r * dp + k],
                    Plan::Wide(k) => sums[r * c + j] = wide_sums[r * wide.len() + k],
                    Plan::Same(_) | Plan::Sparse | Plan::Constant(_) => {}
                }
            }
        }
        for &r in &wider {
            let w = counts_u32(seed, (b0 + r) as u64, n);
            for (j, col) in cols.iter().enumerate() {
                sums[r * c + j] = col.iter().zip(&w).map(|(&x, &w)| x * i64::from(w)).sum();
            }
        }
        let mut out = vec![0.0f64; b * c];
        for r in 0..b {
            for (j, p) in plans.iter().enumerate() {
                out[r * c + j] = match *p {
                    Plan::Constant(v) => v * n as f64,
                    Plan::Same(i) => out[r * c + i],
                    _ => sums[r * c + j] as f64,
                };
            }
        }
        out
    };
    let starts: Vec<usize> = (0..replicates).step_by(BLOCK).collect();
    // Count buffers are pooled: a fresh 6 MB buffer per block costs about as much in page faults as
    // drawing its counts.
    let pool: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
    let pooled = |b0: usize| {
        let mut counts = pool.lock().unwrap_or_else(|e| e.into_inner()).pop().unwrap_or_else(|| vec![0u8; BLOCK * np]);
        let out = block(&mut counts, b0);
        pool.lock().unwrap_or_else(|e| e.into_inner()).push(counts);
        out
    };
    let parts: Vec<Vec<f64>> = if crate::parallel::parallel_allowed() {
        starts.into_par_iter().map(pooled).collect()
    } else {
        starts.into_iter().map(pooled).collect()
    };
    Ok(parts.concat())
}

/// `sums[r * dp + k] += sum over lines t0..t1 of counts[r * np + l] * x16[k * np + l]`, all `BLOCK`
/// replicates, `dp` (even) columns; `t1 - t0` is a multiple of 16 and at most [`TILE`].
fn narrow_tile(counts: &[u8], np: usize, x16: &[i16], dp: usize, t0: usize, t1: usize, sums: &mut [i64]) {
    debug_assert!(counts.len() == BLOCK * np && x16.len() == dp * np && t1 <= np && (t1 - t0) % 16 == 0);
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && !force_portable() {
            // SAFETY: AVX2 is present; the kernel reads rows `r * np + t0..r * np + t1` (r < BLOCK) of
            // `counts` and `k * np + t0..k * np + t1` (k < dp) of `x16`, inside both (asserted above).
            unsafe { narrow_tile_avx2(counts, np, x16, dp, t0, t1, sums) };
            return;
        }
    }
    narrow_tile_generic(counts, np, x16, dp, t0, t1, sums);
}

/// The portable [`narrow_tile`].
fn narrow_tile_generic(counts: &[u8], np: usize, x16: &[i16], dp: usize, t0: usize, t1: usize, sums: &mut [i64]) {
    for r in 0..BLOCK {
        let w = &counts[r * np + t0..r * np + t1];
        for k in 0..dp {
            let x = &x16[k * np + t0..k * np + t1];
            sums[r * dp + k] += w.iter().zip(x).map(|(&w, &x)| i64::from(w) * i64::from(x)).sum::<i64>();
        }
    }
}

/// `sums[r * db + k] += sum over lines t0..t1 of counts[r * np + l] * x8[k * np + l]`, all `BLOCK`
/// replicates, `db` (even) columns of bytes; `t1 - t0` is a multiple of 32; every count is at most
/// `most` (<= 127).
#[allow(clippy::too_many_arguments)]
fn byte_tile(counts: &[u8], np: usize, x8: &[i8], db: usize, t0: usize, t1: usize, most: u8, sums: &mut [i64]) {
    assert!(counts.len() == BLOCK * np && x8.len() == db * np && t1 <= np && (t1 - t0) % 32 == 0 && most <= 127);
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && !force_portable() {
            // SAFETY: AVX2 is present; the kernel reads rows `r * np + t0..r * np + t1` (r < BLOCK) of
            // `counts` and `k * np + t0..k * np + t1` (k < db) of `x8`, inside both (asserted above).
            unsafe { byte_tile_avx2(counts, np, x8, db, t0, t1, most, sums) };
            return;
        }
    }
    byte_tile_generic(counts, np, x8, db, t0, t1, sums);
}

/// The portable [`byte_tile`] (any counts).
fn byte_tile_generic(counts: &[u8], np: usize, x8: &[i8], db: usize, t0: usize, t1: usize, sums: &mut [i64]) {
    for r in 0..BLOCK {
        let w = &counts[r * np + t0..r * np + t1];
        for k in 0..db {
            let x = &x8[k * np + t0..k * np + t1];
            sums[r * db + k] += w.iter().zip(x).map(|(&w, &x)| i64::from(w) * i64::from(x)).sum::<i64>();
        }
    }
}

/// [`byte_tile`] with `vpmaddubsw` (32 products of an unsigned count and a signed byte per
/// instruction, pairs added into `i16`): a pair is at most 2 x 127 x 128 in size, so `i16` lanes take
/// `32767 / (256 x most)` steps before they are widened into `i32` (`vpmaddwd` by ones).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
unsafe fn byte_tile_avx2(counts: &[u8], np: usize, x8: &[i8], db: usize, t0: usize, t1: usize, most: u8, sums: &mut [i64]) {
    use std::arch::x86_64::*;
    let steps = (32_767 / (256 * usize::from(most.max(1)))).max(1);
    let ones = _mm256_set1_epi16(1);
    let pc = counts.as_ptr();
    let px = x8.as_ptr();
    for r0 in (0..BLOCK).step_by(4) {
        for k0 in (0..db).step_by(2) {
            let mut wide = [_mm256_setzero_si256(); 8];
            let (x0, x1) = (px.add(k0 * np), px.add((k0 + 1) * np));
            let mut l = t0;
            while l < t1 {
                let end = (l + 32 * steps).min(t1);
                let mut acc = [_mm256_setzero_si256(); 8];
                while l < end {
                    let a = _mm256_loadu_si256(x0.add(l).cast());
                    let b = _mm256_loadu_si256(x1.add(l).cast());
                    for i in 0..4 {
                        let w = _mm256_loadu_si256(pc.add((r0 + i) * np + l).cast());
                        acc[2 * i] = _mm256_add_epi16(acc[2 * i], _mm256_maddubs_epi16(w, a));
                        acc[2 * i + 1] = _mm256_add_epi16(acc[2 * i + 1], _mm256_maddubs_epi16(w, b));
                    }
                    l += 32;
                }
                for (wq, aq) in wide.iter_mut().zip(&acc) {
                    *wq = _mm256_add_epi32(*wq, _mm256_madd_epi16(*aq, ones));
                }
            }
            for i in 0..4 {
                for q in 0..2 {
                    let mut lanes = [0i32; 8];
                    _mm256_storeu_si256(lanes.as_mut_ptr().cast(), wide[2 * i + q]);
                    sums[(r0 + i) * db + k0 + q] += lanes.iter().map(|&v| i64::from(v)).sum::<i64>();
                }
            }
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

/// [`narrow_tile`] in registers: 4 replicates x 2 columns of `i32` accumulators, 16 lines a step.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn narrow_tile_avx2(counts: &[u8], np: usize, x16: &[i16], dp: usize, t0: usize, t1: usize, sums: &mut [i64]) {
    use std::arch::x86_64::*;
    let pc = counts.as_ptr();
    let px = x16.as_ptr();
    for r0 in (0..BLOCK).step_by(4) {
        for k0 in (0..dp).step_by(2) {
            let mut acc = [_mm256_setzero_si256(); 8];
            let (x0, x1) = (px.add(k0 * np), px.add((k0 + 1) * np));
            for l in (t0..t1).step_by(16) {
                let a = _mm256_loadu_si256(x0.add(l).cast());
                let b = _mm256_loadu_si256(x1.add(l).cast());
                for i in 0..4 {
                    let w = _mm256_cvtepu8_epi16(_mm_loadu_si128(pc.add((r0 + i) * np + l).cast()));
                    acc[2 * i] = _mm256_add_epi32(acc[2 * i], _mm256_madd_epi16(w, a));
                    acc[2 * i + 1] = _mm256_add_epi32(acc[2 * i + 1], _mm256_madd_epi16(w, b));
                }
            }
            for i in 0..4 {
                for q in 0..2 {
                    let mut lanes = [0i32; 8];
                    _mm256_storeu_si256(lanes.as_mut_ptr().cast(), acc[2 * i + q]);
                    sums[(r0 + i) * dp + k0 + q] += lanes.iter().map(|&v| i64::from(v)).sum::<i64>();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Set by the test of the portable kernel (the other tests pass either way: both kernels agree).
    pub static PORTABLE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    fn check(n: usize, replicates: usize) {
        let dense: Vec<i64> = (0..n as i64).map(|l| (l * 7) % 13).collect();
        let bytes: Vec<i64> = (0..n as i64).map(|l| [-128, 127, 0, 5][l as usize % 4]).collect();
        let signed: Vec<i64> = (0..n as i64).map(|l| if l % 5 == 0 { -32768 } else { 32767 - l % 3 }).collect();
        let wide: Vec<i64> = (0..n as i64).map(|l| (l % 3) * 100_000 - 7).collect();
        let sparse: Vec<i64> = (0..n as i64).map(|l| if l % 100 == 3 { l } else { 0 }).collect();
        let constant = vec![1i64; n];
        let zeros = vec![0i64; n];
        let cols: Vec<&[i64]> = vec![&dense, &sparse, &constant, &dense, &zeros, &signed, &wide, &bytes];
        let got = column_sums(&cols, n, 11, replicates).unwrap();
        for r in 0..replicates {
            let w = counts_u32(11, r as u64, n);
            for (j, col) in cols.iter().enumerate() {
                let want: i64 = col.iter().zip(&w).map(|(&x, &c)| x * i64::from(c)).sum();
                assert_eq!(got[r * cols.len() + j], want as f64, "n {n} replicate {r} column {j}");
            }
        }
    }

    #[test]
    fn sums_equal_a_direct_product_for_every_kind_of_column() {
        for n in [1, 500, 2 * TILE + 37] {
            check(n, 20);
        }
    }

    #[test]
    fn the_portable_kernel_gives_the_same_sums() {
        PORTABLE.store(true, std::sync::atomic::Ordering::Relaxed);
        check(TILE + 300, 5);
        PORTABLE.store(false, std::sync::atomic::Ordering::Relaxed);
    }
}
