"""Read and write HF ``tokenizer.json`` (the whole file), and the transformers side files.

What we write loads in ``tokenizers.Tokenizer.from_file`` and ``transformers.PreTrainedTokenizerFast``;
what HF writes for a BPE, WordPiece or Unigram model with the supported components loads here (Unigram:
the files of HF's SentencePiece conversions, T5 / ALBERT / XLNet / Llama style, and of
``SentencePieceUnigramTokenizer``). Anything else is refused with an
error naming the section, the type and the file, never silently ignored.

Provenance (how the tokenizer was trained) is stored at ``model["provenance"]``: HF's loader rejects an
unknown top-level key (checked with tokenizers 0.23.3: ``Tokenizer.from_file`` fails with "expected `,` or
`}`") but tolerates extra keys inside ``"model"`` (it drops them when it re-saves), and so does
transformers 5.24's ``PreTrainedTokenizerFast``.

>>> from subword import BPE, Tokenizer
>>> tok = loads(dumps(Tokenizer(BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]), provenance={"seed": 0})))
>>> tok.model.merges, tok.provenance
([('a', 'b')], {'seed': 0})
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from subword import decoders, normalizers, pre_tokenizers, processors
from subword.errors import FormatError, ModelError, UnsupportedComponentError
from subword.formats.atomic import atomic_write_text  # re-exported: the one atomic writer
from subword.model import BPE, Unigram, WordLevel, WordPiece
from subword.tokenizer import AddedToken, Tokenizer

__all__ = [
    "to_dict",
    "from_dict",
    "dumps",
    "loads",
    "load",
    "save",
    "atomic_write_text",
    "save_pretrained_files",
    "SUPPORTED",
]

log = logging.getLogger(__name__)

_SECTIONS = {
    "normalizer": normalizers.REGISTRY,
    "pre_tokenizer": pre_tokenizers.REGISTRY,
    "post_processor": processors.REGISTRY,
    "decoder": decoders.REGISTRY,
}
_TOP_LEVEL = ("version", "truncation", "padding", "added_tokens", *_SECTIONS, "model")

#: Supported ``"type"`` names per section.
SUPPORTED: dict[str, list[str]] = {**{k: r.supported for k, r in _SECTIONS.items()},
                                   "model": ["BPE", "Unigram", "WordLevel", "WordPiece"]}


# ==== writing ====


def to_dict(tok: Tokenizer, *, include_provenance: bool = True, legacy_merges: bool = False,
            model_data: bool = True, for_hf: bool = True) -> dict[str, Any]:
    """The ``tokenizer.json`` content of ``tok`` as a dict (HF's key order).

    Args:
        tok: The tokenizer.
        include_provenance: Keep ``model["provenance"]``.
        legacy_merges: Write merges as ``"left right"`` strings, the only form ``tokenizers`` < 0.20 reads.
        model_data: With ``False``, the model section holds its options only (no ``vocab``, ``merges``):
            the skeleton ``_core.CoreTokenizer.from_parts`` completes with data read in Rust.
        for_hf: The file HF reads: a ``Split`` read by tiktoken's engine is written with the Oniguruma
            spelling of its pattern (:func:`subword.formats.tiktoken.hf_pattern`), or refused. ``False``: our
            own form, the engine named (what the core and pickles take).

    Raises:
        ValueError: ``legacy_merges`` with a merge part containing a space (the legacy form cannot say it).
        TypeError: the provenance is not JSON-serialisable.
        subword.formats.convert.ConversionError: ``for_hf`` and a tiktoken pattern with no Oniguruma spelling.

    >>> from subword import BPE, Tokenizer
    >>> list(to_dict(Tokenizer(BPE({"a": 0}, []))))
    ['version', 'truncation', 'padding', 'added_tokens', 'normalizer', 'pre_tokenizer', 'post_processor', 'decoder', 'model']
    """
    model = tok.model.to_dict() if model_data else tok.model._header()
    if legacy_merges and "merges" in model:
        spaced = [pair for pair in model["merges"] if " " in pair[0] or " " in pair[1]]
        if spaced:
            raise ValueError(f"legacy merges cannot hold tokens with spaces, e.g. {spaced[0]!r}; "
                             "save with pairs (the default) instead")
        model["merges"] = [f"{a} {b}" for a, b in model["merges"]]
    if include_provenance and tok.provenance:
        data_keys = [k for k in ("vocab", "merges") if k in model]
        model = {**{k: v for k, v in model.items() if k not in data_keys},
                 "provenance": tok.provenance, **{k: model[k] for k in data_keys}}
    if for_hf and model_data:
        model = _vocab_for_added_ids(model, tok.added_tokens)
    return {
        "version": "1.0",
        "truncation": tok._truncation,
        "padding": tok._padding,
        # HF writes added tokens sorted by id.
        "added_tokens": [t.to_dict(i) for i, t in sorted(tok.added_tokens, key=lambda it: it[0])],
        "normalizer": tok.normalizer.to_dict() if tok.normalizer else None,
        "pre_tokenizer": _hf_spelling(tok.pre_tokenizer.to_dict(), for_hf) if tok.pre_tokenizer else None,
        "post_processor": tok.post_processor.to_dict() if tok.post_processor else None,
        "decoder": tok.decoder.to_dict() if tok.decoder else None,
        "model": model,
    }


def _vocab_for_added_ids(model: dict[str, Any], added: list[tuple[int, AddedToken]]) -> dict[str, Any]:
    """The model dict with the added tokens HF would renumber put into its vocab at their ids.

    HF ignores the ids an added-token list declares (:func:`_hf_added_ids`): a token not in the model's vocab
    gets the next free id. A tokenizer whose added tokens sit elsewhere (a Tekken file's special tokens take
    ids 0..999 below the model's) keeps its ids in HF only if the model's vocab holds them, as transformers'
    conversions write them; a Unigram vocab (a list) cannot, and such a tokenizer is refused.
    """
    vocab = model.get("vocab")
    if not added or vocab is None:
        return model
    lookup = vocab.get if isinstance(vocab, dict) else {p: i for i, (p, _) in enumerate(vocab)}.get
    hf_ids = _hf_added_ids([(i, t) for i, t in added], lookup, len(vocab), "<save>", quiet=True)
    moved = [(i, t.content) for (i, t), (j, _) in zip(added, hf_ids) if i != j]
    if not moved:
        return model
    if not isinstance(vocab, dict):
        from subword.formats.convert import ConversionError

        raise ConversionError(f"added token {moved[0][1]!r} has id {moved[0][0]}, which HF would renumber, and a "
                              "Unigram vocab cannot hold it at that id")
    used = set(vocab.values())
    clash = [(i, c) for i, c in moved if i in used]
    if clash:
        from subword.formats.convert import ConversionError

        raise ConversionError(f"added token {clash[0][1]!r} has id {clash[0][0]}, a vocab token's id")
    merged = dict(sorted([*vocab.items(), *((c, i) for i, c in moved)], key=lambda kv: kv[1]))
    return {**model, "vocab": merged}


def _hf_spelling(component: Any, for_hf: bool) -> Any:
    """``component`` with every fancy-regex ``Split`` written as HF reads it (``for_hf``), else unchanged."""
    if not for_hf or not isinstance(component, dict):
        return component
    if component.get("type") == "Split" and component.get("engine", "oniguruma") != "oniguruma":
        from subword.formats.convert import ConversionError
        from subword.formats.tiktoken import hf_pattern

        out = {k: v for k, v in component.items() if k != "engine"}
        if "Regex" in out["pattern"]:
            try:
                out["pattern"] = {"Regex": hf_pattern(out["pattern"]["Regex"])}
            except FormatError as exc:
                raise ConversionError(f"no tokenizer.json form: {exc}") from None
        return out
    if component.get("type") == "Sequence" and isinstance(component.get("pretokenizers"), list):
        return {**component, "pretokenizers": [_hf_spelling(c, for_hf) for c in component["pretokenizers"]]}
    return component


def core_skeleton(tok: Tokenizer) -> str:
    """The compact ``tokenizer.json`` of ``tok`` without provenance or model data, for
    ``_core.CoreTokenizer.from_parts`` (the data comes from the model's Rust copy).

    >>> from subword import BPE, Tokenizer
    >>> core_skeleton(Tokenizer(BPE({"a": 0}, []))).endswith('"model":{"type":"BPE","dropout":null,"unk_token":null,'
    ...     '"continuing_subword_prefix":null,"end_of_word_suffix":null,"fuse_unk":false,"byte_fallback":false,'
    ...     '"ignore_merges":false}}')
    True
    """
    return json.dumps(to_dict(tok, include_provenance=False, model_data=False, for_hf=False), ensure_ascii=False,
                      separators=(",", ":"))


def dumps(tok: Tokenizer, *, pretty: bool = False, include_provenance: bool = True, legacy_merges: bool = False,
          for_hf: bool = True) -> str:
    """Serialise ``tok`` to ``tokenizer.json`` text (UTF-8, not ASCII-escaped; deterministic).

    Args:
        tok: The tokenizer.
        pretty: Indent by 2 (what :func:`save` writes) instead of the compact form.
        include_provenance: Keep ``model["provenance"]``.
        legacy_merges: Merges as ``"left right"`` strings (for ``tokenizers`` < 0.20).
        for_hf: See :func:`to_dict`.

    Raises:
        ValueError: see :func:`to_dict`.
        TypeError: the provenance holds something JSON cannot represent.

    >>> from subword import BPE, Tokenizer
    >>> dumps(Tokenizer(BPE({"é": 0}, []))).endswith('"vocab":{"é":0},"merges":[]}}')
    True
    """
    data = to_dict(tok, include_provenance=include_provenance, legacy_merges=legacy_merges, for_hf=for_hf)
    try:
        if pretty:
            return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        # Everything but the free-form provenance is built from checked values.
        raise TypeError(f"cannot serialise the tokenizer (is the provenance JSON-serialisable?): {exc}") from exc


def save(tok: Tokenizer, path: str | os.PathLike[str], *, pretty: bool = True, legacy_merges: bool = False) -> None:
    """Write ``tok`` to ``path`` as ``tokenizer.json``, atomically.

    Args:
        tok: The tokenizer.
        path: The file to (over)write.
        pretty: Indented JSON (default) or compact.
        legacy_merges: Merges as ``"left right"`` strings, for ``tokenizers`` < 0.20.

    >>> import tempfile, pathlib
    >>> from subword import BPE, Tokenizer
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "tokenizer.json"
    >>> save(Tokenizer(BPE({"a": 0}, [])), p); load(p).get_vocab()
    {'a': 0}
    """
    atomic_write_text(path, dumps(tok, pretty=pretty, legacy_merges=legacy_merges))


_ROLES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


def save_pretrained_files(
    tok: Tokenizer,
    directory: str | os.PathLike[str],
    *,
    model_max_length: int | None = None,
    **roles: str | None,
) -> list[str]:
    """Write ``tokenizer.json``, ``tokenizer_config.json`` and ``special_tokens_map.json`` into ``directory``.

    ``transformers.AutoTokenizer.from_pretrained(directory)`` and
    ``PreTrainedTokenizerFast(tokenizer_file=directory/"tokenizer.json")`` then load it with the same ids.

    Args:
        tok: The tokenizer.
        directory: Created if missing.
        model_max_length: Recorded for transformers; defaults to the truncation ``max_length`` when set.
        **roles: ``bos_token``, ``eos_token``, ``unk_token``, ``sep_token``, ``pad_token``, ``cls_token``,
            ``mask_token``; each must be a token of ``tok``. ``unk_token`` defaults to the model's and
            ``pad_token`` to the padding token; for a WordPiece model ``cls_token``, ``sep_token``,
            ``pad_token`` and ``mask_token`` default to BERT's ``[CLS]``, ``[SEP]``, ``[PAD]``, ``[MASK]``
            when the tokenizer has them.

    Returns:
        The paths written.

    Raises:
        TypeError: an unknown role.
        ValueError: a role names a token that is not in the vocabulary.

    >>> import tempfile
    >>> from subword import BPE, Tokenizer
    >>> tok = Tokenizer(BPE({"a": 0}, []), special_tokens=["<pad>"])
    >>> [Path(p).name for p in save_pretrained_files(tok, tempfile.mkdtemp(), pad_token="<pad>")]
    ['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json']
    """
    unknown = sorted(set(roles) - set(_ROLES))
    if unknown:
        raise TypeError(f"save_pretrained_files() got unknown argument(s) {unknown} (roles: {list(_ROLES)})")
    chosen: dict[str, str] = {}
    if tok.model.unk_token is not None:
        chosen["unk_token"] = tok.model.unk_token
    if tok.padding is not None:
        chosen["pad_token"] = tok.padding["pad_token"]
    if isinstance(tok.model, WordPiece):
        # BERT's roles, for the BERT tokens this tokenizer has (as transformers' BERT tokenizers name them).
        for role, token in (("cls_token", "[CLS]"), ("sep_token", "[SEP]"), ("pad_token", "[PAD]"),
                            ("mask_token", "[MASK]")):
            if role not in chosen and tok.token_to_id(token) is not None:
                chosen[role] = token
    chosen.update({k: v for k, v in roles.items() if v is not None})
    for role, token in chosen.items():
        if not isinstance(token, str):
            raise TypeError(f"{role} must be a str, got {type(token).__name__}")
        if tok.token_to_id(token) is None:
            raise ValueError(f"{role}={token!r} is not a token of this tokenizer")
    if model_max_length is None and tok.truncation is not None:
        model_max_length = tok.truncation["max_length"]

    config: dict[str, Any] = {
        # "PreTrainedTokenizerFast" is understood by transformers 4.x and 5.x (where it aliases
        # TokenizersBackend); it reads everything else from tokenizer.json.
        "tokenizer_class": "PreTrainedTokenizerFast",
        # transformers 4.x defaults this to True, which rewrites " ." as "." when decoding; HF tokenizers
        # and we do not, so ask for the same text back.
        "clean_up_tokenization_spaces": False,
        **chosen,
    }
    if model_max_length is not None:
        config["model_max_length"] = model_max_length
    if isinstance(tok.model, WordPiece):
        # BERT models take segment ids; transformers returns them only when asked by name.
        config["model_input_names"] = ["input_ids", "token_type_ids", "attention_mask"]
    if tok.padding is not None:
        config["padding_side"] = tok.padding["direction"]
    if tok.truncation is not None:
        config["truncation_side"] = tok.truncation["direction"]

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "tokenizer.json": dumps(tok, pretty=True),
        "tokenizer_config.json": json.dumps(config, ensure_ascii=False, indent=2) + "\n",
        "special_tokens_map.json": json.dumps(chosen, ensure_ascii=False, indent=2) + "\n",
    }
    written = []
    for name, text in files.items():
        atomic_write_text(out / name, text)
        written.append(str(out / name))
    return written


# ==== reading ====


def load(path: str | os.PathLike[str]) -> Tokenizer:
    """Read a ``tokenizer.json`` file.

    Raises:
        FileNotFoundError: no such file.
        FormatError: not UTF-8, not JSON (e.g. truncated), or not a supported tokenizer; the message names
            the path.

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "bad.json"
    >>> _ = p.write_text('{"version": "1.0", "model": {')
    >>> load(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    subword.errors.FormatError: .../bad.json is not valid JSON (truncated or corrupt?): ...
    """
    p = Path(path)
    data = p.read_bytes()
    tok = _load_fast(data, str(p))
    if tok is not None:
        return tok
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{p} is not UTF-8 text (byte {exc.start}): not a tokenizer.json") from None
    return loads(text, source=str(p))


class _NotFast(Exception):
    """The fast reader does not take this file after all; the whole file is read in Python."""


def _load_fast(data: bytes, source: str) -> Tokenizer | None:
    """The tokenizer of a ``tokenizer.json``'s bytes, read without building the model's data in Python.

    Rust (``_core.read_hf_json``) reads the model's ``vocab`` and ``merges`` (a BPE or WordPiece model
    whose data passes the Python model's checks without a warning) and hands back the rest of the file;
    that goes through :func:`from_dict` as always, with a model whose data is built from the file only
    when Python code asks for it. ``None``: anything else, which :func:`loads` reads (and reports).
    """
    from subword._native import has_core_class

    if not has_core_class("read_hf_json"):
        return None
    from subword import _core

    got = _core.read_hf_json(data)
    if got is None:
        return None
    skeleton, native = got
    try:
        parsed = json.loads(skeleton)
    except json.JSONDecodeError:
        return None

    def loader() -> dict[str, Any]:
        model, _ = _read_model(json.loads(data.decode("utf-8"))["model"], source)
        return {name: getattr(model, name) for name in model._data_fields}

    try:
        return from_dict(parsed, source, _deferred=(loader, native))
    except _NotFast:
        return None


def loads(text: str, source: str = "<string>") -> Tokenizer:
    """Parse ``tokenizer.json`` text.

    Args:
        text: The JSON text.
        source: A name for error messages (the path, when reading a file).

    Raises:
        FormatError: invalid JSON or unsupported/invalid content.

    >>> loads('{"model": {"type": "WordLevels"}}')
    Traceback (most recent call last):
    ...
    subword.errors.UnsupportedComponentError: unsupported model type 'WordLevels' in <string> (supported: BPE, Unigram, WordLevel, WordPiece)
    """
    if not text.strip():
        raise FormatError(f"{source} is empty: not a tokenizer.json")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(
            f"{source} is not valid JSON (truncated or corrupt?): {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    return from_dict(data, source=source)


def from_dict(data: object, source: str = "<string>", *, _deferred: tuple[Any, Any] | None = None) -> Tokenizer:
    """Build a :class:`Tokenizer` from a parsed ``tokenizer.json`` dict (``_deferred``: the fast reader's
    model data, see :func:`_load_fast`).

    Raises:
        FormatError: unsupported or invalid content, naming ``source``.

    >>> from_dict({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}).get_vocab()
    {'a': 0}
    """
    if not isinstance(data, dict):
        raise FormatError(f"{source}: a tokenizer.json must be a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(_TOP_LEVEL))
    if unknown:
        raise FormatError(f"{source}: unknown top-level key(s) {unknown} (expected: {', '.join(_TOP_LEVEL)})")
    version = data.get("version", "1.0")
    if version != "1.0":
        raise FormatError(f"{source}: unsupported tokenizer.json version {version!r} (supported: '1.0')")
    if "model" not in data:
        raise FormatError(f"{source}: no 'model' section")

    model, provenance = _read_model(data["model"], source, _deferred)
    components = {}
    for section, registry in _SECTIONS.items():
        value = data.get(section)
        components[section] = None if value is None else registry.from_dict(_modern_metaspace(value), source)
    try:
        tok = Tokenizer(model, provenance=provenance, **components)
        added = _read_added_tokens(data.get("added_tokens", []), source)
        if _deferred is None:
            lookup, size = model.vocab.get, model.vocab_size
        else:
            lookup, size = _deferred[1].token_to_id, len(_deferred[1])
        tok._added = _hf_added_ids(added, lookup, size, source)
        if data.get("truncation") is not None:
            _read_truncation(tok, data["truncation"])
        if data.get("padding") is not None:
            _read_padding(tok, data["padding"])
    except (TypeError, ValueError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"{source}: {exc}") from exc
    return tok


def _modern_metaspace(component: Any) -> Any:
    """Rewrites the Metaspace form of tokenizers < 0.19 (``add_prefix_space``, ``str_rep``; older T5 / ALBERT
    files on the Hub) into today's (``prepend_scheme``, ``split``), as HF does on loading; recurses into
    Sequences.

    >>> _modern_metaspace({"type": "Metaspace", "replacement": "▁", "add_prefix_space": True})
    {'type': 'Metaspace', 'replacement': '▁', 'prepend_scheme': 'always', 'split': True}
    """
    if not isinstance(component, dict):
        return component
    if component.get("type") == "Metaspace" and ("add_prefix_space" in component or "str_rep" in component):
        out = {k: v for k, v in component.items() if k not in ("add_prefix_space", "str_rep")}
        out.setdefault("prepend_scheme", "always" if component.get("add_prefix_space", True) else "never")
        out.setdefault("split", True)
        return out
    for key in ("pretokenizers", "decoders"):
        if component.get("type") == "Sequence" and isinstance(component.get(key), list):
            return {**component, key: [_modern_metaspace(c) for c in component[key]]}
    return component


def _read_model(data: object, source: str,
                deferred: tuple[Any, Any] | None = None) -> tuple[BPE | WordPiece | Unigram, dict[str, Any] | None]:
    if not isinstance(data, dict):
        raise FormatError(f"{source}: 'model' must be a JSON object")
    type_name = data.get("type")
    fields = dict(data)
    if type_name is None:
        type_name, fields = _untyped_model(fields, source)
    elif type_name not in SUPPORTED["model"]:
        raise UnsupportedComponentError("model", str(type_name), SUPPORTED["model"], source)
    provenance = fields.pop("provenance", None)
    if provenance is not None and not isinstance(provenance, dict):
        raise FormatError(f"{source}: model.provenance must be an object")
    if type_name == "Unigram":
        try:
            return Unigram.from_dict(fields), provenance
        except (ModelError, TypeError) as exc:
            raise FormatError(f"{source}: invalid Unigram model: {exc}") from exc
    if type_name == "WordLevel":
        try:
            return WordLevel.from_dict(fields), provenance
        except (ModelError, TypeError) as exc:
            raise FormatError(f"{source}: invalid WordLevel model: {exc}") from exc
    if type_name == "WordPiece":
        try:
            return WordPiece.from_dict(fields, deferred=deferred), provenance
        except (ModelError, TypeError) as exc:
            raise FormatError(f"{source}: invalid WordPiece model: {exc}") from exc
    try:
        return BPE.from_dict(fields, deferred=deferred), provenance
    except ModelError as exc:
        raise FormatError(f"{source}: invalid BPE model: {exc}") from exc


#: The fields each model's HF deserializer reads (what an untyped model is matched against).
_MODEL_FIELDS = {
    "BPE": ("vocab", "merges", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
            "byte_fallback", "ignore_merges"),
    "WordPiece": ("vocab", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word"),
    "WordLevel": ("vocab", "unk_token"),
    "Unigram": ("vocab", "unk_id", "byte_fallback"),
}


def _untyped_model(fields: dict[str, Any], source: str) -> tuple[str, dict[str, Any]]:
    """The model HF infers for a ``"model"`` without ``"type"`` (older files), and its fields.

    HF tries, in order, the models whose required fields are there: BPE (``vocab`` object and ``merges``),
    WordPiece (``vocab`` object, ``unk_token``, ``continuing_subword_prefix``, ``max_input_chars_per_word``),
    WordLevel (``vocab`` object and ``unk_token``), Unigram (``vocab`` list); fields the chosen model does not
    read are ignored, as HF ignores them (logged). Checked with tokenizers 0.23.3.
    """
    vocab = fields.get("vocab")
    if isinstance(vocab, dict) and "merges" in fields:
        kind = "BPE"
    elif isinstance(vocab, dict) and {"unk_token", "continuing_subword_prefix", "max_input_chars_per_word"} <= set(fields):
        kind = "WordPiece"
    elif isinstance(vocab, dict) and "unk_token" in fields:
        kind = "WordLevel"
    elif isinstance(vocab, list):
        kind = "Unigram"
    else:
        raise FormatError(
            f"{source}: model has no 'type', and its fields {sorted(fields)} fit no model HF infers (BPE: vocab and "
            "merges; WordPiece: vocab, unk_token, continuing_subword_prefix, max_input_chars_per_word; WordLevel: "
            "vocab and unk_token; Unigram: a vocab list)")
    known = {k: v for k, v in fields.items() if k in _MODEL_FIELDS[kind] or k == "provenance"}
    ignored = sorted(set(fields) - set(known))
    if ignored:
        log.warning("%s: untyped model read as %s (HF's inference); fields it does not read are ignored: %s",
                    source, kind, ignored)
    return kind, known


_ADDED_FLAGS = ("single_word", "lstrip", "rstrip", "normalized", "special")


def _hf_added_ids(entries: list[tuple[int, AddedToken]], vocab_id: Any, vocab_size: int,
                  source: str, quiet: bool = False) -> list[tuple[int, AddedToken]]:
    """The ids HF gives the added tokens of a file: it adds them in file order and ignores the declared ids.

    A token the model has keeps the model's id; a new one gets the model's vocab size, or one past the
    largest added id when that is larger (HF's ``AddedVocabulary::add_tokens``, checked with tokenizers 0.23.3:
    declared ids 9 and 8 after a 4-token vocab become 4 and 5). A content listed twice is one token with the
    later flags. A declared id that differs is logged, as HF logs it.

    >>> _hf_added_ids([(9, AddedToken("<x>")), (2, AddedToken("ab"))], {"ab": 2}.get, 4, "f")
    [(4, AddedToken(content='<x>', special=False, single_word=False, lstrip=False, rstrip=False, normalized=True)), (2, AddedToken(content='ab', special=False, single_word=False, lstrip=False, rstrip=False, normalized=True))]
    """
    out: list[tuple[int, AddedToken]] = []
    where: dict[str, int] = {}
    for declared, token in entries:
        if token.content in where:
            k = where[token.content]
            out[k] = (out[k][0], token)
            continue
        token_id = vocab_id(token.content)
        if token_id is None:
            largest = max((i for i, _ in out), default=None)
            token_id = vocab_size if largest is None or (largest < vocab_size and vocab_size > 0) else largest + 1
        if token_id != declared and not quiet:
            log.warning("%s: added token %r is declared with id %d but HF gives it id %d (the model's id, or the next "
                        "free one in file order); using %d", source, token.content, declared, token_id, token_id)
        where[token.content] = len(out)
        out.append((token_id, token))
    return out


def _read_added_tokens(items: object, source: str) -> list[tuple[int, AddedToken]]:
    if not isinstance(items, list):
        raise FormatError(f"{source}: 'added_tokens' must be a list")
    out = []
    for n, item in enumerate(items):
        if not isinstance(item, dict) or "id" not in item or "content" not in item:
            raise FormatError(f"{source}: added_tokens[{n}] needs 'id' and 'content'")
        unknown = sorted(set(item) - {"id", "content", *_ADDED_FLAGS})
        if unknown:
            raise FormatError(f"{source}: added_tokens[{n}] has unknown field(s) {unknown}")
        token_id = item["id"]
        if isinstance(token_id, bool) or not isinstance(token_id, int) or token_id < 0:
            raise FormatError(f"{source}: added_tokens[{n}] id must be a non-negative int, got {token_id!r}")
        try:
            token = AddedToken(item["content"], **{k: item[k] for k in _ADDED_FLAGS if k in item})
        except TypeError as exc:
            raise FormatError(f"{source}: added_tokens[{n}]: {exc}") from None
        out.append((token_id, token))
    return out


def _check_keys(section: str, data: object, required: set[str], optional: set[str]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError(f"'{section}' must be an object or null")
    missing = sorted(required - set(data))
    unknown = sorted(set(data) - required - optional)
    if missing or unknown:
        raise ValueError(f"'{section}' has missing key(s) {missing} / unknown key(s) {unknown}")
    return data


def _read_truncation(tok: Tokenizer, data: object) -> None:
    d = _check_keys("truncation", data, {"max_length", "strategy", "stride"}, {"direction"})
    strategies = {"LongestFirst": "longest_first", "OnlyFirst": "only_first", "OnlySecond": "only_second"}
    if d["strategy"] not in strategies:
        raise ValueError(f"truncation strategy {d['strategy']!r} (supported: {sorted(strategies)})")
    direction = d.get("direction", "Right")
    if direction not in ("Left", "Right"):
        raise ValueError(f"truncation direction {direction!r} (supported: Left, Right)")
    tok.enable_truncation(d["max_length"], d["stride"], strategies[d["strategy"]], direction.lower())


def _read_padding(tok: Tokenizer, data: object) -> None:
    d = _check_keys(
        "padding", data, {"strategy", "pad_id", "pad_type_id", "pad_token"}, {"direction", "pad_to_multiple_of"}
    )
    strategy = d["strategy"]
    if strategy == "BatchLongest":
        length = None
    elif isinstance(strategy, dict) and set(strategy) == {"Fixed"}:
        length = strategy["Fixed"]
    else:
        raise ValueError(f"padding strategy {strategy!r} (supported: 'BatchLongest', {{'Fixed': n}})")
    direction = d.get("direction", "Right")
    if direction not in ("Left", "Right"):
        raise ValueError(f"padding direction {direction!r} (supported: Left, Right)")
    tok.enable_padding(direction.lower(), d["pad_id"], d["pad_type_id"], d["pad_token"], length,
                       d.get("pad_to_multiple_of"))

