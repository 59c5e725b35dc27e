"""The evaluation protocols of ``radsift bench``, one per module.

Shi et al. 2022 (NAACL, "Improving Neural Models for Radiology Report Retrieval with
Lexicon-based Automated Annotation"), judged by the weak labels:

- :mod:`.sentence_retrieval`: mAP and mean recall over the unique sentences, by polarity
  (Tables 1-2), with the 2-fold split by finding;
- :mod:`.cross_collection`: the same queries over another collection;
- :mod:`.separation`: cos(matched query) − cos(opposite query) over labeled entries (Table 3).

RadSearch (Radiology 2025):

- :mod:`.findings_impression`: findings -> own impression on held-out reports, top-1/5/10 with
  Wilson intervals and Bonferroni-corrected McNemar tests;
- :mod:`.free_text`: judged free-text queries, P@10 with Wilson intervals;
- :mod:`.category`: same-category retrieval mAP (exam type, specialty) with t intervals;
- :mod:`.rag` (opt-in): diagnosis from finding descriptions by an LLM alone, with a retrieved
  report, and by retrieval alone; impression drafts scored by finding-level F1.

Each ``run_*`` function takes the systems of :mod:`radsift.evaluation.systems` and returns a
:class:`~radsift.evaluation.protocols.base.ProtocolResult`.
"""

from radsift.evaluation.protocols.base import ProtocolResult, Table
from radsift.evaluation.protocols.category import CATEGORY_FIELDS, detect_category_field, run_category
from radsift.evaluation.protocols.cross_collection import run_cross_collection
from radsift.evaluation.protocols.findings_impression import run_findings_to_impression
from radsift.evaluation.protocols.free_text import check_judgments, run_free_text
from radsift.evaluation.protocols.sentence_retrieval import run_sentence_retrieval
from radsift.evaluation.protocols.separation import run_separation

#: Protocol names accepted by ``radsift bench --protocol``, in report order.
PROTOCOLS = ("sentences", "cross", "separation", "impression", "free-text", "category")
#: Protocols run only when asked for by name (``--protocol rag``: it needs an LLM and takes long).
OPT_IN_PROTOCOLS = ("rag",)

__all__ = [
    "CATEGORY_FIELDS",
    "OPT_IN_PROTOCOLS",
    "PROTOCOLS",
    "ProtocolResult",
    "Table",
    "check_judgments",
    "detect_category_field",
    "run_category",
    "run_cross_collection",
    "run_findings_to_impression",
    "run_free_text",
    "run_sentence_retrieval",
    "run_separation",
]
