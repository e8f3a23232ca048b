//! The losslessness check `decode(encode(x)) == x` of `subword compare`, without the generic decoder.
//!
//! Performance notes: the generic decode builds a `String` per token (and per decoder stage) for
//! every line; over a 20 MB corpus that was about 0.28 CPU-s per MB per tokenizer, as much as the
//! encoding itself. Here each id's decoded piece is computed once per tokenizer, by the decoder's own
//! code (`Decoder::decode_chain` on that one token, at the first position and at a later one), and a
//! line's verdict is its pieces joined into a reused buffer and compared with the line.
//!
//! Which decoders that covers, exactly (the tests compare every verdict with `decode(ids) == line`):
//! - no decoder (tokens joined by spaces); `ByteLevel` (bytes, then lossy UTF-8);
//! - a sequence of stages that map each token on its own, depending only on whether it is the first
//!   (`WordPiece`, `Metaspace`, `Replace`, `Strip`), then optionally `ByteFallback` (runs of `<0xXX>`
//!   pieces merged), `Fuse`, and `Strip` stages applied to the fused text (Llama's layout);
//! - sentencepiece's own decode ([`SpmPipeline`]: control pieces vanish, the unknown surface, byte
//!   runs, the dummy-prefix space dropped while nothing has been written).
//!
//! Anything else (`BPEDecoder`, `ByteLevel` inside a sequence, ...) and any line the fast path cannot
//! decide (an id with no token, a byte-level line whose text holds U+FFFD) return `None`: the caller
//! then runs the full decoder.

use crate::decode::{byte_level_bytes, byte_token, strip_token, Decoder};
use crate::spm::{PieceType, WS};
use crate::tokenizer::sentencepiece::{utf8_bytewise_lossy, SpmPipeline};
use crate::tokenizer::Tokenizer;

/// Each id's piece, back to back (`start[id]..start[id + 1]`), and its byte when it is a `<0xXX>`
/// token that a `ByteFallback` stage merges (-1 otherwise).
///
/// `short[id]` holds the piece itself when it has at most [`SHORT`] bytes (length, then the bytes),
/// else [`LONG`], or [`NO_TOKEN`] for an id with no token: the check reads one 16-byte entry per
/// token instead of a flag, two offsets and the bytes elsewhere (the tables of a 100k vocabulary
/// do not fit in a core's cache, so each of those was a miss).
#[derive(Debug, Default)]
struct Pieces {
    data: Vec<u8>,
    start: Vec<u32>,
    byte: Vec<i16>,
    short: Vec<[u8; 16]>,
}

/// What [`Pieces::lands`] found.
enum Landing {
    /// The piece is there; its length.
    Fits(usize),
    Differs,
    NoToken,
}

/// The longest piece kept in [`Pieces::short`].
const SHORT: usize = 15;
/// [`Pieces::short`] marker: the piece is in `data` only.
const LONG: u8 = 255;
/// [`Pieces::short`] marker: the id has no token.
const NO_TOKEN: u8 = 254;

impl Pieces {
    fn push(&mut self, piece: &[u8], byte: Option<u8>) {
        if self.start.is_empty() {
            self.start.push(0);
        }
        self.data.extend_from_slice(piece);
        self.start.push(self.data.len() as u32);
        self.byte.push(byte.map_or(-1, i16::from));
        let mut e = [LONG; 16];
        if piece.len() <= SHORT {
            e[0] = piece.len() as u8;
            e[1..=piece.len()].copy_from_slice(piece);
        }
        self.short.push(e);
    }

    /// An id with no token (its piece is empty).
    fn push_no_token(&mut self) {
        self.push(b"", None);
        if let Some(e) = self.short.last_mut() {
            e[0] = NO_TOKEN;
        }
    }

    #[inline]
    fn get(&self, id: usize) -> &[u8] {
        match self.short[id][0] {
            n if n as usize <= SHORT => &self.short[id][1..=n as usize],
            _ => &self.data[self.start[id] as usize..self.start[id + 1] as usize],
        }
    }

    /// Whether the piece of `id` is what `line` holds at byte `at`: its length, or why not. A short
    /// piece is compared as one 16-byte word (masked to its length) where the line has 16 bytes from
    /// `at`: no loop, no branch on the piece's length.
    #[inline]
    fn lands(&self, id: usize, line: &[u8], at: usize) -> Landing {
        let Some(e) = self.short.get(id) else { return Landing::NoToken };
        let n = e[0] as usize;
        if n <= SHORT {
            if let Some(there) = line.get(at..at + 16) {
                let mut w = [0u8; 16];
                w.copy_from_slice(there);
                let mask = (1u128 << (8 * n)) - 1; // n <= 15: the shift stays below 128
                let same = (u128::from_le_bytes(w) ^ (u128::from_le_bytes(*e) >> 8)) & mask == 0;
                return if same { Landing::Fits(n) } else { Landing::Differs };
            }
        } else if e[0] == NO_TOKEN {
            return Landing::NoToken;
        }
        let piece = self.get(id);
        if lands(line, at, piece) {
            Landing::Fits(piece.len())
        } else {
            Landing::Differs
        }
    }
}

/// The precomputed decode of one HF-pipeline tokenizer.
#[derive(Debug)]
pub struct PieceDecode {
    /// Per id: it has a token (`decode` drops the others, shifting the first position).
    known: Vec<bool>,
    first: Pieces,
    later: Pieces,
    /// `ByteLevel`: the joined bytes are read as lossy UTF-8.
    lossy: bool,
    /// `ByteFallback`: runs of byte tokens are merged (U+FFFD per byte when not valid UTF-8).
    merge_bytes: bool,
    /// `Strip` stages after `Fuse`: `(content, start, stop)` applied to the whole text in order.
    strips: Vec<(char, usize, usize)>,
}

/// The decoder's stages as one list (nested sequences flattened).
fn stages(d: &Decoder, out: &mut Vec<Decoder>) {
    match d {
        Decoder::Sequence(v) => v.iter().for_each(|x| stages(x, out)),
        other => out.push(other.clone()),
    }
}

/// Whether a stage maps each token on its own, depending only on whether it is the first.
fn per_token(d: &Decoder) -> bool {
    matches!(d, Decoder::WordPiece { .. } | Decoder::Metaspace(_) | Decoder::Replace { .. } | Decoder::Strip { .. })
}

impl PieceDecode {
    /// The fast decode of `tok`, or `None` for a decoder it does not cover.
    pub fn of(tok: &Tokenizer) -> Option<PieceDecode> {
        let mut all = Vec::new();
        let (lossy, join_spaces) = match tok.decoder() {
            None => (false, true),
            Some(Decoder::ByteLevel) => (true, false),
            Some(d) => {
                stages(d, &mut all);
                (false, false)
            }
        };
        // all = per-token stages, [ByteFallback], [Fuse, Strip*]
        let lead = all.iter().take_while(|d| per_token(d)).count();
        let mut rest = &all[lead..];
        let merge_bytes = matches!(rest.first(), Some(Decoder::ByteFallback));
        if merge_bytes {
            rest = &rest[1..];
        }
        let mut strips = Vec::new();
        if let Some(Decoder::Fuse) = rest.first() {
            for d in &rest[1..] {
                match d {
                    Decoder::Strip { content, start, stop } => strips.push((*content, *start, *stop)),
                    _ => return None,
                }
            }
        } else if !rest.is_empty() {
            return None;
        }
        let chain = &all[..lead];
        let run = |tokens: Vec<String>| -> Vec<String> {
            let mut cur = tokens;
            for d in chain {
                cur = d.decode_chain(cur);
            }
            cur
        };
        let n = tok.id_bound();
        let mut out = PieceDecode {
            known: Vec::with_capacity(n),
            first: Pieces::default(),
            later: Pieces::default(),
            lossy,
            merge_bytes,
            strips,
        };
        let mut bytes = Vec::new();
        for id in 0..n {
            let Some(t) = tok.decode_token(id as u32) else {
                out.known.push(false);
                out.first.push_no_token();
                out.later.push_no_token();
                continue;
            };
            out.known.push(true);
            if lossy {
                bytes.clear();
                byte_level_bytes(t, &mut bytes);
                out.first.push(&bytes, None);
                out.later.push(&bytes, None);
            } else if join_spaces {
                out.first.push(t.as_bytes(), None);
                out.later.push(format!(" {t}").as_bytes(), None);
            } else {
                let first = run(vec![t.to_string()]);
                let later = run(vec!["a".to_string(), t.to_string()]);
                let (Some(f), Some(l), 1, 2) = (first.first(), later.get(1), first.len(), later.len()) else {
                    return None;
                };
                let byte = |s: &str| if merge_bytes { byte_token(s) } else { None };
                out.first.push(f.as_bytes(), byte(f));
                out.later.push(l.as_bytes(), byte(l));
            }
        }
        Some(out)
    }

    /// `decode(ids) == line` (special tokens kept), or `None` when only the full decoder can say.
    /// `buf` is scratch space, reused across lines.
    pub fn check(&self, ids: &[u32], line: &str, buf: &mut Vec<u8>) -> Option<bool> {
        if !self.merge_bytes && self.strips.is_empty() {
            return self.check_in_place(ids, line);
        }
        // Byte runs or strips (never with `ByteLevel`, see `of`): the text is built, then compared.
        buf.clear();
        let mut run_from: Option<usize> = None;
        for (i, &id) in ids.iter().enumerate() {
            let id = id as usize;
            if !self.known.get(id).copied().unwrap_or(false) {
                return None;
            }
            let p = if i == 0 { &self.first } else { &self.later };
            if self.merge_bytes {
                let b = p.byte[id];
                if b >= 0 {
                    run_from.get_or_insert(buf.len());
                    buf.push(b as u8);
                    continue;
                }
                if let Some(at) = run_from.take() {
                    settle_run(buf, at);
                }
            }
            buf.extend_from_slice(p.get(id));
        }
        if let Some(at) = run_from {
            settle_run(buf, at);
        }
        if self.strips.is_empty() {
            return Some(buf.as_slice() == line.as_bytes());
        }
        let mut text = std::str::from_utf8(buf).ok()?.to_string();
        for &(content, start, stop) in &self.strips {
            text = strip_token(&text, content, start, stop);
        }
        Some(text == line)
    }

    /// [`Self::check`] where the text is the pieces joined (no byte runs, no strips): each piece is
    /// compared with the line where it lands, no buffer. The text only grows, so a piece that differs
    /// decides (the pieces before it are the decoder's output whatever follows, an id with no token
    /// included); with `ByteLevel` the bytes are read as lossy UTF-8, which matters only where they differ.
    fn check_in_place(&self, ids: &[u32], line: &str) -> Option<bool> {
        let line_bytes = line.as_bytes();
        let differs = || if self.lossy { self.lossy_mismatch(line) } else { Some(false) };
        let mut at = 0usize;
        for (i, &id) in ids.iter().enumerate() {
            let p = if i == 0 { &self.first } else { &self.later };
            match p.lands(id as usize, line_bytes, at) {
                Landing::Fits(n) => at += n,
                Landing::Differs => return differs(),
                Landing::NoToken => return None,
            }
        }
        if at == line_bytes.len() {
            Some(true)
        } else {
            differs()
        }
    }

    /// The bytes differ from the line: lossy UTF-8 of them can still equal it only through a U+FFFD.
    fn lossy_mismatch(&self, line: &str) -> Option<bool> {
        if line.contains('\u{FFFD}') {
            None
        } else {
            Some(false)
        }
    }
}

/// Whether `line[at..]` starts with `piece` (pieces are short: compared inline, not by `memcmp`).
#[inline]
fn lands(line: &[u8], at: usize, piece: &[u8]) -> bool {
    match line.get(at..at + piece.len()) {
        Some(there) if piece.len() <= 16 => there.iter().zip(piece).all(|(a, b)| a == b),
        Some(there) => there == piece,
        None => false,
    }
}

/// `ByteFallback` on the run `buf[at..]`: kept when it is UTF-8, else one U+FFFD per byte.
fn settle_run(buf: &mut Vec<u8>, at: usize) {
    if std::str::from_utf8(&buf[at..]).is_err() {
        let n = buf.len() - at;
        buf.truncate(at);
        for _ in 0..n {
            buf.extend_from_slice("\u{FFFD}".as_bytes());
        }
    }
}

/// The precomputed decode of a sentencepiece pipeline (the rules of `SpmPipeline::decode`).
#[derive(Debug)]
pub struct SpmDecode {
    kinds: Vec<PieceType>,
    /// The piece with `▁` as spaces, and the same without its leading `▁` (the space decode drops at the start).
    plain: Pieces,
    stripped: Pieces,
    /// Whether the piece starts with `▁`.
    starts_ws: Vec<bool>,
    /// `add_dummy_prefix || remove_extra_whitespaces`: a leading `▁` can be dropped at the start.
    consumes: bool,
    remove_extra_whitespaces: bool,
    unk_surface: Vec<u8>,
}

impl SpmDecode {
    pub fn of(p: &SpmPipeline) -> SpmDecode {
        let (kinds, add_dummy_prefix, remove_extra_whitespaces, unk) = p.decode_parts();
        let table = p.table();
        let (mut plain, mut stripped) = (Pieces::default(), Pieces::default());
        let mut starts_ws = Vec::with_capacity(kinds.len());
        for (id, kind) in kinds.iter().enumerate() {
            let piece = table.get(id as u32);
            let byte = if *kind == PieceType::Byte { crate::unigram::encode::parse_byte_piece(piece) } else { None };
            let spaced = |s: &str| s.chars().map(|c| if c == WS { ' ' } else { c }).collect::<String>();
            plain.push(spaced(piece).as_bytes(), byte);
            stripped.push(spaced(piece.strip_prefix(WS).unwrap_or(piece)).as_bytes(), byte);
            starts_ws.push(piece.starts_with(WS));
        }
        SpmDecode {
            kinds: kinds.to_vec(),
            plain,
            stripped,
            starts_ws,
            consumes: add_dummy_prefix || remove_extra_whitespaces,
            remove_extra_whitespaces,
            unk_surface: unk.as_bytes().to_vec(),
        }
    }

    /// `decode(ids) == line`, mirroring `SpmPipeline::decode` step by step (its start-of-text rule for the
    /// leading `▁` included): each piece is compared with the line where it lands (the output only grows,
    /// so a difference decides, and `at` is the length written so far); `buf` holds the pending run of byte
    /// pieces.
    pub fn check(&self, ids: &[u32], line: &str, buf: &mut Vec<u8>) -> bool {
        let line_bytes = line.as_bytes();
        let mut at = 0usize;
        buf.clear();
        // A run of byte pieces: its bytes when they are UTF-8, else `utf8_bytewise_lossy` of them.
        let flush = |run: &mut Vec<u8>, at: &mut usize| -> bool {
            if run.is_empty() {
                return true;
            }
            let ok = match std::str::from_utf8(run) {
                Ok(s) => lands(line_bytes, *at, s.as_bytes()) && {
                    *at += s.len();
                    true
                },
                Err(_) => {
                    let s = utf8_bytewise_lossy(run);
                    lands(line_bytes, *at, s.as_bytes()) && {
                        *at += s.len();
                        true
                    }
                }
            };
            run.clear();
            ok
        };
        let (mut is_bos_ws, mut bos_ws_seen) = (true, false);
        for &id in ids {
            let id = id as usize;
            let Some(kind) = self.kinds.get(id) else { continue };
            if *kind == PieceType::Byte {
                if let Ok(b) = u8::try_from(self.plain.byte[id]) {
                    buf.push(b);
                }
                continue;
            }
            if !flush(buf, &mut at) {
                return false;
            }
            if bos_ws_seen || at != 0 {
                is_bos_ws = false;
            }
            bos_ws_seen = false;
            let landed = match kind {
                PieceType::Control => continue,
                PieceType::Unknown => {
                    if lands(line_bytes, at, &self.unk_surface) {
                        Landing::Fits(self.unk_surface.len())
                    } else {
                        Landing::Differs
                    }
                }
                _ => {
                    let strip = is_bos_ws && self.consumes && self.starts_ws[id];
                    if strip {
                        bos_ws_seen = !self.remove_extra_whitespaces;
                    }
                    (if strip { &self.stripped } else { &self.plain }).lands(id, line_bytes, at)
                }
            };
            match landed {
                Landing::Fits(n) => at += n,
                Landing::Differs | Landing::NoToken => return false,
            }
        }
        flush(buf, &mut at) && at == line_bytes.len()
    }
}

/// The fast check of one tokenizer, whichever pipeline it runs.
#[derive(Debug)]
pub enum RoundTrip {
    Pieces(PieceDecode),
    Spm(SpmDecode),
}

impl RoundTrip {
    /// `decode(ids) == line`, or `None` when the full decoder must say.
    pub fn check(&self, ids: &[u32], line: &str, buf: &mut Vec<u8>) -> Option<bool> {
        match self {
            RoundTrip::Pieces(p) => p.check(ids, line, buf),
            RoundTrip::Spm(s) => Some(s.check(ids, line, buf)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_land_as_slices_compare() {
        let line = b"the quick brown fox jumps over the lazy dog, twice over";
        let mut p = Pieces::default();
        let mut pieces = Vec::new();
        for len in 0..=20 {
            for from in [0, 4, 10, 30, line.len() - len.min(line.len())] {
                pieces.push(line[from..from + len].to_vec());
                let mut other = line[from..from + len].to_vec();
                if let Some(x) = other.last_mut() {
                    *x ^= 1;
                }
                pieces.push(other);
            }
        }
        pieces.iter().for_each(|x| p.push(x, None));
        p.push_no_token();
        for (id, piece) in pieces.iter().enumerate() {
            for at in 0..=line.len() + 1 {
                let want = line.get(at..at + piece.len()) == Some(&piece[..]);
                let got = match p.lands(id, line, at) {
                    Landing::Fits(n) => {
                        assert_eq!(n, piece.len());
                        true
                    }
                    Landing::Differs => false,
                    Landing::NoToken => panic!("id {id} has a token"),
                };
                assert_eq!(got, want, "{piece:?} at {at}");
            }
        }
        assert!(matches!(p.lands(pieces.len(), line, 0), Landing::NoToken));
        assert!(matches!(p.lands(pieces.len() + 1, line, 0), Landing::NoToken));
    }

    #[test]
    fn byte_runs_settle_as_byte_fallback_does() {
        let mut buf = b"a\xe2\x82\xac".to_vec();
        settle_run(&mut buf, 1);
        assert_eq!(buf, "a€".as_bytes());
        let mut buf = b"a\xe2\x82".to_vec();
        settle_run(&mut buf, 1);
        assert_eq!(buf, "a\u{FFFD}\u{FFFD}".as_bytes());
    }
}
