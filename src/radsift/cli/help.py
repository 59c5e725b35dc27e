"""How every command is declared and shown: workflow order in ``radsift --help``, an example at the end of
each help, metavars (``DIR``, ``N``, ``KEY=VALUE``) and never Python types."""

from __future__ import annotations

from typing import Callable

import typer
from typer.core import TyperCommand, TyperGroup

#: ``radsift --help`` lists the commands in the order a user runs them, then the demo.
COMMAND_ORDER = ("index", "search", "ask", "draft-impression", "label", "train", "bench", "run", "eval", "serve", "demo", "demo-corpus")

OPENI = "--format csv --id-column uid --section findings=findings --section impression=impression"


def _no_python_types(params: list) -> list:
    """Help shows metavars, not Python types: a flag takes no value (typer would print ``<bool>``),
    and an argument is named by its metavar already (typer would add ``<path>``, ``<str>``)."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
        elif param.param_type_name == "argument":
            param.display_type_rich = _no_type
    return params


def _no_type(ctx=None) -> None:
    return None


class RadsiftCommand(TyperCommand):
    """A command whose flags (``--json``, ``--help`` ...) show no value type in its help."""

    def get_params(self, ctx):
        return _no_python_types(super().get_params(ctx))


class OrderedGroup(TyperGroup):
    """A group that lists its commands in :data:`COMMAND_ORDER` and shows no value types in its help
    (the groups ``radsift index`` and ``radsift saved``; the top level adds the error handling:
    :class:`radsift.cli.RadsiftGroup`)."""

    def get_params(self, ctx):
        return _no_python_types(super().get_params(ctx))

    def list_commands(self, ctx) -> list[str]:
        names = super().list_commands(ctx)
        rank = {name: i for i, name in enumerate(COMMAND_ORDER)}
        return sorted(names, key=lambda n: rank.get(n, len(rank)))


def examples(*lines: str) -> str:
    """A help epilog: ``Example:`` and command lines."""
    return "Example:\n\n" + "\n\n".join(f"  {line}" for line in lines)


def command(group: typer.Typer, name: str, *, example: str | list[str]) -> Callable:
    """Register a command whose help ends with ``Example:`` and the given command line(s)."""
    lines = [example] if isinstance(example, str) else list(example)
    return group.command(name, cls=RadsiftCommand, epilog=examples(*lines))


def top_level_commands() -> typer.Typer:
    """A module's own top-level commands, merged into ``radsift`` by :mod:`radsift.cli`."""
    return typer.Typer(add_completion=False)
