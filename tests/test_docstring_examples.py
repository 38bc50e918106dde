"""Every learner's docstring shows it at work: an example on the German data that ships with jcsol, with what it
measured, which ``pytest --doctest-modules`` (the default run, pyproject.toml) runs and compares."""

import doctest

import pytest

import jcsol
from jcsol.base import Learner

LEARNERS = [
    obj
    for name in jcsol.algorithms.__all__
    if isinstance(obj := getattr(jcsol.algorithms, name), type) and issubclass(obj, Learner)
]


def test_the_learners_are_found():
    assert len(LEARNERS) == len({type(make()) for make in jcsol.VARIANTS.values()} | set(LEARNERS))
    assert jcsol.ACOG in LEARNERS


@pytest.mark.parametrize("cls", LEARNERS, ids=lambda cls: cls.__name__)
def test_each_learner_runs_an_example_on_the_german_data(cls):
    tests = doctest.DocTestFinder(recurse=False).find(cls, cls.__name__, module=False)
    examples = [e for t in tests for e in t.examples]
    assert examples, f"{cls.__name__}'s docstring has no >>> example"
    source = "".join(e.source for e in examples)
    assert 'jcsol.datasets.load("german")' in source
    assert f"jcsol.{cls.__name__}(" in source
    assert examples[-1].want.strip(), "the example ends by showing what it measured"
    assert getattr(jcsol, cls.__name__) is cls  # the example's name for it is the class
