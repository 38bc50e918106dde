"""The notebooks run top to bottom (their code cells, with shell and magic lines left out)."""

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


# the quickstart in the default run; the longer notebooks in the slow tier
@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=[] if p.name == "quickstart.ipynb" else [pytest.mark.slow]) for p in NOTEBOOKS],
    ids=lambda p: p.name,
)
def test_notebook_runs(path, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    assert cells, f"{path.name} has no code"
    namespace: dict = {}
    for cell in cells:
        source = "".join(line for line in cell["source"] if not line.lstrip().startswith(("%", "!")))
        exec(compile(source, f"{path.name}", "exec"), namespace)
    assert namespace.get("FULL") is False, f"{path.name} must run its small settings by default (FULL = False)"
    if path.name == "quickstart.ipynb":
        results = namespace["results"]
        assert set(results) == {"COG-I", "COG-II", "ACOG-I", "ACOG-II"}
        assert results["ACOG-I"].sum.mean() > results["COG-I"].sum.mean()
        assert namespace["fig"].axes[0].get_xlabel() == "examples seen"
    if path.name == "reproduce_acog.ipynb":
        rep = namespace["rep"]
        german = {r.learner: r for r in rep.rows if r.dataset == "german"}
        assert set(german) == {"COG-I", "ACOG-I"}
        assert german["ACOG-I"].paper == 63.150 and german["COG-I"].paper == 54.424  # the ACOG paper's Table II
        assert german["ACOG-I"].mean > german["COG-I"].mean  # as published
        assert any("covtype" in n for n in rep.notes)
        ax = namespace["fig"].axes[0]
        assert ax.get_xlabel() == "examples seen" and len(ax.lines) == 2
    if path.name == "live_fraud.ipynb":
        board, n = namespace["board"], namespace["N"]
        assert board.events == n == namespace["labelled"] and board.pending == 0 and board.evicted == 0
        assert board.served_sum > 0.7  # the served stream finds most frauds, across the drift,
        assert board.served_sum > board.sum.max() - 0.03  # within 3 points of the best η in hindsight
        assert len(set(namespace["history"]["served"])) > 1
        assert namespace["fig"].axes[1].get_xlabel() == "payments seen"
