"""A chunk of rounds reads the stream where it lies: no copy of the whole row array per chunk, on any path.

A chunk whose rows lie elsewhere than its compiled program expects them (on the default device alone, when the
runs are split over two) has them copied to the program's devices at every call; a program that pads or
re-lays its rows copies them inside. Either makes a run's cost grow as rows² / chunk. The checks here read what
decides it — the placed rows' shardings against the compiled program's, the program's temporary memory, the
lowered program's operations on the rows — not a timing.
"""

import re

import jax
import numpy as np
import pytest
import scipy.sparse

import jcsol
from jcsol.core import placement, programs, scan


def _chunks_compiled(monkeypatch, learner, X, y, **kw):
    """Runs ``jcsol.run`` and returns every ``(compiled chunk, its arguments)`` it called."""
    seen = []
    compiled_chunk = programs.compiled_chunk

    def spy(carry_shape, args, **options):
        fn, seconds = compiled_chunk(carry_shape, args, **options)
        seen.append((fn, args))
        return fn, seconds

    monkeypatch.setattr(programs, "compiled_chunk", spy)
    jcsol.run(learner, X, y, **kw)
    return seen


@pytest.fixture(scope="module")
def stream():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(20_000, 48)).astype(np.float32)
    X[rng.random(X.shape) < 0.8] = 0
    return X, np.where(rng.random(20_000) < 0.2, 1, -1)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("devices", [1, 2])
def test_the_rows_lie_where_the_chunk_reads_them(monkeypatch, stream, sparse, devices):
    """Every leaf of the stream (rows, labels, costs) passed to a compiled chunk has the sharding the chunk was
    compiled for, so the call moves nothing; and the chunk holds no temporary the size of the rows."""
    if len(jax.local_devices()) < devices:
        pytest.skip(f"needs {devices} devices")
    X, y = stream
    rows = scipy.sparse.csr_matrix(X) if sparse else X
    costs = np.linspace(0.5, 1.5, len(y)).astype(np.float32)
    seen = _chunks_compiled(
        monkeypatch, jcsol.COG(eta=jcsol.decades()), rows, y, perms=devices, chunk_size=3000, costs=costs
    )
    assert len(seen) == -(-len(y) // 3000)
    for fn, args in seen:
        data = args[2]
        expected = jax.tree.leaves(fn.input_shardings[0][3])
        placed = jax.tree.leaves(data)
        assert len(placed) == len(expected) == (4 if sparse else 3)
        for leaf, sharding in zip(placed, expected):
            assert len(leaf.sharding.device_set) == devices
            assert leaf.sharding.is_equivalent_to(sharding, leaf.ndim), (leaf.shape, leaf.sharding, sharding)
        rows_bytes = sum(a.nbytes for a in jax.tree.leaves(data[0]))
        assert fn.memory_analysis().temp_size_in_bytes < rows_bytes / 4


def _pointers(array: jax.Array) -> list[int]:
    return [shard.data.unsafe_buffer_pointer() for shard in array.addressable_shards]


@pytest.mark.parametrize("devices", [1, 2])
def test_cpu_devices_read_large_rows_where_they_lie_one_buffer_for_all(devices):
    """An aligned host array placed whole is read in place by every CPU device (no copy at all); another is
    copied once, into aligned memory that every device reads, rather than once per device. Small arrays are
    placed as JAX places them."""
    if len(jax.local_devices()) < devices:
        pytest.skip(f"needs {devices} devices")
    place = placement.Local(tuple(jax.local_devices()[:devices]))
    rows = np.random.default_rng(0).standard_normal((4096, 123), dtype=np.float32)  # 2 MB
    aligned = placement.aligned(rows, copy=True)
    assert aligned.ctypes.data % placement.CPU_ALIGNMENT == 0
    assert placement.aligned(aligned) is aligned
    buffer = np.empty(rows.nbytes + 64, np.uint8)
    start = (16 - buffer.ctypes.data) % 64  # 16 bytes past a multiple of 64, as NumPy often allocates
    unaligned = buffer[start : start + rows.nbytes].view(np.float32).reshape(rows.shape)
    unaligned[...] = rows
    assert unaligned.ctypes.data % placement.CPU_ALIGNMENT != 0

    in_place = place.whole(aligned)
    assert _pointers(in_place) == [aligned.ctypes.data] * devices
    copied = place.whole(unaligned)
    pointers = _pointers(copied)
    assert len(set(pointers)) == 1
    assert pointers[0] != unaligned.ctypes.data
    assert pointers[0] % placement.CPU_ALIGNMENT == 0
    for placed in (in_place, copied):
        assert placed.shape == rows.shape
        for shard in placed.addressable_shards:
            np.testing.assert_array_equal(np.asarray(shard.data), rows)
    small = place.whole(np.arange(10, dtype=np.int32))
    np.testing.assert_array_equal(np.asarray(small), np.arange(10))


def test_a_streams_rows_are_placed_without_a_copy(monkeypatch):
    """A :class:`jcsol.Stream`'s own copy of the rows is aligned: the chunks read it where it lies."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((6000, 64), dtype=np.float32)
    stream = jcsol.Stream(X, np.where(rng.random(6000) < 0.2, 1, -1))
    assert stream.X.ctypes.data % placement.CPU_ALIGNMENT == 0
    assert not stream.X.flags.writeable
    seen = _chunks_compiled(monkeypatch, jcsol.COG(eta=jcsol.decades()), stream, None, perms=2, chunk_size=3000)
    for _, args in seen:
        assert set(_pointers(args[2][0])) == {stream.X.ctypes.data}


def test_the_kernel_reads_rows_padded_once():
    """The kernel's chunk, lowered for CUDA, takes rows already padded to its power-of-2 features and makes no
    array of the rows' size (a pad inside the chunk copied the whole stream at every call)."""
    n, d = 50, 9
    lowered = programs.lowered_chunk(jcsol.COG(eta=1.0), path=jcsol.Kernel(interpret=False), d=d, rounds=n)
    text = lowered.as_text()
    assert text.count("__gpu$xla.gpu.triton") == 1
    main = next(line for line in text.splitlines() if "func.func public @main" in line)
    assert f"tensor<{n}x16xf32>" in main  # the rows, padded from 9 to 16 features before the call
    made = [
        line
        for line in text.splitlines()
        if re.search(rf"(->|=)\s*[^,]*tensor<{n}x(9|16)xf32>\s*$", line.strip()) and "func.func" not in line
    ]
    assert not made, made


def test_the_kernel_path_places_padded_rows(monkeypatch, stream):
    """On the kernel path (Pallas' interpreter here) the placed rows are the padded ones, and the run equals the
    run of rows padded by hand with zeros: the padding changes no score."""
    X, y = stream
    X, y = X[:300, :9], y[:300]
    learner = jcsol.COG(eta=[0.1, 1.0])
    seen = _chunks_compiled(monkeypatch, learner, X, y, perms=2, chunk_size=128, path=jcsol.Kernel())
    assert {args[2][0].shape for _, args in seen} == {(300, 16)}
    by_hand = jcsol.run(learner, np.pad(X, ((0, 0), (0, 7))), y, perms=2, chunk_size=128, path=jcsol.Kernel())
    padded = jcsol.run(learner, X, y, perms=2, chunk_size=128, path=jcsol.Kernel())
    np.testing.assert_array_equal(padded.counts, by_hand.counts)
    np.testing.assert_array_equal(np.asarray(padded.states.w), np.asarray(by_hand.states.w)[..., :9])


def test_gathered_rounds_bounded():
    """A block of gathered rows holds at most :data:`jcsol.core.scan.GATHER_BYTES` (one round's rows at least),
    and never more rounds than the chunk."""
    assert scan.gathered_rounds(20, 4 * 123, 16_384) == scan.GATHER_BYTES // (20 * 4 * 123)
    assert scan.gathered_rounds(1, 4 * 123, 16_384) == scan.GATHER_ROUNDS
    assert scan.gathered_rounds(4, 4 * 123, 7) == 7
    assert scan.gathered_rounds(64, 4 * 10**6, 16_384) == 1
