"""Temporary stand-in for ``lazyscan.scan`` over file splits (pyarrow reads, lazyscan predicates).

Used only while :func:`lazyscan.scan` does not exist yet; removed once it lands.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lazyscan.errors import CorruptFileError
from lazyscan.predicate import bind, evaluate, to_expr
from lazyscan.scan.dataset import FileSplit
from lazyscan.scan.profile import Profile


class StandinScan:
    def __init__(
        self,
        splits: Sequence[FileSplit],
        columns: Sequence[str] | None,
        where: Any,
        schema: pa.Schema,
        filesystem: Any = None,
        batch_size: int = 65536,
        **options: Any,
    ) -> None:
        self.splits = list(splits)
        self.columns = list(columns) if columns is not None else list(schema.names)
        self.expr = to_expr(where)
        self.dataset_schema = schema
        self.filesystem = filesystem
        self.batch_size = batch_size
        self.profile = Profile()
        self.schema = pa.schema([schema.field(c) for c in self.columns])

    def _open(self, path: str) -> pq.ParquetFile:
        try:
            if self.filesystem is not None:
                return pq.ParquetFile(self.filesystem.open_input_file(path))
            return pq.ParquetFile(path)
        except (OSError, pa.ArrowException) as e:
            raise CorruptFileError(f"cannot read Parquet footer: {e}", file=path) from None

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        bound = bind(self.expr, self.dataset_schema) if self.expr is not None else None
        for split in self.splits:
            pf = self._open(split.path)
            self.profile.add("files")
            md = pf.metadata
            for rg in range(md.num_row_groups):
                g = md.row_group(rg)
                first = g.column(0)
                start = first.dictionary_page_offset or first.data_page_offset
                if first.dictionary_page_offset is not None and first.dictionary_page_offset > 0:
                    start = min(first.dictionary_page_offset, first.data_page_offset)
                else:
                    start = first.data_page_offset
                size = sum(g.column(i).total_compressed_size for i in range(g.num_columns))
                mid = start + size // 2
                if not split.start <= mid < split.start + split.length:
                    continue
                self.profile.add("row_groups_total")
                self.profile.add("rows_total", g.num_rows)
                file_names = set(pf.schema_arrow.names)
                need = [c for c in self.dataset_schema.names if c in file_names]
                try:
                    t = pf.read_row_group(rg, columns=need)
                except (OSError, pa.ArrowException) as e:
                    raise CorruptFileError(str(e), file=split.path, row_group=rg) from None
                cols = []
                for f in self.dataset_schema:
                    if f.name in split.partition_values:
                        v = split.partition_values[f.name]
                        cols.append(pa.array([v] * t.num_rows, f.type) if v is not None else pa.nulls(t.num_rows, f.type))
                    elif f.name in file_names:
                        cols.append(t.column(f.name).combine_chunks())
                    else:
                        cols.append(pa.nulls(t.num_rows, f.type))
                full = pa.Table.from_arrays(cols, names=self.dataset_schema.names)
                if bound is not None:
                    mask = evaluate(bound, full)
                    full = full.filter(pa.array(mask))
                full = full.select(self.columns)
                self.profile.add("rows_returned", full.num_rows)
                yield from full.to_batches(self.batch_size)


def scan(
    source: Sequence[FileSplit],
    columns: Sequence[str] | None = None,
    where: Any = None,
    *,
    schema: pa.Schema,
    filesystem: Any = None,
    **options: Any,
) -> StandinScan:
    return StandinScan(source, columns, where, schema, filesystem, **options)
