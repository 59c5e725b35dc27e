"""The one ranking core (pure NumPy): BM25, top-k, fusion, reading tiers, aggregation, rerank.

Everything that ranks calls it: the search engine (:class:`radsift.Index`), the ``radsift bench``
systems and the training evaluation. It depends on nothing in radsift above
:mod:`radsift.text` (the BM25 tokenizer), so every stage may use it. See :mod:`.core`.
"""

from radsift.ranking.aggregate import best_per_group, best_per_owner, best_unit_per_report, mean_per_owner
from radsift.ranking.bm25 import (BM25_PARAMS, bm25_scores, build_bm25, build_bm25_texts, load_bm25, save_bm25,
                                  units_with_terms)
from radsift.ranking.core import MODES, NEEDS_BM25, NEEDS_DENSE, rank, rank_groups, rerank
from radsift.ranking.fusion import (DENSE_WEIGHT, RERANK_WEIGHT, RRF_K, check_weight,
                                    convex_combination, fuse, fused_order, min_max, reciprocal_rank_fusion)
from radsift.ranking.tiers import (POLARITY, SIDES, STATUS_CODES, TIER_OF, apply_tiers, demote, side_flags,
                                   side_tiers, stated_tiers, stating, unit_tiers)
from radsift.ranking.topk import top_k, top_ranking

__all__ = [
    "BM25_PARAMS", "DENSE_WEIGHT", "MODES", "NEEDS_BM25", "NEEDS_DENSE", "POLARITY", "RERANK_WEIGHT",
    "RRF_K", "SIDES", "STATUS_CODES", "TIER_OF", "apply_tiers", "best_per_group", "best_per_owner", "best_unit_per_report", "bm25_scores", "build_bm25",
    "build_bm25_texts", "check_weight", "convex_combination", "demote", "stated_tiers", "fuse", "fused_order", "load_bm25",
    "mean_per_owner", "min_max", "rank", "rank_groups", "reciprocal_rank_fusion", "rerank", "save_bm25", "side_flags", "side_tiers", "stating",
    "top_k", "top_ranking", "unit_tiers", "units_with_terms",
]
