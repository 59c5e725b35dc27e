"""FHIR validation once per shape (:mod:`radsift.corpus.fhir_validate`) gives ``fhir.resources``' verdict on
every resource: broken values, structures and extensions are refused alike, with its own error."""

from __future__ import annotations

import copy
import json
import random

import pytest

from radsift.corpus.fhir_validate import ShapeValidator
from radsift.demo import generate_reports
from radsift.demo.feeds import write_feeds

DiagnosticReport = pytest.importorskip("fhir.resources.R4B.diagnosticreport").DiagnosticReport

BAD_VALUES = ["2025-13-45", "has space", "", "   ", 5, 1.5, True, None, {"x": 1}, ["a"], "2025-02-30T10:00:00Z",
              "not base64 !!", "urn:x", "0" * 70, "final", "Patient/", "\u0000"]


def _resources(tmp_path, n=40):
    paths = write_feeds([d.report for d in generate_reports(n=n, seed=5)], tmp_path)
    return [json.loads(line) for line in paths["reports.ndjson"].read_text().splitlines()]


def _leaves(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, path + (i,))
    else:
        yield path


def _set(resource, path, value):
    out = copy.deepcopy(resource)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return out


def _verdict(validate, resource):
    try:
        validate(resource)
        return "ok"
    except Exception as exc:  # pydantic's ValidationError (fhir.resources raises a KeyError for an unknown type)
        if not hasattr(exc, "errors"):
            return f"{type(exc).__name__}: {exc}"
        return json.dumps([(e["loc"], e["type"]) for e in exc.errors()], default=str)


def test_every_broken_value_gets_the_same_verdict_and_error(tmp_path):
    resources = _resources(tmp_path)
    shaped = ShapeValidator(DiagnosticReport)
    for r in resources:  # every shape seen (and passed) once
        shaped(r)
    rng = random.Random(0)
    tried = refused = 0
    for r in resources:
        for path in _leaves(r):
            if path == ("resourceType",):
                continue
            for bad in rng.sample(BAD_VALUES, 6):
                broken = _set(r, path, bad)
                whole = _verdict(DiagnosticReport.model_validate, broken)
                assert _verdict(shaped, broken) == whole, (path, bad)
                tried += 1
                refused += whole != "ok"
    assert tried > 2000 and refused > tried // 3  # most of these breakages are refused: the check has teeth


@pytest.mark.parametrize("change", [
    {"status": None}, {"effectivePeriod": {"start": "2025-01-01"}}, {"unknown": 1}, {"_status": {"extension": []}},
    {"contained": [{"resourceType": "Patient", "id": "p1"}]}, {"contained": [{"resourceType": "Nope"}]},
    {"category": [None]}, {"presentedForm": []}, {"resourceType": "Observation"}, {"code": {"coding": [{}]}},
    {"identifier": {"value": "x"}}, {"subject": {"reference": "Patient/1", "display": None}},
    {"extension": [{"url": "http://x", "valueString": "y"}]}, {"extension": [{"url": "http://x", "valueString": 3}]},
])
def test_structures_get_the_same_verdict(tmp_path, change):
    base = _resources(tmp_path, n=2)
    shaped = ShapeValidator(DiagnosticReport)
    for r in base:
        shaped(r)
    for r in base:
        changed = {**r, **change}
        assert _verdict(shaped, changed) == _verdict(DiagnosticReport.model_validate, changed)
        assert _verdict(shaped, changed) == _verdict(DiagnosticReport.model_validate, changed)  # its shape seen


def test_a_shape_is_validated_whole_once(tmp_path, monkeypatch):
    resources = _resources(tmp_path)
    calls = []
    real = DiagnosticReport.model_validate

    class Counting:
        model_fields = DiagnosticReport.model_fields

        @staticmethod
        def model_validate(r):
            calls.append(r["id"])
            return real(r)

    shaped = ShapeValidator(Counting)
    for r in resources:
        shaped(r)
    assert 0 < len(calls) < len(resources) // 2  # the demo feed has a few shapes


def _full_passes(validate, value):
    try:
        validate(value)
        return True
    except Exception:  # pydantic's ValidationError
        return False


def _times():
    """Dates and times around every edge the plain form draws (days past a month's end, leap years, offsets,
    fractions, leap seconds, 24:00, other digits, trailing newlines), and random ones."""
    rng = random.Random(3)
    days = [(y, m, d) for y in (1, 1900, 2000, 2023, 2024, 9999) for m in (1, 2, 4, 12, 13) for d in (0, 1, 28, 29, 30, 31, 32)]
    out = [f"{y:04d}-{m:02d}-{d:02d}T10:20:30Z" for y, m, d in days] + ["0000-01-01T00:00:00Z"]
    for clock in ("00:00:00", "23:59:59", "24:00:00", "12:60:00", "12:00:60", "23:59:60", "9:00:00", "12:00"):
        for zone in ("Z", "+00:00", "-05:00", "+13:59", "+14:00", "-14:00", "+14:01", "+15:00", "", "+0500", "z"):
            out.append(f"2024-02-29T{clock}{zone}")
    out += ["2025-03-07", "2025-03", "2025", "2025-03-07T10:20:30.123Z", "2025-03-07T10:20:30Z\n", " 2025-03-07T10:20:30Z",
            "２０２５-03-07T10:20:30Z", "2025-03-07t10:20:30Z", "2025-03-07 10:20:30Z", 20250307, None, ""]
    for _ in range(3000):
        y, m, d = rng.randint(0, 9999), rng.randint(0, 13), rng.randint(0, 32)
        h, mi, s = rng.randint(0, 25), rng.randint(0, 61), rng.randint(0, 61)
        zone = rng.choice(["Z", f"{rng.choice('+-')}{rng.randint(0, 15):02d}:{rng.randint(0, 60):02d}"])
        out.append(f"{y:04d}-{m:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}{zone}")
    return out


def test_plain_times_and_base64_pass_only_what_their_validators_pass():
    from fhir_core.types import (
        Base64BinaryType,
        DateTimeType,
        InstantType,
        PositiveIntType,
    )
    from pydantic import TypeAdapter

    from radsift.corpus.fhir_validate import fast_accept

    rng = random.Random(4)
    b64 = ["", "QQ==", "QQ=", "QQ", "QUJD", "QUJD\n", "QU JD", "QUJD====", "QQ==QQ==", "é", "****", 5, None]
    b64 += ["".join(rng.choice("ABCab019+/= \n") for _ in range(rng.randint(0, 12))) for _ in range(3000)]
    for kind, values in ((DateTimeType, _times()), (InstantType, _times()), (Base64BinaryType, b64)):
        check, full = fast_accept(kind), TypeAdapter(kind).validator.validate_python
        assert check is not None
        accepted = [v for v in values if check(v)]
        assert len(accepted) > 100  # the check passes the plain form...
        assert all(_full_passes(full, v) for v in accepted)  # ...and only what the validator passes
    assert fast_accept(PositiveIntType) is None  # a type without a check keeps its validator alone
    # the one regex the shapes' functions call on times held as strings: the plain form less its leap days
    from radsift.corpus import fhir_validate

    times = [v for v in _times() if isinstance(v, str)]
    regex = [v for v in times if fhir_validate._PLAIN_DAY_TIME.fullmatch(v)]
    assert regex == [v for v in times if fhir_validate._plain_time(v) and v[5:10] != "02-29"] and len(regex) > 100


def _strings(rng):
    """Strings around the edges of the string types' patterns: empty, blank, controls, Unicode spaces, C1
    controls, lone surrogates, non-ASCII, id lengths 64/65/255/256, and random mixes of them."""
    alphabet = list("aZ09-._ /:|") + ["\t", "\n", "\r", "\x0b", "\x0c", "\x00", "\x1c", "\x7f", "\x85", "\x9f",
                                     "\xa0", "\xe9", "\u2028", "\u3000", "\ud800", "\udfff", "\ufeff", "\U0001f600",
                                     "  "]
    out = ["", " ", "a", " a", "a ", "a b", "a  b", "a\nb", "\x85a", "a\x85", "\xa0", "\xe9", "\ud800", "a\ud800",
           "x" * 64, "x" * 65, "x" * 255, "x" * 256, "urn:uuid:53fefa32-fcbb-4ff8-8a92-55ee120877b7", 5, None, b"a"]
    out += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(4000)]
    return out


def test_plain_strings_pass_only_what_their_validators_pass(monkeypatch):
    from fhir_core.types import CodeType, IdType, MarkdownType, StringType, UriType
    from pydantic import TypeAdapter

    from radsift.corpus import fhir_validate

    values = _strings(random.Random(5))
    for kind in (StringType, MarkdownType, CodeType, UriType, IdType):
        check, full = fhir_validate.fast_accept(kind), TypeAdapter(kind).validator.validate_python
        name = fhir_validate._fast_name(kind)
        accepted = [v for v in values if check(v)]
        assert len(accepted) > 50, kind  # the check passes the plain form...
        assert all(_full_passes(full, v) for v in accepted), kind  # ...and only what the validator passes
        # the regex the shapes' functions call on strings, and the expression they try first, pass no more
        regex = [v for v in values if type(v) is str and fhir_validate._PLAIN_STR[name](v)]
        inline = fhir_validate._INLINE.get(name)
        first = [v for v in values if type(v) is str and inline and eval(inline.format("v"))]
        assert all(_full_passes(full, v) for v in first), kind
        assert set(regex) | set(first) == set(accepted) and (not inline or len(first) > 50)
    refused = [v for v in values if isinstance(v, str) and not _full_passes(TypeAdapter(StringType).validator
                                                                           .validate_python, v)]
    assert len(refused) > 100  # the random strings reach the refusals too
    import fhir_core.constraints

    monkeypatch.setattr(fhir_core.constraints, "TYPES_ID_PATTERN", r"^[0-9]+$")  # a patched id: no fast check
    assert fhir_validate.fast_accept(IdType) is None


def test_strict_base64_gives_the_bytes_of_the_value_it_is_given():
    import base64
    import binascii

    from radsift.corpus import fhir_validate

    check = fhir_validate.FAST_ACCEPT["base64Binary"]
    a, b = base64.b64encode(b"first").decode(), base64.b64encode(b"second").decode()
    assert check(a)
    assert fhir_validate.strict_base64(a) == b"first"  # the bytes validation decoded
    assert fhir_validate.strict_base64(b) == b"second"  # another string: decoded here
    assert fhir_validate.strict_base64("".join(a)) == b"first"  # an equal string, not the same object
    assert not check("not base64 !!")
    assert fhir_validate.strict_base64(a) == b"first"
    with pytest.raises(binascii.Error):
        fhir_validate.strict_base64("not base64 !!")
