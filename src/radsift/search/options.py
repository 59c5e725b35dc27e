"""The search options, declared once: :class:`SearchOptions`.

Each option is one field of :class:`SearchOptions`: its name, type and default are the field's, and
its :class:`Option` (the field's metadata) holds the rest: help, allowed values, bounds, and how the
command line and the HTTP API take it. Everything else is derived from that one declaration:

- the checks (:func:`check_search`: every option checked once, before any scoring, by messages that
  name it; :meth:`radsift.Index.search` runs them, so Python, the CLI and the API refuse the same
  things with the same words);
- the flags of ``radsift search`` (and of ``radsift export`` / ``saved add``, for the options a
  cohort keeps): :func:`cli_options`, read by the CLI's ``search_flags``;
- the query parameters of ``GET /api/search`` (and ``/api/export``): :func:`http_options`, read by
  :func:`radsift.serve.params.search_params`.

Adding an option is one field here (and the code that uses it).

The input policy
----------------
One table of limits and rules, :data:`POLICY`, decides for the CLI, Python (:meth:`radsift.Index.search`)
and the HTTP API alike, and each refusal is one sentence, the same on every surface (the CLI prints it
as ``error: ...``, the API answers it as a 422 ``detail``, Python raises it as a
:class:`~radsift.errors.ConfigError`). The CLI and the API receive numbers as text: :func:`wire_options`
turns the text into the option's type where it reads as one (``-k 1e9`` does not) and runs the checks,
so a malformed number is refused by the check's sentence, not by a usage box or a pydantic message.
The API has no bounds of its own: its query parameters carry none, and the server's guard adds only
what a connection needs (head and body sizes, the query string's encoding: same sentence for ``q``).

Why these limits: the HTTP API had tighter ones (k 1000, rerank 1000) than the CLI and Python (k 10,000,
rerank unbounded). One page of 1000 hits is the depth of a TREC run and the page an export walks the
list by; deeper hits are reached by ``offset`` (paging never repeats or misses a hit) or by an export,
so the CLI and Python were lowered to the API's rather than the API raised: 10,000 hits with their
reports is tens of MB in one answer, and 10,000 cross-encoder passes are minutes of CPU per request.
"""

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np

from radsift.corpus.dates import normalise_date
from radsift.errors import ConfigError
from radsift.ranking import MODES
from radsift.search.query import (LEVELS, MAX_FILTERS, Filter, MAX_K, MAX_OFFSET, MAX_PATIENT_CHARS, MAX_QUERY_CHARS,
                                  MAX_RERANK, NEGATION, UNITS, WHOLE_REPORT, check_alpha, check_bool, check_choice,
                                  check_patient, check_rerank, check_target, normalize_query, parse_where, whole_number)
from radsift.search.reading import READ_AS, parse_override

_KEY = "radsift.option"
_SAME = object()


class IndexFacts(NamedTuple):
    """What the checks need to know of the index searched."""

    sections: Sequence[str]
    metadata_keys: Sequence[str]


#: A check: (option name, value, the index's facts) -> the checked value, or ConfigError naming the option.
Check = Callable[[str, Any, IndexFacts], Any]


@dataclass(frozen=True)
class Option:
    """One option's declaration beyond its name, type and default (those are its field's).

    Attributes:
        help: What it does (the flag's help, the query parameter's description, the docs).
        check: Its check, when not derived from ``choices``, ``what`` or a ``bool`` default.
        choices: The allowed values (checked; a ``Literal`` on the API).
        low, high: A number's bounds (checked with ``what``; ``ge``/``le`` on the API).
        what: A whole number's unit, for its message ("hits").
        flags: Command-line flags (``()``: ``--NAME``); None: not on the command line.
        metavar: The flag's value in help (``N``, ``MODE``).
        cli_help: The flag's help when it says more than ``help`` (the command line's extras).
        wire: The type on the command line and in the URL, when it is not the field's (numbers
            travel as text: :func:`wire_options`).
        http: Whether the API takes it as a query parameter.
        http_default: The API's default, when it is not the field's.
        needs_index: Its check needs the index (its sections, its metadata keys): run by
            :meth:`radsift.Index.search`, not by :func:`wire_options`.
    """

    help: str
    check: Check | None = None
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    what: str = ""
    flags: tuple[str, ...] | None = ()
    metavar: str | None = None
    cli_help: str | None = None
    wire: Any = None
    http: bool = True
    http_default: Any = _SAME
    needs_index: bool = False


def _option(default: Any, help: str, **spec: Any) -> Any:
    return field(default=default, metadata={_KEY: Option(help, **spec)})


def _python_only(default: Any, help: str) -> Any:
    return _option(default, help, flags=None, http=False)


# -- the checks that are not derived -----------------------------------------------------------
def _target(name: str, value, facts: IndexFacts) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"target: must be a section name, not {type(value).__name__}")
    return check_target(value, facts.sections)


def _where(name: str, value, facts: IndexFacts):
    if value is not None and not isinstance(value, (Mapping, list, tuple)):
        raise ConfigError(f"where: must be a list of KEY=VALUE / KEY~VALUE filters, not {type(value).__name__}")
    return parse_where(value, facts.metadata_keys)


def _day(name: str, value, facts: IndexFacts) -> str | None:
    """``since``/``until``: a day, normalised; the index must hold dates."""
    if value is None or value == "":
        return None
    if "date" not in facts.metadata_keys:
        raise ConfigError(f"{name}: this index's reports carry no dates (build it with --date-column, or from a "
                          "FHIR or HL7 feed)")
    try:
        return normalise_date(str(value))[0]
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None


def _patient(name: str, value, facts: IndexFacts) -> str | None:
    if value is None or value == "":
        return None
    if "patient" not in facts.metadata_keys:
        raise ConfigError("patient: this index's reports name no patients (build it with --patient-column, or "
                          "from a FHIR or HL7 feed)")
    return check_patient(str(value))


def time_filters(options: "SearchOptions") -> tuple[Filter, ...]:
    """The metadata filters ``since``, ``until`` and ``patient`` stand for (``where`` holds them after the checks)."""
    out = []
    if options.since:
        out.append(Filter("date", options.since, ">="))
    if options.until:
        out.append(Filter("date", options.until, "<="))
    if options.patient:
        out.append(Filter("patient", options.patient))
    return tuple(out)


def _rerank(name: str, value, facts: IndexFacts) -> int:
    return check_rerank(value)


def _reading(name: str, value, facts: IndexFacts) -> tuple[tuple[str, str], ...]:
    return tuple(parse_override(value).items())


def _alpha(name: str, value, facts: IndexFacts) -> float | None:
    return check_alpha(value)


READING_HELP = ("Override how the query is read, finding by finding: FINDING=STATUS with STATUS present, absent, "
                "uncertain or ignore (repeatable), e.g. cardiomegaly=absent; side=ignore drops the side, and "
                "location=, change=, degree= and pattern=ignore the others read. The finding must be one the query "
                "was read to name.")
WHERE_HELP = ("Metadata filter (repeatable): KEY=VALUE (or KEY:VALUE) matches exactly, KEY~VALUE case-insensitively "
              "by substring, e.g. indication~cough, KEY>=VALUE and KEY<=VALUE compare as text (date>=2025-01-01); "
              "several filters on one key: any (ranges: all), on several keys: all. Keys must be metadata of the "
              "index (radsift index info lists them).")


@dataclass(frozen=True)
class SearchOptions:
    """Every option of a search (:meth:`radsift.Index.search`); the defaults are those of ``radsift search``.

    Build one and pass it, or name options as keywords (``index.search("x", k=5, mode="bm25")``), or
    both (the keywords override the object's). The values are checked by :func:`check_search`; after
    it, ``where`` holds :class:`~radsift.search.query.Filter` objects, ``reading`` ``(finding, status)``
    pairs and ``target`` None for the whole report. Each option's help is below (written from the declaration).
    """

    k: int = _option(10, "Number of hits.", what="hits", low=1, high=MAX_K,
                     flags=("-k", "--k"), metavar="N")
    mode: str = _option("hybrid", "Retrieval mode: hybrid (convex combination of dense and BM25), "
                        "dense, bm25, or hybrid-rrf (their reciprocal rank fusion).",
                        choices=MODES, metavar="MODE")
    level: str = _option("report", "report (one hit per report: its best unit stands for it) or sentence "
                         "(every matching unit).", choices=LEVELS, metavar="LEVEL")
    target: Optional[str] = _option(None, "Search one section only: findings, impression (the diagnoses that go "
                                    "with a findings description), ...; report = every section.", check=_target,
                                    metavar="SECTION", http_default=WHOLE_REPORT, needs_index=True)
    where: Union[Sequence[str], Mapping[str, Any], None] = _option(
        None, WHERE_HELP, check=_where, wire=Optional[list[str]], metavar="KEY=VALUE|KEY~VALUE", needs_index=True)
    since: Optional[str] = _option(None, "Only reports dated on or after this day (YYYY-MM-DD; the index's 'date', "
                                   "from --date-column or a feed).", check=_day, metavar="DATE", needs_index=True)
    until: Optional[str] = _option(None, "Only reports dated on or before this day (YYYY-MM-DD).", check=_day,
                                   metavar="DATE", needs_index=True)
    patient: Optional[str] = _option(None, "Only this patient's reports (the index's 'patient').", check=_patient,
                                     metavar="ID", needs_index=True)
    unit: str = _option("sentence", "Rank sentence units, or whole section units.", choices=UNITS, metavar="UNIT",
                        cli_help="Rank sentence units, whole section units, or passage (sections with heading and "
                                 "aspect; \"ENTITY | ASPECT\" queries).")
    negation: str = _option("aware", "aware: units stating the query's reading of its findings rank first, the "
                            "opposite last, the same side first; ignore: plain similarity.",
                            choices=NEGATION, metavar="aware|ignore")
    rerank: int = _option(0, "Rerank the top N hits with the cross-encoder (the command's --reranker, or the "
                          "server's) and return the best k of them (0 = off).", check=_rerank, low=0, high=MAX_RERANK,
                          metavar="N")
    reading: Union[Sequence[str], Mapping[str, str], None] = _option(
        None, READING_HELP, check=_reading, wire=Optional[list[str]], metavar="FINDING=STATUS")
    alpha: Optional[float] = _option(None, "The dense share of hybrid, 0 to 1 (default: the model's own, measured "
                                     "for it; see radsift index info).", check=_alpha, low=0, high=1,
                                     metavar="WEIGHT")
    concepts: bool = _option(True, "Link a query that describes a lexicon finding without naming it to that "
                             "finding (\"understood as\"; modes that use the encoder only); off, a finding is read "
                             "without the lexicon's alternatives too (any_of).",
                             flags=("--concepts/--no-concepts",))
    read_as: str = _option("both", "How a query linked to a lexicon finding is read: both (the query's own words "
                           "first whenever they occur in the index, the linked finding beside them: 'also'), "
                           "literal (never linked, nor read with the lexicon's alternatives: any_of) or linked (the "
                           "linked finding in place of the words).",
                           choices=READ_AS, metavar="both|literal|linked")
    prf: bool = _option(False, "Pseudo-relevance feedback: expand the query from its first-pass top hits (RM3 on "
                        "BM25, Rocchio on the dense side), then rank again.")
    offset: int = _option(0, "Hits of the ranked list to skip (paging: the page after offset 0, k 25 is offset 25, "
                          "k 25; pages never repeat or miss a hit); past the end: an empty page.",
                          what="hits to skip", low=0, high=MAX_OFFSET, metavar="N")
    fields: Optional[Sequence[str]] = _python_only(None, "Report sections to include in hits (None = all).")
    include_report: bool = _python_only(True, "Attach the report's sections and metadata to each hit.")
    mentions: bool = _python_only(True, "Attach to each hit what its unit states about the query's findings "
                                  "(Hit.reading); False skips reading the hits (batch runs, benchmarks).")
    query_vector: Optional[np.ndarray] = _python_only(None, "A precomputed query embedding (skips encoding).")
    first_stage: Any = _python_only(
        None, "Takes the place of the index's bi-encoder on the dense side: an object whose scores(store, query, "
        "unit) scores every unit of the store (radsift.search.passages.PolyFirstStage); dense ranks by it alone, "
        "hybrid and hybrid-rrf fuse it with BM25; no concept is linked, and bm25 and prf refuse it.")

    def pick(self, names: Iterable[str]) -> dict[str, Any]:
        """``{name: value}`` of the options ``names``."""
        return {name: getattr(self, name) for name in names}


def option_specs() -> list[tuple[dataclasses.Field, Option]]:
    """Every option's field and :class:`Option`, in declaration order."""
    return [(f, f.metadata[_KEY]) for f in dataclasses.fields(SearchOptions)]


_FIELDS = {f.name: f for f in dataclasses.fields(SearchOptions)}


class Rule(NamedTuple):
    """One row of the input policy: what is limited, the limit, and why."""

    what: str
    limit: str
    why: str


#: The input policy, one table for the CLI, Python and the HTTP API (see the module's docs).
POLICY: tuple[Rule, ...] = (
    Rule("query", f"1 to {MAX_QUERY_CHARS} characters once cleaned",
         "the encoder reads 256 tokens; the length is counted after cleaning, so spaces never tip it over"),
    Rule("query encoding", "valid UTF-8 text with no NUL (both refused); other control and invisible characters "
         "removed, whitespace collapsed", "bytes that are not UTF-8 are refused (not replaced by U+FFFD); a NUL is "
         "refused (it cuts C strings short downstream); a zero-width space or a stray control is taken out"),
    Rule("k", f"1 to {MAX_K} hits", "one page: a TREC run's depth and an export's page; deeper by offset or export"),
    Rule("offset", f"0 to {MAX_OFFSET:,} hits", "paging; past the end: an empty page"),
    Rule("rerank", f"0 (off) to {MAX_RERANK} candidates", "one cross-encoder pass each: about a second per 100 on CPU"),
    Rule("patient", f"1 to {MAX_PATIENT_CHARS} characters, no control or invisible character (refused, not "
         "removed)", "an MRN or a FHIR id is far shorter; removing a character could turn one patient into another"),
    Rule("where", f"at most {MAX_FILTERS} filters, on the index's metadata keys", "unknown keys are typos"),
    Rule("numbers", "whole numbers for k, offset, rerank; alpha a number from 0 to 1",
         "the CLI and the URL pass text: '1e9' or '10.5' is refused by the option's check, in its sentence"),
)


# The class's docs list every option with its help, from the same declaration.
SearchOptions.__doc__ = (SearchOptions.__doc__ or "") + "\n    Attributes:\n" + "".join(
    f"        {f.name}: {spec.help} (default {f.default!r})\n" for f, spec in option_specs())


#: The options that travel as text on the command line and in the URL, and what the text is read as.
_NUMBERS = {int: int, Optional[float]: float}
_WHOLE = re.compile(r"\s*[+-]?[0-9]{1,30}\s*")


def _wire(f: dataclasses.Field, spec: Option) -> Any:
    if spec.wire is not None:
        return spec.wire
    if f.type in _NUMBERS:
        return Optional[str] if f.default is None else str
    return f.type


def from_wire(name: str, value: Any) -> Any:
    """An option's value as the CLI or the URL gives it (text) in the option's type, where the text reads as
    one (``"10"`` -> 10, ``" 0.5"`` -> 0.5); anything else is returned as it is, for the option's check to
    refuse with its sentence (``"1e9"`` as k: "k: must be a whole number of hits, not '1e9'")."""
    kind = _NUMBERS.get(_FIELDS[name].type) if name in _FIELDS else None
    if kind is None or not isinstance(value, str):
        return value
    if kind is int:
        return int(value) if _WHOLE.fullmatch(value) else value
    try:
        return float(value)
    except ValueError:
        return value


def wire_options(values: Mapping[str, Any]) -> "SearchOptions":
    """The :class:`SearchOptions` of the options the CLI or the API received (``{name: text or value}``):
    each read by :func:`from_wire`, then checked, every check that needs no index (those that do run in
    :meth:`radsift.Index.search`), so a bad value is refused before anything runs, in the same sentence
    Python gets.

    Raises:
        ConfigError: Naming the option, as :func:`check_search` does.
    """
    out: dict[str, Any] = {}
    for name, value in values.items():
        value = from_wire(name, value)
        f, spec = _FIELDS[name], _FIELDS[name].metadata[_KEY]
        if spec.needs_index:
            out[name] = value
            continue
        checked = _checked(f, spec, value, IndexFacts((), ()))
        # Lists (reading) keep the form they came in: checked here, parsed again where they are used.
        out[name] = value if spec.wire is not None else checked
    return SearchOptions(**out)


def cli_options(names: Iterable[str] | None = None) -> list[tuple[str, Any, Any, tuple[str, ...], str | None, str]]:
    """``(name, type, default, flags, metavar, help)`` of each option the command line takes (or of ``names``)."""
    wanted = None if names is None else set(names)
    return [(f.name, _wire(f, spec), f.default, spec.flags or (f"--{f.name.replace('_', '-')}",), spec.metavar,
             spec.cli_help or spec.help)
            for f, spec in option_specs() if spec.flags is not None and (wanted is None or f.name in wanted)]


@dataclass(frozen=True)
class HttpOption:
    """How the HTTP API takes an option (:func:`radsift.serve.params.search_params` turns it into a query parameter)."""

    name: str
    type: Any
    default: Any
    help: str
    choices: tuple[str, ...]
    low: float | None
    high: float | None


def http_options(names: Iterable[str] | None = None) -> list[HttpOption]:
    """The options the HTTP API takes as query parameters (or those of ``names``), in declaration order."""
    wanted = None if names is None else set(names)
    return [HttpOption(f.name, _wire(f, spec), f.default if spec.http_default is _SAME else spec.http_default,
                       spec.help, spec.choices, spec.low, spec.high)
            for f, spec in option_specs() if spec.http and (wanted is None or f.name in wanted)]


def _checked(f: dataclasses.Field, spec: Option, value, facts: IndexFacts):
    """One option's checked value: its own check, else one derived from its declaration (Python-only
    options are used as given)."""
    if spec.check is not None:
        return spec.check(f.name, value, facts)
    if spec.flags is None and not spec.http:
        return value
    if spec.choices:
        return check_choice(f.name, value, spec.choices)
    if spec.what:
        return whole_number(f.name, value, int(spec.low), int(spec.high), spec.what)
    if isinstance(f.default, bool):
        return check_bool(f.name, value)
    return value


@dataclass(frozen=True)
class SearchRequest:
    """A search after its checks: the normalized query and its checked options (see :class:`SearchOptions`)."""

    query: str
    options: SearchOptions


def search_options(options: SearchOptions | None = None, **overrides: Any) -> SearchOptions:
    """``options`` (default: every default) with ``overrides`` in place of its values.

    Raises:
        TypeError: ``options`` is not a :class:`SearchOptions`, or an override names no option.
    """
    if options is None:
        options = SearchOptions()
    elif not isinstance(options, SearchOptions):
        raise TypeError(f"options must be a SearchOptions, not {type(options).__name__}")
    if not overrides:
        return options
    known = {f.name for f in dataclasses.fields(SearchOptions)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise TypeError(f"search() got an unexpected keyword argument {unknown[0]!r} (options: {', '.join(sorted(known))})")
    return dataclasses.replace(options, **overrides)


def check_search(query: str, options: SearchOptions, sections: Sequence[str],
                 metadata_keys: Sequence[str]) -> SearchRequest:
    """Every check of a search request, in one place: the query's, then each option's in declaration order.

    Raises:
        ConfigError: Naming the option and the allowed values.
    """
    facts = IndexFacts(tuple(sections), tuple(metadata_keys))
    text = normalize_query(query)
    checked = {f.name: _checked(f, spec, getattr(options, f.name), facts) for f, spec in option_specs()}
    checked_options = SearchOptions(**checked)
    extra = time_filters(checked_options)
    if extra:  # since / until / patient are metadata filters: the plan reads them from where
        checked_options = dataclasses.replace(checked_options, where=tuple(checked_options.where or ()) + extra,
                                              since=None, until=None, patient=None)
    return SearchRequest(text, checked_options)


def check_options(query: str, *, sections: Sequence[str], metadata_keys: Sequence[str], **options: Any) -> SearchRequest:
    """:func:`check_search` with the options as keywords (``check_options(q, k=10, mode="bm25", sections=...)``)."""
    return check_search(query, search_options(**options), sections, metadata_keys)


__all__ = ["HttpOption", "IndexFacts", "Option", "POLICY", "Rule", "SearchOptions", "SearchRequest", "check_options",
           "check_search", "cli_options", "from_wire", "http_options", "option_specs", "search_options", "wire_options"]
