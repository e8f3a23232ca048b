"""Each measure of ``models.scoring`` against its definition, on hand-made predictors.

The predictors are functions, not trained models, so the expected value of every measure is computed by
hand from the definition: a uniform predictor scores ``log2 V`` bits per token; one that knows the answer
scores 0 bits and a cloze accuracy of 1; a predictor whose confidence depends on whether the next slot is
masked tells PLL-word-l2r (later tokens of the word masked) from the original PLL.
"""

from __future__ import annotations

import math

import pytest
import torch

from models import scoring
from models.scoring import Frame, bits_per_byte, cloze_accuracy, encode_lines, pll_per_byte
from subword import Tokenizer, WordPiece
from subword.pre_tokenizers import Whitespace

TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##believ", "##able", "cat", "s", "##at", "the",
          "é", "##t", "##é"]
V = len(TOKENS)
LINES = ["the cat unbelievable", "sat the été", "cat cat s", "unbelievable s"]  # distinct token counts
FRAME = Frame(cls_id=2, sep_id=3, mask_id=4, pad_id=0, max_len=16)


@pytest.fixture(scope="module")
def tok():
    return Tokenizer(WordPiece({t: i for i, t in enumerate(TOKENS)}, unk_token="[UNK]"), pre_tokenizer=Whitespace())


def _originals(tok):
    """The framed id rows of every window, to let the oracle find which line a masked row came from."""
    rows = []
    for e in encode_lines(tok, LINES):
        for s in range(0, len(e.ids), FRAME.window):
            rows.append([FRAME.cls_id, *e.ids[s:s + FRAME.window], FRAME.sep_id])
    return rows


def _source(row, originals):
    """The original of a masked row: same length, equal wherever the row is not [MASK]."""
    row = [t for t in row.tolist() if t != FRAME.pad_id]
    for orig in originals:
        if len(orig) == len(row) and all(a == b or a == FRAME.mask_id for a, b in zip(row, orig)):
            return orig
    raise AssertionError(f"no original for {row}")


def oracle(tok, p_right=1.0, p_masked_next=None):
    """A masked predictor that puts ``p_right`` on the true token (``p_masked_next`` when the next slot is
    also masked), the rest spread evenly."""
    originals = _originals(tok)

    def predict(ids, mask, where):
        out = []
        for r in range(ids.shape[0]):
            orig = _source(ids[r], originals)
            for t in torch.nonzero(where[r]).flatten().tolist():
                p = p_right
                if p_masked_next is not None and t + 1 < ids.shape[1] and int(ids[r, t + 1]) == FRAME.mask_id:
                    p = p_masked_next
                row = torch.full((V,), (1 - p) / (V - 1) if p < 1 else 0.0)
                row[orig[t]] = p
                out.append(torch.log(row))
        return torch.stack(out)

    return predict


def uniform(ids, mask, where):
    return torch.full((int(where.sum()), V), -math.log(V))


def _counts(tok):
    enc = encode_lines(tok, LINES)
    return sum(len(e.ids) for e in enc), sum(len(line.encode("utf-8")) for line in LINES), enc


def test_words_follow_whitespace_and_offsets(tok):
    e = encode_lines(tok, ["unbelievable cat"])[0]
    assert [TOKENS[i] for i in e.ids] == ["un", "##believ", "##able", "cat"]
    assert e.words == [0, 0, 0, 1] and e.word_text == {0: "unbelievable", 1: "cat"}


def test_pll_uniform_is_log2_v_bits_per_token(tok):
    n, nbytes, _ = _counts(tok)
    r = pll_per_byte(uniform, tok, LINES, FRAME, batch_rows=3)
    assert r["tokens"] == n and r["bytes"] == nbytes
    assert r["bits_per_byte"] == pytest.approx(n * math.log2(V) / nbytes)


def test_pll_oracle_is_zero_and_partial_oracle_matches_the_sum(tok):
    assert pll_per_byte(oracle(tok), tok, LINES, FRAME)["bits_per_byte"] == pytest.approx(0.0, abs=1e-6)
    n, nbytes, _ = _counts(tok)
    r = pll_per_byte(oracle(tok, 0.5), tok, LINES, FRAME)
    assert r["bits_per_byte"] == pytest.approx(n * 1.0 / nbytes)  # one bit per token


def test_pll_masks_the_later_tokens_of_the_word(tok):
    """p = 1/2 when the next slot is visible, 1/8 when it is masked: under PLL-word-l2r exactly the
    non-final tokens of multi-token words see a masked next slot (3 bits), the others 1 bit."""
    _, nbytes, enc = _counts(tok)
    expected = 0.0
    for e in enc:
        for i, w in enumerate(e.words):
            nonfinal = i + 1 < len(e.words) and e.words[i + 1] == w
            expected += 3.0 if nonfinal else 1.0
    r = pll_per_byte(oracle(tok, 0.5, p_masked_next=1 / 8), tok, LINES, FRAME)
    assert r["bits"] == pytest.approx(expected)
    assert expected > sum(len(e.ids) for e in enc)  # the test can tell word-l2r from the original PLL


def test_windows_score_every_token_once(tok):
    n, nbytes, _ = _counts(tok)
    small = Frame(cls_id=2, sep_id=3, mask_id=4, pad_id=0, max_len=4)  # windows of 2 tokens
    assert pll_per_byte(uniform, tok, LINES, small)["tokens"] == n


def test_cloze_oracle_and_wrong_predictor(tok):
    counts = {"cat": 150, "the": 20, "unbelievable": 2}
    right = cloze_accuracy(oracle(tok), tok, LINES, FRAME, counts)
    words = sum(len(line.split()) for line in LINES)
    assert right["words"] == words and right["accuracy"] == 1.0
    assert right["bands"]["frequent (100+)"]["words"] == 3  # "cat" three times
    assert right["bands"]["unseen"]["words"] == 4  # "sat", "été", "s" twice

    def never(ids, mask, where):
        out = torch.zeros((int(where.sum()), V))
        out[:, 1] = 1.0  # always [UNK], never a word's token here
        return out

    assert cloze_accuracy(never, tok, LINES, FRAME, counts)["accuracy"] == 0.0


def test_cloze_needs_every_slot_right(tok):
    """Right on the first token of every word only: exactly the single-token words count."""
    originals = _originals(tok)

    def first_only(ids, mask, where):
        out = []
        for r in range(ids.shape[0]):
            orig = _source(ids[r], originals)
            slots = torch.nonzero(where[r]).flatten().tolist()
            for k, t in enumerate(slots):
                row = torch.zeros(V)
                row[orig[t] if k == 0 else 1] = 1.0
                out.append(row)
        return torch.stack(out)

    enc = encode_lines(tok, LINES)
    single = sum(1 for e in enc for w in set(e.words) if e.words.count(w) == 1)
    total = sum(len(set(e.words)) for e in enc)
    r = cloze_accuracy(first_only, tok, LINES, FRAME, {})
    assert r["accuracy"] == pytest.approx(single / total) and 0 < single < total


def test_bits_per_byte_uniform_and_oracle(tok):
    n, nbytes, enc = _counts(tok)

    def causal_uniform(ids, mask):
        return torch.full((*ids.shape, V), -math.log(V))

    def causal_oracle(ids, mask):
        out = torch.full((*ids.shape, V), -1e9)
        out.scatter_(2, ids[:, :, None], 0.0)
        return out

    r = bits_per_byte(causal_uniform, tok, LINES, FRAME)
    assert r["tokens"] == n and r["bits_per_byte"] == pytest.approx(n * math.log2(V) / nbytes)
    assert bits_per_byte(causal_oracle, tok, LINES, FRAME)["bits_per_byte"] == pytest.approx(0.0, abs=1e-6)


def test_xlnet_left_to_right_is_a_proper_likelihood():
    """With perm_mask hiding j >= i, the query at i cannot see x_i or later tokens: changing a later token
    leaves every earlier row's log-probabilities unchanged, and each row is a distribution."""
    from models.config import preset
    from models.registry import build_model

    torch.manual_seed(0)
    model = build_model(preset("xlnet", "tiny", vocab_size=50), heads=True)
    predict = scoring.xlnet_predictor(model)
    a = torch.tensor([[2, 10, 11, 12, 13]])
    b = torch.tensor([[2, 10, 11, 30, 31]])
    la, lb = predict(a, torch.ones_like(a)), predict(b, torch.ones_like(b))
    assert torch.allclose(la[0, 1:4], lb[0, 1:4], atol=1e-5)  # rows 1..3 see only x_<3 = same prefix
    assert not torch.allclose(la[0, 4], lb[0, 4], atol=1e-5)  # row 4 sees x_3, which differs
    assert torch.allclose(la[0, 1:].exp().sum(-1), torch.ones(4), atol=1e-4)


def test_masked_predictor_matches_dense_logits():
    from models.config import preset
    from models.registry import build_model

    torch.manual_seed(0)
    model = build_model(preset("bert", "tiny", vocab_size=40, sentence_head=None, add_pooler=False), heads=True).eval()
    ids = torch.tensor([[2, 7, 4, 9, 3], [2, 4, 8, 3, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]])
    where = ids == 4
    got = scoring.masked_predictor(model)(ids, mask, where)
    with torch.no_grad():
        dense = torch.log_softmax(model(ids, mask).logits.float(), -1)[where]
    assert torch.allclose(got, dense, atol=1e-4)


def test_per_line_bits_are_each_lines_share(tok):
    """The verdict's noise estimate needs each line's bits: uniform gives ``log2 V`` per token of that line,
    also when a line spans several windows, for PLL and for left-to-right bits."""
    enc = encode_lines(tok, LINES)
    small = Frame(cls_id=2, sep_id=3, mask_id=4, pad_id=0, max_len=4)  # windows of 2 tokens

    def causal_uniform(ids, mask):
        return torch.full((*ids.shape, V), -math.log(V))

    for r in (pll_per_byte(uniform, tok, LINES, small, batch_rows=3),
              bits_per_byte(causal_uniform, tok, LINES, small, batch_rows=2)):
        assert r["line_bits"] == pytest.approx([len(e.ids) * math.log2(V) for e in enc])
        assert r["line_bytes"] == [len(line.encode("utf-8")) for line in LINES]
        assert sum(r["line_bits"]) == pytest.approx(r["bits"])
