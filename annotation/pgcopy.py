"""PostgreSQL's COPY for the bulk writers: rows streamed into a table in one command, with
primary keys reserved from the table's own sequence beforehand so the caller knows every id
(COPY returns none).

COPY checks the same constraints as INSERT (unique, check, foreign keys at commit), so a bulk
writer that uses it behaves as one that uses `bulk_create`; it only skips building a model
instance and an SQL string per row. SQLite has no COPY: callers ask `available()` first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from django.db import connection

# Rows per COPY command: large enough that the per-command cost vanishes, small enough that a
# progress bar moves.
COPY_BATCH = 50_000


def available() -> bool:
    """COPY is used on PostgreSQL (psycopg 3); every other backend keeps bulk_create."""
    return connection.vendor == "postgresql"


def reserve_ids(table: str, n: int) -> list[int]:
    """n fresh primary keys of `table`, from its identity sequence, safe under concurrent
    writers (each nextval is the writer's own)."""
    if n <= 0:
        return []
    with connection.cursor() as cur:
        cur.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
            [table, n],
        )
        return [row[0] for row in cur.fetchall()]


def copy_rows(table: str, columns: Sequence[str], rows: Iterable[Sequence]) -> int:
    """COPY `rows` (tuples in the order of `columns`) into `table`; returns how many."""
    n = 0
    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    sql = f"COPY {connection.ops.quote_name(table)} ({names}) FROM STDIN"
    with connection.cursor() as cur, cur.copy(sql) as cp:
        for row in rows:
            cp.write_row(row)
            n += 1
    return n


def copy_objects(model, objs: Sequence) -> list:
    """Store unsaved model instances as bulk_create would (defaults and pre_save applied, ids
    set on the instances), with one COPY."""
    if not objs:
        return []
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    for obj, pk in zip(objs, reserve_ids(model._meta.db_table, len(objs)), strict=True):
        obj.pk = pk
        obj._state.adding, obj._state.db = False, connection.alias
    copy_rows(
        model._meta.db_table,
        [model._meta.pk.column, *(f.column for f in fields)],
        (
            [obj.pk, *(f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields)]
            for obj in objs
        ),
    )
    return list(objs)
