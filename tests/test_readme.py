"""The README's examples run as written, on the Open-i reports in ``../shared/data``.

The README is read at collection time: every fenced ``bash`` block (and ``python`` block) is one
test, in README order, all sharing one workspace, so a block can use what an earlier one built
(the quick start's index, say). Each command of a block runs as its own ``bash -c`` in that
workspace, with ``radsift`` from this interpreter's environment on PATH and:

- ``../shared`` linking to the real ``../shared`` (so ``../shared/data/openi/reports.csv`` works);
- ``reports.csv`` linking to the Open-i reports (the "your own reports" of the examples) and
  ``new-reports.csv`` holding a few Open-i reports under new ids (for ``index add``), both made
  at test time (no report text is stored in the repository); ``$READER_OPTIONS`` set to the
  Open-i reader flags.

A command is skipped, with its reason, when it cannot run here:

- it needs a trained model: ``radsift train``, ``--rerank``/``--reranker``/``--bi-encoder``/
  ``--split-from``, or a path under ``models/`` (the README's folder for trained models);
- it starts a server that runs until stopped: ``radsift serve``, ``--serve``;
- it is not a radsift command (``make``, ``pip``, ``curl`` ...);
- its block follows a ``<!-- readme-test: skip REASON -->`` comment (an escape hatch for the
  README's authors).

``index build ... --adapt`` runs with ``--adapt-steps 2`` added: the adapt path runs as written
(training, the model saved in the index, the index built with it) in seconds instead of minutes;
``tests/test_adapt.py`` checks it and docs/measurements.md measures the default. For the build
cache below, ``--adapt`` and its steps do not make another corpus.

A command that fails fails its block's test, naming the README line (the block's other commands
still run, so one run lists every broken example); a ``radsift search`` that finds nothing fails
too (an example that prints "no match" is a broken example). Building the Open-i index takes 5 to
8 minutes on two cores: it is built once, by the first README command that builds it; a later
``index build`` of the same corpus with the same flags (under another index name) gets a copy
instead of a second build. The whole module took 9 minutes on two busy cores, 8 of them the build.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytestmark = [pytest.mark.shared, pytest.mark.slow]

README = Path(__file__).resolve().parents[1] / "README.md"
OPENI_READER = "--format csv --id-column uid --section findings=findings --section impression=impression"
COMMAND_TIMEOUT = 1200  # s; an Open-i build on two busy cores takes about 5 minutes

SKIP_MARKER = re.compile(r"<!--\s*readme-test:\s*skip\b\s*(.*?)\s*-->", re.I)
FENCE = re.compile(r"^```\s*([A-Za-z0-9_+-]*)\s*$")
NEEDS_MODEL_FLAGS = ("--rerank", "--reranker", "--bi-encoder", "--split-from")
SERVER = ("serve", "--serve")


@dataclass
class Block:
    """A fenced code block of the README."""

    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    skip: str | None = None  # reason from a skip marker comment
    commands: list[tuple[int, str]] = field(default_factory=list)  # (README line, command)

    @property
    def id(self) -> str:
        return f"README.md:{self.line}-{self.lang}"


def parse_blocks(text: str) -> list[Block]:
    """The ``bash`` and ``python`` blocks of a Markdown text, with their commands (continuation
    lines joined, comment-only lines dropped)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i].strip())
        if not m or not m.group(1):
            i += 1
            continue
        start, lang = i, m.group(1).lower()
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith("```"):
            j += 1
        body = lines[start + 1:j]
        before = "\n".join(lines[max(0, start - 3):start])
        marker = SKIP_MARKER.search(before)
        if lang in ("bash", "sh", "shell", "console", "python", "py"):
            block = Block(start + 1, "python" if lang in ("python", "py") else "bash", "\n".join(body),
                          skip=(marker.group(1) or "marked skip in the README") if marker else None)
            if block.lang == "bash":
                block.commands = _commands(body, start + 2)
            blocks.append(block)
        i = j + 1
    return blocks


def _commands(body: list[str], first_line: int) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pending, pending_line = "", 0
    for offset, raw in enumerate(body):
        line = raw.rstrip()
        if not pending:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            pending_line = first_line + offset
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        pending += line
        out.append((pending_line, pending.strip().removeprefix("$ ")))
        pending = ""
    if pending:
        out.append((pending_line, pending.strip()))
    return out


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command, comments=True)
    except ValueError:
        return command.split()


def why_skipped(command: str) -> str | None:
    """Why a README command cannot run here (None: it runs)."""
    words = _words(command)
    if not words:
        return "empty"
    if words[0] != "radsift":
        return f"not a radsift command ({words[0]})"
    if len(words) > 1 and words[1] == "train":
        return "trains a model"
    if any(w in SERVER for w in words[1:2]) or "--serve" in words:
        return "starts a server"
    if any(w.split("=")[0] in NEEDS_MODEL_FLAGS for w in words):
        return "needs a trained reranker or fold model"
    if any(re.search(r"(^|[=:\s])models/", w) for w in words):
        return "needs a trained model (models/...)"
    return None


def why_python_skipped(code: str) -> str | None:
    if re.search(r"models/|reranker|rerank=", code):
        return "needs a trained model"
    if "serve" in code or "uvicorn" in code:
        return "starts a server"
    return None


# ---------------------------------------------------------------------------------------------
# The workspace
# ---------------------------------------------------------------------------------------------
class Workspace:
    """One folder where the README's commands run, with Open-i as "your reports"."""

    def __init__(self, root: Path, shared: Path) -> None:
        self.dir = root / "work"
        self.dir.mkdir()
        (root / "shared").symlink_to(shared.parent, target_is_directory=True)  # ../shared from the workspace
        self.cache = root / "built"
        self.cache.mkdir()
        self.builds: dict[tuple, Path] = {}
        self.timings: list[tuple[str, float, str]] = []
        openi = shared / "openi" / "reports.csv"
        (self.dir / "reports.csv").symlink_to(openi)
        self._new_reports(openi, self.dir / "new-reports.csv")
        bin_dir = str(Path(sys.executable).parent)
        self.env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
                    "READER_OPTIONS": OPENI_READER, "COLUMNS": "120"}

    @staticmethod
    def _new_reports(openi: Path, out: Path, n: int = 5) -> None:
        with openi.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            rows = [row for row, _ in zip(reader, range(n))]
        with out.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            for row in rows:
                writer.writerow({**row, "uid": f"new-{row['uid']}"})

    def _build_key(self, words: list[str]) -> tuple | None:
        """``index build DIR CORPUS... FLAGS`` without DIR, paths resolved (None: not a build)."""
        if words[1:3] != ["index", "build"] or len(words) < 4:
            return None
        rest = []
        words = [w for i, w in enumerate(words) if w != "--adapt" and words[i - 1] != "--adapt-steps"
                 and w != "--adapt-steps"]
        for w in words[4:]:
            p = self.dir / w
            rest.append(str(p.resolve()) if not w.startswith("-") and p.exists() else w)
        return tuple(rest)

    def run(self, line: int, command: str) -> subprocess.CompletedProcess | None:
        """Run one README command; a repeated index build is answered from the cache (None)."""
        words = _words(command)
        key = self._build_key(words)
        target = self.dir / words[3] if key is not None else None
        if key is not None and key in self.builds and not target.exists():
            shutil.copytree(self.builds[key], target)
            self.timings.append((f"README.md:{line}", 0.0, "copied the index built before"))
            return None
        if key is not None and "--adapt" in words and "--adapt-steps" not in words:
            command += " --adapt-steps 2"  # the path as written, without minutes of training
        start = time.monotonic()
        out = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=self.dir, env=self.env,
                             capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        self.timings.append((f"README.md:{line}", time.monotonic() - start, command[:70]))
        if key is not None and out.returncode == 0 and key not in self.builds:
            saved = self.cache / f"build-{len(self.builds)}"
            shutil.copytree(target, saved)
            self.builds[key] = saved
        return out


@pytest.fixture(scope="module")
def workspace(shared_data, tmp_path_factory):
    ws = Workspace(tmp_path_factory.mktemp("readme"), shared_data)
    yield ws
    total = sum(t for _, t, _ in ws.timings)
    lines = [f"  {where:>16} {sec:7.1f} s  {what}" for where, sec, what in ws.timings]
    print(f"\nREADME commands ({total:.0f} s in all):\n" + "\n".join(lines))


BLOCKS = parse_blocks(README.read_text(encoding="utf-8")) if README.exists() else []


def test_the_readme_has_runnable_examples():
    assert README.exists(), "README.md is missing"
    runnable = [c for b in BLOCKS if b.lang == "bash" and not b.skip for _, c in b.commands if why_skipped(c) is None]
    assert runnable, "no README command runs without a trained model or a server: the examples are untested"


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_readme_block_runs(block: Block, workspace: Workspace):
    if block.skip:
        pytest.skip(f"{block.id}: {block.skip}")
    if block.lang == "python":
        reason = why_python_skipped(block.text)
        if reason:
            pytest.skip(f"{block.id}: {reason}")
        start = time.monotonic()
        out = subprocess.run([sys.executable, "-c", block.text], cwd=workspace.dir, env=workspace.env,
                             capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
        workspace.timings.append((block.id, time.monotonic() - start, "python block"))
        assert out.returncode == 0, f"{block.id} (python) failed:\n{out.stderr[-3000:]}"
        return
    skipped = [(line, c, why_skipped(c)) for line, c in block.commands if why_skipped(c)]
    runnable = [(line, c) for line, c in block.commands if not why_skipped(c)]
    if not runnable:
        pytest.skip(f"{block.id}: " + "; ".join(f"line {line}: {why}" for line, _, why in skipped))
    failures = []  # every failing command of the block, not only the first
    for line, command in runnable:
        out = workspace.run(line, command)
        if out is None:
            continue
        words = _words(command)
        if out.returncode != 0:
            failures.append(f"README.md:{line} exits {out.returncode}:\n  {command}\n"
                            f"  stderr: {out.stderr[-2000:].strip()}\n  stdout: {out.stdout[-500:].strip()}")
        elif words[1:2] == ["search"]:
            found = (bool(json.loads(out.stdout)["hits"]) if "--json" in words
                     else not out.stdout.lstrip().startswith("no match"))
            if not found:
                failures.append(f"README.md:{line} finds nothing on Open-i:\n  {command}\n  {out.stdout[-300:]}")
    assert not failures, "\n".join(failures)


# ---------------------------------------------------------------------------------------------
# The block reader itself (fast; no data needed)
# ---------------------------------------------------------------------------------------------
SAMPLE = """Text.

```bash
make demo    # not radsift
radsift index build idx reports.csv --format csv \\
    --section findings=findings   # a comment
# a comment line
radsift search idx "pneumothorax" -k 3
radsift serve idx
radsift search idx "x" --rerank 50 --reranker models/rerank
radsift bench --corpus r.csv --systems mine=dense:models/m --out o
```

<!-- readme-test: skip needs a GPU -->
```bash
radsift search idx "effusion"
```

```python
import radsift
```
"""


def test_block_reader_joins_lines_and_classifies_commands():
    blocks = parse_blocks(SAMPLE)
    assert [(b.line, b.lang) for b in blocks] == [(3, "bash"), (15, "bash"), (19, "python")]
    cmds = blocks[0].commands
    assert [line for line, _ in cmds] == [4, 5, 8, 9, 10, 11]
    assert cmds[1][1].startswith("radsift index build idx reports.csv --format csv") and "--section findings" in cmds[1][1]
    assert [why_skipped(c) for _, c in cmds] == [
        "not a radsift command (make)", None, None, "starts a server", "needs a trained reranker or fold model",
        "needs a trained model (models/...)"]
    assert blocks[1].skip == "needs a GPU"
