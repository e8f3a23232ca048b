"""subword.compare: every metric against an independent computation.

Hand-made tokenizers whose values are known by construction (one that splits every character, one
that never splits a word, a tokenizer compared with itself), real tokenizers of three kinds
(tests/_compare_fixtures.py) on real text with brute-force recomputations in plain Python, and the
Rényi / Shannon efficiencies against the PyPI package tokenization-scorer.
"""

from __future__ import annotations

from collections import Counter

import pytest
import regex

import subword
from subword import BPE, Tokenizer, WordPiece
from subword.pre_tokenizers import Whitespace
import _compare_fixtures as fx

TEXT = ["the cat sat on the mat", "a cat", "", "mat mat mat the end"]


def chars_tokenizer(lines):
    """Every character (spaces included) is one token: BPE over the characters, no merges."""
    alphabet = sorted({c for line in lines for c in line})
    return Tokenizer(BPE({c: i for i, c in enumerate(alphabet)}, []))


def words_tokenizer(lines):
    """Every word is one token, spaces dropped: WordPiece whose vocabulary holds all the words."""
    words = sorted({w for line in lines for w in line.split()})
    return Tokenizer(WordPiece({"[UNK]": 0, **{w: i + 1 for i, w in enumerate(words)}}), pre_tokenizer=Whitespace())


def unicode_words(line):
    """Words by an independent route: split at every (?w) boundary, keep pieces with a letter or digit."""
    pieces = [p for p in regex.split(r"(?wV1)\b", line) if p]
    assert "".join(pieces) == line
    return [p for p in pieces if regex.search(r"[\p{L}\p{M}\p{N}]", p)]


@pytest.fixture(scope="module")
def toy():
    return subword.compare([chars_tokenizer(TEXT), words_tokenizer(TEXT)], TEXT, names=["chars", "words"],
                           bootstrap_replicates=200, seed=1)


def test_chars_and_words_known_by_construction(toy):
    chars = sum(len(s) for s in TEXT)
    words = [w for s in TEXT for w in s.split()]
    m = toy.metrics
    assert m["chars"]["tokens"] == chars
    assert m["chars"]["chars_per_token"] == 1.0
    assert m["chars"]["tokens_per_word"] == pytest.approx(chars / len(words))
    assert m["chars"]["continued_words"] == pytest.approx(sum(len(w) >= 2 for w in words) / len(words))
    assert m["words"]["tokens"] == len(words)
    assert m["words"]["tokens_per_word"] == 1.0
    assert m["words"]["continued_words"] == 0.0
    assert m["words"]["normalized_sequence_length"] == pytest.approx(len(words) / chars)
    assert m["chars"]["normalized_sequence_length"] == 1.0
    assert toy.doc["inputs"]["words"] == len(words)
    # No decoder: ids decode joined by spaces, so only lines of at most one character come back.
    assert m["chars"]["lossless_lines"] == pytest.approx(sum(len(s) <= 1 for s in TEXT) / len(TEXT))
    assert toy.doc["tokenizers"][0]["token_length_histogram"] == {"1": chars}


def test_identical_tokenizers_f1_one_and_no_difference():
    tok = fx.byte_level()
    lines = fx.training_lines()[:300]
    result = subword.compare([tok, tok], lines, names=["x", "y"], bootstrap_replicates=100)
    pair = result.pairwise[0]
    assert pair["boundary_precision"] == pair["boundary_recall"] == pair["boundary_f1"] == 1.0
    assert pair["vocab_jaccard"] == 1.0 and pair["unique_a_count"] == pair["unique_b_count"] == 0
    for name, d in pair["differences"].items():
        if name != "mb_per_s":
            assert d["value"] == 0 and d["ci"] == [0, 0] and d["significant"] is False, name
    assert result.words[0]["words"] == []
    assert result.doc["best"]["tokens"] is None  # a tie marks nobody


def test_attribution_is_additive_and_exact(toy):
    att = toy.words[0]
    assert (att["a"], att["b"]) == ("chars", "words")
    net = toy.metrics["chars"]["tokens"] - toy.metrics["words"]["tokens"]  # a minus b
    assert sum(g["contribution"] for g in att["by_group"]) == net
    counts = Counter(w for s in TEXT for w in regex.findall(r"\S+| +", s))
    for entry in att["words"]:
        word = entry["word"]
        expected = counts[word] if word.isspace() else counts[word] * (len(word) - 1)
        assert entry["contribution"] == expected, word
        assert entry["count"] == counts[word]
    shares = [e["cumulative_share"] for e in att["words"]]
    assert shares[-1] == pytest.approx(sum(e["contribution"] for e in att["words"]) / net)
    mat = next(e for e in att["words"] if e["word"] == "mat")
    assert mat["segmentation_a"] == ["m", "a", "t"] and mat["segmentation_b"] == ["mat"]
    assert (mat["script"], mat["kind"]) == ("Latin", "letters")


@pytest.fixture(scope="module")
def real():
    toks = [fx.byte_level(), fx.sentencepiece_bpe(), fx.wordpiece()]
    lines = fx.training_lines()[:400] + fx.SAMPLE_LINES
    result = subword.compare(toks, lines, names=["bl", "spm", "bert"], bootstrap_replicates=200, show=3)
    return toks, lines, result


def _encodings(tok, lines):
    return tok.with_options().encode_batch(lines, add_special_tokens=False) if tok.padding is None else \
        _unpadded(tok).encode_batch(lines, add_special_tokens=False)


def _unpadded(tok):
    copy = tok.with_options()
    copy.no_padding()
    copy.no_truncation()
    return copy


def test_real_metrics_match_brute_force(real):
    toks, lines, result = real
    chars = sum(len(s) for s in lines)
    nbytes = sum(len(s.encode()) for s in lines)
    words_per_line = [unicode_words(s) for s in lines]
    n_words = sum(map(len, words_per_line))
    for tok, name in zip(toks, ["bl", "spm", "bert"]):
        encs = _encodings(tok, lines)
        m = result.metrics[name]
        total = sum(len(e.ids) for e in encs)
        assert m["tokens"] == total
        assert m["tokens_per_word"] == pytest.approx(total / n_words)
        assert m["chars_per_token"] == pytest.approx(chars / total)
        assert m["bytes_per_token"] == pytest.approx(nbytes / total)
        assert m["tokens_per_whitespace_word"] == pytest.approx(total / sum(len(s.split()) for s in lines))
        continued = 0
        for line, enc in zip(lines, encs):
            at = 0
            for piece in [p for p in regex.split(r"(?wV1)\b", line) if p]:
                if regex.search(r"[\p{L}\p{M}\p{N}]", piece):
                    overlap = sum(1 for s, e in enc.offsets if e > s and s < at + len(piece) and e > at)
                    continued += overlap >= 2
                at += len(piece)
        assert m["continued_words"] == pytest.approx(continued / n_words)
        used = {i for e in encs for i in e.ids}
        assert m["vocab_utilization"] == pytest.approx(len(used) / tok.get_vocab_size())
        assert m["type_token_ratio"] == pytest.approx(len(used) / total)
        decoded = tok.decode_batch([e.ids for e in encs], skip_special_tokens=False)
        assert m["lossless_lines"] == pytest.approx(sum(d == s for d, s in zip(decoded, lines)) / len(lines))
        byte_pieces = sum(1 for e in encs for t in e.tokens if regex.fullmatch(r"<0x[0-9A-F]{2}>", t))
        if name == "spm":
            assert byte_pieces > 0
            assert m["byte_fallback_rate"] == pytest.approx(byte_pieces / total)
        if name == "bert":
            assert m["lossless_lines"] < 0.5  # lowercasing and dropped spaces
            ex = result.doc["tokenizers"][2]["lossless_examples"][0]
            i = ex["first_difference"]
            assert ex["original"][:i] == ex["decoded"][:i] and ex["original"][i:i + 1] != ex["decoded"][i:i + 1]
            unk = tok.token_to_id("[UNK]")
            unk_chars = sum(e_ - s for enc in encs for i_, (s, e_) in zip(enc.ids, enc.offsets) if i_ == unk)
            assert m["unk_char_rate"] == pytest.approx(unk_chars / chars)


def _keys(line, enc):
    """Internal boundaries with whitespace transparent: non-space characters before each offset."""
    ns = [0]
    for c in line:
        ns.append(ns[-1] + (not c.isspace()))
    keys = {ns[o] for s, e in enc.offsets for o in (s, e)}
    return {k for k in keys if 0 < k < ns[-1]}


def test_pairwise_boundaries_match_brute_force(real):
    toks, lines, result = real
    encs = [_encodings(t, lines) for t in toks]
    names = ["bl", "spm", "bert"]
    for pair in result.pairwise:
        a, b = names.index(pair["a"]), names.index(pair["b"])
        shared = pa = pb = 0
        for i, line in enumerate(lines):
            ka, kb = _keys(line, encs[a][i]), _keys(line, encs[b][i])
            shared += len(ka & kb)
            pa += len(ka)
            pb += len(kb)
        assert pair["boundary_precision"] == pytest.approx(shared / pa)
        assert pair["boundary_recall"] == pytest.approx(shared / pb)
        assert pair["boundary_f1"] == pytest.approx(2 * shared / (pa + pb))
        lo, hi = pair["boundary_f1_ci"]
        assert lo <= pair["boundary_f1"] <= hi


def test_renyi_and_shannon_against_tokenization_scorer(real):
    scorer = pytest.importorskip("tokenization_scorer")
    toks, lines, result = real
    for tok, name in zip(toks, ["bl", "spm", "bert"]):
        encs = _encodings(tok, lines)
        text = [e.tokens for e in encs]
        vocab = tok.get_vocab_size()
        # Its defaults are power 3.0 and |V| = observed types: set both.
        renyi = scorer.score(text, metric="renyi", power=2.5, vocab=vocab)
        shannon = scorer.score(text, metric="shannon", vocab=vocab)
        assert result.metrics[name]["renyi_efficiency"] == pytest.approx(renyi, rel=1e-9)
        assert result.metrics[name]["shannon_efficiency"] == pytest.approx(shannon, rel=1e-9)


def test_vocab_overlap_is_jaccard_of_marker_free_bytes(real):
    toks, _, result = real
    from subword.compare.vocab import VocabTable

    cores = [{x for x in VocabTable.of(t).core if x} for t in toks]
    pair = result.pairwise[0]
    assert pair["vocab_jaccard"] == pytest.approx(len(cores[0] & cores[1]) / len(cores[0] | cores[1]))
    assert pair["unique_a_count"] == len(cores[0] - cores[1])
    table = VocabTable.of(toks[2])
    assert table.core[toks[2].token_to_id("##ing")] == b"ing"


def test_intervals_contain_the_value_and_differences_are_flagged(real):
    _, _, result = real
    for t in result.doc["tokenizers"]:
        for name, est in t["metrics"].items():
            lo, hi = est["ci"]
            if est["value"] is not None and lo is not None:
                assert lo <= est["value"] + 1e-12 and est["value"] <= hi + 1e-12 or name == "mb_per_s", name
    bl_bert = next(p for p in result.pairwise if (p["a"], p["b"]) == ("bl", "bert"))
    # BERT's vocabulary is 40x larger: far fewer tokens, far beyond the noise.
    assert bl_bert["differences"]["tokens"]["value"] > 0 and bl_bert["differences"]["tokens"]["significant"]


def test_bootstrap_is_seeded():
    lines = fx.training_lines()[:200]
    tok_a, tok_b = chars_tokenizer(lines), words_tokenizer(lines)
    one = subword.compare([tok_a, tok_b], lines, bootstrap_replicates=100, seed=7).doc
    two = subword.compare([tok_a, tok_b], lines, bootstrap_replicates=100, seed=7).doc
    three = subword.compare([tok_a, tok_b], lines, bootstrap_replicates=100, seed=8).doc
    ci = [t["metrics"]["tokens_per_word"]["ci"] for t in (one, two, three) for t in [t["tokenizers"][0]]]
    assert ci[0] == ci[1] and ci[0] != ci[2]


def test_tokens_per_word_by_script(real):
    toks, lines, result = real
    arabic = [w for s in lines for w in unicode_words(s) if regex.search(r"\p{Script=Arabic}", w)]
    enc_tokens = 0
    for line, enc in zip(lines, _encodings(toks[0], lines)):
        at, spans = 0, []
        for piece in [p for p in regex.split(r"(?wV1)\b", line) if p]:
            if regex.search(r"\p{Script=Arabic}", piece):
                spans.append((at, at + len(piece)))
            at += len(piece)
        enc_tokens += sum(1 for s, e in enc.offsets for a, b in spans if a <= max(s, e - 1) < b)
    value = result.doc["tokenizers"][0]["tokens_per_word_by_script"]["Arabic"]["value"]
    assert value == pytest.approx(enc_tokens / len(arabic))


def test_gold_boundaries(tmp_path):
    gold = tmp_path / "morph.tsv"
    gold.write_text("cats\tcat+s\nunsat\tun sat\n", encoding="utf-8")
    lines = ["cats unsat"]
    chars = chars_tokenizer(lines)
    words = words_tokenizer(lines)
    doc = subword.compare([chars, words], lines, names=["c", "w"], gold=str(gold), bootstrap_replicates=0).doc
    # chars: 3 + 4 internal boundaries, 2 of them gold; words: none.
    assert doc["gold"]["c"] == {"precision": 2 / 7, "recall": 1.0, "f1": pytest.approx(2 * 2 / 9)}
    assert doc["gold"]["w"]["precision"] is None and doc["gold"]["w"]["recall"] == 0.0


def test_gold_malformed_line_names_file_and_line(tmp_path):
    from subword.compare.align import GoldError, read_gold

    gold = tmp_path / "morph.tsv"
    gold.write_text("cats\tcat+s\ndogs\tdo+g\n", encoding="utf-8")
    with pytest.raises(GoldError, match=r"morph\.tsv:2: morphs 'do\+g' do not spell"):
        read_gold(gold)
    gold.write_text("cats cat+s\n", encoding="utf-8")
    with pytest.raises(GoldError, match=r"morph\.tsv:1: .*no tab"):
        read_gold(gold)


def test_parallel_premium():
    en = ["the cat", "a mat"]
    xx = ["the cat the cat", "a mat a mat"]
    chars = chars_tokenizer(en + xx)
    words = words_tokenizer(en + xx)
    doc = subword.compare([chars, words], en, names=["c", "w"], parallel={"en": en, "xx": xx}, pivot="en",
                          bootstrap_replicates=50).doc
    langs = {entry["language"]: entry["premium"] for entry in doc["parallel"]["languages"]}
    assert langs["en"]["w"]["value"] == 1.0
    assert langs["xx"]["w"]["value"] == 2.0
    assert langs["xx"]["c"]["value"] == pytest.approx((15 + 11) / (7 + 5))
    assert doc["parallel"]["parity"]["w"]["max_language"] == "xx"
    with pytest.raises(ValueError, match="different line counts"):
        subword.compare([chars, words], en, parallel={"en": en, "xx": xx[:1]}, pivot="en")


def test_bad_input_is_a_clear_error():
    tok = chars_tokenizer(TEXT)
    with pytest.raises(ValueError, match="empty"):
        subword.compare([tok, tok], [])
    with pytest.raises(ValueError, match="empty"):
        subword.compare([tok, tok], ["", ""])
    with pytest.raises(ValueError, match="at least two"):
        subword.compare([tok], TEXT)
    with pytest.raises(ValueError, match="distinct"):
        subword.compare([tok, tok], TEXT, names=["a", "a"])


def test_special_tokens_of_the_post_processor_are_not_counted():
    tok = fx.wordpiece()  # [CLS] ... [SEP], padding and truncation to 128 in the file
    lines = ["hello world " * 80]
    result = subword.compare([tok, tok], lines, bootstrap_replicates=0)
    assert result.metrics["t1"]["tokens"] == 160


def test_json_validates_against_schema(real):
    pytest.importorskip("jsonschema")
    import json

    from subword.compare.schema import validate

    _, _, result = real
    doc = json.loads(result.to_json())
    validate(doc)
    assert len(doc["samples"]) == 3 and doc["samples"][0]["rows"][0]["name"] == "bl"
    bad = dict(doc, tokenizers=[dict(doc["tokenizers"][0], metrics={})] * 2)
    import jsonschema

    with pytest.raises(jsonschema.ValidationError):
        validate(bad)


def test_whitespace_list_is_str_isspace():
    from subword.compare.words import WHITESPACE_CODEPOINTS

    assert WHITESPACE_CODEPOINTS == tuple(c for c in range(0x110000) if chr(c).isspace())


def test_eight_tokenizers_give_every_pair():
    toks = [chars_tokenizer(TEXT), words_tokenizer(TEXT)] * 4
    result = subword.compare(toks, TEXT, names=[f"t{i}" for i in range(8)], bootstrap_replicates=20, show=2)
    assert len(result.pairwise) == len(result.words) == 28
    assert [(p["a"], p["b"]) for p in result.pairwise][:2] == [("t0", "t1"), ("t0", "t2")]
    same = next(p for p in result.pairwise if (p["a"], p["b"]) == ("t0", "t2"))
    assert same["boundary_f1"] == 1.0 and not same["differences"]["tokens"]["significant"]
    assert len(result.doc["samples"][0]["rows"]) == 8


def test_the_ascii_fast_paths_of_classify_and_is_word_agree_with_the_unicode_patterns():
    import random

    from subword.compare.words import _WORDLIKE, _classify_by_patterns, classify, is_word

    rng = random.Random(7)
    texts = [chr(c) for c in range(128)] + ["".join(rng.choice([chr(c) for c in range(128)]) for _ in range(
        rng.randint(1, 6))) for _ in range(3000)] + ["don't", "x2", "3.14", "--", "a b", "_", "\x1c"]
    for text in texts:
        assert is_word(text) == (_WORDLIKE.search(text) is not None), repr(text)
        if not text.isspace():
            assert classify(text) == _classify_by_patterns(text), repr(text)


def test_token_length_histogram_counts_the_decoded_length_of_every_token(real):
    from collections import Counter

    from _compare_reference import vocab_table

    toks, lines, result = real
    for tok, doc in zip(toks, result.doc["tokenizers"]):
        surface = vocab_table(tok).surface
        lengths = Counter(len(surface[i].decode("utf-8", errors="replace")) for e in _encodings(tok, lines)
                          for i in e.ids)
        assert doc["token_length_histogram"] == {str(k): v for k, v in sorted(lengths.items())}, doc["name"]


def test_vocab_overlap_examples_are_the_unique_tokens_the_text_uses_most(real):
    from _compare_reference import vocab_table

    toks, lines, result = real
    names = ["bl", "spm", "bert"]
    tables = {name: vocab_table(t) for name, t in zip(names, toks)}
    cores = {name: {x for x in t.core.values() if x} for name, t in tables.items()}
    freq = {name: Counter(tables[name].core[i] for e in _encodings(t, lines) for i in e.ids)
            for name, t in zip(names, toks)}
    for pair in result.pairwise:
        for side, mine, other in (("a", pair["a"], pair["b"]), ("b", pair["b"], pair["a"])):
            only = cores[mine] - cores[other]
            used = sorted((x for x in only if freq[mine][x]), key=lambda x: (-freq[mine][x], len(x), x))
            unused = sorted((x for x in only if not freq[mine][x]), key=lambda x: (len(x) <= 1, len(x), x))
            want = [x.decode("utf-8", errors="backslashreplace") for x in (used + unused)[:10]]
            assert pair[f"unique_{side}_examples"] == want, (mine, other)
        assert freq[pair["b"]][pair["unique_b_examples"][0].encode()] > 0  # the text uses the first example


def test_subword_compare_is_a_function_and_the_package_has_no_import_cycle():
    import ast
    import inspect
    import sys
    from pathlib import Path

    from subword.compare import comparison

    assert inspect.isfunction(subword.compare) and subword.compare is comparison.compare
    assert type(sys.modules["subword.compare"]) is type(sys)  # an ordinary module, its class not swapped
    package = Path(comparison.__file__).parent
    edges: dict[str, set[str]] = {}
    for path in package.glob("*.py"):
        name = path.stem
        edges[name] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):  # function-level imports too
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("subword.compare"):
                parts = node.module.split(".")
                edges[name] |= {parts[2]} if len(parts) > 2 else {a.name for a in node.names}
            elif isinstance(node, ast.Import):
                edges[name] |= {a.name.split(".")[2] for a in node.names if a.name.startswith("subword.compare.")}
    edges = {k: {v for v in vs if v in edges and v != "__init__"} for k, vs in edges.items()}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in edges[start])

    cycles = [m for m in edges if reaches(m, m, set())]
    assert not cycles, {m: edges[m] for m in cycles}
