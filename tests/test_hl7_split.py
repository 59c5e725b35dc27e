"""The HL7 reader's split of a message's segments (:class:`radsift.corpus.hl7_reader.Message`) reads every
field and component as python-hl7's full parse does, on the demo's messages and on awkward ones."""

from __future__ import annotations

import hl7

from radsift.corpus.hl7_reader import Message, _field, split_messages
from radsift.demo import generate_reports
from radsift.demo.feeds import write_feeds

AWKWARD = "\r".join([
    "MSH|^~\\&|RIS|SITE|EHR|SITE|202501021030||ORU^R01^ORU_R01|C1|P|2.5",
    "PID|1||MRN1^^^SITE^MR~OLD9^^^SITE^PI||DOE^JANE||19500101|F",
    "OBR|1|PL1^RIS|ACC1&sub^FILL||||202501021015|||||||||||||||||F",
    "OBR|2||ACC2|^CT CHEST W CONTRAST|||20250102",
    "OBX|1|TX|||line with \\T\\ and \\S\\ escaped \\.br\\next||||||F",
    "OBX|2|FT|||rep one~rep two^comp||",
    "OBX|3",
    "NTE|1||a note",
])


def _messages(tmp_path):
    paths = write_feeds([d.report for d in generate_reports(n=30, seed=2)], tmp_path)
    return [raw for _, raw in split_messages(paths["reports.hl7"].read_text())] + [AWKWARD]


def test_every_field_and_component_reads_as_python_hl7_reads_it(tmp_path):
    compared = 0
    for raw in _messages(tmp_path):
        full = hl7.parse(raw)
        light = Message(raw)
        segments = [s for s in full if str(s[0]) != "MSH"]
        assert [s[0] for s in light.segments] == [str(s[0]) for s in segments]
        for ours, theirs in zip(light.segments, segments):
            for index in range(0, 30):
                for component in (None, 0, 1, 2, 3):
                    assert light.field(ours, index, component) == _field(theirs, index, component), (ours[0], index,
                                                                                                     component)
                    compared += 1
        msh = full.segment("MSH")
        for index in range(0, 14):
            for component in (None, 0, 1, 2):
                assert light.field(light.msh, index, component) == _field(msh, index, component), ("MSH", index)
        assert light.field(light.msh, 9).startswith("ORU^R01") and type(light.msh) is list
        assert light.unescape("a\\T\\b\\.br\\c") == full.unescape("a\\T\\b\\.br\\c")
    assert compared > 10000
    light, full = Message(AWKWARD), hl7.parse(AWKWARD)
    obx = light.segments[3]
    assert light.unescape(light.field(obx, 5)) == full.unescape(_field(full[4], 5))
    assert light.unescape(light.field(obx, 5)).startswith("line with & and ^ escaped")  # \\T\\ and \\S\\
    assert light.field(light.segments[0], 3, 0) == "MRN1" and light.field(light.segments[1], 3, 0) == "ACC1&sub"


def test_an_odd_header_is_read_by_python_hl7_as_before():
    raw = "MSH|^|A|B|C|D|2025||ORU^R01|X\rOBR|1||ACC"
    light, full = Message(raw), hl7.parse(raw)
    assert type(light.msh) is not list  # not five distinct separators: python-hl7's reading
    assert [light.field(light.msh, i) for i in range(12)] == [_field(full.segment("MSH"), i) for i in range(12)]
