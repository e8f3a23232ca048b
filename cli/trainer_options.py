"""Click options derived from a trainer's options dataclass (one definition of every option).

:class:`subword.trainers.BpeTrainer` defines the training options once: their names, types,
defaults and (in ``field.metadata["help"]``) their help text. This module turns each field into a
click option, so the command line cannot drift from the Python API, and turns the parsed values
back into the dataclass. The mapping:

==========================  ==========================================================
field type                  option
==========================  ==========================================================
``int``/``float``/``str``   ``--field-name VALUE`` (``None`` default: optional)
``bool``                    ``--field-name/--no-field-name``
``Literal[...]``            ``--field-name [a|b]`` (a ``click.Choice``)
``list[str]``               ``--field-name VALUE``, repeatable; a plural field name is
                            made singular (``special_tokens`` -> ``--special-token``)
==========================  ==========================================================

``field.metadata`` may override the option name (``"cli": "--name"``) or hide a field from the
command line (``"cli": None``). Help text falls back to :data:`_HELP` below when a field has none.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import click

__all__ = ["trainer_option_specs", "add_trainer_options", "add_registry_options", "registry_fields", "build_trainer",
           "OptionSpec"]

F = TypeVar("F", bound=Callable[..., Any])

# Help for fields whose dataclass metadata carries none. The wording follows HF tokenizers' and
# sentencepiece's meaning of these options, since users know them from there.
_HELP: dict[str, str] = {
    "vocab_size": "Target vocabulary size, special tokens and the initial alphabet included.",
    "min_frequency": "Only merge pairs that occur at least this many times.",
    "special_tokens": "A special token (repeatable). Gets an id first, in the order given, and is never split or merged.",
    "initial_alphabet": "Characters to put in the alphabet even if absent from the corpus (repeatable; each character of the value counts).",
    "limit_alphabet": "Keep at most this many of the most frequent characters in the alphabet.",
    "max_token_length": "Never create tokens longer than this many characters.",
    "continuing_subword_prefix": "Prefix marking tokens that continue a word (e.g. '##').",
    "end_of_word_suffix": "Suffix marking tokens that end a word (e.g. '</w>').",
    "compat": "Whose rules the trainer follows (ids, merge order, tie-breaks).",
    "engine": "'rust' (fast) or 'reference' (the readable pure-Python trainer; slow, same result).",
    "threads": "Worker threads for counting (default: all cores).",
    "seed": "Seed for everything random (also --sample).",
}


@dataclasses.dataclass(frozen=True)
class OptionSpec:
    """How one dataclass field appears on the command line."""

    field: str
    flag: str
    kind: str  # "scalar" | "flag" | "choice" | "multiple"
    type: Any
    default: Any
    help: str


def _strip_optional(tp: Any) -> tuple[Any, bool]:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1 and len(get_args(tp)) == 2:
            return args[0], True
    return tp, False


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def trainer_option_specs(cls: type) -> list[OptionSpec]:
    """Lists the command-line options of a trainer dataclass, in field order.

    Args:
        cls: A dataclass such as :class:`subword.trainers.BpeTrainer`.

    Raises:
        TypeError: A field has a type this mapping does not know (a bug to fix here, not a user error).

    >>> from dataclasses import dataclass, field
    >>> @dataclass
    ... class T:
    ...     vocab_size: int = 100
    ...     special_tokens: list[str] = field(default_factory=list)
    ...     engine: Literal["rust", "reference"] = "rust"
    >>> [(s.flag, s.kind) for s in trainer_option_specs(T)]
    [('--vocab-size', 'scalar'), ('--special-token', 'multiple'), ('--engine', 'choice')]
    """
    hints = typing.get_type_hints(cls)
    specs: list[OptionSpec] = []
    for field in dataclasses.fields(cls):
        if field.name.startswith("_") or not field.init:
            continue
        meta = field.metadata or {}
        if "cli" in meta and meta["cli"] is None:
            continue
        tp, optional = _strip_optional(hints[field.name])
        default = _default(field)
        origin = get_origin(tp)
        if origin is Literal:
            kind, ctype = "choice", click.Choice([str(a) for a in get_args(tp)])
        elif origin in (list, tuple, typing.Sequence) or tp in (list, tuple):
            args = get_args(tp)
            kind, ctype = "multiple", (args[0] if args and args[0] in (str, int, float) else str)
            default = tuple(default or ())
        elif tp is bool:
            kind, ctype = "flag", bool
        elif tp in (int, float, str):
            kind, ctype = "scalar", tp
        else:
            raise TypeError(f"{cls.__name__}.{field.name}: no command-line mapping for type {tp!r}")
        name = field.name
        if kind == "multiple" and name.endswith("s"):
            name = name[:-1]
        flag = meta.get("cli") or "--" + name.replace("_", "-")
        help_text = meta.get("help") or _HELP.get(field.name) or f"{cls.__name__}.{field.name}."
        specs.append(OptionSpec(field.name, flag, kind, ctype, default, help_text))
    return specs


def add_trainer_options(cls: type, *, exclude: frozenset[str] = frozenset()) -> Callable[[F], F]:
    """A decorator adding one click option per trainer field (values arrive under the field names).

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class T:
    ...     vocab_size: int = 100
    >>> @click.command()
    ... @add_trainer_options(T)
    ... def cmd(vocab_size): click.echo(vocab_size)
    >>> from click.testing import CliRunner
    >>> CliRunner().invoke(cmd, ["--vocab-size", "7"]).output
    '7\\n'
    """

    def decorate(func: F) -> F:
        for spec in reversed(trainer_option_specs(cls)):
            if spec.field in exclude:
                continue
            if spec.kind == "flag":
                flag = spec.flag[2:]
                option = click.option(f"--{flag}/--no-{flag}", spec.field, default=bool(spec.default), help=spec.help)
            elif spec.kind == "multiple":
                option = click.option(
                    spec.flag, spec.field, type=spec.type, multiple=True, default=spec.default,
                    help=spec.help, show_default=bool(spec.default),
                )
            else:
                option = click.option(
                    spec.flag, spec.field, type=spec.type, default=spec.default, help=spec.help,
                    show_default=spec.default is not None,
                )
            func = option(func)
        return func

    return decorate


def registry_fields(classes: dict[str, type]) -> dict[str, list[tuple[str, OptionSpec]]]:
    """Every command-line field of the trainers in ``classes`` (label -> class): field -> [(label, spec)].

    >>> from subword.trainers import BpeTrainer, WordPieceTrainer
    >>> [label for label, _ in registry_fields({"bpe": BpeTrainer, "wordpiece": WordPieceTrainer})["criterion"]]
    ['wordpiece']
    """
    out: dict[str, list[tuple[str, OptionSpec]]] = {}
    for label, cls in classes.items():
        for spec in trainer_option_specs(cls):
            out.setdefault(spec.field, []).append((label, spec))
    return out


def _union_help(owners: list[tuple[str, OptionSpec]], everyone: int) -> str:
    """One help text for a field several trainers share: the first trainer's text, who has the option
    (unless all do), and the default of each when they differ."""
    text = owners[0][1].help.rstrip()
    labels = list(dict.fromkeys(label for label, _ in owners))
    if len(labels) < everyone:
        text += f" ({', '.join(labels)})"
    groups: dict[str, list[str]] = {}
    for label, spec in owners:
        groups.setdefault(_show(spec.default), []).append(label)
    if len(groups) > 1:
        text += " [default: " + "; ".join(f"{', '.join(who)}: {value}" for value, who in groups.items()) + "]"
    elif owners[0][1].default not in (None, (), False) or owners[0][1].kind == "flag":
        text += f" [default: {_show(owners[0][1].default)}]"
    return text


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (list, tuple)):
        return " ".join(map(str, value)) or "none"
    return "none" if value is None else str(value)


def add_registry_options(classes: dict[str, type]) -> Callable[[F], F]:
    """A decorator adding one click option per field of any of ``classes`` (label -> options class).

    Every option defaults to ``None`` (a flag too, so "not given" is visible), so each trainer keeps its
    own defaults; the command decides which options apply to the chosen trainer (and refuses the rest).

    >>> from subword.trainers import BpeTrainer, WordPieceTrainer
    >>> @click.command()
    ... @add_registry_options({"bpe": BpeTrainer, "wordpiece": WordPieceTrainer})
    ... def cmd(**values): click.echo(sorted(k for k, v in values.items() if v not in (None, ())))
    >>> from click.testing import CliRunner
    >>> CliRunner().invoke(cmd, ["--criterion", "frequency", "--no-lowercase"]).output.split()
    ["['criterion',", "'lowercase']"]
    """
    fields_ = registry_fields(classes)
    everyone = len(set(classes))

    def decorate(func: F) -> F:
        for name in reversed(list(fields_)):
            owners = fields_[name]
            spec = owners[0][1]
            help_text = _union_help(owners, everyone)
            if spec.kind == "flag":
                flag = spec.flag[2:]
                option = click.option(f"--{flag}/--no-{flag}", name, default=None, help=help_text, show_default=False)
            elif spec.kind == "multiple":
                option = click.option(spec.flag, name, type=spec.type, multiple=True, default=(), help=help_text,
                                      show_default=False)
            else:
                option = click.option(spec.flag, name, type=spec.type, default=None, help=help_text,
                                      show_default=False)
            func = option(func)
        return func

    return decorate


def build_trainer(cls: type, values: dict[str, Any], **overrides: Any) -> Any:
    """Builds the trainer dataclass from parsed option values (only its own fields are taken).

    ``ValueError``/``TypeError`` raised by the dataclass's own validation become
    :class:`click.UsageError` (exit code 2), since they are about the values the user typed.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class T:
    ...     vocab_size: int = 100
    ...     special_tokens: list[str] = dataclasses.field(default_factory=list)
    >>> build_trainer(T, {"vocab_size": 5, "special_tokens": ("<s>",), "other": 1})
    T(vocab_size=5, special_tokens=['<s>'])
    """
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    specs = {s.field: s for s in trainer_option_specs(cls)}
    for name, value in values.items():
        if name not in names:
            continue
        if name in specs and specs[name].kind == "multiple":
            value = list(value)
        kwargs[name] = value
    kwargs.update(overrides)
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as exc:
        # Name the options as the user typed them: "BpeTrainer.vocab_size" -> "--vocab-size".
        flags = {spec.field: spec.flag for spec in specs.values()}
        message = re.sub(r"\b\w+Trainer\.(\w+)", lambda m: flags.get(m.group(1), m.group(0)), str(exc))
        message = re.sub(r"\b[a-z]+(?:_[a-z]+)+\b", lambda m: flags.get(m.group(0), m.group(0)), message)
        message = re.sub(r"^(\w+) (must|is)\b", lambda m: f"{flags.get(m.group(1), m.group(1))} {m.group(2)}", message)
        raise click.UsageError(message) from exc
