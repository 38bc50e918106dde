"""Late labels in the sweep: ``jcsol.run(..., delay=D, times=...)``.

The schedule is checked against the rule written out pair by pair (a label ``i`` is learnt before row ``a`` is
scored iff ``i < a`` and ``τ_i + D <= τ_a``) and against river's ``stream.simulate_qa``; the runs against
:class:`jcsol.Live` fed the same schedule (``predict(ids=...)`` on arrival, ``learn(ids=...)`` when the label
comes), against a float64 NumPy loop of the papers' COG and ACOG updates, and, with no delay, against the usual run.
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import jcsol
from jcsol.core.delay import schedule

sys.path.insert(0, str(Path(__file__).resolve().parent / "algorithms"))
from reference_cog import _ACOGStep, _COGStep, loss_value, sum_laplace  # noqa: E402


def _rounds(s) -> list[tuple[str, int]]:
    """A schedule's events in order: round ``j`` scores its arriving rows, then learns label ``j``."""
    events = []
    for j in range(len(s.first)):
        events += [("score", int(a)) for a in range(s.first[j], s.first[j] + s.arrivals[j])]
        events.append(("learn", j))
    return events


@pytest.mark.parametrize("seed", range(4))
def test_schedule_follows_the_rule_pair_by_pair(seed):
    rng = np.random.default_rng(seed)
    length = int(rng.integers(1, 40))
    times = np.sort(rng.integers(0, 30, length)).astype(np.float64)
    delay = float(rng.integers(0, 12))
    s = schedule(length, delay, times)
    events = _rounds(s)
    when = {event: k for k, event in enumerate(events)}
    assert sorted(i for kind, i in events if kind == "learn") == list(range(length))  # every label learnt once
    assert [i for kind, i in events if kind == "score"] == list(range(length))  # every row scored once, in order
    for i in range(length):
        for a in range(length):
            known = i < a and times[i] + delay <= times[a]
            assert (when[("learn", i)] < when[("score", a)]) == known, (i, a)
    pending = [a - sum(1 for i in range(a) if when[("learn", i)] < when[("score", a)]) + 1 for a in range(length)]
    assert s.awaited == max(pending)


@pytest.mark.parametrize("delay", [0, 1, 2, 5])
def test_schedule_is_rivers_simulate_qa(delay):
    qa = pytest.importorskip("river.stream").simulate_qa
    length = 30
    dataset = (({"i": i}, i) for i in range(length))
    theirs = [("score" if y is None else "learn", i) for i, _, y in qa(dataset, None, delay)]
    assert _rounds(schedule(length, delay)) == theirs


def test_schedule_by_time_is_rivers_simulate_qa():
    qa = pytest.importorskip("river.stream").simulate_qa
    start = datetime.datetime(2024, 3, 1)
    minutes = [0, 0, 3, 9, 9, 10, 25, 26, 40, 41, 41, 60]
    moments = [start + datetime.timedelta(minutes=m) for m in minutes]
    wait = datetime.timedelta(minutes=10)
    dataset = (({"ts": t}, i) for i, t in enumerate(moments))
    theirs = [("score" if y is None else "learn", i) for i, _, y in qa(dataset, "ts", wait)]
    times = np.array(moments, dtype="datetime64[ns]")
    X, y = jcsol.datasets.load("german")
    res = jcsol.run(jcsol.COG(), X[: len(minutes)], y[: len(minutes)], perms="stream", delay=wait, times=times)
    assert res.counts.sum() == len(minutes)
    ns = times.astype(np.int64)
    assert _rounds(schedule(len(minutes), int(np.timedelta64(wait, "ns").astype(np.int64)), ns)) == theirs


@pytest.fixture(scope="module")
def german():
    return jcsol.datasets.load("german")


def _same(a, b, *, scores_to_rounding=False):
    for p, q in zip(jax.tree.leaves(a.states), jax.tree.leaves(b.states)):
        np.testing.assert_array_equal(np.asarray(p), np.asarray(q))
    np.testing.assert_array_equal(a.counts, b.counts)
    np.testing.assert_array_equal(a.mistake_cost, b.mistake_cost)
    if a.curve is not None:
        np.testing.assert_array_equal(a.curve, b.curve)
    if a.scores is not None and scores_to_rounding:  # a scaled row's score fused apart from the step's
        np.testing.assert_allclose(a.scores, b.scores, rtol=0, atol=1e-5 * np.abs(a.scores).max())
    elif a.scores is not None:
        np.testing.assert_array_equal(a.scores, b.scores)


def test_no_delay_is_the_usual_run_bit_for_bit(german):
    X, y = german
    learner = jcsol.grid(jcsol.by_name("ACOG-II"), eta=[0.01, 1.0])
    options = dict(perms=3, record_scores=True, curve_points=7)
    _same(jcsol.run(learner, X, y, **options), jcsol.run(learner, X, y, delay=0, **options))
    import scipy.sparse

    sparse = jcsol.SparseRows.from_scipy(scipy.sparse.csr_matrix(X))
    options = dict(perms=2, record_scores=True, curve_points=4, scale="online", costs=np.linspace(0.5, 2, len(y)))
    cog = jcsol.grid(jcsol.by_name("COG-I"), eta=[0.1, 10.0])
    _same(jcsol.run(cog, sparse, y, **options), jcsol.run(cog, sparse, y, delay=1, **options), scores_to_rounding=True)


def _delayed_reference(X, y, order, step, kind: str, delay: int):
    """The float64 loop of a delayed run, written from the rule: before row ``a`` is scored, the labels of the rows
    ``i < a`` with ``i + delay <= a`` are learnt, in order; the rest after the last row. A row is counted by the
    score it was served; ``ρ`` is the Laplace estimate of the labels learnt so far (this one included)."""
    X = np.asarray(X, np.float64)
    labels = np.asarray(y, np.float64)[order]
    rhos = sum_laplace()(labels)  # labels are learnt in position order: ρ of position j as without delay
    w, sigma = step.init(X.shape[1])
    served = np.zeros(len(order))
    learnt = 0

    def learn(j):
        nonlocal w, sigma
        x = X[order[j]]
        if loss_value(kind, labels[j] * float(w @ x), rhos[j]) > 0:
            w, sigma = step.update(w, sigma, x, labels[j], rhos[j])

    for a in range(len(order)):
        while learnt < a and learnt + delay <= a:
            learn(learnt)
            learnt += 1
        served[a] = float(w @ X[order[a]])
    for j in range(learnt, len(order)):
        learn(j)
    return served, w


@pytest.mark.parametrize(
    ("name", "step"), [("COG-II", _COGStep(0.5, "II")), ("ACOG-II-diag", _ACOGStep(0.5, 1.0, "II", True))]
)
def test_delay_against_a_float64_loop(german, name, step):
    X, y = german
    X, y = X[:400], y[:400]
    learner = jcsol.by_name(name).replace(eta=0.5)
    res = jcsol.run(learner, X, y, perms=2, delay=9, objective=jcsol.Sum(rho="laplace"), record_scores=True)
    for p in range(2):
        served, w = _delayed_reference(X, y, res.orders[p], step, name.split("-")[1], 9)
        np.testing.assert_allclose(res.scores[p], served, atol=2e-5)
        np.testing.assert_allclose(np.asarray(learner.weights(res.states))[p], w, atol=2e-5)
        clear = np.abs(served) > 1e-4
        labels = y[res.orders[p]]
        predicted = np.where(served >= 0, 1, -1)
        tp = np.sum(clear & (labels > 0) & (predicted > 0)) + np.sum(~clear & (labels > 0) & (res.scores[p] >= 0))
        assert res.counts[p, 0] == tp


def test_delay_equals_live_fed_the_same_schedule(german):
    X, y = german
    X, y = X[:150], y[:150]
    learner = jcsol.grid(jcsol.by_name("ACOG-II"), eta=jcsol.decades(1e-3, 10))
    res = jcsol.run(learner, X, y, perms="stream", objective=jcsol.Sum(rho="laplace"), delay=6, record_scores=True)
    live = jcsol.Live(learner, jcsol.Sum(rho="laplace"))
    s = schedule(len(y), 6)
    arrival = np.zeros((len(y), 5), np.float32)
    for kind, i in _rounds(s):
        if kind == "learn":
            live.learn(ids=[i], y=y[i : i + 1])
        else:
            arrival[i] = live.scores(X[i : i + 1])[0]
            live.predict(X[i : i + 1], ids=[i])
    for p, q in zip(jax.tree.leaves(live.states), jax.tree.leaves(res.states)):
        np.testing.assert_array_equal(np.asarray(p), np.asarray(q)[:, 0])
    # a score in the chunk's one kernel against the live learner's scoring call: the same sum, in another order
    np.testing.assert_allclose(arrival.T, res.scores[:, 0], rtol=0, atol=1e-5 * np.abs(arrival).max())
    predicted = arrival.T >= 0
    positive = y > 0
    np.testing.assert_array_equal(res.counts[:, 0, 0], (predicted & positive).sum(axis=1))
    np.testing.assert_array_equal(res.counts[:, 0, 2], (predicted & ~positive).sum(axis=1))


def test_delay_grows_the_loss_and_keeps_every_row(german):
    X, y = german
    learner = jcsol.grid(jcsol.by_name("COG-II"), eta=jcsol.decades(1e-2, 100))
    sums = []
    for delay in (0, 50, 400):
        res = jcsol.run(learner, X, y, perms=4, delay=delay, curve_points=5)
        assert (res.counts.sum(axis=-1) == len(y)).all()
        np.testing.assert_array_equal(res.curve[..., -1, :], res.counts)  # the last point: every label learnt
        sums.append(res.sum.mean(axis=-1).max())
    assert sums[0] > sums[2]


def test_delay_resumes_bit_identically(german, tmp_path):
    X, y = german
    learner = jcsol.grid(jcsol.by_name("PA-I"), C=[0.1, 1.0])
    whole = jcsol.run(learner, X, y, perms=2, delay=30, curve_points=3)

    def stop(done):
        if done.chunks_done == 2:
            raise KeyboardInterrupt

    path = tmp_path / "late.ckpt"
    with pytest.raises(KeyboardInterrupt):
        jcsol.run(learner, X, y, perms=2, delay=30, curve_points=3, chunk_size=200, checkpoint=path, on_chunk=stop)
    resumed = jcsol.run(learner, X, y, perms=2, delay=30, curve_points=3, chunk_size=200, checkpoint=path)
    assert resumed.resumed_at > 0
    _same(whole, resumed)
    with pytest.raises(jcsol.checkpoint.CheckpointError, match="different run"):  # another delay: another run
        jcsol.run(learner, X, y, perms=2, delay=31, curve_points=3, chunk_size=200, checkpoint=path)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(delay=-1), "delay must be a finite number of rows >= 0"),
        (dict(delay=float("nan")), "delay must be a finite number of rows >= 0"),
        (dict(delay="3"), "delay must be a number"),
        (dict(delay=True), "delay must be a number"),
        (dict(times=np.arange(1000)), "give delay= beside them"),
        (dict(delay=3, times=np.arange(1000)), "not several permutations"),
        (dict(delay=3, times=np.arange(10), perms="stream"), "one time per row"),
        (dict(delay=3, times=np.arange(1000)[::-1], perms="stream"), "times decrease"),
        (dict(delay=3, times=np.arange(1000).astype("datetime64[s]"), perms="stream"), "datetime.timedelta"),
        (dict(delay=3, path="kernel"), "delay runs on the scan"),
    ],
)
def test_refusals(german, options, message):
    X, y = german
    with pytest.raises((ValueError, TypeError), match=message):
        jcsol.run(jcsol.COG(), X, y, **{"perms": 2, **options})
