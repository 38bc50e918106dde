"""Grids: a :func:`jcsol.paired` grid is recorded on the learner, so that copies of its arrays stay paired and
arrays paired by no one are refused (:func:`jcsol.grids.check_grid`, which every run calls first)."""

import copy
import pickle

import jax
import numpy as np
import pytest

import jcsol
from jcsol.grids import check_grid

SAME_AXIS = "vary along the same grid axis 0"


@pytest.fixture
def pair():
    return jcsol.paired(jcsol.ACOG(diagonal=True), eta=[0.1, 1.0, 10.0], gamma=[0.5, 1.0, 2.0])


def test_copies_of_a_paired_grid_stay_paired(pair):
    copies = [
        pair.replace(eta=np.array(pair.eta), gamma=np.array(pair.gamma)),  # new arrays, no view of any other
        pair.replace(eta=pair.eta[:, None], gamma=pair.gamma[:, None]),
        copy.deepcopy(pair),
        pickle.loads(pickle.dumps(pair)),
    ]
    for each in [pair, *copies]:
        check_grid(each)
    np.testing.assert_array_equal(copies[0].eta, [0.1, 1.0, 10.0])


def test_arrays_that_no_paired_call_made_are_refused(pair):
    by_hand = jcsol.ACOG(diagonal=True, eta=np.array(pair.eta), gamma=np.array(pair.gamma))
    with pytest.raises(ValueError, match=SAME_AXIS):
        check_grid(by_hand)
    with pytest.raises(ValueError, match=SAME_AXIS):  # one side of the pair replaced alone
        check_grid(pair.replace(gamma=[4.0, 5.0, 6.0]))
    with pytest.raises(ValueError, match=SAME_AXIS):  # rebuilt from its leaves, as a transformation does
        check_grid(jax.tree.map(np.array, pair))


def test_a_paired_grid_and_a_product_with_it(pair):
    """A pairing and a third field on an axis of its own are a product; on the same axis they clash."""
    with_third = pair.replace(new_sigma=[[0.0], [1.0]])  # shape (2, 1) against the pair's (3,)
    check_grid(with_third)
    with pytest.raises(ValueError, match=SAME_AXIS):
        check_grid(pair.replace(new_sigma=[0.0, 0.5, 1.0]))


def test_paired_refuses_what_it_cannot_pair():
    with pytest.raises(ValueError, match="same number of values in every field, got eta: 2, gamma: 3"):
        jcsol.paired(jcsol.ACOG(), eta=[0.1, 1.0], gamma=[0.5, 1.0, 2.0])
    with pytest.raises(ValueError, match=r"ACOG has no hyperparameter \['lr'\]"):
        jcsol.paired(jcsol.ACOG(), eta=[0.1, 1.0], lr=[0.5, 1.0])
