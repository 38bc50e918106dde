"""Sphinx configuration of jcsol's documentation.

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (needs ``pip install -e ".[docs]"``).
"""

from importlib.metadata import version as _version

project = "jcsol"
author = "the jcsol authors"
copyright = "the jcsol authors"
release = _version("jcsol")
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax 3 copied into the site: math renders without a CDN
    "sphinx.ext.viewcode",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# Markdown pages: $…$ and $$…$$ math, heading anchors for links such as algorithms.md#adaptive-regularisation-acog.
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 4

# Docstrings: reST roles and ``.. math::`` blocks, with Google-style ``Args:`` sections.
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_use_ivar = True  # Attributes: sections as fields, not as objects that members would duplicate
autodoc_member_order = "bysource"
autodoc_typehints = "none"
autodoc_default_options = {}
autodoc_preserve_defaults = True
default_role = "code"

html_theme = "furo"
html_title = f"jcsol {release}"
html_static_path = []


def _variants_table(app, docname, source):
    """Replaces the line ``{jcsol-variants}`` of a page by a table of every registered variant, its learner and the
    chunk backends that run it on dense rows (``jcsol.learners()``'s ``paths``)."""
    marker = "{jcsol-variants}"
    if marker not in source[0]:
        return
    import dataclasses

    import jcsol

    paths = {info.name: ", ".join(f"`{p}`" for p in info.paths) for info in jcsol.learners()}
    rows = ["| name | learner | paths |", "|---|---|---|"]
    for name, make in jcsol.VARIANTS.items():
        learner = make()
        static = [
            f"{f.name}={getattr(learner, f.name)!r}"
            for f in dataclasses.fields(learner)
            if f.metadata.get("static") and getattr(learner, f.name) is not None
        ]
        rows.append(f"| `{name}` | `{type(learner).__name__}({', '.join(static)})` | {paths[name]} |")
    source[0] = source[0].replace(marker, "\n".join(rows))


def setup(app):
    app.connect("source-read", _variants_table)
