import numpy as np
import pytest

import jcsol
from jcsol.compiled import CompiledCache
from jcsol.core import programs


def test_cache_keeps_the_most_recently_used():
    cache = CompiledCache(maxsize=2)
    built = []

    def build(k):
        built.append(k)
        return k * 10

    assert cache.get_or_build("a", lambda: build(1))[0] == 10
    assert cache.get_or_build("b", lambda: build(2))[0] == 20
    assert cache.get_or_build("a", lambda: build(99)) == (10, 0.0)  # cached, and now the most recent
    cache.get_or_build("c", lambda: build(3))  # evicts b, the least recently used
    assert len(cache) == 2
    assert "a" in cache
    assert "c" in cache
    assert "b" not in cache
    assert built == [1, 2, 3]


@pytest.mark.parametrize("text", ["0", "-3", "many"])
def test_cache_size_from_the_environment_is_checked(monkeypatch, text):
    monkeypatch.setenv("JCSOL_COMPILED_CACHE", text)
    with pytest.raises(ValueError, match="JCSOL_COMPILED_CACHE must be a positive integer"):
        CompiledCache()


def test_engine_cache_is_bounded(monkeypatch, small):
    X, y = small
    monkeypatch.setattr(programs, "COMPILED", CompiledCache(maxsize=2))
    for rows in (50, 60, 70):  # three stream lengths: three signatures of init and advance
        jcsol.run(jcsol.COG(eta=1.0), X[:rows], y[:rows], perms=1)
    assert len(programs.COMPILED) == 2


def test_forbid_tracing_catches_a_new_compilation(small, forbid_tracing):
    X, y = small
    jcsol.run(jcsol.COG(eta=1.0), X, y, perms=1)
    forbid_tracing()
    jcsol.run(jcsol.COG(eta=0.5), X, y, perms=1, key=3)  # same signature: no trace
    with pytest.raises(AssertionError, match="traced"):
        jcsol.run(jcsol.COG(eta=np.array([0.5, 1.0])), X, y, perms=1)  # a grid: a new signature
