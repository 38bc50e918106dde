"""The values printed in the papers' tables, transcribed into package data: one JSON file per table in
``jcsol/papers/values/`` (``acog-table2.json``, ...), each with the paper's citation, the table's number and
caption, notes on units and names, and ``values``: dataset → measure → learner (:data:`jcsol.VARIANTS` names) →
value in the unit the notes give.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from importlib import resources

__all__ = ["PaperValues", "paper_values", "value_tables"]


@dataclasses.dataclass(frozen=True)
class PaperValues:
    """One paper table's values."""

    table: str  # the table's id, e.g. "acog-table2"
    paper: str  # the paper's bibliography key, e.g. "acog"
    citation: str  # authors, title, venue
    number: str  # the table's number in the paper, e.g. "II"
    caption: str
    notes: str  # units, and the paper's names of jcsol's learners
    values: dict[str, dict[str, dict[str, float]]]  # dataset → measure → learner → value

    def get(self, dataset: str, measure: str, learner: str) -> float | None:
        """The paper's value, or ``None`` where the table has none."""
        return self.values.get(dataset, {}).get(measure, {}).get(learner)


def _folder():
    return resources.files(__package__).joinpath("values")


def value_tables() -> tuple[str, ...]:
    """The ids of the tables whose values ship with jcsol."""
    return tuple(sorted(f.name[: -len(".json")] for f in _folder().iterdir() if f.name.endswith(".json")))


@functools.cache
def paper_values(table: str) -> PaperValues:
    """The values of paper table ``table`` (one of :func:`value_tables`), read once from the package data."""
    if table not in value_tables():
        raise ValueError(f"no paper values for table {table!r}; there are {', '.join(value_tables())}")
    doc = json.loads(_folder().joinpath(f"{table}.json").read_text(encoding="utf-8"))
    values = {
        ds: {m: {name: float(v) for name, v in row.items()} for m, row in by_measure.items()}
        for ds, by_measure in doc["values"].items()
    }
    return PaperValues(doc["table"], doc["paper"], doc["citation"], doc["number"], doc["caption"], doc["notes"], values)
