"""Column statistics in a form the predicate layer can compare against.

Values are in the *Arrow storage domain* of the column's Arrow type, so a bound literal and a
statistic compare with plain Python operators:

- integers, dates (days), times and timestamps (in the Arrow type's unit), decimals (unscaled
  integer at the column's scale): ``int``
- float16 / float32 / float64: ``float`` (never NaN; writers leave NaN out of min/max)
- boolean: ``bool``
- string, binary, fixed-size binary: ``bytes`` (UTF-8 for strings, compared bytewise)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ColumnStats:
    """Statistics of one column over a row group or a page.

    ``min``/``max`` are ``None`` when unknown. They are always bounds (``min`` <= every non-null,
    non-NaN value <= ``max``); ``min_exact``/``max_exact`` tell whether they are also attained
    (binary statistics may be truncated). ``nan_count`` is ``None`` when the file does not say
    whether NaN values are present: then a float column may hold NaN beyond ``max``.
    """

    min: Any | None
    max: Any | None
    null_count: int | None
    num_values: int | None
    min_exact: bool = True
    max_exact: bool = True
    nan_count: int | None = None

    @property
    def all_null(self) -> bool:
        return (
            self.null_count is not None
            and self.num_values is not None
            and self.null_count == self.num_values
        )
