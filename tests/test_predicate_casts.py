"""Spark value semantics of constants: calendar, string parsing, exact rounding, CAST."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lazyscan.errors import PredicateError
from lazyscan.predicate import casts
from lazyscan.predicate.expr import Literal

EPOCH = dt.date(1970, 1, 1).toordinal()


@settings(max_examples=300, deadline=None)
@given(st.dates())
def test_calendar_matches_python(day: dt.date) -> None:
    days = casts.days_from_civil(day.year, day.month, day.day)
    assert days == day.toordinal() - EPOCH
    assert casts.civil_from_days(days) == (day.year, day.month, day.day)
    assert casts.format_date(days) == day.isoformat()


def test_calendar_beyond_python_years() -> None:
    for y, m, d in [(0, 1, 1), (-1, 12, 31), (10000, 1, 1), (-4713, 11, 24), (294247, 1, 10)]:
        assert casts.civil_from_days(casts.days_from_civil(y, m, d)) == (y, m, d)
    assert casts.format_date(casts.days_from_civil(10000, 1, 1)) == "+10000-01-01"
    assert casts.days_from_civil(0, 12, 31) == casts.days_from_civil(1, 1, 1) - 1


@settings(max_examples=200, deadline=None)
@given(st.datetimes(timezones=st.just(dt.timezone.utc)))
def test_timestamp_text_round_trip(value: dt.datetime) -> None:
    micros = casts.micros_from_datetime(value)
    assert micros == (value - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(
        microseconds=1
    )
    assert casts.parse_timestamp_string(casts.format_timestamp(micros)) == micros


DATES = [
    ("2020-01-01", "2020-01-01"),
    (" 2020-01-01 ", "2020-01-01"),
    ("2020-1-2", "2020-01-02"),
    ("2020", "2020-01-01"),
    ("2020-03", "2020-03-01"),
    ("2020-01-01 10:00:00", "2020-01-01"),
    ("2020-01-01T", "2020-01-01"),
    ("2020-01-01 anything", "2020-01-01"),
    ("+2020-01-01", "2020-01-01"),
    ("02020-01-01", "2020-01-01"),
    ("2000-02-29", "2000-02-29"),
]


@pytest.mark.parametrize(("text", "iso"), DATES)
def test_parse_date(text: str, iso: str) -> None:
    day = dt.date.fromisoformat(iso)
    assert casts.parse_date_string(text) == day.toordinal() - EPOCH


@pytest.mark.parametrize(
    "text",
    ["x", "", "2020-02-30", "2020-13-01", "1900-02-29", "2020-01-01x", "20-01-01", "2020/01/01"],
)
def test_parse_date_errors(text: str) -> None:
    with pytest.raises(casts.CastError, match="cannot be cast to DATE"):
        casts.parse_date_string(text)


def _utc(*args: int) -> int:
    return casts.micros_from_datetime(dt.datetime(*args, tzinfo=dt.timezone.utc))  # type: ignore[misc]


TIMESTAMPS = [
    ("2020-01-01 10:00:00", _utc(2020, 1, 1, 10)),
    ("2020-01-01T10:00:00", _utc(2020, 1, 1, 10)),
    ("2020-01-01 10", _utc(2020, 1, 1, 10)),
    ("2020-01-01 10:00", _utc(2020, 1, 1, 10)),
    ("2020-01-01", _utc(2020, 1, 1)),
    ("2020-01-01 ", _utc(2020, 1, 1)),
    ("2020", _utc(2020, 1, 1)),
    ("2020-01-01 10:00:00.", _utc(2020, 1, 1, 10)),
    ("2020-01-01 10:00:00.5", _utc(2020, 1, 1, 10, 0, 0, 500000)),
    ("2020-01-01 10:00:00.0000009", _utc(2020, 1, 1, 10)),  # truncated to microseconds
    ("2020-01-01 10:00:00.1234567891", _utc(2020, 1, 1, 10, 0, 0, 123456)),
    ("2020-01-01 10:00:00Z", _utc(2020, 1, 1, 10)),
    ("2020-01-01 10:00:00 UTC", _utc(2020, 1, 1, 10)),
    ("2020-01-01 10:00:00 GMT", _utc(2020, 1, 1, 10)),
    ("2020-01-01 11:00:00+01:00", _utc(2020, 1, 1, 10)),
    ("2020-01-01 11:00:00 +01:00", _utc(2020, 1, 1, 10)),
    ("2020-01-01 11:00:00+01", _utc(2020, 1, 1, 10)),
    ("2020-01-01 11:00:00+0100", _utc(2020, 1, 1, 10)),
    ("2020-01-01 11:00:00+1:00", _utc(2020, 1, 1, 10)),
    ("2020-01-01 11:00:00UTC+01:00", _utc(2020, 1, 1, 10)),
    ("2020-01-01 05:00:00-05:00", _utc(2020, 1, 1, 10)),
    ("2020-01-01 11:00:00 Europe/Paris", _utc(2020, 1, 1, 10)),
    ("2020-07-01 12:00:00 Europe/Paris", _utc(2020, 7, 1, 10)),  # summer time
    ("2020-01-01 11:00:00 CET", _utc(2020, 1, 1, 10)),
    ("2020-03-29 02:30:00 Europe/Paris", _utc(2020, 3, 29, 1, 30)),  # in the gap: shifted
]


@pytest.mark.parametrize(("text", "micros"), TIMESTAMPS)
def test_parse_timestamp(text: str, micros: int) -> None:
    assert casts.parse_timestamp_string(text) == micros


def test_timestamp_ntz_ignores_the_zone() -> None:
    assert casts.parse_timestamp_string("2020-01-01 12:00:00+02:00", ntz=True) == _utc(
        2020, 1, 1, 12
    )
    assert casts.parse_timestamp_string("2020-01-01 12:00:00 Europe/Paris", ntz=True) == _utc(
        2020, 1, 1, 12
    )


@pytest.mark.parametrize(
    "text",
    [
        "10:00:00",
        "2020-01-01 25:00:00",
        "2020-01-01 10:60",
        "2020-01-01 UTC",
        "2020-01-01T10:00Z",
        "2020-01-01 10:00:00 Nowhere/City",
        "2020-01-01 10:00:00+19:00",
        "abc",
        "",
    ],
)
def test_parse_timestamp_errors(text: str) -> None:
    with pytest.raises(casts.CastError, match="cannot be cast to TIMESTAMP"):
        casts.parse_timestamp_string(text)


def test_parse_time() -> None:
    assert casts.parse_time_string("10:00") == 36_000_000_000
    assert casts.parse_time_string(" 1:2:3.0000019 ") == 3_723_000_001
    for bad in ["24:00:00", "10", "10:60", "x"]:
        with pytest.raises(casts.CastError):
            casts.parse_time_string(bad)


NUMBERS = [
    ("5", 5.0),
    (" -5 ", -5.0),
    (".5", 0.5),
    ("5.", 5.0),
    ("-.5e-3", -0.0005),
    ("1.5d", 1.5),
    ("1.5F", 1.5),
    ("0x1p3", 8.0),
    ("1e400", math.inf),
    ("-1e400", -math.inf),
    ("inf", math.inf),
    ("+Infinity", math.inf),
    ("-INF", -math.inf),
    ("NaN", math.nan),
    (" nan ", math.nan),
    ("+NaN", math.nan),
    ("0.1", 0.1),
]


@pytest.mark.parametrize(("text", "value"), NUMBERS)
def test_parse_double(text: str, value: float) -> None:
    got = casts.parse_double_string(text)
    assert (math.isnan(got) and math.isnan(value)) or got == value


@pytest.mark.parametrize("text", ["", "abc", "1_0", "1.5e", "--1", "1,5", "0x10", "Infinityx"])
def test_parse_double_errors(text: str) -> None:
    with pytest.raises(casts.CastError, match="cannot be cast to DOUBLE"):
        casts.parse_double_string(text)


def test_parse_integer_and_boolean() -> None:
    assert casts.parse_integer_string(" +05 ") == 5
    assert casts.parse_integer_string("-9223372036854775808") == -(2**63)
    for bad, target in [
        ("5.0", "bigint"),
        ("", "bigint"),
        ("9223372036854775808", "bigint"),
        ("128", "tinyint"),
        ("1e3", "int"),
    ]:
        with pytest.raises(casts.CastError):
            casts.parse_integer_string(bad, target)
    assert [casts.parse_boolean_string(t) for t in ["t", " TRUE ", "Y", "yes", "1"]] == [True] * 5
    assert [casts.parse_boolean_string(t) for t in ["f", "False", "n", "NO", "0"]] == [False] * 5
    with pytest.raises(casts.CastError):
        casts.parse_boolean_string("on")


# ---------------------------------------------------------------------------------------------
# exact rounding


def test_nearest_float32_avoids_double_rounding() -> None:
    # 1 + 2**-24 + 2**-60 is just above the midpoint of 1 and 1 + 2**-23; going through
    # float64 first loses the 2**-60 and rounds the exact tie to even (1.0): wrong
    value = 1 + Fraction(1, 2**24) + Fraction(1, 2**60)
    assert float(np.float32(float(value))) == 1.0
    assert casts.nearest_float(value, 24) == 1 + 2**-23
    assert casts.nearest_float(2**24 + 1, 24) == 2**24  # tie to even
    assert casts.nearest_float(2**24 + 3, 24) == 2**24 + 4
    max32 = float(np.finfo(np.float32).max)
    half_ulp = Fraction(2) ** (127 - 24)
    assert casts.nearest_float(Fraction(max32) + half_ulp - 1, 24) == max32
    assert casts.nearest_float(Fraction(max32) + half_ulp, 24) == math.inf
    assert casts.nearest_float(-(Fraction(max32) + half_ulp), 24) == -math.inf
    assert casts.nearest_float(Fraction(1, 2**149), 24) == float(np.float32(1e-45))
    assert casts.nearest_float(Fraction(1, 2**151), 24) == 0.0
    assert casts.nearest_float(Fraction(1, 10), 53) == 0.1
    assert casts.nearest_float(10**400, 53) == math.inf


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, width=32), st.integers(-3, 3))
def test_nearest_float32_of_representable_values(value: float, nudge: int) -> None:
    exact = Fraction(value)
    assert casts.nearest_float(exact, 24) == value
    # a tiny nudge never moves a value to another float32
    if value != 0:
        nudged = exact + Fraction(nudge, 2**200)
        assert casts.nearest_float(nudged, 24) == value


def test_round_decimal_half_up() -> None:
    assert casts.round_decimal(Decimal("1.25"), 1) == Decimal("1.3")
    assert casts.round_decimal(Decimal("-1.25"), 1) == Decimal("-1.3")
    assert casts.round_decimal(Decimal("1.24999"), 1) == Decimal("1.2")
    assert casts.round_decimal(Fraction(-5, 2), 0) == Decimal("-3")
    big = Decimal("12345678901234567890123456789.01234567895")
    assert casts.round_decimal(big, 10) == Decimal("12345678901234567890123456789.0123456790")


# ---------------------------------------------------------------------------------------------
# CAST(literal AS type)

CASTS = [
    (Literal("5", "string"), "int", (), Literal(5, "integer")),
    (Literal(2.9, "double"), "int", (), Literal(2, "integer")),
    (Literal(-2.9, "double"), "bigint", (), Literal(-2, "integer")),
    (Literal(Decimal("-2.9"), "decimal"), "int", (), Literal(-2, "integer")),
    (Literal(True, "boolean"), "int", (), Literal(1, "integer")),
    (Literal(1, "integer"), "double", (), Literal(1.0, "double")),
    (Literal(16777217, "integer"), "float", (), Literal(16777216.0, "float")),
    (Literal("1.1", "string"), "float", (), Literal(float(np.float32(1.1)), "float")),
    (Literal(Decimal("1.25"), "decimal"), "decimal", (3, 1), Literal(Decimal("1.3"), "decimal")),
    (Literal(" 1.25 ", "string"), "decimal", (3, 1), Literal(Decimal("1.3"), "decimal")),
    (
        Literal(0.1, "double"),
        "decimal",
        (20, 19),
        Literal(Decimal("0.1000000000000000000"), "decimal"),
    ),
    (Literal(5, "integer"), "decimal", (), Literal(Decimal("5"), "decimal")),
    (Literal(Decimal("1.50"), "decimal"), "string", (), Literal("1.50", "string")),
    (Literal(0, "integer"), "boolean", (), Literal(False, "boolean")),
    (Literal("2020-01-01 10:00:00", "string"), "date", (), Literal(18262, "date")),
    (Literal(18262, "date"), "timestamp", (), Literal(18262 * 86_400_000_000, "timestamp")),
    (Literal(18262 * 86_400_000_000 + 5, "timestamp"), "date", (), Literal(18262, "date")),
    (Literal(-1, "timestamp_ntz"), "date", (), Literal(-1, "date")),
    (Literal(18262, "date"), "string", (), Literal("2020-01-01", "string")),
    (Literal("é", "string"), "binary", (), Literal("é".encode(), "binary")),
    (Literal(None, "null"), "int", (), Literal(None, "null")),
]


@pytest.mark.parametrize(("value", "target", "params", "expected"), CASTS)
def test_cast_literal(
    value: Literal, target: str, params: tuple[int, ...], expected: Literal
) -> None:
    got = casts.cast_literal(value, target, params)
    assert got == expected and type(got.value) is type(expected.value)


CAST_ERRORS = [
    (Literal("abc", "string"), "int", (), casts.CastError),
    (Literal(300, "integer"), "tinyint", (), casts.CastError),
    (Literal(math.nan, "double"), "int", (), casts.CastError),
    (Literal(1e10, "double"), "int", (), casts.CastError),
    (Literal(Decimal("123.45"), "decimal"), "decimal", (4, 2), casts.CastError),
    (Literal(Decimal("9.99"), "decimal"), "decimal", (2, 1), casts.CastError),  # rounds to 10.0
    (Literal(1.5, "double"), "string", (), PredicateError),
    (Literal(5, "integer"), "date", (), PredicateError),
    (Literal(b"\xff", "binary"), "string", (), PredicateError),
    (Literal(1, "integer"), "decimal", (39, 0), PredicateError),
]


@pytest.mark.parametrize(("value", "target", "params", "error"), CAST_ERRORS)
def test_cast_literal_errors(
    value: Literal, target: str, params: tuple[int, ...], error: type
) -> None:
    with pytest.raises(error):
        casts.cast_literal(value, target, params)


def test_decimal_precision() -> None:
    assert casts.decimal_precision(Decimal("1.5")) == (2, 1)
    assert casts.decimal_precision(Decimal("0.01")) == (2, 2)
    assert casts.decimal_precision(Decimal("100")) == (3, 0)
    assert casts.decimal_precision(Decimal("1E+2")) == (3, 0)
    assert casts.decimal_precision(Decimal("0")) == (1, 0)
    assert casts.decimal_precision(Decimal("-12.340")) == (5, 3)


# ---- the session time zone ---------------------------------------------------------------


def _utc_micros(*args: int) -> int:
    return int(dt.datetime(*args, tzinfo=dt.timezone.utc).timestamp()) * 1_000_000  # type: ignore[misc]


@pytest.mark.parametrize(
    ("zone", "text", "utc"),
    [
        ("UTC", "2021-03-14 01:30:00", (2021, 3, 14, 1, 30)),
        ("America/Los_Angeles", "2021-03-14 01:30:00", (2021, 3, 14, 9, 30)),  # PST
        ("America/Los_Angeles", "2021-03-14 03:30:00", (2021, 3, 14, 10, 30)),  # PDT
        ("America/Los_Angeles", "2021-03-14 02:30:00", (2021, 3, 14, 10, 30)),  # in the gap: moved later, as Java does
        ("America/Los_Angeles", "2021-11-07 01:30:00", (2021, 11, 7, 8, 30)),  # twice: the earlier one
        ("Asia/Kolkata", "2021-01-01 00:00:00", (2020, 12, 31, 18, 30)),
        ("+05:00", "2021-01-01 00:00:00", (2020, 12, 31, 19, 0)),
        ("Asia/Kolkata", "2021-01-01 00:00:00 UTC", (2021, 1, 1, 0, 0)),  # a zone of its own wins
    ],
)
def test_timestamp_strings_read_in_the_session_time_zone(zone: str, text: str, utc: tuple[int, ...]) -> None:
    with casts.session_time_zone(zone):
        assert casts.parse_timestamp_string(text) == _utc_micros(*utc)
        assert casts.parse_timestamp_string(text.replace(" UTC", ""), ntz=True) == casts.parse_timestamp_string(
            text.replace(" UTC", ""), ntz=True
        )
    # outside the block, UTC again
    assert casts.parse_timestamp_string("2021-03-14 01:30:00") == _utc_micros(2021, 3, 14, 1, 30)


def test_casts_between_timestamps_and_dates_use_the_session_time_zone() -> None:
    instant = _utc_micros(2021, 3, 14, 3, 0)  # 2021-03-13 19:00 in Los Angeles
    with casts.session_time_zone("America/Los_Angeles"):
        assert casts.cast_literal(Literal(instant, "timestamp"), "date").value == (dt.date(2021, 3, 13) - dt.date(1970, 1, 1)).days
        midnight = casts.cast_literal(Literal((dt.date(2021, 3, 13) - dt.date(1970, 1, 1)).days, "date"), "timestamp").value
        assert midnight == _utc_micros(2021, 3, 13, 8, 0)
        wall = casts.cast_literal(Literal(instant, "timestamp"), "timestamp_ntz").value
        assert wall == _utc_micros(2021, 3, 13, 19, 0)
        assert casts.cast_literal(Literal(wall, "timestamp_ntz"), "timestamp").value == instant
    assert casts.cast_literal(Literal(instant, "timestamp"), "date").value == (dt.date(2021, 3, 14) - dt.date(1970, 1, 1)).days


def test_unknown_session_time_zone_is_refused() -> None:
    with pytest.raises(ValueError, match="Mars/Olympus"), casts.session_time_zone("Mars/Olympus"):
        pass
