"""Search: query handling, dense/BM25/hybrid retrieval, aggregation to reports, highlights."""

from radsift.search.engine import Index
from radsift.search.fusion import convex_combination, reciprocal_rank_fusion
from radsift.search.highlight import highlight_spans
from radsift.search.query import LEVELS, MODES, parse_where

__all__ = ["LEVELS", "MODES", "Index", "convex_combination", "highlight_spans", "parse_where",
           "reciprocal_rank_fusion"]
