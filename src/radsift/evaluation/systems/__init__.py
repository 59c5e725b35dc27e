"""Systems under test for ``radsift bench``: BM25, a dense encoder, their hybrid, a reranker.

A system ranks a set of candidate texts for a list of query texts::

    system.rank(queries, candidates, k=10) -> [[(candidate index, score), ...] per query]

Every protocol hands the same queries and candidates to every system, so systems are compared
on exactly the same items, and every system ranks through the ranking core :mod:`radsift.ranking`
that ``radsift search`` uses. Systems rank raw texts: there is no index and no metadata filter.

- ``specs``: what to build (``--systems`` strings, YAML files), checked before any work;
- ``cache``: bi-encoders and their embedding caches (each text encoded once per run);
- ``systems``: the systems and :func:`build_systems`.

Specs (command line ``--systems``, or a YAML file, see :func:`load_systems_file`):

- ``bm25``: bm25s (Lucene BM25, k1 1.5, b 0.75) over :func:`radsift.text.tokens.tokenize`
  (stems, negation words kept); a candidate sharing no term with the query is not retrieved;
- ``dense`` / ``dense:MODEL``: cosine of sentence-transformers embeddings (the packaged
  all-MiniLM-L6-v2 by default, or a local model folder);
- ``hybrid`` / ``hybrid:MODEL``: the convex combination of the min-max normalised dense and BM25
  scores (:func:`radsift.ranking.fusion.convex_combination`, dense weight 0.75), as ``radsift
  search --mode hybrid`` fuses them;
- ``hybrid-rrf`` / ``hybrid-rrf:MODEL``: reciprocal rank fusion (Cormack et al. 2009, k = 60) of
  the dense and BM25 rankings (``radsift search --mode hybrid-rrf``);
- ``rerank:[MODEL:]RERANKER``: the dense ranking of MODEL (default model if omitted), its top
  :data:`RERANK_DEPTH` re-scored by the cross-encoder folder RERANKER
  (:mod:`radsift.models.reranker`); the rest keep their dense order below them. In a YAML
  file ``depth:`` sets the number of reranked candidates;
- ``hybrid+rerank:[MODEL:]RERANKER``: the same over the hybrid ranking, as ``radsift search
  --rerank N`` reranks in its default (hybrid) mode. In a YAML file: ``first_stage: hybrid``;
- ``KIND+negation[:MODEL]`` (``bm25+negation``, ``dense+negation``, ``hybrid+negation``,
  ``hybrid-rrf+negation``; in YAML ``negation: true``): the negation-aware ranking of ``radsift
  search`` (its default): candidates the packaged lexicon labeler reads as stating the opposite of
  the query's reading of a finding rank below all others. On the weak-label protocols
  (sentences, separation, cross-collection) this is circular: the labeler that demotes also made
  the qrels, so the system is graded by its own judge. On free-text queries with their own qrels
  (``--queries/--qrels``), findings-to-impression and category matching it is not.

Any spec may be named: ``--systems mine=dense:runs/model`` (the name labels tables and
plots). Model folders are checked before any work starts. A folder written by
:class:`radsift.models.hashing.HashingEncoder` loads as that encoder (fast smoke runs, tests).
"""


from radsift.evaluation.systems.cache import EmbeddingCache, load_encoder, texts_key
from radsift.evaluation.systems.specs import (DEFAULT_MODEL_KEY, FIRST_STAGES, KINDS, NEGATION_SUFFIX, RERANK_DEPTH,
                                              SystemSpec, check_specs, load_systems_file, parse_system)
from radsift.evaluation.systems.systems import (BM25System, DenseSystem, RankedSystem, Ranking, RerankSystem, System,
                                                build_systems)

__all__ = ["BM25System", "DEFAULT_MODEL_KEY", "DenseSystem", "EmbeddingCache", "FIRST_STAGES", "KINDS",
           "NEGATION_SUFFIX", "RERANK_DEPTH", "RankedSystem", "Ranking", "RerankSystem", "System", "SystemSpec",
           "build_systems", "check_specs", "load_encoder", "load_systems_file", "parse_system", "texts_key"]
