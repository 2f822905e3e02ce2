"""The floor below the physical formats: vocabulary that Parquet and ORC share.

Nothing here imports :mod:`lazyscan.parquet`, :mod:`lazyscan.orc` or anything above them.

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
