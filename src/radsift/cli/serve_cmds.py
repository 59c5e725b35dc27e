"""``radsift serve``, ``demo`` and ``demo-corpus``: the search page and JSON API, the main job on the
bundled synthetic corpus (:mod:`radsift.workflows.demo`), and that corpus alone (:mod:`radsift.demo`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from radsift.cli.help import command, top_level_commands
from radsift.cli.options import (AllowRemoteOpt, BackendOpt, ForceOpt, LlmModelOpt, LlmProxyOpt, LlmTokenOpt, LlmUrlOpt,
                                 MilvusUriOpt, ModelOpt, RerankerOpt, SavedDirOpt, check_out)
from radsift.cli.output import console
from radsift.demo import write_demo_corpus
from radsift.workflows.demo import run_demo

#: This module's top-level commands (merged into ``radsift`` by :mod:`radsift.cli`).
app = top_level_commands()


# ---------------------------------------------------------------------------------------------
# serve: the JSON API and the search page (radsift.serve)
# ---------------------------------------------------------------------------------------------
@command(app, "serve", example=["radsift serve my-index",
                                "radsift serve my-index --host 0.0.0.0 --token-file token.txt --audit-log audit.jsonl"])
def serve_cmd(
    index_dir: Annotated[Path, typer.Argument(metavar="INDEX_DIR", help="Index directory (opened read-only).")],
    host: Annotated[str, typer.Option(
        "--host", metavar="ADDRESS", help="Address to listen on; anything but loopback needs a token.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", metavar="PORT", help="TCP port (0 picks a free one).")] = 8000,
    token_file: Annotated[Optional[Path], typer.Option(
        "--token-file", metavar="FILE", help="File holding the API token (else $RADSIFT_TOKEN).")] = None,
    audit_log: Annotated[Optional[Path], typer.Option(
        "--audit-log", metavar="FILE", help="Append every query, report view and export to this JSON-lines file.")] = None,
    model: ModelOpt = None, reranker: RerankerOpt = None, saved_dir: SavedDirOpt = None, backend: BackendOpt = "auto",
    milvus_uri: MilvusUriOpt = None,
    header_timeout: Annotated[float, typer.Option(
        "--header-timeout", metavar="SECONDS", help="Close a connection that has not sent a whole request line "
        "and headers this long after connecting (or after its previous answer).")] = 10.0,
    keepalive_timeout: Annotated[float, typer.Option(
        "--keepalive-timeout", metavar="SECONDS", help="Close an idle keep-alive connection after this long.")] = 5.0,
    max_connections: Annotated[int, typer.Option(
        "--max-connections", metavar="N", help="Open connections served at once; past them a request gets 503.")] = 64,
    max_body: Annotated[int, typer.Option(
        "--max-body", metavar="BYTES", help="Largest request body; a larger one gets 413 before it is read "
        "(after the token check: a request without the token gets 401 before its body is read).")] = 1024 * 1024,
    body_timeout: Annotated[float, typer.Option(
        "--body-timeout", metavar="SECONDS", help="A request body must arrive within this long after its "
        "head, or the request gets 408 and its connection is closed.")] = 10.0,
    llm_url: LlmUrlOpt = None, llm_model: LlmModelOpt = None, llm_token_file: LlmTokenOpt = None,
    allow_remote_llm: AllowRemoteOpt = False, llm_proxy: LlmProxyOpt = None,
    passage_first_stage: Annotated[Optional[Path], typer.Option(
        "--passage-first-stage", metavar="DIR", help="A poly-encoder folder that scores every passage of "
        "/api/passages in the place of the index's bi-encoder (its codes encoded, or read from INDEX_DIR/cache/poly/, "
        "before the server listens).")] = None,
    workers: Annotated[int, typer.Option(
        "--workers", metavar="N", help="Worker processes, each with the models loaded, answering on one port "
        "(use every core; memory: one model per worker, the index's files shared).")] = 1,
    in_process: Annotated[bool, typer.Option(
        "--in-process", help="Serve in this process, with no supervising parent (for a debugger or profiler): "
        "by default a worker killed by a crash (a file of the index truncated under it) is started again.")] = False,
) -> None:
    """Serve the search page and JSON API (127.0.0.1 unless a token is set; Ctrl-C stops)."""
    from radsift.serve import run_server  # uvicorn and fastapi: loaded only to serve
    from radsift.serve.server import ServerLimits

    limits = ServerLimits(header_timeout=header_timeout, keepalive_timeout=keepalive_timeout,
                          max_connections=max_connections, max_body=max_body, body_timeout=body_timeout)
    if milvus_uri:  # the server opens its Index itself: the engine reads the override from the environment
        os.environ["RADSIFT_MILVUS_URI"] = milvus_uri
    run_server(index_dir, host=host, port=port, token_file=token_file, audit_log=audit_log, model=model,
               reranker=reranker, console=console, limits=limits, saved_dir=saved_dir, backend=backend,
               passage_first_stage=passage_first_stage, workers=workers, in_process=in_process, llm={"url": llm_url, "model": llm_model, "token_file": llm_token_file, "allow_remote": allow_remote_llm, "proxy": llm_proxy})


# ---------------------------------------------------------------------------------------------
# demo, demo-corpus: the bundled synthetic corpus (radsift.demo)
# ---------------------------------------------------------------------------------------------
@command(app, "demo", example=["radsift demo --out demo-out", "radsift demo --out demo-out --serve"])
def demo_cmd(
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Folder for the demo corpus and index.")] = Path("demo-out"),
    n: Annotated[int, typer.Option("--n", metavar="N", help="Number of synthetic reports.")] = 2000,
    serve: Annotated[bool, typer.Option("--serve/--no-serve", help="Start the web page at the end.")] = False,
    port: Annotated[int, typer.Option("--port", metavar="PORT", help="TCP port of the web page.")] = 8000,
    adapt_steps: Annotated[int, typer.Option(
        "--adapt-steps", metavar="N", help="Training steps of the adapt step (0 skips it).")] = 40,
    force: ForceOpt = False,
) -> None:
    """The main job on the bundled demo corpus: generate, index, search, adapt the model (and serve)."""
    check_out(out, force, folder=True)
    run_demo(out, n=n, serve=serve, port=port, adapt_steps=adapt_steps, console=console)


@command(app, "demo-corpus", example="radsift demo-corpus --out demo-corpus --n 500")
def demo_corpus_cmd(
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Folder to write the corpus files into.")],
    n: Annotated[int, typer.Option("--n", metavar="N", help="Number of synthetic reports.")] = 2000,
    seed: Annotated[int, typer.Option("--seed", metavar="N", help="Random seed (same seed, same files).")] = 7,
    force: ForceOpt = False,
) -> None:
    """Write synthetic chest X-ray reports (CSV and JSONL), their ground truth, queries and qrels."""
    check_out(out, force, folder=True)
    files = write_demo_corpus(out, n=n, seed=seed)
    for path in files.paths:
        console.print(str(path), highlight=False)
    share = files.n_normal / files.n_reports if files.n_reports else 0.0
    console.print(
        f"{files.n_reports} reports ({files.n_normal} normal, {share:.0%}), "
        f"{files.n_queries} queries, {files.n_judgments} relevance judgments",
        highlight=False,
    )
