"""ORC files damaged in one structure give the right rows or a clear lazyscan error.

ORC keeps no checksums, so the reader checks what the structures say against each other:

- row-index positions: a wrong position is never used to seek (checked once per stripe, then by
  the seek itself: each span's runs must arrive at the next row group's position);
- the row index stride: without one (or with one that disagrees with the entries) no row index
  is used, neither to seek nor to prune;
- the stripe footer against the file's types: a stream moved to another column, an encoding
  relabelled, a type changed in the footer;
- run-length streams: a full read consumes every stream exactly;
- dictionaries: their lengths add up to exactly the bytes they hold;
- statistics of another kind than the column's type are not used.

Each test damages a file pyarrow wrote and compares every read with pyarrow's reading of the
original file (:mod:`tests.support.fuzz` finds more such cases at random).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as porc
import pytest

import lazyscan
from lazyscan.errors import CorruptFileError
from lazyscan.orc import OrcFile
from lazyscan.orc import kernels as K
from lazyscan.orc import proto as P
from lazyscan.orc.statistics import column_stats
from tests.support import fuzz
from tests.support.tables import table_difference

STRIDE = 500


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One uncompressed stripe of 2,400 rows in row groups of 500, every flat type with NULLs,
    strings in dictionaries: its metadata can be changed in place."""
    path = tmp_path_factory.mktemp("orc") / "original.orc"
    porc.write_table(fuzz.seed_table(), path, compression="uncompressed", row_index_stride=STRIDE,
                     dictionary_key_size_threshold=1.0)
    return path


def _reference(path: Path) -> pa.Table:
    return porc.ORCFile(str(path)).read()


def _write(tmp_path: Path, data: bytes, name: str = "damaged.orc") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def _rewritten(data: bytes, start: int, length: int, name: str, change: Callable[[list[fuzz.PField]], None]) -> bytes:
    """The file with the protobuf message ``name`` at ``start`` changed in place (same length)."""
    message = fuzz.parse_message(data[start : start + length], name)
    change(message)
    raw = fuzz.encode_message(message)
    assert len(raw) == length, "the change must keep the message's length"
    return data[:start] + raw + data[start + length :]


def _field(fields: list[fuzz.PField], number: int, index: int = 0) -> fuzz.PField:
    return [f for f in fields if f.number == number][index]


def _stream(data: bytes, kind: int, column: int) -> tuple[int, int]:
    """(offset, length) of a stream of stripe 0."""
    for k, c, off, n in fuzz._stripe_streams(fuzz.orc_layout(data), 0)[3]:
        if (k, c) == (kind, column):
            return off, n
    raise KeyError((kind, column))


def _each_read(path: Path, ref: pa.Table) -> Iterator[tuple[str, Callable[[], pa.Table], pa.Table]]:
    """(what, read, the rows it must give) for a whole read and row selections of every column:
    the first, a middle and the last row of each row group, and a few rows spread out."""
    f = OrcFile(path, timestamp_unit="ns")
    n = f.stripe(0).number_of_rows
    firsts = np.arange(0, n, STRIDE)
    picks = [np.array([r]) for g in firsts for r in (g, g + STRIDE // 2, min(g + STRIDE, n) - 1)]
    picks.append(np.array([3, 777, 1999]))
    for c in f.columns:
        yield f"{c.name} whole", lambda c=c: pa.table({c.name: f.read_column(0, c.name)}), ref.select([c.name])
        for rows in picks:
            yield (f"{c.name} rows {rows.tolist()}", lambda c=c, rows=rows: pa.table({c.name: f.read_column(0, c.name, rows)}),
                   ref.select([c.name]).take(pa.array(rows)))


def _right_or_refused(path: Path, ref: pa.Table) -> tuple[int, int]:
    """Every read of the file gives ``ref``'s rows or a CorruptFileError: (right, refused)."""
    right = refused = 0
    for what, read, want in _each_read(path, ref):
        try:
            got = read()
        except CorruptFileError:
            refused += 1
            continue
        assert table_difference(got, want, True) is None, f"{what}: {table_difference(got, want, True)}"
        right += 1
    return right, refused


def test_wrong_row_index_positions_never_give_other_rows(original: Path, tmp_path: Path) -> None:
    """Positions moved by one (a value more or fewer to skip, a byte further, a bit) or set to
    zero, in any entry of any column: selective reads give the original rows, reading the
    stripe from its start where the position cannot be trusted."""
    data = original.read_bytes()
    ref = _reference(original)
    rng = random.Random(4)
    mutants = []
    for column in range(1, 11):
        off, length = _stream(data, P.ROW_INDEX, column)
        index = fuzz.parse_message(data[off : off + length], "RowIndex")
        for e, entry in enumerate(index):
            positions = _field(entry.value, 1).value
            for j, old in enumerate(positions):
                for new in {old + 1, old - 1, 0} - {old}:
                    if new >= 0 and fuzz._encoded_length("varint", new) == fuzz._encoded_length("varint", old):
                        mutants.append((column, e, j, new))
    checked = 0
    for column, e, j, new in rng.sample(mutants, 60):
        off, length = _stream(data, P.ROW_INDEX, column)

        def change(index: list[fuzz.PField], e: int = e, j: int = j, new: int = new) -> None:
            _field(index[e].value, 1).value[j] = new

        path = _write(tmp_path, _rewritten(data, off, length, "RowIndex", change))
        right, _ = _right_or_refused(path, ref)
        assert right > 0, (column, e, j, new)  # a position is never needed to read the stripe whole
        checked += 1
    assert checked == 60


def _with_footer(data: bytes, change: Callable[[list[fuzz.PField]], None]) -> bytes:
    lay = fuzz.orc_layout(data)
    change(lay.footer)
    return fuzz._orc_tail(lay, footer=lay.footer)


@pytest.mark.parametrize("stride", [0, 250, 2400])
def test_a_stride_that_disagrees_with_the_row_index_disables_it(original: Path, tmp_path: Path, stride: int) -> None:
    """rowIndexStride 0 (or one that does not give the stripe as many row groups as its row
    indexes have entries) beside row indexes: their statistics, Bloom filters and positions
    would describe other rows than the stride places them on."""

    def change(footer: list[fuzz.PField]) -> None:
        _field(footer, 8).value = stride

    path = _write(tmp_path, _with_footer(original.read_bytes(), change))
    ref = _reference(original)
    f = OrcFile(path)
    assert all(f.row_group_statistics(0, c.name) is None for c in f.columns)
    assert _right_or_refused(path, ref)[1] == 0
    for k in (0, 1497, 1500, 1503, 7197):  # k is 3 * row: values at row-group edges
        got = lazyscan.scan(str(path), where=f"k = {k}", threads=1).to_table()
        assert got.column("k").to_pylist() == [k], k


def test_a_type_changed_in_the_footer_is_refused(original: Path, tmp_path: Path) -> None:
    """TIMESTAMP relabelled BINARY: its statistics stay timestamp statistics, so the footer
    contradicts itself (the streams hold the other type's values)."""
    ts = fuzz.seed_table().column_names.index("ts") + 1

    def change(footer: list[fuzz.PField]) -> None:
        _field(_field(footer, 4, ts).value, 1).value = P.BINARY

    path = _write(tmp_path, _with_footer(original.read_bytes(), change))
    with pytest.raises(CorruptFileError, match="contradicts its timestamp statistics") as e:
        OrcFile(path)
    assert "'ts'" in str(e.value)


def _narrowed(data: bytes, column: int, kind: int) -> bytes:
    """The file with the footer's type of ORC column ``column`` changed to ``kind``."""

    def change(footer: list[fuzz.PField]) -> None:
        _field(_field(footer, 4, column).value, 1).value = kind

    return _with_footer(data, change)


def test_an_int_column_narrowed_beyond_its_statistics_is_refused_at_open(original: Path, tmp_path: Path) -> None:
    """``k`` (INT, 0 to 7,197) declared BYTE: a filter bound on the narrow type (``k BETWEEN
    3474 AND 7170`` is false for every byte) would read nothing, so the file is refused."""
    path = _write(tmp_path, _narrowed(original.read_bytes(), 1, P.BYTE))
    with pytest.raises(CorruptFileError, match=r"type tinyint of column 1 cannot hold its statistics' minimum 0 and maximum \d+") as e:
        lazyscan.scan(path, where="k BETWEEN 3474 AND 7170").to_table()
    assert "'k'" in str(e.value)


def test_an_int_column_declared_byte_is_refused_where_its_stripe_is_read(tmp_path: Path) -> None:
    """An INT column whose values a byte holds, declared BYTE: statistics cannot tell, but
    bytes have one encoding, DIRECT, and the stripe says DIRECT_V2 (its RLEv2 runs would read
    as byte runs). Declared SHORT it reads right: same integer encodings."""
    rng = np.random.default_rng(3)
    table = pa.table({"small": pa.array(rng.integers(0, 100, 3000), pa.int32()),
                      "x": pa.array(rng.normal(size=3000))})
    original = tmp_path / "small.orc"
    porc.write_table(table, original, compression="uncompressed", row_index_stride=STRIDE)
    as_byte = _write(tmp_path, _narrowed(original.read_bytes(), 1, P.BYTE), "byte.orc")
    f = OrcFile(as_byte)
    for rows in (None, [5], [2999]):
        with pytest.raises(CorruptFileError, match="encoding DIRECT_V2 for a tinyint column") as e:
            f.read_column(0, "small", rows)
        assert "stripe 0" in str(e.value)
    with pytest.raises(CorruptFileError, match="encoding DIRECT_V2 for a tinyint column"):
        lazyscan.scan(as_byte, columns=["x"], where="small = 7").to_table()
    as_short = _write(tmp_path, _narrowed(original.read_bytes(), 1, P.SHORT), "short.orc")
    got = lazyscan.scan(as_short, where="small = 7").to_table()
    want = table.filter(pc.equal(table["small"], 7))
    assert got.num_rows == want.num_rows > 0
    assert got.schema.field("small").type == pa.int16()
    assert got.to_pylist() == want.to_pylist()


@pytest.mark.parametrize(("to_column", "why"), [(0, "for a struct column"), (7, "two DATA streams for one column")])
def test_a_stream_moved_to_another_column_is_refused(original: Path, tmp_path: Path, to_column: int, why: str) -> None:
    """The DATA stream of ``ts`` given to the root struct, or to ``d`` (which has its own)."""
    data = original.read_bytes()
    lay = fuzz.orc_layout(data)
    _, start, length, _ = fuzz._stripe_streams(lay, 0)

    def change(message: list[fuzz.PField]) -> None:
        for f in message:
            d = fuzz._fields_dict(f.value) if f.number == 1 else {}
            if d.get(1, 0) == P.DATA and d.get(2) == 8:
                _field(f.value, 2).value = to_column
                return
        raise AssertionError("no DATA stream of column 8")

    path = _write(tmp_path, _rewritten(data, start, length, "StripeFooter", change))
    f = OrcFile(path)
    for c in f.columns:  # the stripe is inconsistent: every column's read names it
        with pytest.raises(CorruptFileError, match=why) as e:
            f.read_column(0, c.name, [5])
        assert "stripe 0" in str(e.value)


def test_an_encoding_relabelled_from_rle_v2_to_v1_is_refused(original: Path, tmp_path: Path) -> None:
    """DIRECT_V2 relabelled DIRECT: RLE v1 decoding of RLE v2 runs does not end where the
    stream ends; a selection gives the original rows or the same refusal."""
    data = original.read_bytes()
    lay = fuzz.orc_layout(data)
    _, start, length, _ = fuzz._stripe_streams(lay, 0)
    ts = 8

    def change(message: list[fuzz.PField]) -> None:
        encoding = _field(message, 2, ts)
        assert _field(encoding.value, 1).value == P.DIRECT_V2
        _field(encoding.value, 1).value = P.DIRECT

    path = _write(tmp_path, _rewritten(data, start, length, "StripeFooter", change))
    with pytest.raises(CorruptFileError, match="stream"):
        OrcFile(path).read_column(0, "ts")
    right, refused = _right_or_refused(path, _reference(original))
    assert right > 0 and refused > 0


def test_dictionary_lengths_must_add_up_to_its_bytes(original: Path, tmp_path: Path) -> None:
    """A byte of the dictionary's LENGTH stream set to zero: lengths that add up to fewer bytes
    than DICTIONARY_DATA holds would misplace every entry after the change."""
    data = original.read_bytes()
    ref = _reference(original)
    s = fuzz.seed_table().column_names.index("s") + 1
    off, length = _stream(data, P.LENGTH, s)
    messages = set()
    for i in range(length):
        if data[off + i] == 0:
            continue
        path = _write(tmp_path, data[: off + i] + b"\0" + data[off + i + 1 :])
        for what, read, want in _each_read(path, ref):
            if not what.startswith("s "):
                continue
            try:
                got = read()
            except CorruptFileError as e:
                messages.add(str(e).split(":")[0])
                continue
            assert table_difference(got, want, True) is None, what
    assert "dictionary lengths add up to fewer or more bytes than DICTIONARY_DATA holds" in {
        "dictionary lengths add up to fewer or more bytes than DICTIONARY_DATA holds" if m.startswith("dictionary lengths") else m
        for m in messages
    }


def test_stripe_statistics_that_contradict_the_file_are_not_used(original: Path, tmp_path: Path) -> None:
    """The stripe's maximum of ``k`` set to 0 (the file's says 7197): a scan that believed it
    would take every row of the stripe for ``k < 7170`` without evaluating the predicate."""
    data = original.read_bytes()
    lay = fuzz.orc_layout(data)
    meta = fuzz.parse_message(fuzz._unframe(data[lay.metadata_at : lay.footer_at], lay.codec)[0], "Metadata")
    k_stats = _field(_field(meta, 1).value, 1, 1).value  # stripe 0, column 1
    _field(_field(k_stats, 2).value, 2).value = 0  # intStatistics.maximum (zigzag 0)
    path = _write(tmp_path, fuzz._orc_tail(lay, metadata=fuzz.encode_message(meta)))
    f = OrcFile(path)
    assert f.stripe_statistics(0, "k").maximum == 0 and f.file_statistics("k").maximum == 7197
    assert f.statistics(0, "k") is None
    got = lazyscan.scan(str(path), where="k < 7170", columns=["k"], threads=1).to_table()
    assert got.column("k").to_pylist() == list(range(0, 7170, 3))


def test_statistics_of_another_kind_than_the_column_are_not_used() -> None:
    double = P.ColumnStatistics(number_of_values=10, has_null=False, kind="double", minimum=0.5, maximum=9.5)
    assert column_stats(double, pa.int8(), 10) is None
    assert column_stats(double, pa.float64(), 10) is not None


def _short_repeat(value: int, n: int) -> bytes:
    """An RLE v2 SHORT_REPEAT run of ``n`` (3 to 10) unsigned one-byte values."""
    return bytes([n - 3, value])


class TestRunChecks:
    """The run-length kernels' checks: a whole stream ends where its last value does, a seek's
    runs arrive at the next position, runs past the values wanted are walked over."""

    runs = _short_repeat(7, 5) + _short_repeat(9, 5)  # 10 values in 4 bytes

    def decode(self, buf: bytes, count: int, check_k: int, check_pos: int, skip: int = 0) -> tuple[int, list[int]]:
        arr = np.frombuffer(buf, np.uint8)
        out = np.zeros(count, np.int64)
        r = K.int_rle_v2(arr, 0, len(arr), False, skip, count, out, check_k, check_pos)
        return r, out.tolist()

    def test_a_whole_stream_ends_at_its_last_value(self) -> None:
        assert self.decode(self.runs, 10, 10, 4) == (4, [7] * 5 + [9] * 5)
        assert self.decode(self.runs + b"\0", 10, 10, 5)[0] == K.ERR_MISPLACED  # a byte after the last value
        assert self.decode(self.runs, 8, 8, 4)[0] == K.ERR_MISPLACED  # the last run overruns the values
        assert self.decode(self.runs, 12, 12, 4)[0] == K.ERR_TRUNCATED
        assert self.decode(self.runs, 8, -1, -1)[0] == 4  # unchecked

    def test_runs_past_the_values_wanted_are_walked_to_the_check(self) -> None:
        assert self.decode(self.runs, 3, 10, 4) == (4, [7, 7, 7])
        assert self.decode(self.runs, 3, 5, 2) == (2, [7, 7, 7])  # the next row group starts the second run
        assert self.decode(self.runs, 3, 6, 2)[0] == K.ERR_MISPLACED  # ... not one value into it
        assert self.decode(self.runs, 3, 5, 3)[0] == K.ERR_MISPLACED  # ... nor a byte further
        assert self.decode(self.runs, 2, 5, 2, skip=2) == (2, [7, 7])  # skipped values count

    def test_rle_v1_and_byte_runs(self) -> None:
        v1 = bytes([2, 0, 7, 2, 0, 9])  # two runs of 5, delta 0
        arr = np.frombuffer(v1, np.uint8)
        out = np.zeros(10, np.int64)
        assert K.int_rle_v1(arr, 0, 6, False, 0, 10, out, 10, 6) == 6
        assert K.int_rle_v1(arr, 0, 6, False, 0, 2, out, 10, 6) == 6
        assert K.int_rle_v1(arr, 0, 6, False, 0, 2, out, 10, 5) == K.ERR_MISPLACED
        byte_runs = np.frombuffer(bytes([2, 7, 0xFE, 1, 2]), np.uint8)  # 5 times 7, then 2 literals
        small = np.zeros(7, np.uint8)
        assert K.byte_rle(byte_runs, 0, 5, 0, 7, small, 7, 5) == 5 and small.tolist() == [7] * 5 + [1, 2]
        assert K.byte_rle(byte_runs, 0, 5, 0, 1, small, 5, 2) == 2
        assert K.byte_rle(byte_runs, 0, 5, 0, 6, small, 6, 5) == K.ERR_MISPLACED
