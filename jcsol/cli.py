"""The ``jcsol`` command.

``jcsol run`` runs learners over permutations of a dataset, selects each learner's hyperparameters from a grid
by the objective's measure (the papers' protocol), and prints the table::

    jcsol run --data german --learner COG-I ACOG-I --perms 20 --objective sum --grid eta=1e-5:1e5
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

DEFAULT_LEARNERS = ["COG-I", "COG-II", "ACOG-I", "ACOG-II"]


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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jcsol", description="Cost-sensitive online classification on JAX.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run learners over permutations of a dataset and print the table")
    run.add_argument("--data", default="german", help="a shipped dataset name or a LIBSVM file (default: german)")
    run.add_argument("--positive", type=float, nargs="*", help="label(s) of the +1 class for multiclass data")
    run.add_argument("--no-normalize", action="store_true", help="keep rows as they are (default: L2-normalise)")
    run.add_argument("--learner", nargs="+", default=DEFAULT_LEARNERS, metavar="NAME",
                     help=f"learner variants (default: {' '.join(DEFAULT_LEARNERS)})")
    run.add_argument("--perms", type=int, default=20, help="random permutations (default: 20)")
    run.add_argument("--objective", choices=["sum", "cost"], default="sum")
    run.add_argument("--alpha-p", type=float, default=0.5, help="weight of sensitivity for sum (default 0.5)")
    run.add_argument("--c-p", type=float, default=0.9, help="cost of a false negative for cost (default 0.9)")
    run.add_argument("--rho", choices=["offline", "laplace"], default="offline", help="ρ for sum")
    run.add_argument("--grid", action="append", metavar="NAME=LO:HI",
                     help="hyperparameter grid, repeatable (default: eta=1e-5:1e5)")
    run.add_argument("--all", action="store_true", help="print every grid point, not only the selected one")
    run.add_argument("--key", type=int, default=0, help="random seed (default 0)")
    run.add_argument("--format", choices=["text", "markdown"], default="text")
    return parser


def _run(args: argparse.Namespace) -> str:
    import jcsol

    jcsol.use_cpu_cores()
    X, y = jcsol.datasets.load(args.data, positive=args.positive or None, normalize=not args.no_normalize)
    objective = (jcsol.Sum(alpha_p=args.alpha_p, rho=args.rho) if args.objective == "sum"
                 else jcsol.Cost(c_p=args.c_p, c_n=1.0 - args.c_p))
    axes = dict(parse_grid(g) for g in (args.grid or ["eta=1e-5:1e5"]))
    rows = {}
    for name in args.learner:
        learner = jcsol.by_name(name)
        known = learner.hyperparameters()
        usable = {k: v for k, v in axes.items() if k in known}
        if set(axes) - set(usable) and not usable:
            raise ValueError(f"{name} has none of the hyperparameters {sorted(axes)}; it has {sorted(known)}")
        learner = jcsol.grid(learner, **usable) if usable else learner
        res = jcsol.run(learner, X, y, perms=args.perms, objective=objective, key=args.key)
        rows[name] = res if args.all else res.best(args.objective).result
    n_pos = int((y > 0).sum())
    head = (f"{args.data}: {len(y)} examples × {X.shape[1]} features, {n_pos} positive (1:{(len(y) - n_pos) / max(n_pos, 1):.2f}); "
            f"{args.perms} permutations; objective {args.objective}"
            + ("" if args.all else f"; hyperparameters selected by mean {args.objective}"))
    return head + "\n" + jcsol.table(rows, fmt=args.format)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        print(_run(args))
    except (ValueError, TypeError, FileNotFoundError, MemoryError, OSError) as err:
        print(f"jcsol: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
