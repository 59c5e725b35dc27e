"""``radsift label`` and ``radsift train``: weak labels of a corpus, and a retriever (or reranker) trained
on a corpus without human labels (:mod:`radsift.workflows.train`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from radsift.cli.help import OPENI, command, top_level_commands
from radsift.cli.options import CorpusOpt, ForceOpt, ThreadsOpt, check_out, read_reports, reader_flags
from radsift.cli.output import console, err_console, report_read_stats, say
from radsift.errors import ConfigError
from radsift.labels.display import explain as explain_text, stats_tables
from radsift.models.training import load_config
from radsift.workflows.train import train_model

#: This module's top-level commands (merged into ``radsift`` by :mod:`radsift.cli`).
app = top_level_commands()


# ---------------------------------------------------------------------------------------------
# label: weak labels and the query dictionary (radsift.labels)
# ---------------------------------------------------------------------------------------------
@command(app, "label", example=[
    f"radsift label reports.csv {OPENI} --out labels",
    'radsift label --explain "No effusion, but a small right pneumothorax."',
])
@reader_flags()
def label_cmd(
    corpus: Annotated[Optional[list[Path]], typer.Argument(
        metavar="CORPUS", help="Corpus files or folders to label.", show_default=False)] = None,
    out: Annotated[Optional[Path], typer.Option("--out", metavar="DIR", help="Output folder for the label exports.")] = None,
    explain: Annotated[Optional[str], typer.Option(
        "--explain", metavar="TEXT",
        help="Label the sentences of TEXT and show each mention, its span, status, cue and rule.")] = None,
    lexicon: Annotated[Optional[Path], typer.Option(
        "--lexicon", metavar="FILE", help="Lexicon YAML (default: packaged chest X-ray).")] = None,
    rules: Annotated[Optional[Path], typer.Option(
        "--rules", metavar="FILE", help="Negation rules YAML (default: packaged).")] = None,
    label_section: Annotated[Optional[list[str]], typer.Option(
        "--label-section", metavar="SECTION",
        help="Sections whose sentences are labeled (repeatable; default findings, impression).")] = None,
    reader: Any = None,
    force: ForceOpt = False,
) -> None:
    """Label report sentences with findings (present / absent / uncertain) and export weak-label queries and qrels."""
    if explain is None and not corpus:
        raise ConfigError("give a CORPUS to label (with --out DIR) or --explain \"SENTENCE\"")
    if corpus and out is None:
        raise ConfigError("--out DIR is required when labeling a corpus")
    if corpus:
        check_out(out, force, folder=True)
    from radsift.labels import Labeler, build_weak_labels  # medspaCy (seconds): only when labeling

    labeler = Labeler(lexicon=lexicon, rules=rules)
    if explain is not None:
        for line in explain_text(labeler, explain):
            console.print(line, highlight=False, soft_wrap=True)
    if corpus:
        reports, stats = read_reports(corpus, reader)
        weak = build_weak_labels(
            reports, labeler, sections=tuple(label_section or ("findings", "impression")), progress=True
        )
        report_read_stats(stats)
        paths = weak.write(out)
        for table in stats_tables(weak.stats()):
            console.print(table)
        console.print(f"wrote {', '.join(p.name for p in paths.values())} to {out}", highlight=False)


# ---------------------------------------------------------------------------------------------
# train: fine-tune a retriever (or a reranker) on a corpus without labels (radsift.models.training)
# ---------------------------------------------------------------------------------------------
@command(app, "train", example=f"radsift train --corpus reports.csv {OPENI} --out models/my-model")
@reader_flags()
def train_cmd(
    corpus: CorpusOpt,
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Folder for the trained model and its model card.")],
    reader: Any = None,
    recipe: Annotated[Optional[str], typer.Option(
        "--recipe", metavar="RECIPE",
        help="combined (default) | lexicon-triplet | lexicon-mnrl | findings-impression | rerank | entity-aspect "
             "(CAPR: passages by entity and aspect; MedQuAD from ../shared/data or --config medquad_dir).")] = None,
    model_type: Annotated[Optional[str], typer.Option(
        "--model-type", metavar="bi|poly|cross", help="entity-aspect: train a bi-encoder (default), a poly-encoder "
        "or a cross-encoder on the same examples.")] = None,
    config: Annotated[Optional[Path], typer.Option(
        "--config", metavar="FILE", help="YAML training configuration (flags override it).")] = None,
    setting: Annotated[Optional[str], typer.Option(
        "--setting", metavar="notes-only|in-collection",
        help="entity-aspect: notes-only (default: the corpus's own notes alone, no MedQuAD text, labels or names; "
             "the zero-shot setting) or in-collection (half of each batch from MedQuAD's own metadata: never "
             "compare it with zero-shot figures).")] = None,
    split_by_finding: Annotated[Optional[int], typer.Option(
        "--split-by-finding", metavar="0|1",
        help="Train only on findings outside this fold of the split by finding.")] = None,
    bi_encoder: Annotated[Optional[str], typer.Option(
        "--bi-encoder", metavar="DIR", help="rerank: bi-encoder folder that mines the negatives (default: the base model).")] = None,
    base_model: Annotated[Optional[str], typer.Option(
        "--base-model", metavar="DIR", help="Model folder to start from (default: packaged all-MiniLM-L6-v2).")] = None,
    max_steps: Annotated[Optional[int], typer.Option("--max-steps", metavar="N", help="Gradient steps.")] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", metavar="N", help="Training seed.")] = None,
    time_limit: Annotated[Optional[float], typer.Option(
        "--time-limit", metavar="MINUTES", help="Stop training after this many minutes.")] = None,
    threads: ThreadsOpt = None,
    evaluate: Annotated[Optional[bool], typer.Option(
        "--eval/--no-eval", help="Evaluate on the held-out reports at the end (figures in the model card).")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", "--force", help="Replace a non-empty --out folder.")] = False,
) -> None:
    """Train a negation-aware retriever from a corpus's own reports (weak labels, no annotators)."""
    cfg = load_config(config, recipe=recipe, model_type=model_type, setting=setting, split_by_finding=split_by_finding, bi_encoder=bi_encoder,
                      base_model=base_model, max_steps=max_steps, seed=seed, time_limit_minutes=time_limit,
                      threads=threads, evaluate=evaluate)
    reports, stats = read_reports(corpus, reader)
    err_console.print(f"recipe {cfg.recipe}: {cfg.max_steps} steps, seed {cfg.seed}", highlight=False)
    result = train_model(reports, cfg, out, overwrite=overwrite, log=say)
    report_read_stats(stats)
    console.print(f"wrote {result.out} ({result.seconds:.0f} s); model card: {result.out / 'README.md'}",
                  highlight=False)
