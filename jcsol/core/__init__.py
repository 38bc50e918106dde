"""The engine's core: what :func:`jcsol.run`, the live learner (:class:`jcsol.Live`) and the estimator share.

Private by package (as optax keeps ``optax/_src``): the names here are public to jcsol's modules, which import
them, and not part of jcsol's API, which may change them at any release.

- :mod:`jcsol.core.rounds`: a run's carry, its initial value and its round (:func:`~jcsol.core.rounds.run_round`),
  the same for every way of running it;
- :mod:`jcsol.core.chunks`: the chunk backends that loop over the rounds, in one registry —
  :mod:`jcsol.core.scan` (a chunk scanned, :func:`~jcsol.core.scan.scan_chunk`; the first rounds of a padded batch,
  :func:`~jcsol.core.scan.scan_prefix`) and :mod:`jcsol.core.triton` (a chunk in one GPU kernel);
- :mod:`jcsol.core.layout`: the memory layout of a carry's state vectors (configurations minor on sparse rows);
- :mod:`jcsol.core.placement`: runs as units over devices and processes, and back in the grid's order;
- :mod:`jcsol.core.checks`: the checks every entry point makes before any work (dtype, grid, memory);
- :mod:`jcsol.core.programs`: the rounds compiled for a placement, and the cache of compiled programs.
"""
