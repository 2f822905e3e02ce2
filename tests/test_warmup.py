"""``lazyscan warmup``: after it, the reads and scans of a TPC-H table compile no kernel."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from benchmarks.data import tpchgen_binary
from lazyscan.cli import main as cli
from lazyscan.scan import warmup
from tests.support.compiles import COMPILE_COUNTER

# every signature each of lazyscan's kernels holds in this process, as JSON on the last line
SIGNATURES = """
import json
from lazyscan.scan.warmup import kernel_signatures
print(json.dumps({"rc": rc, "signatures": kernel_signatures()}))
"""

WARM_UP = "from lazyscan.cli.main import main\nrc = main(['warmup'])\n" + SIGNATURES

# what a user does first on TPC-H lineitem: the seed pair, a key range, Q6's filter, and the
# physical reader on every column (all rows, then two)
TPCH_READS = """
import lazyscan
from lazyscan.parquet import ParquetFile
path, value = {path!r}, {value!r}
lazyscan.scan(path, where=f"l_comment = '{{value}}'").to_table()
lazyscan.scan(path, columns=["l_orderkey"], where=f"l_comment = '{{value}}'").to_table()
lazyscan.scan(path, where="l_orderkey BETWEEN 1000 AND 2000").to_table()
lazyscan.scan(path, columns=["l_extendedprice", "l_discount"], where="l_shipdate >= DATE '1994-01-01' "
              "AND l_shipdate < DATE '1995-01-01' AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24").to_table()
pf = ParquetFile(path)
for c in pf.schema.columns:
    pf.read_column(0, c.name)
    pf.read_column(0, c.name, [0, 5])
rc = 0
"""


def _run(code: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    result: dict[str, object] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return result


def _lineitem(tmp_path: Path) -> Path:
    # tpchgen-cli is part of the test environment (the bench extra): missing, this raises
    subprocess.run(
        [tpchgen_binary(), "parquet", "--scale-factor", "0.01", "--tables", "lineitem", "--output-dir", str(tmp_path), "--quiet"],
        check=True,
        capture_output=True,
    )
    path = tmp_path / "lineitem.parquet"
    assert path.exists()
    return path


def test_after_warm_up_tpch_reads_compile_nothing_new(tmp_path: Path) -> None:
    lineitem = _lineitem(tmp_path)
    value = pq.read_table(lineitem, columns=["l_comment"]).column(0)[17].as_py()
    warmed = _run(WARM_UP)
    assert warmed["rc"] == 0
    have: dict[str, list[str]] = warmed["signatures"]  # type: ignore[assignment]
    assert sum(map(len, have.values())) > 50  # the warm-up reached the kernels at all
    used = _run(TPCH_READS.format(path=str(lineitem), value=value) + SIGNATURES)
    # a signature the TPC-H reads hold that the warm-up did not: a kernel compiled after it
    missing = {k: sorted(set(v) - set(have.get(k, ()))) for k, v in used["signatures"].items()}  # type: ignore[union-attr]
    assert {k: v for k, v in missing.items() if v} == {}


def test_a_failing_step_is_reported_and_fails_the_command(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    ran = []

    def steps(paths: list[Path]):  # type: ignore[no-untyped-def]
        assert {p.suffix for p in paths} == {".parquet", ".orc"}  # the samples were written
        yield "fine", lambda: ran.append("fine")
        yield "broken", lambda: 1 / 0
        yield "after", lambda: ran.append("after")

    monkeypatch.setattr(warmup, "_steps", steps)
    seen: list[tuple[int, int, str]] = []
    report = warmup.warm_up(lambda done, total, step: seen.append((done, total, step)))
    assert ran == ["fine", "after"] and report.steps == 3
    assert report.failures == ["broken: ZeroDivisionError: division by zero"]
    assert seen == [(0, 3, "fine"), (1, 3, "broken"), (2, 3, "after"), (3, 3, "done")]
    assert cli.main(["warmup"]) == 1
    assert "1 steps failed: broken: ZeroDivisionError" in capsys.readouterr().err


def test_sample_files_round_trip(tmp_path: Path) -> None:
    """The samples hold what the warm-up claims to cover: every column type, nulls, NaN, and
    the layouts named in their file names."""
    paths = warmup.write_samples(tmp_path)
    table = warmup.sample_table()
    assert table.column("f64").null_count > 0 and table.column("text").null_count > 0
    for path in paths:
        if path.suffix == ".parquet":
            md = pq.ParquetFile(path).metadata
            assert md.num_row_groups == warmup.ROWS // warmup.ROW_GROUP
            codecs = {md.row_group(0).column(i).compression.lower() for i in range(md.num_columns)}
            assert codecs == {path.stem.split("-")[1].replace("none", "uncompressed")}
            back = pq.read_table(path)
            floats = ["f32", "f64"]  # NaN: compared by numpy, which takes NaN as equal to NaN
            assert back.drop_columns(floats).equals(table.drop_columns(floats))
            for name in floats:
                np.testing.assert_array_equal(back.column(name).to_numpy(), table.column(name).to_numpy())
        else:
            import pyarrow.orc as orc

            assert orc.ORCFile(path).nrows == warmup.ROWS


# the kernel signatures compiled in this process (tests.support.compiles), as JSON on the last line
COMPILED = """
import json
print(json.dumps({"compiled": _Compiled.count, "file": lazyscan.__file__}))
"""


@pytest.mark.slow
def test_a_new_machine_with_the_shipped_kernels_compiles_nothing_for_tpch_reads(tmp_path: Path) -> None:
    """``lazyscan warmup --ship`` in an installation, then a process with an empty cache (a new
    machine, a new executor) runs the TPC-H reads: 0 kernel signatures compiled. The kernels
    ``make kernels`` shipped into the checkout are used when they were built from these sources
    (``make test`` builds them first), else the command builds them into a copy of the package."""
    import os
    import shutil

    from lazyscan.kernel_cache import shipped_is_current

    repo = Path(__file__).resolve().parents[1]
    package = tmp_path / "installed"
    shutil.copytree(repo / "lazyscan", package / "lazyscan", ignore=shutil.ignore_patterns("__pycache__", "_kernels"))
    env = {**os.environ, "PYTHONPATH": str(package), "NUMBA_CACHE_DIR": str(tmp_path / "build-machine-cache")}
    if shipped_is_current(repo / "lazyscan" / "_kernels"):
        shutil.copytree(repo / "lazyscan" / "_kernels", package / "lazyscan" / "_kernels")
    ship = "import sys; from lazyscan.cli.main import main; sys.exit(main(['warmup', '--ship', '--jobs', '2']))"
    built = subprocess.run(
        [sys.executable, "-c", ship], env=env, cwd=package, capture_output=True, text=True, timeout=1800, check=False
    )
    assert built.returncode == 0, built.stderr[-3000:]
    assert str(package / "lazyscan" / "_kernels") in built.stderr
    assert list((package / "lazyscan" / "_kernels").rglob("*.nbc"))
    lineitem = _lineitem(tmp_path)
    value = pq.read_table(lineitem, columns=["l_comment"]).column(0)[17].as_py()
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "new-machine-cache")
    code = COMPILE_COUNTER + TPCH_READS.format(path=str(lineitem), value=value) + COMPILED
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=package, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["file"] == str(package / "lazyscan" / "__init__.py")
    assert result["compiled"] == 0
    assert "compiling its numba kernels" not in done.stderr
