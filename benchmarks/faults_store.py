"""Store faults (issue 32, items 1 and 5): damage to what shapes an answer must be refused, naming the file.

Run:  .venv/bin/python benchmarks/faults_store.py [--reports 300] [--flips 5] [--bits 300] [--seed 0]

Fast: synthetic reports (the demo generator) and the hashing encoder (no model). Families:

* ``same-size`` - byte flips in the data of every small array a search reads (row maps, labels, BM25
  lengths, term lists and postings), ``--flips`` per file, plus hand-made edits (every absent label set
  present, a sentence pointed at another report);
* ``manifest-bits`` - ``--bits`` one-bit flips of ``manifest.json`` (sampled over its whole length);
* ``optimize`` - ``index optimize`` of a 3-segment index with one file of one segment damaged: it must
  refuse naming the file and leave the live generation as it was;
* ``live-truncate`` - ``radsift serve`` in a subprocess; a file of the live generation truncated under it,
  between requests and during dense traffic from 3 clients (a request reading the map is then a SIGBUS
  that kills the worker, which the server starts again); the next query must be a 503 naming the file
  and the server must stay up;
* ``hnsw-cache`` - the HNSW cache files damaged (graph, duplicate groups, layout, their checksum record):
  ``index verify --deep`` names the file, a search with ``--backend hnsw`` answers exactly or refuses
  naming it, and ``index add --backend hnsw`` completes with a whole index.

A probe is *detected* when open or search raised a radsift error, or the answers are exactly those of
the whole index (damage that changes nothing, said in the probe's name); a *wrong answer* is a search that answered differently without an error; a
*traceback* any other exception; *files named* counts detections whose message names the damaged file.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

SMALL = ("sentence_report.npy", "sentence_section.npy", "section_report.npy", "section_section.npy",
         "label_row.npy", "label_finding.npy", "label_status.npy", "bm25_sentence/lengths.npy",
         "bm25_section/lengths.npy", "bm25_sentence/indptr.npy", "bm25_sentence/rows.npy", "bm25_sentence/tf.npy",
         "bm25_section/rows.npy", "bm25_sentence/terms.json")
QUERIES = ("small right pneumothorax", "no pleural effusion", "cardiomegaly")
SEARCHES = tuple((q, m, u) for q in QUERIES for m in ("hybrid", "bm25", "dense") for u in ("sentence", "section"))
#: ``radsift serve`` with the hashing encoder in the place of the model (no torch, no download).
SERVER = textwrap.dedent("""
    import sys
    from radsift.models import encoder
    from radsift.models.hashing import HashingEncoder
    model = sys.argv[1]
    encoder.Encoder.load = classmethod(lambda cls, path=None, **kw: HashingEncoder(model))
    from radsift.cli import main
    sys.argv = ["radsift", "serve", sys.argv[2], "--port", sys.argv[3]]
    main()
""")


def _row(family: str, probe: str) -> dict:
    return {"family": family, "probe": probe, "tried": 0, "detected": 0, "wrong_answers": 0, "leaks": 0,
            "tracebacks": 0, "files_named": 0}


def build(root: Path, n: int, seed: int, segments: int = 1):
    """An index of ``n`` demo reports in ``segments`` segments, its hashing encoder, and its answers."""
    from radsift.demo import generate_reports
    from radsift.index import add_to_index, build_index
    from radsift.models.hashing import HashingEncoder

    enc = HashingEncoder(root / "model")
    reports = [d.report for d in generate_reports(n=n, seed=seed)]
    cut = np.linspace(0, n, segments + 1).astype(int)
    build_index(root / "idx", reports[:cut[1]], encoder=enc, progress=False)
    for a, b in zip(cut[1:-1], cut[2:]):
        add_to_index(root / "idx", reports[a:b], encoder=enc, progress=False)
    return root / "idx", enc


def answers(index_dir: Path, enc, backend: str = "auto") -> list:
    """Every search's hits (id, score, status) and counts, and two reports: what a user would see."""
    from radsift.search import Index

    index = Index.open(index_dir, encoder=enc, backend=backend)
    out = []
    for q, mode, unit in SEARCHES:
        res = index.search(q, k=10, mode=mode, unit=unit)
        out.append(([(h.report_id, round(float(h.score), 4), h.band, repr(h.reading)) for h in res],
                    getattr(res, "total", None), getattr(res, "matching", None)))
    out.append([index.get_report(rid) for rid in ("demo-00001", "demo-00002")])
    index.store.close()
    return out


def probe(row: dict, index_dir: Path, enc, baseline: list, bad: Path, backend: str = "auto") -> None:
    """Open, search and verify a damaged copy; count the outcome in ``row``."""
    from radsift.errors import RadsiftError
    from radsift.index.verify import verify_index

    row["tried"] += 1
    try:
        problems = verify_index(index_dir)
    except RadsiftError as exc:
        problems = [str(exc)]
    except Exception:  # noqa: BLE001 - counted
        row["tracebacks"] += 1
        traceback.print_exc(limit=2)
        return
    try:
        got = answers(index_dir, enc, backend)
    except RadsiftError as exc:
        row["detected"] += 1
        row["files_named"] += bad.name in str(exc) or bad.parent.name in str(exc)
        return
    except Exception:  # noqa: BLE001 - counted
        row["tracebacks"] += 1
        traceback.print_exc(limit=2)
        return
    if got == baseline:  # damage that changes no answer (a flip in an escape, say): nothing to refuse
        row["detected"] += 1
        row["unchanged"] = row.get("unchanged", 0) + 1
        row["files_named"] += any(bad.name in str(p) for p in problems) or not problems
    else:
        row["wrong_answers"] += 1
        print(f"  WRONG ANSWER: {bad}", file=sys.stderr)


def _flip_at(path: Path, at: int, bit: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 1 << bit
    path.write_bytes(bytes(data))


def _data_start(path: Path) -> int:
    if path.suffix != ".npy":
        return 0
    with open(path, "rb") as fh:
        np.lib.format.read_magic(fh)
        np.lib.format.read_array_header_1_0(fh)
        return fh.tell()


def _seg(index_dir: Path, i: int = -1) -> Path:
    from radsift.index.format import segment_dir
    from radsift.index.generations import read_current

    manifest = json.loads((read_current(index_dir) / "manifest.json").read_text())
    return segment_dir(index_dir, manifest["segments"][i]["name"])


def same_size(root: Path, index_dir: Path, enc, baseline: list, args, rng: random.Random) -> list[dict]:
    rows = []
    for rel in SMALL:
        row = _row("same-size", f"byte flips: {rel}")
        for _ in range(args.flips):
            copy = root / "probe"
            shutil.copytree(index_dir, copy)
            bad = _seg(copy) / rel
            start = _data_start(bad)
            if bad.stat().st_size > start:
                _flip_at(bad, rng.randrange(start, bad.stat().st_size), rng.randrange(8))
                probe(row, copy, enc, baseline, bad)
            shutil.rmtree(copy)
        rows.append(row)
    for name, edit in (("every absent label set present", _labels_present),
                       ("a sentence pointed at another report", _repoint)):
        row = _row("same-size", f"hand-made: {name}")
        copy = root / "probe"
        shutil.copytree(index_dir, copy)
        probe(row, copy, enc, baseline, edit(_seg(copy)))
        shutil.rmtree(copy)
        rows.append(row)
    return rows


def _labels_present(seg: Path) -> Path:
    arr = np.load(seg / "label_status.npy")
    arr[arr == -1] = 1
    np.save(seg / "label_status.npy", arr)
    return seg / "label_status.npy"


def _repoint(seg: Path) -> Path:
    arr = np.load(seg / "sentence_report.npy")
    arr[0] = arr[-1]
    np.save(seg / "sentence_report.npy", arr)
    return seg / "sentence_report.npy"


def manifest_bits(root: Path, index_dir: Path, enc, baseline: list, args, rng: random.Random) -> list[dict]:
    from radsift.index.generations import read_current

    row = _row("manifest-bits", f"{args.bits} one-bit flips of manifest.json")
    manifest = read_current(index_dir) / "manifest.json"
    original = manifest.read_bytes()
    for _ in range(args.bits):
        _flip_at(manifest, rng.randrange(len(original)), rng.randrange(8))
        probe(row, index_dir, enc, baseline, manifest)
        manifest.write_bytes(original)
    return [row]


def optimize_on_damage(root: Path, args, rng: random.Random) -> list[dict]:
    from radsift.errors import RadsiftError
    from radsift.index import optimize_index
    from radsift.index.generations import read_current

    index_dir, _ = build(root / "three", args.reports, args.seed, segments=3)
    rows = []
    for rel in ("label_status.npy", "sentence_vectors.npy", "section_report.npy", "bm25_section/tf.npy",
                "store.sqlite"):
        row = _row("optimize", f"optimize over a flipped {rel}")
        for _ in range(max(1, args.flips // 2)):
            copy = root / "probe"
            shutil.copytree(index_dir, copy)
            bad = _seg(copy, rng.randrange(3)) / rel
            start = _data_start(bad) if rel != "store.sqlite" else 4096
            _flip_at(bad, rng.randrange(start, bad.stat().st_size), rng.randrange(8))
            live = read_current(copy).name
            row["tried"] += 1
            try:
                optimize_index(copy)
                row["wrong_answers"] += 1  # damage merged into a segment whose checksums are right
            except RadsiftError as exc:
                kept = read_current(copy).name == live
                row["detected"] += kept
                row["wrong_answers"] += not kept
                row["files_named"] += bad.name in str(exc)
            except Exception:  # noqa: BLE001 - counted
                row["tracebacks"] += 1
                traceback.print_exc(limit=2)
            shutil.rmtree(copy)
        rows.append(row)
    shutil.rmtree(root / "three")
    return rows


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as res:
            return res.status, res.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return 0, str(exc)


def live_truncate(root: Path, index_dir: Path, enc, args) -> list[dict]:
    """``radsift serve`` in a subprocess; a file truncated under it; then queries."""
    script = root / "server.py"
    script.write_text(SERVER)
    row = _row("live-truncate", "file truncated under `radsift serve`: 503 naming it, server alive")
    for rel in ("sentence_vectors.npy", "section_vectors.npy", "bm25_sentence/rows.npy", "label_status.npy",
                "store.sqlite"):
        copy = root / "probe"
        shutil.copytree(index_dir, copy)
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        server = subprocess.Popen([sys.executable, str(script), str(enc.path), str(copy), str(port)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            for _ in range(300):
                if _get(f"{base}/api/health")[0] == 200:
                    break
                time.sleep(0.1)
            for unit in ("sentence", "section"):
                _get(f"{base}/api/search?q=pneumothorax&unit={unit}")  # the files in use, mapped
            bad = _seg(copy) / rel
            os.truncate(bad, bad.stat().st_size // 3)
            row["tried"] += 1
            codes = [_get(f"{base}/api/search?q=pneumothorax&unit={u}") for u in ("sentence", "section")]
            codes.append(_get(f"{base}/api/reports/demo-00001"))
            alive = server.poll() is None and _get(f"{base}/api/health")[0] in (200, 503)
            refused = all(c == 503 for c, _ in codes)
            if refused and alive:
                row["detected"] += 1
                row["files_named"] += all(bad.name in body for _, body in codes)
            elif not alive:
                row["tracebacks"] += 1  # the server died (SIGBUS: exit 135)
                print(f"  server died ({server.poll()}) on {rel}", file=sys.stderr)
            else:
                row["wrong_answers"] += any(c == 200 for c, _ in codes)
                row["tracebacks"] += any(c not in (200, 503) for c, _ in codes)
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
            shutil.rmtree(copy)
    return [row]


def live_truncate_mid(root: Path, index_dir: Path, enc) -> list[dict]:
    """``radsift serve`` (one supervised worker, the default) under dense traffic from 3 clients; a vector file
    truncated while they run. A request reading the map then is a SIGBUS: the worker is started again (one
    log line naming the signal) and must answer 503 naming the file; the server must stay up. A truncation
    that fell between requests is followed by a SIGBUS sent to the worker, so the restart on a damaged
    index is probed every time."""
    import threading

    script = root / "server.py"
    script.write_text(SERVER)
    row = _row("live-truncate", "file truncated during requests (3 clients): next request 503 naming it, "
                                "server alive")
    crashes = 0
    for rel in ("sentence_vectors.npy", "section_vectors.npy"):
        copy, log = root / "probe", root / "probe.log"
        shutil.copytree(index_dir, copy)
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        with log.open("w") as out:  # a file, not a pipe: the access log of the traffic would fill a pipe
            server = subprocess.Popen([sys.executable, str(script), str(enc.path), str(copy), str(port)],
                                      stdout=subprocess.DEVNULL, stderr=out)
        stop = threading.Event()
        unit = rel.split("_")[0]

        def traffic(stop=stop, url=f"{base}/api/search?q=pneumothorax&mode=dense&k=50&unit={unit}") -> None:
            while not stop.is_set():
                _get(url)

        try:
            for _ in range(300):
                if _get(f"{base}/api/health")[0] == 200:
                    break
                time.sleep(0.1)
            clients = [threading.Thread(target=traffic) for _ in range(3)]
            for c in clients:
                c.start()
            time.sleep(1.0)
            bad = _seg(copy) / rel
            os.truncate(bad, bad.stat().st_size // 3)
            row["tried"] += 1
            time.sleep(2.0)
            stop.set()
            for c in clients:
                c.join()
            if "was killed by SIG" in log.read_text():
                crashes += 1
            else:  # the truncation fell between requests (503s): crash the worker as a hit would
                for pid in os.popen(f"pgrep -P {server.pid}").read().split():
                    os.kill(int(pid), signal.SIGBUS)
                for _ in range(100):
                    if "was killed by SIG" in log.read_text():
                        break
                    time.sleep(0.1)
            code, body = _get(f"{base}/api/search?q=pneumothorax&mode=dense&unit={unit}")
            alive = server.poll() is None and "was killed by SIGBUS" in log.read_text()
            if alive and code == 503:
                row["detected"] += 1
                row["files_named"] += bad.name in body
            elif not alive:
                row["tracebacks"] += 1  # the server died (SIGBUS: exit 135)
                print(f"  server died ({server.poll()}) on {rel} mid-request", file=sys.stderr)
            else:
                row["wrong_answers"] += code == 200
                row["tracebacks"] += code != 200
        finally:
            stop.set()
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
            shutil.rmtree(copy)
    row["probe"] += (f" ({crashes} of {row['tried']} truncations hit a request and killed the worker; the others "
                     "were followed by a SIGBUS sent to it; each restart logged)")
    return [row]


def hnsw_cache(root: Path, args, rng: random.Random) -> list[dict]:
    from radsift.errors import RadsiftError
    from radsift.index import add_to_index
    from radsift.index.backends import hnsw
    from radsift.index.generations import read_current
    from radsift.index.graphs import GRAPH_DIR, build_graphs
    from radsift.index.verify import verify_index
    from radsift.records import Report

    if not hnsw.available():
        return [_row("hnsw-cache", "skipped: FAISS not installed")]
    index_dir, enc = build(root / "graphed", args.reports, args.seed)
    build_graphs(index_dir, "hnsw")
    baseline = answers(index_dir, enc, "hnsw")
    rows = []
    for suffix in (".dups.npz", ".layout.npz", "", ".files.json"):
        for damage in ("flip", "truncate"):
            row = _row("hnsw-cache", f"{damage} sentence graph{suffix or ' file'}")
            copy = root / "probe"
            shutil.copytree(index_dir, copy)
            bad = copy / GRAPH_DIR / f"{read_current(copy).name}.sentence.faiss{suffix}"
            if damage == "flip":
                _flip_at(bad, rng.randrange(bad.stat().st_size), rng.randrange(8))
            else:
                os.truncate(bad, bad.stat().st_size // 2)
            row["tried"] += 1
            try:
                named = any(bad.name in str(p) for p in verify_index(copy, deep=True))
                try:
                    ok = answers(copy, enc, "hnsw") == baseline
                except RadsiftError as exc:
                    ok, named = True, named and bad.name in str(exc)
                add_to_index(copy, [Report("added", {"findings": "Small left pneumothorax."})], encoder=enc,
                             progress=False, backend="hnsw")
                whole = verify_index(copy, deep=True) == []
                row["detected"] += ok and whole
                row["wrong_answers"] += not ok or not whole
                row["files_named"] += named
            except Exception:  # noqa: BLE001 - counted
                row["tracebacks"] += 1
                traceback.print_exc(limit=3)
            shutil.rmtree(copy)
            rows.append(row)
    return rows


def run(args) -> list[dict]:
    """Every family's rows (see the module docstring)."""
    rng = random.Random(args.seed)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        index_dir, enc = build(root / "base", args.reports, args.seed, segments=2)
        baseline = answers(index_dir, enc)
        for family in args.families:
            start = time.perf_counter()
            if family == "same-size":
                rows += same_size(root, index_dir, enc, baseline, args, rng)
            elif family == "manifest-bits":
                rows += manifest_bits(root, index_dir, enc, baseline, args, rng)
            elif family == "optimize":
                rows += optimize_on_damage(root, args, rng)
            elif family == "live-truncate":
                rows += live_truncate(root, index_dir, enc, args)
                rows += live_truncate_mid(root, index_dir, enc)
            elif family == "hnsw-cache":
                rows += hnsw_cache(root, args, rng)
            print(f"  {family}: {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    for row in rows:  # detected but read: the damage changed no answer (said, not hidden in "detected")
        if row.get("unchanged"):
            row["probe"] += f" ({row.pop('unchanged')} of them read with every answer unchanged)"
    return rows


FAMILIES = ("same-size", "manifest-bits", "optimize", "live-truncate", "hnsw-cache")
COLUMNS = ("tried", "detected", "wrong_answers", "leaks", "tracebacks", "files_named")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=300)
    parser.add_argument("--flips", type=int, default=5, help="byte flips per small array")
    parser.add_argument("--bits", type=int, default=300, help="one-bit flips of the manifest")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    args = parser.parse_args()
    rows = run(args)
    print("| family | probe | " + " | ".join(COLUMNS) + " |")
    print("|---|---|" + "---|" * len(COLUMNS))
    for r in rows + [{"family": "**all**", "probe": "", **{c: sum(r[c] for r in rows) for c in COLUMNS}}]:
        print(f"| {r['family']} | {r['probe']} | " + " | ".join(str(r[c]) for c in COLUMNS) + " |")
    return 1 if any(r["wrong_answers"] or r["tracebacks"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
