"""Decoding one data page of a flat column, for all rows or for a selection of them.

:func:`decode_data_page` splits a decompressed page into levels and values, turns the selected
rows into positions among the page's non-null values, and decodes only those values where the
encoding allows it (PLAIN fixed width: gather; dictionary codes: skip bit-packed groups with no
selected value; PLAIN byte arrays: walk lengths, copy selected values; delta encodings: decode
sequentially, keep selected values; byte stream split: gather). The result is a
:class:`PageValues`: a validity vector for the selected rows and the non-null values, either
plain values or dictionary codes.

Errors are :class:`lazyscan.errors.CorruptFileError` or :class:`UnsupportedFeatureError`
without a location; the column reader adds file, row group, column and page.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lazyscan.errors import CorruptFileError, UnsupportedFeatureError
from lazyscan.parquet import buffers
from lazyscan.parquet import kernels as K
from lazyscan.parquet.match import BytesMatcher, plain_byte_array_match
from lazyscan.parquet.metadata import Encoding, PhysicalType
from lazyscan.parquet.schema import ColumnDescriptor

FIXED_DTYPES = {
    PhysicalType.INT32: np.dtype("<i4"),
    PhysicalType.INT64: np.dtype("<i8"),
    PhysicalType.FLOAT: np.dtype("<f4"),
    PhysicalType.DOUBLE: np.dtype("<f8"),
}


@dataclass
class ByteArrays:
    """Variable-length values in Arrow layout: ``offsets`` (int64, n+1) into ``data`` (uint8)."""

    offsets: np.ndarray
    data: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def take(self, idx: np.ndarray) -> ByteArrays:
        starts = self.offsets[:-1]
        lengths = (self.offsets[1:] - starts).astype(np.int64)
        return gather(self.data, starts, lengths, idx)

    @property
    def nbytes(self) -> int:
        return int(self.offsets[-1] - self.offsets[0])

    @staticmethod
    def concat(parts: list[ByteArrays]) -> ByteArrays:
        """One ByteArrays of all parts; values left in place in their pages are copied once."""
        if len(parts) == 1:
            return parts[0]
        count = sum(len(p) for p in parts)
        offsets = buffers.empty(count + 1, np.int64)
        data = buffers.empty(sum(p.nbytes for p in parts), np.uint8)
        offsets[0] = 0
        k = o = 0
        for p in parts:
            n = len(p)
            if isinstance(p, LocatedByteArrays) and p._materialized is None:
                o = check(K.gather_bytes_at(p.buf, p.starts, p.lengths, offsets, data, k, o), "byte array values")
            else:
                size = p.nbytes
                data[o : o + size] = p.data[p.offsets[0] : p.offsets[-1]]
                offsets[k + 1 : k + 1 + n] = p.offsets[1:] - p.offsets[0] + o
                o += size
            k += n
        return ByteArrays(offsets, data)


class LocatedByteArrays(ByteArrays):
    """Byte arrays left in place in a PLAIN buffer (start and length of each value).

    Dictionaries of payload columns are kept this way: a selective read looks up a few codes
    and copies only those values; the Arrow layout is built only when asked for.
    """

    def __init__(self, buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> None:
        self.buf = buf
        self.starts = starts
        self.lengths = lengths
        self._materialized: ByteArrays | None = None

    def __len__(self) -> int:
        return len(self.starts)

    def take(self, idx: np.ndarray) -> ByteArrays:
        return gather(self.buf, self.starts, self.lengths, idx)

    @property
    def nbytes(self) -> int:
        return int(self.lengths.sum())

    def materialize(self) -> ByteArrays:
        if self._materialized is None:
            self._materialized = gather(self.buf, self.starts, self.lengths, None)
        return self._materialized

    @property  # type: ignore[override]
    def offsets(self) -> np.ndarray:
        return self.materialize().offsets

    @property  # type: ignore[override]
    def data(self) -> np.ndarray:
        return self.materialize().data


#: a page's non-null values: fixed-width numpy array (2-D uint8 for INT96 / FIXED_LEN_BYTE_ARRAY),
#: ByteArrays, or dictionary codes (int32) when ``is_codes`` is set on PageValues
Values = np.ndarray | ByteArrays


@dataclass
class PageValues:
    """Decoded selected rows of one page."""

    num_rows: int  # selected rows
    valid: np.ndarray | None  # bool per selected row; None when no row is null
    values: Values  # non-null values of the selected rows, in row order
    is_codes: bool  # values are dictionary codes (int32)


def check(code: int, what: str) -> int:
    if code < 0:
        msg = K.ERROR_MESSAGES.get(code, f"error {code}")
        raise CorruptFileError(f"{what}: {msg}")
    return code


def bit_width(max_level: int) -> int:
    return int(max_level).bit_length()


def decode_levels_v1(
    buf: np.ndarray, pos: int, end: int, encoding: int, max_level: int, count: int
) -> tuple[np.ndarray, int]:
    """Decode v1 levels (4-byte length prefix, RLE) or the deprecated BIT_PACKED levels."""
    width = bit_width(max_level)
    out = np.empty(count, dtype=np.int32)
    if encoding == Encoding.RLE:
        if end - pos < 4:
            raise CorruptFileError("page ends before its levels")
        length = int.from_bytes(buf[pos : pos + 4].tobytes(), "little")
        pos += 4
        if length > end - pos:
            raise CorruptFileError(f"levels length {length} exceeds the page")
        _check_levels(K.rle_bp_decode(buf, pos, pos + length, width, count, out, max_level + 1), max_level)
        return out, pos + length
    if encoding == Encoding.BIT_PACKED:
        nbytes = (count * width + 7) // 8
        if nbytes > end - pos:
            raise CorruptFileError("bit-packed levels exceed the page")
        bits = np.unpackbits(buf[pos : pos + nbytes], bitorder="big")[: count * width]
        weights = (1 << np.arange(width - 1, -1, -1)).astype(np.int32)
        out[:] = bits.reshape(count, width).astype(np.int32) @ weights
        if count and max_level < (1 << width) - 1 and int(out.max()) > max_level:
            _check_levels(K.ERR_BAD_INDEX, max_level)
        return out, pos + nbytes
    raise UnsupportedFeatureError(f"level encoding {_enc_name(encoding)} is not supported")


def decode_levels_rle(buf: np.ndarray, pos: int, end: int, max_level: int, count: int) -> np.ndarray:
    """Decode the v2 levels ``buf[pos:end]``, which must end exactly at ``end``."""
    width = bit_width(max_level)
    out = np.empty(count, dtype=np.int32)
    _check_levels(K.rle_bp_decode(buf, pos, end, width, count, out, max_level + 1), max_level)
    check_levels_length(K.rle_bp_stream_end(buf, pos, end, width, count), end - pos, end)
    return out


def check_zero_levels(buf: np.ndarray, pos: int, length: int, count: int, kind: str) -> None:
    """The v2 levels ``buf[pos:pos + length]`` of a column whose maximum level is 0: none, or
    runs of ``count`` zeros of bit width 0 taking exactly ``length`` bytes (some writers write a
    run header); other bytes there would start the values late."""
    if length == 0:
        return
    end = pos + length
    if end > len(buf) or K.rle_bp_stream_end(buf, pos, end, 0, count) != end:
        raise CorruptFileError(f"v2 page: {length} bytes of {kind} levels of a column without {kind} levels")


def check_levels_length(stream_end: int, length: int, end: int) -> None:
    """A v2 page's levels must take their declared byte length: bytes left over would shift the
    values (Arrow's reader takes the values from the declared end whatever the levels took)."""
    check(stream_end, "definition levels")
    if stream_end != end:
        raise CorruptFileError(
            f"definition levels take {length - (end - stream_end)} bytes, the v2 page header says {length}"
        )


def _check_levels(code: int, max_level: int) -> None:
    """A level decoder's result: a level above the column's maximum is a corrupt page (pyarrow:
    "Malformed levels"), not a null."""
    if code == K.ERR_BAD_INDEX:
        raise CorruptFileError(f"definition levels: a level above the column's maximum {max_level}")
    check(code, "definition levels")


def _enc_name(encoding: int) -> str:
    try:
        return Encoding(encoding).name
    except ValueError:
        return f"#{encoding}"


def gather(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, idx: np.ndarray | None) -> ByteArrays:
    if idx is None:
        idx = np.arange(len(starts), dtype=np.int64)
    size = int(K.gather_bytes_size(lengths, idx))
    out_offsets = buffers.empty(len(idx) + 1, np.int64)
    out_data = buffers.empty(size, np.uint8)
    check(K.gather_bytes(buf, starts, lengths, idx, out_offsets, out_data), "byte array values")
    return ByteArrays(out_offsets, out_data)


def fixed_width(desc: ColumnDescriptor) -> int:
    pt = desc.physical_type
    if pt == PhysicalType.INT96:
        return 12
    if pt == PhysicalType.FIXED_LEN_BYTE_ARRAY:
        return desc.type_length
    if pt in FIXED_DTYPES:
        return FIXED_DTYPES[pt].itemsize
    raise AssertionError(pt)


def _as_fixed(raw: np.ndarray, desc: ColumnDescriptor) -> np.ndarray:
    """View decoded little-endian bytes (uint8, n*width) as the column's value array."""
    pt = desc.physical_type
    if pt in FIXED_DTYPES:
        return raw.view(FIXED_DTYPES[pt])
    width = fixed_width(desc)
    return raw.reshape(-1, width) if width else raw.reshape(-1, 0)


def decode_plain(
    buf: np.ndarray, pos: int, end: int, desc: ColumnDescriptor, count: int, idx: np.ndarray | None
) -> Values:
    """PLAIN values ``count`` of them at ``buf[pos:end]``; only ``idx`` when given."""
    pt = desc.physical_type
    if pt == PhysicalType.BOOLEAN:
        nbytes = (count + 7) // 8
        if nbytes > end - pos:
            raise CorruptFileError("PLAIN booleans exceed the page")
        bits = np.unpackbits(buf[pos : pos + nbytes], bitorder="little")[:count]
        return bits if idx is None else bits[idx]
    if pt == PhysicalType.BYTE_ARRAY:
        starts = np.empty(count, dtype=np.int64)
        lengths = np.empty(count, dtype=np.int64)
        check(K.plain_byte_array_locate(buf, pos, end, count, starts, lengths), "PLAIN byte arrays")
        # left in place: pages are copied once, when the chunk is assembled
        if idx is None:
            return LocatedByteArrays(buf, starts, lengths)
        return LocatedByteArrays(buf, starts[idx], lengths[idx])
    width = fixed_width(desc)
    if count * width > end - pos:
        raise CorruptFileError(f"PLAIN values need {count * width} bytes, page has {end - pos}")
    if pt in FIXED_DTYPES:
        arr = np.frombuffer(buf, dtype=FIXED_DTYPES[pt], count=count, offset=pos) if count else np.empty(0, FIXED_DTYPES[pt])
        return arr if idx is None else arr[idx]
    raw = buf[pos : pos + count * width].reshape(count, width) if width else np.empty((count, 0), np.uint8)
    return raw if idx is None else raw[idx]


def decode_dictionary_page(buf: np.ndarray, desc: ColumnDescriptor, count: int) -> Values:
    """A dictionary page: ``count`` PLAIN values (byte arrays stay located in the buffer), which
    must fill the page: a page holding more entries than its header counts is corrupt (its
    count, not its bytes, would decide which codes are in range, and dictionary pruning would
    drop row groups whose codes a read refuses)."""
    if desc.physical_type == PhysicalType.BYTE_ARRAY:
        starts = np.empty(count, dtype=np.int64)
        lengths = np.empty(count, dtype=np.int64)
        end = check(K.plain_byte_array_locate(buf, 0, len(buf), count, starts, lengths), "PLAIN byte arrays")
        if end != len(buf):
            raise CorruptFileError(f"dictionary page of {count} entries holds {len(buf) - end} bytes more")
        return LocatedByteArrays(buf, starts, lengths)
    if desc.physical_type != PhysicalType.BOOLEAN and count * fixed_width(desc) != len(buf):
        raise CorruptFileError(f"dictionary page of {count} entries of {fixed_width(desc)} bytes holds {len(buf)} bytes")
    return decode_plain(buf, 0, len(buf), desc, count, None)


def decode_values(
    buf: np.ndarray,
    pos: int,
    end: int,
    encoding: int,
    desc: ColumnDescriptor,
    count: int,
    idx: np.ndarray | None,
    dict_size: int | None,
    matcher: BytesMatcher | None = None,
    dict_mask: np.ndarray | None = None,
) -> tuple[Values, bool]:
    """Decode ``count`` non-null values (or those at ``idx``); returns (values, is_codes).

    With a ``matcher`` (byte-array columns) the values are not materialized: the result is a
    uint8 mask of the values equal to one of the matcher's needles (``dict_mask``: the matches of
    the dictionary's entries).
    """
    pt = desc.physical_type
    if matcher is not None:
        if encoding == Encoding.PLAIN:
            n_out = count if idx is None else len(idx)
            out = np.empty(n_out, dtype=np.uint8)
            sel = np.empty(0, np.int64) if idx is None else idx
            check(plain_byte_array_match(buf, pos, end, count, sel, matcher.needles, matcher.needle_offsets, out), "PLAIN byte arrays")
            return out, False
        if encoding not in (Encoding.RLE_DICTIONARY, Encoding.PLAIN_DICTIONARY):
            values, _ = decode_values(buf, pos, end, encoding, desc, count, idx, dict_size)
            assert isinstance(values, ByteArrays)
            return matcher.match(values.offsets, values.data), False
        codes, _ = decode_values(buf, pos, end, encoding, desc, count, idx, dict_size)
        assert dict_mask is not None
        return dict_mask[codes], False  # type: ignore[index]
    if encoding == Encoding.PLAIN:
        return decode_plain(buf, pos, end, desc, count, idx), False
    if encoding in (Encoding.RLE_DICTIONARY, Encoding.PLAIN_DICTIONARY):
        if dict_size is None:
            raise CorruptFileError("dictionary-encoded page without a dictionary page")
        n_out = count if idx is None else len(idx)
        codes = buffers.empty(n_out, np.int32)
        if count == 0:
            return codes, True
        if end <= pos:
            raise CorruptFileError("dictionary page data is empty")
        width = int(buf[pos])
        if width > 32:
            raise CorruptFileError(f"dictionary index bit width {width} exceeds 32")
        if idx is None:
            got = K.rle_bp_decode_codes(buf, pos + 1, end, width, count, codes, dict_size)
            bad = K.check_dict_indices(codes, n_out, dict_size) if got == K.ERR_BAD_INDEX else -1
            if bad < 0:
                check(got, "dictionary indices")
        else:
            got = K.rle_bp_decode_codes_selected(buf, pos + 1, end, width, count, idx, codes, dict_size)
            if got == K.ERR_BAD_INDEX:
                # a run walked over, or a code stored beside a selected one
                raise CorruptFileError(f"dictionary index out of range for a dictionary of {dict_size} entries")
            check(got, "dictionary indices")
            bad = K.check_dict_indices(codes, n_out, dict_size)
        if bad >= 0:
            raise CorruptFileError(
                f"dictionary index {int(codes[bad])} out of range for a dictionary of {dict_size} entries"
            )
        return codes, True
    if encoding == Encoding.RLE and pt == PhysicalType.BOOLEAN:
        if end - pos < 4:
            raise CorruptFileError("RLE booleans lack their length prefix")
        length = int.from_bytes(buf[pos : pos + 4].tobytes(), "little")
        if length > end - pos - 4:
            raise CorruptFileError("RLE boolean length exceeds the page")
        n_out = count if idx is None else len(idx)
        out = np.empty(n_out, dtype=np.int32)
        if idx is None:
            got = K.rle_bp_decode(buf, pos + 4, pos + 4 + length, 1, count, out, 2)
        else:
            got = K.rle_bp_decode_codes_selected(buf, pos + 4, pos + 4 + length, 1, count, idx, out, 2)
        if got == K.ERR_BAD_INDEX:
            raise CorruptFileError("RLE booleans: a run of a value other than 0 and 1")
        check(got, "RLE booleans")
        return out.astype(np.uint8), False
    if encoding == Encoding.DELTA_BINARY_PACKED and pt in (PhysicalType.INT32, PhysicalType.INT64):
        n_out = count if idx is None else len(idx)
        out64 = np.empty(n_out, dtype=np.int64)
        if count:
            if idx is None:
                check(K.delta_binary_packed_decode(buf, pos, end, count, out64), "DELTA_BINARY_PACKED")
            else:
                check(K.delta_binary_packed_decode_selected(buf, pos, end, count, idx, out64), "DELTA_BINARY_PACKED")
        if pt == PhysicalType.INT32:
            return out64.astype(np.int32), False
        return out64, False
    if encoding == Encoding.DELTA_LENGTH_BYTE_ARRAY and pt == PhysicalType.BYTE_ARRAY:
        lengths = np.empty(count, dtype=np.int64)
        data_pos = pos
        if count:
            data_pos = check(K.delta_binary_packed_decode(buf, pos, end, count, lengths), "DELTA_LENGTH_BYTE_ARRAY lengths")
        if count and (lengths.min() < 0 or int(lengths.sum()) > end - data_pos):
            raise CorruptFileError("DELTA_LENGTH_BYTE_ARRAY lengths exceed the page")
        starts = np.empty(count, dtype=np.int64)
        if count:
            starts[0] = data_pos
            np.cumsum(lengths[:-1], out=starts[1:])
            starts[1:] += data_pos
        return gather(buf, starts, lengths, idx), False
    if encoding == Encoding.DELTA_BYTE_ARRAY and pt in (PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY):
        values = _delta_byte_array(buf, pos, end, count)
        if pt == PhysicalType.FIXED_LEN_BYTE_ARRAY:
            width = desc.type_length
            if count and not np.all(np.diff(values.offsets) == width):
                raise CorruptFileError("DELTA_BYTE_ARRAY value length differs from the fixed length")
            raw = values.data[values.offsets[0] : values.offsets[-1]].reshape(count, width) if width else np.empty((count, 0), np.uint8)
            return (raw if idx is None else raw[idx]), False
        return (values if idx is None else values.take(idx)), False
    if encoding == Encoding.BYTE_STREAM_SPLIT and pt != PhysicalType.BOOLEAN and pt != PhysicalType.BYTE_ARRAY:
        width = fixed_width(desc)
        n_out = count if idx is None else len(idx)
        raw = buffers.empty(n_out * width, np.uint8)
        if idx is None:
            check(K.byte_stream_split_decode(buf, pos, end, count, width, raw), "BYTE_STREAM_SPLIT")
        else:
            check(K.byte_stream_split_decode_selected(buf, pos, end, count, width, idx, raw), "BYTE_STREAM_SPLIT")
        return _as_fixed(raw, desc), False
    raise UnsupportedFeatureError(
        f"encoding {_enc_name(encoding)} is not supported for {PhysicalType(pt).name} columns"
    )


def _delta_byte_array(buf: np.ndarray, pos: int, end: int, count: int) -> ByteArrays:
    if count == 0:
        return ByteArrays(np.zeros(1, np.int64), np.empty(0, np.uint8))
    prefix = np.empty(count, dtype=np.int64)
    suffix = np.empty(count, dtype=np.int64)
    p = check(K.delta_binary_packed_decode(buf, pos, end, count, prefix), "DELTA_BYTE_ARRAY prefix lengths")
    p = check(K.delta_binary_packed_decode(buf, p, end, count, suffix), "DELTA_BYTE_ARRAY suffix lengths")
    size = check(K.delta_byte_array_size(prefix, suffix), "DELTA_BYTE_ARRAY lengths")
    offsets = np.empty(count + 1, dtype=np.int64)
    data = np.empty(size, dtype=np.uint8)
    check(K.delta_byte_array_build(prefix, suffix, buf, p, end, offsets, data), "DELTA_BYTE_ARRAY values")
    return ByteArrays(offsets, data)


def decode_data_page(
    buf: np.ndarray,
    values_pos: int,
    values_end: int,
    encoding: int,
    desc: ColumnDescriptor,
    num_rows: int,
    defs: np.ndarray | None,
    sel: np.ndarray | None,
    dict_size: int | None,
    matcher: BytesMatcher | None = None,
    dict_mask: np.ndarray | None = None,
) -> PageValues:
    """Decode the selected rows (``sel``: sorted row indices within the page, None = all)."""
    if defs is None:
        count = num_rows
        idx = sel
        valid = None
    else:
        is_valid = defs == desc.max_definition_level
        count = int(np.count_nonzero(is_valid))
        if sel is None:
            idx = None
            valid = is_valid if count < num_rows else None
        else:
            valid = is_valid[sel]
            if count == num_rows:
                idx = sel
                valid = None
            else:
                position = np.cumsum(is_valid, dtype=np.int64) - 1
                idx = position[sel][valid]
    values, is_codes = decode_values(buf, values_pos, values_end, encoding, desc, count, idx, dict_size, matcher, dict_mask)
    n_sel = num_rows if sel is None else len(sel)
    return PageValues(n_sel, valid, values, is_codes)
