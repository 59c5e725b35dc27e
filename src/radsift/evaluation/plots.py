"""PNG plots of a bench run (matplotlib, Agg backend: no display needed).

- ``pr_sentences.png``: interpolated precision-recall curves per system, for all, positive
  and negative weak-label queries (and ``pr_cross_collection.png``, ``pr_free_text.png``);
- ``finding_ap.png``: AP of the positive and the negative query of each finding, per system;
- ``separation.png``: histogram of cos(matched) − cos(opposite) per dense system;
- ``match_rates.png``: findings-to-impression top-k match rates with Wilson intervals.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from radsift.evaluation.protocols.base import RECALL_LEVELS

# Findings shown in the per-finding AP plot (those with the most labeled entries).
MAX_FINDINGS = 25
_POS, _NEG = "#1f77b4", "#ff7f0e"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "axes.spines.top": False,
                         "axes.spines.right": False, "figure.dpi": 110})
    return plt


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def plot_pr_curves(curves: Mapping[str, Mapping[str, list[float]]], path: Path, title: str) -> Path:
    """One panel per query group (``all``, ``positive``, ``negative`` when present), a line per system."""
    plt = _pyplot()
    groups = [g for g in ("all", "positive", "negative") if any(g in c for c in curves.values())]
    fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.9), squeeze=False, sharey=True)
    for ax, group in zip(axes[0], groups):
        for name, c in curves.items():
            if group in c and not np.isnan(c[group]).all():
                ax.plot(RECALL_LEVELS, c[group], marker="o", markersize=3, linewidth=1.8, label=name)
        ax.set_title(f"{group} queries")
        ax.set_xlabel("recall")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("interpolated precision")
    axes[0][0].legend(loc="upper right", fontsize=9, frameon=False)
    fig.suptitle(title)
    return _save(fig, path)


def plot_finding_ap(data: Mapping[str, Any], path: Path, max_findings: int = MAX_FINDINGS) -> Path | None:
    """Horizontal bars: per finding (with both a positive and a negative query), AP of each, per system."""
    plt = _pyplot()
    systems = data["systems"]
    first = next(iter(systems.values()))
    keep = [i for i, _ in enumerate(data["findings"])
            if first["positive"][i] is not None and first["negative"][i] is not None][:max_findings]
    if not keep:
        return None
    findings = [data["findings"][i] for i in keep]
    n = len(findings)
    fig, axes = plt.subplots(1, len(systems), figsize=(3.6 * len(systems) + 1.8, 0.3 * n + 1.6),
                             squeeze=False, sharey=True)
    y = np.arange(n)
    for ax, (name, s) in zip(axes[0], systems.items()):
        pos = [s["positive"][i] for i in keep]
        neg = [s["negative"][i] for i in keep]
        ax.barh(y - 0.2, pos, height=0.4, color=_POS, label="positive query (X)")
        ax.barh(y + 0.2, neg, height=0.4, color=_NEG, label="negative query (no X)")
        ax.set_title(name)
        ax.set_xlim(0, 1)
        ax.set_xlabel("AP")
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks(y)
    axes[0][0].set_yticklabels(findings)
    axes[0][0].invert_yaxis()
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, frameon=False)
    fig.suptitle(f"AP per finding ({n} findings with both polarities, most labeled first)")
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_separation(hist: Mapping[str, Mapping[str, np.ndarray]], path: Path) -> Path | None:
    """Overlaid histograms of the separation per dense system, a line at 0."""
    if not hist:
        return None
    plt = _pyplot()
    values = np.concatenate([h["all"] for h in hist.values()])
    lo, hi = float(np.quantile(values, 0.002)), float(np.quantile(values, 0.998))
    span = max(hi - lo, 1e-3)
    bins = np.linspace(lo - 0.05 * span, hi + 0.05 * span, 60)
    fig, ax = plt.subplots(figsize=(7.2, 4.0))
    for name, h in hist.items():
        d = h["all"]
        ax.hist(np.clip(d, bins[0], bins[-1]), bins=bins, histtype="stepfilled", alpha=0.35,
                label=f"{name}: {d.mean():+.3f} ± {d.std(ddof=1) if d.size > 1 else 0:.3f}")
        ax.hist(np.clip(d, bins[0], bins[-1]), bins=bins, histtype="step", linewidth=1.2, color="black", alpha=0.25)
    ax.axvline(0, color="black", linewidth=1, linestyle="--")
    ax.set_xlabel("cos(matched query, sentence) − cos(opposite query, sentence)")
    ax.set_ylabel("labeled entries")
    ax.set_title("Embedding separation: right of 0 = closer to the matching query")
    ax.legend(frameon=False, fontsize=9)
    return _save(fig, path)


def plot_match_rates(rates: Mapping[str, Mapping[int, Mapping[str, float]]], path: Path) -> Path:
    """Grouped bars: top-k match rate per system with Wilson 95% error bars."""
    plt = _pyplot()
    names = list(rates)
    ks = sorted(next(iter(rates.values())))
    width = 0.8 / max(1, len(names))
    x = np.arange(len(ks))
    fig, ax = plt.subplots(figsize=(1.6 * len(ks) + 1.2 * len(names) + 2.0, 3.9))
    for i, name in enumerate(names):
        r = np.array([rates[name][k]["rate"] for k in ks])
        lo = r - np.array([rates[name][k]["low"] for k in ks])
        hi = np.array([rates[name][k]["high"] for k in ks]) - r
        bars = ax.bar(x + (i - (len(names) - 1) / 2) * width, r, width * 0.92, yerr=[lo, hi], capsize=3, label=name)
        for rect, value, top in zip(bars, r, r + hi):
            # Above the error bar, so short bars stay readable.
            ax.annotate(f"{100 * value:.0f}%", (rect.get_x() + rect.get_width() / 2, top + 0.015), ha="center",
                        va="bottom", fontsize=8)
    ax.set_xticks(x)
    ax.set_xticklabels([f"top-{k}" for k in ks])
    ax.set_ylim(0, 1.1)  # room for the labels above a bar near 100%
    ax.set_yticks(np.linspace(0, 1, 6))
    ax.set_ylabel("findings matched to own impression")
    ax.set_title("Findings → impression on held-out reports (Wilson 95% CI)")
    ax.legend(frameon=False, fontsize=9, loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def write_plots(protocols, out_dir: Path) -> dict[str, list[Path]]:
    """Draw every plot the protocol results have data for.

    Returns:
        Protocol key -> the PNG files drawn for it (paths inside ``out_dir``).
    """
    out_dir = Path(out_dir)
    drawn: dict[str, list[Path]] = {}
    for p in protocols:
        if p.skipped or not p.plots:
            continue
        files: list[Path] = []
        if p.key == "shi_sentence_retrieval":
            files.append(plot_pr_curves(p.plots["pr"], out_dir / "pr_sentences.png",
                                        "Sentence retrieval (weak-label queries): precision-recall"))
            f = plot_finding_ap(p.plots["finding_ap"], out_dir / "finding_ap.png")
            if f:
                files.append(f)
        elif p.key == "cross_collection":
            files.append(plot_pr_curves(p.plots["pr"], out_dir / "pr_cross_collection.png",
                                        "Cross-collection sentence retrieval: precision-recall"))
        elif p.key == "embedding_separation":
            f = plot_separation(p.plots["separation"], out_dir / "separation.png")
            if f:
                files.append(f)
        elif p.key == "findings_to_impression":
            files.append(plot_match_rates(p.plots["match_rates"], out_dir / "match_rates.png"))
        elif p.key == "free_text_queries":
            files.append(plot_pr_curves(p.plots["pr"], out_dir / "pr_free_text.png",
                                        "Free-text queries: precision-recall (report level)"))
        if files:
            drawn[p.key] = files
    return drawn
