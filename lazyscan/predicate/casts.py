"""Spark SQL (ANSI mode) semantics of constant values: parsing, casting, rounding, formatting.

Everything here works on single Python values at parse or bind time, never per row.

Parts and their roles:

- calendar: :func:`days_from_civil` / :func:`civil_from_days` (proleptic Gregorian, any year,
  as Spark 3+), micros conversions of ``datetime`` / ``time`` values.
- string parsing as Spark's casts from STRING do it: :func:`parse_integer_string`,
  :func:`parse_double_string`, :func:`parse_decimal_string`, :func:`parse_boolean_string`,
  :func:`parse_date_string`, :func:`parse_timestamp_string`, :func:`parse_time_string`.
  A malformed string raises :class:`CastError` (a :class:`PredicateError`), like Spark's
  ``CAST_INVALID_INPUT`` in ANSI mode.
- exact rounding: :func:`nearest_float` rounds an exact rational to float32 / float64 the IEEE
  way (round half to even), with no double rounding.
- :func:`cast_literal`: ``CAST(literal AS type)`` for the literal kinds of
  :class:`lazyscan.predicate.expr.Literal`.
- formatting for rendering: :func:`format_date`, :func:`format_timestamp`, :func:`format_time`.

A timestamp string without a zone is wall-clock time in the session time zone (UTC unless
:func:`session_time_zone` says otherwise, as Spark's ``spark.sql.session.timeZone``); casts
between timestamps and dates or times use it too.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as _dt
import decimal
import math
import re
from collections.abc import Iterator
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from lazyscan.errors import OptionError, PredicateError

if TYPE_CHECKING:
    from lazyscan.predicate.expr import Literal

MICROS_PER_SECOND = 1_000_000
MICROS_PER_DAY = 86_400 * MICROS_PER_SECOND

_SESSION_ZONE: contextvars.ContextVar[str] = contextvars.ContextVar("lazyscan_session_time_zone", default="UTC")
_UTC_ZONES = ("", "Z", "UTC", "GMT", "UT", "Etc/UTC", "Etc/GMT", "+00:00")


@contextlib.contextmanager
def session_time_zone(zone: str) -> Iterator[None]:
    """Read timestamps without a zone (literals, strings, casts) in ``zone`` inside the block."""
    check_time_zone(zone)
    token = _SESSION_ZONE.set(zone)
    try:
        yield
    finally:
        _SESSION_ZONE.reset(token)


def check_time_zone(zone: str) -> None:
    """Raise :class:`OptionError` unless ``zone`` is a region id (``Europe/Paris``), ``UTC`` or an offset."""
    if not isinstance(zone, str):
        raise OptionError(f"a time zone is a string, got {type(zone).__name__}")
    try:
        _zone_offset_seconds(zone, 0, zone)
    except PredicateError:
        raise OptionError(f"unknown time zone {zone!r}") from None


def _session_offset_at_wall(wall_micros: int, text: str) -> int:
    zone = _SESSION_ZONE.get()
    return 0 if zone in _UTC_ZONES else _zone_offset_seconds(zone, wall_micros, text)


def _session_offset_at_instant(micros: int) -> int:
    """UTC offset (seconds) of the session time zone at an instant."""
    zone = _SESSION_ZONE.get()
    if zone in _UTC_ZONES:
        return 0
    m = _OFFSET_RE.match(zone[3:] if zone[:3] in ("UTC", "GMT") else zone)
    if m:
        return _zone_offset_seconds(zone, 0, zone)
    import zoneinfo

    try:
        when = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(microseconds=micros)
    except OverflowError:
        return 0
    offset = when.astimezone(zoneinfo.ZoneInfo(zone)).utcoffset()
    assert offset is not None
    return offset.days * 86_400 + offset.seconds
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INTEGRAL_RANGES = {
    "tinyint": (-(2**7), 2**7 - 1),
    "smallint": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "bigint": (INT64_MIN, INT64_MAX),
}
MAX_DECIMAL_PRECISION = 38


class CastError(PredicateError):
    """A constant that cannot be cast to the requested type (Spark: CAST_INVALID_INPUT)."""


# ---------------------------------------------------------------------------------------------
# calendar


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year, including <= 0)."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    mp = (month + 9) % 12
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    """Inverse of :func:`days_from_civil`."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    return (y + (m <= 2), m, d)


def _days_in_month(year: int, month: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def micros_from_datetime(value: _dt.datetime) -> int:
    """Microseconds since the epoch: UTC instant for aware values, wall clock for naive ones."""
    offset = value.utcoffset()
    days = days_from_civil(value.year, value.month, value.day)
    micros = days * MICROS_PER_DAY + _time_micros(
        value.hour, value.minute, value.second, value.microsecond
    )
    if offset is not None:
        micros -= (offset.days * 86_400 + offset.seconds) * MICROS_PER_SECOND + offset.microseconds
    return micros


def micros_from_time(value: _dt.time) -> int:
    return _time_micros(value.hour, value.minute, value.second, value.microsecond)


def _time_micros(h: int, m: int, s: int, us: int) -> int:
    return ((h * 60 + m) * 60 + s) * MICROS_PER_SECOND + us


def format_date(days: int) -> str:
    y, m, d = civil_from_days(days)
    if 0 <= y <= 9999:
        return f"{y:04d}-{m:02d}-{d:02d}"
    return f"{'-' if y < 0 else '+'}{abs(y):04d}-{m:02d}-{d:02d}"


def format_time(micros: int) -> str:
    secs, frac = divmod(micros, MICROS_PER_SECOND)
    h, rest = divmod(secs, 3600)
    m, s = divmod(rest, 60)
    text = f"{h:02d}:{m:02d}:{s:02d}"
    if frac:
        text += "." + f"{frac:06d}".rstrip("0")
    return text


def format_timestamp(micros: int) -> str:
    days, rest = divmod(micros, MICROS_PER_DAY)
    return f"{format_date(days)} {format_time(rest)}"


# ---------------------------------------------------------------------------------------------
# string parsing (Spark's casts from STRING, ANSI mode)


def _invalid(text: str, target: str) -> CastError:
    return CastError(
        f"the value {text!r} of type STRING cannot be cast to {target} because it is malformed"
    )


_INT_RE = re.compile(r"[+-]?\d+\Z")


def parse_integer_string(text: str, target: str = "bigint") -> int:
    """STRING -> TINYINT/SMALLINT/INT/BIGINT: trimmed, optional sign, digits only, in range."""
    core = text.strip()
    if not _INT_RE.match(core):
        raise _invalid(text, target.upper())
    value = int(core)
    lo, hi = INTEGRAL_RANGES[target]
    if not lo <= value <= hi:
        raise _invalid(text, target.upper())
    return value


_DEC_FLOAT_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?\Z")
_HEX_FLOAT_RE = re.compile(
    r"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?\Z"
)
_SPECIAL_FLOATS = {
    "inf": math.inf,
    "+inf": math.inf,
    "infinity": math.inf,
    "+infinity": math.inf,
    "-inf": -math.inf,
    "-infinity": -math.inf,
    "nan": math.nan,
    "+nan": math.nan,
    "-nan": math.nan,
}


def _exact_float_string(text: str, target: str) -> Fraction | float:
    """The exact value of a Java floating-point string, or a special (inf / nan) float."""
    core = text.strip()
    special = _SPECIAL_FLOATS.get(core.lower())
    if special is not None:
        return special
    if _DEC_FLOAT_RE.match(core):
        if core[-1] in "fFdD":
            core = core[:-1]
        return Fraction(decimal.Decimal(core))
    if _HEX_FLOAT_RE.match(core):
        if core[-1] in "fFdD":
            core = core[:-1]
        return Fraction(float.fromhex(core))
    raise _invalid(text, target)


def parse_double_string(text: str, bits: int = 53) -> float:
    """STRING -> DOUBLE (``bits=53``) or FLOAT (``bits=24``), as Java's parseDouble/parseFloat
    plus Spark's special strings (inf, infinity, nan; any case)."""
    value = _exact_float_string(text, "DOUBLE" if bits == 53 else "FLOAT")
    if isinstance(value, float):
        return value
    negative_zero = value == 0 and text.strip().startswith("-")
    result = nearest_float(value, bits)
    return -0.0 if negative_zero else result


_DECIMAL_RE = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")


def parse_decimal_string(text: str) -> decimal.Decimal:
    """STRING -> DECIMAL (exact value; round with :func:`round_decimal`)."""
    core = text.strip()
    if not _DECIMAL_RE.match(core):
        raise _invalid(text, "DECIMAL")
    return decimal.Decimal(core)


_TRUE_STRINGS = frozenset({"t", "true", "y", "yes", "1"})
_FALSE_STRINGS = frozenset({"f", "false", "n", "no", "0"})


def parse_boolean_string(text: str) -> bool:
    core = text.strip().lower()
    if core in _TRUE_STRINGS:
        return True
    if core in _FALSE_STRINGS:
        return False
    raise _invalid(text, "BOOLEAN")


_DATE_RE = re.compile(r"([+-]?)(\d{4,7})(?:-(\d{1,2})(?:-(\d{1,2})(?:[ T].*)?)?)?\Z", re.S)


def parse_date_string(text: str) -> int:
    """STRING -> DATE (days since epoch): ``[+-]yyyy[-m[m][-d[d][ |T anything]]]``."""
    m = _DATE_RE.match(text.strip())
    if not m:
        raise _invalid(text, "DATE")
    sign, y, mo, d = m.groups()
    year = int(y) * (-1 if sign == "-" else 1)
    month = int(mo) if mo else 1
    day = int(d) if d else 1
    if not (1 <= month <= 12 and 1 <= day <= _days_in_month(year, month)):
        raise _invalid(text, "DATE")
    return days_from_civil(year, month, day)


_TS_RE = re.compile(
    r"(?P<sign>[+-]?)(?P<y>\d{4,7})"
    r"(?:-(?P<mo>\d{1,2})"
    r"(?:-(?P<d>\d{1,2})"
    r"(?:[ T]"
    r"(?:(?P<h>\d{1,2})"
    r"(?::(?P<mi>\d{1,2})"
    r"(?::(?P<s>\d{1,2})(?:\.(?P<f>\d*))?"
    r"(?:\s*(?P<z>[A-Za-z+-][A-Za-z0-9_/+:-]*))?"
    r")?)?)?)?)?)?\Z"
)
_OFFSET_RE = re.compile(r"([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?\Z")


def _zone_offset_seconds(zone: str, wall_micros: int, text: str) -> int:
    """UTC offset, in seconds, of a zone id at a wall-clock time."""
    if zone in ("Z", "UTC", "GMT", "UT"):
        return 0
    for prefix in ("UTC", "GMT", "UT"):
        if zone.startswith(prefix) and zone[len(prefix) : len(prefix) + 1] in ("+", "-"):
            zone = zone[len(prefix) :]
            break
    m = _OFFSET_RE.match(zone)
    if m:
        sign, hh, mm, ss = m.groups()
        seconds = int(hh) * 3600 + int(mm or 0) * 60 + int(ss or 0)
        if int(hh) > 18 or int(mm or 0) > 59 or int(ss or 0) > 59 or seconds > 18 * 3600:
            raise _invalid(text, "TIMESTAMP")
        return -seconds if sign == "-" else seconds
    try:
        import zoneinfo

        tz = zoneinfo.ZoneInfo(zone)
    except Exception as e:  # unknown zone, bad key
        raise _invalid(text, "TIMESTAMP") from e
    days, rest = divmod(wall_micros, MICROS_PER_DAY)
    year, month, day = civil_from_days(days)
    if not 1 <= year <= 9999:
        raise _invalid(text, "TIMESTAMP")
    secs = rest // MICROS_PER_SECOND
    local = _dt.datetime(year, month, day, secs // 3600, secs // 60 % 60, secs % 60, tzinfo=tz)
    offset = local.utcoffset()
    assert offset is not None
    return offset.days * 86_400 + offset.seconds


def parse_timestamp_string(text: str, *, ntz: bool = False) -> int:
    """STRING -> TIMESTAMP (UTC micros) or, with ``ntz``, TIMESTAMP_NTZ (wall-clock micros).

    Accepts ``[+-]yyyy[-m[m][-d[d][( |T)h[h][:m[m][:s[s][.fraction]][zone]]]]]``; the fraction is
    truncated to microseconds; a zone is honoured for TIMESTAMP and ignored for TIMESTAMP_NTZ.
    A string without a zone is read in the session time zone (:func:`session_time_zone`). Time-only strings
    (Spark takes today's date) are rejected.
    """
    target = "TIMESTAMP_NTZ" if ntz else "TIMESTAMP"
    m = _TS_RE.match(text.strip())
    if not m:
        raise _invalid(text, target)
    g = m.groupdict()
    year = int(g["y"]) * (-1 if g["sign"] == "-" else 1)
    month = int(g["mo"]) if g["mo"] else 1
    day = int(g["d"]) if g["d"] else 1
    hour = int(g["h"]) if g["h"] else 0
    minute = int(g["mi"]) if g["mi"] else 0
    second = int(g["s"]) if g["s"] else 0
    frac = (g["f"] or "")[:6].ljust(6, "0")
    if not (1 <= month <= 12 and 1 <= day <= _days_in_month(year, month)):
        raise _invalid(text, target)
    if hour > 23 or minute > 59 or second > 59:
        raise _invalid(text, target)
    wall = days_from_civil(year, month, day) * MICROS_PER_DAY + _time_micros(
        hour, minute, second, int(frac)
    )
    zone = g["z"]
    if ntz:
        return wall
    if zone is None:
        return wall - _session_offset_at_wall(wall, text) * MICROS_PER_SECOND
    return wall - _zone_offset_seconds(zone, wall, text) * MICROS_PER_SECOND


_TIME_RE = re.compile(r"(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{0,9}))?)?\Z")


def parse_time_string(text: str) -> int:
    """STRING -> TIME (micros since midnight): ``h[h]:m[m][:s[s][.fraction]]``."""
    m = _TIME_RE.match(text.strip())
    if not m:
        raise _invalid(text, "TIME")
    h, mi, s, f = m.groups()
    hour, minute, second = int(h), int(mi), int(s or 0)
    if hour > 23 or minute > 59 or second > 59:
        raise _invalid(text, "TIME")
    return _time_micros(hour, minute, second, int((f or "")[:6].ljust(6, "0")))


# ---------------------------------------------------------------------------------------------
# exact rounding

_FLOAT_TYPES: dict[int, Any] = {53: np.float64, 24: np.float32, 11: np.float16}


def nearest_float(value: Fraction | int, bits: int = 53) -> float:
    """Round an exact rational to the nearest binary float with ``bits`` significand bits
    (53: float64, 24: float32, 11: float16), ties to even, overflowing to +-inf."""
    fr = Fraction(value)
    if fr == 0:
        return 0.0
    dtype = _FLOAT_TYPES[bits]
    info = np.finfo(dtype)
    try:
        approx = fr.numerator / fr.denominator  # correctly rounded to float64
    except OverflowError:
        approx = math.inf if fr > 0 else -math.inf
    if bits == 53:
        return approx
    with np.errstate(over="ignore"):
        center = dtype(approx)
        neighbours = (
            np.nextafter(center, dtype(-np.inf)),
            center,
            np.nextafter(center, dtype(np.inf)),
        )
    max_finite = Fraction(float(info.max))
    # infinity competes as max + ulp(max): values from max + ulp/2 up round to it (IEEE)
    beyond = max_finite + Fraction(2) ** (int(info.maxexp) - bits)
    candidates = []
    for c in neighbours:
        if np.isinf(c):
            candidates.append((beyond * (1 if c > 0 else -1), float(c)))
        else:
            candidates.append((Fraction(float(c)), float(c)))

    def rank(item: tuple[Fraction, float]) -> tuple[Fraction, int]:
        exact, f = item
        mantissa_odd = 0
        if math.isfinite(f):
            mantissa_odd = int(np.array(f, dtype=dtype).view(_UINT_OF[bits])) & 1
        return (abs(exact - fr), mantissa_odd)

    return min(candidates, key=rank)[1]


_UINT_OF: dict[int, Any] = {24: np.uint32, 11: np.uint16, 53: np.uint64}


def round_decimal(value: decimal.Decimal | Fraction | int, scale: int) -> decimal.Decimal:
    """Round half up (away from zero) to ``scale`` digits after the point, as Spark does."""
    if isinstance(value, Fraction):
        q = Fraction(value) * 10**scale
        n, rem = divmod(abs(q.numerator), q.denominator)
        if 2 * rem >= q.denominator:
            n += 1
        n = -n if q < 0 else n
        return decimal.Decimal(n).scaleb(-scale, decimal.Context(prec=200))
    ctx = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_UP)
    return decimal.Decimal(value).quantize(decimal.Decimal(1).scaleb(-scale), context=ctx)


def decimal_precision(value: decimal.Decimal) -> tuple[int, int]:
    """(precision, scale) of a Decimal as Spark types it (scale >= 0, precision >= scale)."""
    _, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    ndigits = len(digits)
    if exponent >= 0:
        return (ndigits + exponent if any(digits) else 1), 0
    return max(ndigits, -exponent), -exponent


# ---------------------------------------------------------------------------------------------
# CAST(literal AS type)


def _overflow(value: Any, source: str, target: str) -> CastError:
    return CastError(f"the value {value!r} of type {source} cannot be cast to {target}: overflow")


def _to_fraction(lit: Literal) -> Fraction:
    if lit.kind == "boolean":
        return Fraction(int(lit.value))
    return Fraction(lit.value)


def cast_literal(lit: Literal, target: str, params: tuple[int, ...] = ()) -> Literal:
    """``CAST(lit AS target)`` with Spark's ANSI semantics.

    ``target`` is one of tinyint, smallint, int, bigint, float, double, decimal (``params`` =
    (precision, scale), default (10, 0)), string, binary, boolean, date, timestamp,
    timestamp_ntz, time. Raises :class:`CastError` where Spark raises an error at run time and
    :class:`PredicateError` for casts Spark does not allow (or this module does not implement).
    """
    from lazyscan.predicate.expr import Literal

    k, v = lit.kind, lit.value
    if k == "null":
        return lit
    unsupported = PredicateError(f"unsupported: CAST of {k} literal {v!r} to {target.upper()}")
    if target in INTEGRAL_RANGES:
        lo, hi = INTEGRAL_RANGES[target]
        if k == "string":
            return Literal(parse_integer_string(v, target), "integer")
        if k in ("integer", "boolean"):
            n = int(v)
        elif k == "decimal":
            n = int(v)  # truncates toward zero
        elif k in ("float", "double"):
            if not math.isfinite(v):
                raise _overflow(v, k.upper(), target.upper())
            n = int(v)
        else:
            raise unsupported
        if not lo <= n <= hi:
            raise _overflow(v, k.upper(), target.upper())
        return Literal(n, "integer")
    if target in ("float", "double"):
        bits = 24 if target == "float" else 53
        if k == "string":
            return Literal(parse_double_string(v, bits), cast(Any, target))
        if k in ("integer", "decimal", "boolean"):
            return Literal(nearest_float(_to_fraction(lit), bits), cast(Any, target))
        if k in ("float", "double"):
            if not math.isfinite(v):
                return Literal(v, cast(Any, target))
            return Literal(nearest_float(Fraction(v), bits), cast(Any, target))
        raise unsupported
    if target == "decimal":
        precision, scale = params if params else (10, 0)
        if not (1 <= precision <= MAX_DECIMAL_PRECISION and 0 <= scale <= precision):
            raise PredicateError(f"invalid decimal type DECIMAL({precision}, {scale})")
        if k == "string":
            exact: decimal.Decimal | Fraction = parse_decimal_string(v)
        elif k in ("integer", "decimal", "boolean"):
            exact = decimal.Decimal(int(v)) if k == "boolean" else decimal.Decimal(v)
        elif k in ("float", "double"):
            if not math.isfinite(v):
                raise _overflow(v, k.upper(), f"DECIMAL({precision},{scale})")
            exact = decimal.Decimal(repr(v))  # Spark goes through Double.toString
        else:
            raise unsupported
        rounded = round_decimal(exact, scale)
        digits, digits_scale = decimal_precision(rounded)
        if digits - digits_scale > precision - scale:
            raise _overflow(v, k.upper(), f"DECIMAL({precision},{scale})")
        return Literal(rounded, "decimal")
    if target == "string":
        if k == "string":
            return lit
        if k == "integer":
            return Literal(str(v), "string")
        if k == "decimal":
            return Literal(format(v, "f"), "string")
        if k == "boolean":
            return Literal("true" if v else "false", "string")
        if k == "date":
            return Literal(format_date(v), "string")
        if k == "binary":
            try:
                return Literal(v.decode("utf-8"), "string")
            except UnicodeDecodeError:
                raise unsupported from None
        raise unsupported
    if target == "binary":
        if k == "binary":
            return lit
        if k == "string":
            return Literal(v.encode("utf-8"), "binary")
        raise unsupported
    if target == "boolean":
        if k == "boolean":
            return lit
        if k == "string":
            return Literal(parse_boolean_string(v), "boolean")
        if k in ("integer", "decimal"):
            return Literal(v != 0, "boolean")
        if k in ("float", "double"):
            return Literal(v != 0, "boolean")
        raise unsupported
    if target == "date":
        if k == "date":
            return lit
        if k == "string":
            return Literal(parse_date_string(v), "date")
        if k == "timestamp":
            return Literal((v + _session_offset_at_instant(v) * MICROS_PER_SECOND) // MICROS_PER_DAY, "date")
        if k == "timestamp_ntz":
            return Literal(v // MICROS_PER_DAY, "date")
        raise unsupported
    if target in ("timestamp", "timestamp_ntz"):
        kind = cast(Any, target)
        if k == target:
            return Literal(v, kind)
        if k == "timestamp_ntz":  # wall clock read in the session time zone
            return Literal(v - _session_offset_at_wall(v, str(v)) * MICROS_PER_SECOND, kind)
        if k == "timestamp":  # the session's wall clock at that instant
            return Literal(v + _session_offset_at_instant(v) * MICROS_PER_SECOND, kind)
        if k == "string":
            return Literal(parse_timestamp_string(v, ntz=target == "timestamp_ntz"), kind)
        if k == "date":
            wall = v * MICROS_PER_DAY
            if target == "timestamp":
                wall -= _session_offset_at_wall(wall, str(v)) * MICROS_PER_SECOND
            return Literal(wall, kind)
        raise unsupported
    if target == "time":
        if k == "time":
            return lit
        if k == "string":
            return Literal(parse_time_string(v), "time")
        if k == "timestamp":
            return Literal((v + _session_offset_at_instant(v) * MICROS_PER_SECOND) % MICROS_PER_DAY, "time")
        if k == "timestamp_ntz":
            return Literal(v % MICROS_PER_DAY, "time")
        raise unsupported
    raise PredicateError(f"unsupported: CAST to {target.upper()}")
