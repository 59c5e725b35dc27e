"""Search: query options, retrieval through the ranking core, rerank, highlights."""

from radsift.search.engine import Index
from radsift.search.highlight import highlight_spans
from radsift.search.options import SearchOptions
from radsift.search.query import LEVELS, MODES, Filter, parse_where
from radsift.search.results import SearchResult

__all__ = ["LEVELS", "MODES", "Filter", "Index", "SearchOptions", "SearchResult", "highlight_spans", "parse_where"]
