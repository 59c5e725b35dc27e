"""Gold-standard sentences and the precision/recall of the labeler against them.

Gold file format (TSV, UTF-8)::

    # comment lines start with '#'
    sentence<TAB>labels
    No pneumothorax or pleural effusion.<TAB>pneumothorax=absent; pleural effusion=absent
    The lungs are clear.<TAB>-

``labels`` is ``finding=status`` pairs joined by ``;`` (status ``present``, ``absent`` or
``uncertain``), or ``-`` for a sentence without findings. The header line is optional.
A malformed line or an unknown status is a :class:`~radsift.errors.LexiconError` naming
the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from radsift.errors import LexiconError
from radsift.labels.lexicon import Lexicon

STATUSES = ("present", "absent", "uncertain")


@dataclass(frozen=True)
class GoldSentence:
    """One gold sentence: its text, its ``(finding, status)`` pairs and its line."""

    text: str
    labels: frozenset[tuple[str, str]]
    line: int


@dataclass(frozen=True)
class Score:
    """Micro-averaged precision and recall of ``(finding, status)`` pairs over sentences."""

    tp: int
    fp: int
    fn: int
    errors: tuple[tuple[GoldSentence, frozenset, frozenset], ...]  # (gold, predicted, ...)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def load_gold(path: str | Path, lexicon: Lexicon | None = None) -> list[GoldSentence]:
    """Read a gold file (see the module docstring).

    Args:
        path: The TSV file.
        lexicon: When given, every finding must be one of its concept names.

    Raises:
        LexiconError: A malformed line, unknown status or (with ``lexicon``) unknown finding,
            naming the file and line.
    """
    source = str(path)
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise LexiconError(f"{source}: cannot read gold file: {exc}") from exc
    out = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        parts = raw.split("\t")
        if len(parts) != 2:
            raise LexiconError(f"{source}:{number}: expected 'sentence<TAB>labels', found {len(parts)} column(s)")
        text, labels_field = parts[0].strip(), parts[1].strip()
        if (text, labels_field) == ("sentence", "labels"):
            continue  # header
        if not text:
            raise LexiconError(f"{source}:{number}: empty sentence")
        labels = set()
        if labels_field != "-":
            for item in labels_field.split(";"):
                finding, sep, status = item.strip().rpartition("=")
                finding, status = finding.strip(), status.strip()
                if not sep or not finding:
                    raise LexiconError(f"{source}:{number}: label {item.strip()!r} is not 'finding=status'")
                if status not in STATUSES:
                    raise LexiconError(
                        f"{source}:{number}: unknown status {status!r} (one of {', '.join(STATUSES)})"
                    )
                if lexicon is not None and finding not in lexicon:
                    raise LexiconError(f"{source}:{number}: unknown finding {finding!r} (not in {lexicon.source})")
                labels.add((finding, status))
        out.append(GoldSentence(text, frozenset(labels), number))
    return out


def score(labeler, gold: Iterable[GoldSentence]) -> Score:
    """Compare the labeler's ``(finding, status)`` pairs with the gold ones, sentence by sentence."""
    gold = list(gold)
    predicted = labeler.label_many([g.text for g in gold])
    tp = fp = fn = 0
    errors = []
    for g, mentions in zip(gold, predicted):
        pred = frozenset((m.finding, m.status) for m in mentions)
        tp += len(pred & g.labels)
        fp += len(pred - g.labels)
        fn += len(g.labels - pred)
        if pred != g.labels:
            errors.append((g, pred, g.labels))
    return Score(tp, fp, fn, tuple(errors))
