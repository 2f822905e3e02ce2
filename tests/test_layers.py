"""The layers hold in the code: each package imports only the packages below it.

``lazyscan.format`` is the floor the physical formats stand on; ``lazyscan.parquet`` and
``lazyscan.orc`` stand side by side on it and import neither each other nor the scan or Spark
above them; ``lazyscan.io`` imports nothing above it. Imports are read from the source (``ast``),
including those inside functions and under ``TYPE_CHECKING``, so a lazy import across a layer
counts as much as one at the top of a module. The code map in docs/CONTRIBUTING.md names the
modules of each layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "lazyscan"

#: package -> the packages of lazyscan it must not import
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "format": ("parquet", "orc", "scan", "spark", "predicate", "cli"),
    "parquet": ("orc", "scan", "spark", "cli"),
    "orc": ("parquet", "scan", "spark", "cli"),
    "io": ("format", "parquet", "orc", "scan", "spark", "predicate", "cli"),
    # above the formats, a file is a UnitFile (lazyscan.format.units): no branch per format
    "scan": ("parquet", "orc", "spark", "cli"),
    "spark": ("parquet", "orc", "cli"),
    # a table's plan is data files and deletes: it reads no data itself
    "tables": ("parquet", "orc", "scan", "spark", "predicate", "cli"),
}

#: (package, forbidden package) rules that do not hold yet, with what still imports across;
#: each move down to the format floor removes one (strict: a rule that starts to hold fails here
#: until its entry goes)
NOT_YET: dict[tuple[str, str], str] = {
    ("scan", "parquet"): "scan/warmup.py compiles the Parquet kernels through ParquetFile",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, absolute and relative, at any depth of the code."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            # ``from lazyscan import scan`` imports the subpackage, not only a name
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def crossings(layer: str, other: str) -> list[str]:
    """``file -> module`` for every import from ``lazyscan/<layer>`` into ``lazyscan/<other>``."""
    banned = f"lazyscan.{other}"
    found = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for module in sorted(imported_modules(path)):
            if module == banned or module.startswith(banned + "."):
                found.append(f"{path.relative_to(REPO)} -> {module}")
    return found


RULES = [(layer, other) for layer, others in FORBIDDEN.items() for other in others]


@pytest.mark.parametrize(
    ("layer", "other"),
    [
        pytest.param(*rule, marks=pytest.mark.xfail(strict=True, reason=NOT_YET[rule]))
        if rule in NOT_YET
        else rule
        for rule in RULES
    ],
    ids=[f"{layer}-not-{other}" for layer, other in RULES],
)
def test_layer_imports_nothing_above_or_beside(layer: str, other: str) -> None:
    assert crossings(layer, other) == []


def test_every_rule_not_yet_held_is_a_rule() -> None:
    assert set(NOT_YET) <= set(RULES)


def test_the_reader_sees_imports_across() -> None:
    """The checker finds imports that exist, so a rule that holds means something."""
    assert crossings("spark", "scan")
    assert "lazyscan.errors" in imported_modules(PACKAGE / "io" / "source.py")
    assert crossings("scan", "parquet")
