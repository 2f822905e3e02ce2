"""The modules of ``lazyscan.scan`` depend on each other one way, none uses another module's
private names, and no function is long.

Imports are read from the source (``ast``), those inside functions and under ``TYPE_CHECKING``
included, so a cycle hidden in a function-level import counts. The package docstring lists the
modules in an order every import follows (conjuncts <- files <- unit_scan <- scan): the unit scan
sees the :class:`~lazyscan.scan.Scan` through the :class:`~lazyscan.scan.files.PlannedScan`
protocol, not by importing it.
"""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

from tests.support.code_structure import own_private_names

PACKAGE = Path(__file__).resolve().parents[1] / "lazyscan" / "scan"

#: the longest a function of the package may be, in lines
LONGEST_FUNCTION = 60


def modules() -> dict[str, ast.Module]:
    return {p.stem: ast.parse(p.read_text(), filename=str(p)) for p in sorted(PACKAGE.glob("*.py")) if p.stem != "__init__"}


def scan_imports(tree: ast.Module) -> list[tuple[str, list[str]]]:
    """(module of the package, names imported from it) for every import of ``tree``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("lazyscan.scan."):
                found.append((node.module.split(".")[2], [a.name for a in node.names]))
            elif node.module == "lazyscan.scan":
                found.extend((a.name, []) for a in node.names if (PACKAGE / f"{a.name}.py").exists())
        elif isinstance(node, ast.Import):
            found.extend((a.name.split(".")[2], []) for a in node.names if a.name.startswith("lazyscan.scan."))
    return found


def dependencies() -> dict[str, set[str]]:
    return {name: {m for m, _ in scan_imports(tree)} - {name} for name, tree in modules().items()}


def foreign_private_names(tree: ast.Module) -> set[str]:
    """The private names ``tree`` imports from another module of the package, or reads from
    an object other than ``self`` without defining them."""
    private = {n for _, names in scan_imports(tree) for n in names if n.startswith("_") and not n.startswith("__")}
    own = own_private_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if node.attr not in own:
                private.add(node.attr)
    return private


def long_functions(tree: ast.Module) -> list[str]:
    return [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > LONGEST_FUNCTION
    ]


def test_the_package_has_no_import_cycle() -> None:
    graphlib.TopologicalSorter(dependencies()).prepare()  # CycleError names the cycle


def test_the_module_map_lists_modules_in_an_order_every_import_follows() -> None:
    doc = ast.get_docstring(ast.parse((PACKAGE / "__init__.py").read_text())) or ""
    order = list(dict.fromkeys(re.findall(r":mod:`\.(\w+)`", doc)))
    assert sorted(order) == sorted(dependencies())
    place = {name: i for i, name in enumerate(order)}
    late = [f"{m} imports {d}" for m, deps in dependencies().items() for d in deps if place[d] > place[m]]
    assert late == []


def test_the_unit_scan_does_not_import_the_scan() -> None:
    deps = dependencies()
    assert "scan" not in deps["unit_scan"] | deps["files"] | deps["conjuncts"]
    assert {"conjuncts", "files"} <= deps["unit_scan"]


def test_no_module_uses_another_modules_private_names() -> None:
    assert {name: used for name, tree in modules().items() if (used := foreign_private_names(tree))} == {}


def test_no_function_is_long() -> None:
    assert {name: found for name, tree in modules().items() if (found := long_functions(tree))} == {}


def test_the_checker_sees_what_it_looks_for() -> None:
    """An import cycle's edge, a private name used across and a long function are found."""
    tree = ast.parse(
        "from lazyscan.scan.scan import _hidden\n"
        "from lazyscan.scan import files\n"
        "_mine = 1\n"
        "def f(x):\n    return files._secret(x._mine, _hidden)\n"
        "def g():\n" + "    pass\n" * LONGEST_FUNCTION
    )
    assert {m for m, _ in scan_imports(tree)} == {"scan", "files"}
    assert foreign_private_names(tree) == {"_hidden", "_secret"}
    assert long_functions(tree) == [f"g ({LONGEST_FUNCTION + 1} lines)"]
