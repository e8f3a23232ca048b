//! A byte-level double-array trie over piece strings, used by the Viterbi encoder.
//!
//! Why: walking the char trie costs a decode of every char plus a search among a node's children;
//! here one step is an add and a compare (`slot = base[s] + byte`, valid iff `check[slot] == s`),
//! and the encoder can run straight over the UTF-8 bytes. Pieces are whole strings, so a piece
//! can only end on a char boundary and matches are the same as the char trie's.

#[derive(Clone, Copy, Debug)]
struct Slot {
    base: u32,
    /// The parent slot, or `FREE`.
    check: u32,
    /// The piece id ending here, or -1.
    value: i32,
}

const FREE: u32 = u32::MAX;

/// Free slots a node's placement tries before it goes past the end of the array.
const MAX_TRIES: u32 = 512;

/// The free slots: `find(i)` is the first free slot at or after `i` (a union-find over "next free",
/// with path halving), so the search for a node's place jumps over used runs in near O(1).
struct FreeSlots {
    /// `next[i] == i`: slot `i` is free; otherwise a slot at or before the next free one. One entry
    /// past the array's end stands for "past the end" (always free).
    next: Vec<u32>,
}

impl FreeSlots {
    fn new() -> Self {
        FreeSlots { next: vec![0] }
    }

    /// Slots `..len` exist (the new ones free).
    fn grow(&mut self, len: usize) {
        while self.next.len() <= len {
            let i = self.next.len() as u32;
            self.next.push(i);
        }
    }

    fn find(&mut self, i: u32) -> u32 {
        let mut i = i as usize;
        if i >= self.next.len() {
            return i as u32;
        }
        while self.next[i] as usize != i {
            let up = self.next[i] as usize;
            let upup = self.next.get(up).copied().unwrap_or(up as u32);
            self.next[i] = upup; // path halving
            i = up;
            if i >= self.next.len() {
                break;
            }
        }
        i as u32
    }

    fn occupy(&mut self, p: u32) {
        if let Some(x) = self.next.get_mut(p as usize) {
            *x = p + 1;
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct DoubleArray {
    slots: Vec<Slot>,
}

impl DoubleArray {
    /// Builds from `(string, id)` pairs; a repeated string keeps its first id, empty strings are
    /// skipped (the same rules as [`super::encode::Trie::new`]).
    pub fn new<'a>(items: impl Iterator<Item = (&'a str, u32)>) -> DoubleArray {
        // The keys sorted by bytes (stable: a repeated key keeps its first id). A node of the trie is
        // then a run of keys sharing a prefix, and its children the runs of the next byte, so the
        // trie needs no node objects: building one (a Vec of children per node, visited breadth
        // first) cost two cache misses per node, most of a 32k model's load.
        let mut keys: Vec<(&[u8], u32)> =
            items.filter(|(s, _)| !s.is_empty()).map(|(s, id)| (s.as_bytes(), id)).collect();
        keys.sort_by(|a, b| a.0.cmp(b.0));
        keys.dedup_by(|later, earlier| later.0 == earlier.0);
        // Nodes are placed depth first. The free slots are found with a union-find over "next free
        // slot" ([`FreeSlots`]); a BTreeSet of them took ~30% of the load.
        let empty = Slot { base: 0, check: FREE, value: -1 };
        let mut slots = vec![Slot { base: 0, check: FREE - 1, value: -1 }];
        let mut free = FreeSlots::new();
        free.occupy(0);
        // (slot, keys[lo..hi], depth): the keys below the node at `slot`, whose first `depth` bytes
        // lead there; none of them ends at the node (that one is the node's value)
        let mut stack = vec![(0u32, 0usize, keys.len(), 0usize)];
        let mut kids: Vec<(u8, usize, usize)> = Vec::new();
        while let Some((slot, lo, hi, depth)) = stack.pop() {
            kids.clear();
            let mut i = lo;
            while i < hi {
                let byte = keys[i].0[depth];
                let start = i;
                while i < hi && keys[i].0[depth] == byte {
                    i += 1;
                }
                kids.push((byte, start, i));
            }
            if kids.is_empty() {
                continue;
            }
            let c0 = kids[0].0 as u32;
            // candidate bases: each free slot at or after c0 + 1 taken as the first child's place,
            // then past the end of the array (always fits). A node that fits nowhere among the first
            // MAX_TRIES free slots goes past the end: holes left in the dense front rarely fit a node
            // with several children, and trying them all made the build quadratic.
            let mut base = None;
            let mut t = free.find(c0 + 1);
            let mut tries = 0;
            while (t as usize) < slots.len() && tries < MAX_TRIES {
                let b = t - c0;
                if kids.iter().all(|&(c, _, _)| {
                    let p = (b + c as u32) as usize;
                    p >= slots.len() || slots[p].check == FREE
                }) {
                    base = Some(b);
                    break;
                }
                tries += 1;
                t = free.find(t + 1);
            }
            let b = base.unwrap_or((slots.len() as u32).max(c0 + 1) - c0);
            // keep every `base + byte` in bounds so lookups need no length test beyond `get`
            let need = b as usize + 256;
            if slots.len() < need {
                slots.resize(need, empty);
                free.grow(need);
            }
            slots[slot as usize].base = b;
            for &(c, start, end) in kids.iter() {
                let p = b + c as u32;
                free.occupy(p);
                // a key ending at the child sorts first among the keys below it
                let ends = keys[start].0.len() == depth + 1;
                let value = if ends { keys[start].1 as i32 } else { -1 };
                slots[p as usize] = Slot { base: 0, check: slot, value };
                stack.push((p, start + usize::from(ends), end, depth + 1));
            }
        }
        DoubleArray { slots }
    }

    /// Calls `f(id, end)` for every piece that starts at byte `start` of `bytes`, shortest first;
    /// `end` is the exclusive byte end.
    #[inline(always)]
    pub fn common_prefix(&self, bytes: &[u8], start: usize, mut f: impl FnMut(u32, usize)) {
        let mut s = 0usize;
        let mut i = start;
        while i < bytes.len() {
            let t = self.slots[s].base as usize + bytes[i] as usize;
            match self.slots.get(t) {
                Some(x) if x.check as usize == s => {
                    s = t;
                    i += 1;
                    if x.value >= 0 {
                        f(x.value as u32, i);
                    }
                }
                _ => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_pieces_match_like_the_char_trie() {
        let mut words: Vec<String> = Vec::new();
        for a in ["", "▁", "x", "é", "日"] {
            for b in 0..40u32 {
                for c in ["", "s", "ing", "本"] {
                    words.push(format!("{a}{}{c}", char::from_u32(0x61 + b % 26).unwrap_or('a')));
                }
            }
        }
        let items: Vec<(&str, u32)> = words.iter().enumerate().map(|(i, w)| (w.as_str(), i as u32)).collect();
        let da = DoubleArray::new(items.iter().copied());
        let trie = super::super::encode::Trie::new(items.iter().copied());
        for text in ["▁xing本", "ésé日a", "abcing", "日本▁ss"] {
            let chars: Vec<char> = text.chars().collect();
            for (ci, (bs, _)) in text.char_indices().enumerate() {
                let mut a = Vec::new();
                da.common_prefix(text.as_bytes(), bs, |id, end| a.push((id, end)));
                let mut b = Vec::new();
                trie.common_prefix(&chars[ci..], |id, n| {
                    b.push((id, bs + chars[ci..ci + n].iter().map(|c| c.len_utf8()).sum::<usize>()))
                });
                assert_eq!(a, b, "{text:?} at {bs}");
            }
        }
    }

    #[test]
    fn matches_like_the_char_trie() {
        let words = ["a", "ab", "abc", "b", "▁th", "▁", "é", "éa", "ab"];
        let items: Vec<(&str, u32)> = words.iter().enumerate().map(|(i, w)| (*w, i as u32)).collect();
        let da = DoubleArray::new(items.iter().copied());
        let trie = super::super::encode::Trie::new(items.iter().copied());
        for text in ["abcd", "ab", "▁the", "éab", "x", "", "b▁"] {
            let chars: Vec<char> = text.chars().collect();
            let mut starts = vec![0];
            starts.extend(text.char_indices().skip(1).map(|x| x.0));
            for (ci, &bs) in starts.iter().enumerate().take(chars.len()) {
                let mut a = Vec::new();
                da.common_prefix(text.as_bytes(), bs, |id, end| a.push((id, end)));
                let mut b = Vec::new();
                trie.common_prefix(&chars[ci..], |id, n| {
                    b.push((id, bs + chars[ci..ci + n].iter().map(|c| c.len_utf8()).sum::<usize>()))
                });
                assert_eq!(a, b, "{text:?} at {bs}");
            }
        }
    }
}

#[cfg(test)]
mod timing {
    /// `SUBWORD_MODEL=x.model cargo test --release -- --ignored --nocapture darray_timing`
    #[test]
    #[ignore]
    fn darray_timing() {
        let Ok(path) = std::env::var("SUBWORD_MODEL") else { return };
        let Ok(data) = std::fs::read(path) else { return };
        let Ok(parts) = crate::spm::proto::parse_model(&data) else { return };
        let items: Vec<(&str, u32)> =
            parts.pieces.iter().enumerate().filter(|(_, p)| p.2 == 1).map(|(i, p)| (p.0.as_str(), i as u32)).collect();
        for _ in 0..5 {
            let t = std::time::Instant::now();
            let da = super::DoubleArray::new(items.iter().copied());
            eprintln!("darray {:?} ({} slots)", t.elapsed(), da.slots.len());
        }
        let t = std::time::Instant::now();
        let m = crate::unigram::UnigramModel::new(
            parts.pieces.iter().map(|p| (p.0.clone(), f64::from(p.1))).collect(),
            None,
            Some(0),
            false,
            crate::unigram::Compat::Spm,
        );
        eprintln!("model {:?} {}", t.elapsed(), m.is_ok());
    }
}
