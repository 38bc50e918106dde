"""What the package index gets: metadata, license, long description, shipped data, changelog and citation.

Nothing is built here (``.ci/run`` builds the sdist and the wheel, runs ``twine check --strict`` on them, looks
for LICENSE and the shipped data inside, and validates CITATION.cff against its schema with cffconvert); these
tests read the sources of that metadata, and the installed distribution's where it says something.
"""

import fnmatch
import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

import jcsol

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY = "https://github.com/jcsol/jcsol"


@pytest.fixture(scope="module")
def project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_license_is_mit_as_the_metadata_says(project):
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License")
    assert "Copyright (c) the jcsol authors" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text
    meta = project["project"]
    assert meta["license"] == "MIT"
    assert meta["license-files"] == ["LICENSE"]
    # PEP 639: the SPDX expression replaces the license classifier (setuptools refuses both together)
    assert not [c for c in meta["classifiers"] if c.startswith("License ::")]
    assert meta["authors"] == [{"name": "the jcsol authors"}]


def test_classifiers_keywords_and_urls(project):
    meta = project["project"]
    classifiers = meta["classifiers"]
    lowest = tuple(int(p) for p in re.fullmatch(r">=(\d+)\.(\d+)", meta["requires-python"]).groups())
    versions = [tuple(map(int, c.rsplit(":: ", 1)[1].split("."))) for c in classifiers if re.search(r":: 3\.\d+$", c)]
    assert versions, (versions, lowest)
    assert min(versions) == lowest, (versions, lowest)
    assert any(c.startswith("Operating System ::") for c in classifiers)
    assert any(c.startswith("Topic :: Scientific/Engineering") for c in classifiers)
    assert "Typing :: Typed" in classifiers
    assert (ROOT / "jcsol" / "py.typed").exists()
    assert len(meta["keywords"]) >= 5
    urls = meta["urls"]
    assert set(urls) == {"Homepage", "Documentation", "Source", "Issues", "Changelog"}
    assert all(url.startswith(REPOSITORY) for url in urls.values()), urls
    assert urls["Changelog"].endswith("/CHANGELOG.md")
    assert (ROOT / "CHANGELOG.md").exists()


def test_one_version_everywhere(project):
    assert project["project"]["dynamic"] == ["version"]
    assert "version" not in project["project"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "jcsol.__version__"}
    assert metadata.version("jcsol") == jcsol.__version__
    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(rf"^version: {re.escape(jcsol.__version__)}$", cff, re.MULTILINE)
    assert f"## [{jcsol.__version__}]" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_every_shipped_file_is_package_data(project):
    """Every file of the package that is not Python source matches a package-data pattern, so the wheel and
    the sdist hold it (a new dataset or table of values would otherwise be left out silently)."""
    patterns = project["tool"]["setuptools"]["package-data"]
    shipped = [p for p in (ROOT / "jcsol").rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")]
    assert {p.name for p in shipped} >= {"german.numer.gz", "PROVENANCE.md", "acog-table2.json", "py.typed"}
    for path in shipped:
        package_dir = path.parent
        while not (package_dir / "__init__.py").exists():
            package_dir = package_dir.parent
        package = ".".join(package_dir.relative_to(ROOT).parts)
        inside = path.relative_to(package_dir).as_posix()
        assert any(fnmatch.fnmatch(inside, g) for g in patterns.get(package, [])), f"{path} is not package data"


def test_installed_distribution():
    """The installed distribution's metadata (the one pip installed, not an ``egg-info`` folder a build leaves in
    the tree): the console script, and (metadata 2.4, from setuptools 77 on) the license file. An install older
    than LICENSE says nothing of it and is not asked."""
    installed = [d for d in metadata.distributions(name="jcsol") if d.read_text("INSTALLER")]
    if not installed:
        pytest.skip("jcsol is not installed (run from a source tree)")
    dist = installed[0]
    assert [ep.value for ep in dist.entry_points if ep.name == "jcsol"] == ["jcsol.cli:main"]
    meta = dist.metadata
    if tuple(int(p) for p in meta["Metadata-Version"].split(".")) >= (2, 4) and meta.get_all("License-File"):
        assert meta["License-Expression"] == "MIT"
        assert meta.get_all("License-File") == ["LICENSE"]
        assert dist.read_text("licenses/LICENSE") == (ROOT / "LICENSE").read_text(encoding="utf-8")


def _links(markdown: str) -> list[str]:
    """The targets of every link and image of a Markdown text, raw HTML included (markdown-it-py: code spans
    and blocks, which hold ``[…](…)`` of their own, are not links)."""
    markdown_it = pytest.importorskip("markdown_it")
    targets = []
    pending = list(markdown_it.MarkdownIt("commonmark").parse(markdown))
    while pending:
        token = pending.pop()
        pending.extend(token.children or [])
        if token.type in ("link_open", "image"):
            targets.append(str(token.attrs.get("href") or token.attrs.get("src")))
        elif token.type in ("html_inline", "html_block"):
            targets += re.findall(r"""(?:href|src)\s*=\s*["']([^"']*)""", token.content)
    return targets


def test_long_description_has_no_relative_link(project):
    """The long description (the README) is shown on the package index, where a relative link points nowhere:
    every link is absolute (the repository's files as https://github.com/jcsol/jcsol/blob/main/...)."""
    readme = project["project"]["readme"]
    targets = _links((ROOT / readme).read_text(encoding="utf-8"))
    assert len(targets) > 10
    relative = [t for t in targets if not re.match(r"(https://|mailto:)", t)]
    assert not relative, f"{readme} has relative links: {relative}"
    ours = [t for t in targets if t.startswith(f"{REPOSITORY}/blob/main/")]
    for target in ours:  # each names a file of this tree
        assert (ROOT / target.removeprefix(f"{REPOSITORY}/blob/main/").split("#")[0]).exists(), target


def test_relative_links_are_found():
    """The check above finds what it is meant to: relative links and images, in text and raw HTML, not code."""
    text = "[a](docs/x.md) ![b](img.png) <a href='y.md'>y</a> `[c](code.md)` [d](https://e.org/f)\n"
    assert sorted(_links(text)) == sorted(["docs/x.md", "img.png", "y.md", "https://e.org/f"])


def test_changelog_keeps_a_changelog():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## \[([^\]]+)\]", text, re.MULTILINE)
    assert versions[0] == "Unreleased"
    assert jcsol.__version__ in versions
    for version in versions:  # each heading's link reference
        assert re.search(rf"^\[{re.escape(version)}\]: {re.escape(REPOSITORY)}/", text, re.MULTILINE), version
    kinds = set(re.findall(r"^### (.+)$", text, re.MULTILINE))
    assert kinds <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, kinds
    unreleased = text.split("## [Unreleased]")[1].split("\n## [")[0]
    assert re.search(r"^- ", unreleased, re.MULTILINE)


def test_citation_cites_the_software_and_the_papers():
    yaml = pytest.importorskip("yaml")
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0"
    assert cff["type"] == "software"
    assert {"message", "title", "authors"} <= set(cff)
    assert cff["authors"] == [{"name": "the jcsol authors"}]
    assert cff["license"] == "MIT"
    assert cff["repository-code"] == REPOSITORY
    bibliography = " ".join((ROOT / "docs" / "bibliography.md").read_text(encoding="utf-8").split())
    titles = {r["title"] for r in cff["references"]}
    assert {"Cost-Sensitive Online Classification", "Adaptive Cost-Sensitive Online Classification"} <= titles
    for reference in cff["references"]:
        assert reference["type"]
        assert reference["authors"]
        assert f"*{reference['title']}" in bibliography, reference["title"]  # as docs/bibliography.md has it
        for author in reference["authors"]:
            assert author["family-names"] in bibliography
