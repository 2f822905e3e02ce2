"""One table of kernel error codes (``lazyscan.format.kernels``) for Parquet's and ORC's kernels:
distinct codes, each with its message, and both formats' kernels returning codes from it."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from lazyscan.format import kernels as F
from lazyscan.orc import kernels as orc_kernels
from lazyscan.parquet import kernels as parquet_kernels

PACKAGE = Path(__file__).resolve().parents[1] / "lazyscan"


def shared_codes() -> dict[str, int]:
    return {name: value for name, value in vars(F).items() if name.startswith("ERR_")}


def test_codes_are_distinct_negative_and_named() -> None:
    codes = shared_codes()
    assert len(set(codes.values())) == len(codes), codes
    assert all(isinstance(v, int) and v < 0 for v in codes.values())
    assert set(F.ERROR_MESSAGES) == set(codes.values())
    assert len(set(F.ERROR_MESSAGES.values())) == len(codes)


def test_both_formats_use_the_one_table() -> None:
    for module in (orc_kernels, parquet_kernels):
        assert module.ERROR_MESSAGES is F.ERROR_MESSAGES
        for name, value in vars(module).items():
            if name.startswith("ERR_") and name in shared_codes():
                assert value == shared_codes()[name], (module.__name__, name)


def test_no_kernel_module_defines_codes_of_its_own() -> None:
    """Every ``ERR_* = <number>`` assignment of the Parquet and ORC packages is in the shared
    table, bar the private status codes of a single module (``_ERR_*``) and Snappy's own."""
    allowed = {PACKAGE / "format" / "kernels.py", PACKAGE / "format" / "snappy.py"}
    for path in [*(PACKAGE / "parquet").glob("*.py"), *(PACKAGE / "orc").glob("*.py"), *(PACKAGE / "format").glob("*.py")]:
        if path in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id.startswith("ERR_"):
                        raise AssertionError(f"{path.name} defines {target.id}: use lazyscan.format.kernels")


def test_orc_run_decoders_return_shared_codes() -> None:
    out = np.zeros(8, np.int64)
    # RLE v1: a run of 3 values (control 0, delta 1, base 7) then one byte after the last value
    runs = np.array([0, 1, 7, 0], np.uint8)
    assert orc_kernels.int_rle_v1(runs, 0, 4, False, 0, 3, out, 3, 4) == F.ERR_MISPLACED
    assert orc_kernels.int_rle_v1(runs, 0, 3, False, 0, 3, out, -1, -1) == 3
    assert list(out[:3]) == [7, 8, 9]
    assert orc_kernels.int_rle_v1(runs, 0, 3, False, 0, 9, out, -1, -1) == F.ERR_BAD_ARGUMENT


def test_a_varint_cut_short_or_too_long_gives_its_own_code() -> None:
    out = np.zeros(8, np.int64)
    runs = np.array([0, 1, 0x87, 0x01], np.uint8)  # 3 values from base 0x87 (135)
    assert orc_kernels.int_rle_v1(runs, 0, 4, False, 0, 3, out, -1, -1) == 4
    assert list(out[:3]) == [135, 136, 137]
    assert orc_kernels.int_rle_v1(runs, 0, 3, False, 0, 3, out, -1, -1) == F.ERR_TRUNCATED
    too_long = np.array([0, 1, *([0xFF] * 9), 0x02], np.uint8)  # an 11th bit beyond 64
    assert orc_kernels.int_rle_v1(too_long, 0, len(too_long), False, 0, 3, out, -1, -1) == F.ERR_BAD_HEADER
