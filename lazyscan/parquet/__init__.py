"""lazyscan.parquet: the physical layer.

Modules in their import order: each imports only modules listed before it.

- :mod:`~lazyscan.parquet.thrift` bounded compact-protocol decoding;
  :mod:`~lazyscan.parquet.kernels` numba kernels for every per-value loop;
  :mod:`~lazyscan.parquet.metadata` typed footer, page headers, page index, Bloom filter headers;
  :mod:`~lazyscan.parquet.page_header` page headers parsed by a numba kernel;
  :mod:`~lazyscan.parquet.row_groups` the footer's row groups located and summarized by a
  numba kernel, each decoded on first use;
- :mod:`~lazyscan.parquet.schema` leaf columns, levels and Arrow types;
  :mod:`~lazyscan.parquet.statistics` (Parquet statistics and page index decoded) and
  :mod:`~lazyscan.parquet.bloom` for the pruning tiers;
- :mod:`~lazyscan.parquet.buffers` output buffers from Arrow's memory pool;
  :mod:`~lazyscan.parquet.codecs` page decompression into bounded buffers (Parquet's codec
  ids mapped to :mod:`lazyscan.format.codecs`; page-size checks, Hadoop LZ4 framing);
  :mod:`~lazyscan.parquet.checksums` page CRC-32 checks;
- :mod:`~lazyscan.parquet.match` ``=`` / ``IN`` on byte arrays matched on encoded values;
  :mod:`~lazyscan.parquet.decode` one data page, all rows or a selection;
  :mod:`~lazyscan.parquet.convert` decoded values to Arrow arrays;
- an open file's metadata: :mod:`~lazyscan.parquet.caches` the process-wide caches;
  :mod:`~lazyscan.parquet.footer` ``Footer``: footer, column chunks, statistics, page indexes,
  Bloom filters; :mod:`~lazyscan.parquet.layout` ``PageLayouts``: where each chunk's pages and
  dictionary are;
- the kernels that read a fetched chunk in few calls: :mod:`~lazyscan.parquet.page_table` (the
  page table and decompression jobs they share), :mod:`~lazyscan.parquet.selected_values`
  (selected values decoded into Arrow's layout), :mod:`~lazyscan.parquet.selected_rows` (the
  selected rows of a row group's flat columns: shapes, plans, one read);
- reading column chunks: :mod:`~lazyscan.parquet.fetch` ``Fetcher``: byte ranges with counters
  and page checksums; :mod:`~lazyscan.parquet.pages` ``PageDecoder``: one page decompressed and
  decoded, and ``PageCache``; then one module per read route: :mod:`~lazyscan.parquet.nested`
  (nested columns, through pyarrow), :mod:`~lazyscan.parquet.selected_pages` (any selection,
  page by page), :mod:`~lazyscan.parquet.predicate_match` (whole predicate chunks matched in
  two kernel calls), :mod:`~lazyscan.parquet.sparse_selection` (few selected rows, through
  ``selected_rows``), :mod:`~lazyscan.parquet.whole_chunk` (every row of a chunk); and
  :mod:`~lazyscan.parquet.chunk_reader` ``ChunkReader``, the one place a route is chosen;
- :mod:`~lazyscan.parquet.file` ``ParquetFile``: the facade over the footer, the layouts and
  the chunk reader;
- :mod:`~lazyscan.parquet.units` ``ParquetUnits``: the format contract implemented for Parquet.

``RowRanges``, ``ReadCounters``, ``ColumnStats`` and ``ReaderOptions`` live on the format floor (:mod:`lazyscan.format`) and are
exported here too, as the types ``ParquetFile`` takes and returns.
"""

from lazyscan.format.counters import ReadCounters
from lazyscan.format.options import ReaderOptions
from lazyscan.format.selection import RowRanges
from lazyscan.format.statistics import ColumnStats
from lazyscan.parquet.bloom import BloomFilter
from lazyscan.parquet.caches import clear_caches
from lazyscan.parquet.file import ParquetFile
from lazyscan.parquet.layout import ChunkLayout, PageInfo
from lazyscan.parquet.pages import PageCache
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
