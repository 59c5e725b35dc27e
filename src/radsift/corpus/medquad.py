"""MedQuAD (Ben Abacha & Demner-Fushman 2019) and its CDV/CAPR answer-passage test split.

MedQuAD is a folder of NIH consumer-health XML documents (``2_GARD_QA/0002209.xml`` ...), each
with a focus entity (``<Focus>``, UMLS CUIs, synonyms) and typed question/answer pairs
(``qtype="treatment"``). :func:`read_medquad` reads them as :class:`MedQuADDocument`.

The CDV test split (Arnold et al. 2020, used by CAPR) annotates 1,111 of these documents: a
document's text is the concatenation of its answers, each followed by one line break (the
split's ``begin``/``length`` offsets count that way: checked on every passage), and each
annotated span is one answer, labelled with its (entity, aspect). :func:`read_cdv_test` joins the
annotations with the XML through ``MedQuAD_test_sources.tsv`` and returns the passages and the
natural-language queries with their gold passages.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from radsift.errors import CorpusError

ANNOTATIONS_FILE = "MedQuAD_test_annotations.json"
SOURCES_FILE = "MedQuAD_test_sources.tsv"
#: Separator the CDV conversion put after every answer when it concatenated a document's answers.
ANSWER_SEPARATOR = "\n"
_PREFIX_RE = re.compile(r"^\d+_(?P<name>.+?)(?:_QA)?(?:_XML)?$")
#: Source names the CDV split spells otherwise than MedQuAD's folder names.
_CDV_ALIASES = {"NIHSeniorHealth": "SeniorHealth"}


@dataclass(frozen=True)
class QAPair:
    """One question/answer pair of a MedQuAD document."""

    qid: str
    qtype: str
    question: str
    answer: str


@dataclass(frozen=True)
class MedQuADDocument:
    """One MedQuAD XML document.

    Attributes:
        id: ``SOURCE_NUMBER`` as the CDV split writes it (``GARD_0002209``).
        path: The XML file.
        focus: The focus entity.
        cuis: Its UMLS CUIs (may be empty).
        synonyms: Other names of the focus.
        semantic_group: UMLS semantic group (``Disorders`` ...), when given.
        qa: The question/answer pairs with a non-empty answer, in file order.
    """

    id: str
    path: Path
    focus: str
    cuis: tuple[str, ...] = ()
    synonyms: tuple[str, ...] = ()
    semantic_group: str = ""
    qa: tuple[QAPair, ...] = ()


def document_id(path: str | Path) -> str:
    """``.../2_GARD_QA/0002209.xml`` -> ``GARD_0002209`` (``8_NHLBI_QA_XML`` -> ``NHLBI``)."""
    path = Path(path)
    m = _PREFIX_RE.match(path.parent.name)
    if not m:
        raise CorpusError(f"{path}: not in a MedQuAD subset folder (N_NAME_QA)")
    return f"{m.group('name')}_{path.stem}"


def _text(node: ET.Element | None) -> str:
    return " ".join((node.text or "").split()) if node is not None else ""


def read_document(path: str | Path) -> MedQuADDocument:
    """Read one MedQuAD XML file.

    Raises:
        CorpusError: The file cannot be read or parsed (names the file).
    """
    path = Path(path)
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise CorpusError(f"{path}: cannot read MedQuAD XML ({exc})") from None
    qa = []
    for pair in root.iter("QAPair"):
        q, a = pair.find("Question"), pair.find("Answer")
        answer = (a.text or "") if a is not None else ""
        if not answer.strip():
            continue
        qa.append(QAPair(qid=(q.get("qid") if q is not None else "") or "", qtype=(q.get("qtype") if q is not None
                         else "") or "", question=_text(q), answer=answer))
    return MedQuADDocument(
        id=document_id(path), path=path, focus=_text(root.find("Focus")),
        cuis=tuple(_text(c) for c in root.iter("CUI") if _text(c)),
        synonyms=tuple(_text(s) for s in root.iter("Synonym") if _text(s)),
        semantic_group=_text(root.find(".//SemanticGroup")), qa=tuple(qa),
    )


def read_medquad(root: str | Path, *, with_answers: bool = True) -> Iterator[MedQuADDocument]:
    """Every document under a MedQuAD folder, subset by subset, in file-name order.

    Args:
        root: The MedQuAD folder (holding ``1_CancerGov_QA`` ...).
        with_answers: Skip documents without any answer (the subsets whose answers were removed).

    Raises:
        CorpusError: The folder does not exist or holds no subset folder.
    """
    root = Path(root)
    if not root.is_dir():
        raise CorpusError(f"{root}: MedQuAD folder not found")
    subsets = sorted(p for p in root.iterdir() if p.is_dir() and _PREFIX_RE.match(p.name))
    if not subsets:
        raise CorpusError(f"{root}: no MedQuAD subset folder (1_CancerGov_QA ...) inside")
    for sub in subsets:
        for path in sorted(sub.glob("*.xml")):
            doc = read_document(path)
            if doc.qa or not with_answers:
                yield doc


@dataclass(frozen=True)
class TestPassage:
    """One annotated passage of the CDV test split (an answer of a MedQuAD document)."""

    id: str
    doc_id: str
    entity: str
    aspect: str | None
    text: str


@dataclass(frozen=True)
class TestQuery:
    """One natural-language query of the split, with its (entity, aspect) and gold passages."""

    id: str
    text: str
    entity: str
    aspect: str
    aspect_heading: str
    gold: tuple[str, ...]


@dataclass
class CDVTestSet:
    """The CDV/CAPR MedQuAD test split, joined with the MedQuAD texts."""

    passages: list[TestPassage] = field(default_factory=list)
    queries: list[TestQuery] = field(default_factory=list)
    documents: list[str] = field(default_factory=list)

    @property
    def document_ids(self) -> frozenset[str]:
        """Ids (``GARD_0002209``) of the split's documents: never to be trained on."""
        return frozenset(self.documents)


def normalize_id(doc_id: str) -> str:
    """A CDV document id in :func:`document_id`'s spelling (``NIHSeniorHealth_0000055`` -> ``SeniorHealth_0000055``)."""
    source, _, rest = doc_id.partition("_")
    return f"{_CDV_ALIASES.get(source, source)}_{rest}"


def test_document_ids(cdv_dir: str | Path) -> frozenset[str]:
    """Ids of every document the test split uses: annotated in the JSON or listed in
    ``MedQuAD_test_sources.tsv`` (a few are listed without annotations: excluded all the same)."""
    cdv_dir = Path(cdv_dir)
    path = cdv_dir / SOURCES_FILE
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read the CDV test sources ({exc.strerror})") from None
    ids = {document_id(line.strip()) for line in lines if line.strip()}
    ann_path = cdv_dir / ANNOTATIONS_FILE
    try:
        data = json.loads(ann_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CorpusError(f"{ann_path}: cannot read the CDV annotations ({exc})") from None
    ids.update(normalize_id(doc["id"]) for doc in data.get("documents", []))
    return frozenset(ids)


def _subset_folders(medquad_dir: Path) -> dict[str, Path]:
    if not medquad_dir.is_dir():
        raise CorpusError(f"{medquad_dir}: MedQuAD folder not found")
    out = {}
    for p in medquad_dir.iterdir():
        m = _PREFIX_RE.match(p.name)
        if p.is_dir() and m:
            out[m.group("name")] = p
    return out


def read_cdv_test(cdv_dir: str | Path, medquad_dir: str | Path) -> CDVTestSet:
    """Read the CDV test split and join its passages with the MedQuAD answers.

    Raises:
        CorpusError: A file is missing or malformed, a document is not in MedQuAD, or an
            annotation's offsets do not fall on the document's answers (names the document).
    """
    cdv_dir, medquad_dir = Path(cdv_dir), Path(medquad_dir)
    ann_path = cdv_dir / ANNOTATIONS_FILE
    try:
        data = json.loads(ann_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CorpusError(f"{ann_path}: cannot read the CDV annotations ({exc})") from None
    folders = _subset_folders(medquad_dir)
    listed: dict[str, list[Path]] = {}
    for line in (cdv_dir / SOURCES_FILE).read_text(encoding="utf-8").splitlines():
        if line.strip():
            rel = Path(line.strip())
            listed.setdefault(document_id(rel), []).append(medquad_dir / rel.parent.name / rel.name)
    out = CDVTestSet()
    for doc in data.get("documents", []):
        doc_id = normalize_id(doc["id"])
        source, _, number = doc_id.partition("_")
        # The listed file of that id, else the file of that name, else a listed file whose name extends it
        # (CancerGov_0000013_2 is 0000013_2_3.xml): the first whose answers fill the document's length.
        candidates = list(listed.get(doc_id, []))
        if source in folders:
            candidates.append(folders[source] / f"{number}.xml")
        candidates += [p for k, ps in listed.items() if k.startswith(doc_id + "_") for p in ps]
        path = answers = None
        for cand in candidates:
            if cand.is_file():
                texts = [p.answer for p in read_document(cand).qa]
                if sum(len(a) + len(ANSWER_SEPARATOR) for a in texts) == int(doc.get("length", -1)):
                    path, answers = cand, texts
                    break
        if path is None or answers is None:
            raise CorpusError(f"{ann_path}: document {doc['id']}: no MedQuAD file in {medquad_dir} has answers of "
                              f"its length ({doc.get('length')} characters); tried {', '.join(map(str, candidates))}")
        full = "".join(a + ANSWER_SEPARATOR for a in answers)
        starts = {0}
        for a in answers:
            starts.add(max(starts) + len(a) + len(ANSWER_SEPARATOR))
        out.documents.append(doc_id)
        for ann in doc.get("annotations", []):
            begin, length = int(ann["begin"]), int(ann["length"])
            if begin not in starts or begin + length not in starts:
                raise CorpusError(f"{ann_path}: {ann.get('id')}: span {begin}+{length} does not fall on the "
                                  f"answers of {path}")
            out.passages.append(TestPassage(id=ann["id"], doc_id=doc_id, entity=ann.get("entity", ""),
                                            aspect=ann.get("aspect"), text=full[begin:begin + length].strip()))
    known = {p.id for p in out.passages}
    for i, q in enumerate(data.get("queries", [])):
        ann = (q.get("annotations") or [{}])[0]
        gold = tuple(r["id"] for r in q.get("results", []) if r.get("relevance", 1) > 0)
        missing = [g for g in gold if g not in known]
        if missing:
            raise CorpusError(f"{ann_path}: query #{i + 1}: gold passage {missing[0]} is not annotated")
        out.queries.append(TestQuery(id=f"q{i + 1:04d}", text=" ".join(q["text"].split()), entity=ann.get("entity", ""),
                                     aspect=ann.get("aspect", ""), aspect_heading=ann.get("aspectHeading", ""),
                                     gold=gold))
    return out
