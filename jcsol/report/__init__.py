"""Reporting of results: paper-style tables (text, Markdown, LaTeX) and results as data (records, pandas, CSV,
JSON). Reporting imports :class:`jcsol.Result`, never the reverse.

* :mod:`jcsol.report.tables` — :func:`table` (``jcsol.table``), :func:`render`, :func:`mean_std`;
* :mod:`jcsol.report.records` — :func:`records` (one flat record per run), :func:`to_pandas`,
  :func:`write_csv`, :func:`write_json`.
"""

from .records import as_result, as_results, records, to_pandas, write_csv, write_json
from .tables import FORMATS, default_measures, mean_std, render, table

__all__ = [
    "table",
    "render",
    "mean_std",
    "default_measures",
    "FORMATS",
    "as_result",
    "as_results",
    "records",
    "to_pandas",
    "write_csv",
    "write_json",
]
