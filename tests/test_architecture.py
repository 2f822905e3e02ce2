"""docs/ARCHITECTURE.md draws the layers as the code has them.

The page's table says, per package, which packages of lazyscan it stands on; its "not yet" list
names the crossings that still exist. Both are read from the page and compared with the imports
in the source (``ast``, at any depth, ``TYPE_CHECKING`` included): an import the table does not
allow fails, a package the table leaves out fails, and a "not yet" entry that no longer holds
fails until the page drops it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "lazyscan"
PAGE = REPO / "docs" / "ARCHITECTURE.md"


def section(text: str, name: str) -> str:
    found = re.search(rf"<!-- {name}: .*?-->(.*?)<!-- /{name} -->", text, re.S)
    assert found, f"docs/ARCHITECTURE.md lacks its <!-- {name}: ... --> section"
    return found.group(1)


def documented_layers(text: str) -> dict[str, set[str]]:
    """package -> the packages it may import, from the page's table."""
    layers: dict[str, set[str]] = {}
    for line in section(text, "layers").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`lazyscan."):
            continue
        layers[cells[0].strip("`").removeprefix("lazyscan.")] = set(re.findall(r"`(\w+)`", cells[1]))
    return layers


def documented_not_yet(text: str) -> set[tuple[str, str]]:
    return set(re.findall(r"`lazyscan\.(\w+)` → `lazyscan\.(\w+)`", section(text, "not-yet")))


def top_packages() -> set[str]:
    """The layers: subpackages and top-level modules of lazyscan that are not private."""
    out = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    out |= {p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_")}
    return out


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "lazyscan" else None


def imported_layers(package: str) -> set[str]:
    """The layers of lazyscan that the modules of ``package`` import."""
    root = PACKAGE / package
    paths = sorted(root.rglob("*.py")) if root.is_dir() else [PACKAGE / f"{package}.py"]
    found: set[str] = set()
    for path in paths:
        parts = path.relative_to(REPO).with_suffix("").parts
        here = list(parts[:-1])  # the package a relative import starts from
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            modules: list[str] = []
            if isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                modules = [module, *(f"{module}.{a.name}" for a in node.names)]
            for m in modules:
                layer = layer_of(m)
                if layer is not None and layer != package and layer in top_packages():
                    found.add(layer)
    return found


TEXT = PAGE.read_text()
LAYERS = documented_layers(TEXT)
NOT_YET = documented_not_yet(TEXT)


def test_the_table_names_every_layer() -> None:
    assert set(LAYERS) == top_packages()


@pytest.mark.parametrize("package", sorted(top_packages()))
def test_a_layer_imports_only_what_the_page_draws_beneath_it(package: str) -> None:
    allowed = LAYERS.get(package, set()) | {b for a, b in NOT_YET if a == package}
    assert imported_layers(package) - allowed == set()


def test_each_not_yet_crossing_still_exists() -> None:
    gone = [f"lazyscan.{a} -> lazyscan.{b}" for a, b in sorted(NOT_YET) if b not in imported_layers(a)]
    assert gone == [], "these crossings no longer exist: drop them from the page"


def test_the_check_sees_an_undrawn_import() -> None:
    # io stands on errors alone: a drawing without errors would be caught
    assert "errors" in imported_layers("io")
    assert documented_layers("<!-- layers: x -->\n| `lazyscan.io` | |\n<!-- /layers -->") == {"io": set()}


def private_names_used_across(path: Path) -> list[str]:
    """``module._name`` and ``from module import _name`` in ``path``, where ``module`` is another
    module of lazyscan (a package's own private modules, imported by its ``__init__``, are its own)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    modules: set[str] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("lazyscan")):
            for a in node.names:
                private = a.name.startswith("_") and not a.name.startswith("__")
                own_module = path.name == "__init__.py" and (PACKAGE / f"{a.name}.py").exists()
                if private and not own_module:
                    found.append(f"from {node.module} import {a.name}")
                elif not private:
                    modules.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            modules.update(a.asname or a.name for a in node.names if a.name.startswith("lazyscan"))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
            and node.attr.startswith("_") and not node.attr.startswith("__")
        ):
            found.append(f"{node.value.id}.{node.attr}")
    return sorted(set(found))


def test_no_module_uses_another_modules_private_names() -> None:
    uses = {str(p.relative_to(REPO)): found for p in sorted(PACKAGE.rglob("*.py")) if (found := private_names_used_across(p))}
    assert uses == {}


def test_the_private_name_check_sees_one(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from lazyscan.parquet import kernels as K\nfrom lazyscan.io.source import _x\nK._y(1)\n")
    assert private_names_used_across(sample) == ["K._y", "from lazyscan.io.source import _x"]
