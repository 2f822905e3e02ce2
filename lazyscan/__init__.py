"""lazyscan: selective Parquet and ORC scans.

The filter is evaluated inside the scan, on the predicate columns first; the other columns are
read only for rows that survived. See README.md for the public API.

Packages and modules:

- :mod:`lazyscan.errors` — the exceptions every layer raises (all derive from ``LazyScanError``).
- :mod:`lazyscan.io` — byte sources, coalesced range reads, retries, read-ahead, shared pools.
- :mod:`lazyscan.format` — what the physical formats share (writers, trusted statistics).
- :mod:`lazyscan.parquet` — the Parquet physical reader.
- :mod:`lazyscan.orc` — the ORC physical reader.
- :mod:`lazyscan.predicate` — filters with Spark SQL semantics: parsing, binding, evaluation,
  pruning, key filters.
- :mod:`lazyscan.scan` — one scan over files: planning, the pruning tiers, batches, profile.
- :mod:`lazyscan.tables` — Delta Lake and Iceberg tables planned into data files, deletes and
  column mapping, read by :func:`lazyscan.scan`.
- :mod:`lazyscan.spark` — the scan inside Spark (Python data source, ``mapInArrow``).
- :mod:`lazyscan.cli` — the ``lazyscan`` command.
- :mod:`lazyscan.kernel_cache` — where numba caches the kernels (imported before any kernel);
- :mod:`lazyscan._compile_notice` — one line when kernels compile for their first use.
- :mod:`lazyscan._version` — the version number.
"""

# first: kernels pick their numba cache folder when they are defined
from lazyscan import _compile_notice, kernel_cache  # noqa: F401
from lazyscan._version import __version__
from lazyscan.errors import (
    AccessDeniedError,
    CorruptFileError,
    FileChangedError,
    LazyScanError,
    MissingDependencyError,
    ObjectNotFoundError,
    OptionError,
    PredicateError,
    SourceError,
    TableFolderError,
    TransientSourceError,
    UnsupportedFeatureError,
)
from lazyscan.parquet import ParquetFile, RowRanges
from lazyscan.predicate import col, lit, parse_predicate
from lazyscan.predicate.keys import KeyFilter, KeyFilterError, key_filter
from lazyscan.scan import FileSplit, Profile, Scan, ScanOptions, discover
from lazyscan.scan.scan import scan

__all__ = [
    "AccessDeniedError",
    "CorruptFileError",
    "FileChangedError",
    "FileSplit",
    "KeyFilter",
    "KeyFilterError",
    "LazyScanError",
    "MissingDependencyError",
    "ObjectNotFoundError",
    "OptionError",
    "ParquetFile",
    "PredicateError",
    "Profile",
    "RowRanges",
    "Scan",
    "ScanOptions",
    "SourceError",
    "TableFolderError",
    "TransientSourceError",
    "UnsupportedFeatureError",
    "__version__",
    "col",
    "discover",
    "key_filter",
    "lit",
    "parse_predicate",
    "scan",
]
