//! One chunk of lines, encoded by every tokenizer and reduced to per-line counts.
//!
//! The numbers are those of `subword/compare/collect.py` (the reference), per line:
//! characters, UTF-8 bytes, words (segments whose type is a word), words per script,
//! whitespace-split words; per tokenizer: tokens, continued words (2+ tokens of non-zero width
//! overlap the word), characters under the UNK token, byte tokens, the lossless round trip
//! (`decode(encode(x)) == x`, special tokens kept), tokens of words per script, internal boundaries
//! (keyed by the non-whitespace characters before them, line edges excluded); per pair: shared
//! boundaries; per segment type: occurrences, and the tokens attributed to it (a token belongs to
//! the segment holding its last character). Offsets are in characters, converted from the
//! encoders' byte offsets the way `Encoding.offsets` converts them.

use std::time::Instant;

use rayon::prelude::*;

use super::roundtrip::{PieceDecode, RoundTrip, SpmDecode};
use super::segment::{is_space, ChunkSegments, Segment};
use crate::encoding::{CharOffsets, Encoding};
use crate::tokenizer::sentencepiece::SpmPipeline;
use crate::tokenizer::Tokenizer;

/// What the reduction needs of a tokenizer: its text's own tokens, and the decode of the round trip.
pub trait Encoder: Sync {
    /// Encodes without post-processor specials (padding and truncation are the caller's to switch off).
    fn encode_texts(&self, texts: &[&str]) -> Result<Vec<Encoding>, String>;
    /// Decodes with special tokens kept.
    fn decode_ids(&self, ids: &[u32]) -> String;
    /// The precomputed decode of the losslessness check, where the decoder allows one.
    fn round_trip(&self) -> Option<RoundTrip>;
}

impl Encoder for Tokenizer {
    fn encode_texts(&self, texts: &[&str]) -> Result<Vec<Encoding>, String> {
        self.encode_batch(texts, false)
    }

    fn decode_ids(&self, ids: &[u32]) -> String {
        self.decode(ids, false)
    }

    fn round_trip(&self) -> Option<RoundTrip> {
        PieceDecode::of(self).map(RoundTrip::Pieces)
    }
}

impl Encoder for SpmPipeline {
    fn encode_texts(&self, texts: &[&str]) -> Result<Vec<Encoding>, String> {
        self.encode_batch(texts)
    }

    fn decode_ids(&self, ids: &[u32]) -> String {
        self.decode(ids)
    }

    fn round_trip(&self) -> Option<RoundTrip> {
        Some(RoundTrip::Spm(SpmDecode::of(self)))
    }
}

thread_local! {
    /// The scratch buffer of the losslessness check, one per thread.
    static DECODE_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `decode(ids) == line` (special tokens kept): the precomputed pieces where they decide, else the decoder.
pub fn round_trips(encoder: &dyn Encoder, fast: Option<&RoundTrip>, ids: &[u32], line: &str) -> bool {
    let verdict = fast.and_then(|rt| DECODE_BUF.with(|b| rt.check(ids, line, &mut b.borrow_mut())));
    verdict.unwrap_or_else(|| encoder.decode_ids(ids) == line)
}

/// One tokenizer and the per-id facts the counts need.
pub struct TokInfo<'a> {
    pub encoder: &'a dyn Encoder,
    pub unk: Option<u32>,
    /// Per id: the token is a byte token (`VocabTable.byte_token`).
    pub byte_token: &'a [bool],
    /// The encoder's [`Encoder::round_trip`], built once per tokenizer.
    pub round_trip: Option<&'a RoundTrip>,
}

/// The per-segment-type facts (`words.py`: `is_word`, the script index of `classify`).
pub struct TypeClasses<'a> {
    pub word: &'a [bool],
    pub script: &'a [u8],
    pub scripts: usize,
}

/// One tokenizer's counts over a chunk (one entry per line unless said otherwise).
#[derive(Default)]
pub struct TokStats {
    pub tokens: Vec<i64>,
    pub continued: Vec<i64>,
    pub unk_chars: Vec<i64>,
    pub byte_tokens: Vec<i64>,
    pub lossless: Vec<u8>,
    pub boundaries: Vec<i64>,
    /// `scripts x lines`, script-major.
    pub script_tokens: Vec<i64>,
    /// Per segment type (all types known after this chunk): tokens attributed to it.
    pub type_tokens: Vec<i64>,
    /// All ids of the chunk, line after line.
    pub ids: Vec<u32>,
    pub encode_seconds: f64,
}

/// A chunk's counts.
pub struct ChunkStats {
    pub chars: Vec<i64>,
    pub bytes: Vec<i64>,
    pub words: Vec<i64>,
    pub ws_words: Vec<i64>,
    /// `scripts x lines`, script-major.
    pub script_words: Vec<i64>,
    /// Per segment type: occurrences in this chunk (line feeds between lines included).
    pub type_count: Vec<i64>,
    pub tokenizers: Vec<TokStats>,
    /// Per pair `(a, b)`, `a < b` in order: shared boundaries per line.
    pub shared: Vec<Vec<i64>>,
}

/// `f` over the lines, in parallel where this process may use rayon's pool.
pub fn par_map_lines<T: Send, F: Fn(&str) -> T + Sync>(lines: &[&str], f: F) -> Vec<T> {
    if lines.len() < 2 || !crate::parallel::parallel_allowed() {
        return lines.iter().map(|l| f(l)).collect();
    }
    lines.par_iter().with_min_len(64).map(|l| f(l)).collect()
}

/// What one line gives, before the chunk's arrays are assembled.
struct LineOut {
    chars: i64,
    words: i64,
    ws_words: i64,
    script_words: Vec<(u8, i64)>,
    toks: Vec<LineTok>,
    shared: Vec<i64>,
}

struct LineTok {
    continued: i64,
    unk_chars: i64,
    byte_tokens: i64,
    lossless: bool,
    boundaries: i64,
    script_tokens: Vec<(u8, i64)>,
    /// The segment type of each token (`u32::MAX`: none, see `fallback`).
    types: Vec<u32>,
}

/// Adds one to script `s` of a short sparse count list (a line's words are of one or two scripts).
fn bump(counts: &mut Vec<(u8, i64)>, s: u8) {
    match counts.iter_mut().find(|(x, _)| *x == s) {
        Some((_, c)) => *c += 1,
        None => counts.push((s, 1)),
    }
}

/// Sorted unique keys in both sorted unique slices.
fn shared_count(a: &[i64], b: &[i64]) -> i64 {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

#[allow(clippy::too_many_arguments)]
fn reduce_line(
    line: &str,
    segs: &[Segment],
    fallback: Option<u32>,
    encs: &[&Encoding],
    toks: &[TokInfo<'_>],
    classes: &TypeClasses<'_>,
) -> LineOut {
    SCRATCH.with(|s| reduce_line_in(line, segs, fallback, encs, toks, classes, &mut s.borrow_mut()))
}

/// Buffers of [`reduce_line`] reused from line to line on each thread (five vectors per tokenizer
/// and line were allocated and freed before).
#[derive(Default)]
struct Scratch {
    ns: Vec<i64>,
    offsets: Vec<(i64, i64)>,
    starts: Vec<i64>,
    ends: Vec<i64>,
    keys_of: Vec<Vec<i64>>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

#[allow(clippy::too_many_arguments)]
fn reduce_line_in(
    line: &str,
    segs: &[Segment],
    fallback: Option<u32>,
    encs: &[&Encoding],
    toks: &[TokInfo<'_>],
    classes: &TypeClasses<'_>,
    scratch: &mut Scratch,
) -> LineOut {
    let Scratch { ns, offsets, starts, ends, keys_of } = scratch;
    let conv = CharOffsets::new(line);
    // ns[p]: non-whitespace characters before char offset p.
    ns.clear();
    ns.push(0);
    let (mut prev_space, mut ws_words, mut nonspace) = (true, 0i64, 0i64);
    for c in line.chars() {
        let space = is_space(c);
        if !space && prev_space {
            ws_words += 1;
        }
        prev_space = space;
        nonspace += i64::from(!space);
        ns.push(nonspace);
    }
    let nchars = (ns.len() - 1) as i64;
    let mut script_words = Vec::new();
    let mut words = 0i64;
    for s in segs {
        if classes.word[s.ty as usize] {
            words += 1;
            bump(&mut script_words, classes.script[s.ty as usize]);
        }
    }
    let ns_at = |p: i64| ns[p.clamp(0, nchars) as usize];
    keys_of.resize_with(encs.len(), Vec::new);
    let mut out_toks = Vec::with_capacity(encs.len());
    for (ti, (enc, tok)) in encs.iter().zip(toks).enumerate() {
        offsets.clear();
        offsets.extend(enc.offsets.iter().map(|&o| {
            let (a, b) = conv.convert(o);
            (a as i64, b as i64)
        }));
        let mut unk_chars = 0i64;
        let mut byte_tokens = 0i64;
        let top = tok.byte_token.len().saturating_sub(1);
        for (&id, &(s, e)) in enc.ids.iter().zip(offsets.iter()) {
            if tok.unk == Some(id) {
                unk_chars += e - s;
            }
            if tok.byte_token.get((id as usize).min(top)).copied().unwrap_or(false) {
                byte_tokens += 1;
            }
        }
        // Attribution: the segment holding the token's last character.
        let mut types = Vec::with_capacity(offsets.len());
        let mut script_tokens = Vec::new();
        let hi = (nchars - 1).max(0);
        let mut at = 0usize;
        for &(s, e) in offsets.iter() {
            let ty = if segs.is_empty() {
                fallback.unwrap_or(u32::MAX)
            } else {
                let p = s.max(e - 1).clamp(0, hi);
                // Tokens come in order, so the segment is usually the one before or the next few:
                // walk from it, else search (the same `partition_point(start <= p) - 1`).
                at = if i64::from(segs[at].start) <= p {
                    let mut k = at;
                    while k + 1 < segs.len() && k < at + 4 && i64::from(segs[k + 1].start) <= p {
                        k += 1;
                    }
                    if k + 1 < segs.len() && i64::from(segs[k + 1].start) <= p {
                        segs.partition_point(|g| i64::from(g.start) <= p).saturating_sub(1)
                    } else {
                        k
                    }
                } else {
                    segs.partition_point(|g| i64::from(g.start) <= p).saturating_sub(1)
                };
                segs[at].ty
            };
            if ty != u32::MAX && classes.word[ty as usize] {
                bump(&mut script_tokens, classes.script[ty as usize]);
            }
            types.push(ty);
        }
        // Continued words: tokens of non-zero width that overlap the word, 2 or more.
        starts.clear();
        starts.extend(offsets.iter().filter(|(s, e)| e > s).map(|&(s, _)| s));
        ends.clear();
        ends.extend(offsets.iter().filter(|(s, e)| e > s).map(|&(_, e)| e));
        // Offsets are nearly always in order already: sort only when they are not.
        if !starts.is_sorted() {
            starts.sort_unstable();
        }
        if !ends.is_sorted() {
            ends.sort_unstable();
        }
        let mut continued = 0i64;
        for g in segs.iter().filter(|g| classes.word[g.ty as usize]) {
            let (ws, we) = (i64::from(g.start), i64::from(g.end));
            let overlapping = starts.partition_point(|&x| x < we) as i64 - ends.partition_point(|&x| x <= ws) as i64;
            if overlapping >= 2 {
                continued += 1;
            }
        }
        // Internal boundaries, whitespace transparent.
        let keys = &mut keys_of[ti];
        keys.clear();
        for &(s, e) in offsets.iter() {
            for k in [ns_at(s), ns_at(e)] {
                if k > 0 && k < nonspace {
                    keys.push(k);
                }
            }
        }
        if !keys.is_sorted() {
            keys.sort_unstable();
        }
        keys.dedup();
        let lossless = round_trips(tok.encoder, tok.round_trip, &enc.ids, line);
        out_toks.push(LineTok {
            continued,
            unk_chars,
            byte_tokens,
            lossless,
            boundaries: keys.len() as i64,
            script_tokens,
            types,
        });
    }
    let mut shared = Vec::new();
    for a in 0..encs.len() {
        for b in a + 1..encs.len() {
            shared.push(shared_count(&keys_of[a], &keys_of[b]));
        }
    }
    LineOut { chars: nchars, words, ws_words, script_words, toks: out_toks, shared }
}

/// Encodes `lines` with every tokenizer and reduces them (see the module docs).
///
/// `segs` are the lines' segments (from [`super::segment::segment_chunk`]) and `ntypes` the number
/// of segment types known after segmenting them; `classes` covers all of those.
pub fn reduce_chunk(
    lines: &[&str],
    segs: &ChunkSegments,
    ntypes: usize,
    classes: &TypeClasses<'_>,
    toks: &[TokInfo<'_>],
) -> Result<ChunkStats, String> {
    if classes.word.len() < ntypes || classes.script.len() < ntypes {
        return Err(format!("{ntypes} segment types but classes for {}", classes.word.len().min(classes.script.len())));
    }
    if classes.script.iter().any(|&s| s as usize >= classes.scripts) {
        return Err(format!("a script index is not below {}", classes.scripts));
    }
    let m = lines.len();
    let mut encodings = Vec::with_capacity(toks.len());
    let mut seconds = Vec::with_capacity(toks.len());
    for tok in toks {
        let t0 = Instant::now();
        let e = tok.encoder.encode_texts(lines)?;
        seconds.push(t0.elapsed().as_secs_f64());
        if e.len() != m {
            return Err(format!("{} encodings for {m} lines", e.len()));
        }
        encodings.push(e);
    }
    // The segment that position line_start falls in, for an empty line's tokens: the line feed
    // after it, else the segment before it (the previous line's line feed).
    let fallback: Vec<Option<u32>> = (0..m)
        .map(|j| {
            segs.separator[j].or_else(|| {
                if j == 0 {
                    return None;
                }
                segs.separator[j - 1].or_else(|| segs.lines[j - 1].last().map(|g| g.ty))
            })
        })
        .collect();
    let index: Vec<usize> = (0..m).collect();
    let work = |j: usize| {
        let encs: Vec<&Encoding> = encodings.iter().map(|e| &e[j]).collect();
        reduce_line(lines[j], &segs.lines[j], fallback[j], &encs, toks, classes)
    };
    let outs: Vec<LineOut> = if m < 2 || !crate::parallel::parallel_allowed() {
        index.into_iter().map(work).collect()
    } else {
        index.into_par_iter().with_min_len(32).map(work).collect()
    };

    let s = classes.scripts;
    let mut stats = ChunkStats {
        chars: Vec::with_capacity(m),
        bytes: lines.iter().map(|l| l.len() as i64).collect(),
        words: Vec::with_capacity(m),
        ws_words: Vec::with_capacity(m),
        script_words: vec![0; s * m],
        type_count: vec![0; ntypes],
        tokenizers: (0..toks.len())
            .map(|_| TokStats { script_tokens: vec![0; s * m], type_tokens: vec![0; ntypes], ..Default::default() })
            .collect(),
        shared: vec![Vec::with_capacity(m); toks.len() * toks.len().saturating_sub(1) / 2],
    };
    for (j, g) in segs.lines.iter().enumerate() {
        for seg in g {
            stats.type_count[seg.ty as usize] += 1;
        }
        if let Some(t) = segs.separator[j] {
            stats.type_count[t as usize] += 1;
        }
    }
    for (j, out) in outs.iter().enumerate() {
        stats.chars.push(out.chars);
        stats.words.push(out.words);
        stats.ws_words.push(out.ws_words);
        for &(sc, c) in &out.script_words {
            stats.script_words[sc as usize * m + j] += c;
        }
        for (p, &c) in out.shared.iter().enumerate() {
            stats.shared[p].push(c);
        }
    }
    // Each tokenizer's columns are gathered on a thread of its own (read from the line outputs in
    // place), and the chunk's encodings and line outputs are freed in parallel: done serially, the
    // gathering and freeing cost about a third of the encoding.
    let gather = |(ti, t): (usize, &mut TokStats)| {
        t.encode_seconds = seconds[ti];
        t.ids = encodings[ti].iter().flat_map(|e| e.ids.iter().copied()).collect();
        for (j, out) in outs.iter().enumerate() {
            let lt = &out.toks[ti];
            t.tokens.push(lt.types.len() as i64);
            t.continued.push(lt.continued);
            t.unk_chars.push(lt.unk_chars);
            t.byte_tokens.push(lt.byte_tokens);
            t.lossless.push(u8::from(lt.lossless));
            t.boundaries.push(lt.boundaries);
            for &(sc, c) in &lt.script_tokens {
                t.script_tokens[sc as usize * m + j] += c;
            }
            for &ty in &lt.types {
                if ty != u32::MAX {
                    t.type_tokens[ty as usize] += 1;
                }
            }
        }
    };
    if crate::parallel::parallel_allowed() {
        stats.tokenizers.par_iter_mut().enumerate().for_each(gather);
        for e in encodings {
            e.into_par_iter().with_min_len(256).for_each(drop);
        }
        outs.into_par_iter().with_min_len(256).for_each(drop);
    } else {
        stats.tokenizers.iter_mut().enumerate().for_each(gather);
    }
    Ok(stats)
}
