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

const NONE: u32 = u32::MAX;

/// The free slots in increasing order, as a doubly linked list over slot numbers (`NONE` ends it;
/// `next`/`prev` of a used slot are stale and never read).
struct FreeList {
    head: u32,
    tail: u32,
    next: Vec<u32>,
    prev: Vec<u32>,
    /// Whether the slot is in the list (removing a used slot is a no-op, as BTreeSet::remove).
    listed: Vec<bool>,
}

impl FreeList {
    fn new() -> Self {
        FreeList { head: NONE, tail: NONE, next: Vec::new(), prev: Vec::new(), listed: Vec::new() }
    }

    /// Adds slot `p`, which must be the largest slot so far.
    fn push(&mut self, p: u32) {
        let at = p as usize;
        if self.next.len() <= at {
            self.next.resize(at + 1, NONE);
            self.prev.resize(at + 1, NONE);
            self.listed.resize(at + 1, false);
        }
        self.next[at] = NONE;
        self.prev[at] = self.tail;
        self.listed[at] = true;
        if self.tail == NONE {
            self.head = p;
        } else {
            self.next[self.tail as usize] = p;
        }
        self.tail = p;
    }

    fn remove(&mut self, p: u32) {
        let at = p as usize;
        if !self.listed.get(at).copied().unwrap_or(false) {
            return;
        }
        self.listed[at] = false;
        let (n, pr) = (self.next[at], self.prev[at]);
        if pr == NONE {
            self.head = n;
        } else {
            self.next[pr as usize] = n;
        }
        if n == NONE {
            self.tail = pr;
        } else {
            self.prev[n as usize] = pr;
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
        // 1) a plain byte trie: children per node (sorted later), terminal id per node
        let mut children: Vec<Vec<(u8, u32)>> = vec![Vec::new()];
        let mut term: Vec<i32> = vec![-1];
        for (s, id) in items {
            if s.is_empty() {
                continue;
            }
            let mut node = 0u32;
            for &b in s.as_bytes() {
                let found = children[node as usize].iter().find(|x| x.0 == b).map(|x| x.1);
                node = match found {
                    Some(n) => n,
                    None => {
                        let n = children.len() as u32;
                        children.push(Vec::new());
                        term.push(-1);
                        children[node as usize].push((b, n));
                        n
                    }
                };
            }
            if term[node as usize] < 0 {
                term[node as usize] = id as i32;
            }
        }
        // 2) place nodes breadth first. The unused slots form a list in increasing order (`next` /
        // `prev` links), so a search walks the free slots only and a slot leaves the list in O(1);
        // a BTreeSet did the same at ~60% of the whole load of a 32k model.
        let empty = Slot { base: 0, check: FREE, value: -1 };
        let mut slots = vec![Slot { base: 0, check: FREE - 1, value: term[0] }];
        let mut free = FreeList::new();
        let mut queue = std::collections::VecDeque::from([(0u32, 0u32)]);
        while let Some((node, slot)) = queue.pop_front() {
            let kids = &mut children[node as usize];
            if kids.is_empty() {
                continue;
            }
            kids.sort_unstable();
            let c0 = kids[0].0 as u32;
            // candidate bases: each free slot at or after c0 + 1 taken as the first child's place,
            // then past the end of the array (always fits)
            let mut base = None;
            let mut t = free.head;
            while t != NONE {
                if t > c0 {
                    let b = t - c0;
                    if kids.iter().all(|&(c, _)| {
                        let p = (b + c as u32) as usize;
                        p >= slots.len() || slots[p].check == FREE
                    }) {
                        base = Some(b);
                        break;
                    }
                }
                t = free.next[t as usize];
            }
            let b = base.unwrap_or((slots.len() as u32).max(c0 + 1) - c0);
            // keep every `base + byte` in bounds so lookups need no length test beyond `get`
            let need = b as usize + 256;
            while slots.len() < need {
                free.push(slots.len() as u32);
                slots.push(empty);
            }
            slots[slot as usize].base = b;
            for &(c, child) in kids.iter() {
                let p = b + c as u32;
                free.remove(p);
                slots[p as usize] = Slot { base: 0, check: slot, value: term[child as usize] };
                queue.push_back((child, p));
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
