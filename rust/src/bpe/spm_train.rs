//! SentencePiece-compatible BPE training (`compat="spm"`; sentencepiece 0.2.3 `bpe_model_trainer.cc`).
//!
//! Rules (SPEC-tokenizers §5, TL;DR 2):
//! - the input is SentencePiece's words (see [`crate::spm::count_words`]) with their counts;
//! - a symbol is a character or a *tree* `(left symbol, right symbol)`, not a string;
//! - each step takes the active symbol with the highest frequency, then fewer characters, then
//!   the smaller UTF-8 string (then the older symbol, for two trees spelling the same string);
//! - a symbol whose string was already emitted is dropped without merging;
//! - pairs that fail `IsValidSentencePiece` or touch `▅` never become symbols;
//! - zero-frequency symbols stay candidates, so training continues into them until the vocab is
//!   full; the score of the i-th piece is `-i`; the required characters follow, in SentencePiece's
//!   order (count desc, code point asc), continuing the scores.
//!
//! Performance notes
//! - Frequencies are recomputed lazily from position lists, exactly when SentencePiece does it
//!   (`needs_recomputation`), and a max-heap holds (freq, -chars, string) entries; stale entries
//!   are skipped when popped. Strings in heap entries are `Rc<str>` shared with the symbol table.
//! - Invalid pairs are remembered (as `INVALID`) so validity is checked once per pair.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::rc::Rc;

use ahash::AHashMap;

use crate::spm::{is_valid_piece, SpmSpec, UNK_CHAR};

const NONE: u32 = u32::MAX;
const INVALID: u32 = u32::MAX - 1;

struct Sym {
    left: u32,
    right: u32,
    text: Rc<str>,
    chars: Box<[char]>,
    freq: u64,
    /// (word, left index, right index)
    positions: Vec<(u32, u32, u32)>,
    needs_recomputation: bool,
    active: bool,
    pending: bool,
    is_unk: bool,
}

struct Entry {
    freq: u64,
    nchars: u32,
    text: Rc<str>,
    sym: u32,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    /// Greater = better: higher freq, fewer chars, smaller bytes, older symbol.
    fn cmp(&self, o: &Self) -> Ordering {
        self.freq
            .cmp(&o.freq)
            .then_with(|| o.nchars.cmp(&self.nchars))
            .then_with(|| o.text.as_bytes().cmp(self.text.as_bytes()))
            .then_with(|| o.sym.cmp(&self.sym))
    }
}

struct Trainer<'a> {
    spec: &'a SpmSpec,
    syms: Vec<Sym>,
    char_syms: AHashMap<char, u32>,
    pair_cache: AHashMap<(u32, u32), u32>,
    words: Vec<Vec<u32>>,
    counts: Vec<u64>,
    heap: BinaryHeap<Entry>,
    pending: Vec<u32>,
}

impl<'a> Trainer<'a> {
    fn char_symbol(&mut self, c: char) -> u32 {
        if let Some(&id) = self.char_syms.get(&c) {
            return id;
        }
        let id = self.syms.len() as u32;
        let mut buf = [0u8; 4];
        self.syms.push(Sym {
            left: NONE,
            right: NONE,
            text: Rc::from(&*c.encode_utf8(&mut buf)),
            chars: Box::new([c]),
            freq: 0,
            positions: Vec::new(),
            needs_recomputation: false,
            active: false,
            pending: false,
            is_unk: c == UNK_CHAR,
        });
        self.char_syms.insert(c, id);
        id
    }

    /// The pair symbol for `(l, r)`, created on first use; `None` if the pair cannot be a piece.
    fn pair_symbol(&mut self, l: u32, r: u32, create: bool) -> Option<u32> {
        if self.syms[l as usize].is_unk || self.syms[r as usize].is_unk {
            return None;
        }
        match self.pair_cache.get(&(l, r)) {
            Some(&INVALID) => return None,
            Some(&id) => return Some(id),
            None if !create => return None,
            None => {}
        }
        let chars: Vec<char> =
            self.syms[l as usize].chars.iter().chain(self.syms[r as usize].chars.iter()).copied().collect();
        if !is_valid_piece(&chars, self.spec) {
            self.pair_cache.insert((l, r), INVALID);
            return None;
        }
        let id = self.syms.len() as u32;
        let text: String = chars.iter().collect();
        self.syms.push(Sym {
            left: l,
            right: r,
            text: Rc::from(text.as_str()),
            chars: chars.into_boxed_slice(),
            freq: 0,
            positions: Vec::new(),
            needs_recomputation: true,
            active: true,
            pending: false,
            is_unk: false,
        });
        self.pair_cache.insert((l, r), id);
        Some(id)
    }

    fn add_new_pair(&mut self, w: usize, l: usize, r: usize) {
        let (a, b) = (self.words[w][l], self.words[w][r]);
        if let Some(s) = self.pair_symbol(a, b, true) {
            let sym = &mut self.syms[s as usize];
            sym.positions.push((w as u32, l as u32, r as u32));
            if !sym.pending {
                sym.pending = true;
                self.pending.push(s);
            }
        }
    }

    fn reset_freq(&mut self, w: usize, l: usize, r: usize, best: u32) {
        let (a, b) = (self.words[w][l], self.words[w][r]);
        if let Some(s) = self.pair_symbol(a, b, false) {
            if s != best {
                self.syms[s as usize].needs_recomputation = true;
            }
        }
    }

    fn compute_freq(&mut self, s: u32) {
        let sym = &mut self.syms[s as usize];
        if !sym.needs_recomputation {
            return;
        }
        let (left, right) = (sym.left, sym.right);
        let words = &self.words;
        let counts = &self.counts;
        let mut freq = 0u64;
        let mut positions = std::mem::take(&mut sym.positions);
        positions.sort_unstable();
        positions.dedup();
        positions.retain(|&(w, l, r)| {
            let ok = words[w as usize][l as usize] == left && words[w as usize][r as usize] == right;
            if ok {
                freq += counts[w as usize];
            }
            ok
        });
        sym.positions = positions;
        sym.freq = freq;
        sym.needs_recomputation = false;
    }

    fn push(&mut self, s: u32) {
        let sym = &self.syms[s as usize];
        self.heap.push(Entry { freq: sym.freq, nchars: sym.chars.len() as u32, text: sym.text.clone(), sym: s });
    }

    fn flush_pending(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        for &s in &pending {
            self.syms[s as usize].pending = false;
            if self.syms[s as usize].active {
                self.compute_freq(s);
                self.push(s);
            }
        }
        self.pending = pending;
        self.pending.clear();
    }

    fn next_index(&self, w: usize, i: usize) -> Option<usize> {
        (i + 1..self.words[w].len()).find(|&j| self.words[w][j] != NONE)
    }

    fn prev_index(&self, w: usize, i: usize) -> Option<usize> {
        (0..i).rev().find(|&j| self.words[w][j] != NONE)
    }

    fn accept(&mut self, best: u32) {
        let mut positions = std::mem::take(&mut self.syms[best as usize].positions);
        positions.sort_unstable();
        positions.dedup();
        for &(w, l, r) in &positions {
            let (w, l, r) = (w as usize, l as usize, r as usize);
            if self.words[w][l] == NONE {
                continue; // left slot consumed by the previous (overlapping) occurrence
            }
            let next = self.next_index(w, r);
            let prev = self.prev_index(w, l);
            if let Some(p) = prev {
                self.reset_freq(w, p, l, best);
            }
            if let Some(n) = next {
                self.reset_freq(w, r, n, best);
            }
            self.words[w][l] = best;
            self.words[w][r] = NONE;
            if let Some(p) = prev {
                self.add_new_pair(w, p, l);
            }
            if let Some(n) = next {
                self.add_new_pair(w, l, n);
            }
        }
        self.deactivate(best);
    }

    fn deactivate(&mut self, s: u32) {
        let (l, r) = (self.syms[s as usize].left, self.syms[s as usize].right);
        if self.pair_cache.get(&(l, r)) == Some(&s) {
            self.pair_cache.remove(&(l, r));
        }
        self.syms[s as usize].active = false;
    }
}

/// The trained pieces: merged pieces with scores `-i`, then the required characters.
#[derive(Clone, Debug, PartialEq)]
pub struct SpmBpeOut {
    pub pieces: Vec<(String, f32)>,
    /// How many merged pieces there are (the rest are characters).
    pub merged: usize,
}

/// Trains on `words` (SentencePiece's word list, counts > 0). `target` is the number of merged
/// pieces wanted (`vocab_size - reserved - required chars`); `required_chars` in SentencePiece's
/// order. `progress(done, target)` may return `Err` to stop.
pub fn train_spm_bpe(
    words: &[(String, u64)],
    required_chars: &[(char, u64)],
    target: usize,
    spec: &SpmSpec,
    progress: &mut dyn FnMut(usize, usize) -> Result<(), String>,
) -> Result<SpmBpeOut, String> {
    let mut t = Trainer {
        spec,
        syms: Vec::new(),
        char_syms: AHashMap::new(),
        pair_cache: AHashMap::new(),
        words: Vec::with_capacity(words.len()),
        counts: Vec::with_capacity(words.len()),
        heap: BinaryHeap::new(),
        pending: Vec::new(),
    };
    for (w, c) in words {
        let ids: Vec<u32> = w.chars().map(|ch| t.char_symbol(ch)).collect();
        t.words.push(ids);
        t.counts.push(*c);
    }
    for w in 0..t.words.len() {
        for i in 1..t.words[w].len() {
            t.add_new_pair(w, i - 1, i);
        }
    }
    t.flush_pending();
    progress(0, target)?;

    let mut seen: ahash::AHashSet<Rc<str>> = ahash::AHashSet::new();
    let mut pieces: Vec<(String, f32)> = Vec::with_capacity(target + required_chars.len());
    while pieces.len() < target {
        let mut best = None;
        while let Some(e) = t.heap.pop() {
            let sym = &t.syms[e.sym as usize];
            if !sym.active || e.freq != sym.freq {
                continue;
            }
            if sym.needs_recomputation {
                t.compute_freq(e.sym);
                t.push(e.sym);
                continue;
            }
            best = Some(e.sym);
            break;
        }
        let Some(best) = best else { break };
        let text = t.syms[best as usize].text.clone();
        if !seen.insert(text.clone()) {
            t.deactivate(best);
            continue;
        }
        pieces.push((text.to_string(), -(pieces.len() as f32)));
        t.accept(best);
        t.flush_pending();
        if pieces.len().is_multiple_of(256) {
            progress(pieces.len(), target)?;
        }
    }
    let merged = pieces.len();
    progress(merged, target)?;
    for (c, _) in required_chars {
        pieces.push((c.to_string(), -(pieces.len() as f32)));
    }
    Ok(SpmBpeOut { pieces, merged })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spm::{count_words, prepare, SpmSpec};

    fn run(lines: &[&str], vocab: usize, f: impl Fn(&mut SpmSpec)) -> Vec<String> {
        let mut spec =
            SpmSpec { vocab_size: vocab, normalization: crate::spm::Normalization::Identity, ..Default::default() };
        spec.character_coverage = 1.0;
        spec.hard_vocab_limit = false;
        f(&mut spec);
        let c = prepare(lines, &spec).unwrap();
        let words = count_words(&c, &spec);
        let target = vocab - c.meta.len() - c.required_chars.len();
        train_spm_bpe(&words, &c.required_chars, target, &spec, &mut |_, _| Ok(()))
            .unwrap()
            .pieces
            .into_iter()
            .map(|p| p.0)
            .collect()
    }

    #[test]
    fn e3_ties_and_zero_frequency_tail() {
        // SPEC E3: zz aa aaaa zzzz aaa zzz, then the chars z a
        let p = run(&["zzzz", "zzzz", "aaaa", "aaaa", "zz"], 11, |s| s.add_dummy_prefix = false);
        assert_eq!(p, ["zz", "aa", "aaaa", "zzzz", "aaa", "zzz", "z", "a"]);
    }

    #[test]
    fn e4_fewer_chars_wins_ties() {
        let p = run(&["abab", "abc", "abc", "zy", "zy"], 11, |s| s.add_dummy_prefix = false);
        assert_eq!(&p[..3], ["ab", "zy", "abc"]);
    }
}
