"""Files are written whole or not at all."""

import os

import numpy as np
import pytest

import jcsol
from jcsol import cli, files, report
from jcsol.files import atomic_write


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")

    def fail_midway():
        with atomic_write(target, "w") as fh:
            fh.write("half of the new")
            raise RuntimeError("midway")

    with pytest.raises(RuntimeError, match="midway"):
        fail_midway()
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.json"]
    with atomic_write(target, "w") as fh:
        fh.write("new")
    assert target.read_text() == "new"
    assert os.listdir(tmp_path) == ["out.json"]


def test_json_that_cannot_be_written_leaves_the_file_untouched(tmp_path):
    target = tmp_path / "runs.json"
    report.write_json({"a": 1}, target)
    with pytest.raises(TypeError, match="JSON cannot hold"):
        report.write_json({"a": object()}, target)  # not JSON: refused before the file is touched
    assert target.read_text() == '{\n  "a": 1\n}\n'
    report.write_json({"nan": np.nan}, target)
    assert target.read_text() == '{\n  "nan": null\n}\n'


def _unwritable(monkeypatch, folder):
    """This suite may run as root, for whom every folder is writable: the permission answer is simulated."""
    real = os.access

    def access(path, mode, *args, **kwargs):
        if os.path.abspath(path) == os.path.abspath(folder) and mode & os.W_OK:
            return False
        return real(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)


def test_unwritable_folders_are_refused_before_any_work(monkeypatch, tmp_path, german, capsys, forbid_tracing):
    folder = tmp_path / "locked"
    folder.mkdir()
    _unwritable(monkeypatch, folder)
    forbid_tracing()  # nothing may be compiled
    X, y = german
    with pytest.raises(PermissionError, match="not writable"):
        jcsol.run(jcsol.COG(eta=1.0), X, y, perms=1, checkpoint=folder / "run.ckpt")
    with pytest.raises(PermissionError, match="not writable"):
        jcsol.datasets.fetch("german.numer", cache_dir=folder)
    source = tmp_path / "tiny.svm"
    source.write_text("+1 1:0.5 3:1\n-1 2:1\n")
    with pytest.raises(PermissionError, match="not writable"):
        jcsol.datasets.RowStore.build(source, folder / "store")
    assert cli.main(["run", "--data", "german", "--perms", "2", "--csv", str(folder / "out.csv")]) == 2
    assert "not writable" in capsys.readouterr().err


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, MemoryError])
def test_an_interrupted_write_leaves_no_temporary(tmp_path, interruption):
    target = tmp_path / "out.bin"

    def interrupt_midway():
        with atomic_write(target) as fh:
            fh.write(b"half")
            raise interruption()

    with pytest.raises(interruption):
        interrupt_midway()
    assert os.listdir(tmp_path) == []


def test_a_target_where_nothing_can_be_written_is_named_before_the_temporary_is_made(tmp_path):
    for target, error, match in [
        (tmp_path, IsADirectoryError, f"file {tmp_path} is a directory"),
        (tmp_path / "absent" / "out.bin", FileNotFoundError, f"file {tmp_path / 'absent' / 'out.bin'}: folder"),
    ]:
        with pytest.raises(error, match=match):
            with atomic_write(target) as fh:
                pytest.fail(f"opened {fh.name}")
    assert os.listdir(tmp_path) == []


def test_stale_temporaries_of_dead_writers_of_this_host_are_removed(tmp_path):
    host = files.socket.gethostname()
    dead = 2**22 + 12345  # above Linux's largest pid: no such process
    stale = tmp_path / f"out.bin.tmp-{host}-{dead}-7"
    mine = tmp_path / f"out.bin.tmp-{host}-{os.getpid()}-7"
    foreign = tmp_path / "out.bin.tmp-elsewhere-7-7"
    for each in (stale, mine, foreign):
        each.write_bytes(b"torn")
    assert files.remove_stale_temporaries(tmp_path / "out.bin") == [stale.name]
    with atomic_write(tmp_path / "out.bin") as fh:
        fh.write(b"whole")
    assert sorted(os.listdir(tmp_path)) == sorted(["out.bin", mine.name, foreign.name])
