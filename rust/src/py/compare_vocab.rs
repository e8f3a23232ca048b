//! Binding of `subword compare`'s vocabulary table (`crate::compare::vocab`): type conversion only.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use super::spm_tokenizer::PyCoreSpmTokenizer;
use super::tokenizer::PyCoreTokenizer;
use crate::compare::vocab::{vocab_table, ModelTokens, Spelling, VocabTable};

/// `compare_vocab_table(core, added, byte_level, metaspace, prefix, byte_pieces)` -> a dict of the
/// table of a `CoreTokenizer` / `CoreSpmTokenizer` (`subword/compare/vocab.py` reads it):
/// `surface` and `core` (a list of bytes, one per id), `byte_token` (a byte per id), `char_length` (little-endian i32 per id), `vocab_size`, `unk` (an id or None).
/// `added` are the added tokens `(id, content)` in the tokenizer's order.
#[pyfunction]
#[pyo3(signature = (core, added, byte_level, metaspace, prefix, byte_pieces))]
fn compare_vocab_table<'py>(
    py: Python<'py>,
    core: Bound<'py, PyAny>,
    added: Vec<(u32, String)>,
    byte_level: bool,
    metaspace: Option<String>,
    prefix: String,
    byte_pieces: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let spelling = Spelling { byte_level, metaspace: metaspace.as_deref(), prefix: &prefix, byte_pieces };
    // The unknown token's id as `vocab.py`'s `unk_id` finds it: its text looked up like any token's.
    let (table, unk): (VocabTable, Option<u32>) = if let Ok(t) = core.extract::<PyRef<'_, PyCoreTokenizer>>() {
        let tok = t.get()?;
        py.detach(|| {
            let m = tok.model();
            let model = ModelTokens { bound: m.id_bound(), token: |i| m.id_to_token(i), id: |s: &str| m.token_to_id(s) };
            (vocab_table(&model, &added, &spelling), m.unk_token().and_then(|u| tok.token_to_id(u)))
        })
    } else if let Ok(t) = core.extract::<PyRef<'_, PyCoreSpmTokenizer>>() {
        let p = t.pipeline();
        py.detach(|| {
            let model = ModelTokens { bound: p.vocab_size(), token: |i| p.id_to_token(i), id: |s: &str| p.token_to_id(s) };
            (vocab_table(&model, &added, &spelling), p.id_to_token(p.unk_id()).and_then(|u| p.token_to_id(u)))
        })
    } else {
        return Err(PyTypeError::new_err(format!(
            "core is a {}, not a CoreTokenizer or CoreSpmTokenizer",
            core.get_type().name()?
        )));
    };
    let out = PyDict::new(py);
    let le = |v: &mut dyn Iterator<Item = [u8; 4]>| v.flatten().collect::<Vec<u8>>();
    // The per-id bytes objects, made here (a Python loop slicing one buffer cost more than the table).
    let (mut surface, mut core) = (Vec::with_capacity(table.ends.len()), Vec::with_capacity(table.ends.len()));
    let mut start = 0usize;
    for (&end, &skip) in table.ends.iter().zip(&table.core_skips_space) {
        let bytes = &table.surfaces[start..end as usize];
        let s = PyBytes::new(py, bytes);
        core.push(if skip { PyBytes::new(py, &bytes[1..]) } else { s.clone() });
        surface.push(s);
        start = end as usize;
    }
    out.set_item("surface", PyList::new(py, surface)?)?;
    out.set_item("core", PyList::new(py, core)?)?;
    out.set_item("char_length", PyBytes::new(py, &le(&mut table.char_length.iter().map(|x| x.to_le_bytes()))))?;
    let flags = |v: &[bool]| v.iter().map(|&b| u8::from(b)).collect::<Vec<u8>>();
    out.set_item("byte_token", PyBytes::new(py, &flags(&table.byte_token)))?;
    out.set_item("vocab_size", table.vocab_size)?;
    out.set_item("unk", unk)?;
    Ok(out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compare_vocab_table, m)?)?;
    Ok(())
}
