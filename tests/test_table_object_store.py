"""An Iceberg table on an object store read in-process: ``lazyscan.scan`` plans it reading the
metadata, manifests and delete files through the filesystem the data files are read with.

The table (``iceberg_with_deletes``: position deletes, and an equality delete pyiceberg refuses)
is written with pyiceberg on local disk and copied to moto's S3 server; its locations are
re-rooted to the copy. The rows are pyiceberg's read of the local table (less the equality
delete's keys) and the in-process read of the local table, by the folder and by its metadata
file, current and older snapshot; the profiles count the same; manifests are fetched once.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import lazyscan
from lazyscan.errors import OptionError, TableFolderError
from tests.test_spark_tables import TABLE_COUNTERS, iceberg_with_deletes  # noqa: F401  (a fixture)
from tests.test_tables_iceberg import latest_metadata

WHERES = ["true", "v IS NULL OR id < 700", "part = 'b' AND id > 900", "id < 1500"]


def _ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def _filesystem(s3_server: Any, kind: str) -> Any:
    return s3_server.arrow_filesystem() if kind == "arrow" else s3_server.fsspec_filesystem()


def _uploaded(s3_server: Any, t: dict[str, Any], prefix: str) -> tuple[str, dict[str, str]]:
    """The table's copy on S3 (``bucket/prefix``, no scheme) and the re-rooting to it."""
    uri = s3_server.upload_tree(t["folder"], s3_server.bucket("iceberg-in-process"), prefix)
    return uri.removeprefix("s3://"), {t["table"].metadata.location: uri}


def _gets(s3_server: Any) -> Counter[str]:
    """Object GET and HEAD requests logged so far, by key."""
    text = Path(s3_server.log).read_text(errors="replace")
    return Counter(m.group(2).split("?", 1)[0] for m in re.finditer(r'"(GET|HEAD) (/\S+)', text) if "/moto-api" not in m.group(2))


@pytest.mark.parametrize("kind", ["arrow", "fsspec"])
def test_iceberg_table_on_an_object_store_reads_as_the_local_table(
    s3_server: Any, iceberg_with_deletes: dict[str, Any], kind: str  # noqa: F811
) -> None:
    t = iceberg_with_deletes
    fs = _filesystem(s3_server, kind)
    path, reroot = _uploaded(s3_server, t, f"rows-{kind}")
    metadata_file = f"{path}/metadata/{latest_metadata(t['folder']).name}"
    rows = t["rows"]
    for where in WHERES:
        local = lazyscan.scan(str(t["folder"]), where=where)
        want = local.to_table()
        for source in (path, metadata_file):
            scan = lazyscan.scan(source, where=where, filesystem=fs, reroot=reroot)
            got = scan.to_table()
            assert got.sort_by("id").equals(want.sort_by("id")), (source, where)
            assert {k: scan.profile[k] for k in TABLE_COUNTERS} == {k: local.profile[k] for k in TABLE_COUNTERS}, (source, where)
    # pyiceberg's rows (position deletes applied; the equality delete's keys gone: pyiceberg
    # refuses equality deletes, so the fixture removes them from its read)
    whole = lazyscan.scan(path, filesystem=fs, reroot=reroot)
    assert _ids(whole.to_table()) == _ids(rows)
    assert whole.profile["rows_removed_position_deletes"] and whole.profile["rows_removed_equality_deletes"]
    selected = lazyscan.scan(path, where="v IS NULL OR id < 700", filesystem=fs, reroot=reroot).to_table()
    assert _ids(selected) == _ids(rows.filter(pc.or_(pc.is_null(rows["v"]), pc.less(rows["id"], 700))))
    # the older snapshot: position deletes only, as pyiceberg read it then
    for source in (path, metadata_file):
        old = lazyscan.scan(source, columns=["id"], filesystem=fs, reroot=reroot, version=t["position_snapshot"])
        assert _ids(old.to_table()) == _ids(t["rows_after_positions"])
        assert old.profile["rows_removed_equality_deletes"] == 0


def test_iceberg_table_on_an_object_store_fetches_each_manifest_once(
    s3_server: Any, iceberg_with_deletes: dict[str, Any]  # noqa: F811
) -> None:
    """Planning reads the metadata JSON, the manifest list, each manifest and each delete file
    once; the data files are read as any plain file (footer and column ranges)."""
    t = iceberg_with_deletes
    fs = s3_server.arrow_filesystem()
    path, reroot = _uploaded(s3_server, t, "requests")
    before = _gets(s3_server)
    scan = lazyscan.scan(path, where="id < 1500", filesystem=fs, reroot=reroot)
    scan.to_table()
    seen = _gets(s3_server) - before
    bucket_prefix = f"/{path}/"
    ours = {k.removeprefix(bucket_prefix): n for k, n in seen.items() if k.startswith(bucket_prefix)}
    assert ours, seen
    planning = {k: n for k, n in ours.items() if k.startswith("metadata/")}
    assert any(k.endswith(".metadata.json") for k in planning) and any(k.endswith(".avro") for k in planning)
    assert all(n == 1 for n in planning.values()), planning
    data = {k: n for k, n in ours.items() if k.startswith("data/")}
    deletes = [k for k in data if "delete" in k]
    assert all(n == 1 for k, n in data.items() if k in deletes), data
    # a data file costs a bounded number of requests, whatever the table level adds
    assert all(n <= 4 for n in data.values()), data
    assert set(ours) <= set(planning) | set(data), ours
    # listings: the folder (finding the table's metadata), the metadata folder (its latest
    # version) and the look for a table above the folder
    listings = seen[f"/{path.split('/', 1)[0]}"]
    assert listings <= 3 and sum(seen.values()) == sum(ours.values()) + listings, seen


@pytest.mark.parametrize("kind", ["arrow", "fsspec"])
def test_paths_inside_an_iceberg_table_on_an_object_store_are_refused(
    s3_server: Any, iceberg_with_deletes: dict[str, Any], kind: str  # noqa: F811
) -> None:
    """As on local disk: the data folder and a data file of the table are refused (their files
    include what the table removed), a folder holding the table too; ``raw_files=True`` reads a
    data file as it is."""
    t = iceberg_with_deletes
    fs = _filesystem(s3_server, kind)
    path, _ = _uploaded(s3_server, t, f"inside-{kind}")
    data_file = next(
        p.relative_to(t["folder"]).as_posix() for p in sorted((t["folder"] / "data").rglob("*.parquet")) if "delete" not in p.name
    )
    for inside in (f"{path}/data", f"{path}/{data_file}"):
        with pytest.raises(TableFolderError, match="lies inside an Apache Iceberg table"):
            lazyscan.scan(inside, filesystem=fs)
        local = str(t["folder"] / inside.removeprefix(f"{path}/"))
        with pytest.raises(TableFolderError, match="lies inside an Apache Iceberg table"):
            lazyscan.scan(local)
    raw = lazyscan.scan(f"{path}/{data_file}", filesystem=fs, raw_files=True).to_table()
    assert _ids(raw) == _ids(pq.read_table(t["folder"] / data_file))  # its rows as they are, deleted ones too
    with pytest.raises(TableFolderError, match="holds an Apache Iceberg table"):
        lazyscan.scan(path.rsplit("/", 1)[0], filesystem=fs)


def test_iceberg_table_copied_from_local_disk_without_reroot_says_how_to_read_it(
    s3_server: Any, iceberg_with_deletes: dict[str, Any]  # noqa: F811
) -> None:
    """The copy's metadata still places the table on local disk: a clear error with the
    ``reroot`` that reads it (never a read of the local files behind the object store's back)."""
    t = iceberg_with_deletes
    fs = s3_server.arrow_filesystem()
    path, _ = _uploaded(s3_server, t, "not-rerooted")
    location = t["table"].metadata.location
    metadata_file = f"{path}/metadata/{latest_metadata(t['folder']).name}"
    for source in (path, metadata_file):
        with pytest.raises(OptionError) as info:
            lazyscan.scan(source, filesystem=fs)
        assert f"reroot={{{location!r}: {path!r}}}" in str(info.value), source
    assert _ids(lazyscan.scan(path, filesystem=fs, reroot={location: path}).to_table()) == _ids(t["rows"])


def test_iceberg_table_by_s3_uri_with_credentials_from_the_environment(
    s3_server: Any, iceberg_with_deletes: dict[str, Any], monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """Without a filesystem, an ``s3://`` URI of the table's folder or metadata file is read as
    a plain scan reads an ``s3://`` file: pyarrow's S3 filesystem, credentials and endpoint from
    the environment."""
    from tests.support.s3 import ACCESS_KEY, REGION, SECRET_KEY

    for name, value in (("AWS_ACCESS_KEY_ID", ACCESS_KEY), ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
                        ("AWS_DEFAULT_REGION", REGION), ("AWS_ENDPOINT_URL", s3_server.endpoint)):
        monkeypatch.setenv(name, value)
    t = iceberg_with_deletes
    path, reroot = _uploaded(s3_server, t, "by-uri")
    where = "part = 'b' AND id > 900"
    want = lazyscan.scan(str(t["folder"]), where=where).to_table()
    for uri in (f"s3://{path}", f"s3://{path}/metadata/{latest_metadata(t['folder']).name}"):
        got = lazyscan.scan(uri, where=where, reroot=reroot).to_table()
        assert got.sort_by("id").equals(want.sort_by("id")), uri
