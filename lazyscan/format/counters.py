"""Counters of the physical reader's work, reported by the scan layer's profile."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass
class ReadCounters:
    """Work done (and avoided) by column reads. Not thread-safe: one object per task, merged."""

    bytes_fetched: int = 0
    requests: int = 0
    pages_fetched: int = 0
    pages_skipped: int = 0
    #: pages fetched once more after their checksum did not match (a transfer may damage bytes)
    pages_refetched: int = 0
    bytes_decompressed: int = 0
    values_decoded: int = 0
    io_seconds: float = 0.0
    decompress_seconds: float = 0.0
    decode_seconds: float = 0.0

    def merge(self, other: ReadCounters) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def as_dict(self) -> dict[str, int | float]:
        return {f.name: getattr(self, f.name) for f in fields(self)}
