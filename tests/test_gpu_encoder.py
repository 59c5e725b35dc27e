"""Encoding on a GPU (``index build|add --encoder cuda``, issue 33 item 4): refused in one line before anything is
written where torch sees no GPU; where one is there, the vectors are the CPU's within float16's rounding and the
index searches as a CPU-built one.

The GPU tests skip here (CI has no GPU); they ran on a lent H100 (docs/measurements.md, "Build on a GPU").
``RADSIFT_TEST_MODEL`` names a model folder for them where the packaged model is not installed.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

from radsift.errors import ConfigError
from radsift.models.encoder import Encoder, check_device, default_model_path

torch = pytest.importorskip("torch")
HAVE_CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU here (these ran on a lent H100)")

# Written for this test (no report text from the shared data).
SENTENCES = ["There is no pneumothorax.", "Small right pleural effusion.", "The heart is mildly enlarged.",
             "Patchy opacity in the right lower lobe, which may represent pneumonia.", "Lungs are clear.",
             "Endotracheal tube terminates 4 cm above the carina.", "Healed fracture of the right seventh rib."]
# Labelling (medspaCy) is CPU work the encoder does not touch: skipped where spaCy is not installed (the lent
# GPU machine had no room for it beside the model).
LABEL = importlib.util.find_spec("spacy") is not None
QUERIES = ["no pneumothorax", "small left pleural effusion", "cardiomegaly", "clear lungs", "rib fracture"]


def _model() -> Path:
    given = os.environ.get("RADSIFT_TEST_MODEL")
    return Path(given) if given else default_model_path()


def test_an_unknown_device_is_refused():
    with pytest.raises(ConfigError, match="device 'tpu': choose one of cpu, cuda"):
        check_device("tpu")


@pytest.mark.skipif(HAVE_CUDA, reason="checks the refusal where torch sees no GPU")
def test_encoder_cuda_without_a_gpu_is_refused_in_one_line_before_the_index_folder_is_made(tmp_path):
    from typer.testing import CliRunner

    from radsift.cli import app

    corpus = tmp_path / "r.csv"
    corpus.write_text('id,findings\n1,"No pneumothorax."\n2,"Small left pleural effusion."\n', encoding="utf-8")
    out = CliRunner().invoke(app, ["index", "build", str(tmp_path / "idx"), str(corpus),
                                   "--section", "findings=findings", "--encoder", "cuda"])
    assert out.exit_code != 0
    lines = [line for line in out.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "--encoder cuda: torch sees no CUDA GPU" in lines[0], out.output
    assert not (tmp_path / "idx").exists()


def test_a_half_precision_model_folder_encodes_in_float32_on_cpu(tmp_path):
    """A folder saved in float16 (as one copied from a GPU machine may be) is read in float32 on CPU: CPU
    half-precision products are slow and round more."""
    base = Encoder.load(_model())
    base.model.half().save(str(tmp_path / "half"))
    base.model.float()
    half = Encoder.load(tmp_path / "half")
    assert {p.dtype for p in half.model.parameters()} == {torch.float32}
    a, b = base.encode(SENTENCES), half.encode(SENTENCES)
    assert a.dtype == b.dtype == np.float32
    assert float(np.min(np.sum(a * b, axis=1))) > 0.999


@needs_cuda
def test_gpu_vectors_are_the_cpu_ones_within_half_precision():
    cpu, gpu = Encoder.load(_model()), Encoder.load(_model(), device="cuda")
    assert next(gpu.model.parameters()).dtype == torch.float16
    a, b = cpu.encode(SENTENCES), gpu.encode(SENTENCES)
    assert b.dtype == np.float32 and np.allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(a * b, axis=1))) > 0.999
    one = gpu.encode(SENTENCES[:1])  # a single text takes the query path: moved to the GPU and back
    assert float(one[0] @ a[0]) > 0.999


@needs_cuda
@pytest.mark.parametrize("workers", [1, 2])
def test_an_index_built_on_the_gpu_searches_as_a_cpu_built_one(tmp_path, workers):
    from radsift.demo import generate_reports
    from radsift.index import IndexStore, build_index
    from radsift.search import Index

    reports = [d.report for d in generate_reports(n=150, seed=5)]
    build_index(tmp_path / "gpu", reports, model=_model(), encoder_kind="cuda", workers=workers, progress=False,
                label=LABEL)
    build_index(tmp_path / "cpu", reports, model=_model(), encoder_kind="torch", progress=False, label=LABEL)
    pages = {}
    for name in ("gpu", "cpu"):
        index = Index.open(tmp_path / name)
        pages[name] = [[h.report_id for h in index.search(q, k=10, mode=m)] for q in QUERIES
                       for m in ("dense", "hybrid")]
        index.live_store().close()
    store = IndexStore.open(tmp_path / "gpu")
    assert store.manifest.build_encoders == ["cuda"]
    store.close()
    assert pages["gpu"] == pages["cpu"]
