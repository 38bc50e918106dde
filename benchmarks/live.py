"""Live serving speed: a whole 11-configuration grid predicting and learning, beside river and Vowpal Wabbit on
the same streams, in one process.

Three streams (``--data-dir`` holds a9a; a synthetic stream of its shape stands in when it is absent):

* **a9a dense** (train, 32,561 × 123): the latency of one event's ``predict`` + ``learn`` (batches of 1),
  median and p99, beside the floor of the same two calls with no work in them (an empty jitted function of
  the same arguments and outputs, timed interleaved with the real calls), the time of a ``leaderboard()``
  read after them, and events/s for batches of 1,000;
* **a9a sparse** (the same rows as :class:`jcsol.SparseRows`, 14 non-zeros a row);
* **tabular**: a generated fraud-like table (6 categorical and 4 numeric columns, 2% positives) through
  :class:`jcsol.TableEncoder` with ``--bits`` 18 (the default, the target's stream) and 12: hashed sparse
  rows of 10 non-zeros, encoded before timing; river gets the same hashed features as dicts. A step is O(nnz);
  at 18 bits each configuration's state is 2**18 floats a vector, held configurations-minor on the CPU (a
  row's features read and written for the whole grid in a few memory lines), where at 12 bits the whole
  grid's state stays in cache.

On each stream, for batches of 1,000: jcsol :class:`jcsol.live.Live` with ``--learner`` × 11 η
(``jcsol.decades()``), ``predict(batch)`` then ``learn(batch, labels)``, once by default (each batch padded
to 1,024 events, its loop stopping after 1,000) and once with ``batch_sizes=(1000,)``; the same by default
with batches of 1 (the first ``--events`` events), 100 and 10,000 (padded to 16,384); river
``PAClassifier(C=1)``, one configuration, ``predict_one`` + ``learn_one`` per event (it has no batch API; dicts
built before timing); and the engine's own bound, one
:func:`jcsol.run` over the stream with the same grid (its scan alone: no board, no Python between
batches). A live stream has no end, so its throughput is the steady state's: every pass of jcsol (a new
:class:`~jcsol.live.Live`) and of river (a new model) learns its first batch untimed and is timed over the
others; the first batch's time of a new ``Live`` is reported beside (``1st ms``: its state laid out for the
kind of rows and its memory first touched, a few milliseconds at 18 bits). The repetitions of jcsol and
river alternate and each reports its best of ``--repeats``: the ratio compares bests taken under the same
load. On a9a dense also river's ``BanditClassifier`` over 11
``PAClassifier(C)`` and Vowpal Wabbit (hinge loss), one event at a time.

The targets: one event through the 11 configurations (predict + learn) at p99 ≤ 100 µs (a9a dense), and
batches of 1,000 through the 11 configurations at ≥ 10× river's one-configuration events/s on the tabular
stream (18 bits). XLA's CPU kernels run single-threaded (``--xla_cpu_multi_thread_eigen=false``;
``--eigen-threads`` keeps XLA's default) and JAX's CPU dispatch is synchronous
(``jax_cpu_enable_async_dispatch=False``: a call runs on the calling thread, without a hand-off to
another; ``--async-dispatch`` keeps JAX's default); ``JCSOL_XLA_CPU=loops`` in the environment has XLA compile each
scan as one kernel (:mod:`jcsol.xla_cpu`; unset, XLA's small kernels per round; ``JCSOL_XLA_CPU=default``, XLA's
defaults for jcsol's programs too); and the
process is pinned to one CPU core (``--cpu``, 0 by default; ``--cpu -1`` leaves it to the OS): unpinned, the
scans over the 18-bit table (11 × 2**18 weights a vector) ran at about a quarter of the speed on a 2-core
machine (the engine's scan 193k events/s against 708k–786k pinned, under XLA's defaults), the other streams at
the same speed. Compilation happens before the timing.

    python benchmarks/live.py [--data-dir ../shared/data] [--learner ACOG-I-diag] [--events 5000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    p.add_argument("--learner", default="ACOG-I-diag", help="a jcsol.VARIANTS name; its η spans decades()")
    p.add_argument("--events", type=int, default=5000, help="events timed one at a time (latency, batch 1)")
    p.add_argument("--rows", type=int, default=None, help="use the first ROWS events of each stream")
    p.add_argument("--table-rows", type=int, default=20_000, help="rows of the generated table")
    p.add_argument(
        "--bits",
        type=int,
        nargs="+",
        default=[18, 12],
        help="the table encoder's hash bits (d = 2**bits), one tabular stream each; the first is the target's",
    )
    p.add_argument("--repeats", type=int, default=5, help="alternating repetitions; the best of each is kept")
    p.add_argument(
        "--cpu",
        type=int,
        default=0,
        help="pin the process to this CPU core (os.sched_setaffinity, Linux); -1 leaves it to the OS",
    )
    p.add_argument("--eigen-threads", action="store_true", help="keep XLA's multi-threaded CPU kernels")
    p.add_argument("--async-dispatch", action="store_true", help="keep JAX's asynchronous CPU dispatch")
    return p.parse_args()


ARGS = parse() if __name__ == "__main__" else None
if ARGS is not None and ARGS.cpu >= 0:
    os.sched_setaffinity(0, {ARGS.cpu})  # before JAX starts its threads, which inherit it
if ARGS is not None and not ARGS.eigen_threads:
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()

import jax  # noqa: E402

if ARGS is not None and not ARGS.async_dispatch:
    jax.config.update("jax_cpu_enable_async_dispatch", False)

import numpy as np  # noqa: E402

import jcsol  # noqa: E402
from jcsol.live import Live  # noqa: E402

BATCH = 1000
SWEEP = (1, 100, 10_000)  # the other batch sizes timed (default padding; batches of 1 over --events events)


def load_a9a(data: Path, rows: int | None, sparse: bool):
    path = data / "a9a.gz"
    if path.exists():
        X, y = jcsol.datasets.load(path, n_features=123, sparse=sparse)
        name = "a9a"
    else:
        X, y = jcsol.datasets.synthetic.linear_stream(32_561, 123, 0.24)
        X = X.astype(np.float32)
        if sparse:
            X = _as_sparse(X)
        name = "synthetic (a9a-shaped; a9a.gz not found)"
    n = len(y) if rows is None else min(rows, len(y))
    return f"{name} {'sparse' if sparse else 'dense'}", _take(X, 0, n), y[:n]


def _as_sparse(X: np.ndarray) -> jcsol.SparseRows:
    k = int((X != 0).sum(1).max())
    order = np.argsort(X == 0, axis=1, kind="stable")[:, :k].astype(np.int32)
    return jcsol.SparseRows(order, np.take_along_axis(X, order, 1).astype(np.float32), X.shape[1])


def fraud_table(n: int, bits: int, seed: int = 0):
    """A payments-like table (rare positives driven by a few merchants, countries, devices and the amount)
    hashed by :class:`jcsol.TableEncoder`."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "merchant": rng.choice([f"m{i}" for i in range(500)], n),
            "country": rng.choice([f"c{i}" for i in range(40)], n),
            "device": rng.choice(["ios", "android", "web", "pos", "new-device"], n, p=[0.3, 0.3, 0.25, 0.1, 0.05]),
            "mcc": rng.choice([f"mcc{i}" for i in range(80)], n),
            "channel": rng.choice(["online", "in-store", "phone"], n),
            "card": rng.choice(["debit", "credit", "prepaid"], n),
            "amount": rng.lognormal(3.5, 1.0, n),
            "hour": rng.integers(0, 24, n).astype(float),
            "account_age": rng.exponential(300.0, n),
            "velocity": rng.poisson(2.0, n).astype(float),
        }
    )
    risk = (
        1.6 * frame.merchant.isin([f"m{i}" for i in range(10)])
        + 1.4 * frame.country.isin(["c3", "c7"])
        + 1.0 * (frame.device == "new-device")
        + 0.6 * np.log(frame.amount / 30)
        - 0.002 * frame.account_age
        + 0.3 * frame.velocity
        + rng.normal(0, 0.3, n)
    )
    y = np.where(risk >= np.quantile(risk, 0.98), 1, -1).astype(np.int8)
    encoder = jcsol.TableEncoder(
        numeric=["amount", "hour", "account_age", "velocity"],
        categorical=["merchant", "country", "device", "mcc", "channel", "card"],
        bits=bits,
    )
    return f"tabular (fraud-like, TableEncoder bits={bits})", encoder.fit_transform(frame), y


def _take(X, a: int, b: int):
    if isinstance(X, jcsol.SparseRows):
        return jcsol.SparseRows(X.indices[a:b], X.values[a:b], X.n_features)
    return X[a:b]


def _dim(X) -> int:
    return X.n_features if isinstance(X, jcsol.SparseRows) else X.shape[1]


def percentiles(seconds) -> tuple[float, float]:
    us = np.asarray(seconds) * 1e6
    return float(np.median(us)), float(np.percentile(us, 99))


def grid_learner(name: str):
    learner = jcsol.by_name(name)
    first = next(iter(learner.hyperparameters()))
    return learner.replace(**{first: jcsol.decades()})


# -- jcsol ------------------------------------------------------------------------------------------------------


def live_pass(learner, X, y, batch: int, batch_sizes=()) -> dict:
    """events/s of predict + learn over the stream in whole batches after the first (the steady state), and
    the seconds of the first batch (a new learner's state laid out and first touched)."""
    live = Live(learner, n_features=_dim(X), batch_sizes=batch_sizes)
    n = len(y) // batch * batch
    start = first = time.perf_counter()
    for a in range(0, n, batch):
        part = _take(X, a, a + batch)
        live.predict(part)
        live.learn(part, y[a : a + batch])
        if not a:
            _ = live.served  # reads the board: the learn has finished
            first, start = time.perf_counter() - start, time.perf_counter()
    _ = live.served
    return {"rate": (n - batch) / (time.perf_counter() - start), "first": first}


def engine_pass(learner, X, y) -> float:
    """events/s of the engine's own scan over the stream (one run of the grid, the chunk compiled before)."""
    res = jcsol.run(learner, X, y, perms=np.arange(len(y))[None], objective=jcsol.Sum(rho="laplace"), progress=False)
    return len(y) / res.time_run


def latency(learner, X, y, n_events: int) -> dict:
    """Each event's predict + learn, and the same two calls to empty jitted functions of the same arguments
    and outputs (the floor of two calls), interleaved event by event."""
    live = Live(learner, n_features=_dim(X))
    x1, y1 = _take(X, 0, 1), y[:1].astype(np.float32)
    live.predict(x1)
    live.learn(x1, y[:1])
    backend = live._backend  # the one-device path (jcsol.live.packed.Packed)
    held = [np.zeros(a.shape, a.dtype) for a in backend.buffers]  # the learner's buffers between calls
    shared = jax.tree.leaves(backend.shared)
    n_held = len(held)
    empty_learn = jax.jit(lambda held, shared, x, y: (held, y * 0), donate_argnums=0)
    empty_predict = jax.jit(lambda held, shared, x: x[:, 0] * 0)
    held = jax.device_put(held)
    for _ in range(100):
        np.asarray(empty_predict(held, shared[: len(backend.shared[0])], x1))
        held, _ = empty_learn(held, shared, x1, y1)
    real, floor = [], []
    n = min(n_events, len(y))
    for t in range(n):
        row = _take(X, t, t + 1)
        start = time.perf_counter()
        live.predict(row)
        live.learn(row, y[t : t + 1])
        real.append(time.perf_counter() - start)
        start = time.perf_counter()
        np.asarray(empty_predict(held, shared[: len(backend.shared[0])], row))
        held, _ = empty_learn(held, shared, row, y1)
        floor.append(time.perf_counter() - start)
    reads = []
    for _ in range(20):  # the board of every configuration, its AUC over the whole window (all slots sorted)
        start = time.perf_counter()
        board = live.leaderboard()
        reads.append(time.perf_counter() - start)
    return {
        "latency": percentiles(real[100:]),
        "floor": percentiles(floor[100:]),
        "arguments": n_held + len(shared) + 2,
        "outputs": n_held + 1,
        "served_sum": board.served_sum,
        "leaderboard_ms": min(reads) * 1e3,
        "window": live.selection.window,
    }


# -- peers ------------------------------------------------------------------------------------------------------


def river_dicts(X):
    if isinstance(X, jcsol.SparseRows):
        return [{int(j): float(v) for j, v in zip(i, x) if v != 0} for i, x in zip(X.indices, X.values)]
    out = []
    for x in X:
        nz = np.flatnonzero(x)
        out.append(dict(zip(nz.tolist(), x[nz].tolist())))
    return out


def _river_timed(model, data, skip: int = 0) -> dict:
    """Events/s and per-event latency of ``predict_one`` + ``learn_one`` over ``data``, after its first
    ``skip`` events (learnt untimed, as jcsol's first batch)."""
    for x, label in data[:skip]:
        model.predict_one(x)
        model.learn_one(x, label)
    times = []
    start = time.perf_counter()
    for x, label in data[skip:]:
        t0 = time.perf_counter()
        model.predict_one(x)
        model.learn_one(x, label)
        times.append(time.perf_counter() - t0)
    return {"rate": (len(data) - skip) / (time.perf_counter() - start), "latency": percentiles(times)}


def river_pass(data, skip: int = 0) -> dict:
    from river.linear_model import PAClassifier

    return _river_timed(PAClassifier(C=1.0, mode=1), data, skip)


def river_selection(data) -> dict:
    from river import bandit, metrics, model_selection
    from river.linear_model import PAClassifier

    models = [PAClassifier(C=float(c), mode=1) for c in np.asarray(jcsol.decades())]
    model = model_selection.BanditClassifier(
        models, metric=metrics.BalancedAccuracy(), policy=bandit.EpsilonGreedy(epsilon=0.1, seed=0)
    )
    return _river_timed(model, data)


def vw_pass(data) -> dict:
    from vowpalwabbit import Workspace

    lines = [f"{1 if label else -1} | " + " ".join(f"{j}:{v:.9g}" for j, v in x.items()) for x, label in data]
    vw = Workspace("--loss_function hinge --quiet")
    times = []
    start = time.perf_counter()
    for line in lines:
        t0 = time.perf_counter()
        ex = vw.parse(line)
        vw.learn(ex)
        ex.get_simplelabel_prediction()
        vw.finish_example(ex)
        times.append(time.perf_counter() - t0)
    rate = len(lines) / (time.perf_counter() - start)
    vw.finish()
    return {"rate": rate, "latency": percentiles(times)}


# -- the comparison ---------------------------------------------------------------------------------------------


def compare(name: str, learner, X, y, repeats: int, events: int) -> dict:
    """Best-of-``repeats`` events/s of jcsol (batches of 1,000, default and declared size; batches of
    :data:`SWEEP`, default size, batches of 1 over the first ``events`` events) and river, alternating."""
    data = list(zip(river_dicts(X), (y > 0).tolist()))
    for sizes, batch in [((), b) for b in (BATCH, *SWEEP)] + [((BATCH,), BATCH)]:  # compiles every executable
        warm = _take(X, 0, batch)
        live = Live(learner, n_features=_dim(X), batch_sizes=sizes)
        live.predict(warm)
        live.learn(warm, y[:batch])
        _ = live.served  # compiles the board's read too
    engine_pass(learner, X, y)
    best = {"jcsol": 0.0, "jcsol_sized": 0.0, "river": 0.0, "engine": 0.0}
    first = []  # seconds of a new learner's first batch of BATCH, default padding
    sweep: dict[int, float | None] = {b: (0.0 if 2 * b <= len(y) else None) for b in SWEEP}  # None: too short
    for _ in range(repeats):
        own = live_pass(learner, X, y, BATCH)
        best["jcsol"] = max(best["jcsol"], own["rate"])
        first.append(own["first"])
        best["river"] = max(best["river"], river_pass(data, BATCH)["rate"])
        best["jcsol_sized"] = max(best["jcsol_sized"], live_pass(learner, X, y, BATCH, (BATCH,))["rate"])
        best["engine"] = max(best["engine"], engine_pass(learner, X, y))
        for batch, rate in sweep.items():
            n = min(events, len(y)) if batch == 1 else len(y)
            if rate is not None:
                sweep[batch] = max(rate, live_pass(learner, _take(X, 0, n), y[:n], batch)["rate"])
    nnz = X.indices.shape[1] if isinstance(X, jcsol.SparseRows) else int((X != 0).sum(1).mean())
    return {"name": name, "events": len(y), "d": _dim(X), "nnz": nnz, **best, "first": min(first), "sweep": sweep}


def main() -> None:
    args = ARGS
    learner = grid_learner(args.learner)
    print(
        f"{learner.name} × 11 η; XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r} (each scan one kernel: "
        f"{'yes' if jcsol.xla_cpu.loop_kernels else 'no'}); async dispatch "
        f"{'on' if args.async_dispatch else 'off'}; "
        f"{f'pinned to CPU {args.cpu}' if args.cpu >= 0 else 'not pinned'}; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; python {sys.version.split()[0]}, jax {jax.__version__}, "
        f"jcsol {jcsol.__version__}"
    )
    dense = load_a9a(args.data_dir, args.rows, sparse=False)
    streams = [
        dense,
        load_a9a(args.data_dir, args.rows, sparse=True),
        *(fraud_table(args.table_rows, bits) for bits in args.bits),
    ]

    lat = latency(learner, dense[1], dense[2], args.events)
    print(f"\none event's predict + learn on {dense[0]} ({args.events} events, the first 100 left out):")
    print(f"  jcsol Live, 11 configurations      median {lat['latency'][0]:7.1f} µs   p99 {lat['latency'][1]:7.1f} µs")
    print(
        f"  empty calls of the same shapes     median {lat['floor'][0]:7.1f} µs   p99 {lat['floor'][1]:7.1f} µs"
        f"   (learn: {lat['arguments']} arguments, {lat['outputs']} outputs)"
    )

    data = list(zip(river_dicts(dense[1]), (dense[2] > 0).tolist()))
    peers = {}
    for label, fn, part in (
        ("river PAClassifier, 1 configuration", river_pass, data),
        ("river BanditClassifier over 11 PAClassifier", river_selection, data[: args.events]),
        ("Vowpal Wabbit hinge, 1 configuration", vw_pass, data),
    ):
        try:
            peers[label] = fn(part)
        except ImportError as err:
            print(f"{label}: skipped ({err}); pip install -e '.[bench]'")
    for label, r in peers.items():
        print(
            f"  {label:<44} {r['rate']:>10,.0f} events/s   median {r['latency'][0]:6.1f} µs   "
            f"p99 {r['latency'][1]:6.1f} µs"
        )

    print(f"\nbatches of {BATCH:,}, events/s, best of {args.repeats} alternating repetitions:")
    print(
        f"{'stream':<44}{'d':>8}{'nnz':>5}{'jcsol':>11}{'sized':>11}{'engine':>11}{'river':>10}{'ratio':>7}{'sized':>7}"
        f"{'1st ms':>8}"
    )
    rows = []
    for name, X, y in streams:
        r = compare(name, learner, X, y, args.repeats, args.events)
        rows.append(r)
        print(
            f"{name:<44}{r['d']:>8}{r['nnz']:>5}{r['jcsol']:>11,.0f}{r['jcsol_sized']:>11,.0f}"
            f"{r['engine']:>11,.0f}{r['river']:>10,.0f}{r['jcsol'] / r['river']:>6.1f}×"
            f"{r['jcsol_sized'] / r['river']:>6.1f}×{r['first'] * 1e3:>8.1f}"
        )
    print(
        "  jcsol: Live, batches padded to 1,024; sized: Live(batch_sizes=(1000,)); engine: jcsol.run's scan "
        "over the whole stream, the same grid (no board, no calls between batches); river: PAClassifier, "
        "1 configuration; jcsol and river timed after their first batch, whose time for a new Live (its state "
        "laid out and first touched) is 1st ms"
    )

    sizes = (*SWEEP[:2], BATCH, *SWEEP[2:])
    print("\njcsol Live events/s by batch size (default padding; ×: against river's one-configuration events/s):")
    print(f"{'stream':<44}" + "".join(f"{b:>12,}{'':>7}" for b in sizes))
    for r in rows:
        rates = [{**r["sweep"], BATCH: r["jcsol"]}[b] for b in sizes]
        cells = (f"{'—':>12}{'':>7}" if v is None else f"{v:>12,.0f}{v / r['river']:>6.1f}×" for v in rates)
        print(f"{r['name']:<44}" + "".join(cells))
    print(f"  batches of 1: the first {args.events:,} events of each stream; —: a stream shorter than the batch")

    print(f"\nserved stream's progressive sum (jcsol, batch 1, {dense[0]}): {lat['served_sum']:.4f}")
    print(
        f"leaderboard() of the same learner (11 configurations, AUC window of {lat['window']:,} events): "
        f"{lat['leaderboard_ms']:.1f} ms, best of 20"
    )
    p99 = lat["latency"][1]
    print(
        f"target 1: one event through 11 configurations, predict + learn, p99 {p99:.1f} µs (target ≤ 100; "
        f"empty calls' p99 {lat['floor'][1]:.1f} µs): {'met' if p99 <= 100 else 'NOT met'}"
    )
    table = rows[2]
    ratio = max(table["jcsol"], table["jcsol_sized"]) / table["river"]
    print(
        f"target 2: batches of {BATCH:,} through 11 configurations on the tabular stream at {ratio:.1f}× river's "
        f"one-configuration events/s (target ≥ 10×; the engine's scan alone: "
        f"{table['engine'] / table['river']:.1f}×): {'met' if ratio >= 10 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
