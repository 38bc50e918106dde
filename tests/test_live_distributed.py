"""The live learner over several processes (JAX's distributed runtime on the CPU, coordinator on 127.0.0.1): the
same bits as one process, shares saved by every process and loaded by all of them, a save interrupted on one
process resumed from the generation every process holds, another process count refused, a process that dies
ending the others with an error."""

import textwrap
import time

import jax
import numpy as np
import pytest
from test_distributed import _bit_identical, _finish, _launch, _same_files, _start, _succeeded

from jcsol.live.units import check_jax_for_processes


def _jax_lays_live_over_processes(version: str) -> bool:
    try:
        check_jax_for_processes(version)
    except RuntimeError:
        return False
    return True


NEW_JAX = _jax_lays_live_over_processes(jax.__version__)
needs_new_jax = pytest.mark.skipif(not NEW_JAX, reason="a live learner over several processes needs jax 0.9.1")

# One process of a live job: joins (when there are several), plays SCRIPT on german's rows with a live learner
# (from its start, or from the save it loads), and writes the learner's states, board, scores and served
# predictions to OUT/<process>-of-<processes>.npz. Every process makes the same calls.
WORKER = textwrap.dedent("""
    import json, os, signal, sys
    import numpy as np
    process, n, port, out, job = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
    import jcsol, jax
    from jcsol.live import Live
    if n > 1:
        jcsol.distributed.initialize(f"127.0.0.1:{port}", n, process, join_timeout=60, heartbeat_timeout=10)
    X, y = jcsol.datasets.load("german")
    learner = jcsol.ACOG(eta=10.0 ** np.arange(-3, 5))
    saves = {80: 4, 160: 7}  # events learnt at each save -> the step after which it was made
    SCRIPT = [
        ("learn", 0, 32), ("predict", 32, 48), ("learn", 48, 96), ("save",),
        ("late", 32, 48), ("learn", 96, 160), ("save",),
        ("predict", 160, 176), ("learn", 176, 224), ("late", 160, 176),
    ]
    if job.get("resume"):
        live = Live.load(job["path"], learner)
        first = saves[live.events]
    else:
        live = Live(learner, select=job.get("select", "ftl"), grid_blocks=job["blocks"], batch_sizes=(16,),
                    key=job.get("key", 0) + process * job.get("key_step", 0))
        first = 0
    served, generation = [], 0
    for step in SCRIPT[first:]:
        if step[0] == "learn":
            live.learn(X[step[1]:step[2]], y[step[1]:step[2]])
        elif step[0] == "predict":
            served.append(live.predict(X[step[1]:step[2]], ids=np.arange(step[1], step[2])))
        elif step[0] == "late":
            live.learn(ids=np.arange(step[1], step[2]), y=y[step[1]:step[2]])
        else:
            generation += 1
            if job.get("die_before_save") == [process, generation]:
                os.kill(os.getpid(), signal.SIGKILL)
            live.save(job["path"])
            if job.get("die_after_save") == [process, generation]:
                os.kill(os.getpid(), signal.SIGKILL)
    board = live.leaderboard()
    arrays = {"scores": live.scores(X[224:240]), "served": live.predict(X[224:240]), "events": live.events,
              "sum": board.sum, "auc": board.auc, "leader": np.asarray(board.served)}
    arrays.update({f"carry_{i}": np.asarray(a) for i, a in enumerate(jax.tree.leaves(live.carry))})
    arrays.update({f"board_{i}": np.asarray(a) for i, a in enumerate(jax.tree.leaves(live.board))})
    if not job.get("resume"):
        arrays["served_late"] = np.concatenate(served)
    np.savez(os.path.join(out, f"{process}-of-{n}.npz"), **arrays)
""")


@needs_new_jax
@pytest.mark.parametrize(
    "blocks",
    [4, pytest.param(1, marks=pytest.mark.slow)],
    ids=["the grid in 4 blocks, 2 a device", "one block, padded with a copy"],
)
def test_two_processes_equal_one_process_of_two_devices(tmp_path, blocks):
    job = {"blocks": blocks, "path": str(tmp_path / "live.npz")}
    ref = _bit_identical(job, tmp_path, worker=WORKER)
    assert ref["scores"].shape == (16, 8)
    assert int(ref["events"]) == 224
    # the same bits as one process of one device, where one block takes the single-device path
    (tmp_path / "single").mkdir()
    _succeeded(_launch(1, 1, job | {"path": str(tmp_path / "single.npz")}, tmp_path / "single", worker=WORKER))
    _same_files(tmp_path / "one" / "0-of-1.npz", [tmp_path / "single" / "0-of-1.npz"])


@needs_new_jax
@pytest.mark.slow
def test_four_processes_and_two_of_two_devices_equal_one_process_of_four(tmp_path):
    # 4 blocks over 4 devices: padded to 8 units, two a device
    ref = _bit_identical(
        {"blocks": 4, "path": str(tmp_path / "live.npz")}, tmp_path, layouts=((4, 1), (2, 2)), worker=WORKER
    )
    assert int(ref["events"]) == 224


@needs_new_jax
def test_a_save_interrupted_on_one_process_resumes_from_the_generation_all_hold(tmp_path):
    path = tmp_path / "live.npz"
    job = {"blocks": 4, "path": str(path), "select": "hedge"}
    (tmp_path / "reference").mkdir()
    reference = _start(1, 2, job | {"path": str(tmp_path / "ref.npz")}, tmp_path / "reference", worker=WORKER)

    # process 1 dies as it starts its second save; process 0 writes its second share and ends with an error
    started = time.monotonic()
    (rc0, err0), (rc1, _) = _launch(2, 1, job | {"die_before_save": [1, 2]}, tmp_path, worker=WORKER)
    assert rc1 == -9
    assert rc0 != 0, err0[-3000:]
    assert "DistributedError" in err0, err0[-3000:]
    assert "saving the live learner" in err0, err0[-3000:]
    assert time.monotonic() - started < 90
    assert {p.name for p in tmp_path.glob("live.npz*")} == {
        "live.npz.0-of-2",
        "live.npz.0-of-2.previous",
        "live.npz.1-of-2",
    }

    # another number of processes is refused by every process, before any work
    for n in (1, 4):
        for rc, err in _launch(n, 1, job | {"resume": True}, tmp_path, worker=WORKER):
            assert rc != 0, err[-3000:]
            assert "LiveFileError" in err, err[-3000:]
            assert "saved by 2 processes, and this run has" in err, err[-3000:]

    # both restarted: they load the first save, the one both hold, and end as the uninterrupted learner
    _succeeded(_launch(2, 1, job | {"resume": True}, tmp_path, worker=WORKER))
    _succeeded(_finish(reference))
    ref = np.load(tmp_path / "reference" / "0-of-1.npz")
    for name in ("0-of-2.npz", "1-of-2.npz"):
        got = np.load(tmp_path / name)
        for key in got.files:
            np.testing.assert_array_equal(got[key], ref[key], err_msg=f"{name}: {key}")


@needs_new_jax
@pytest.mark.slow
def test_processes_that_make_different_calls_all_refuse(tmp_path):
    for rc, err in _launch(2, 1, {"blocks": 4, "path": str(tmp_path / "x"), "key_step": 1}, tmp_path, worker=WORKER):
        assert rc != 0, err[-3000:]
        assert "ValueError" in err, err[-3000:]
        assert "called Live.start with different" in err, err[-3000:]


def test_jax_versions_that_cannot_lay_a_live_learner_over_processes_are_named():
    for version in ("0.8.0", "0.9.0", "0.9.0.1"):
        assert not _jax_lays_live_over_processes(version)
    for version in ("0.9.1", "0.10.2", "0.11.0.dev20270101", "1.0"):
        assert _jax_lays_live_over_processes(version)
    with pytest.raises(RuntimeError, match=r"several processes needs jax 0\.9\.1 or later \(this is jax 0\.8\.0"):
        check_jax_for_processes("0.8.0")


@pytest.mark.skipif(NEW_JAX, reason="the refusal of an older jax")
def test_older_jax_refuses_a_live_learner_over_processes_before_any_work(tmp_path):
    for rc, err in _launch(2, 1, {"blocks": 4, "path": str(tmp_path / "x")}, tmp_path, worker=WORKER):
        assert rc != 0, err[-3000:]
        assert "RuntimeError: a live learner over several processes needs jax 0.9.1" in err, err[-3000:]
