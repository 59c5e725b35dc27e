"""The ``radsift`` command line: parses arguments and calls the package, nothing more.

- One module per command group: :mod:`~radsift.cli.index_cmds` (``radsift index ...``),
  :mod:`~radsift.cli.search_cmds` (search, export, saved), :mod:`~radsift.cli.answer_cmds` (ask,
  draft-impression), :mod:`~radsift.cli.train_cmds` (label, train), :mod:`~radsift.cli.bench_cmds`
  (run, bench, eval), :mod:`~radsift.cli.serve_cmds` (serve, demo, demo-corpus). Each command parses
  its flags and calls one function of the library; decisions live there.
- Commands are listed in workflow order (:data:`~radsift.cli.help.COMMAND_ORDER`); each help shows an
  example and metavars (``DIR``, ``N``, ``KEY=VALUE``), never Python types (:mod:`radsift.cli.help`).
- Every command that reads a corpus takes the reader flags declared once in
  :data:`~radsift.cli.options.READER_FLAGS` (:func:`~radsift.cli.options.reader_flags` adds them and
  hands the command one :class:`~radsift.corpus.ReaderOptions`).
- User-facing errors (:class:`radsift.errors.RadsiftError`) are handled in one place,
  :meth:`RadsiftGroup.main` (what :func:`main` and ``CliRunner`` run): one line ``error: ...``
  naming the file, row, field or option, and exit status 2. Commands never catch them.
- Third-party progress bars are off (:func:`quiet_third_party`); radsift's own progress
  (:mod:`radsift.progress`) is a bar on a terminal and a line every 10 seconds elsewhere.
- Importing the CLI loads no torch, spaCy, FastAPI or matplotlib: those load when a command needs them.
  ``radsift COMMAND`` imports only its command's module (:data:`COMMAND_MODULES`), not the other
  commands' libraries; ``radsift --help`` and :data:`app` (tests, ``CliRunner``) hold every command.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Annotated, Iterable

import typer

from radsift.cli.help import OPENI, OrderedGroup, examples
from radsift.cli.output import err_console
from radsift.errors import IndexDamagedError, RadsiftError


def quiet_third_party() -> None:
    """Silence the progress bars and chatter of transformers, huggingface_hub and tqdm.

    Environment variables cover libraries not imported yet (they read them on import); the calls
    cover those already imported (tests, ``radsift demo`` in one process). A user's own settings win.
    """
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    os.environ.setdefault("TQDM_DISABLE", "1")
    if "huggingface_hub" in sys.modules:
        try:
            sys.modules["huggingface_hub"].utils.disable_progress_bars()
        except AttributeError:  # pragma: no cover - an older huggingface_hub
            pass
    if "transformers" in sys.modules:
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            hf_logging.set_verbosity_error()
        except (ImportError, AttributeError):  # pragma: no cover
            pass


class RadsiftGroup(OrderedGroup):
    """The top-level command: lists its commands in workflow order, and its :meth:`main` is where every
    user-facing error is handled."""

    def main(self, *args, **kwargs):
        """Run the command line; a :class:`RadsiftError` from any command prints ``error: ...``
        (one line naming the file, row, field or option) and exits with status 2.

        The one place errors are handled: the console script (:func:`main`) and in-process callers
        (``typer.testing.CliRunner``) both come through here, and no command catches them itself.
        """
        try:
            return super().main(*args, **kwargs)
        except RadsiftError as exc:
            err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
            sys.exit(1 if isinstance(exc, IndexDamagedError) else 2)


#: The modules of the top-level command groups, in the order they join ``radsift``.
GROUPS = ("search_cmds", "answer_cmds", "patient_cmds", "train_cmds", "bench_cmds", "serve_cmds", "index_cmds")
#: The module of each top-level command (``index`` and ``saved`` are groups): ``radsift COMMAND`` imports
#: only that one (``tests/test_cli_fast.py`` checks this map against the commands of :data:`app`).
COMMAND_MODULES = {
    "search": "search_cmds", "export": "search_cmds", "saved": "search_cmds",
    "ask": "answer_cmds", "draft-impression": "answer_cmds",
    "timeline": "patient_cmds", "patients": "patient_cmds", "followups": "patient_cmds",
    "label": "train_cmds", "train": "train_cmds",
    "run": "bench_cmds", "bench": "bench_cmds", "eval": "bench_cmds",
    "serve": "serve_cmds", "demo": "serve_cmds", "demo-corpus": "serve_cmds",
    "index": "index_cmds",
}


def _print_version(value: bool) -> None:
    """``radsift --version``: the installed version, then exit."""
    if value:
        from radsift.version import __version__

        typer.echo(f"radsift {__version__}")
        raise typer.Exit()


def _start(version: Annotated[bool, typer.Option(
        "--version", help="Print radsift's version and exit.", is_eager=True, callback=_print_version)] = False,
           ) -> None:
    """Offline semantic search for radiology reports: index, search, label, train, evaluate, serve."""
    quiet_third_party()


def build_app(groups: Iterable[str] = GROUPS) -> typer.Typer:
    """The ``radsift`` command with the commands of ``groups`` (modules of :data:`GROUPS`)."""
    wanted = set(groups)
    cli = typer.Typer(
        name="radsift",
        help="Offline semantic search for radiology reports: index, search, label, train, evaluate, serve.",
        epilog=examples(f"radsift index build my-index reports.csv {OPENI}", 'radsift search my-index "pneumothorax"'),
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        cls=RadsiftGroup,
    )
    modules = {name: importlib.import_module(f"radsift.cli.{name}") for name in GROUPS if name in wanted}
    for name, module in modules.items():
        if name != "index_cmds":
            cli.add_typer(module.app)  # no name: the module's commands join the top level
    if "index_cmds" in modules:  # groups after the commands: `export` is listed before `saved`
        cli.add_typer(modules["index_cmds"].index_app, name="index")
    if "search_cmds" in modules:
        cli.add_typer(modules["search_cmds"].saved_app, name="saved")
    cli.callback()(_start)
    return cli


def __getattr__(name: str):
    """``radsift.cli.app``: every command, built on first use (PEP 562)."""
    if name == "app":
        built = build_app()
        globals()["app"] = built
        return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _command_groups(argv: list[str]) -> tuple[str, ...]:
    """The group modules ``radsift ARGV`` needs: its command's alone, or all of them (``--help``, a
    mistyped command: click then lists or suggests every command)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    if first is None and "--version" in argv:
        return ()  # the version alone: no command's module to import
    if first in COMMAND_MODULES and not any(a in ("--help", "-h") for a in argv[:argv.index(first)]):
        return (COMMAND_MODULES[first],)
    return GROUPS


def main() -> None:
    """Console-script entry point (errors are handled in :meth:`RadsiftGroup.main`)."""
    try:
        build_app(_command_groups(sys.argv[1:]))()
    except KeyboardInterrupt:  # pragma: no cover - click turns Ctrl-C into Abort in most places
        err_console.print("interrupted")
        sys.exit(130)
