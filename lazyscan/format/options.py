"""How a physical reader works: the options every format's reader takes."""

from __future__ import annotations

from dataclasses import dataclass

from lazyscan.io import ReadOptions
from lazyscan.io.retry import RetryPolicy

#: largest decompressed page (Parquet) or compression chunk accepted by default
DEFAULT_MAX_PAGE_SIZE = 1 << 30


@dataclass(frozen=True)
class ReaderOptions:
    """How the physical reader works.

    ``materialization_threshold``: two selected row ranges closer than this many rows are decoded
    as one range (then the rows between are dropped), so decoding stays batched.
    ``read``: request coalescing; ``None`` takes the source's default (no gap for local files).
    ``max_page_size``: largest decompressed page accepted.
    ``partial_decompression``: a selective read decompresses a snappy page only as far as its
    selected values reach (a dictionary page as far as the entries looked up), where that is
    well short of the whole page.
    ``timestamp_unit``: the unit ORC timestamps are read in, ``us`` (Spark's: every year ORC
    stores) or ``ns`` (pyarrow's: a value outside 1677-2262 is an error naming its row).
    ``verify_checksums``: a page whose header holds a checksum (CRC-32 of the bytes after the
    header) is checked once fetched; on a mismatch its bytes are fetched once more from the
    source, then a second mismatch is a :class:`CorruptFileError` naming the page
    (:mod:`lazyscan.parquet.checksums`).
    ``retry``: how object-store requests are retried (None: :data:`lazyscan.io.retry.DEFAULT_RETRY`;
    local files are not retried).
    """

    materialization_threshold: int = 0
    read: ReadOptions | None = None
    max_page_size: int = DEFAULT_MAX_PAGE_SIZE
    partial_decompression: bool = True
    timestamp_unit: str = "us"
    verify_checksums: bool = True
    retry: RetryPolicy | None = None
