"""``radsift demo``: the main job on the bundled synthetic corpus, start to finish (an application
beside the CLI: it uses every stage, so it lives above them, and ``radsift.demo`` stays a leaf
that only writes the synthetic corpus)."""

from __future__ import annotations

import os
import shutil
import sys
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

from radsift.corpus import ReaderOptions, ReadStats, read_corpus
from radsift.demo import write_demo_corpus
from radsift.demo.feeds import FeedItem, write_hl7
from radsift.demo.serial import serial_corpus
from radsift.evaluation.metrics import evaluate
from radsift.evaluation.trec import read_qrels, read_queries
from radsift.index import build_index
from radsift.search import Index
from radsift.search.display import print_hits
from radsift.search.followups import followups
from radsift.search.timeline import finding_changes, patient_timeline
from radsift.workflows.adapt import build_adapted_index

#: The demo's "today" for follow-ups (the serial corpus's exams run from 2024 into 2025).
DEMO_AS_OF = "2025-09-30"

EXAMPLE_SEARCHES = ("pneumothorax", "no pleural effusion", "enlarged heart", "endotracheal tube position",
                    "a breathing tube in the windpipe")
#: Training steps of the demo's adapt step (about a minute on 2 cores; 0 skips it).
DEMO_ADAPT_STEPS = 40


def run_demo(out: Path, *, n: int = 2000, seed: int = 7, serve: bool = False, port: int = 8000,
             adapt_steps: int = DEMO_ADAPT_STEPS, console: Console | None = None) -> Path:
    """Generate the demo corpus, index it, run example searches and a small evaluation; then adapt the
    model to the corpus (``index build --adapt``, ``adapt_steps`` steps) and evaluate again.

    Returns:
        The index directory (the adapted one when adapting ran).
    """
    console = console or Console()
    out = Path(out)
    files = write_demo_corpus(out / "corpus", n=n, seed=seed)
    console.rule("[bold]1. demo corpus")
    console.print(f"{n} synthetic chest X-ray reports written to {files.reports_csv}", highlight=False)

    console.rule("[bold]2. index")
    options = ReaderOptions(format="csv", id_column="uid", sections={"findings": "findings", "impression": "impression"})
    stats = ReadStats()
    index_dir = out / "index"
    summary = build_index(index_dir, read_corpus([files.reports_csv], options, stats), overwrite=True)
    console.print(f"built: {summary.describe()}", highlight=False)

    console.rule("[bold]3. example searches (hybrid, best sentence per report)")
    index = Index.open(index_dir)
    for query in EXAMPLE_SEARCHES:
        console.print(f"\n[bold]radsift search {index_dir} {query!r} -k 3[/]")
        print_hits(console, query, index.search(query, k=3, mode="hybrid"))

    console.rule("[bold]4. how well does each mode rank the demo queries? (qrels from the generator's truth)")
    queries = read_queries(files.queries)
    qrels = read_qrels(files.qrels)
    table = Table("model", "mode", "mAP", "P@10", "nDCG@10", "MRR")

    def evaluate_rows(idx, model: str, modes) -> None:
        for mode in modes:
            run = {qid: [(h.report_id, h.score) for h in idx.search(q, k=100, mode=mode, include_report=False,
                                                                     mentions=False)]
                   for qid, q in queries.items()}
            _, mean = evaluate(qrels, run, metrics=["map", "p@10", "ndcg@10", "mrr"])
            table.add_row(model, mode, *(f"{mean[m]:.3f}" for m in ("map", "p@10", "ndcg@10", "mrr")))

    evaluate_rows(index, "general", ("bm25", "dense", "hybrid"))
    console.print(table)

    if adapt_steps > 0:
        console.rule(f"[bold]5. adapt the model to these reports (index build --adapt --adapt-steps {adapt_steps})")
        adapted_dir = out / "index-adapted"
        summary, model = build_adapted_index(adapted_dir, read_corpus([files.reports_csv], options), steps=adapt_steps,
                                             overwrite=True, say=lambda m: console.print(m, highlight=False))
        console.print(f"built: {summary.describe()}", highlight=False)
        if model is not None:
            index_dir = adapted_dir
            index = Index.open(index_dir)
            evaluate_rows(index, f"adapted ({adapt_steps} steps)", ("dense", "hybrid"))
            console.print(table)
            console.print("(the generator's reports are easy for the general model, so a few steps move little here; "
                          "on real reports 200 steps keep three quarters of the full recipe's gain: "
                          "docs/measurements.md, \"Adapting in the main path\")", highlight=False)
            query = EXAMPLE_SEARCHES[-1]
            console.print(f"\n[bold]radsift search {index_dir} {query!r} -k 3[/]")
            print_hits(console, query, index.search(query, k=3, mode="hybrid"))

    patients_step(out, console)

    console.rule("[bold]7. your own reports")
    console.print(_on_path_hint(), highlight=False)
    console.print(
        "Index a CSV of your own (other columns become metadata you can filter on with --where), tuning the "
        "model on it first:\n"
        "  radsift index build my-index reports.csv --format csv --id-column uid "
        "--section findings=findings --section impression=impression --adapt\n"
        "  radsift search my-index \"no pneumothorax\" -k 10 --mode hybrid\n"
        f"Evaluate with your own judgments: radsift run my-index --queries q.tsv --out run.trec && "
        f"radsift eval --qrels qrels.trec --run run.trec\n"
        f"(the demo's own: {files.queries} and {files.qrels})",
        highlight=False,
    )
    if serve:
        from radsift.serve import run_server  # uvicorn and fastapi: only when serving

        console.rule("[bold]8. web page")
        # In this process: the demo has run torch (a forked worker would inherit its thread pools), and
        # nothing changes its index under it.
        run_server(index_dir, host="127.0.0.1", port=port, console=console, in_process=True)
    return index_dir


def _on_path_hint() -> str:
    """How to call ``radsift`` from a new shell, where ``make demo``'s virtual environment is not on PATH."""
    if shutil.which("radsift"):
        return "radsift is on your PATH:"
    script = Path(sys.argv[0]) if Path(sys.argv[0]).name == "radsift" else Path(sys.prefix) / "bin" / "radsift"

    def shown(path: Path) -> str:  # relative to here when below it (".venv/bin/radsift"), else absolute
        relative = os.path.relpath(path.resolve())
        return str(path.resolve()) if relative.startswith("..") else relative

    return (f"radsift is {shown(script)}, not on your PATH: run `source {shown(script.parent / 'activate')}` in "
            f"each new shell (or call {shown(script)}), then:")


def patients_step(out: Path, console: Console, n_patients: int = 40) -> Path:
    """Patients over time: serial exams arriving as an HL7 feed, one patient's timeline, a new finding and
    the overdue follow-ups (:mod:`radsift.demo.serial`, :mod:`radsift.search.timeline`)."""
    console.rule("[bold]6. patients over time (an HL7 feed of serial exams)")
    corpus = serial_corpus(n_patients, seed=1, pool=600, as_of=DEMO_AS_OF)
    items = [FeedItem(r, r.metadata["patient"], datetime.fromisoformat(r.metadata["date"] + "T09:00"))
             for r in corpus.reports]
    feed = write_hl7(items, out / "feeds" / "serial.hl7")
    index_dir = out / "index-patients"
    summary = build_index(index_dir, read_corpus([feed], ReaderOptions()), overwrite=True)
    console.print(f"read {feed} (HL7 v2 ORU^R01); built: {summary.describe()}", highlight=False)
    changes = finding_changes(index_dir, "pneumothorax", "new") or finding_changes(index_dir, "pleural effusion", "new")
    if changes:
        change = changes[0]
        console.print(f"\n[bold]radsift patients {index_dir} {change.finding!r} --change new[/]: "
                      f"{len(changes)} patients; the first:", highlight=False)
        console.print(f"  {change.patient}: {change.finding} absent or not mentioned on {change.before.date}, "
                      f"present on {change.report.date}: \"{change.report.evidence.get(change.finding, '')}\"",
                      highlight=False)
        console.print(f"\n[bold]radsift timeline {index_dir} {change.patient}[/]", highlight=False)
        for entry in patient_timeline(index_dir, change.patient):
            present = ", ".join(f for f, st in entry.findings.items() if st == "present") or "(nothing present)"
            console.print(f"  {entry.date}  {entry.report_id}  {change.finding}: {entry.status(change.finding):<14}"
                          f" present: {present}", highlight=False)
    overdue = followups(index_dir, as_of=DEMO_AS_OF, overdue_only=True)
    console.print(f"\n[bold]radsift followups {index_dir} --overdue --as-of {DEMO_AS_OF}[/]: {len(overdue)} overdue",
                  highlight=False)
    for rec in overdue[:3]:
        console.print(f"  due {rec.due}  {rec.patient}  {rec.report_id} ({rec.date}): {rec.sentence}", highlight=False)
    return index_dir
