"""Issue 32: ``radsift serve`` survives a file of the index truncated under it.

By default the index is served by one forked worker under a supervising parent
(:mod:`radsift.serve.supervisor`): a worker killed by SIGBUS (what a truncated memory map does) is
started again with one log line naming the signal; the new worker, finding the index damaged, answers
503 naming the file (:func:`radsift.serve.app.unavailable_app`) until it can be opened again.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import radsift
from radsift.errors import ConfigError, IndexStoreError
from radsift.index import build_index
from radsift.models.hashing import HashingEncoder
from radsift.records import Report
from radsift.serve.app import unavailable_app
from radsift.serve.guard import SECURITY_HEADERS
from radsift.serve.supervisor import MAX_RESTARTS, REOPEN_EXIT, supervise

TOKEN = "s3cret-token-for-tests-0123456789"
REPORTS = [Report(str(i), {"findings": f"Small right pneumothorax number {i}. No pleural effusion."}) for i in range(40)]


# -- the supervisor alone (forks this process: each worker is a function that exits) ------------------
def _die_by(sig: int) -> None:
    signal.signal(sig, signal.SIG_DFL)  # not pytest's faulthandler: die by the signal itself
    os.kill(os.getpid(), sig)


def test_the_first_workers_error_is_raised_in_the_parent_and_its_info_handed_over():
    def fails(number, replacement, ready):
        raise IndexStoreError("idx/sentence_vectors.npy: 4096 bytes, the manifest recorded 614528")

    with pytest.raises(IndexStoreError, match="4096 bytes, the manifest recorded 614528"):
        supervise(1, fails, on_ready=lambda info: pytest.fail("announced a server that never started"))

    seen = []
    supervise(1, lambda number, replacement, ready: ready({"counts": {"reports": 7}}) or 0, on_ready=seen.append)
    assert seen == [{"counts": {"reports": 7}}]


def test_a_crashed_worker_is_started_again_as_a_replacement_and_a_crash_loop_stops(tmp_path, capfd):
    marks = tmp_path / "marks"

    def crashes_once(number, replacement, ready):
        with marks.open("a") as fh:
            fh.write(f"{replacement}\n")
        ready({})
        if not replacement:
            _die_by(signal.SIGBUS)
        return 0

    supervise(1, crashes_once, on_ready=lambda info: None)
    assert marks.read_text().split() == ["False", "True"]  # the second is a replacement
    err = capfd.readouterr().err
    assert err.count("worker 1 was killed by SIGBUS") == 1 and "starting it again" in err

    def always_crashes(number, replacement, ready):
        ready({})
        _die_by(signal.SIGSEGV)

    with pytest.raises(ConfigError, match="the server process stopped"):
        supervise(1, always_crashes, on_ready=lambda info: None)
    err = capfd.readouterr().err
    assert err.count("); starting it again") == MAX_RESTARTS
    assert "killed by SIGSEGV, 6 times in 60 s; not starting it again" in err


def test_a_worker_asking_to_reopen_is_started_again_without_counting_a_crash(tmp_path, capfd):
    marks = tmp_path / "marks"

    def reopens(number, replacement, ready):
        with marks.open("a") as fh:
            fh.write("x")
        ready({})
        return REOPEN_EXIT if len(marks.read_text()) <= MAX_RESTARTS + 1 else 0

    supervise(1, reopens, on_ready=lambda info: None)
    assert len(marks.read_text()) == MAX_RESTARTS + 2  # more than a crash loop allows: these are no crashes
    assert "the index can be read again" in capfd.readouterr().err


# -- the app a worker serves while the index is damaged ----------------------------------------------
def test_the_unavailable_app_says_503_naming_the_damage_after_the_token_check():
    reason = "idx/segments/seg-000001/sentence_vectors.npy: 4096 bytes, the manifest recorded 614528"
    client = TestClient(unavailable_app(reason, token=TOKEN))
    assert client.get("/api/search", params={"q": "x"}).status_code == 401  # the token first, as always
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for res in (client.get("/api/search?q=pneumothorax", headers=auth), client.get("/api/health", headers=auth),
                client.post("/api/ask", json={"q": "x"}, headers=auth)):
        assert res.status_code == 503 and res.json() == {"detail": reason}
        assert res.headers["retry-after"] == "5"
        assert all(res.headers[k.lower()] == v for k, v in SECURITY_HEADERS.items())
    page = client.get("/")
    assert page.status_code == 503 and "sentence_vectors" not in page.text  # no path to a client without the token


# -- a real server, truncated under it -----------------------------------------------------------------
SERVE_SCRIPT = """
import sys
from pathlib import Path
import radsift.serve.server as server
from radsift.models.hashing import HashingEncoder
from radsift.search import Index
path, model = sys.argv[1:3]

class HashIndex(Index):
    @classmethod
    def open(cls, p, **kwargs):
        return Index.open(p, encoder=HashingEncoder(Path(model)))

server.Index = HashIndex  # the forked worker inherits it
server.run_server(path, port=0)  # the default: one worker under a supervising parent
"""


@pytest.fixture
def live(tmp_path):
    """A one-worker ``radsift serve`` (the default) on a copy of a small index: (process, port, log, index)."""
    enc = HashingEncoder(tmp_path / "model")
    build_index(tmp_path / "idx", REPORTS, encoder=enc, progress=False)
    log = tmp_path / "serve.log"
    proc = subprocess.Popen([sys.executable, "-c", SERVE_SCRIPT, str(tmp_path / "idx"), str(enc.path)],
                            stdout=log.open("w"), stderr=subprocess.STDOUT,
                            env={**os.environ, "PYTHONPATH": str(Path(radsift.__file__).parents[1])})
    try:
        found = _wait_for(lambda: re.search(r"http://127\.0\.0\.1:(\d+)/", log.read_text()), 90)
        assert found, log.read_text()
        yield proc, int(found.group(1)), log, tmp_path / "idx"
    finally:
        left = _workers(proc)
        if proc.poll() is None:
            proc.kill()
        for pid in left:
            if _wait_for(lambda pid=pid: _gone(pid), 10) is False:
                os.kill(pid, signal.SIGKILL)


def _wait_for(what, seconds: float):
    deadline = time.time() + seconds
    while time.time() < deadline:
        got = what()
        if got:
            return got
        time.sleep(0.1)
    return what()


def _get(port: int, path: str) -> tuple[int | str, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return type(exc).__name__, ""


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"  # exited, not reaped yet
    except OSError:
        return True


def _workers(proc) -> list[int]:
    return [int(p) for p in os.popen(f"pgrep -P {proc.pid}").read().split()]


@pytest.mark.slow
def test_a_file_truncated_under_the_default_server_is_a_503_not_a_dead_server(live):
    proc, port, log, idx = live
    search = "/api/search?q=pneumothorax&k=3&mode=dense"
    assert _get(port, search)[0] == 200
    assert f"({len(REPORTS)} reports)" in log.read_text() and "worker processes" not in log.read_text()
    (worker,) = _wait_for(lambda: _workers(proc), 30)
    vectors = next(idx.glob("segments/*/sentence_vectors.npy"))
    original = vectors.read_bytes()

    # Traffic while the file is truncated; a request reading the map at that moment is a real SIGBUS.
    answers: list = []
    stop = threading.Event()

    def traffic() -> None:
        while not stop.is_set():
            answers.append(_get(port, search)[0])

    client = threading.Thread(target=traffic)
    client.start()
    time.sleep(0.5)
    os.truncate(vectors, 128)  # the .npy header is left, the rows are gone
    time.sleep(1.0)
    stop.set()
    client.join()
    assert answers and set(answers) <= {200, 503, "RemoteDisconnected", "ConnectionResetError"}, answers
    if "killed by" not in log.read_text():  # the truncation fell between requests (a 503): crash it as one would
        os.kill(worker, signal.SIGBUS)
    assert _wait_for(lambda: "worker 1 was killed by SIGBUS" in log.read_text(), 30), log.read_text()
    assert proc.poll() is None, log.read_text()

    # The next request is answered: 503 naming the damaged file, by a new worker.
    status, body = _get(port, search)
    assert status == 503 and vectors.name in json.loads(body)["detail"], (status, body)
    assert _workers(proc) and worker not in _workers(proc)
    assert "cannot open the index" in log.read_text()

    # Restored, the index is served again (a fresh worker opens it).
    vectors.write_bytes(original)
    assert _wait_for(lambda: _get(port, search)[0] == 200, 30), log.read_text()
    assert "the index can be read again" in log.read_text()

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    assert not _workers(proc)


@pytest.mark.slow
def test_a_killed_supervisor_leaves_no_worker_holding_the_port(live):
    proc, port, _, _ = live
    assert _get(port, "/api/health")[0] == 200
    (worker,) = _workers(proc)
    proc.kill()  # SIGKILL: the parent cannot pass anything on; the kernel tells the worker (PR_SET_PDEATHSIG)
    proc.wait(10)
    try:
        assert _wait_for(lambda: _gone(worker), 30)
        assert isinstance(_get(port, "/api/health")[0], str)  # nobody listens any more
    finally:
        if not _gone(worker):
            os.kill(worker, signal.SIGKILL)  # an orphan of a failed run must not outlive the test
