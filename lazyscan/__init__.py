"""lazyscan: selective Parquet scans.

The filter is evaluated inside the scan, on the predicate columns first; the other columns are
read only for rows that survived. See README.md for the layers and the public API.
"""

# first: kernels pick their numba cache folder when they are defined
from lazyscan import _numba_cache  # noqa: F401
from lazyscan._version import __version__
from lazyscan.errors import (
    AccessDeniedError,
    CorruptFileError,
    FileChangedError,
    LazyScanError,
    ObjectNotFoundError,
    OptionError,
    PredicateError,
    SourceError,
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
    "ObjectNotFoundError",
    "OptionError",
    "ParquetFile",
    "PredicateError",
    "Profile",
    "RowRanges",
    "Scan",
    "ScanOptions",
    "SourceError",
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
