"""The ``jcsol`` command.

``jcsol run`` runs learners over permutations of a dataset, selects each learner's hyperparameters from a grid
by the objective's measure (the papers' protocol), prints the table, and can write the runs as CSV or JSON and
the online curves of the selected runs as PNG + SVG::

    jcsol run --data german --learner COG-I ACOG-I --perms 20 --objective sum --grid eta=1e-5:1e5 \\
        --csv runs.csv --json runs.json --plot curves
    jcsol run --learner ACOG --loss II --data PATH_OR_NAME --objective sum --perms 20 --grid eta=1e-5:1e5
    jcsol run --data payments.csv --label fraud --positive yes --learner COG-I ACOG-I-diag --bits 18
    jcsol run --data payments.csv --label fraud --positive yes --drop payment_id --datetime ts --bias
    jcsol run --data path/to/w8a.gz --order file --bias    # the file's order, one run per grid point

A table's columns are printed with their kinds before the runs. ``--order file`` prints on stderr, after each chunk
of the scan, the rounds seen and the running measure of the leading grid point (:class:`jcsol.ChunkDone`'s
counts), and after the table each learner's progressive measure at ten rounds, from the run's curve; where stderr
is no terminal, random orders print the same lines instead of a progress bar.

Rows under 10% positive (:data:`IMBALANCED`) are imbalanced: the table then shows the ranking measures (ROC AUC,
average precision, precision in the top 1%) and the hyperparameters are selected by average precision
(``--select`` chooses another measure). ``--budget 1%`` counts the alerts of an online budget (a row alerts when its
score is in the top 1% of the scores before it) and ``--threshold T`` those of scores ``>= T``, in place of the sign
rule; ``--delay D`` makes the labels come late (``D`` rows, or with ``--time-column`` a duration after each row's
time), each row scored by the model that knows only the labels come by then (:func:`jcsol.run`'s ``delay``)::

    jcsol run --data payments.csv --label fraud --positive yes --drop payment_id --datetime ts --order file \
        --delay 7d --time-column ts --budget 1%

``jcsol run ... --save model.npz`` then learns, on every row in the file's order, the selected configuration of the
learner whose selected configuration has the best mean of the selecting measure (with ``--all``, one learner's
whole grid), and saves it as a :class:`jcsol.Model` with the table encoder or the LIBSVM rows' preparation;
``jcsol score`` scores new rows with it and writes them as CSV, an id column carried through::

    jcsol run --data payments.csv --label fraud --positive yes --drop payment_id --datetime ts --save model.npz
    jcsol score --model model.npz --data new.csv --out scores.csv --id payment_id --budget 1%

``jcsol reproduce TABLE`` runs one of the papers' tables (``acog-table2``, ``acog-table3``, ``arcsogd-table4``,
``csogd-table2``: :data:`jcsol.papers.TABLES`) on the data it finds and prints the paper's value beside jcsol's::

    jcsol reproduce acog-table2 --data-dir DIR --datasets german

``jcsol run --data NAME`` takes a shipped set or a file first, then looks in the data folder (``--data-dir``,
else ``JCSOL_DATA``) for a dataset of the papers (``a9a``: ``a9a.gz`` and ``a9a.t.gz``, read as ``reproduce``
reads it) or the file ``NAME`` or ``NAME.gz``. ``jcsol learners`` lists the registered learners
(:func:`jcsol.learners`); ``jcsol --version`` prints the installed version.

Errors (bad options, missing data, unwritable outputs) are one line ``jcsol: error: ...`` and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .result import Result

#: Loss II first: ACOG-II led ACOG-I by 3.9 points of sum and COG-II by 7.3 over eight imbalanced streams
#: (benchmarks/defaults.py); loss I and COG stay beside it as the papers' comparison.
DEFAULT_LEARNERS = ["ACOG-II", "COG-II", "ACOG-I", "COG-I"]
#: A table's hashed features are 2**bits wide (2**18 by default): ACOG's full d × d covariance would not fit.
DEFAULT_TABLE_LEARNERS = ["ACOG-II-diag", "COG-II", "ACOG-I-diag", "COG-I"]
#: Rows with fewer positives than this share are imbalanced: the table then shows the ranking measures and the
#: hyperparameters are selected by average precision (benchmarks/selection_measure.py, docs/choosing.md).
IMBALANCED = 0.10
#: The table's columns for imbalanced rows, with and without an alert rule (--budget, --threshold).
IMBALANCED_MEASURES = ("roc_auc", "average_precision", "precision_at_1%", "alerts_per_catch")
ALERT_MEASURES = ("roc_auc", "average_precision", "precision", "sensitivity", "alerts_per_catch")
#: The points of ``--plot``'s online curves without ``--curve-points``.
DEFAULT_CURVE_POINTS = 200


class UsageError(Exception):
    """A problem with the command line, reported as one line."""


class _Parser(argparse.ArgumentParser):
    """argparse, with errors as one line ``jcsol: error: ...`` (exit 2) instead of usage + message."""

    def error(self, message: str):  # noqa: D401 - argparse's signature
        print(f"jcsol: error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


def parse_grid(spec: str) -> tuple[str, np.ndarray]:
    """``name=lo:hi`` (the powers of ten from lo to hi) or ``name=v1,v2,…``."""
    from .grids import decades

    name, sep, values = spec.partition("=")
    if not sep or not name or not values:
        raise ValueError(f"--grid {spec!r}: expected NAME=LO:HI (powers of ten) or NAME=V1,V2,...")
    try:
        if ":" in values:
            lo, hi = values.split(":")
            return name, decades(float(lo), float(hi))
        return name, np.array([float(v) for v in values.split(",")])
    except ValueError as err:
        raise ValueError(f"--grid {spec!r}: {err}") from None


def _grid_specs(specs: list[str]) -> dict[str, tuple[str, np.ndarray]]:
    """The ``--grid`` options as ``{name: (spec as written, values)}``, refusing a name given twice."""
    axes: dict[str, tuple[str, np.ndarray]] = {}
    for spec in specs:
        name, values = parse_grid(spec)
        if name in axes:
            raise UsageError(f"--grid {name} is given twice; give all its values in one --grid {name}=...")
        axes[name] = (spec, values)
    return axes


def _value_texts(spec: str, values: np.ndarray) -> list[str]:
    """Each value of a ``--grid`` spec as the user wrote it (a list's items), or as a range's powers of ten."""
    written = spec.partition("=")[2]
    return written.split(",") if ":" not in written else [f"{v:g}" for v in values]


def _check_in_float32(obj, field: str, value: float, given: str) -> None:
    """Refuses, naming ``given`` (the option as written), a value that ``obj`` takes but refuses once the runs'
    float32 rounds it (``eta=1e-50`` is 0 there, ``eta=1e39`` infinite): judged before any data is read."""
    with np.errstate(over="ignore", under="ignore"):
        rounded = float(np.float32(value))
    try:
        obj.replace(**{field: rounded})
    except ValueError as err:
        raise UsageError(f"{given} is {rounded:g} in float32, the runs' dtype: {err}") from None


def _check_key(key: int, rerun: bool) -> None:
    """Refuses a seed outside [0, 2**32), the range JAX keeps, and, when the selected values are re-run (on the
    seed ``key + 1``), the last one."""
    if not 0 <= key < 2**32:
        raise UsageError(f"--key must be a seed in [0, 2**32), got {key}")
    if rerun and key + 1 >= 2**32:
        raise UsageError(f"--key {key}: the re-run's seed, key + 1, is 2**32, beyond [0, 2**32); give a smaller key")


def _objective_options(args: argparse.Namespace) -> None:
    """Checks the options of the objective, filling in their defaults: those of the other objective are refused
    (``--c-p`` with ``--objective sum`` would be ignored), and so is a weight outside (0, 1), or one that the
    runs' float32 rounds to a value the objective refuses."""
    import jcsol

    others = {"sum": (("--c-p", args.c_p),), "cost": (("--alpha-p", args.alpha_p), ("--rho", args.rho))}
    for option, value in others[args.objective]:
        if value is not None:
            raise UsageError(f"{option} is not an option of --objective {args.objective}: leave it out")
    if args.objective == "sum":
        args.alpha_p = 0.5 if args.alpha_p is None else args.alpha_p
        args.rho = args.rho or "offline"
        if not 0 < args.alpha_p < 1:
            raise UsageError(f"--alpha-p must be in (0, 1), got {args.alpha_p}")
        _check_in_float32(jcsol.Sum(), "alpha_p", args.alpha_p, f"--alpha-p {args.alpha_p}")
    else:
        args.c_p = 0.9 if args.c_p is None else args.c_p
        if not 0 < args.c_p < 1:
            raise UsageError(f"--c-p must be in (0, 1), got {args.c_p}")
        _check_in_float32(jcsol.Cost(), "c_p", args.c_p, f"--c-p {args.c_p}")
        _check_in_float32(jcsol.Cost(), "c_n", 1.0 - args.c_p, f"--c-p {args.c_p} (c_n = 1 - c_p)")


def _run_inputs(args: argparse.Namespace) -> list[Path]:
    """Every file ``jcsol run`` may read ``--data`` from (:func:`_load_named`'s places): the path itself, and in the
    data folder ``NAME``, ``NAME.gz`` and the files of the papers' dataset ``NAME``."""
    from .datasets import DATASETS, ENV_DATA

    paths = [Path(args.data)]
    folder = args.data_dir if args.data_dir is not None else os.environ.get(ENV_DATA) or None
    if folder is not None:
        base = Path(folder).expanduser()
        files = DATASETS[args.data].files if args.data in DATASETS else ()
        paths += [base / args.data, base / f"{args.data}.gz", *(base / f for f in files)]
    return paths


def _run_outputs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """The files ``jcsol run`` writes, each with its option as written: ``--plot STEM`` writes ``STEM.png`` and
    ``STEM.svg`` (a ``.png`` or ``.svg`` suffix of the stem left out, as :func:`jcsol.plots.save` names them)."""
    outputs = [
        (f"--{option} {path}", Path(path)) for option in ("csv", "json", "save") if (path := getattr(args, option))
    ]
    if args.plot:
        stem = Path(args.plot)
        stem = stem.with_suffix("") if stem.suffix.lower() in (".png", ".svg") else stem
        outputs += [(f"--plot {args.plot}", stem.with_name(stem.name + suffix)) for suffix in (".png", ".svg")]
    return outputs


def _refuse_clobbering(outputs: list[tuple[str, Path]], inputs: list[tuple[str, Path]]) -> None:
    """Refuses an output that is one of the command's inputs, or another of its outputs — the same file under any
    name (a link, a path through a linked folder) —, before anything is read or written."""
    from .files import same_file

    for i, (given, path) in enumerate(outputs):
        for source, other in inputs:
            if same_file(path, other):
                raise UsageError(f"{given} would overwrite {other}, an input ({source}): give another path")
        for other_given, other in outputs[:i]:
            if same_file(path, other):
                raise UsageError(f"{other_given} and {given} name the same file {path}: give each its own path")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _column_list(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected column names separated by commas, got {text!r}")
    return names


def _share(text: str) -> float:
    """``--budget``: a share of rows in (0, 1), as a percentage (``1%``) or a fraction (``0.01``)."""
    from fractions import Fraction

    written = text.strip()
    percent = written.endswith("%")
    try:  # the decimal as written: 1.1% is 0.011, not 1.1 / 100 = 0.011000000000000001
        value = float(Fraction(written[:-1].strip() if percent else written) / (100 if percent else 1))
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"expected a share of rows such as 1% or 0.01, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be a share of rows in (0, 1) (0% to 100%, both excluded), got {text}")
    return value


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not np.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be finite, got {text}")
    return value


def _measure(text: str) -> str:
    """``--select``: one measure name, checked by :func:`jcsol.metrics.check_measure`."""
    from .metrics import check_measure

    try:
        return check_measure(text.strip())
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _duration(text: str):
    """``--delay`` with ``--time-column``: ``7d``, ``12h``, ``30m``, ``45s``, ``2w`` or a number of seconds, as a
    ``numpy.timedelta64`` of nanoseconds."""
    import re

    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([wdhms]?)\s*", text)
    if found is None:
        raise UsageError(
            f"--delay {text}: with --time-column, a duration such as 7d, 12h, 30m, 45s or a number of seconds"
        )
    seconds = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1, "": 1}[found.group(2)]
    return np.timedelta64(round(float(found.group(1)) * seconds * 10**9), "ns")


def _delay_of(args: argparse.Namespace):
    """``--delay``: ``None``, a number of rows, or with ``--time-column`` a duration; refused before any data is
    read."""
    if args.delay is None:
        if args.time_column is not None:
            raise UsageError("--time-column gives the rows' times for --delay: give --delay DURATION too")
        return None
    if args.time_column is None:
        try:
            rows = int(args.delay)
        except ValueError:
            raise UsageError(
                f"--delay {args.delay}: a number of rows (an integer >= 0), or a duration with --time-column COLUMN"
            ) from None
        if rows < 0:
            raise UsageError(f"--delay must be >= 0 rows, got {rows}")
        return rows
    if not _is_table(args.data):
        raise UsageError(f"--time-column is a column of a table; --data {args.data} is not one")
    if args.order != "file":
        raise UsageError(
            "--time-column: a label known at its row's time plus the delay needs the rows in time order: give "
            "--order file"
        )
    return _duration(args.delay)


def _times(table, column: str) -> np.ndarray:
    """A table's column of times as ``datetime64[ns]`` (UTC where the values carry offsets), refusing missing or
    unreadable values by name."""
    import pandas as pd

    names = list(table.columns) if isinstance(table, pd.DataFrame) else list(table.column_names)
    if column not in names:
        raise UsageError(f"--time-column {column}: not a column of the table, whose columns are {names}")
    values = table[column] if isinstance(table, pd.DataFrame) else table.column(column).to_pandas()
    try:
        parsed = pd.to_datetime(values, format="ISO8601", utc=True)
    except (ValueError, TypeError) as err:
        raise UsageError(f"--time-column {column}: not ISO 8601 times or datetimes ({err})") from None
    if parsed.isna().any():
        raise UsageError(
            f"--time-column {column}: {int(parsed.isna().sum())} missing time(s), the first at row "
            f"{int(np.argmax(parsed.isna().to_numpy()))}"
        )
    return parsed.dt.tz_localize(None).to_numpy("datetime64[ns]")


def _measure_list(text: str) -> list[str]:
    """``--measures``: measure names separated by commas, each checked by :func:`jcsol.metrics.check_measure`."""
    from .metrics import check_measure

    try:
        return [check_measure(name) for name in _column_list(text)]
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _parser() -> argparse.ArgumentParser:
    from . import __version__  # the distribution's version too (pyproject.toml reads it from there)
    from .papers import TABLES

    parser = _Parser(prog="jcsol", description="Cost-sensitive online classification on JAX.")
    parser.add_argument("--version", action="version", version=f"jcsol {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = commands.add_parser("run", help="run learners over permutations of a dataset and print the table")
    run.add_argument(
        "--data",
        default="german",
        help="a shipped dataset name, a LIBSVM file, a table (.csv, .csv.gz, .parquet) with --label, or a "
        "dataset of the papers (a9a, ijcnn1, ...) or a file NAME or NAME.gz in the data folder "
        "(default: german)",
    )
    run.add_argument(
        "--data-dir",
        metavar="DIR",
        help="the data folder --data NAME is looked for in when NAME is neither shipped nor a file (default: "
        "the JCSOL_DATA environment variable); the papers' datasets are read as jcsol reproduce reads them",
    )
    run.add_argument(
        "--positive",
        nargs="*",
        metavar="VALUE",
        help="label value(s) of the +1 class, the rest -1; needed unless the labels are {-1,1}, {0,1} "
        "or {1,2} (then 1 is +1); a table's label column compares numbers as numbers, text as text",
    )
    run.add_argument("--no-normalize", action="store_true", help="keep rows as they are (default: L2-normalise)")
    run.add_argument(
        "--bias",
        action="store_true",
        help="append a constant feature 1 to every row, after the normalisation (the offset term; without it a "
        "row with no non-zero feature scores 0 and is predicted +1): LIBSVM rows get column d of d + 1, a "
        "table's rows slot 2**B of 2**B + 1",
    )
    run.add_argument(
        "--label",
        metavar="COLUMN",
        help="the label column of a table given to --data; its rows are encoded once, in file order, "
        "by jcsol.TableEncoder (hashed categorical columns, numeric columns scaled online) and "
        "then permuted",
    )
    run.add_argument("--numeric", type=_column_list, metavar="A,B", help="a table's numeric columns")
    run.add_argument(
        "--categorical",
        type=_column_list,
        metavar="A,B",
        help="a table's categorical columns (without --numeric and --categorical: numeric dtypes "
        "numeric, the rest categorical)",
    )
    run.add_argument("--bits", type=int, metavar="B", help="a table's features hash into 2**B slots (default 18)")
    run.add_argument(
        "--drop",
        type=_column_list,
        metavar="A,B",
        help="a table's columns never encoded (ids, timestamps, free text); a column whose values are all "
        "distinct (an id) or that holds datetimes is refused unless dropped or declared",
    )
    run.add_argument(
        "--datetime",
        type=_column_list,
        metavar="A,B",
        help="a table's datetime columns, each hashed as its hour of day and day of the week",
    )
    run.add_argument(
        "--learner",
        nargs="+",
        metavar="NAME",
        help=f"learner variants (default: {' '.join(DEFAULT_LEARNERS)}, loss II first; for a table, whose hashed "
        f"features are 2**B wide: {' '.join(DEFAULT_TABLE_LEARNERS)}); with --loss the loss may be left out of the "
        "name (ACOG, ACOG-diag)",
    )
    run.add_argument(
        "--loss",
        choices=["I", "II"],
        help="the cost-sensitive loss of every learner that has one (overrides the name's)",
    )
    run.add_argument("--perms", type=_positive_int, help="random permutations (default: 20; none with --order file)")
    run.add_argument(
        "--order",
        choices=["random", "file"],
        default="random",
        help="the rows' orders: random permutations (default, --perms of them), or the file's own order, one run "
        "per grid point, with the rounds seen printed while it runs and the selected configuration's "
        "progressive measure at the end",
    )
    run.add_argument("--objective", choices=["sum", "cost"], default="sum")
    run.add_argument(
        "--scale",
        choices=["online", "both"],
        help="online: standardise each feature inside the round, row t of each run by the rows before it (dense "
        "rows centred and scaled, sparse rows scaled); both: each learner on the rows as given and, as 'NAME "
        "scaled', on the rows so standardised (default: the rows as given)",
    )
    run.add_argument(
        "--delay",
        metavar="D",
        help="labels that come late: each row is scored by the model that has learnt only the labels known when it "
        "arrives, a row's label known D rows after it (river's rule: 0 and 1 are the usual protocol), or with "
        "--time-column a duration after its time (7d, 12h, 30m, 45s; a number: seconds)",
    )
    run.add_argument(
        "--time-column",
        metavar="COLUMN",
        help="a table's column of the rows' times (ISO 8601 text or datetimes) for --delay DURATION; needs "
        "--order file, the rows in time order",
    )
    alert = run.add_mutually_exclusive_group()
    alert.add_argument(
        "--budget",
        type=_share,
        metavar="SHARE",
        help="count the alerts of an online budget instead of the sign rule: a row alerts when its score is in the "
        "top SHARE (1%% or 0.01) of the scores before it (jcsol.alerts.budget_alerts); --save keeps it",
    )
    alert.add_argument(
        "--threshold",
        type=_finite,
        metavar="T",
        help="count the alerts of rows whose score is >= T instead of >= 0; --save keeps it",
    )
    run.add_argument(
        "--select",
        type=_measure,
        metavar="MEASURE",
        help="the measure hyperparameters are selected by (default: the objective's, or average_precision where "
        f"under {IMBALANCED * 100:.0f}%% of the rows are positive)",
    )
    run.add_argument(
        "--alpha-p", type=float, help="weight of sensitivity for --objective sum (default 0.5; refused with cost)"
    )
    run.add_argument(
        "--c-p", type=float, help="cost of a false negative for --objective cost (default 0.9; refused with sum)"
    )
    run.add_argument(
        "--rho", choices=["offline", "laplace"], help="ρ for --objective sum (default offline; refused with cost)"
    )
    run.add_argument(
        "--grid", action="append", metavar="NAME=LO:HI", help="hyperparameter grid, repeatable (default: eta=1e-5:1e5)"
    )
    run.add_argument("--all", action="store_true", help="print every grid point, not only the selected one")
    run.add_argument(
        "--rerun",
        action="store_true",
        help="re-run the selected values on fresh permutations (key + 1) and report those",
    )
    run.add_argument("--key", type=int, default=0, help="random seed in [0, 2**32) (default 0)")
    run.add_argument("--format", choices=["text", "markdown", "latex"], default="text")
    run.add_argument(
        "--measures",
        type=_measure_list,
        metavar="A,B",
        help="the table's columns, e.g. sum,precision,f1,alerts_per_catch,average_precision,precision_at_1%% "
        "(default: sum or cost, sensitivity, specificity, precision, alerts_per_catch); the measures of "
        "scores record every run's scores; the CSV and JSON hold these beside every measure of counts",
    )
    run.add_argument("--csv", metavar="PATH", help="write one record per run (counts and measures) as CSV")
    run.add_argument("--json", metavar="PATH", help="write the summary and one record per run as JSON")
    run.add_argument(
        "--plot",
        metavar="PATH_STEM",
        help="write the online curves of the selected runs to PATH_STEM.png and PATH_STEM.svg",
    )
    run.add_argument("--curve-points", type=_positive_int, help="points of the online curves for --plot (default 200)")
    run.add_argument(
        "--save",
        metavar="PATH",
        help="after the table, learn the selected configuration of the learner whose selected configuration has the "
        "best mean of the selecting measure (with --all, one learner's whole grid) on every row in the file's "
        "order, and save it as a model (jcsol.Model) with the table's encoder or the rows' preparation, for "
        "jcsol score",
    )

    score = commands.add_parser(
        "score", help="score rows with a saved model (jcsol run --save) and write them, with their alerts, as CSV"
    )
    score.add_argument("--model", required=True, metavar="PATH", help="a model file (jcsol run --save, Model.save)")
    score.add_argument(
        "--data",
        required=True,
        metavar="FILE",
        help="the rows: a table (.csv, .csv.gz, .parquet) for a model with a table encoder (a label column, if "
        "present, is ignored), else a LIBSVM file, prepared as the model's rows were",
    )
    score.add_argument("--out", required=True, metavar="PATH", help="the CSV written: id(s), score, alert (0/1)")
    score.add_argument(
        "--id",
        type=_column_list,
        metavar="COL[,COL...]",
        help="a table's column(s) carried into the CSV beside each row's score (default: a column row numbering "
        "the rows from 0)",
    )
    rule = score.add_mutually_exclusive_group()
    rule.add_argument("--threshold", type=_finite, metavar="T", help="alert on rows whose score is >= T")
    rule.add_argument(
        "--budget",
        type=_share,
        metavar="SHARE",
        help="alert on this share of the rows (1%% or 0.01), by the online budget's running quantile of the "
        "scores, starting from those the model gave while it learnt (default: the model's own rule, its "
        "threshold 0 unless it was saved with a budget)",
    )

    listing = commands.add_parser(
        "learners", help="list the registered learners: hyperparameters and defaults, options, paths, paper"
    )
    listing.add_argument("--format", choices=["text", "markdown"], default="text")

    rep = commands.add_parser("reproduce", help="run a paper table on the data found; paper beside jcsol")
    rep.add_argument("table", choices=list(TABLES), help="the paper table: " + ", ".join(TABLES))
    rep.add_argument(
        "--data-dir", metavar="DIR", help="folder of the LIBSVM files (default: the JCSOL_DATA environment variable)"
    )
    rep.add_argument("--datasets", nargs="+", metavar="NAME", help="only these datasets of the table")
    rep.add_argument("--learners", nargs="+", metavar="NAME", help="only these learners of the table")
    rep.add_argument("--columns", nargs="+", choices=["sum", "cost"], help="only these measures of the table")
    rep.add_argument(
        "--perms", type=_positive_int, help="random permutations, for the tables that take them (default: 20)"
    )
    rep.add_argument("--folds", type=_positive_int, help="folds, for acog-table3 only (default: 5)")
    rep.add_argument("--max-rows", type=_positive_int, help="subsample every dataset to this many rows (quick look)")
    rep.add_argument(
        "--no-rerun",
        action="store_true",
        help="report the selection runs themselves (the papers' way), not a re-run on fresh permutations",
    )
    rep.add_argument("--key", type=int, default=0, help="random seed in [0, 2**32) (default 0)")
    rep.add_argument("--format", choices=["text", "markdown", "latex"], default="text")
    rep.add_argument("--csv", metavar="PATH", help="write the comparison rows as CSV")
    rep.add_argument("--json", metavar="PATH", help="write the comparison rows as JSON")
    rep.add_argument("-v", "--verbose", action="store_true", help="print each row on stderr as it is done")
    return parser


def _check_output(option: str, path: str | None) -> None:
    """Fails early (before any computation) when an output file's folder does not exist."""
    if path is None:
        return
    if Path(path).expanduser().is_dir():
        raise UsageError(f"{option} {path} is a folder; give a file path")
    parent = Path(path).expanduser().resolve().parent
    if not parent.is_dir():
        raise UsageError(f"{option} {path}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"{option} {path}: folder {parent} is not writable")


def _run(args: argparse.Namespace) -> str:
    import jcsol

    from . import metrics, report
    from .protocols import select_and_rerun

    for option in ("csv", "json", "plot"):
        _check_output(f"--{option}", getattr(args, option))
    _refuse_clobbering(_run_outputs(args), [(f"--data {args.data}", path) for path in _run_inputs(args)])
    _check_key(args.key, rerun=args.rerun and not args.all)
    if args.rerun and args.all:
        raise UsageError("--rerun re-runs the selected values; --all selects none: leave out one of them")
    if args.curve_points is not None and not args.plot:
        raise UsageError("--curve-points sets the points of --plot's curves: give --plot, or leave it out")
    _objective_options(args)
    if args.positive is not None and not args.positive:
        raise UsageError("--positive needs at least one label")
    if args.plot and args.all:
        raise UsageError("--plot draws the selected runs; leave out --all")
    if args.plot:
        if importlib.util.find_spec("matplotlib") is None:
            raise UsageError("--plot needs matplotlib: pip install matplotlib (or jcsol[plot])")
    file_order = args.order == "file"
    if file_order and args.perms is not None:
        raise UsageError("--order file runs the rows once, in the file's order: leave out --perms")
    if file_order and args.rerun:
        raise UsageError("--rerun runs the selected values on fresh permutations; --order file has none")
    if not file_order and args.perms is None:
        args.perms = 20
    specs = _grid_specs(args.grid or ["eta=1e-5:1e5"])
    axes = {name: values for name, (_, values) in specs.items()}
    learners = {}
    for requested in args.learner or (DEFAULT_TABLE_LEARNERS if _is_table(args.data) else DEFAULT_LEARNERS):
        learner = _learner(requested, args.loss)
        name = learner.name if args.loss else requested
        if name in learners:
            continue
        known = learner.hyperparameters()
        usable = {k: v for k, v in axes.items() if k in known}
        if known and set(axes) - set(usable) and not usable:
            raise ValueError(f"{name} has none of the hyperparameters {sorted(axes)}; it has {sorted(known)}")
        if usable:
            try:
                jcsol.grid(learner, **usable)  # the values are checked here, before any data is read
            except (TypeError, ValueError) as err:
                raise UsageError(f"--grid: {err}") from None
            for axis in usable:
                spec, values = specs[axis]
                for text, value in zip(_value_texts(spec, values), values):
                    _check_in_float32(learner, axis, value, f"--grid {spec}: {axis}={text}")
        learners[name] = (learner, usable)
    if args.save:
        _check_output("--save", args.save)
        if args.all and len(learners) > 1:
            raise UsageError(
                f"--save with --all saves one learner's whole grid, and this run has {len(learners)} learners "
                f"({', '.join(learners)}): give one --learner, or leave out --all to save the best selected one"
            )
        if args.all and args.scale == "both":
            raise UsageError(
                "--save with --all saves one learner's whole grid, and --scale both runs it twice (as given and "
                "scaled): give --scale online or leave it out, or leave out --all to save the best selected one"
            )
    unused = sorted(set(axes) - {k for _, usable in learners.values() for k in usable})
    if unused and args.grid:
        raise UsageError(
            f"--grid {', '.join(unused)}: no learner of this run has such a hyperparameter ("
            + "; ".join(f"{n}: {', '.join(sorted(l.hyperparameters())) or 'none'}" for n, (l, _) in learners.items())
            + ")"
        )

    delay = _delay_of(args)
    alerting = args.budget is not None or args.threshold is not None
    _use_cores()
    X, y, encoder, times = _load_data(args)
    imbalanced = float(np.mean(np.asarray(y) > 0)) < IMBALANCED
    select = args.select or ("average_precision" if imbalanced else args.objective)
    if args.measures is None and imbalanced:
        args.measures = [args.objective, *(ALERT_MEASURES if alerting else IMBALANCED_MEASURES)]
    late = {} if delay is None else {"delay": delay, "times": times}
    if args.objective == "sum" and args.rho == "offline" and len(np.unique(np.asarray(y) > 0)) < 2:
        which = "negative" if np.all(np.asarray(y) > 0) else "positive"
        raise UsageError(
            f"--data: the labels hold no {which} example, so ρ of --rho offline is undefined; give --rho laplace "
            "or --objective cost"
        )
    objective = (
        jcsol.Sum(alpha_p=args.alpha_p, rho=args.rho)
        if args.objective == "sum"
        else jcsol.Cost(c_p=args.c_p, c_n=1.0 - args.c_p)
    )
    plot_points = args.curve_points or DEFAULT_CURVE_POINTS
    curve_points = min(plot_points if args.plot else PROGRESS_POINTS if file_order else 0, len(y))
    perms = "stream" if file_order else args.perms  # the file's order: one run per grid point
    weight = args.alpha_p if args.objective == "sum" else args.c_p  # the measure's weight (α_p or c_p)
    record_scores = alerting or metrics.of_scores(select) or any(metrics.of_scores(m) for m in args.measures or ())
    rows: dict[str, Result] = {}
    chosen: dict[str, dict[str, float]] = {}
    scales: dict[str, str | None] = {}  # each row's scaling
    stream = jcsol.Stream(X, y)  # checked and placed once for every learner's calls
    row_runs = [
        (f"{name} scaled" if scale and args.scale == "both" else name, learner, usable, scale)
        for name, (learner, usable) in learners.items()
        for scale in ([None, "online"] if args.scale == "both" else [args.scale])
    ]
    for name, learner, usable, scale in row_runs:
        scales[name] = scale
        started = time.perf_counter()
        if args.all:
            res = jcsol.run(
                jcsol.grid(learner, **usable) if usable else learner,
                stream,
                perms=perms,
                **_order_options(name, len(y), file_order, args.objective, weight),
                objective=objective,
                key=args.key,
                curve_points=curve_points,
                record_scores=record_scores,
                scale=scale,
                **late,
            )
            rows[name], chosen[name] = _alerted(res, args), {}
            _done(name, res, started)
            continue
        sel = select_and_rerun(
            learner,
            stream,
            grid=usable,
            measure=select,
            perms=perms,
            **_order_options(name, len(y), file_order, args.objective, weight),
            objective=objective,
            key=args.key,
            rerun=args.rerun,
            curve_points=curve_points,
            record_scores=record_scores,
            scale=scale,
            **late,
        )
        rows[name], chosen[name] = _alerted(sel.result, args), sel.chosen
        _done(name, sel.result, started)
    n_pos = int((y > 0).sum())
    ratio = (len(y) - n_pos) / max(n_pos, 1)
    head = (
        f"{args.data}: {len(y)} examples × {X.shape[1]} features, {n_pos} positive (1:{ratio:.2f}); "
        + ("the file's order, one run per grid point" if file_order else f"{args.perms} permutations")
        + f"; objective {args.objective}"
        + ("; a constant feature 1 appended to every row (--bias)" if args.bias else "")
        + ("; each feature standardised online (--scale online)" if args.scale == "online" else "")
        + ("; each learner on the rows as given and standardised online (--scale both)" if args.scale == "both" else "")
        + (
            ""
            if delay is None
            else f"; labels learnt {args.delay} {'after' if times is not None else 'rows after'} their rows (--delay)"
        )
        + (f"; alerts: the top {args.budget:.4g} of the scores so far (--budget)" if args.budget else "")
        + (f"; alerts: scores >= {args.threshold:g} (--threshold)" if args.threshold is not None else "")
        + ("" if args.all else f"; hyperparameters selected by mean {select}")
        + ("; reported runs re-run on fresh permutations" if args.rerun and not args.all else "")
    )
    out = [head, jcsol.table(rows, measures=args.measures, fmt=args.format)]
    if file_order:
        out.append(_progressive(rows, args.objective))
    measures = metrics.MEASURES + tuple(m for m in args.measures or () if m not in metrics.MEASURES)
    if alerting:  # the alerts' counts have no example costs: the example costs are the learners' sign rule's
        measures = tuple(m for m in measures if m != "example_cost")
    runs = report.records(rows, measures)
    if args.csv:
        report.write_csv(runs, args.csv)
        out.append(f"wrote {len(runs)} runs to {args.csv}")
    if args.json:
        # the table's mean ± std: NaN (null) where a run's measure is undefined, no std of a single run
        with np.errstate(invalid="ignore"):  # the std of infinite alerts per catch is NaN (null)
            summary = {
                name: {
                    "chosen": chosen[name],
                    "mean": {m: float(np.mean(res.measure(m))) for m in measures},
                    "std": {m: float(np.std(res.measure(m), ddof=1)) if res.n_runs > 1 else None for m in measures},
                    "time_per_run": res.time_per_run,
                }
                for name, res in rows.items()
            }
        report.write_json(
            {
                "dataset": args.data,
                "examples": len(y),
                "features": int(X.shape[1]),
                "positives": n_pos,
                "objective": args.objective,
                "perms": args.perms,
                "order": args.order,
                "key": args.key,
                "selected": not args.all,
                "learners": summary,
                "runs": runs,
            },
            args.json,
        )
        out.append(f"wrote {len(rows)} learners and {len(runs)} runs to {args.json}")
    if args.plot:
        from . import plots

        fig = plots.online_curves(
            rows,
            args.objective,
            title=f"{args.data}: online {args.objective}, "
            + ("in the file's order" if file_order else f"mean ± std over {args.perms} permutations"),
        )
        png, svg = plots.save(fig, args.plot)
        out.append(f"wrote {png} and {svg}")
    if args.save:
        out.append(_save_model(args, rows, scales, stream, objective, encoder, select))
    return "\n".join(out)


def _alerted(res, args: argparse.Namespace):
    """The runs counted by the alerts of ``--budget`` or ``--threshold`` (:func:`jcsol.alerts.alerted`), or as they
    are."""
    from . import alerts

    if args.budget is not None:
        return alerts.alerted(res, budget=args.budget)
    if args.threshold is not None:
        return alerts.alerted(res, threshold=args.threshold)
    return res


def _save_model(args: argparse.Namespace, rows: dict, scales: dict, stream, objective, encoder, select: str) -> str:
    """``--save``: the selected configuration of the learner whose selected configuration has the best mean of
    the selecting measure (``select``) in the table (with ``--all``, the one learner's whole grid), learnt on every
    row in the file's order (``perms="stream"``, its scores recorded for the budget's history), saved as a model
    with the table's encoder or the LIBSVM rows' preparation; the line saying so."""
    import jcsol

    from . import metrics

    names = list(rows)
    means = [float(np.mean(rows[name].measure(select))) for name in names]
    name = names[0] if len(names) == 1 else names[metrics.best_index(means, select)]
    chosen = rows[name]
    trained = jcsol.run(
        chosen.learner,  # the selected configuration (with --all: the grid)
        stream,
        perms="stream",
        objective=objective,
        key=args.key,
        record_scores=True,
        scale=scales[name],
        progress=False,
    )
    model = trained.model(data=args.data, measure=None if args.all else select)
    prepared = None if encoder is not None else {"normalize": not args.no_normalize, "bias": args.bias}
    alert = {"budget": args.budget} if args.budget is not None else {}
    alert |= {"threshold": args.threshold} if args.threshold is not None else {}
    model = model.replace(encoder=encoder, rows=prepared, **alert)
    model.save(args.save)
    if model.grid_shape:
        values = f"its whole grid of {model.n_configurations} configurations"
    else:
        values = ", ".join(f"{k}={float(v):g}" for k, v in chosen.learner.hyperparameters().items()) or "no values"
    best = "" if len(names) == 1 else f", the best mean {select} of the table,"
    return (
        f"saved {name} ({values}){best} learnt on all {len(trained.orders[0]):,} rows in the file's order, to "
        f"{args.save}"
    )


def _score(args: argparse.Namespace) -> str:
    """``jcsol score``: a saved model's scores and alerts of every row of ``--data``, written as CSV."""
    import jcsol

    from .live import Live, LiveFileError
    from .model import ModelFileError

    _check_output("--out", args.out)
    _refuse_clobbering(
        [(f"--out {args.out}", Path(args.out))],
        [(f"--model {args.model}", Path(args.model)), (f"--data {args.data}", Path(args.data))],
    )
    for option, path in (("--model", args.model), ("--data", args.data)):
        if not os.path.isfile(path):
            raise UsageError(f"{option} {path}: no such file")
    if args.id and len(set(args.id)) < len(args.id):
        raise UsageError(f"--id {','.join(args.id)} names a column twice")
    taken = {"row"} if not args.id else set(args.id)
    for own in ("score", "alert"):
        if own in taken:
            raise UsageError(f"--id {own}: the CSV has a {own} column of its own; carry another column")
    try:
        model = jcsol.load(args.model)
    except (ModelFileError, LiveFileError) as err:
        raise UsageError(f"--model: {err}") from None
    if isinstance(model, Live):
        raise UsageError(
            f"--model {args.model} is a live learner's file (jcsol.Live.save), not a model: score its rows with "
            "jcsol.Live.load(path).predict(rows), or save a model (jcsol run --save, Result.model(...).save)"
        )
    if _is_table(args.data):
        if model.encoder is None:
            raise UsageError(
                f"--data {args.data} is a table, and the model learnt plain rows, without a table encoder: give "
                "rows of its kind (a LIBSVM file)"
            )
        from .features import read_table

        table = read_table(args.data)
        ids = {column: _column_values(table, column, args.data) for column in args.id or ()}
        X = table
    else:
        if model.encoder is not None:
            raise UsageError(
                f"--data {args.data} is not a table ({', '.join(TABLE_SUFFIXES)}), and the model encodes tables "
                f"(its encoder's columns: {', '.join(model.encoder.columns)}): give a table"
            )
        if args.id:
            raise UsageError("--id names a table's columns; a LIBSVM file's rows are numbered (the row column)")
        if model.rows is None:
            raise UsageError(
                f"--model {args.model} does not say how its rows were prepared (a model made from arrays, not by "
                "jcsol run --save): score its rows with jcsol.load(path).scores(X)"
            )
        X, ids = _libsvm_rows(args.data, model), {}
    scores = model.scores(X)
    n = scores.shape[-1]
    configurations = [()] if not model.grid_shape else list(np.ndindex(*model.grid_shape))
    columns: dict[str, list[str]] = dict(ids) if ids else {"row": [str(i) for i in range(n)]}
    counts = []
    for index in configurations:
        one = model.at(index) if model.grid_shape else model
        alerts = one.alerts_of(scores[index], threshold=args.threshold, budget=args.budget)
        tag = "" if not model.grid_shape else f"[{_configuration(model, index)}]"
        columns[f"score{tag}"] = [repr(float(v)) for v in scores[index]]  # every digit: read back exactly
        columns[f"alert{tag}"] = ["1" if a else "0" for a in alerts]
        counts.append(int(alerts.sum()))
    _write_columns(args.out, columns, n)
    if args.budget is not None:
        rule = f"budget {100 * args.budget:g}% of the rows"
    elif args.threshold is not None:
        rule = f"score >= {args.threshold:g}"
    else:
        rule = (
            f"budget {100 * model.budget:g}% of the rows"
            if model.budget is not None
            else f"score >= {model.threshold:g}"
        )
    alerted = (
        f"{counts[0]:,} alerts"
        if len(counts) == 1
        else f"{min(counts):,} to {max(counts):,} alerts per configuration ({len(counts)} configurations)"
    )
    return f"scored {n:,} rows with {model.learner_name}: {alerted} ({rule}); wrote {args.out}"


def _configuration(model, index: tuple[int, ...]) -> str:
    """The values that tell configuration ``index`` of a grid model from the others (``eta=0.1``)."""
    varying = {k: v for k, v in model.params.items() if np.ptp(np.asarray(v)) > 0}
    if not varying:
        return ",".join(map(str, index))
    return ",".join(f"{k}={float(v[index]):g}" for k, v in varying.items())


def _column_values(table, column: str, path: str) -> list[str]:
    """A table's column as text, missing values empty."""
    names = list(table.column_names) if hasattr(table, "column_names") else [str(c) for c in table.columns]
    if column not in names:
        raise UsageError(f"--id {column}: no such column in {path}, whose columns are {', '.join(names)}")
    values = table.column(column).to_pylist() if hasattr(table, "column_names") else table[column].tolist()
    missing = lambda v: v is None or (isinstance(v, float) and np.isnan(v)) or type(v).__name__ in ("NAType", "NaTType")
    return ["" if missing(v) else str(v) for v in values]


def _libsvm_rows(path: str, model):
    """The rows of the LIBSVM file ``path`` (its labels ignored), prepared as the model's rows were (its
    ``rows``: L2 norm, the constant feature) and dense, as ``jcsol run`` read the rows it learnt."""
    from .datasets.libsvm import file_bytes, read_libsvm

    raw = file_bytes(path)
    d = model.n_features - int(model.rows["bias"])
    if d < 1:
        raise UsageError(f"--model: its rows have no feature but the constant one ({model.n_features} features)")
    rows, _ = read_libsvm(raw, n_features=d, source=path)
    return model.prepare(rows).todense()


def _write_columns(path: str, columns: dict[str, list[str]], n: int) -> None:
    """Writes ``columns`` (each ``n`` texts) as a CSV file with a header, atomically."""
    import csv

    from .files import atomic_write

    with atomic_write(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(list(columns))
        writer.writerows(zip(*columns.values()) if n else [])


TABLE_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zip", ".parquet", ".pq")


def _is_table(data) -> bool:
    return str(data).lower().endswith(TABLE_SUFFIXES)


def _load_data(args: argparse.Namespace):
    """``(X, y, encoder, times)`` of ``--data``: a table (with ``--label``) through
    :func:`jcsol.features.load_table`, with its encoder and the ``--time-column``'s times; else a shipped set, a
    LIBSVM file or a dataset of the data folder (:func:`_load_named`), with ``None`` for both."""
    is_table = _is_table(args.data)
    table_options = [
        f"--{name}"
        for name in ("numeric", "categorical", "bits", "drop", "datetime")
        if getattr(args, name) is not None
    ]
    if args.label is None:
        if is_table:
            raise UsageError(f"--data {args.data} is a table: name its label column with --label COLUMN")
        if table_options:
            raise UsageError(f"{', '.join(table_options)}: only for a table (--data FILE.csv --label COLUMN)")
        positive = None
        if args.positive:
            try:
                positive = [float(v) for v in args.positive]
            except ValueError:
                raise UsageError(f"--positive {' '.join(args.positive)}: LIBSVM labels are numbers") from None
        return (*_load_named(args, positive), None, None)
    if not is_table:
        raise UsageError(f"--label is for a table ({', '.join(TABLE_SUFFIXES)}); {args.data} is not one")
    from .features import MAX_BITS, load_table, read_table

    bits = 18 if args.bits is None else args.bits
    if not 1 <= bits <= MAX_BITS:
        raise UsageError(f"--bits must be in [1, {MAX_BITS}], got {bits}")
    table = read_table(args.data)
    times = None if args.time_column is None else _times(table, args.time_column)
    X, y, encoder = load_table(
        table,
        args.label,
        positive=args.positive or None,
        numeric=args.numeric or (),
        categorical=args.categorical or (),
        bits=bits,
        datetime=args.datetime or (),
        drop=args.drop or (),
        bias=args.bias,
        normalize=not args.no_normalize,
    )
    print(_columns_used(encoder), flush=True)  # before the runs
    return X, y, encoder, times


def _load_named(args: argparse.Namespace, positive):
    """``(X, y)`` of ``--data`` that is not a table: a shipped set or an existing LIBSVM file first; else, in the
    data folder (``--data-dir``, else ``JCSOL_DATA``), a dataset of the papers (:data:`jcsol.datasets.DATASETS`,
    read by :func:`jcsol.datasets.load_dataset` as ``jcsol reproduce`` reads it) or the file ``NAME`` or
    ``NAME.gz``. Not found: the error says where it looked, and names :func:`jcsol.datasets.fetch` for a set it
    can download."""
    import jcsol
    from jcsol.datasets import DATASETS, ENV_DATA, SHIPPED, DataMissing
    from jcsol.datasets.fetch import REGISTRY, cache_path

    name = args.data
    options = {"positive": positive, "normalize": not args.no_normalize, "bias": args.bias}
    if args.data_dir is not None:
        _data_dir(args.data_dir)  # a --data-dir that is not a folder is refused, used or not
    if name in SHIPPED or os.path.exists(name):
        return jcsol.datasets.load(name, **options)
    looked = [f"no file {Path(name).expanduser().resolve()}"]
    if args.data_dir is None and not os.environ.get(ENV_DATA):
        looked.append(f"no data folder (--data-dir DIR or {ENV_DATA}=DIR)")
    else:
        folder = _data_dir(args.data_dir)  # --data-dir, else JCSOL_DATA, which must be a folder
        if name in DATASETS:
            if positive is not None or args.no_normalize or args.bias:
                raise UsageError(
                    f"--data {name} is read as the papers read it (rows L2-normalised, its own positive class): "
                    "--positive, --no-normalize and --bias are for a file; give its path instead"
                )
            try:
                return jcsol.datasets.load_dataset(name, folder)
            except DataMissing as err:
                looked.append(f"in the data folder {folder}, {err}")
        else:
            for candidate in (folder / name, folder / f"{name}.gz"):
                if candidate.is_file():
                    return jcsol.datasets.load(candidate, **options)
            looked.append(f"no {name} or {name}.gz in the data folder {folder}")
    hint = ""
    if name in REGISTRY:
        cached = cache_path() / REGISTRY[name].file
        call = f'jcsol.datasets.fetch("{name}")'
        hint = (
            f". {call} downloads it into {cached} (from the shell: python -c 'import jcsol; {call}'); "
            f"then --data {cached}"
        )
    raise UsageError(
        f"--data: no dataset {name!r}: not a shipped set ({', '.join(sorted(SHIPPED))}); looked for it: "
        f"{'; '.join(looked)}{hint}"
    )


def _columns_used(encoder) -> str:
    """The table's columns as the encoder takes them: ``columns: amount numeric, ts datetime, …``."""
    kinds = {"datetime": "datetime (hour of day, day of the week)"}
    used = ", ".join(f"{column} {kinds.get(kind, kind)}" for column, kind in encoder.columns.items())
    offset = f"; slot {encoder.n_features - 1} a constant 1 (--bias)" if encoder.bias else ""
    return f"columns: {used}; label {encoder.label}{offset}"


def _done(name: str, res: Result, started: float) -> None:
    """One line on stderr as each learner's runs end, whatever the run's length or where stderr goes."""
    print(
        f"jcsol: {name}: done in {time.perf_counter() - started:.1f} s ({res.runs_timed} run(s) × "
        f"{res.orders.shape[1]:,} rounds in the last call)",
        file=sys.stderr,
        flush=True,
    )


#: The rounds at which ``--order file`` prints the progressive measure, evenly spaced, ending at the last.
PROGRESS_POINTS = 10


def _order_options(name: str, length: int, file_order: bool, measure: str, weight: float) -> dict:
    """Options of :func:`jcsol.run` for ``--order file``, or where stderr is no terminal (piped or logged, where a
    progress bar is not shown): after each chunk, the rounds seen and the running ``measure`` (weighted by
    ``weight``: ``α_p`` of the sum, ``c_p`` of the cost) of the grid point that leads it, printed on stderr as
    river's ``progressive_val_score`` prints its metric; instead of the progress bar."""
    if not file_order and sys.stderr.isatty():
        return {}
    from . import metrics

    def seen(done) -> None:
        with warnings.catch_warnings():  # a measure undefined so far (a class not yet seen) prints as nan
            warnings.simplefilter("ignore", RuntimeWarning)
            running = np.nanmean(metrics.measure(measure, done.counts, alpha_p=weight, c_p=weight), axis=-1)
            best = np.nanmax(running) if metrics.higher_is_better(measure) else np.nanmin(running)
        scale, unit = (100.0, " %") if metrics.in_percent(measure) else (1.0, "")
        print(
            f"jcsol: {name}: {done.rounds_done:,} of {length:,} rounds, running {measure} {scale * best:.2f}{unit}"
            + (f" (the best of {running.size} grid points)" if running.size > 1 else ""),
            file=sys.stderr,
            flush=True,
        )

    return {"on_chunk": seen, "progress": False}


def _progressive(rows: dict, measure: str) -> str:
    """The progressive ``measure`` (over the rounds so far, of the pre-update predictions) of each learner's
    selected configuration (with ``--all``, its best by ``measure``) at up to :data:`PROGRESS_POINTS` rounds."""
    from . import metrics

    curves = {}
    for name, res in rows.items():
        chosen = res.best(measure).result if res.grid_shape else res
        curves[name] = chosen.curve_of(measure)[0]
        rounds = chosen.curve_t
    shown = np.unique(np.round(np.linspace(0, len(rounds) - 1, min(len(rounds), PROGRESS_POINTS))).astype(int))
    scale, unit = (100.0, " (%)") if metrics.in_percent(measure) else (1.0, "")
    header = ["rounds", *curves]
    lines = [[f"{int(rounds[i]):,}", *(f"{scale * curve[i]:.3f}" for curve in curves.values())] for i in shown]
    widths = [max(len(row[j]) for row in [header, *lines]) for j in range(len(header))]
    text = [f"progressive {measure}{unit} in the file's order, each learner's selected configuration:"]
    text += ["  ".join(cell.rjust(w) for cell, w in zip(row, widths)) for row in [header, *lines]]
    return "\n".join(text)


def _learner(name: str, loss: str | None):
    """The registered variant ``name``; with ``loss``, the variant of that loss (``ACOG`` + ``II`` → ACOG-II,
    ``ACOG-I-diag`` + ``II`` → ACOG-II-diag)."""
    import jcsol

    if loss is None:
        completed = [v for v in (f"{name}-I", f"{name}-II") if v.lower() in {k.lower() for k in jcsol.VARIANTS}]
        if completed and name.lower() not in {k.lower() for k in jcsol.VARIANTS}:
            raise UsageError(
                f"--learner {name} needs its loss: --learner {' or '.join(completed)}, or --loss I|II beside it"
            )
        return jcsol.by_name(name)
    head, tail = (name[:-5], name[-5:]) if name.lower().endswith("-diag") else (name, "")
    for suffix in ("-II", "-I"):
        if head.upper().endswith(suffix):
            head = head[: -len(suffix)]
            break
    for candidate in (f"{head}-{loss}{tail}", name):
        try:
            learner = jcsol.by_name(candidate)
        except ValueError:
            continue
        if learner.options().get("loss") in ("I", "II"):
            return learner.replace(loss=loss)
    jcsol.by_name(name)  # an unknown name is refused here, with the registry's message
    raise UsageError(f"--loss {loss}: {name} has no cost-sensitive loss I/II")


def _use_cores() -> None:
    """One JAX device per core, unless JAX is already running in this process (then as it is)."""
    import jcsol

    try:
        jcsol.use_cpu_cores()
    except RuntimeError:
        pass


def _data_dir(option: str | None) -> Path:
    import jcsol

    try:
        return jcsol.datasets.data_dir(option, what="--data-dir")
    except FileNotFoundError as err:
        raise UsageError(str(err)) from None


def _reproduce(args: argparse.Namespace) -> str:
    from . import report
    from .papers import TABLES, comparison_table, reproduce_table

    for option in ("csv", "json"):
        _check_output(f"--{option}", getattr(args, option))
    data_dir = _data_dir(args.data_dir)
    spec = TABLES[args.table]
    _check_key(args.key, rerun=spec.protocol == "select" and not args.no_rerun)
    _protocol_options(args, spec.protocol)
    outputs = [(f"--{option} {path}", Path(path)) for option in ("csv", "json") if (path := getattr(args, option))]
    _refuse_clobbering(outputs, _reproduce_inputs(args.table, args.datasets, data_dir))
    for option, given, known in (
        ("--datasets", args.datasets, spec.datasets),
        ("--learners", args.learners, spec.learners),
        ("--columns", args.columns, spec.columns),
    ):
        unknown = [v for v in (given or []) if v not in known]
        if unknown:
            raise UsageError(f"{option}: {args.table} has no {', '.join(unknown)}; it has {', '.join(known)}")
    _use_cores()
    log = (lambda line: print(line, file=sys.stderr, flush=True)) if args.verbose else None
    rep = reproduce_table(
        args.table,
        data_dir,
        perms=args.perms,
        key=args.key,
        datasets=args.datasets,
        learners=args.learners,
        columns=args.columns,
        max_rows=args.max_rows,
        folds=args.folds,
        rerun=not args.no_rerun,
        log=log,
    )
    if not rep.rows:
        raise UsageError(f"{args.table}: nothing to run in {data_dir} — " + "; ".join(rep.notes))
    runs = f"{args.folds} folds" if spec.protocol == "cv" else f"{args.perms} permutations"
    out = [
        rep.title,
        f"data: {data_dir}; {runs}; key {args.key}",
        comparison_table(rep.rows, fmt=args.format),
        "flag '>': |jcsol − paper| > 1.5 points (percentages) or > 5% of the paper's value (costs)",
    ]
    out += [f"note: {n}" for n in rep.notes]
    out.append(f"time: {rep.seconds:.1f} s")
    records = [{**{k: v for k, v in vars(r).items()}, "diff": r.diff, "flagged": r.flagged()} for r in rep.rows]
    if args.csv:
        report.write_csv(records, args.csv)
        out.append(f"wrote {len(records)} rows to {args.csv}")
    if args.json:
        report.write_json(
            {
                "table": rep.table,
                "title": rep.title,
                "data_dir": str(data_dir),
                "perms": args.perms,
                "key": args.key,
                "rows": records,
                "notes": rep.notes,
                "seconds": rep.seconds,
            },
            args.json,
        )
        out.append(f"wrote {len(records)} rows to {args.json}")
    return "\n".join(out)


#: What each protocol of :data:`jcsol.papers.TABLES` does, for the refusal of an option it does not take.
PROTOCOLS = {
    "select": "selects on random permutations",
    "fixed": "runs the paper's fixed values on random permutations, re-running nothing",
    "cv": "cross-validates, over folds, not permutations",
}


def _protocol_options(args: argparse.Namespace, protocol: str) -> None:
    """Refuses an option of ``jcsol reproduce`` that the table's protocol would ignore (``--folds`` of a table
    that selects on permutations), filling in the defaults of the others."""
    takes = {"--perms": protocol != "cv", "--folds": protocol == "cv", "--no-rerun": protocol == "select"}
    given = {"--perms": args.perms is not None, "--folds": args.folds is not None, "--no-rerun": args.no_rerun}
    for option, taken in takes.items():
        if given[option] and not taken:
            raise UsageError(f"{option} does not apply to {args.table}, which {PROTOCOLS[protocol]}: leave it out")
    args.perms = 20 if args.perms is None else args.perms
    args.folds = 5 if args.folds is None else args.folds


def _reproduce_inputs(table: str, datasets: list[str] | None, data_dir: Path) -> list[tuple[str, Path]]:
    """The files of the data folder that ``jcsol reproduce`` reads for the table's datasets (or ``--datasets``)."""
    from .datasets import DATASETS
    from .papers import TABLES

    spec, inputs = TABLES[table], []
    for name in datasets or spec.datasets:
        source = spec.files.get(name, name)
        files = DATASETS[source].files if source in DATASETS else ()
        inputs += [(f"the dataset {name} of {table}", data_dir / f) for f in files]
    return inputs


def _learners(args: argparse.Namespace) -> str:
    """``jcsol learners``: :func:`jcsol.learners`, as text (a block per variant) or as a Markdown table."""
    from .catalog import learners

    def settings(values: dict, fmt: str = "{}={!r}") -> str:
        return ", ".join(fmt.format(k, v) for k, v in values.items()) or "none"

    infos = learners()
    if args.format == "markdown":
        cell = lambda text: text.replace("|", "\\|")
        lines = [
            "| learner | class | hyperparameters (defaults) | options | paths | paper |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {v.name} | {v.cls} | {cell(settings(v.hyperparameters, '{}={:g}'))} | {cell(settings(v.options))} "
            f"| {', '.join(v.paths)} | {cell(v.paper)} |"
            for v in infos
        ]
        return "\n".join(lines)
    blocks = [
        f"{v.name} ({v.cls})\n"
        f"  hyperparameters: {settings(v.hyperparameters, '{}={:g}')}\n"
        f"  options: {settings(v.options)}\n"
        f"  paths: {', '.join(v.paths)}\n"
        f"  paper: {v.paper}"
        for v in infos
    ]
    return "\n\n".join(blocks)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        command = {"reproduce": _reproduce, "learners": _learners, "score": _score}.get(args.command, _run)
        print(command(args), flush=True)
    except BrokenPipeError:  # the reader stopped early (``jcsol learners | head``): nothing left to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("jcsol: interrupted", file=sys.stderr)
        return 130
    except (UsageError, ValueError, TypeError, FileNotFoundError, MemoryError, OSError, ImportError) as err:
        print(f"jcsol: error: {err}".replace("\n", " "), file=sys.stderr)
        return 2
    except Exception as err:  # never a traceback: say what failed in one line
        print(f"jcsol: error: {type(err).__name__}: {err}".replace("\n", " "), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
