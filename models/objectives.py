"""Pretraining objectives: MLM masking, NSP/SOP pairs, permutation LM, distillation.

Every random choice here is *counter-based*: a draw is a hash of
``(seed, epoch, example index, stream, position)``, never the state of a
generator. The mask of an example therefore depends on nothing else -- not on
the batch it lands in, the number of data-loader workers, the world size or
the step a run resumed from -- and a resumed run sees exactly the masks an
uninterrupted one would. With ``dynamic=False`` the epoch is ignored (BERT's
static masks, drawn once per example); with ``dynamic=True`` each epoch draws
anew (RoBERTa).

* :func:`mask_tokens` -- BERT's rule: each candidate (non-special, non-pad)
  token is selected with probability ``rate``; of the selected, ``mask_frac``
  become ``mask_id``, ``random_frac`` a random id, the rest stay. Options: an
  exact count per sequence (static shapes, as Cramming), whole-word masking
  (every token of a word shares the word's draw).
* :func:`word_ids_from_offsets` -- word index per token for any tokenizer kind.
* :func:`nsp_pair`, :func:`sop_pair` -- sentence-pair examples from documents.
* :func:`plm_inputs` -- XLNet's permutation LM with partial prediction, any length.
* :func:`mlm_loss`, :func:`nsp_loss`, :func:`distillation_loss`, :func:`load_teacher`.

>>> import torch
>>> ids = torch.arange(5, 37).view(2, 16)
>>> special = torch.zeros(2, 16, dtype=torch.bool); special[:, 0] = True
>>> masked, labels = mask_tokens(ids, special_mask=special, mask_id=4, vocab_size=40,
...                              cfg=MaskingConfig(rate=0.5, fixed_count=True), seed=0, epoch=0,
...                              example_index=torch.tensor([0, 1]))
>>> (labels != -100).sum(dim=1).tolist()  # round(0.5 * 15) = 8 of the 15 candidates, per sequence
[8, 8]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from models.counter import TWO32 as _TWO32
from models.counter import hash32 as _hash32

__all__ = [
    "MaskingConfig",
    "PlmConfig",
    "TeacherOutput",
    "counter_uniform",
    "distillation_loss",
    "load_teacher",
    "mask_tokens",
    "mlm_loss",
    "nsp_loss",
    "nsp_pair",
    "plm_inputs",
    "plm_num_predict",
    "random_pool",
    "sop_pair",
    "word_ids_from_offsets",
]

# ==== Counter-based draws ====

# Distinct streams, so that e.g. the selection and the 80/10/10 draw of a token are independent.
_S_SELECT, _S_ACTION, _S_RANDOM_ID, _S_PAIR, _S_PLM = 1, 2, 3, 4, 5


def counter_uniform(seed: int, epoch: int, index: int, stream: int, n: int) -> Tensor:
    """``n`` uniforms in [0, 1) that are a pure function of ``(seed, epoch, index, stream)``.

    >>> a = counter_uniform(0, 1, 7, 0, 4)
    >>> bool((a == counter_uniform(0, 1, 7, 0, 4)).all()), bool((a != counter_uniform(0, 1, 8, 0, 4)).all())
    (True, True)
    """
    h = _hash32(seed, epoch, index, stream, torch.arange(n, dtype=torch.long))
    return h.double() / _TWO32



def _check_batch(input_ids: Tensor, special_mask: Tensor, example_index: Tensor, seed: int, epoch: int) -> tuple[int, int]:
    """The shapes (and counters) every batch-level objective takes; returns ``(B, T)``."""
    if input_ids.dim() != 2:
        raise ValueError(f"input_ids must have shape (B, T), got {tuple(input_ids.shape)}")
    B, T = input_ids.shape
    if special_mask.shape != (B, T):
        raise ValueError(f"special_mask has shape {tuple(special_mask.shape)}, expected {(B, T)}")
    if example_index.shape != (B,):
        raise ValueError(f"example_index has shape {tuple(example_index.shape)}, expected ({B},)")
    _check_nonneg("seed", seed)
    _check_nonneg("epoch", epoch)
    return B, T

def _check_nonneg(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")


# ==== Masked language modelling ====


@dataclass(frozen=True)
class MaskingConfig:
    """How :func:`mask_tokens` selects and corrupts tokens.

    Attributes:
        rate: selection probability p of a candidate token (BERT 0.15, MosaicBERT 0.3).
        mask_frac: share of the selected replaced by ``mask_id``.
        random_frac: share of the selected replaced by a random id; the rest
            (``1 - mask_frac - random_frac``) keep their token.
        fixed_count: select exactly ``round(rate * candidates)`` per sequence
            (static shapes); with ``whole_word``, whole words in random order
            while the total stays within that count.
        whole_word: select words, not tokens: every token of a word shares the
            word's draw (needs ``word_ids``).
        dynamic: a new draw each epoch (RoBERTa); ``False`` ignores the epoch (BERT).

    >>> MaskingConfig(rate=0.3).mask_frac
    0.8
    >>> MaskingConfig(mask_frac=0.9, random_frac=0.2)
    Traceback (most recent call last):
    ...
    ValueError: mask_frac + random_frac must be at most 1, got 0.9 + 0.2
    """

    rate: float = 0.15
    mask_frac: float = 0.8
    random_frac: float = 0.1
    fixed_count: bool = False
    whole_word: bool = False
    dynamic: bool = True

    def __post_init__(self) -> None:
        for name in ("rate", "mask_frac", "random_frac"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
        if self.mask_frac + self.random_frac > 1.0 + 1e-12:
            raise ValueError(f"mask_frac + random_frac must be at most 1, got {self.mask_frac} + {self.random_frac}")
        for name in ("fixed_count", "whole_word", "dynamic"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")


def _threshold(p: float) -> int:
    """The integer threshold t with ``P(hash32 < t) = p`` up to 2**-32."""
    return min(_TWO32, round(p * _TWO32))


def mask_tokens(
    input_ids: Tensor,
    *,
    special_mask: Tensor,
    mask_id: int,
    vocab_size: int,
    cfg: MaskingConfig,
    seed: int,
    epoch: int,
    example_index: Tensor,
    word_ids: Tensor | None = None,
    random_ids: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """Select and corrupt tokens for masked language modelling.

    Args:
        input_ids: (B, T) long token ids.
        special_mask: (B, T) bool, True at special tokens and padding: never selected.
        mask_id: the id that replaces ``cfg.mask_frac`` of the selected tokens.
        vocab_size: random replacements are drawn from ``[0, vocab_size)``
            minus ``mask_id``, unless ``random_ids`` is given.
        cfg: rates and options.
        seed, epoch: the run's seed and the current epoch (ignored when ``cfg.dynamic`` is False).
        example_index: (B,) long, the global index of each example in the dataset.
        word_ids: (B, T) long word index per token (-1 for specials), needed
            for ``cfg.whole_word``; tokens with equal word index in a row are one word.
        random_ids: 1-D long tensor of the ids random replacement draws from
            (pass the non-special ids of the vocabulary).

    Returns:
        ``(masked_ids, labels)``, both (B, T): ``labels`` holds the original id
        at selected positions and -100 elsewhere. Row b depends only on
        ``(seed, epoch, example_index[b])`` and its own tokens.

    Raises:
        ValueError: shapes that do not match, a negative seed/epoch/index,
            ``whole_word`` without ``word_ids``, an empty ``random_ids``.

    >>> import torch
    >>> ids = torch.tensor([[2, 10, 11, 12, 3, 0]])
    >>> special = torch.tensor([[True, False, False, False, True, True]])
    >>> _, labels = mask_tokens(ids, special_mask=special, mask_id=4, vocab_size=20,
    ...                         cfg=MaskingConfig(rate=1.0), seed=0, epoch=0, example_index=torch.tensor([5]))
    >>> labels.tolist()
    [[-100, 10, 11, 12, -100, -100]]
    """
    B, T = _check_batch(input_ids, special_mask, example_index, seed, epoch)
    if example_index.numel() and int(example_index.min()) < 0:
        raise ValueError("example_index must hold non-negative indices")
    if not 0 <= mask_id < vocab_size:
        raise ValueError(f"mask_id {mask_id} is outside the vocabulary of {vocab_size}")
    if cfg.whole_word and word_ids is None:
        raise ValueError("whole_word masking needs word_ids (see word_ids_from_offsets)")
    if word_ids is not None and word_ids.shape != (B, T):
        raise ValueError(f"word_ids has shape {tuple(word_ids.shape)}, expected {(B, T)}")
    dev = input_ids.device
    ep = epoch if cfg.dynamic else 0
    idx = example_index.to(dev, torch.long)[:, None]  # (B, 1)
    pos = torch.arange(T, device=dev)[None, :]  # (1, T)
    candidate = ~special_mask.to(dev, torch.bool)  # (B, T)
    if cfg.whole_word:
        assert word_ids is not None
        wid = word_ids.to(dev, torch.long)
        candidate = candidate & (wid >= 0)
        unit = wid.clamp(min=0)  # the draw is per word: every token of a word shares it
    else:
        unit = pos
    key = _hash32(seed, ep, idx, _S_SELECT, unit)  # (B, T) in [0, 2**32)

    if not cfg.fixed_count:
        selected = candidate & (key < _threshold(cfg.rate))
    elif not cfg.whole_word:
        # The k candidates with the smallest keys (position breaks ties: keys are unique).
        k = torch.round(candidate.sum(1).double() * cfg.rate).long()  # (B,)
        order_key = torch.where(candidate, key * T + pos, torch.full_like(key, _TWO32 * T))
        rank = order_key.argsort(dim=1).argsort(dim=1)  # (B, T) rank of each position
        selected = candidate & (rank < k[:, None])
    else:
        selected = _fixed_whole_words(candidate, key, unit, cfg.rate)

    labels = torch.where(selected, input_ids, torch.full_like(input_ids, -100))
    action = _hash32(seed, ep, idx, _S_ACTION, pos)  # (B, T): per token, even with whole words
    to_mask = selected & (action < _threshold(cfg.mask_frac))
    to_random = selected & ~to_mask & (action < _threshold(cfg.mask_frac + cfg.random_frac))
    if random_ids is None:
        pool = torch.cat([torch.arange(mask_id, device=dev), torch.arange(mask_id + 1, vocab_size, device=dev)])
    else:
        pool = random_ids.to(dev, torch.long).reshape(-1)
    if pool.numel() == 0:
        raise ValueError("random_ids is empty: there is no id to replace tokens with")
    pick = _hash32(seed, ep, idx, _S_RANDOM_ID, pos) % pool.numel()  # (B, T)
    masked = torch.where(to_mask, torch.full_like(input_ids, mask_id), input_ids)
    masked = torch.where(to_random, pool[pick], masked)
    return masked, labels


def random_pool(tokenizer: Any) -> Tensor:
    """The ids random replacement should draw from: the vocabulary minus the special tokens.

    Pass it as ``mask_tokens(..., random_ids=random_pool(tok))`` so that a
    "random" token is never [CLS], [SEP], [PAD] or [MASK].

    >>> from subword import BPE, Tokenizer
    >>> tok = Tokenizer(BPE({"a": 0, "b": 1}, []), special_tokens=["<mask>"])
    >>> random_pool(tok).tolist()
    [0, 1]
    """
    special = {i for i, t in tokenizer.added_tokens if t.special}
    return torch.tensor([i for i in range(tokenizer.vocab_size) if i not in special], dtype=torch.long)


def _fixed_whole_words(candidate: Tensor, key: Tensor, unit: Tensor, rate: float) -> Tensor:
    """Whole words in key order, as long as the total stays within ``round(rate * candidates)`` tokens.

    A word that would overshoot is skipped and later (smaller) words may still
    fit, as in BERT's ``create_pretraining_data.py``.
    """
    B, T = candidate.shape
    selected = torch.zeros_like(candidate)
    for b in range(B):
        cand = candidate[b]
        budget = round(int(cand.sum()) * rate)
        if budget == 0:
            continue
        words = unit[b][cand]
        uniq, sizes = torch.unique(words, return_counts=True)
        # The key of a word is the key of any of its tokens (they are equal).
        wkey = torch.zeros(int(uniq.max()) + 1, dtype=torch.long, device=key.device)
        wkey[words] = key[b][cand]
        order = wkey[uniq].argsort()
        chosen: list[int] = []
        total = 0
        for w, n in zip(uniq[order].tolist(), sizes[order].tolist()):
            if total + n <= budget:
                chosen.append(w)
                total += n
                if total == budget:
                    break
        selected[b] = cand & torch.isin(unit[b], torch.tensor(chosen, dtype=torch.long, device=key.device))
    return selected


def word_ids_from_offsets(tokenizer: Any, encodings: Sequence[Any]) -> list[list[int]]:
    """Word index per token (-1 for special tokens), for any tokenizer kind.

    Words are the pieces our pre-tokenizer cuts, recovered from the tokens and
    their offsets:

    * WordPiece: a token continues a word iff it carries the continuing-subword
      prefix (``##``); BERT's pre-tokenizer (and normalizer, which spaces out
      CJK ideographs) decides where a new piece starts, so this is exact.
    * Byte-level BPE: the tokens are rebuilt into the pre-tokenizer's input
      (bytes are lossless) and the pre-tokenizer is run on it, so punctuation,
      digits and ``'s`` split exactly as they did when encoding.
    * SentencePiece / Metaspace: a token starting with ``▁`` starts a word.
    * Any kind: a gap between consecutive tokens' offsets (removed whitespace)
      starts a word.

    Scripts without spaces follow the pre-tokenizer: Thai or Japanese text
    with no separator is one word for byte-level and Metaspace tokenizers; CJK
    ideographs are one word each for BERT's.

    Args:
        tokenizer: a :class:`subword.Tokenizer`.
        encodings: its encodings (``ids``, ``tokens``, ``offsets``, ``special_tokens_mask``).

    >>> from subword import BPE, Tokenizer
    >>> from subword.pre_tokenizers import Whitespace
    >>> tok = Tokenizer(BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]), pre_tokenizer=Whitespace())
    >>> word_ids_from_offsets(tok, [tok.encode("ab a b")])
    [[0, 1, 2]]
    """
    kind = _word_rule(tokenizer)
    out = []
    for enc in encodings:
        tokens, offsets = list(enc.tokens), list(enc.offsets)
        special = list(enc.special_tokens_mask)
        if kind[0] == "bytelevel":
            out.append(_byte_level_words(tokenizer, tokens, special))
            continue
        words: list[int] = []
        current = -1
        prev_end = None
        for tok, (start, end), sp in zip(tokens, offsets, special):
            if sp:
                words.append(-1)
                prev_end = None
                continue
            if kind[0] == "wordpiece":
                new = current < 0 or prev_end is None or not tok.startswith(kind[1])
            else:
                new = current < 0 or prev_end is None or start > prev_end or tok.startswith(kind[1])
            if new:
                current += 1
            words.append(current)
            prev_end = end
        out.append(words)
    return out


def _word_rule(tokenizer: Any) -> tuple[str, str]:
    """("wordpiece", prefix), ("bytelevel", ""), or ("marker", the word-start marker)."""
    from subword.model import WordPiece
    from subword.pre_tokenizers import ByteLevel, Metaspace
    from subword.pre_tokenizers import Sequence as SeqPre

    model = tokenizer.model
    if isinstance(model, WordPiece):
        return "wordpiece", getattr(model, "continuing_subword_prefix", "##")
    pre = getattr(tokenizer, "pre_tokenizer", None)
    parts = list(getattr(pre, "pretokenizers", []) or []) if isinstance(pre, SeqPre) else [pre]
    if any(isinstance(p, ByteLevel) for p in parts):
        return "bytelevel", ""
    for p in parts:
        if isinstance(p, Metaspace):
            return "marker", getattr(p, "replacement", "▁")
    return "marker", "▁"


def _byte_level_words(tokenizer: Any, tokens: list[str], special: list[int]) -> list[int]:
    """Run the pre-tokenizer on the text the tokens spell and number its pieces."""
    from subword.pre_tokenizers import bytes_to_unicode

    to_byte = {c: i for i, c in enumerate(bytes_to_unicode())}
    words = [-1] * len(tokens)
    current = 0
    # Runs of non-special tokens are pre-tokenized separately (a special token separates words).
    run: list[int] = []

    def flush() -> None:
        nonlocal current
        if not run:
            return
        data = bytearray()
        ends = []
        for i in run:
            data.extend(to_byte.get(c, ord("?") if ord(c) > 255 else ord(c)) for c in tokens[i])
            ends.append(len(data))
        text = data.decode("utf-8", errors="replace")
        # Byte position -> character position of the rebuilt text.
        char_of_byte = []
        for ci, ch in enumerate(text):
            char_of_byte.extend([ci] * len(ch.encode("utf-8")))
        pieces = tokenizer.pre_tokenizer.pre_tokenize_str(text)
        starts = sorted({int(span[0]) for _, span in pieces} | {0})
        # A token belongs to the piece holding its last byte; pieces are numbered in order.
        piece_of_char = [0] * (len(text) + 1)
        j = 0
        for ci in range(len(text) + 1):
            while j + 1 < len(starts) and starts[j + 1] <= ci:
                j += 1
            piece_of_char[ci] = j
        # (The rebuilt text holds every space, so offsets are not needed: with
        # trim_offsets they leave out spaces and would show gaps that are not boundaries.)
        prev_piece = None
        for i, end in zip(run, ends):
            last = char_of_byte[end - 1] if 0 < end <= len(char_of_byte) else len(text)
            piece = piece_of_char[last]
            if prev_piece is not None and piece != prev_piece:
                current += 1
            words[i] = current
            prev_piece = piece
        current += 1
        run.clear()

    for i, sp in enumerate(special):
        if sp:
            flush()
        else:
            run.append(i)
    flush()
    # Renumber from 0 in order of appearance.
    seen: dict[int, int] = {}
    return [-1 if w < 0 else seen.setdefault(w, len(seen)) for w in words]


def mlm_loss(logits: Tensor, labels: Tensor, *, reduction: str = "mean") -> Tensor:
    """Cross-entropy over the labelled positions (labels != -100).

    ``logits`` (B, T, V) with ``labels`` (B, T), or (N, V) with (N,) as sparse
    prediction returns them. ``reduction="sum"`` lets a trainer divide by the
    masked count of the whole accumulated batch. With no labelled position the
    mean is 0 (not NaN), without a host synchronisation.

    >>> import torch
    >>> logits = torch.zeros(1, 2, 4)
    >>> round(float(mlm_loss(logits, torch.tensor([[1, -100]]))), 4)  # log 4
    1.3863
    """
    if reduction not in ("mean", "sum"):
        raise ValueError(f"reduction must be 'mean' or 'sum', got {reduction!r}")
    if logits.shape[:-1] != labels.shape:
        raise ValueError(f"logits {tuple(logits.shape)} do not fit labels {tuple(labels.shape)}")
    flat = labels.reshape(-1)
    total = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), flat, ignore_index=-100, reduction="sum")
    if reduction == "sum":
        return total
    return total / (flat != -100).sum().clamp(min=1)


def nsp_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """Cross-entropy of the (B, 2) sentence logits against (B,) labels (NSP: 1 = random; SOP: 1 = swapped).

    >>> import torch
    >>> round(float(nsp_loss(torch.zeros(2, 2), torch.tensor([0, 1]))), 4)
    0.6931
    """
    if logits.dim() != 2 or logits.shape[-1] != 2 or labels.reshape(-1).shape[0] != logits.shape[0]:
        raise ValueError(f"sentence logits must be (B, 2) with labels (B,), got {tuple(logits.shape)} "
                         f"and {tuple(labels.shape)}")
    return F.cross_entropy(logits.float(), labels.reshape(-1))


# ==== Sentence pairs (NSP, SOP) ====


def _pair_chunk(documents: Sequence[Sequence[Sequence[int]]], doc_index: int, segment_index: int,
                max_tokens: int) -> list[Sequence[int]]:
    if not 0 <= doc_index < len(documents):
        raise ValueError(f"doc_index {doc_index} is outside the {len(documents)} documents")
    doc = documents[doc_index]
    if not 0 <= segment_index < len(doc):
        raise ValueError(f"segment_index {segment_index} is outside document {doc_index}'s {len(doc)} segments")
    if max_tokens < 2:
        raise ValueError(f"max_tokens must be at least 2 (one token per segment), got {max_tokens}")
    chunk: list[Sequence[int]] = []
    total = 0
    for seg in doc[segment_index:]:
        if not len(seg):  # a line that tokenized to nothing: no side of a pair may be only that
            continue
        chunk.append(seg)
        total += len(seg)
        if total >= max_tokens:
            break
    return chunk


def _flatten(segments: Sequence[Sequence[int]]) -> list[int]:
    return [int(t) for s in segments for t in s]


def _split_chunk(chunk: list[Sequence[int]], u: float) -> tuple[list[int], list[int]]:
    """Cut a chunk into A and B: between segments where it has two or more, else inside its tokens."""
    if len(chunk) >= 2:
        cut = 1 + int(u * (len(chunk) - 1))  # 1 .. len-1 segments in A
        return _flatten(chunk[:cut]), _flatten(chunk[cut:])
    tokens = _flatten(chunk)
    if len(tokens) < 2:
        return tokens, []
    cut = 1 + int(u * (len(tokens) - 1))
    return tokens[:cut], tokens[cut:]


def _truncate_pair(a: list[int], b: list[int], max_tokens: int, draws: Tensor) -> tuple[list[int], list[int]]:
    """Drop tokens from the longer side, from its front or back at random, until both fit (BERT's rule)."""
    i = 0
    while len(a) + len(b) > max_tokens:
        longer = a if len(a) >= len(b) else b
        if draws[i % draws.numel()] < 0.5:
            del longer[0]
        else:
            longer.pop()
        i += 1
    return a, b


def _pair_draws(seed: int, epoch: int, example_index: int, n: int = 64) -> Tensor:
    for name, v in (("seed", seed), ("epoch", epoch), ("example_index", example_index)):
        _check_nonneg(name, v)
    return counter_uniform(seed, epoch, example_index, _S_PAIR, n)


def nsp_pair(documents: Sequence[Sequence[Sequence[int]]], doc_index: int, segment_index: int, *, seed: int,
             epoch: int, example_index: int, max_tokens: int) -> tuple[list[int], list[int], int]:
    """A next-sentence-prediction example: (segment A, segment B, is_random_next).

    Segments of ``documents[doc_index]`` from ``segment_index`` on are gathered
    up to ``max_tokens`` and cut at a random segment boundary into A and B. With
    probability 1/2 (always, if the chunk cannot be cut) B is replaced by
    segments from another document, from a random segment on, and the label is 1.
    The pair is then trimmed to ``max_tokens`` (the longer side loses tokens at
    its front or back, at random). ``max_tokens`` excludes the special tokens
    the caller adds ([CLS] A [SEP] B [SEP]).

    Args:
        documents: documents -> segments (sentences) -> token ids.
        doc_index, segment_index: where A starts.
        seed, epoch, example_index: the counter the draws are a function of.
        max_tokens: the budget for A + B.

    >>> docs = [[[1, 2], [3, 4], [5]], [[10, 11], [12]]]
    >>> a, b, label = nsp_pair(docs, 0, 0, seed=0, epoch=0, example_index=3, max_tokens=8)
    >>> label in (0, 1) and len(a) + len(b) <= 8 and a[0] == 1
    True
    """
    u = _pair_draws(seed, epoch, example_index)
    chunk = _pair_chunk(documents, doc_index, segment_index, max_tokens)
    a, b = _split_chunk(chunk, float(u[0]))
    random_next = int(float(u[1]) < 0.5 or not b)
    if random_next:
        if len(documents) < 2:
            raise ValueError("NSP needs at least two documents to draw a random next segment from")
        other = int(u[2] * (len(documents) - 1))
        other += other >= doc_index  # any document but this one
        odoc = documents[other]
        if not odoc:
            raise ValueError(f"document {other} has no segments")
        start = int(u[3] * len(odoc))
        budget = max(1, max_tokens - len(a))
        b = []
        for seg in odoc[start:]:
            b.extend(int(t) for t in seg)
            if len(b) >= budget:
                break
    a, b = _truncate_pair(a, b, max_tokens, u[8:])
    return a, b, random_next


def sop_pair(documents: Sequence[Sequence[Sequence[int]]], doc_index: int, segment_index: int, *, seed: int,
             epoch: int, example_index: int, max_tokens: int) -> tuple[list[int], list[int], int]:
    """A sentence-order-prediction example (ALBERT): (A, B, swapped).

    A and B are consecutive text of one document, cut as in :func:`nsp_pair`
    (inside the tokens if there is only one segment); with probability 1/2
    they are returned swapped and the label is 1.

    >>> docs = [[[1, 2], [3, 4], [5]]]
    >>> a, b, swapped = sop_pair(docs, 0, 0, seed=0, epoch=0, example_index=1, max_tokens=8)
    >>> sorted(a + b) == [1, 2, 3, 4, 5]
    True
    """
    u = _pair_draws(seed, epoch, example_index)
    chunk = _pair_chunk(documents, doc_index, segment_index, max_tokens)
    a, b = _split_chunk(chunk, float(u[0]))
    if not a or not b:
        raise ValueError(f"document {doc_index} from segment {segment_index} has fewer than two tokens; "
                         "SOP needs two non-empty segments")
    a, b = _truncate_pair(a, b, max_tokens, u[8:])
    swapped = int(float(u[1]) < 0.5)
    return (b, a, 1) if swapped else (a, b, 0)


# ==== Permutation language modelling (XLNet) ====


@dataclass(frozen=True)
class PlmConfig:
    """XLNet's permutation LM with partial prediction.

    Attributes:
        predict_fraction_k: K: the last ``ceil(n / K)`` tokens of the
            factorisation order are predicted (XLNet-Large: K = 6).
        max_span: targets come in spans of 1..max_span tokens, each inside a
            context of about ``span * K`` tokens, as XLNet's span sampling.

    >>> PlmConfig().predict_fraction_k, PlmConfig().max_span
    (6, 5)
    """

    predict_fraction_k: int = 6
    max_span: int = 5

    def __post_init__(self) -> None:
        for name in ("predict_fraction_k", "max_span"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")


def plm_num_predict(seq_len: int, cfg: PlmConfig) -> int:
    """The static number of prediction rows N for sequences of ``seq_len``: ``ceil(T / K)``.

    >>> plm_num_predict(128, PlmConfig())
    22
    """
    return max(1, math.ceil(seq_len / cfg.predict_fraction_k))


def _plm_targets(n: int, budget: int, cfg: PlmConfig, u: Tensor) -> list[int]:
    """``budget`` distinct positions of ``range(n)`` in spans (XLNet's span sampling), then topped up."""
    K, L_max = cfg.predict_fraction_k, cfg.max_span
    chosen = [False] * n
    taken, cur, d = 0, 0, 0

    def draw() -> float:
        nonlocal d
        d += 1
        return float(u[(d - 1) % u.numel()])

    while taken < budget and cur < n:
        span = min(1 + int(draw() * L_max), budget - taken)
        ctx = max(span, span * K)
        start = cur + int(draw() * (ctx - span + 1))
        start = min(start, n - span)
        if start < cur:  # the tail is shorter than the span: take what is left
            span, start = n - cur, cur
        for p in range(start, start + span):
            chosen[p] = True
        taken += span
        cur += ctx
    # Spans near the end may have been cut short; top up with random free positions.
    free = [p for p in range(n) if not chosen[p]]
    while taken < budget and free:
        p = free.pop(int(draw() * len(free)))
        chosen[p] = True
        taken += 1
    return [p for p in range(n) if chosen[p]]


def plm_inputs(input_ids: Tensor, *, special_mask: Tensor, cfg: PlmConfig, seed: int, epoch: int,
               example_index: Tensor) -> dict[str, Tensor]:
    """Inputs for :class:`models.XLNetLMHeadModel` under a sampled factorisation order.

    Of the n candidate tokens (not special, not padding) of a row,
    ``ceil(n / K)`` are *targets*, chosen in spans; they come last in the
    factorisation order, in a random order among themselves, after all the
    other tokens (the context, which sees itself bidirectionally and no target).
    A target sees the context and the targets before it in the order -- never
    itself (its own query-stream row) nor a later target.

    Args:
        input_ids: (B, T) long; any T (no even-length rule).
        special_mask: (B, T) bool, True at special tokens and padding (never targets).
        cfg: K and the span length.
        seed, epoch, example_index: the counter the draws are a function of.

    Returns:
        ``perm_mask`` (B, T, T) float, 1 where position i may not attend to j;
        ``target_mapping`` (B, N, T) float, row k one-hot at the k-th predicted
        position (rows past a sequence's targets are zero), N = ceil(T / K);
        ``labels`` (B, N) long, the token at each predicted position, -100 for empty rows.

    >>> import torch
    >>> ids = torch.arange(10, 22).view(1, 12)
    >>> out = plm_inputs(ids, special_mask=torch.zeros(1, 12, dtype=torch.bool), cfg=PlmConfig(),
    ...                  seed=0, epoch=0, example_index=torch.tensor([0]))
    >>> tuple(out["perm_mask"].shape), tuple(out["target_mapping"].shape), int((out["labels"] >= 0).sum())
    ((1, 12, 12), (1, 2, 12), 2)
    """
    B, T = _check_batch(input_ids, special_mask, example_index, seed, epoch)
    N = plm_num_predict(T, cfg)
    perm_mask = torch.zeros(B, T, T)
    target_mapping = torch.zeros(B, N, T)
    labels = torch.full((B, N), -100, dtype=torch.long)
    cand_rows = (~special_mask.bool()).cpu()
    ids_cpu = input_ids.cpu()
    for b in range(B):
        index = int(example_index[b])
        if index < 0:
            raise ValueError("example_index must hold non-negative indices")
        u = counter_uniform(seed, epoch, index, _S_PLM, 4 * T + 16)
        cand = torch.nonzero(cand_rows[b]).flatten()
        n = int(cand.numel())
        if n == 0:
            continue
        budget = max(1, math.ceil(n / cfg.predict_fraction_k))
        targets = cand[_plm_targets(n, budget, cfg, u[: 2 * T + 8])]  # (t,) positions
        # A random order among the targets: sort by fresh draws.
        order = targets[u[2 * T + 8 : 2 * T + 8 + targets.numel()].argsort()]  # (t,) in prediction order
        rank = torch.full((T,), -1, dtype=torch.long)
        rank[order] = torch.arange(order.numel())
        is_target = rank >= 0
        # i may not see j iff j is a target and (i is context, or i is a target not after j).
        blocked = is_target[None, :] & ((~is_target)[:, None] | (rank[:, None] <= rank[None, :]))
        perm_mask[b] = blocked.float()
        target_mapping[b, torch.arange(order.numel()), order] = 1.0
        labels[b, : order.numel()] = ids_cpu[b, order]
    dev = input_ids.device
    return {"perm_mask": perm_mask.to(dev), "target_mapping": target_mapping.to(dev), "labels": labels.to(dev)}


# ==== Distillation (DistilBERT) ====


def distillation_loss(
    student_logits: Tensor,
    teacher_logits: Tensor,
    student_hidden: Tensor,
    teacher_hidden: Tensor,
    labels: Tensor,
    *,
    temperature: float = 2.0,
    weights: tuple[float, float, float] = (5.0, 2.0, 1.0),
    attention_mask: Tensor | None = None,
) -> dict[str, Tensor]:
    """DistilBERT's triple loss: soft-target KL, MLM cross-entropy, hidden-state cosine.

    * ``kd = T^2 * KL(softmax(t / T) || softmax(s / T))``, averaged over the
      positions the attention mask keeps (``batchmean`` over rows);
    * ``mlm`` = cross-entropy of the student against ``labels`` (-100 ignored);
    * ``cos = mean(1 - cos(s_h, t_h))`` over the kept positions;
    * ``loss = w_kd * kd + w_mlm * mlm + w_cos * cos`` (5 / 2 / 1 by default).

    Args:
        student_logits, teacher_logits: (B, T, V).
        student_hidden, teacher_hidden: (B, T, H) last hidden states.
        labels: (B, T) MLM labels.
        temperature: T > 0.
        weights: (w_kd, w_mlm, w_cos).
        attention_mask: (B, T), 1 for real tokens; None keeps every position.

    Returns:
        ``{"kd", "mlm", "cos", "loss"}``, each a 0-d tensor.

    >>> import torch
    >>> s = torch.zeros(1, 2, 3); h = torch.ones(1, 2, 4)
    >>> out = distillation_loss(s, s, h, h, torch.tensor([[0, -100]]))
    >>> [round(float(out[k]), 4) for k in ("kd", "cos", "mlm")]
    [0.0, 0.0, 1.0986]
    """
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if student_logits.shape != teacher_logits.shape:
        raise ValueError(f"student logits {tuple(student_logits.shape)} and teacher logits "
                         f"{tuple(teacher_logits.shape)} differ (same vocabulary and positions needed)")
    if student_hidden.shape != teacher_hidden.shape:
        raise ValueError(f"student hidden states {tuple(student_hidden.shape)} and teacher's "
                         f"{tuple(teacher_hidden.shape)} differ")
    if len(weights) != 3:
        raise ValueError(f"weights must be (kd, mlm, cos), got {weights!r}")
    V = student_logits.shape[-1]
    s = student_logits.reshape(-1, V).float()
    t = teacher_logits.reshape(-1, V).float()
    sh = student_hidden.reshape(-1, student_hidden.shape[-1]).float()
    th = teacher_hidden.reshape(-1, teacher_hidden.shape[-1]).float()
    if attention_mask is not None:
        if attention_mask.shape != student_logits.shape[:-1]:
            raise ValueError(f"attention_mask {tuple(attention_mask.shape)} does not fit the logits "
                             f"{tuple(student_logits.shape)}")
        keep = attention_mask.reshape(-1).to(s.device).float()  # (R,)
    else:
        keep = torch.ones(s.shape[0], device=s.device)
    rows = keep.sum().clamp(min=1)
    kl = F.kl_div(F.log_softmax(s / temperature, -1), F.log_softmax(t / temperature, -1), reduction="none",
                  log_target=True).sum(-1)  # (R,)
    kd = (kl * keep).sum() / rows * temperature**2
    cos = ((1 - F.cosine_similarity(sh, th, dim=-1)) * keep).sum() / rows
    mlm = mlm_loss(student_logits, labels)
    w_kd, w_mlm, w_cos = weights
    return {"kd": kd, "mlm": mlm, "cos": cos, "loss": w_kd * kd + w_mlm * mlm + w_cos * cos}


@dataclass
class TeacherOutput:
    """What a loaded teacher returns: MLM logits (B, T, V) and the last hidden state (B, T, H)."""

    logits: Tensor
    hidden: Tensor


class _Teacher(nn.Module):
    """A frozen MLM model behind one interface, whichever library built it."""

    def __init__(self, model: nn.Module, kind: str) -> None:
        super().__init__()
        self.model = model.eval()
        self.kind = kind
        for p in self.model.parameters():
            p.requires_grad_(False)

    def train(self, mode: bool = True) -> _Teacher:
        # A teacher stays in eval mode (no dropout), whatever the trainer calls.
        super().train(False)
        return self

    @torch.no_grad()
    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None) -> TeacherOutput:
        """``input_ids`` (B, T) -> logits (B, T, V) and the last hidden state (B, T, H)."""
        out = self.model(input_ids, attention_mask=attention_mask, output_hidden_states=True)
        return TeacherOutput(logits=out.logits, hidden=out.hidden_states[-1])


_OUR_TYPES = ("bert", "roberta", "albert", "distilbert", "big_bird")


def load_teacher(path: str | Path) -> nn.Module:
    """A frozen teacher for :func:`distillation_loss` from a checkpoint directory.

    A directory written by :func:`models.to_hf` (ours) or by transformers'
    ``save_pretrained`` with an MLM head: model types we implement load into
    our classes; anything else loads with ``transformers.AutoModelForMaskedLM``.
    Calling the result gives a :class:`TeacherOutput`; it never trains.

    Raises:
        FileNotFoundError: not a directory with ``config.json``.
        ValueError: the checkpoint has no MLM head.

    >>> import tempfile, torch
    >>> from models import BertConfig, BertForPreTraining
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = BertForPreTraining(BertConfig.preset("tiny", vocab_size=100)).to_hf(d)
    ...     teacher = load_teacher(d)
    >>> tuple(teacher(torch.tensor([[2, 5, 3]])).logits.shape)
    (1, 3, 100)
    """
    import json

    directory = Path(path)
    config_path = directory / "config.json"
    if not directory.is_dir() or not config_path.is_file():
        raise FileNotFoundError(f"teacher {directory} is not a checkpoint directory with config.json")
    model_type = json.loads(config_path.read_text()).get("model_type")
    if model_type in _OUR_TYPES:
        from models.hf import from_hf

        model = from_hf(directory, heads=True)
        if not hasattr(model, "mlm"):
            raise ValueError(f"teacher {directory} has no MLM head (a base model cannot teach)")
        return _Teacher(model, "ours")
    try:
        import transformers
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ValueError(f"teacher {directory} has model_type {model_type!r}, which needs transformers") from exc
    model = transformers.AutoModelForMaskedLM.from_pretrained(directory)
    return _Teacher(model, "transformers")

