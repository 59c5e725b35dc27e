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
time. A value its type's validator has passed before is not validated again (the types are pure functions
of the value). A value that fails is validated whole again, so the error is ``fhir.resources``' own, located.

The values a feed writes new on every report are checked without pydantic when they have the plain form
its validators are known to pass (:func:`fast_accept`): ``dateTime``, ``instant`` (a real calendar day,
``YYYY-MM-DDThh:mm:ss`` and ``Z`` or an offset within FHIR's range, no fraction, no leap second),
``base64Binary`` (base64 that decodes strictly), and, by one regex each, ``id``, ``string``, ``markdown``,
``code`` and ``uri`` (printable ASCII of the type's form; texts may hold non-ASCII that is neither a C1 control
nor a surrogate); any other value goes to the validator. ``tests/test_fhir_validate.py`` checks that no value
a validator refuses passes, on edges and random values, and that both give the same verdict on resources
with broken values.

Telling a resource's shape by walking it costs more than validating its new values; so each shape with a
plan gets one function written for it (:func:`matcher`): it tells whether a resource has that shape (the
same keys, in the same order for objects of more than 8 keys, list lengths and JSON types, the same
``resourceType``; validation does not depend on key order), then checks each primitive value that is not the
last one passed at its place (a string place checked by a regex has its type told by that check), and
returns a key: the shape's number and the
values at the places the caller asked for (the reader's ``code`` and ``category``, whose exam, modality and
category it then reads once per key). The last shape's function is tried first; a resource it refuses is
walked as before.
"""

from __future__ import annotations

import binascii
import re
import sys
import types
import typing
from typing import Any

from pydantic import TypeAdapter

#: Shapes remembered at most (a feed has a handful; a hostile file cannot grow memory past this).
MAX_SHAPES = 4096
#: Values a type's validator has passed, remembered per type at most, and the longest remembered (values of
#: the plain form pass without it; a feed's unusual values, its non-ASCII codes or names, repeat).
MAX_PASSED, MAX_PASSED_LENGTH = 20_000, 200
_UNSEEN = object()
_BY_KEY = 8  # a shape's function reads an object of up to this many keys by key (in any order), else in order
_NESTED = (dict, list)
_OBJECT, _LIST, _END = object(), object(), object()  # markers of _shape: not strings, not types
# A dateTime or instant of the plain form: a day, hh:mm:ss, Z or an offset FHIR allows (to 14:00); year 0000 and
# leap seconds are not plain ([0-9], not \d: no other digits)
_PLAIN_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
                         r"(?:Z|[+-](?:(?:0[0-9]|1[0-3]):[0-5][0-9]|14:00))")
# The same plain form in one regex, for the values a shape holds as strings: every real day but 02-29 (a leap
# day goes to _plain_time's year check or the validator), no year 0000
_PLAIN_DAY_TIME = re.compile(r"(?!0000)[0-9]{4}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-"
                             r"(?:29|30)|(?:0[13578]|1[02])-31)"
                             + _PLAIN_TIME.pattern[len("[0-9]{4}-[0-9]{2}-[0-9]{2}"):])  # T and the clock
# every real "MM-DD" of a year (02-29 too: its year is checked apart)
_MONTH_DAYS = frozenset(f"{m:02d}-{d:02d}" for m, days in enumerate((31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31), 1)
                        for d in range(1, days + 1))


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
        _last_decoded = (value, binascii.a2b_base64(value, strict_mode=True))  # one tuple: read whole or not at all
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
    return binascii.a2b_base64(value, strict_mode=True)  # b64decode(validate=True) without its wrapper


# Plain values of the string types a feed writes new on every report (ids, identifiers, references, texts), each
# a subset of what its fhir.resources pattern passes (pydantic reads them with Rust's regex: unanchored, Unicode
# \s): string and markdown: a printable ASCII character after optional ASCII whitespace, then printable ASCII,
# tab, CR, LF or non-ASCII that is neither a C1 control nor a surrogate (the Rust side refuses a lone surrogate);
# code: printable ASCII words, one space between; uri: printable ASCII; id: FHIR's id alphabet, 1 to 64 long.
_TEXT_TAIL = r"[\t\n\r -~\u00a0-\ud7ff\ue000-\U0010ffff]*"
_PLAIN_STR = {
    "string": re.compile(r"[\t\n\r ]*[!-~]" + _TEXT_TAIL).fullmatch,
    "markdown": re.compile(r"[\t\n\r ]*[!-~]" + _TEXT_TAIL).fullmatch,
    "code": re.compile(r"[!-~]+(?: [!-~]+)*").fullmatch,
    "uri": re.compile(r"[!-~]+").fullmatch,
    "id": re.compile(r"[A-Za-z0-9.\-]{1,64}").fullmatch,
}
_ID_PATTERN = r"^[A-Za-z0-9\-.]+$"  # fhir_core's default: the id check holds only while it is in force


# string and markdown as a shape's function checks them first, inline (no call): an ASCII string with a
# character besides VT and FF, the only ASCII characters outside their patterns' class ([ \r\n\t\S], search)
_INLINE_TEXT = "({0}.isascii() and {0}.strip('\\x0b\\x0c'))"
_INLINE = {"string": _INLINE_TEXT, "markdown": _INLINE_TEXT}


def _plain_str(name: str):
    """A check of one :data:`_PLAIN_STR` type for any value (a ``str`` of the plain form, inline or regex)."""
    match, inline = _PLAIN_STR[name], _INLINE.get(name)
    if inline is None:
        return lambda value: type(value) is str and match(value) is not None
    return lambda value: type(value) is str and (value.isascii() and value.strip("\x0b\x0c") != ""
                                                 or match(value) is not None)


#: For a ``fhir.resources`` type (by its ``__visit_name__``), a check that passes only values its validator
#: passes (``tests/test_fhir_validate.py`` compares them); a value it does not pass goes to the validator.
FAST_ACCEPT = {"dateTime": _plain_time, "instant": _plain_time, "base64Binary": _plain_base64,
               **{name: _plain_str(name) for name in _PLAIN_STR}}


def _string_check(kind: Any, name: str | None) -> bool:
    """True when ``kind`` is ``Annotated[str, <one fhir_core type>]`` whose constraints are fhir_core's
    defaults (an id's pattern and length limit can be patched before the models are built)."""
    args = typing.get_args(kind)
    if name not in _PLAIN_STR or len(args) != 2 or args[0] is not str:
        return False
    if name != "id":
        return True
    constraints = sys.modules.get("fhir_core.constraints")
    limit = getattr(constraints, "TYPES_ID_MAX_LENGTH", 0)
    return getattr(constraints, "TYPES_ID_PATTERN", None) == _ID_PATTERN and (limit is None or limit >= 64)


def _fast_name(kind: Any) -> str | None:
    """The ``__visit_name__`` of the type in ``kind`` that has a :data:`FAST_ACCEPT` check usable here."""
    for meta in typing.get_args(kind)[1:]:
        name = getattr(meta, "__visit_name__", None)
        if name in FAST_ACCEPT and (name not in _PLAIN_STR or _string_check(kind, name)):
            return name
    return None


def fast_accept(kind: Any):
    """The :data:`FAST_ACCEPT` check of a type annotation (``Annotated[..., DateTime()]``), or None."""
    name = _fast_name(kind)
    return None if name is None else FAST_ACCEPT[name]


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


def matcher(sample: Any, paths: list[tuple], checks: dict | None = None, fixed: dict | None = None,
            tag: Any = _UNSEEN) -> Any:
    """A function of one argument that returns the values at ``paths`` (a tuple, in their order; after ``tag``
    when one is given) of a value whose :func:`_shape` is ``sample``'s up to the order of the keys of objects
    of at most ``_BY_KEY`` keys (read by key: faster; what validation decides does not depend on key order),
    and None for any other value.

    ``checks`` maps leaf paths to ``(fast, passed, validate)``: once the shape has matched, each such value
    that is not the last one passed at its place (a feed repeats its codes and systems) is checked by ``fast``
    (None: no fast check; a function; or an expression of the value, ``{0}``, and a function for what it does
    not pass), else looked up in the set ``passed``, else given to ``validate`` (which raises on a bad value).
    A string place whose ``fast`` raises on anything but a string (:func:`_str_only`) is not type-checked
    apart: a value of another type there makes its check raise, and the function returns None. ``fixed``
    maps leaf paths to values they must equal (else None).
    The function's text is written from the sample's structure; keys, types and checks are its constants
    (never text of the data), so any keys are safe.
    """
    consts: list = []
    lines: list[str] = []
    after: list[str] = []
    where: dict[tuple, str] = {}
    checks, fixed = checks or {}, fixed or {}

    def const(value: Any) -> str:  # a default argument of the function: read as a local, the fastest
        consts.append(value)
        return f"c{len(consts) - 1}"

    def visit(value: Any, var: str, path: tuple) -> None:
        if type(value) is dict and 0 < len(value) <= _BY_KEY:  # its values by key: a missing one, a KeyError
            # (not type-checked: anything but a dict raises TypeError at len() or at the first key, a JSON
            # list or string being indexed by a string)
            lines.append(f"if len({var}) != {len(value)}: return None")
            for i, (k, v) in enumerate(value.items()):
                lines.append(f"{var}_{i} = {var}[{const(k)}]")
                visit(v, f"{var}_{i}", path + (k,))
        elif type(value) is dict:  # its keys in order, its values unpacked: faster for many keys (and {})
            lines.append(f"if type({var}) is not dict or tuple({var}) != {const(tuple(value))}: return None")
            names = [f"{var}_{i}" for i in range(len(value))]
            if names:
                lines.append(f"{', '.join(names)}, = {var}.values()")
            for name, (k, v) in zip(names, value.items()):
                visit(v, name, path + (k,))
        elif type(value) is list:
            lines.append(f"if type({var}) is not list{'' if value else f' or {var}'}: return None")
            if value:  # unpacked: another length raises ValueError
                names = [f"{var}_{i}" for i in range(len(value))]
                lines.append(f"{', '.join(names)}, = {var}")
                for i, (name, v) in enumerate(zip(names, value)):
                    visit(v, name, path + (i,))
        else:
            if type(value) is not str or path not in checks or not _str_only(checks[path][0]):
                lines.append(f"if type({var}) is not {const(type(value))}: return None")
            # (else the type is told by the check, which raises on anything but a string: not this shape)
            if path in fixed:
                lines.append(f"if {var} != {const(fixed[path])}: return None")
            if path in checks:  # run once the whole shape has matched, unless the value is the last one passed here
                fast, passed, validate = checks[path]
                test = f"{var} not in {const(passed)}"
                if type(fast) is tuple:  # (an inline expression, a function for what it does not pass)
                    test = f"not ({fast[0].format(var)} or {const(fast[1])}({var})) and {test}"
                elif fast is not None:
                    test = f"not {const(fast)}({var}) and {test}"
                last = const([_UNSEEN])
                after.extend([f"if {var} != {last}[0]:", f"    if {test}: {const(validate)}({var})",
                              f"    {last}[0] = {var}"])
            where[path] = var

    visit(sample, "v", ())
    head = "" if tag is _UNSEEN else f"{const(tag)}, "
    shape, values = "\n        ".join(lines), "\n        ".join(after or ["pass"])
    # a string place's check raises on anything else (a regex on a number or a null): not this shape
    body = "\n    ".join([f"try:\n        {shape}\n    except (KeyError, TypeError, ValueError):\n        return None",
                           f"try:\n        {values}\n    except (TypeError, AttributeError):\n        return None",
                           f"return ({head}{''.join(where[p] + ', ' for p in paths)})"])
    namespace: dict = {"C": consts}
    defaults = "".join(f", c{i}=C[{i}]" for i in range(len(consts)))
    exec(f"def match(v{defaults}):\n    {body}\n", namespace)  # noqa: S102 - our own text; data are constants
    return namespace["match"]


def _str_only(fast: Any) -> bool:
    """True for a fast check that raises on anything but a string: a regex's method, an inline expression."""
    return type(fast) is tuple or isinstance(getattr(fast, "__self__", None), re.Pattern)


def _remembering(full, passed: set):
    """A validator that calls ``full`` and remembers a short value it passed in ``passed`` (bounded)."""

    def validate(value: Any) -> None:
        full(value)
        if len(passed) < MAX_PASSED and (type(value) is not str or len(value) <= MAX_PASSED_LENGTH):
            passed.add(value)

    return validate


def _at(value: Any, path: tuple) -> Any:
    for step in path:
        value = value[step]
    return value


class ShapeValidator:
    """Validate resources as ``model.model_validate`` does (see the module docstring), raising its errors.

    A value its type has passed before passes again without being validated (the types are pure functions
    of the value; at most ``MAX_PASSED`` values of up to ``MAX_PASSED_LENGTH`` characters per type and Python
    type); a value of a type's plain form (:data:`FAST_ACCEPT`) passes without its validator.

    Calling it returns None for a resource validated whole (the first of its shape, or a shape without a
    plan), else a key: the shape's number and the values at the paths ``keep`` selects (its primitive
    values, in document order). Equal keys mean equal structures and values under those paths, so a caller
    can remember what it read there.

    Args:
        model: A ``fhir.resources`` model class (e.g. R4B's ``DiagnosticReport``).
        keep: Which leaf paths (tuples of keys and list indexes) the key holds; none by default.
    """

    def __init__(self, model, keep=None) -> None:
        self.model = model
        self.keep = keep or (lambda path: False)
        self._plans: dict[Any, Any] = {}  # shape -> its function (None: no plan)
        self._adapters: dict[int, tuple[Any, Any]] = {}  # by id: an annotation's metadata may not hash
        self._passed: dict[tuple[int, type], set] = {}  # (annotation id, Python type) -> values passed
        self._last: Any = None  # the last planned shape's function
        #: The numbers (a key's first item) of the planned shapes that hold a float.
        self.float_shapes: set[int] = set()

    def __call__(self, resource: dict) -> tuple | None:
        last = self._last
        if last is not None:
            try:  # (_run, inline: this is the path of nearly every resource)
                key = last(resource)
            except Exception:
                self.model.model_validate(resource)  # the error as fhir.resources words and locates it
                raise
            if key is not None:  # the last plan's shape exactly
                return key
        shape: list = [resource.get("resourceType")]  # the type's value decides: part of the shape
        _walk(resource, shape, [])
        key = tuple(shape)
        plan = self._plans.get(key, _UNSEEN)
        if plan is _UNSEEN or plan is None:
            self.model.model_validate(resource)  # the first of its shape, or a shape without a plan: whole
            if plan is _UNSEEN and len(self._plans) < MAX_SHAPES:
                if float in key:  # a leaf's type (keys are strings, markers are objects)
                    self.float_shapes.add(len(self._plans))
                self._plans[key] = self._compile(resource)
            return None
        self._last = plan
        found = self._run(plan, resource)  # its shape's function: it matches
        if found is None:  # (not expected: the function and the walk tell shapes alike) validated whole
            self.model.model_validate(resource)
        return found

    def _run(self, function, resource: dict) -> tuple | None:
        """A shape's function on a resource; a value it refuses: the whole validation's error."""
        try:
            return function(resource)
        except Exception:
            self.model.model_validate(resource)  # the error as fhir.resources words and locates it
            raise

    def _compile(self, resource: dict) -> Any:
        """The function of a resource's shape (:func:`matcher` with each value's check, the resourceType
        fixed, the shape's number as tag), or None when the shape has no plan."""
        plan = self._plan(self.model, resource, (), root=True)
        if plan is None:
            return None
        checks = {path: self._check(kind, type(_at(resource, path))) for path, kind in plan}
        fixed = {("resourceType",): resource["resourceType"]} if "resourceType" in resource else {}
        kept = [path for path, _ in plan if self.keep(path)]
        return matcher(resource, kept, checks, fixed, tag=len(self._plans))

    def _check(self, kind: Any, python_type: type) -> tuple:
        """``(fast, passed, validate)`` of a value of type ``kind`` that the shape holds as ``python_type``."""
        name, full = self._adapters[id(kind)]
        if name in _PLAIN_STR:  # a regex of the plain form, called only on what the shape says is a str
            fast = _PLAIN_STR[name] if python_type is str else None
            if fast is not None and name in _INLINE:
                fast = (_INLINE[name], fast)
        elif name in ("dateTime", "instant") and python_type is str:
            fast = _PLAIN_DAY_TIME.fullmatch
        else:
            fast = FAST_ACCEPT.get(name)  # these check the value's type themselves
        passed = self._passed.setdefault((id(kind), python_type), set())
        return fast, passed, _remembering(full, passed)

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
            self._adapters[id(kind)] = (_fast_name(kind), TypeAdapter(kind).validator.validate_python)
