"""The learner contract's dataclasses: JAX rebuilds them without their constructor, which is therefore strict.

Every registered variant's pytree is checked against a twin registered with ``jax.tree_util.register_dataclass``
(the independent implementation): same printed structure (a checkpoint's fingerprint hashes it), same key paths,
same leaves.
"""

import copy
import dataclasses
import pickle
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jcsol
from jcsol.base import in_dtype


def _register_dataclass_twin(obj):
    """An instance of a plain frozen dataclass of ``obj``'s class name and fields, registered by JAX's own
    ``register_dataclass``, holding ``obj``'s values."""
    fields = dataclasses.fields(obj)
    twin = dataclasses.make_dataclass(
        type(obj).__name__, [(f.name, Any, dataclasses.field(metadata=f.metadata)) for f in fields], frozen=True
    )
    jax.tree_util.register_dataclass(
        twin,
        data_fields=[f.name for f in fields if not f.metadata.get("static")],
        meta_fields=[f.name for f in fields if f.metadata.get("static")],
    )
    return twin(**{f.name: getattr(obj, f.name) for f in fields})


@pytest.mark.parametrize("name", sorted(jcsol.VARIANTS))
def test_tree_is_that_of_register_dataclass(name):
    learner = jcsol.by_name(name)
    twin = _register_dataclass_twin(learner)
    assert repr(jax.tree.structure(learner)) == repr(jax.tree.structure(twin))
    paths, twin_paths = jax.tree_util.tree_flatten_with_path(learner)[0], jax.tree_util.tree_flatten_with_path(twin)[0]
    assert [p for p, _ in paths] == [p for p, _ in twin_paths]
    assert [v for _, v in paths] == [v for _, v in twin_paths]
    rebuilt = jax.tree.unflatten(jax.tree.structure(learner), jax.tree.leaves(learner))
    assert type(rebuilt) is type(learner)
    assert rebuilt == learner
    assert pickle.loads(pickle.dumps(learner)) == learner


def test_rebuilt_from_leaves_without_the_constructor():
    """Values the constructor refuses (placeholders of a transformation) pass through tree operations."""
    learner = jcsol.ACOG(eta=[0.1, 1.0])
    placeholders = jax.tree.map(lambda _: None, learner)
    assert placeholders.eta is None
    assert placeholders.gamma is None
    assert placeholders.loss == "I"
    assert jax.tree.map(lambda v: -v, learner).eta.tolist() == [-0.1, -1.0]
    in_axes = jax.tree.map(lambda v: 0 if np.ndim(v) else None, learner)
    etas = jax.vmap(lambda each: each.eta * each.gamma, in_axes=(in_axes,))(learner)
    np.testing.assert_allclose(etas, [0.1, 1.0])
    with pytest.raises(ValueError, match="ACOG: eta must be > 0"):
        learner.replace(eta=-1.0)


def test_constructor_takes_traced_values():
    assert float(jax.jit(lambda eta: jcsol.COG(eta=eta).eta * 2)(0.25)) == 0.5


@pytest.mark.parametrize(
    ("value", "got"),
    [
        (None, "got None$"),
        (object(), "got object <object"),
        ("0.1", "got str '0.1'"),
        (True, "got bool True"),
        (1j, "got complex 1j"),
        (np.array(["a"]), "got dtype <U1"),
        (jnp.array([True, False]), "got dtype bool"),
        ([None, 1.0], "got dtype object"),
    ],
)
def test_constructor_refuses_what_is_not_a_real_number(value, got):
    with pytest.raises(TypeError, match=f"COG: eta must be a real number or an array of real numbers, {got}"):
        jcsol.COG(eta=value)
    with pytest.raises(TypeError, match=f"Sum: alpha_p must be a real number or an array of real numbers, {got}"):
        jcsol.Sum(alpha_p=value)


def test_replace_keeps_a_pairing_only_while_its_fields_change_together():
    pair = jcsol.paired(jcsol.ACOG(), eta=[0.1, 1.0], gamma=[1.0, 2.0])
    assert pair.pairings == (frozenset({"eta", "gamma"}),)
    assert pair.replace(loss="II").pairings == pair.pairings
    assert pair.replace(eta=[0.2, 2.0], gamma=[1.0, 3.0]).pairings == pair.pairings
    assert pair.replace(eta=[0.2, 2.0]).pairings == ()
    assert copy.deepcopy(pair).pairings == pickle.loads(pickle.dumps(pair)).pairings == pair.pairings
    assert jcsol.ACOG().pairings == ()


@pytest.mark.parametrize(
    ("learner", "objective", "error"),
    [
        (jcsol.COG(eta=1e-46), None, r"COG: eta must be > 0, got array\(0\., dtype=float32\) \(float32 rounds"),
        (jcsol.ACOG(gamma=1e39), None, "ACOG: gamma must be finite, got array\\(inf"),
        (jcsol.COG(), jcsol.Sum(alpha_p=1 - 1e-10), r"Sum: alpha_p must be in \(0, 1\), got array\(1\."),
    ],
)
def test_values_are_checked_again_in_the_runs_dtype(learner, objective, error):
    """Valid as given, 0, infinite or 1 once cast to float32: refused by the run (and the live learner)
    before any work, as the constructor would refuse the value cast."""
    X, y = np.eye(4), np.array([1, -1, 1, -1])
    with pytest.raises(ValueError, match=f"the hyperparameters in float32: {error}"):
        jcsol.run(learner, X, y, perms=1, objective=objective)
    with pytest.raises(ValueError, match=error):
        in_dtype(objective if objective is not None else learner, np.float32)
    kept = in_dtype(learner.replace(eta=[0.5, 2.0]), np.float64)
    assert kept.eta.dtype == np.float64
    assert kept.eta.tolist() == [0.5, 2.0]
