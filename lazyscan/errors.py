"""Exceptions raised by lazyscan.

Every error lazyscan raises derives from :class:`LazyScanError`. Errors about a file carry its
location (file, row group or stripe, column, page) so a message read in a Spark task log points at the cause.
"""

from __future__ import annotations


class LazyScanError(Exception):
    """Base class of every lazyscan error."""


class Location:
    """Where in a file something went wrong (a Parquet row group or an ORC stripe); every part
    is optional."""

    __slots__ = ("column", "file", "page", "row_group", "stripe")

    def __init__(
        self,
        file: str | None = None,
        row_group: int | None = None,
        column: str | None = None,
        page: int | None = None,
        stripe: int | None = None,
    ) -> None:
        self.file = file
        self.row_group = row_group
        self.column = column
        self.page = page
        self.stripe = stripe

    def describe(self) -> str:
        parts = []
        if self.file is not None:
            parts.append(f"file {self.file!r}")
        if self.stripe is not None:
            parts.append(f"stripe {self.stripe}")
        if self.row_group is not None:
            parts.append(f"row group {self.row_group}")
        if self.column is not None:
            parts.append(f"column {self.column!r}")
        if self.page is not None:
            parts.append(f"page {self.page}")
        return ", ".join(parts)


class FileError(LazyScanError):
    """An error tied to a place in a file."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        row_group: int | None = None,
        column: str | None = None,
        page: int | None = None,
        stripe: int | None = None,
    ) -> None:
        self.reason = message
        self.location = Location(file, row_group, column, page, stripe)
        where = self.location.describe()
        super().__init__(f"{message} ({where})" if where else message)

    def at(
        self,
        *,
        file: str | None = None,
        row_group: int | None = None,
        column: str | None = None,
        page: int | None = None,
        stripe: int | None = None,
    ) -> FileError:
        """Return a copy of this error with missing location parts filled in."""
        loc = self.location
        return type(self)(
            self.reason,
            file=loc.file if loc.file is not None else file,
            row_group=loc.row_group if loc.row_group is not None else row_group,
            column=loc.column if loc.column is not None else column,
            page=loc.page if loc.page is not None else page,
            stripe=loc.stripe if loc.stripe is not None else stripe,
        )


class CorruptFileError(FileError):
    """The file is not valid Parquet: bad magic, truncated, inconsistent sizes, bad encodings."""


class UnsupportedFeatureError(FileError):
    """Valid Parquet that lazyscan does not read (encryption, an unknown encoding or codec)."""


class PredicateError(LazyScanError):
    """A filter that cannot be evaluated: unknown column, impossible comparison, bad syntax."""


class OptionError(LazyScanError, ValueError):
    """An option or argument with a bad name or value (a scan option, a command-line flag, rows
    or ranges asked of a reader)."""


class SourceError(LazyScanError):
    """A path or filesystem that cannot be listed, opened or read."""


class TableFolderError(SourceError):
    """A path to be read as plain files that is, lies inside or holds a Delta Lake or Apache
    Iceberg table: such a folder keeps the files of older versions and rows the table removed,
    so reading every file in it returns wrong rows. ``path``: the path given; ``root``: the
    table's root folder; ``kind``: ``"delta"`` or ``"iceberg"``."""

    def __init__(self, message: str, path: str | None = None, root: str | None = None, kind: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.root = root
        self.kind = kind


class AccessDeniedError(SourceError):
    """The store refused access to an object (HTTP 403, missing permission): not retried."""


class ObjectNotFoundError(SourceError):
    """The object (or local file) does not exist (HTTP 404): not retried."""


class TransientSourceError(SourceError):
    """A store kept answering with a transient failure (throttling, 5xx, reset connections,
    truncated bodies, stalls) until the retries' time budget ran out."""


class FileChangedError(FileError):
    """A file changed between planning and reading (another size, modification time, ETag or
    footer): its planned metadata no longer describes its bytes."""


class MissingDependencyError(LazyScanError, ImportError):
    """An optional package lazyscan needs for what was asked is not installed (the message
    names the ``pip install`` that brings it)."""


class IcebergPlanError(CorruptFileError):
    """An Iceberg table whose metadata or delete files cannot be planned (missing or corrupt
    manifest, delete file pointing past its data file). The message names the table, the snapshot
    and the file."""


class IcebergUnsupportedError(UnsupportedFeatureError):
    """An Iceberg table feature lazyscan does not read; the message names the feature."""
