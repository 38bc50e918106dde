"""The notebooks as users meet them on Colab: each runs top to bottom, its install cell included, in a fresh Python
environment where jcsol is missing, and gets jcsol from a wheel of this working tree served from a local folder, as a
package index would serve it.

The fresh environment is a virtual environment that sees this one's packages (jax, jaxlib, numpy, matplotlib, …)
through a site folder of links to them, jcsol's left out, so that ``import jcsol`` fails there, pip counts jax as
installed, and what pip installs lands in the new environment alone (this one is never touched). The notebooks' code
cells are plain Python (no shell or magic lines): they run as they are, one after the other in one namespace, in a
child process of that environment's interpreter, which then reports the values the tests check.
"""

import gzip
import importlib.metadata
import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from conftest import shared_data

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
KEPT = ("jax", "jaxlib")  # what the install cell must leave as it found it

# runs the cells of argv[1] (JSON: the cells, the code that sets `probe`, a dict, the file to write `probe` to as
# JSON, the distributions whose versions to add to it)
RUNNER = """
import importlib.metadata, json, sys
cells, probe_code, out, kept = json.load(open(sys.argv[1]))
namespace = {"__name__": "__main__"}
for number, cell in enumerate(cells):
    exec(compile(cell, f"code cell {number}", "exec"), namespace)
exec(probe_code, namespace)
probe = namespace["probe"]
import jcsol
probe["jcsol_file"] = jcsol.__file__
import jax
probe["backend"] = jax.default_backend()
probe["versions"] = {name: importlib.metadata.version(name) for name in kept}
json.dump(probe, open(out, "w"))
"""

# what each notebook's run must show (its namespace's values, as plain data)
PROBES = {
    "quickstart.ipynb": """probe = {
    "FULL": FULL, "learners": sorted(results), "seconds": seconds, "xlabel": fig.axes[0].get_xlabel(),
    "sum": {name: float(r.sum.mean()) for name, r in results.items()}}""",
    "reproduce_acog.ipynb": """probe = {
    "FULL": FULL, "datasets": sorted({r.dataset for r in rep.rows}), "notes": rep.notes, "data_dir": str(DATA_DIR),
    "german": {r.learner: [float(r.paper), float(r.mean)] for r in rep.rows if r.dataset == "german"},
    "xlabel": fig.axes[0].get_xlabel(), "lines": len(fig.axes[0].lines)}""",
    "live_fraud.ipynb": """probe = {
    "FULL": FULL, "N": N, "labelled": labelled, "events": int(board.events), "pending": int(board.pending),
    "evicted": int(board.evicted), "served_sum": float(board.served_sum), "best_sum": float(board.sum.max()),
    "served": len(set(int(s) for s in history["served"])), "xlabel": fig.axes[1].get_xlabel()}""",
}


def code_cells(path: Path) -> list[str]:
    return [
        "".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"
    ]


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    """A folder holding a wheel of the working tree (``pip wheel --no-deps``), served as ``--find-links``. The wheel
    is built from a copy of the files it is made of, so that the build writes nothing into the working tree."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "jcsol", source / "jcsol", ignore=shutil.ignore_patterns("__pycache__"))
    folder = tmp_path_factory.mktemp("wheels")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(folder), str(source)],
        check=True,
        capture_output=True,
    )
    assert [p.name for p in folder.glob("jcsol-*.whl")], "no wheel of jcsol was built"
    return folder


@pytest.fixture(scope="module")
def packages(tmp_path_factory) -> Path:
    """This environment's packages without jcsol: a folder of links to every entry of its site folders but
    jcsol's (its .dist-info, the editable install's path hook)."""
    folder = tmp_path_factory.mktemp("packages")
    for directory in filter(os.path.isdir, site.getsitepackages()):
        for entry in sorted(Path(directory).iterdir()):
            if "jcsol" not in entry.name.lower() and not (folder / entry.name).exists():
                (folder / entry.name).symlink_to(entry)
    return folder


class Env:
    """A fresh virtual environment that sees ``packages`` as a site folder after its own."""

    def __init__(self, root: Path, packages: Path):
        venv.EnvBuilder(with_pip=False).create(root)
        self.root = root
        self.python = root / "bin" / "python"
        query = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        self.purelib = Path(
            subprocess.run([self.python, "-c", query], check=True, capture_output=True, text=True).stdout.strip()
        )
        (self.purelib / "packages.pth").write_text(f"import site; site.addsitedir({str(packages)!r})\n")

    def installed_here(self) -> list[str]:
        """The distributions installed into this environment itself (not seen through ``packages``)."""
        return sorted(p.name.split("-")[0].lower() for p in self.purelib.glob("*.dist-info"))

    def run(self, cells: list[str], probe: str, *, pip_source: str, env: dict | None = None, check: bool = True):
        """Runs ``cells`` in a child process (cwd: a folder of the environment, so that no ``jcsol`` folder is on
        its path); returns its probe (``None`` when it failed) and its output."""
        work = self.root / "work"
        work.mkdir(exist_ok=True)
        (work / "job.json").write_text(json.dumps([cells, probe, str(work / "probe.json"), KEPT]))
        (work / "probe.json").unlink(missing_ok=True)
        child = {
            k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k not in ("PYTHONPATH", "JCSOL_DATA")
        }
        child.update(PIP_CONFIG_FILE=os.devnull, MPLBACKEND="Agg", JCSOL_PIP_SOURCE=pip_source, **(env or {}))
        done = subprocess.run(
            [self.python, "-c", RUNNER, str(work / "job.json")],
            cwd=work,
            env=child,
            capture_output=True,
            text=True,
            timeout=900,
        )
        output = done.stdout + done.stderr
        if check:
            assert done.returncode == 0, output[-6000:]
        return (json.loads((work / "probe.json").read_text()) if done.returncode == 0 else None), output


def versions() -> dict[str, str]:
    return {name: importlib.metadata.version(name) for name in KEPT}


def stub_wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    """A wheel of metadata alone (PEP 427: a zip with the package's .dist-info folder)."""
    info = f"{name}-{version}.dist-info"
    files = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{path},,\n" for path in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(folder / f"{name}-{version}-py3-none-any.whl", "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)


def run_in(env: Env, code: str) -> str:
    """What ``code`` prints, run by the environment's python in its folder (no ``jcsol`` folder on its path)."""
    done = subprocess.run([env.python, "-c", code], cwd=env.root, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def test_cells_run_as_they_are_and_share_the_install_and_device_cells():
    first = {path.name: code_cells(path)[:2] for path in NOTEBOOKS}
    assert set(first) == set(PROBES)
    install, device = first["quickstart.ipynb"]
    assert "import jcsol" not in install
    assert "find_spec" in install
    assert "git+https://github.com/jcsol/jcsol" in install
    assert "jax.devices()" in device
    for path in NOTEBOOKS:
        assert first[path.name] == [install, device], f"{path.name}: its first two code cells differ from quickstart's"
        cells = code_cells(path)
        assert not [line for cell in cells for line in cell.splitlines() if line.lstrip().startswith(("%", "!"))]
        badge = f"https://colab.research.google.com/github/jcsol/jcsol/blob/main/notebooks/{path.name}"
        assert badge in "".join(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"])
        assert badge in (ROOT / "README.md").read_text(encoding="utf-8")


def test_install_cell_keeps_jax_when_jcsol_needs_another(tmp_path, packages):
    """A jcsol that needs a jax the local index has (a newer one) is refused, with the way out, not installed over
    the runtime's jax: pip gets the installed jax and jaxlib as constraints."""
    index = tmp_path / "index"
    index.mkdir()
    stub_wheel(index, "jcsol", "99.0", ("jax>=99",))
    stub_wheel(index, "jax", "99.0")
    env = Env(tmp_path / "env", packages)
    install = code_cells(NOTEBOOKS[0])[0]
    probe, output = env.run([install], "probe = {}", pip_source=f"--no-index --find-links {index} jcsol", check=False)
    assert probe is None, output[-3000:]
    assert "jcsol was not installed; this runtime's jax stays as it was" in output, output[-3000:]
    assert "upgrade jax with its plugins together" in output
    assert env.installed_here() == []
    assert run_in(env, "import importlib.metadata as m; print(m.version('jax'), m.version('jaxlib'))") == " ".join(
        versions().values()
    )


def test_install_cell_says_no_source_has_jcsol_rather_than_blaming_jax(tmp_path, packages):
    """A source without jcsol (an empty folder of wheels, as a package index that has none) fails with what is
    missing and how to install it; jax, left as it was, is not named as the cause."""
    empty = tmp_path / "empty"
    empty.mkdir()
    env = Env(tmp_path / "env", packages)
    install = code_cells(NOTEBOOKS[0])[0]
    probe, output = env.run([install], "probe = {}", pip_source=f"--no-index --find-links {empty} jcsol", check=False)
    assert probe is None, output[-3000:]
    assert "No matching distribution found for jcsol" in output  # pip's own words, shown
    assert "jcsol was not installed: no source has it (no jcsol package found in --no-index --find-links" in output
    assert "%pip install jcsol" in output
    assert "JCSOL_PIP_SOURCE" in output
    assert "upgrade jax" not in output
    assert "jax stays as it was" not in output
    assert env.installed_here() == []


def test_install_cell_reads_pips_failures():
    """The install cell's reading of pip's output, on the failures a runtime meets: no jcsol in the index or no
    network, a repository git cannot fetch, a jcsol needing another jax, anything else."""
    namespace: dict = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(importlib.util, "find_spec", lambda name: object())  # jcsol "installed": the cell does nothing
        exec(compile(code_cells(NOTEBOOKS[0])[0], "install cell", "exec"), namespace)
    not_installed = namespace["not_installed"]
    kept = {"jax": "0.4.30", "jaxlib": "0.4.30"}
    index = (
        ["jcsol"],
        "WARNING: Retrying (Retry(total=4, connect=None)) after connection broken by 'NewConnectionError(...)'\n"
        "ERROR: Could not find a version that satisfies the requirement jcsol (from versions: none)\n"
        "ERROR: No matching distribution found for jcsol",
    )
    repository = (
        ["git+https://github.com/jcsol/jcsol"],
        "  fatal: unable to access 'https://github.com/jcsol/jcsol/': Could not resolve host: github.com\n"
        "  × git clone --filter=blob:none --quiet https://github.com/jcsol/jcsol /tmp/x did not run successfully.",
    )
    missing = not_installed([index, repository], kept)
    assert "no source has it (no jcsol package found in jcsol; git+https://github.com/jcsol/jcsol)" in missing
    assert "may have no network" in missing
    assert "upgrade jax" not in missing
    conflict = (["jcsol"], "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/…")
    assert "upgrade jax with its plugins together" in not_installed([conflict, repository], kept)
    other = (["jcsol"], "ERROR: Failed building wheel for mmh3")
    generic = not_installed([other, repository], kept)
    assert "pip failed for every source" in generic
    assert "upgrade jax" not in generic


# the quickstart in the default run; the longer notebooks in the slow tier
@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=[] if p.name == "quickstart.ipynb" else [pytest.mark.slow]) for p in NOTEBOOKS],
    ids=lambda p: p.name,
)
def test_notebook_runs_from_its_install_cell(path, tmp_path, wheels, packages):
    pytest.importorskip("matplotlib")
    extra = {}
    if path.name == "reproduce_acog.ipynb":  # a9a "downloaded" before: jcsol.datasets.fetch finds it in its cache
        cache = tmp_path / "cache"
        cache.mkdir()
        for name in ("a9a", "a9a.t"):
            with gzip.open(shared_data(f"{name}.gz"), "rb") as src, open(cache / name, "wb") as dst:
                shutil.copyfileobj(src, dst)
        extra["JCSOL_CACHE"] = str(cache)
    env = Env(tmp_path / "env", packages)
    assert run_in(env, "import importlib.util; print(importlib.util.find_spec('jcsol'))") == "None"
    source = f"--no-index --find-links {wheels} jcsol"
    got, output = env.run(code_cells(path), PROBES[path.name], pip_source=source, env=extra)

    # the install cell installed jcsol from the wheel into the fresh environment, and nothing else
    built = next(wheels.glob("jcsol-*.whl")).name.split("-")[1]
    assert "installing: --no-index --find-links" in output, output[-3000:]
    assert f"installed jcsol {built}" in output, output[-3000:]
    assert Path(got["jcsol_file"]).is_relative_to(env.purelib)
    assert env.installed_here() == ["jcsol"]
    assert got["versions"] == versions()
    assert "devices: [" in output
    assert f"the runs below use the {got['backend'].upper()}" in output
    assert got["FULL"] is False, f"{path.name} must run its small settings by default (FULL = False)"

    if path.name == "quickstart.ipynb":
        assert set(got["learners"]) == {"COG-I", "COG-II", "ACOG-I", "ACOG-II"}
        assert got["sum"]["ACOG-I"] > got["sum"]["COG-I"]
        assert got["xlabel"] == "examples seen"
        assert f"{got['seconds']:.1f} s on {got['backend']}" in output
        # run again where jcsol is installed, the install cell does nothing (pip, pointed at nothing, would fail)
        _, again = env.run(code_cells(path)[:1], "probe = {}", pip_source="--no-index --find-links /nonexistent jcsol")
        assert "jcsol is installed; nothing to install" in again
        assert "installing:" not in again
    if path.name == "reproduce_acog.ipynb":
        german = got["german"]
        assert set(german) == {"COG-I", "ACOG-I"}
        assert german["ACOG-I"][0] == 63.150
        assert german["COG-I"][0] == 54.424  # the ACOG paper's Table II
        assert german["ACOG-I"][1] > german["COG-I"][1]  # as published
        assert "a9a" in got["datasets"]
        assert Path(got["data_dir"]).is_relative_to(tmp_path / "cache")
        assert any("covtype" in n for n in got["notes"])
        assert got["xlabel"] == "examples seen"
        assert got["lines"] == 2
    if path.name == "live_fraud.ipynb":
        assert got["events"] == got["N"] == got["labelled"]
        assert got["pending"] == 0
        assert got["evicted"] == 0
        assert got["served_sum"] > 0.7  # the served stream finds most frauds, across the drift,
        assert got["served_sum"] > got["best_sum"] - 0.03  # within 3 points of the best η in hindsight
        assert got["served"] > 1
        assert got["xlabel"] == "payments seen"
