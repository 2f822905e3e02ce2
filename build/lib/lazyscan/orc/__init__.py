"""The ORC physical layer: file tail, stripes, streams, run-length decoding and column reads.

- :mod:`.proto` — a bounded protobuf reader and the ORC tail messages;
- :mod:`.compression` — compression chunks (none, zlib, snappy, zstd, lz4);
- :mod:`.kernels` — numba kernels: byte RLE, integer RLE v1 and v2, decimal varints, strings;
- :mod:`.file` — :class:`OrcFile`: metadata, statistics, row indexes, column reads.
"""

from lazyscan.orc.file import OrcColumn, OrcFile

__all__ = ["OrcColumn", "OrcFile"]
