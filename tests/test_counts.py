"""Word counts (subword.counts, subword.formats.counts): shards + merge + train == train on the text.

The corpus is a slice of the built-in corpus (always present), so these run in a plain clone.
"""

from __future__ import annotations

import json
import os
import pickle
import random
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

import corpora
from subword.counts import Counter, WordCounts, count_words, pipeline_for
from subword.errors import FormatError
from subword.formats.counts import MAGIC, read_counts, read_header, write_counts
from subword.trainers import BpeTrainer, WordPieceTrainer, train_bpe, train_wordpiece

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def lines() -> list[str]:
    with open(corpora.builtin_corpus(), encoding="utf-8", newline="") as fh:
        return [line for _, line in zip(range(6000), fh)]


def shards(lines: list[str], seed: int) -> list[list[str]]:
    """A random split of ``lines`` at line boundaries into 1..6 shards (some may be empty)."""
    rng = random.Random(seed)
    cuts = sorted(rng.randint(0, len(lines)) for _ in range(rng.randint(0, 5)))
    bounds = [0, *cuts, len(lines)]
    return [lines[a:b] for a, b in zip(bounds, bounds[1:])]


def tokenizer_bytes(tok, tmp_path: Path, name: str) -> bytes:
    """The saved tokenizer.json without ``provenance`` (it records where the words came from, which differs)."""
    path = tmp_path / name
    tok.save(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["model"].pop("provenance", None)
    data.pop("provenance", None)
    return json.dumps(data, ensure_ascii=False, sort_keys=True).encode()


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("algorithm", ["bpe", "byte-bpe", "wordpiece"])
def test_shards_merged_through_files_train_like_the_whole_text(lines, tmp_path, algorithm, seed):
    paths = []
    for i, part in enumerate(shards(lines, seed)):
        path = tmp_path / f"s{i}.swc"
        write_counts(path, count_words(part, like=algorithm, source=f"shard{i}"))
        paths.append(path)
    merged = WordCounts.merged([read_counts(p) for p in paths])
    assert merged.lines == len(lines)
    if algorithm == "wordpiece":
        trainer = WordPieceTrainer(vocab_size=600)
        want = train_wordpiece(lines, trainer)
    else:
        trainer = BpeTrainer(vocab_size=700)
        want = train_bpe(lines, trainer, byte_level=algorithm == "byte-bpe")
    got = trainer.train_from_counts(merged)
    assert tokenizer_bytes(got, tmp_path, "got.json") == tokenizer_bytes(want, tmp_path, "want.json")


def test_byte_level_from_counts_matches_hf_tokenizers(lines):
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import models, pre_tokenizers, trainers

    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.train_from_iterator(lines, trainers.BpeTrainer(
        vocab_size=800, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    hf_model = json.loads(hf.to_str())["model"]
    parts = [count_words(part, like="byte-bpe") for part in shards(lines, 7)]
    ours = BpeTrainer(vocab_size=800).train_from_counts(WordCounts.merged(parts))
    assert [list(m) for m in ours.model.merges] == [m.split(" ") if isinstance(m, str) else m
                                                    for m in hf_model["merges"]]
    assert ours.model.vocab == hf_model["vocab"]


def test_counts_merge_pickle_and_totals(lines):
    a = count_words(lines[:3000], like="byte-bpe")
    b = count_words(lines[3000:], like="byte-bpe")
    whole = count_words(lines, like="byte-bpe")
    both = WordCounts.merged([pickle.loads(pickle.dumps(a)), pickle.loads(pickle.dumps(b))])
    assert both.words() == whole.words()
    assert (both.lines, both.bytes, both.occurrences) == (whole.lines, whole.bytes, whole.occurrences)
    assert both.bytes == len("".join(lines).encode())
    assert len(both.inputs) == 2 and both.inputs[0]["lines"] == 3000


def test_merge_refuses_another_pipeline_naming_the_difference(lines):
    a = count_words(lines[:10], like="bpe")
    with pytest.raises(ValueError, match=r"pre_tokenizer.type: Whitespace vs ByteLevel"):
        a.update(count_words(lines[:10], like="byte-bpe"))
    cased = count_words(lines[:10], like="wordpiece")
    with pytest.raises(ValueError, match=r"lowercase"):
        WordPieceTrainer(lowercase=False, vocab_size=200).train_from_counts(cased)


def test_like_a_tokenizer_file_counts_with_its_pipeline(lines, tmp_path):
    tok = train_wordpiece(lines[:500], WordPieceTrainer(vocab_size=300))
    tok.save(tmp_path / "wp.json")
    assert pipeline_for(tmp_path / "wp.json") == pipeline_for("wordpiece")


def test_min_count_is_applied_while_loading(lines, tmp_path):
    counts = count_words(lines, like="bpe")
    write_counts(tmp_path / "c.swc", counts)
    loaded = read_counts(tmp_path / "c.swc", min_count=3)
    assert loaded.words() == [(w, c) for w, c in counts.words() if c >= 3]
    assert 0 < len(loaded) < len(counts)


def test_spilling_gives_the_exact_counts_and_cleans_up(lines, tmp_path):
    spill = tmp_path / "runs"
    spill.mkdir()
    counter = Counter(pipeline_for("byte-bpe"), max_memory=20_000, spill_dir=spill)
    for i in range(0, len(lines), 500):
        counter.add_lines(lines[i:i + 500], source=f"part{i}")
    assert len(counter.runs) > 3, "the budget is small enough to force several runs"
    counter.write(tmp_path / "spilled.swc")
    assert list(spill.iterdir()) == []
    assert read_counts(tmp_path / "spilled.swc").words() == count_words(lines, like="byte-bpe").words()


def test_merging_files_streams_them_and_checks_every_input(lines, tmp_path):
    from subword.counts import merge_files

    parts = shards(lines, 3)
    for i, part in enumerate(parts):
        write_counts(tmp_path / f"{i}.swc", count_words(part, like="byte-bpe"))
    names = [tmp_path / f"{i}.swc" for i in range(len(parts))]
    header = merge_files(names, tmp_path / "all.swc")
    assert header["lines"] == len(lines) and len(header["inputs"]) == len(parts)
    assert read_counts(tmp_path / "all.swc").words() == count_words(lines, like="byte-bpe").words()
    # Flip one byte of one input's word list: the merge names that file and writes nothing.
    bad = bytearray(names[-1].read_bytes())
    header_len = struct.unpack_from("<I", bad, 12)[0]
    bad[16 + header_len + 5] ^= 0x01
    names[-1].write_bytes(bytes(bad))
    with pytest.raises(FormatError, match=rf"{names[-1].name}"):
        merge_files(names, tmp_path / "again.swc")
    assert not (tmp_path / "again.swc").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


# ==== bad files ====

@pytest.fixture()
def swc(lines, tmp_path) -> Path:
    path = tmp_path / "c.swc"
    write_counts(path, count_words(lines[:300], like="bpe"))
    return path


def test_truncated_file_is_refused(swc):
    data = swc.read_bytes()
    for cut in (len(data) - 1, len(data) // 2, 12, 3):
        swc.write_bytes(data[:cut])
        with pytest.raises(FormatError, match="truncated"):
            read_counts(swc)


def test_corrupt_records_fail_the_checksum(swc):
    data = bytearray(swc.read_bytes())
    header_len = struct.unpack_from("<I", data, 12)[0]
    data[16 + header_len + 40] ^= 0x01  # a byte inside the word list
    swc.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="checksum"):
        read_counts(swc)


def test_corrupt_header_fails_the_checksum(swc):
    data = bytearray(swc.read_bytes())
    data[20] ^= 0x20
    swc.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="header checksum"):
        read_counts(swc)


def test_other_version_and_other_files_are_named(swc, tmp_path):
    data = bytearray(swc.read_bytes())
    struct.pack_into("<I", data, 8, 7)
    swc.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="version 7; this subword reads version 1"):
        read_header(swc)
    text = tmp_path / "t.swc"
    text.write_text("hello\n")
    with pytest.raises(FormatError, match="not a subword word-counts file"):
        read_counts(text)
    assert MAGIC.startswith(b"\x89SWC")


def test_checksums_are_zlib_crc32(swc):
    data = swc.read_bytes()
    header_len = struct.unpack_from("<I", data, 12)[0]
    body = data[16 + header_len:-40]
    length, _, _, header_crc, body_crc, _ = struct.unpack("<QQQII8s", data[-40:])
    assert length == len(body)
    assert body_crc == zlib.crc32(body) and header_crc == zlib.crc32(data[16:16 + header_len])


_FULL_DISK = """
import resource, signal, sys
from subword.counts import Counter, pipeline_for
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
c = Counter(pipeline_for("bpe"), max_memory=10_000, spill_dir=sys.argv[1])
try:
    for i in range(40):
        c.add_lines([f"w{i}x{j} y{j}\\n" for j in range(2000)], source="gen")
    c.write(sys.argv[1] + "/out.swc")
except OSError as exc:
    print("OSError:", exc)
finally:
    c.close()
"""


def test_a_spill_folder_that_fills_up_is_a_clear_error_with_no_partial_file(tmp_path):
    # RLIMIT_FSIZE makes every write past 4 KiB fail (EFBIG), which stands in for a full disk.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", _FULL_DISK, str(tmp_path)], capture_output=True, text=True,
                         env=env, timeout=60)
    assert "OSError:" in out.stdout and "File too large" in out.stdout, out.stdout + out.stderr
    assert list(tmp_path.iterdir()) == [], "no run and no partial output left behind"


# ==== sampling big inputs: one pass, memory for the sample only ====

def test_input_sentence_size_streams_and_reports_seen_and_kept(caplog):
    import logging
    import tracemalloc

    from subword.spm import SpmBpeTrainer, _select

    def stream():
        for i in range(20_000):
            yield f"line {i} " + "x" * 500 + "\n"  # ~10 MB if it were all held

    opts = SpmBpeTrainer(input_sentence_size=100, seed=4)
    tracemalloc.start()
    with caplog.at_level(logging.INFO):
        kept = _select(stream(), opts, opts.seed)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(kept) == 100 and len(set(kept)) == 100
    assert peak < 2_000_000, f"peak {peak} bytes: the input was held, not streamed"
    assert "kept 100 of the 20000 lines seen (reservoir sample, seed 4)" in caplog.text
    assert _select(stream(), opts, opts.seed) == kept, "seeded: the same sample again"


def test_the_reference_engine_trains_from_counts_too(lines):
    counts = count_words(lines[:400], like="byte-bpe")
    ref = BpeTrainer(vocab_size=300, engine="reference").train_from_counts(counts)
    rust = train_bpe(lines[:400], BpeTrainer(vocab_size=300), byte_level=True)
    assert ref.model.merges == rust.model.merges and ref.model.vocab == rust.model.vocab


# ==== min_frequency applied while the counts are read (exact) ====

#: (trainer kind, min_frequency, extra options): every algorithm at 2, 3 and 10, and with limit_alphabet.
PRUNE_CASES = [(kind, mf, {}) for kind in ("bpe", "byte-bpe", "wordpiece", "wordpiece-hf") for mf in (2, 3, 10)] + [
    ("bpe", 3, {"limit_alphabet": 60}), ("wordpiece", 3, {"limit_alphabet": 60}),
    ("wordpiece-hf", 2, {"limit_alphabet": 60}),
    ("bpe", 2, {"continuing_subword_prefix": "@@", "end_of_word_suffix": "</w>"}),
    # The corpus holds "##" inside words (comment rulers): a token string could then be reached from
    # different chars, so only the words without pairs may go; still the same tokenizer.
    ("bpe", 3, {"continuing_subword_prefix": "##"}),
]


def _trainer(kind: str, **options):
    if kind == "wordpiece":
        return WordPieceTrainer(vocab_size=900, **options)  # the likelihood criterion
    if kind == "wordpiece-hf":
        return WordPieceTrainer(vocab_size=900, criterion="frequency", **options)
    return BpeTrainer(vocab_size=1500, **options)


def _train_on_text(lines, kind, trainer):
    if kind.startswith("wordpiece"):
        return train_wordpiece(lines, trainer)
    return train_bpe(lines, trainer, byte_level=kind == "byte-bpe")


@pytest.mark.parametrize("kind, min_frequency, extra", PRUNE_CASES,
                         ids=[f"{k}-{mf}{'-' + '-'.join(e) if e else ''}" for k, mf, e in PRUNE_CASES])
def test_min_frequency_leaves_words_out_while_reading_and_changes_nothing(lines, tmp_path, monkeypatch, kind,
                                                                        min_frequency, extra):
    """Training from a .swc (streamed) or from counts in memory holds fewer words than the corpus has,
    and gives the tokenizer.json that training on the text with every word gives."""
    import subword.trainers as trainers_module

    path = tmp_path / "all.swc"
    count_words(lines, like="wordpiece" if kind.startswith("wordpiece") else kind).save(path)
    trainer = _trainer(kind, min_frequency=min_frequency, **extra)
    monkeypatch.setattr(trainers_module, "_PRUNE_WORDS", False)
    want = _train_on_text(lines, kind, trainer)
    monkeypatch.setattr(trainers_module, "_PRUNE_WORDS", True)
    from_file = trainer.train_from_counts(path)
    in_memory = trainer.train_from_counts(WordCounts.load(path))
    everything = want.provenance["training"]["corpus"]
    assert everything["words_trained"] == everything["distinct_words"], "the baseline must hold every word"
    literal_prefix = extra.get("continuing_subword_prefix") == "##"
    for got in (from_file, in_memory):
        corpus = got.provenance["training"]["corpus"]
        assert corpus["distinct_words"] == everything["distinct_words"]
        if literal_prefix:
            assert corpus["words_trained"] == corpus["distinct_words"]
        else:
            assert 0 < corpus["words_trained"] < corpus["distinct_words"], "nothing was left out"
    assert tokenizer_bytes(from_file, tmp_path, "f.json") == tokenizer_bytes(want, tmp_path, "w.json")
    assert tokenizer_bytes(in_memory, tmp_path, "m.json") == tokenizer_bytes(want, tmp_path, "w.json")


def test_the_words_left_out_are_those_whose_pairs_all_stay_below_min_frequency(lines):
    """The rule checked against a plain count of character pairs; and the comparison the tests rely on
    is sensitive to one word: leaving out a single kept word seen once changes the model."""
    from collections import Counter as Tally

    from subword import _core as core

    counts = count_words(lines, like="bpe")
    words = counts.words()
    threshold = 3
    totals: Tally = Tally()
    for w, c in words:
        for pair in zip(w, w[1:]):
            totals[pair] += c
    expect = sorted((w, c) for w, c in words if any(totals[p] >= threshold for p in zip(w, w[1:])))
    selected = core.TrainingWords.select(counts._counter, vocab_size=1000, min_frequency=threshold)
    assert selected.words() == expect
    assert (selected.loaded, selected.distinct) == (len(expect), len(words)) and len(expect) < len(words)
    full = core.train_bpe(words, vocab_size=1000, min_frequency=threshold)
    # Training with other options than the selection's is refused, not silently wrong (and the
    # selection stays usable); training frees the selection's words, so it trains once.
    with pytest.raises(ValueError, match="selected for other trainer options"):
        core.train_bpe(selected, vocab_size=1000, min_frequency=threshold + 1)
    assert core.train_bpe(selected, vocab_size=1000, min_frequency=threshold) == full
    with pytest.raises(ValueError, match="trained on already"):
        core.train_bpe(selected, vocab_size=1000, min_frequency=threshold)
    # The kept words alone are not enough: the alphabet, and so every id, comes from all words.
    assert core.train_bpe(expect, vocab_size=1000, min_frequency=threshold) != full
    hapaxes = [wc for wc in expect if wc[1] == 1][:10]
    changed = sum(core.train_bpe([wc for wc in words if wc != drop], vocab_size=1000, min_frequency=threshold)
                  != full for drop in hapaxes)
    assert changed >= 3, f"dropping one kept word changed the model in only {changed} of {len(hapaxes)} cases"


@pytest.mark.parametrize("flip", [0x01, 0x80])
def test_a_corrupt_word_list_is_refused_when_streamed(swc, flip):
    """A damaged word list read by the trainer (not loaded) fails the checksum or the record checks."""
    from subword.counts import CountsFile

    data = bytearray(swc.read_bytes())
    header_len = struct.unpack_from("<I", data, 12)[0]
    data[16 + header_len + 40] ^= flip  # a byte inside the word list
    swc.write_bytes(bytes(data))
    with pytest.raises(FormatError, match=r"c\.swc.*corrupt word-counts file|corrupt word-counts file.*c\.swc"):
        BpeTrainer(vocab_size=300, min_frequency=2).train_from_counts(CountsFile(swc))


def test_every_kind_of_str_is_counted_and_hashed_as_its_utf8(lines) -> None:
    """Fresh non-ASCII strs (Latin-1, UCS-2, UCS-4 inside) are made UTF-8 by the counting threads and
    hashed beside them: the counts equal the pure-Python reference's, the recorded sha256 and bytes
    hashlib's of the joined text, at one and at two threads."""
    import hashlib

    from subword.pre_tokenizers import ByteLevel
    from subword.reference import bpe as reference
    from tests._unicode_samples import TRICKY

    texts = lines[:3000] + [t + "\n" for t in TRICKY] + ["Grüße ½ Käse\n", "世界 ok —\n", "🦀 x 𝄞\n"] * 700
    raw = "".join(texts).encode("utf-8")
    want = reference.count_words(texts, ByteLevel(add_prefix_space=False, use_regex=True))
    for threads in (1, 2):
        counts = count_words([(t + " ")[:-1] for t in texts], like="byte-bpe", threads=threads)
        assert dict(counts.words()) == want
        entry = counts.inputs[-1]
        assert (entry["sha256"], entry["bytes"], entry["lines"]) == (hashlib.sha256(raw).hexdigest(), len(raw),
                                                                     len(texts))


def test_a_line_that_is_not_text_is_named_and_nothing_of_its_batch_is_counted() -> None:
    counter = Counter(pipeline_for("byte-bpe"))
    counter.add_lines(["one two\n"], source="a")
    with pytest.raises(TypeError, match=r"lines must be str, got int at line 3 of b"):
        counter.add_lines(["x\n", "y\n", 7], source="b")
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate, found by a counting thread
        counter.add_lines(["ok\n"] * 5000 + ["bad \ud800\n"], source="c")
    assert dict(counter.counts().words()) == {"one": 1, "Ġtwo": 1, "Ċ": 1}
