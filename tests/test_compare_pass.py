"""The pass of ``subword compare`` (the Rust core, through ``subword.compare.collect``) against the readable
reference of ``tests/_compare_reference.py``.

Every per-line count, the segment types with their counts, first lines and attributed tokens, the
per-block type counts and the shared boundaries must be identical, on the built-in corpus, on the shared
corpora (or their stand-ins), on Unicode-rich lines and across chunk edges, through tokenizers of every
kind the core runs. The reference segments with the ``regex`` package and builds its vocabulary table
token by token from ``get_vocab()``; both are outside the core.
"""

from __future__ import annotations

import numpy as np
import pytest

from _compare_fixtures import UNICODE_LINES, every_kind, training_lines
from _compare_reference import reference_pass, vocab_table
from _corpora import CORPORA  # the shared corpora, or stand-ins from the built-in corpus
from subword.compare import collect as collect_module
from subword.compare.collect import SCRIPT_LABELS, collect
from subword.compare.vocab import VocabTable


def _assert_same(lines: list[str], block_lines: int = 7) -> None:
    toks = every_kind()
    names = [f"t{i}" for i in range(len(toks))]
    got = collect(toks, names, lines, block_lines)
    want = reference_pass(toks, lines, block_lines)
    n = len(lines)
    for name in ("chars", "bytes", "words", "ws_words"):
        assert getattr(got, name).tolist() == getattr(want, name), name
    assert {s: v.tolist() for s, v in got.script_words.items()} == want.script_words
    assert got.types == want.types
    assert dict(zip(got.types, got.type_count.tolist())) == want.type_count
    assert dict(zip(got.types, got.type_first_line.tolist())) == want.type_first_line
    assert {p: v.tolist() for p, v in got.shared_boundaries.items()} == want.shared
    for tok, g, w in zip(toks, got.tokenizers, want.tokenizers):
        for name in ("tokens", "continued", "unk_chars", "byte_tokens", "lossless", "boundaries"):
            assert getattr(g, name).tolist() == getattr(w, name), (g.name, name)
        assert {s: v.tolist() for s, v in g.script_tokens.items()} == w.script_tokens, g.name
        assert {t: c for t, c in zip(got.types, g.type_tokens.tolist()) if c} == dict(w.type_tokens), g.name
        matrix = g.block_types.matrix(g.table.size)
        assert matrix.shape[0] == len(w.blocks) == -(-n // block_lines)
        for b, counter in enumerate(w.blocks):
            row = matrix.getrow(b)
            assert dict(zip(row.indices.tolist(), row.data.astype(int).tolist())) == dict(counter), (g.name, b)
        ok = g.lossless
        assert [e["line_index"] for e in g.lossless_examples] == np.flatnonzero(~ok)[:5].tolist()
        for e in g.lossless_examples:
            assert e["original"] == lines[e["line_index"]]
            assert e["decoded"] == tok.decode(tok.encode(e["original"], add_special_tokens=False).ids,
                                              skip_special_tokens=False)


def test_identical_on_the_builtin_corpus():
    _assert_same(training_lines()[:400])


def test_identical_on_unicode_rich_lines():
    lines = UNICODE_LINES * 3
    _assert_same(lines, block_lines=5)
    c = collect(every_kind(), [f"t{i}" for i in range(len(every_kind()))], lines, 5)
    # The lines exercise what they are meant to: scripts beyond Latin, UNK characters, byte tokens, failures.
    assert {"Cyrillic", "Han", "Devanagari", "Thai", "Hangul", "Arabic"} <= set(c.script_words)
    assert any(t.unk_chars.sum() > 0 for t in c.tokenizers)
    assert any(t.byte_tokens.sum() > 0 for t in c.tokenizers)
    assert any(not t.lossless.all() for t in c.tokenizers)
    assert "'" in c.types and "em" in c.types  # UAX #29: an apostrophe at a word start stands alone


def test_identical_across_chunks(monkeypatch):
    # Small chunks: the type index, first lines, line feeds and "\r\n" segments carry over chunk edges,
    # and an empty last line takes the line feed before it even as the first line of its chunk.
    monkeypatch.setattr(collect_module, "CHUNK_CHARS", 200)
    lines = UNICODE_LINES + training_lines()[:200] + ["a\r", "\r", "b", ""]
    _assert_same(lines, block_lines=3)
    bounds = collect_module.chunk_bounds(np.array([len(s) for s in lines]), 3)
    assert len(bounds) > 10 and all(first % 3 == 0 for first, _ in bounds)


@pytest.mark.parametrize("name", ["tinyshakespeare.txt", "gutenberg_en_20M.txt"])
def test_identical_on_shared_corpora(name):
    with open(CORPORA / name, encoding="utf-8", newline="") as f:
        text = f.read(60_000)
    _assert_same(text.split("\n")[:-1], block_lines=30)


def test_block_counts_sum_to_the_id_counts():
    toks = every_kind()[:2]
    lines = training_lines()[:300]
    c = collect(toks, ["a", "b"], lines, 17)
    for tok, d in zip(toks, c.tokenizers):
        want = np.bincount([i for line in lines for i in tok.encode(line, add_special_tokens=False).ids],
                           minlength=d.table.size)
        assert d.block_types.id_counts(d.table.size).tolist() == want.tolist()


def test_vocab_table_of_the_core_equals_the_reference():
    for tok in every_kind():
        got, want = VocabTable.of(tok), vocab_table(tok)
        assert got.vocab_size == want.vocab_size and got.unk == want.unk
        for i in want.surface:
            assert (got.surface[i], got.core[i], int(got.char_length[i]), bool(got.byte_token[i]),
                    bool(got.special[i])) == (want.surface[i], want.core[i], want.char_length[i],
                                              want.byte_token[i], want.special[i]), (type(tok.model).__name__, i)
        assert all(got.surface[i] == b"" for i in range(got.size) if i not in want.surface)


def test_lines_with_whitespace_split_words_are_the_lines_str_strip_keeps():
    # compare() picks its sample lines from the core's whitespace-split word counts: they must be the
    # lines that str.strip leaves non-empty, whatever the whitespace.
    from subword import BPE, Tokenizer
    from subword.compare.report import _sample_indices
    from subword.compare.words import WHITESPACE_CODEPOINTS

    spaces = "".join(map(chr, WHITESPACE_CODEPOINTS))
    lines = UNICODE_LINES + ["", spaces, "\u200b", "\x1c\x1d", " x ", "\u3000", "\x85a"] + list(spaces)
    tok = Tokenizer(BPE({"a": 0}, [], unk_token=None))
    words = collect([tok, tok], ["a", "b"], lines, 4).ws_words
    assert np.flatnonzero(words).tolist() == [i for i, s in enumerate(lines) if s.strip()]
    for show in (0, 3, 10, 100):
        assert _sample_indices(lines, show, np.flatnonzero(words).tolist()) == _sample_indices(lines, show)


def test_core_classes_of_ascii_types_equal_words_py():
    import random

    from subword import BPE, Tokenizer, _core
    from subword.compare.words import classify, is_word

    rng = random.Random(3)
    ascii_lines = ["".join(rng.choice([chr(c) for c in range(1, 128)]) for _ in range(rng.randint(0, 40)))
                   for _ in range(3000)]
    collector = _core.CompareCollector([Tokenizer(BPE({"a": 0}, []))._native()], [None], [b"\0"], len(SCRIPT_LABELS))
    new, _ = collector.segment(ascii_lines + UNICODE_LINES, True)
    latin, common = SCRIPT_LABELS.index("Latin"), SCRIPT_LABELS.index("Common")
    word, script, other = collector.ascii_classes(latin, common)
    assert other == [j for j, t in enumerate(new) if not t.isascii()] and other
    for j, t in enumerate(new):
        if t.isascii():
            assert (bool(word[j]), SCRIPT_LABELS[script[j]]) == (is_word(t), classify(t)[0]), repr(t)


def test_a_tokenizer_the_core_cannot_run_is_named():
    from subword import BPE, Tokenizer
    from subword.compare.core import NotNativeError

    class Broken(Tokenizer):
        def _native(self):
            raise ValueError("no such component")

    tok = Tokenizer(BPE({"a": 0}, []))
    bad = Broken(BPE({"a": 0}, []))
    with pytest.raises(NotNativeError, match="second: the Rust core cannot run this tokenizer.*no such component"):
        collect([tok, bad], ["first", "second"], ["a"], 1)
