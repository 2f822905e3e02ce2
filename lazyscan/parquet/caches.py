"""The process-wide caches of the Parquet reader, keyed by footer.

A footer parsed once serves every later open of the same version of a file; what is derived from
it (row-group arrays, page layouts, page statistics, data-page counts, where dictionaries are,
the groups of the selected-rows route) is cached under the footer's token, a small number given
to each footer entry, so nothing cached for another version of a file is ever found under it.
:func:`clear_caches` forgets all of them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any


class LruCache:
    """A small thread-safe LRU cache."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._data: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.capacity:
                self._data.popitem(last=False)

    def drop(self, key: Any) -> None:
        with self._lock:
            self._data.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


#: parsed footers, found by path, file identity, footer length and the footer's last bytes, and
#: used only when the whole footer equals the entry's (see :func:`.footer.read_footer`)
FOOTERS = LruCache(256)
#: a footer's per-row-group sizes as arrays and its decoded statistics, keyed by its token
SUMMARIES = LruCache(256)
#: page layouts of column chunks, keyed by (footer token, row group, leaf column)
LAYOUTS = LruCache(65536)
#: groups of the selected-rows route (one per file, row group and list of columns read), keyed by
#: footer token, row group, columns and :func:`layout_generation`
GROUPS = LruCache(4096)
#: per-page statistics decoded from ColumnIndexes, keyed like layouts
PAGE_STATISTICS = LruCache(16384)
#: data pages per column chunk of a file (an array per footer), keyed by its token
PAGE_COUNTS = LruCache(256)
#: column chunks whose offset index located a page wrongly: their layout comes from the page
#: headers, and their column index is not used; keyed like layouts
DISTRUSTED = LruCache(65536)
#: where a chunk's dictionary page is, learnt from its first page header without walking the
#: rest (object stores), keyed like layouts
DICTIONARY_AT = LruCache(65536)
#: a file's page indexes fetched as one span (:meth:`.footer.Footer._page_index_region`), keyed by
#: footer token: a scan of one byte range opens the file anew, and without it each open would
#: fetch the span again (on a 524-row-group file, 14 ms a row group sampled alone). Few entries:
#: a span may be up to 16 MiB
INDEX_REGIONS = LruCache(4)
#: what the caches above hold for "looked for, none there" (None means "not looked for")
NONE_FOUND = object()

#: counts the chunks distrusted so far: part of the keys of cached groups, which hold layouts
_layout_generation = 0
_generation_lock = threading.Lock()


def layout_generation() -> int:
    """How many column chunks' layouts were replaced so far (see :func:`next_layout_generation`)."""
    return _layout_generation


def next_layout_generation() -> None:
    """Count a chunk whose layout was replaced: cached groups holding the old one are not found
    again."""
    global _layout_generation
    with _generation_lock:
        _layout_generation += 1


def clear_caches() -> None:
    """Forget cached footers, page layouts and page statistics (tests and benchmarks use this)."""
    for cache in (
        FOOTERS, SUMMARIES, GROUPS, LAYOUTS, PAGE_STATISTICS, PAGE_COUNTS, DISTRUSTED, DICTIONARY_AT, INDEX_REGIONS
    ):
        cache.clear()
