"""``radsift ask`` and ``draft-impression``: answers and impression drafts from the most similar reports
(:mod:`radsift.rag`), every LLM call written to an audit log, and each answer's question and sources
(an ``ask`` line, as the web service writes; a draft's findings as their size and SHA-256)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from radsift.cli.help import command, top_level_commands
from radsift.cli.options import (AllowRemoteOpt, IndexArg, LlmModelOpt, LlmProxyOpt, LlmTokenOpt, LlmUrlOpt, ModeOpt,
                                 ModelOpt, ThreadsOpt, WhereOpt)
from radsift.cli.output import console, err_console
from radsift.errors import ConfigError
from radsift.rag import ask, draft_impression
from radsift.search.query import whole_number
from radsift.rag.llm import AuditedLLM, make_llm
from radsift.search import Index
from radsift.serve.audit import id_summary, index_audit_log, local_user, text_summary

#: This module's top-level commands (merged into ``radsift`` by :mod:`radsift.cli`).
app = top_level_commands()

MaxTokensOpt = Annotated[int, typer.Option(
    "--max-tokens", metavar="N", rich_help_panel="LLM back-end", help="New tokens the answer may have at most.")]
LlmTimeoutOpt = Annotated[float, typer.Option(
    "--llm-timeout", metavar="SECONDS", rich_help_panel="LLM back-end",
    help="Seconds the generation may take (then a partial answer, or an error when nothing came).")]
MaxPromptOpt = Annotated[Optional[int], typer.Option(
    "--max-prompt-tokens", metavar="N", rich_help_panel="LLM back-end",
    help="Cap the prompt below the model's context (reports are cut to fit, and the answer says so).")]
LlmAuditOpt = Annotated[Optional[Path], typer.Option(
    "--audit-log", metavar="FILE", help="Audit trail of the LLM calls (sizes, outcome, endpoint, proxy and the "
                                        "address contacted, no text; default INDEX_DIR/audit/llm.jsonl).")]
# Read as text and checked by the input policy's rule for whole numbers: "-k 1e9" is one line of error.
AskKOpt = Annotated[str, typer.Option("-k", "--k", metavar="N", help="Reports in the prompt (1 to 20).")]


def _prompt_k(text: str) -> int:
    """``-k`` of ask and draft-impression: a whole number from 1 to 20 (one error line otherwise)."""
    value = int(text) if str(text).strip().isdigit() else text
    return whole_number("k", value, 1, 20, "reports")


def _cli_llm(index_dir: Path, audit_log: Optional[Path], purpose: str, url, model, token_file, allow_remote, threads,
             proxy=None):
    """The back-end of the options, every call written to the audit log."""
    audit = index_audit_log(index_dir, "llm.jsonl", audit_log)
    llm = make_llm(url, model, token_file=token_file, allow_remote=allow_remote, threads=threads, proxy=proxy)
    return AuditedLLM(llm, audit, client="cli", purpose=purpose)


def _audit_answer(llm: AuditedLLM, task: str, query, answer, **params) -> None:
    """The ``ask`` line the web service writes too: the question (a draft's findings as size and hash: they
    are report text) and the reports in the prompt, before anything is printed."""
    llm.audit.write("ask", client="cli", token_id=None, user=local_user(), query=query,
                    params={"task": task, **params}, status=answer.status,
                    **id_summary([s["report_id"] for s in answer.sources], "result_ids"))


def _print_answer(answer, show_prompt: bool) -> None:
    console.print(escape(answer.text) or "[dim](no text)[/]")
    cited = {c["n"] for c in answer.citations}
    if answer.sources:
        console.print("\n[bold]Reports in the prompt[/] (* cited):")
        for s in answer.sources:
            mark = "*" if s["n"] in cited else " "
            cut = " (cut to fit)" if s["truncated"] else " (left out: no room)" if s["dropped"] else ""
            console.print(f" {mark} [{s['n']}] {escape(s['report_id'])}{cut}", highlight=False)
    for note in answer.notes:
        err_console.print(f"note: {note}", highlight=False)
    console.print(f"[dim]{answer.backend} · {escape(answer.model)} · {answer.status} · {answer.seconds:.1f} s[/]",
                  highlight=False)
    if show_prompt:
        console.print("\n[bold]Prompt[/]")
        console.print(escape(answer.prompt), highlight=False)


@command(app, "ask", example=['radsift ask my-index "enlarged cardiac silhouette with vascular congestion"',
                              'radsift ask my-index "what does a deep sulcus sign mean?" --no-retrieval',
                              'radsift ask my-index "right lower lobe opacity" --llm-url http://127.0.0.1:8080/v1'])
def ask_cmd(
    index_dir: IndexArg,
    question: Annotated[str, typer.Argument(metavar="QUESTION", help="A finding description or a question.")],
    k: AskKOpt = "3",
    no_retrieval: Annotated[bool, typer.Option("--no-retrieval", help="The model alone, no reports (the baseline).")] = False,
    target: Annotated[str, typer.Option(
        "--target", metavar="SECTION", help="auto (impressions for a findings description, whole reports for a "
                                            "question), report, or a section of the index.")] = "auto",
    mode: ModeOpt = "hybrid", where: WhereOpt = None, model: ModelOpt = None, threads: ThreadsOpt = None,
    llm_url: LlmUrlOpt = None, llm_model: LlmModelOpt = None, llm_token_file: LlmTokenOpt = None,
    llm_proxy: LlmProxyOpt = None, allow_remote_llm: AllowRemoteOpt = False, max_tokens: MaxTokensOpt = 256,
    llm_timeout: LlmTimeoutOpt = 120.0,
    max_prompt_tokens: MaxPromptOpt = None, audit_log: LlmAuditOpt = None,
    show_prompt: Annotated[bool, typer.Option("--show-prompt", help="Also print the exact prompt.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the answer, citations, sources and prompt as JSON.")] = False,
) -> None:
    """Answer a finding description or question from the most similar reports, citing them ([1], [2])."""
    k = _prompt_k(k)
    index = Index.open(index_dir, model=model, threads=threads)
    llm = _cli_llm(index_dir, audit_log, "ask", llm_url, llm_model, llm_token_file, allow_remote_llm, threads,
                   llm_proxy)
    answer = ask(index, question, llm=llm, k=k, retrieval=not no_retrieval, target=target, mode=mode, where=where,
                 max_tokens=max_tokens, timeout=llm_timeout, max_prompt_tokens=max_prompt_tokens)
    _audit_answer(llm, "ask", answer.question, answer, k=k, retrieval=not no_retrieval, target=target, mode=mode)
    if as_json:
        typer.echo(json.dumps(answer.to_dict(), ensure_ascii=False))
    else:
        _print_answer(answer, show_prompt)


def _names_a_file(findings: str) -> bool:
    """Whether ``--findings`` names a file (else it is the findings text itself: a name too long or otherwise
    impossible for this system is text, not an error)."""
    if len(findings) >= 4096 or "\n" in findings:
        return False
    try:
        return Path(findings).is_file()
    except (OSError, ValueError):  # ENAMETOOLONG, a NUL byte
        return False


@command(app, "draft-impression", example=['radsift draft-impression my-index --findings "Small left effusion."',
                                           "radsift draft-impression my-index --findings findings.txt --json"])
def draft_impression_cmd(
    index_dir: IndexArg,
    findings: Annotated[str, typer.Option("--findings", metavar="TEXT|FILE", help="The findings, or a file holding them.")],
    k: AskKOpt = "3",
    no_retrieval: Annotated[bool, typer.Option("--no-retrieval", help="The model alone, no prior impressions.")] = False,
    mode: ModeOpt = "hybrid", where: WhereOpt = None, model: ModelOpt = None, threads: ThreadsOpt = None,
    llm_url: LlmUrlOpt = None, llm_model: LlmModelOpt = None, llm_token_file: LlmTokenOpt = None,
    llm_proxy: LlmProxyOpt = None, allow_remote_llm: AllowRemoteOpt = False, max_tokens: MaxTokensOpt = 128,
    llm_timeout: LlmTimeoutOpt = 120.0,
    max_prompt_tokens: MaxPromptOpt = None, audit_log: LlmAuditOpt = None,
    show_prompt: Annotated[bool, typer.Option("--show-prompt", help="Also print the exact prompt.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the draft, the baseline and the prompt as JSON.")] = False,
) -> None:
    """Draft an impression from findings and the impressions of the most similar prior reports, beside the
    retrieval-only baseline (the nearest report's impression, unchanged)."""
    k = _prompt_k(k)
    text = findings
    if _names_a_file(findings):
        try:
            text = Path(findings).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"--findings {findings}: cannot read it as UTF-8 text ({exc})") from None
    index = Index.open(index_dir, model=model, threads=threads)
    llm = _cli_llm(index_dir, audit_log, "draft", llm_url, llm_model, llm_token_file, allow_remote_llm, threads,
                   llm_proxy)
    draft = draft_impression(index, text, llm=llm, k=k, retrieval=not no_retrieval, mode=mode, where=where,
                             max_tokens=max_tokens, timeout=llm_timeout, max_prompt_tokens=max_prompt_tokens)
    _audit_answer(llm, "draft", text_summary(draft.draft.question), draft.draft, k=k, retrieval=not no_retrieval,
                  mode=mode)
    if as_json:
        typer.echo(json.dumps(draft.to_dict(), ensure_ascii=False))
        return
    console.print("[bold]Drafted impression[/]")
    _print_answer(draft.draft, show_prompt)
    if draft.baseline is not None:
        console.print(f"\n[bold]Retrieval only[/] (the impression of report {escape(draft.baseline['report_id'])}):")
        console.print(escape(draft.baseline["impression"]), highlight=False)
