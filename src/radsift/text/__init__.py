"""radsift.text: report sections and sentences.

* :func:`canonical_section` maps a heading (``"CONCLUSION:"``) to a canonical section name
  (``"impression"``) using the packaged table ``data/section_titles.yaml``.
* :func:`split_sections` splits free text at its upper-case headings, including the
  MTSamples form where line breaks became ``,HEADING: ,``.
* :func:`split_sentences` gives sentence offsets that survive radiology text (decimals,
  abbreviations, ``XXXX`` placeholders, numbered lists, missing spaces after periods).
* :func:`report_sentences` turns a :class:`~radsift.records.Report` into
  :class:`~radsift.records.Sentence` units with offsets into their section text.
"""

from __future__ import annotations

from radsift.text.sections import PREAMBLE, canonical_section, is_known_heading, load_section_titles, split_sections
from radsift.text.sentences import report_sentences, split_sentences

__all__ = [
    "PREAMBLE",
    "canonical_section",
    "is_known_heading",
    "load_section_titles",
    "report_sentences",
    "split_sections",
    "split_sentences",
]
