"""No module of jcsol imports an underscore name of another of its modules: what one module shares with another
has a public name (the engine's core, :mod:`jcsol.core`, is public to jcsol's modules)."""

import ast
from pathlib import Path

import jcsol

PACKAGE = Path(jcsol.__file__).parent


def _module(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(path: Path, node: ast.ImportFrom, root: Path) -> str:
    """The module an ``import from`` names, a relative one resolved against ``path``'s package."""
    if not node.level:
        return node.module or ""
    package = _module(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def underscore_imports(root: Path = PACKAGE) -> set[tuple[str, str, str]]:
    """``(file, module, name)`` of every ``from <jcsol module> import _name`` (dunders aside) and every
    ``<module>._name`` read through ``from jcsol import <module>`` in the package's files."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(root.parent).as_posix()
        modules = {}  # local name -> jcsol module imported as a whole
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = _absolute(path, node, root)
            if source.split(".")[0] != "jcsol":
                continue
            for alias in node.names:
                name = alias.name
                if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                    found.add((where, source, name))
                modules[alias.asname or name] = f"{source}.{name}"
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                found.add((where, modules[node.value.id], node.attr))
    return found


def test_no_module_imports_another_modules_underscore_name():
    new = underscore_imports()
    assert not new, f"give these names a public name in the module that defines them: {sorted(new)}"


def test_the_check_sees_relative_imports_and_module_attributes(tmp_path):
    package = tmp_path / "jcsol"
    (package / "live").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "engine.py").write_text("def _private(): ...\ndef public(): ...\n")
    (package / "live" / "__init__.py").write_text("")
    (package / "live" / "units.py").write_text(
        "from numpy.lib import _datasource\nfrom .. import engine, __version__\nfrom ..engine import public\n"
        "def f():\n    from jcsol.engine import _private\n    return engine._other(), engine.public(), _private()\n"
    )
    assert underscore_imports(package) == {
        ("jcsol/live/units.py", "jcsol.engine", "_private"),
        ("jcsol/live/units.py", "jcsol.engine", "_other"),
    }
