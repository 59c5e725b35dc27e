"""The fast ONNX encoder (radsift.models.onnx_encoder): same vectors as the torch encoder, cached atomic export.

Tests that run the model skip when onnxruntime or onnx is not installed (the ``fast`` extra);
the missing-dependency and cache-publishing tests run everywhere.
"""

from __future__ import annotations

import importlib.util
import json
import sys

import numpy as np
import pytest

from radsift.errors import ConfigError
from radsift.models import onnx_encoder as oe



def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


HAVE_ONNX = _importable("onnxruntime") and _importable("onnx")
needs_onnx = pytest.mark.skipif(not HAVE_ONNX, reason="onnxruntime/onnx not installed (pip install 'radsift[fast]')")

# Written for this test (no report text from the shared data).
SENTENCES = [
    "There is no pneumothorax.",
    "No pleural effusion or pneumothorax is seen.",
    "Small right pleural effusion.",
    "Large left-sided pleural effusion with compressive atelectasis of the left lower lobe.",
    "The heart is mildly enlarged.",
    "Heart size is within normal limits.",
    "Patchy opacity in the right lower lobe, which may represent pneumonia in the appropriate clinical setting.",
    "Lungs are clear bilaterally.",
    "Endotracheal tube terminates 4 cm above the carina.",
    "Interval removal of the left chest tube.",
    "Degenerative changes of the thoracic spine.",
    "No acute cardiopulmonary abnormality.",
    "Stable 8 mm nodule in the left upper lobe, unchanged since the prior study.",
    "Mild pulmonary vascular congestion without frank edema.",
    "Healed fracture of the right seventh rib.",
    "Hyperinflated lungs consistent with chronic obstructive pulmonary disease.",
    "Calcified granuloma in the right midlung.",
    "Sternotomy wires are intact.",
    "Blunting of the left costophrenic angle may reflect a trace effusion or pleural thickening.",
    "Impression: findings suggestive of early interstitial edema; recommend follow-up radiograph.",
]


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def baseline():
    from radsift.models import Encoder

    enc = Encoder.load(None, threads=1)
    return enc, enc.encode(SENTENCES, batch_size=8)


@pytest.fixture(scope="module")
def fp32(cache_dir):
    return oe.OnnxEncoder.load(None, variant="fp32", cache_dir=cache_dir, threads=1)


@pytest.fixture(scope="module")
def int8(cache_dir):
    return oe.OnnxEncoder.load(None, variant="int8", cache_dir=cache_dir, threads=1)


def _check_unit_rows(vecs: np.ndarray, dim: int) -> None:
    assert vecs.dtype == np.float32 and vecs.shape == (len(SENTENCES), dim)
    assert vecs.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
@needs_onnx
def test_fp32_reproduces_the_torch_encoder(baseline, fp32):
    base, want = baseline
    assert (fp32.dim, fp32.name, fp32.path) == (base.dim, base.name, base.path)
    assert fp32.backend == "onnx-fp32"
    got = fp32.encode(SENTENCES, batch_size=8)
    _check_unit_rows(got, base.dim)
    cos = np.einsum("ij,ij->i", want, got)
    assert cos.min() >= 0.9999, cos.min()  # measured: 0.99999+ on 2,500 Open-i sentences


@pytest.mark.slow
@needs_onnx
def test_int8_stays_close_to_the_torch_encoder(baseline, int8):
    base, want = baseline
    assert (int8.dim, int8.name, int8.path) == (base.dim, base.name, base.path)
    got = int8.encode(SENTENCES, batch_size=8)
    _check_unit_rows(got, base.dim)
    cos = np.einsum("ij,ij->i", want, got)
    # Measured on Open-i: mean 0.992, minimum 0.976 over its distinct sentences.
    assert cos.mean() >= 0.98 and cos.min() >= 0.95, (cos.mean(), cos.min())
    assert int8.info["quantization"]["per_channel"] is True


@pytest.mark.slow
@needs_onnx
def test_batching_and_queries_agree(fp32):
    whole = fp32.encode(SENTENCES, batch_size=64)
    small = fp32.encode(SENTENCES, batch_size=3)  # other padding, other batches: same vectors
    np.testing.assert_allclose(small, whole, atol=1e-5)
    with_bar = fp32.encode(SENTENCES, batch_size=5, progress=True, desc="test")
    np.testing.assert_allclose(with_bar, whole, atol=1e-5)
    q = fp32.encode_query(SENTENCES[3])
    assert q.shape == (fp32.dim,) and q.dtype == np.float32
    np.testing.assert_allclose(q, whole[3], atol=1e-5)
    assert fp32.encode([]).shape == (0, fp32.dim)
    assert fp32.encode(["x"]).shape == (1, fp32.dim)


@pytest.mark.slow
@needs_onnx
def test_export_is_cached(cache_dir, fp32, monkeypatch):
    folder = fp32.onnx_path
    assert folder.parent == cache_dir and oe.read_marker(folder) is not None
    mtime = (folder / oe.MODEL_FILE).stat().st_mtime_ns

    def no_export(*args, **kwargs):
        raise AssertionError("exported again although the cache holds a finished export")

    monkeypatch.setattr(oe, "_export_into", no_export)
    assert oe.export_onnx(None, cache_dir, variant="fp32") == folder
    again = oe.OnnxEncoder.load(None, variant="fp32", cache_dir=cache_dir)
    assert again.onnx_path == folder
    assert (folder / oe.MODEL_FILE).stat().st_mtime_ns == mtime
    info = json.loads((folder / oe.MARKER).read_text())
    assert info["variant"] == "fp32" and info["probe_cosine_min"] >= 0.9999
    assert not [p for p in cache_dir.iterdir() if p.name.startswith(".")]  # no temporary folder left


# -- no onnxruntime needed below ------------------------------------------------------------------
def _fake_export(path, out, variant):
    (out / oe.MODEL_FILE).write_bytes(b"fake")
    (out / oe.TOKENIZER_FILE).write_text("{}")
    return {"format": oe.EXPORT_FORMAT, "variant": variant, "dim": 4}


@pytest.fixture
def fake_exports(monkeypatch):
    monkeypatch.setattr(oe, "_require", lambda module, purpose: None)
    monkeypatch.setattr(oe, "_export_into", _fake_export)


def test_a_failed_export_leaves_nothing_behind(tmp_path, monkeypatch, fake_exports):
    def broken(path, out, variant):
        (out / oe.MODEL_FILE).write_bytes(b"half written")
        raise RuntimeError("disk full")

    monkeypatch.setattr(oe, "_export_into", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        oe.export_onnx(None, tmp_path, variant="int8")
    assert list(tmp_path.iterdir()) == []  # neither the target nor the temporary folder


def test_an_unfinished_folder_is_replaced_and_a_finished_one_kept(tmp_path, fake_exports):
    target = oe.cache_folder(None, "fp32", tmp_path)
    target.mkdir(parents=True)
    (target / oe.MODEL_FILE).write_bytes(b"left by a crash, no marker")
    assert oe.read_marker(target) is None
    assert oe.export_onnx(None, tmp_path, variant="fp32") == target
    assert (target / oe.MODEL_FILE).read_bytes() == b"fake" and oe.read_marker(target) is not None
    # A concurrent export that finished first wins: this one's files are dropped.
    other = tmp_path / ".other.tmp"
    other.mkdir()
    (other / oe.MODEL_FILE).write_bytes(b"second")
    oe._publish(other, target, replace=False)
    assert (target / oe.MODEL_FILE).read_bytes() == b"fake"
    # force=True exports again.
    oe.export_onnx(None, tmp_path, variant="fp32", force=True)
    assert oe.read_marker(target) is not None
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".other")) == [target.name]


def test_cache_folders_differ_by_variant_and_model(tmp_path):
    a = oe.cache_folder(None, "fp32", tmp_path)
    b = oe.cache_folder(None, "int8", tmp_path)
    assert a != b and a.parent == b.parent == tmp_path
    assert "all-MiniLM-L6-v2" in a.name and f"v{oe.EXPORT_FORMAT}" in a.name
    with pytest.raises(ConfigError, match="unknown fast encoder variant"):
        oe.cache_folder(None, "int4", tmp_path)


def test_default_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("RADSIFT_CACHE_DIR", str(tmp_path / "rc"))
    assert oe.default_cache_dir() == tmp_path / "rc" / "onnx"
    monkeypatch.delenv("RADSIFT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert oe.default_cache_dir() == tmp_path / "xdg" / "radsift" / "onnx"


@pytest.mark.parametrize("missing", ["onnxruntime", "onnx"])
def test_missing_packages_are_named(monkeypatch, tmp_path, missing):
    monkeypatch.setitem(sys.modules, missing, None)  # makes ``import missing`` raise ImportError
    with pytest.raises(oe.FastEncoderUnavailable) as info:
        if missing == "onnxruntime":
            oe.OnnxEncoder.load(None, cache_dir=tmp_path)
        else:
            oe.export_onnx(None, tmp_path, variant="fp32")
    message = str(info.value)
    assert f"package {missing} " in message and "pip install" in message and "radsift[fast]" in message
    assert isinstance(info.value, ConfigError)  # the CLI reports ConfigError as a one-line error
    assert not oe.fast_encoding_available()
    assert list(tmp_path.iterdir()) == []  # nothing half-made


# --- radsift index build|add --encoder (the fast encoder wired into indexing) ---------------------

from radsift.records import Report  # noqa: E402

REPORTS = [Report(f"e{i}", {"findings": a, "impression": b})
           for i, (a, b) in enumerate(zip(SENTENCES[0::2], SENTENCES[1::2]))]


def test_an_unknown_build_encoder_is_refused_naming_the_choices():
    with pytest.raises(ConfigError, match=r"--encoder 'onnx-fp16'.*torch, onnx, onnx-int8"):
        oe.load_build_encoder("onnx-fp16")


def test_the_onnx_build_encoder_without_the_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # None in sys.modules: the import fails
    with pytest.raises(oe.FastEncoderUnavailable, match=r"radsift\[fast\]"):
        oe.load_build_encoder("onnx")


@needs_onnx
def test_an_index_built_with_onnx_stores_the_torch_vectors_and_says_so(tmp_path, cache_dir):
    from radsift.index import add_to_index, build_index
    from radsift.index.reader import IndexStore

    torch_dir, onnx_dir = tmp_path / "torch", tmp_path / "onnx"
    build_index(torch_dir, REPORTS[:-1], progress=False)
    build_index(onnx_dir, REPORTS[:-1], progress=False, encoder_kind="onnx", encoder_cache=cache_dir, threads=1)
    a, b = IndexStore.open(torch_dir), IndexStore.open(onnx_dir)
    try:
        assert a.manifest.build_encoders == ["torch"] and b.manifest.build_encoders == ["onnx"]
        va, vb = np.asarray(a.units("sentence").vectors), np.asarray(b.units("sentence").vectors)
        assert va.shape == vb.shape
        assert float(np.min(np.sum(va * vb, axis=1))) > 0.99999
    finally:
        a.close(), b.close()
    # An add with another encoder is recorded after the first one.
    add_to_index(onnx_dir, REPORTS[-1:], progress=False, encoder_kind="onnx-int8", encoder_cache=cache_dir,
                 threads=1)
    c = IndexStore.open(onnx_dir)
    try:
        assert c.manifest.build_encoders == ["onnx", "onnx-int8"]
        assert c.manifest.counts["reports"] == len(REPORTS)
    finally:
        c.close()


@needs_onnx
def test_cli_index_build_encoder_flag(tmp_path, cache_dir):
    from typer.testing import CliRunner

    from radsift.cli import app

    corpus = tmp_path / "r.csv"
    corpus.write_text("id,findings,impression\n" + "".join(
        f'{r.id},"{r.sections["findings"]}","{r.sections["impression"]}"\n' for r in REPORTS), encoding="utf-8")
    sections = ["--section", "findings=findings", "--section", "impression=impression"]
    out = CliRunner().invoke(app, ["index", "build", str(tmp_path / "idx"), str(corpus), *sections,
                                   "--encoder", "onnx-int8", "--encoder-cache", str(cache_dir), "--threads", "1"])
    assert out.exit_code == 0, out.output
    info = CliRunner().invoke(app, ["index", "info", str(tmp_path / "idx")])
    assert json.loads(info.output)["build_encoders"] == ["onnx-int8"]
    bad = CliRunner().invoke(app, ["index", "build", str(tmp_path / "idx2"), str(corpus), *sections,
                                   "--encoder", "gpu"])
    assert bad.exit_code != 0 and "unknown encoder" in bad.output
    assert not (tmp_path / "idx2").exists()
