"""Write the packaged lexicon's link examples from the development halves of the description batches.

Run:  .venv/bin/python benchmarks/link_examples.py [--check]

Each description batch (``benchmarks/data/description_queries*.tsv``) holds queries written for a concept by a
helper shown only the lexicon's names, as a radiologist, a clinician or a layperson would type them, split into a
development and a test half by a hash of the query. The development rows that describe a concept of the packaged
lexicon (not ``none``) become its link examples (``src/radsift/labels/data/chest_xray_examples.tsv``): a query worded
like one links to its concept as a description does (:mod:`radsift.search.concepts`). No test row is ever written
there, so the test splits stay held out; ``bench_links.py`` measures each development batch with its own rows taken
out of the examples (leave one batch out) and reports the test splits also without the development half of the same
batch (a writer's other queries). The examples written for linking alone (``benchmarks/data/link_examples_written_*.tsv``:
three per concept by each of two helpers shown only the lexicon's names and synonyms, never the batches) join them
whole; one that words a test row of a batch would be left out (none does). ``--check`` exits 1 when the file is not
what this script writes.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_links import batches  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "radsift" / "labels" / "data" / "chest_xray_examples.tsv"
HEADER = """\
# Link examples of the packaged chest X-ray lexicon (radsift.labels.lexicon, "examples"): queries written for a
# concept by helpers shown only the lexicon's names (benchmarks/data/description_queries*.tsv), the development
# half of each batch only, never a test row; then the examples written for linking alone
# (benchmarks/data/link_examples_written_*.tsv). Written by benchmarks/link_examples.py; do not edit by hand.
# source: the query's id in its batch, or the written file and line.
concept\texample\tsource
"""


WRITTEN = sorted((ROOT / "benchmarks" / "data").glob("link_examples_written_*.tsv"))


def rows() -> list[tuple[str, str, str]]:
    """(concept, example, source id) of every development row that describes a packaged concept, in batch order, then
    of every written example (source ``<file stem>:<line>``)."""
    from radsift.labels.lexicon import load_lexicon

    known = set(load_lexicon().names)
    tests = {" ".join(q["query"].split()).casefold() for qs in batches(["test"]).values() for q in qs
             if q["split"] == "test"}
    found = [(q["finding"], " ".join(q["query"].split()), q["qid"]) for qs in batches(["dev"]).values() for q in qs]
    for path in WRITTEN:
        with path.open(encoding="utf-8", newline="") as fh:
            found += [(r["concept"], " ".join(r["example"].split()), f"{path.stem}:{n}")
                      for n, r in enumerate(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE), 2)]
    out, seen = [], set()
    for concept, text, source in found:
        key = (concept, text.casefold())
        if concept in known and key not in seen and text.casefold() not in tests:
            seen.add(key)
            out.append((concept, text, source))
    return out


def render() -> str:
    return HEADER + "".join(f"{c}\t{t}\t{s}\n" for c, t, s in rows())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the file differs from what this writes")
    args = parser.parse_args()
    text = render()
    if args.check:
        same = OUT.exists() and OUT.read_text(encoding="utf-8") == text
        print("up to date" if same else f"{OUT} differs from what {Path(__file__).name} writes")
        return 0 if same else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}: {text.count(chr(10)) - HEADER.count(chr(10))} examples")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
