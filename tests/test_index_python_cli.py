"""Python does what the CLI does: the same index folder from ``radsift index ...`` and from
``radsift.index`` with the same options, at every step of an index's life (build, add, delete,
optimize), HNSW graphs included (the decisions live in :mod:`radsift.index.derived`, not in the CLI).

What the comparison leaves out, and why:

- ``created`` and ``updated`` of each generation's ``manifest.json``: the wall-clock time of the write
  (and so its own checksum, ``manifest_sha256``, which covers them);
- the bytes of ``.npz`` files (the graphs' layouts and duplicate groups): a zip archive records when
  each member was written, so their arrays are compared instead (and the SHA-256 that a graph's
  ``.files.json`` records for them is left out).

Everything else is compared byte for byte: segment records, vectors, BM25 statistics, labels, the
SQLite file, ``CURRENT``, the graphs themselves. Nothing in the folders names the folder itself, so
no path needs excluding. FAISS builds a graph on one OpenMP thread here: with several, the order in
which threads insert nodes (and so the graph) may differ from run to run.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from radsift.cli import app
from radsift.corpus import ReaderOptions, read_corpus
from radsift.index import add_to_index, build_index, delete_from_index, optimize_index

faiss = pytest.importorskip("faiss")

READER = ["--format", "csv", "--id-column", "uid", "--section", "findings=findings",
          "--section", "impression=impression"]
#: Manifest fields that hold the time of the write.
TIMES = ("created", "updated", "manifest_sha256")  # the checksum covers the times


@pytest.fixture()
def model(hashing_model):
    """The hashing test encoder's folder (conftest's ``hashing_model``)."""
    return hashing_model


@pytest.fixture(autouse=True)
def one_faiss_thread():
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(before)


def _csv(path: Path, ids: range) -> Path:
    rows = ["uid,exam,findings,impression"]
    rows += [f'r{i},XR CHEST,"Small {("left", "right")[i % 2]} pleural effusion {i % 7}. No pneumothorax {i}.",'
             f'Effusion {i % 5}.' for i in ids]
    path.write_text("\n".join(rows) + "\n")
    return path


def _reports(csv: Path):
    options = ReaderOptions.from_cli(format="csv", id_column="uid", sections=["findings=findings",
                                                                                "impression=impression"])
    return read_corpus([csv], options)


def _cli(*args: str) -> str:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 0, res.output
    return res.output


def _contents(root: Path) -> dict[str, object]:
    """Every file under ``root`` by relative path: its bytes, or what is compared in their place."""
    out: dict[str, object] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        name = str(path.relative_to(root))
        if path.name == "manifest.json":
            out[name] = {k: v for k, v in json.loads(path.read_text()).items() if k not in TIMES}
        elif path.name.endswith(".files.json"):
            out[name] = {f: {k: v for k, v in rec.items() if not (f.endswith(".npz") and k == "sha256")}
                         for f, rec in json.loads(path.read_text()).items()}
        elif path.suffix == ".npz":
            with np.load(path) as data:
                out[name] = {key: data[key].tobytes() + str(data[key].dtype).encode() for key in data.files}
        else:
            out[name] = path.read_bytes()
    return out


def _same(cli_dir: Path, py_dir: Path) -> None:
    cli, py = _contents(cli_dir), _contents(py_dir)
    assert sorted(cli) == sorted(py)
    assert [name for name in cli if cli[name] != py[name]] == []


def test_build_add_delete_optimize_give_the_same_folder(tmp_path, model):
    base, more = _csv(tmp_path / "base.csv", range(40)), _csv(tmp_path / "more.csv", range(40, 55))
    cli_dir, py_dir = tmp_path / "cli", tmp_path / "py"

    out = _cli("index", "build", str(cli_dir), str(base), *READER, "--model", str(model), "--backend", "hnsw")
    summary = build_index(py_dir, _reports(base), model=model, backend="hnsw", progress=False)
    assert "HNSW graph:" in out and len(summary.derived.graphs) == 2  # sentence and section graphs
    _same(cli_dir, py_dir)

    _cli("index", "add", str(cli_dir), str(more), *READER, "--backend", "hnsw")
    add_to_index(py_dir, _reports(more), backend="hnsw", progress=False)
    _same(cli_dir, py_dir)

    _cli("index", "delete", str(cli_dir), "r3", "r41", "--backend", "hnsw")
    delete_from_index(py_dir, ["r3", "r41"], backend="hnsw")
    _same(cli_dir, py_dir)

    _cli("index", "optimize", str(cli_dir), "--backend", "hnsw")
    summary = optimize_index(py_dir, backend="hnsw")
    assert len(summary.derived.graphs) == 2
    _same(cli_dir, py_dir)


def test_a_bad_poly_folder_fails_before_anything_is_written(tmp_path, model):
    # The check is the library's: Python and the CLI refuse alike, and neither creates the folder.
    from radsift.errors import ConfigError

    base = _csv(tmp_path / "base.csv", range(5))
    with pytest.raises(ConfigError, match="--first-stage") as python:
        build_index(tmp_path / "py", _reports(base), model=model, poly=model)
    assert not (tmp_path / "py").exists()
    res = CliRunner().invoke(app, ["index", "build", str(tmp_path / "cli"), str(base), *READER,
                                   "--model", str(model), "--poly", str(model)])
    assert res.exit_code == 2 and " ".join(str(python.value).split()) in " ".join(res.output.split())
    assert not (tmp_path / "cli").exists()


@pytest.mark.slow  # a MiniLM poly-encoder loads and encodes
def test_build_and_add_with_poly_codes_give_the_same_folder(tmp_path, model):
    import torch

    from radsift.models.poly_encoder import PolyEncoder

    torch.manual_seed(0)
    poly = PolyEncoder.new(None, codes=4, seed=3).save(tmp_path / "poly")
    base, more = _csv(tmp_path / "base.csv", range(12)), _csv(tmp_path / "more.csv", range(12, 16))
    cli_dir, py_dir = tmp_path / "cli", tmp_path / "py"

    out = _cli("index", "build", str(cli_dir), str(base), *READER, "--model", str(model), "--backend", "hnsw",
               "--poly", str(poly))
    summary = build_index(py_dir, _reports(base), model=model, backend="hnsw", poly=poly, progress=False)
    assert "poly-encoder codes: 1 segment(s)" in out and len(summary.derived.poly_codes) == 1
    _same(cli_dir, py_dir)

    _cli("index", "add", str(cli_dir), str(more), *READER, "--backend", "hnsw", "--poly", str(poly))
    summary = add_to_index(py_dir, _reports(more), backend="hnsw", poly=poly, progress=False)
    assert len(summary.derived.poly_codes) == 2  # the first segment's codes kept, the new one's encoded
    _same(cli_dir, py_dir)
