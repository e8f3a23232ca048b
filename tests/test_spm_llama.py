"""SentencePiece BPE models configured as Llama 2 and Mistral ship them, ours vs sentencepiece.

The options: byte fallback, ``split_digits``, normalization ``identity``,
``remove_extra_whitespaces=false`` and ``allow_whitespace_only_pieces=true`` (pieces made of runs of
``▁``). sentencepiece 0.2.3 trains each model here on English (the built-in corpus, which has
indented code lines, so runs of spaces are frequent) plus generated CJK text
(:func:`corpora.synthetic.cjk_lines`); then both encode the same held-out texts and the ids must be
identical. The encoder cuts a sentence into segments where no piece can cross; these tests cover
each rule it picks (a ``▁`` run starts a segment, the suffix rule, the whole sentence).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from corpora import builtin_corpus
from corpora.synthetic import cjk_lines
from subword.formats.spm import read_model
from subword.spm import SpmBpeTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _unicode_samples import TRICKY

spm = pytest.importorskip("sentencepiece")

WS = "\u2581"
LLAMA = dict(model_type="bpe", byte_fallback=True, split_digits=True, normalization_rule_name="identity",
             remove_extra_whitespaces=False, allow_whitespace_only_pieces=True, character_coverage=0.99995)


def _english(start: int, n_bytes: int) -> list[str]:
    with open(builtin_corpus(), encoding="utf-8") as f:
        f.seek(start)
        f.readline()
        return f.read(n_bytes).split("\n")[:-1]


def _train(tmp_path: Path, name: str, lines: list[str], **opts: object) -> Path:
    src = tmp_path / f"{name}.txt"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="")
    spm.SentencePieceTrainer.train(input=str(src), model_prefix=str(tmp_path / name), minloglevel=2, num_threads=1,
                                   **opts)
    return tmp_path / f"{name}.model"


@pytest.fixture(scope="module")
def train_lines() -> list[str]:
    return _english(0, 900_000) + cjk_lines(400_000, seed=0)


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory, train_lines: list[str]) -> Path:
    path = _train(tmp_path_factory.mktemp("llama"), "llama", train_lines, vocab_size=8000, **LLAMA)
    pieces = read_model(path).pieces
    # what makes these models take other paths: whitespace-only pieces longer than one ▁, bytes
    assert sum(1 for p, _, t in pieces if t == 1 and len(p) > 1 and set(p) == {WS}) >= 3
    assert sum(1 for _, _, t in pieces if t == 6) == 256
    return path


def _texts() -> dict[str, list[str]]:
    digits = ["1234567890", "3.14159 2,718 and 1e-9", "year 2026, line 42:", "x1y22z333", "０１２３ ٣٤٥ ²³"]
    spaces = ["", " ", "  ", "a  b", "  leading", "trailing   ", " " * 40, "a" + " " * 17 + "b",
              "\tt\ta b\t\tc", "x \u3000 y", "  if x:\n        return  y  ", "▁ ▁▁ already ▁▁▁ marks ▁"]
    fallback = ["emoji 😀🎉 👨\u200d👩\u200d👧", "rare \u3400\u4dbf\U00020000 \U0002a6d6 han", "\x00\x01\x7f\x85 ctl",
                "\ufffd\uffff bad", "e\u0301 q\u0323\u0307 marks", "\U0001d400\U0001f600" * 5]
    return {
        "english": _english(3_000_000, 150_000),
        "cjk": cjk_lines(120_000, seed=1),
        "spaces": spaces + [w * k for w, k in itertools.product(["  x", " \u00a0", "ab  "], [1, 3, 9])],
        "digits": digits,
        "fallback": fallback,
        "tricky": TRICKY,
    }


TEXTS = _texts()


@pytest.mark.parametrize("kind", sorted(TEXTS))
def test_llama_style_model_encodes_like_sentencepiece(llama: Path, kind: str) -> None:
    sp = spm.SentencePieceProcessor(model_file=str(llama))
    ours = SpmBpeTokenizer.from_file(llama)
    texts = TEXTS[kind]
    expected = [sp.encode(t) for t in texts]
    assert ours.encode_batch(texts) == expected
    assert [ours.encode(t) for t in texts[:200]] == expected[:200]
    if kind in ("spaces", "fallback", "digits"):
        assert [ours.decode(ids) for ids in expected] == [sp.decode(ids) for ids in expected]


def test_llama_style_model_uses_whitespace_pieces_and_bytes(llama: Path) -> None:
    """The texts reach what the options make different: ``▁▁``-runs and byte pieces are emitted."""
    ours = SpmBpeTokenizer.from_file(llama)
    ws_only = {i for i, (p, _, t) in enumerate(read_model(llama).pieces) if t == 1 and len(p) > 1 and set(p) == {WS}}
    ids = [i for t in TEXTS["spaces"] for i in ours.encode(t)]
    assert ws_only & set(ids)
    assert any(3 <= i < 259 for t in TEXTS["fallback"] for i in ours.encode(t))
    assert [ours.id_to_piece(i) for i in ours.encode("2026")] == ["▁", "2", "0", "2", "6"]


@pytest.mark.parametrize("variant", [
    # the mirror rule: ▁ at the end of pieces, a segment ends at a ▁-run
    dict(treat_whitespace_as_suffix=True),
    # pieces may span words: no cut, the whole sentence at once
    dict(split_by_whitespace=False),
    # user-defined pieces, one with a ▁ inside it, never split
    dict(user_defined_symbols=["<sep>", "x▁y", "▁▁z"]),
    # without the dummy prefix a line may start with a word, not a ▁
    dict(add_dummy_prefix=False),
], ids=["suffix", "no_split_by_whitespace", "user_defined", "no_dummy_prefix"])
def test_variants_of_the_llama_options_encode_like_sentencepiece(
        tmp_path: Path, train_lines: list[str], variant: dict) -> None:
    lines = train_lines[::3]
    path = _train(tmp_path, "variant", lines, vocab_size=5000, **(LLAMA | variant))
    sp = spm.SentencePieceProcessor(model_file=str(path))
    ours = SpmBpeTokenizer.from_file(path)
    texts = TEXTS["english"][:800] + TEXTS["cjk"][:150] + TEXTS["spaces"] + TEXTS["digits"] + TEXTS["fallback"]
    texts += ["a<sep>b x y x▁y  z   z", "<sep><sep>  <sep>"]
    assert ours.encode_batch(texts) == [sp.encode(t) for t in texts]


_ALPHABET = st.sampled_from(["a", "b", "e", "th", " ", "  ", "\t", "\n", "▁", "0", "7", "中", "国", "の", "한",
                             "😀", "\u3400", ".", ",", "\u00a0", "-"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_ALPHABET, max_size=30).map("".join))
def test_random_mixes_of_spaces_digits_cjk_and_bytes_match_sentencepiece(llama: Path, text: str) -> None:
    sp, ours = _processors(llama)
    assert ours.encode(text) == sp.encode(text)


_CACHE: dict[Path, tuple] = {}


def _processors(path: Path) -> tuple:
    if path not in _CACHE:
        _CACHE[path] = (spm.SentencePieceProcessor(model_file=str(path)), SpmBpeTokenizer.from_file(path))
    return _CACHE[path]
