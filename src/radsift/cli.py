"""The ``radsift`` command line: parses arguments and calls the package, nothing more.

Every command that reads a corpus takes the same reader options (see :func:`reader_options`).
User-facing errors (:class:`radsift.errors.RadsiftError`) print one line naming the file,
row or field and exit with status 2.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from radsift.errors import RadsiftError

app = typer.Typer(
    name="radsift",
    help="Offline semantic search for radiology reports: index, search, label, train, evaluate, serve.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
index_app = typer.Typer(help="Build and update an index.", no_args_is_help=True)
app.add_typer(index_app, name="index")

console = Console()
err_console = Console(stderr=True)

# ---------------------------------------------------------------------------------------------
# Reader options, shared by every command that reads a corpus (index build/add, label, train, bench)
# ---------------------------------------------------------------------------------------------
FormatOpt = Annotated[
    Optional[str],
    typer.Option("--format", help="csv | jsonl | txt | openi-xml | text (inferred from the extension when omitted)."),
]
IdColumnOpt = Annotated[
    Optional[str], typer.Option("--id-column", help="Column/field holding the report id (csv, jsonl).")
]
SectionOpt = Annotated[
    Optional[list[str]],
    typer.Option(
        "--section",
        help="Map a section to a column: --section findings=findings (repeatable). "
        "Columns not mapped become metadata.",
    ),
]
TextColumnOpt = Annotated[
    Optional[str],
    typer.Option("--text-column", help="A free-text column split into sections by its headings (csv, jsonl)."),
]
OnErrorOpt = Annotated[str, typer.Option("--on-error", help="fail | skip: what to do with a bad row.")]


def reader_options(
    format: str | None,
    id_column: str | None,
    section: list[str] | None,
    text_column: str | None,
    on_error: str,
):
    """Turn the shared reader flags into :class:`radsift.corpus.ReaderOptions`."""
    from radsift.corpus import ReaderOptions

    return ReaderOptions.from_cli(
        format=format, id_column=id_column, sections=section or [], text_column=text_column, on_error=on_error
    )


def fail(message: str) -> None:
    err_console.print(f"[bold red]error:[/] {message}", highlight=False)
    raise typer.Exit(2)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except RadsiftError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
        sys.exit(2)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    main()
