"""Tests of models/objectives.py against the definitions of the objectives.

Statistical checks draw large samples and allow Z = 5 binomial standard
deviations (a false alarm about once in 3.5 million runs); every draw is
counter-based, so each test is deterministic anyway and a pass cannot flicker.
"""

from __future__ import annotations

import math

import pytest
import torch

from models.objectives import (
    MaskingConfig,
    PlmConfig,
    counter_uniform,
    distillation_loss,
    load_teacher,
    mask_tokens,
    mlm_loss,
    nsp_loss,
    nsp_pair,
    plm_inputs,
    plm_num_predict,
    sop_pair,
    word_ids_from_offsets,
)

Z = 5.0
MASK, VOCAB = 4, 1000


def within(observed: float, p: float, n: int, what: str) -> None:
    """``observed`` (a share of n Bernoulli(p) trials) lies within Z sigma of p."""
    sigma = math.sqrt(p * (1 - p) / n)
    assert abs(observed - p) <= Z * sigma, f"{what}: {observed:.5f} vs {p} (n={n}, {Z} sigma = {Z * sigma:.5f})"


def batch(B: int = 2000, T: int = 128, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Random ids with [CLS] at 0, [SEP] at the end of a random length, padding after it."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(10, VOCAB, (B, T), generator=g)
    lengths = torch.randint(T // 4, T + 1, (B,), generator=g)
    pos = torch.arange(T)[None, :]
    special = (pos == 0) | (pos >= lengths[:, None] - 1)
    ids[:, 0] = 2
    ids[pos == lengths[:, None] - 1] = 3
    ids[pos >= lengths[:, None]] = 0
    return ids, special


def run(ids, special, cfg, *, seed=0, epoch=0, index=None, **kw):
    index = torch.arange(ids.shape[0]) if index is None else index
    return mask_tokens(ids, special_mask=special, mask_id=MASK, vocab_size=VOCAB, cfg=cfg, seed=seed, epoch=epoch,
                       example_index=index, **kw)


# ==== MLM: rates ====


@pytest.mark.parametrize("rate", [0.15, 0.3])
def test_selection_and_replacement_rates(rate: float) -> None:
    ids, special = batch()
    masked, labels = run(ids, special, MaskingConfig(rate=rate))
    candidates = int((~special).sum())
    selected = labels != -100
    n_sel = int(selected.sum())
    within(n_sel / candidates, rate, candidates, "selection rate")
    assert torch.equal(labels[selected], ids[selected])
    is_mask = masked[selected] == MASK
    within(float(is_mask.float().mean()), 0.8, n_sel, "[MASK] share")
    # A random replacement equals the original with probability 1/|pool|, where the pool is
    # every id but mask_id; "changed to another id" then has probability 0.1 * (1 - 1/999).
    changed = (masked[selected] != ids[selected]) & ~is_mask
    within(float(changed.float().mean()), 0.1 * (1 - 1 / (VOCAB - 1)), n_sel, "random share")
    # The random ids are spread over the vocabulary (not, e.g., always the original).
    assert masked[selected][changed].unique().numel() > 0.9 * (VOCAB - 1) * (1 - math.exp(-int(changed.sum()) / VOCAB))


def test_rates_are_configurable_and_kept_share_follows() -> None:
    ids, special = batch(B=1000)
    cfg = MaskingConfig(rate=0.25, mask_frac=0.5, random_frac=0.3)
    masked, labels = run(ids, special, cfg)
    sel = labels != -100
    n = int(sel.sum())
    within(float((masked[sel] == MASK).float().mean()), 0.5, n, "[MASK] share")
    kept_p = 0.2 + 0.3 / (VOCAB - 1)  # kept, or random drew the original id
    within(float((masked[sel] == ids[sel]).float().mean()), kept_p, n, "kept share")


def test_specials_and_padding_are_never_selected_or_changed() -> None:
    ids, special = batch()
    for cfg in (MaskingConfig(rate=1.0), MaskingConfig(rate=0.5, fixed_count=True)):
        masked, labels = run(ids, special, cfg)
        assert not bool((labels[special] != -100).any())
        assert torch.equal(masked[special], ids[special])
    # rate 1 selects every candidate: the complement of the specials, exactly.
    _, labels = run(ids, special, MaskingConfig(rate=1.0))
    assert torch.equal(labels != -100, ~special)


def test_random_ids_come_from_the_given_pool() -> None:
    ids, special = batch(B=500)
    pool = torch.tensor([7, 8, 9])
    masked, labels = run(ids, special, MaskingConfig(rate=0.5, mask_frac=0.0, random_frac=1.0), random_ids=pool)
    sel = labels != -100
    assert set(masked[sel].unique().tolist()) == {7, 8, 9}
    assert not bool((masked[sel] == MASK).any())


def test_fixed_count_is_exact_per_sequence_and_uniform_over_positions() -> None:
    ids, special = batch(B=4000, T=64)
    _, labels = run(ids, special, MaskingConfig(rate=0.3, fixed_count=True))
    sel = labels != -100
    expected = torch.round((~special).sum(1).double() * 0.3).long()
    assert torch.equal(sel.sum(1), expected)
    # Every candidate position is equally likely: per position, the share of rows that
    # select it among rows where it is a candidate is near the overall share.
    full = ~special
    rows = full[:, 1:40].all(1)  # rows long enough that positions 1..39 are candidates
    share = sel[rows][:, 1:40].float().mean(0)
    overall = float(sel[rows].sum() / full[rows].sum())
    n = int(rows.sum())
    sigma = math.sqrt(overall * (1 - overall) / n)
    assert float((share - overall).abs().max()) < Z * sigma


def test_draws_are_independent_across_examples_and_positions() -> None:
    # Two different examples with the same tokens: the overlap of their masks is ~p^2.
    ids = torch.full((2, 20000), 50)
    special = torch.zeros(2, 20000, dtype=torch.bool)
    _, labels = run(ids, special, MaskingConfig(rate=0.5), index=torch.tensor([0, 1]))
    sel = labels != -100
    within(float((sel[0] & sel[1]).float().mean()), 0.25, 20000, "overlap of two examples' masks")
    # Neighbouring positions are independent too.
    within(float((sel[0, 1:] & sel[0, :-1]).float().mean()), 0.25, 19999, "adjacent positions both selected")


# ==== MLM: determinism (counter-based) ====


def test_mask_depends_only_on_seed_epoch_and_index() -> None:
    ids, special = batch(B=64)
    index = torch.arange(1000, 1064)
    cfg = MaskingConfig()
    full = run(ids, special, cfg, seed=3, epoch=2, index=index)
    # Any batch composition (worker count, world size, resume point): shuffled and split.
    perm = torch.randperm(64, generator=torch.Generator().manual_seed(1))
    for part in perm.split(7):
        m, lab = run(ids[part], special[part], cfg, seed=3, epoch=2, index=index[part])
        assert torch.equal(m, full[0][part]) and torch.equal(lab, full[1][part])
    # The draw of an example does not depend on the other rows' tokens either.
    other = ids.clone()
    other[1:] = torch.randint(10, VOCAB, other[1:].shape)
    assert torch.equal(run(other, special, cfg, seed=3, epoch=2, index=index)[1][0], full[1][0])
    # Seed, epoch and index each change it.
    for kw in (dict(seed=4, epoch=2, index=index), dict(seed=3, epoch=3, index=index),
               dict(seed=3, epoch=2, index=index + 1)):
        assert not torch.equal(run(ids, special, cfg, **kw)[1], full[1])


def test_static_masking_ignores_the_epoch_and_dynamic_does_not() -> None:
    ids, special = batch(B=64)
    static = MaskingConfig(dynamic=False)
    assert torch.equal(run(ids, special, static, epoch=0)[1], run(ids, special, static, epoch=5)[1])
    dynamic = MaskingConfig(dynamic=True)
    a, b = run(ids, special, dynamic, epoch=0)[1], run(ids, special, dynamic, epoch=1)[1]
    # Two epochs' masks overlap only by chance (~p^2 of candidates).
    overlap = float(((a != -100) & (b != -100)).sum() / (~special).sum())
    assert overlap < 0.05


def test_counter_uniform_is_uniform() -> None:
    u = counter_uniform(1, 2, 3, 4, 200_000)
    hist = torch.histc(u.float(), bins=10, min=0, max=1) / u.numel()
    assert float((hist - 0.1).abs().max()) < Z * math.sqrt(0.1 * 0.9 / u.numel())
    assert 0.0 <= float(u.min()) and float(u.max()) < 1.0


def test_bad_input_is_refused() -> None:
    ids, special = batch(B=4)
    with pytest.raises(ValueError, match="whole_word masking needs word_ids"):
        run(ids, special, MaskingConfig(whole_word=True))
    with pytest.raises(ValueError, match="special_mask has shape"):
        run(ids, special[:, :-1], MaskingConfig())
    with pytest.raises(ValueError, match="example_index"):
        run(ids, special, MaskingConfig(), index=torch.arange(3))
    with pytest.raises(ValueError, match="seed"):
        run(ids, special, MaskingConfig(), seed=-1)
    with pytest.raises(ValueError, match="rate must be"):
        MaskingConfig(rate=1.5)
    with pytest.raises(ValueError, match="mask_frac \\+ random_frac"):
        MaskingConfig(mask_frac=0.9, random_frac=0.2)


# ==== Whole-word masking, for every tokenizer kind ====


@pytest.fixture(scope="module")
def tokenizers_and_text():
    """WordPiece, byte-level BPE and SentencePiece-style Unigram, trained by our trainers on the built-in corpus."""
    from corpora.builtin import builtin_corpus
    from subword.trainers import BpeTrainer, WordPieceTrainer, train_bpe, train_wordpiece
    from subword.unigram import UnigramTrainer, train_unigram_hf

    lines = builtin_corpus().read_text(encoding="utf-8").splitlines(keepends=True)
    train = lines[:3000]
    toks = {
        "wordpiece": train_wordpiece(train, WordPieceTrainer(vocab_size=800)),
        "byte_level": train_bpe(train, BpeTrainer(vocab_size=800, special_tokens=["<s>", "</s>"]), byte_level=True),
        "sentencepiece": train_unigram_hf(train, UnigramTrainer(compat="hf", vocab_size=800,
                                                                special_tokens=["<unk>", "<s>"])),
    }
    held_out = [line.rstrip("\n") for line in lines[5000:6000] if line.strip()]
    held_out.append("Hello, world! The café's 12 dogs—don't they? 東京は晴れ。 ok  x\t y")
    return toks, held_out


@pytest.mark.parametrize("kind", ["wordpiece", "byte_level", "sentencepiece"])
def test_word_ids_match_the_pre_tokenizer_as_hf_tokenizers_reports_it(kind, tokenizers_and_text) -> None:
    """Cross-check: HF tokenizers' Encoding.word_ids (its pre-tokenizer's pieces) on the same tokenizer.json."""
    tokenizers = pytest.importorskip("tokenizers")
    from subword.formats import hf_json

    toks, texts = tokenizers_and_text
    tok = toks[kind]
    hf = tokenizers.Tokenizer.from_str(hf_json.dumps(tok, include_provenance=False))
    ours = word_ids_from_offsets(tok, tok.encode_batch(texts))
    multi_token_words = 0
    for text, o in zip(texts, ours):
        seen: dict[int, int] = {}
        theirs = [-1 if w is None else seen.setdefault(w, len(seen)) for w in hf.encode(text).word_ids]
        assert o == theirs, text
        multi_token_words += len(o) - len(set(o))
    assert multi_token_words > 1000  # the check covers words of several tokens


@pytest.mark.parametrize("kind", ["wordpiece", "byte_level", "sentencepiece"])
@pytest.mark.parametrize("fixed", [False, True])
def test_whole_words_are_selected_together(kind, fixed, tokenizers_and_text) -> None:
    toks, texts = tokenizers_and_text
    tok = toks[kind]
    encs = tok.encode_batch(texts)
    words = word_ids_from_offsets(tok, encs)
    T = max(len(e.ids) for e in encs)
    B = len(encs)
    ids = torch.zeros(B, T, dtype=torch.long)
    wid = torch.full((B, T), -1, dtype=torch.long)
    special = torch.ones(B, T, dtype=torch.bool)
    for b, (e, w) in enumerate(zip(encs, words)):
        n = len(e.ids)
        ids[b, :n] = torch.tensor(e.ids)
        wid[b, :n] = torch.tensor(w)
        special[b, :n] = torch.tensor(e.special_tokens_mask, dtype=torch.bool)
    rate = 0.2
    _, labels = mask_tokens(ids, special_mask=special, mask_id=1, vocab_size=tok.vocab_size,
                            cfg=MaskingConfig(rate=rate, whole_word=True, fixed_count=fixed), seed=5, epoch=0,
                            example_index=torch.arange(B), word_ids=wid)
    sel = labels != -100
    assert not bool(sel[special].any())
    # Per (row, word): the least and the most selected of its tokens must agree.
    real = wid >= 0
    key = (torch.arange(B)[:, None] * T + wid)[real]  # one id per (row, word)
    uniq, inv = key.unique(return_inverse=True)
    lo = torch.ones(uniq.numel(), dtype=torch.long).scatter_reduce(0, inv, sel[real].long(), "amin")
    hi = torch.zeros(uniq.numel(), dtype=torch.long).scatter_reduce(0, inv, sel[real].long(), "amax")
    assert torch.equal(lo, hi), f"{kind}: {int((lo != hi).sum())} words partly selected"
    n_words, chosen = uniq.numel(), int(hi.sum())
    assert n_words > 5000
    if fixed:
        budget = torch.round((~special & (wid >= 0)).sum(1).double() * rate).long()
        assert bool((sel.sum(1) <= budget).all())
        # Short single-token words fill the budget nearly exactly.
        assert float(sel.sum() / budget.sum()) > 0.9
    else:
        within(chosen / n_words, rate, n_words, f"{kind} word selection rate")


# ==== NSP and SOP ====


def make_documents(n_docs: int = 40, seed: int = 0) -> list[list[list[int]]]:
    """Documents whose tokens say where they come from: doc d's tokens lie in [1000 d, 1000 d + 1000)."""
    g = torch.Generator().manual_seed(seed)
    docs = []
    for d in range(n_docs):
        n_seg = int(torch.randint(1, 12, (1,), generator=g))
        tok = 1000 * d
        segs = []
        for _ in range(n_seg):
            length = int(torch.randint(1, 30, (1,), generator=g))
            segs.append(list(range(tok, tok + length)))
            tok += length
        docs.append(segs)
    return docs


def contiguous(xs: list[int]) -> bool:
    return all(b == a + 1 for a, b in zip(xs, xs[1:]))


def test_nsp_pairs_follow_the_definition() -> None:
    docs = make_documents()
    n = real = 0
    for i in range(2500):
        d = i % len(docs)
        s = (i // len(docs)) % len(docs[d])
        a, b, label = nsp_pair(docs, d, s, seed=1, epoch=0, example_index=i, max_tokens=48)
        assert a and b and len(a) + len(b) <= 48
        assert {t // 1000 for t in a} == {d} and contiguous(a)
        b_docs = {t // 1000 for t in b}
        assert len(b_docs) == 1 and contiguous(b)
        if label == 0:
            assert b_docs == {d} and b[0] > a[-1]  # B continues A (trimming drops only ends)
        else:
            assert b_docs != {d}
        # A chunk of one token cannot be cut: its B is always random. Others: Bernoulli(1/2).
        if sum(len(x) for x in docs[d][s:]) >= 2:
            real += 1 - label
            n += 1
    within(real / n, 0.5, n, "NSP real-next share")


def test_nsp_and_sop_are_deterministic_per_counter() -> None:
    docs = make_documents()
    for fn in (nsp_pair, sop_pair):
        a = fn(docs, 3, 0, seed=1, epoch=2, example_index=17, max_tokens=40)
        assert fn(docs, 3, 0, seed=1, epoch=2, example_index=17, max_tokens=40) == a
        others = {tuple(map(tuple, fn(docs, 3, 0, seed=1, epoch=e, example_index=17, max_tokens=40)[:2]))
                  for e in range(20)}
        assert len(others) > 1


def test_sop_pairs_are_consecutive_and_swapped_half_the_time() -> None:
    docs = make_documents()
    swapped = n = 0
    for i in range(4000):
        d = i % len(docs)
        s = (i // len(docs)) % len(docs[d])
        if sum(len(x) for x in docs[d][s:]) < 2:
            continue
        a, b, label = sop_pair(docs, d, s, seed=2, epoch=0, example_index=i, max_tokens=48)
        first, second = (b, a) if label else (a, b)
        assert {t // 1000 for t in a + b} == {d} and len(a) + len(b) <= 48
        assert contiguous(first) and contiguous(second) and second[0] > first[-1]
        swapped += label
        n += 1
    within(swapped / n, 0.5, n, "SOP swapped share")


def test_pairs_refuse_bad_input() -> None:
    docs = make_documents(3)
    with pytest.raises(ValueError, match="doc_index"):
        nsp_pair(docs, 9, 0, seed=0, epoch=0, example_index=0, max_tokens=10)
    with pytest.raises(ValueError, match="two documents"):
        nsp_pair([[[1]]], 0, 0, seed=0, epoch=0, example_index=0, max_tokens=10)
    with pytest.raises(ValueError, match="fewer than two tokens"):
        sop_pair([[[1]]], 0, 0, seed=0, epoch=0, example_index=0, max_tokens=10)


# ==== Permutation LM ====


@pytest.mark.parametrize("T", [7, 33, 64])
def test_plm_masks_satisfy_a_factorisation_order(T: int) -> None:
    B = 40
    ids, special = batch(B=B, T=T, seed=T)
    cfg = PlmConfig(predict_fraction_k=4, max_span=3)
    out = plm_inputs(ids, special_mask=special, cfg=cfg, seed=0, epoch=0, example_index=torch.arange(B))
    perm, tm, labels = out["perm_mask"].bool(), out["target_mapping"], out["labels"]
    N = plm_num_predict(T, cfg)
    assert perm.shape == (B, T, T) and tm.shape == (B, N, T) and labels.shape == (B, N)
    for b in range(B):
        n = int((~special[b]).sum())
        rows = tm[b].sum(1) > 0
        k = int(rows.sum())
        assert k == (math.ceil(n / 4) if n else 0)
        assert bool((rows[:k]).all()) and not bool(rows[k:].any())  # valid rows first
        targets = tm[b, :k].argmax(1)  # (k,) positions in prediction order
        assert len(set(targets.tolist())) == k
        assert not bool(special[b, targets].any())
        assert torch.equal(labels[b, :k], ids[b, targets]) and bool((labels[b, k:] == -100).all())
        is_target = torch.zeros(T, dtype=torch.bool)
        is_target[targets] = True
        # Non-targets (context) see each other and no target.
        ctx = ~is_target
        assert not bool(perm[b][ctx][:, ctx].any())
        assert bool(perm[b][ctx][:, is_target].all())
        # Target r sees the context and exactly the targets before it in the order.
        sub = perm[b][targets][:, targets]  # (k, k) blocked among targets, in order
        assert torch.equal(sub, ~torch.ones(k, k, dtype=torch.bool).tril(-1))
        assert not bool(perm[b][targets][:, ctx].any())


def test_plm_targets_come_in_spans_and_at_rate_one_over_k() -> None:
    B, T = 300, 120
    ids = torch.randint(10, 100, (B, T))
    special = torch.zeros(B, T, dtype=torch.bool)
    out = plm_inputs(ids, special_mask=special, cfg=PlmConfig(), seed=1, epoch=0, example_index=torch.arange(B))
    is_target = out["target_mapping"].sum(1) > 0  # (B, T)
    assert torch.equal(is_target.sum(1), torch.full((B,), 20))
    # Spans: runs of consecutive targets are longer than isolated picks would give.
    runs = (is_target[:, 1:] & ~is_target[:, :-1]).sum() + is_target[:, 0].sum()
    mean_run = float(is_target.sum() / runs)
    assert 2.0 < mean_run <= 5.0  # uniform span 1..5 has mean 3; random picks would give ~1.2


def test_plm_inputs_do_not_leak_targets_through_xlnet() -> None:
    """Changing the token of target r changes no prediction at or before r in the order."""
    from models import XLNetConfig, XLNetLMHeadModel

    torch.manual_seed(0)
    model = XLNetLMHeadModel(XLNetConfig.preset("tiny", vocab_size=100, num_layers=2)).eval()
    T = 23  # odd: no even-length rule
    ids = torch.randint(10, 100, (1, T))
    special = torch.zeros(1, T, dtype=torch.bool)
    special[0, -1] = True
    out = plm_inputs(ids, special_mask=special, cfg=PlmConfig(predict_fraction_k=3), seed=0, epoch=0,
                     example_index=torch.tensor([0]))
    tm, perm = out["target_mapping"], out["perm_mask"]
    base = model(ids, perm_mask=perm, target_mapping=tm, labels=out["labels"])
    assert torch.isfinite(base.loss)
    targets = tm[0].argmax(1)
    changed_later = False
    for r in range(targets.numel()):
        alt = ids.clone()
        alt[0, targets[r]] = (alt[0, targets[r]] + 1 - 10) % 90 + 10
        logits = model(alt, perm_mask=perm, target_mapping=tm).logits
        assert torch.allclose(logits[0, : r + 1], base.logits[0, : r + 1], atol=1e-6), f"rank {r} leaked"
        changed_later |= not torch.allclose(logits[0, r + 1 :], base.logits[0, r + 1 :], atol=1e-6)
    assert changed_later  # later predictions do read earlier targets: the test can fail


def test_plm_is_deterministic_per_counter() -> None:
    ids, special = batch(B=8, T=31)
    a = plm_inputs(ids, special_mask=special, cfg=PlmConfig(), seed=0, epoch=1, example_index=torch.arange(8))
    b = plm_inputs(ids[4:], special_mask=special[4:], cfg=PlmConfig(), seed=0, epoch=1,
                   example_index=torch.arange(4, 8))
    assert all(torch.equal(a[k][4:], b[k]) for k in a)


# ==== Losses ====


def test_mlm_loss_dense_and_sparse_agree_and_empty_is_zero() -> None:
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 11, generator=g)
    labels = torch.full((3, 5), -100)
    labels[0, 1], labels[2, 4], labels[1, 0] = 3, 7, 10
    dense = mlm_loss(logits, labels)
    sel = labels != -100
    assert torch.allclose(dense, mlm_loss(logits[sel], labels[sel]))
    by_hand = -sum(torch.log_softmax(logits[b, t], -1)[labels[b, t]] for b, t in sel.nonzero().tolist()) / 3
    assert torch.allclose(dense, by_hand)
    assert float(mlm_loss(logits, torch.full((3, 5), -100))) == 0.0
    assert torch.allclose(mlm_loss(logits, labels, reduction="sum"), by_hand * 3)
    assert torch.allclose(nsp_loss(logits[:, 0, :2], torch.tensor([0, 1, 1])),
                          torch.nn.functional.cross_entropy(logits[:, 0, :2], torch.tensor([0, 1, 1])))


def test_distillation_loss_against_a_hand_computation() -> None:
    g = torch.Generator().manual_seed(0)
    B, T, V, H = 2, 4, 6, 5
    s, t = torch.randn(B, T, V, generator=g), torch.randn(B, T, V, generator=g)
    sh, th = torch.randn(B, T, H, generator=g), torch.randn(B, T, H, generator=g)
    labels = torch.tensor([[-100, 2, -100, 5], [1, -100, -100, -100]])
    attn = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    temp = 3.0
    out = distillation_loss(s, t, sh, th, labels, temperature=temp, attention_mask=attn)
    kd = cos = 0.0
    rows = [(b, i) for b in range(B) for i in range(T) if attn[b, i]]
    for b, i in rows:
        ps = [math.exp(x / temp) for x in s[b, i].tolist()]
        pt = [math.exp(x / temp) for x in t[b, i].tolist()]
        zs, zt = sum(ps), sum(pt)
        kd += sum(q / zt * math.log((q / zt) / (p / zs)) for p, q in zip(ps, pt))
        u, v = sh[b, i].tolist(), th[b, i].tolist()
        dot = sum(x * y for x, y in zip(u, v))
        cos += 1 - dot / math.sqrt(sum(x * x for x in u) * sum(y * y for y in v))
    kd = kd / len(rows) * temp**2
    cos /= len(rows)
    mlm = 0.0
    picks = [(b, i) for b in range(B) for i in range(T) if labels[b, i] != -100]
    for b, i in picks:
        row = s[b, i].tolist()
        mlm += math.log(sum(math.exp(x) for x in row)) - row[int(labels[b, i])]
    mlm /= len(picks)
    assert float(out["kd"]) == pytest.approx(kd, rel=1e-5)
    assert float(out["cos"]) == pytest.approx(cos, rel=1e-5)
    assert float(out["mlm"]) == pytest.approx(mlm, rel=1e-5)
    assert float(out["loss"]) == pytest.approx(5 * kd + 2 * mlm + cos, rel=1e-5)
    w = distillation_loss(s, t, sh, th, labels, temperature=temp, attention_mask=attn, weights=(1.0, 0.0, 0.0))
    assert float(w["loss"]) == pytest.approx(kd, rel=1e-5)
    # Gradients reach the student only.
    s.requires_grad_(True)
    distillation_loss(s, t, sh, th, labels)["loss"].backward()
    assert s.grad is not None and float(s.grad.abs().sum()) > 0


def test_load_teacher_ours_and_transformers(tmp_path) -> None:
    from models import BertConfig, BertForPreTraining, DistilBertConfig, DistilBertForMaskedLM

    torch.manual_seed(0)
    ours = BertForPreTraining(BertConfig.preset("tiny", vocab_size=120)).eval()
    ours.to_hf(tmp_path / "ours")
    teacher = load_teacher(tmp_path / "ours")
    ids = torch.randint(5, 120, (2, 9))
    expect = ours(ids, output_hidden_states=True)
    got = teacher(ids)
    assert torch.allclose(got.logits, expect.logits, atol=1e-6)
    assert torch.allclose(got.hidden, expect.hidden_states[-1], atol=1e-6)
    teacher.train()
    assert not teacher.training and not any(p.requires_grad for p in teacher.parameters())
    # A student can learn from it.
    student = DistilBertForMaskedLM(DistilBertConfig.preset("tiny", vocab_size=120))
    s = student(ids, output_hidden_states=True)
    loss = distillation_loss(s.logits, got.logits, s.hidden_states[-1], got.hidden, torch.full((2, 9), -100))
    loss["loss"].backward()

    transformers = pytest.importorskip("transformers")
    cfg = transformers.ElectraConfig(vocab_size=120, embedding_size=32, hidden_size=32, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=37)
    hf = transformers.ElectraForMaskedLM(cfg).eval()
    hf.save_pretrained(tmp_path / "hf")
    teacher = load_teacher(tmp_path / "hf")
    ref = hf(ids, output_hidden_states=True)
    got = teacher(ids)
    assert torch.allclose(got.logits, ref.logits, atol=1e-6)
    assert torch.allclose(got.hidden, ref.hidden_states[-1], atol=1e-6)
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_teacher(tmp_path / "missing")


def test_random_pool_leaves_out_the_special_tokens(tokenizers_and_text) -> None:
    from models.objectives import random_pool

    toks, _ = tokenizers_and_text
    tok = toks["wordpiece"]
    pool = random_pool(tok)
    specials = {tok.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")} - {None}
    assert specials and not specials & set(pool.tolist())
    assert pool.numel() == tok.vocab_size - len(specials)
