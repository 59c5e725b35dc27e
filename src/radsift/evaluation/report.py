"""Writing a bench run: ``report.md``, ``report.json`` and the PNG plots.

``report.md`` is for people: the corpus, the systems, one section per protocol (what was
measured, the tables, the plots) and the timings. ``report.json`` holds the same tables plus
the numbers behind them (per-system summaries, per-query scores, test results) for scripts;
NaN becomes ``null``.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from radsift.errors import ConfigError
from radsift.evaluation.plots import write_plots
from radsift.evaluation.protocols.base import Table


def _cell(value: Any) -> str:
    text = "n/a" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(table: Table) -> str:
    """A GitHub-flavoured markdown table (numbers right-aligned), title above and note below."""
    lines = [f"**{table.title}**", ""]
    lines.append("| " + " | ".join(_cell(c) for c in table.columns) + " |")
    aligns = []
    for i, _ in enumerate(table.columns):
        numeric = i > 0 and all(_looks_numeric(r[i]) for r in table.rows if i < len(r))
        aligns.append("---:" if numeric else ":---")
    lines.append("| " + " | ".join(aligns) + " |")
    for row in table.rows:
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    if table.note:
        lines += ["", f"_{table.note}_"]
    return "\n".join(lines)


def _looks_numeric(value: Any) -> bool:
    text = str(value).strip()
    return bool(text) and (text[0].isdigit() or text[0] in "+-−<" or text == "n/a")


def render_markdown(result, plots: dict[str, list[Path]] | None = None) -> str:
    """The report as markdown (plots linked by file name, relative to the report)."""
    plots = plots or {}
    c = result.config
    out = ["# radsift bench report", ""]
    corpus = result.corpus
    out.append(f"- **Corpus**: {', '.join(corpus['paths'])}: {corpus['reports']} non-empty reports ({corpus['read']}).")
    weak = corpus.get("weak_labels")
    if weak:
        out.append(
            f"- **Weak labels** ({', '.join(weak.get('sections', []))}): {weak['sentences']} sentences, "
            f"{weak['unique_sentences']} unique, {weak['labeled_entries']} labeled entries "
            f"({weak['positive_entries']} positive, {weak['negative_entries']} negative), {weak['queries']} queries "
            f"({weak['positive_queries']} positive, {weak['negative_queries']} negative)."
        )
    if corpus.get("cross_collection"):
        cc = corpus["cross_collection"]
        out.append(f"- **Other collection**: {cc['name']}: {cc['reports']} reports, {cc['unique_sentences']} unique sentences.")
    out.append(
        f"- **Settings**: seed {c['seed']}, holdout fraction {c['holdout_fraction']}, "
        f"fold {c['fold'] if c['fold'] is not None else 'all'} of {c['folds']}, "
        f"max queries {c['max_queries'] or 'all'}, category field {corpus.get('category_field') or 'none'}."
    )
    env = result.environment
    out.append(f"- **Run**: {env.get('date')}, Python {env.get('python')}, {env.get('cpus')} CPUs, "
               f"total {result.timings.get('total', 0):.1f} s.")
    out += ["", "## Systems", "", markdown_table(Table(
        title="Systems under test", columns=["system", "what it is"],
        rows=[[s["name"], s["description"]] for s in result.systems],
        note="Systems rank raw texts through radsift's ranking core (no index filters; negation-aware only for "
             "KIND+negation systems, circular on weak-label protocols), all on the same queries and candidates.",
    )), ""]
    for p in result.protocols:
        out += [f"## {p.title}", ""]
        if p.skipped:
            out += [f"_Skipped: {p.skipped}._", ""]
            continue
        if p.description:
            out += [p.description, ""]
        for table in p.tables:
            out += [markdown_table(table), ""]
        for note in p.notes:
            out += [f"- {note}"]
        if p.notes:
            out.append("")
        for f in plots.get(p.key, []):
            out += [f"![{f.stem}]({f.name})", ""]
        out += [f"_{p.seconds:.1f} s_", ""]
    out += ["## Timing", "", markdown_table(Table(
        title="Wall time per step (seconds)", columns=["step", "seconds"],
        rows=[[k, f"{v:.1f}"] for k, v in result.timings.items()],
    )), ""]
    return "\n".join(out)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        items = sorted(value) if isinstance(value, set) else value
        return [_jsonable(v) for v in items]
    if isinstance(value, (np.floating, float)):
        f = float(value)
        return None if math.isnan(f) or math.isinf(f) else f
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, Path):
        return str(value)
    return value


def to_json(result, plots: dict[str, list[Path]] | None = None) -> dict[str, Any]:
    """The JSON document of a run (NaN as null)."""
    return _jsonable({
        "config": result.config,
        "corpus": result.corpus,
        "systems": result.systems,
        "environment": result.environment,
        "timings": result.timings,
        "protocols": [p.to_dict() for p in result.protocols],
        "plots": {k: [f.name for f in v] for k, v in (plots or {}).items()},
    })


def _write_text(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def prepare_out_dir(out_dir: str | Path) -> Path:
    """Create the output folder (checked before a run, so a bad ``--out`` fails early).

    Raises:
        ConfigError: ``out_dir`` exists and is not a folder, or cannot be created or written.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: exists and is not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out {out}: cannot create ({exc.strerror})") from None
    if not os.access(out, os.W_OK):
        raise ConfigError(f"--out {out}: not writable")
    return out


def write_report(result, out_dir: str | Path, plots: bool = True) -> dict[str, Path]:
    """Write ``report.md``, ``report.json`` and the plots into ``out_dir`` (created if needed).

    Returns:
        ``{"markdown": ..., "json": ..., "<plot stem>": ...}``.

    Raises:
        ConfigError: ``out_dir`` exists and is not a folder, or cannot be created.
    """
    out = prepare_out_dir(out_dir)
    drawn = write_plots(result.protocols, out) if plots else {}
    paths = {"markdown": out / "report.md", "json": out / "report.json"}
    _write_text(paths["markdown"], render_markdown(result, drawn))
    _write_text(paths["json"], json.dumps(to_json(result, drawn), indent=1, ensure_ascii=False) + "\n")
    for files in drawn.values():
        for f in files:
            paths[f.stem] = f
    return paths


def console_tables(result) -> list:
    """The headline table of each protocol that ran, as rich tables (for the terminal)."""
    from rich.table import Table as RichTable

    out = []
    for p in result.protocols:
        if p.skipped or not p.tables:
            continue
        t = p.tables[0]
        rich = RichTable(title=f"{p.title}\n{t.title}", title_justify="left")
        for i, col in enumerate(t.columns):
            rich.add_column(str(col), justify="left" if i == 0 else "right")
        for row in t.rows:
            rich.add_row(*(_cell(c) for c in row))
        out.append(rich)
    return out
