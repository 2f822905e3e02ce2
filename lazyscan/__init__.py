"""lazyscan: selective Parquet scans.

The filter is evaluated inside the scan, on the predicate columns first; the other columns are
read only for rows that survived. See README.md for the layers and the public API.
"""

from lazyscan.errors import (
    CorruptFileError,
    LazyScanError,
    OptionError,
    PredicateError,
    SourceError,
    UnsupportedFeatureError,
)

__version__ = "0.1.0"

__all__ = [
    "CorruptFileError",
    "LazyScanError",
    "OptionError",
    "PredicateError",
    "SourceError",
    "UnsupportedFeatureError",
    "__version__",
]
