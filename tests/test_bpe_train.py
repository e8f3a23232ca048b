"""BPE training: the reference trainer vs the Rust trainer vs HF ``tokenizers.trainers.BpeTrainer``.

All three are fed the same words (HF through a ``WhitespaceSplit`` pre-tokenizer over lines that hold
each word ``count`` times), and must give the same vocab (with ids) and the same merges.
"""

from __future__ import annotations

import json
import logging
import os
import random
import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subword.reference import bpe as reference
from subword.trainers import BpeTrainer, train_bpe

from subword import _core as core
import tokenizers as hf_tokenizers
from tokenizers import models as hf_models  # noqa: E402
from tokenizers import pre_tokenizers as hf_pre  # noqa: E402
from tokenizers import trainers as hf_trainers  # noqa: E402

from _corpora import CORPORA  # the shared corpora, or stand-ins from the built-in corpus
MAX_EXAMPLES = int(os.environ.get("SUBWORD_MAX_EXAMPLES", "150"))

OPTION_KEYS = ("vocab_size", "min_frequency", "special_tokens", "initial_alphabet", "limit_alphabet",
               "max_token_length", "continuing_subword_prefix", "end_of_word_suffix")


def corpus_lines(name: str, n: int | None = None) -> list[str]:
    path = CORPORA / name
    if not path.exists():
        pytest.skip(f"corpus {path} not found (the shared corpora sit next to the repository in CI)")
    with open(path, encoding="utf-8", newline="") as f:
        lines = f.readlines()
    return lines if n is None else lines[:n]


def hf_train_words(words: dict[str, int], **opts) -> tuple[list[str], list[tuple[str, str]]]:
    """HF on explicit words: one line per word holding it `count` times, split on whitespace."""
    tok = hf_tokenizers.Tokenizer(hf_models.BPE())
    tok.pre_tokenizer = hf_pre.WhitespaceSplit()
    trainer = hf_trainers.BpeTrainer(show_progress=False, **{k: v for k, v in opts.items() if v is not None})
    tok.train_from_iterator([" ".join([w] * c) for w, c in words.items()], trainer)
    return hf_model(tok)


def hf_model(tok) -> tuple[list[str], list[tuple[str, str]]]:
    model = json.loads(tok.to_str())["model"]
    vocab = sorted(model["vocab"], key=model["vocab"].__getitem__)
    assert [model["vocab"][t] for t in vocab] == list(range(len(vocab)))
    return vocab, [tuple(m) for m in model["merges"]]


def ours_all(words: dict[str, int], **opts):
    """(reference, rust) results for the same words."""
    ref = reference.train_bpe(words, **opts)
    rust = core.train_bpe(list(words.items()), **opts)
    return ref, (rust[0], [tuple(m) for m in rust[1]])


# ==== SPEC §7 examples ====


def test_e1_initial_ties_follow_codepoint_ids():
    words = {"cd": 1, "ab": 1, "ba": 1}
    for vocab, merges in (*ours_all(words, vocab_size=100), hf_train_words(words, vocab_size=100)):
        assert merges == [("a", "b"), ("b", "a"), ("c", "d")]
        assert vocab == ["a", "b", "c", "d", "ab", "ba", "cd"]


def test_e2_ties_go_to_the_older_token_not_lexicographic():
    words = {"zzzz": 2, "aaaa": 2, "zz": 1}
    for vocab, merges in (*ours_all(words, vocab_size=100), hf_train_words(words, vocab_size=100)):
        assert merges == [("z", "z"), ("a", "a"), ("zz", "zz"), ("aa", "aa")]


def test_e5_special_tokens_dedup_then_codepoint_alphabet():
    words = {"héllo": 1, "wörld": 1}
    opts = dict(vocab_size=100, special_tokens=["<pad>", "<unk>", "<pad>"])
    results = [*ours_all(words, **opts), hf_train_words(words, **opts)]
    for vocab, _ in results:
        assert vocab[:10] == ["<pad>", "<unk>", "d", "h", "l", "o", "r", "w", "é", "ö"]
    assert results[0] == results[1] == results[2]


def test_e6_min_frequency_stops_at_first_rare_pair():
    words = {"ab": 2, "cd": 1}
    for vocab, merges in (*ours_all(words, vocab_size=100, min_frequency=2),
                          hf_train_words(words, vocab_size=100, min_frequency=2)):
        assert merges == [("a", "b")]


@pytest.mark.parametrize("limit, expected", [
    (None, ["a b", "c d", "ab cd", "abcd e"]),
    (1, ["a b", "c d"]), (2, ["a b", "c d"]), (3, ["a b", "c d"]),
    (4, ["a b", "c d", "cd e"]),
    (5, ["a b", "c d", "ab cd"]),
])
def test_e7_max_token_length_is_strict_and_spares_initial_pairs(limit, expected):
    words = {"abcde": 3}
    for vocab, merges in (*ours_all(words, vocab_size=100, max_token_length=limit),
                          hf_train_words(words, vocab_size=100, max_token_length=limit)):
        assert [f"{a} {b}" for a, b in merges] == expected


# ==== differential: random tie-heavy corpora ====


@st.composite
def tie_corpora(draw):
    alphabet = "abcde"[: draw(st.integers(2, 5))]
    words = draw(st.dictionaries(st.text(alphabet, min_size=1, max_size=10), st.integers(1, 4), min_size=1, max_size=20))
    opts = {
        "vocab_size": draw(st.one_of(st.integers(1, 8), st.integers(8, 80))),
        "min_frequency": draw(st.sampled_from([0, 0, 1, 2, 3, 5])),
        "max_token_length": draw(st.sampled_from([None, None, 1, 2, 3, 4, 6])),
        "special_tokens": draw(st.sampled_from([[], ["<s>"], ["<pad>", "a", "<pad>"]])),
    }
    if draw(st.booleans()):
        opts["limit_alphabet"] = draw(st.integers(0, 6))
        # HF drops tied chars in hash order; only compare when the cut falls between distinct counts.
        counts = Counter()
        for w, c in words.items():
            for ch in w:
                counts[ch] += c
        ranked = sorted(counts.values())
        cut = len(ranked) - opts["limit_alphabet"]
        if 0 < cut < len(ranked) and ranked[cut - 1] == ranked[cut]:
            del opts["limit_alphabet"]
    return words, opts


@settings(max_examples=MAX_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tie_corpora())
def test_reference_rust_and_hf_agree_on_tie_heavy_corpora(case):
    words, opts = case
    (ref, rust), hf = ours_all(words, **opts), hf_train_words(words, **opts)
    assert ref == rust
    assert rust == hf


def test_reference_rust_and_hf_agree_on_larger_seeded_corpora():
    # Hypothesis favours tiny examples; these have dozens of merges each, still full of ties.
    rng = random.Random(2024)
    total_merges = 0
    for _ in range(300):
        alphabet = "abcde"[: rng.randint(2, 5)]
        words = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))): rng.randint(1, 5)
                 for _ in range(rng.randint(5, 30))}
        opts = {
            "vocab_size": len(alphabet) + rng.randint(0, 60),
            "min_frequency": rng.choice([0, 0, 2, 3]),
            "max_token_length": rng.choice([None, None, 2, 3, 5, 8]),
        }
        (ref, rust), hf = ours_all(words, **opts), hf_train_words(words, **opts)
        assert ref == rust == hf, (words, opts)
        total_merges += len(hf[1])
    assert total_merges > 3000


# ==== prefix / suffix: exact when no tie ever occurs ====


def _tie_free(words: dict[str, int], merges, prefix: str, suffix: str) -> bool:
    """Replay the merges naively; True when each chosen pair was the unique maximum."""
    seqs = []
    for w in words:
        seqs.append([("" if i == 0 else prefix) + ch + (suffix if i == len(w) - 1 else "") for i, ch in enumerate(w)])
    for a, b in merges:
        counts: Counter = Counter()
        for seq, c in zip(seqs, words.values()):
            for pair in zip(seq, seq[1:]):
                counts[pair] += c
        top = counts.most_common(2)
        if top[0][0] != (a, b) or (len(top) > 1 and top[1][1] == top[0][1]):
            return False
        new = a + (b[len(prefix):] if prefix and b.startswith(prefix) else b)
        seqs = [reference.merge_symbols(s, a, b, new) for s in seqs]
    return True


def test_prefix_and_suffix_match_hf_on_tie_free_corpora():
    rng = random.Random(7)
    checked = 0
    for _ in range(400):
        if checked == 40:
            break
        # Distinct-ish counts make ties rare; HF sees each word `count` times, so keep counts modest.
        words = {"".join(rng.choice("abcdef") for _ in range(rng.randint(2, 7))): rng.randint(1, 3000)
                 for _ in range(rng.randint(3, 10))}
        prefix, suffix = rng.choice([("##", None), (None, "</w>"), ("##", "</w>")])
        opts = dict(vocab_size=rng.randint(10, 40), continuing_subword_prefix=prefix, end_of_word_suffix=suffix)
        ref, rust = ours_all(words, **opts)
        assert ref == rust
        if not _tie_free(words, rust[1], prefix or "", suffix or ""):
            continue
        hf = hf_train_words(words, **opts)
        assert rust[1] == hf[1]
        # Variant ids are in hash order in HF, so compare that block as a set.
        base = len({ch for w in words for ch in w})
        n_variants = len(rust[0]) - base - len(set(a + b for a, b in rust[1]))
        assert rust[0][:base] == hf[0][:base]
        assert set(rust[0][base:base + n_variants]) == set(hf[0][base:base + n_variants])
        assert rust[0][base + n_variants:] == hf[0][base + n_variants:]
        checked += 1
    assert checked >= 20, f"only {checked} tie-free corpora were generated"


def test_prefix_variants_are_numbered_in_codepoint_order():
    vocab, merges = core.train_bpe([("abc", 2), ("b", 1)], vocab_size=100, continuing_subword_prefix="##",
                                         end_of_word_suffix="</w>")
    assert vocab[:6] == ["a", "b", "c", "##b", "##c</w>", "b</w>"]
    assert (vocab, merges) == reference.train_bpe({"abc": 2, "b": 1}, vocab_size=100,
                                                  continuing_subword_prefix="##", end_of_word_suffix="</w>")


# ==== real text, the whole pipeline (lines -> tokenizer) ====


def hf_train_lines(lines, byte_level: bool, **opts):
    tok = hf_tokenizers.Tokenizer(hf_models.BPE())
    tok.pre_tokenizer = hf_pre.ByteLevel(add_prefix_space=False) if byte_level else hf_pre.Whitespace()
    if byte_level:
        opts["initial_alphabet"] = hf_pre.ByteLevel.alphabet()
    tok.train_from_iterator(lines, hf_trainers.BpeTrainer(show_progress=False, **opts))
    return hf_model(tok)


def model_of(tok):
    vocab = sorted(tok.model.vocab, key=tok.model.vocab.__getitem__)
    return vocab, list(tok.model.merges)


@pytest.mark.parametrize("engine", ["rust", "reference"])
def test_byte_level_tinyshakespeare_matches_hf(engine):
    lines = corpus_lines("tinyshakespeare.txt", None if engine == "rust" else 10000)
    opts = dict(vocab_size=2000 if engine == "rust" else 800, min_frequency=2, special_tokens=["<|endoftext|>"])
    ours = train_bpe(lines, BpeTrainer(engine=engine, **opts), byte_level=True)
    assert model_of(ours) == hf_train_lines(lines, True, **opts)
    assert ours.get_vocab_size() == opts["vocab_size"]


def test_byte_level_gutenberg_slice_matches_hf():
    lines = corpus_lines("gutenberg_en_20M.txt", 60000)
    ours = train_bpe(lines, BpeTrainer(vocab_size=6000), byte_level=True)
    assert model_of(ours) == hf_train_lines(lines, True, vocab_size=6000)


def test_whitespace_words_with_normalizer_match_hf_and_reference():
    from subword.normalizers import Lowercase

    lines = corpus_lines("tinyshakespeare.txt", 5000)
    rust = train_bpe(lines, BpeTrainer(vocab_size=600), normalizer=Lowercase())
    ref = train_bpe(lines, BpeTrainer(vocab_size=600, engine="reference"), normalizer=Lowercase())
    tok = hf_tokenizers.Tokenizer(hf_models.BPE())
    tok.normalizer = hf_tokenizers.normalizers.Lowercase()
    tok.pre_tokenizer = hf_pre.Whitespace()
    tok.train_from_iterator(lines, hf_trainers.BpeTrainer(vocab_size=600, show_progress=False))
    assert model_of(rust) == model_of(ref) == hf_model(tok)


# ==== determinism, options, errors, progress ====


_RUN = """
import sys
from subword.trainers import BpeTrainer, train_bpe
lines = open(sys.argv[1], encoding="utf-8", newline="").readlines()[:8000]
tok = train_bpe(lines, BpeTrainer(vocab_size=1500, continuing_subword_prefix="##", limit_alphabet=40))
sys.stdout.write(tok.to_json_str())
"""


def test_two_processes_give_byte_identical_files():
    path = CORPORA / "tinyshakespeare.txt"
    if not path.exists():
        pytest.skip(f"corpus {path} not found")
    outs = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outs.append(subprocess.run([sys.executable, "-c", _RUN, str(path)], env=env, check=True,
                                   capture_output=True).stdout)
    assert outs[0] == outs[1] and len(outs[0]) > 1000


def test_vocab_size_below_alphabet_names_the_minimum():
    with pytest.raises(ValueError, match="minimum is 258"):
        train_bpe(["abc\n"], BpeTrainer(vocab_size=257, special_tokens=["<s>", "</s>"]), byte_level=True)
    with pytest.raises(ValueError, match="minimum is 4"):
        train_bpe(["abc abd\n"], BpeTrainer(vocab_size=3))


def test_unreachable_vocab_size_is_reported_not_an_error(caplog):
    with caplog.at_level(logging.WARNING, logger="subword.trainers"):
        tok = train_bpe(["ab ab\n"], BpeTrainer(vocab_size=50))
    assert tok.get_vocab_size() == 3
    assert tok.provenance["training"]["vocab_size_reached"] == 3
    assert "reached a vocabulary of 3 tokens" in caplog.text


def test_options_validation_and_round_trip():
    t = BpeTrainer(vocab_size=500, special_tokens=["<unk>"], unk_token="<unk>", max_token_length=8)
    assert BpeTrainer.from_dict(t.to_dict()) == t
    with pytest.raises(ValueError, match="unknown BpeTrainer option"):
        BpeTrainer.from_dict({"vocab": 3})
    with pytest.raises(TypeError, match="vocab_size must be an int"):
        BpeTrainer(vocab_size="10")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unk_token"):
        BpeTrainer(unk_token="<unk>")
    with pytest.raises(ValueError, match="engine"):
        BpeTrainer(engine="fast")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no words"):
        train_bpe(["   \n"], BpeTrainer())
    with pytest.raises(TypeError, match="not a single string"):
        train_bpe("one line of text", BpeTrainer())
    with pytest.raises(TypeError, match="got bytes at line 2"):
        train_bpe(["ok\n", b"bytes\n"], BpeTrainer())


def test_special_tokens_become_special_added_tokens_and_provenance_is_recorded():
    tok = train_bpe(["hello world\n"] * 3, BpeTrainer(vocab_size=30, special_tokens=["<s>", "<pad>"]))
    assert tok.token_to_id("<s>") == 0 and tok.token_to_id("<pad>") == 1
    added = {t.content: t for _, t in tok.added_tokens}
    assert added["<s>"].special and added["<s>"].normalized is False
    prov = tok.provenance["training"]
    assert prov["options"]["vocab_size"] == 30 and prov["engine"] == "rust"
    assert len(prov["corpus"]["sha256"]) == 64 and prov["corpus"]["lines"] == 3


def test_progress_reports_stages_and_its_exception_aborts_training():
    lines = corpus_lines("tinyshakespeare.txt", 4000)
    seen = []
    train_bpe(lines, BpeTrainer(vocab_size=1500), byte_level=True, progress=lambda *a: seen.append(a))
    stages = [s for s, _, _ in seen]
    assert stages[0] == "read" and "count" in stages and stages[-1] == "merge"
    assert seen[-1][1] == 1500 - 256

    class Stop(Exception):
        pass

    def stop(stage, current, total):
        if stage == "merge" and current > 0:
            raise Stop("user interrupt")

    with pytest.raises(Stop, match="user interrupt"):
        train_bpe(lines, BpeTrainer(vocab_size=1500), byte_level=True, progress=stop)


def test_ctrl_c_during_the_merge_loop_raises_keyboard_interrupt():
    # The callback only sends SIGINT to this process and returns normally: the Rust side's signal
    # check (run with the GIL at each progress call) must turn it into KeyboardInterrupt.
    import signal

    lines = corpus_lines("tinyshakespeare.txt", 4000)
    sent = []

    def interrupt(stage, current, total):
        if stage == "merge" and not sent:
            sent.append(current)
            # To this thread (os.kill may deliver it to one of the trainer's threads instead).
            signal.raise_signal(signal.SIGINT)

    # Python's own handler for the test's duration: a test run started in the background of a
    # non-interactive shell inherits SIGINT ignored, and the signal would then be lost.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            train_bpe(lines, BpeTrainer(vocab_size=1500), byte_level=True, progress=interrupt)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert sent == [0]


def test_core_errors_are_value_errors():
    with pytest.raises(ValueError, match="unsupported pre_tokenizer type 'Deduplication'"):
        core.WordCounter('{"type": "Deduplication"}')
    with pytest.raises(ValueError, match="words\\[0\\]"):
        core.train_bpe([("a", -1)], vocab_size=10)
    with pytest.raises(ValueError, match="threads"):
        core.WordCounter('{"type": "Whitespace"}', None, 0)
    with pytest.raises(ValueError, match="word counts sum to"):
        core.train_bpe([("ab", 2**63), ("ba", 2**63)], vocab_size=10)
    counter = core.WordCounter('{"type": "Whitespace"}')
    counter.feed(["ab ab ba\n"])
    with pytest.raises(ValueError, match="threads: a WordCounter trains with the thread pool it counted with"):
        core.train_bpe(counter, vocab_size=10, threads=2)


def test_core_trains_the_same_from_a_counter_and_from_its_words():
    """One binding takes either source; a counter's words given as pairs give the same model."""
    counter = core.WordCounter('{"type": "Whitespace"}')
    counter.feed(corpus_lines("tinyshakespeare.txt")[:3000])
    for train, kw in ((core.train_bpe, {}), (core.train_wordpiece, {"criterion": "likelihood"})):
        from_counter = train(counter, vocab_size=400, **kw)
        assert from_counter == train(counter.words(), vocab_size=400, threads=1, **kw)
        assert from_counter == train(iter(counter.words()), vocab_size=400, threads=2, **kw)


# ==== the reference encoder ====


def test_reference_encoder_matches_hf_bpe_on_held_out_text():
    lines = corpus_lines("tinyshakespeare.txt")
    train, test = lines[:20000], lines[20000:21000]
    vocab, merges = hf_train_lines(train, True, vocab_size=1200)
    tok = hf_tokenizers.Tokenizer(hf_models.BPE({t: i for i, t in enumerate(vocab)}, merges))
    tok.pre_tokenizer = hf_pre.ByteLevel(add_prefix_space=False)
    ranks = {m: r for r, m in enumerate(merges)}
    pre = hf_pre.ByteLevel(add_prefix_space=False)
    for line in test:
        ours = [t for piece, _ in pre.pre_tokenize_str(line) for t in reference.encode_word(piece, ranks)]
        assert ours == tok.encode(line).tokens


# ==== the Rust trainer's model is taken without the constructor's data checks ====

@pytest.mark.parametrize("options", [
    {},
    {"continuing_subword_prefix": "##", "end_of_word_suffix": "</w>", "unk_token": "[UNK]",
     "special_tokens": ["[UNK]", "[PAD]"]},
])
def test_the_rust_trainers_model_passes_every_check_it_skips(options):
    # train_bpe builds the Rust engine's model with BPE._from_trainer (no data validation: consistent by
    # construction). Here the same vocab and merges go through the checking constructor, on real text.
    import corpora
    from subword.model import BPE

    with open(corpora.builtin_corpus(), encoding="utf-8") as f:
        lines = [next(f) for _ in range(3000)]
    tok = train_bpe(lines, BpeTrainer(vocab_size=3000, **options), byte_level=False)
    model = tok.model
    checked = BPE(model.vocab, model.merges, unk_token=model.unk_token,
                  continuing_subword_prefix=model.continuing_subword_prefix,
                  end_of_word_suffix=model.end_of_word_suffix)
    assert checked.to_dict() == model.to_dict()
    assert len(model.merges) > 1000 and sorted(model.vocab.values()) == list(range(len(model.vocab)))


def test_a_trained_model_still_refuses_an_unk_token_outside_its_vocab():
    from subword.errors import ModelError
    from subword.model import BPE

    with pytest.raises(ModelError, match="unk_token 'zz' is not in the vocab"):
        BPE._from_trainer({"a": 0}, [], unk_token="zz")
    with pytest.raises(TypeError, match="unexpected keyword"):
        BPE._from_trainer({"a": 0}, [], bogus=1)
