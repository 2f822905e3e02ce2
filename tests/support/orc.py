"""pyorc helpers shared by the ORC tests."""

from __future__ import annotations

from typing import Any

import pyorc

SECOND = 10**9


class NanosConverter(pyorc.converters.ORCConverter):
    """Timestamps as integer nanoseconds since 1970-01-01 UTC (pyorc's default converter goes
    through ``datetime``, which has microseconds only)."""

    @staticmethod
    def from_orc(seconds: int, nanoseconds: int, timezone: Any) -> int:
        return seconds * SECOND + nanoseconds

    @staticmethod
    def to_orc(obj: int, timezone: Any) -> tuple[int, int]:
        return divmod(obj, SECOND)


#: pyorc converters that read and write timestamps as integer nanoseconds
CONVERTERS: dict[pyorc.TypeKind, type[pyorc.converters.ORCConverter]] = {
    pyorc.TypeKind.TIMESTAMP: NanosConverter, pyorc.TypeKind.TIMESTAMP_INSTANT: NanosConverter,
}
