"""Who wrote a file, and which of its statistics pruning may trust.

Writers get statistics wrong. This module is the one place that says where: :data:`RULES` is a
table of known writer bugs, each naming the writer, the versions it affects, the statistic
(min/max or the null count), the columns (by type, sort order or encoding) and its source. A
reader decides once per file which rules apply (:class:`StatisticsTrust`, from
:func:`parquet_writer` or :func:`orc_writer`) and asks per column chunk which statistics to leave
unused. A writer that no rule names is trusted; its statistics still pass the writer-independent
checks of :func:`plausible_count` and :func:`ordered_bounds` (statistics that contradict the row
count or each other are not used).

Leaving a statistic unused only ever weakens pruning: a distrusted min/max or null count is
treated as unknown, so a unit that might hold a match is read.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

#: the bounds of a column chunk, page or stripe
MIN_MAX = "min/max"
#: the number of NULLs (Parquet ``null_count``; ORC ``numberOfValues`` with ``hasNull``)
NULL_COUNT = "null count"
#: the Bloom filters of a column
BLOOM_FILTER = "Bloom filter"

#: row-group statistics (Parquet column chunk; ORC stripe and row-index entries)
CHUNK = "chunk"
#: per-page statistics of the Parquet page index (ColumnIndex)
PAGE = "page"

Version = tuple[int, int, int]

_BYTES = ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")


@dataclass(frozen=True)
class Writer:
    """The program that wrote a file, as far as the file says.

    ``name`` is lower case (``parquet-mr``, ``parquet-cpp-arrow``, ``impala``, ``polars``,
    ``orc-java``, ``orc-cpp``, ...; ``""`` when the file names no writer); ``version`` is
    ``(major, minor, patch)`` or None when absent or unreadable. ``orc_version`` is the ORC
    postscript's writer version (which fixes the writer includes: 6 is ORC-135).
    """

    format: str
    name: str
    version: Version | None
    text: str
    pre_release: str = ""
    orc_version: int | None = None


@dataclass(frozen=True)
class ColumnFacts:
    """What the rules look at in a column, in words both formats share.

    ``kind``: ``int``, ``uint``, ``float`` (any width but half), ``float16``, ``decimal``,
    ``string``, ``binary``, ``date``, ``time``, ``timestamp``, ``int96``, ``boolean`` or
    ``other``. ``physical``: the Parquet physical type name (``BYTE_ARRAY``, ``INT32``, ...) or
    the ORC type kind. ``dictionary_encoded``: some of the chunk's pages are dictionary
    encoded. ``arrow_dictionary``: the file's stored Arrow schema declares the column a
    dictionary (None: the file stores no Arrow schema or it cannot be matched).
    """

    kind: str
    physical: str = ""
    precision: int = 0
    repeated: bool = False
    dictionary_encoded: bool = False
    arrow_dictionary: bool | None = None


@dataclass(frozen=True)
class Rule:
    """One known writer bug: these statistics of these columns are not to be trusted.

    Versions: ``fixed`` is the first version without the bug (None: every version is affected);
    a version inside one of ``fixed_also`` (``[first, end)`` of a release line that got the fix
    back-ported) is fixed too; a writer whose version cannot be read is taken as affected. For
    ORC, ``orc_versions`` (``[first, end)``) limits the rule to postscript writer versions.
    ``writer`` ``"*"`` is every writer of the format; ``""`` a file that names no writer.
    """

    format: str
    writer: str
    statistics: frozenset[str]
    columns: str
    applies: Callable[[ColumnFacts], bool]
    source: str
    fixed: Version | None = None
    fixed_also: tuple[tuple[Version, Version], ...] = ()
    orc_versions: tuple[int, int] | None = None
    levels: frozenset[str] = frozenset({CHUNK, PAGE})
    exempt: Callable[[Writer], bool] | None = None

    def affects(self, writer: Writer) -> bool:
        """Whether files of ``writer`` have this bug."""
        if writer.format != self.format or self.writer not in ("*", writer.name):
            return False
        if self.orc_versions is not None:
            lo, hi = self.orc_versions
            if not lo <= (writer.orc_version or 0) < hi:
                return False
        if self.exempt is not None and self.exempt(writer):
            return False
        v = writer.version
        if self.fixed is None or v is None:
            return True
        if v >= self.fixed:
            return False
        return not any(lo <= v < hi for lo, hi in self.fixed_also)

    def describe(self) -> str:
        """One line: writer, versions, statistics, columns and source."""
        who = {"*": "every writer", "": "no writer named"}.get(self.writer, self.writer)
        if self.orc_versions is not None:
            who += f" (writer version {self.orc_versions[0]}..{self.orc_versions[1] - 1})"
        if self.fixed is not None:
            who += " before " + ".".join(map(str, self.fixed))
        stats = " and ".join(sorted(self.statistics))
        return f"{self.format}: {who}: {stats} of {self.columns} ({self.source})"


# ---- columns the rules name -------------------------------------------------------------------


def _binary(f: ColumnFacts) -> bool:
    return f.physical in _BYTES


def _not_signed_order(f: ColumnFacts) -> bool:
    """Types whose sort order is not signed: compared with signed operators by old writers."""
    return f.kind in ("uint", "string", "binary", "float16") or (f.kind == "decimal" and f.physical in _BYTES)


def _bytes_decimal(f: ColumnFacts) -> bool:
    return f.kind == "decimal" and f.physical in _BYTES


def _byte_array_decimal(f: ColumnFacts) -> bool:
    return f.kind == "decimal" and f.physical == "BYTE_ARRAY"


def _decimal(f: ColumnFacts) -> bool:
    return f.kind == "decimal"


def _floating(f: ColumnFacts) -> bool:
    return f.kind in ("float", "float16")


def _unsigned(f: ColumnFacts) -> bool:
    return f.kind == "uint"


def _arrow_dictionary(f: ColumnFacts) -> bool:
    return f.dictionary_encoded and f.arrow_dictionary is not False


def _repeated(f: ColumnFacts) -> bool:
    return f.repeated


def _timestamp(f: ColumnFacts) -> bool:
    return f.kind == "timestamp"


def _decimal64(f: ColumnFacts) -> bool:
    return f.kind == "decimal" and 0 < f.precision <= 18


def _every(f: ColumnFacts) -> bool:
    return True


def _cdh_with_parquet_251(w: Writer) -> bool:
    """CDH 5.5 and later ship parquet-mr 1.5.0 with the PARQUET-251 fix (1.5.0-cdh5.5.0 on)."""
    m = re.fullmatch(r"cdh(\d+)\.(\d+)(?:\.(\d+))?.*", w.pre_release)
    return w.version == (1, 5, 0) and m is not None and (int(m[1]), int(m[2])) >= (5, 5)


_BOTH = frozenset({MIN_MAX, NULL_COUNT})
_MINMAX = frozenset({MIN_MAX})
_NULLS = frozenset({NULL_COUNT})

#: The known writer bugs. Sources are Apache JIRA ids (PARQUET-, ARROW-, ORC-, HIVE-, IMPALA-)
#: or GitHub issues (repository#number).
RULES: tuple[Rule, ...] = (
    # ---- Parquet, parquet-mr (parquet-java) ----
    Rule("parquet", "parquet-mr", _MINMAX, "BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY columns", _binary,
         "PARQUET-251: binary min/max corrupted by reused buffers", fixed=(1, 8, 0),
         exempt=_cdh_with_parquet_251),
    Rule("parquet", "", _MINMAX, "BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY columns", _binary,
         "PARQUET-297: parquet-mr of the PARQUET-251 era sometimes left created_by out"),
    Rule("parquet", "parquet-mr", _MINMAX, "columns whose sort order is not signed (unsigned integers, "
         "strings, binary, decimals in bytes)", _not_signed_order,
         "PARQUET-686: min/max taken with signed comparisons", fixed=(1, 10, 0)),
    Rule("parquet", "parquet-mr", _MINMAX, "float and double columns", _floating,
         "PARQUET-1246: a NaN first in a page froze its min/max, so later values were left out",
         fixed=(1, 10, 0), fixed_also=(((1, 8, 3), (1, 9, 0)),)),
    # ---- Parquet, parquet-cpp and Arrow C++ (parquet-cpp-arrow from Arrow 4.0) ----
    Rule("parquet", "parquet-cpp", _MINMAX, "columns whose sort order is not signed", _not_signed_order,
         "PARQUET-686 in parquet-cpp: min/max taken with signed comparisons", fixed=(1, 3, 0)),
    Rule("parquet", "parquet-cpp", _MINMAX, "float and double columns", _floating,
         "PARQUET-1225: a NaN first in a page froze its min/max", fixed=(1, 5, 0)),
    Rule("parquet", "parquet-cpp", _MINMAX, "decimals in FIXED_LEN_BYTE_ARRAY or BYTE_ARRAY", _bytes_decimal,
         "PARQUET-1655: decimal min/max compared as unsigned bytes"),
    Rule("parquet", "parquet-cpp-arrow", _MINMAX, "decimals in FIXED_LEN_BYTE_ARRAY or BYTE_ARRAY", _bytes_decimal,
         "PARQUET-1655: decimal min/max compared as unsigned bytes", fixed=(4, 0, 0)),
    Rule("parquet", "parquet-cpp", _NULLS, "dictionary-encoded columns written from Arrow dictionary arrays",
         _arrow_dictionary, "ARROW-12513: null_count 0 on dictionary arrays holding nulls"),
    Rule("parquet", "parquet-cpp-arrow", _NULLS, "dictionary-encoded columns written from Arrow dictionary "
         "arrays", _arrow_dictionary, "ARROW-12513: null_count 0 on dictionary arrays holding nulls",
         fixed=(5, 0, 0)),
    Rule("parquet", "parquet-cpp", _BOTH, "dictionary-encoded columns written from Arrow dictionary arrays",
         _arrow_dictionary, "apache/arrow#15042: statistics of the first batch of a dictionary array only"),
    Rule("parquet", "parquet-cpp-arrow", _BOTH, "dictionary-encoded columns written from Arrow dictionary "
         "arrays", _arrow_dictionary,
         "apache/arrow#15042: statistics of the first batch of a dictionary array only", fixed=(11, 0, 0)),
    Rule("parquet", "parquet-cpp-arrow", _BOTH, "dictionary-encoded columns written from Arrow dictionary "
         "arrays", _arrow_dictionary,
         "apache/arrow#34106: page statistics of a dictionary array written as several pages",
         fixed=(12, 0, 0), levels=frozenset({PAGE})),
    Rule("parquet", "parquet-cpp", _NULLS, "columns inside lists", _repeated,
         "PARQUET-2067: null_count left out NULL and empty enclosing lists"),
    Rule("parquet", "parquet-cpp-arrow", _NULLS, "columns inside lists", _repeated,
         "PARQUET-2067: null_count left out NULL and empty enclosing lists", fixed=(6, 0, 0)),
    # ---- Parquet, other writers ----
    Rule("parquet", "impala", _MINMAX, "float and double columns", _floating,
         "IMPALA-6527: a NaN first in a page froze its min/max", fixed=(2, 12, 0)),
    Rule("parquet", "polars", _MINMAX, "unsigned integer columns", _unsigned,
         "pola-rs/polars#16683: UInt64 min/max written as signed and overflowing", fixed=(1, 0, 0)),
    Rule("parquet", "polars", _MINMAX, "decimal columns", _decimal,
         "pola-rs/polars#29347: decimal min/max merged with unsigned byte comparison "
         "(2.1.0 is the first version checked to be right)", fixed=(2, 1, 0)),
    Rule("parquet", "parquet-go", _MINMAX, "unsigned integer columns", _unsigned,
         "apache/arrow-go#209: unsigned min/max started from signed defaults", fixed=(18, 1, 0)),
    Rule("parquet", "parquet-rs", _MINMAX, "decimals in BYTE_ARRAY", _byte_array_decimal,
         "apache/arrow-rs#10860: BYTE_ARRAY decimal min/max compared by bytes (no fixed release known)"),
    # ---- ORC (writer versions from the postscript) ----
    Rule("orc", "*", _BOTH, "every column", _every,
         "HIVE-8732: files of the original writer version have wrong string and stripe maximum "
         "statistics (ORC's C++ reader ignores their statistics)", orc_versions=(0, 1)),
    Rule("orc", "*", _MINMAX, "timestamp columns", _timestamp,
         "ORC-135: timestamp statistics in the writer's local time", orc_versions=(0, 6)),
    Rule("orc", "orc-java", _MINMAX, "decimals of precision 18 or less", _decimal64,
         "ORC-517: ORC Java 1.5.0-1.5.5 wrote wrong decimal64 min/max", orc_versions=(6, 7)),
    Rule("orc", "orc-cpp", frozenset({BLOOM_FILTER}), "every column", _every,
         "ORC-1024: the C++ writer hashed numbers for its Bloom filters unlike every reader; "
         "its versions 1.6.0-1.6.11 and 1.7.0 (and those that do not record a version) are affected",
         fixed=(1, 7, 1), fixed_also=(((1, 6, 12), (1, 7, 0)),)),
)

_NOTHING: frozenset[str] = frozenset()


class StatisticsTrust:
    """The rules that apply to one writer: decided once per file, asked per column chunk."""

    def __init__(self, writer: Writer, rules: Iterable[Rule] = RULES) -> None:
        self.writer = writer
        self.rules = tuple(r for r in rules if r.affects(writer))

    def __bool__(self) -> bool:
        """True when some rule applies to this writer (columns may still all be trusted)."""
        return bool(self.rules)

    def distrusted(self, facts: ColumnFacts, level: str = CHUNK) -> frozenset[str]:
        """The statistics (:data:`MIN_MAX`, :data:`NULL_COUNT`) of a column not to be used."""
        if not self.rules:
            return _NOTHING
        out: set[str] = set()
        for r in self.rules:
            if level in r.levels and r.applies(facts):
                out |= r.statistics
        return frozenset(out)

    def reasons(self, facts: ColumnFacts, level: str = CHUNK) -> list[Rule]:
        """The rules behind :meth:`distrusted`."""
        return [r for r in self.rules if level in r.levels and r.applies(facts)]


# ---- who wrote the file -----------------------------------------------------------------------

# "<application> version <version> (build <build>)", every part after the name optional
_CREATED_BY = re.compile(r"^(.*?)\s*(?:\bversion\b\s*(.*?))?\s*(?:\(\s*build\b[^)]*\)?)?\s*$", re.IGNORECASE | re.DOTALL)
_VERSION = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(.*)$", re.DOTALL)
#: application names as written, mapped to the names the rules use
_ALIASES = (("polars", "polars"), ("fastparquet", "fastparquet"), ("duckdb", "duckdb"))
_ORC_WRITERS = {0: "orc-java", 1: "orc-cpp", 2: "presto", 3: "scritchley-go", 4: "trino", 5: "cudf"}


def parse_version(text: str | None) -> tuple[Version | None, str]:
    """``(major, minor, patch)`` and the rest (pre-release, build) of a version text; missing
    minor and patch are 0; None when the text does not start with a number."""
    m = _VERSION.match((text or "").strip())
    if m is None:
        return None, ""
    version = (int(m[1]), int(m[2] or 0), int(m[3] or 0))
    return version, m[4].lstrip("-+_ ")


@functools.lru_cache(maxsize=256)
def parquet_writer(created_by: str | None) -> Writer:
    """The writer a Parquet footer's ``created_by`` names (``""`` when it names none)."""
    text = created_by or ""
    m = _CREATED_BY.match(text.strip())
    app = (m[1] if m else text).strip().lower()
    for prefix, name in _ALIASES:
        if app.startswith(prefix):
            app = name
    version, rest = parse_version(m[2] if m else None)
    return Writer("parquet", app, version, text, rest)


@functools.lru_cache(maxsize=64)
def orc_writer(writer_id: int | None, writer_version: int | None, software_version: str | None = None) -> Writer:
    """The writer of an ORC file: footer ``writer`` id, postscript ``writerVersion`` and footer
    ``softwareVersion`` (absent before ORC 1.7)."""
    name = _ORC_WRITERS.get(writer_id or 0, f"orc-writer-{writer_id}")
    version, rest = parse_version(software_version)
    return Writer("orc", name, version, software_version or "", rest, writer_version or 0)


@functools.lru_cache(maxsize=256)
def parquet_trust(created_by: str | None) -> StatisticsTrust:
    """:class:`StatisticsTrust` of a Parquet file's writer (one per distinct ``created_by``)."""
    return StatisticsTrust(parquet_writer(created_by))


@functools.lru_cache(maxsize=64)
def orc_trust(writer_id: int | None, writer_version: int | None, software_version: str | None = None) -> StatisticsTrust:
    """:class:`StatisticsTrust` of an ORC file's writer."""
    return StatisticsTrust(orc_writer(writer_id, writer_version, software_version))


# ---- checks that need no writer ---------------------------------------------------------------


def plausible_count(count: int | None, limit: int | None) -> int | None:
    """``count`` when it is a count of at most ``limit`` items, else None (unknown)."""
    if count is None or count < 0 or (limit is not None and count > limit):
        return None
    return count


def ordered_bounds(lo: Any, hi: Any) -> bool:
    """Whether ``lo``/``hi`` can be bounds: both present, neither NaN, ``lo <= hi``."""
    if lo is None or hi is None:
        return False
    if (isinstance(lo, float) and math.isnan(lo)) or (isinstance(hi, float) and math.isnan(hi)):
        return False
    try:
        return bool(lo <= hi)
    except TypeError:
        return False


# ---- layout quirks of writers -----------------------------------------------------------------


def chunk_size_leaves_out_dictionary_header(created_by: str | None) -> bool:
    """Whether a Parquet writer's column chunk sizes leave out the dictionary page header:
    parquet-mr before 1.2.9, or of a version it does not say (PARQUET-816)."""
    w = parquet_writer(created_by)
    return w.name == "parquet-mr" and (w.version is None or w.version < (1, 2, 9))


def v2_pages_always_compressed(created_by: str | None) -> bool:
    """Whether a Parquet writer compressed the values of its v2 data pages even where the page
    header says ``is_compressed = false``: parquet-cpp before 2.0 (pyarrow before 3.0, which
    signed as ``parquet-cpp version 1.5.1``; later ones sign as ``parquet-cpp-arrow``) did so,
    ARROW-10353. Arrow's reader decompresses such pages by this rule (ARROW-17100)."""
    w = parquet_writer(created_by)
    return w.name == "parquet-cpp" and (w.version is None or w.version < (2, 0, 0))
