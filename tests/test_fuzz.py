"""Structure-aware fuzzing: every mutated file gives the right rows or a clear lazyscan error,
never another exception, a crash, a hang or other rows (``tests/support/fuzz.py`` says how the
files are mutated and judged).

``test_mutated_files`` runs the cases of a fixed seed for a time budget (``LAZYSCAN_FUZZ_SECONDS``,
default 28); a longer run with another seed is a command::

    python -m tests.support.fuzz --seed 2 --minutes 10

which prints each finding as ``seed S case N`` with its mutation; ``--case N`` replays it.

:data:`KNOWN_FINDINGS` holds what the fuzzer found that is not fixed yet, by signature (the kind
of mutation, of read and pyarrow's verdict; for an exception its class and innermost lazyscan
frame). Findings with those signatures are printed but do not fail the run; each entry names one
case, replayed by a strict xfail, so that the fix of a finding fails the suite until its entry is
removed here.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support import fuzz

SEED = 20261126
BUDGET_SECONDS = float(os.environ.get("LAZYSCAN_FUZZ_SECONDS", "28"))

#: signature -> (seed, case) of one case showing it, and what it is
KNOWN_FINDINGS: dict[str, tuple[tuple[int, int], str]] = {
    "wrong rows: parquet damaged bytes, pyarrow refuses the mutant": (
        (1, 210),
        "a damaged byte changes a selected dictionary code into another valid one and the code beside it (same "
        "bit-packed group) out of range: the full read refuses the page, a selective read decodes only the selected "
        "code and returns the damaged value (checking each selected code's group costs 10-30 % of selective reads)",
    ),
    "wrong rows: parquet footer, pyarrow reads other rows": (
        (4, 3033),
        "a TIMESTAMP logical type whose union member is dropped (no member set): pyarrow reads the column as its "
        "physical INT64, lazyscan by the converted type TIMESTAMP_MICROS as a timestamp adjusted to UTC",
    ),
}


def test_mutated_files(tmp_path: Path) -> None:
    report = fuzz.run(SEED, BUDGET_SECONDS, tmp_path)
    print(report.summary())
    assert report.cases >= 100, f"only {report.cases} cases ran in {BUDGET_SECONDS} s"
    assert report.reads.get("right", 0) > 0 and report.reads.get("error", 0) > 0, report.reads
    known = [f for f in report.findings if f.signature in KNOWN_FINDINGS]
    for f in known:
        print(f"known: {f.signature}: seed {f.seed} case {f.case}")
    new = [f for f in report.findings if f.signature not in KNOWN_FINDINGS]
    assert not new, f"{len(new)} findings (replay with python -m tests.support.fuzz --seed S --case N):\n\n" + "\n\n".join(
        f"{f.signature}\n{f.describe()}" for f in new
    )


@pytest.fixture(scope="module")
def known_cases_replayed(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[int, int], set[str]]:
    """The cases of :data:`KNOWN_FINDINGS` replayed in a child process (one per seed):
    (seed, case) -> the signatures of its findings."""
    found: dict[tuple[int, int], set[str]] = {key: set() for key, _ in KNOWN_FINDINGS.values()}
    for seed in sorted({seed for seed, _ in found}):
        cases = sorted(case for s, case in found if s == seed)
        report = fuzz.run(seed, 0, tmp_path_factory.mktemp(f"known-{seed}"), cases=cases)
        for f in report.findings:
            found[(seed, f.case)].add(f.signature)
    return found


@pytest.mark.parametrize(
    "signature",
    [pytest.param(sig, marks=pytest.mark.xfail(strict=True, reason=reason)) for sig, (_, reason) in KNOWN_FINDINGS.items()],
)
def test_known_finding_still_found(known_cases_replayed: dict[tuple[int, int], set[str]], signature: str) -> None:
    """Each known finding's case: it passes (and the strict xfail fails the suite) once the
    finding is fixed."""
    key, _ = KNOWN_FINDINGS[signature]
    assert signature not in known_cases_replayed[key]


#: (seed, case) -> what the fuzzer found there that is fixed now: replayed, they must find nothing
FIXED_FINDINGS: dict[tuple[int, int], str] = {
    (20261126, 1056): "v1 page whose definition levels are declared BIT_PACKED: read in the format's bit order, "
    "which pyarrow reverses (apache/arrow#42368)",
    (20261126, 4715): "OPTIONAL boolean declared REQUIRED: its levels read as values; the level histogram refuses it",
    (20261127, 2405): "FIXED_LEN_BYTE_ARRAY decimal of length 2**31 - 1: its digits counted by writing out a number "
    "of billions of digits (a hang)",
    (20261126, 9935): "ORC INT column declared BYTE in the footer: a filter bound on the narrow type read nothing; "
    "statistics the type cannot hold refuse the file",
    (20261127, 4589): "ORC INT column declared BYTE in the footer: its RLEv2 values read as byte runs",
}


@pytest.mark.parametrize("seed", sorted({seed for seed, _ in FIXED_FINDINGS}))
def test_fixed_findings_stay_fixed(tmp_path: Path, seed: int) -> None:
    cases = sorted(case for s, case in FIXED_FINDINGS if s == seed)
    report = fuzz.run(seed, 0, tmp_path, cases=cases)
    assert report.cases == len(cases)
    assert not report.findings, "\n\n".join(f"{FIXED_FINDINGS[(seed, f.case)]}\n{f.describe()}" for f in report.findings)


def test_a_crash_is_caught_and_named(tmp_path: Path) -> None:
    report = fuzz.run(SEED, 0, tmp_path, cases=[3, 4], crash_at=3)
    assert report.cases == 2
    crash = [f for f in report.findings if f.kind == "crash"]
    assert len(crash) == 1 and crash[0].case == 3 and "exit code" in crash[0].message


def test_round_trips_of_the_seeds_metadata(tmp_path: Path) -> None:
    """The decoded footers, page headers and protobuf messages encode back to the same bytes:
    a mutation changes only the field it names."""
    for path in fuzz.write_seeds(tmp_path):
        data = path.read_bytes()
        if path.suffix == ".parquet":
            lay = fuzz.parquet_layout(data)
            assert fuzz._with_footer(lay.body, lay.footer) == data
            for _, _, start, end, _ in lay.pages:
                assert fuzz.encode(fuzz._typed_at(data, start)[0]) == data[start:end]
        else:
            lay = fuzz.orc_layout(data)
            assert fuzz._orc_tail(lay) == data
            ps = data[-1 - data[-1] : -1]
            assert fuzz.encode_message(fuzz.parse_message(ps, "PostScript")) == ps
            raw = fuzz._unframe(data[lay.footer_at : len(data) - 1 - data[-1]], lay.codec)[0]
            assert fuzz.encode_message(fuzz.parse_message(raw, "Footer")) == raw
            for s in range(len(lay.stripes)):
                footer, start, length, streams = fuzz._stripe_streams(lay, s)
                assert fuzz.encode_message(footer) == fuzz._unframe(data[start : start + length], lay.codec)[0]
                for kind, _, off, n in streams:
                    if kind == 6:  # ROW_INDEX
                        index = fuzz._unframe(data[off : off + n], lay.codec)[0]
                        assert fuzz.encode_message(fuzz.parse_message(index, "RowIndex")) == index


def test_mutations_are_reproducible(tmp_path: Path) -> None:
    seeds = fuzz.load_seeds(Path(fuzz.write_seeds(tmp_path)[0]).parent)
    for case in range(40):
        a = fuzz.mutate(seeds, 7, case)[1]
        b = fuzz.mutate(seeds, 7, case)[1]
        assert (a.data, a.what) == (b.data, b.what)
    kinds = {fuzz.mutate(seeds, 7, case)[1].kind for case in range(300)}
    assert len(kinds) >= 15, kinds  # every kind of mutation of both formats comes up
