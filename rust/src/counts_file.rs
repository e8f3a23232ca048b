//! The record stream of a word-counts file (`.swc`) and of the sorted runs spilled while counting.
//!
//! A record is `varint(len) word-bytes varint(count)`; a stream holds records sorted by the word's
//! UTF-8 bytes, each word once. The framing around it (magic, version, the pipeline as JSON, the
//! trailer with lengths and checksums) is written and checked in Python, in
//! `subword/formats/counts.py`; this module does the part that is per word: encoding, decoding
//! with validation, the CRC-32 of the bytes, and the k-way merge of sorted streams.
//!
//! Performance notes
//! - Varints keep a typical record at `len + 2` bytes (most counts are below 128).
//! - The merge holds one record per input in a binary heap, so merging runs needs memory for one
//!   word per run plus the I/O buffers, whatever the number of words.
//! - CRC-32 (IEEE, the one zlib computes, so Python can check it with `zlib.crc32`) is table driven,
//!   about 1 GB/s: a small cost next to the counting that made the words.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::io::{self, BufRead, Write};

/// The IEEE CRC-32 table (reflected polynomial 0xEDB88320).
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// Incremental CRC-32, equal to Python's `zlib.crc32` over the same bytes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Crc32(u32);

impl Crc32 {
    pub fn new() -> Self {
        Crc32(0)
    }

    pub fn update(&mut self, bytes: &[u8]) {
        let mut c = !self.0;
        for &b in bytes {
            c = CRC_TABLE[((c ^ b as u32) & 0xFF) as usize] ^ (c >> 8);
        }
        self.0 = !c;
    }

    pub fn value(&self) -> u32 {
        self.0
    }
}

/// What a written stream holds: records, the sum of their counts, bytes, and the CRC-32 of the bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamSummary {
    pub words: u64,
    pub occurrences: u64,
    pub bytes: u64,
    pub crc32: u32,
}

/// Writes records in the order given (the caller sorts), counting bytes and the CRC as it goes.
pub struct RecordWriter<W: Write> {
    out: W,
    summary: StreamSummary,
    crc: Crc32,
    buf: Vec<u8>,
}

fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

impl<W: Write> RecordWriter<W> {
    pub fn new(out: W) -> Self {
        RecordWriter { out, summary: StreamSummary::default(), crc: Crc32::new(), buf: Vec::with_capacity(1 << 16) }
    }

    pub fn write(&mut self, word: &[u8], count: u64) -> io::Result<()> {
        put_varint(&mut self.buf, word.len() as u64);
        self.buf.extend_from_slice(word);
        put_varint(&mut self.buf, count);
        self.summary.words += 1;
        self.summary.occurrences = self.summary.occurrences.saturating_add(count);
        if self.buf.len() >= 1 << 16 {
            self.flush_buf()?;
        }
        Ok(())
    }

    fn flush_buf(&mut self) -> io::Result<()> {
        self.crc.update(&self.buf);
        self.summary.bytes += self.buf.len() as u64;
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    /// Flushes everything and returns the summary and the inner writer.
    pub fn finish(mut self) -> io::Result<(StreamSummary, W)> {
        self.flush_buf()?;
        self.out.flush()?;
        self.summary.crc32 = self.crc.value();
        Ok((self.summary, self.out))
    }
}

/// Reads and validates records: each varint well formed, each word UTF-8, words strictly
/// increasing. Stops after `limit` bytes (the stream's length in its file), and keeps the CRC.
pub struct RecordReader<R: BufRead> {
    input: R,
    remaining: u64,
    crc: Crc32,
    last: Option<Vec<u8>>,
    /// Record number, for error messages.
    index: u64,
}

fn corrupt(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

impl<R: BufRead> RecordReader<R> {
    pub fn new(input: R, limit: u64) -> Self {
        RecordReader { input, remaining: limit, crc: Crc32::new(), last: None, index: 0 }
    }

    fn byte(&mut self) -> io::Result<u8> {
        if self.remaining == 0 {
            return Err(corrupt(format!("record {} is cut off at the end of the word list", self.index)));
        }
        let mut b = [0u8; 1];
        self.input.read_exact(&mut b).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                corrupt(format!("the file ends inside record {} (truncated)", self.index))
            } else {
                e
            }
        })?;
        self.remaining -= 1;
        self.crc.update(&b);
        Ok(b[0])
    }

    fn varint(&mut self) -> io::Result<u64> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= ((b & 0x7F) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(corrupt(format!("record {} has a malformed length or count", self.index)))
    }

    /// The next record, or None at the end of the stream.
    pub fn next_record(&mut self) -> io::Result<Option<(Vec<u8>, u64)>> {
        if self.remaining == 0 {
            return Ok(None);
        }
        let len = self.varint()?;
        if len > self.remaining {
            return Err(corrupt(format!("record {} claims a word of {len} bytes, past the end of the list", self.index)));
        }
        let mut word = vec![0u8; len as usize];
        self.input.read_exact(&mut word).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                corrupt(format!("the file ends inside record {} (truncated)", self.index))
            } else {
                e
            }
        })?;
        self.remaining -= len;
        self.crc.update(&word);
        let count = self.varint()?;
        if std::str::from_utf8(&word).is_err() {
            return Err(corrupt(format!("record {} holds a word that is not UTF-8", self.index)));
        }
        if let Some(prev) = &self.last {
            if prev.as_slice() >= word.as_slice() {
                return Err(corrupt(format!("record {} is out of order (words must be sorted and unique)", self.index)));
            }
        }
        self.last = Some(word.clone());
        self.index += 1;
        Ok(Some((word, count)))
    }

    /// The CRC-32 of the bytes read so far.
    pub fn crc32(&self) -> u32 {
        self.crc.value()
    }
}

/// A record stream held in memory (the word list of a counts file, read in one piece), decoded and
/// validated on every pass: the training words of `train --from-counts`, which `bpe/select.rs`
/// reads three times to keep only the words the trainer needs. Holding the encoded stream costs
/// about `len + 2` bytes per word, against ~120 bytes per word for a loaded [`crate::count::WordCounter`].
pub struct RecordBytes {
    pub bytes: Vec<u8>,
    /// Map each word through the byte-level table (the pipeline's pre-tokenizer is ByteLevel).
    pub byte_level: bool,
    /// Words counted fewer times are skipped (`--min-count`).
    pub min_count: u64,
}

/// A varint at `*pos` of `bytes`; None if it runs past the end or over 10 bytes.
fn slice_varint(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*pos)?;
        *pos += 1;
        v |= ((b & 0x7F) as u64) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

impl RecordBytes {
    /// Calls `f(raw word, count)` for every record counted at least `min_count` times, checking
    /// framing, UTF-8 and order as [`RecordReader`] does. Returns the number of records.
    pub fn for_each_raw<F: FnMut(&str, u64)>(&self, mut f: F) -> io::Result<u64> {
        let b = &self.bytes[..];
        let (mut pos, mut index) = (0usize, 0u64);
        let mut prev: Option<&[u8]> = None;
        while pos < b.len() {
            let cut = || corrupt(format!("record {index} is cut off at the end of the word list"));
            let len = slice_varint(b, &mut pos).ok_or_else(cut)?;
            if len > (b.len() - pos) as u64 {
                return Err(corrupt(format!("record {index} claims a word of {len} bytes, past the end of the list")));
            }
            let word = &b[pos..pos + len as usize];
            pos += len as usize;
            let count = slice_varint(b, &mut pos).ok_or_else(cut)?;
            let Ok(text) = std::str::from_utf8(word) else {
                return Err(corrupt(format!("record {index} holds a word that is not UTF-8")));
            };
            if prev.is_some_and(|p| p >= word) {
                return Err(corrupt(format!("record {index} is out of order (words must be sorted and unique)")));
            }
            prev = Some(word);
            index += 1;
            if count >= self.min_count {
                f(text, count);
            }
        }
        Ok(index)
    }
}

impl crate::bpe::select::WordStream for RecordBytes {
    fn for_each_word<F: FnMut(&str, u64)>(&self, mut f: F) -> io::Result<()> {
        if self.byte_level {
            let mut buf = String::new();
            self.for_each_raw(|w, c| {
                crate::pretok::byte_level_map_into(w, &mut buf);
                f(&buf, c);
            })?;
        } else {
            self.for_each_raw(f)?;
        }
        Ok(())
    }
}

/// One sorted source of records for [`merge_sorted`].
pub trait SortedRecords {
    fn next_record(&mut self) -> io::Result<Option<(Vec<u8>, u64)>>;
    /// The CRC-32 of the bytes read so far (0 for sources that are not bytes).
    fn crc32(&self) -> u32 {
        0
    }
}

impl<R: BufRead> SortedRecords for RecordReader<R> {
    fn next_record(&mut self) -> io::Result<Option<(Vec<u8>, u64)>> {
        RecordReader::next_record(self)
    }
    fn crc32(&self) -> u32 {
        RecordReader::crc32(self)
    }
}

/// A source whose errors name it (a file path), so a merge says which input is bad.
pub struct Named<S: SortedRecords> {
    pub name: String,
    pub inner: S,
}

impl<S: SortedRecords> SortedRecords for Named<S> {
    fn next_record(&mut self) -> io::Result<Option<(Vec<u8>, u64)>> {
        self.inner.next_record().map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", self.name)))
    }
    fn crc32(&self) -> u32 {
        self.inner.crc32()
    }
}

/// Records already in memory, sorted.
pub struct VecRecords<I: Iterator<Item = (Vec<u8>, u64)>>(pub I);

impl<I: Iterator<Item = (Vec<u8>, u64)>> SortedRecords for VecRecords<I> {
    fn next_record(&mut self) -> io::Result<Option<(Vec<u8>, u64)>> {
        Ok(self.0.next())
    }
}

struct HeapItem {
    word: Vec<u8>,
    count: u64,
    source: usize,
}

impl PartialEq for HeapItem {
    fn eq(&self, other: &Self) -> bool {
        self.word == other.word && self.source == other.source
    }
}
impl Eq for HeapItem {}
impl PartialOrd for HeapItem {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for HeapItem {
    fn cmp(&self, other: &Self) -> Ordering {
        self.word.cmp(&other.word).then(self.source.cmp(&other.source))
    }
}

/// Merges sorted streams into `out`, adding the counts of equal words (saturating) and keeping
/// only words whose total is at least `min_count`.
pub fn merge_sorted<W: Write>(
    sources: &mut [Box<dyn SortedRecords + '_>],
    out: &mut RecordWriter<W>,
    min_count: u64,
) -> io::Result<()> {
    let mut heap = BinaryHeap::new();
    for (i, s) in sources.iter_mut().enumerate() {
        if let Some((word, count)) = s.next_record()? {
            heap.push(Reverse(HeapItem { word, count, source: i }));
        }
    }
    let mut current: Option<(Vec<u8>, u64)> = None;
    while let Some(Reverse(item)) = heap.pop() {
        if let Some((word, count)) = sources[item.source].next_record()? {
            heap.push(Reverse(HeapItem { word, count, source: item.source }));
        }
        match &mut current {
            Some((w, c)) if *w == item.word => *c = c.saturating_add(item.count),
            _ => {
                if let Some((w, c)) = current.take() {
                    if c >= min_count {
                        out.write(&w, c)?;
                    }
                }
                current = Some((item.word, item.count));
            }
        }
    }
    if let Some((w, c)) = current {
        if c >= min_count {
            out.write(&w, c)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(records: &[(&str, u64)]) -> Vec<u8> {
        let mut w = RecordWriter::new(Vec::new());
        for (word, c) in records {
            w.write(word.as_bytes(), *c).unwrap();
        }
        w.finish().unwrap().1
    }

    #[test]
    fn crc_matches_zlib() {
        // zlib.crc32(b"123456789") == 0xCBF43926, the standard check value.
        let mut c = Crc32::new();
        c.update(b"1234");
        c.update(b"56789");
        assert_eq!(c.value(), 0xCBF4_3926);
    }

    #[test]
    fn round_trip_and_validation() {
        let bytes = stream(&[("a", 1), ("b", 300), ("é", u64::MAX)]);
        let mut r = RecordReader::new(&bytes[..], bytes.len() as u64);
        let mut got = Vec::new();
        while let Some((w, c)) = r.next_record().unwrap() {
            got.push((String::from_utf8(w).unwrap(), c));
        }
        assert_eq!(got, vec![("a".into(), 1), ("b".into(), 300), ("é".into(), u64::MAX)]);
        let mut whole = Crc32::new();
        whole.update(&bytes);
        assert_eq!(r.crc32(), whole.value());
        // Cut short: an error naming truncation, never a silent short list.
        let mut r = RecordReader::new(&bytes[..bytes.len() - 1], bytes.len() as u64);
        let err = loop {
            match r.next_record() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("a truncated stream must fail"),
                Err(e) => break e,
            }
        };
        assert!(err.to_string().contains("truncated"), "{err}");
        // Out of order.
        let bad = stream(&[("b", 1), ("a", 1)]);
        let mut r = RecordReader::new(&bad[..], bad.len() as u64);
        r.next_record().unwrap();
        assert!(r.next_record().unwrap_err().to_string().contains("out of order"));
    }

    #[test]
    fn record_bytes_read_like_the_reader_and_refuse_the_same_damage() {
        use crate::bpe::select::WordStream;
        let bytes = stream(&[("a", 1), ("b", 300), ("é", 2)]);
        let rb = RecordBytes { bytes: bytes.clone(), byte_level: true, min_count: 2 };
        let mut got = Vec::new();
        rb.for_each_word(|w, c| got.push((w.to_string(), c))).unwrap();
        // Byte-level: é (C3 A9) maps to two chars; "a" is under --min-count 2.
        assert_eq!(got, vec![("b".to_string(), 300), ("Ã©".to_string(), 2)]);
        let cut = RecordBytes { bytes: bytes[..bytes.len() - 1].to_vec(), byte_level: false, min_count: 0 };
        assert!(cut.for_each_raw(|_, _| ()).unwrap_err().to_string().contains("cut off"));
        let bad = RecordBytes { bytes: stream(&[("b", 1), ("a", 1)]), byte_level: false, min_count: 0 };
        assert!(bad.for_each_raw(|_, _| ()).unwrap_err().to_string().contains("out of order"));
    }

    #[test]
    fn merge_adds_counts_and_filters() {
        let a = stream(&[("a", 1), ("c", 2)]);
        let b = stream(&[("b", 5), ("c", 3)]);
        let mut sources: Vec<Box<dyn SortedRecords>> = vec![
            Box::new(RecordReader::new(&a[..], a.len() as u64)),
            Box::new(RecordReader::new(&b[..], b.len() as u64)),
        ];
        let mut w = RecordWriter::new(Vec::new());
        merge_sorted(&mut sources, &mut w, 2).unwrap();
        let mut crc = Crc32::new();
        crc.update(&a);
        assert_eq!(sources[0].crc32(), crc.value());
        let (summary, out) = w.finish().unwrap();
        assert_eq!(out, stream(&[("b", 5), ("c", 5)]));
        assert_eq!((summary.words, summary.occurrences), (2, 10));
    }
}
