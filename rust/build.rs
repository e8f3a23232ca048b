//! Records a fingerprint of the crate's sources in the build (`SUBWORD_SOURCE_HASH`), exposed to Python as
//! `subword._core.SOURCE_HASH`, so the test suite can tell an extension built from these sources from a
//! stale one (sources changed, extension not rebuilt) and fail instead of testing old code.
//!
//! The fingerprint is FNV-1a (64 bit) over `Cargo.toml` and every file under `src/`, in sorted path order,
//! each as its path relative to the crate (with `/`), a NUL byte, its bytes, a NUL byte; the tests compute
//! the same in Python (`tests/test_extension.py`).

use std::fs;
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs" || e == "py") {
            out.push(path);
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
    let mut paths = vec![root.join("Cargo.toml")];
    files(&root.join("src"), &mut paths);
    let mut named: Vec<(String, PathBuf)> = paths
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&root).unwrap_or(&p).to_string_lossy().replace('\\', "/");
            (rel, p)
        })
        .collect();
    named.sort();
    let mut hash: u64 = 0xcbf29ce484222325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x100000001b3);
        }
    };
    for (rel, path) in &named {
        feed(rel.as_bytes());
        feed(&[0]);
        feed(&fs::read(path).unwrap_or_default());
        feed(&[0]);
    }
    println!("cargo:rustc-env=SUBWORD_SOURCE_HASH={hash:016x}");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=Cargo.toml");
}
