"""Key filters built from a Spark DataFrame: the join keys of a filtered dimension, for the
fact table's scan (``semi_join=`` of :func:`lazyscan.spark.read`, or the ``keyFilter.<column>``
option of the data source).

:func:`key_filter` runs one Spark job over the key column: each partition reduces its batches
to their distinct non-NULL keys with Arrow compute (no row becomes a Python object) and sends
them as one Arrow IPC blob; the driver merges the blobs and builds the filter with
:func:`lazyscan.key_filter`. A dimension with more than ``max_keys`` distinct keys, or a filter
larger than ``max_bytes``, raises :class:`KeyFilterTooLarge`, which :func:`lazyscan.spark.read`
turns into the plain read (the join still filters) with a logged reason.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lazyscan.errors import LazyScanError, PredicateError
from lazyscan.predicate.keys import EXACT_LIMIT, KeyFilter
from lazyscan.predicate.keys import key_filter as build_key_filter

log = logging.getLogger("lazyscan.spark")

#: more distinct keys than this are not collected on the driver
DEFAULT_MAX_KEYS = 5_000_000
#: a serialized filter above this size is not shipped to the tasks
DEFAULT_MAX_BYTES = 16 << 20


class KeyFilterTooLarge(LazyScanError):
    """The dimension has too many distinct keys for a key filter within the limits."""


def check_size(kf: KeyFilter, max_bytes: int, what: str = "the key filter") -> None:
    """:class:`KeyFilterTooLarge` when ``kf`` serialized takes more than ``max_bytes``."""
    size = len(kf.to_bytes())
    if size > max_bytes:
        raise KeyFilterTooLarge(f"{what} takes {size:,} bytes, more than max_bytes={max_bytes:,}")


def _partition_keys(max_keys: int) -> Any:
    def distinct(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        parts: list[pa.Array] = []
        for batch in batches:
            column = batch.column(0)
            if len(column):
                parts.append(pc.unique(column.drop_null()))
        if not parts:
            return
        keys = pc.unique(pa.concat_arrays(parts)) if len(parts) > 1 else parts[0]
        blob = b""
        if len(keys) <= max_keys:
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, pa.schema([("k", keys.type)])) as writer:
                writer.write_batch(pa.record_batch([keys], names=["k"]))
            blob = sink.getvalue().to_pybytes()
        yield pa.record_batch(
            [pa.array([blob], pa.binary()), pa.array([len(keys)], pa.int64())], names=["keys", "count"]
        )

    return distinct


def _key_type(df: Any, column: str) -> tuple[str, pa.DataType]:
    from lazyscan.spark.compat import to_arrow_type

    names = df.schema.fieldNames()
    match = column if column in names else next((n for n in names if n.lower() == column.lower()), None)
    if match is None:
        raise PredicateError(f"key column {column!r} is not in the dimension DataFrame; columns: {', '.join(names)}")
    return match, to_arrow_type(df.schema[match].dataType)


def key_filter(
    df: Any,
    column: str,
    *,
    fpp: float | None = None,
    exact_limit: int = EXACT_LIMIT,
    max_keys: int = DEFAULT_MAX_KEYS,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> KeyFilter:
    """A :class:`~lazyscan.KeyFilter` of the distinct non-NULL values of ``column`` of the
    Spark DataFrame ``df`` (one Spark job; see the module docs). Raises
    :class:`KeyFilterTooLarge` beyond ``max_keys`` distinct keys or ``max_bytes`` of filter."""
    name, arrow_type = _key_type(df, column)
    started = time.perf_counter()
    rows = df.select(name).mapInArrow(_partition_keys(max_keys), "keys binary, count bigint").collect()
    parts = []
    for blob, count in rows:
        if count > max_keys:
            raise KeyFilterTooLarge(
                f"{column!r} has more than {max_keys:,} distinct keys in one partition ({count:,})"
            )
        parts.append(pa.ipc.open_stream(blob).read_all().column(0).combine_chunks())
    if parts:
        keys = pa.concat_arrays([p.cast(parts[0].type) for p in parts])
    else:
        keys = pa.array([], arrow_type)
    distinct = pc.count_distinct(keys).as_py() if len(keys) else 0
    if distinct > max_keys:
        raise KeyFilterTooLarge(f"{column!r} has {distinct:,} distinct keys, more than max_keys={max_keys:,}")
    kf = build_key_filter(keys, fpp=fpp, exact_limit=exact_limit)
    check_size(kf, max_bytes, f"the key filter of {column!r}")
    log.info(
        "lazyscan key filter on %s: %s from %d partitions in %.3f s",
        column, kf.describe(), len(rows), time.perf_counter() - started,
    )
    return kf


__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_KEYS", "KeyFilterTooLarge", "check_size", "key_filter"]
