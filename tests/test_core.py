"""The engine's core (:mod:`jcsol.core`) through its public names: the rounds over a prefix against the scan, and
the units' placement against NumPy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jcsol
from jcsol.core import checks, placement, rounds, scan


def _carry_and_args(X, y, learner, n_units, rounds_):
    grid_shape, flat, objective = checks.flatten_grid(learner, jcsol.Sum(), np.float32)
    keys = jax.random.split(jax.random.key(0), n_units)
    carry = rounds.init_carry(flat, keys, n_grid=int(np.prod(grid_shape)), n_curve=0, d=X.shape[1], dtype=np.float32)
    rng = np.random.default_rng(1)
    idx = jnp.asarray(rng.integers(0, len(y), size=(n_units, rounds_)), jnp.int32)
    none = jnp.zeros(n_units, jnp.int32)
    data = (jnp.asarray(X), jnp.asarray(y, jnp.float32), None)
    return carry, (flat, objective, data, none, none), idx


@pytest.mark.parametrize("learner", [jcsol.ACOG(eta=np.array([0.1, 1.0])), jcsol.PA()], ids=lambda lr: lr.name)
def test_a_prefix_of_a_padded_batch_is_the_scan_of_the_prefix_bit_for_bit(german, learner):
    X, y = german
    carry, args, idx = _carry_and_args(X[:200], y[:200], learner, n_units=2, rounds_=24)
    length = 17
    scanned, scores = scan.scan_chunk(carry, *args, idx[:, :length], jnp.zeros(length, jnp.int32), d=X.shape[1])
    prefix, padded_scores = jax.jit(scan.scan_prefix, static_argnames="d")(
        carry, *args, idx, jnp.zeros(24, jnp.int32), d=X.shape[1], length=jnp.int32(length)
    )
    for a, b in zip(jax.tree.leaves(scanned), jax.tree.leaves(prefix)):
        np.testing.assert_array_equal(np.asarray(b), np.asarray(a))
    np.testing.assert_array_equal(np.asarray(padded_scores)[..., :length], np.asarray(scores))
    assert not np.asarray(padded_scores)[..., length:].any()  # the padded rounds never ran
    assert np.asarray(prefix.counts).sum() == 2 * np.prod(scores.shape[1:-1]) * length


def test_the_grid_in_blocks_comes_back_in_the_grids_order():
    """Units hold blocks of grid points (the last padded with copies of the last point); laid out again in the
    grid's order, every permutation sees every point once, the padding dropped."""
    grid, n_perm, blocks = np.arange(5.0), 3, 2
    block = -(-grid.size // blocks)
    units = placement.blocked(grid, n_perm, blocks, block)  # (n_perm * blocks, block)
    assert units.shape == (6, 3)
    np.testing.assert_array_equal(units[1], [3.0, 4.0, 4.0])
    back = placement.grid_major(units, (5,), n_perm, blocks)
    np.testing.assert_array_equal(back, np.repeat(grid[:, None], n_perm, axis=1))
    padded = placement.pad_runs((units,), n_devices=4, at_least=2)[0]
    assert padded.shape[0] == 8
    np.testing.assert_array_equal(np.asarray(padded[6:]), np.repeat(units[-1:], 2, axis=0))


@pytest.mark.parametrize(("grid_blocks", "match"), [(4, r"one of 1, 2, 3, 5; got 4"), (True, r"got True")])
def test_grid_blocks_that_leave_a_block_empty_are_refused(grid_blocks, match):
    with pytest.raises(ValueError, match=match):
        checks.check_grid_blocks(grid_blocks, 5)


def test_arrays_with_no_elements_do_not_cross_the_split():
    """``placement.sharded`` gives ``fn`` and takes from it arrays with no elements as zeros made on each side: the
    ``shard_map`` carries none (jaxlib 0.11.2's CPU compiler crashed on one), and the results are ``fn``'s."""
    devices = tuple(jax.devices()[:2])
    if len(devices) < 2:
        pytest.skip("needs 2 devices")
    split = jax.sharding.PartitionSpec("runs")

    def fn(a, empty):
        return a * 2, empty + 1, jnp.zeros((a.shape[0], 0, 4), jnp.int32)

    program = jax.jit(placement.sharded(fn, devices, (split, split)))
    a, empty = jnp.arange(8.0).reshape(4, 2), jnp.zeros((4, 0, 3))
    doubled, same, made = program(a, empty)
    np.testing.assert_array_equal(doubled, np.arange(8.0).reshape(4, 2) * 2)
    assert (same.shape, same.dtype, made.shape, made.dtype) == ((4, 0, 3), empty.dtype, (4, 0, 4), jnp.int32)
    crossing = [line for line in program.lower(a, empty).as_text().splitlines() if "manual_computation" in line]
    assert len(crossing) == 1
    assert "tensor<2x2xf32>" in crossing[0]
    assert "x0x" not in crossing[0]
