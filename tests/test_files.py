"""Files are written whole or not at all."""

import os

import numpy as np
import pytest

from jcsol import report
from jcsol.files import atomic_write


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="midway"):
        with atomic_write(target, "w") as fh:
            fh.write("half of the new")
            raise RuntimeError("midway")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.json"]
    with atomic_write(target, "w") as fh:
        fh.write("new")
    assert target.read_text() == "new" and os.listdir(tmp_path) == ["out.json"]


def test_json_that_cannot_be_written_leaves_the_file_untouched(tmp_path):
    target = tmp_path / "runs.json"
    report.write_json({"a": 1}, target)
    with pytest.raises(TypeError):
        report.write_json({"a": object()}, target)  # not JSON: refused before the file is touched
    assert target.read_text() == '{\n  "a": 1\n}\n'
    report.write_json({"nan": np.nan}, target)
    assert target.read_text() == '{\n  "nan": null\n}\n'
