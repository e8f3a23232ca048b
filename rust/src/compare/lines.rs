//! One chunk of lines, encoded by every tokenizer and reduced to per-line counts: the one
//! implementation of `subword compare`'s pass (the readable reference is in the tests,
//! `tests/_compare_reference.py`).
//!
//! Per line: characters, UTF-8 bytes, words (segments whose type is a word), words per script,
//! whitespace-split words; per tokenizer: tokens, continued words (2+ tokens of non-zero width
//! overlap the word), characters under the UNK token, byte tokens, the lossless round trip
//! (`decode(encode(x)) == x`, special tokens kept), tokens of words per script, internal boundaries
//! (keyed by the non-whitespace characters before them, line edges excluded); per pair: shared
//! boundaries; per segment type: occurrences, and the tokens attributed to it (a token belongs to
//! the segment holding its last character); per block of `block_lines` consecutive lines and
//! tokenizer: each token id that occurs in the block and how often (the sparse type counts the
//! block bootstrap resamples). Offsets are in characters, converted from the encoders' byte offsets
//! the way `Encoding.offsets` converts them.
//!
//! Performance notes: the chunk is encoded in blocks of `BLOCK_LINES` lines, each line's
//! `Encoding` copied into its block's flat ids and offsets and freed at once (the per-line
//! allocations of the chunk's encodings, kept and freed together, cost as much as the reduction);
//! each block is then reduced on its own (tokenizer after tokenizer, into flat per-block columns,
//! no allocation per line), and the blocks' columns are concatenated.

use std::time::Instant;

use rayon::prelude::*;

use super::roundtrip::{PieceDecode, RoundTrip, SpmDecode};
use super::segment::{is_space, ChunkSegments, Segment};
use crate::encoding::Encoding;
use crate::tokenizer::sentencepiece::SpmPipeline;
use crate::tokenizer::Tokenizer;

/// One tokenizer's encodings of a block of lines: ids and byte offsets back to back.
#[derive(Default, Debug)]
pub struct Encoded {
    pub ids: Vec<u32>,
    /// Byte offsets into the token's line, as `Encoding.offsets`.
    pub offsets: Vec<(usize, usize)>,
    /// Per line, one past its last token in `ids`.
    pub ends: Vec<usize>,
}

impl Encoded {
    /// Appends one line's encoding.
    pub fn push(&mut self, e: &Encoding) {
        self.ids.extend_from_slice(&e.ids);
        self.offsets.extend_from_slice(&e.offsets);
        self.ends.push(self.ids.len());
    }

    /// Line `j`'s ids and offsets.
    fn line(&self, j: usize) -> (&[u32], &[(usize, usize)]) {
        let a = if j == 0 { 0 } else { self.ends[j - 1] };
        let b = self.ends[j];
        (&self.ids[a..b], &self.offsets[a..b])
    }
}

/// `lines` in blocks of `block` lines, each encoded by `encode` (one `Encoding` per line, copied
/// out and freed at once: the chunk's encodings never exist all at the same time), in parallel
/// where this process may use rayon's pool.
fn encode_in_blocks<F>(lines: &[&str], block: usize, encode: F) -> Result<Vec<Encoded>, String>
where
    F: Fn(&str) -> Result<Encoding, String> + Sync,
{
    let run = |part: &[&str]| -> Result<Encoded, String> {
        let mut out = Encoded { ends: Vec::with_capacity(part.len()), ..Default::default() };
        let bytes: usize = part.iter().map(|l| l.len()).sum();
        out.ids.reserve(bytes / 3 + part.len());
        out.offsets.reserve(bytes / 3 + part.len());
        for line in part {
            out.push(&encode(line)?);
        }
        Ok(out)
    };
    if lines.len() > block && crate::parallel::parallel_allowed() {
        lines.par_chunks(block).map(run).collect()
    } else {
        lines.chunks(block).map(run).collect()
    }
}

/// What the reduction needs of a tokenizer: its text's own tokens, and the decode of the round trip.
pub trait Encoder: Sync {
    /// Encodes without post-processor specials (truncation is the caller's to switch off), in blocks
    /// of `block` consecutive lines: the ids and offsets of `encode_batch`, exactly.
    fn encode_blocks(&self, lines: &[&str], block: usize) -> Result<Vec<Encoded>, String>;
    /// Decodes with special tokens kept.
    fn decode_ids(&self, ids: &[u32]) -> String;
    /// The precomputed decode of the losslessness check, where the decoder allows one.
    fn round_trip(&self) -> Option<RoundTrip>;
}

impl Encoder for Tokenizer {
    fn encode_blocks(&self, lines: &[&str], block: usize) -> Result<Vec<Encoded>, String> {
        if self.padding().is_some() {
            // Batch padding depends on every line of the batch: encode the batch, then cut it.
            let all = self.encode_batch(lines, false)?;
            return Ok(all
                .chunks(block.max(1))
                .map(|part| {
                    let mut out = Encoded::default();
                    part.iter().for_each(|e| out.push(e));
                    out
                })
                .collect());
        }
        encode_in_blocks(lines, block, |t| self.encode(t, false))
    }

    fn decode_ids(&self, ids: &[u32]) -> String {
        self.decode(ids, false)
    }

    fn round_trip(&self) -> Option<RoundTrip> {
        PieceDecode::of(self).map(RoundTrip::Pieces)
    }
}

impl Encoder for SpmPipeline {
    fn encode_blocks(&self, lines: &[&str], block: usize) -> Result<Vec<Encoded>, String> {
        encode_in_blocks(lines, block, |t| self.encode(t))
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
    /// Per script with tokens of its words (in script order): its row, per line.
    pub script_tokens: Vec<(u8, Vec<i64>)>,
    /// Per segment type (all types known after this chunk): tokens attributed to it.
    pub type_tokens: Vec<i64>,
    /// The token ids of each block of `block_lines` lines, counted.
    pub block_types: BlockTypes,
    pub encode_seconds: f64,
}

/// Sparse counts of token ids per block of lines: block `j` holds `ids[ends[j - 1]..ends[j]]`
/// (in order of first occurrence) with their `counts` (a CSR matrix, blocks x ids).
#[derive(Default, Debug, PartialEq)]
pub struct BlockTypes {
    pub ends: Vec<u64>,
    pub ids: Vec<u32>,
    pub counts: Vec<u32>,
}

/// [`BlockTypes`] of `ids` (a chunk's tokens, line after line; line `j` ends at `line_end[j]`) in
/// blocks of `block_lines` lines.
pub fn block_types(ids: &[u32], line_end: &[usize], block_lines: usize) -> BlockTypes {
    let bound = ids.iter().max().map_or(0, |&m| m as usize + 1);
    let mut count = vec![0u32; bound];
    let mut out = BlockTypes::default();
    let mut from = 0usize;
    for ends in line_end.chunks(block_lines.max(1)) {
        let to = ends[ends.len() - 1];
        let first = out.ids.len();
        for &id in &ids[from..to] {
            if count[id as usize] == 0 {
                out.ids.push(id);
            }
            count[id as usize] += 1;
        }
        for &id in &out.ids[first..] {
            out.counts.push(std::mem::take(&mut count[id as usize]));
        }
        out.ends.push(out.ids.len() as u64);
        from = to;
    }
    out
}

/// A chunk's counts.
pub struct ChunkStats {
    pub chars: Vec<i64>,
    pub bytes: Vec<i64>,
    pub words: Vec<i64>,
    pub ws_words: Vec<i64>,
    /// Per script with words (in script order): its row, per line.
    pub script_words: Vec<(u8, Vec<i64>)>,
    /// Per segment type: occurrences in this chunk (line feeds between lines included).
    pub type_count: Vec<i64>,
    pub tokenizers: Vec<TokStats>,
    /// Per pair `(a, b)`, `a < b` in order: shared boundaries per line.
    pub shared: Vec<Vec<i64>>,
}

/// Lines per task of the parallel encoding and reduction (a chunk has some 20k).
const BLOCK_LINES: usize = 256;

/// What one block of lines gives, before the chunk's arrays are assembled.
#[derive(Default)]
struct BlockOut {
    chars: Vec<i64>,
    words: Vec<i64>,
    ws_words: Vec<i64>,
    /// `(line in the chunk, script, count)`, the non-zero counts only.
    script_words: Vec<(u32, u8, i64)>,
    toks: Vec<BlockTok>,
    /// Per pair, per line.
    shared: Vec<Vec<i64>>,
}

/// One tokenizer's part of a [`BlockOut`] (per line unless said otherwise).
#[derive(Default)]
struct BlockTok {
    tokens: Vec<i64>,
    continued: Vec<i64>,
    unk_chars: Vec<i64>,
    byte_tokens: Vec<i64>,
    lossless: Vec<u8>,
    boundaries: Vec<i64>,
    /// `(line in the chunk, script, count)`, the non-zero counts only.
    script_tokens: Vec<(u32, u8, i64)>,
    /// The segment type of each token of the block (`u32::MAX`: none, see `fallback`).
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

/// The byte -> char table of a non-ASCII line, as `CharOffsets` builds it (in a reused buffer
/// here): per byte the index of the char holding it, then the number of chars.
fn char_table(line: &str, table: &mut Vec<u32>) {
    table.clear();
    let mut n = 0u32;
    for ch in line.chars() {
        table.extend(std::iter::repeat_n(n, ch.len_utf8()));
        n += 1;
    }
    table.push(n);
}

/// A token's byte offsets in chars, as `CharOffsets::convert` gives them: the start's char, one past
/// the char holding the byte before the end (positions at or past the end: the number of chars).
#[inline]
fn char_span(table: &[u32], (s, e): (usize, usize)) -> (i64, i64) {
    let at = |i: usize| i64::from(table[i.min(table.len() - 1)]);
    (at(s), if e == 0 { 0 } else { at(e - 1) + 1 })
}

/// Buffers of [`reduce_block`] reused from block to block on each thread.
#[derive(Default)]
struct Scratch {
    /// Per line of the block, back to back: `ns[p]`, the non-whitespace characters before char
    /// offset `p` (`0..=chars`), from `ns_start[line]`.
    ns: Vec<i64>,
    ns_start: Vec<usize>,
    /// Per non-ASCII line, back to back: its byte -> char table (see [`char_table`]), from
    /// `table_start[line]` (`usize::MAX` for an ASCII line).
    tables: Vec<u32>,
    table_start: Vec<usize>,
    /// Per line, back to back: its word segments, `(start, end)` in chars, up to `words_end[line]`.
    word_spans: Vec<(i64, i64)>,
    words_end: Vec<usize>,
    /// Per tokenizer, per line back to back: the sorted unique boundary keys, up to `keys_end`.
    keys: Vec<Vec<i64>>,
    keys_end: Vec<Vec<usize>>,
    starts: Vec<i64>,
    ends: Vec<i64>,
    scripts: Vec<(u8, i64)>,
    table: Vec<u32>,
}

impl Scratch {
    /// The facts of lines `range` that every tokenizer reads, into the buffers: per line, `ns`, the
    /// byte -> char table of a non-ASCII line, the spans of its words; and the block's own columns
    /// (characters, words, whitespace-split words, words per script) into `out`.
    fn line_facts(&mut self, c: &Chunk<'_>, range: std::ops::Range<usize>, out: &mut BlockOut) {
        let Scratch { ns, ns_start, tables, table_start, word_spans, words_end, scripts, table, .. } = self;
        ns.clear();
        ns_start.clear();
        tables.clear();
        table_start.clear();
        word_spans.clear();
        words_end.clear();
        for j in range {
            let line = c.lines[j];
            // ns[p]: non-whitespace characters before char offset p.
            let from = ns.len();
            ns_start.push(from);
            ns.push(0);
            let (mut prev_space, mut ws_words, mut nonspace) = (true, 0i64, 0i64);
            let mut step = |space: bool| {
                if !space && prev_space {
                    ws_words += 1;
                }
                prev_space = space;
                nonspace += i64::from(!space);
                ns.push(nonspace);
            };
            if line.is_ascii() {
                line.bytes().for_each(|x| step(is_space(char::from(x))));
                table_start.push(usize::MAX);
            } else {
                line.chars().for_each(|x| step(is_space(x)));
                char_table(line, table);
                table_start.push(tables.len());
                tables.extend_from_slice(table);
            }
            scripts.clear();
            let before = word_spans.len();
            for g in c.segs.line(j) {
                let sc = c.word_script[g.ty as usize];
                if sc != NOT_WORD {
                    word_spans.push((i64::from(g.start), i64::from(g.end)));
                    bump(scripts, sc);
                }
            }
            words_end.push(word_spans.len());
            out.chars.push((ns.len() - from - 1) as i64);
            out.words.push((word_spans.len() - before) as i64);
            out.ws_words.push(ws_words);
            out.script_words.extend(scripts.iter().map(|&(sc, n)| (j as u32, sc, n)));
        }
    }
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// The chunk's inputs of [`reduce_block`].
struct Chunk<'a> {
    lines: &'a [&'a str],
    segs: &'a ChunkSegments,
    /// Per line, the type of an empty line's tokens (see [`reduce_chunk`]).
    fallback: &'a [Option<u32>],
    /// Per tokenizer, its blocks.
    encoded: &'a [Vec<Encoded>],
    toks: &'a [TokInfo<'a>],
    /// Per segment type: its script index when it is a word, else [`NOT_WORD`].
    word_script: &'a [u8],
    /// Per tokenizer: whether any id is a byte token.
    has_byte_tokens: &'a [bool],
}

/// [`Chunk::word_script`] of a type that is not a word (script indices are below 255).
const NOT_WORD: u8 = u8::MAX;

/// Reduces block `b` (lines `b * BLOCK_LINES..`) of the chunk: the lines' own counts first, then
/// tokenizer after tokenizer over all the block's lines (each one's tables, the round trip's pieces
/// above all, stay in cache through the block), then the shared boundaries of each pair.
fn reduce_block(c: &Chunk<'_>, b: usize, scratch: &mut Scratch) -> BlockOut {
    let first = b * BLOCK_LINES;
    let last = (first + BLOCK_LINES).min(c.lines.len());
    let n = last - first;
    let k = c.toks.len();
    let mut out = BlockOut {
        chars: Vec::with_capacity(n),
        words: Vec::with_capacity(n),
        ws_words: Vec::with_capacity(n),
        toks: (0..k)
            .map(|ti| {
                let col = || Vec::with_capacity(n);
                BlockTok {
                    tokens: col(),
                    continued: col(),
                    unk_chars: col(),
                    byte_tokens: col(),
                    lossless: Vec::with_capacity(n),
                    boundaries: col(),
                    script_tokens: Vec::with_capacity(n),
                    types: Vec::with_capacity(c.encoded[ti][b].ids.len()),
                }
            })
            .collect(),
        shared: vec![Vec::with_capacity(n); k * k.saturating_sub(1) / 2],
        ..Default::default()
    };
    scratch.line_facts(c, first..last, &mut out);
    let Scratch { ns, ns_start, tables, table_start, word_spans, words_end, keys, keys_end, starts, ends, scripts, .. } =
        scratch;
    keys.resize_with(k, Vec::new);
    keys_end.resize_with(k, Vec::new);
    for (ti, (blocks, tok)) in c.encoded.iter().zip(c.toks).enumerate() {
        let enc = &blocks[b];
        let bt = &mut out.toks[ti];
        let keys = &mut keys[ti];
        let keys_end = &mut keys_end[ti];
        keys.clear();
        keys_end.clear();
        let top = tok.byte_token.len().saturating_sub(1);
        for j in first..last {
            let jb = j - first;
            let line = c.lines[j];
            let segs = c.segs.line(j);
            let ns = &ns[ns_start[jb]..if jb + 1 < n { ns_start[jb + 1] } else { ns.len() }];
            let nchars = (ns.len() - 1) as i64;
            let nonspace = ns[ns.len() - 1];
            let ns_at = |p: i64| ns[p.clamp(0, nchars) as usize];
            let hi = (nchars - 1).max(0);
            let table = match table_start[jb] {
                usize::MAX => None,
                at => Some(&tables[at..at + line.len() + 1]),
            };
            let line_words = &word_spans[if jb == 0 { 0 } else { words_end[jb - 1] }..words_end[jb]];
            let (ids, offs) = enc.line(jb);
            let (mut unk_chars, mut byte_tokens) = (0i64, 0i64);
            scripts.clear();
            starts.clear();
            ends.clear();
            let keys_from = keys.len();
            let mut at = 0usize;
            // The previous token's end: a start there gives the same key again (dropped by the dedup).
            let mut prev_end = i64::MIN;
            // One pass over the tokens: offsets in chars, UNK characters, byte tokens, the segment
            // each token is attributed to, the spans of the continued-word count, boundary keys.
            for (&id, &o) in ids.iter().zip(offs) {
                let (s, e) = match table {
                    None => (o.0 as i64, o.1 as i64),
                    Some(t) => char_span(t, o),
                };
                if tok.unk == Some(id) {
                    unk_chars += e - s;
                }
                if c.has_byte_tokens[ti] && tok.byte_token.get((id as usize).min(top)).copied().unwrap_or(false) {
                    byte_tokens += 1;
                }
                // Attribution: the segment holding the token's last character.
                let ty = if segs.is_empty() {
                    c.fallback[j].unwrap_or(u32::MAX)
                } else {
                    at = segment_at(segs, at, s.max(e - 1).clamp(0, hi));
                    segs[at].ty
                };
                if let Some(&sc) = c.word_script.get(ty as usize) {
                    if sc != NOT_WORD {
                        bump(scripts, sc);
                    }
                }
                bt.types.push(ty);
                if e > s {
                    starts.push(s);
                    ends.push(e);
                }
                // Internal boundaries, whitespace transparent.
                if s != prev_end {
                    let key = ns_at(s);
                    if key > 0 && key < nonspace {
                        keys.push(key);
                    }
                }
                let key = ns_at(e);
                if key > 0 && key < nonspace {
                    keys.push(key);
                }
                prev_end = e;
            }
            bt.script_tokens.extend(scripts.iter().map(|&(sc, n)| (j as u32, sc, n)));
            let continued = continued_words(starts, ends, line_words);
            let w = sort_unique_tail(keys, keys_from);
            keys_end.push(w);
            bt.tokens.push(ids.len() as i64);
            bt.continued.push(continued);
            bt.unk_chars.push(unk_chars);
            bt.byte_tokens.push(byte_tokens);
            bt.lossless.push(u8::from(round_trips(tok.encoder, tok.round_trip, ids, line)));
            bt.boundaries.push((w - keys_from) as i64);
        }
    }
    // Shared boundaries, pair after pair: a merge of the two lines' sorted keys.
    let line_keys = |ti: usize, jb: usize| -> &[i64] {
        let from = if jb == 0 { 0 } else { keys_end[ti][jb - 1] };
        &keys[ti][from..keys_end[ti][jb]]
    };
    let pairs = (0..k).flat_map(|x| (x + 1..k).map(move |y| (x, y)));
    for ((x, y), shared) in pairs.zip(&mut out.shared) {
        shared.extend((0..n).map(|jb| shared_count(line_keys(x, jb), line_keys(y, jb))));
    }
    out
}

/// The index of the segment holding char `p` (the last whose start is at or before it), searched from
/// `at`: tokens come in order, so it is usually `at` or one of the next few (walked), else searched.
#[inline]
fn segment_at(segs: &[Segment], at: usize, p: i64) -> usize {
    let starts_by = |k: usize| i64::from(segs[k].start) <= p;
    if starts_by(at) {
        let mut k = at;
        while k + 1 < segs.len() && k < at + 4 && starts_by(k + 1) {
            k += 1;
        }
        if !(k + 1 < segs.len() && starts_by(k + 1)) {
            return k;
        }
    }
    segs.partition_point(|g| i64::from(g.start) <= p).saturating_sub(1)
}

/// Words (char spans, in order) overlapped by 2 or more tokens of non-zero width (their `starts` and
/// `ends`, sorted here when they are not already). Overlapping = #(starts < word end) - #(ends <= word
/// start); the words come in order, so both counts are walks over the sorted starts and ends.
fn continued_words(starts: &mut [i64], ends: &mut [i64], words: &[(i64, i64)]) -> i64 {
    if !starts.is_sorted() {
        starts.sort_unstable();
    }
    if !ends.is_sorted() {
        ends.sort_unstable();
    }
    let (mut below_end, mut ended, mut continued) = (0usize, 0usize, 0i64);
    for &(ws, we) in words {
        while below_end < starts.len() && starts[below_end] < we {
            below_end += 1;
        }
        while ended < ends.len() && ends[ended] <= ws {
            ended += 1;
        }
        if below_end as i64 - ended as i64 >= 2 {
            continued += 1;
        }
    }
    continued
}

/// Sorts `keys[from..]` and drops its repeats in place; returns the new length of `keys`.
fn sort_unique_tail(keys: &mut Vec<i64>, from: usize) -> usize {
    if !keys[from..].is_sorted() {
        keys[from..].sort_unstable();
    }
    let mut w = from;
    for r in from..keys.len() {
        if w == from || keys[r] != keys[w - 1] {
            keys[w] = keys[r];
            w += 1;
        }
    }
    keys.truncate(w);
    w
}

/// The rows of the scripts that occur in sparse `(line, script, count)` entries, in script order.
fn script_rows<'a>(entries: impl Iterator<Item = &'a (u32, u8, i64)> + Clone, m: usize) -> Vec<(u8, Vec<i64>)> {
    let mut row_of = [usize::MAX; 256];
    let mut present: Vec<u8> = Vec::new();
    for &(_, sc, _) in entries.clone() {
        if row_of[sc as usize] == usize::MAX {
            row_of[sc as usize] = 0;
            present.push(sc);
        }
    }
    present.sort_unstable();
    let mut rows: Vec<(u8, Vec<i64>)> = present.iter().map(|&sc| (sc, vec![0; m])).collect();
    for (r, &sc) in present.iter().enumerate() {
        row_of[sc as usize] = r;
    }
    for &(j, sc, n) in entries {
        rows[row_of[sc as usize]].1[j as usize] += n;
    }
    rows
}

/// Encodes `lines` with every tokenizer and reduces them (see the module docs).
///
/// `segs` are the lines' segments (from [`super::segment::segment_chunk`]) and `ntypes` the number
/// of segment types known after segmenting them; `classes` covers all of those. The chunk starts a
/// block of `block_lines` lines (the type counts are per block).
pub fn reduce_chunk(
    lines: &[&str],
    segs: &ChunkSegments,
    ntypes: usize,
    classes: &TypeClasses<'_>,
    toks: &[TokInfo<'_>],
    block_lines: usize,
) -> Result<ChunkStats, String> {
    if block_lines == 0 {
        return Err("block_lines must be at least 1".to_string());
    }
    if classes.word.len() < ntypes || classes.script.len() < ntypes {
        return Err(format!("{ntypes} segment types but classes for {}", classes.word.len().min(classes.script.len())));
    }
    if classes.script.iter().any(|&s| s as usize >= classes.scripts) {
        return Err(format!("a script index is not below {}", classes.scripts));
    }
    let m = lines.len();
    if segs.line_start.len() != m + 1 || segs.separator.len() != m {
        return Err(format!("segments of {} lines for {m} lines", segs.separator.len()));
    }
    let nblocks = m.div_ceil(BLOCK_LINES);
    let mut encoded = Vec::with_capacity(toks.len());
    let mut seconds = Vec::with_capacity(toks.len());
    for tok in toks {
        let t0 = Instant::now();
        let e = tok.encoder.encode_blocks(lines, BLOCK_LINES)?;
        seconds.push(t0.elapsed().as_secs_f64());
        let count: usize = e.iter().map(|b| b.ends.len()).sum();
        if e.len() != nblocks || count != m || e.iter().take(nblocks.saturating_sub(1)).any(|b| b.ends.len() != BLOCK_LINES) {
            return Err(format!("{count} encodings in {} blocks for {m} lines", e.len()));
        }
        encoded.push(e);
    }
    // The segment that position line_start falls in, for an empty line's tokens: the line feed
    // after it, else (the input's last line) the segment before it, the previous line's line feed.
    let fallback: Vec<Option<u32>> = (0..m)
        .map(|j| {
            segs.separator[j].or_else(|| {
                if j == 0 {
                    return segs.before;
                }
                segs.separator[j - 1].or_else(|| segs.line(j - 1).last().map(|g| g.ty))
            })
        })
        .collect();
    let word_script: Vec<u8> =
        (0..ntypes).map(|t| if classes.word[t] { classes.script[t] } else { NOT_WORD }).collect();
    let has_byte_tokens: Vec<bool> = toks.iter().map(|t| t.byte_token.iter().any(|&b| b)).collect();
    let chunk = Chunk {
        lines,
        segs,
        fallback: &fallback,
        encoded: &encoded,
        toks,
        word_script: &word_script,
        has_byte_tokens: &has_byte_tokens,
    };
    let work = |b: usize| SCRATCH.with(|s| reduce_block(&chunk, b, &mut s.borrow_mut()));
    let parallel = nblocks > 1 && crate::parallel::parallel_allowed();
    let outs: Vec<BlockOut> =
        if parallel { (0..nblocks).into_par_iter().map(work).collect() } else { (0..nblocks).map(work).collect() };

    let cat = |f: &dyn Fn(&BlockOut) -> &[i64]| -> Vec<i64> {
        let mut v = Vec::with_capacity(m);
        outs.iter().for_each(|o| v.extend_from_slice(f(o)));
        v
    };
    let mut stats = ChunkStats {
        chars: cat(&|o| &o.chars),
        bytes: lines.iter().map(|l| l.len() as i64).collect(),
        words: cat(&|o| &o.words),
        ws_words: cat(&|o| &o.ws_words),
        script_words: script_rows(outs.iter().flat_map(|o| o.script_words.iter()), m),
        type_count: vec![0; ntypes],
        tokenizers: Vec::new(),
        shared: (0..toks.len() * toks.len().saturating_sub(1) / 2).map(|p| cat(&|o| &o.shared[p])).collect(),
    };
    for g in &segs.segs {
        stats.type_count[g.ty as usize] += 1;
    }
    for t in segs.separator.iter().flatten() {
        stats.type_count[*t as usize] += 1;
    }
    // Each tokenizer's columns are gathered on a thread of its own.
    let gather = |ti: usize| -> TokStats {
        let col = |f: &dyn Fn(&BlockTok) -> &[i64]| -> Vec<i64> {
            let mut v = Vec::with_capacity(m);
            outs.iter().for_each(|o| v.extend_from_slice(f(&o.toks[ti])));
            v
        };
        let mut t = TokStats {
            tokens: col(&|t| &t.tokens),
            continued: col(&|t| &t.continued),
            unk_chars: col(&|t| &t.unk_chars),
            byte_tokens: col(&|t| &t.byte_tokens),
            lossless: outs.iter().flat_map(|o| o.toks[ti].lossless.iter().copied()).collect(),
            boundaries: col(&|t| &t.boundaries),
            script_tokens: script_rows(outs.iter().flat_map(|o| o.toks[ti].script_tokens.iter()), m),
            type_tokens: vec![0; ntypes],
            block_types: BlockTypes::default(),
            encode_seconds: seconds[ti],
        };
        let mut ids = Vec::with_capacity(encoded[ti].iter().map(|e| e.ids.len()).sum());
        let mut line_end = Vec::with_capacity(m);
        for e in &encoded[ti] {
            line_end.extend(e.ends.iter().map(|&x| x + ids.len()));
            ids.extend_from_slice(&e.ids);
        }
        t.block_types = block_types(&ids, &line_end, block_lines);
        for o in &outs {
            let bt = &o.toks[ti];
            for &ty in &bt.types {
                if ty != u32::MAX {
                    t.type_tokens[ty as usize] += 1;
                }
            }
        }
        t
    };
    stats.tokenizers = if parallel {
        (0..toks.len()).into_par_iter().map(gather).collect()
    } else {
        (0..toks.len()).map(gather).collect()
    };
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::CharOffsets;

    #[test]
    fn block_types_count_each_id_per_block() {
        // Lines: [5 5 1] [] [1] | [7] [5 5]: blocks of 3 lines, then the last of 2.
        let ids = [5, 5, 1, 1, 7, 5, 5];
        let line_end = [3, 3, 4, 5, 7];
        let b = block_types(&ids, &line_end, 3);
        assert_eq!(b, BlockTypes { ends: vec![2, 4], ids: vec![5, 1, 7, 5], counts: vec![2, 2, 1, 2] });
        assert_eq!(block_types(&[], &[0, 0], 1), BlockTypes { ends: vec![0, 0], ..Default::default() });
    }

    #[test]
    fn char_spans_are_those_of_char_offsets() {
        let mut table = Vec::new();
        for line in ["aé", "naïve café", "日本語 x", "\u{1F600}\u{1F3FB}é", "e\u{301}", "ab"] {
            char_table(line, &mut table);
            let conv = CharOffsets::new(line);
            for s in 0..=line.len() + 2 {
                for e in 0..=line.len() + 2 {
                    let (a, b) = conv.convert((s, e));
                    if line.is_ascii() {
                        assert_eq!((a, b), (s, e));
                    } else {
                        assert_eq!(char_span(&table, (s, e)), (a as i64, b as i64), "{line:?} {s} {e}");
                    }
                }
            }
        }
    }
}
