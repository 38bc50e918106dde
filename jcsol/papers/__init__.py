"""The papers' tables reproduced: each table's protocol run on the data found, the paper's value beside jcsol's::

    rep = jcsol.papers.reproduce_table("acog-table2", data_dir, datasets=["german"])
    print(jcsol.papers.comparison_table(rep.rows))

* :mod:`jcsol.papers.tables` — :data:`TABLES`, the tables and how each is run (:class:`TableSpec`);
* :mod:`jcsol.papers.values` — the values printed in the papers, package data read by :func:`paper_values`;
* :mod:`jcsol.papers.reproduce` — :func:`reproduce_table` and its :class:`Reproduction`;
* :mod:`jcsol.papers.comparison` — the rows (:class:`Comparison`) and :func:`comparison_table`.

The protocols themselves are :mod:`jcsol.protocols`; the datasets, :func:`jcsol.datasets.load_dataset`.
"""

from .comparison import Comparison, comparison_table
from .reproduce import Reproduction, reproduce_table
from .tables import TABLES, TableSpec
from .values import PaperValues, paper_values, value_tables

__all__ = [
    "reproduce_table",
    "Reproduction",
    "TABLES",
    "TableSpec",
    "Comparison",
    "comparison_table",
    "paper_values",
    "PaperValues",
    "value_tables",
]
