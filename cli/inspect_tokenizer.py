"""``subword inspect -t TOK``: what a tokenizer file holds, for people (text) or programs (``--json``)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import click

from cli.loading import load_tokenizer, tokenizer_option
from subword.model_spm import SentencePieceModel
from subword.normalizers import SentencePieceNormalizer

__all__ = ["inspect_command", "describe_tokenizer"]

_COMPONENTS = ("normalizer", "pre_tokenizer", "post_processor", "decoder")


def _component_text(spec: Any) -> str:
    """``ByteLevel(add_prefix_space=false, ...)`` from a tokenizer.json component, ``none`` for null.

    >>> _component_text({"type": "ByteLevel", "add_prefix_space": False})
    'ByteLevel(add_prefix_space=false)'
    >>> _component_text({"type": "Precompiled", "precompiled_charsmap": {"bytes": 237000, "base64_chars": 316000}})
    'Precompiled(charsmap of 237,000 bytes)'
    >>> _component_text(None)
    'none'
    """
    if spec is None:
        return "none"
    if not isinstance(spec, dict):
        return json.dumps(spec)
    kind = spec.get("type", "?")
    if kind == "Precompiled" and isinstance(spec.get("precompiled_charsmap"), dict):
        return f"Precompiled(charsmap of {spec['precompiled_charsmap']['bytes']:,} bytes)"
    if kind == "Sequence":
        inner = spec.get("normalizers") or spec.get("pretokenizers") or spec.get("processors") or spec.get("decoders")
        return "Sequence[" + ", ".join(_component_text(s) for s in inner or []) + "]"
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in spec.items() if k != "type")
    return f"{kind}({args})" if args else kind


def _summarise_charsmaps(spec: Any) -> Any:
    """``spec`` with each ``precompiled_charsmap`` (SentencePiece's normalization table, ~300 KB of base64
    in T5 / ALBERT files) replaced by its size, which is all a reader can use.

    >>> _summarise_charsmaps({"type": "Precompiled", "precompiled_charsmap": "aGVsbG8="})
    {'type': 'Precompiled', 'precompiled_charsmap': {'bytes': 5, 'base64_chars': 8}}
    """
    if isinstance(spec, list):
        return [_summarise_charsmaps(s) for s in spec]
    if not isinstance(spec, dict):
        return spec
    out = {}
    for key, value in spec.items():
        if key == "precompiled_charsmap" and isinstance(value, str):
            size = len(value) * 3 // 4 - len(value) + len(value.rstrip("="))
            out[key] = {"bytes": size, "base64_chars": len(value)}
        else:
            out[key] = _summarise_charsmaps(value)
    return out


def _flatten(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as dotted keys, so each recorded option gets a line of its own.

    >>> _flatten({"training": {"options": {"seed": 0}, "engine": "rust"}})
    {'training.options.seed': 0, 'training.engine': 'rust'}
    """
    flat: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def describe_tokenizer(spec: str | Path) -> dict[str, Any]:
    """Collects the facts ``inspect`` shows: model, sizes, special tokens, components, provenance.

    Args:
        spec: Anything ``-t`` takes (see :func:`cli.loading.load_tokenizer`).

    Returns:
        A JSON-serialisable dict (the ``--json`` output); a ``Precompiled`` normalizer's charsmap is given
        as its size (``{"bytes": n, "base64_chars": m}``), not its text.

    >>> import tempfile
    >>> from subword.trainers import BpeTrainer, train_bpe
    >>> path = Path(tempfile.mkdtemp(), "tok.json")
    >>> train_bpe(["low lower lowest\\n"], BpeTrainer(vocab_size=12, special_tokens=["<s>"])).save(path)
    >>> info = describe_tokenizer(path)
    >>> info["model"], info["vocab_size"], info["added_tokens"][0]["content"], info["pre_tokenizer"]["type"]
    ('BPE', 12, '<s>', 'Whitespace')
    """
    tok = load_tokenizer(spec)
    provenance = tok.provenance or None
    if isinstance(tok.model, SentencePieceModel):
        # A .model has no tokenizer.json form of its own; its TrainerSpec is its record of how it was made.
        model = {"type": tok.model.type_name, "unk_token": tok.model.unk_token,
                 "byte_fallback": tok.model.byte_fallback, "control_pieces": tok.model.control_tokens()}
        provenance = provenance or ({"trainer_spec": _plain(tok.model.file.trainer_spec)}
                                    if tok.model.file.trainer_spec else None)
    else:
        model = tok.model.to_dict()
    specials = [{"id": i, "content": t.content, "special": t.special} for i, t in tok.added_tokens]
    model_options = {
        key: model.get(key)
        for key in ("unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk", "byte_fallback",
                    "dropout", "ignore_merges", "control_pieces")
        if key in model
    }
    components = {name: getattr(tok, name) for name in _COMPONENTS}
    return {
        "path": str(spec),
        "format": getattr(tok, "source_format", None),
        "model": model.get("type", type(tok.model).__name__),
        "vocab_size": tok.get_vocab_size(with_added_tokens=True),
        "merges": len(model.get("merges") or []),
        "added_tokens": specials,
        "model_options": model_options,
        **{name: _summarise_charsmaps(_component_dict(c)) for name, c in components.items()},
        "provenance": provenance,
    }


def _component_dict(component: Any) -> Any:
    """A component as its tokenizer.json dict; sentencepiece's normalizer (which has none) as its options."""
    if component is None:
        return None
    if isinstance(component, SentencePieceNormalizer):
        return {"type": "SentencePiece", "name": component.name,
                "precompiled_charsmap": base64.b64encode(component.precompiled_charsmap).decode("ascii"),
                "add_dummy_prefix": component.add_dummy_prefix,
                "remove_extra_whitespaces": component.remove_extra_whitespaces,
                "treat_whitespace_as_suffix": component.treat_whitespace_as_suffix}
    return component.to_dict()


def _plain(spec: dict[str, Any]) -> dict[str, Any]:
    """A TrainerSpec as JSON values (bytes fields as their length)."""
    return {k: (f"<{len(v)} bytes>" if isinstance(v, (bytes, bytearray)) else v) for k, v in spec.items()}


@click.command("inspect", epilog="\b\nExamples:\n  subword inspect -t tok.json\n  subword inspect -t spiece.model\n"
                                  "  subword inspect -t cl100k_base --json | jq .vocab_size\n")
@tokenizer_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def inspect_command(tokenizer_spec: str, as_json: bool) -> None:
    """Show a tokenizer's model, vocabulary size, special tokens, pipeline and training options
    (any file kind -t takes)."""
    info = describe_tokenizer(tokenizer_spec)
    if as_json:
        click.echo(json.dumps(info, ensure_ascii=False, indent=2))
        return
    rows: list[tuple[str, str]] = [
        ("file", info["path"] + (f" ({info['format']})" if info["format"] else "")),
        ("model", info["model"]),
        ("vocab size", f"{info['vocab_size']:,} (with added tokens)"),
    ]
    if info["merges"]:
        rows.append(("merges", f"{info['merges']:,}"))
    for key, value in info["model_options"].items():
        if value not in (None, False):
            rows.append((key.replace("_", " "), json.dumps(value, ensure_ascii=False)))
    added = info["added_tokens"]
    rows.append(("special tokens", ", ".join(f"{t['content']} ({t['id']})" for t in added if t["special"]) or "none"))
    plain = [t for t in added if not t["special"]]
    if plain:
        rows.append(("added tokens", ", ".join(f"{t['content']} ({t['id']})" for t in plain)))
    for name in _COMPONENTS:
        rows.append((name.replace("_", "-"), _component_text(info[name])))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        click.echo(f"{key:<{width}}  {value}")
    provenance = info["provenance"]
    if provenance:
        click.echo("training (recorded in the file):")
        flat = _flatten(provenance)
        width = max(len(k) for k in flat)
        for key, value in flat.items():
            click.echo(f"  {key:<{width}}  {json.dumps(value, ensure_ascii=False)}")
    else:
        click.echo("training: not recorded in this file")
