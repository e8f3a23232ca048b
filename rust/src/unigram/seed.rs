//! SentencePiece 0.2.3's seed pieces from a suffix array (`MakeSeedSentencePiecesFromCorpus`,
//! read for facts): every LCP interval of the *byte* string of the sentences is a candidate.
//!
//! - The text: each sentence repeated `freq` times, every copy followed by `\0`, cut into chunks of
//!   about 500 MiB (a chunk is closed once it holds at least 500 MiB; each chunk is its own text).
//! - Per chunk: suffix array (SA-IS, here) and LCP array (Kasai), then the bottom-up traversal of
//!   the LCP-interval tree. An interval `[l, r]` of depth `d` (the longest common prefix of its
//!   suffixes) is kept when `d >= 2`, its string starts and ends on a UTF-8 character boundary, and
//!   after dropping trailing `\0`s it holds no `\0`, has 2..=`max_len` characters and is a valid
//!   piece. Its frequency `r - l + 1` is added to the piece's total (so `"ab"` collects both the
//!   interval `"ab"` and the interval `"ab\0"`).
//! - After each chunk, when more than `16 * seed_size` distinct pieces were collected, only the best
//!   `8 * seed_size` are kept (same order as below).
//! - Result: pieces with total frequency >= 2, `score = f32(freq) * f32(chars)`, ordered by score
//!   desc, byte length desc, bytes asc; the first `seed_size`.
//!
//! Not followed: sentencepiece's command-line-only flags `min_freq_alpha` (a higher minimum count
//! for long candidates) and `seed_piece_length_power` (`freq * len^power`); their defaults (0 and
//! 1) are what we do. Its Python API refuses them (measured: "unknown field name" in TrainerSpec).
//!
//! This is exact for every option; `train.rs` uses it when pieces may span words
//! (`split_by_whitespace=false`) and otherwise a per-word count, which finds the same intervals
//! several times faster.

use ahash::AHashMap;

use super::train::Validity;

/// Bytes per chunk before a chunk is closed (SentencePiece's `kMaxChunkBytes`).
pub const MAX_CHUNK_BYTES: usize = 500 * 1024 * 1024;

const EMPTY: u32 = u32::MAX;

/// The suffix array of `text` (suffix start offsets in lexicographic order; a suffix that is a
/// prefix of another sorts first), by SA-IS in linear time.
pub fn suffix_array(text: &[u8]) -> Vec<u32> {
    assert!(text.len() < EMPTY as usize, "suffix_array: text longer than 4 GiB - 1");
    let mut sa = vec![0u32; text.len()];
    sais(text, 256, &mut sa);
    sa
}

fn bucket_heads(counts: &[u32]) -> Vec<u32> {
    let mut sum = 0u32;
    counts
        .iter()
        .map(|&c| {
            let h = sum;
            sum += c;
            h
        })
        .collect()
}

fn bucket_tails(counts: &[u32]) -> Vec<u32> {
    let mut sum = 0u32;
    counts
        .iter()
        .map(|&c| {
            sum += c;
            sum
        })
        .collect()
}

/// SA-IS (Nong, Zhang, Chan 2009) with a virtual sentinel after the text, smaller than every symbol.
/// `s` holds symbols `< k`; `sa` has `s.len()` slots.
fn sais<T: Copy + Into<u32>>(s: &[T], k: usize, sa: &mut [u32]) {
    let n = s.len();
    if n == 0 {
        return;
    }
    if n == 1 {
        sa[0] = 0;
        return;
    }
    let ch = |i: usize| -> usize { s[i].into() as usize };
    // S-type: smaller than the suffix after it. The last symbol is L (the sentinel is smaller).
    let mut stype = vec![false; n];
    for i in (0..n - 1).rev() {
        stype[i] = ch(i) < ch(i + 1) || (ch(i) == ch(i + 1) && stype[i + 1]);
    }
    let is_lms = |i: usize| i > 0 && stype[i] && !stype[i - 1];
    let mut counts = vec![0u32; k];
    for i in 0..n {
        counts[ch(i)] += 1;
    }
    let induce = |sa: &mut [u32]| {
        // L-type suffixes from left to right, starting with the one before the sentinel
        let mut head = bucket_heads(&counts);
        let c = ch(n - 1);
        sa[head[c] as usize] = (n - 1) as u32;
        head[c] += 1;
        for i in 0..n {
            let j = sa[i];
            if j != EMPTY && j > 0 && !stype[j as usize - 1] {
                let c = ch(j as usize - 1);
                sa[head[c] as usize] = j - 1;
                head[c] += 1;
            }
        }
        // S-type suffixes from right to left
        let mut tail = bucket_tails(&counts);
        for i in (0..n).rev() {
            let j = sa[i];
            if j != EMPTY && j > 0 && stype[j as usize - 1] {
                let c = ch(j as usize - 1);
                tail[c] -= 1;
                sa[tail[c] as usize] = j - 1;
            }
        }
    };
    // 1. sort the LMS substrings: LMS positions at their bucket tails, then induce
    sa.fill(EMPTY);
    let mut tail = bucket_tails(&counts);
    for i in 1..n {
        if is_lms(i) {
            let c = ch(i);
            tail[c] -= 1;
            sa[tail[c] as usize] = i as u32;
        }
    }
    induce(sa);
    // 2. name the LMS substrings in sorted order (equal substrings share a name)
    let sorted_lms: Vec<u32> = sa.iter().copied().filter(|&p| is_lms(p as usize)).collect();
    let n1 = sorted_lms.len();
    let lms_equal = |a: usize, b: usize| -> bool {
        let mut d = 0;
        loop {
            let (i, j) = (a + d, b + d);
            if i == n || j == n || ch(i) != ch(j) || stype[i] != stype[j] {
                return false;
            }
            if d > 0 && (is_lms(i) || is_lms(j)) {
                return is_lms(i) && is_lms(j);
            }
            d += 1;
        }
    };
    let mut names = vec![EMPTY; n];
    let mut n_names = 0u32;
    let mut prev: Option<usize> = None;
    for &p in &sorted_lms {
        let p = p as usize;
        if prev.is_none_or(|q| !lms_equal(q, p)) {
            n_names += 1;
        }
        names[p] = n_names - 1;
        prev = Some(p);
    }
    let lms_pos: Vec<u32> = (0..n).filter(|&i| is_lms(i)).map(|i| i as u32).collect();
    let reduced: Vec<u32> = lms_pos.iter().map(|&p| names[p as usize]).collect();
    drop(names);
    // 3. sort the LMS suffixes: recursively if names repeat, else the names are the ranks
    let mut sa1 = vec![0u32; n1];
    if (n_names as usize) < n1 {
        sais(&reduced, n_names as usize, &mut sa1);
    } else {
        for (i, &r) in reduced.iter().enumerate() {
            sa1[r as usize] = i as u32;
        }
    }
    // 4. place the sorted LMS suffixes at their bucket tails (largest first), induce the rest
    sa.fill(EMPTY);
    let mut tail = bucket_tails(&counts);
    for &r in sa1.iter().rev() {
        let p = lms_pos[r as usize] as usize;
        let c = ch(p);
        tail[c] -= 1;
        sa[tail[c] as usize] = p as u32;
    }
    induce(sa);
}

/// `lcp[i]` = length of the longest common prefix of the suffixes `sa[i - 1]` and `sa[i]`
/// (`lcp[0] = 0`), by Kasai et al.
pub fn lcp_array(text: &[u8], sa: &[u32]) -> Vec<u32> {
    let n = text.len();
    let mut rank = vec![0u32; n];
    for (i, &p) in sa.iter().enumerate() {
        rank[p as usize] = i as u32;
    }
    let mut lcp = vec![0u32; n];
    let mut h = 0usize;
    for i in 0..n {
        let r = rank[i] as usize;
        if r == 0 {
            h = 0;
            continue;
        }
        let j = sa[r - 1] as usize;
        while i + h < n && j + h < n && text[i + h] == text[j + h] {
            h += 1;
        }
        lcp[r] = h as u32;
        h = h.saturating_sub(1);
    }
    lcp
}

/// Calls `f(l, r, depth)` for every LCP interval `[l, r]` (suffix-array indices, inclusive) of
/// depth > 0, children before their parent (bottom-up).
pub fn for_each_lcp_interval(lcp: &[u32], mut f: impl FnMut(usize, usize, u32)) {
    let n = lcp.len();
    // (left bound, depth); the root (depth 0) stays at the bottom
    let mut stack: Vec<(usize, u32)> = vec![(0, 0)];
    for i in 1..=n {
        let h = lcp.get(i).copied().unwrap_or(0); // past the end: depth 0 closes every interval
        let mut left = i - 1;
        while let Some(&(l, d)) = stack.last() {
            if h >= d {
                break;
            }
            stack.pop();
            f(l, i - 1, d);
            left = l;
            let below = stack.last().map_or(0, |t| t.1);
            if h > below {
                stack.push((l, h));
                break;
            }
        }
        if h > stack.last().map_or(0, |t| t.1) {
            stack.push((left, h));
        }
    }
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// The piece an interval stands for: its bytes without trailing `\0`s, when they start and end on
/// a character boundary, hold no other `\0`, and have 2..=`max_len` characters.
fn interval_piece(chunk: &[u8], offset: usize, depth: usize, max_len: usize) -> Option<&str> {
    let end = offset + depth;
    if is_continuation(chunk[offset]) || (end < chunk.len() && is_continuation(chunk[end])) {
        return None;
    }
    let bytes = &chunk[offset..end];
    let trimmed = match bytes.iter().rposition(|&b| b != 0) {
        Some(last) => &bytes[..=last],
        None => return None,
    };
    // at most 4 bytes a character: longer strings cannot be short enough (and are often long repeats)
    if trimmed.len() > 4 * max_len || trimmed.contains(&0) {
        return None;
    }
    let piece = std::str::from_utf8(trimmed).ok()?;
    let chars = piece.chars().count();
    if chars <= 1 || chars > max_len {
        return None;
    }
    Some(piece)
}

/// SentencePiece's order of seed candidates `(piece, score)`: score desc, byte length desc, bytes asc.
fn candidate_order(a: (&str, f32), b: (&str, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(b.0.len().cmp(&a.0.len())).then(a.0.as_bytes().cmp(b.0.as_bytes()))
}

fn score(piece: &str, freq: u64) -> f32 {
    freq as f32 * piece.chars().count() as f32
}

/// Keeps the best `keep` pieces by the candidate order (SentencePiece's garbage collection).
fn keep_best(freqs: AHashMap<String, u64>, keep: usize) -> AHashMap<String, u64> {
    let mut all: Vec<(String, f32, u64)> = freqs
        .into_iter()
        .map(|(p, f)| {
            let s = score(&p, f);
            (p, s, f)
        })
        .collect();
    all.sort_unstable_by(|a, b| candidate_order((&a.0, a.1), (&b.0, b.1)));
    all.truncate(keep);
    all.into_iter().map(|(p, _, f)| (p, f)).collect()
}

/// SentencePiece's chunks: each sentence's copies are appended (each followed by `\0`) while the
/// chunk holds less than `max_bytes`; a chunk is closed once it holds at least `max_bytes`, and the
/// copies of its last sentence that did not fit are dropped (not carried over). Returns per chunk
/// its `(sentence, copies)`.
pub fn chunk_sentences(sentences: &[(String, u64)], max_bytes: usize) -> Vec<Vec<(&str, u64)>> {
    let mut chunks = Vec::new();
    let mut next = 0usize;
    while next < sentences.len() {
        let mut chunk: Vec<(&str, u64)> = Vec::new();
        let mut bytes = 0usize;
        while next < sentences.len() && bytes < max_bytes {
            let (s, f) = &sentences[next];
            next += 1;
            let mut copies = 0u64;
            while copies < *f && bytes < max_bytes {
                bytes += s.len() + 1;
                copies += 1;
            }
            if copies > 0 {
                chunk.push((s.as_str(), copies));
            }
        }
        if chunk.is_empty() {
            break;
        }
        chunks.push(chunk);
    }
    chunks
}

/// Piece counts summed over the chunks, with SentencePiece's garbage collection between chunks.
pub struct SeedCounts {
    freqs: AHashMap<String, u64>,
    seed_size: usize,
}

impl SeedCounts {
    pub fn new(seed_size: usize) -> SeedCounts {
        SeedCounts { freqs: AHashMap::new(), seed_size }
    }

    /// The seeds of a text that is a single chunk (no copies of the pieces into a map of our own).
    pub fn single_chunk<'a>(counts: impl IntoIterator<Item = (&'a str, u64)>, seed_size: usize) -> Vec<(String, f64)> {
        let mut out: Vec<(&str, f32)> =
            counts.into_iter().filter(|(_, f)| *f >= 2).map(|(p, f)| (p, score(p, f))).collect();
        out.sort_unstable_by(|a, b| candidate_order(*a, *b));
        out.truncate(seed_size);
        out.into_iter().map(|(p, s)| (p.to_string(), s as f64)).collect()
    }

    /// Adds one chunk's counts; then, when more than `16 * seed_size` pieces are held, keeps the
    /// best `8 * seed_size`.
    pub fn add_chunk<'a>(&mut self, counts: impl IntoIterator<Item = (&'a str, u64)>) {
        for (p, f) in counts {
            match self.freqs.get_mut(p) {
                Some(total) => *total += f,
                None => {
                    self.freqs.insert(p.to_string(), f);
                }
            }
        }
        if self.freqs.len() > 16 * self.seed_size {
            self.freqs = keep_best(std::mem::take(&mut self.freqs), 8 * self.seed_size);
        }
    }

    /// Pieces counted at least twice with `score = f32(count) * f32(chars)`, best first, at most
    /// `seed_size`.
    pub fn finish(self) -> Vec<(String, f64)> {
        let mut out: Vec<(String, f32)> = self
            .freqs
            .into_iter()
            .filter(|(_, f)| *f >= 2)
            .map(|(p, f)| {
                let s = score(&p, f);
                (p, s)
            })
            .collect();
        out.sort_unstable_by(|a, b| candidate_order((&a.0, a.1), (&b.0, b.1)));
        out.truncate(self.seed_size);
        out.into_iter().map(|(p, s)| (p, s as f64)).collect()
    }
}

/// One chunk's candidates: piece -> summed count of its LCP intervals.
fn chunk_counts<'a>(chunk: &'a [u8], max_len: usize, valid: &Validity) -> AHashMap<&'a str, u64> {
    let sa = suffix_array(chunk);
    let lcp = lcp_array(chunk, &sa);
    let mut local: AHashMap<&str, u64> = AHashMap::new();
    let mut chars: Vec<char> = Vec::new();
    for_each_lcp_interval(&lcp, |l, r, depth| {
        if depth <= 1 {
            return;
        }
        let Some(piece) = interval_piece(chunk, sa[l] as usize, depth as usize, max_len) else {
            return;
        };
        chars.clear();
        chars.extend(piece.chars());
        if valid(&chars) {
            *local.entry(piece).or_insert(0) += (r - l + 1) as u64;
        }
    });
    local
}

/// Substring seeds (no single characters) with their raw scores, best first, at most `seed_size`.
pub fn suffix_array_seeds(
    sentences: &[(String, u64)],
    max_len: usize,
    seed_size: usize,
    valid: &Validity,
) -> Vec<(String, f64)> {
    suffix_array_seeds_chunked(sentences, max_len, seed_size, valid, MAX_CHUNK_BYTES)
}

/// [`suffix_array_seeds`] with another chunk size (tests use small ones).
pub fn suffix_array_seeds_chunked(
    sentences: &[(String, u64)],
    max_len: usize,
    seed_size: usize,
    valid: &Validity,
    max_chunk_bytes: usize,
) -> Vec<(String, f64)> {
    let chunks = chunk_sentences(sentences, max_chunk_bytes);
    let single = chunks.len() == 1;
    let mut counts = SeedCounts::new(seed_size);
    for chunk in chunks {
        let mut bytes: Vec<u8> = Vec::new();
        for (s, copies) in chunk {
            for _ in 0..copies {
                bytes.extend_from_slice(s.as_bytes());
                bytes.push(0);
            }
        }
        if single {
            return SeedCounts::single_chunk(chunk_counts(&bytes, max_len, valid), seed_size);
        }
        counts.add_chunk(chunk_counts(&bytes, max_len, valid));
    }
    counts.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_sa(t: &[u8]) -> Vec<u32> {
        let mut sa: Vec<u32> = (0..t.len() as u32).collect();
        sa.sort_by(|&a, &b| t[a as usize..].cmp(&t[b as usize..]));
        sa
    }

    /// A tiny deterministic generator, so the test needs no dependency.
    fn lcg(state: &mut u64) -> u64 {
        *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *state >> 33
    }

    #[test]
    fn suffix_array_equals_sorting_on_random_and_repetitive_texts() {
        let mut st = 7u64;
        for round in 0..400 {
            let n = (lcg(&mut st) % 60) as usize;
            let alpha = 1 + lcg(&mut st) % if round % 2 == 0 { 3 } else { 255 };
            let t: Vec<u8> = (0..n).map(|_| (lcg(&mut st) % alpha) as u8).collect();
            assert_eq!(suffix_array(&t), naive_sa(&t), "{t:?}");
        }
        let t = b"abracadabra\0abracadabra\0aaaaaaaaaaaa\0".repeat(5);
        assert_eq!(suffix_array(&t), naive_sa(&t));
    }

    #[test]
    fn lcp_intervals_are_the_right_branching_repeats() {
        // by definition: a string occurring at least twice whose occurrences are followed by at
        // least two different bytes (the end of the text counts as one)
        let mut st = 11u64;
        for _ in 0..200 {
            let n = 1 + (lcg(&mut st) % 40) as usize;
            let t: Vec<u8> = (0..n).map(|_| b"ab\0"[(lcg(&mut st) % 3) as usize]).collect();
            let sa = suffix_array(&t);
            let lcp = lcp_array(&t, &sa);
            let mut got: Vec<(Vec<u8>, usize)> = Vec::new();
            for_each_lcp_interval(&lcp, |l, r, d| got.push((t[sa[l] as usize..][..d as usize].to_vec(), r - l + 1)));
            got.sort();
            let mut want: Vec<(Vec<u8>, usize)> = Vec::new();
            for i in 0..n {
                for j in i + 1..=n {
                    let x = &t[i..j];
                    if want.iter().any(|w| w.0 == x) {
                        continue;
                    }
                    let occ: Vec<usize> = (0..=n - x.len()).filter(|&k| &t[k..k + x.len()] == x).collect();
                    let mut follow: Vec<Option<u8>> = occ.iter().map(|&k| t.get(k + x.len()).copied()).collect();
                    follow.sort();
                    follow.dedup();
                    if occ.len() >= 2 && follow.len() >= 2 {
                        want.push((x.to_vec(), occ.len()));
                    }
                }
            }
            want.sort();
            assert_eq!(got, want, "{t:?}");
        }
    }

    #[test]
    fn chunks_close_at_the_byte_limit_and_drop_the_copies_left() {
        let sentences = vec![("abc".to_string(), 3), ("d".to_string(), 1), ("ef".to_string(), 2)];
        // "abc\0" twice reaches 8 >= 5 bytes: the third copy is dropped, "d" opens the next chunk
        assert_eq!(chunk_sentences(&sentences, 5), vec![vec![("abc", 2)], vec![("d", 1), ("ef", 1)]]);
        assert_eq!(chunk_sentences(&sentences, 100), vec![vec![("abc", 3), ("d", 1), ("ef", 2)]]);
    }

    #[test]
    fn seeds_sum_the_intervals_of_a_piece_and_its_sentence_end() {
        let sentences = vec![("▁ab▁ab".to_string(), 1), ("▁ab".to_string(), 2)];
        let all = |_: &[char]| true;
        let seeds = suffix_array_seeds(&sentences, 8, 100, &all);
        let get = |p: &str| seeds.iter().find(|s| s.0 == p).map(|s| s.1);
        // "▁ab" occurs 4 times, always followed by "▁" or "\0": the interval "▁ab" (4) plus the
        // interval "▁ab\0" (3: the last copy is followed by the end of the text)
        assert_eq!(get("▁ab"), Some(((4 + 3) * 3) as f64));
    }
}
