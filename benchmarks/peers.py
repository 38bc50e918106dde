"""Speed side by side: the same one-pass online linear hinge learner in jcsol and in its peers, in one process.

The learner is first-order, linear, hinge loss, one example at a time, predicting with the model *before*
each update (pre-update predictions, as jcsol does): PA-I with C = 1 (and OGD on the hinge loss). Per dataset:

* jcsol ``PA1(C=1)`` and ``OGD(loss="hinge")``: one run (``perms=1``) and the papers' 220-run protocol
  (11 values from ``jcsol.decades()`` × 20 permutations, one call); execution time after compilation, the
  compile time reported apart;
* river ``PAClassifier(C=1, mode=1, learn_intercept=False)``: ``predict_one`` then ``learn_one`` per
  example, on dicts built before timing;
* Vowpal Wabbit ``--loss_function hinge --noconstant`` with ``--sgd`` and with its default update: text
  lines (built before timing) parsed and learnt one at a time, the prediction being VW's pre-update one;
* scikit-learn ``SGDClassifier(loss="hinge", penalty=None, learning_rate="pa1", eta0=1)`` (PA-I; what
  ``PassiveAggressiveClassifier`` is deprecated for): ``decision_function`` then ``partial_fit`` per example,
  and per batch of 1000 (not the same online protocol: a batch is predicted with the model before the batch);
* a float64 NumPy loop of PA-I, predict-then-update per example.

The peers run on the rows in the order of jcsol's one run (permutation 0 of ``key=0``). For peers, the
protocol's time is 220 × the time of one run (extrapolated, one process on one core). Every timing is
the best of ``--repeats``. Each row prints the balanced accuracy of its pre-update predictions over the pass
and the share of rounds on which it predicts as the jcsol learner of reference, so that nobody compares a
broken configuration. Peers that are not installed are skipped with a note
(``pip install -e ".[bench]"`` installs them).

    python benchmarks/peers.py [--data DIR] [--rows N] [--datasets a9a covtype] [--slow-rows N]
"""

from __future__ import annotations

import jcsol

jcsol.use_cpu_cores()  # first thing: one CPU device per core, before any JAX computation

import argparse  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
COVTYPE_ROWS = 581_012
PROTOCOL_RUNS = 11 * 20
BATCH = 1000
SANE = 0.6  # the least balanced accuracy a working configuration reaches on a9a


# -- data ---------------------------------------------------------------------------------------------------


def load_a9a(data: Path) -> tuple[np.ndarray, np.ndarray]:
    X1, y1 = jcsol.datasets.load(data / "a9a.gz", n_features=123)
    X2, y2 = jcsol.datasets.load(data / "a9a.t.gz", n_features=123)
    return np.concatenate([X1, X2]), np.concatenate([y1, y2])


@dataclass
class Stream:
    """One dataset in the order of jcsol's one run, and the inputs of every peer, built before any timing."""

    name: str
    X: np.ndarray  # (T, d) float32, as jcsol reads it (original order)
    y: np.ndarray  # (T,) int8 ±1 (original order)
    order: np.ndarray  # (T,) the row order of jcsol's one run
    rho: float  # T_n / T_p: the weight of a positive example where a peer takes weights
    Xo: np.ndarray = field(init=False)  # float64 rows in run order
    yo: np.ndarray = field(init=False)  # int labels ±1 in run order
    wo: np.ndarray = field(init=False)  # example weights in run order

    def __post_init__(self) -> None:
        self.Xo = np.ascontiguousarray(self.X[self.order], dtype=np.float64)
        self.yo = self.y[self.order].astype(np.int64)
        self.wo = np.where(self.yo > 0, self.rho, 1.0)

    @property
    def length(self) -> int:
        return len(self.order)


def balanced_accuracy(scores: np.ndarray, labels: np.ndarray) -> float:
    """½(sensitivity + specificity) of the predictions ``score >= 0 → +1``."""
    pred = scores >= 0
    pos = labels > 0
    return 0.5 * (float((pred & pos).sum()) / max(pos.sum(), 1) + float((~pred & ~pos).sum()) / max((~pos).sum(), 1))


# -- jcsol --------------------------------------------------------------------------------------------------


@dataclass
class Row:
    peer: str
    ref: str  # the jcsol row its ratios are taken against
    rows: int = 0  # rounds timed
    seconds: float = float("nan")  # best time of the timed rounds
    protocol_s: float = float("nan")
    protocol_runs: int = PROTOCOL_RUNS
    extrapolated: bool = True
    bal_acc: float = float("nan")
    agree: float = float("nan")
    note: str = ""
    skipped: str = ""

    def rate(self) -> float:
        return self.rows / self.seconds

    def protocol_rate(self, length: int) -> float:
        return self.protocol_runs * length / self.protocol_s


def jcsol_rows(
    X: np.ndarray, y: np.ndarray, repeats: int
) -> tuple[list[Row], np.ndarray, dict[str, np.ndarray], list[str]]:
    """jcsol's PA-I and OGD-hinge rows, the row order of the one run, and each learner's per-round
    pre-update predictions in that order."""
    learners = {
        "PA-I": (lambda v: jcsol.PA1(C=v), "C"),
        "OGD-hinge": (lambda v: jcsol.OGD(loss="hinge", eta=v), "eta"),
    }
    rows, preds, notes, order = [], {}, [], None
    for name, (make, hp) in learners.items():
        row = Row(f"jcsol {name}", ref=name, rows=len(y), extrapolated=False)
        times, protocol, walls = [], [], []
        compile_1 = compile_p = 0.0
        for r in range(repeats):
            start = time.perf_counter()
            one = jcsol.run(make(1.0), X, y, perms=1, key=0)
            walls.append(time.perf_counter() - start)
            compile_1 += one.time_compile
            times.append(one.time_run)
            many = jcsol.run(make(jcsol.decades()), X, y, perms=20, key=0)
            compile_p += many.time_compile
            protocol.append(many.time_run)
            assert many.n_runs == PROTOCOL_RUNS
            if r == 0:
                order = one.orders[0] if order is None else order
                assert np.array_equal(one.orders[0], order), "jcsol's one-run order changed between calls"
                row.bal_acc = float(one.balanced_accuracy.ravel()[0])
                best = many.best("balanced_accuracy")
        row.seconds, row.protocol_s = min(times), min(protocol)
        row.note = (
            f"compile {compile_1:.2f} s (one run), {compile_p:.2f} s (protocol); one-run call, host set-up "
            f"included: {min(walls[1:]):.3f} s (best of the calls after the first)"
            if len(walls) > 1
            else f"compile {compile_1:.2f} s (one run), {compile_p:.2f} s (protocol)"
        )
        rows.append(row)
        # the per-round predictions of the one run (an extra run, untimed, recording the counts at every round)
        curve = jcsol.run(make(1.0), X, y, perms=order[None], curve_points=len(y)).curve.reshape(-1, 4)
        cell = np.argmax(np.diff(curve, axis=0, prepend=np.zeros((1, 4), curve.dtype)), axis=1)
        preds[name] = np.isin(cell, (0, 2))  # TP or FP: predicted +1
        notes.append(
            f"jcsol {name}: {row.note}; protocol's best {hp} = {best.params[hp]:g} "
            f"(balanced accuracy {best.result.balanced_accuracy.mean():.4f} over 20 permutations)"
        )
    return rows, order, preds, notes


# -- peers: each returns the pre-update scores of the rounds it ran --------------------------------------


def numpy_pa1(s: Stream, n: int, C: float = 1.0):
    Xo, yo = s.Xo[:n], s.yo[:n].astype(np.float64).tolist()
    prepared = list(zip(Xo, yo))

    def go():
        w = np.zeros(Xo.shape[1])
        scores = np.empty(n)
        for t, (x, label) in enumerate(prepared):
            f = float(w @ x)
            scores[t] = f
            loss = 1.0 - label * f
            if loss > 0.0:
                sq = float(x @ x)
                if sq > 0.0:
                    w += (min(C, loss / sq) * label) * x
        return scores

    return go, "float64, w += min(C, ℓ/‖x‖²)·y·x on dense rows; no weights (as jcsol's PA-I)"


def river_pa1(s: Stream, n: int):
    from river import __version__ as version
    from river.linear_model import PAClassifier

    # built before timing: one dict of the non-zero features per row, labels as bools
    dicts = []
    for x in s.Xo[:n]:
        nz = np.flatnonzero(x)
        dicts.append(dict(zip(nz.tolist(), x[nz].tolist())))
    labels = (s.yo[:n] > 0).tolist()
    data = list(zip(dicts, labels))

    def go():
        model = PAClassifier(C=1.0, mode=1, learn_intercept=False)
        predict, learn = model.predict_one, model.learn_one
        out = []
        for x, label in data:
            out.append(predict(x))
            learn(x, label)
        return np.where(np.array(out, bool), 1.0, -1.0)

    return go, (
        f"river {version}: PAClassifier(C=1, mode=1, learn_intercept=False), predict_one + learn_one "
        "on dicts of the non-zero features built before timing; no weights (learn_one takes none); "
        "a tie (score 0, e.g. round 1) predicts False = −1"
    )


def vw_hinge(s: Stream, n: int, sgd: bool, weights: bool):
    import vowpalwabbit
    from vowpalwabbit import Workspace

    args = ("--sgd " if sgd else "") + "--loss_function hinge --noconstant --quiet"
    # built before timing: "label weight | idx:value ..." on the non-zero features
    lines = []
    for x, label, wt in zip(s.Xo[:n], s.yo[:n], s.wo[:n] if weights else np.ones(n)):
        nz = np.flatnonzero(x)
        feats = " ".join(f"{j}:{v:.9g}" for j, v in zip(nz.tolist(), x[nz].tolist()))
        lines.append(f"{int(label)} {wt:.9g} | {feats}")

    # VW's learn() predicts before it updates (its progressive validation); check it on a prefix once.
    check = min(n, 2000)
    a, b = Workspace(args), Workspace(args)
    for line in lines[:check]:
        ea, eb = a.parse(line), b.parse(line)
        before = b.predict(eb)
        b.learn(eb)
        a.learn(ea)
        if ea.get_simplelabel_prediction() != before:
            raise AssertionError("VW's learn() prediction is not the pre-update prediction")
        a.finish_example(ea)
        b.finish_example(eb)
    a.finish()
    b.finish()

    def go():
        vw = Workspace(args)
        parse, learn, finish = vw.parse, vw.learn, vw.finish_example
        out = []
        for line in lines:
            ex = parse(line)
            learn(ex)
            out.append(ex.get_simplelabel_prediction())
            finish(ex)
        vw.finish()
        return np.array(out)

    mode = (
        "plain SGD (--sgd: step 0.5 decaying as 1/√t, VW's -l/--power_t defaults)"
        if sgd
        else "VW's default update (adaptive, normalized, invariant; -l 0.5)"
    )
    return go, (
        f"vowpalwabbit {vowpalwabbit.__version__}: `{args}`, {mode}; float32 weights, hashed features "
        f"(-b 18); {'importance weight ρ on positives' if weights else 'no weights'}; each text line "
        f"parsed and learnt (parse in the time), prediction = learn()'s pre-update one (checked against "
        f"predict-then-learn on {check} rounds)"
    )


def _sk_classifier():
    import sklearn
    from sklearn.linear_model import SGDClassifier

    try:
        clf = SGDClassifier(
            loss="hinge", penalty=None, learning_rate="pa1", eta0=1.0, fit_intercept=False, shuffle=False
        )
        clf.partial_fit(np.ones((1, 2)), [1], classes=[-1, 1], sample_weight=[1.0])
        make = lambda: SGDClassifier(
            loss="hinge",
            penalty=None,
            learning_rate="pa1",
            eta0=1.0,  # noqa: E731
            fit_intercept=False,
            shuffle=False,
        )
        return (
            make,
            True,
            (
                f"scikit-learn {sklearn.__version__}: SGDClassifier(loss='hinge', penalty=None, "
                "learning_rate='pa1', eta0=1, fit_intercept=False, shuffle=False) = PA-I, C=1"
            ),
        )
    except (ValueError, TypeError):  # an older scikit-learn: no 'pa1' in SGDClassifier
        from sklearn.linear_model import PassiveAggressiveClassifier

        make = lambda: PassiveAggressiveClassifier(C=1.0, fit_intercept=False, shuffle=False)  # noqa: E731
        return (
            make,
            False,
            (
                f"scikit-learn {sklearn.__version__}: PassiveAggressiveClassifier(C=1, "
                "fit_intercept=False), whose partial_fit takes no sample_weight"
            ),
        )


def sklearn_pa1(s: Stream, n: int, batch: int, weights: bool):
    make, takes_weights, config = _sk_classifier()
    Xo, yo = s.Xo[:n], s.yo[:n]
    wo = s.wo[:n] if weights else np.ones(n)
    classes = np.array([-1, 1])
    starts = list(range(0, n, batch))

    def go():
        clf = make()
        scores = np.empty(n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for k, b in enumerate(starts):
                xb, yb = Xo[b : b + batch], yo[b : b + batch]
                scores[b : b + batch] = clf.decision_function(xb) if k else 0.0  # w_1 = 0: score 0
                if takes_weights:
                    clf.partial_fit(xb, yb, classes=classes, sample_weight=wo[b : b + batch])
                else:
                    clf.partial_fit(xb, yb, classes=classes)
        return scores

    how = (
        "decision_function then partial_fit, one example at a time"
        if batch == 1
        else f"decision_function then partial_fit per batch of {batch} (a batch is predicted by the model before "
        "it: not the same online protocol)"
    )
    weighted = "sample_weight ρ on positives" if weights and takes_weights else "no weights"
    return go, f"{config}; {how}; {weighted}; float64 rows"


# -- the benchmark --------------------------------------------------------------------------------------------


def best_of(go, repeats: int) -> tuple[float, np.ndarray]:
    best, scores = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        scores = go()
        best = min(best, time.perf_counter() - start)
    return best, scores


def peer_rows(
    s: Stream, preds: dict[str, np.ndarray], repeats: int, slow_rows: int, weights: bool
) -> tuple[list[Row], list[str]]:
    full, slow = s.length, min(s.length, slow_rows)
    specs = [
        ("NumPy loop PA-I", "PA-I", None, full, lambda n: numpy_pa1(s, n)),
        ("river PA-I", "PA-I", "river", full, lambda n: river_pa1(s, n)),
        ("VW --sgd", "OGD-hinge", "vowpalwabbit", full, lambda n: vw_hinge(s, n, sgd=True, weights=weights)),
        ("VW default", "OGD-hinge", "vowpalwabbit", full, lambda n: vw_hinge(s, n, sgd=False, weights=weights)),
        ("sklearn PA-I ×1", "PA-I", "sklearn", slow, lambda n: sklearn_pa1(s, n, 1, weights)),
        (f"sklearn PA-I ×{BATCH}", "PA-I", "sklearn", full, lambda n: sklearn_pa1(s, n, BATCH, weights)),
    ]
    rows, notes = [], []
    for peer, ref, module, n, build in specs:
        row = Row(peer, ref=ref)
        if module is not None:
            try:
                __import__(module)
            except ImportError:
                dist = {"sklearn": "scikit-learn"}.get(module, module)
                row.skipped = f'skipped: {dist} is not installed (pip install -e ".[bench]")'
                rows.append(row)
                continue
        go, config = build(n)
        row.rows = n
        row.seconds, scores = best_of(go, repeats)
        row.protocol_s = PROTOCOL_RUNS * row.seconds * full / n
        row.bal_acc = balanced_accuracy(scores, s.yo[:n])
        row.agree = float(np.mean((scores >= 0) == preds[ref][:n]))
        prefix = f" (first {n:,} rounds of the run, rate extrapolated)" if n < full else ""
        notes.append(f"{peer}: {config}{prefix}")
        rows.append(row)
    return rows, notes


def secs(x: float) -> str:
    return f"{x:.3f}" if x < 10 else f"{x:.1f}" if x < 1000 else f"{x:,.0f}"


def report(title: str, s: Stream, rows: list[Row], notes: list[str]) -> bool:
    ref = {r.ref: r for r in rows if r.peer.startswith("jcsol")}
    L = s.length
    print(
        f"\n== {title}: {L:,} examples × {s.X.shape[1]} features, {int((s.y > 0).sum()):,} positives, "
        f"ρ = T_n/T_p = {s.rho:.3f} =="
    )
    w1, w2 = 44, 33
    head = (
        f"{'':<20} {'':>8} | {'one run':^{w1}} | {'220-run protocol':^{w2}} |\n"
        f"{'learner':<20} {'rows':>8} | {'s':>8} {'examples/s':>10} {'jcsol/peer':>11} {'vs jcsol':>10} | "
        f"{'s':>9} {'examples/s':>10} {'jcsol/peer':>11} | {'bal.acc':>7} {'agree':>6}"
    )
    print(head)
    print("-" * len(head.splitlines()[1]))
    sane = True
    for r in rows:
        if r.skipped:
            print(f"{r.peer:<20} {r.skipped}")
            continue
        jr = ref[r.ref]
        is_ref = r.peer.startswith("jcsol")
        one = "" if is_ref else f"{jr.rate() / r.rate():.1f}×"
        proto = "" if is_ref else f"{jr.protocol_rate(L) / r.protocol_rate(L):.0f}×"
        versus = "" if is_ref else r.ref
        agree = "(ref)" if is_ref else f"{100 * r.agree:.1f}%"
        flag = "" if r.bal_acc > SANE else "  <-- NOT SANE"
        sane &= r.bal_acc > SANE
        mark = "*" if r.extrapolated else " "
        print(
            f"{r.peer:<20} {r.rows:>8,} | {secs(r.seconds):>8} {r.rate():>10,.0f} {one:>11} {versus:>10} | "
            f"{secs(r.protocol_s):>8}{mark} {r.protocol_rate(L):>10,.0f} {proto:>11} | "
            f"{r.bal_acc:>7.4f} {agree:>6}{flag}"
        )
    print("* extrapolated: 220 × the time of one run, one process (one core)")
    print("jcsol/peer: examples per second of the jcsol row named under 'vs jcsol' over the peer's")
    print(
        "bal.acc: balanced accuracy of the pre-update predictions over the rows timed (jcsol: the one run); "
        "agree: share of those rounds predicted as the jcsol row of reference predicts them"
    )
    for note in notes:
        print(f"  - {note}")
    return sane


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="directory holding a9a.gz and a9a.t.gz")
    parser.add_argument(
        "--rows",
        type=int,
        default=COVTYPE_ROWS,
        help=f"rows of the covtype-shaped stream (default: {COVTYPE_ROWS:,}, covtype's size)",
    )
    parser.add_argument("--datasets", nargs="+", choices=["a9a", "covtype"], default=["a9a", "covtype"])
    parser.add_argument("--repeats", type=int, default=3, help="timings repeated, best kept (default 3)")
    parser.add_argument(
        "--slow-rows",
        type=int,
        default=10_000,
        help="rounds timed for scikit-learn one example at a time (~1 ms per round; its rate "
        "is extrapolated to the whole stream); default 10,000",
    )
    parser.add_argument(
        "--weights",
        choices=["rho", "none"],
        default="rho",
        help="'rho': peers that take example weights (VW, scikit-learn) weigh positives by "
        "ρ = T_n/T_p; 'none': no weights anywhere",
    )
    args = parser.parse_args()

    versions = [f"jax {jax.__version__}", f"numpy {np.__version__}"]
    for module, dist in (("river", "river"), ("vowpalwabbit", "vowpalwabbit"), ("sklearn", "scikit-learn")):
        try:
            versions.append(f"{dist} {__import__(module).__version__}")
        except ImportError:
            versions.append(f"{dist} (not installed)")
    print(
        f"jcsol {jcsol.__version__} on {len(jax.devices())} {jax.devices()[0].platform.upper()} device(s); "
        f"Python {platform.python_version()}; {', '.join(versions)}"
    )
    print(
        f"timings: best of {args.repeats}, all in this process; jcsol float32, peers float64 "
        f"(VW: float32 weights); {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start"
    )

    sane = True
    for name in args.datasets:
        if name == "a9a":
            X, y = load_a9a(args.data)
            title = "a9a (train + test)"
        else:
            X, y = jcsol.datasets.synthetic.covtype_like(args.rows)
            title = "covtype-shaped stream (jcsol.datasets.synthetic.covtype_like)"
        rows, order, preds, notes = jcsol_rows(X, y, args.repeats)
        s = Stream(name, X, y, order, rho=float((y < 0).sum() / (y > 0).sum()))  # peers: jcsol's one-run order
        more, peer_notes = peer_rows(s, preds, args.repeats, args.slow_rows, args.weights == "rho")
        sane &= report(title, s, rows + more, notes + peer_notes)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end (over 1 minute; 2 means both cores busy)")
    if not sane:
        raise SystemExit("a configuration's balanced accuracy is not above 0.6: its timing compares nothing")


if __name__ == "__main__":
    main()
