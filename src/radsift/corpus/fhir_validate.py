"""FHIR validation with ``fhir.resources``, once per shape: the same verdicts at a fraction of the cost.

Validating a ``DiagnosticReport`` with ``fhir.resources`` builds about eight pydantic models per resource
(its codings, references, attachments), most of it the same work for every report of a feed. What that
validation decides splits in two:

* **structure**: which elements are present, nested how, as objects, lists or values, and which are
  null (unknown elements, cardinality, required elements, one value of a choice ``effective[x]``, no null
  inside a list of complex elements). It depends only on the resource's *shape*: its keys, its list
  lengths and the JSON type of each value;
* **values**: each primitive value against its FHIR type (``id``, ``dateTime``, ``code``, ``string``, ...):
  pydantic's own validator of that type, at that place.

So :class:`ShapeValidator` validates the first resource of each shape whole (``Model.model_validate``),
then records, for that shape, each primitive value's place and its ``fhir.resources`` type; a later
resource of the same shape has its primitive values validated by those types alone. A shape it cannot map
to types (a contained resource, a primitive's ``_extension``, anything unexpected) is validated whole every
time. A value its type has passed before is not validated again (a feed repeats its codes, systems and
statuses on every report; the types are pure functions of the value). A value that fails is validated whole
again, so the error is ``fhir.resources``' own, located.

Three types a feed writes new on every report are the costly ones (``dateTime``, ``instant``: a regex, a
leap-second check and pydantic's date-time parse; ``base64Binary``: a decode): a value of the plain form
that their validators are known to pass (a real calendar day, ``YYYY-MM-DDThh:mm:ss`` and ``Z`` or an offset
within FHIR's range, no fraction, no leap second; base64 that decodes strictly) passes without them
(:func:`fast_accept`); any other value goes to the validator.
``tests/test_fhir_validate.py`` checks that both give the same verdict on resources with broken values.

Telling a resource's shape by walking it costs more than validating its new values; so each shape with a
plan also gets a *matcher* (:func:`matcher`): a function written for that shape, which returns the plan's
values when a resource has exactly that shape (the same keys in the same order, list lengths and JSON
types, the same ``resourceType``) and None otherwise. The last shape's matcher is tried first; a resource
it refuses is walked as before.
"""

from __future__ import annotations

import base64
import binascii
import re
import types
import typing
from itertools import compress
from operator import itemgetter, not_
from typing import Any

from pydantic import TypeAdapter

#: Shapes remembered at most (a feed has a handful; a hostile file cannot grow memory past this).
MAX_SHAPES = 4096
#: Values a type has passed, remembered per type at most, and the longest remembered (a feed repeats its
#: codes, systems and statuses on every report; its ids, times and texts are new each time).
MAX_PASSED, MAX_PASSED_LENGTH = 20_000, 200
_UNSEEN = object()
_NESTED = (dict, list)
_OBJECT, _LIST, _END = object(), object(), object()  # markers of _shape: not strings, not types
# A dateTime or instant of the plain form: a day, hh:mm:ss, Z or an offset FHIR allows (to 14:00); year 0000 and
# leap seconds are not plain ([0-9], not \d: no other digits)
_PLAIN_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
                         r"(?:Z|[+-](?:(?:0[0-9]|1[0-3]):[0-5][0-9]|14:00))")
_SECOND = itemgetter(1)  # a check's passed values
# every real "MM-DD" of a year (02-29 too: its year is checked apart)
_MONTH_DAYS = frozenset(f"{m:02d}-{d:02d}" for m, days in enumerate((31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31), 1)
                        for d in range(1, days + 1))
# A plan: for each primitive value the whole validation checks, its type's validator and passed values; the
# shape's matcher; and each value's index among the resource's leaves (its primitive values in document
# order, as _walk lists them).
_Plan = tuple[list[tuple[Any, set]], tuple, list[int]]


def _shape(value: Any) -> tuple:
    """The structure of a JSON value: its keys in order, list lengths and each value's JSON type, as one flat
    tuple (an object is ``_OBJECT``, its keys each followed by its value's structure, then ``_END``; a list is
    ``_LIST``, its items' structures, ``_END``; a primitive is its type: keys in another order are another
    shape). Keys are strings and nothing else is, so two values have equal tuples only when their structures
    are equal."""
    out: list = []
    _walk(value, out, [])
    return tuple(out)


def _walk(value: Any, out: list, leaves: list) -> None:
    """Append :func:`_shape`'s items of ``value`` to ``out`` and its primitive values (nulls included) to
    ``leaves`` in document order: two values of one shape have their leaves at the same indexes. One flat
    list, not a tuple per object and key: far fewer objects made per resource."""
    if type(value) is dict:
        out.append(_OBJECT)
        for k, v in value.items():
            out.append(k)
            if type(v) in _NESTED:
                _walk(v, out, leaves)
            else:
                leaves.append(v)
                out.append(type(v))
        out.append(_END)
    elif type(value) is list:
        out.append(_LIST)
        for v in value:
            if type(v) in _NESTED:
                _walk(v, out, leaves)
            else:
                leaves.append(v)
                out.append(type(v))
        out.append(_END)
    else:
        leaves.append(value)
        out.append(type(value))


def _plain_time(value: Any) -> bool:
    """True for a ``dateTime``/``instant`` of the plain form (see the module docstring): its validators pass it."""
    if type(value) is not str:
        return False
    if _PLAIN_TIME.fullmatch(value) is None or value[5:10] not in _MONTH_DAYS or value.startswith("0000"):
        return False
    if value[5:10] != "02-29":
        return True
    year = int(value[:4])
    return not (year % 4 or year % 100 == 0 and year % 400)


_last_decoded: tuple[Any, bytes] = (None, b"")  # the value _plain_base64 decoded last, and its bytes


def _plain_base64(value: Any) -> bool:
    """True for a string that decodes as strict base64 (pydantic's lax decode of it then cannot fail)."""
    global _last_decoded
    if type(value) is not str:
        return False
    try:
        _last_decoded = (value, base64.b64decode(value, validate=True))  # one tuple: read whole or not at all
    except (binascii.Error, ValueError):  # not base64, or not ASCII
        return False
    return True


def strict_base64(value: str) -> bytes:
    """``base64.b64decode(value, validate=True)``: the bytes validation decoded, when it decoded this very
    string last (a report's attachment is validated just before it is read), else decoded here.

    Raises:
        binascii.Error, ValueError: Not base64 (or not ASCII).
    """
    last, data = _last_decoded
    if last is value:
        return data
    return base64.b64decode(value, validate=True)


#: For a ``fhir.resources`` type (by its ``__visit_name__``), a check that passes only values its validator
#: passes (``tests/test_fhir_validate.py`` compares them); a value it does not pass goes to the validator.
FAST_ACCEPT = {"dateTime": _plain_time, "instant": _plain_time, "base64Binary": _plain_base64}


def fast_accept(kind: Any):
    """The :data:`FAST_ACCEPT` check of a type annotation (``Annotated[..., DateTime()]``), or None."""
    for meta in typing.get_args(kind)[1:]:
        check = FAST_ACCEPT.get(getattr(meta, "__visit_name__", None))
        if check is not None:
            return check
    return None


def _checked(check, full):
    """A validator that passes what ``check`` passes without calling ``full``, and calls ``full`` on the rest."""

    def validate(value: Any) -> None:
        if not check(value):
            full(value)

    return validate


def _leaf_paths(value: Any, path: tuple = ()) -> list[tuple]:
    """The paths of :func:`_walk`'s leaves, in its order."""
    if type(value) is dict:
        return [p for k, v in value.items() for p in _leaf_paths(v, path + (k,))]
    if type(value) is list:
        return [p for i, v in enumerate(value) for p in _leaf_paths(v, path + (i,))]
    return [path]


def _inner(annotation: Any) -> tuple[Any, bool] | None:
    """``(type, is_list)`` of a field's annotation with Optional and List taken off; None when it is another
    union (a choice the data decides)."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1:
            return None
        annotation = rest[0]
    if typing.get_origin(annotation) in (list, typing.List):
        (item,) = typing.get_args(annotation)
        return item, True
    return annotation, False


def matcher(sample: Any, paths: list[tuple]) -> Any:
    """A function of one argument that returns the values at ``paths`` (a tuple, in their order) of a value
    whose :func:`_shape` is ``sample``'s, and None for any other value.

    The function's text is written from the sample's structure; keys and types are its constants (never text
    of the data), so any keys are safe.
    """
    consts: list = []
    lines: list[str] = []
    where: dict[tuple, str] = {}

    def const(value: Any) -> str:
        consts.append(value)
        return f"C[{len(consts) - 1}]"

    def visit(value: Any, var: str, path: tuple) -> None:
        if type(value) is dict:
            lines.append(f"if type({var}) is not dict or tuple({var}) != {const(tuple(value))}: return None")
            if value:
                names = [f"{var}_{i}" for i in range(len(value))]
                lines.append(f"{', '.join(names)}, = {var}.values()")
                for name, (k, v) in zip(names, value.items()):
                    visit(v, name, path + (k,))
        elif type(value) is list:
            lines.append(f"if type({var}) is not list or len({var}) != {len(value)}: return None")
            if value:
                names = [f"{var}_{i}" for i in range(len(value))]
                lines.append(f"{', '.join(names)}, = {var}")
                for i, (name, v) in enumerate(zip(names, value)):
                    visit(v, name, path + (i,))
        else:
            lines.append(f"if type({var}) is not {const(type(value))}: return None")
            where[path] = var

    visit(sample, "v", ())
    body = "\n    ".join(lines + [f"return ({''.join(where[p] + ', ' for p in paths)})"])
    namespace: dict = {"C": consts}
    exec(f"def match(v):\n    {body}\n", namespace)  # noqa: S102 - our own text; the data are constants
    return namespace["match"]


class ShapeValidator:
    """Validate resources as ``model.model_validate`` does (see the module docstring), raising its errors.

    A value its type has passed before passes again without being validated (the types are pure functions
    of the value; at most ``MAX_PASSED`` values of up to ``MAX_PASSED_LENGTH`` characters per type).

    Args:
        model: A ``fhir.resources`` model class (e.g. R4B's ``DiagnosticReport``).
    """

    def __init__(self, model) -> None:
        self.model = model
        self._plans: dict[Any, _Plan | None] = {}
        self._adapters: dict[int, tuple[Any, set]] = {}  # by id: an annotation's metadata may not hash
        self._last: tuple | None = None  # the last planned shape's (matcher, checks, resourceType)

    def __call__(self, resource: dict) -> None:
        last = self._last
        if last is not None and last[2] == resource.get("resourceType"):  # the type's value: part of the shape
            values = last[0](resource)
            if values is not None:  # the last plan's shape exactly: its values, without a walk
                self._check(resource, last[1], values)
                return
        shape: list = [resource.get("resourceType")]  # the type's value decides: part of the shape
        leaves: list = []
        _walk(resource, shape, leaves)
        key = tuple(shape)
        plan = self._plans.get(key, _UNSEEN)
        if plan is _UNSEEN or plan is None:
            self.model.model_validate(resource)  # the first of its shape, or a shape without a plan: whole
            if plan is _UNSEEN and len(self._plans) < MAX_SHAPES:
                self._plans[key] = self._compile(resource)
            return
        self._last = plan[1]
        self._check(resource, plan[0], [leaves[index] for index in plan[2]])

    def _check(self, resource: dict, checks: list, values) -> None:
        """Validate ``values`` (a plan's, in its order) with the plan's types; a failure: the whole
        validation's error."""
        # the values not passed before, told apart without a Python step per value (most were passed before)
        unseen = compress(zip(values, checks), map(not_, map(set.__contains__, map(_SECOND, checks),
                                                             zip(map(type, values), values))))
        try:
            for value, (validate, passed) in unseen:
                validate(value)
                if len(passed) < MAX_PASSED and (type(value) is not str or len(value) <= MAX_PASSED_LENGTH):
                    passed.add((type(value), value))
        except Exception:
            self.model.model_validate(resource)  # the error as fhir.resources words and locates it
            raise

    def _compile(self, resource: dict) -> _Plan | None:
        """The plan of a resource's shape: each value's check (its type's validator and passed values), the
        shape's matcher with the same (plan, resourceType) and the values' leaf indexes; None when the
        shape has no plan."""
        plan = self._plan(self.model, resource, (), root=True)
        if plan is None:
            return None
        index = {path: i for i, path in enumerate(_leaf_paths(resource))}
        checks = [self._adapters[id(kind)] for _, kind in plan]
        paths = [path for path, _ in plan]
        match = (matcher(resource, paths), checks, resource.get("resourceType"))
        return checks, match, [index[path] for path in paths]

    # -- the plan of a shape: each primitive value's place and type -------------------------------------
    def _plan(self, model, data: dict, path: tuple, root: bool = False) -> list[tuple[tuple, Any]] | None:
        fields = {(f.alias or name): f for name, f in model.model_fields.items()}
        plan: list[tuple[tuple, Any]] = []
        for key, value in data.items():
            if key == "resourceType" and root:
                continue  # its value is part of the shape's key, checked with the first of the shape
            field = fields.get(key)
            if field is None or key.startswith("_") or key == "fhir_comments":
                return None  # unknown here, or a primitive's extension: validated whole each time
            inner = _inner(field.annotation)
            if inner is None:
                return None
            kind, many = inner
            items = list(enumerate(value)) if many and isinstance(value, list) else [(None, value)]
            klass = kind.get_model_klass() if hasattr(kind, "get_model_klass") else None
            for index, item in items:
                here = path + ((key,) if index is None else (key, index))
                if item is None:
                    continue  # a null the whole validation accepted at this place (the shape has it there)
                if klass is not None:
                    if not isinstance(item, dict) or "resourceType" in item:
                        return None  # a contained resource: its model is the data's choice
                    sub = self._plan(klass, item, here)
                    if sub is None:
                        return None
                    plan.extend(sub)
                elif isinstance(item, (dict, list)):
                    return None
                else:
                    self._adapter(kind)
                    plan.append((here, kind))
        return plan

    def _adapter(self, kind: Any) -> None:
        """Build ``kind``'s validator once (pydantic's own, without TypeAdapter's per-call wrapper)."""
        if id(kind) not in self._adapters:
            full, check = TypeAdapter(kind).validator.validate_python, fast_accept(kind)
            self._adapters[id(kind)] = (full if check is None else _checked(check, full), set())
