"""A Delta Lake or Apache Iceberg table's folder is never read as a pile of Parquet files unless
asked: such a folder keeps the files of older versions (and, in Iceberg, rows removed by delete
files), so reading every file in it returns rows the table no longer has. Here: a table written
with 10 rows, then overwritten with 3, is refused with a :class:`TableFolderError` naming the
table and the ``raw_files`` option; with ``raw_files=True`` the raw files are read (13 rows, as
asked), while the table's own reader gives 3, and so does ``lazyscan.scan`` of the table's folder,
which reads the table (a path inside it is refused, naming the table to read instead). The same for a data file or a folder inside the
table, a folder holding a table, an object store, the command line and both Spark routes; plain
folders (a subfolder named ``metadata`` or ``data`` included) read as before."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.errors import OptionError, SourceError, TableFolderError

FIRST = pa.table({"id": pa.array(range(10), pa.int64()), "name": [f"n{i}" for i in range(10)]})
SECOND = pa.table({"id": pa.array([100, 101, 102], pa.int64()), "name": ["x", "y", "z"]})


def _sorted_ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def _parquet_rows(folder: Path) -> list[int]:
    """The ids of every Parquet file under ``folder`` (hidden folders left out), read with
    pyarrow: what a raw read must give."""
    ids: list[int] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not d.startswith(("_", "."))]
        for name in filenames:
            if name.endswith(".parquet"):
                ids += pq.read_table(os.path.join(dirpath, name)).column("id").to_pylist()
    return sorted(ids)


def _data_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.parquet") if not any(part.startswith("_") for part in p.relative_to(folder).parts))


@pytest.fixture
def delta_table(tmp_path: Path) -> Path:
    """A Delta table written with 10 rows, then overwritten with 3."""
    import deltalake

    root = tmp_path / "sales"
    deltalake.write_deltalake(str(root), FIRST)
    deltalake.write_deltalake(str(root), SECOND, mode="overwrite")
    return root


@pytest.fixture
def partitioned_delta_table(tmp_path: Path) -> Path:
    """A Delta table partitioned by ``part``: 10 rows, then overwritten with 3."""
    import deltalake

    root = tmp_path / "parted"
    deltalake.write_deltalake(str(root), FIRST.append_column("part", pa.array(["a"] * 10)), partition_by=["part"])
    deltalake.write_deltalake(
        str(root), SECOND.append_column("part", pa.array(["a"] * 3)), partition_by=["part"], mode="overwrite"
    )
    return root


@pytest.fixture
def iceberg_table(tmp_path: Path) -> Any:
    """An Iceberg table in pyiceberg's SQL catalog on SQLite: 10 rows appended, then
    overwritten with 3 (the first data file stays under ``data/``)."""
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    catalog = SqlCatalog("tests", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=f"file://{warehouse}")
    catalog.create_namespace("shop")
    table = catalog.create_table("shop.sales", schema=FIRST.schema)
    table.append(FIRST)
    table.overwrite(SECOND)
    return table


def _iceberg_root(table: Any) -> Path:
    location = table.location()
    return Path(location[len("file://") :] if location.startswith("file://") else location)


# ---- Delta Lake ----------------------------------------------------------------------------------


def test_delta_folder_reads_the_snapshot_not_the_folder(delta_table: Path) -> None:
    import deltalake

    # the trap: the folder holds 13 rows, the table 3
    assert lazyscan.scan(str(delta_table), raw_files=True).to_table().num_rows == 13
    got = lazyscan.scan(str(delta_table)).to_table()
    assert _sorted_ids(got) == [100, 101, 102]
    assert _sorted_ids(deltalake.DeltaTable(str(delta_table)).to_pyarrow_table()) == [100, 101, 102]
    assert _sorted_ids(lazyscan.scan(str(delta_table), version=0).to_table()) == list(range(10))
    # the table in a list of paths is refused: a table is read on its own
    with pytest.raises(TableFolderError) as info:
        lazyscan.scan([str(delta_table)])
    message = str(info.value)
    assert f"{delta_table} is a Delta Lake table" in message
    assert str(delta_table / "_delta_log") in message
    assert "raw_files=True" in message and "--raw-files" in message and "rawFiles" in message
    assert f"lazyscan.scan({str(delta_table)!r})" in message
    assert info.value.kind == "delta" and info.value.root == str(delta_table)
    assert isinstance(info.value, SourceError)


def test_delta_raw_files_reads_every_file_as_asked(delta_table: Path) -> None:
    import deltalake

    raw = lazyscan.scan(str(delta_table), raw_files=True).to_table()
    assert raw.num_rows == 13
    assert _sorted_ids(raw) == _parquet_rows(delta_table)
    table = deltalake.DeltaTable(str(delta_table)).to_pyarrow_table()
    assert _sorted_ids(table) == [100, 101, 102]
    # the option has the same name as a string (Spark options, the command line's -o)
    assert lazyscan.scan(str(delta_table), raw_files="true", where="id < 5").to_table().num_rows == 5


def test_delta_data_file_inside_is_refused(delta_table: Path) -> None:
    data_file = _data_files(delta_table)[0]
    with pytest.raises(TableFolderError, match=r"lies inside a Delta Lake table at .*sales") as info:
        lazyscan.scan(str(data_file))
    assert f"lazyscan.scan({str(delta_table)!r}) reads the table" in str(info.value)
    assert lazyscan.scan(str(data_file), raw_files=True).to_table().num_rows in (10, 3)


def test_delta_partition_folder_and_glob_inside_are_refused(partitioned_delta_table: Path) -> None:
    with pytest.raises(TableFolderError, match="lies inside a Delta Lake table"):
        lazyscan.scan(str(partitioned_delta_table / "part=a"))
    with pytest.raises(TableFolderError, match="lies inside a Delta Lake table"):
        lazyscan.scan(str(partitioned_delta_table / "part=a" / "*.parquet"))
    with pytest.raises(TableFolderError, match="is a Delta Lake table"):
        lazyscan.scan([str(partitioned_delta_table), str(_data_files(partitioned_delta_table)[0])])
    assert lazyscan.scan(str(partitioned_delta_table), raw_files=True).to_table().num_rows == 13


def test_folder_holding_a_table_is_refused(delta_table: Path) -> None:
    pq.write_table(FIRST, delta_table.parent / "plain.parquet")
    with pytest.raises(TableFolderError, match=r"holds a Delta Lake table at .*sales"):
        lazyscan.scan(str(delta_table.parent))
    with pytest.raises(TableFolderError, match="holds a Delta Lake table"):
        lazyscan.discover(str(delta_table.parent))
    assert lazyscan.scan(str(delta_table.parent), raw_files=True).to_table().num_rows == 23


# ---- Apache Iceberg ------------------------------------------------------------------------------


def test_iceberg_folder_reads_the_snapshot_and_raw_files_reads_the_data_files(iceberg_table: Any) -> None:
    root = _iceberg_root(iceberg_table)
    assert _sorted_ids(lazyscan.scan(str(root)).to_table()) == [100, 101, 102]
    with pytest.raises(TableFolderError) as info:
        lazyscan.scan([str(root)])
    message = str(info.value)
    assert f"{root} is an Apache Iceberg table" in message
    assert str(root / "metadata") in message and ".metadata.json" in message
    assert "raw_files=True" in message and f"lazyscan.scan({str(root)!r})" in message
    assert info.value.kind == "iceberg"
    # the raw read lists the data files only: the metadata folder holds JSON and Avro
    raw = lazyscan.scan(str(root), raw_files=True).to_table()
    assert raw.num_rows == 13
    assert _sorted_ids(raw) == _parquet_rows(root / "data")
    assert _sorted_ids(iceberg_table.scan().to_arrow()) == [100, 101, 102]


def test_iceberg_delete_leaves_old_rows_in_the_folder(iceberg_table: Any) -> None:
    iceberg_table.delete("id = 101")
    root = _iceberg_root(iceberg_table)
    assert _sorted_ids(lazyscan.scan(str(root)).to_table()) == [100, 102]
    assert _sorted_ids(lazyscan.scan(iceberg_table).to_table()) == [100, 102]
    raw = lazyscan.scan(str(root), raw_files=True).to_table()
    assert _sorted_ids(raw) == _parquet_rows(root / "data")
    assert 101 in _sorted_ids(raw)
    assert _sorted_ids(iceberg_table.scan().to_arrow()) == [100, 102]


def test_iceberg_data_folder_and_file_inside_are_refused(iceberg_table: Any) -> None:
    root = _iceberg_root(iceberg_table)
    with pytest.raises(TableFolderError, match=r"lies inside an Apache Iceberg table at .*sales"):
        lazyscan.scan(str(root / "data"))
    data_file = _data_files(root / "data")[0]
    with pytest.raises(TableFolderError, match="lies inside an Apache Iceberg table"):
        lazyscan.scan(str(data_file))
    assert lazyscan.scan(str(root / "data"), raw_files=True).to_table().num_rows == 13


# ---- plain folders: no false alarm --------------------------------------------------------------


def test_plain_folders_read_as_before(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    (plain / "metadata").mkdir(parents=True)
    (plain / "data").mkdir()
    pq.write_table(FIRST, plain / "a.parquet")
    # a subfolder named metadata without Iceberg metadata files is a folder of data like any other
    pq.write_table(SECOND, plain / "metadata" / "b.parquet")
    (plain / "metadata" / "notes.metadata.json").write_text("{}")
    pq.write_table(SECOND, plain / "data" / "c.parquet")
    files = [os.path.relpath(f.path, plain) for f in lazyscan.discover(str(plain)).files]
    assert sorted(files) == ["a.parquet", "data/c.parquet", "metadata/b.parquet", "metadata/notes.metadata.json"]
    (plain / "metadata" / "notes.metadata.json").unlink()
    got = lazyscan.scan(str(plain)).to_table()
    assert _sorted_ids(got) == _parquet_rows(plain)
    assert lazyscan.scan(str(plain / "data")).to_table().num_rows == 3
    assert lazyscan.scan(str(plain / "data" / "c.parquet")).to_table().num_rows == 3
    assert lazyscan.scan(str(plain / "metadata")).to_table().num_rows == 3


# ---- the command line ---------------------------------------------------------------------------


def test_cli_reads_a_table_folder_as_the_table_and_raw_files_on_request(
    delta_table: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from lazyscan.cli.main import main

    out = delta_table.parent / "raw.parquet"
    assert main(["scan", str(delta_table), "--output", str(out)]) == 0
    assert pq.read_table(out).num_rows == 3
    assert main(["scan", str(_data_files(delta_table)[0])]) == 2
    err = capsys.readouterr().err
    assert "lies inside a Delta Lake table" in err and "--raw-files" in err
    assert main(["scan", str(delta_table), "--raw-files", "--output", str(out)]) == 0
    assert pq.read_table(out).num_rows == 13
    assert main(["scan", str(delta_table), "-o", "raw_files=true", "--output", str(out)]) == 0
    assert pq.read_table(out).num_rows == 13


# ---- object stores ------------------------------------------------------------------------------


def _upload_folder(s3_server: Any, folder: Path, bucket: str, prefix: str) -> str:
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            s3_server.upload(path, bucket, f"{prefix}/{path.relative_to(folder).as_posix()}")
    return f"{bucket}/{prefix}"


@pytest.mark.parametrize("kind", ["arrow", "fsspec"])
def test_object_store_table_folders(s3_server: Any, delta_table: Path, iceberg_table: Any, kind: str) -> None:
    fs = s3_server.arrow_filesystem() if kind == "arrow" else s3_server.fsspec_filesystem()
    bucket = s3_server.bucket(f"tables-{kind}")
    delta = _upload_folder(s3_server, delta_table, bucket, "lake/sales")
    iceberg = _upload_folder(s3_server, _iceberg_root(iceberg_table), bucket, "ice/sales")
    for i, path in enumerate(_data_files(delta_table)):  # the same files without a log: plain data
        s3_server.upload(path, bucket, f"plain/data/{i}.parquet")
    s3_server.upload(_data_files(delta_table)[0], bucket, "plain/metadata/x.parquet")
    # the table's folder reads as the table: deltalake reads the log (storage_options), the
    # filesystem given the data files
    with pytest.raises(SourceError, match="storage_options="):
        lazyscan.scan(delta, filesystem=fs)
    assert _sorted_ids(lazyscan.scan(delta, filesystem=fs, storage_options=_storage_options(s3_server)).to_table()) == [100, 101, 102]
    assert lazyscan.scan(delta, filesystem=fs, raw_files=True).to_table().num_rows == 13
    data_file = next(p for p in _keys(fs, delta) if p.endswith(".parquet") and "_delta_log" not in p)
    with pytest.raises(TableFolderError, match="lies inside a Delta Lake table"):
        lazyscan.scan(data_file, filesystem=fs)
    # the Iceberg table's folder reads as the table; copied from local disk, with its
    # locations re-rooted (the error says how)
    with pytest.raises(OptionError, match=r"on local disk.*reroot="):
        lazyscan.scan(iceberg, filesystem=fs)
    reroot = {iceberg_table.location(): iceberg}
    assert _sorted_ids(lazyscan.scan(iceberg, filesystem=fs, reroot=reroot).to_table()) == [100, 101, 102]
    assert lazyscan.scan(iceberg, filesystem=fs, raw_files=True).to_table().num_rows == 13
    with pytest.raises(TableFolderError, match="lies inside an Apache Iceberg table"):
        lazyscan.scan(f"{iceberg}/data", filesystem=fs)
    ice_file = next(p for p in _keys(fs, f"{iceberg}/data") if p.endswith(".parquet"))
    with pytest.raises(TableFolderError, match="lies inside an Apache Iceberg table"):
        lazyscan.scan(ice_file, filesystem=fs)
    with pytest.raises(TableFolderError, match="holds a Delta Lake table"):
        lazyscan.scan(f"{bucket}/lake", filesystem=fs)
    # plain data, in folders named data and metadata: no false alarm
    assert lazyscan.scan(f"{bucket}/plain/data", filesystem=fs).to_table().num_rows == 13
    assert lazyscan.scan(f"{bucket}/plain/data/0.parquet", filesystem=fs).to_table().num_rows in (10, 3)
    assert lazyscan.scan(f"{bucket}/plain", filesystem=fs).to_table().num_rows in (23, 16)


def _storage_options(s3_server: Any) -> dict[str, str]:
    return dict(s3_server.storage_options())


def _keys(fs: Any, folder: str) -> list[str]:
    import pyarrow.fs as pafs

    if isinstance(fs, pafs.FileSystem):
        return sorted(i.path for i in fs.get_file_info(pafs.FileSelector(folder, recursive=True)) if i.type == pafs.FileType.File)
    return sorted(fs.find(folder))


# ---- Spark ------------------------------------------------------------------------------------------


@pytest.mark.spark
@pytest.mark.parametrize("route", ["tasks", "source"])
def test_spark_read_reads_a_table_folder_as_the_table(delta_table: Path, route: str) -> None:
    """Spark reads the snapshot (3 rows, not the folder's 13); Spark's own reader has no Delta
    connector here, so forcing it is refused; ``rawFiles`` reads the folder's files on purpose."""
    import lazyscan.spark
    from tests.spark_support import get_spark

    spark = get_spark()
    df = lazyscan.spark.read(spark, str(delta_table), force="lazyscan", route=route)
    assert sorted(r.id for r in df.collect()) == [100, 101, 102]
    with pytest.raises(TableFolderError, match="is a Delta Lake table"):
        lazyscan.spark.read(spark, str(delta_table), force="spark")
    raw = lazyscan.spark.read(spark, str(delta_table), force="lazyscan", route=route, rawFiles="true")
    assert raw.count() == 13


@pytest.mark.spark
def test_spark_data_source_reads_a_table_folder_as_the_table(delta_table: Path) -> None:
    from tests.spark_support import get_spark

    spark = get_spark()
    assert spark.read.format("lazyscan").load(str(delta_table)).count() == 3
    assert spark.read.format("lazyscan").option("rawFiles", "true").load(str(delta_table)).count() == 13
