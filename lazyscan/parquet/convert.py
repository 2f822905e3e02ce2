"""From decoded Parquet values to Arrow arrays of the column's Arrow type.

:func:`assemble` concatenates the :class:`PageValues` of a column chunk, resolves dictionary codes,
spreads the non-null values over the rows (nulls get zero-filled slots) and builds the Arrow array
from buffers. Physical-to-logical conversions (narrow ints, unsigned views, INT96 timestamps,
decimals from INT32/INT64/big-endian bytes, float16) are vectorized or numba kernels.

No conversion wraps: INT96 values (a Julian day and nanoseconds into it) read as microseconds,
the nanoseconds truncated toward zero as Spark (``DateTimeUtils.fromJulianDay``) and Arrow do;
a day too far for 64-bit microseconds (about 292,000 years from 1970) is an error, where Spark's
own multiplication wraps (but for the one wrap Spark's writer makes, undone as Spark's reader
does: :func:`_int96_beyond_int64`). Decimals from bytes must fit their Arrow width; decimals from INT32 /
INT64 are held whole, as Spark holds them (``Decimal.createUnsafe``), even with more digits than
their declared precision. Dates, times and TIMESTAMP(MILLIS/MICROS/NANOS) are stored in their
Arrow type's own width and unit, so every value fits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lazyscan.errors import CorruptFileError, UnsupportedFeatureError
from lazyscan.format.kernels import kernel_jit
from lazyscan.parquet import buffers
from lazyscan.parquet.decode import ByteArrays, PageValues, Values
from lazyscan.parquet.metadata import PhysicalType
from lazyscan.parquet.schema import ColumnDescriptor

_JULIAN_UNIX_EPOCH = 2440588
_NANOS_PER_DAY = 86400 * 10**9
_INT32_MAX = 2**31 - 1


_jit = kernel_jit(nogil=True, read_only=("src", "rows"))


@_jit
def _be_to_le_decimal(offsets: np.ndarray, data: np.ndarray, words: int, out: np.ndarray) -> int:
    """Big-endian two's complement integers (data[offsets[i]:offsets[i+1]]) into ``words``
    little-endian int64 words each (out: uint8, n * 8 * words). Returns -1 or the first index
    that does not fit."""
    width = words * 8
    n = len(offsets) - 1
    for i in range(n):
        s = offsets[i]
        e = offsets[i + 1]
        length = e - s
        base = i * width
        neg = length > 0 and data[s] >= 128
        fill = 255 if neg else 0
        if length > width:
            # extra leading bytes must be pure sign extension
            for j in range(s, e - width):
                if data[j] != fill:
                    return i
            s = e - width
            length = width
        for j in range(length):
            out[base + j] = data[e - 1 - j]
        for j in range(length, width):
            out[base + j] = fill
    return -1


@_jit
def _be_fixed_to_le_decimal(rows: np.ndarray, out: np.ndarray) -> int:
    """Big-endian two's complement integers of one width (``rows``: n x w uint8) into
    little-endian int64 words (``out``: n x words). Returns -1 or the first row that does not
    fit."""
    n, w = rows.shape
    words = out.shape[1]
    for i in range(n):
        neg = w > 0 and rows[i, 0] >= 128
        fill = np.int64(-1) if neg else np.int64(0)
        # bytes beyond what the words hold must be pure sign extension
        extra = w - 8 * words
        for j in range(max(extra, 0)):
            if rows[i, j] != (255 if neg else 0):
                return i
        # word k holds bytes [w - 8(k+1), w - 8k) of the big-endian value
        for k in range(words):
            hi = w - 8 * k
            lo = max(hi - 8, 0)
            if hi <= 0:
                out[i, k] = fill
                continue
            acc = np.uint64(0)
            for j in range(lo, hi):
                acc = (acc << np.uint64(8)) | np.uint64(rows[i, j])
            nbytes = hi - lo
            if nbytes < 8 and neg:
                acc |= ~np.uint64(0) << np.uint64(8 * nbytes)
            out[i, k] = np.int64(acc)
    return -1


@_jit
def _int96_to_units(raw: np.ndarray, units_per_day: int, nanos_per_unit: int, out: np.ndarray, overflow: np.ndarray) -> int:
    """INT96 timestamps (``raw``: n x 12 bytes, nanoseconds into the day as a little-endian int64,
    then the Julian day as an int32) as units since 1970-01-01, the nanoseconds truncated toward
    zero. A value whose units do not fit an int64 is marked in ``overflow`` (``out`` gets 0
    there); returns how many were."""
    top = np.int64(9_223_372_036_854_775_807)
    bottom = -top - 1
    marked = 0
    for i in range(raw.shape[0]):
        nanos = np.int64(0)
        for b in range(7, -1, -1):
            nanos = (nanos << 8) | np.int64(raw[i, b])
        day = np.int64(0)
        for b in range(11, 7, -1):
            day = (day << 8) | np.int64(raw[i, b])
        if day >= 2**31:
            day -= 2**32
        days = day - _JULIAN_UNIX_EPOCH
        overflow[i] = False
        out[i] = 0
        if days > top // units_per_day or days < -(top // units_per_day):
            overflow[i] = True
            marked += 1
            continue
        # integer division truncating toward zero, as Java's and C++'s
        sub = nanos // nanos_per_unit
        if sub < 0 and sub * nanos_per_unit != nanos:
            sub += 1
        base = days * units_per_day
        if (sub > 0 and base > top - sub) or (sub < 0 and base < bottom - sub):
            overflow[i] = True
            marked += 1
            continue
        out[i] = base + sub
    return marked


def _int96_beyond_int64(day: int, nanos: int, units_per_day: int, nanos_per_unit: int) -> int | None:
    """An INT96 value whose units overflow an int64 in :func:`_int96_to_units`, as Spark reads it
    where Spark's own writer produced it, else None. Spark writes a timestamp of the years after
    about 287,000 (microseconds beyond 2**63 - 1 - 2440588 days) with the addition of the Julian
    epoch in ``DateTimeUtils.toJulianDay`` overflowing: its day is far negative, and reading it
    back overflows the other way (``fromJulianDay``), to the value written (parquet-testing's
    int96_from_spark.parquet). Only that wrap is undone: other values beyond 64 bits are no
    timestamp any writer made."""
    part = abs(nanos) // nanos_per_unit
    exact = (day - _JULIAN_UNIX_EPOCH) * units_per_day + (part if nanos >= 0 else -part)
    lowest = -(2**63)
    if lowest - _JULIAN_UNIX_EPOCH * units_per_day <= exact < lowest:
        return exact + 2**64
    return None


@_jit
def _take_spread_1d(src: np.ndarray, codes: np.ndarray, valid: np.ndarray, out: np.ndarray) -> int:
    """out[i] = src[codes[j]] for the j-th valid row i (every row when ``valid`` is empty); null
    rows get zeros. Returns -1, or the position of a code outside ``src``."""
    m = src.shape[0]
    n = out.shape[0]
    if valid.shape[0] != n:
        for i in range(n):
            c = codes[i]
            if c < 0 or c >= m:
                return i
            out[i] = src[c]
        return -1
    j = 0
    for i in range(n):
        if valid[i]:
            c = codes[j]
            if c < 0 or c >= m:
                return j
            out[i] = src[c]
            j += 1
        else:
            out[i] = 0
    return -1


@_jit
def _take_spread_2d(src: np.ndarray, codes: np.ndarray, valid: np.ndarray, out: np.ndarray) -> int:
    """Row-wise :func:`_take_spread_1d` for 2-D arrays (decimals, fixed-size binary)."""
    m = src.shape[0]
    n = out.shape[0]
    w = out.shape[1]
    spread = valid.shape[0] == n
    j = 0
    for i in range(n):
        if spread and not valid[i]:
            for k in range(w):
                out[i, k] = 0
            continue
        c = codes[j]
        if c < 0 or c >= m:
            return j
        for k in range(w):
            out[i, k] = src[c, k]
        j += 1
    return -1


@_jit
def _decimal_from_int(v: np.ndarray, out: np.ndarray) -> None:
    """Sign-extend int64 values into little-endian multi-word integers (out: n x words int64)."""
    words = out.shape[1]
    for i in range(v.shape[0]):
        x = v[i]
        out[i, 0] = x
        fill = -1 if x < 0 else 0
        for w in range(1, words):
            out[i, w] = fill


def _validity(valid: np.ndarray | None) -> tuple[pa.Buffer | None, int]:
    if valid is None:
        return None, 0
    nulls = int(len(valid) - np.count_nonzero(valid))
    if nulls == 0:
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little")), nulls


def _concat_values(parts: list[Values]) -> Values:
    if isinstance(parts[0], ByteArrays):
        return ByteArrays.concat(parts)  # type: ignore[arg-type]
    if len(parts) == 1:
        return parts[0]
    return np.concatenate(parts)  # type: ignore[arg-type]


def resolve_codes(codes: np.ndarray, dictionary: Values) -> Values:
    """Look dictionary values up by code."""
    if isinstance(dictionary, ByteArrays):
        return dictionary.take(codes.astype(np.int64))
    return dictionary[codes]


@dataclass
class Assembled:
    """A column chunk's selected rows before conversion to Arrow.

    Either ``values`` (the non-null values in row order) or ``codes`` with ``dictionary``
    (all pages dictionary encoded: conversion happens once on the dictionary, then a gather).
    """

    num_rows: int
    valid: np.ndarray | None
    values: Values | None = None
    codes: np.ndarray | None = None
    dictionary: Values | None = None

    def take(self, keep: np.ndarray) -> Assembled:
        """The rows at positions ``keep`` (sorted) of this chunk."""
        valid = self.valid
        if valid is None:
            vidx = keep
            new_valid = None
        else:
            position = np.cumsum(valid, dtype=np.int64) - 1
            new_valid = valid[keep]
            vidx = position[keep][new_valid]
        if self.codes is not None:
            return Assembled(len(keep), new_valid, codes=self.codes[vidx], dictionary=self.dictionary)
        values = self.values
        if isinstance(values, ByteArrays):
            return Assembled(len(keep), new_valid, values=values.take(vidx))
        assert values is not None
        return Assembled(len(keep), new_valid, values=values[vidx])


def assemble(desc: ColumnDescriptor, pages: list[PageValues], dictionary: Values | None) -> Assembled:
    """Concatenate the decoded pages of a column chunk."""
    num_rows = sum(p.num_rows for p in pages)
    if any(p.valid is not None for p in pages):
        valid = np.concatenate(
            [p.valid if p.valid is not None else np.ones(p.num_rows, dtype=bool) for p in pages]
        )
    else:
        valid = None
    if pages and dictionary is not None and all(p.is_codes for p in pages):
        if len(pages) == 1:
            codes = pages[0].values
        else:
            codes = buffers.empty(sum(len(p.values) for p in pages), np.int32)
            np.concatenate([np.asarray(p.values) for p in pages], out=codes)
        return Assembled(num_rows, valid, codes=codes, dictionary=dictionary)  # type: ignore[arg-type]
    parts: list[Values] = []
    for p in pages:
        if p.is_codes:
            assert dictionary is not None
            parts.append(resolve_codes(p.values, dictionary))  # type: ignore[arg-type]
        else:
            parts.append(p.values)
    values = _concat_values(parts) if parts else empty_values(desc)
    return Assembled(num_rows, valid, values=values)


def empty_values(desc: ColumnDescriptor) -> Values:
    pt = desc.physical_type
    if pt == PhysicalType.BYTE_ARRAY:
        return ByteArrays(np.zeros(1, np.int64), np.empty(0, np.uint8))
    if pt == PhysicalType.BOOLEAN:
        return np.empty(0, np.uint8)
    if pt == PhysicalType.INT32:
        return np.empty(0, np.int32)
    if pt == PhysicalType.INT64:
        return np.empty(0, np.int64)
    if pt == PhysicalType.FLOAT:
        return np.empty(0, np.float32)
    if pt == PhysicalType.DOUBLE:
        return np.empty(0, np.float64)
    width = 12 if pt == PhysicalType.INT96 else desc.type_length
    return np.empty((0, width), np.uint8)


def _spread_fixed(values: np.ndarray, valid: np.ndarray | None, n: int) -> np.ndarray:
    if valid is None:
        return values
    out = np.zeros((n, *values.shape[1:]), dtype=values.dtype)
    out[valid] = values
    return out


def _spread_offsets(values: ByteArrays, valid: np.ndarray | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    offsets = values.offsets
    data = values.data
    if offsets[0] != 0:
        data = data[offsets[0] : offsets[-1]]
        offsets = offsets - offsets[0]
    if valid is None:
        return offsets, data
    lengths = np.zeros(n, dtype=np.int64)
    lengths[valid] = np.diff(offsets)
    full = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=full[1:])
    return full, data


def _byte_rows(values: Values) -> ByteArrays:
    """Fixed-width byte values (2-D uint8) as ByteArrays."""
    if isinstance(values, ByteArrays):
        return values
    n, width = values.shape
    return ByteArrays(np.arange(n + 1, dtype=np.int64) * width, np.ascontiguousarray(values).reshape(-1))


def is_bytes_type(atype: pa.DataType) -> bool:
    """Whether Arrow stores the type as offsets and bytes (string or binary)."""
    return pa.types.is_string(atype) or pa.types.is_binary(atype)


def to_storage(desc: ColumnDescriptor, values: Values) -> Values:
    """Physical values in the layout of the Arrow type's data buffer.

    Fixed-width types give a numpy array (2-D int64 words for decimals, 2-D uint8 for fixed-size
    binary); string and binary give ByteArrays.
    """
    atype = desc.arrow_type
    pt = desc.physical_type
    simple = simple_dtype(atype, pt)
    if simple is not None:
        return _numeric_storage(values, simple)
    if is_bytes_type(atype):
        return values if isinstance(values, ByteArrays) else _byte_rows(values)
    if pa.types.is_decimal(atype):
        words = 2 if pa.types.is_decimal128(atype) else 4
        if pt in (PhysicalType.INT32, PhysicalType.INT64):
            v = np.ascontiguousarray(values, dtype=np.int64)
            le = buffers.empty((len(v), words), np.int64)
            _decimal_from_int(v, le)
            return le
        if isinstance(values, np.ndarray) and values.ndim == 2 and values.dtype == np.uint8:
            le = buffers.empty((len(values), words), np.int64)
            bad = _be_fixed_to_le_decimal(np.ascontiguousarray(values), le)
            if bad >= 0:
                raise CorruptFileError(f"decimal value {bad} does not fit {atype}")
            return le
        b = _byte_rows(values)
        le_bytes = buffers.empty(len(b) * 8 * words, np.uint8)
        bad = _be_to_le_decimal(b.offsets, b.data, words, le_bytes)
        if bad >= 0:
            raise CorruptFileError(f"decimal value {bad} does not fit {atype}")
        return le_bytes.view(np.int64).reshape(-1, words)
    if pa.types.is_boolean(atype):
        return np.asarray(values, dtype=np.uint8)
    if pa.types.is_fixed_size_binary(atype):
        width = atype.byte_width
        return np.asarray(values, dtype=np.uint8).reshape(-1, width) if width else np.empty((len(values), 0), np.uint8)
    if pa.types.is_float16(atype):
        return np.ascontiguousarray(np.asarray(values, dtype=np.uint8).reshape(-1, 2)).view(np.float16).reshape(-1)
    if pt == PhysicalType.INT96:
        raw = np.ascontiguousarray(np.asarray(values, dtype=np.uint8).reshape(-1, 12))
        per_unit = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[atype.unit]
        out = buffers.empty(len(raw), np.int64)
        overflow = np.empty(len(raw), np.bool_)
        if _int96_to_units(raw, _NANOS_PER_DAY // per_unit, per_unit, out, overflow):
            for i in np.flatnonzero(overflow).tolist():
                nanos = int(raw[i, :8].view(np.int64)[0])
                day = int(raw[i, 8:].view(np.int32)[0])
                value = _int96_beyond_int64(day, nanos, _NANOS_PER_DAY // per_unit, per_unit)
                if value is None:
                    raise UnsupportedFeatureError(
                        f"INT96 timestamp (Julian day {day}, {nanos} ns into it) is outside what {atype} holds"
                    )
                out[i] = value
        return out
    raise AssertionError(f"no storage rule for {atype} from physical type {pt}")  # pragma: no cover


def _numeric_storage(values: Values, np_dtype: np.dtype) -> np.ndarray:
    v = np.asarray(values)
    if v.dtype.itemsize == np_dtype.itemsize and v.dtype.kind in "iu" and np_dtype.kind in "iu":
        return v.view(np_dtype)
    return v.astype(np_dtype, copy=False)


def stored_as_is(desc: ColumnDescriptor, dtype: np.dtype) -> bool:
    """Whether physical values of ``dtype`` are the Arrow type's data buffer as they are (no
    widening, narrowing or conversion on the way to Arrow)."""
    simple = simple_dtype(desc.arrow_type, desc.physical_type)
    if simple is None or simple.itemsize != dtype.itemsize:
        return False
    return simple.kind == dtype.kind or (simple.kind in "iu" and dtype.kind in "iu")


_SIMPLE_BY_TYPE_ID: dict[int, np.dtype | None] = {}


def simple_dtype(atype: pa.DataType, pt: int) -> np.dtype | None:
    """The numpy dtype of an Arrow type stored as plain numbers (integers, floats, dates,
    times, timestamps not from INT96); None for types with their own rule.

    Cached by Arrow type id, which decides it (all units and time zones of a timestamp share
    one layout); hashing the type itself costs up to half a microsecond.
    """
    if pt == PhysicalType.INT96:
        return None
    key = atype.id
    try:
        return _SIMPLE_BY_TYPE_ID[key]
    except KeyError:
        pass
    special = (
        is_bytes_type(atype)
        or pa.types.is_decimal(atype)
        or pa.types.is_boolean(atype)
        or pa.types.is_fixed_size_binary(atype)
        or pa.types.is_float16(atype)
    )
    dt = None
    if not special:
        dt = _NUMPY_STORAGE.get(str(atype))
        if dt is None:
            dt = np.dtype(f"<i{atype.bit_width // 8}")
    _SIMPLE_BY_TYPE_ID[key] = dt
    return dt


def _wrap(atype: pa.DataType, storage: np.ndarray, validity: pa.Buffer | None, null_count: int, n: int) -> pa.Array:
    if pa.types.is_boolean(atype):
        data = pa.py_buffer(np.packbits(storage, bitorder="little"))
    else:
        data = pa.py_buffer(np.ascontiguousarray(storage))
    return pa.Array.from_buffers(atype, n, [validity, data], null_count)


def _wrap_bytes(atype: pa.DataType, offsets: np.ndarray, data: np.ndarray, validity: pa.Buffer | None, null_count: int, n: int) -> pa.Array:
    if offsets[-1] > _INT32_MAX:
        raise UnsupportedFeatureError(
            f"column chunk holds {int(offsets[-1])} bytes of strings, more than an Arrow string array can"
        )
    return pa.Array.from_buffers(
        atype, n, [validity, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)], null_count
    )


def to_arrow(desc: ColumnDescriptor, chunk: Assembled) -> pa.Array:
    """Build the Arrow array of an assembled column chunk."""
    atype = desc.arrow_type
    n = chunk.num_rows
    valid = chunk.valid
    validity, null_count = _validity(valid)
    if valid is not None and null_count == 0:
        valid = None
    if chunk.codes is not None and len(chunk.codes) * 4 < len(chunk.dictionary):  # type: ignore[arg-type]
        # few rows from a big dictionary: look the values up first, convert only those
        chunk = Assembled(n, chunk.valid, values=resolve_codes(chunk.codes, chunk.dictionary))  # type: ignore[arg-type]
    if chunk.codes is not None:
        assert chunk.dictionary is not None
        dict_storage = to_storage(desc, chunk.dictionary)
        if isinstance(dict_storage, ByteArrays):
            values = dict_storage.take(chunk.codes.astype(np.int64))
            offsets, data = _spread_offsets(values, valid, n)
            return _wrap_bytes(atype, offsets, data, validity, null_count, n)
        if dict_storage.dtype == np.float16:  # numba has no float16: move the bits
            dict_storage = dict_storage.view(np.uint16)
        mask = valid.view(np.uint8) if valid is not None else np.empty(0, np.uint8)
        src = np.ascontiguousarray(dict_storage)
        row_bytes = src.itemsize * (src.shape[1] if src.ndim == 2 else 1)
        row_scalar = _ROW_SCALARS.get(row_bytes) if src.ndim == 1 or len(src) else None
        if row_scalar is not None:
            # rows of 1, 2, 4, 8 or 16 bytes (values, decimal128 words, small fixed-size binary)
            # move as one unsigned scalar each: a 1-D gather instead of a loop over words, and
            # one kernel signature per width instead of one per type
            flat = buffers.empty(n, row_scalar)
            bad = _take_spread_1d(src.view(row_scalar).reshape(-1), chunk.codes, mask, flat)
            out = flat.view(src.dtype).reshape(n, *src.shape[1:])
        else:
            out = buffers.empty((n, *src.shape[1:]), src.dtype)
            kernel = _take_spread_1d if src.ndim == 1 else _take_spread_2d
            bad = kernel(src, chunk.codes, mask, out)
        if bad >= 0:
            raise CorruptFileError(f"dictionary index {int(chunk.codes[bad])} out of range")
        return _wrap(atype, out, validity, null_count, n)
    assert chunk.values is not None
    storage = to_storage(desc, chunk.values)
    if isinstance(storage, ByteArrays):
        offsets, data = _spread_offsets(storage, valid, n)
        return _wrap_bytes(atype, offsets, data, validity, null_count, n)
    return _wrap(atype, _spread_fixed(storage, valid, n), validity, null_count, n)


#: a scalar type per row size, for moving rows whole (complex128: 16 bytes, copied bit for bit)
_ROW_SCALARS = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32), 8: np.dtype(np.uint64), 16: np.dtype(np.complex128)}

_NUMPY_STORAGE: dict[str, np.dtype] = {
    "int8": np.dtype("i1"),
    "int16": np.dtype("<i2"),
    "int32": np.dtype("<i4"),
    "int64": np.dtype("<i8"),
    "uint8": np.dtype("u1"),
    "uint16": np.dtype("<u2"),
    "uint32": np.dtype("<u4"),
    "uint64": np.dtype("<u8"),
    "float": np.dtype("<f4"),
    "double": np.dtype("<f8"),
    "date32[day]": np.dtype("<i4"),
    "time32[ms]": np.dtype("<i4"),
    "time32[s]": np.dtype("<i4"),
    "time64[us]": np.dtype("<i8"),
    "time64[ns]": np.dtype("<i8"),
}
