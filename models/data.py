"""Pretraining data: corpus -> documents -> token shards on disk -> packed sequences or segment pairs.

The pipeline, one step per class or function:

* :func:`read_documents` -- lines from :mod:`corpora` grouped into documents (a blank line
  separates documents, or one per line, or one JSON-lines field per record), each a list of
  non-empty lines (the lines are the *segments* NSP and SOP pair).
* :class:`TokenShards` -- the documents tokenized once (``Tokenizer.encode_batch_ids``, parallel in
  the Rust core) into flat memory-mapped arrays: ``tokens.bin`` in the smallest unsigned dtype that
  holds the vocabulary, segment and document offsets, and (for whole-word masking) a word-start
  flag per token. The directory is named by a hash of the corpus text and of the tokenizer, so a
  second run skips tokenization; it is written into a temporary directory and renamed, so an
  interrupted build leaves nothing half-written. Memory stays bounded by one batch of lines plus
  the offsets (8 bytes per line), so corpora larger than memory stream through.
* :class:`PackedSequences` -- fixed-length examples by index: FULL-SENTENCES packing (the token
  stream of all documents, a separator between documents, cut into ``seq_len - 2`` pieces, each
  wrapped in ``[CLS] ... [SEP]``) or one document per sequence (truncated, padded).
* :class:`SegmentPairs` -- ``[CLS] A [SEP] B [SEP]`` examples for NSP/SOP, the pair chosen by
  :func:`models.objectives.nsp_pair` / :func:`~models.objectives.sop_pair` from the example index.
* :class:`EpochOrder` -- the order examples are consumed in: a permutation seeded by
  ``(seed, epoch)`` plus how many examples of that epoch were consumed. Two integers describe the
  position, which a checkpoint stores; nothing depends on an iterator's hidden state, so a resumed
  run reads exactly the examples an uninterrupted run would have.

>>> import tempfile, pathlib
>>> from subword import Tokenizer, WordPiece
>>> from subword.pre_tokenizers import Whitespace
>>> vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"])}
>>> tok = Tokenizer(WordPiece(vocab, unk_token="[UNK]"), pre_tokenizer=Whitespace())
>>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "c.txt").write_text("a b\\nc\\n\\nb b a\\n")
>>> shards = TokenShards.build([d / "c.txt"], tok, cache_dir=d / "cache")
>>> shards.num_documents, shards.num_tokens, shards.tokens.dtype.name
(2, 6, 'uint8')
>>> packed = PackedSequences(shards, seq_len=5, cls_id=2, sep_id=3, pad_id=0)
>>> packed.get([0, 1])["input_ids"].tolist()
[[2, 5, 6, 7, 3], [2, 3, 6, 6, 3]]
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:
    from subword import Tokenizer

__all__ = [
    "EpochOrder",
    "PackedSequences",
    "SegmentPairs",
    "TokenShards",
    "read_documents",
    "smallest_dtype",
    "tokenizer_hash",
]

log = logging.getLogger("models.data")

Split = Literal["blank", "line"]
Progress = Callable[[str, int, "int | None"], None]

# Format version of the shard directory: bump when the files change meaning.
_SHARD_VERSION = 1
# Lines per encode_batch_ids call: large enough for the Rust core's threads, small enough for memory.
_ENCODE_BATCH = 8192


def smallest_dtype(vocab_size: int) -> np.dtype:
    """The smallest unsigned dtype that holds every id of a vocabulary.

    >>> smallest_dtype(256).name, smallest_dtype(30522).name, smallest_dtype(100_000).name
    ('uint8', 'uint16', 'uint32')
    """
    for dtype in (np.uint8, np.uint16, np.uint32):
        if vocab_size - 1 <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    raise ValueError(f"a vocabulary of {vocab_size} ids does not fit in 32 bits")


def tokenizer_hash(tokenizer: Tokenizer) -> str:
    """A hash of the tokenizer's full configuration (its ``tokenizer.json`` text).

    >>> from subword import BPE, Tokenizer
    >>> len(tokenizer_hash(Tokenizer(BPE({"a": 0}, []))))
    16
    """
    return hashlib.sha256(tokenizer.to_json_str().encode("utf-8")).hexdigest()[:16]


# ==== Documents ====


def read_documents(
    inputs: Sequence[str | os.PathLike[str]],
    *,
    split: Split = "blank",
    jsonl_field: str | None = None,
) -> Iterator[list[str]]:
    """Documents of a corpus, each a list of its non-empty lines (without line endings).

    Args:
        inputs: files, globs, directories (see :func:`corpora.read_lines`); stdin is refused,
            since the corpus is read twice (once to hash it, once to tokenize it).
        split: ``"blank"``: a blank line ends a document; ``"line"``: every line is a document.
        jsonl_field: read JSON lines and take this field of each record as one document (its
            own line breaks separate its segments).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp(), "c.txt"); _ = p.write_text("a\\nb\\n\\n\\nc\\n")
    >>> list(read_documents([p])), list(read_documents([p], split="line"))
    ([['a', 'b'], ['c']], [['a'], ['b'], ['c']])
    """
    import corpora

    if split not in ("blank", "line"):
        raise ValueError(f"split must be 'blank' or 'line', got {split!r}")
    if any(str(p) == "-" for p in inputs):
        raise ValueError("pretraining reads its corpus twice (hash, then tokenize): name files, not stdin ('-')")
    lines = corpora.read_lines(list(inputs), jsonl_field=jsonl_field)
    if jsonl_field is not None:
        for record in lines:
            doc = [s.strip() for s in record.splitlines() if s.strip()]
            if doc:
                yield doc
        return
    doc: list[str] = []
    for line in lines:
        text = line.rstrip("\r\n")
        if not text.strip():
            if doc:
                yield doc
                doc = []
            continue
        if split == "line":
            yield [text]
        else:
            doc.append(text)
    if doc:
        yield doc


def corpus_hash(inputs: Sequence[str | os.PathLike[str]], *, split: Split = "blank",
                jsonl_field: str | None = None) -> str:
    """A hash of the documents a corpus holds (their text and boundaries), read in one pass.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp(), "c.txt"); _ = p.write_text("a\\n")
    >>> corpus_hash([p]) == corpus_hash([p]), corpus_hash([p]) == corpus_hash([p], split="line")
    (True, False)
    """
    h = hashlib.sha256(f"{split}\0{jsonl_field}\0".encode())
    for doc in read_documents(inputs, split=split, jsonl_field=jsonl_field):
        for line in doc:
            h.update(line.encode("utf-8"))
            h.update(b"\n")
        h.update(b"\0")
    return h.hexdigest()[:16]


# ==== Token shards ====


@dataclass
class TokenShards:
    """A tokenized corpus on disk, memory-mapped.

    Attributes:
        directory: where the files are.
        tokens: (N,) every token of every document, in order (uint8/16/32).
        segment_offsets: (S + 1,) int64: segment s is ``tokens[segment_offsets[s]:segment_offsets[s + 1]]``.
        document_segments: (D + 1,) int64: document d holds segments ``document_segments[d] ..
            document_segments[d + 1] - 1``.
        word_starts: (N,) uint8, 1 where a token begins a word (only when built with ``words=True``).
        meta: what the build recorded (hashes, vocabulary size, counts).
    """

    directory: Path
    tokens: np.ndarray
    segment_offsets: np.ndarray
    document_segments: np.ndarray
    word_starts: np.ndarray | None
    meta: dict[str, Any]

    @property
    def num_documents(self) -> int:
        """How many documents."""
        return len(self.document_segments) - 1

    @property
    def num_tokens(self) -> int:
        """How many tokens in all."""
        return int(self.tokens.shape[0])

    @property
    def document_offsets(self) -> np.ndarray:
        """(D + 1,) int64 token offsets of the documents."""
        return self.segment_offsets[self.document_segments]

    def document(self, d: int) -> list[np.ndarray]:
        """The segments (token arrays) of document ``d``."""
        s0, s1 = int(self.document_segments[d]), int(self.document_segments[d + 1])
        offs = self.segment_offsets
        return [self.tokens[int(offs[s]):int(offs[s + 1])] for s in range(s0, s1)]

    @classmethod
    def build(
        cls,
        inputs: Sequence[str | os.PathLike[str]],
        tokenizer: Tokenizer,
        *,
        cache_dir: str | os.PathLike[str],
        split: Split = "blank",
        jsonl_field: str | None = None,
        words: bool = False,
        progress: Progress | None = None,
    ) -> TokenShards:
        """Tokenize ``inputs`` into ``cache_dir/<corpus hash>-<tokenizer hash>``, or open what is there.

        Args:
            inputs, split, jsonl_field: the corpus (see :func:`read_documents`).
            tokenizer: our :class:`subword.Tokenizer`; special tokens are not added here.
            cache_dir: the parent of the shard directories.
            words: also record where words start (whole-word masking), from the offsets
                (:func:`models.objectives.word_ids_from_offsets`).
            progress: ``(stage, current, total)`` callback, called per batch of lines.

        Raises:
            ValueError: the corpus holds no tokens.

        >>> import tempfile, pathlib
        >>> from subword import BPE, Tokenizer
        >>> from subword.pre_tokenizers import Whitespace
        >>> d = pathlib.Path(tempfile.mkdtemp()); _ = (d / "c.txt").write_text("a a\\n")
        >>> tok = Tokenizer(BPE({"a": 0}, []), pre_tokenizer=Whitespace())
        >>> first = TokenShards.build([d / "c.txt"], tok, cache_dir=d)
        >>> TokenShards.build([d / "c.txt"], tok, cache_dir=d).directory == first.directory
        True
        """
        vocab_size = tokenizer.get_vocab_size()
        key = f"{corpus_hash(inputs, split=split, jsonl_field=jsonl_field)}-{tokenizer_hash(tokenizer)}"
        key += "-w" if words else ""
        target = Path(cache_dir) / f"shards-v{_SHARD_VERSION}-{key}"
        if (target / "meta.json").exists():
            log.info("token shards found in %s: tokenization skipped", target)
            return cls.open(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"))
        try:
            meta = _write_shards(tmp, inputs, tokenizer, split=split, jsonl_field=jsonl_field, words=words,
                                 dtype=smallest_dtype(vocab_size), progress=progress)
            meta.update(key=key, vocab_size=vocab_size, split=split, jsonl_field=jsonl_field)
            (tmp / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
            try:
                os.replace(tmp, target)
            except OSError:  # another process built the same shards first: theirs are as good
                shutil.rmtree(tmp, ignore_errors=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return cls.open(target)

    @classmethod
    def open(cls, directory: str | os.PathLike[str]) -> TokenShards:
        """Memory-map a shard directory that :meth:`build` wrote."""
        directory = Path(directory)
        try:
            meta = json.loads((directory / "meta.json").read_text())
            dtype = np.dtype(meta["dtype"])
            n = int(meta["num_tokens"])
            tokens = (np.memmap(directory / "tokens.bin", dtype=dtype, mode="r", shape=(n,))
                      if n else np.zeros(0, dtype))
            seg = np.load(directory / "segment_offsets.npy", mmap_mode="r")
            docs = np.load(directory / "document_segments.npy", mmap_mode="r")
            words = None
            if meta.get("words"):
                words = np.memmap(directory / "word_starts.bin", dtype=np.uint8, mode="r", shape=(n,))
        except (OSError, ValueError, KeyError) as exc:
            raise ValueError(f"token shards in {directory} are unreadable ({exc}); delete the directory") from exc
        return cls(directory, tokens, seg, docs, words, meta)


def _write_shards(
    out: Path,
    inputs: Sequence[str | os.PathLike[str]],
    tokenizer: Tokenizer,
    *,
    split: Split,
    jsonl_field: str | None,
    words: bool,
    dtype: np.dtype,
    progress: Progress | None,
) -> dict[str, Any]:
    """Stream the corpus through the tokenizer into ``out``; returns the counts for ``meta.json``."""
    seg_offsets = [0]
    doc_segments = [0]
    n_tokens = 0
    n_lines = 0
    pending: list[str] = []
    pending_docs: list[int] = []  # segments per pending document

    with open(out / "tokens.bin", "wb") as tok_file, open(out / "word_starts.bin", "wb") as word_file:

        def flush() -> None:
            nonlocal n_tokens, n_lines
            if not pending:
                return
            if words:
                from models.objectives import word_ids_from_offsets

                encodings = tokenizer.encode_batch(pending, add_special_tokens=False)
                ids_list = [e.ids for e in encodings]
                for wids in word_ids_from_offsets(tokenizer, encodings):
                    w = np.asarray(wids, dtype=np.int64)
                    starts = np.ones(len(w), dtype=np.uint8)
                    if len(w) > 1:
                        starts[1:] = (w[1:] != w[:-1]).astype(np.uint8)
                    word_file.write(starts.tobytes())
            else:
                ids_list = tokenizer.encode_batch_ids(pending, add_special_tokens=False)
            lengths = []
            for ids in ids_list:
                tok_file.write(np.asarray(ids, dtype=dtype).tobytes())
                lengths.append(len(ids))
            # Empty segments (a line of only unknown-free nothing) keep their slot: offsets stay aligned.
            for length in lengths:
                n_tokens += length
                seg_offsets.append(n_tokens)
            for count in pending_docs:
                doc_segments.append(doc_segments[-1] + count)
            n_lines += len(pending)
            pending.clear()
            pending_docs.clear()
            if progress is not None:
                progress("tokenize", n_lines, None)

        for doc in read_documents(inputs, split=split, jsonl_field=jsonl_field):
            pending.extend(doc)
            pending_docs.append(len(doc))
            if len(pending) >= _ENCODE_BATCH:
                flush()
        flush()
    if not words:
        (out / "word_starts.bin").unlink()
    if n_tokens == 0:
        raise ValueError("the corpus holds no tokens (empty, or only blank lines)")
    np.save(out / "segment_offsets.npy", np.asarray(seg_offsets, dtype=np.int64))
    np.save(out / "document_segments.npy", np.asarray(doc_segments, dtype=np.int64))
    return {"version": _SHARD_VERSION, "dtype": dtype.name, "num_tokens": n_tokens, "num_segments": n_lines,
            "num_documents": len(doc_segments) - 1, "words": words}


# ==== Examples ====


def _word_ids(starts: np.ndarray, special: np.ndarray) -> np.ndarray:
    """Word ids (B, T) from word-start flags (B, T): a running count, -1 at special positions."""
    s = starts.astype(np.int64)
    s[special] = 1  # a special token never continues the word before it
    ids = np.cumsum(s, axis=1) - 1
    ids[special] = -1
    return ids


class PackedSequences:
    """Fixed-length examples ``[CLS] tokens [SEP]`` from a range of documents.

    Args:
        shards: the tokenized corpus.
        seq_len: tokens per example, specials included.
        cls_id, sep_id, pad_id: the special ids (``<s>``, ``</s>``, ``<pad>`` for RoBERTa).
        packing: ``"full"`` (FULL-SENTENCES: documents run on into the next, ``sep_id`` between
            them, no padding) or ``"document"`` (one document per example, truncated, padded).
        documents: the range of documents to draw from (``range(D)`` by default); the
            evaluation set is another range of the same shards.

    Raises:
        ValueError: ``seq_len`` under 3, or an empty document range.
    """

    def __init__(
        self,
        shards: TokenShards,
        *,
        seq_len: int,
        cls_id: int,
        sep_id: int,
        pad_id: int,
        packing: Literal["full", "document"] = "full",
        documents: range | None = None,
    ) -> None:
        if seq_len < 3:
            raise ValueError(f"seq_len must be at least 3 ([CLS], one token, [SEP]), got {seq_len}")
        if packing not in ("full", "document"):
            raise ValueError(f"packing must be 'full' or 'document', got {packing!r}")
        documents = documents if documents is not None else range(shards.num_documents)
        self.shards, self.seq_len, self.packing = shards, seq_len, packing
        self.cls_id, self.sep_id, self.pad_id = cls_id, sep_id, pad_id
        offs = np.asarray(shards.document_offsets[documents.start:documents.stop + 1], dtype=np.int64)
        self._doc_start = offs[:-1]  # (D,) first token of each document
        self._doc_len = np.diff(offs)  # (D,)
        if packing == "document":
            self._docs = np.flatnonzero(self._doc_len > 0)  # non-empty documents only
            self._n = len(self._docs)
        else:
            # Stream positions: every document followed by one separator.
            self._stream_end = np.cumsum(self._doc_len + 1)  # (D,) exclusive end of doc d + its separator
            total = int(self._stream_end[-1]) if len(self._stream_end) else 0
            self._n = total // (seq_len - 2)

    def __len__(self) -> int:
        return self._n

    def _stream(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Token ids and word-start flags at positions of the separator-joined stream."""
        d = np.searchsorted(self._stream_end, positions, side="right")  # document of each position
        start = self._stream_end[d] - (self._doc_len[d] + 1)
        within = positions - start
        is_sep = within >= self._doc_len[d]
        src = np.where(is_sep, 0, self._doc_start[d] + within)
        tokens = np.asarray(self.shards.tokens[src], dtype=np.int64)
        tokens[is_sep] = self.sep_id
        starts = np.ones_like(tokens, dtype=np.uint8)
        if self.shards.word_starts is not None:
            starts = np.asarray(self.shards.word_starts[src], dtype=np.uint8)
            starts[is_sep] = 1
        return tokens, starts

    def get(self, indices: Sequence[int] | np.ndarray) -> dict[str, np.ndarray]:
        """Examples by index: ``input_ids``, ``attention_mask``, ``special_mask`` (B, T), and
        ``word_ids`` (B, T; -1 at specials) when the shards know word starts.

        Raises:
            IndexError: an index outside ``[0, len)``.
        """
        idx = np.asarray(indices, dtype=np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= self._n):
            raise IndexError(f"example index out of range [0, {self._n})")
        B, T, body = len(idx), self.seq_len, self.seq_len - 2
        ids = np.full((B, T), self.pad_id, dtype=np.int64)
        starts = np.ones((B, T), dtype=np.uint8)
        if self.packing == "full":
            pos = idx[:, None] * body + np.arange(body)[None, :]  # (B, body)
            tok, st = self._stream(pos.reshape(-1))
            ids[:, 1:-1] = tok.reshape(B, body)
            starts[:, 1:-1] = st.reshape(B, body)
            ids[:, 0], ids[:, -1] = self.cls_id, self.sep_id
        else:
            for row, i in enumerate(idx):
                d = self._docs[i]
                n = min(int(self._doc_len[d]), body)
                s = int(self._doc_start[d])
                ids[row, 0] = self.cls_id
                ids[row, 1:n + 1] = self.shards.tokens[s:s + n]
                ids[row, n + 1] = self.sep_id
                if self.shards.word_starts is not None:
                    starts[row, 1:n + 1] = self.shards.word_starts[s:s + n]
        attention = (ids != self.pad_id).astype(np.int64)  # padding only in "document" packing
        special = (np.arange(T)[None, :] == 0) | (ids == self.sep_id) | (attention == 0)
        if self.packing == "full":
            special = special | (ids == self.cls_id)
        out = {"input_ids": ids, "attention_mask": attention, "special_mask": special,
               "token_type_ids": np.zeros((B, T), dtype=np.int64)}
        if self.shards.word_starts is not None:
            out["word_ids"] = _word_ids(starts, special)
        return out


class _DocumentView(Sequence):
    """Documents of a range as lists of segment id lists (what ``nsp_pair``/``sop_pair`` read)."""

    def __init__(self, shards: TokenShards, documents: range) -> None:
        self.shards, self.documents = shards, documents

    def __len__(self) -> int:
        return len(self.documents)

    def __getitem__(self, d: int) -> list[list[int]]:  # type: ignore[override]
        return [seg.tolist() for seg in self.shards.document(self.documents[d])]


class SegmentPairs:
    """``[CLS] A [SEP] B [SEP]`` examples (padded to ``seq_len``) for NSP or SOP.

    Example ``i`` is anchored at the ``i``-th segment of the document range (document and
    segment index; for SOP only segments with at least two tokens from there to the end of their
    document); :func:`models.objectives.nsp_pair` or :func:`~models.objectives.sop_pair`
    chooses A, B and the label from ``(seed, epoch, i)``, so pairs are reproducible and change
    with the epoch. ``sentence_label`` is transformers' (``next_sentence_label``: 0 = B continues
    A, 1 = B is random; ``sentence_order_label``: 0 = A then B, 1 = swapped).

    Args:
        shards: the tokenized corpus.
        task: ``"nsp"`` or ``"sop"``.
        seq_len: tokens per example with the three specials.
        cls_id, sep_id, pad_id: the special ids.
        seed: the run's seed.
        documents: the range of documents to draw from.
    """

    def __init__(self, shards: TokenShards, *, task: Literal["nsp", "sop"], seq_len: int, cls_id: int,
                 sep_id: int, pad_id: int, seed: int, documents: range | None = None) -> None:
        if seq_len < 5:
            raise ValueError(f"seq_len must be at least 5 for segment pairs, got {seq_len}")
        if task not in ("nsp", "sop"):
            raise ValueError(f"task must be 'nsp' or 'sop', got {task!r}")
        documents = documents if documents is not None else range(shards.num_documents)
        self.shards, self.task, self.seq_len, self.seed = shards, task, seq_len, seed
        self.cls_id, self.sep_id, self.pad_id = cls_id, sep_id, pad_id
        self._view = _DocumentView(shards, documents)
        segs = np.asarray(shards.document_segments[documents.start:documents.stop + 1], dtype=np.int64)
        counts = np.diff(segs)
        # Anchor segments: (document, segment) for every segment of every document.
        self._anchor_doc = np.repeat(np.arange(len(counts)), counts)
        self._anchor_seg = np.arange(int(counts.sum())) - np.repeat(segs[:-1] - segs[0], counts)
        if task == "sop":
            # SOP needs two non-empty sides from the anchor on: anchors with fewer than two tokens left in
            # their document (a last line of one word) would have nothing to swap.
            first = segs[:-1][self._anchor_doc] + self._anchor_seg
            doc_end = shards.segment_offsets[segs[1:]][self._anchor_doc]
            keep = doc_end - shards.segment_offsets[first] >= 2
            self._anchor_doc, self._anchor_seg = self._anchor_doc[keep], self._anchor_seg[keep]

    def __len__(self) -> int:
        return len(self._anchor_doc)

    def get(self, indices: Sequence[int] | np.ndarray, *, epoch: int) -> dict[str, np.ndarray]:
        """Examples by index: ``input_ids``, ``attention_mask``, ``token_type_ids``,
        ``special_mask`` (B, T) and ``sentence_label`` (B,)."""
        from models.objectives import nsp_pair, sop_pair

        pair = nsp_pair if self.task == "nsp" else sop_pair
        idx = np.asarray(indices, dtype=np.int64)
        B, T = len(idx), self.seq_len
        ids = np.full((B, T), self.pad_id, dtype=np.int64)
        types = np.zeros((B, T), dtype=np.int64)
        attention = np.zeros((B, T), dtype=np.int64)
        special = np.ones((B, T), dtype=bool)
        label = np.zeros(B, dtype=np.int64)
        for row, i in enumerate(idx):
            a, b, y = pair(self._view, int(self._anchor_doc[i]), int(self._anchor_seg[i]), seed=self.seed,
                           epoch=epoch, example_index=int(i), max_tokens=T - 3)
            a, b = list(a), list(b)
            n = len(a) + len(b) + 3
            ids[row, :n] = [self.cls_id, *a, self.sep_id, *b, self.sep_id]
            types[row, len(a) + 2:n] = 1
            attention[row, :n] = 1
            special[row, 1:len(a) + 1] = False
            special[row, len(a) + 2:n - 1] = False
            label[row] = y
        return {"input_ids": ids, "attention_mask": attention, "token_type_ids": types,
                "special_mask": special, "sentence_label": label}


# ==== Order ====


@dataclass
class EpochOrder:
    """Which examples come next: a seeded permutation per epoch plus a consumed offset.

    The state is ``(epoch, offset)``; :meth:`take` crosses into the next epoch when one ends,
    so no example is dropped and none is read twice within an epoch.

    >>> order = EpochOrder(num_examples=5, seed=0)
    >>> first = order.take(3); second = order.take(3)
    >>> (order.epoch, order.offset), sorted(i for _, i in first + second[:2])
    ((1, 1), [0, 1, 2, 3, 4])
    """

    num_examples: int
    seed: int
    epoch: int = 0
    offset: int = 0

    def __post_init__(self) -> None:
        self._cache: tuple[int, np.ndarray] | None = None

    def permutation(self, epoch: int) -> np.ndarray:
        """The order of epoch ``epoch`` (the same for every process and every run)."""
        if self._cache is None or self._cache[0] != epoch:
            rng = np.random.default_rng([self.seed, epoch])
            self._cache = (epoch, rng.permutation(self.num_examples))
        return self._cache[1]

    def take(self, count: int) -> list[tuple[int, int]]:
        """The next ``count`` examples as ``(epoch, example index)``; advances the state."""
        out: list[tuple[int, int]] = []
        while len(out) < count:
            perm = self.permutation(self.epoch)
            n = min(count - len(out), self.num_examples - self.offset)
            out.extend((self.epoch, int(i)) for i in perm[self.offset:self.offset + n])
            self.offset += n
            if self.offset >= self.num_examples:
                self.epoch, self.offset = self.epoch + 1, 0
        return out

    def state_dict(self) -> dict[str, int]:
        """``{"epoch", "offset", "num_examples", "seed"}`` for a checkpoint."""
        return {"epoch": self.epoch, "offset": self.offset, "num_examples": self.num_examples, "seed": self.seed}

    def load_state_dict(self, state: dict[str, int]) -> None:
        """Restore a position; refuses one from a different dataset or seed."""
        if state["num_examples"] != self.num_examples or state["seed"] != self.seed:
            raise ValueError(
                f"the checkpoint's data position is for {state['num_examples']} examples with seed "
                f"{state['seed']}, but this run has {self.num_examples} with seed {self.seed}"
            )
        self.epoch, self.offset = int(state["epoch"]), int(state["offset"])


def iter_batches(order: EpochOrder, batch: int) -> Iterable[list[tuple[int, int]]]:
    """Endless global batches of ``(epoch, index)`` pairs from ``order``."""
    while True:
        yield order.take(batch)
