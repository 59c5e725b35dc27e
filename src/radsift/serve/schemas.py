"""The shapes of the web service's answers and bodies (they document the API in ``/openapi.json``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class SentenceOut(BaseModel):
    section: str
    index: int = Field(description="Position of the sentence in its section (-1 for a whole-section unit).")
    start: int = Field(description="Character offset of the sentence in its section's text.")
    end: int
    text: str


class MentionOut(BaseModel):
    finding: str = Field(description="The query's finding (lexicon name, or the phrase read outside the lexicon).")
    status: str = Field(description="What the text states about it: present, absent or uncertain.")
    cue: str | None = Field(description="The words that decided the status (\"No evidence of\"), if any.")
    start: int = Field(description="Character offset of the mention in its text (the hit's sentence.text, or "
                                   "the report section's text).")
    end: int
    source: str = Field(description="lexicon, or open (the open-vocabulary reader).")


class ReadFindingOut(BaseModel):
    finding: str
    status: str = Field(description="What the query asks for: present, absent or uncertain.")
    source: str = Field(description="lexicon (the query names it), linked (the query describes it: understood "
                                    "as this concept), symptom (the query names a complaint: this is its first "
                                    "cause, any_of the others) or open (the open-vocabulary reader).")
    via: str | None = Field(None, description="linked: the concept's name, synonym or description the query matched; "
                                              "symptom: the complaint.")
    score: float | None = Field(None, description="linked: the cosine of that match.")
    beside: str | None = Field(None, description="linked beside the user's words: the literal reading it stands "
                                                 "beside (that reading ranks first; read_as=literal or linked drops one).")
    cue: str | None = Field(description="The query words that decided the status (\"no\", \"possible\").")
    side: str | None = Field(description="The query's side: left, right, bilateral, or null.")
    any_of: list[str] = Field(default_factory=list, description="Lexicon findings a unit may state in its place (the "
                                                                "lexicon's any_of: pneumonia's consolidation ...).")


class ReadingOut(BaseModel):
    findings: list[ReadFindingOut] = Field(description="One per finding the query names, in query order.")
    side: str | None
    negation: str = Field(description="aware (ranked by the reading) or ignore (plain similarity).")
    note: str = Field(description="Why something was left out (too many findings, no finding ...).")
    location: str | None = Field(None, description="The lobes, base, apices or body places (\"thoracic spine\", "
                                                   "\"left shoulder\") the query names, in its words "
                                                   "(`location=ignore` in `reading` drops it).")
    change: str | None = Field(None, description="The change since the last study the query asks for: new, worse, "
                                                 "better, gone or unchanged (`change=ignore` in `reading` drops it).")
    degree: str | None = Field(None, description="The degree the query asks of its finding: slight, moderate or "
                                                 "marked (`degree=ignore` in `reading` drops it).")
    pattern: str | None = Field(None, description="The patterns of its look the query asks of its finding: streaky, "
                                                  "plate-like, subsegmental, patchy, interstitial, perihilar, nodular, "
                                                  "hazy, diffuse, noncalcified; a pacemaker's wiring: single lead, "
                                                  "dual lead, biventricular (`pattern=ignore` in `reading` drops "
                                                  "them).")


class HitOut(BaseModel):
    report_id: str
    score: float = Field(description="Retrieval score; comparable within one query only.")
    rank: int
    section: str | None = Field(description="Section the matched sentence comes from.")
    sentence: SentenceOut | None
    highlights: list[list[int]] = Field(description="[start, end] ranges of matched words within sentence.text.")
    sections: dict[str, str] = Field(description="The report's sections (those selected by `fields`).")
    metadata: dict[str, str] = Field(description="The report's metadata (empty unless selected by `fields`).")
    reading: list[MentionOut] = Field(default_factory=list,
                                      description="What the matched sentence states about the query's findings "
                                                  "(offsets within sentence.text).")
    band: str | None = Field(None, description="states (the report states the query's reading), related or unlikely: "
                                               "where the relevant reports end.")
    relevance: float | None = Field(None, description="Calibrated estimate that the report states what the query "
                                                      "asks for (the band comes from it).")


class SearchOut(BaseModel):
    query: str
    k: int
    mode: str
    level: str
    target: str
    unit: str
    where: list[str]  # the filters as read: key=value (exact) or key~value (case-insensitive substring)
    negation: str
    overrides: list[str] = Field(description="The `reading` overrides as read: finding=status.")
    reading: ReadingOut = Field(description="How the query was read (after the overrides); the ranking uses it "
                                            "when negation is aware.")
    read_as: ReadingOut = Field(description="How the query itself was read, before the overrides (what to flip from).")
    count: int = Field(description="Hits on this page.")
    offset: int = Field(description="Hits of the ranked list skipped before this page.")
    total: int = Field(description="Reports (sentences at sentence level) in the whole ranked list.")
    matching: int | None = Field(description="How many of them state the query's reading (the states band); null "
                                             "when nothing is read.")
    matching_is_lower_bound: bool = Field(description="True when matching may be short (a phrase outside the lexicon "
                                                      "had more candidate sentences than are read).")
    more: bool = Field(description="Whether the ranked list goes on after this page (next: offset + count).")
    took_ms: float
    hits: list[HitOut]


class ReportOut(BaseModel):
    id: str
    sections: dict[str, str]
    metadata: dict[str, str]
    reading: ReadingOut | None = Field(None, description="With `q`: how the query was read.")
    mentions: dict[str, list[MentionOut]] | None = Field(
        None, description="With `q`: every mention of the query's findings, by section, with its status "
                          "(offsets within that section's text).")


class IndexInfo(BaseModel):
    generation: int | None = None
    format_version: int | None = None
    model: str | None = None
    dim: int | None = None
    counts: dict[str, int]
    sections: list[str]
    metadata_keys: list[str]
    created: str | None = None
    updated: str | None = None


class HealthOut(BaseModel):
    status: str
    version: str
    auth: bool = Field(description="True when API calls need a bearer token.")
    audit: bool = Field(description="True when queries are written to an audit log.")
    index: IndexInfo


class AskIn(BaseModel):
    question: str = Field(min_length=1, max_length=20000, description="A finding description or a question "
                                                                      "(task=draft: the findings).")
    task: Literal["ask", "draft"] = Field("ask", description="ask: an answer; draft: an impression for the findings.")
    k: int = Field(3, ge=1, le=20, description="Reports in the prompt.")
    retrieval: bool = Field(True, description="False: the model alone (no reports, nothing to cite).")
    target: str = Field("auto", description="auto (impressions for findings, whole reports for a question), report, "
                                            "or a section (task=ask).")
    mode: Literal["dense", "bm25", "hybrid", "hybrid-rrf"] = "hybrid"
    max_tokens: int = Field(256, ge=1, le=4096, description="New tokens the answer may have at most.")

    model_config = {"extra": "forbid"}


class ReloadOut(BaseModel):
    reloaded: bool = Field(description="True when a newer index generation was switched to.")
    index: IndexInfo
