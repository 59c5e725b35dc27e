"""A build that spreads (issue 33, item 4): ``--workers N`` builds with N processes and gives the
one-process vectors in the same order (each worker writing its own segment: tests/test_segment_workers.py);
a worker that dies fails the build with nothing committed, in one line; ``--ray`` is refused before
anything is written when Ray is missing or no cluster answers, and builds in a Ray started here (one
task a share, each writing a segment) when ray is installed. :class:`ProcessEncoder` (encoding only)
gives the one-process vectors. Thread policies under contention (item 6)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from radsift.cli import app
from radsift.errors import ConfigError
from radsift.index import IndexStore, add_to_index, build_index
from radsift.index.generations import read_current
from radsift.models import parallel, ray_encode
from radsift.models.hashing import HashingEncoder
from radsift.models.parallel import EncodeWorkerError, ProcessEncoder, length_chunks, worker_loader, worker_threads
from radsift.records import Report

LONG = " ".join(["The cardiomediastinal silhouette is within normal limits and the lungs are clear."] * 60)


def _reports(n: int, start: int = 0) -> list[Report]:
    words = ["pneumothorax", "effusion", "cardiomegaly", "consolidation", "atelectasis", "edema", "nodule"]
    out = []
    for i in range(start, start + n):
        a, b = words[i % len(words)], words[(i * 3 + 1) % len(words)]
        text = f"Small {a} on the right. No {b}. Report {i} mentions {a} {i % 5} times." + (LONG if i % 4 == 0 else "")
        out.append(Report(f"r{i}", {"findings": text, "impression": f"{b.capitalize()} {i}."}, {}))
    return out


class DyingEncoder(HashingEncoder):
    """Encodes in the process that made it; kills the worker process that tries (SIGKILL: no goodbye)."""

    def __init__(self, folder, dim: int = 256) -> None:
        super().__init__(folder, dim)
        self.parent = os.getpid()

    def encode(self, texts, **kw):
        if os.getpid() != self.parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().encode(texts, **kw)


class FailingEncoder(HashingEncoder):
    """Raises a user-facing error in the worker (as a model that cannot load there would)."""

    def encode(self, texts, **kw):
        raise ConfigError("model folder not found on this worker: /nowhere")


@pytest.fixture()
def enc(tmp_path):
    return HashingEncoder(tmp_path / "model")


def _vectors(path: Path) -> tuple[np.ndarray, np.ndarray]:
    store = IndexStore.open(path)
    try:
        return np.array(store.units("sentence").vectors[:]), np.array(store.units("section").vectors[:])
    finally:
        store.close()


def test_process_encoder_gives_the_one_process_vectors_in_order(enc):
    texts = [f"text {i} " + "word " * (i % 17) for i in range(300)] + ["", "same", "same"]
    with ProcessEncoder(enc, 2) as pe:
        got = pe.encode(texts, batch_size=8)
        assert pe.encode([], batch_size=8).shape == (0, enc.dim)
    np.testing.assert_array_equal(got, enc.encode(texts))
    chunks = length_chunks(texts, 8)
    assert sorted(np.concatenate(chunks).tolist()) == list(range(len(texts)))
    assert all(len(c) <= 64 for c in chunks) and len(texts[chunks[0][0]]) == max(map(len, texts))


def test_build_and_add_with_workers_equal_one_process(tmp_path, enc):
    one, two = tmp_path / "one", tmp_path / "two"
    build_index(one, _reports(40), encoder=enc, progress=False)
    summary = build_index(two, _reports(40), encoder=enc, progress=False, workers=2)
    assert summary.reports == 40
    add_to_index(one, _reports(10, 40), encoder=enc, progress=False)
    add_to_index(two, _reports(10, 40), encoder=enc, progress=False, workers=2)
    for a, b in zip(_vectors(one), _vectors(two)):
        assert a.shape == b.shape and len(a) > 0
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_a_worker_that_dies_fails_the_build_in_one_line_with_nothing_committed(tmp_path):
    dying = DyingEncoder(tmp_path / "model")
    path = tmp_path / "idx"
    build_index(path, _reports(8), encoder=dying, progress=False)  # one process: no worker, no death
    before = read_current(path)
    with pytest.raises(EncodeWorkerError) as err:
        add_to_index(path, _reports(30, 8), encoder=dying, progress=False, workers=2)
    message = str(err.value)
    assert "\n" not in message and "killed by signal 9" in message and "committed nothing" in message
    assert read_current(path) == before
    store = IndexStore.open(path)
    assert len(store.report_ids) == 8
    store.close()
    fresh = tmp_path / "fresh"
    with pytest.raises(EncodeWorkerError):
        build_index(fresh, _reports(30), encoder=dying, progress=False, workers=2)
    assert not (fresh / "CURRENT").exists()


def test_an_error_in_a_worker_reaches_the_caller_as_itself(tmp_path):
    path = tmp_path / "idx"
    with pytest.raises(ConfigError, match="not found on this worker: /nowhere"):
        build_index(path, _reports(5), encoder=FailingEncoder(tmp_path / "model"), progress=False, workers=2)
    assert not (path / "CURRENT").exists()


def test_bad_worker_counts_are_refused_before_the_folder_is_touched(tmp_path, enc):
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ConfigError, match="--workers"):
            build_index(tmp_path / "x", _reports(3), encoder=enc, progress=False, workers=bad)
    assert not (tmp_path / "x").exists()


def test_worker_loaders_and_threads(tmp_path, enc, monkeypatch):
    assert worker_loader(enc)() is enc  # a small encoder travels as itself
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert (worker_threads(2), worker_threads(3), worker_threads(16), worker_threads(2, 3)) == (4, 2, 1, 3)


def test_cli_workers_flag(tmp_path, hashing_model):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps({"id": r.id, "sections": dict(r.sections)}) + "\n" for r in _reports(12)))
    runner = CliRunner()
    res = runner.invoke(app, ["index", "build", str(tmp_path / "i"), str(corpus), "--model", str(hashing_model),
                              "--workers", "2", "--no-labels", "--backend", "numpy"])
    assert res.exit_code == 0, res.output
    assert "12 reports" in res.output
    res = runner.invoke(app, ["index", "build", str(tmp_path / "j"), str(corpus), "--workers", "0"])
    assert res.exit_code != 0 and not (tmp_path / "j").exists()


# ------------------------------------------------------------------------------------------- Ray
def _ray_installed() -> bool:
    try:
        ray_encode.require_ray()
    except ray_encode.RayUnavailable:
        return False
    return True


def test_ray_missing_is_one_line_naming_the_extra(tmp_path, enc, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    with pytest.raises(ray_encode.RayUnavailable, match=r"pip install 'radsift\[ray\]'") as err:
        build_index(tmp_path / "x", _reports(3), encoder=enc, progress=False, ray="127.0.0.1:6379")
    assert "\n" not in str(err.value)
    assert not (tmp_path / "x").exists()


def test_a_ray_address_that_does_not_answer_is_refused_before_anything_is_written(tmp_path, enc, monkeypatch):
    monkeypatch.setattr(ray_encode, "require_ray", lambda: None)  # the check itself needs no cluster
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ConfigError, match=f"no Ray cluster answers at 127.0.0.1:{port}") as err:
        build_index(tmp_path / "x", _reports(3), encoder=enc, progress=False, ray=f"127.0.0.1:{port}")
    assert "nothing was written" in str(err.value) and not (tmp_path / "x").exists()
    path = tmp_path / "idx"
    build_index(path, _reports(3), encoder=enc, progress=False)
    before = read_current(path)
    with pytest.raises(ConfigError, match="no Ray cluster answers"):
        add_to_index(path, _reports(3, 3), encoder=enc, progress=False, ray=f"ray://127.0.0.1:{port}")
    assert read_current(path) == before
    with pytest.raises(ConfigError, match="expected host:port"):
        build_index(tmp_path / "y", _reports(3), encoder=enc, progress=False, ray="ray://")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path / "no-ray"))
    with pytest.raises(ConfigError, match="no Ray cluster runs on this machine"):
        build_index(tmp_path / "z", _reports(3), encoder=enc, progress=False, ray="auto")


class FlakyRay:
    """A stand-in ``ray`` module whose ``init`` fails the first ``fails`` times, as a busy machine's Ray can."""

    def __init__(self, fails: int) -> None:
        self.fails, self.inits, self.shutdowns, self.up = fails, 0, 0, False

    def is_initialized(self) -> bool:
        return self.up

    def init(self, **kw) -> None:
        self.inits += 1
        if self.inits <= self.fails:
            raise Exception("The current node timed out during startup. This could happen because ...")
        self.up = True

    def shutdown(self) -> None:
        self.shutdowns += 1
        self.up = False


def test_a_local_ray_that_misses_its_start_once_is_started_again(monkeypatch):
    flaky = FlakyRay(fails=1)
    monkeypatch.setattr(ray_encode, "require_ray", lambda: flaky)
    with ray_encode.ray_session("local") as ray:
        assert ray is flaky and flaky.up and flaky.inits == 2
    assert not flaky.up  # the session it started is shut down after the block
    never = FlakyRay(fails=ray_encode.LOCAL_START_TRIES)
    monkeypatch.setattr(ray_encode, "require_ray", lambda: never)
    with pytest.raises(ConfigError, match="--ray local: cannot connect .Exception: The current node timed out") as err:
        with ray_encode.ray_session("local"):
            pass
    assert "\n" not in str(err.value) and never.inits == ray_encode.LOCAL_START_TRIES
    remote = FlakyRay(fails=1)  # a cluster's address is tried once: the address check ran just before
    monkeypatch.setattr(ray_encode, "require_ray", lambda: remote)
    with pytest.raises(ConfigError, match="--ray 10.0.0.1:6379: cannot connect"):
        with ray_encode.ray_session("10.0.0.1:6379"):
            pass
    assert remote.inits == 1


class PlainFailingEncoder(HashingEncoder):
    """Raises an error that is not radsift's in the worker (a bug, a broken library)."""

    def encode(self, texts, **kw):
        raise ValueError("tokenizer exploded")


@pytest.mark.slow
def test_ray_local_builds_one_segment_a_task_as_one_process(tmp_path, enc, monkeypatch):
    if not _ray_installed():
        pytest.skip("ray is not installed (pip install 'radsift[ray]'): the Ray local-mode build is not tested here")
    # Ray's workers import what they run by name: the test encoders' module too (a spawned process gets the
    # parent's sys.path; a Ray worker only its environment)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent), *sys.path]))
    one, viaray = tmp_path / "one", tmp_path / "ray"
    build_index(one, _reports(30), encoder=enc, progress=False)
    with ray_encode.ray_session("local"):  # one Ray held up for the build and its faults, as a cluster stays up
        summary = build_index(viaray, _reports(30), encoder=enc, progress=False, ray="local", workers=2, threads=1)
        assert summary.segments == 2 and len(list((viaray / "segments").iterdir())) == 2
        for a, b in zip(_vectors(one), _vectors(viaray)):
            np.testing.assert_allclose(a, b, atol=1e-6)
        a, b = IndexStore.open(one), IndexStore.open(viaray)
        assert a.report_ids == b.report_ids and np.array_equal(a.labels().status, b.labels().status)
        a.close()
        b.close()
        before = read_current(viaray)
        with pytest.raises(ConfigError, match="not found on this worker: /nowhere") as err:  # a radsift error: itself
            add_to_index(viaray, _reports(5, 30), encoder=FailingEncoder(tmp_path / "model"), progress=False,
                         ray="local", workers=2, threads=1)
        assert "\n" not in str(err.value) and read_current(viaray) == before
        killed = "a Ray build task failed .WorkerCrashedError: .*committed nothing"
        with pytest.raises(EncodeWorkerError, match=killed) as err:
            add_to_index(viaray, _reports(5, 30), encoder=DyingEncoder(tmp_path / "model"), progress=False,
                         ray="local", workers=2, threads=1)
        assert "\n" not in str(err.value) and read_current(viaray) == before
        assert sorted(p.name for p in (viaray / "segments").iterdir()) == sorted(
            s["name"] for s in json.loads((before / "manifest.json").read_text())["segments"])  # none of it left
        with pytest.raises(EncodeWorkerError, match="a Ray build task failed .ValueError: tokenizer exploded") as err:
            build_index(tmp_path / "bad", _reports(5), encoder=PlainFailingEncoder(tmp_path / "m2"), progress=False,
                        ray="local", workers=2, threads=1)
        assert "\n" not in str(err.value) and "committed nothing" in str(err.value)
        assert not (tmp_path / "bad" / "CURRENT").exists() and not list((tmp_path / "bad").glob("segments/*"))
    # each task renames its segment into place, then dies; a Ray started for the build: its workers see the
    # variable (the held Ray's workers started before it was set)
    monkeypatch.setenv("RADSIFT_FAULT", "segment-written")
    with pytest.raises(EncodeWorkerError, match=killed):
        add_to_index(viaray, _reports(5, 30), encoder=enc, progress=False, ray="local", workers=2, threads=1)
    monkeypatch.delenv("RADSIFT_FAULT")
    assert read_current(viaray) == before and sorted(p.name for p in (viaray / "segments").iterdir()) == sorted(
        s["name"] for s in json.loads((before / "manifest.json").read_text())["segments"])  # none of it left


class DiesOnceEncoder(HashingEncoder):
    """Kills the first worker that encodes (SIGKILL), then encodes: a build that retried the killed share
    would succeed."""

    def __init__(self, folder, marker: Path) -> None:
        super().__init__(folder)
        self.parent, self.marker = os.getpid(), str(marker)

    def encode(self, texts, **kw):
        if os.getpid() != self.parent:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                pass
            else:
                os.kill(os.getpid(), signal.SIGKILL)
        return super().encode(texts, **kw)


class LateEncoder(DiesOnceEncoder):
    """The first worker that encodes fails at once; the other writes its segment 2 s later unless stopped."""

    def encode(self, texts, **kw):
        if os.getpid() != self.parent and not getattr(self, "slept", False):  # once a worker (its own copy)
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                time.sleep(2)
                self.slept = True
            else:
                raise ValueError("first share broken")
        return HashingEncoder.encode(self, texts, **kw)


@pytest.mark.slow
def test_ray_never_retries_a_share_and_leaves_no_late_segment(tmp_path, monkeypatch):
    if not _ray_installed():
        pytest.skip("ray is not installed (pip install 'radsift[ray]'): the Ray local-mode build is not tested here")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent), *sys.path]))
    once = DiesOnceEncoder(tmp_path / "model", tmp_path / "died")
    with ray_encode.ray_session("local"):  # held up: the late task is stopped by the build, not by Ray's end
        with pytest.raises(EncodeWorkerError, match="a Ray build task failed .WorkerCrashedError: .*committed nothing"):
            build_index(tmp_path / "once", _reports(20), encoder=once, progress=False, ray="local", workers=2,
                        threads=1)
        assert (tmp_path / "died").exists() and not (tmp_path / "once" / "CURRENT").exists()
        assert not list((tmp_path / "once").glob("segments/*"))
        with pytest.raises(EncodeWorkerError, match="ValueError: first share broken"):
            build_index(tmp_path / "late", _reports(20), encoder=LateEncoder(tmp_path / "model", tmp_path / "first"),
                        progress=False, ray="local", workers=2, threads=1)
        time.sleep(8)  # the other share's task, had it gone on, would have written its segment by now
        assert not (tmp_path / "late" / "CURRENT").exists() and not list((tmp_path / "late").glob("segments/*"))


# --------------------------------------------------------------------- thread policy (item 6)
def test_chunks_cover_every_row_once_in_whole_batches_enough_for_every_worker():
    texts = ["a" * (i % 7) for i in range(10000)]
    rows = np.concatenate(length_chunks(texts, 64))
    assert len(rows) == 10000 and len(set(rows.tolist())) == 10000
    assert max(len(c) for c in length_chunks(texts, 64)) == parallel.CHUNK_BATCHES * 64  # a big job: full chunks
    small = length_chunks(texts[:1000], 64, workers=2)  # 8 chunks of 2 batches, not 2 of 8: 4 a worker
    assert [len(c) for c in small[:-1]] == [128] * (len(small) - 1) and len(small) >= 8


def test_openmp_threads_wait_passively_unless_told_otherwise():
    code = "import os, radsift.models.encoder; print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('KMP_BLOCKTIME'))"
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "KMP_BLOCKTIME")}
    run = lambda extra: subprocess.run([sys.executable, "-c", code], env={**env, **extra}, capture_output=True,  # noqa: E731
                                       text=True, check=True).stdout.split()
    assert run({}) == ["PASSIVE", "0"]
    assert run({"OMP_WAIT_POLICY": "ACTIVE"})[0] == "ACTIVE"  # a user's own setting wins
    assert run({"RADSIFT_OMP_DEFAULTS": "0"}) == ["None", "None"]


def test_encoding_threads_follow_the_cores_other_jobs_leave_free(monkeypatch):
    from radsift.models import encoder

    monkeypatch.setattr(encoder, "usable_cores", lambda: 4)
    for runnable, want in ((1, 4), (2, 3), (4, 1), (9, 1)):  # the run queue counts this thread too
        monkeypatch.setattr(encoder, "_runnable_now", lambda r=runnable: r)
        assert encoder.free_cores(samples=3) == want
        assert encoder.encode_threads(None) == want
    assert encoder.encode_threads(3) == 3  # the caller's --threads wins
    samples = iter([1, 9, 1])  # one busy sample among quiet ones is noise: the median
    monkeypatch.setattr(encoder, "_runnable_now", lambda: next(samples))
    assert encoder.free_cores(samples=3) == 4


def test_the_adapt_time_left_is_said_from_measured_steps():
    from radsift.workflows.adapt import _TimeLeft

    said: list[str] = []
    left = _TimeLeft(said.append)
    left("step 20/200 (40 s): loss lexicon 0.5")
    assert said == ["training: 20/200 steps in 40 s: about 6 min left"]
    left("step 40/200 (80 s): loss lexicon 0.4")  # on pace: nothing new to say
    left("something else")
    assert len(said) == 1
    left("step 60/200 (400 s): loss lexicon 0.4")  # the machine got busy: the new pace is said
    assert said[-1] == "training: 60/200 steps in 400 s: about 16 min left"
