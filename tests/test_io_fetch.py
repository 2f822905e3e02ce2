"""One fetch for every format (``lazyscan.io.fetch``): the bytes of each range, counted into
the reader's counters; ranges outside the file reported with their index; one coalescing policy
chosen by the source, which ORC and Parquet files both follow."""

from __future__ import annotations

from pathlib import Path

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.orc as porc
import pytest

from lazyscan.errors import CorruptFileError
from lazyscan.format.counters import ReadCounters
from lazyscan.io.fetch import fetch, fetch_again, fetch_into
from lazyscan.io.source import LOCAL_READ, REMOTE_READ, ReadOptions, ShortReadError, open_source
from lazyscan.orc import OrcFile
from lazyscan.orc import proto as P
from lazyscan.parquet import ParquetFile


@pytest.fixture(scope="module")
def blob(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    data = np.random.default_rng(7).integers(0, 256, 1 << 20, dtype=np.uint8).tobytes()
    path = tmp_path_factory.mktemp("fetch") / "blob.bin"
    path.write_bytes(data)
    return path, data


RANGES = [(900_000, 100), (10, 50), (60, 40), (5_000, 0), (200_000, 70_000)]


def test_fetch_returns_each_range_and_counts_it(blob) -> None:
    path, data = blob
    counters = ReadCounters()
    with open_source(path) as src:
        views = fetch(src, RANGES, counters)
    assert [bytes(v) for v in views] == [data[o : o + n] for o, n in RANGES]
    # locally no gap is bridged: (10, 50) and (60, 40) touch and are one request, each other
    # range with bytes is one of its own; every byte counted once
    assert counters.requests == 3
    assert counters.bytes_fetched == sum(n for _, n in RANGES)
    assert counters.io_seconds > 0


def test_fetch_into_lays_ranges_back_to_back(blob) -> None:
    path, data = blob
    counters = ReadCounters()
    with open_source(path) as src:
        buf, starts = fetch_into(src, RANGES, counters, ReadOptions(coalesce_gap=1 << 20))
    assert starts == [0, 100, 150, 190, 190]
    assert buf.tobytes() == b"".join(data[o : o + n] for o, n in RANGES)
    assert counters.requests == 1  # a 1 MiB gap bridges all of them
    assert counters.bytes_fetched == 900_100 - 10  # the gaps between them too


@pytest.mark.parametrize("bad", [(-1, 10), (10, -1), ((1 << 20) - 5, 6), (2 << 20, 1)])
@pytest.mark.parametrize("into", [False, True])
def test_a_range_outside_the_file_is_a_short_read_naming_it(blob, bad, into) -> None:
    path, _ = blob
    counters = ReadCounters()
    with open_source(path) as src, pytest.raises(ShortReadError, match="outside") as info:
        (fetch_into if into else fetch)(src, [(0, 10), bad], counters)
    assert info.value.index == 1
    assert counters.requests == 0  # checked before any request


def test_fetch_into_of_checked_ranges_still_reports_a_file_that_ends_early(blob) -> None:
    path, _ = blob
    with open_source(path) as src, pytest.raises(ShortReadError, match="ends inside"):
        fetch_into(src, [(0, 10), ((1 << 20) - 5, 6)], ReadCounters(), ranges_checked=True)


def test_the_coalescing_policy_is_the_sources(blob, tmp_path) -> None:
    path, data = blob
    assert LOCAL_READ.coalesce_gap == 0 and REMOTE_READ.coalesce_gap == 1 << 20
    assert LOCAL_READ.coalesce_max == REMOTE_READ.coalesce_max == 64 << 20
    assert ReadOptions() == REMOTE_READ
    fs = fsspec.filesystem("memory")
    fs.pipe("/fetch/blob.bin", data)
    with open_source(path) as local, open_source("/fetch/blob.bin", fs) as remote:
        assert local.default_read == LOCAL_READ
        assert remote.default_read == REMOTE_READ
        counters = ReadCounters()
        views = fetch(remote, RANGES, counters)
        assert [bytes(v) for v in views] == [data[o : o + n] for o, n in RANGES]
        assert counters.requests == 1  # every gap is under 1 MiB: one request


def test_orc_and_parquet_files_follow_the_same_policy(tmp_path) -> None:
    table = pa.table({"a": np.arange(1000, dtype=np.int64), "b": [f"v{i % 7}" for i in range(1000)]})
    orc_path = tmp_path / "t.orc"
    porc.write_table(table, orc_path)
    parquet_path = tmp_path / "t.parquet"
    import pyarrow.parquet as pq

    pq.write_table(table, parquet_path)
    fs = fsspec.filesystem("memory")
    fs.pipe("/same/t.orc", orc_path.read_bytes())
    fs.pipe("/same/t.parquet", parquet_path.read_bytes())
    for f in (OrcFile(orc_path), ParquetFile(parquet_path)):
        assert f.read_options == LOCAL_READ
    for f in (OrcFile("/same/t.orc", fs), ParquetFile("/same/t.parquet", fs)):
        assert f.read_options == REMOTE_READ
    given = ReadOptions(coalesce_gap=123)
    assert OrcFile(orc_path, read=given).read_options == given


def test_a_stream_past_the_end_of_the_file_names_stripe_stream_and_column(tmp_path) -> None:
    path = tmp_path / "t.orc"
    porc.write_table(pa.table({"a": np.arange(50_000, dtype=np.int64)}), path, compression="uncompressed")
    f = OrcFile(path)
    data = next(st for st in f.stripe_footer(0).streams if st.column == f.column("a").id and st.kind == P.DATA)
    data.length = f.source.size  # as a damaged stripe footer could say
    with pytest.raises(CorruptFileError, match="ends inside stream DATA") as info:
        f.read_column(0, "a")
    loc = info.value.location
    assert (loc.file, loc.stripe, loc.column) == (str(path), 0, "a")


def test_fetch_again_asks_the_store_once_more_past_bytes_kept(blob) -> None:
    _, data = blob
    fs = fsspec.filesystem("memory")
    fs.pipe("/again/blob.bin", data)
    with open_source("/again/blob.bin", fs) as remote:
        remote.read_at(1000, 10)  # a small read keeps a window of the smallest request
        before = remote.stats.requests
        assert remote.read_at(1020, 10) == data[1020:1030] and remote.stats.requests == before
        counters = ReadCounters()
        again = fetch_again(remote, 1020, 10, counters)
        assert bytes(again) == data[1020:1030]
        assert remote.stats.requests == before + 1  # not served from the window
        assert counters.requests == 1 and counters.bytes_fetched == remote.min_request
