//! The paired bootstrap's replicate sums of per-line columns, without a weights matrix.
//!
//! Every ratio metric of `subword compare` is a ratio of sums over lines, so a replicate needs, for
//! every column `x` (tokens, characters, boundaries, ... of every tokenizer), `sum_l w_r(l) x(l)`
//! where `w_r` are replicate `r`'s resampling counts ([`super::resample`]'s draws, the same as
//! `bootstrap_weights`). The Python path built `w` as a float64 matrix (`replicates x n`, 3 GB for
//! 1000 x 400k lines, in batches) and multiplied it by the `n x columns` matrix with BLAS.
//!
//! Performance notes: here each task draws the counts of a block of replicates as bytes, and streams the
//! columns once per block. Columns are first sorted by shape: a column equal to an earlier one is
//! summed once; a constant column `v` sums to `v * n` (the counts of a replicate sum to `n`); a column
//! with few non-zero lines is summed over those lines only; the rest go into one row-major `f64`
//! matrix over the lines where any of them is non-zero (empty lines are skipped), multiplied per row by
//! the block's counts (an AVX2 kernel where the CPU has it). All values are integers, so every sum is
//! exact in `f64` (below 2^53, checked) and the result equals the BLAS product bit for bit.

use rayon::prelude::*;

use super::resample::{add_counts, counts_u8};

/// Replicates per task: their byte counts are `BLOCK x n` bytes, the accumulators `BLOCK x dense` f64.
const BLOCK: usize = 64;

/// What is done with one column.
enum Plan {
    Same(usize),
    Constant(f64),
    Sparse(Vec<(u32, f64)>),
    Dense(usize),
}

/// `out[r * columns + c] = sum_l count_r(l) * cols[c][l]` for replicates `0..replicates` of `seed`.
pub fn column_sums(cols: &[&[i64]], n: usize, seed: u64, replicates: usize) -> Result<Vec<f64>, String> {
    let c = cols.len();
    if let Some(bad) = cols.iter().position(|x| x.len() != n) {
        return Err(format!("column {bad} has {} values for {n} lines", cols[bad].len()));
    }
    let mut plans: Vec<Plan> = Vec::with_capacity(c);
    let mut seen: ahash::AHashMap<&[i64], usize> = ahash::AHashMap::new();
    let mut dense_cols: Vec<usize> = Vec::new();
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
            let pairs = col.iter().enumerate().filter(|(_, &x)| x != 0).map(|(l, &x)| (l as u32, x as f64)).collect();
            plans.push(Plan::Sparse(pairs));
        } else {
            plans.push(Plan::Dense(dense_cols.len()));
            dense_cols.push(j);
        }
    }
    // The dense columns, row-major over the lines where one of them is non-zero; width padded to 4.
    let d = dense_cols.len().div_ceil(4) * 4;
    let rows: Vec<u32> = (0..n).filter(|&l| dense_cols.iter().any(|&j| cols[j][l] != 0)).map(|l| l as u32).collect();
    // Panels of four columns, each row-major over the dense rows (see `dense_block`).
    let m = rows.len();
    let mut data = vec![0.0f64; m * d];
    for (k, &j) in dense_cols.iter().enumerate() {
        let (p, i) = (k / 4, k % 4);
        for (a, &l) in rows.iter().enumerate() {
            data[(p * m + a) * 4 + i] = cols[j][l as usize] as f64;
        }
    }
    let sparse: Vec<(usize, &[(u32, f64)])> = plans
        .iter()
        .enumerate()
        .filter_map(|(j, p)| match p {
            Plan::Sparse(v) => Some((j, v.as_slice())),
            _ => None,
        })
        .collect();

    let block = |b0: usize| -> Vec<f64> {
        let b = BLOCK.min(replicates - b0);
        // Counts line-major (`ct[l * b + r]`), bytes where no line is drawn 255+ times, else u32.
        let small: Vec<Option<Vec<u8>>> = (0..b).map(|r| counts_u8(seed, (b0 + r) as u64, n)).collect();
        let mut out = vec![0.0f64; b * c];
        let mut acc = vec![0.0f64; b * d];
        if small.iter().all(Option::is_some) {
            let rows_u8: Vec<Vec<u8>> = small.into_iter().flatten().collect();
            let ct = line_major(&rows_u8, n);
            dense_block(&data, d, &rows, &ct, b, &mut acc);
            sparse_block(&sparse, &ct, b, c, &mut out);
        } else {
            let rows_u32: Vec<Vec<u32>> = (0..b)
                .map(|r| {
                    let mut w = vec![0u32; n];
                    add_counts(seed, (b0 + r) as u64, &mut w);
                    w
                })
                .collect();
            let ct = line_major(&rows_u32, n);
            dense_block(&data, d, &rows, &ct, b, &mut acc);
            sparse_block(&sparse, &ct, b, c, &mut out);
        }
        for r in 0..b {
            for (j, p) in plans.iter().enumerate() {
                match p {
                    Plan::Constant(v) => out[r * c + j] = v * n as f64,
                    Plan::Dense(k) => out[r * c + j] = acc[r * d + k],
                    Plan::Same(_) | Plan::Sparse(_) => {}
                }
            }
            for (j, p) in plans.iter().enumerate() {
                if let Plan::Same(i) = p {
                    out[r * c + j] = out[r * c + i];
                }
            }
        }
        out
    };
    let starts: Vec<usize> = (0..replicates).step_by(BLOCK).collect();
    let parts: Vec<Vec<f64>> = if crate::parallel::parallel_allowed() {
        starts.into_par_iter().map(block).collect()
    } else {
        starts.into_iter().map(block).collect()
    };
    Ok(parts.concat())
}

/// `rows[r][l]` as `t[l * rows.len() + r]`.
fn line_major<T: Copy + Default>(rows: &[Vec<T>], n: usize) -> Vec<T> {
    let b = rows.len();
    let mut t = vec![T::default(); n * b];
    for l0 in (0..n).step_by(256) {
        let l1 = (l0 + 256).min(n);
        for (r, row) in rows.iter().enumerate() {
            for l in l0..l1 {
                t[l * b + r] = row[l];
            }
        }
    }
    t
}

fn sparse_block<W: Copy + Into<f64>>(sparse: &[(usize, &[(u32, f64)])], ct: &[W], b: usize, c: usize, out: &mut [f64]) {
    for &(j, pairs) in sparse {
        for &(l, x) in pairs {
            let w = &ct[l as usize * b..(l as usize + 1) * b];
            for (r, &wr) in w.iter().enumerate() {
                out[r * c + j] += wr.into() * x;
            }
        }
    }
}

/// `acc[r * d + k] += ct[row, r] * x[a, k]` over the dense rows, where `data` holds `x` in panels of
/// four columns (`data[(p * rows + a) * 4 + i] = x[a, 4p + i]`). Rows go in tiles of [`TILE`], so a
/// tile's counts and panels are read from memory once and reused from cache by every panel and group.
fn dense_block<W: Copy + Into<f64>>(data: &[f64], d: usize, rows: &[u32], ct: &[W], b: usize, acc: &mut [f64]) {
    let m = rows.len();
    let bytes = as_bytes(ct);
    #[cfg(target_arch = "x86_64")]
    let avx2 = std::is_x86_feature_detected!("avx2")
        && std::is_x86_feature_detected!("fma")
        && bytes.is_some_and(|c| rows.iter().all(|&l| (l as usize + 1) * b <= c.len()));
    #[cfg(not(target_arch = "x86_64"))]
    let avx2 = false;
    for t0 in (0..m).step_by(TILE) {
        let t1 = (t0 + TILE).min(m);
        let tile_rows = &rows[t0..t1];
        for p in 0..d / 4 {
            let panel = &data[(p * m + t0) * 4..(p * m + t1) * 4];
            for g0 in (0..b).step_by(GROUP) {
                let g = GROUP.min(b - g0);
                let mut t = [[0.0f64; 4]; GROUP];
                for (r, tr) in t.iter_mut().enumerate().take(g) {
                    tr.copy_from_slice(&acc[(g0 + r) * d + p * 4..(g0 + r) * d + p * 4 + 4]);
                }
                match bytes {
                    #[cfg(target_arch = "x86_64")]
                    // SAFETY: AVX2 and FMA are present; every row's counts `l * b + g0 .. + GROUP` are in `ct`
                    // (checked above, and g0 + GROUP <= b here), and `panel` holds 4 values per row.
                    Some(c) if avx2 && g == GROUP => t = unsafe { panel_avx2(panel, tile_rows, c, b, g0, t) },
                    _ => panel_generic(panel, tile_rows, ct, b, g0, g, &mut t),
                }
                for (r, tr) in t.iter().enumerate().take(g) {
                    acc[(g0 + r) * d + p * 4..(g0 + r) * d + p * 4 + 4].copy_from_slice(tr);
                }
            }
        }
    }
}

/// Dense rows per tile: `TILE x BLOCK` count bytes and `TILE x 32` bytes per panel stay in L2.
const TILE: usize = 1024;

/// The counts as bytes when they are bytes (the AVX2 kernel reads bytes).
fn as_bytes<W: Copy + Into<f64>>(ct: &[W]) -> Option<&[u8]> {
    if std::mem::size_of::<W>() == 1 {
        // SAFETY: W is one of u8 / u32 here (the callers); a one-byte W is u8, same layout.
        Some(unsafe { std::slice::from_raw_parts(ct.as_ptr().cast::<u8>(), ct.len()) })
    } else {
        None
    }
}

/// Replicates per register tile: `GROUP` accumulators of four lanes stay in registers over all rows.
const GROUP: usize = 8;

/// `t[r] += ct[l, g0 + r] * x[a]` for the rows of one tile and panel, `r < g`.
fn panel_generic<W: Copy + Into<f64>>(
    panel: &[f64],
    rows: &[u32],
    ct: &[W],
    b: usize,
    g0: usize,
    g: usize,
    t: &mut [[f64; 4]; GROUP],
) {
    for (x, &l) in panel.chunks_exact(4).zip(rows) {
        let w = &ct[l as usize * b + g0..l as usize * b + g0 + g];
        for (tr, &wr) in t.iter_mut().zip(w) {
            let wr: f64 = wr.into();
            for (s, &v) in tr.iter_mut().zip(x) {
                *s += wr * v;
            }
        }
    }
}

/// [`panel_generic`] for a full group, eight `__m256d` accumulators. Fused multiply-adds: the values
/// and every partial sum are integers below 2^53, so fused and unfused rounding give the same sums.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn panel_avx2(
    panel: &[f64],
    rows: &[u32],
    ct: &[u8],
    b: usize,
    g0: usize,
    start: [[f64; 4]; GROUP],
) -> [[f64; 4]; GROUP] {
    use std::arch::x86_64::*;
    let mut acc = [_mm256_setzero_pd(); GROUP];
    for (a, s) in acc.iter_mut().zip(&start) {
        *a = _mm256_loadu_pd(s.as_ptr());
    }
    let px = panel.as_ptr();
    let pc = ct.as_ptr();
    for (a, &l) in rows.iter().enumerate() {
        let x = _mm256_loadu_pd(px.add(a * 4));
        let w = pc.add(l as usize * b + g0);
        macro_rules! lane {
            ($($r:expr),*) => {$(
                acc[$r] = _mm256_fmadd_pd(_mm256_set1_pd(f64::from(*w.add($r))), x, acc[$r]);
            )*};
        }
        lane!(0, 1, 2, 3, 4, 5, 6, 7);
    }
    let mut out = [[0.0f64; 4]; GROUP];
    for (o, v) in out.iter_mut().zip(acc) {
        _mm256_storeu_pd(o.as_mut_ptr(), v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_equal_a_direct_product_for_every_kind_of_column() {
        let n = 500;
        let dense: Vec<i64> = (0..n as i64).map(|l| (l * 7) % 13).collect();
        let sparse: Vec<i64> = (0..n as i64).map(|l| if l % 100 == 3 { l } else { 0 }).collect();
        let constant = vec![1i64; n];
        let zeros = vec![0i64; n];
        let cols: Vec<&[i64]> = vec![&dense, &sparse, &constant, &dense, &zeros];
        let got = column_sums(&cols, n, 11, 20).unwrap();
        for r in 0..20 {
            let mut w = vec![0u32; n];
            add_counts(11, r as u64, &mut w);
            for (j, col) in cols.iter().enumerate() {
                let want: i64 = col.iter().zip(&w).map(|(&x, &c)| x * i64::from(c)).sum();
                assert_eq!(got[r * cols.len() + j], want as f64, "replicate {r} column {j}");
            }
        }
    }
}
