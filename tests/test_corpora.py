"""Tests for corpora/: sources, readers, compression, sampling and the built-in corpus."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import logging
import lzma
import sys
from collections import Counter
from pathlib import Path

import pytest

import corpora
from corpora import CorpusError, CorpusReader, expand_sources, read_lines, sample_lines
from corpora.builtin import stdlib_prose

from _corpora import CORPORA


# ==== sources ====


def test_directory_walk_is_sorted_recursive_and_skips_hidden_and_binary(tmp_path: Path, caplog) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / ".git").mkdir()
    (tmp_path / "b" / "z.txt").write_text("z\n")
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "c.txt").write_text("c\n")
    (tmp_path / ".git" / "x.txt").write_text("hidden\n")
    (tmp_path / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    with caplog.at_level(logging.WARNING, logger="corpora"):
        names = [Path(s.name).relative_to(tmp_path).as_posix() for s in expand_sources([tmp_path])]
    assert names == ["a.txt", "b/z.txt", "c.txt"]
    warned = " ".join(r.getMessage() for r in caplog.records)
    assert "img.png" in warned and "NUL" in warned
    assert "latin1.txt" in warned and "UTF-8" in warned


def test_glob_missing_file_and_empty_glob(tmp_path: Path) -> None:
    for name in ("2.txt", "1.txt", "x.md"):
        (tmp_path / name).write_text(name + "\n")
    got = [Path(s.name).name for s in expand_sources([str(tmp_path / "*.txt")])]
    assert got == ["1.txt", "2.txt"]
    with pytest.raises(CorpusError, match="no such file"):
        expand_sources([tmp_path / "missing.txt"])
    with pytest.raises(CorpusError, match="no files match"):
        expand_sources([str(tmp_path / "*.csv")])


def test_a_single_string_is_one_source_not_characters(tmp_path: Path) -> None:
    p = tmp_path / "one.txt"
    p.write_text("x\n")
    assert list(read_lines(str(p))) == ["x\n"]


# ==== line reading ====


def test_lines_keep_their_endings_and_split_on_newline_only(tmp_path: Path) -> None:
    p = tmp_path / "t.txt"
    # \r alone, \x0b, \x0c and U+2028 are not line ends for HF's reader, so not for ours.
    p.write_bytes("a\r\nb\rc\x0bd\u2028e\n\nlast".encode())
    assert list(read_lines([p])) == ["a\r\n", "b\rc\x0bd\u2028e\n", "\n", "last"]


def test_lines_match_hf_file_reader_line_count(tmp_path: Path) -> None:
    """Our lines are what HF feeds its trainer: the same count as a \\n split of the file."""
    text = "x y\nz\r\n\n  \nlast line without newline"
    p = tmp_path / "t.txt"
    p.write_text(text, encoding="utf-8", newline="")
    lines = list(read_lines([p]))
    assert "".join(lines) == text
    assert len(lines) == text.count("\n") + 1


@pytest.mark.parametrize(
    ("suffix", "compress"),
    [(".gz", gzip.compress), (".bz2", bz2.compress), (".xz", lzma.compress), (".data", gzip.compress)],
    ids=["gz", "bz2", "xz", "gz-by-magic"],
)
def test_compressed_files(tmp_path: Path, suffix: str, compress) -> None:
    text = "héllo wörld\nsecond\n"
    p = tmp_path / ("c" + suffix)
    p.write_bytes(compress(text.encode()))
    assert "".join(read_lines([p])) == text


def test_truncated_gzip_is_a_corpus_error(tmp_path: Path) -> None:
    p = tmp_path / "t.gz"
    text = "".join(f"line {i * 7919 % 10007}\n" for i in range(20000))
    p.write_bytes(gzip.compress(text.encode())[:2000])
    with pytest.raises(CorpusError, match="t.gz.*corrupt or truncated"):
        list(read_lines([p]))


def test_stdin_dash(monkeypatch) -> None:
    fake = io.TextIOWrapper(io.BytesIO(b"one\ntwo\n"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", fake)
    assert list(read_lines(["-"])) == ["one\n", "two\n"]


def test_text_only_stdin(monkeypatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("a\nb"))
    assert list(read_lines("-")) == ["a\n", "b"]


def test_stdin_gzip(monkeypatch) -> None:
    fake = io.TextIOWrapper(io.BufferedReader(io.BytesIO(gzip.compress(b"z\n"))), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", fake)
    assert list(read_lines("-")) == ["z\n"]


def test_invalid_utf8_names_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "bad.txt"
    p.write_bytes(b"good\nalso good\nbad \xff here\n")
    with pytest.raises(CorpusError) as info:
        list(read_lines([p]))
    assert info.value.source == str(p) and info.value.line == 3
    assert str(info.value).startswith(f"{p}:3: invalid UTF-8")
    assert "0xff" in str(info.value)


def test_invalid_utf8_replaced_on_request(tmp_path: Path) -> None:
    p = tmp_path / "bad.txt"
    p.write_bytes(b"bad \xff here\n")
    assert list(read_lines([p], errors="replace")) == ["bad \ufffd here\n"]


def test_nul_bytes_are_a_binary_file_error(tmp_path: Path) -> None:
    p = tmp_path / "x.bin"
    p.write_bytes(b"text\n\x00\x01\x02binary\n")
    with pytest.raises(CorpusError, match=r"x\.bin:2: NUL byte.*binary"):
        list(read_lines([p]))
    # Replacing undecodable bytes does not turn a binary file into text.
    with pytest.raises(CorpusError, match="binary"):
        list(read_lines([p], errors="replace"))


def test_utf16_file_is_reported_not_garbled(tmp_path: Path) -> None:
    p = tmp_path / "u16.txt"
    p.write_bytes("hello\n".encode("utf-16"))
    with pytest.raises(CorpusError, match="UTF-16"):
        list(read_lines([p]))


def test_caps_on_lines_and_bytes(tmp_path: Path) -> None:
    p = tmp_path / "t.txt"
    p.write_text("".join(f"line {i}\n" for i in range(100)))
    reader = CorpusReader([p], max_lines=5)
    assert len(list(reader)) == 5 and reader.truncated
    # "line 0\n" is 7 bytes: a cap of 20 keeps two whole lines, never a cut line.
    reader = CorpusReader([p], max_bytes=20)
    assert list(reader) == ["line 0\n", "line 1\n"]
    assert reader.bytes_read == 14 and reader.truncated
    reader = CorpusReader([p])
    assert len(list(reader)) == 100 and not reader.truncated


def test_caps_span_several_files(tmp_path: Path) -> None:
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("1\n2\n3\n")
    assert len(list(read_lines([tmp_path], max_lines=4))) == 4


def test_reader_counts_and_refuses_a_second_pass(tmp_path: Path) -> None:
    p = tmp_path / "t.txt"
    p.write_text("ab\ncd\n")
    reader = CorpusReader([p])
    assert list(reader) == ["ab\n", "cd\n"]
    assert (reader.lines_read, reader.bytes_read, reader.sources_read) == (2, 6, 1)
    with pytest.raises(RuntimeError, match="only once"):
        iter(reader)


def test_progress_callback_reports_bytes(tmp_path: Path) -> None:
    p = tmp_path / "t.txt"
    p.write_text("x" * 1000 + "\n")
    calls: list[tuple[int, int | None]] = []
    list(CorpusReader([p], progress=lambda done, total: calls.append((done, total))))
    assert calls[-1] == (1001, 1001)


def test_bad_arguments_are_value_errors(tmp_path: Path) -> None:
    p = tmp_path / "t.txt"
    p.write_text("x\n")
    with pytest.raises(ValueError, match="errors"):
        CorpusReader([p], errors="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_lines"):
        CorpusReader([p], max_lines=-1)


# ==== JSON lines ====


def test_jsonl_field_plain_and_nested(tmp_path: Path) -> None:
    p = tmp_path / "d.jsonl"
    records = [{"text": "first doc\nwith two lines", "meta": {"t": "a"}}, {"text": "second", "meta": {"t": "b"}}]
    p.write_text("\n".join(json.dumps(r) for r in records) + "\n\n")
    assert list(read_lines([p], jsonl_field="text")) == ["first doc\nwith two lines", "second"]
    assert list(read_lines([p], jsonl_field="meta.t")) == ["a", "b"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"text": "ok"}\n{"body": "x"}\n', r"d\.jsonl:2: JSON record has no field 'text'"),
        ('{"text": "ok"}\n{"text": 3}\n', r"d\.jsonl:2: JSON field 'text' is int"),
        ('{"text": "ok"}\nnot json\n', r"d\.jsonl:2: not valid JSON"),
    ],
    ids=["missing-field", "not-a-string", "not-json"],
)
def test_jsonl_errors_name_the_line(tmp_path: Path, content: str, message: str) -> None:
    p = tmp_path / "d.jsonl"
    p.write_text(content)
    with pytest.raises(CorpusError, match=message):
        list(read_lines([p], jsonl_field="text"))


# ==== sampling ====


def test_sample_is_reproducible_and_in_corpus_order() -> None:
    lines = [f"{i}\n" for i in range(10_000)]
    a = sample_lines(lines, 100, seed=3)
    b = sample_lines(iter(lines), 100, seed=3)
    c = sample_lines(lines, 100, seed=4)
    assert a == b and a != c
    assert len(a) == 100 and len(set(a)) == 100
    assert a == sorted(a, key=lambda s: int(s))


def test_sample_is_roughly_uniform() -> None:
    """Each of 10 lines should be kept about half the time when sampling 5; a biased reservoir fails."""
    counts: Counter[str] = Counter()
    for seed in range(2000):
        counts.update(sample_lines([str(i) for i in range(10)], 5, seed=seed))
    for i in range(10):
        assert 850 < counts[str(i)] < 1150, counts


def test_sample_edge_cases() -> None:
    assert sample_lines(["a"], 0) == []
    assert sample_lines([], 5) == []
    with pytest.raises(ValueError):
        sample_lines(["a"], -1)
    assert corpora.first_lines(iter("abc"), 2) == ["a", "b"]


# ==== built-in corpus ====


def test_stdlib_prose_extraction(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "site-packages").mkdir()
    (tmp_path / "b.py").write_text(
        "'''Module b.\n\n>>> 1 + 1\n2\n'''\n#!/not/a/shebang here\n# -*- coding: utf-8 -*-\n"
        "# -----\n# First line of a comment\n# and its second line.\nx = 1  # trailing\n"
        "def f():\n    '''Function f.'''\n"
    )
    (tmp_path / "pkg" / "a.py").write_text("class A:\n    '''Class A.'''\n")
    (tmp_path / "site-packages" / "third.py").write_text("'''Third party.'''\n")
    (tmp_path / "broken.py").write_text("def (:\n")
    assert list(stdlib_prose(tmp_path)) == [
        "Module b.\n\n2\n\n",
        "First line of a comment\nand its second line.\n\n",
        "Function f.\n\n",
        "Class A.\n\n",
    ]


@pytest.fixture(scope="module")
def builtin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("cache")
    mp = pytest.MonkeyPatch()
    mp.setenv("SUBWORD_CACHE_DIR", str(cache))
    try:
        yield corpora.builtin_corpus()
    finally:
        mp.undo()


def test_builtin_corpus_is_real_text_and_cached(builtin_path: Path, monkeypatch) -> None:
    assert builtin_path.name.startswith(f"builtin-{sys.implementation.name}-{sys.version_info[0]}.")
    size = builtin_path.stat().st_size
    assert size > 2_000_000, size
    text = builtin_path.read_text(encoding="utf-8")
    assert "Return" in text and "the" in text
    # Cached: a second call returns the same file without rebuilding (its mtime stays).
    monkeypatch.setenv("SUBWORD_CACHE_DIR", str(builtin_path.parent))
    mtime = builtin_path.stat().st_mtime_ns
    assert corpora.builtin_corpus() == builtin_path
    assert builtin_path.stat().st_mtime_ns == mtime
    assert not [p for p in builtin_path.parent.iterdir() if p.suffix == ".tmp"]


def test_builtin_corpus_is_deterministic(builtin_path: Path) -> None:
    """Two extractions of the same library give the same text, and the cache holds exactly that.

    Rebuilding the whole cache twice would cost seconds; one real package checks the rules.
    """
    import sysconfig

    root = Path(sysconfig.get_paths()["stdlib"]) / "json"
    first = "".join(stdlib_prose(root))
    assert first == "".join(stdlib_prose(root))
    assert len(first) > 1000
    # Everything extracted from json/ is in the cached corpus, in the same order.
    assert first in builtin_path.read_text(encoding="utf-8")


def _doc_nodes_by_full_walk(tree):
    """The straightforward definition: every module, class and function node, as ``ast.walk`` meets them."""
    import ast

    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return [node for node in ast.walk(tree) if isinstance(node, kinds)]


_NESTED = '''
def a():
    """a"""
    if x:
        def b(): """b"""
    else:
        class C:
            def c(self): """c"""
try:
    def d(): """d"""
except E:
    def e(): """e"""
else:
    def f(): pass
finally:
    def g(): pass
with m:
    async def h(): """h"""
for i in y:
    def j(): pass
else:
    def k(): pass
while 1:
    def l(): pass
match z:
    case 1:
        def m(): """m"""
x = lambda: [q for q in ()]
'''


def test_statement_walk_finds_what_a_full_walk_finds() -> None:
    """The corpus builder walks statements only; it must meet the same nodes in the same order as ast.walk.

    Checked on hand-made nesting (defs inside if/try/except/else/finally/with/for/while/match and classes)
    and on real standard-library packages.
    """
    import ast
    import sysconfig

    from corpora.prose import _DOC_NODES, _statements

    trees = [ast.parse(_NESTED)]
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for package in ("json", "email", "asyncio", "unittest"):
        for path in sorted((stdlib / package).rglob("*.py")):
            trees.append(ast.parse(path.read_bytes()))
    for tree in trees:
        ours = [node for node in _statements(tree) if isinstance(node, _DOC_NODES)]
        assert ours == _doc_nodes_by_full_walk(tree)
    assert len(_doc_nodes_by_full_walk(trees[0])) == 14  # the module and a, b, C, c, d, e, f, g, h, j, k, l, m


def _fake_stdlib(root: Path, files: int = 40) -> Path:
    """A directory of Python files with more prose than the corpus's minimum, nested in packages."""
    for k in range(files):
        pkg = root / f"pkg{k % 3}" / ("sub" if k % 2 else "")
        pkg.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def f{j}():\n    '''Function {j} of file {k}: {'word ' * 40}'''\n# Comment {j}.\n"
                       for j in range(20))
        (pkg / f"m{k}.py").write_text(f"'''Module {k}.'''\n{body}", encoding="utf-8")
    (root / "broken.py").write_text("def (:\n", encoding="utf-8")
    return root


@pytest.mark.parametrize("workers", ["several", "none-start"])
def test_builtin_corpus_built_in_parallel_equals_the_serial_text(tmp_path: Path, monkeypatch, workers: str) -> None:
    """The corpus built by several processes is the serial extraction's text, byte for byte, with progress
    up to every file; a worker that cannot start leaves its files to the parent and changes nothing."""
    import sysconfig

    from corpora import builtin

    root = _fake_stdlib(tmp_path / "lib")
    monkeypatch.setattr(sysconfig, "get_paths", lambda: {"stdlib": str(root)})
    monkeypatch.setenv("SUBWORD_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(builtin.os, "cpu_count", lambda: 3)
    if workers == "none-start":
        monkeypatch.setattr(builtin.sys, "executable", str(tmp_path / "no-such-python"))
    seen: list[tuple[int, int]] = []
    path = corpora.builtin_corpus(progress=lambda done, total: seen.append((done, total)))
    assert path.read_text(encoding="utf-8") == "".join(stdlib_prose(root))
    total = len(list(root.rglob("*.py")))
    assert seen[-1] == (total, total)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


def test_cli_says_it_builds_the_builtin_corpus_and_shows_progress(tmp_path: Path, monkeypatch) -> None:
    """The first command without input builds the corpus: one line says so, progress follows (JSON here)."""
    import sysconfig

    from click.testing import CliRunner

    from cli.main import cli

    root = _fake_stdlib(tmp_path / "lib", files=60)
    monkeypatch.setattr(sysconfig, "get_paths", lambda: {"stdlib": str(root)})
    monkeypatch.setenv("SUBWORD_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "counts.swc"
    result = CliRunner().invoke(cli, ["count", "-o", str(out), "--for", "bpe", "--progress", "json"])
    assert result.exit_code == 0, result.output
    assert "Building the built-in corpus (once" in result.stderr
    stages = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    corpus = [s for s in stages if s["stage"] == "corpus"]
    assert corpus and corpus[-1]["current"] == corpus[-1]["total"] == 61
    # Built once: the second run neither says it nor shows it.
    again = CliRunner().invoke(cli, ["count", "-o", str(out), "--for", "bpe", "--progress", "json"])
    assert again.exit_code == 0 and "Building" not in again.stderr and '"corpus"' not in again.stderr


def test_cache_dir_follows_xdg(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SUBWORD_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert corpora.cache_dir() == tmp_path / "subword"


def test_unwritable_cache_is_a_clear_error(monkeypatch, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("SUBWORD_CACHE_DIR", str(blocker / "sub"))
    with pytest.raises(CorpusError, match="SUBWORD_CACHE_DIR"):
        corpora.builtin_corpus()


# ==== docstring examples ====


@pytest.mark.parametrize(
    "module",
    ["corpora", "corpora.errors", "corpora.sources", "corpora.compression", "corpora.readers",
     "corpora.sampling", "corpora.builtin"],
)
def test_docstring_examples(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result


# ==== real corpora ====


def test_tinyshakespeare_reads_back_byte_identical() -> None:
    path = CORPORA / "tinyshakespeare.txt"  # any real text; the stand-in on a plain clone
    data = path.read_bytes()
    reader = CorpusReader([path])
    assert "".join(reader).encode("utf-8") == data
    assert reader.bytes_read == len(data)
    assert reader.lines_read == data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
