"""Citations in a generated answer: ``[1]``, ``[2, 3]``, ``[1][3]``; each must point at a report
the prompt showed.

A model can cite a number the prompt never had (``[7]`` of three reports), or cite at all when
it was given none. Such a citation is removed from the answer's text and counted
(:attr:`CitationCheck.invalid`): what is left cites only reports the answer can be checked against.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# "[1]", "[1, 2]", "[1;3]", "[ 2 ]": a bracket holding numbers only (a "[...]" or "[Report 2]" is prose).
_CITATION = re.compile(r"\s?\[\s*(\d{1,4}(?:\s*[,;]\s*\d{1,4})*)\s*\]")


@dataclass(frozen=True)
class CitationCheck:
    """The answer with its citations checked.

    Attributes:
        text: The answer without the invalid citations.
        cited: Numbers of the shown reports the answer cites, in order of first citation.
        invalid: The numbers removed (pointing at no shown report), in order of appearance.
    """

    text: str
    cited: tuple[int, ...]
    invalid: tuple[int, ...]

    @property
    def removed(self) -> int:
        """How many invalid citations were removed."""
        return len(self.invalid)


def check_citations(text: str, valid: set[int] | range | tuple | list) -> CitationCheck:
    """Keep the citations of ``text`` that point at a number in ``valid``; remove and count the others.

    Args:
        text: The generated answer.
        valid: The numbers the prompt showed (empty: no report was given, so every citation is invalid).
    """
    valid = set(valid)
    cited: list[int] = []
    invalid: list[int] = []

    def fix(match: re.Match) -> str:
        numbers = [int(x) for x in re.split(r"\s*[,;]\s*", match.group(1).strip())]
        good = [n for n in numbers if n in valid]
        invalid.extend(n for n in numbers if n not in valid)
        for n in good:
            if n not in cited:
                cited.append(n)
        if not good:
            return ""
        lead = match.group(0)[0] if match.group(0)[0].isspace() else ""
        return f"{lead}[{', '.join(str(n) for n in good)}]"

    cleaned = _CITATION.sub(fix, text)
    if invalid:
        cleaned = re.sub(r"[ \t]+([.,;:!?])", r"\1", cleaned)  # "pneumonia [9]." -> "pneumonia."
    return CitationCheck(cleaned.strip(), tuple(cited), tuple(invalid))
