"""The routes that read every row of a flat column chunk.

- :meth:`WholeChunk.read`: page by page, values (or codes with their dictionary) assembled;
- :meth:`WholeChunk.read_looked_up`: the same, but pages of a dictionary of plain numbers without
  nulls are decoded straight into the values, their codes looked up as they are unpacked;
- :meth:`WholeChunk.match`: ``=`` / ``IN`` on a byte-array chunk as a mask of matching rows, in
  two kernel calls (:mod:`.predicate_match`) where the chunk's shape allows, else page by page;
- :meth:`WholeChunk.dictionary_rows`: the rows whose dictionary entry passes a predicate
  evaluated once per entry, with their codes.

Where the dictionary was decoded earlier (a page cache holds it), only the data pages are
fetched, from where the page layout says they start; a layout from an offset index that says so
wrongly makes the read start again from the chunk's page headers.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from lazyscan.errors import CorruptFileError, FileError, LazyScanError
from lazyscan.format.counters import ReadCounters
from lazyscan.parquet import buffers, codecs, predicate_match
from lazyscan.parquet.convert import Assembled, assemble, empty_values
from lazyscan.parquet.decode import PageValues, Values
from lazyscan.parquet.fetch import FetchCheck, Fetcher, OpenFile, located
from lazyscan.parquet.footer import Footer
from lazyscan.parquet.layout import PageLayouts
from lazyscan.parquet.match import BytesMatcher
from lazyscan.parquet.metadata import ColumnMetaData, PageType
from lazyscan.parquet.pages import PageCache, PageDecoder, looked_up, match_dictionary, parse_header
from lazyscan.parquet.schema import ColumnDescriptor
from lazyscan.parquet.selected_rows import Shapes


class _Fetched(NamedTuple):
    """A chunk's bytes as fetched for a whole read: from its start, or (``shortcut``) from its
    first data page (page ``first_page`` of the chunk) with its dictionary taken from the page
    cache."""

    row_group: int
    desc: ColumnDescriptor
    md: ColumnMetaData
    num_rows: int
    buf: np.ndarray
    start: int
    dictionary: Values | None
    first_page: int
    shortcut: bool


class WholeChunk:
    """Reads every row of the flat column chunks of one open file."""

    def __init__(
        self, file: OpenFile, footer: Footer, layouts: PageLayouts, fetcher: Fetcher, pages: PageDecoder, shapes: Shapes
    ) -> None:
        self.file = file
        self.footer = footer
        self.layouts = layouts
        self.fetcher = fetcher
        self.pages = pages
        self.shapes = shapes

    def read(
        self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData, c: ReadCounters, cache: PageCache | None = None
    ) -> Assembled:
        """Every row of the chunk: values, or codes with their dictionary."""
        return self._read(row_group, desc, md, c, None, cache, False)

    def read_looked_up(
        self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData, c: ReadCounters, cache: PageCache | None = None
    ) -> Assembled:
        """Every row of the chunk as values: a column without nulls coded against a dictionary of
        plain numbers has its codes looked up as they are unpacked (no array of codes); any other
        chunk is read as :meth:`read` reads it."""
        return self._read(row_group, desc, md, c, None, cache, True)

    def match(
        self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData, c: ReadCounters, matcher: BytesMatcher,
        cache: PageCache | None = None,
    ) -> Assembled:
        """A uint8 mask of the rows whose value ``matcher`` matches (0 for NULL), computed on the
        encoded pages; with a ``cache``, the pages holding a match are kept there."""
        return self._read(row_group, desc, md, c, matcher, cache, False)

    def _fetch(
        self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData, c: ReadCounters, cache: PageCache | None
    ) -> _Fetched:
        num_rows = self.footer.metadata.row_groups[row_group].num_rows
        start, total = self.footer.chunk_range_of(md)
        if start + total > self.file.source.size:
            raise CorruptFileError("column chunk extends past the end of the file")
        dictionary = None
        index = 0
        # the data pages fetched from where the page layout says they start (the dictionary
        # was decoded already): a layout from an offset index may say so wrongly
        shortcut = False
        if cache is not None and cache.dictionaries:
            # the dictionary was decoded already (a predicate on it): fetch the data pages only
            dictionary = cache.dictionaries.get(start)
            if dictionary is not None:
                first = self.layouts.first_data_page(row_group, desc, md, start, total)
                if first is not None:
                    total -= first - start
                    start = first
                    index = 1
                    shortcut = True
                else:
                    dictionary = None
        buf = np.frombuffer(self.fetcher.fetch([(start, total)], c, FetchCheck(row_group, num_rows, index))[0], dtype=np.uint8)
        return _Fetched(row_group, desc, md, num_rows, buf, start, dictionary, index, shortcut)

    def _read(
        self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData, c: ReadCounters, matcher: BytesMatcher | None,
        cache: PageCache | None, look_up: bool,
    ) -> Assembled:
        fetched = self._fetch(row_group, desc, md, c, cache)
        if matcher is not None and fetched.dictionary is None and self.shapes.of(desc) is not None:
            mask = predicate_match.match_full(
                fetched.buf, desc, fetched.num_rows, md.codec, matcher, c, self.file.options.max_page_size, cache, fetched.start,
                self.footer.v2_always_compressed,
            )
            if mask is not None:
                return Assembled(fetched.num_rows, None, values=mask)
        return self._decode(fetched, c, matcher, cache, look_up)

    def _decode(
        self, fetched: _Fetched, c: ReadCounters, matcher: BytesMatcher | None, cache: PageCache | None, look_up: bool
    ) -> Assembled:
        """Decode the fetched chunk page by page; ``look_up``: codes looked up as they are
        unpacked while the pages allow it."""
        desc, md, num_rows, buf, start = fetched.desc, fetched.md, fetched.num_rows, fetched.buf, fetched.start
        dictionary, index = fetched.dictionary, fetched.first_page
        pages = self.pages
        # the values straight from the codes, for a caller that wants values of a column
        # without nulls: no array of codes, no separate look-up (``out`` once a dictionary of
        # fixed-width values is known)
        direct = look_up and matcher is None and (cache is None or not cache.bodies)
        out: np.ndarray | None = None
        pos = 0
        end = len(buf)
        dict_mask = match_dictionary(matcher, dictionary)
        decoded: list[PageValues] = []
        rows = 0
        while pos < end and rows < num_rows:
            try:
                header = parse_header(buf, pos, end)
                body_start = pos + header.header_size
                if header.type == PageType.DICTIONARY_PAGE:
                    if decoded or dictionary is not None:
                        raise CorruptFileError("dictionary page after data pages")
                    dictionary = pages.decode_dictionary(buf, pos, end, desc, md, c, cache, start + pos)
                    dict_mask = match_dictionary(matcher, dictionary)
                elif header.type in (PageType.DATA_PAGE, PageType.DATA_PAGE_V2):
                    if direct and out is None and not decoded and looked_up(dictionary, desc):
                        assert isinstance(dictionary, np.ndarray)
                        out = buffers.empty(num_rows, dictionary.dtype)
                    if out is not None and pages.page_looked_up(header, buf, body_start, desc, md, dictionary, out, rows, c):  # type: ignore[arg-type]
                        rows += header.data_page_header.num_values  # type: ignore[union-attr]
                    else:
                        page = pages.decode_page(
                            header, buf, body_start, desc, md, None, dictionary, c, matcher, dict_mask, cache, start + pos
                        )
                        if out is not None and page.valid is not None:
                            # a page with nulls: the values are spread by the general assembly
                            if rows:
                                return self._read(fetched.row_group, desc, md, c, matcher, cache, False)
                            out = None
                            direct = False
                        if out is not None:  # a page the look-up does not take (PLAIN after a dictionary)
                            if rows + page.num_rows > num_rows:
                                raise CorruptFileError(f"pages hold more than the row group's {num_rows} rows")
                            part = page.values if not page.is_codes else dictionary[page.values]  # type: ignore[index]
                            out[rows : rows + page.num_rows] = part
                        else:
                            decoded.append(page)
                        rows += page.num_rows
                    c.pages_fetched += 1
            except FileError as e:
                if fetched.shortcut and isinstance(e, CorruptFileError):
                    return self._read_again(fetched, c, matcher, cache, look_up, e, index)
                raise e.at(page=index) from None
            pos = body_start + header.compressed_page_size
            index += 1
        if rows != num_rows:
            short = CorruptFileError(f"pages hold {rows} rows, the row group has {num_rows}")
            if fetched.shortcut:
                return self._read_again(fetched, c, matcher, cache, look_up, short, None)
            raise short
        if out is not None:
            return Assembled(num_rows, None, values=out)
        if not decoded:
            return Assembled(0, None, values=empty_values(desc))
        return assemble(desc, decoded, dictionary)

    def _read_again(
        self, fetched: _Fetched, c: ReadCounters, matcher: BytesMatcher | None, cache: PageCache | None, look_up: bool,
        error: CorruptFileError, page: int | None,
    ) -> Assembled:
        """The read from the chunk's page headers, after a read that started at the first data
        page an offset index gave (``fetched``) failed with ``error`` (else ``error`` stands)."""
        row_group, desc, md = fetched.row_group, fetched.desc, fetched.md
        if not self.layouts.layout(row_group, desc, md).from_offset_index:
            raise error.at(page=page) if page is not None else error
        self.layouts.distrust_offset_index(row_group, desc, md)
        return self._read(row_group, desc, md, c, matcher, cache, look_up)

    def dictionary_rows(
        self, row_group: int, desc: ColumnDescriptor, md: ColumnMetaData, entry_passes: np.ndarray, null_passes: bool,
        c: ReadCounters, cache: PageCache,
    ) -> tuple[np.ndarray, Assembled] | None:
        """The rows of a fully dictionary-encoded chunk whose dictionary entry passes, with their
        codes (see :meth:`ParquetFile.dictionary_rows <lazyscan.parquet.file.ParquetFile.dictionary_rows>`);
        None when this route does not read the chunk."""
        if self.shapes.of(desc) is None:
            return None
        where = {"row_group": row_group, "column": desc.name}
        rows_held = self.footer.metadata.row_groups[row_group].num_rows
        try:
            if md.codec != 0:
                codecs.check_codec(md.codec)
            start, total = self.footer.chunk_range_of(md)
            dictionary = cache.dictionaries.get(start)
            if dictionary is None or len(entry_passes) != len(dictionary):
                return None
            first = self.layouts.first_data_page(row_group, desc, md, start, total)
            if first is None:
                return None
            if start + total > self.file.source.size:
                raise CorruptFileError("column chunk extends past the end of the file")
            buf = np.frombuffer(
                self.fetcher.fetch([(first, total - (first - start))], c, FetchCheck(row_group, rows_held, first_page=1))[0],
                dtype=np.uint8,
            )
        except (LazyScanError, ValueError, IndexError, TypeError, OverflowError, MemoryError) as e:
            raise located(e, self.file.path, where) from (None if isinstance(e, LazyScanError) else e)
        found = predicate_match.match_dictionary_rows(
            buf, desc, rows_held, md.codec, len(dictionary), entry_passes, null_passes, c, self.file.options.max_page_size,
            self.footer.v2_always_compressed,
        )
        if found is None:
            return None
        rows, codes, valid = found
        every = len(codes) == len(rows)  # codes are kept for the rows holding a value only
        return rows, Assembled(len(rows), None if every else valid, codes=codes, dictionary=dictionary)
