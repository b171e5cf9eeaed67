"""One way to record finished ratings in bulk: an assignment (the exposure), its rating and the
rating's scores, a few multi-row INSERTs per batch.

Importers, the judge recorder (evaluation) and the simulator (ranking) all write ratings that are
already complete, so they share this service instead of each building Assignment, Rating and
Score rows by hand. The assignment engine, which serves one item at a time and reserves it first,
keeps its own path.

A repeat exposure names its origin either by id (`repeat_of_id`, an assignment already stored)
or by another `NewRating` of the same call (`repeat_of`); origins are written first.

On PostgreSQL the rows go in with COPY (ids reserved from the sequences first, so each row still
learns its assignment and rating ids); on SQLite with one prepared INSERT per table, each row's
id read back (annotation/sqlrows.py); elsewhere with multi-row INSERTs (bulk_create). All write
the same columns and meet the same constraints.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import partial
from itertools import batched
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation import copythread, pgcopy, sqlrows
from annotation.models import Assignment, Rating, Score

BATCH = 2000


@dataclass(slots=True)
class NewRating:
    """A finished rating to record. Scores map criterion ids to values; `out_of_range` names the
    criterion ids whose published value lies outside the rubric's range (kept as given)."""

    study_id: int
    item_id: int
    rater_id: int
    choice: str = ""
    scores: dict[int, int] = field(default_factory=dict)
    out_of_range: frozenset[int] = frozenset()
    left_is_a: bool = True
    hint_shown: bool = False
    is_repeat: bool = False
    repeat_of_id: int | None = None
    repeat_of: NewRating | None = None
    seq: int = 0
    served_at: dt.datetime | None = None
    submitted_at: dt.datetime | None = None
    active_ms: int | None = None
    comment: str = ""
    parse_status: str = ""
    raw_output: str = ""
    # Filled in by ratings_record_bulk: the ids, and the time it recorded the row at.
    assignment_id: int | None = None
    rating_id: int | None = None
    recorded_at: dt.datetime | None = None
    _assignment: Assignment | None = field(default=None, init=False, repr=False, compare=False)
    _rating: Rating | None = field(default=None, init=False, repr=False, compare=False)

    # The stored assignment and rating are built on first use: a COPY of a million rows builds
    # none.
    @property
    def assignment(self) -> Assignment | None:
        if self._assignment is None and self.assignment_id is not None:
            self._assignment = self._stored(_assignment, self.assignment_id)
        return self._assignment

    @property
    def rating(self) -> Rating | None:
        if self._rating is None and self.rating_id is not None:
            self._rating = self._stored(_rating, self.rating_id)
        return self._rating

    def _stored[M: Assignment | Rating](
        self, build: Callable[[NewRating, dt.datetime], M], pk: int
    ) -> M:
        """The row as a model instance that is already saved, with its id."""
        obj = build(self, self.recorded_at or timezone.now())
        obj.pk = pk
        obj._state.adding = False
        return obj


def _origin_id(row: NewRating) -> int | None:
    return row.repeat_of.assignment_id if row.repeat_of is not None else row.repeat_of_id


# The NewRating fields its assignment and its rating store as they are (under the same names).
_ASSIGNMENT_AS_GIVEN = (
    "study_id",
    "item_id",
    "rater_id",
    "seq",
    "left_is_a",
    "hint_shown",
    "is_repeat",
    "active_ms",
)
_RATING_AS_GIVEN = ("item_id", "rater_id", "choice", "comment", "parse_status", "raw_output")


def _given(row: NewRating, names: tuple[str, ...]) -> dict[str, object]:
    return {name: getattr(row, name) for name in names}


def _assignment(row: NewRating, now: dt.datetime) -> Assignment:
    submitted = row.submitted_at or now
    return Assignment(
        **_given(row, _ASSIGNMENT_AS_GIVEN),
        status=Assignment.Status.SUBMITTED,
        repeat_of_id=_origin_id(row),
        served_at=row.served_at or submitted,
        submitted_at=submitted,
    )


def _rating(row: NewRating, now: dt.datetime) -> Rating:
    a = row.assignment
    if a is None:
        raise ValueError("a rating is built after its assignment is stored")
    submitted = row.submitted_at or now
    return Rating(
        assignment=a, **_given(row, _RATING_AS_GIVEN), created_at=submitted, updated_at=submitted
    )


def _scores(rows: Sequence[NewRating]) -> list[Score]:
    return [
        Score(
            rating=row.rating, criterion_id=cid, value=value, out_of_range=cid in row.out_of_range
        )
        for row in rows
        for cid, value in row.scores.items()
    ]


def _write(rows: list[NewRating], now: dt.datetime, batch: int) -> int:
    assignments = Assignment.objects.bulk_create(
        [_assignment(r, now) for r in rows], batch_size=batch
    )
    if any(a.pk is None for a in assignments):
        raise RuntimeError("the database backend did not return ids from a bulk insert")
    for row, a in zip(rows, assignments, strict=True):
        row._assignment, row.assignment_id, row.recorded_at = a, a.pk, now
    ratings = Rating.objects.bulk_create([_rating(r, now) for r in rows], batch_size=batch)
    for row, rating in zip(rows, ratings, strict=True):
        row._rating, row.rating_id = rating, rating.pk
    return len(Score.objects.bulk_create(_scores(rows), batch_size=batch * 2))


ASSIGNMENT_COLUMNS = (
    "id", "public_id", "study_id", "item_id", "rater_id", "seq", "status", "left_is_a",
    "hint_shown", "is_repeat", "repeat_of_id", "served_at", "submitted_at", "active_ms",
    "client_tag",
)  # fmt: skip
RATING_COLUMNS = (
    "id", "assignment_id", "item_id", "rater_id", "choice", "comment", "parse_status",
    "raw_output", "created_at", "updated_at",
)  # fmt: skip
SCORE_COLUMNS = ("rating_id", "criterion_id", "value", "out_of_range")


# Byte maps setting the version (7, the high nibble of the tail's first byte) and the variant
# (binary 10, the two high bits of its third byte) over random bytes, the other bits kept.
_VERSION_7 = bytes(0x70 | (b & 0x0F) for b in range(256))
_VARIANT = bytes(0x80 | (b & 0x3F) for b in range(256))


def _uuids(n: int) -> list[bytes]:
    """n version-7 UUIDs (RFC 9562: the Unix time in milliseconds, then 74 random bits), as the
    16 bytes of each, in ascending order. Ordered ids go to the right edge of the unique index
    on public_id as the sequential primary keys do, where random ones would land all over it
    (a page split and a cache miss per row of a million-row import); 74 random bits stay
    unguessable. One read of the OS's random source for all, and no arithmetic per id (a UUID
    object, or an int, per row would cost more than the row's COPY): the 10 bytes after the
    time are random bytes whose version and variant bits are set in place for all ids at once
    (`translate` over every tenth byte), so sorting these tails sorts the ids; the sorted tails
    and the time are then interleaved byte column by byte column."""
    if n <= 0:
        return []
    tails = bytearray(os.urandom(10 * n))
    tails[0::10] = tails[0::10].translate(_VERSION_7)
    tails[2::10] = tails[2::10].translate(_VARIANT)
    raw = bytes(tails)
    ordered = b"".join(sorted([raw[k : k + 10] for k in range(0, 10 * n, 10)]))
    out = bytearray(16 * n)
    for column, byte in enumerate((time.time_ns() // 1_000_000).to_bytes(6)):
        out[column::16] = bytes([byte]) * n
    for column in range(10):
        out[6 + column :: 16] = ordered[column::10]
    ids = bytes(out)
    return [ids[k : k + 16] for k in range(0, 16 * n, 16)]


# Read once: an enum member's value is a Python-level descriptor call, a million times per import.
_SUBMITTED = Assignment.Status.SUBMITTED.value


def _assignment_values(r: NewRating, public_id: bytes, now: dt.datetime) -> tuple:
    """The assignment's columns after its id (ASSIGNMENT_COLUMNS[1:])."""
    submitted = r.submitted_at or now
    return (
        public_id, r.study_id, r.item_id, r.rater_id, r.seq, _SUBMITTED,
        r.left_is_a, r.hint_shown, r.is_repeat, _origin_id(r), r.served_at or submitted,
        submitted, r.active_ms, "",
    )  # fmt: skip


def _rating_values(r: NewRating, now: dt.datetime) -> tuple:
    """The rating's columns after its id (RATING_COLUMNS[1:])."""
    submitted = r.submitted_at or now
    return (
        r.assignment_id, r.item_id, r.rater_id, r.choice, r.comment, r.parse_status,
        r.raw_output, submitted, submitted,
    )  # fmt: skip


def _score_values(rows: Sequence[NewRating]) -> Iterator[tuple]:
    for r in rows:
        for cid, value in r.scores.items():
            yield (r.rating_id, cid, value, cid in r.out_of_range)


class _Ids:
    """Primary keys of one table for the rows handed out in order, reserved from its sequence a
    block ahead on the COPY thread (a reservation on the calling thread would wait for the
    running COPY). Blocks follow `expected`: an exact count leaves no id unused."""

    def __init__(self, thread: copythread.CopyThread, table: str, expected: int) -> None:
        self.thread, self.sequence, self.left = thread, pgcopy.sequence_of(table), expected
        self.pool: list[int] = []
        self.ahead = self._reserve(min(pgcopy.COPY_BATCH, expected))

    def _reserve(self, n: int) -> Future | None:
        if n <= 0:
            return None
        self.left -= n
        sequence = self.sequence
        return self.thread.submit(lambda cur: pgcopy.reserve_from(cur, sequence, n))

    def take(self, n: int) -> list[int]:
        while len(self.pool) < n:
            if self.ahead is None:  # more rows than expected
                self.left = n - len(self.pool)
                self.ahead = self._reserve(self.left)
            self.pool += self.thread.result(self.ahead)  # type: ignore[arg-type]
            self.ahead = self._reserve(min(pgcopy.COPY_BATCH, self.left))
        out, self.pool = self.pool[:n], self.pool[n:]
        return out


class _CopyWriter:
    """The PostgreSQL path: the same rows as `_write`, with COPY. The calling thread plans and
    packs each chunk (ids, values, COPY's binary format); the COPY thread (copythread.py) sends
    it while the next chunk is planned."""

    def __init__(self, thread: copythread.CopyThread, now: dt.datetime, expected: int,
                 bulk_checked: bool) -> None:  # fmt: skip
        self.thread, self.now = thread, now
        self.ids = [_Ids(thread, m._meta.db_table, expected) for m in (Assignment, Rating)]
        self.assignments = pgcopy.Copy(
            Assignment, ASSIGNMENT_COLUMNS, types={"public_id": pgcopy.RAW},
            bulk_checked=bulk_checked,
        )  # fmt: skip
        self.ratings = pgcopy.Copy(
            Rating, RATING_COLUMNS, own=("assignment_id",), bulk_checked=bulk_checked
        )
        self.scores = pgcopy.Copy(
            Score, SCORE_COLUMNS, own=("rating_id",), bulk_checked=bulk_checked
        )
        self.scores_written = 0

    def write(self, rows: list[NewRating]) -> None:
        now = self.now
        a_ids, r_ids = (ids.take(len(rows)) for ids in self.ids)
        for row, aid, rid in zip(rows, a_ids, r_ids, strict=True):
            row.assignment_id, row.rating_id = aid, rid
        data = [
            (self.assignments, self.assignments.encode(
                (r.assignment_id, *_assignment_values(r, pid, now))
                for r, pid in zip(rows, _uuids(len(rows)), strict=True)
            )),
            (self.ratings, self.ratings.encode(
                (r.rating_id, *_rating_values(r, now)) for r in rows
            )),
        ]  # fmt: skip
        scores = sum(len(r.scores) for r in rows)
        if scores:
            data.append((self.scores, self.scores.encode(_score_values(rows))))
            self.scores_written += scores
        self.thread.submit(partial(_send, data))

    def check(self) -> None:
        """The bulk foreign-key checks, once the COPY thread is done (calling thread)."""
        self.assignments.check()
        self.ratings.check()
        self.scores.check()


def _send(data: list[tuple[pgcopy.Copy, bytearray]], cur: Any) -> None:
    """A chunk's COPYs, on the COPY thread."""
    for copy, blob in data:
        copy.send(cur, blob)


def _ready(rows: Iterable[NewRating], now: dt.datetime, held: list[NewRating]) -> Iterator:
    """The rows whose origin (if any) is written before them, marked as handed to the writer
    (recorded_at); the others go to `held`, for a later pass."""
    for row in rows:
        origin = row.repeat_of
        if origin is not None and origin.recorded_at is None:
            held.append(row)
            continue
        row.recorded_at = now
        yield row


def _record_copy(
    rows: Iterable[NewRating], now: dt.datetime, expected: int, on_batch: Callable | None
) -> tuple[int, int]:
    """Write the rows with COPY, chunk by chunk, on a COPY thread; returns the scores and the
    rows written."""
    written = 0
    with (
        pgcopy.triggers_off(expected >= pgcopy.BULK_CHECK_MIN) as off,
        copythread.CopyThread() as thread,
    ):
        writer = _CopyWriter(thread, now, expected, off)
        pending: Iterable[NewRating] = rows
        while pending:
            held: list[NewRating] = []
            for chunk in batched(_ready(pending, now, held), pgcopy.COPY_BATCH):
                writer.write(list(chunk))
                written += len(chunk)
                if on_batch is not None:
                    on_batch(len(chunk))
            if len(held) and all(r.repeat_of.recorded_at is None for r in held):  # type: ignore[union-attr]
                raise ValueError("a repeat names an origin that is not among the rows")
            pending = held
    writer.check()
    return writer.scores_written, written


def _write_sqlite(rows: list[NewRating], now: dt.datetime) -> int:
    """The SQLite path: the same rows and columns as `_write_copy`, one prepared INSERT per
    table (annotation/sqlrows.py), each assignment's and rating's id read back as it is written;
    the scores, whose ids nobody reads, in one executemany."""
    values = (
        _assignment_values(r, pid, now) for r, pid in zip(rows, _uuids(len(rows)), strict=True)
    )
    for row, aid in zip(
        rows, sqlrows.insert_rows(Assignment, ASSIGNMENT_COLUMNS[1:], values), strict=True
    ):
        row.assignment_id, row.recorded_at = aid, now
    ratings = (_rating_values(r, now) for r in rows)
    for row, rid in zip(
        rows, sqlrows.insert_rows(Rating, RATING_COLUMNS[1:], ratings), strict=True
    ):
        row.rating_id = rid
    return sqlrows.insert_rows_unnumbered(Score, SCORE_COLUMNS, _score_values(rows))


@transaction.atomic
def ratings_record_bulk(
    *,
    rows: Iterable[NewRating],
    batch: int = BATCH,
    on_batch: Callable[[int], None] | None = None,
    expected: int | None = None,
) -> dict[str, int]:
    """Write the rows' assignments, ratings and scores; origins before their repeats. Returns
    the counts written. Each row gets its `assignment` and `rating` (with primary keys).

    `rows` may be a generator (`expected`: about how many it yields): on PostgreSQL its rows
    are planned while the previous chunk is copied."""
    now = timezone.now()
    if expected is None:
        rows = list(rows)
        expected = len(rows)
    # Into empty tables (a first import) the indexes are built once, at the end.
    with pgcopy.indexes_rebuilt((Assignment, Rating, Score), expected):
        if pgcopy.available():
            scores, n = _record_copy(rows, now, expected, on_batch)
            return {"assignments": n, "ratings": n, "scores": scores}
        return _record_rows(list(rows), now, batch, on_batch)


def _record_rows(
    pending: list[NewRating], now: dt.datetime, batch: int, on_batch: Callable | None
) -> dict[str, int]:
    """SQLite and other backends: origins first, in chunks."""
    counts = {"assignments": 0, "ratings": 0, "scores": 0}
    while pending:
        ready = [r for r in pending if r.repeat_of is None or r.repeat_of.assignment_id]
        if not ready:
            raise ValueError("a repeat names an origin that is not among the rows")
        if len(ready) == len(pending):  # no repeat waits for its origin (the usual case)
            pending = []
        else:
            ready_ids = {id(r) for r in ready}
            pending = [r for r in pending if id(r) not in ready_ids]
        for start in range(0, len(ready), batch):
            chunk = ready[start : start + batch]
            if sqlrows.available():
                counts["scores"] += _write_sqlite(chunk, now)
            else:
                counts["scores"] += _write(chunk, now, batch)
            counts["assignments"] += len(chunk)
            counts["ratings"] += len(chunk)
            if on_batch is not None:
                on_batch(len(chunk))
    return counts
