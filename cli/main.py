"""The ``subword`` click group: global options, logging to stderr, exit codes.

Exit codes (see CONVENTIONS 2.4):

* 0 -- success.
* 1 -- a runtime failure: bad input data, a corrupt file, a failed training. One line on
  stderr (``error: ...``); ``--debug`` adds the traceback.
* 2 -- a usage error: unknown option, bad value, missing file argument (click's convention).
* 130 -- interrupted with Ctrl-C (128 + SIGINT); no traceback. Commands that write a file (train, count,
  convert, compare) leave none (files are written atomically at the end); encode and decode keep the lines
  already printed; pretrain finishes the step, writes a checkpoint and prints the command that resumes it.
* 141 -- stdout was closed early (``subword encode big.txt | head``; 128 + SIGPIPE, what a
  command killed by SIGPIPE reports); nothing is printed.
"""

from __future__ import annotations

import io
import logging
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

import click

from corpora import CorpusError

__all__ = ["cli", "main", "SubwordGroup"]

EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "show_default": True}


class _BrokenPipe(Exception):
    """Carries a BrokenPipeError past click, which would otherwise print and exit 1 itself."""


def _describe(exc: BaseException) -> str:
    """A one-line message for an error the user can act on."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        return f"{exc.strerror}{where}"
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.splitlines()) if "\n" in text else text


def _user_error_types() -> tuple[type[BaseException], ...]:
    kinds: list[type[BaseException]] = [CorpusError, ValueError, OSError, UnicodeError]
    try:
        from subword.errors import SubwordError

        kinds.append(SubwordError)
    except ImportError:  # a broken install still gets clean messages for the rest
        pass
    return tuple(kinds)


class SubwordGroup(click.Group):
    """A click group that maps every outcome to the exit codes documented in this module."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            if ctx.params.get("debug") and exc.__cause__ is not None:
                click.echo("".join(traceback.format_exception(exc.__cause__)).rstrip(), err=True)
            raise
        except (click.exceptions.Exit, click.exceptions.Abort, KeyboardInterrupt, EOFError):
            raise
        except BrokenPipeError as exc:
            raise _BrokenPipe() from exc
        except Exception as exc:
            if ctx.params.get("debug"):
                click.echo(traceback.format_exc().rstrip(), err=True)
            if isinstance(exc, _user_error_types()):
                raise click.ClickException(_describe(exc)) from exc
            raise click.ClickException(
                f"internal error: {type(exc).__name__}: {_describe(exc)} (run with --debug for the traceback)"
            ) from exc

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as exc:
            exc.show()
            sys.exit(EXIT_USAGE)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except (click.exceptions.Abort, KeyboardInterrupt):
            click.echo("Interrupted.", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except (_BrokenPipe, BrokenPipeError):
            _silence_stdout()
            sys.exit(EXIT_BROKEN_PIPE)
        try:
            # Flush now, so a reader that went away is noticed here and not at interpreter exit
            # (where Python would print "Exception ignored ... BrokenPipeError").
            sys.stdout.flush()
        except BrokenPipeError:
            _silence_stdout()
            sys.exit(EXIT_BROKEN_PIPE)
        sys.exit(rv if isinstance(rv, int) and not isinstance(rv, bool) else 0)


def _silence_stdout() -> None:
    """Points stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass  # not a real file descriptor (e.g. click's test runner): nothing to protect


class _EchoHandler(logging.Handler):
    """Sends library log records to stderr through click (so test runners capture them)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from cli.progress import end_bar_line

            end_bar_line()
            prefix = "warning: " if record.levelno >= logging.WARNING else ""
            click.echo(prefix + record.getMessage(), err=True)
        except Exception:  # noqa: BLE001 - logging must never take the program down
            self.handleError(record)


_LOGGERS = ("corpora", "subword", "cli", "models")


def configure_logging(level: int) -> Callable[[], None]:
    """Routes the ``corpora``, ``subword``, ``cli`` and ``models`` loggers to stderr at ``level``.

    Returns:
        A function that puts the loggers back as they were (levels and handlers), so running the
        CLI in-process (tests, notebooks) leaves no trace in the caller's logging setup.

    >>> restore = configure_logging(logging.WARNING)
    >>> sum(isinstance(h, _EchoHandler) for h in logging.getLogger("corpora").handlers)
    1
    >>> restore(); sum(isinstance(h, _EchoHandler) for h in logging.getLogger("corpora").handlers)
    0
    """
    saved: list[tuple[logging.Logger, int, _EchoHandler | None]] = []
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        added = None
        if not any(isinstance(h, _EchoHandler) for h in logger.handlers):
            added = _EchoHandler()
            logger.addHandler(added)
        saved.append((logger, logger.level, added))
        logger.setLevel(level)

    def restore() -> None:
        for logger, old_level, added in saved:
            logger.setLevel(old_level)
            if added is not None:
                logger.removeHandler(added)

    return restore


EPILOG = """\b
Examples:
  subword train byte-bpe -o tok.json                 # on the built-in corpus
  subword train bpe corpus/*.txt --vocab-size 8000 -o tok.json
  echo "Hello world" | subword encode -t tok.json
  subword encode -t tok.json --format json big.txt > big.jsonl
  subword decode -t tok.json ids.txt
  subword inspect -t tok.json
"""


@click.group(name="subword", cls=SubwordGroup, context_settings=CONTEXT_SETTINGS, epilog=EPILOG)
@click.version_option(package_name="subword", prog_name="subword")
@click.option("--debug", is_flag=True, help="Show the full traceback when a command fails.")
def cli(debug: bool) -> None:
    """Train, compare, inspect, convert and use subword tokenizers (BPE, byte-level BPE, WordPiece,
    Unigram), and pretrain BERT-family models on them.

    \b
    train, count       train a tokenizer (count words at scale first)
    encode, decode     text to ids and back, any tokenizer file or tiktoken name
    inspect, convert   what a tokenizer holds; tokenizer.json, .model and .tiktoken into each other
    compare            many tokenizers on the same text: metrics with intervals, terminal or HTML
    pretrain           pretrain BERT, RoBERTa, ALBERT, DistilBERT, XLNet or BigBird on a vocabulary
    fill-mask          the top candidates of a pretrained model for each [MASK]
    study              which vocabulary? train, compare, pretrain and score several, one report

    Data goes to stdout; progress, messages and errors go to stderr.
    """
    restore = configure_logging(logging.DEBUG if debug else logging.WARNING)
    click.get_current_context().call_on_close(restore)


def _register() -> None:
    from cli.codec import decode_command, encode_command
    from cli.convert import convert_command
    from cli.fill_mask import fill_mask_command
    from cli.inspect_tokenizer import inspect_command
    from cli.pretrain import pretrain_command
    from cli.train import train_command

    from cli.count import count_command

    for command in (train_command, encode_command, decode_command, inspect_command, convert_command,
                    count_command, pretrain_command, fill_mask_command):
        cli.add_command(command)
    cli.add_command(__import__("cli.compare", fromlist=["compare_command"]).compare_command)
    cli.add_command(__import__("cli.study", fromlist=["study_command"]).study_command)


_register()


def main() -> None:
    """The console-script entry point (``subword = "cli.main:main"``); exits with the codes above.

    >>> import subprocess, sys
    >>> subprocess.run([sys.executable, "-m", "cli.main", "--no-such-flag"], capture_output=True).returncode
    2
    """
    cli(prog_name="subword")


if __name__ == "__main__":
    main()
