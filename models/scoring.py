"""Measures of a pretrained model that do not depend on its tokenizer: they are per byte or per word of text.

An MLM loss per token means something different under each vocabulary (a token of cl100k_base carries more
text than one of a 4k WordPiece), so ``subword study`` scores models on the held-out text with measures whose
unit is the text itself (definitions, formulas and sources: ``docs/study.md``):

- :func:`bits_per_byte`: ``-log2 p(text) / UTF-8 bytes`` for a model with a proper likelihood: XLNet's
  permutation LM scored in left-to-right order (token ``t`` sees tokens ``< t`` only) gives
  ``p(text) = prod_t p(x_t | x_<t)`` of the tokenizer's segmentation.
- :func:`pll_per_byte`: the pseudo-log-likelihood of an MLM (Salazar et al. 2020) with the whole-word
  correction of Kauf and Ivanova (2023), PLL-word-l2r: token ``t`` of a word is scored with itself *and the
  word's later tokens* masked, so a word split into many tokens is not scored too leniently; in bits per byte.
- :func:`cloze_accuracy`: every token of a held-out word masked at once; the word counts as right only when
  every slot's top-1 prediction is its token; reported per frequency band of the word in the training text.

Models enter through two small callables, so the tests can score hand-made predictors (uniform, one that
knows the answer) against the definitions:

- ``MaskedPredictor(input_ids (B, T), attention_mask (B, T), where (B, T) bool) -> (N, V)`` log-probabilities
  at the ``where`` positions in row-major order (:func:`masked_predictor` wraps a BERT-family model);
- ``CausalPredictor(input_ids (B, T), attention_mask (B, T)) -> (B, T, V)`` where row ``t`` is
  ``log p(x_t | x_<t)`` (:func:`xlnet_predictor` wraps an XLNet LM).

Lines longer than the model's positions are scored in consecutive windows of ``max_len - 2`` tokens (each
framed by ``[CLS]`` ... ``[SEP]``, as in pretraining); a token's context is its window.

>>> import torch
>>> from subword import Tokenizer, WordPiece
>>> from subword.pre_tokenizers import Whitespace
>>> vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "ab", "##c", "d"])}
>>> tok = Tokenizer(WordPiece(vocab, unk_token="[UNK]"), pre_tokenizer=Whitespace())
>>> frame = Frame(cls_id=2, sep_id=3, mask_id=4, pad_id=0, max_len=16)
>>> uniform = lambda ids, mask, where: torch.full((int(where.sum()), 8), -math.log(8))
>>> r = pll_per_byte(uniform, tok, ["abc d"], frame)
>>> r["tokens"], r["bytes"], round(r["bits_per_byte"], 6) == round(3 * 3 / 5, 6)
(3, 5, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor, nn

__all__ = ["Frame", "EncodedLine", "encode_lines", "pll_per_byte", "bits_per_byte", "cloze_accuracy",
           "masked_predictor", "xlnet_predictor", "frequency_band", "BANDS"]

MaskedPredictor = Callable[[Tensor, Tensor, Tensor], Tensor]
CausalPredictor = Callable[[Tensor, Tensor], Tensor]

#: Frequency bands of a word in the training text: (name, lowest count, highest count or None).
BANDS: tuple[tuple[str, int, int | None], ...] = (
    ("unseen", 0, 0), ("rare (1-9)", 1, 9), ("medium (10-99)", 10, 99), ("frequent (100+)", 100, None))


@dataclass(frozen=True)
class Frame:
    """How a window of tokens becomes a model input: ``[CLS] window [SEP]``, padded, at most ``max_len``."""

    cls_id: int
    sep_id: int
    mask_id: int
    pad_id: int
    max_len: int

    def __post_init__(self) -> None:
        if self.max_len < 3:
            raise ValueError(f"max_len must leave room for one token between [CLS] and [SEP], got {self.max_len}")

    @property
    def window(self) -> int:
        return self.max_len - 2


@dataclass
class EncodedLine:
    """One held-out line: its ids, the word of each token (whitespace-separated words; a token of only
    whitespace is a word of its own, numbered negative), each word's text, and the line's UTF-8 bytes."""

    ids: list[int]
    words: list[int]
    word_text: dict[int, str]
    nbytes: int


def encode_lines(tokenizer: Any, lines: Sequence[str]) -> list[EncodedLine]:
    """Encode ``lines`` without specials and find the word of every token from its character offsets.

    >>> from subword import Tokenizer, WordPiece
    >>> from subword.pre_tokenizers import Whitespace
    >>> tok = Tokenizer(WordPiece({"[UNK]": 0, "ab": 1, "##c": 2, "d": 3}, unk_token="[UNK]"),
    ...                 pre_tokenizer=Whitespace())
    >>> e = encode_lines(tok, ["abc d"])[0]
    >>> e.ids, e.words, e.word_text, e.nbytes
    ([1, 2, 3], [0, 0, 1], {0: 'abc', 1: 'd'}, 5)
    """
    import re

    out = []
    encodings = tokenizer.encode_batch(list(lines), add_special_tokens=False)
    for line, enc in zip(lines, encodings):
        char_word = [-1] * len(line)
        word_text: dict[int, str] = {}
        for k, m in enumerate(re.finditer(r"\S+", line)):
            word_text[k] = m.group()
            for c in range(m.start(), m.end()):
                char_word[c] = k
        words = []
        lone = -1
        for s, e in enc.offsets:
            w = next((char_word[c] for c in range(s, min(e, len(line))) if char_word[c] >= 0), None)
            if w is None and s < len(line) and char_word[s] >= 0:
                w = char_word[s]
            if w is None:
                w, lone = lone, lone - 1
            words.append(w)
        out.append(EncodedLine(list(enc.ids), words, word_text, len(line.encode("utf-8"))))
    return out


def _windows(line: EncodedLine, size: int) -> list[tuple[list[int], list[int]]]:
    return [(line.ids[s:s + size], line.words[s:s + size]) for s in range(0, len(line.ids), size)]


def _batches(rows: list[tuple[list[int], list[int]]], frame: Frame, batch_rows: int):
    """Rows ``(input ids with the frame, scored positions)`` -> padded tensors, ``batch_rows`` at a time."""
    for s in range(0, len(rows), batch_rows):
        chunk = rows[s:s + batch_rows]
        T = max(len(ids) for ids, _ in chunk)
        ids = torch.full((len(chunk), T), frame.pad_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), T), dtype=torch.long)
        where = torch.zeros((len(chunk), T), dtype=torch.bool)
        for r, (row, positions) in enumerate(chunk):
            ids[r, :len(row)] = torch.tensor(row)
            mask[r, :len(row)] = 1
            where[r, positions] = True
        yield ids, mask, where


def pll_per_byte(predict: MaskedPredictor, tokenizer: Any, lines: Sequence[str], frame: Frame, *,
                 batch_rows: int = 128, encoded: list[EncodedLine] | None = None) -> dict[str, Any]:
    """PLL-word-l2r of ``lines`` in bits per UTF-8 byte (lower is better).

    ``PLL(line) = sum_t log p(x_t | x with x_t and the later tokens of x_t's word masked)``; the result is
    ``-sum_lines PLL / ln 2 / sum_lines bytes``. One row per token, scored in batches of ``batch_rows``.
    ``line_bits``/``line_bytes`` hold each line's share (the verdict's noise estimate resamples lines).
    """
    encoded = encoded if encoded is not None else encode_lines(tokenizer, lines)
    rows: list[tuple[list[int], list[int]]] = []
    targets: list[int] = []
    row_line: list[int] = []
    for k, line in enumerate(encoded):
        for ids, words in _windows(line, frame.window):
            for i in range(len(ids)):
                masked = [frame.mask_id if (j == i or (j > i and words[j] == words[i])) else t
                          for j, t in enumerate(ids)]
                rows.append(([frame.cls_id, *masked, frame.sep_id], [i + 1]))
                targets.append(ids[i])
                row_line.append(k)
    line_nats = [0.0] * len(encoded)
    for k, nats in zip(row_line, _score_rows(predict, rows, targets, frame, batch_rows)):
        line_nats[k] += nats
    return _per_byte(line_nats, encoded, len(targets))


def _per_byte(line_nats: list[float], encoded: list[EncodedLine], tokens: int) -> dict[str, Any]:
    """Totals and the per-line bits and bytes (the verdict's noise estimate resamples lines)."""
    line_bits = [-n / math.log(2) for n in line_nats]
    nbytes = sum(e.nbytes for e in encoded)
    bits = sum(line_bits)
    return {"bits": bits, "bytes": nbytes, "tokens": tokens, "bits_per_byte": bits / max(nbytes, 1),
            "line_bits": line_bits, "line_bytes": [e.nbytes for e in encoded]}


def _score_rows(predict: MaskedPredictor, rows: list[tuple[list[int], list[int]]], targets: list[int],
                frame: Frame, batch_rows: int) -> list[float]:
    """The log-probability (nats) of each row's target."""
    out: list[float] = []
    at = 0
    with torch.no_grad():
        for ids, mask, where in _batches(rows, frame, batch_rows):
            logp = predict(ids, mask, where)  # (N, V)
            want = torch.tensor(targets[at:at + logp.shape[0]], dtype=torch.long)
            out += logp.float().gather(1, want[:, None])[:, 0].tolist()
            at += logp.shape[0]
    return out


def bits_per_byte(predict: CausalPredictor, tokenizer: Any, lines: Sequence[str], frame: Frame, *,
                  batch_rows: int = 32, encoded: list[EncodedLine] | None = None) -> dict[str, Any]:
    """``-log2 p(lines) / UTF-8 bytes`` with ``p`` factorised left to right over each window's tokens."""
    encoded = encoded if encoded is not None else encode_lines(tokenizer, lines)
    rows, row_line = [], []
    for k, line in enumerate(encoded):
        for ids, _ in _windows(line, frame.window):
            rows.append(([frame.cls_id, *ids], list(range(1, len(ids) + 1))))
            row_line.append(k)
    line_nats = [0.0] * len(encoded)
    n = 0
    at = 0
    with torch.no_grad():
        for ids, mask, where in _batches(rows, frame, batch_rows):
            logp = predict(ids, mask).float()  # (B, T, V)
            picked = logp.gather(2, ids[:, :, None])[:, :, 0]  # (B, T): log p(x_t | x_<t)
            for r, nats in enumerate(torch.where(where, picked, torch.zeros_like(picked)).sum(1).tolist()):
                line_nats[row_line[at + r]] += nats
            at += ids.shape[0]
            n += int(where.sum())
    return _per_byte(line_nats, encoded, n)


def frequency_band(count: int) -> str:
    """The band of a word seen ``count`` times in the training text.

    >>> frequency_band(0), frequency_band(12)
    ('unseen', 'medium (10-99)')
    """
    for name, low, high in BANDS:
        if count >= low and (high is None or count <= high):
            return name
    raise ValueError(f"negative count {count}")


def cloze_accuracy(predict: MaskedPredictor, tokenizer: Any, lines: Sequence[str], frame: Frame,
                   counts: Mapping[str, int], *, batch_rows: int = 128,
                   encoded: list[EncodedLine] | None = None) -> dict[str, Any]:
    """Whole-word cloze: mask all tokens of each word; right only when every slot's top-1 is its token.

    Args:
        counts: How often each word (whitespace-separated, as written) occurs in the training text.

    Returns:
        ``{"accuracy", "words", "bands": {band: {"accuracy", "words"}}}`` (accuracy ``None`` for an
        empty band).
    """
    encoded = encoded if encoded is not None else encode_lines(tokenizer, lines)
    rows: list[tuple[list[int], list[int]]] = []
    answers: list[list[int]] = []
    bands: list[str] = []
    for line in encoded:
        for ids, words in _windows(line, frame.window):
            for w in dict.fromkeys(x for x in words if x >= 0):
                slots = [i for i, x in enumerate(words) if x == w]
                if w not in line.word_text:
                    continue
                masked = [frame.mask_id if words[j] == w else t for j, t in enumerate(ids)]
                rows.append(([frame.cls_id, *masked, frame.sep_id], [i + 1 for i in slots]))
                answers.append([ids[i] for i in slots])
                bands.append(frequency_band(int(counts.get(line.word_text[w], 0))))
    right: list[bool] = []
    with torch.no_grad():
        at = 0
        for ids, mask, where in _batches(rows, frame, batch_rows):
            top = predict(ids, mask, where).argmax(-1).tolist()  # (N,) in row-major order
            k = 0
            for r in range(ids.shape[0]):
                want = answers[at + r]
                right.append(top[k:k + len(want)] == want)
                k += len(want)
            at += ids.shape[0]
    per_band: dict[str, dict[str, Any]] = {}
    for name, _, _ in BANDS:
        hits = [ok for ok, b in zip(right, bands) if b == name]
        per_band[name] = {"words": len(hits), "accuracy": sum(hits) / len(hits) if hits else None}
    return {"words": len(right), "accuracy": sum(right) / len(right) if right else None, "bands": per_band}


def masked_predictor(model: nn.Module) -> MaskedPredictor:
    """A BERT-family model with its MLM head as a :data:`MaskedPredictor` (eval mode, sparse prediction)."""
    model.eval()

    def predict(ids: Tensor, mask: Tensor, where: Tensor) -> Tensor:
        labels = torch.where(where, ids, torch.full_like(ids, -100))
        out = model(ids, mask, labels=labels, sparse_prediction=True, return_logits=True)
        return torch.log_softmax(out.logits.float(), dim=-1)  # (N, V)

    return predict


def xlnet_predictor(model: nn.Module) -> CausalPredictor:
    """An XLNet LM as a :data:`CausalPredictor`: the permutation LM in left-to-right order.

    ``perm_mask[b, i, j] = 1`` for ``j >= i`` (position ``i`` may not see itself or what follows; the
    content stream still sees itself, as XLNet defines) and one query per position, so the query stream
    at ``i`` predicts ``x_i`` from ``x_<i``.
    """
    model.eval()

    def predict(ids: Tensor, mask: Tensor) -> Tensor:
        B, T = ids.shape
        perm = torch.triu(torch.ones(T, T), diagonal=0)[None].expand(B, T, T).contiguous()  # (B, T, T)
        target = torch.eye(T)[None].expand(B, T, T).contiguous()  # (B, T, T): query t predicts x_t
        out = model(ids, mask, perm_mask=perm, target_mapping=target, use_mems=False)
        logp = torch.log_softmax(out.logits.float(), dim=-1)  # (B, T, V)
        return logp

    return predict
