//! The SentencePiece pipeline: options, normalization, `LoadSentences`, piece validity.
//!
//! "text lines -> normalized sentences -> what the trainers see", as sentencepiece 0.2.3's
//! `TrainerInterface` does it (SPEC-tokenizers §4.1-4.2):
//! 1. lines are read as they are (one trailing `\n` removed); empty lines, lines longer than
//!    `max_sentence_length` bytes and lines containing `▅` (U+2585) are skipped (and counted);
//! 2. each line is normalized ([`SpmNormalizer`]): the character rules (identity, nmt_nfkc, nfkc),
//!    then whitespace: leading/trailing/repeated spaces removed, a dummy `▁` prefix (or suffix),
//!    spaces escaped as `▁`; meta pieces (`<unk>`, `<s>`, user-defined, ...) found in the text
//!    become the boundary char U+001F; sentences that end up empty are dropped;
//! 3. character coverage picks the required characters; every other character becomes `▅`;
//! 4. [`split_into_words`] gives the words the BPE trainer (and Unigram's EM) count.

pub mod align;
pub mod encode;
pub mod flat;
pub mod proto;
pub mod scripts_table;

use ahash::AHashMap;
use unicode_normalization::UnicodeNormalization;

/// `▁` (U+2581): what a space becomes.
pub const WS: char = '\u{2581}';
/// `▅` (U+2585): what a character outside the coverage becomes.
pub const UNK_CHAR: char = '\u{2585}';
/// U+001F: what a meta piece found in the training text becomes.
pub const BOUNDARY: char = '\u{1f}';

/// ModelProto.SentencePiece.Type numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PieceType {
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6,
}

impl PieceType {
    /// From the ModelProto number.
    pub fn from_proto(n: i32) -> Result<Self, String> {
        Ok(match n {
            1 => PieceType::Normal,
            2 => PieceType::Unknown,
            3 => PieceType::Control,
            4 => PieceType::UserDefined,
            5 => PieceType::Unused,
            6 => PieceType::Byte,
            other => return Err(format!("unknown piece type {other}")),
        })
    }
}

/// The character rules of the normalizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Normalization {
    Identity,
    /// NFKC plus SentencePiece's NMT rules (control characters removed, odd spaces made spaces).
    NmtNfkc,
    Nfkc,
}

impl Normalization {
    pub fn from_name(name: &str) -> Result<Self, String> {
        match name {
            "identity" => Ok(Normalization::Identity),
            "nmt_nfkc" => Ok(Normalization::NmtNfkc),
            "nfkc" => Ok(Normalization::Nfkc),
            other => {
                Err(format!("unsupported normalization_rule_name {other:?} (supported: identity, nmt_nfkc, nfkc)"))
            }
        }
    }
}

/// SentencePiece's TrainerSpec and NormalizerSpec fields that shape the training input.
#[derive(Clone, Debug)]
pub struct SpmSpec {
    pub vocab_size: usize,
    pub normalization: Normalization,
    pub add_dummy_prefix: bool,
    pub remove_extra_whitespaces: bool,
    pub treat_whitespace_as_suffix: bool,
    pub split_by_whitespace: bool,
    pub split_by_number: bool,
    pub split_by_unicode_script: bool,
    pub split_digits: bool,
    pub allow_whitespace_only_pieces: bool,
    pub max_sentencepiece_length: usize,
    pub max_sentence_length: usize,
    pub character_coverage: f64,
    pub byte_fallback: bool,
    pub required_chars: String,
    pub user_defined_symbols: Vec<String>,
    pub control_symbols: Vec<String>,
    pub unk_id: i32,
    pub bos_id: i32,
    pub eos_id: i32,
    pub pad_id: i32,
    pub unk_piece: String,
    pub bos_piece: String,
    pub eos_piece: String,
    pub pad_piece: String,
    pub hard_vocab_limit: bool,
    /// A precompiled charsmap replacing the character rules of `normalization` (what a `.model`
    /// file carries; Python passes its generated table for nmt_nfkc/nfkc so training, encoding and
    /// sentencepiece loading our files all apply the same table).
    pub charsmap: Option<std::sync::Arc<CharsMap>>,
}

impl Default for SpmSpec {
    fn default() -> Self {
        SpmSpec {
            vocab_size: 8000,
            normalization: Normalization::NmtNfkc,
            add_dummy_prefix: true,
            remove_extra_whitespaces: true,
            treat_whitespace_as_suffix: false,
            split_by_whitespace: true,
            split_by_number: true,
            split_by_unicode_script: true,
            split_digits: false,
            allow_whitespace_only_pieces: false,
            max_sentencepiece_length: 16,
            max_sentence_length: 4192,
            character_coverage: 0.9995,
            byte_fallback: false,
            required_chars: String::new(),
            user_defined_symbols: Vec::new(),
            control_symbols: Vec::new(),
            unk_id: 0,
            bos_id: 1,
            eos_id: 2,
            pad_id: -1,
            unk_piece: "<unk>".into(),
            bos_piece: "<s>".into(),
            eos_piece: "</s>".into(),
            pad_piece: "<pad>".into(),
            hard_vocab_limit: true,
            charsmap: None,
        }
    }
}

fn decode_hex(text: &str) -> Result<Vec<u8>, String> {
    let b = text.as_bytes();
    if !b.len().is_multiple_of(2) {
        return Err("precompiled_charsmap_hex has an odd length".into());
    }
    let digit = |c: u8| (c as char).to_digit(16).ok_or("precompiled_charsmap_hex is not hexadecimal");
    b.chunks_exact(2).map(|p| Ok((digit(p[0])? * 16 + digit(p[1])?) as u8)).collect()
}

impl SpmSpec {
    /// Reads the options from a JSON object whose keys are the field names (SentencePiece's
    /// option names); absent keys keep SentencePiece's defaults, unknown keys are errors.
    pub fn from_json_str(text: &str) -> Result<Self, String> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("invalid spec JSON: {e}"))?;
        let obj = v.as_object().ok_or("the spec must be a JSON object")?;
        let mut s = SpmSpec::default();
        fn b(v: &serde_json::Value, k: &str) -> Result<bool, String> {
            v.as_bool().ok_or_else(|| format!("{k} must be a bool"))
        }
        fn u(v: &serde_json::Value, k: &str) -> Result<usize, String> {
            v.as_u64().map(|x| x as usize).ok_or_else(|| format!("{k} must be a non-negative integer"))
        }
        fn i(v: &serde_json::Value, k: &str) -> Result<i32, String> {
            v.as_i64().and_then(|x| i32::try_from(x).ok()).ok_or_else(|| format!("{k} must be an integer"))
        }
        fn st(v: &serde_json::Value, k: &str) -> Result<String, String> {
            v.as_str().map(str::to_string).ok_or_else(|| format!("{k} must be a string"))
        }
        fn list(v: &serde_json::Value, k: &str) -> Result<Vec<String>, String> {
            v.as_array()
                .ok_or_else(|| format!("{k} must be a list of strings"))?
                .iter()
                .map(|x| x.as_str().map(str::to_string).ok_or_else(|| format!("{k} must be a list of strings")))
                .collect()
        }
        for (k, v) in obj {
            match k.as_str() {
                "vocab_size" => s.vocab_size = u(v, k)?,
                "normalization_rule_name" => s.normalization = Normalization::from_name(&st(v, k)?)?,
                "add_dummy_prefix" => s.add_dummy_prefix = b(v, k)?,
                "remove_extra_whitespaces" => s.remove_extra_whitespaces = b(v, k)?,
                "treat_whitespace_as_suffix" => s.treat_whitespace_as_suffix = b(v, k)?,
                "split_by_whitespace" => s.split_by_whitespace = b(v, k)?,
                "split_by_number" => s.split_by_number = b(v, k)?,
                "split_by_unicode_script" => s.split_by_unicode_script = b(v, k)?,
                "split_digits" => s.split_digits = b(v, k)?,
                "allow_whitespace_only_pieces" => s.allow_whitespace_only_pieces = b(v, k)?,
                "max_sentencepiece_length" => s.max_sentencepiece_length = u(v, k)?,
                "max_sentence_length" => s.max_sentence_length = u(v, k)?,
                "character_coverage" => {
                    s.character_coverage = v.as_f64().ok_or_else(|| format!("{k} must be a number"))?
                }
                "byte_fallback" => s.byte_fallback = b(v, k)?,
                "required_chars" => s.required_chars = st(v, k)?,
                "user_defined_symbols" => s.user_defined_symbols = list(v, k)?,
                "control_symbols" => s.control_symbols = list(v, k)?,
                "unk_id" => s.unk_id = i(v, k)?,
                "bos_id" => s.bos_id = i(v, k)?,
                "eos_id" => s.eos_id = i(v, k)?,
                "pad_id" => s.pad_id = i(v, k)?,
                "unk_piece" => s.unk_piece = st(v, k)?,
                "bos_piece" => s.bos_piece = st(v, k)?,
                "eos_piece" => s.eos_piece = st(v, k)?,
                "pad_piece" => s.pad_piece = st(v, k)?,
                "hard_vocab_limit" => s.hard_vocab_limit = b(v, k)?,
                "precompiled_charsmap_hex" => {
                    let blob = decode_hex(&st(v, k)?)?;
                    s.charsmap =
                        if blob.is_empty() { None } else { Some(std::sync::Arc::new(CharsMap::from_blob(&blob)?)) };
                }
                other => return Err(format!("unknown SentencePiece option {other:?}")),
            }
        }
        if s.max_sentencepiece_length == 0 {
            return Err("max_sentencepiece_length must be >= 1".into());
        }
        Ok(s)
    }
}

// ==== Normalization ====

/// NMT rule for one character: `None` = delete, `Some(' ')` = a space, else unchanged.
fn nmt_map(c: char) -> Option<char> {
    match c as u32 {
        0x09 | 0x0A | 0x0C | 0x0D | 0x1680 | 0x200B | 0x200C | 0x200E | 0x200F | 0x2028 | 0x2029 | 0x2581 | 0xFEFF
        | 0xFFFD => Some(' '),
        0x00..=0x08 | 0x0B | 0x0E..=0x1F | 0x7F | 0x8F | 0x9F => None,
        _ => Some(c),
    }
}

/// SentencePiece's `precompiled_charsmap`: a darts-clone double-array trie over UTF-8 keys whose
/// values are offsets of NUL-terminated replacements. Blob layout: u32 LE trie size in bytes, the
/// trie units (u32 LE), then the replacement strings.
#[derive(Clone, Debug)]
pub struct CharsMap {
    units: Vec<u32>,
    strings: Vec<u8>,
    /// `starts[b]`: some key starts with byte `b` (bytes without one are copied as they are).
    starts: [bool; 256],
    /// `ascii_plain[b]` (ASCII `b`): no key is `b` alone and none is `b` + another ASCII byte, so
    /// `b` followed by ASCII (or the end) is copied as it is.
    ascii_plain: [bool; 128],
}


/// A piece of [`CharsMap`]'s rewritten text: a run copied from the input, or a replacement from the
/// table (whose bytes a damaged table may leave short of UTF-8).
enum Chunk<'a> {
    Copied(&'a str),
    Replaced(&'a [u8]),
}

impl CharsMap {
    pub fn from_blob(blob: &[u8]) -> Result<Self, String> {
        if blob.len() < 4 {
            return Err("precompiled_charsmap is truncated".into());
        }
        let n = u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
        if !n.is_multiple_of(4) || 4 + n > blob.len() || n == 0 {
            return Err("precompiled_charsmap is malformed (bad trie size)".into());
        }
        let units: Vec<u32> =
            blob[4..4 + n].chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        let mut m = CharsMap { units, strings: blob[4 + n..].to_vec(), starts: [true; 256], ascii_plain: [false; 128] };
        let offset = |x: u32| ((x >> 10) << ((x & (1 << 9)) >> 6)) as usize;
        for b in 0..=255u8 {
            let id = offset(m.units[0]) ^ b as usize;
            let unit = m.units.get(id).copied();
            m.starts[b as usize] = unit.is_some_and(|u| u & (0x8000_0000 | 0xFF) == b as u32);
            if b < 128 {
                m.ascii_plain[b as usize] = match unit {
                    Some(u) if m.starts[b as usize] => {
                        let base = id ^ offset(u);
                        (u >> 8) & 1 == 0
                            && (1..128u32)
                                .all(|c| m.units.get(base ^ c as usize).is_none_or(|&v| v & (0x8000_0000 | 0xFF) != c))
                    }
                    _ => true,
                };
            }
        }
        Ok(m)
    }

    /// Longest key that is a prefix of `s`: (key length in bytes, replacement).
    pub fn longest_prefix<'a>(&'a self, s: &[u8]) -> Option<(usize, &'a [u8])> {
        let u = &self.units;
        let offset = |x: u32| ((x >> 10) << ((x & (1 << 9)) >> 6)) as usize;
        let mut id = offset(*u.first()?);
        let mut best = None;
        for (i, &b) in s.iter().enumerate() {
            id ^= b as usize;
            let unit = *u.get(id)?;
            if unit & (0x8000_0000 | 0xFF) != b as u32 {
                break;
            }
            id ^= offset(unit);
            if (unit >> 8) & 1 == 1 {
                let v = (*u.get(id)? & 0x7FFF_FFFF) as usize;
                if v < self.strings.len() {
                    let end = self.strings[v..].iter().position(|&c| c == 0).map_or(self.strings.len(), |e| v + e);
                    best = Some((i + 1, &self.strings[v..end]));
                }
            }
        }
        best
    }

    /// Whether `text` is ASCII that no rule of the table touches: every byte is copied as it is
    /// (no key is such a byte alone or continues it with another ASCII byte).
    pub fn leaves_ascii_unchanged(&self, text: &str) -> bool {
        text.bytes().all(|b| b < 0x80 && self.ascii_plain[b as usize])
    }

    /// Rewrites `text` by longest match (unmatched characters are kept).
    pub fn apply(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        if self.apply_with(text, |chunk| out.push_str(chunk)) {
            return out;
        }
        // a replacement that is not UTF-8 (a damaged table): repaired over the whole output, where
        // its bytes may join the next ones
        let mut bytes: Vec<u8> = Vec::with_capacity(text.len());
        self.for_each_chunk(text, |chunk| match chunk {
            Chunk::Copied(s) => bytes.extend_from_slice(s.as_bytes()),
            Chunk::Replaced(r) => bytes.extend_from_slice(r),
        });
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// [`Self::apply`] as a stream: `emit` gets the rewritten text piece by piece (runs of copied
    /// characters and replacements), with no string built in between. Stops and returns false at
    /// a replacement that is not UTF-8.
    pub fn apply_with(&self, text: &str, mut emit: impl FnMut(&str)) -> bool {
        let mut valid = true;
        self.for_each_chunk(text, |chunk| {
            if valid {
                match chunk {
                    // Slices of `text` at char boundaries: UTF-8 already (validating them again was a
                    // twentieth of a Unigram encode of Chinese, perf).
                    Chunk::Copied(s) => emit(s),
                    Chunk::Replaced(r) => match std::str::from_utf8(r) {
                        Ok(s) => emit(s),
                        Err(_) => valid = false,
                    },
                }
            }
        });
        valid
    }

    /// The rewritten text as chunks: runs of copied whole characters and replacements.
    #[inline(always)]
    fn for_each_chunk(&self, text: &str, mut emit: impl FnMut(Chunk<'_>)) {
        let b = text.as_bytes();
        // A run of the input; as bytes to check should a table's key ever end inside a char.
        let copied = |i: usize, j: usize| text.get(i..j).map_or(Chunk::Replaced(&b[i..j]), Chunk::Copied);
        let mut i = 0;
        while i < b.len() {
            let plain = |k: usize| {
                !self.starts[b[k] as usize]
                    || (b[k] < 0x80 && self.ascii_plain[b[k] as usize] && b.get(k + 1).is_none_or(|&x| x < 0x80))
            };
            if plain(i) {
                // copy the run of bytes no key starts with (whole characters: continuation bytes
                // of a copied character never start a key either... unless they do, so stop at
                // the next character boundary that might)
                let mut j = i + 1;
                while j < b.len() && ((b[j] & 0xC0) == 0x80 || plain(j)) {
                    j += 1;
                }
                // `j` stopped at a byte that is not a continuation byte (or the end): a char boundary.
                emit(copied(i, j));
                i = j;
                continue;
            }
            match self.longest_prefix(&b[i..]) {
                Some((len, rep)) => {
                    emit(Chunk::Replaced(rep));
                    i += len;
                }
                None => {
                    let l = text[i..].chars().next().map_or(1, char::len_utf8);
                    emit(copied(i, i + l));
                    i += l;
                }
            }
        }
    }
}

/// SentencePiece's normalizer: character rules, then whitespace handling and escaping.
#[derive(Clone, Debug)]
pub struct SpmNormalizer {
    /// When set, replaces the character rules of `normalization` (a model's own table).
    pub charsmap: Option<std::sync::Arc<CharsMap>>,
    pub normalization: Normalization,
    pub add_dummy_prefix: bool,
    pub remove_extra_whitespaces: bool,
    pub treat_whitespace_as_suffix: bool,
}

impl SpmNormalizer {
    pub fn from_spec(spec: &SpmSpec) -> Self {
        SpmNormalizer {
            charsmap: spec.charsmap.clone(),
            normalization: spec.normalization,
            add_dummy_prefix: spec.add_dummy_prefix,
            remove_extra_whitespaces: spec.remove_extra_whitespaces,
            treat_whitespace_as_suffix: spec.treat_whitespace_as_suffix,
        }
    }

    /// The character rules only (no whitespace handling).
    pub fn map_chars(&self, text: &str) -> String {
        if let Some(m) = &self.charsmap {
            return m.apply(text);
        }
        // Fast path: printable ASCII (and spaces) is unchanged by NFKC and the NMT rules.
        if self.normalization == Normalization::Identity || text.bytes().all(|b| (0x20..0x7F).contains(&b)) {
            return text.to_string();
        }
        let quick_yes =
            || unicode_normalization::is_nfkc_quick(text.chars()) == unicode_normalization::IsNormalized::Yes;
        match self.normalization {
            Normalization::Identity => text.to_string(),
            Normalization::Nfkc if quick_yes() => text.to_string(),
            Normalization::Nfkc => text.nfkc().collect(),
            Normalization::NmtNfkc if quick_yes() && text.chars().all(|c| nmt_map(c) == Some(c)) => text.to_string(),
            Normalization::NmtNfkc => {
                // U+FF5E (fullwidth tilde) is kept as it is by SentencePiece's nmt_nfkc table.
                let mapped: String = text.chars().filter_map(nmt_map).collect();
                let mut out = String::with_capacity(mapped.len());
                for (i, part) in mapped.split('\u{FF5E}').enumerate() {
                    if i > 0 {
                        out.push('\u{FF5E}');
                    }
                    out.extend(part.nfkc().map(|c| nmt_map(c).unwrap_or('\u{0}')).filter(|&c| c != '\u{0}'));
                }
                out
            }
        }
    }

    /// The whole normalizer: the result has no spaces (they are `▁`).
    pub fn normalize(&self, text: &str) -> String {
        let mapped = self.map_chars(text);
        let mut out = String::with_capacity(mapped.len() + 3);
        self.fold_spaces(&mut out, |folder| {
            folder.feed(&mapped);
            true
        });
        out
    }

    /// The whitespace rules over character-mapped text, which `feed` hands to the [`SpaceFolder`]
    /// whole or as it is produced, written to `out`. False (with `out` part-written) when `feed`
    /// gives up.
    fn fold_spaces(&self, out: &mut String, feed: impl FnOnce(&mut SpaceFolder<'_>) -> bool) -> bool {
        let mut folder = SpaceFolder {
            out,
            remove: self.remove_extra_whitespaces,
            prefix: self.add_dummy_prefix && !self.treat_whitespace_as_suffix,
            started: false,
            prev_space: false,
        };
        if !feed(&mut folder) {
            return false;
        }
        if self.remove_extra_whitespaces {
            while out.ends_with(WS) {
                out.pop();
            }
        }
        if self.add_dummy_prefix && self.treat_whitespace_as_suffix && !out.is_empty() {
            out.push(WS);
        }
        true
    }
}

impl SpmNormalizer {
    /// Whether the character rules leave `text` as it is (without building the mapped string).
    fn chars_unchanged(&self, text: &str) -> bool {
        if let Some(map) = &self.charsmap {
            return map.leaves_ascii_unchanged(text);
        }
        if text.bytes().all(|b| (0x20..0x7F).contains(&b)) {
            return true; // as in `map_chars`: printable ASCII is fixed by NFKC and the NMT rules
        }
        let quick_yes =
            || unicode_normalization::is_nfkc_quick(text.chars()) == unicode_normalization::IsNormalized::Yes;
        match self.normalization {
            Normalization::Identity => true,
            Normalization::Nfkc => quick_yes(),
            Normalization::NmtNfkc => quick_yes() && text.chars().all(|c| nmt_map(c) == Some(c)),
        }
    }

    /// [`Self::normalize`] written into `out` (emptied first), with no intermediate string where
    /// it can: text the character rules leave as it is (printable ASCII, or NFKC text with no NMT
    /// rule to apply, when there is no model charsmap) goes straight to the whitespace handling,
    /// and so does the output of a model's charsmap as it is produced. Batch encoders call this
    /// for every line.
    pub fn normalize_into(&self, text: &str, out: &mut String) {
        out.clear();
        let unchanged = self.chars_unchanged(text);
        if !unchanged && self.charsmap.is_none() {
            out.push_str(&self.normalize(text));
            return;
        }
        let streamed = self.fold_spaces(out, |folder| match &self.charsmap {
            Some(map) if !unchanged => map.apply_with(text, |chunk| folder.feed(chunk)),
            _ => {
                folder.feed(text);
                true
            }
        });
        if !streamed {
            // a damaged charsmap: the whole-string path repairs its output
            out.clear();
            out.push_str(&self.normalize(text));
        }
    }
}

/// SentencePiece's whitespace rules applied to the character-mapped text as it streams in: each
/// space becomes `▁` (a run of them one `▁` when removing extras, and none at the start), and the
/// dummy prefix goes before the first byte kept. Trailing `▁` and the suffix `▁` are added by
/// [`SpmNormalizer::fold_spaces`] once the text is complete.
struct SpaceFolder<'a> {
    out: &'a mut String,
    /// `remove_extra_whitespaces`.
    remove: bool,
    /// A dummy `▁` goes first (`add_dummy_prefix` without `treat_whitespace_as_suffix`).
    prefix: bool,
    /// Something has been kept.
    started: bool,
    /// The last byte kept was a space.
    prev_space: bool,
}

impl SpaceFolder<'_> {
    fn feed(&mut self, chunk: &str) {
        let bytes = chunk.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b' ' {
                if !(self.remove && (self.prev_space || !self.started)) {
                    self.start();
                    self.out.push(WS);
                }
                self.prev_space = true;
                i += 1;
            } else {
                // spaces are one-byte characters: `i` and `j` are character boundaries
                let j = find_byte(bytes, i, b' ').unwrap_or(bytes.len());
                self.start();
                self.out.push_str(&chunk[i..j]);
                self.prev_space = false;
                i = j;
            }
        }
    }

    fn start(&mut self) {
        if !self.started {
            self.started = true;
            if self.prefix {
                self.out.push(WS);
            }
        }
    }
}

/// The index of the first `needle` in `hay[from..]`, eight bytes at a time (the classic
/// zero-byte test on `chunk ^ needle * 0x01..01`). Lines are short and words shorter, so a
/// general `memchr` call spends more on set-up than on the search here.
#[inline]
pub fn find_byte(hay: &[u8], from: usize, needle: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pattern = LO.wrapping_mul(needle as u64);
    let mut i = from;
    while i + 8 <= hay.len() {
        let mut chunk = [0u8; 8];
        chunk.copy_from_slice(&hay[i..i + 8]);
        let x = u64::from_le_bytes(chunk) ^ pattern;
        // the lowest flagged byte is the first match (false flags only sit above a true one)
        let found = x.wrapping_sub(LO) & !x & HI;
        if found != 0 {
            return Some(i + (found.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    hay.get(i..)?.iter().position(|&x| x == needle).map(|k| i + k)
}

/// The normalizer of `spec` applied to `text` (for bindings and tests).
pub fn normalize_for_py(text: &str, spec: &SpmSpec) -> String {
    SpmNormalizer::from_spec(spec).normalize(text)
}

// ==== Piece validity ====

/// The Unicode script of `c` as SentencePiece groups them (absent = Common).
pub fn script_of(c: char) -> u8 {
    let cp = c as u32;
    let table = &scripts_table::SCRIPT_RANGES;
    match table.binary_search_by(|&(a, b, _)| {
        if b < cp {
            std::cmp::Ordering::Less
        } else if a > cp {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    }) {
        Ok(i) => table[i].2,
        Err(_) => scripts_table::COMMON,
    }
}

fn is_decimal(c: char) -> bool {
    c.is_ascii_digit() || ('\u{FF10}'..='\u{FF19}').contains(&c)
}

/// SentencePiece's `IsValidSentencePiece`: may the trainer create this piece?
pub fn is_valid_piece(chars: &[char], spec: &SpmSpec) -> bool {
    let n = chars.len();
    if n == 0 || n > spec.max_sentencepiece_length {
        return false;
    }
    const ANY: u16 = u16::MAX;
    let mut prev: u16 = ANY;
    let all_ws = chars.iter().all(|&c| c == WS);
    for (pos, &c) in chars.iter().enumerate() {
        if c == UNK_CHAR || c == '\0' || c == BOUNDARY || c == ' ' {
            return false;
        }
        if c == WS {
            if !spec.allow_whitespace_only_pieces || !all_ws {
                let bad = if spec.treat_whitespace_as_suffix {
                    pos < n - 1 && (spec.split_by_whitespace || pos == 0)
                } else {
                    pos > 0 && (spec.split_by_whitespace || pos == n - 1)
                };
                if bad {
                    return false;
                }
            }
            continue;
        }
        let raw = script_of(c);
        let mut s: u16 = if raw == scripts_table::HIRAGANA || raw == scripts_table::KATAKANA || c == '\u{30FC}' {
            scripts_table::HAN as u16
        } else if raw == scripts_table::INHERITED {
            prev
        } else {
            raw as u16
        };
        if !spec.split_by_number && is_decimal(c) {
            s = ANY;
        }
        if spec.split_digits && is_decimal(c) && n > 1 {
            return false;
        }
        if spec.split_by_unicode_script && s != ANY && prev != ANY && prev != s {
            return false;
        }
        prev = s;
    }
    true
}

// ==== LoadSentences ====

/// What the trainers see.
#[derive(Clone, Debug, Default)]
pub struct SpmCorpus {
    /// Normalized sentences (no spaces; `▁`; rare chars as `▅`) with their counts, in load order.
    pub sentences: Vec<(String, u64)>,
    /// Characters kept by the coverage, SentencePiece's order (count desc, code point asc).
    pub required_chars: Vec<(char, u64)>,
    /// Reserved pieces: (id, piece, type), ids ascending.
    pub meta: Vec<(u32, String, PieceType)>,
    /// Lines skipped because they are longer than `max_sentence_length` bytes.
    pub skipped_too_long: usize,
    /// Lines skipped because they contain `▅`.
    pub skipped_unk_char: usize,
    /// Lines that were empty (before or after normalization).
    pub skipped_empty: usize,
}

/// The reserved pieces and their ids (SentencePiece's `InitMetaPieces`).
pub fn meta_pieces(spec: &SpmSpec) -> Result<Vec<(u32, String, PieceType)>, String> {
    let vs = spec.vocab_size as i64;
    let mut taken: AHashMap<u32, (String, PieceType)> = AHashMap::new();
    let mut names: AHashMap<String, u32> = AHashMap::new();
    let mut add = |id: u32, piece: &str, ty: PieceType| -> Result<(), String> {
        if taken.contains_key(&id) {
            return Err(format!("id {id} is used twice (for {piece:?} and {:?})", taken[&id].0));
        }
        if names.contains_key(piece) {
            return Err(format!("piece {piece:?} is defined twice"));
        }
        names.insert(piece.to_string(), id);
        taken.insert(id, (piece.to_string(), ty));
        Ok(())
    };
    if spec.unk_id < 0 {
        return Err("unk_id must be set (>= 0): SentencePiece needs an unknown piece".into());
    }
    for (id, piece, ty, what) in [
        (spec.unk_id, &spec.unk_piece, PieceType::Unknown, "unk_id"),
        (spec.bos_id, &spec.bos_piece, PieceType::Control, "bos_id"),
        (spec.eos_id, &spec.eos_piece, PieceType::Control, "eos_id"),
        (spec.pad_id, &spec.pad_piece, PieceType::Control, "pad_id"),
    ] {
        if id < 0 {
            continue;
        }
        if id as i64 >= vs {
            return Err(format!("{what}={id} is not below vocab_size={vs}"));
        }
        add(id as u32, piece, ty)?;
    }
    let mut next = 0u32;
    let mut free = |taken: &AHashMap<u32, (String, PieceType)>| {
        while taken.contains_key(&next) {
            next += 1;
        }
        next
    };
    let mut extra: Vec<(String, PieceType)> = Vec::new();
    for s in &spec.control_symbols {
        extra.push((s.clone(), PieceType::Control));
    }
    for s in &spec.user_defined_symbols {
        extra.push((s.clone(), PieceType::UserDefined));
    }
    if spec.byte_fallback {
        for b in 0..=255u8 {
            extra.push((format!("<0x{b:02X}>"), PieceType::Byte));
        }
    }
    let mut result: Vec<(u32, String, PieceType)> = taken.iter().map(|(&i, (p, t))| (i, p.clone(), *t)).collect();
    for (piece, ty) in extra {
        if piece.is_empty() {
            return Err("an empty control or user-defined symbol".into());
        }
        if names.contains_key(&piece) {
            return Err(format!("piece {piece:?} is defined twice"));
        }
        let id = free(&taken);
        taken.insert(id, (piece.clone(), ty));
        names.insert(piece.clone(), id);
        result.push((id, piece, ty));
    }
    result.sort_by_key(|m| m.0);
    Ok(result)
}

/// Replaces every occurrence of a meta piece in `s` by [`BOUNDARY`] (longest match, left to right).
fn replace_meta(s: &str, metas: &[&str]) -> String {
    if metas.is_empty() || !metas.iter().any(|m| s.contains(m)) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let b = s.as_bytes();
    while i < b.len() {
        let best = metas.iter().filter(|m| s[i..].starts_with(**m)).map(|m| m.len()).max();
        match best {
            Some(len) => {
                out.push(BOUNDARY);
                i += len;
            }
            None => {
                let c = s[i..].chars().next().unwrap_or('\0');
                out.push(c);
                i += c.len_utf8().max(1);
            }
        }
    }
    out
}

fn no_lines(c: &SpmCorpus) -> String {
    format!(
        "no usable line to train on ({} empty, {} longer than max_sentence_length, {} containing U+2585)",
        c.skipped_empty, c.skipped_too_long, c.skipped_unk_char
    )
}

/// SentencePiece's `LoadSentences` over `lines` (already sampled; each with count 1).
pub fn prepare<S: AsRef<str> + Sync>(lines: &[S], spec: &SpmSpec) -> Result<SpmCorpus, String> {
    use rayon::prelude::*;
    if !(spec.character_coverage > 0.0 && spec.character_coverage <= 1.0) {
        return Err(format!("character_coverage must be in (0, 1], got {}", spec.character_coverage));
    }
    let meta = meta_pieces(spec)?;
    let mut corpus = SpmCorpus { meta: meta.clone(), ..Default::default() };
    let mut kept: Vec<&str> = Vec::with_capacity(lines.len());
    for l in lines {
        let l = l.as_ref();
        let l = l.strip_suffix('\n').unwrap_or(l);
        if l.is_empty() {
            corpus.skipped_empty += 1;
        } else if l.len() > spec.max_sentence_length {
            corpus.skipped_too_long += 1;
        } else if l.contains(UNK_CHAR) {
            corpus.skipped_unk_char += 1;
        } else {
            kept.push(l);
        }
    }
    if kept.is_empty() {
        return Err(no_lines(&corpus));
    }
    let norm = SpmNormalizer::from_spec(spec);
    let metas: Vec<&str> = meta.iter().map(|m| m.1.as_str()).collect();
    let mut sentences: Vec<(String, u64)> =
        kept.par_iter().map(|l| (replace_meta(&norm.normalize(l), &metas), 1u64)).collect();
    // SentencePiece removes empty results by swapping in the last sentence (keeping its quirk:
    // the swapped-in sentence is not re-checked at that index).
    let mut i = 0;
    while i < sentences.len() {
        if sentences[i].0.is_empty() {
            let last = sentences.len() - 1;
            sentences.swap(i, last);
            sentences.pop();
            corpus.skipped_empty += 1;
        }
        i += 1;
    }
    if sentences.is_empty() {
        return Err(no_lines(&corpus));
    }
    // Character coverage.
    let mut counts: AHashMap<char, (bool, u64)> = AHashMap::new();
    for c in spec.required_chars.chars() {
        if c != '\0' {
            counts.entry(c).or_insert((false, 0)).0 = true;
        }
    }
    // per-thread counts (an array for ASCII, a map for the rest), merged
    type Counts = (u64, Vec<u64>, AHashMap<char, u64>);
    let (all, ascii, other): Counts = sentences
        .par_chunks(4096)
        .map(|chunk| {
            let mut all = 0u64;
            let mut ascii = vec![0u64; 128];
            let mut other: AHashMap<char, u64> = AHashMap::new();
            for (s, f) in chunk {
                for c in s.chars() {
                    if c == '\0' {
                        continue;
                    }
                    if (c as u32) < 128 {
                        ascii[c as usize] += f;
                    } else {
                        *other.entry(c).or_insert(0) += f;
                    }
                    all += f;
                }
            }
            (all, ascii, other)
        })
        .reduce(
            || (0, vec![0u64; 128], AHashMap::new()),
            |mut a, b| {
                a.0 += b.0;
                for (x, y) in a.1.iter_mut().zip(b.1) {
                    *x += y;
                }
                for (c, n) in b.2 {
                    *a.2.entry(c).or_insert(0) += n;
                }
                a
            },
        );
    for (c, n) in other {
        counts.entry(c).or_insert((false, 0)).1 += n;
    }
    for (b, &n) in ascii.iter().enumerate() {
        if n > 0 {
            counts.entry(b as u8 as char).or_insert((false, 0)).1 += n;
        }
    }
    let mut sorted: Vec<(char, bool, u64)> = counts.iter().map(|(&c, &(r, n))| (c, r, n)).collect();
    sorted.sort_by(|a, b| (b.1, b.2).cmp(&(a.1, a.2)).then(a.0.cmp(&b.0)));
    let mut acc: u64 = 0;
    let mut required: AHashMap<char, u64> = AHashMap::new();
    for (c, _, n) in sorted {
        let coverage = (acc as f64 / all as f64) as f32;
        if all > 0 && coverage as f64 >= spec.character_coverage {
            break;
        }
        acc += n;
        if c == BOUNDARY {
            continue;
        }
        required.insert(c, n);
        corpus.required_chars.push((c, n));
    }
    // SentencePiece's Sorted(required_chars_): count desc, code point asc (required or not)
    corpus.required_chars.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut ascii_ok = [false; 128];
    for (b, ok) in ascii_ok.iter_mut().enumerate() {
        *ok = required.contains_key(&(b as u8 as char));
    }
    let kept = |c: char| if (c as u32) < 128 { ascii_ok[c as usize] } else { required.contains_key(&c) };
    sentences.par_iter_mut().for_each(|(s, _)| {
        if s.chars().any(|c| !kept(c)) {
            *s = s.chars().map(|c| if kept(c) { c } else { UNK_CHAR }).collect();
        }
    });
    if corpus.required_chars.len() + meta.len() > spec.vocab_size {
        return Err(format!(
            "vocab_size {} is smaller than the {} required characters plus {} reserved pieces; \
             increase vocab_size or lower character_coverage",
            spec.vocab_size,
            corpus.required_chars.len(),
            meta.len()
        ));
    }
    corpus.sentences = sentences;
    Ok(corpus)
}

/// SentencePiece's `SplitIntoWords`. Prefix mode: a word starts at the text start and at each `▁`
/// (with `allow_ws_only`, only at the first `▁` of a run, so the run prefixes the next word).
/// Suffix mode: each `▁` ends a word (with `allow_ws_only`, a run of `▁` ends it).
pub fn split_into_words(text: &str, suffix: bool, allow_ws_only: bool) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    let mut start = 0;
    let mut in_ws = false;
    if suffix {
        for (i, c) in text.char_indices() {
            let is_ws = c == WS;
            if is_ws {
                in_ws = true;
            } else if in_ws {
                if allow_ws_only && i > start {
                    out.push(&text[start..i]);
                    start = i;
                }
                in_ws = false;
            }
            let end = i + c.len_utf8();
            if is_ws && !allow_ws_only && end < text.len() {
                out.push(&text[start..end]);
                start = end;
            }
        }
    } else {
        for (i, c) in text.char_indices() {
            let is_ws = c == WS;
            if i == 0 || (is_ws && (!in_ws || !allow_ws_only)) {
                if i > start {
                    out.push(&text[start..i]);
                    start = i;
                }
                in_ws = true;
            }
            if in_ws && !is_ws {
                in_ws = false;
            }
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// Words with counts, SentencePiece's `Sorted` order (count desc, string asc).
pub fn count_words(corpus: &SpmCorpus, spec: &SpmSpec) -> Vec<(String, u64)> {
    use rayon::prelude::*;
    let counts: AHashMap<&str, u64> = corpus
        .sentences
        .par_chunks(4096)
        .map(|chunk| {
            let mut counts: AHashMap<&str, u64> = AHashMap::new();
            for (s, f) in chunk {
                if spec.split_by_whitespace {
                    for w in split_into_words(s, spec.treat_whitespace_as_suffix, spec.allow_whitespace_only_pieces) {
                        *counts.entry(w).or_insert(0) += f;
                    }
                } else {
                    *counts.entry(s.as_str()).or_insert(0) += f;
                }
            }
            counts
        })
        .reduce(AHashMap::new, |mut a, b| {
            let (mut a, b) = if a.len() >= b.len() { (a, b) } else { (b, std::mem::take(&mut a)) };
            for (w, n) in b {
                *a.entry(w).or_insert(0) += n;
            }
            a
        });
    let mut words: Vec<(String, u64)> = counts.into_iter().map(|(w, f)| (w.to_string(), f)).collect();
    words.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    words
}

/// SentencePiece's `Serialize`: reserved pieces at their ids, the trained pieces in the gaps.
/// With `hard_vocab_limit` the result must have exactly `vocab_size` pieces.
pub fn assemble(
    meta: &[(u32, String, PieceType)],
    pieces: &[(String, f32)],
    spec: &SpmSpec,
) -> Result<Vec<(String, f32, PieceType)>, String> {
    let mut out = Vec::with_capacity(spec.vocab_size);
    let mut by_id: AHashMap<u32, usize> = AHashMap::new();
    for (i, m) in meta.iter().enumerate() {
        by_id.insert(m.0, i);
    }
    let mut next = 0;
    for id in 0..spec.vocab_size as u32 {
        if let Some(&i) = by_id.get(&id) {
            out.push((meta[i].1.clone(), 0.0, meta[i].2));
        } else if next < pieces.len() {
            out.push((pieces[next].0.clone(), pieces[next].1, PieceType::Normal));
            next += 1;
        } else {
            break;
        }
    }
    if next < pieces.len() {
        return Err(format!("{} trained pieces did not fit in vocab_size {}", pieces.len() - next, spec.vocab_size));
    }
    if out.len() < meta.len() {
        return Err(format!(
            "the reserved ids are not contiguous from 0 for the {} pieces produced (ids must be < the final size)",
            out.len()
        ));
    }
    if spec.hard_vocab_limit && out.len() != spec.vocab_size {
        return Err(format!(
            "Vocabulary size too high ({}): this corpus gives at most {} pieces. Lower vocab_size \
             or set hard_vocab_limit=False",
            spec.vocab_size,
            out.len()
        ));
    }
    Ok(out)
}

/// Alias of [`assemble`] (the name agreed with the Unigram trainer).
pub fn finalize(
    meta: &[(u32, String, PieceType)],
    pieces: &[(String, f32)],
    spec: &SpmSpec,
) -> Result<Vec<(String, f32, PieceType)>, String> {
    assemble(meta, pieces, spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> SpmSpec {
        SpmSpec::default()
    }

    #[test]
    fn normalizer_whitespace() {
        let n = SpmNormalizer::from_spec(&spec());
        assert_eq!(n.normalize("  Hello   world \t"), "▁Hello▁world");
        assert_eq!(n.normalize("   "), "");
        let mut s = spec();
        s.treat_whitespace_as_suffix = true;
        assert_eq!(SpmNormalizer::from_spec(&s).normalize("a b"), "a▁b▁");
        s.add_dummy_prefix = false;
        s.remove_extra_whitespaces = false;
        s.treat_whitespace_as_suffix = false;
        assert_eq!(SpmNormalizer::from_spec(&s).normalize(" a  b "), "▁a▁▁b▁");
    }

    #[test]
    fn find_byte_finds_the_first() {
        let hay = b"abc def  ghijklmnopq r\x01\x00 s";
        for from in 0..=hay.len() {
            for needle in [b' ', b'a', b'q', 0u8, 1u8, b'z'] {
                let want = hay[from..].iter().position(|&x| x == needle).map(|k| from + k);
                assert_eq!(find_byte(hay, from, needle), want, "{from} {needle}");
            }
        }
    }

    #[test]
    fn normalize_into_equals_normalize() {
        let texts = [
            "",
            " ",
            "  a",
            "a  ",
            " Hello   world ",
            "x",
            "a b  c   d",
            "é a",
            "tab\there",
            "a\u{2581}b",
            "  mixed  é  ",
            "~!@# $%^",
            "“quoted” — it’s",
            "ﬁ ① Ⅻ",
            "a\u{00A0}b",
            "\u{3000}x\u{200B}y",
            "A\u{0301} e\u{0301}",
        ];
        for flags in 0..32u8 {
            let mut s = spec();
            s.normalization =
                [Normalization::NmtNfkc, Normalization::Nfkc, Normalization::Identity, Normalization::NmtNfkc]
                    [(flags >> 3) as usize];
            s.add_dummy_prefix = flags & 1 != 0;
            s.remove_extra_whitespaces = flags & 2 != 0;
            s.treat_whitespace_as_suffix = flags & 4 != 0;
            let n = SpmNormalizer::from_spec(&s);
            let mut out = String::from("stale");
            for t in texts {
                n.normalize_into(t, &mut out);
                assert_eq!(out, n.normalize(t), "{t:?} flags {flags}");
            }
        }
    }

    #[test]
    fn validity_rules() {
        let s = spec();
        let v = |t: &str| is_valid_piece(&t.chars().collect::<Vec<_>>(), &s);
        assert!(v("▁the"));
        assert!(!v("a▁"));
        assert!(!v("a1"));
        assert!(v("12"));
        assert!(!v("aб"));
        assert!(v("日本語です"));
        assert!(!v("▅a"));
        assert!(!v(&"a".repeat(17)));
    }

    #[test]
    fn words_prefix_and_suffix() {
        assert_eq!(split_into_words("▁a▁bc", false, false), vec!["▁a", "▁bc"]);
        assert_eq!(split_into_words("a▁bc▁", true, false), vec!["a▁", "bc▁"]);
        assert_eq!(split_into_words("▁▁ab▁c", false, true), vec!["▁▁ab", "▁c"]);
        assert_eq!(split_into_words("▁▁ab▁c", false, false), vec!["▁", "▁ab", "▁c"]);
        assert_eq!(split_into_words("ab▁▁c▁", true, true), vec!["ab▁▁", "c▁"]);
        assert_eq!(split_into_words("ab▁▁c▁", true, false), vec!["ab▁", "▁", "c▁"]);
    }

    #[test]
    fn meta_ids_and_coverage() {
        let mut s = spec();
        s.vocab_size = 300;
        s.user_defined_symbols = vec!["<x>".into()];
        let m = meta_pieces(&s).unwrap();
        assert_eq!(m[3], (3, "<x>".to_string(), PieceType::UserDefined));
        let c = prepare(&["ab <x> ab\n", "", "abc"], &s).unwrap();
        assert_eq!(c.skipped_empty, 1);
        assert_eq!(c.sentences[0].0, "▁ab▁\u{1f}▁ab".replace('\u{1f}', "▅"));
        s.character_coverage = 1.5;
        assert!(prepare(&["a"], &s).is_err());
    }
}
