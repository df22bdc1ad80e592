"""User SQL on the read model (`toolcat sql`, `POST /v1/sql`): read-only in fact, not only by promise.

Two fences. The connection: every connection that runs user SQL is opened with `sandbox_config()`, so
DuckDB itself refuses file access (COPY, ATTACH, EXPORT, `read_*`, `glob`, replacement scans of 'x.csv'
and of Python variables), extension installing and loading, and any later SET. The statement: before it
runs, `check_query` parses it with DuckDB's own parser (never a regex) and lets through only one query
statement, naming only allowed table functions; what the connection would refuse anyway is refused here
first, with the reason.

What we found on DuckDB 2.0.0 (tests/integration/test_user_sql.py keeps it true): a read-write database
opened with the sandbox config at connect time still runs the migrations, the projector (including
`con.register` of Arrow tables), CHECKPOINT, and spills to its `temp_directory` under a `memory_limit`;
cursors of it inherit the sandbox. It can no longer ATTACH a file, COPY TO/FROM a file or EXPORT
DATABASE (ATTACH ':memory:' still works), and nothing can SET or RESET any option, `memory_limit`
included: give every option at connect time. DuckDB refuses, within one process, a second connection
to the same file with another config while one is open: a process that runs user SQL on its database
must open it sandboxed throughout. A snapshot is then CHECKPOINT plus a file copy from Python, and a
Parquet export is Arrow fetched here and written by pyarrow (`encode`), neither needing DuckDB file access.
"""
from __future__ import annotations

import atexit
import json
import threading
from typing import Any

import duckdb
import pyarrow as pa

from domain.errors import SqlError, SqlRefused, SqlTimeout
from projections.connection import connect
from projections.sql_encode import limit_metadata

# Every connection that runs user SQL; see sandbox_config.
SANDBOX_CONFIG: dict[str, Any] = {
    "enable_external_access": False,  # no file, network or Python-variable access from SQL
    "autoload_known_extensions": False,  # an unknown function must not fetch or load an extension
    "autoinstall_known_extensions": False,
    "lock_configuration": True,  # nothing in SQL may undo the three above (SET, RESET, PRAGMA)
}

# Table functions a query may name: catalog introspection and generators, none of which touches a file
# or runs SQL text of its own (`query`, `json_execute_serialized_sql`) or changes state (`checkpoint`).
ALLOWED_TABLE_FUNCTIONS = frozenset({
    "range", "generate_series", "unnest", "repeat", "repeat_row", "json_each", "json_tree",
    "duckdb_columns", "duckdb_constraints", "duckdb_databases", "duckdb_dependencies", "duckdb_functions",
    "duckdb_indexes", "duckdb_keywords", "duckdb_schemas", "duckdb_sequences", "duckdb_tables",
    "duckdb_types", "duckdb_views", "duckdb_settings", "duckdb_memory",
    "pragma_table_info", "pragma_show", "pragma_database_size", "pragma_storage_info", "pragma_version",
    "pragma_platform", "pragma_collations", "pg_timezone_names", "icu_calendar_names",
    # The read model's own table macros (migrations 093, 183, 188): one subject's or one tool's effective
    # history, from its tables only.
    "effective_history_of", "effective_history_of_subject", "effective_history_of_tool", "effective_history_for",
    "effective_history_for_subject",
})
# PRAGMAs that only read (`PRAGMA table_info('tools')`); any other PRAGMA may change a setting.
READ_PRAGMAS = frozenset({"table_info", "show", "show_tables", "show_tables_expanded", "database_size",
                          "storage_info", "version", "platform", "collations", "database_list"})
QUERY_KINDS = "SELECT, WITH, EXPLAIN, DESCRIBE, SHOW, SUMMARIZE or a read-only PRAGMA"
WHY_NOT = {
    "COPY": "COPY reads or writes files; use 'toolcat export' to write files",
    "EXPORT": "EXPORT DATABASE writes files; use 'toolcat export'",
    "ATTACH": "ATTACH opens another database",
    "DETACH": "DETACH changes the attached databases",
    "LOAD": "extensions cannot be installed or loaded",
    "SET": "settings (SET, RESET, USE) cannot be changed",
    "CALL": "CALL runs procedures; for a table function write SELECT * FROM f(...)",
    "MULTI": "a PIVOT without an IN list runs several statements; name its values: PIVOT t ON c IN (...)",
}


def sandbox_config(**options: Any) -> dict[str, Any]:
    """The connect-time config of a user-SQL connection: the sandbox, then `options` (e.g. memory_limit,
    temp_directory, threads), which must be given here since the locked config refuses any later SET.
    The order matters: DuckDB 2.0 refuses a temp_directory that comes before enable_external_access."""
    overridden = sorted(SANDBOX_CONFIG.keys() & options.keys())
    if overridden:
        raise ValueError(f"the sandbox's own settings cannot be overridden: {', '.join(overridden)}")
    return {**SANDBOX_CONFIG, **options}


_parser: duckdb.DuckDBPyConnection | None = None
_parser_lock = threading.Lock()


def _parse(call: Any) -> Any:
    """Runs `call(con)` on a private in-memory, sandboxed connection used only for parsing."""
    global _parser
    with _parser_lock:
        if _parser is None:
            _parser = connect(config=sandbox_config(threads=1))
            # Closed before the interpreter tears DuckDB's bindings down (which reports live objects).
            atexit.register(_parser.close)
        return call(_parser)


def check_query(query: str) -> None:
    """Accept exactly one query statement, else raise `SqlRefused` saying why (`SqlError` if it does not
    parse)."""
    try:
        statements = _parse(lambda con: con.extract_statements(query))
    except duckdb.Error as error:
        raise SqlError(f"the query does not parse: {error}") from error
    if not statements:
        raise SqlError("the query is empty")
    if len(statements) > 1:
        raise SqlRefused(f"toolcat sql runs one statement at a time; this query holds {len(statements)}",
                         statements=len(statements))
    _check_statement(statements[0].type.name, statements[0].query)


def _check_statement(kind: str, text: str) -> None:
    if kind == "SELECT":
        _check_select(text)
    elif kind == "EXPLAIN":
        check_query(_explained(text))
    elif kind == "PRAGMA":
        _check_pragma(text)
    else:
        reason = WHY_NOT.get(kind, f"{kind} statements change the database")
        raise SqlRefused(f"{reason}; toolcat sql runs queries only ({QUERY_KINDS})", statement=kind)


def _tokens(text: str) -> list[tuple[int, str]]:
    """The statement's tokens, (offset, text), by DuckDB's tokenizer (comments skipped)."""
    found = duckdb.tokenize(text)
    ends = [offset for offset, _ in found[1:]] + [len(text)]
    return [(start, text[start:end].strip()) for (start, kind), end in zip(found, ends)
            if kind != duckdb.token_type.comment]


def _explained(text: str) -> str:
    """The statement EXPLAIN [ANALYZE] [(options)] explains (ANALYZE runs it, so it is checked as well)."""
    tokens = [token.upper() for _, token in _tokens(text)]
    index = 1 + (len(tokens) > 1 and tokens[1] in ("ANALYZE", "ANALYSE"))
    if index < len(tokens) and tokens[index] == "(":
        depth = 0
        for index in range(index, len(tokens)):
            depth += {"(": 1, ")": -1}.get(tokens[index], 0)
            if depth == 0:
                break
        index += 1
    if index >= len(tokens):
        raise SqlRefused("EXPLAIN names no statement")
    return text[_tokens(text)[index][0]:]


def _check_pragma(text: str) -> None:
    tokens = [token for _, token in _tokens(text)]
    name = tokens[1].lower() if len(tokens) > 1 else ""
    if name not in READ_PRAGMAS or (len(tokens) > 2 and tokens[2] == "="):
        raise SqlRefused(f"PRAGMA {name} may change settings; toolcat sql allows only the read-only "
                         f"PRAGMAs {', '.join(sorted(READ_PRAGMAS))}", statement="PRAGMA", pragma=name)


def _check_select(text: str) -> None:
    """A SELECT-like statement (WITH, DESCRIBE, SHOW, SUMMARIZE too), walked in DuckDB's own syntax tree
    (`json_serialize_sql`, which serialises SELECT statements only)."""
    tree = json.loads(_parse(lambda con: con.execute("SELECT json_serialize_sql(?)", [text]).fetchone()[0]))
    if tree.get("error"):
        raise SqlRefused(f"only a query can run here: {tree.get('error_message')}")
    if len(tree["statements"]) != 1:
        raise SqlRefused("toolcat sql runs one statement at a time")
    _check_tree(tree["statements"])


def _check_tree(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _check_tree(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "TABLE_FUNCTION":
        name = str(node["function"].get("function_name", "")).lower()
        if name not in ALLOWED_TABLE_FUNCTIONS:
            raise SqlRefused(f"the table function {name}() is not allowed: toolcat sql reads the read model "
                             "only, never files or other databases", function=name)
    if node.get("type") == "BASE_TABLE" and any(c in node.get("table_name", "") for c in "./\\:"):
        raise SqlRefused(f"'{node['table_name']}' names a file; toolcat sql reads the read model's tables "
                         "only", table=node["table_name"])
    for value in node.values():
        _check_tree(value)


def run_query(con: duckdb.DuckDBPyConnection, query: str, timeout_seconds: float, row_limit: int,
              max_bytes: int | None = None) -> pa.Table:
    """Check and run one user query on a cursor of `con` (opened with `sandbox_config`). The answer holds
    at most `row_limit` rows and about `max_bytes` bytes (its Arrow size); its schema metadata says whether
    a limit cut it, and which (`truncated`, `cut_by`). Raises `SqlRefused`, `SqlError`, or `SqlTimeout`
    when it runs longer than `timeout_seconds`."""
    check_query(query)
    cursor = con.cursor()
    timed_out = threading.Event()

    def interrupt() -> None:
        timed_out.set()
        cursor.interrupt()

    timer = threading.Timer(timeout_seconds, interrupt)
    timer.daemon = True
    timer.start()
    try:
        return _fetch(cursor, query, row_limit, max_bytes)
    except duckdb.InterruptException as error:
        if timed_out.is_set():
            raise SqlTimeout(f"the query ran longer than {timeout_seconds:g} s and was stopped",
                             timeout_seconds=timeout_seconds) from error
        raise SqlError(f"the query was interrupted: {error}") from error
    except duckdb.PermissionException as error:  # the connection's own fence
        raise SqlRefused(f"the query needs access the read model does not give: {error}") from error
    except duckdb.OutOfMemoryException as error:  # past memory_limit, or past a worker's address space
        raise SqlRefused("the query needed more memory than a query may take and was stopped: "
                         f"{str(error).splitlines()[0]}") from error
    except duckdb.Error as error:
        raise SqlError(f"the query failed: {error}") from error
    finally:
        timer.cancel()
        cursor.close()


def _fetch(cursor: duckdb.DuckDBPyConnection, query: str, row_limit: int, max_bytes: int | None) -> pa.Table:
    """Streams the answer batch by batch and stops reading past `row_limit` rows or `max_bytes` bytes
    (DuckDB stops computing)."""
    relation = cursor.sql(query)
    if relation is None:
        return pa.table({}).replace_schema_metadata(limit_metadata(row_limit, None, max_bytes))
    duck_types = relation.types
    # Small batches: the byte limit is checked between batches, and a batch of huge values is itself huge.
    reader = relation.to_arrow_reader(min(row_limit + 1, 2048))
    batches, count, size, cut = [], 0, 0, None
    for batch in reader:
        if max_bytes is not None and size + batch.nbytes > max_bytes:
            batch, cut = batch.slice(0, _rows_within(batch, max_bytes - size)), "bytes"
        batches.append(batch)
        count, size = count + batch.num_rows, size + batch.nbytes
        if cut is None and count > row_limit:
            cut = "rows"
        if cut is not None:
            break
    table = pa.Table.from_batches(batches, schema=reader.schema).slice(0, row_limit)
    table = _with_json_types(table, duck_types)
    return table.replace_schema_metadata(limit_metadata(row_limit, cut, max_bytes))


def _rows_within(batch: pa.RecordBatch, budget: int) -> int:
    """How many of the batch's first rows fit in `budget` bytes (a slice's size counts its rows only)."""
    low, high = 0, batch.num_rows
    while low < high:
        middle = (low + high + 1) // 2
        if batch.slice(0, middle).nbytes <= budget:
            low = middle
        else:
            high = middle - 1
    return low


def _with_json_types(table: pa.Table, duck_types: list[Any]) -> pa.Table:
    """DuckDB hands JSON columns to Arrow as plain strings; mark them with Arrow's canonical `arrow.json`
    extension type, so encoders answer JSON values and Parquet writes its JSON logical type."""
    fields = [field.with_type(_json_typed(field.type, duck)) for field, duck in zip(table.schema, duck_types)]
    schema = pa.schema(fields)
    return table if schema.equals(table.schema) else table.cast(schema)


def _json_typed(arrow_type: pa.DataType, duck_type: Any) -> pa.DataType:
    if str(duck_type) == "JSON" and arrow_type in (pa.string(), pa.large_string()):
        return pa.json_(arrow_type)
    if duck_type.id == "list" and pa.types.is_list(arrow_type):
        return pa.list_(arrow_type.value_field.with_type(
            _json_typed(arrow_type.value_type, duck_type.children[0][1])))
    if duck_type.id == "struct" and pa.types.is_struct(arrow_type):
        return pa.struct([field.with_type(_json_typed(field.type, child))
                          for field, (_, child) in zip(arrow_type, duck_type.children)])
    return arrow_type
