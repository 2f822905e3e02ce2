"""lazyscan.parquet: the physical layer.

- :mod:`~lazyscan.parquet.thrift` bounded compact-protocol decoding;
  :mod:`~lazyscan.parquet.metadata` typed footer, page headers, page index, Bloom filter headers;
  :mod:`~lazyscan.parquet.page_header` page headers parsed by a numba kernel;
- :mod:`~lazyscan.parquet.schema` leaf columns, levels and Arrow types;
- :mod:`~lazyscan.parquet.codecs` page decompression into bounded buffers (Snappy through
  :mod:`lazyscan.format.snappy`);
  :mod:`~lazyscan.parquet.checksums` page CRC-32 checks;
  :mod:`~lazyscan.parquet.buffers` output buffers from Arrow's memory pool;
- :mod:`~lazyscan.parquet.kernels` numba kernels for every per-value loop;
- :mod:`~lazyscan.parquet.decode` one data page, all rows or a selection;
  :mod:`~lazyscan.parquet.convert` decoded values to Arrow arrays;
- :mod:`~lazyscan.parquet.match` ``=`` / ``IN`` on byte arrays matched on encoded pages;
- :mod:`~lazyscan.parquet.fused` selected rows of a flat column chunk in two kernel calls;
  :mod:`~lazyscan.parquet.fused_match` whole predicate chunks matched in two kernel calls;
- :mod:`~lazyscan.parquet.statistics` (Parquet statistics and page index decoded) and
  :mod:`~lazyscan.parquet.bloom` for the pruning tiers;
- :mod:`~lazyscan.parquet.file` ``ParquetFile``: metadata access and row-selective reads;
- :mod:`~lazyscan.parquet.units` ``ParquetUnits``: the format contract implemented for Parquet.

``RowRanges``, ``ReadCounters``, ``ColumnStats`` and ``ReaderOptions`` live on the format floor (:mod:`lazyscan.format`) and are
exported here too, as the types ``ParquetFile`` takes and returns.
"""

from lazyscan.format.counters import ReadCounters
from lazyscan.format.options import ReaderOptions
from lazyscan.format.selection import RowRanges
from lazyscan.format.statistics import ColumnStats
from lazyscan.parquet.bloom import BloomFilter
from lazyscan.parquet.file import (
    ChunkLayout,
    PageCache,
    PageInfo,
    ParquetFile,
    clear_caches,
)
from lazyscan.parquet.schema import ColumnDescriptor

__all__ = [
    "BloomFilter",
    "ChunkLayout",
    "ColumnDescriptor",
    "ColumnStats",
    "PageCache",
    "PageInfo",
    "ParquetFile",
    "ReadCounters",
    "ReaderOptions",
    "RowRanges",
    "clear_caches",
]
