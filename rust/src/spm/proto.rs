//! The pieces of a SentencePiece `.model` file (a `ModelProto`), parsed without a protobuf library.
//!
//! `subword/formats/spm.py` reads `.model` files and owns what their fields mean; this module only
//! splits the message, because a 32k-piece model is 32k small nested messages and parsing those in
//! Python took 250 ms, thirty times sentencepiece's whole load (benchmarks/bench_load.py). The
//! pieces come back decoded (`piece`, `score`, `type`); every other top-level field comes back as
//! its number, wire type and byte range, for the Python reader to decode as before.
//!
//! Wire format: a field is a varint key (`number << 3 | wire type`) then a varint (type 0), 8
//! bytes (1), a varint length and that many bytes (2), or 4 bytes (5). `ModelProto.pieces` is field
//! 1 (a message: `piece` 1 string, `score` 2 float, `type` 3 enum).

/// One top-level field other than a piece: number, wire type, and the byte range of the whole
/// field (key included) and of its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawField {
    pub number: u32,
    pub wire: u8,
    pub whole: std::ops::Range<usize>,
    pub value: std::ops::Range<usize>,
}

/// The parsed top level of a `ModelProto`.
#[derive(Clone, Debug, Default)]
pub struct ModelParts {
    /// `(piece, score, type)` in id order (type as the ModelProto number, 1 when absent).
    pub pieces: Vec<(String, f32, i32)>,
    pub fields: Vec<RawField>,
}

fn varint(buf: &[u8], i: &mut usize) -> Result<u64, String> {
    let mut shift = 0;
    let mut out = 0u64;
    loop {
        let b = *buf.get(*i).ok_or("truncated SentencePiece model (a number runs past the end of the data)")?;
        *i += 1;
        out |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Ok(out);
        }
        shift += 7;
        if shift > 63 {
            return Err("not a SentencePiece model (malformed number)".into());
        }
    }
}

/// Reads one field at `*i`; returns (number, wire type, value range, varint value for type 0).
fn field(buf: &[u8], i: &mut usize) -> Result<(u32, u8, std::ops::Range<usize>, u64), String> {
    let key = varint(buf, i)?;
    let (number, wire) = ((key >> 3) as u32, (key & 7) as u8);
    if number == 0 {
        return Err("not a SentencePiece model (field number 0)".into());
    }
    let start = *i;
    let (len, v) = match wire {
        0 => {
            let v = varint(buf, i)?;
            return Ok((number, wire, start..*i, v));
        }
        1 => (8, 0),
        2 => (varint(buf, i)? as usize, 0),
        5 => (4, 0),
        _ => return Err(format!("not a SentencePiece model (unknown wire type {wire})")),
    };
    let begin = *i;
    let end = begin.checked_add(len).filter(|&e| e <= buf.len()).ok_or(if wire == 2 {
        "truncated SentencePiece model (a field runs past the end of the data)"
    } else {
        "truncated SentencePiece model"
    })?;
    *i = end;
    Ok((number, wire, begin..end, v))
}

fn piece(buf: &[u8]) -> Result<(String, f32, i32), String> {
    let (mut text, mut score, mut kind) = (None, 0.0f32, 1u64);
    let mut i = 0;
    while i < buf.len() {
        let (number, wire, value, v) = field(buf, &mut i)?;
        match (number, wire) {
            (1, 2) => {
                let s = std::str::from_utf8(&buf[value])
                    .map_err(|_| "not a SentencePiece model (a piece is not UTF-8)".to_string())?;
                text = Some(s.to_string());
            }
            (2, 5) => {
                let b = &buf[value];
                score = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
            (3, 0) => kind = v,
            _ => {}
        }
    }
    let text = text.filter(|t| !t.is_empty()).ok_or("not a SentencePiece model (a piece is empty)")?;
    if !(1..=6).contains(&kind) {
        return Err(format!("not a SentencePiece model (unknown piece type {kind})"));
    }
    Ok((text, score, kind as i32))
}

/// Splits a `ModelProto`: decoded pieces, the other top-level fields as byte ranges.
pub fn parse_model(buf: &[u8]) -> Result<ModelParts, String> {
    parse(buf, true)
}

/// The top-level fields other than the pieces (which are still checked to be well-formed
/// messages, not decoded).
pub fn parse_fields(buf: &[u8]) -> Result<ModelParts, String> {
    parse(buf, false)
}

fn parse(buf: &[u8], with_pieces: bool) -> Result<ModelParts, String> {
    let mut out = ModelParts::default();
    let mut i = 0;
    while i < buf.len() {
        let start = i;
        let (number, wire, value, _) = field(buf, &mut i)?;
        if number == 1 && wire == 2 {
            if with_pieces {
                out.pieces.push(piece(&buf[value])?);
            }
        } else {
            out.fields.push(RawField { number, wire, whole: start..i, value });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece_msg(p: &str, score: f32, kind: Option<u8>) -> Vec<u8> {
        let mut body = vec![0x0a, p.len() as u8];
        body.extend_from_slice(p.as_bytes());
        body.push(0x15);
        body.extend_from_slice(&score.to_le_bytes());
        if let Some(k) = kind {
            body.extend_from_slice(&[0x18, k]);
        }
        let mut out = vec![0x0a, body.len() as u8];
        out.extend(body);
        out
    }

    #[test]
    fn pieces_and_other_fields() {
        let mut buf = piece_msg("<unk>", 0.0, Some(2));
        buf.extend(piece_msg("▁a", -1.5, None));
        buf.extend_from_slice(&[0x12, 0x02, 0x18, 0x02]); // trainer_spec { model_type: 2 }
        let m = parse_model(&buf).unwrap();
        assert_eq!(m.pieces, vec![("<unk>".to_string(), 0.0, 2), ("▁a".to_string(), -1.5, 1)]);
        assert_eq!(m.fields.len(), 1);
        assert_eq!((m.fields[0].number, m.fields[0].wire), (2, 2));
        assert_eq!(&buf[m.fields[0].value.clone()], &[0x18, 0x02]);
    }

    #[test]
    fn truncated_and_malformed_input_is_an_error() {
        let buf = piece_msg("ab", 1.0, Some(1));
        for cut in 1..buf.len() {
            assert!(parse_model(&buf[..cut]).is_err(), "{cut}");
        }
        assert!(parse_model(&[0x0f]).is_err()); // wire type 7
        assert!(parse_model(&piece_msg("ab", 1.0, Some(9))).unwrap_err().contains("piece type 9"));
        assert!(parse_model(&[0x0a, 0x02, 0x0a, 0x00]).unwrap_err().contains("empty"));
    }
}
