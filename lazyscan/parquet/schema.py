"""The Parquet schema tree, its leaf columns and their Arrow types.

:func:`build_schema` turns the flattened ``SchemaElement`` list of the footer into
:class:`ColumnDescriptor` objects (one per leaf: path, levels, physical and logical type, the Arrow
type lazyscan produces) and the Arrow schema of the top-level fields. Top-level primitive fields
are *flat* and read by lazyscan's own decoders; nested fields (structs, lists, maps) are read
through pyarrow.

Arrow types follow pyarrow's mapping of Parquet logical types, with plain ``string``/``binary``
(never view or large types). Timestamps keep the time zone recorded in pyarrow's stored Arrow
schema when there is one.
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass, field

import pyarrow as pa

from lazyscan.parquet.metadata import (
    ConvertedType,
    LogicalType,
    PhysicalType,
    Repetition,
    SchemaElement,
)

_UNITS = {"MILLIS": "ms", "MICROS": "us", "NANOS": "ns"}


@dataclass(frozen=True, slots=True)
class ColumnDescriptor:
    """One leaf column of the file schema."""

    index: int  # leaf ordinal: position of the column chunk in each row group
    path: tuple[str, ...]
    physical_type: PhysicalType
    type_length: int  # FIXED_LEN_BYTE_ARRAY width, else 0
    max_definition_level: int
    max_repetition_level: int
    logical_type: LogicalType | None
    converted_type: ConvertedType | None
    scale: int
    precision: int
    arrow_type: pa.DataType
    top_level_field: int  # index of the top-level field that holds this leaf
    flat: bool  # a top-level primitive field: read by lazyscan's decoders
    name: str = field(init=False, compare=False)  # the dotted path

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", ".".join(self.path))

    @property
    def nullable(self) -> bool:
        return self.max_definition_level > 0


@dataclass(frozen=True, slots=True)
class FileSchema:
    columns: tuple[ColumnDescriptor, ...]
    arrow_schema: pa.Schema
    #: for each top-level field, the leaf indexes under it
    field_leaves: tuple[tuple[int, ...], ...]
    #: for each top-level field, its ``SchemaElement.field_id`` (None: the writer gave none)
    top_field_ids: tuple[int | None, ...] = ()

    #: leaf columns by dotted name (the first one when names repeat)
    by_name: dict[str, ColumnDescriptor] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name: dict[str, ColumnDescriptor] = {}
        for c in self.columns:
            by_name.setdefault(c.name, c)
        object.__setattr__(self, "by_name", by_name)

    def leaf(self, name: str) -> ColumnDescriptor:
        return self.by_name[name]


def _int_type(bits: int, signed: bool) -> pa.DataType:
    table = {
        (8, True): pa.int8(),
        (16, True): pa.int16(),
        (32, True): pa.int32(),
        (64, True): pa.int64(),
        (8, False): pa.uint8(),
        (16, False): pa.uint16(),
        (32, False): pa.uint32(),
        (64, False): pa.uint64(),
    }
    return table.get((bits, signed), pa.int64() if bits > 32 else pa.int32())


_CONVERTED_INTS = {
    ConvertedType.INT_8: (8, True),
    ConvertedType.INT_16: (16, True),
    ConvertedType.INT_32: (32, True),
    ConvertedType.INT_64: (64, True),
    ConvertedType.UINT_8: (8, False),
    ConvertedType.UINT_16: (16, False),
    ConvertedType.UINT_32: (32, False),
    ConvertedType.UINT_64: (64, False),
}


def _decimal_type(precision: int, scale: int) -> pa.DataType:
    if precision <= 38:
        return pa.decimal128(precision, scale)
    return pa.decimal256(precision, scale)


#: the physical types each converted type annotates (LogicalTypes.md); MAP, LIST and
#: MAP_KEY_VALUE annotate groups only
_CONVERTED_PHYSICAL: dict[ConvertedType, tuple[PhysicalType, ...]] = {
    **{ct: (PhysicalType.INT32,) for ct in (
        ConvertedType.INT_8, ConvertedType.INT_16, ConvertedType.INT_32, ConvertedType.UINT_8, ConvertedType.UINT_16,
        ConvertedType.UINT_32, ConvertedType.DATE, ConvertedType.TIME_MILLIS)},
    **{ct: (PhysicalType.INT64,) for ct in (
        ConvertedType.INT_64, ConvertedType.UINT_64, ConvertedType.TIME_MICROS, ConvertedType.TIMESTAMP_MILLIS,
        ConvertedType.TIMESTAMP_MICROS)},
    **{ct: (PhysicalType.BYTE_ARRAY,) for ct in (ConvertedType.UTF8, ConvertedType.ENUM, ConvertedType.JSON, ConvertedType.BSON)},
    ConvertedType.DECIMAL: (PhysicalType.INT32, PhysicalType.INT64, PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY),
    ConvertedType.INTERVAL: (PhysicalType.FIXED_LEN_BYTE_ARRAY,),
    ConvertedType.MAP: (),
    ConvertedType.LIST: (),
    ConvertedType.MAP_KEY_VALUE: (),
}


def _max_decimal_digits(pt: PhysicalType, type_length: int) -> int | None:
    """The most decimal digits a DECIMAL of this physical type holds (None: no limit)."""
    if pt == PhysicalType.INT32:
        return 9
    if pt == PhysicalType.INT64:
        return 18
    if pt == PhysicalType.FIXED_LEN_BYTE_ARRAY:
        # n bytes of two's complement hold floor(log10(2**(8n - 1) - 1)) digits, which is
        # floor((8n - 1) * log10(2)) as no power of two is a power of ten; exact while the
        # number is small, as a float beyond (a damaged length of 2**31 bytes would make a
        # number of billions of digits)
        if type_length <= 0:
            return 0
        bits = 8 * type_length - 1
        return len(str(2**bits - 1)) - 1 if bits < 4096 else int(bits * math.log10(2))
    return None


def _check_decimal(pt: PhysicalType, type_length: int, precision: int, scale: int) -> None:
    if precision < 1:
        raise ValueError(f"DECIMAL precision {precision} is not positive")
    if not 0 <= scale <= precision:
        raise ValueError(f"DECIMAL scale {scale} is not within 0 and the precision {precision}")
    most = _max_decimal_digits(pt, type_length)
    if most is not None and precision > most:
        raise ValueError(f"DECIMAL precision {precision} exceeds the {most} digits {_physical_name(pt, type_length)} holds")


def _physical_name(pt: PhysicalType, type_length: int) -> str:
    return f"FIXED_LEN_BYTE_ARRAY({type_length})" if pt == PhysicalType.FIXED_LEN_BYTE_ARRAY else pt.name


def check_annotation(el: SchemaElement) -> None:
    """Raise ValueError when a primitive element's type annotation is invalid.

    Follows what Arrow (``parquet/schema.cc``, ``types.cc``) and parquet-java refuse: a logical
    type lacking a required field, a DECIMAL whose precision is not positive, exceeds what its
    physical type holds (parquet-java and Spark refuse that; LogicalTypes.md calls it an error)
    or is below its scale, a negative scale, a time unit other than MILLIS, MICROS or NANOS, an
    integer width other than 8, 16, 32 or 64, a converted type on a physical type it does not
    annotate, a FIXED_LEN_BYTE_ARRAY without a positive length. A date, time, timestamp or
    integer logical type on an integer type it does not fit (TIMESTAMP on INT32, ...) is refused
    as parquet-java and Spark refuse it (pyarrow reads the integers instead). Annotations
    lazyscan does not convert by (STRING on INT32, UUID on a 9-byte array, ...) are ignored, as
    pyarrow ignores them.
    """
    pt = el.type
    assert pt is not None
    length = el.type_length or 0
    if pt == PhysicalType.FIXED_LEN_BYTE_ARRAY and length <= 0:
        raise ValueError(f"FIXED_LEN_BYTE_ARRAY length {el.type_length} is not positive")
    lt = el.logical_type
    if lt is not None:
        if lt.missing:
            raise ValueError(f"{lt.kind} logical type without its {', '.join(lt.missing)}")
        kind = lt.kind
        if kind == "DECIMAL":
            if pt in (PhysicalType.INT32, PhysicalType.INT64, PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY):
                _check_decimal(pt, length, lt.precision, lt.scale)
        elif kind in ("TIME", "TIMESTAMP"):
            if lt.unit not in _UNITS:
                raise ValueError(f"{kind} logical type without a time unit MILLIS, MICROS or NANOS")
            if pt == PhysicalType.INT32 and (kind == "TIMESTAMP" or lt.unit != "MILLIS"):
                raise ValueError(f"{kind}({lt.unit}) cannot annotate INT32")
            if pt == PhysicalType.INT64 and kind == "TIME" and lt.unit == "MILLIS":
                raise ValueError("TIME(MILLIS) cannot annotate INT64")
        elif kind == "INTEGER":
            if lt.bit_width not in (8, 16, 32, 64):
                raise ValueError(f"INTEGER logical type of {lt.bit_width} bits (8, 16, 32 or 64)")
            if (pt == PhysicalType.INT32 and lt.bit_width > 32) or (pt == PhysicalType.INT64 and lt.bit_width != 64):
                raise ValueError(f"INTEGER({lt.bit_width}) cannot annotate {pt.name}")
        elif kind == "DATE" and pt == PhysicalType.INT64:
            raise ValueError("DATE cannot annotate INT64")
        return
    ct = el.converted_type
    if ct is None:
        return
    allowed = _CONVERTED_PHYSICAL.get(ct)
    if allowed is not None and pt not in allowed:
        target = "a group" if not allowed else " or ".join(p.name for p in allowed)
        raise ValueError(f"converted type {ct.name} annotates {target}, not {_physical_name(pt, length)}")
    if ct == ConvertedType.INTERVAL and length != 12:
        raise ValueError(f"converted type INTERVAL annotates FIXED_LEN_BYTE_ARRAY(12), not {_physical_name(pt, length)}")
    if ct == ConvertedType.DECIMAL:
        # a missing scale is 0 (LogicalTypes.md); a missing precision is an error
        _check_decimal(pt, length, el.precision if el.precision is not None else 0, el.scale or 0)


def arrow_type_of(el: SchemaElement, tz_hint: str | None = None) -> pa.DataType:
    """The Arrow type of a primitive schema element (whose annotation :func:`check_annotation`
    accepts)."""
    pt = el.type
    lt = el.logical_type
    ct = el.converted_type
    kind = lt.kind if lt is not None else None
    if kind == "DECIMAL" or (lt is None and ct == ConvertedType.DECIMAL):
        precision = lt.precision if lt is not None else (el.precision or 0)
        scale = lt.scale if lt is not None else (el.scale or 0)
        if pt in (PhysicalType.INT32, PhysicalType.INT64, PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY):
            return _decimal_type(precision, scale)
    if pt == PhysicalType.BOOLEAN:
        return pa.bool_()
    if pt in (PhysicalType.INT32, PhysicalType.INT64):
        default_bits = 32 if pt == PhysicalType.INT32 else 64
        if kind == "INTEGER" and lt is not None:
            return _int_type(lt.bit_width, lt.signed)
        if kind == "DATE" or (lt is None and ct == ConvertedType.DATE):
            return pa.date32()
        if kind == "TIME" and lt is not None:
            unit = _UNITS[lt.unit]
            return pa.time32(unit) if unit == "ms" else pa.time64(unit)
        if kind == "TIMESTAMP" and lt is not None:
            tz = (tz_hint or "UTC") if lt.utc_adjusted else None
            return pa.timestamp(_UNITS[lt.unit], tz=tz)
        if lt is None and ct is not None:
            if ct in _CONVERTED_INTS:
                return _int_type(*_CONVERTED_INTS[ct])
            if ct == ConvertedType.TIME_MILLIS:
                return pa.time32("ms")
            if ct == ConvertedType.TIME_MICROS:
                return pa.time64("us")
            if ct == ConvertedType.TIMESTAMP_MILLIS:
                return pa.timestamp("ms", tz=tz_hint or "UTC")
            if ct == ConvertedType.TIMESTAMP_MICROS:
                return pa.timestamp("us", tz=tz_hint or "UTC")
        return _int_type(default_bits, True)
    if pt == PhysicalType.INT96:
        # microseconds, as Spark reads INT96: nanoseconds would overflow outside 1677..2262
        return pa.timestamp("us", tz=tz_hint)
    if pt == PhysicalType.FLOAT:
        return pa.float32()
    if pt == PhysicalType.DOUBLE:
        return pa.float64()
    if pt == PhysicalType.BYTE_ARRAY:
        if kind in ("STRING", "JSON") or (lt is None and ct in (ConvertedType.UTF8, ConvertedType.JSON)):
            return pa.string()
        if kind == "ENUM" or (lt is None and ct == ConvertedType.ENUM):
            return pa.string()
        return pa.binary()
    if pt == PhysicalType.FIXED_LEN_BYTE_ARRAY:
        width = el.type_length or 0
        if kind == "FLOAT16" and width == 2:
            return pa.float16()
        return pa.binary(width)
    raise ValueError(f"schema element {el.name!r} has no physical type")


def _stored_arrow_schema(kv: dict[str, str | None]) -> pa.Schema | None:
    raw = kv.get("ARROW:schema")
    if not raw:
        return None
    try:
        data = base64.b64decode(raw)
        return pa.ipc.read_schema(pa.py_buffer(data))
    except Exception:
        return None


def _timezone_hints(stored: pa.Schema | None) -> dict[str, str]:
    hints: dict[str, str] = {}
    if stored is None:
        return hints
    for f in stored:
        t = f.type
        if pa.types.is_timestamp(t) and t.tz:
            hints[f.name] = t.tz
    return hints


class SchemaError(ValueError):
    """The schema elements do not form a valid tree, or a column's type is invalid
    (``column``: its dotted name)."""

    def __init__(self, message: str, column: str | None = None) -> None:
        super().__init__(message)
        self.column = column


def build_schema(elements: tuple[SchemaElement, ...], kv: dict[str, str | None]) -> FileSchema:
    """Build leaf descriptors and the Arrow schema from the footer's schema list."""
    if not elements:
        raise SchemaError("empty schema")
    root = elements[0]
    stored = _stored_arrow_schema(kv)
    tz_hints = _timezone_hints(stored)
    columns: list[ColumnDescriptor] = []
    field_leaves: list[tuple[int, ...]] = []
    nested_top_fields: dict[int, int] = {}
    top_fields: list[pa.Field | None] = []
    pos = 1

    def walk(path: tuple[str, ...], def_level: int, rep_level: int, top: int) -> None:
        nonlocal pos
        if pos >= len(elements):
            raise SchemaError("schema declares more children than it has elements")
        el = elements[pos]
        pos += 1
        rep = el.repetition if el.repetition is not None else Repetition.REQUIRED
        d = def_level + (1 if rep != Repetition.REQUIRED else 0)
        r = rep_level + (1 if rep == Repetition.REPEATED else 0)
        p = (*path, el.name)
        if el.num_children > 0 or el.type is None:
            if el.num_children > len(elements):
                raise SchemaError("schema group has more children than elements")
            for _ in range(el.num_children):
                walk(p, d, r, top)
            return
        is_flat = len(p) == 1 and rep != Repetition.REPEATED
        if el.repetition is None:
            # only the root may lack one (parquet.thrift); Arrow and parquet-java refuse it
            raise SchemaError("column without a repetition type", ".".join(p))
        try:
            check_annotation(el)
            atype = arrow_type_of(el, tz_hints.get(p[0]) if is_flat else None)
        except ValueError as e:
            raise SchemaError(str(e), ".".join(p)) from None
        lt = el.logical_type
        columns.append(
            ColumnDescriptor(
                index=len(columns),
                path=p,
                physical_type=el.type,
                type_length=el.type_length or 0,
                max_definition_level=d,
                max_repetition_level=r,
                logical_type=lt,
                converted_type=el.converted_type,
                scale=(lt.scale if lt is not None and lt.kind == "DECIMAL" else el.scale or 0),
                precision=(lt.precision if lt is not None and lt.kind == "DECIMAL" else el.precision or 0),
                arrow_type=atype,
                top_level_field=top,
                flat=is_flat,
            )
        )

    top_nullable: dict[int, bool] = {}
    top_field_ids: list[int | None] = []
    for top in range(root.num_children):
        if pos >= len(elements):
            raise SchemaError("schema declares more fields than it has elements")
        first_leaf = len(columns)
        start = pos
        el = elements[pos]
        top_field_ids.append(el.field_id)
        walk((), 0, 0, top)
        leaves = tuple(range(first_leaf, len(columns)))
        field_leaves.append(leaves)
        if len(leaves) == 1 and columns[leaves[0]].flat:
            c = columns[leaves[0]]
            top_fields.append(pa.field(el.name, c.arrow_type, nullable=c.nullable))
        elif not leaves:
            # a group without leaves (``nested: struct<inner: struct<>>``): nothing is stored
            # for it, so every value is NULL; its type is the shape of the tree, as pyarrow's
            top_fields.append(_leafless_field(elements, start))
        else:
            nested_top_fields[top] = len(top_fields)
            top_nullable[top] = el.repetition == Repetition.OPTIONAL
            top_fields.append(None)
    if pos != len(elements):
        raise SchemaError("schema has elements outside the tree")
    if nested_top_fields:
        nested_types = _nested_arrow_types(elements, kv, stored)
        for top, slot in nested_top_fields.items():
            name = elements_top_name(elements, top)
            atype = nested_types.get(name)
            if any(columns[leaf].physical_type == PhysicalType.INT96 for leaf in field_leaves[top]):
                # the stored schema says nanoseconds; INT96 reads as microseconds (as flat INT96
                # does), so the file layer asks pyarrow for the type in that unit
                atype = None
            # pyarrow's nullability: a REQUIRED group or a legacy REPEATED field is not null;
            # a type still unknown (null) is nullable until the file layer asks pyarrow
            nullable = atype is None or top_nullable[top]
            top_fields[slot] = pa.field(name, pa.null() if atype is None else atype, nullable=nullable)
    fields = [f for f in top_fields if f is not None]
    return FileSchema(tuple(columns), pa.schema(fields), tuple(field_leaves), tuple(top_field_ids))


def _leafless_field(elements: tuple[SchemaElement, ...], pos: int) -> pa.Field:
    """The Arrow field of a group whose subtree holds no leaf: a struct of such structs."""
    children: list[pa.Field] = []
    el = elements[pos]
    child = pos + 1
    for _ in range(el.num_children):
        children.append(_leafless_field(elements, child))
        child = _skip_subtree(elements, child)
    nullable = el.repetition != Repetition.REQUIRED
    return pa.field(el.name, pa.struct(children), nullable=nullable)


def elements_top_name(elements: tuple[SchemaElement, ...], top: int) -> str:
    """Name of the ``top``-th top-level field."""
    pos = 1
    for i in range(top + 1):
        if i == top:
            return elements[pos].name
        pos = _skip_subtree(elements, pos)
    raise SchemaError("bad top-level field index")


def _skip_subtree(elements: tuple[SchemaElement, ...], pos: int) -> int:
    remaining = 1
    while remaining:
        if pos >= len(elements):
            raise SchemaError("truncated schema")
        remaining += elements[pos].num_children - 1
        pos += 1
    return pos


def _nested_arrow_types(
    elements: tuple[SchemaElement, ...], kv: dict[str, str | None], stored: pa.Schema | None
) -> dict[str, pa.DataType]:
    """Arrow types of nested top-level fields from pyarrow's stored schema, when present.

    Fields missing here get ``pa.null()``; the file layer then asks pyarrow for the type.
    """
    if stored is not None:
        return {f.name: f.type for f in stored}
    return {}
