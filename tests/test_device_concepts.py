"""Devices clinical notes name and newcomers ask (twenty-sixth session): an IVC filter, a gastric band, an
intra-aortic balloon pump, a ventricular assist device. "gastric lap band"
was linked to a nasogastric tube (a "gastric tube"); MTSamples names these devices in 29 sentences. Sentences written
for these tests; the packaged lexicon and rules, no model."""

from __future__ import annotations

import pytest

from radsift.labels import Labeler
from radsift.search.reading import read_query


@pytest.fixture(scope="module")
def labeler() -> Labeler:
    return Labeler()


@pytest.mark.parametrize("text, finding", [
    ("IVC filter placement in 1999.", "inferior vena cava filter"),
    ("The patient was treated with a Greenfield filter.", "inferior vena cava filter"),
    ("Status post lap band placement, here for a band adjustment.", "gastric band"),
    ("Placement of a right femoral intraaortic balloon pump.", "intra-aortic balloon pump"),
    ("Left ventricular assist device in place.", "ventricular assist device"),
])
def test_the_device_is_stated(labeler, text, finding) -> None:
    assert {m.finding: m.status for m in labeler.label(text)}.get(finding) == "present"


@pytest.mark.parametrize("query, finding", [
    ("gastric lap band", "gastric band"),
    ("IVC filter", "inferior vena cava filter"),
    ("IABP", "intra-aortic balloon pump"),
    ("LVAD", "ventricular assist device"),
])
def test_a_query_naming_the_device_reads_it(labeler, query, finding) -> None:
    assert [f.finding for f in read_query(query, labeler).findings] == [finding]
