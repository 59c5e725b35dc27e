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
``tests/test_fhir_validate.py`` checks that both give the same verdict on resources with broken values.
"""

from __future__ import annotations

import types
import typing
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
# A plan: for each primitive value the whole validation checks, its index among the resource's leaves
# (its primitive values in document order, as _walk lists them) and its type's validator and passed values.
_Plan = list[tuple[int, Any, set]]


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

    def __call__(self, resource: dict) -> None:
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
        try:
            for index, validate, passed in plan:
                value = leaves[index]
                if (type(value), value) in passed:
                    continue
                validate(value)
                if len(passed) < MAX_PASSED and (type(value) is not str or len(value) <= MAX_PASSED_LENGTH):
                    passed.add((type(value), value))
        except Exception:
            self.model.model_validate(resource)  # the error as fhir.resources words and locates it
            raise

    def _compile(self, resource: dict) -> _Plan | None:
        """The plan of a resource's shape, by leaf index; None when the shape has no plan."""
        plan = self._plan(self.model, resource, (), root=True)
        if plan is None:
            return None
        index = {path: i for i, path in enumerate(_leaf_paths(resource))}
        return [(index[path], *self._adapters[id(kind)]) for path, kind in plan]

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
            adapter = TypeAdapter(kind)
            self._adapters[id(kind)] = (adapter.validator.validate_python, set())
