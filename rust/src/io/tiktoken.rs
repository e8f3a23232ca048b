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

/// Strict base64 (standard alphabet, `=` padding only at the end, zero unused bits) appended to
/// `out`, or `None` (with `out` partly written).
fn b64_decode_into(s: &[u8], out: &mut Vec<u8>) -> Option<()> {
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
    let (mut acc, mut bits) = (0u32, 0u32);
    for &c in &s[..s.len() - pad] {
        acc = (acc << 6) | sextet(c)?;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // the bits left over are the padding of a canonical encoding: all zero
    (acc == 0).then_some(())
}

#[cfg(test)]
fn b64_decode(s: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    b64_decode_into(s, &mut out).map(|()| out)
}

/// The tokens of a rank file, in file order: their bytes back to back and, per token, its span
/// there and its rank.
#[derive(Debug, Clone, Default)]
pub struct Ranks {
    bytes: Vec<u8>,
    tokens: Vec<(u32, u32, u32)>,
}

impl Ranks {
    /// Number of tokens.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// (token bytes, rank) in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u32)> {
        self.tokens.iter().map(|&(s, e, r)| (&self.bytes[s as usize..e as usize], r))
    }
}

/// The tokens of a rank file with one `token rank` per line (a single space, strict base64) and
/// ranks 0..n-1 each once; `None` otherwise. Repeated tokens and missing bytes are found by
/// [`bpe_data`].
pub fn parse_ranks(data: &[u8]) -> Option<Ranks> {
    let mut out = Ranks { bytes: Vec::with_capacity(data.len()), tokens: Vec::new() };
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
        let start = u32::try_from(out.bytes.len()).ok()?;
        // Padding alone (`= 50256`, GPT-2's <|endoftext|> in Whisper's files) is the empty token:
        // tiktoken's loader (`base64.b64decode`) reads it as b"".
        if !tok.iter().all(|&c| c == b'=') {
            b64_decode_into(tok, &mut out.bytes)?;
        }
        out.tokens.push((start, u32::try_from(out.bytes.len()).ok()?, rank));
    }
    if out.tokens.is_empty() {
        return None;
    }
    let mut seen = vec![false; out.tokens.len()];
    for &(_, _, r) in &out.tokens {
        let slot = seen.get_mut(r as usize)?; // a rank >= n means a gap somewhere
        if *slot {
            return None;
        }
        *slot = true;
    }
    Some(out)
}

/// Token bytes -> rank; `None` when a token is listed twice or a single byte is missing.
fn index(ranks: &Ranks) -> Option<AHashMap<&[u8], u32>> {
    let mut index: AHashMap<&[u8], u32> = AHashMap::with_capacity(ranks.len());
    for (t, r) in ranks.iter() {
        if index.insert(t, r).is_some() {
            return None;
        }
    }
    if (0..=255u8).any(|b| !index.contains_key([b].as_slice())) {
        return None;
    }
    Some(index)
}

/// The byte-level spelling of every token (`strings[rank]`).
pub fn byte_level_strings(ranks: &Ranks) -> Vec<String> {
    let table = bytes_to_unicode();
    let mut strings = vec![String::new(); ranks.len()];
    for (t, r) in ranks.iter() {
        strings[r as usize] = t.iter().map(|&b| table[b as usize]).collect();
    }
    strings
}

/// Every split of every token into two ranked tokens, as (left rank, right rank, token rank),
/// ordered by the token's rank then the left part's rank; `None` as for [`index`].
pub fn merge_ranks(ranks: &Ranks) -> Option<Vec<(u32, u32, u32)>> {
    let index = index(ranks)?;
    let mut found: Vec<(u32, u32, u32)> = Vec::with_capacity(ranks.len() * 2);
    for (t, r) in ranks.iter() {
        for i in 1..t.len() {
            if let Some(&a) = index.get(&t[..i]) {
                if let Some(&b) = index.get(&t[i..]) {
                    found.push((r, a, b));
                }
            }
        }
    }
    found.sort_unstable();
    Some(found.into_iter().map(|(r, a, b)| (a, b, r)).collect())
}

/// The vocab and merges of the BPE model of a clean rank file (`None`: a repeated token or a
/// missing single byte).
pub fn bpe_data(ranks: &Ranks) -> Option<super::ModelData> {
    bpe_data_with_offset(ranks, 0)
}

/// [`bpe_data`] with every id `offset` above its rank (Mistral's Tekken files: the special tokens take
/// the first ids, and the rank-`r` token is id `r + offset`; the merge order is unchanged).
pub fn bpe_data_with_offset(ranks: &Ranks, offset: u32) -> Option<super::ModelData> {
    let merges: Vec<(u32, u32, u32)> = merge_ranks(ranks)?
        .into_iter()
        .map(|(a, b, r)| Some((a.checked_add(offset)?, b.checked_add(offset)?, r.checked_add(offset)?)))
        .collect::<Option<_>>()?;
    let strings = byte_level_strings(ranks);
    let mut vocab = HashMap::with_capacity_and_hasher(strings.len(), ahash::RandomState::new());
    for (r, s) in strings.into_iter().enumerate() {
        vocab.insert(s, u32::try_from(r).ok()?.checked_add(offset)?);
    }
    Some(super::ModelData::Bpe { vocab, merges: super::BpeMerges::Ids(merges) })
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
        assert_eq!(merge_ranks(&ranks).expect("no repeats"), vec![(97, 98, 256), (97, 258, 257), (256, 99, 257), (98, 99, 258)]);
    }

    #[test]
    fn unclean_files_are_left_to_python() {
        assert!(parse_ranks(&file(&[(&b"ab"[..], 257)])).is_none()); // a gap
        let twice = parse_ranks(&file(&[(&b"a"[..], 256)])).expect("ranks are fine");
        assert!(bpe_data(&twice).is_none()); // a token twice
        assert!(bpe_data(&parse_ranks(b"YQ== 0\n").expect("one rank")).is_none()); // bytes missing
        let mut d = file(&[]);
        d.extend(b"\nYWI= 256\n");
        assert!(parse_ranks(&d).is_none()); // a blank line inside
    }
}
