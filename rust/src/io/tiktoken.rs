//! tiktoken rank files (`base64(token) rank` per line) read into the byte-level BPE that gives
//! tiktoken's ids: the vocab in GPT-2's byte-to-unicode spelling and, as merges, every split of
//! every token into two ranked tokens, ordered by (rank of the token, rank of the left part): the
//! model `subword/formats/tiktoken.py::from_ranks` builds, and in the same order.
//!
//! [`parse_ranks`] takes only a clean file (one `token rank` per line with a single space, strict
//! base64, ranks 0..n-1 each once, all 256 single bytes); anything else is `None`, and the Python
//! reader then reports the line that is wrong.

use std::collections::HashMap;

use ahash::AHashMap;

use crate::pretok::bytes_to_unicode;

/// Strict base64 (standard alphabet, `=` padding only at the end, zero unused bits), or `None`.
fn b64_decode(s: &[u8]) -> Option<Vec<u8>> {
    fn sextet(c: u8) -> Option<u32> {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        Some(u32::from(v))
    }
    if s.is_empty() || s.len() % 4 != 0 {
        return None;
    }
    let pad = s.iter().rev().take_while(|&&c| c == b'=').count();
    if pad > 2 {
        return None;
    }
    let body = &s[..s.len() - pad];
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in body {
        acc = (acc << 6) | sextet(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // the bits left over are the padding of a canonical encoding: all zero
    if acc != 0 {
        return None;
    }
    Some(out)
}

/// The tokens of a clean rank file, in file order, each with its rank; `None` otherwise.
pub fn parse_ranks(data: &[u8]) -> Option<Vec<(Vec<u8>, u32)>> {
    let mut out: Vec<(Vec<u8>, u32)> = Vec::new();
    let mut lines = data.split(|&c| c == b'\n').peekable();
    while let Some(line) = lines.next() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            if lines.peek().is_none() {
                break; // the final newline
            }
            return None;
        }
        let sp = line.iter().position(|&c| c == b' ')?;
        let (tok, rank) = (&line[..sp], &line[sp + 1..]);
        if rank.is_empty() || rank.len() > 9 || !rank.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let rank = rank.iter().fold(0u32, |a, &d| a * 10 + u32::from(d - b'0'));
        out.push((b64_decode(tok)?, rank));
    }
    if out.is_empty() {
        return None;
    }
    let mut seen = vec![false; out.len()];
    for (_, r) in &out {
        let slot = seen.get_mut(*r as usize)?; // a rank >= n means a gap somewhere
        if *slot {
            return None;
        }
        *slot = true;
    }
    let mut tokens: AHashMap<&[u8], u32> = AHashMap::with_capacity(out.len());
    for (t, r) in &out {
        if tokens.insert(t.as_slice(), *r).is_some() {
            return None;
        }
    }
    if (0..=255u8).any(|b| !tokens.contains_key([b].as_slice())) {
        return None;
    }
    Some(out)
}

/// The byte-level spelling of every token (`strings[rank]`).
pub fn byte_level_strings(ranks: &[(Vec<u8>, u32)]) -> Vec<String> {
    let table = bytes_to_unicode();
    let mut strings = vec![String::new(); ranks.len()];
    for (t, r) in ranks {
        strings[*r as usize] = t.iter().map(|&b| table[b as usize]).collect();
    }
    strings
}

/// Every split of every token into two ranked tokens, as (left rank, right rank), ordered by the
/// token's rank then the left part's rank.
pub fn merge_ranks(ranks: &[(Vec<u8>, u32)]) -> Vec<(u32, u32)> {
    let index: AHashMap<&[u8], u32> = ranks.iter().map(|(t, r)| (t.as_slice(), *r)).collect();
    let mut found: Vec<(u32, u32, u32)> = Vec::new();
    for (t, r) in ranks {
        for i in 1..t.len() {
            if let (Some(&a), Some(&b)) = (index.get(&t[..i]), index.get(&t[i..])) {
                found.push((*r, a, b));
            }
        }
    }
    found.sort_unstable();
    found.into_iter().map(|(_, a, b)| (a, b)).collect()
}

/// The vocab and merges of the BPE model of a clean rank file.
pub fn bpe_data(ranks: &[(Vec<u8>, u32)]) -> super::ModelData {
    let strings = byte_level_strings(ranks);
    let merges =
        merge_ranks(ranks).into_iter().map(|(a, b)| (strings[a as usize].clone(), strings[b as usize].clone())).collect();
    let mut vocab = HashMap::with_capacity_and_hasher(strings.len(), ahash::RandomState::new());
    for (r, s) in strings.into_iter().enumerate() {
        vocab.insert(s, r as u32);
    }
    super::ModelData::Bpe { vocab, merges }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(extra: &[(&[u8], u32)]) -> Vec<u8> {
        let mut lines: Vec<(Vec<u8>, u32)> = (0..=255u8).map(|b| (vec![b], u32::from(b))).collect();
        lines.extend(extra.iter().map(|(t, r)| (t.to_vec(), *r)));
        let mut out = Vec::new();
        for (t, r) in lines {
            out.extend(b64(&t).as_bytes());
            out.extend(format!(" {r}\n").as_bytes());
        }
        out
    }

    fn b64(t: &[u8]) -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut s = String::new();
        for c in t.chunks(3) {
            let n = (u32::from(c[0]) << 16) | (u32::from(*c.get(1).unwrap_or(&0)) << 8) | u32::from(*c.get(2).unwrap_or(&0));
            for k in 0..4 {
                if k <= c.len() {
                    s.push(A[((n >> (18 - 6 * k)) & 63) as usize] as char);
                } else {
                    s.push('=');
                }
            }
        }
        s
    }

    #[test]
    fn base64_is_strict() {
        assert_eq!(b64_decode(b"YWI="), Some(b"ab".to_vec()));
        assert_eq!(b64_decode(b"YWJj"), Some(b"abc".to_vec()));
        assert_eq!(b64_decode(b"YQ=="), Some(b"a".to_vec()));
        for bad in [&b"YQ="[..], b"YR==", b"Y===", b"YW*=", b"", b"=YWI"] {
            assert_eq!(b64_decode(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn merges_are_every_ranked_split_in_order() {
        let data = file(&[(&b"ab"[..], 256), (&b"abc"[..], 257), (&b"bc"[..], 258)]);
        let ranks = parse_ranks(&data).expect("clean");
        // "ab" = a+b; "abc" = a+bc (left rank 97) and ab+c (left rank 256); "bc" = b+c
        assert_eq!(merge_ranks(&ranks), vec![(97, 98), (97, 258), (256, 99), (98, 99)]);
    }

    #[test]
    fn unclean_files_are_left_to_python() {
        assert!(parse_ranks(&file(&[(&b"ab"[..], 257)])).is_none()); // a gap
        assert!(parse_ranks(&file(&[(&b"a"[..], 256)])).is_none()); // a token twice
        assert!(parse_ranks(b"YQ== 0\n").is_none()); // bytes missing
        let mut d = file(&[]);
        d.extend(b"\nYWI= 256\n");
        assert!(parse_ranks(&d).is_none()); // a blank line inside
    }
}
