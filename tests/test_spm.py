"""SentencePiece compatibility: the pipeline, SPM-compatible BPE, .model files, encoding.

Every parity test trains or encodes with the pinned sentencepiece (0.2.3) on the same real text
and compares its output with ours. Fixtures are generated into tmp_path at test time.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import unicodedata
from pathlib import Path

import pytest

from subword import _core
from subword.formats.spm import SpmFormatError, SpmModelFile, read_model, write_model
from subword.spm import SpmBpeTrainer, train_spm_bpe

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _unicode_samples import TRICKY, corpus_lines

import sentencepiece as spm


def _lines(n: int = 1500) -> list[str]:
    lines = corpus_lines("tinyshakespeare.txt", n)
    if not lines:
        pytest.skip("shared/corpora/tinyshakespeare.txt is not available")
    return lines


def _multilingual() -> list[str]:
    from test_bert_pipeline import _gathered_text

    return _gathered_text(2000)


def _as_file_lines(lines: list[str]) -> list[str]:
    """The lines sentencepiece reads back from a file holding `lines` (split at \n only)."""
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return [line + "\n" for line in text.split("\n")[:-1]]


def _spm_train(tmp_path: Path, lines: list[str], **opts: object) -> SpmModelFile:
    """Trains sentencepiece on `lines` (written to a file, as spm_train reads them); train ours on
    `_as_file_lines(lines)` to see the same input."""
    src = tmp_path / "corpus.txt"
    src.write_text("".join(_as_file_lines(lines)), encoding="utf-8", newline="")
    prefix = tmp_path / f"spm_{len(list(tmp_path.glob('spm_*.model'))):03d}"
    spm.SentencePieceTrainer.train(input=str(src), model_prefix=str(prefix), minloglevel=2, num_threads=1, **opts)
    return read_model(f"{prefix}.model")


def _encoder(model: SpmModelFile) -> _core.SpmBpeEncoder:
    norm = model.normalizer_spec
    spec = {"normalization_rule_name": "identity", "add_dummy_prefix": norm.get("add_dummy_prefix", True),
            "remove_extra_whitespaces": norm.get("remove_extra_whitespaces", True),
            "treat_whitespace_as_suffix": model.trainer_spec.get("treat_whitespace_as_suffix", False)}
    return _core.SpmBpeEncoder(model.pieces, json.dumps(spec), norm.get("precompiled_charsmap") or None,
                               model.trainer_spec.get("byte_fallback", False))


# ==== .model files ====


@pytest.mark.parametrize("model_type", ["bpe", "unigram"])
def test_model_files_written_by_sentencepiece_round_trip_byte_for_byte(tmp_path: Path, model_type: str) -> None:
    ref = _spm_train(tmp_path, _lines(600), vocab_size=400, model_type=model_type, byte_fallback=True)
    data = sorted(tmp_path.glob("spm_*.model"))[-1].read_bytes()
    parsed = SpmModelFile.from_bytes(data)
    assert parsed.to_bytes() == data
    assert parsed.model_type == (2 if model_type == "bpe" else 1)
    proto = pytest.importorskip("sentencepiece.sentencepiece_model_pb2").ModelProto()
    proto.ParseFromString(data)
    assert [(p.piece, p.score, p.type) for p in proto.pieces] == [(p, pytest.approx(s), t) for p, s, t in ref.pieces]
    assert proto.trainer_spec.vocab_size == parsed.trainer_spec["vocab_size"] == 400


def test_truncated_and_foreign_model_files_are_refused(tmp_path: Path) -> None:
    _spm_train(tmp_path, _lines(300), vocab_size=200, model_type="bpe")
    data = sorted(tmp_path.glob("spm_*.model"))[-1].read_bytes()
    for bad, why in [(data[: len(data) // 2], "truncated"), (b"\x89PNG\r\n\x1a\n" + data[:40], "not a SentencePiece|truncated"),
                     (json.dumps({"model": {}}).encode(), "not a SentencePiece"), (b"", "no pieces")]:
        path = tmp_path / "bad.model"
        path.write_bytes(bad)
        with pytest.raises(SpmFormatError, match=why):
            read_model(path)


# ==== SentencePiece-compatible BPE: identical pieces, ids and scores ====

CASES = {
    "identity": dict(vocab_size=1000, normalization_rule_name="identity"),
    "defaults": dict(vocab_size=1000),
    "coverage_byte_fallback": dict(vocab_size=1200, character_coverage=0.98, byte_fallback=True),
    "suffix_digits": dict(vocab_size=800, treat_whitespace_as_suffix=True, split_digits=True),
    "no_ws_split": dict(vocab_size=800, split_by_whitespace=False, max_sentencepiece_length=6),
    "symbols_ids": dict(vocab_size=900, user_defined_symbols=["<sep>", "the"], control_symbols=["<cls>"],
                        pad_id=3, bos_id=-1, unk_piece="[UNK]"),
    "nfkc_required_chars": dict(vocab_size=900, normalization_rule_name="nfkc", required_chars="☃ЖQ",
                                character_coverage=0.98),
    "whitespace_only_pieces": dict(vocab_size=900, allow_whitespace_only_pieces=True, remove_extra_whitespaces=False),
    "no_script_no_number": dict(vocab_size=900, split_by_unicode_script=False, split_by_number=False,
                                remove_extra_whitespaces=False, add_dummy_prefix=False),
}


def _composes_per_char(text: str) -> bool:
    """True when NFKC of the text equals NFKC char by char (no composition across characters)."""
    return unicodedata.normalize("NFKC", text) == "".join(unicodedata.normalize("NFKC", c) for c in text)


@pytest.mark.parametrize("case", list(CASES))
def test_bpe_pieces_identical_to_sentencepiece(tmp_path: Path, case: str) -> None:
    opts = CASES[case]
    tricky = TRICKY[:20]
    lines = _lines(1500) + tricky + ["a 12 3.5 x1 ２３ ab12"] * 5
    ref = _spm_train(tmp_path, lines, model_type="bpe", **opts)
    ours = train_spm_bpe(_as_file_lines(lines), SpmBpeTrainer(**opts))  # type: ignore[arg-type]
    assert ours.pieces == ref.pieces


def test_bpe_identical_on_text_without_spaces(tmp_path: Path) -> None:
    """Chinese/Japanese/Korean prose and ~100 languages: scripts, Han+kana merging, coverage."""
    lines = _multilingual()
    for opts in (dict(vocab_size=3000), dict(vocab_size=2500, character_coverage=1.0, split_by_whitespace=False)):
        ref = _spm_train(tmp_path, lines, model_type="bpe", **opts)
        ours = train_spm_bpe(_as_file_lines(lines), SpmBpeTrainer(**opts))  # type: ignore[arg-type]
        assert ours.pieces == ref.pieces


def test_reference_trainer_equals_rust() -> None:
    ref_mod = pytest.importorskip("subword.reference.spm_bpe")
    lines = _lines(300) + ["zzzz", "zzzz", "aaaa", "aaaa", "zz"]
    for opts in (dict(vocab_size=400, normalization_rule_name="identity"), dict(vocab_size=300, hard_vocab_limit=False,
                 split_by_whitespace=False, max_sentencepiece_length=5)):
        rust = train_spm_bpe(lines, SpmBpeTrainer(**opts))  # type: ignore[arg-type]
        ref = train_spm_bpe(lines, SpmBpeTrainer(engine="reference", **opts))  # type: ignore[arg-type]
        assert ref.pieces == rust.pieces
    assert ref_mod.__doc__


def test_zero_frequency_tail_as_sentencepiece(tmp_path: Path) -> None:
    """SPEC E3: once real pairs run out, stale zero-frequency pairs are still emitted."""
    lines = ["zzzz", "zzzz", "aaaa", "aaaa", "zz"]
    opts = dict(vocab_size=11, normalization_rule_name="identity", add_dummy_prefix=False, hard_vocab_limit=False)
    ref = _spm_train(tmp_path, lines, model_type="bpe", **opts)
    ours = train_spm_bpe(lines, SpmBpeTrainer(**opts))  # type: ignore[arg-type]
    assert [p for p, _, _ in ours.pieces[3:]] == ["zz", "aa", "aaaa", "zzzz", "aaa", "zzz", "z", "a"]
    assert ours.pieces == ref.pieces


# ==== files we write load in sentencepiece and encode identically ====


def test_written_model_loads_in_sentencepiece_and_encodes_identically(tmp_path: Path) -> None:
    lines = _lines(2000)
    held_out = corpus_lines("tinyshakespeare.txt", 3000)[-800:] + TRICKY
    trainer = SpmBpeTrainer(vocab_size=1500, normalization_rule_name="identity", byte_fallback=True,
                            user_defined_symbols=["<sep>"])
    model = train_spm_bpe(lines, trainer)
    path = tmp_path / "ours.model"
    write_model(path, model)
    sp = spm.SentencePieceProcessor(model_file=str(path))
    assert sp.get_piece_size() == len(model.pieces)
    enc = _encoder(read_model(path))
    texts = [t.rstrip("\n") for t in held_out] + ["a<sep>b 😀 ☃ x"]
    assert enc.encode_batch(texts) == [sp.encode(t) for t in texts]


def test_sentencepiece_models_encode_identically(tmp_path: Path) -> None:
    """SPM-written BPE models (nmt_nfkc charsmap, byte fallback, user symbols) vs SPM's encode."""
    lines = _lines(2000) + _multilingual()[:800]
    texts = [t.rstrip("\n") for t in corpus_lines("tinyshakespeare.txt", 3000)[-500:]] + _multilingual()[800:] + TRICKY
    for opts in (dict(vocab_size=2000), dict(vocab_size=2000, byte_fallback=True, character_coverage=0.99,
                                              user_defined_symbols=["<sep>", "ing"])):
        model = _spm_train(tmp_path, lines, model_type="bpe", **opts)
        sp = spm.SentencePieceProcessor(model_file=str(sorted(tmp_path.glob("spm_*.model"))[-1]))
        enc = _encoder(model)
        assert enc.encode_batch(texts) == [sp.encode(t) for t in texts]


def test_nmt_nfkc_charsmap_normalizes_like_sentencepiece(tmp_path: Path) -> None:
    model = _spm_train(tmp_path, _lines(300), vocab_size=200, model_type="bpe")
    path = sorted(tmp_path.glob("spm_*.model"))[-1]
    normalizer = spm.SentencePieceNormalizer(model_file=str(path))
    enc = _encoder(model)
    texts = TRICKY + _multilingual()[:500] + ["".join(chr(c) for c in range(0x20, 0x3000, 7))]
    assert [enc.normalize(t).replace("▁", " ") for t in texts] == [
        normalizer.normalize(t).replace("▁", " ") for t in texts]


# ==== bad input ====


def test_bad_options_and_input(caplog: pytest.LogCaptureFixture) -> None:
    for bad in (0, 1.5, -0.1):
        with pytest.raises(ValueError, match="character_coverage"):
            SpmBpeTrainer(character_coverage=bad)
    with pytest.raises(ValueError, match="no usable line"):
        train_spm_bpe(["", "\n"], SpmBpeTrainer(vocab_size=50))
    with pytest.raises(ValueError, match="smaller than the .* required characters"):
        train_spm_bpe(["abcdefghijklmnop"], SpmBpeTrainer(vocab_size=8))
    with pytest.raises(ValueError, match="Vocabulary size too high"):
        train_spm_bpe(["ab ab"], SpmBpeTrainer(vocab_size=50))
    with caplog.at_level(logging.WARNING, logger="subword.spm"):
        m = train_spm_bpe(["x" * 5000, "ab ab ab"], SpmBpeTrainer(vocab_size=8, hard_vocab_limit=False))
    assert "skipped 1 line(s) longer than max_sentence_length=4192" in caplog.text
    assert "x" not in {p for p, _, _ in m.pieces}
    with pytest.raises(ValueError, match="unknown SentencePiece option"):
        _core.spm_prepare(["a"], json.dumps({"vocab_sise": 10}))


# ==== command line ====


def test_cli_train_bpe_compat_spm_writes_a_model_sentencepiece_loads(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from cli.main import cli

    src = tmp_path / "in.txt"
    lines = _as_file_lines(_lines(800))
    src.write_text("".join(lines), encoding="utf-8")
    out = tmp_path / "o.model"
    args = ["train", "bpe", str(src), "--compat", "spm", "--vocab-size", "600", "--normalization-rule-name",
            "identity", "--byte-fallback", "-q", "-o", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    expected = train_spm_bpe(lines, SpmBpeTrainer(vocab_size=600, normalization_rule_name="identity",
                                                  byte_fallback=True))
    assert read_model(out).pieces == expected.pieces
    sp = spm.SentencePieceProcessor(model_file=str(out))
    assert sp.encode("Whose ☃ horse?") == _encoder(read_model(out)).encode("Whose ☃ horse?")
    for bad, msg in [(["--compat", "spm", "-o", str(tmp_path / "x.json")], "give -o NAME.model"),
                     (["--character-coverage", "0.9", "-o", str(tmp_path / "x.json")], "does not apply to train bpe"),
                     (["--compat", "spm", "--min-frequency", "2", "-o", str(out)], "does not apply to train bpe --compat spm"),
                     (["--compat", "spm", "--character-coverage", "0", "-o", str(out)], "--character-coverage")]:
        result = CliRunner().invoke(cli, ["train", "bpe", str(src), *bad])
        assert result.exit_code == 2 and msg in result.output, result.output


def test_written_nmt_nfkc_model_normalizes_and_encodes_in_sentencepiece_as_ours(tmp_path: Path) -> None:
    """Our generated nmt_nfkc table: sentencepiece loading our file and our encoder agree, and on
    ordinary text they normalize as sentencepiece's own nmt_nfkc does."""
    lines = _lines(1500) + _multilingual()[:600]
    model = train_spm_bpe(lines, SpmBpeTrainer(vocab_size=1500))
    path = tmp_path / "ours.model"
    write_model(path, model)
    texts = TRICKY + _multilingual()[600:] + [t.rstrip("\n") for t in corpus_lines("tinyshakespeare.txt", 3000)[-300:]]
    sp = spm.SentencePieceProcessor(model_file=str(path))
    assert _encoder(read_model(path)).encode_batch(texts) == [sp.encode(t) for t in texts]
    reference = _spm_train(tmp_path, _lines(200), vocab_size=200, model_type="bpe")
    theirs = spm.SentencePieceNormalizer(model_file=str(sorted(tmp_path.glob("spm_*.model"))[-1]))
    ours = spm.SentencePieceNormalizer(model_file=str(path))
    assert [ours.normalize(t) for t in texts] == [theirs.normalize(t) for t in texts]
    assert reference.normalizer_spec["name"] == "nmt_nfkc"


# ==== subword convert ====


def test_convert_spm_bpe_model_to_tokenizer_json_encodes_like_sentencepiece(tmp_path: Path) -> None:
    from click.testing import CliRunner
    from tokenizers import Tokenizer as HfTokenizer

    from cli.main import cli

    lines = _lines(2000) + _multilingual()[:800]
    _spm_train(tmp_path, lines, model_type="bpe", vocab_size=2000, byte_fallback=True)
    src = sorted(tmp_path.glob("spm_*.model"))[-1]
    out = tmp_path / "tok.json"
    result = CliRunner().invoke(cli, ["convert", str(src), str(out)])
    assert result.exit_code == 0, result.output
    hf = HfTokenizer.from_file(str(out))
    sp = spm.SentencePieceProcessor(model_file=str(src))
    texts = [t.rstrip("\n") for t in corpus_lines("tinyshakespeare.txt", 3000)[-500:]] + _multilingual()[800:] + TRICKY
    differ = [t for t in texts if hf.encode(t, add_special_tokens=False).ids != sp.encode(t)]
    # HF's Precompiled normalizer looks up whole grapheme clusters; sentencepiece matches longest keys
    # left to right: they differ only on characters followed by combining marks (documented).
    assert all(not _composes_per_char(t) for t in differ), differ
    assert len(differ) <= 2
    back = tmp_path / "back.model"
    assert CliRunner().invoke(cli, ["convert", str(out), str(back)]).exit_code == 0
    assert back.read_bytes() == src.read_bytes()


def test_convert_refuses_what_is_not_exact(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from cli.main import cli

    _spm_train(tmp_path, _lines(400), model_type="unigram", vocab_size=300)
    uni = sorted(tmp_path.glob("spm_*.model"))[-1]
    result = CliRunner().invoke(cli, ["convert", str(uni), str(tmp_path / "u.json")])
    assert result.exit_code == 1 and "float64" in result.output
    byte_level = tmp_path / "bl.json"
    byte_level.write_text(json.dumps({"model": {"type": "BPE", "vocab": {}, "merges": []},
                                      "pre_tokenizer": {"type": "ByteLevel"}}), encoding="utf-8")
    result = CliRunner().invoke(cli, ["convert", str(byte_level), str(tmp_path / "bl.model")])
    assert result.exit_code == 1 and "byte-level BPE cannot be a SentencePiece model" in result.output
    broken = tmp_path / "broken.model"
    broken.write_bytes(uni.read_bytes()[:100])
    result = CliRunner().invoke(cli, ["convert", str(broken), str(tmp_path / "x.json")])
    assert result.exit_code == 1 and "truncated" in result.output


def test_spm_bpe_tokenizer_encodes_and_decodes_like_sentencepiece(tmp_path: Path) -> None:
    from subword.spm import SpmBpeTokenizer

    lines = _lines(1500) + _multilingual()[:500]
    _spm_train(tmp_path, lines, model_type="bpe", vocab_size=1500, byte_fallback=True, character_coverage=0.99)
    path = sorted(tmp_path.glob("spm_*.model"))[-1]
    tok = SpmBpeTokenizer.from_file(path)
    sp = spm.SentencePieceProcessor(model_file=str(path))
    texts = [t.rstrip("\n") for t in corpus_lines("tinyshakespeare.txt", 3000)[-300:]] + _multilingual()[500:] + TRICKY
    ids = tok.encode_batch(texts)
    assert ids == [sp.encode(t) for t in texts]
    assert [tok.decode(i) for i in ids] == [sp.decode(i) for i in ids]
    assert tok.decode([1, *ids[0], 2]) == sp.decode([1, *ids[0], 2])


def test_random_small_corpora_with_many_ties_match_sentencepiece(tmp_path: Path) -> None:
    """Tiny alphabets make many frequency ties, repeated strings built by different merge trees and
    zero-frequency tails: the tie rules and the duplicate-string rule all get exercised."""
    import random

    rng = random.Random(1234)
    n = int(os.environ.get("SUBWORD_MAX_EXAMPLES", "60"))
    for k in range(n):
        alphabet = rng.choice(["ab", "abc", "aab", "ab1", "aé", "ab カ"])
        lines = ["".join(rng.choice(alphabet + " ") for _ in range(rng.randint(1, 12))) for _ in range(rng.randint(3, 25))]
        lines = [line for line in lines if line.strip()] or ["ab"]
        opts = dict(vocab_size=rng.randint(12, 40), normalization_rule_name="identity", hard_vocab_limit=False,
                    character_coverage=1.0, split_by_whitespace=rng.random() < 0.7,
                    add_dummy_prefix=rng.random() < 0.7, max_sentencepiece_length=rng.randint(2, 8))
        try:
            ref = _spm_train(tmp_path, lines, model_type="bpe", **opts)
        except RuntimeError:  # e.g. vocab smaller than the alphabet: both refuse (checked elsewhere)
            continue
        ours = train_spm_bpe(_as_file_lines(lines), SpmBpeTrainer(**opts))  # type: ignore[arg-type]
        assert ours.pieces == ref.pieces, (k, lines, opts)
        if k % 4 == 0:
            slow = train_spm_bpe(_as_file_lines(lines), SpmBpeTrainer(engine="reference", **opts))  # type: ignore[arg-type]
            assert slow.pieces == ours.pieces, (k, lines, opts)


def test_input_sentence_size_selects_lines(tmp_path: Path) -> None:
    lines = _as_file_lines(_lines(400))
    first = train_spm_bpe(lines, SpmBpeTrainer(vocab_size=300, input_sentence_size=150, shuffle_input_sentence=False))
    ref = _spm_train(tmp_path, lines, model_type="bpe", vocab_size=300, input_sentence_size=150,
                     shuffle_input_sentence=False)
    assert first.pieces == ref.pieces  # the first N lines: same input, same result
    sampled = train_spm_bpe(lines, SpmBpeTrainer(vocab_size=300, input_sentence_size=150, seed=3))
    again = train_spm_bpe(lines, SpmBpeTrainer(vocab_size=300, input_sentence_size=150, seed=3))
    assert sampled.pieces == again.pieces and sampled.trainer_spec["input_sentence_size"] == 150
    with pytest.raises(ValueError, match="after selecting input_sentence_size=20"):
        train_spm_bpe(["\n"] * 50 + ["x" * 5000 + "\n"], SpmBpeTrainer(vocab_size=10, input_sentence_size=20))


def test_cli_encode_spm_bpe_model_gives_sentencepiece_ids(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from cli.main import cli

    _spm_train(tmp_path, _lines(800), model_type="bpe", vocab_size=600)
    model = sorted(tmp_path.glob("spm_*.model"))[-1]
    text = tmp_path / "in.txt"
    texts = ["First Citizen: speak, speak.", "naïve café ☃", ""]
    text.write_text("\n".join(texts) + "\n", encoding="utf-8")
    sp = spm.SentencePieceProcessor(model_file=str(model))
    result = CliRunner().invoke(cli, ["encode", "-t", str(model), str(text)])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [" ".join(map(str, sp.encode(t))) for t in texts]
    result = CliRunner().invoke(cli, ["encode", "-t", str(model), str(text), "--format", "tokens"])
    assert result.output.splitlines()[0] == " ".join(sp.encode(texts[0], out_type=str))


def test_progress_reports_merges_and_an_exception_in_it_stops_training() -> None:
    seen: list[tuple[str, int, int]] = []
    train_spm_bpe(_lines(300), SpmBpeTrainer(vocab_size=600), progress=lambda *a: seen.append(a))
    assert seen[0][0] == "merge" and seen[0][1] == 0 and seen[-1][1] == seen[-1][2] > 0

    class Stop(Exception):
        pass

    def stop(stage: str, done: int, total: int) -> None:
        raise Stop(f"{stage} {done}")

    with pytest.raises(Stop, match="merge 0"):
        train_spm_bpe(_lines(300), SpmBpeTrainer(vocab_size=600), progress=stop)
