"""The floor below the physical formats: vocabulary that Parquet and ORC share.

Nothing here imports :mod:`lazyscan.parquet`, :mod:`lazyscan.orc` or anything above them.

- :mod:`lazyscan.format.units`: ``UnitFile``, the contract every format implements for the
  scan and Spark's cost model, the optional ``EncodedReads``, and the table of formats;
- :mod:`lazyscan.format.counters`: ``ReadCounters``, the work a physical reader did (and
  avoided), for the scan's profile;
- :mod:`lazyscan.format.options`: ``ReaderOptions``, how a physical reader works (batching of
  selected rows, coalescing, largest page, partial decompression, checksums, retries);
- :mod:`lazyscan.format.selection`: ``RowRanges``, the rows of a row group or stripe a read
  selects, as sorted, disjoint ranges;
- :mod:`lazyscan.format.hashing`: XXH64, the hash of Parquet's Bloom filters and of key filters;
- :mod:`lazyscan.format.kernels`: numba kernels the formats share (row index runs,
  little-endian loads) and the one table of kernel error codes both formats' kernels return;
- :mod:`lazyscan.format.varint`: varints and zigzag as Thrift, protobuf and both formats'
  encodings store integers, one reader for Python code and one inlined into kernels;
- :mod:`lazyscan.format.snappy`: numba Snappy kernels that decompress a prefix and resume,
  for Parquet pages and ORC compression chunks;
- :mod:`lazyscan.format.codecs`: block decompressors both formats map their codec ids to
  (Snappy, deflate, gzip, zstd, brotli, LZ4 blocks), bounded by the caller's buffer;
- :mod:`lazyscan.format.statistics`: ``ColumnStats``, a column's statistics over a row group,
  stripe or page, in the values the predicate layer compares;
- :mod:`lazyscan.format.writers`: who wrote a file (Parquet ``created_by``, ORC writer id and
  version) and the one table of rules that says which of its statistics pruning may trust.
"""

from lazyscan.format.writers import (
    BLOOM_FILTER,
    CHUNK,
    MIN_MAX,
    NULL_COUNT,
    PAGE,
    RULES,
    ColumnFacts,
    Rule,
    StatisticsTrust,
    Writer,
    orc_trust,
    orc_writer,
    ordered_bounds,
    parquet_trust,
    parquet_writer,
    plausible_count,
)

__all__ = [
    "BLOOM_FILTER",
    "CHUNK",
    "MIN_MAX",
    "NULL_COUNT",
    "PAGE",
    "RULES",
    "ColumnFacts",
    "Rule",
    "StatisticsTrust",
    "Writer",
    "orc_trust",
    "orc_writer",
    "ordered_bounds",
    "parquet_trust",
    "parquet_writer",
    "plausible_count",
]
