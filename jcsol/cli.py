"""The ``jcsol`` command.

``jcsol run`` runs learners over permutations of a dataset, selects each learner's hyperparameters from a grid
by the objective's measure (the papers' protocol), prints the table, and can write the runs as CSV or JSON and
the online curves of the selected runs as PNG + SVG::

    jcsol run --data german --learner COG-I ACOG-I --perms 20 --objective sum --grid eta=1e-5:1e5 \\
        --csv runs.csv --json runs.json --plot curves
    jcsol run --learner ACOG --loss II --data PATH_OR_NAME --objective sum --perms 20 --grid eta=1e-5:1e5
    jcsol run --data payments.csv --label fraud --positive yes --learner COG-I ACOG-I-diag --bits 18

``jcsol reproduce TABLE`` runs one of the papers' tables (``acog-table2``, ``acog-table3``, ``arcsogd-table4``,
``csogd-table2``: :data:`jcsol.papers.TABLES`) on the data it finds and prints the paper's value beside jcsol's::

    jcsol reproduce acog-table2 --data-dir DIR --datasets german

Errors (bad options, missing data, unwritable outputs) are one line ``jcsol: error: ...`` and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .result import Result

DEFAULT_LEARNERS = ["COG-I", "COG-II", "ACOG-I", "ACOG-II"]
#: A table's hashed features are 2**bits wide (2**18 by default): ACOG's full d × d covariance would not fit.
DEFAULT_TABLE_LEARNERS = ["COG-I", "COG-II", "ACOG-I-diag", "ACOG-II-diag"]


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


def _grid_axes(specs: list[str]) -> dict[str, np.ndarray]:
    """The ``--grid`` options as ``{name: values}``, refusing a name given twice."""
    axes: dict[str, np.ndarray] = {}
    for spec in specs:
        name, values = parse_grid(spec)
        if name in axes:
            raise UsageError(f"--grid {name} is given twice; give all its values in one --grid {name}=...")
        axes[name] = values
    return axes


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


def _parser() -> argparse.ArgumentParser:
    from .papers import TABLES

    parser = _Parser(prog="jcsol", description="Cost-sensitive online classification on JAX.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = commands.add_parser("run", help="run learners over permutations of a dataset and print the table")
    run.add_argument(
        "--data",
        default="german",
        help="a shipped dataset name, a LIBSVM file, or a table (.csv, .csv.gz, .parquet) with --label "
        "(default: german)",
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
        "--learner",
        nargs="+",
        metavar="NAME",
        help=f"learner variants (default: {' '.join(DEFAULT_LEARNERS)}; for a table, whose hashed features are "
        f"2**B wide: {' '.join(DEFAULT_TABLE_LEARNERS)}); with --loss the loss may be left out of the name (ACOG, "
        "ACOG-diag)",
    )
    run.add_argument(
        "--loss",
        choices=["I", "II"],
        help="the cost-sensitive loss of every learner that has one (overrides the name's)",
    )
    run.add_argument("--perms", type=_positive_int, default=20, help="random permutations (default: 20)")
    run.add_argument("--objective", choices=["sum", "cost"], default="sum")
    run.add_argument("--alpha-p", type=float, default=0.5, help="weight of sensitivity for sum (default 0.5)")
    run.add_argument("--c-p", type=float, default=0.9, help="cost of a false negative for cost (default 0.9)")
    run.add_argument("--rho", choices=["offline", "laplace"], default="offline", help="ρ for sum")
    run.add_argument(
        "--grid", action="append", metavar="NAME=LO:HI", help="hyperparameter grid, repeatable (default: eta=1e-5:1e5)"
    )
    run.add_argument("--all", action="store_true", help="print every grid point, not only the selected one")
    run.add_argument(
        "--rerun",
        action="store_true",
        help="re-run the selected values on fresh permutations (key + 1) and report those",
    )
    run.add_argument("--key", type=int, default=0, help="random seed (default 0)")
    run.add_argument("--format", choices=["text", "markdown", "latex"], default="text")
    run.add_argument("--csv", metavar="PATH", help="write one record per run (counts and measures) as CSV")
    run.add_argument("--json", metavar="PATH", help="write the summary and one record per run as JSON")
    run.add_argument(
        "--plot",
        metavar="PATH_STEM",
        help="write the online curves of the selected runs to PATH_STEM.png and PATH_STEM.svg",
    )
    run.add_argument(
        "--curve-points", type=_positive_int, default=200, help="points of the online curves for --plot (default 200)"
    )

    rep = commands.add_parser("reproduce", help="run a paper table on the data found; paper beside jcsol")
    rep.add_argument("table", choices=list(TABLES), help="the paper table: " + ", ".join(TABLES))
    rep.add_argument(
        "--data-dir", metavar="DIR", help="folder of the LIBSVM files (default: the JCSOL_DATA environment variable)"
    )
    rep.add_argument("--datasets", nargs="+", metavar="NAME", help="only these datasets of the table")
    rep.add_argument("--learners", nargs="+", metavar="NAME", help="only these learners of the table")
    rep.add_argument("--columns", nargs="+", choices=["sum", "cost"], help="only these measures of the table")
    rep.add_argument("--perms", type=_positive_int, default=20, help="random permutations (default: 20)")
    rep.add_argument("--folds", type=_positive_int, default=5, help="folds for acog-table3 (default: 5)")
    rep.add_argument("--max-rows", type=_positive_int, help="subsample every dataset to this many rows (quick look)")
    rep.add_argument(
        "--no-rerun",
        action="store_true",
        help="report the selection runs themselves (the papers' way), not a re-run on fresh permutations",
    )
    rep.add_argument("--key", type=int, default=0, help="random seed (default 0)")
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
    if args.csv and args.json and Path(args.csv).expanduser().resolve() == Path(args.json).expanduser().resolve():
        raise UsageError(f"--csv and --json name the same file {args.csv}")
    if args.positive is not None and not args.positive:
        raise UsageError("--positive needs at least one label")
    if args.plot and args.all:
        raise UsageError("--plot draws the selected runs; leave out --all")
    if args.plot:
        if importlib.util.find_spec("matplotlib") is None:
            raise UsageError("--plot needs matplotlib: pip install matplotlib (or jcsol[plot])")
    if not 0 < args.alpha_p < 1:
        raise UsageError(f"--alpha-p must be in (0, 1), got {args.alpha_p}")
    if not 0 < args.c_p < 1:
        raise UsageError(f"--c-p must be in (0, 1), got {args.c_p}")
    axes = _grid_axes(args.grid or ["eta=1e-5:1e5"])
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
        learners[name] = (learner, usable)
    unused = sorted(set(axes) - {k for _, usable in learners.values() for k in usable})
    if unused and args.grid:
        raise UsageError(
            f"--grid {', '.join(unused)}: no learner of this run has such a hyperparameter ("
            + "; ".join(f"{n}: {', '.join(sorted(l.hyperparameters())) or 'none'}" for n, (l, _) in learners.items())
            + ")"
        )

    _use_cores()
    X, y = _load_data(args)
    objective = (
        jcsol.Sum(alpha_p=args.alpha_p, rho=args.rho)
        if args.objective == "sum"
        else jcsol.Cost(c_p=args.c_p, c_n=1.0 - args.c_p)
    )
    curve_points = min(args.curve_points, len(y)) if args.plot else 0
    rows: dict[str, Result] = {}
    chosen: dict[str, dict[str, float]] = {}
    for name, (learner, usable) in learners.items():
        if args.all:
            res = jcsol.run(
                jcsol.grid(learner, **usable) if usable else learner,
                X,
                y,
                perms=args.perms,
                objective=objective,
                key=args.key,
                curve_points=curve_points,
            )
            rows[name], chosen[name] = res, {}
            continue
        sel = select_and_rerun(
            learner,
            X,
            y,
            grid=usable,
            measure=args.objective,
            perms=args.perms,
            objective=objective,
            key=args.key,
            rerun=args.rerun,
            curve_points=curve_points,
        )
        rows[name], chosen[name] = sel.result, sel.chosen
    n_pos = int((y > 0).sum())
    ratio = (len(y) - n_pos) / max(n_pos, 1)
    head = (
        f"{args.data}: {len(y)} examples × {X.shape[1]} features, {n_pos} positive (1:{ratio:.2f}); "
        f"{args.perms} permutations; objective {args.objective}"
        + ("" if args.all else f"; hyperparameters selected by mean {args.objective}")
        + ("; reported runs re-run on fresh permutations" if args.rerun and not args.all else "")
    )
    out = [head, jcsol.table(rows, fmt=args.format)]
    runs = report.records(rows)
    if args.csv:
        report.write_csv(runs, args.csv)
        out.append(f"wrote {len(runs)} runs to {args.csv}")
    if args.json:
        summary = {
            name: {
                "chosen": chosen[name],
                "mean": {m: float(np.nanmean(res.measure(m))) for m in metrics.MEASURES},
                "std": {
                    m: float(np.nanstd(res.measure(m), ddof=1)) if res.n_perms > 1 else 0.0 for m in metrics.MEASURES
                },
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
            title=f"{args.data}: online {args.objective}, mean ± std over {args.perms} permutations",
        )
        png, svg = plots.save(fig, args.plot)
        out.append(f"wrote {png} and {svg}")
    return "\n".join(out)


TABLE_SUFFIXES = (".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zip", ".parquet", ".pq")


def _is_table(data) -> bool:
    return str(data).lower().endswith(TABLE_SUFFIXES)


def _load_data(args: argparse.Namespace):
    """``(X, y)`` of ``--data``: a table (with ``--label``) through :func:`jcsol.features.load_table`, else a
    shipped set or LIBSVM file through :func:`jcsol.datasets.load`."""
    import jcsol

    is_table = _is_table(args.data)
    table_options = [f"--{name}" for name in ("numeric", "categorical", "bits") if getattr(args, name) is not None]
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
        return jcsol.datasets.load(args.data, positive=positive, normalize=not args.no_normalize)
    if not is_table:
        raise UsageError(f"--label is for a table ({', '.join(TABLE_SUFFIXES)}); {args.data} is not one")
    from .features import MAX_BITS, load_table

    bits = 18 if args.bits is None else args.bits
    if not 1 <= bits <= MAX_BITS:
        raise UsageError(f"--bits must be in [1, {MAX_BITS}], got {bits}")
    X, y, _ = load_table(
        args.data,
        args.label,
        positive=args.positive or None,
        numeric=args.numeric or (),
        categorical=args.categorical or (),
        bits=bits,
        normalize=not args.no_normalize,
    )
    return X, y


def _learner(name: str, loss: str | None):
    """The registered variant ``name``; with ``loss``, the variant of that loss (``ACOG`` + ``II`` → ACOG-II,
    ``ACOG-I-diag`` + ``II`` → ACOG-II-diag)."""
    import jcsol

    if loss is None:
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


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        print(_reproduce(args) if args.command == "reproduce" else _run(args))
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
