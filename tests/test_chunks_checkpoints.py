"""Chunked runs equal one scan bit for bit; checkpoints resume killed runs exactly and refuse bad files."""

import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import jcsol
from jcsol.checkpoint import CheckpointError


def _same(a, b):
    np.testing.assert_array_equal(a.counts, b.counts)
    if a.curve is not None:
        np.testing.assert_array_equal(a.curve, b.curve)
    for u, v in zip(jax.tree.leaves(a.states), jax.tree.leaves(b.states)):
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


@pytest.mark.parametrize(
    "learner", [jcsol.ACOG(eta=[0.1, 10.0]), jcsol.COG(eta=[1.0, 100.0], loss="II")], ids=lambda l: l.name
)
def test_chunks_are_bit_identical_to_one_scan(german, learner):
    X, y = german
    whole = jcsol.run(learner, X, y, perms=3, curve_points=17, objective=jcsol.Sum(rho="laplace"))
    for chunk in (1000, 333, 64):
        _same(
            whole,
            jcsol.run(learner, X, y, perms=3, curve_points=17, chunk_size=chunk, objective=jcsol.Sum(rho="laplace")),
        )


def test_checkpointed_run_equals_plain_run(german, tmp_path):
    X, y = german
    path = tmp_path / "run.ckpt"
    plain = jcsol.run(jcsol.ACOG(eta=[1.0, 100.0]), X, y, perms=4)
    seen = []
    saved = jcsol.run(
        jcsol.ACOG(eta=[1.0, 100.0]),
        X,
        y,
        perms=4,
        chunk_size=100,
        checkpoint=path,
        checkpoint_every=3,
        on_chunk=lambda c: seen.append((c.chunks_done, c.n_chunks)),
    )
    _same(plain, saved)
    assert seen == [(k, 10) for k in range(1, 11)]
    assert path.exists()
    assert saved.resumed_at == 0
    again = jcsol.run(jcsol.ACOG(eta=[1.0, 100.0]), X, y, perms=4, chunk_size=100, checkpoint=path)
    assert again.resumed_at == 1000  # already complete: nothing left to run
    _same(plain, again)


KILLED_RUN = textwrap.dedent("""
    import os, signal, sys
    import jcsol
    X, y = jcsol.datasets.load("german")
    def die(chunk):
        if chunk.chunks_done == int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)
    jcsol.run(jcsol.ACOG(eta=jcsol.decades(1e-2, 1e2)), X, y, perms=5, key=7, curve_points=10,
              chunk_size=50, checkpoint=sys.argv[1], checkpoint_every=4, on_chunk=die)
""")


@pytest.mark.slow  # a child process killed for real; runs interrupted in this process resume in the default run
def test_run_killed_midway_resumes_to_the_same_result(german, tmp_path):
    X, y = german
    path = tmp_path / "killed.ckpt"
    done = subprocess.run([sys.executable, "-c", KILLED_RUN, str(path), "11"], capture_output=True, text=True)
    assert done.returncode == -9, done.stderr  # SIGKILL, after chunk 11 of 20
    assert path.exists()
    assert not [p for p in os.listdir(tmp_path) if ".tmp" in p]
    learner = jcsol.ACOG(eta=jcsol.decades(1e-2, 1e2))
    resumed = jcsol.run(learner, X, y, perms=5, key=7, curve_points=10, chunk_size=50, checkpoint=path)
    assert resumed.resumed_at == 400  # the last checkpoint was written after chunk 8
    _same(jcsol.run(learner, X, y, perms=5, key=7, curve_points=10), resumed)


def test_checkpoint_of_another_run_is_refused(german, tmp_path):
    X, y = german
    path = tmp_path / "other.ckpt"
    jcsol.run(jcsol.COG(eta=1.0), X, y, perms=2, chunk_size=500, checkpoint=path)
    for changed in (
        dict(learner=jcsol.COG(eta=2.0)),
        dict(perms=3),
        dict(key=1),
        dict(chunk_size=250),
        dict(objective=jcsol.Cost()),
    ):
        kwargs = dict(learner=jcsol.COG(eta=1.0), perms=2, chunk_size=500) | changed
        with pytest.raises(CheckpointError, match="different run"):
            jcsol.run(kwargs.pop("learner"), X, y, checkpoint=path, **kwargs)
    with pytest.raises(CheckpointError, match="different run"):
        jcsol.run(jcsol.COG(eta=1.0), X[:, ::-1].copy(), y, perms=2, chunk_size=500, checkpoint=path)


def test_corrupted_checkpoints_are_refused(german, tmp_path):
    X, y = german
    path = tmp_path / "c.ckpt"
    jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=500, checkpoint=path)
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(CheckpointError, match="unreadable or corrupted"):
        jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=500, checkpoint=path)
    # change one stored weight: the archive still opens, its digest no longer matches
    path.write_bytes(raw)
    with np.load(path) as archive:
        arrays = {k: archive[k].copy() for k in archive.files}
    arrays["leaf_0"].flat[3] += 1.0
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(CheckpointError, match="corrupted"):
        jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=500, checkpoint=path)
    path.write_text("not a checkpoint")
    with pytest.raises(CheckpointError, match="unreadable"):
        jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=500, checkpoint=path)


def test_checkpoints_with_damaged_zip_headers_are_refused(german, tmp_path):
    """Headers naming a compression method or a flag the data do not have (what zipfile raises for each is
    not an OSError) end in the same CheckpointError."""
    from archives import damaged_archives

    X, y = german
    path = tmp_path / "z.ckpt"
    jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=500, checkpoint=path)
    for raw in damaged_archives(path.read_bytes()).values():
        path.write_bytes(raw)
        with pytest.raises(CheckpointError, match="unreadable or corrupted"):
            jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=500, checkpoint=path)


def _rewrite(path, change):
    """Rewrites the checkpoint at ``path`` with ``change(meta, arrays)`` applied, keeping the archive readable."""
    import json

    with np.load(path) as archive:
        arrays = {k: archive[k].copy() for k in archive.files}
    meta = json.loads(arrays["meta"].tobytes().decode())
    change(meta, arrays)
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("chunks_done", 1),
        ("chunks_done", 99),
        ("n_chunks", 3),
        ("fingerprint", "0" * 64),
        ("n_leaves", 1),
        ("extra", 1),
    ],
)
def test_every_checkpoint_field_is_covered_by_its_digest(german, tmp_path, field, value):
    X, y = german
    path = tmp_path / "d.ckpt"
    jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=250, checkpoint=path, checkpoint_every=2)
    _rewrite(path, lambda meta, arrays: meta.__setitem__(field, value))
    with pytest.raises(CheckpointError, match="corrupted|unreadable"):
        jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=250, checkpoint=path)


def test_checkpoint_of_the_previous_format_is_refused(german, tmp_path):
    from jcsol.checkpoint import file_digest

    X, y = german
    path = tmp_path / "old.ckpt"
    jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=500, checkpoint=path)

    def to_format_2(meta, arrays):  # format 2 carried a run's mistake cost without its rounding error
        meta["format"] = 2
        meta["digest"] = file_digest(meta, [arrays[f"leaf_{i}"] for i in range(meta["n_leaves"])])

    _rewrite(path, to_format_2)
    with pytest.raises(CheckpointError, match="format 2.*reads format 3"):
        jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=500, checkpoint=path)


def test_fingerprint_covers_the_key_with_explicit_orders_and_the_costs(german, tmp_path):
    X, y = german
    orders = np.stack([np.arange(len(y)), np.arange(len(y))[::-1]])
    path = tmp_path / "k.ckpt"
    jcsol.run(jcsol.COG(), X, y, perms=orders, key=0, chunk_size=500, checkpoint=path)
    with pytest.raises(CheckpointError, match="different run"):
        jcsol.run(jcsol.COG(), X, y, perms=orders, key=1, chunk_size=500, checkpoint=path)
    with pytest.raises(CheckpointError, match="different run"):
        jcsol.run(jcsol.COG(), X, y, perms=orders, key=0, chunk_size=500, checkpoint=path, costs=np.ones(len(y)))


def test_checkpoint_errors_come_before_the_run(german, tmp_path):
    X, y = german
    calls = []
    with pytest.raises(FileNotFoundError, match="does not exist"):
        jcsol.run(jcsol.COG(), X, y, perms=1, checkpoint=tmp_path / "missing" / "c.ckpt", on_chunk=calls.append)
    with pytest.raises(IsADirectoryError, match="is a directory"):
        jcsol.run(jcsol.COG(), X, y, perms=1, checkpoint=tmp_path, on_chunk=calls.append)
    path = tmp_path / "r.ckpt"
    jcsol.run(jcsol.COG(), X, y, perms=1, chunk_size=500, checkpoint=path)
    with pytest.raises(ValueError, match="record_scores needs every round"):
        jcsol.run(
            jcsol.COG(), X, y, perms=1, chunk_size=500, checkpoint=path, record_scores=True, on_chunk=calls.append
        )
    assert calls == []


def test_progress_bar_counts_the_rounds_of_the_run(small, capsys, tmp_path):
    X, y = small
    seen = []
    jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=50, progress=True, on_chunk=lambda c: seen.append(c.rounds_done))
    bar = capsys.readouterr().err
    assert "COG-I" in bar
    assert "200/200" in bar
    assert "round" in bar
    assert "100%" in bar
    assert seen == [50, 100, 150, 200]  # on_chunk is called as before
    path = tmp_path / "p.ckpt"

    def stop_after_three(chunk):
        if chunk.chunks_done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        jcsol.run(
            jcsol.COG(), X, y, perms=2, chunk_size=50, checkpoint=path, checkpoint_every=3, on_chunk=stop_after_three
        )
    capsys.readouterr()
    resumed = jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=50, checkpoint=path, progress=True)
    assert resumed.resumed_at == 150
    bar = capsys.readouterr().err
    frames = [frame for frame in bar.split("\r") if "/200" in frame]
    assert "150/200" in frames[0]
    assert "200/200" in frames[-1]  # the bar starts where the checkpoint ends


def test_progress_is_shown_by_default_on_a_terminal_or_in_a_kernel(small, capsys, monkeypatch):
    from jcsol import engine

    X, y = small
    assert not sys.stderr.isatty()
    jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=50)
    assert capsys.readouterr().err == ""  # neither a terminal nor a kernel: silent
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=50)
    assert "200/200" in capsys.readouterr().err
    jcsol.run(jcsol.COG(), X, y, perms=2)
    assert capsys.readouterr().err == ""  # one chunk: nothing to follow
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    monkeypatch.setattr(engine, "_in_notebook", lambda: True)
    jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=50)
    assert "200/200" in capsys.readouterr().err
    jcsol.run(jcsol.COG(), X, y, perms=2, chunk_size=50, progress=False)
    assert capsys.readouterr().err == ""


def test_kernel_is_told_from_a_terminal_ipython(monkeypatch):
    import types

    from jcsol.engine import _in_notebook

    class Shell:
        def __init__(self, config):
            self.config = config

    fake = types.ModuleType("IPython")
    monkeypatch.setitem(sys.modules, "IPython", fake)
    fake.get_ipython = lambda: Shell({"IPKernelApp": {"connection_file": "kernel.json"}})
    assert _in_notebook()  # Jupyter, Colab
    fake.get_ipython = lambda: Shell({"TerminalInteractiveShell": {}})
    assert not _in_notebook()  # IPython in a terminal
    fake.get_ipython = lambda: None
    assert not _in_notebook()  # IPython imported by a plain script
    monkeypatch.delitem(sys.modules, "IPython")
    assert not _in_notebook()


LAYOUT_RUN = textwrap.dedent("""
    import os, signal, sys
    import numpy as np, jcsol
    from jcsol.core.placement import devices_for
    X, y = jcsol.datasets.load("german")
    print(len(devices_for(3)), flush=True)
    def die(chunk):
        if chunk.chunks_done == int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)
    res = jcsol.run(jcsol.ACOG(eta=[0.1, 1.0, 10.0]), X, y, perms=3, key=7, curve_points=10, chunk_size=100,
                    checkpoint=sys.argv[1], checkpoint_every=2, on_chunk=die)
    np.savez(sys.argv[1] + ".npz", counts=res.counts, curve=res.curve, mu=res.states.mu, sigma=res.states.sigma,
             resumed_at=res.resumed_at)
""")


@pytest.mark.slow  # two child processes, one per device layout
def test_one_process_checkpoint_resumes_under_another_device_layout(german, tmp_path):
    # written with 3 permutations over 2 devices (padded to 4), resumed on 1 device: a one-process checkpoint
    # holds every run unpadded, whatever the layout
    path = tmp_path / "layout.ckpt"

    def launch(devices: int, die_after: int):
        env = dict(os.environ, JCSOL_CPU_DEVICES=str(devices))
        return subprocess.run(
            [sys.executable, "-c", LAYOUT_RUN, str(path), str(die_after)], capture_output=True, text=True, env=env
        )

    killed = launch(2, 5)
    assert killed.returncode == -9, killed.stderr
    assert killed.stdout.strip() == "2"  # devices the permutations are split over
    resumed = launch(1, 0)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == "1"
    got = np.load(f"{path}.npz")
    assert int(got["resumed_at"]) == 400
    X, y = german
    plain = jcsol.run(jcsol.ACOG(eta=[0.1, 1.0, 10.0]), X, y, perms=3, key=7, curve_points=10)
    np.testing.assert_array_equal(got["counts"], plain.counts)
    np.testing.assert_array_equal(got["curve"], plain.curve)
    np.testing.assert_array_equal(got["mu"], np.asarray(plain.states.mu))
    np.testing.assert_array_equal(got["sigma"], np.asarray(plain.states.sigma))
