"""A user query's answer (`projections.user_sql.run_query`) in the media types `toolcat sql` and
`POST /v1/sql` answer with: JSON (JSON columns as JSON values, never strings holding JSON), CSV, an Arrow
IPC stream or Parquet (written by pyarrow: no DuckDB file access is needed)."""
from __future__ import annotations

import base64
import csv
import io
import json
import math
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from domain.errors import SqlError

JSON = "application/json"
CSV = "text/csv"
ARROW_STREAM = "application/vnd.apache.arrow.stream"
PARQUET = "application/vnd.apache.parquet"
MEDIA_TYPES = (JSON, CSV, ARROW_STREAM, PARQUET)

# Schema metadata of an answer: the row and byte limits it ran under, whether a limit cut it short, and
# which ("rows" or "bytes").
ROW_LIMIT_KEY = b"toolcat.row_limit"
BYTE_LIMIT_KEY = b"toolcat.byte_limit"
TRUNCATED_KEY = b"toolcat.truncated"
CUT_BY_KEY = b"toolcat.cut_by"


def limit_metadata(row_limit: int, cut_by: str | None, byte_limit: int | None = None) -> dict[bytes, bytes]:
    found = {ROW_LIMIT_KEY: str(row_limit).encode(), TRUNCATED_KEY: b"true" if cut_by else b"false"}
    if byte_limit is not None:
        found[BYTE_LIMIT_KEY] = str(byte_limit).encode()
    if cut_by:
        found[CUT_BY_KEY] = cut_by.encode()
    return found


def truncated(table: pa.Table) -> bool:
    """Whether a limit cut this answer short (more rows matched than it holds)."""
    return (table.schema.metadata or {}).get(TRUNCATED_KEY) == b"true"


def cut_by(table: pa.Table) -> str | None:
    """Which limit cut the answer short: "rows", "bytes", or None."""
    found = (table.schema.metadata or {}).get(CUT_BY_KEY)
    return found.decode() if found else None


def byte_limit(table: pa.Table) -> int | None:
    found = (table.schema.metadata or {}).get(BYTE_LIMIT_KEY)
    return int(found) if found else None


def row_limit(table: pa.Table) -> int | None:
    found = (table.schema.metadata or {}).get(ROW_LIMIT_KEY)
    return int(found) if found else None


def rows(table: pa.Table) -> list[dict[str, Any]]:
    """One JSON-ready object per row (column name → value); JSON columns as the values they hold."""
    columns = [[_plain(value, field.type) for value in table.column(index).to_pylist()]
               for index, field in enumerate(table.schema)]
    return [dict(zip(table.column_names, values)) for values in zip(*columns)]


def _plain(value: Any, kind: pa.DataType) -> Any:
    if value is None:
        return None
    if isinstance(kind, pa.JsonType):
        return json.loads(value)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return [_plain(item, kind.value_type) for item in value]
    if pa.types.is_struct(kind):
        return {field.name: _plain(value.get(field.name), field.type) for field in kind}
    if pa.types.is_map(kind):
        return {str(key): _plain(item, kind.item_type) for key, item in value}
    return _scalar(value)


def _scalar(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "nan", "inf": JSON has no such numbers
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Decimal):  # HUGEINT sums arrive as decimal128(38, 0)
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return str(value)


def csv_text(table: pa.Table) -> str:
    """A header line, then one line per row; nested values and JSON columns as compact JSON text."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(table.column_names)
    writer.writerows([_csv_cell(value) for value in row.values()] for row in rows(table))
    return out.getvalue()


def _csv_cell(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return value


def encode(table: pa.Table, media_type: str) -> bytes:
    """The answer as `media_type`, one of MEDIA_TYPES (another is a programming error: ValueError)."""
    try:
        if media_type == JSON:
            return json.dumps(rows(table), ensure_ascii=False).encode()
        if media_type == CSV:
            return csv_text(table).encode()
        sink = io.BytesIO()
        if media_type == ARROW_STREAM:
            with pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
        elif media_type == PARQUET:
            pq.write_table(table, sink)
        else:
            raise ValueError(f"no encoding for {media_type!r}; one of {', '.join(MEDIA_TYPES)}")
        return sink.getvalue()
    except pa.ArrowException as error:  # e.g. a type Parquet cannot hold
        raise SqlError(f"the answer cannot be written as {media_type}: {error}",
                       media_type=media_type) from error
