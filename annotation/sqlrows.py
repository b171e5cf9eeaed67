"""SQLite's counterpart of pgcopy for the bulk writers: rows inserted through the sqlite3
module's own cursor, one prepared statement per table, each row's new id read back at once.

`bulk_create` spends most of its CPU building the SQL of a multi-row INSERT: every value of every
row goes through the compiler and its field's preparation, and every row is a model instance
first. Here the caller gives tuples in the order of the columns; the values that SQLite stores as
they are (integers, booleans, text) pass untouched, the others (times, decimals, JSON, uuids) go
through their field's own `get_db_prep_save`, so the stored values are those `bulk_create` would
store. Constraints are SQLite's, as for any INSERT; errors come out as Django's (IntegrityError).

Each row is its own `execute` of the same prepared statement (sqlite3 caches it), so its id is
`lastrowid`: no reliance on the order of a multi-row INSERT's RETURNING rows. The statements go
past Django's cursor wrapper (its per-statement placeholder rewriting and execute hooks), so
query logging and `assertNumQueries` do not see them, as they do not see pgcopy's COPY rows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Field, Model

# Internal types whose Python values sqlite3 stores as they are (ints, bools, str, None).
PLAIN = frozenset(
    {
        "AutoField",
        "BigAutoField",
        "SmallAutoField",
        "IntegerField",
        "BigIntegerField",
        "SmallIntegerField",
        "PositiveIntegerField",
        "PositiveBigIntegerField",
        "PositiveSmallIntegerField",
        "BooleanField",
        "CharField",
        "TextField",
        "ForeignKey",
        "OneToOneField",
    }
)


def available() -> bool:
    """This path is used on SQLite; PostgreSQL has COPY (pgcopy), others keep bulk_create."""
    return connection.vendor == "sqlite"


def _converter(field: Field) -> Callable[[Any], Any] | None:
    """None when the value is stored as it is; else the field's own preparation. A uuid may
    come as its 16 bytes (as pgcopy's RAW takes it): SQLite stores its hex digits."""
    kind = field.get_internal_type()
    if kind in PLAIN:
        return None
    if kind == "UUIDField":
        return lambda v: v.hex() if isinstance(v, bytes) else field.get_db_prep_save(v, connection)
    if kind == "DateTimeField" and settings.USE_TZ and connection.timezone_name == "UTC":
        return _utc_text(field)
    return lambda v: field.get_db_prep_save(v, connection)


def _utc_text(field: Field) -> Callable[[Any], Any]:
    """A time in UTC as the field's preparation stores it when the connection's zone is UTC
    (naive ISO text, space-separated), without its six calls per value: the recorders write
    several times per row. Anything else (other zones, naive times, dates) takes the field's
    own path, warnings included."""

    def convert(v: Any) -> Any:
        if v.__class__ is dt.datetime and v.tzinfo is dt.UTC:
            return str(v.replace(tzinfo=None))
        return field.get_db_prep_save(v, connection)

    return convert


def _insert_sql(model: type[Model], columns: Sequence[str]) -> tuple[str, list]:
    """The prepared INSERT of these columns and the converters of the values that need one."""
    fields = {f.column: f for f in model._meta.concrete_fields}
    converters = [(i, c) for i, col in enumerate(columns) if (c := _converter(fields[col]))]
    q = connection.ops.quote_name
    sql = (
        f"INSERT INTO {q(model._meta.db_table)} ({', '.join(q(c) for c in columns)}) "
        f"VALUES ({', '.join('?' * len(columns))})"
    )
    return sql, converters


def _converted(rows: Iterable[Sequence[Any]], converters: list) -> Iterable[Sequence[Any]]:
    if not converters:
        return rows
    return (_convert_row(row, converters) for row in rows)


def _convert_row(row: Sequence[Any], converters: list) -> list[Any]:
    values = list(row)
    for i, convert in converters:
        values[i] = convert(values[i])
    return values


def insert_rows(
    model: type[Model], columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> list[int]:
    """INSERT `rows` (tuples in the order of `columns`, which leave out the primary key) into
    the model's table; returns the new ids in the order of the rows."""
    sql, converters = _insert_sql(model, columns)
    ids: list[int] = []
    connection.ensure_connection()
    with connection.wrap_database_errors:
        cur = connection.connection.cursor()
        try:
            for row in _converted(rows, converters):
                cur.execute(sql, row)
                ids.append(cur.lastrowid)
        finally:
            cur.close()
    return ids


def insert_rows_unnumbered(
    model: type[Model], columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> int:
    """insert_rows for rows whose ids nobody reads (scores): one `executemany`, the loop in C
    rather than one `execute` per row from Python. Returns the rows written."""
    sql, converters = _insert_sql(model, columns)
    connection.ensure_connection()
    with connection.wrap_database_errors:
        cur = connection.connection.cursor()
        try:
            cur.executemany(sql, _converted(rows, converters))
            return cur.rowcount
        finally:
            cur.close()


def insert_objects(model: type[Model], objs: Sequence[Model]) -> list[Model]:
    """Store unsaved model instances as bulk_create would (pre_save applied, ids set on the
    instances), through insert_rows."""
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    ids = insert_rows(
        model,
        [f.column for f in fields if f.column],
        ([f.pre_save(obj, True) for f in fields] for obj in objs),
    )
    for obj, pk in zip(objs, ids, strict=True):
        obj.pk = pk
        obj._state.adding, obj._state.db = False, connection.alias
    return list(objs)
