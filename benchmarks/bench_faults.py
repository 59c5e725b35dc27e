"""Fault injection, repeated: kills during writes and damaged files, counted. Data lost must be 0.

Run:  .venv/bin/python benchmarks/bench_faults.py [--rounds 20] [--reports 300] [--seed 0]

Each round uses a fresh index of synthetic reports (the demo generator's, hashing encoder: no
model, so it runs in seconds a round) and injects one fault:

* **kills** (SIGKILL through ``RADSIFT_FAULT``) of an ``index add`` at each of the write's three
  points: before the new generation is renamed into place, after it is renamed but before
  ``CURRENT`` moves, and after ``CURRENT`` moved. Afterwards the live generation must verify
  (``--deep``), every report committed before must be there (else it counts as data lost), the
  reports of the killed add must be there exactly when it committed, and the next add must work.
* **damage** of the live generation at random places: truncation, random bytes over a vector file
  (same size), NaN vectors, bytes zeroed in the SQLite file, a deleted file, a manifest ``dim``
  changed. A fault is *detected* when opening the index, ``index verify`` (cheap), ``index verify
  --deep`` or a search raises or reports it naming the damaged file; *undetected* when all of
  them pass and a search still answers (a wrong answer: must be 0).

Prints one markdown table (faults injected, detected and how, undetected, data lost), then the probe
families of issue 32 (``--probes``), each its own script beside this one and runnable alone:

* ``store`` (``faults_store.py``): same-size edits of every small array, a one-bit sweep of
  ``manifest.json``, ``optimize`` on damage, truncation under a live ``radsift serve``, HNSW cache damage;
* ``leaks`` (``faults_leaks.py``): proxy variables and ``--llm-proxy``, names that resolve elsewhere, report
  text in audit lines, exports without their ids audited, failed audit writes, CSV formula cells;
* ``policy`` (``faults_policy.py``): slow and huge unauthenticated bodies, whole heads over the limit, one
  limit table across CLI / Python / HTTP, saved runs on failure, ``--out`` overwrites.

Their table reports tried / detected / wrong answers / leaks / tracebacks / damaged files named; the target
is 0 wrong answers, 0 leaks, 0 tracebacks. The exit status is 1 when any of those, an undetected damage or
a lost report, is not 0.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path

import numpy as np

CHILD = textwrap.dedent("""
    import sys
    from radsift.index import add_to_index
    from radsift.models.hashing import HashingEncoder
    from radsift.records import Report
    index_dir, model, tag = sys.argv[1:4]
    reports = [Report("%s-%d" % (tag, i), {"findings": "Killed add %s, report %d: small pleural effusion." % (tag, i)})
               for i in range(20)]
    add_to_index(index_dir, reports, encoder=HashingEncoder(model), progress=False)
""")
KILL_POINTS = ("segment-written", "before-rename", "before-commit", "after-commit")
DAMAGE = ("truncate", "random-bytes", "nan", "sqlite-zeroed", "deleted-file", "manifest-dim")


def fresh_index(root: Path, n: int, seed: int):
    from radsift.demo import generate_reports
    from radsift.index import build_index
    from radsift.models.hashing import HashingEncoder

    enc = HashingEncoder(root / "model")
    reports = [d.report for d in generate_reports(n=n, seed=seed)]
    build_index(root / "idx", reports, encoder=enc, progress=False)
    return root / "idx", enc, {r.id for r in reports}


def report_ids(index_dir: Path, enc) -> set[str]:
    from radsift.search import Index

    return set(Index.open(index_dir, encoder=enc).store.report_ids)


def kill_round(root: Path, n: int, seed: int, point: str) -> dict:
    from radsift.index import add_to_index
    from radsift.index.verify import verify_index
    from radsift.records import Report

    index_dir, enc, before = fresh_index(root, n, seed)
    script = root / "child.py"
    script.write_text(CHILD)
    rc = subprocess.run([sys.executable, str(script), str(index_dir), str(enc.path), "k"],
                        env={**os.environ, "RADSIFT_FAULT": point}, capture_output=True, timeout=300).returncode
    out = {"killed": rc == -9, "verified": verify_index(index_dir, deep=True) == []}
    ids = report_ids(index_dir, enc)
    out["lost"] = len(before - ids)
    killed = {f"k-{i}" for i in range(20)}
    out["as_committed"] = (killed <= ids) if point == "after-commit" else not (killed & ids)
    add_to_index(index_dir, [Report("after", {"findings": "Cardiomegaly."})], encoder=enc, progress=False)
    after = report_ids(index_dir, enc)
    out["next_add_ok"] = "after" in after and not (before - after)
    return out


def damage(index_dir: Path, kind: str, rng: random.Random) -> Path:
    """Damage the live generation: its manifest, or a file of its (newest) segment."""
    from radsift.index.format import segment_dir
    from radsift.index.generations import read_current

    gen = read_current(index_dir)
    seg = segment_dir(index_dir, json.loads((gen / "manifest.json").read_text())["segments"][-1]["name"])
    vectors = seg / rng.choice(["sentence_vectors.npy", "section_vectors.npy"])
    if kind == "truncate":
        size = vectors.stat().st_size
        os.truncate(vectors, rng.randrange(0, size))
        return vectors
    if kind == "random-bytes":
        data = bytearray(vectors.read_bytes())
        start = rng.randrange(128, max(129, len(data) - 4096))
        data[start:start + 4096] = bytes(rng.randrange(256) for _ in range(min(4096, len(data) - start)))
        vectors.write_bytes(bytes(data))
        return vectors
    if kind == "nan":
        arr = np.load(vectors)
        rows = rng.sample(range(arr.shape[0]), k=max(1, arr.shape[0] // 10))
        arr[rows] = np.nan
        np.save(vectors, arr)
        return vectors
    if kind == "sqlite-zeroed":
        db = seg / "store.sqlite"
        data = bytearray(db.read_bytes())
        start = rng.randrange(0, len(data) - 1024)
        data[start:start + 1024] = b"\0" * 1024
        db.write_bytes(bytes(data))
        return db
    if kind == "deleted-file":
        victim = rng.choice([p for p in seg.rglob("*") if p.is_file()])
        victim.unlink()
        return victim
    if kind == "manifest-dim":
        manifest = json.loads((gen / "manifest.json").read_text())
        manifest["dim"] += rng.choice([-1, 1, 64])
        (gen / "manifest.json").write_text(json.dumps(manifest))
        return gen / "manifest.json"
    raise ValueError(kind)


def damage_round(root: Path, n: int, seed: int, kind: str, rng: random.Random) -> dict:
    from radsift.errors import RadsiftError
    from radsift.index.verify import verify_index
    from radsift.search import Index

    index_dir, enc, _ = fresh_index(root, n, seed)
    bad = damage(index_dir, kind, rng)
    how = []
    try:
        index = Index.open(index_dir, encoder=enc)
    except RadsiftError as exc:
        how.append("open")
        index = None
        named = bad.name in str(exc) or bad.parent.name in str(exc)
    if not how:
        named = True
    if any(bad.name in str(p) for p in verify_index(index_dir)):
        how.append("verify")
    if any(bad.name in str(p) or bad.parent.name in str(p) for p in verify_index(index_dir, deep=True)):
        how.append("verify --deep")
    answered = 0  # searches that answered although the index was damaged (reading other files, or luck)
    if index is not None:
        for unit in ("sentence", "section"):
            for mode in ("hybrid", "bm25", "dense"):
                try:
                    index.search("small right pneumothorax", k=5, mode=mode, unit=unit)
                    index.get_report("demo-00001")
                    answered += 1
                except RadsiftError:
                    how.append(f"search ({unit}, {mode})")
    return {"how": how, "named": named, "undetected": not how and answered > 0, "answered": answered,
            "search_caught": any(h.startswith("search") for h in how)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="rounds per kill point and per damage kind")
    parser.add_argument("--reports", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--probes", nargs="*", default=list(PROBES), choices=PROBES,
                        help="probe families of issue 32 to run after the kills and damage (none: --probes)")
    parser.add_argument("--flips", type=int, default=5, help="store: byte flips per small array")
    parser.add_argument("--bits", type=int, default=300, help="store: one-bit flips of the manifest")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rows = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for point in KILL_POINTS:
            results = []
            for r in range(args.rounds):
                root = Path(tmp) / f"kill-{point}-{r}"
                root.mkdir()
                results.append(kill_round(root, args.reports, args.seed + r, point))
                shutil.rmtree(root)
            rows.append((f"SIGKILL during add, {point}", len(results),
                         f"live generation verifies: {sum(x['verified'] for x in results)}; killed add visible "
                         f"exactly when committed: {sum(x['as_committed'] for x in results)}; next add works: "
                         f"{sum(x['next_add_ok'] for x in results)}", 0, sum(x["lost"] for x in results)))
            print(f"  {rows[-1]}", file=sys.stderr, flush=True)
        for kind in DAMAGE:
            results = []
            for r in range(args.rounds):
                root = Path(tmp) / f"damage-{kind}-{r}"
                root.mkdir()
                results.append(damage_round(root, args.reports, args.seed + r, kind, rng))
                shutil.rmtree(root)
            detected = sum(bool(x["how"]) for x in results)
            first = Counter(x["how"][0] for x in results if x["how"])
            rows.append((f"damage: {kind}", len(results),
                         f"{detected} detected (first by " + ", ".join(f"{k} {v}" for k, v in first.most_common())
                         + f"); error names the file: {sum(x['named'] for x in results)}; opened rounds where a "
                         f"search raised: {sum(x['search_caught'] for x in results)}, searches that answered "
                         f"(of 6 a round): {sum(x['answered'] for x in results)}",
                         sum(x["undetected"] for x in results), 0))
            print(f"  {rows[-1]}", file=sys.stderr, flush=True)
    print(f"\n{args.rounds} rounds per fault, {args.reports} reports per index, "
          f"{time.perf_counter() - start:.0f} s\n")
    print("| fault | injected | what happened | undetected (wrong answers) | reports lost |")
    print("|---|---|---|---|---|")
    for fault, n, what, undetected, lost in rows:
        print(f"| {fault} | {n} | {what} | {undetected} | {lost} |")
    total_lost = sum(r[4] for r in rows)
    total_undetected = sum(r[3] for r in rows)
    print(f"\nIn all: {sum(r[1] for r in rows)} faults, {total_undetected} undetected, {total_lost} reports lost.")
    bad = probe_families(args)
    return 1 if total_lost or total_undetected or bad else 0


PROBES = ("store", "leaks", "policy")
COUNTS = ("tried", "detected", "wrong_answers", "leaks", "tracebacks", "files_named")


def probe_families(args) -> int:
    """Run the probe families (``faults_<family>.py`` beside this file); print their rows and totals; the
    number of wrong answers, leaks and tracebacks."""
    if not args.probes:
        return 0
    sys.path.insert(0, str(Path(__file__).parent))
    rows = []
    for family in args.probes:
        try:
            module = importlib.import_module(f"faults_{family}")
        except ImportError as exc:
            print(f"\nprobes {family}: skipped ({exc})")
            continue
        fargs = argparse.Namespace(reports=args.reports, seed=args.seed, flips=args.flips, bits=args.bits,
                                   families=list(getattr(module, "FAMILIES", ())))
        start = time.perf_counter()
        rows += module.run(fargs)
        print(f"  probes {family}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    print("\n| family | probe | " + " | ".join(COUNTS) + " |")
    print("|---|---|" + "---|" * len(COUNTS))
    for row in rows:
        print(f"| {row['family']} | {row['probe']} | " + " | ".join(str(row.get(c, 0)) for c in COUNTS) + " |")
    totals = {c: sum(int(row.get(c, 0)) for row in rows) for c in COUNTS}
    print("| **all** | | " + " | ".join(str(totals[c]) for c in COUNTS) + " |")
    return totals["wrong_answers"] + totals["leaks"] + totals["tracebacks"]


if __name__ == "__main__":
    raise SystemExit(main())
