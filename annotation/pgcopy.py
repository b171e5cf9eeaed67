"""PostgreSQL's COPY for the bulk writers: rows streamed into a table in one command, with
primary keys reserved from the table's own sequence beforehand so the caller knows every id
(COPY returns none).

The rows travel in COPY's binary format, each column typed from its model field: psycopg then
packs a row in C without formatting text, and the server reads integers and times without
parsing them (a fifth of the client's CPU of a text COPY). Values are the Python values the
field's type takes (a JSON column a `Jsonb` or a dict, not a JSON string), or, for a column
typed `RAW`, the bytes of the value in the column type's binary format.

COPY checks the same constraints as INSERT (unique, check, foreign keys at commit), so a bulk
writer that uses it behaves as one that uses `bulk_create`; it only skips building a model
instance and an SQL string per row. SQLite has no COPY: callers ask `available()` first.

Foreign keys in bulk: a foreign key is checked by a trigger, one index lookup per key per row,
queued until COMMIT (Django's constraints are deferred); for a million ratings that is about
seven million lookups. A COPY of at least BULK_CHECK_MIN rows, when the database user may set
`session_replication_role` (a superuser, or GRANT SET ON PARAMETER), runs with the triggers off
and then checks each foreign-key column at once: its distinct values are locked FOR KEY SHARE,
as the trigger locks them, and must all exist, or IntegrityError. The caller names the columns
that point at rows it wrote itself in the same transaction (`own`): nobody else can see, so
nobody can delete, those rows. The setting turns off every ordinary trigger, not only the
key checks: the tables written this way have none (a trigger added to them must be run here too).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from itertools import batched
from operator import itemgetter
from typing import Any

from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Field, Model
from psycopg import abc, pq

# The C row packer of cursor.copy() and COPY's binary signature and trailer, used alone.
from psycopg._copy_base import _binary_signature, _binary_trailer, format_row_binary
from psycopg.adapt import AdaptersMap, Transformer
from psycopg.types.string import BytesBinaryDumper

# Rows per COPY command: large enough that the per-command cost vanishes, small enough that a
# progress bar moves.
COPY_BATCH = 50_000
# From this many rows a COPY checks its foreign keys in bulk (when it may); fewer keep the
# per-row triggers, whose cost is then smaller than the bulk check's few statements.
BULK_CHECK_MIN = 5_000
# Rows handed to psycopg between two updates of the foreign-key sets (gathered per chunk in C,
# not per row in Python).
CHUNK = 10_000
# From this many rows, a bulk write into tables that are empty at its start drops their
# secondary indexes and builds them again at the end (indexes_rebuilt): one sort per index
# instead of one index insertion per row and index (a million-row import writes 16 indexes).
REBUILD_MIN = 50_000
# maintenance_work_mem while those indexes are built (SET LOCAL: this transaction only).
INDEX_BUILD_MEMORY = "256MB"
# The type of a column whose values the caller gives in the column type's binary format, sent
# as they are (as bytea, whose binary format is the bytes themselves): a uuid's 16 bytes, a
# jsonb's version byte and JSON text (JSONB_EMPTY). Cheaper than building a uuid.UUID or
# encoding JSON per row.
RAW = "bytea"
JSONB_EMPTY = b"\x01{}"


def available() -> bool:
    """COPY is used on PostgreSQL (psycopg 3); every other backend keeps bulk_create."""
    return connection.vendor == "postgresql"


def reserve_ids(table: str, n: int) -> Sequence[int]:
    """n fresh primary keys of `table`, from its identity sequence, safe under concurrent
    writers (each nextval is the writer's own). Usually one run of consecutive ids, returned
    as a range; when another writer took ids in between, the list of those taken."""
    if n <= 0:
        return []
    with connection.cursor() as cur:
        return reserve_from(cur, sequence_of(table), n)


def sequence_of(table: str) -> str:
    """The identity sequence of `table`'s id (looked up once: pg_get_serial_sequence per row
    would double the cost of a reservation)."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
        return cur.fetchone()[0]


def reserve_from(cur: Any, sequence: str, n: int) -> Sequence[int]:
    """reserve_ids on a given cursor (Django's, or psycopg's own on a COPY thread)."""
    if n <= 0:
        return []
    # n distinct values between min and max, max - min + 1 = n: exactly the run min..max. One
    # pass of plain aggregates (two window functions over the ids cost twice the nextvals).
    cur.execute(
        "SELECT min(v), max(v), CASE WHEN max(v) - min(v) + 1 <> %s THEN array_agg(v) END "
        "FROM (SELECT nextval(%s::regclass) AS v FROM generate_series(1, %s)) AS taken",
        [n, sequence, n],
    )
    low, high, scattered = cur.fetchone()
    return range(low, high + 1) if scattered is None else sorted(scattered)


def commit_unflushed() -> None:
    """This transaction's COMMIT returns before its WAL reaches the disk (PostgreSQL). A crash
    in the next moment may lose the transaction, whole (never half of it): for an import that
    can be run again, not for a rating a person submitted. Only in an outermost transaction (the
    import's own, not a request's); nothing elsewhere."""
    if available() and connection.in_atomic_block and not connection.savepoint_ids:
        with connection.cursor() as cur:
            cur.execute("SET LOCAL synchronous_commit = off")


def foreign_keys(model: type[Model]) -> dict[str, str]:
    """Column -> referenced table, for every foreign key of `model`."""
    out = {}
    for f in model._meta.concrete_fields:
        target = f.related_model
        if f.is_relation and f.column and target is not None and not isinstance(target, str):
            out[f.column] = target._meta.db_table
    return out


def _column(field: Field) -> str:
    if not field.column:
        raise ValueError(f"{field} has no column")
    return field.column


def binary_types(model: type[Model], columns: Sequence[str], **given: str) -> list[str]:
    """The binary COPY type of each column: its field's database type without the length
    (varchar(10) -> varchar), unless `given` names another (column=type)."""
    fields = {f.column: f for f in model._meta.concrete_fields}
    return [
        given.get(c) or re.sub(r"\(.*\)$", "", fields[c].db_type(connection) or "") for c in columns
    ]


@contextmanager
def triggers_off(wanted: bool) -> Iterator[bool]:
    """Row triggers (the foreign-key checks) off for the block when wanted and allowed; yields
    whether they are off. Needs a transaction (the setting is LOCAL to it)."""
    if not wanted or not connection.in_atomic_block:
        yield False
        return
    with connection.cursor() as cur:
        cur.execute("SELECT current_setting('session_replication_role')")
        before = cur.fetchone()[0]
        try:
            with transaction.atomic():  # a savepoint: a refused SET leaves the import usable
                cur.execute("SET LOCAL session_replication_role = replica")
        except DatabaseError:
            yield False
            return
        try:
            yield True
        except BaseException:
            # A failed transaction refuses the reset; rolling it back undoes the SET anyway.
            with suppress(DatabaseError), transaction.atomic():
                cur.execute("SELECT set_config('session_replication_role', %s, true)", [before])
            raise
        cur.execute("SELECT set_config('session_replication_role', %s, true)", [before])


class _NotEmpty(Exception):
    pass


def _empty_and_locked(tables: Sequence[str]) -> bool:
    """Whether the tables are empty; if so they stay locked (ACCESS EXCLUSIVE) to the end of the
    transaction. NOWAIT: when anyone else uses them, this is False at once, never a wait; when
    they are not empty, the lock is undone with its savepoint."""
    quoted = ", ".join(connection.ops.quote_name(t) for t in tables)
    rows = " OR ".join(f"EXISTS (SELECT 1 FROM {connection.ops.quote_name(t)})" for t in tables)
    with connection.cursor() as cur:
        cur.execute(f"SELECT {rows}")
        if cur.fetchone()[0]:
            return False
        try:
            with transaction.atomic():
                cur.execute(f"LOCK TABLE {quoted} IN ACCESS EXCLUSIVE MODE NOWAIT")
                cur.execute(f"SELECT {rows}")  # rows committed before the lock
                if cur.fetchone()[0]:
                    raise _NotEmpty
        except (DatabaseError, _NotEmpty):
            return False
    return True


def _secondary_indexes(table: str) -> list[tuple[str, str]]:
    """(drop, create) statements of each index of `table` but the primary key's and those that
    foreign keys need: plain indexes, and unique constraints no foreign key points at (dropped
    and added again with their own name and definition). The primary key stays."""
    with connection.cursor() as cur:
        cur.execute(
            "SELECT format('DROP INDEX %%s', i.indexrelid::regclass), "
            "pg_get_indexdef(i.indexrelid) FROM pg_index i "
            "WHERE i.indrelid = %s::regclass AND NOT EXISTS "
            "(SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid) "
            "UNION ALL SELECT format('ALTER TABLE %%s DROP CONSTRAINT %%I', c.conrelid::regclass, "
            "c.conname), format('ALTER TABLE %%s ADD CONSTRAINT %%I %%s', c.conrelid::regclass, "
            "c.conname, pg_get_constraintdef(c.oid)) FROM pg_constraint c "
            "WHERE c.conrelid = %s::regclass AND c.contype = 'u' AND NOT EXISTS "
            "(SELECT 1 FROM pg_constraint f WHERE f.contype = 'f' AND f.conindid = c.conindid) "
            "ORDER BY 1",
            [connection.ops.quote_name(table)] * 2,
        )
        return cur.fetchall()


@contextmanager
def indexes_rebuilt(models: Sequence[type[Model]], rows: int) -> Iterator[bool]:
    """For a write of `rows` (>= REBUILD_MIN) rows into the models' tables when all are empty at
    the start: their indexes but the primary keys (and those foreign keys need) are dropped for
    the block and built again at its end, in the same transaction (a unique index or constraint
    refuses duplicates then, as IntegrityError). The tables
    stay locked to COMMIT: no one reads or writes them meanwhile (they were empty, and in use by
    no one, or this yields False and changes nothing). An error in the block undoes the drops."""
    tables = [m._meta.db_table for m in models]
    if rows < REBUILD_MIN or not available() or not connection.in_atomic_block:
        yield False
        return
    if not _empty_and_locked(tables):
        yield False
        return
    with transaction.atomic(), connection.cursor() as cur:
        indexes = [index for table in tables for index in _secondary_indexes(table)]
        for drop, _ in indexes:
            cur.execute(drop)
        yield True
        # Queued foreign-key checks (rows written with the triggers on) run now: PostgreSQL
        # builds no index on a table with pending trigger events.
        connection.check_constraints()
        # Each index is one sort of the whole table: in memory rather than in temporary files
        # (the default 64 MB spills a million-row sort). Raised only, for this transaction only.
        cur.execute(
            "SELECT set_config('maintenance_work_mem', %s, true) WHERE "
            "pg_size_bytes(current_setting('maintenance_work_mem')) < pg_size_bytes(%s)",
            [INDEX_BUILD_MEMORY, INDEX_BUILD_MEMORY],
        )
        for _, create in indexes:
            cur.execute(create)


def lock_referenced(table: str, ids: Collection[Any], *, column: str) -> None:
    """The bulk form of a foreign-key check: lock the rows of `table` with these ids FOR KEY
    SHARE (no one may delete them before COMMIT) and refuse if any is missing."""
    wanted = sorted(i for i in ids if i is not None)  # sorted: rows locked in one order
    if not wanted:
        return
    with connection.cursor() as cur:
        # The ids as one array literal: adapting a list of 100,000 ints costs seconds.
        cur.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM {connection.ops.quote_name(table)} "
            "WHERE id = ANY(%s::bigint[]) FOR KEY SHARE) AS locked",
            ["{" + ",".join(map(str, wanted)) + "}"],
        )
        found = cur.fetchone()[0]
    if found != len(wanted):
        raise MissingReferences(
            f"{column}: {len(wanted) - found} of {len(wanted)} ids are not in {table}"
        )


class MissingReferences(IntegrityError):
    """Rows point at ids that are gone (deleted while the copy ran): a foreign-key violation,
    found by the copy itself (config.conflicts answers it as a conflict)."""

    sqlstate = "23503"


def _transformer(oids: Sequence[int]) -> abc.Transformer:
    """A psycopg transformer dumping these column types in binary, with the C dumper of bytes
    for bytea (psycopg's DB-API module registers a Python one, several times slower)."""
    adapters = AdaptersMap(connection.connection.adapters)
    adapters.register_dumper(None, BytesBinaryDumper)
    transformer = Transformer(adapters)
    transformer.set_dumper_types(oids, pq.Format.BINARY)
    return transformer


class Copy:
    """A COPY prepared on the calling thread (statement, binary types, the foreign-key columns
    to check in bulk), which `into` runs on any psycopg cursor of the same connection (a COPY
    thread's: copythread.py) and `check` completes on the calling thread."""

    def __init__(self, model: type[Model], columns: Sequence[str], *, own: Collection[str] = (),
                 types: dict[str, str] | None = None, bulk_checked: bool = False) -> None:  # fmt: skip
        self.table = model._meta.db_table
        names = ", ".join(connection.ops.quote_name(c) for c in columns)
        self.sql = (
            f"COPY {connection.ops.quote_name(self.table)} ({names}) FROM STDIN (FORMAT BINARY)"
        )
        self.types = binary_types(model, columns, **(types or {}))
        refs = {c: t for c, t in foreign_keys(model).items() if c in columns and c not in own}
        # Column -> (its referenced table, the values written): gathered only when checked in bulk.
        self.seen = {c: (t, set[Any]()) for c, t in refs.items()} if bulk_checked else {}
        self._at = [(itemgetter(columns.index(c)), values) for c, (_, values) in self.seen.items()]
        self._oids = [connection.connection.adapters.types.get_oid(t) for t in self.types]

    def encode(self, rows: Iterable[Sequence[Any]]) -> bytearray:
        """The rows in COPY's binary format (signature, rows, trailer), packed on the calling
        thread for `send` to write on another (which then holds the GIL for little). Each row is
        packed by psycopg's C function straight into one buffer (the same bytes as a
        BinaryFormatter's `write_row`, without its Python call and buffer swaps per row)."""
        transformer = _transformer(self._oids)
        out = bytearray(_binary_signature)
        for chunk in batched(rows, CHUNK):
            for row in chunk:
                format_row_binary(row, transformer, out)
            for get, values in self._at:
                values.update(map(get, chunk))
        out += _binary_trailer
        return out

    def send(self, cur: Any, data: bytes | bytearray) -> None:
        """COPY data made by `encode`, with `cur` (any thread)."""
        with cur.copy(self.sql) as cp:
            cp.write(data)

    def into(self, cur: Any, rows: Iterable[Sequence[Any]]) -> int:
        """COPY the rows with `cur`; returns how many."""
        n = 0
        cur.adapters.register_dumper(None, BytesBinaryDumper)  # (see _transformer)
        with cur.copy(self.sql) as cp:
            cp.set_types(self.types)
            for chunk in batched(rows, CHUNK):
                for row in chunk:
                    cp.write_row(row)
                for get, values in self._at:
                    values.update(map(get, chunk))
                n += len(chunk)
        return n

    def check(self) -> None:
        """The bulk foreign-key check of every row written so far (calling thread)."""
        for column, (table, values) in self.seen.items():
            lock_referenced(table, values, column=f"{self.table}.{column}")
            values.clear()


def copy_rows(
    model: type[Model],
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    own: Collection[str] = (),
    expected: int = 0,
    types: dict[str, str] | None = None,
) -> int:
    """COPY `rows` (tuples in the order of `columns`) into the model's table; returns how many.
    With `expected` >= BULK_CHECK_MIN rows, foreign keys are checked in bulk (module doc);
    `own` names the columns that point at rows the caller wrote in this transaction; `types`
    overrides a column's binary type (RAW)."""
    with triggers_off(expected >= BULK_CHECK_MIN) as off:
        copy = Copy(model, columns, own=own, types=types, bulk_checked=off)
        with connection.cursor() as cur:
            n = copy.into(cur.cursor, rows)
        copy.check()
    return n


def copy_objects(model: type[Model], objs: Sequence[Model]) -> list[Model]:
    """Store unsaved model instances as bulk_create would (defaults and pre_save applied, ids
    set on the instances), with one COPY."""
    if not objs:
        return []
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    for obj, pk in zip(objs, reserve_ids(model._meta.db_table, len(objs)), strict=True):
        obj.pk = pk
        obj._state.adding, obj._state.db = False, connection.alias
    copy_rows(
        model,
        [_column(f) for f in [model._meta.pk, *fields] if f is not None],
        (
            [obj.pk, *(f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields)]
            for obj in objs
        ),
        expected=len(objs),
    )
    return list(objs)
