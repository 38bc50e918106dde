"""Online selection against the best fixed configuration in hindsight: the regret of the served stream.

A live learner serves one configuration of its grid (or a vote over it) before it knows which is best. On
each stream, every configuration of ``ACOG-I-diag`` × 11 η (``jcsol.decades()``) learns once, through
:class:`jcsol.live.Live` (one random order of the stream, ``--seed``); the pre-update scores of every
configuration are then replayed through each selection rule (:func:`jcsol.live.board.replay`: the board's
own computation, so exactly what ``Live(select=…)`` would have served). Regret is the best configuration's
progressive measure minus the served stream's, in points:

* *sum* (``Sum(rho="laplace")``, α_p = ½): points of balanced accuracy, 100 × (best sum − served sum);
* *cost* (``Cost(c_p=0.9, c_n=0.1)``): 100 × (served cost − best cost) / T, cost per 100 events.

Streams: a9a, ijcnn1, w8a (from ``--data-dir``, skipped when absent), german (shipped) and a generated drifting
stream — at mid-stream the class prior moves from 5 % to 20 % positives and the concept (the labelling
direction) changes — where the forgetting factor matters. The last lines name the rule with the least mean
regret over streams and measures: :class:`jcsol.live.Live`'s default.

    python benchmarks/live_selection.py [--data-dir ../shared/data] [--sets a9a ijcnn1 w8a german drift]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import jcsol
from jcsol.live import Live, Selection
from jcsol.live.board import replay

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
SETS = ("a9a", "ijcnn1", "w8a", "german", "drift")
RULES = {
    "FTL, margin 0": Selection("ftl", margin=0.0),
    "FTL, margin 0.01": Selection("ftl", margin=0.01),
    "FTL, margin 0.01, γ=0.999": Selection("ftl", margin=0.01, forgetting=0.999),
    "Hedge, rate 0.05": Selection("hedge", rate=0.05),
    "Hedge, rate 0.5": Selection("hedge", rate=0.5),
    "Hedge, rate 0.05, γ=0.999": Selection("hedge", rate=0.05, forgetting=0.999),
}
OBJECTIVES = {"sum": jcsol.Sum(rho="laplace"), "cost": jcsol.Cost(c_p=0.9, c_n=0.1)}


def drifting_stream(n: int = 40_000, d: int = 20, seed: int = 0):
    """Gaussian rows, L2-normalised; labels by a noisy linear rule whose direction and prior change at n/2."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.empty(n, np.int8)
    half = n // 2
    for part, share in ((slice(0, half), 0.05), (slice(half, n), 0.20)):
        w = rng.standard_normal(d)
        score = X[part] @ w + 0.1 * rng.standard_normal(X[part].shape[0])
        y[part] = np.where(score >= np.quantile(score, 1 - share), 1, -1)
    return X.astype(np.float32), y


def load(name: str, data: Path):
    if name == "german":
        return jcsol.datasets.load("german")
    if name == "drift":
        return drifting_stream()
    path = data / f"{name}.gz"
    if not path.exists():
        return None
    return jcsol.datasets.load(path, sparse=True)


def shuffled(X, y, seed: int, keep_order: bool):
    if keep_order:
        return X, y
    order = np.random.default_rng(seed).permutation(len(y))
    if isinstance(X, jcsol.SparseRows):
        return jcsol.SparseRows(X.indices[order], X.values[order], X.n_features), y[order]
    return X[order], y[order]


def regrets(name, X, y, learner) -> dict:
    out = {}
    for measure, objective in OBJECTIVES.items():
        live = Live(learner, objective)
        scores = live.learn(X, y, return_scores=True)
        alpha_p, c_p = (float(v) for v in objective.measure_weights())
        for rule, selection in RULES.items():
            board = replay(objective, scores, y, selection)
            counts, served = np.asarray(board.counts), np.asarray(board.served_counts)
            if measure == "sum":
                per_config = jcsol.metrics.weighted_sum(counts, alpha_p)
                value = 100 * (per_config.max() - jcsol.metrics.weighted_sum(served, alpha_p))
                best = int(np.argmax(per_config))
            else:
                per_config = jcsol.metrics.weighted_cost(counts, c_p)
                value = 100 * (jcsol.metrics.weighted_cost(served, c_p) - per_config.min()) / len(y)
                best = int(np.argmin(per_config))
            out[(measure, rule)] = (value, best)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    p.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    p.add_argument("--seed", type=int, default=0, help="the random order of the real streams")
    args = p.parse_args()
    learner = jcsol.ACOG(eta=jcsol.decades(), diagonal=True)
    eta = np.asarray(jcsol.decades())
    table, done = {}, []
    for name in args.sets:
        stream = load(name, args.data_dir)
        if stream is None:
            print(f"{name}: skipped ({args.data_dir / (name + '.gz')} not found)")
            continue
        X, y = shuffled(*stream, args.seed, keep_order=name == "drift")
        start = time.perf_counter()
        table[name] = regrets(name, X, y, learner)
        done.append(name)
        print(f"{name}: {len(y)} events, {int((y > 0).sum())} positive, {time.perf_counter() - start:.1f} s")
    print(f"\nregret against the best fixed η in hindsight ({learner.name}, 11 η), points; best η in brackets")
    for measure in OBJECTIVES:
        print(f"\n{measure:<28}" + "".join(f"{n:>16}" for n in done) + f"{'mean':>9}")
        for rule in RULES:
            cells = [table[n][(measure, rule)] for n in done]
            print(
                f"{rule:<28}"
                + "".join(f"{v:>9.2f} [{eta[b]:.0e}]" for v, b in cells)
                + f"{np.mean([v for v, _ in cells]):>9.2f}"
            )
    means = {rule: np.mean([table[n][(m, rule)][0] for n in done for m in OBJECTIVES]) for rule in RULES}
    best = min(means, key=means.get)
    print("\nmean regret over streams and measures: " + ", ".join(f"{r} {v:.2f}" for r, v in means.items()))
    print(f"least mean regret: {best}")


if __name__ == "__main__":
    main()
