"""Runs over several processes (JAX's distributed runtime on the CPU, coordinator on 127.0.0.1) equal the same
call in one process bit for bit; their checkpoints resume all processes exactly and refuse another process
count; a process that dies or never joins ends the others with an error, never a hang."""

import json
import os
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from conftest import DATA

import jcsol
from jcsol.checkpoint import CheckpointError, load_checkpoint, load_share, save_share, share_path

# One process of a distributed job: joins (when there are several), runs the job, saves every array of the
# result to OUT/<process>-of-<processes>.npz (a result of None: an empty OUT/<process>-of-<processes>.none).
WORKER = textwrap.dedent("""
    import json, os, signal, sys
    import numpy as np
    process, n, port, out, job = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
    import jcsol, jax
    if n > 1:
        jcsol.distributed.initialize(f"127.0.0.1:{port}", n, process, join_timeout=job.get("join_timeout", 60),
                                     heartbeat_timeout=job.get("heartbeat_timeout", 10))
    X, y = jcsol.datasets.load("german")
    if job.get("store"):
        X = jcsol.datasets.RowStore(job["store"])

    states_seen = []

    def on_chunk(done):
        states_seen.append(done.states is not None)
        if job.get("die") == [process, done.chunks_done]:
            os.kill(os.getpid(), signal.SIGKILL)
        if job.get("hang") == [process, done.chunks_done]:
            os.kill(os.getpid(), signal.SIGSTOP)

    options = dict(perms=job.get("perms", 5), key=3 + process * job.get("key_step", 0),
                   chunk_size=job.get("chunk", 300), curve_points=7,
                   checkpoint=job.get("checkpoint"), checkpoint_every=job.get("every", 1), on_chunk=on_chunk,
                   costs=np.linspace(0.5, 2.0, len(y)) if job.get("costs") else None, progress=job.get("progress"),
                   grid_blocks=job.get("grid_blocks", 1))
    arrays = {}
    if job["what"] == "run":
        res = jcsol.run(jcsol.ACOG(eta=[0.1, 1.0, 10.0]), X, y, record_scores=job.get("scores", True),
                        gather=job.get("gather", "all"), **options)
        if res is None:
            assert not any(states_seen)
            open(os.path.join(out, f"{process}-of-{n}.none"), "w").close()
            sys.exit(0)
        assert all(states_seen)
    elif job["what"] == "select":
        sel = jcsol.protocols.select_and_rerun(jcsol.ACOG(), X, y, grid={"eta": [0.1, 1.0, 10.0]}, perms=3, key=5)
        arrays["index"], res = np.asarray(sel.index), sel.result
    else:
        koil = jcsol.grid(jcsol.KOIL(budget_pos=10, budget_neg=10, k=2), sigma=[0.3, 1.0], C=[1.0, 8.0])
        splits = jcsol.protocols.cv_splits(y[:300], folds=3, seed=2)
        auc = jcsol.protocols.protocol_auc(koil, X[:300], y[:300], splits, key=4,
                                           grid_blocks=job.get("grid_blocks", 1))
        arrays["auc"], res = auc.auc, auc.result
    arrays.update(counts=res.counts, cost=res.mistake_cost, orders=res.orders, resumed_at=np.asarray(res.resumed_at))
    for name in ("curve", "scores"):
        if getattr(res, name) is not None:
            arrays[name] = getattr(res, name)
    for i, leaf in enumerate(jax.tree.leaves(res.states)):
        arrays[f"state_{i}"] = np.asarray(leaf)
    np.savez(os.path.join(out, f"{process}-of-{n}.npz"), **arrays)
""")

TIMEOUT = 150  # seconds any process of a test may take


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(n: int, devices: int, job: dict, out, processes=None, worker: str = WORKER) -> list[subprocess.Popen]:
    env = dict(os.environ, JCSOL_CPU_DEVICES=str(devices), JCSOL_DATA=str(DATA), PYTHONUNBUFFERED="1")
    port = _free_port()
    return [
        subprocess.Popen(
            [sys.executable, "-c", worker, str(p), str(n), str(port), str(out), json.dumps(job)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for p in (range(n) if processes is None else processes)
    ]


def _finish(procs: list[subprocess.Popen], timeout: float = TIMEOUT) -> list[tuple[int, str]]:
    """``(return code, stderr)`` of each process; all are killed when one outlives ``timeout``."""
    deadline = time.monotonic() + timeout
    outcome = []
    try:
        for proc in procs:
            _, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            outcome.append((proc.returncode, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return outcome


def _launch(n: int, devices: int, job: dict, out, timeout: float = TIMEOUT, worker: str = WORKER):
    return _finish(_start(n, devices, job, out, worker=worker), timeout)


def _succeeded(outcome):
    for rc, err in outcome:
        assert rc == 0, err[-3000:]


def _same_files(reference, others):
    ref = np.load(reference)
    for path in others:
        got = np.load(path)
        assert sorted(got.files) == sorted(ref.files), path
        for name in ref.files:
            assert got[name].dtype == ref[name].dtype, (path, name)
            np.testing.assert_array_equal(got[name], ref[name], err_msg=f"{path}: {name}")


def _bit_identical(job: dict, tmp_path, layouts=((2, 1),), worker: str = WORKER):
    """One process with as many devices as each layout of ``(processes, devices each)`` has, and the layouts,
    run ``job`` at once; every array of every process's result is the same."""
    total = layouts[0][0] * layouts[0][1]
    assert all(n * devices == total for n, devices in layouts)
    one = tmp_path / "one"
    one.mkdir()
    procs, files = _start(1, total, job, one, worker=worker), []
    for n, devices in layouts:
        out = tmp_path / f"{n}x{devices}"
        out.mkdir()
        procs += _start(n, devices, job, out, worker=worker)
        files += [out / f"{p}-of-{n}.npz" for p in range(n)]
    _succeeded(_finish(procs))
    _same_files(one / "0-of-1.npz", files)
    return np.load(one / "0-of-1.npz")


def test_two_processes_equal_one_process_of_two_devices(tmp_path):
    # 5 permutations over 2 devices: padded to 6, split 3 + 3; scores and curves gathered from both processes
    ref = _bit_identical({"what": "run", "perms": 5, "chunk": 500}, tmp_path)
    assert ref["counts"].shape == (3, 5, 4)
    assert ref["scores"].shape == (3, 5, 1000)
    assert ref["counts"].sum() == 3 * 5 * 1000


@pytest.mark.slow
def test_gather_first_returns_the_result_on_process_0_only_and_one_progress_bar(tmp_path):
    job = {"what": "run", "perms": 3, "chunk": 300, "progress": True}
    one = tmp_path / "one"
    one.mkdir()
    procs = _start(1, 2, job, one) + _start(2, 1, job | {"gather": "first"}, tmp_path)
    outcome = _finish(procs)
    _succeeded(outcome)
    _same_files(one / "0-of-1.npz", [tmp_path / "0-of-2.npz"])
    assert (tmp_path / "1-of-2.none").exists()
    assert not (tmp_path / "1-of-2.npz").exists()
    (_, bar_one), (_, bar_first), (_, bar_second) = outcome
    assert "1000/1000" in bar_one
    assert "1000/1000" in bar_first  # the bar is shown on process 0
    assert "/1000" not in bar_second  # and on no other process, even with progress=True


def test_gather_is_checked_before_the_run(small):
    with pytest.raises(ValueError, match='gather must be "all" or "first", got \'some\''):
        jcsol.run(jcsol.COG(), *small, perms=1, gather="some")
    one = jcsol.run(jcsol.COG(eta=[1.0, 2.0]), *small, perms=2, gather="first")  # one process: the result
    np.testing.assert_array_equal(one.counts, jcsol.run(jcsol.COG(eta=[1.0, 2.0]), *small, perms=2).counts)


@pytest.mark.slow
@pytest.mark.parametrize(
    "units",
    [{"perms": 6}, {"perms": 1, "grid_blocks": 3}],
    ids=["6 permutations", "1 permutation, the grid in 3 blocks"],
)
def test_four_processes_and_two_of_two_devices_equal_one_process_of_four(tmp_path, units):
    # 6 units over 4 devices: padded to 8, split 2 + 2 + 2 + 2; or 3 units (one grid point each), padded to 4
    ref = _bit_identical({"what": "run", "chunk": 400} | units, tmp_path, layouts=((4, 1), (2, 2)))
    assert ref["counts"].shape == (3, units["perms"], 4)


@pytest.mark.slow
def test_protocols_over_two_processes(tmp_path):
    for name in ("select", "auc", "auc-in-blocks"):
        (tmp_path / name).mkdir()
    ref = _bit_identical({"what": "select"}, tmp_path / "select")
    assert ref["counts"].shape == (3, 4)
    ref = _bit_identical({"what": "auc"}, tmp_path / "auc")
    blocked = _bit_identical({"what": "auc", "grid_blocks": 2}, tmp_path / "auc-in-blocks")  # 6 units, 3 a device
    np.testing.assert_allclose(blocked["auc"], ref["auc"], atol=1e-6)
    assert ref["auc"].shape == (2, 2, 3)
    assert np.all((ref["auc"] >= 0) & (ref["auc"] <= 1))


@pytest.mark.slow
def test_row_store_read_by_each_process(tmp_path, german):
    path = tmp_path / "german.svm"
    X, y = german
    with open(path, "w") as fh:
        for row, label in zip(np.asarray(X), y):
            fh.write(f"{int(label)} " + " ".join(f"{j + 1}:{v:.9g}" for j, v in enumerate(row) if v) + "\n")
    jcsol.datasets.RowStore.build(path, tmp_path / "store", normalize=False)
    ref = _bit_identical(
        {"what": "run", "store": str(tmp_path / "store"), "perms": 3, "chunk": 400, "costs": True}, tmp_path
    )
    assert ref["cost"].shape == (3, 3)
    assert np.all(ref["cost"] > 0)


@pytest.mark.slow
@pytest.mark.parametrize(
    "units",
    [{"perms": 5}, {"perms": 1}, {"perms": 1, "grid_blocks": 3}],
    ids=["5 permutations", "1 permutation and a padded copy", "1 permutation, the grid in 3 blocks"],
)
def test_killed_processes_resume_from_their_checkpoint_shares(tmp_path, units):
    ckpt = tmp_path / "sweep.ckpt"
    job = {"what": "run", "chunk": 100, "scores": False, "checkpoint": str(ckpt), "every": 2} | units
    reference = tmp_path / "reference"
    reference.mkdir()
    ref = _start(1, 2, {"what": "run", "chunk": 100, "scores": False} | units, reference)

    # process 1 dies after chunk 3 (its share holds chunk 2); process 0 saves chunk 4 and finds it gone
    started = time.monotonic()
    (rc0, err0), (rc1, _) = _launch(2, 1, job | {"die": [1, 3]}, tmp_path)
    assert rc1 == -9
    assert rc0 != 0, err0[-3000:]
    assert "DistributedError" in err0, err0[-3000:]
    assert "process 0 of 2" in err0, err0[-3000:]
    assert time.monotonic() - started < 90
    assert {p.name for p in tmp_path.glob("sweep.ckpt*")} == {
        "sweep.ckpt.0-of-2",
        "sweep.ckpt.0-of-2.previous",
        "sweep.ckpt.1-of-2",
    }

    # a restart over another number of processes is refused by every process, before any work
    for n in (1, 4):
        outcome = _launch(n, 1, job, tmp_path)
        for rc, err in outcome:
            assert rc != 0, err[-3000:]
            assert "CheckpointError" in err, err[-3000:]
            assert "written by a run over 2 processes" in err, err[-3000:]
            assert f"this run has {n}" in err
    assert not list(tmp_path.glob("*.npz"))

    # all processes restarted: they agree on chunk 2, the chunk both hold, and finish bit-identical
    _succeeded(_launch(2, 1, job, tmp_path))
    _succeeded(_finish(ref))
    for name in ("0-of-2.npz", "1-of-2.npz"):
        assert int(np.load(tmp_path / name)["resumed_at"]) == 200
    _same_ignoring(reference / "0-of-1.npz", [tmp_path / "0-of-2.npz", tmp_path / "1-of-2.npz"], "resumed_at")


def _same_ignoring(reference, others, skip: str):
    ref = np.load(reference)
    for path in others:
        got = np.load(path)
        for name in ref.files:
            if name != skip:
                np.testing.assert_array_equal(got[name], ref[name], err_msg=f"{path}: {name}")


@pytest.mark.slow
def test_processes_called_with_different_arguments_all_refuse(tmp_path):
    for rc, err in _launch(2, 1, {"what": "run", "key_step": 1}, tmp_path):
        assert rc != 0, err[-3000:]
        assert "ValueError" in err, err[-3000:]
        assert "called jcsol.run with different arguments" in err, err[-3000:]
        assert "key, dtype" in err
    assert not list(tmp_path.glob("*.npz"))


@pytest.mark.slow
def test_a_process_that_never_joins_ends_the_others(tmp_path):
    started = time.monotonic()
    [(rc, err)] = _finish(_start(2, 1, {"what": "run", "join_timeout": 2}, tmp_path, processes=[0]), timeout=60)
    assert rc != 0
    assert "process 0 of 2 waited 2 s for every process to join at 127.0.0.1:" in err, err[-3000:]
    assert time.monotonic() - started < 60


@pytest.mark.slow
def test_a_process_that_hangs_ends_the_others(tmp_path):
    # process 1 stops (no heartbeat, no work) after chunk 2; JAX's runtime ends process 0 within its heartbeat
    # timeout (10 s here) instead of letting it wait at the next meeting
    started = time.monotonic()
    procs = _start(2, 1, {"what": "run", "perms": 4, "chunk": 100, "hang": [1, 2], "heartbeat_timeout": 10}, tmp_path)
    try:
        _, err = procs[0].communicate(timeout=TIMEOUT)
        assert time.monotonic() - started < 90  # start-up, 2 chunks, 10 s of missed heartbeats
        assert procs[0].returncode != 0
        assert "stopped sending heartbeats" in err or "another task died" in err, err[-3000:]
        assert procs[1].poll() is None  # still stopped: the error came from the heartbeats, not from its exit
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()


# Checkpoint shares, without processes: their files, generations and refusals.

LAYOUT = {"processes": 2, "process": 1, "devices": [1, 1], "runs": [3, 6], "padded_runs": 6}


def test_shares_keep_the_previous_generation(tmp_path):
    path = tmp_path / "run.ckpt"
    assert load_share(path, "f", 10, layout=LAYOUT) == {}
    save_share(path, "f", 2, 10, [np.arange(3)], layout=LAYOUT)
    save_share(path, "f", 4, 10, [np.arange(3) + 1], layout=LAYOUT)
    shares = load_share(path, "f", 10, layout=LAYOUT)
    assert sorted(shares) == [2, 4]
    np.testing.assert_array_equal(shares[4][0], np.arange(3) + 1)
    assert share_path(path, 1, 2) == f"{path}.1-of-2"
    with pytest.raises(CheckpointError, match="different run"):
        load_share(path, "other", 10, layout=LAYOUT)
    with pytest.raises(CheckpointError, match="another process layout"):
        load_share(path, "f", 10, layout=LAYOUT | {"devices": [2, 2], "padded_runs": 8})


def test_shares_refuse_another_process_count(tmp_path):
    path = tmp_path / "run.ckpt"
    save_share(path, "f", 2, 10, [np.arange(3)], layout=LAYOUT)
    with pytest.raises(CheckpointError, match="written by a run over 2 processes, and this run has 4"):
        load_share(path, "f", 10, layout=LAYOUT | {"processes": 4})
    with pytest.raises(CheckpointError, match="written by a run over 2 processes, and this run has 1"):
        load_checkpoint(path, "f", 10)


def test_one_process_run_refuses_shares_of_several(tmp_path, small):
    path = tmp_path / "run.ckpt"
    save_share(path, "f", 2, 10, [np.arange(3)], layout=LAYOUT)
    with pytest.raises(CheckpointError, match="over 2 processes, and this run has 1"):
        jcsol.run(jcsol.COG(eta=1.0), *small, perms=2, checkpoint=path)


def test_initialize_refuses_bad_timeouts_and_a_started_jax():
    for bad in (0, -1.0, float("nan"), True, "60"):
        with pytest.raises(ValueError, match="join_timeout"):
            jcsol.distributed.initialize("127.0.0.1:1", 2, 0, join_timeout=bad)
    with pytest.raises(ValueError, match="heartbeat_timeout"):
        jcsol.distributed.initialize("127.0.0.1:1", 2, 0, heartbeat_timeout=0)
    jcsol.run(jcsol.COG(eta=1.0), np.ones((4, 2)), np.array([1, -1, 1, -1]), perms=1)  # JAX has started
    with pytest.raises(RuntimeError, match="before JAX runs anything"):
        jcsol.distributed.initialize("127.0.0.1:1", 2, 0)
