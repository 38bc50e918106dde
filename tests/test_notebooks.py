"""The notebooks run top to bottom (their code cells, with shell and magic lines left out)."""

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    assert cells, f"{path.name} has no code"
    namespace: dict = {}
    for cell in cells:
        source = "".join(line for line in cell["source"] if not line.lstrip().startswith(("%", "!")))
        exec(compile(source, f"{path.name}", "exec"), namespace)
    if path.name == "quickstart.ipynb":
        results = namespace["results"]
        assert set(results) == {"COG-I", "COG-II", "ACOG-I", "ACOG-II"}
        assert results["ACOG-I"].sum.mean() > results["COG-I"].sum.mean()
        assert namespace["fig"].axes[0].get_xlabel() == "examples seen"
