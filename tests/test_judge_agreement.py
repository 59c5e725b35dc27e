"""benchmarks/judge_agreement.py: the share two judges agree on and Cohen's kappa, over the pairs both judged."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from judge_agreement import agreement, main  # noqa: E402


def test_agreement_and_kappa_by_split():
    first = {"a": {"1": 1, "2": 1, "3": 0, "4": 0}, "b": {"5": 1, "6": 0}}
    second = {"a": {"1": 1, "2": 0, "3": 0, "4": 0, "9": 1}, "b": {"5": 1, "6": 1}}  # "9": judged once only
    got = agreement(first, second, {"a": "dev", "b": "test"})
    assert got["dev"]["pairs"] == 4 and got["dev"]["table"] == {"0,0": 2, "0,1": 0, "1,0": 1, "1,1": 1}
    assert got["dev"]["agreement"] == pytest.approx(0.75)
    # chance: first says 1 on 1/2, second on 1/4 -> 1/2 * 1/4 + 1/2 * 3/4 = 1/2; kappa (0.75 - 0.5) / 0.5
    assert got["dev"]["kappa"] == pytest.approx(0.5)
    assert got["test"]["table"] == {"0,0": 0, "0,1": 1, "1,0": 0, "1,1": 1}
    assert got["all"]["pairs"] == 6 and got["all"]["agreement"] == pytest.approx(4 / 6)


def test_the_packaged_second_judge_is_read_against_v16(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "| all | 490 |" in out
