"""The model card (``README.md``) and ``radsift_training.json`` written beside a trained model."""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

TRAINING_JSON = "radsift_training.json"

_RECIPE_TEXT = {
    "lexicon-triplet": (
        "Shi et al. (NAACL 2022): (query, matched sentence, unmatched sentence) triplets from the weak "
        "labels of the lexicon labeler; cosine-distance triplet loss; negatives chosen at random (RS) or as "
        "the hardest in a (mega-)batch (HS/MB); every batch holds the opposite-negation sentences of its queries."
    ),
    "lexicon-mnrl": (
        "The weak-label examples of Shi et al. with the multiple-negatives ranking loss: in-batch sentences "
        "(opposite-negation partners included) plus one mined hard negative per query."
    ),
    "findings-impression": (
        "RadSearch: each report's findings section paired with its own impression, in-batch negatives "
        "(multiple-negatives ranking loss); no batch holds two identical impressions."
    ),
    "combined": (
        "Alternating batches of the weak-label recipe (in-batch ranking with opposite-negation partners, "
        "plus the triplet margin against the hardest unmatched sentence of a mega-batch, or the loss set in "
        "the configuration; with query_margin > 0 each sentence is also held closer to its own query phrasing "
        "than to the opposite-negation phrasing) and of findings-impression pairs (RadSearch)."
    ),
    "entity-aspect": (
        "CAPR (Grundmann, Arnold & Löser): notes split into passages by their headings, entities found by "
        "dictionary NER, self-supervised (entity, aspect = normalised heading) queries with the passage as "
        "positive, one hard negative from the same note, listwise in-batch cross-entropy; MedQuAD training "
        "documents outside the CDV test split add (focus entity, question type) queries."
    ),
    "rerank": (
        "A cross-encoder (one logit) built from the base MiniLM weights with a fresh head, trained with "
        "binary cross-entropy on weak-label (query, sentence) pairs whose negatives are mined by a bi-encoder."
    ),
}


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def evaluation_table(evaluation: dict[str, dict[str, Any]]) -> list[str]:
    """Markdown rows: one line per system (trained, untrained, BM25) of the held-out figures."""
    cols = [("map_yes", "mAP positive"), ("map_no", "mAP negative"), ("map_all", "mAP all"),
            ("separation", "separation"), ("fi_top5", "findings→impression top-5")]
    lines = ["| system | " + " | ".join(c[1] for c in cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for name, figures in evaluation.items():
        if isinstance(figures, dict) and any(k in figures for k, _ in cols):
            lines.append(f"| {name} | " + " | ".join(_fmt(figures.get(k)) for k, _ in cols) + " |")
    return lines


def write_model_card(out: Path, info: dict[str, Any]) -> list[Path]:
    """Write ``README.md`` and :data:`TRAINING_JSON` into ``out``.

    Args:
        out: The model folder.
        info: ``config`` (dict), ``data`` (statistics), ``training`` (loop statistics),
            ``evaluation`` (system -> figures, optional), ``base_model``, ``kind``
            (``bi-encoder`` or ``cross-encoder``), ``versions``, ``seconds``.
    """
    import sentence_transformers
    import torch

    info = dict(info)
    info.setdefault("versions", {
        "radsift": _radsift_version(),
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
    })
    json_path = out / TRAINING_JSON
    json_path.write_text(json.dumps(info, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")

    config = info["config"]
    recipe = config["recipe"]
    kind = info.get("kind", "bi-encoder")
    data = info.get("data", {})
    training = info.get("training", {})
    lines = [
        "---",
        "library_name: sentence-transformers",
        "pipeline_tag: " + ("text-ranking" if kind == "cross-encoder" else "sentence-similarity"),
        "tags: [radsift, radiology, negation, " + ("cross-encoder" if kind == "cross-encoder" else "sentence-transformers") + "]",
        "---",
        "",
        f"# radsift {kind}: recipe `{recipe}`",
        "",
        _RECIPE_TEXT.get(recipe, ""),
        "",
        f"Base model: `{info.get('base_model')}`. Trained without human labels by `radsift train` "
        f"({training.get('steps')} steps in {training.get('seconds')} s"
        + (", stopped early by the time limit" if training.get("stopped_early") else "") + ").",
        "",
        "## Use",
        "",
    ]
    if kind == "cross-encoder":
        lines += ["```python", "from radsift import Index",
                  f"index = Index.open(INDEX, reranker={str(out)!r})",
                  "hits = index.search(query, k=10, rerank=50)", "```",
                  "", f"or `radsift bench --systems rerank:{out}` to measure it."]
    else:
        lines += ["```", f"radsift index build INDEX CORPUS --model {out}", "```",
                  "", "or `radsift.models.Encoder.load(PATH)` in Python."]
    lines += ["", "## Data", "", "| statistic | value |", "|---|---|"]
    for key, value in data.items():
        if isinstance(value, list):
            value = ", ".join(map(str, value)) or "–"
        lines.append(f"| {key} | {value} |")
    evaluation = info.get("evaluation") or {}
    if evaluation:
        lines += ["", "## Held-out evaluation", "",
                  f"On the {data.get('heldout_reports')} held-out reports (split by report id, "
                  f"fraction {config.get('heldout_fraction')}, seed {config.get('heldout_seed')})"
                  + (f", queries of the unseen findings fold {config.get('split_by_finding')}"
                     if config.get("split_by_finding") is not None else "")
                  + ". Sentence retrieval ranks the unique held-out sentences for each weak-label query; "
                  "separation is the mean of cos(query, sentence) − cos(opposite query, sentence) over labeled "
                  "entries; the top-5 rate counts held-out findings whose own impression is among the 5 nearest "
                  "impressions. These are radsift train's quick figures; `radsift bench` gives the tested table.",
                  ""]
        if kind == "cross-encoder":
            lines += ["| ranking | mAP positive | mAP negative | mAP all |", "|---|---|---|---|"]
            for name in ("first_stage", "reranked", "cross_encoder_only"):
                f = evaluation.get(name, {})
                lines.append(f"| {name} | {_fmt(f.get('map_yes'))} | {_fmt(f.get('map_no'))} | {_fmt(f.get('map_all'))} |")
            if evaluation.get("weight") is not None:
                lines += ["", f"`reranked` orders the first stage's top {evaluation.get('depth')} by the fused score "
                          f"(cross-encoder weight {evaluation['weight']}), as `radsift search --rerank` does; "
                          "`cross_encoder_only` by the cross-encoder alone."]
        else:
            lines += evaluation_table(evaluation)
    curve = training.get("loss_curve") or {}
    if curve:
        lines += ["", "## Training loss", ""]
        for name, values in curve.items():
            lines.append(f"- {name}: " + " → ".join(f"{v:.3f}" for v in values))
    lines += ["", "## Configuration", "", "```yaml"]
    import yaml

    lines += yaml.safe_dump(config, sort_keys=False).rstrip().splitlines()
    lines += ["```", "", f"Everything above is also in `{TRAINING_JSON}`.", ""]
    readme = out / "README.md"
    readme.write_text("\n".join(lines), encoding="utf-8")
    return [readme, json_path]


def _radsift_version() -> str:
    try:
        from importlib.metadata import version

        return version("radsift")
    except Exception:  # pragma: no cover - running from a source tree
        return "unknown"
