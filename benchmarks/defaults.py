"""Which defaults win: jcsol's candidate learners against Vowpal Wabbit's and river's defaults, online, without
hindsight, on imbalanced streams.

Every learner sees each stream once, in the same order (one fixed random permutation, ``--seed``; the largest
streams cut to its first ``--rows`` events), predicts each event before learning from it, and is measured on
those predictions — what a user of its scores would have seen:

* *sum*: balanced accuracy ½(sensitivity + specificity) of the served predictions, in %;
* *cost*: ``(0.9·FN + 0.1·FP) / T``, per 100 events.

Each measure has its own pass: under *sum*, jcsol's learners use ``Sum(rho="laplace")`` (positives weighted by
``ρ_t = (n_t + 1)/(p_t + 1)``, the negatives and positives seen so far) and the peers weigh positives by the same
``ρ_t``; under *cost*, jcsol's learners use ``Cost(c_p=0.9, c_n=0.1)`` and the peers weigh positives by
``c_p/c_n = 9``.

jcsol's candidates learn every η of ``jcsol.decades()`` (11 values) through :class:`jcsol.Live`, which serves
the configuration that leads the progressive measure so far (follow the leader, ``Live``'s default). A grid
over several learners (both losses; COG and ACOG) is the board over their configurations side by side, replayed
from their pre-update scores by :func:`jcsol.live.board.replay` — the board's own computation, what
``Live([learner, …])`` serves. Full-covariance ACOG runs where ``d <= --full-max-d`` (its state and step are
O(d²)); elsewhere the same row is ACOG-diag. Rows for reference: "+bias", the same learner on the rows with a
constant feature appended (:func:`jcsol.datasets.add_bias`); ``ACOG()``'s default η = 0.01 alone; "one η", the
η with the best mean over the streams, fixed (a default chosen on these streams, so in hindsight over them);
the best configuration of the 44 in hindsight, per stream. "scaled": ``scale="online"``, each feature
standardised inside the round by the events before it; "+bias scaled": the constant feature appended before, which
the scaling keeps as it is (:mod:`jcsol.core.scaling`); "raw and scaled": the same grid on the rows as given and
on the scaled rows, one board over both — ``Live([learner, learner], scale=[None, "online"])``.

Peers, each with its documented handling of imbalance:

* Vowpal Wabbit: its defaults (adaptive, normalised, invariant updates, ``-l 0.5``, a constant feature, 18-bit
  hashing) with ``--loss_function logistic`` and an importance weight on positives: ``ρ_t`` (seen so far, no
  hindsight), and, as a reference that peeks at the whole stream, ``T_n/T_p`` (marked "known ρ");
* river: ``StandardScaler() | LogisticRegression()`` (river's defaults; the scaler as river's guide to
  imbalanced data builds it) with the example weight ``w`` of ``learn_one`` on positives (that guide's
  "importance weighting", there ``optim.losses.Log(weight_pos=…)``: the same gradient factor), and the same
  pipeline under ``imblearn.RandomUnderSampler(desired_dist={False: .5, True: .5})`` (sum pass only).

Peers read the same rows as jcsol (L2-normalised, dense, float64), as dicts of all d features for river (so
that its scaler sees the zeros) and as ``label weight | j:x_j`` lines of the non-zero features for VW. Scores
``>= 0`` (river: probability ``>= ½``) predict +1, as jcsol's do.

Streams (``--data``, else ``$JCSOL_DATA``, else ``../shared/data``): german, svmguide3 and spambase (shipped),
magic04, a9a (train + test), w8a, ijcnn1 (train + test) as :mod:`jcsol.datasets.papers` reads them, and letter
as the KOIL authors binarised it (``koil/letter.gz``, one letter against the 25 others). Sets that are absent
are skipped with a note.

    python benchmarks/defaults.py [--sets german a9a ...] [--rows 50000] [--seed 0] [--full-max-d 150]
"""

from __future__ import annotations

import jcsol

jcsol.use_cpu_cores()  # first thing: one CPU device per core, before any JAX computation

import argparse
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from peers import DEFAULT_DATA, Stream  # benchmarks/ is on sys.path when run as a script

from jcsol.live import Live, Selection
from jcsol.live.board import replay
from jcsol.metrics import FN, FP, TN, TP, weighted_cost, weighted_sum

SETS = ("german", "svmguide3", "spambase", "magic04", "letter", "a9a", "w8a", "ijcnn1")
SHIPPED = ("german", "svmguide3", "spambase")
OBJECTIVES = {"sum": jcsol.Sum(rho="laplace"), "cost": jcsol.Cost(c_p=0.9, c_n=0.1)}
C_P = 0.9
ETA = jcsol.decades()
FIXED_ETA = 1e-2  # ACOG()'s default η, shown as one configuration

# jcsol's candidates: a name and the learners whose grids are laid side by side ("ACOG-I": full Σ where d is
# small, else diagonal; "+bias": on the rows with a constant feature appended, jcsol.datasets.add_bias)
CANDIDATES = {
    "COG-I": ("COG-I",),
    "COG-II": ("COG-II",),
    "ACOG-I-diag": ("ACOG-I-diag",),
    "ACOG-II-diag": ("ACOG-II-diag",),
    "ACOG-I": ("ACOG-I",),
    "ACOG-II": ("ACOG-II",),
    "ACOG-I+II-diag": ("ACOG-I-diag", "ACOG-II-diag"),
    "ACOG-I+II": ("ACOG-I", "ACOG-II"),
    "COG+ACOG, I+II": ("COG-I", "COG-II", "ACOG-I", "ACOG-II"),
    "COG-II +bias": ("COG-II +bias",),
    "ACOG-II-diag +bias": ("ACOG-II-diag +bias",),
    "ACOG-II +bias": ("ACOG-II +bias",),
    "COG-II scaled": ("COG-II scaled",),
    "ACOG-II-diag scaled": ("ACOG-II-diag scaled",),
    "ACOG-II scaled": ("ACOG-II scaled",),
    "ACOG-I+II scaled": ("ACOG-I scaled", "ACOG-II scaled"),
    "ACOG-II, raw and scaled": ("ACOG-II", "ACOG-II scaled"),
    "ACOG-II +bias scaled": ("ACOG-II +bias scaled",),
    "ACOG-II +bias, raw and scaled": ("ACOG-II +bias", "ACOG-II +bias scaled"),
}
BIAS = " +bias"
SCALED = " scaled"  # scale="online": each feature standardised inside the round (jcsol.core.scaling)
#: The configuration the README recommends, by the name this table prints: ``Live([learner, learner], scale=[None,
#: "online"])`` on the rows with the constant feature (docs/choosing.md).
RECOMMENDED = "ACOG-II +bias, raw and scaled"
ONE_ETA = ("ACOG-II", "ACOG-II +bias")  # learners whose best single η over all streams is shown
PEERS = ("VW logistic, ρ_t", "VW logistic, known ρ", "river LR, w=ρ_t", "river LR, under-sampled")


def data_root(given: Path | None) -> Path:
    if given is not None:
        return given
    return Path(os.environ["JCSOL_DATA"]) if os.environ.get("JCSOL_DATA") else DEFAULT_DATA


def load(name: str, data: Path) -> tuple[np.ndarray, np.ndarray] | None:
    """A stream's rows (dense float32, L2-normalised) and ±1 labels, or None when its files are absent."""
    if name in SHIPPED:
        return jcsol.datasets.load(name)
    if name == "letter":
        path = data / "koil" / "letter.gz"
        return jcsol.datasets.load(path) if path.exists() else None
    try:
        return jcsol.datasets.papers.load_dataset(name, data)
    except jcsol.datasets.papers.DataMissing:
        return None


def counts_of(pred: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``(tp, fn, fp, tn)`` of predictions ``pred`` (True: +1) against labels ±1, in jcsol's order."""
    pos = y > 0
    out = np.zeros(4, np.int64)
    out[TP], out[FN] = np.sum(pred & pos), np.sum(~pred & pos)
    out[FP], out[TN] = np.sum(pred & ~pos), np.sum(~pred & ~pos)
    return out


def value(measure: str, counts: np.ndarray) -> float:
    """The table's figure: sum in %, cost per 100 events."""
    if measure == "sum":
        return 100 * float(weighted_sum(counts, 0.5))
    return 100 * float(weighted_cost(counts, C_P)) / float(np.sum(counts))


def laplace_weights(y: np.ndarray) -> np.ndarray:
    """Each event's weight under ``Sum(rho="laplace")``: ``(n_t + 1)/(p_t + 1)`` for a positive (counts up to
    and including event t), 1 for a negative — jcsol's ρ_t, computed here for the peers."""
    pos = y > 0
    p, n = np.cumsum(pos), np.cumsum(~pos)
    return np.where(pos, (n + 1) / (p + 1), 1.0)


# -- jcsol ---------------------------------------------------------------------------------------------------


def variant(name: str, d: int, full_max_d: int) -> str:
    """The registered variant a candidate's learner runs as: full ACOG falls back to ACOG-diag for large d."""
    name = name.removesuffix(SCALED).removesuffix(BIAS)
    if name in ("ACOG-I", "ACOG-II") and d > full_max_d:
        return name + "-diag"
    return name


def suffix(name: str) -> str:
    """A candidate learner's suffixes (``+bias``, ``scaled``), as its run keeps them."""
    return (BIAS if BIAS in name else "") + (SCALED if name.endswith(SCALED) else "")


def grid_scores(y: np.ndarray, X: np.ndarray, measure: str, names: set[str], full_max_d: int):
    """Every η's pre-update scores ``(T, 11)`` of each learner, learnt once through :class:`jcsol.Live` (a
    name that runs as another's variant reads that one's scores)."""
    with_bias = jcsol.datasets.add_bias(X)
    runs = {name: variant(name, X.shape[1], full_max_d) + suffix(name) for name in names}
    scores, seconds = {}, {}
    for run in sorted(set(runs.values())):
        rows = with_bias if BIAS in run else X
        learner = jcsol.by_name(run.removesuffix(SCALED).removesuffix(BIAS), eta=ETA)
        scale = "online" if run.endswith(SCALED) else None
        start = time.perf_counter()
        scores[run] = Live(learner, OBJECTIVES[measure], scale=scale).learn(rows, y, return_scores=True)
        seconds[run] = time.perf_counter() - start
    return {name: scores[run] for name, run in runs.items()}, seconds


def served(measure: str, scores: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The served predictions' counts under follow-the-leader, and every configuration's counts."""
    board = replay(OBJECTIVES[measure], scores, y, Selection("ftl"))
    return np.asarray(board.served_counts), np.asarray(board.counts)


# -- peers: each returns the pre-update predictions (True: +1) ---------------------------------------------


def vw_logistic(s: Stream, weights: np.ndarray) -> np.ndarray:
    from vowpalwabbit import Workspace

    vw = Workspace("--loss_function logistic --quiet")
    out = np.empty(s.length, bool)
    for t, (x, label, w) in enumerate(zip(s.Xo, s.yo, weights)):
        nz = np.flatnonzero(x)
        ex = vw.parse(f"{int(label)} {w:.9g} | " + " ".join(f"{j}:{v:.9g}" for j, v in zip(nz, x[nz])))
        vw.learn(ex)  # VW's learn() predicts before it updates (checked in benchmarks/peers.py)
        out[t] = ex.get_simplelabel_prediction() >= 0
        vw.finish_example(ex)
    vw.finish()
    return out


def river_model(undersample: bool):
    from river import imblearn, linear_model, preprocessing

    model = preprocessing.StandardScaler() | linear_model.LogisticRegression()
    if undersample:
        return imblearn.RandomUnderSampler(model, desired_dist={False: 0.5, True: 0.5}, seed=0)
    return model


def river_logistic(s: Stream, weights: np.ndarray | None) -> np.ndarray:
    """``weights``: each event's ``w`` in ``learn_one``; None: under-sampled to balanced classes instead."""
    model = river_model(undersample=weights is None)
    out = np.empty(s.length, bool)
    columns = range(s.Xo.shape[1])
    for t, (x, label) in enumerate(zip(s.Xo, s.yo)):
        row = dict(zip(columns, x.tolist()))
        out[t] = model.predict_proba_one(row).get(True, 0.0) >= 0.5
        if weights is None:
            model.learn_one(row, bool(label > 0))
        else:
            model.learn_one(row, bool(label > 0), w=float(weights[t]))
    return out


def peer_counts(s: Stream, measure: str) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    online = laplace_weights(s.yo) if measure == "sum" else np.where(s.yo > 0, C_P / (1 - C_P), 1.0)
    known = s.wo if measure == "sum" else online
    runs = {
        "VW logistic, ρ_t": lambda: vw_logistic(s, online),
        "VW logistic, known ρ": lambda: vw_logistic(s, known),
        "river LR, w=ρ_t": lambda: river_logistic(s, online),
        "river LR, under-sampled": lambda: river_logistic(s, None),
    }
    if measure == "cost":  # the known ratio is the fixed cost ratio, and under-sampling to ½ targets the sum
        del runs["VW logistic, known ρ"], runs["river LR, under-sampled"]
    out, seconds = {}, {}
    for name, go in runs.items():
        start = time.perf_counter()
        out[name] = counts_of(go(), s.yo)
        seconds[name] = time.perf_counter() - start
    return out, seconds


# -- the benchmark -------------------------------------------------------------------------------------------


@dataclass
class Cell:
    value: float
    note: str = ""  # the configuration, for the rows in hindsight


def measure_stream(s: Stream, measure: str, full_max_d: int, peers: bool) -> tuple[dict[str, Cell], dict, str]:
    """The table's cells of one stream under one measure, each learner's figure per η, and a line of timings."""
    X = np.ascontiguousarray(s.X[s.order])
    names = {n for learners in CANDIDATES.values() for n in learners}
    scores, seconds = grid_scores(s.yo, X, measure, names, full_max_d)
    cells: dict[str, Cell] = {}
    per_eta = {}
    for candidate, learners in CANDIDATES.items():
        stacked = np.concatenate([scores[n] for n in learners], axis=1)
        counts, per_config = served(measure, stacked, s.yo)
        cells[candidate] = Cell(value(measure, counts))
        figures = [value(measure, c) for c in per_config]
        if len(learners) == 1:
            per_eta[learners[0]] = figures
        if candidate == "COG+ACOG, I+II":
            best = int(np.argmax(figures) if measure == "sum" else np.argmin(figures))
            which = f"{learners[best // len(ETA)]} η={ETA[best % len(ETA)]:g}"
            cells["best of the 44 in hindsight"] = Cell(figures[best], which)
    fixed = np.asarray(scores["ACOG-I"])[:, list(ETA).index(FIXED_ETA)] >= 0
    cells[f"ACOG-I η={FIXED_ETA:g}"] = Cell(value(measure, counts_of(fixed, s.yo)))
    timing = ", ".join(f"{n} {t:.1f}" for n, t in seconds.items())
    if peers:
        peer, peer_seconds = peer_counts(s, measure)
        cells.update({name: Cell(value(measure, c)) for name, c in peer.items()})
        timing += ", " + ", ".join(f"{n} {t:.1f}" for n, t in peer_seconds.items())
    return cells, per_eta, f"{s.name} {measure}: seconds — {timing}"


def add_one_eta_rows(measure: str, streams: list[Stream], table: dict, per_eta: dict) -> None:
    """Rows of one fixed η for every stream: for each learner of :data:`ONE_ETA`, the η of the best mean over
    the streams (hindsight over all of them: what a default value chosen on these streams would give)."""
    pick = np.argmax if measure == "sum" else np.argmin
    for learner in ONE_ETA:
        figures = np.array([per_eta[s.name][learner] for s in streams])  # (streams, 11)
        k = int(pick(figures.mean(axis=0)))
        for s, row in zip(streams, figures):
            table[s.name][f"{learner} η={ETA[k]:g}, one η"] = Cell(float(row[k]))


def add_best_peer_rows(measure: str, streams: list[Stream], table: dict) -> None:
    """A row of the best peer on each stream (its name in the note), and the recommended configuration's row
    again under the name ``recommended``."""
    pick = max if measure == "sum" else min
    for s in streams:
        cells = table[s.name]
        peers = [(cells[p].value, p) for p in PEERS if p in cells]
        if peers:
            best, name = pick(peers)
            cells["best peer"] = Cell(best, name)
        if RECOMMENDED in cells:
            cells[f"recommended ({RECOMMENDED})"] = cells[RECOMMENDED]


def print_table(measure: str, streams: list[Stream], table: dict[str, dict[str, Cell]], reference: str) -> None:
    better = (lambda a, b: a > b) if measure == "sum" else (lambda a, b: a < b)
    unit = "balanced accuracy of the served predictions, %" if measure == "sum" else "(0.9·FN + 0.1·FP) per 100 events"
    print(f"\n{measure}: {unit}; 'wins': streams where the row is better than '{reference}'")
    rows = list(dict.fromkeys(r for s in streams for r in table[s.name]))
    width = max(len(r) for r in rows) + 2
    print(f"{'':<{width}}" + "".join(f"{s.name:>10}" for s in streams) + f"{'mean':>8}{'wins':>5}")
    for row in rows:
        cells = [table[s.name].get(row) for s in streams]
        line = "".join(f"{c.value:>10.1f}" if c else f"{'—':>10}" for c in cells)
        known = [c.value for c in cells if c]
        wins = sum(
            better(c.value, table[s.name][reference].value)
            for s, c in zip(streams, cells)
            if c and reference in table[s.name]
        )
        mean = f"{np.mean(known):>8.1f}" if len(known) == len(cells) else f"{'':>8}"
        print(f"{row:<{width}}{line}{mean}{wins if row != reference else '':>5}")
    hindsight = [table[s.name]["best of the 44 in hindsight"].note for s in streams]
    print("best of the 44 in hindsight: " + "; ".join(f"{s.name} {h}" for s, h in zip(streams, hindsight)))
    if all("best peer" in table[s.name] for s in streams):
        print("best peer: " + "; ".join(f"{s.name} {table[s.name]['best peer'].note}" for s in streams))
        at_least = (lambda a, b: a >= b) if measure == "sum" else (lambda a, b: a <= b)
        for row in rows:
            cells = [table[s.name].get(row) for s in streams]
            if row in PEERS or row == "best peer" or not all(cells):
                continue
            held = sum(
                at_least(round(c.value, 1), round(table[s.name]["best peer"].value, 1)) for s, c in zip(streams, cells)
            )
            if row.startswith("recommended") or held >= len(streams) - 1:
                print(f"  {row}: at or above the best peer on {held} of {len(streams)} streams")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--data", type=Path, default=None, help="folder of the LIBSVM files (default: $JCSOL_DATA, ../shared/data)"
    )
    p.add_argument("--sets", nargs="+", default=list(SETS), choices=SETS)
    p.add_argument("--rows", type=int, default=50_000, help="events of each stream at most (default 50,000)")
    p.add_argument("--seed", type=int, default=0, help="the one permutation every learner reads the rows in")
    p.add_argument("--full-max-d", type=int, default=150, help="full-covariance ACOG where d <= this (default 150)")
    p.add_argument("--no-peers", action="store_true", help="jcsol's candidates only")
    args = p.parse_args()
    data = data_root(args.data)
    peers = not args.no_peers
    if peers:
        import river
        import vowpalwabbit

        print(f"river {river.__version__}, vowpalwabbit {vowpalwabbit.__version__}")
    print(f"jcsol {jcsol.__version__}; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    streams = []
    tables: dict[str, dict] = {m: {} for m in OBJECTIVES}
    per_eta: dict[str, dict] = {m: {} for m in OBJECTIVES}
    start = time.perf_counter()
    for name in args.sets:
        loaded = load(name, data)
        if loaded is None:
            print(f"{name}: skipped (not in {data})")
            continue
        X, y = np.asarray(loaded[0]), np.asarray(loaded[1])
        order = np.random.default_rng(args.seed).permutation(len(y))[: args.rows]
        kept = y[order]
        s = Stream(name, X, y, order, rho=float(np.sum(kept < 0) / np.sum(kept > 0)))
        cut = f", the first {len(order):,} of {len(y):,}" if len(order) < len(y) else ""
        print(
            f"{name}: {s.length:,} events{cut} × {X.shape[1]} features, {int(np.sum(kept > 0)):,} positive "
            f"(ρ = T_n/T_p = {s.rho:.2f})",
            flush=True,
        )
        streams.append(s)
        for measure in OBJECTIVES:
            tables[measure][name], per_eta[measure][name], note = measure_stream(s, measure, args.full_max_d, peers)
            print(f"  {note}", flush=True)
    reference = PEERS[0] if peers else "ACOG-I-diag"
    for measure in OBJECTIVES:
        add_one_eta_rows(measure, streams, tables[measure], per_eta[measure])
        if peers:
            add_best_peer_rows(measure, streams, tables[measure])
        print_table(measure, streams, tables[measure], reference)
    print(
        f"\nfull-covariance ACOG where d <= {args.full_max_d}; every grid: 11 η (jcsol.decades()), served by "
        f"follow-the-leader; 'ACOG-I η={FIXED_ETA:g}': that one configuration (ACOG()'s default η); 'one η': "
        "the η of the best mean over these streams, fixed (hindsight over the streams); '+bias': a constant "
        "feature appended (jcsol.datasets.add_bias); 'scaled': each feature standardised inside the round "
        "(scale=\"online\", by the events before each); peers have their own (VW's constant, river's "
        "intercept and scaler)"
    )
    print(
        f"total {time.perf_counter() - start:.0f} s; load average {os.getloadavg()[0]:.1f} at the end "
        "(over 1 minute; 2 means both cores busy)"
    )


if __name__ == "__main__":
    main()
