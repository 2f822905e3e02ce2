"""The modules of ``lazyscan.parquet`` depend on each other one way, and none uses another
module's private names.

Imports are read from the source (``ast``), those inside functions and under ``TYPE_CHECKING``
included, so a cycle hidden in a function-level import counts. A private name (``_x``) is one
module's own: a module that reads ``other._x`` or imports ``_x`` from another module needs it
made public there (or moved). The package docstring lists the modules in an order every import
follows; the test holds it to that.
"""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

from tests.support.code_structure import own_private_names

PACKAGE = Path(__file__).resolve().parents[1] / "lazyscan" / "parquet"



def modules() -> dict[str, ast.Module]:
    return {p.stem: ast.parse(p.read_text(), filename=str(p)) for p in sorted(PACKAGE.glob("*.py")) if p.stem != "__init__"}


def parquet_imports(tree: ast.Module, names: set[str]) -> dict[str, str]:
    """Every module of the package ``tree`` imports, at any depth, by the name it is bound to
    (a module imported by name, ``from lazyscan.parquet import x as y``), else by its own."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "lazyscan.parquet":
                found.update({a.asname or a.name: a.name for a in node.names if a.name in names})
            elif node.module.startswith("lazyscan.parquet."):
                found[f"<from {node.module}>"] = node.module.split(".")[2]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("lazyscan.parquet."):
                    found[a.asname or a.name] = a.name.split(".")[2]
    return found


def dependencies() -> dict[str, set[str]]:
    trees = modules()
    names = set(trees)
    return {name: set(parquet_imports(tree, names).values()) - {name} for name, tree in trees.items()}


def foreign_private_names(tree: ast.Module) -> dict[str, set[str]]:
    """The private names ``tree`` uses that it does not define, by where they come from: the
    module of ``lazyscan.parquet`` (or the package of lazyscan) an import names, else the
    expression they are read from."""
    own = own_private_names(tree)
    aliases = parquet_imports(tree, {p.stem for p in PACKAGE.glob("*.py")})
    found: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("lazyscan."):
            source = node.module.split(".")[2] if node.module.startswith("lazyscan.parquet.") else ".".join(node.module.split(".")[:2])
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__"):
                    found.setdefault(source, set()).add(a.name)
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if node.attr in own:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in aliases:
                source = aliases[node.value.id]
            else:
                # an object of another package (a source of lazyscan.io in this package)
                source = "lazyscan.io"
            found.setdefault(source, set()).add(node.attr)
    return found


def test_the_package_has_no_import_cycle() -> None:
    graphlib.TopologicalSorter(dependencies()).prepare()  # CycleError names the cycle


def test_the_module_map_lists_modules_in_an_order_every_import_follows() -> None:
    doc = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text())) or ""
    order = list(dict.fromkeys(re.findall(r":mod:`~lazyscan\.parquet\.(\w+)`", doc)))
    assert sorted(order) == sorted(dependencies())
    place = {name: i for i, name in enumerate(order)}
    late = [f"{m} imports {d}" for m, deps in dependencies().items() for d in deps if place[d] > place[m]]
    assert late == []


def test_no_module_uses_another_modules_private_names() -> None:
    uses = {m: found for m, tree in modules().items() if (found := foreign_private_names(tree))}
    assert uses == {}


def test_the_checker_sees_private_names_used_across() -> None:
    """A use of another module's private name is found, and a module's own are not taken for one."""
    tree = ast.parse(
        "from lazyscan.parquet import kernels as K\n"
        "from lazyscan.parquet.convert import _hidden\n"
        "_mine = 1\n"
        "def f(x):\n    return K._secret(x._mine, _hidden)\n"
    )
    assert foreign_private_names(tree) == {"kernels": {"_secret"}, "convert": {"_hidden"}}
