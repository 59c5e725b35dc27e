"""Plot the development curves of the accelerator runs of issue 31 (``benchmarks/capr_gpu.py``).

Reads the ``results.json`` files the runs wrote (``docs/runs/capr-h100-2026-11-26/``) and draws, per model
type, (entity, aspect) R@1 on the 600 development-note queries (BM25 top 64) against the training step.

Usage::

    python benchmarks/capr_curves.py docs/runs/capr-h100-2026-11-26 docs/img/capr-dev-curves.png
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", type=Path)
    ap.add_argument("out", type=Path)
    args = ap.parse_args()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for path in sorted(args.runs.glob("run-*-results.json")):
        run = path.name.split("-")[1].upper()
        curves = json.loads(path.read_text(encoding="utf-8")).get("curves", {})
        for tag, points in curves.items():
            if not points or "in-collection" in tag:
                continue
            ax.plot([p["step"] for p in points], [p["R@1"] for p in points], marker="o", ms=3,
                    label=f"run {run}: {tag}")
    ax.set_xlabel("training step")
    ax.set_ylabel("R@1, 600 development-note queries (BM25 top 64)")
    ax.set_title("Notes-only entity-aspect training on one H100 (issue 31)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
