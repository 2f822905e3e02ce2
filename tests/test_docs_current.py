"""What the code says about itself stays true: every module is in its package's module map (the
package docstring), every repository path and every ``lazyscan.…`` name a docstring or comment
cites exists (in the package, tests, benchmarks and scripts), every name a package exports is
defined, and bad arguments raise the error class for bad arguments."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "lazyscan"

#: folders of the checkout that code may cite paths in (``data/`` is generated, not checked out)
CITABLE_ROOTS = ("benchmarks", "docs", "lazyscan", "reports", "scripts", "tests")
#: a path, unless it is a template (``reports/bench-{scale}.json``, ``tests/<name>.py``)
PATH_CITED = re.compile(r"(?<![\w./-])((?:" + "|".join(CITABLE_ROOTS) + r")/[\w./*-]*[\w*])(?![\w./*-]*[{<])")
#: top-level documents cited by name (README.md, DESIGN.md, ...): upper-case names only, so the
#: format specifications cited by their own file names (Encodings.md, ORCv1.md) are not taken
DOCUMENT_CITED = re.compile(r"(?<![\w./-])([A-Z][A-Z_]+\.md)\b")
DOTTED_NAME = re.compile(r"(?<![\w.])(lazyscan(?:\.[A-Za-z_]\w*)+)")
#: setting names spelled like module paths: Spark table properties read by the transparent mode
SETTING_NAMES = {"lazyscan.enabled"}


def packages() -> list[Path]:
    return sorted(p.parent for p in PACKAGE.rglob("__init__.py") if "__pycache__" not in p.parts)


def members(package: Path) -> list[str]:
    """The modules and subpackages of ``package``, by name."""
    names = [p.stem for p in package.glob("*.py") if p.name != "__init__.py"]
    names += [p.name for p in package.iterdir() if (p / "__init__.py").is_file()]
    return sorted(names)


def module_map(package: Path) -> str:
    return ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""


def dotted(package: Path) -> str:
    return ".".join(package.relative_to(REPO).parts)


def unmapped(doc: str, package: str, names: list[str]) -> list[str]:
    """The ``names`` that ``doc`` does not name as a module of ``package`` (``:mod:`.name```,
    ``:mod:`~lazyscan.pkg.name``` or ``lazyscan.pkg.name`` in backquotes)."""
    full = re.escape(package)
    return [n for n in names if not re.search(rf"(?:`~?\.|`~?{full}\.){re.escape(n)}`", doc)]


def source_files() -> list[Path]:
    """The Python files whose prose is checked: the package, its tests, benchmarks and scripts
    (this file's examples of broken citations left out)."""
    found = [p for d in ("lazyscan", "tests", "benchmarks", "scripts") for p in (REPO / d).rglob("*.py")]
    return sorted(p for p in found if "__pycache__" not in p.parts and p != Path(__file__).resolve())


def comments_and_docstrings(path: Path) -> str:
    """The prose of a module: its docstrings and comments (string literals in code are left out,
    so option names and SQL text are not read as citations)."""
    source = path.read_text()
    tree = ast.parse(source)
    parts = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                parts.append(doc)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            parts.append(node.value.value)  # attribute docstrings
    parts += [line.split("#", 1)[1] for line in source.splitlines() if "#" in line]
    return "\n".join(parts)


def cited_paths(text: str) -> list[str]:
    return [m.rstrip(".") for m in PATH_CITED.findall(text)] + DOCUMENT_CITED.findall(text)


def path_exists(cited: str) -> bool:
    if "*" in cited:
        return any(REPO.glob(cited))
    return (REPO / cited).exists()


def resolves(name: str) -> bool:
    """Whether ``lazyscan.a.b.C.d`` names a module, or an attribute reachable from one."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                # an instance attribute a class declares (``identity: FileIdentity``)
                return attr == parts[-1] and any(attr in vars(k).get("__annotations__", {}) for k in getattr(obj, "__mro__", ()))
            obj = getattr(obj, attr)
        return True
    return False


# --- the module maps ---------------------------------------------------------------------------


@pytest.mark.parametrize("package", packages(), ids=lambda p: dotted(p))
def test_every_module_is_in_its_package_map(package: Path) -> None:
    missing = unmapped(module_map(package), dotted(package), members(package))
    assert missing == [], f"{dotted(package)}/__init__.py: add these modules to the docstring"


@pytest.mark.parametrize("package", packages(), ids=lambda p: dotted(p))
def test_every_module_the_map_names_exists(package: Path) -> None:
    text = module_map(package)
    named = re.findall(r":mod:`~?(\.?[\w.]+)`", text)
    full = [dotted(package) + n if n.startswith(".") else n for n in named]
    assert [n for n in full if not resolves(n)] == []


def test_the_map_check_sees_a_missing_module() -> None:
    # a map without its line for a module is caught, in either spelling
    for mention in (":mod:`.prefetch`", ":mod:`~lazyscan.io.prefetch`", "``lazyscan.io.prefetch``"):
        assert unmapped(mention, "lazyscan.io", ["prefetch"]) == []
        assert unmapped(mention.replace("prefetch", "prefetcher"), "lazyscan.io", ["prefetch"]) == ["prefetch"]
    assert unmapped(":class:`lazyscan.io.retry.RetryPolicy`", "lazyscan.io", ["retry"]) == ["retry"]


# --- what the prose cites -----------------------------------------------------------------------


@pytest.mark.parametrize("path", source_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_cited_path_exists(path: Path) -> None:
    missing = [c for c in cited_paths(comments_and_docstrings(path)) if not path_exists(c)]
    assert missing == [], f"{path.relative_to(REPO)} cites paths that are not in the checkout"


@pytest.mark.parametrize("path", source_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_cited_lazyscan_name_exists(path: Path) -> None:
    names = sorted(set(DOTTED_NAME.findall(comments_and_docstrings(path))))
    assert [n for n in names if n not in SETTING_NAMES and not resolves(n)] == []


def test_citation_checks_see_what_is_gone() -> None:
    text = (
        "see ``tests/test_scan.py`` and tests/test_gone_long_ago.py, README.md and NOWHERE.md,\n"
        "# benchmarks/*.py and reports/nothing-*.csv; :mod:`lazyscan.scan.options` and lazyscan.scan.gone\n"
    )
    assert [c for c in cited_paths(text) if not path_exists(c)] == [
        "tests/test_gone_long_ago.py", "reports/nothing-*.csv", "NOWHERE.md",
    ]
    assert [n for n in DOTTED_NAME.findall(text) if not resolves(n)] == ["lazyscan.scan.gone"]
    # specification names and Spark settings are not citations
    assert cited_paths("Encodings.md, ORCv1.md") == []
    assert cited_paths("reports/bench-{scale}.json, tests/<name>.py") == []
    assert DOTTED_NAME.findall("spark.lazyscan.maxBytes") == []


# --- exports -----------------------------------------------------------------------------------


@pytest.mark.parametrize("package", packages(), ids=lambda p: dotted(p))
def test_every_exported_name_is_defined(package: Path) -> None:
    module = importlib.import_module(dotted(package))
    exported = getattr(module, "__all__", [])
    assert len(exported) == len(set(exported)), "a name is exported twice"
    assert [n for n in exported if not hasattr(module, n)] == []


# --- one error class per kind of mistake -------------------------------------------------------


def test_bad_arguments_are_option_errors(tmp_path: Path) -> None:
    """A bad option or argument is an :class:`OptionError` (a ``ValueError`` too, so callers that
    catch ``ValueError`` still do), not a bare ``ValueError`` or ``LazyScanError``."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lazyscan import OptionError, ParquetFile, RowRanges
    from lazyscan.predicate.casts import check_time_zone
    from lazyscan.spark.choose import resolve_route

    with pytest.raises(OptionError, match="route must be one of"):
        resolve_route("mapinarrow")
    with pytest.raises(OptionError, match="unknown time zone 'Mars/Olympus'"):
        check_time_zone("Mars/Olympus")
    with pytest.raises(OptionError, match="must not be negative"):
        RowRanges(np.array([-3]), np.array([2]))
    with pytest.raises(OptionError, match="must not be negative"):
        RowRanges.from_indices([4, -1])
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": pa.array(range(10), pa.int64())}), path)
    with pytest.raises(OptionError, match="sorted, distinct and non-negative"):
        ParquetFile(str(path)).read_column(0, "x", np.array([5, 2]))
    assert issubclass(OptionError, ValueError)
