"""The route for nested columns (lists, maps, structs): read through pyarrow, whole row group
by row group, the selection taken from the result.

pyarrow also gives the Arrow types of nested fields the schema alone leaves open (a group of
null-typed leaves). A nested column pyarrow cannot read, or one too large for one Arrow array,
is refused with a lazyscan error naming file, row group and column.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lazyscan.errors import CorruptFileError, FileError, UnsupportedFeatureError
from lazyscan.format.selection import RowRanges
from lazyscan.format.units import SourceFile
from lazyscan.io.source import LocalSource
from lazyscan.parquet.fetch import OpenFile
from lazyscan.parquet.footer import MAGIC, Footer
from lazyscan.parquet.metadata import PhysicalType
from lazyscan.parquet.schema import ColumnDescriptor

#: a nested column (read through pyarrow) whose byte-array leaf holds this much in one row group
#: does not fit the 32-bit offsets of one Arrow array; pyarrow decompresses it all before saying so
_NESTED_BYTES_LIMIT = 2**31 - 1


def _holds_empty_struct(t: pa.DataType) -> bool:
    """Whether a nested type holds a struct without fields at any depth."""
    if pa.types.is_struct(t):
        return t.num_fields == 0 or any(_holds_empty_struct(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _holds_empty_struct(t.value_type)
    if pa.types.is_map(t):
        return _holds_empty_struct(t.key_type) or _holds_empty_struct(t.item_type)
    return False


class NestedColumns:
    """Reads the nested columns of one open file through pyarrow."""

    def __init__(self, file: OpenFile, footer: Footer) -> None:
        self.file = file
        self.footer = footer
        self.schema = footer.schema
        self._nested_fields: dict[str, pa.Field] | None = None
        self._pyarrow_metadata: Any = None

    @property
    def arrow_schema(self) -> pa.Schema:
        """Arrow schema of the file's top-level fields."""
        schema = self.schema.arrow_schema
        if any(pa.types.is_null(f.type) for f in schema) and any(
            not self.schema.columns[leaves[0]].flat for leaves in self.schema.field_leaves if leaves
        ):
            nested = self._arrow_fields()
            schema = pa.schema([nested.get(f.name, f) if pa.types.is_null(f.type) else f for f in schema])
        return schema

    def _arrow_fields(self) -> dict[str, pa.Field]:
        """pyarrow's fields of the top-level columns (types and nullability of nested ones;
        INT96 as microseconds, as lazyscan reads it)."""
        if self._nested_fields is None:
            try:
                schema = self._footer_parquet_file().schema_arrow
            except (OSError, pa.ArrowException) as e:
                raise CorruptFileError(f"nested columns' Arrow types cannot be derived: {e}", file=self.file.path) from None
            self._nested_fields = {f.name: f for f in schema}
        return self._nested_fields

    def _footer_parquet_file(self) -> Any:
        """pyarrow's reader over the footer lazyscan read (no request to the file): its Arrow
        schema and the metadata pyarrow's reads of the file start from."""
        import pyarrow.parquet as pq

        thrift = self.footer.thrift
        data = b"".join((MAGIC, thrift, len(thrift).to_bytes(4, "little"), MAGIC))
        return pq.ParquetFile(pa.BufferReader(data), coerce_int96_timestamp_unit="us")

    def _pyarrow_parquet_file(self, file: Any) -> Any:
        import pyarrow.parquet as pq

        if self._pyarrow_metadata is None:
            self._pyarrow_metadata = self._footer_parquet_file().metadata
        return pq.ParquetFile(
            file, metadata=self._pyarrow_metadata, coerce_int96_timestamp_unit="us",
            page_checksum_verification=self.file.options.verify_checksums,
        )

    def read(self, row_group: int, desc: ColumnDescriptor, selection: RowRanges | None) -> pa.Array:
        name = self.arrow_schema.field(desc.top_level_field).name
        for leaf in self.schema.field_leaves[desc.top_level_field]:
            md = self.footer.metadata.row_groups[row_group].columns[leaf].meta_data
            if (
                md is not None and md.type == PhysicalType.BYTE_ARRAY
                and md.total_uncompressed_size >= _NESTED_BYTES_LIMIT
            ):
                # pyarrow would decompress all of it, then refuse: say so before
                raise UnsupportedFeatureError(
                    f"nested column cannot be read: its leaf {self.schema.columns[leaf].name!r} holds "
                    f"{md.total_uncompressed_size:,} bytes of values in this row group, more than the "
                    f"{_NESTED_BYTES_LIMIT:,} one Arrow array of a nested column holds",
                    file=self.file.path, row_group=row_group, column=name,
                )
        src = self.file.source
        # a local file by its path (pyarrow's own reads); else the source lazyscan opened, whose
        # reads are retried and counted as lazyscan's and which asks the store nothing to open
        reader = None if isinstance(src, LocalSource) else SourceFile(src)
        try:
            table = self._pyarrow_parquet_file(
                src.path if reader is None else pa.PythonFile(reader, mode="r")
            ).read_row_group(row_group, columns=[name])
        except (OSError, pa.ArrowException) as e:
            where = {"file": self.file.path, "row_group": row_group, "column": name}
            if reader is not None and reader.error is not None:
                # the store's answer (denied, gone, still failing after retries), not the file's fault
                error = reader.error
                raise (error.at(**where) if isinstance(error, FileError) else error) from None
            if isinstance(e, pa.ArrowNotImplementedError) or _holds_empty_struct(self.arrow_schema.field(name).type):
                # e.g. a group without fields beside fields with values: a valid schema that
                # pyarrow (and DuckDB) do not read
                raise UnsupportedFeatureError(f"nested column of a shape lazyscan cannot read: {e}", **where) from None
            raise CorruptFileError(f"nested column cannot be read: {e}", **where) from None
        arr = table.column(0).combine_chunks()
        if selection is not None:
            arr = arr.take(pa.array(selection.to_indices()))
        return arr
