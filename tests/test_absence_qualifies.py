"""A finding asked absent beside one asked present qualifies it: it is not asked alone. For "chest port, no
pneumothorax" (queries_v12 dev "chest port inserted, no collapsed lung"), a report stating a port and saying nothing of
a pneumothorax leads one that denies a pneumothorax and names no port; with the findings' tiers summed alike, the two
tied and the denial's similarity to the query put the report without a port first. Both engines agree."""

from __future__ import annotations

import numpy as np
import pytest

from radsift.ranking.tiers import combine, weights
from radsift.records import Report
from radsift.search import candidates

R = [
    # the denial alone, beside a finding (no normal statement: those rank last within a tier anyway)
    Report("denial_only", {"findings": "Hyperexpanded lungs with no chest pneumothorax."}),
    Report("port_only", {"findings": "Right internal jugular port catheter with its tip at the cavoatrial junction, "
                                     "the heart and mediastinum within normal limits, degenerative changes of the "
                                     "thoracic spine and a calcified granuloma in the right upper lobe."}),
    Report("both", {"findings": "Left chest port in place. No pneumothorax."}),
    Report("port_and_ptx", {"findings": "Right chest port. Small right pneumothorax."}),
    Report("clear", {"findings": "Heart size normal. Lungs clear."}),
]


@pytest.fixture(scope="module")
def index(hashing_index_of):
    return hashing_index_of("qualifies", R)


def test_weights_favour_the_findings_asked_present_only_in_a_mixed_query() -> None:
    assert weights(["present", "absent"], 2).tolist() == [3, 1]
    assert weights(["uncertain", "absent"], 2).tolist() == [3, 1]
    assert weights(["present", "present"], 2).tolist() == [1, 1]
    assert weights(["absent", "absent"], 2).tolist() == [1, 1]
    assert weights(None, 2).tolist() == [1, 1]
    # finding present and the absence unstated (1) beats finding unstated (1) and the absence stated (0)
    per = np.array([[0, 1], [1, 0], [0, 2], [0, 0], [0, 3]], dtype=np.int8)
    tiers = combine(per, ["present", "absent"]).tolist()
    assert tiers[0] < tiers[1] and tiers[2] < tiers[1] and tiers[3] < tiers[0]
    assert tiers[4] > max(tiers[:4])  # a denial of what is asked still ranks below all
    # unweighted, as before: the two tie
    assert combine(per, ["present", "present"]).tolist()[0] == combine(per, ["present", "present"]).tolist()[1]


@pytest.mark.parametrize("engine", candidates.ENGINES)
def test_a_report_with_the_device_leads_one_with_the_denial_alone(index, monkeypatch, engine) -> None:
    monkeypatch.setenv(candidates.ENV, engine)
    hits = index.search("chest port, no pneumothorax", k=5, mode="hybrid")
    order = [h.report_id for h in hits]
    assert order[0] == "both"
    assert order.index("port_only") < order.index("denial_only")
    assert order.index("denial_only") < order.index("port_and_ptx")
