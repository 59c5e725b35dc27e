"""Small writers shared by the demo's scenarios: a findings sentence or an impression phrase picked and
kept, location words, sizes, ordinals and the "findings were discussed" sentence."""

from __future__ import annotations

from typing import Sequence

from radsift.demo.context import Block, Draw
from radsift.demo.vocabulary import LOCATIONS

# ---------------------------------------------------------------------------------------------
# Small writers shared by the scenarios
# ---------------------------------------------------------------------------------------------


def _say(d: Draw, b: Block, *options: str, weights: Sequence[float] | None = None) -> str:
    """Append one of ``options`` to the block's findings sentences and return it."""
    sentence = d.pick(options, weights)
    b.sentences.append(sentence)
    return sentence


def _impress(d: Draw, b: Block, priority: int, *options: str) -> None:
    """Offer one of ``options`` to the impression with ``priority``."""
    b.impression.append((priority, d.pick(options)))


def _adj(d: Draw, location: str) -> str:
    return d.pick(LOCATIONS[location].adjectives)


def _prep(d: Draw, location: str) -> str:
    return d.pick(LOCATIONS[location].phrases)


def _mm(d: Draw) -> str:
    return f"{d.rng.randint(4, 9)} mm"


def _cm(d: Draw, low: float, high: float) -> str:
    return f"{d.rng.randint(round(low * 10), round(high * 10)) / 10:.1f} cm"


def _size(d: Draw) -> str:
    """A nodule size: millimetres or centimetres with one decimal."""
    return _mm(d) if d.chance(0.55) else _cm(d, 1.0, 2.8)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _discussed(d: Draw) -> str:
    return d.pick(
        (
            " Findings were discussed with Dr. XXXX at XXXX on XXXX.",
            " These findings were communicated to the ordering provider at XXXX.",
            " Dr. XXXX was notified by telephone at XXXX.",
        )
    )
