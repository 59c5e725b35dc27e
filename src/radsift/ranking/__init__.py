"""The one ranking core (pure NumPy): BM25, top-k, fusion, reading tiers, aggregation, rerank.

Everything that ranks calls it: the search engine (:class:`radsift.Index`), the ``radsift bench``
systems and the training evaluation. It depends on nothing in radsift above
:mod:`radsift.text` (the BM25 tokenizer), so every stage may use it. See :mod:`.core`.
"""

from radsift.ranking.aggregate import best_per_group, best_unit_per_report
from radsift.ranking.bm25 import BM25_PARAMS, bm25_scores, build_bm25, build_bm25_texts, load_bm25, save_bm25
from radsift.ranking.core import MODES, NEEDS_BM25, NEEDS_DENSE, rank, rank_groups, rerank
from radsift.ranking.fusion import (DENSE_WEIGHT, HYBRID_DEPTH, RERANK_WEIGHT, RRF_K, check_weight,
                                    convex_combination, fuse, fused_order, min_max, reciprocal_rank_fusion)
from radsift.ranking.tiers import POLARITY, STATUS_CODES, demote, opposing_rows
from radsift.ranking.topk import top_k, top_ranking

__all__ = [
    "BM25_PARAMS", "DENSE_WEIGHT", "HYBRID_DEPTH", "MODES", "NEEDS_BM25", "NEEDS_DENSE", "POLARITY", "RERANK_WEIGHT",
    "RRF_K", "STATUS_CODES", "best_per_group", "best_unit_per_report", "bm25_scores", "build_bm25",
    "build_bm25_texts", "check_weight", "convex_combination", "demote", "fuse", "fused_order", "load_bm25",
    "min_max", "opposing_rows", "rank", "rank_groups", "reciprocal_rank_fusion", "rerank", "save_bm25", "top_k",
    "top_ranking",
]
