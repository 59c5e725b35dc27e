"""``radsift timeline``, ``radsift patients`` and ``radsift followups``: a patient's reports over time, the
patients whose series shows a finding become new, resolve or persist (:mod:`radsift.search.timeline`), and
the follow-ups recommended, due and overdue (:mod:`radsift.search.followups`). Each is audited as a search
is (a line naming the reports shown, before anything is printed)."""

from __future__ import annotations

import json
from typing import Annotated, Optional

import typer
from rich.markup import escape
from rich.table import Table

from radsift.cli.help import command, top_level_commands
from radsift.cli.options import IndexArg
from radsift.cli.output import console
from radsift.cli.search_cmds import NoAuditOpt, SearchAuditOpt, _audit_search, _search_audit
from radsift.search.followups import followups
from radsift.search.timeline import finding_changes, patient_timeline

#: This module's top-level commands (merged into ``radsift`` by :mod:`radsift.cli`).
app = top_level_commands()

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON lines instead of a table.")]


@command(app, "timeline", example=["radsift timeline my-index P00001",
                                   "radsift timeline my-index P00001 --finding pneumothorax --json"])
def timeline_cmd(
    index_dir: IndexArg,
    patient: Annotated[str, typer.Argument(metavar="PATIENT", help="The patient (metadata 'patient').")],
    finding: Annotated[Optional[list[str]], typer.Option(
        "--finding", metavar="NAME", help="Show only these findings (repeatable).")] = None,
    as_json: JsonOpt = False, audit_log: SearchAuditOpt = None, no_audit: NoAuditOpt = False,
) -> None:
    """A patient's reports in date order, each with its findings' status (present, uncertain, absent)."""
    audit = _search_audit(index_dir, audit_log, no_audit)
    entries = patient_timeline(index_dir, patient)
    _audit_search(audit, "timeline", patient, [e.report_id for e in entries])
    wanted = set(finding or [])
    if as_json:
        for e in entries:
            row = e.to_dict()
            if wanted:
                row["findings"] = {f: e.status(f) for f in sorted(wanted)}
            typer.echo(json.dumps(row, ensure_ascii=False))
        return
    table = Table(title=f"patient {escape(patient)}: {len(entries)} reports, oldest first")
    for col, style in (("date", ""), ("report", ""), ("exam", ""), ("present", "bold red"), ("uncertain", "yellow"),
                       ("absent", "green")):
        table.add_column(col, style=style)
    for e in entries:
        by_status = {s: ", ".join(f for f, st in e.findings.items() if st == s and (not wanted or f in wanted))
                     for s in ("present", "uncertain", "absent")}
        table.add_row(e.date or "(no date)", escape(e.report_id), escape(e.exam or ""),
                      *(escape(by_status[s]) for s in ("present", "uncertain", "absent")))
    console.print(table)


@command(app, "patients", example=['radsift patients my-index pneumothorax --change new',
                                   'radsift patients my-index "pleural effusion" --change resolved --within 90d --json'])
def patients_cmd(
    index_dir: IndexArg,
    finding: Annotated[str, typer.Argument(metavar="FINDING", help="A finding the index labels (e.g. pneumothorax).")],
    change: Annotated[str, typer.Option(
        "--change", metavar="new|resolved|persistent",
        help="new: present after a report where it was absent or not mentioned; resolved: absent after "
             "present; persistent: present after present.")] = "new",
    within: Annotated[Optional[str], typer.Option(
        "--within", metavar="DURATION", help="Only changes at most this long after the report before "
                                             "(90d, 12w, 6m, 1y).")] = None,
    as_json: JsonOpt = False, audit_log: SearchAuditOpt = None, no_audit: NoAuditOpt = False,
) -> None:
    """Patients whose series of dated reports shows a finding become new, resolve or persist, with evidence."""
    audit = _search_audit(index_dir, audit_log, no_audit)
    changes = finding_changes(index_dir, finding, change, within)
    _audit_search(audit, "patients", finding, [c.report.report_id for c in changes], params={"change": change,
                                                                                          "within": within})
    if as_json:
        for c in changes:
            typer.echo(json.dumps(c.to_dict(), ensure_ascii=False))
        return
    table = Table(title=f"{len(changes)} patients: {escape(finding)} {change}")
    for col in ("patient", "date", "report", "before", "days", "evidence"):
        table.add_column(col)
    for c in changes:
        table.add_row(escape(c.patient), c.report.date or "", escape(c.report.report_id),
                      f"{escape(c.before.report_id)} ({c.before.date}, {c.before.status(c.finding)})",
                      str(c.days), escape(c.report.evidence.get(c.finding, "")))
    console.print(table)


@command(app, "followups", example=["radsift followups my-index --overdue",
                                    "radsift followups my-index --overdue --as-of 2026-01-01 --json"])
def followups_cmd(
    index_dir: IndexArg,
    overdue: Annotated[bool, typer.Option("--overdue", help="Only recommendations due and not done.")] = False,
    as_of: Annotated[Optional[str], typer.Option(
        "--as-of", metavar="DATE", help="Judge due and done as of this day (default: today).")] = None,
    as_json: JsonOpt = False, audit_log: SearchAuditOpt = None, no_audit: NoAuditOpt = False,
) -> None:
    """Follow-up recommendations in the reports, when each is due, and whether a later exam of the patient
    came (overdue: due, and no later report of that patient since)."""
    audit = _search_audit(index_dir, audit_log, no_audit)
    found = followups(index_dir, as_of=as_of, overdue_only=overdue)
    _audit_search(audit, "followups", "overdue" if overdue else "all", [r.report_id for r in found],
                  params={"as_of": as_of})
    if as_json:
        for r in found:
            typer.echo(json.dumps(r.to_dict(), ensure_ascii=False))
        return
    title = f"{len(found)} {'overdue ' if overdue else ''}follow-up recommendations"
    table = Table(title=title)
    for col in ("due", "patient", "report", "date", "exam", "status", "recommendation"):
        table.add_column(col)
    for r in found:
        status = "[bold red]overdue[/]" if r.overdue else (f"done ({escape(r.done_by)})" if r.done_by else "open")
        table.add_row(r.due or "(no interval)", escape(r.patient or ""), escape(r.report_id), r.date or "",
                      r.modality or "", status, escape(r.sentence))
    console.print(table)
