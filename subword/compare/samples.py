"""Per-line sample data for the terminal and HTML views: each tokenizer's segmentation of a few lines.

A tokenizer's tokens are strings in its own alphabet (byte-level BPE's ``Ġ`` chars, SentencePiece's ``▁``
and ``<0xE2>`` byte pieces, WordPiece's ``##``). To show them side by side we turn each token into the
bytes it stands for by walking the tokenizer's decoder one token at a time (``Replace``, ``ByteFallback``,
``ByteLevel``, ``Metaspace``, ``WordPiece`` and ``BPEDecoder`` each have a per-token meaning; ``Fuse`` and
``Strip`` only join or trim the whole sequence and are skipped). A tokenizer without a decoder is read
from its pre-tokenizer and model (byte-level alphabet, ``▁``, ``##``, ``</w>``, byte fallback).

Tokens whose bytes end inside a UTF-8 character are grouped with the next ones until the group decodes to
whole characters, so a group may carry several ids (a CJK char split by byte-level BPE, a SentencePiece
byte-fallback run). Groups are also merged when their character offsets overlap, which keeps the spans of
a row disjoint.

Disagreements: take each tokenizer's boundaries (group starts and ends) with whitespace ignored (a boundary
is moved to the next non-space character, so ``"a" | " b"`` and ``"a " | "b"`` and WordPiece's dropped
spaces all agree). The line is cut at the boundaries every tokenizer has; a piece that some tokenizer cuts
inside is a disagreement span.

>>> from subword import BPE, Tokenizer
>>> tok = Tokenizer(BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]))
>>> lines = ["abba"]
>>> doc = build_samples([tok], ["t"], lines, [tok.encode_batch(lines, add_special_tokens=False)], [0])
>>> [t["display"] for t in doc[0]["rows"][0]["tokens"]], doc[0]["disagreements"]
(['ab', 'b', 'a'], [])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from subword import decoders as dec
from subword import model as models
from subword import pre_tokenizers as pretok
from subword.decoders import _byte_token
from subword.normalizers import replace_pattern

__all__ = ["build_samples", "token_bytes", "visible", "disagreement_spans", "TokenDisplay"]

_WHITESPACE_GLYPHS = {" ": "·", "\t": "→", "\n": "↵", "\r": "␍"}
_BYTE_CHARS = {c: b for b, c in enumerate(pretok.bytes_to_unicode())}


def visible(text: str) -> str:
    """``text`` with whitespace made visible: space ``·``, tab ``→``, newline ``↵``, carriage return ``␍``.

    Other Unicode spaces (no-break, ideographic) also show as ``·``.

    >>> visible("a b\\tc\\n")
    'a·b→c↵'
    """
    return "".join(_WHITESPACE_GLYPHS.get(c, "·" if c.isspace() else c) for c in text)


# ==== token -> bytes ====


def _decoder_steps(tokenizer: Any) -> list[Any]:
    """The per-token decoding steps of ``tokenizer``: its decoder flattened, or one inferred from the pipeline."""
    decoder = tokenizer.decoder
    if decoder is not None:
        steps: list[Any] = []
        pending = [decoder]
        while pending:
            d = pending.pop(0)
            if isinstance(d, dec.Sequence):
                pending[:0] = list(d.decoders)
            else:
                steps.append(d)
        return steps
    # No decoder in the file: read the alphabet from the components that made the tokens.
    inferred: list[Any] = []
    model = tokenizer.model
    if getattr(model, "byte_fallback", False):
        inferred.append(dec.ByteFallback())
    pre = tokenizer.pre_tokenizer
    pres = list(getattr(pre, "pretokenizers", ())) if isinstance(pre, pretok.Sequence) else [pre]
    for p in pres:
        if isinstance(p, pretok.ByteLevel):
            inferred.append(dec.ByteLevel())
        elif isinstance(p, pretok.Metaspace):
            inferred.append(dec.Metaspace(replacement=p.replacement))
    if type(model).__name__.startswith("SentencePiece") and not any(isinstance(d, dec.Metaspace) for d in inferred):
        # sentencepiece's own model types (a .model file): "▁" stands for a space in every piece.
        inferred.append(dec.Metaspace())
    if isinstance(model, models.WordPiece):
        inferred.append(dec.WordPiece(prefix=model.continuing_subword_prefix))
    elif isinstance(model, models.BPE) and model.end_of_word_suffix:
        inferred.append(dec.BPEDecoder(suffix=model.end_of_word_suffix))
    return inferred


def token_bytes(steps: Sequence[Any], token: str) -> tuple[bytes, bool]:
    """The bytes one token stands for, and whether it is a byte-fallback piece (``<0xE2>``).

    Args:
        steps: The per-token decoding steps (see :func:`_decoder_steps`).
        token: The token string as the model has it.

    >>> token_bytes([dec.ByteLevel()], "Ġhi"), token_bytes([dec.ByteFallback()], "<0xE2>")
    ((b' hi', False), (b'\\xe2', True))
    >>> token_bytes([dec.WordPiece()], "##ing"), token_bytes([dec.Metaspace()], "▁the")
    ((b'ing', False), (b' the', False))
    """
    text = token
    for step in steps:
        if isinstance(step, dec.ByteLevel):
            out = bytearray()
            for ch in text:
                if ch in _BYTE_CHARS:
                    out.append(_BYTE_CHARS[ch])
                else:  # outside the byte alphabet (an added token): its own UTF-8
                    out.extend(ch.encode("utf-8"))
            return bytes(out), False
        if isinstance(step, dec.ByteFallback):
            byte = _byte_token(text)
            if byte is not None:
                return bytes([byte]), True
        elif isinstance(step, dec.Replace):
            text = replace_pattern(step.pattern, step.content, text)
        elif isinstance(step, dec.Metaspace):
            text = text.replace(step.replacement, " ")
        elif isinstance(step, dec.WordPiece):
            if text.startswith(step.prefix):
                text = text[len(step.prefix):]
        elif isinstance(step, dec.BPEDecoder):
            text = text.replace(step.suffix, "")
        # Fuse, Strip, CTC: whole-sequence effects, nothing to do for one token.
    return text.encode("utf-8"), False


def _incomplete(data: bytes) -> bool:
    """True when ``data`` ends inside a UTF-8 character (more bytes could make it decode)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        return err.end == len(data) and err.reason == "unexpected end of data"
    return False


# ==== one row: a tokenizer's groups over a line ====


def _groups(tokenizer: Any, steps: list[Any], cache: dict[int, tuple[bytes, bool]], line: str, encoding: Any,
            specials: dict[int, str]) -> list[dict[str, Any]]:
    tokens = [(i, t, o) for i, t, o, attended in zip(encoding.ids, encoding.tokens, encoding.offsets,
                                                      encoding.attention_mask)
              if attended]  # padding from a file that enables it is not part of the segmentation
    return _group_tokens(steps, cache, line, tokens, specials)


def _group_tokens(steps: list[Any], cache: dict[int, tuple[bytes, bool]], line: str,
                  tokens: Sequence[tuple[int, str, tuple[int, int]]], specials: dict[int, str]) -> list[dict[str, Any]]:
    """``(id, token, (start, end))`` in order, as display groups (see the module docstring)."""
    groups: list[dict[str, Any]] = []
    members: list[tuple[int, int, int, bytes, bool]] = []

    def flush() -> None:
        if not members:
            return
        start = min(m[0] for m in members)
        end = max(m[1] for m in members)
        data = b"".join(m[3] for m in members)
        groups.append({
            "start": start,
            "end": end,
            "text": line[start:end],
            "ids": [m[2] for m in members],
            "bytes_hex": data.hex(),
            "display": _display(members),
        })
        members.clear()

    for token_id, token, (start, end) in tokens:
        if token_id in specials:
            data, is_byte = specials[token_id].encode("utf-8"), False
        else:
            if token_id not in cache:
                cache[token_id] = token_bytes(steps, token)
            data, is_byte = cache[token_id]
        if members:
            so_far = b"".join(m[3] for m in members)
            group_end = max(m[1] for m in members)
            if not (_incomplete(so_far) or start < group_end):
                flush()
        members.append((start, end, token_id, data, is_byte))
    flush()
    return groups


class TokenDisplay:
    """Shows one tokenizer's tokens as decoded text, grouped as the sample rows group them.

    >>> from subword import BPE, Tokenizer
    >>> from subword.decoders import ByteLevel
    >>> tok = Tokenizer(BPE({"Ġthe": 0, "æĿ": 1, "±": 2}, []), decoder=ByteLevel())
    >>> TokenDisplay(tok).groups("x", [(0, "Ġthe", (0, 1)), (1, "æĿ", (1, 1)), (2, "±", (1, 1))])
    [{'display': '·the', 'tokens': 1}, {'display': '東', 'tokens': 2}]
    """

    def __init__(self, tokenizer: Any) -> None:
        self.steps = _decoder_steps(tokenizer)
        self.specials = {i: t.content for i, t in tokenizer.added_tokens}
        self.cache: dict[int, tuple[bytes, bool]] = {}

    def groups(self, line: str, tokens: Sequence[tuple[int, str, tuple[int, int]]]) -> list[dict[str, Any]]:
        """``(id, token, (start, end))`` of ``line``, in order, as ``{display, tokens}`` per group: tokens
        that end inside a UTF-8 character go with the next ones, byte-fallback pieces show as ``⟨E2⟩``,
        whitespace as ``·`` ``→`` ``↵``."""
        return [{"display": g["display"], "tokens": len(g["ids"])}
                for g in _group_tokens(self.steps, self.cache, line, tokens, self.specials)]


def _display(members: list[tuple[int, int, int, bytes, bool]]) -> str:
    """Byte-fallback pieces as ``⟨E2⟩``; other bytes decoded, whitespace made visible; empty as ``∅``."""
    parts: list[str] = []
    run = bytearray()
    for *_, data, is_byte in members:
        if is_byte:
            if run:
                parts.append(visible(run.decode("utf-8", errors="replace")))
                run.clear()
            parts.append(f"⟨{data.hex().upper()}⟩")
        else:
            run.extend(data)
    if run:
        parts.append(visible(run.decode("utf-8", errors="replace")))
    return "".join(parts) or "∅"


# ==== disagreements ====


def disagreement_spans(line: str, rows: Sequence[Sequence[tuple[int, int]]]) -> list[list[int]]:
    """Character spans of ``line`` where the rows' token boundaries differ (whitespace ignored).

    Args:
        line: The text.
        rows: Per tokenizer, the ``(start, end)`` spans of its tokens.

    >>> disagreement_spans("unhappy day", [[(0, 2), (2, 7), (7, 11)], [(0, 7), (8, 11)]])
    [[0, 7]]
    """
    n = len(line)
    # next_solid[p]: the first non-space position at or after p (n if none), so a boundary on either side
    # of a run of spaces counts as the same boundary.
    next_solid = [n] * (n + 1)
    for p in range(n - 1, -1, -1):
        next_solid[p] = next_solid[p + 1] if line[p].isspace() else p
    cuts = []
    for spans in rows:
        row: set[int] = set()
        for start, end in spans:
            for p in (start, end):
                if 0 <= p <= n:
                    row.add(next_solid[p])
        cuts.append(row - {next_solid[0], n})
    if not cuts:
        return []
    shared = sorted(set.intersection(*cuts) | {next_solid[0], n})
    union = set.union(*cuts)
    spans_out: list[list[int]] = []
    for a, b in zip(shared, shared[1:]):
        if any(a < p < b for p in union):
            end = b
            while end > a and line[end - 1].isspace():
                end -= 1
            spans_out.append([a, end])
    return spans_out


def build_samples(tokenizers: Sequence[Any], names: Sequence[str], lines: Sequence[str],
                  encodings: Sequence[Sequence[Any]], indices: Sequence[int]) -> list[dict[str, Any]]:
    """The sample section of the comparison document: each chosen line, segmented by every tokenizer.

    Args:
        tokenizers: The :class:`~subword.Tokenizer` objects, in column order.
        names: Their display names (same order).
        lines: All lines of the input.
        encodings: ``encodings[k][i]`` is tokenizer ``k``'s encoding of ``lines[i]`` (without special tokens).
        indices: The line indices to show.

    Returns:
        One dict per index: ``line_index``, ``text``, ``disagreements`` (``[start, end]`` character spans)
        and ``rows`` (per tokenizer: ``name`` and ``tokens``, each with ``start``, ``end``, ``text``,
        ``ids``, ``bytes_hex`` and ``display``).

    Raises:
        ValueError: the lengths of ``tokenizers``, ``names`` and ``encodings`` differ, or an index is out of
            range.

    >>> from subword import BPE, Tokenizer
    >>> tok = Tokenizer(BPE({"a": 0, "b": 1}, []))
    >>> sample = build_samples([tok], ["t"], ["ab"], [tok.encode_batch(["ab"], add_special_tokens=False)], [0])[0]
    >>> sample["rows"][0]["tokens"][1]
    {'start': 1, 'end': 2, 'text': 'b', 'ids': [1], 'bytes_hex': '62', 'display': 'b'}
    """
    if not (len(tokenizers) == len(names) == len(encodings)):
        raise ValueError(f"build_samples: {len(tokenizers)} tokenizers, {len(names)} names and "
                         f"{len(encodings)} encoding lists; they must match")
    for i in indices:
        if not 0 <= i < len(lines):
            raise ValueError(f"build_samples: line index {i} is outside the {len(lines)} lines")
    steps = [_decoder_steps(t) for t in tokenizers]
    specials = [{i: t.content for i, t in tok.added_tokens} for tok in tokenizers]
    caches: list[dict[int, tuple[bytes, bool]]] = [{} for _ in tokenizers]
    samples = []
    for i in indices:
        line = lines[i]
        rows = [
            {"name": name, "tokens": _groups(tok, steps[k], caches[k], line, encodings[k][i], specials[k])}
            for k, (tok, name) in enumerate(zip(tokenizers, names))
        ]
        spans = [[(t["start"], t["end"]) for t in row["tokens"]] for row in rows]
        samples.append({"line_index": i, "text": line, "disagreements": disagreement_spans(line, spans),
                        "rows": rows})
    return samples
