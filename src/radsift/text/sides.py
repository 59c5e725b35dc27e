"""Side words: the words that name a side (left, right, bilateral), in queries and in reports.

One definition for every reader of sides: the query's side (:func:`radsift.labels.openvocab.query_side`),
the per-unit side flags the ranking's side tiers come from (:func:`radsift.ranking.tiers.side_flags`,
used by the search engine and the ``radsift bench`` systems), and the open-vocabulary reader, which
keeps side words out of a finding's content words. A location that lies on one side ("RLL",
"lingular": :mod:`radsift.text.locations`) gives a query or a unit that side as well.
"""

from __future__ import annotations

#: The sides a query may name.
SIDES = ("left", "right", "bilateral")
#: Side word -> side.
SIDE_WORDS = {"left": "left", "right": "right", "bilateral": "bilateral", "bilaterally": "bilateral",
              "both": "bilateral", "bibasilar": "bilateral", "bibasal": "bilateral"}


def side_words(side: str) -> tuple[str, ...]:
    """The words that name ``side`` (``bilateral``: bilateral, bilaterally, both, bibasilar, bibasal)."""
    return tuple(word for word, named in SIDE_WORDS.items() if named == side)


__all__ = ["SIDES", "SIDE_WORDS", "side_words"]
