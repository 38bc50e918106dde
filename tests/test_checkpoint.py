"""The one digest of an array tree and the one agreement on a saved generation across processes
(jcsol.checkpoint), checked against hashlib by hand and against a table of processes' shares."""

import hashlib
import json

import numpy as np
import pytest

from jcsol.checkpoint import CheckpointError, agreed_generation, file_digest, update_digest


def test_file_digest_is_sha256_of_the_fields_and_each_arrays_dtype_shape_and_bytes():
    meta = {"format": 3, "n": 2, "digest": "ignored"}
    arrays = [np.arange(4, dtype=np.int32), np.ones((2, 3), np.float32)]
    h = hashlib.sha256(json.dumps({"format": 3, "n": 2}, sort_keys=True).encode())
    for a in arrays:
        h.update(f"{a.dtype}{a.shape}".encode() + a.tobytes())
    assert file_digest(meta, arrays) == h.hexdigest()
    named = {"b": arrays[1], "a": arrays[0]}  # named arrays go in name order, each after its name
    h = hashlib.sha256(json.dumps({"format": 3, "n": 2}, sort_keys=True).encode())
    for name in ("a", "b"):
        h.update(f"{name}{named[name].dtype}{named[name].shape}".encode() + named[name].tobytes())
    assert file_digest(meta, named) == h.hexdigest()


def test_update_digest_tells_apart_arrays_of_the_same_bytes():
    digest = lambda arrays: update_digest(hashlib.sha256(), arrays).hexdigest()
    same_bytes = [np.zeros(4, np.int32)], [np.zeros(2, np.int64)], [np.zeros((2, 2), np.int32)]
    assert len({digest(a) for a in same_bytes}) == 3
    assert digest([np.arange(6).reshape(2, 3).T]) == digest([np.ascontiguousarray(np.arange(6).reshape(2, 3).T)])


class Processes:
    """A stand-in for jcsol.distributed.Spread: this process's values stacked with the other processes'."""

    def __init__(self, *others):
        self.others = others

    def agree(self, values, what):
        return np.array([values, *self.others], np.int64)


def agreed(spread, found, refusal=None):
    return agreed_generation(
        spread, found, refusal, name="ckpt", generations="chunks", what="test", error=CheckpointError, remedy="fix"
    )


def test_the_processes_take_the_latest_generation_every_one_holds():
    found = {3: "three", 2: "two"}
    assert agreed(Processes([0, 3, 2]), found) == "three"
    assert agreed(Processes([0, 2, 1]), found) == "two"  # the other process missed generation 3
    assert agreed(Processes([0, 0, 0]), {}) is None  # nobody holds a share: start over
    with pytest.raises(
        CheckpointError, match=r"ckpt: the processes hold shares of different chunks \(\[\[2, 3\], \[1\]\]"
    ):
        agreed(Processes([0, 1, 0]), found)


def test_one_refusal_is_every_processs_refusal():
    with pytest.raises(CheckpointError, match=r"ckpt: process\(es\) \[1\] refused their share"):
        agreed(Processes([1, 0, 0]), {3: "three"})
    mine = CheckpointError("my share is corrupted")
    with pytest.raises(CheckpointError, match="my share is corrupted"):
        agreed(Processes([0, 3, 0]), {}, mine)
