"""The compiled core is present and built from the sources in this checkout.

A missing or stale extension (Rust sources changed, ``pip install -e .`` not run again) must fail the
suite, not skip tests or test old code: the other test files import ``subword._core`` directly.
"""

from __future__ import annotations

from pathlib import Path

RUST = Path(__file__).resolve().parents[1] / "rust"


def source_hash(root: Path = RUST) -> str:
    """FNV-1a (64 bit) over Cargo.toml and the crate's ``src/`` files, as ``rust/build.rs`` computes it."""
    paths = [root / "Cargo.toml", *(p for p in (root / "src").rglob("*") if p.is_file() and p.suffix in (".rs", ".py"))]
    h = 0xCBF29CE484222325
    for rel, path in sorted((p.relative_to(root).as_posix(), p) for p in paths):
        for chunk in (rel.encode("utf-8"), b"\0", path.read_bytes(), b"\0"):
            for b in chunk:
                h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def test_extension_is_built_from_these_sources() -> None:
    from subword import _core  # an ImportError here is the failure "the extension is not built"

    assert _core.SOURCE_HASH == source_hash(), (
        "subword._core was built from other Rust sources than rust/ holds now (a stale build): "
        "run `python3 -m pip install -e .` again"
    )
