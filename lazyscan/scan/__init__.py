"""lazyscan.scan: one scan = files (or a table's snapshot) x predicate x columns -> batches + profile.

- :mod:`.dataset` finds files (paths, globs, hive partition folders) and merges their schemas;
- :mod:`.options` the scan's switches and knobs (:class:`ScanOptions`);
- :mod:`.profile` counters and timings by tier and phase (:class:`Profile`);
- :mod:`.conjuncts` the filter's conjuncts and their adaptive order (:class:`PredicateOrder`);
- :mod:`.table_source` Delta Lake and Iceberg tables read as tables: a plan's data files with
  their logical columns, constants, deleted rows (excluded before payload values are read), equality
  deletes (an anti filter before the payload) and statistics (files pruned unopened);
- :mod:`.files` a file being read: its units, version checks and read-ahead;
- :mod:`.unit_scan` the per-unit algorithm and its pruning tiers;
- :mod:`.scan` planning, the units on a thread pool, batches (:func:`scan`, :class:`Scan`);
- :mod:`.warmup` compiles the kernels ahead of the first query (``lazyscan warmup``).
"""

from lazyscan.scan.dataset import Dataset, FileInfo, FileSplit, discover, merge_schemas
from lazyscan.scan.options import ScanOptions
from lazyscan.scan.profile import Profile
from lazyscan.scan.scan import PredicateOrder, Scan, scan

__all__ = [
    "Dataset",
    "FileInfo",
    "FileSplit",
    "PredicateOrder",
    "Profile",
    "Scan",
    "ScanOptions",
    "discover",
    "merge_schemas",
    "scan",
]
