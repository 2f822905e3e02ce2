"""The ORC physical layer: file tail, stripes, streams, run-length decoding and column reads.

- :mod:`.proto` — a bounded protobuf reader and the ORC tail messages;
- :mod:`.compression` — compression chunks (none, zlib, snappy, zstd, lz4; the algorithms from
  :mod:`lazyscan.format.codecs`);
- :mod:`.kernels` — numba kernels: byte RLE, integer RLE v1 and v2, decimal varints, strings;
- :mod:`.positions` — row-index positions: where each stream of a column resumes at a row group;
- :mod:`.statistics` — ORC column statistics as the predicate layer's ``ColumnStats``;
- :mod:`.bloom` — ORC Bloom filters (``BLOOM_FILTER_UTF8``): may a row group hold a value;
- :mod:`.file` — :class:`OrcFile`: metadata, statistics, row indexes, column reads;
- :mod:`.units` — an ORC file as the scan reads it: stripes and their row groups.
"""

from lazyscan.orc.file import OrcColumn, OrcFile

__all__ = ["OrcColumn", "OrcFile"]
