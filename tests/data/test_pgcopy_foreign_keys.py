"""Large COPYs check their foreign keys in bulk (annotation/pgcopy.py): with the per-row triggers
off, a key that points nowhere must still be refused, nothing of the write may stay, and the
triggers must be on again afterwards. PostgreSQL only (SQLite has no COPY)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from annotation import pgcopy
from annotation.models import Assignment, Criterion, Rater, Rating, Score
from annotation.recording import NewRating, ratings_record_bulk

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="COPY and its bulk key checks: PostgreSQL only"
)


@pytest.fixture
def bulk_everything(monkeypatch):
    """Every COPY, however small, takes the bulk path."""
    monkeypatch.setattr(pgcopy, "BULK_CHECK_MIN", 1)


@pytest.fixture
def star_rows(request, star_rubric):
    study, items = request.getfixturevalue("star_items")  # two star items (conftest)
    rater = Rater.objects.create(kind="human", pool="onsite", name="ann")
    crit = Criterion.objects.get(rubric=star_rubric, key="correctness")

    def rows(rater_id: int = rater.id, criterion_id: int = crit.id) -> list[NewRating]:
        return [
            NewRating(study_id=study.id, item_id=i.id, rater_id=rater_id, scores={criterion_id: 2})
            for i in items
        ]

    return rows


def _role() -> str:
    with connection.cursor() as cur:
        cur.execute("SELECT current_setting('session_replication_role')")
        return cur.fetchone()[0]


def test_the_bulk_path_writes_the_rows_and_turns_the_triggers_on_again(bulk_everything, star_rows):
    rows = star_rows()
    with transaction.atomic():
        with pgcopy.triggers_off(True) as off:
            assert off, "the test database's user may set session_replication_role"
            assert _role() == "replica"
        assert _role() == "origin"
        counts = ratings_record_bulk(rows=rows)
        assert _role() == "origin"
    assert counts == {"assignments": len(rows), "ratings": len(rows), "scores": len(rows)}
    assert Rating.objects.count() == Score.objects.count() == len(rows)


@pytest.mark.parametrize("bad", ["rater", "criterion"])
def test_a_key_that_points_nowhere_is_refused_and_nothing_stays(bulk_everything, star_rows, bad):
    missing = 10**9
    rows = star_rows(rater_id=missing) if bad == "rater" else star_rows(criterion_id=missing)
    message = f"{bad}_id: 1 of 1 ids are not in annotation_{bad}"
    with pytest.raises(IntegrityError, match=message), transaction.atomic():
        ratings_record_bulk(rows=rows)
    assert not Assignment.objects.exists() and not Rating.objects.exists()
    assert _role() == "origin"


def test_a_deleted_rater_is_refused_too(bulk_everything, star_rows):
    """The bulk check reads the database, not the writer's memory."""
    rows = star_rows()
    Rater.objects.filter(pk=rows[0].rater_id).delete()
    with pytest.raises(IntegrityError, match="rater_id"), transaction.atomic():
        ratings_record_bulk(rows=rows)
    assert not Assignment.objects.exists()


def test_small_writes_keep_the_per_row_triggers(star_rows):
    """Below BULK_CHECK_MIN rows, the deferred per-row check refuses a bad key at COMMIT."""
    rows = star_rows(rater_id=10**9)
    with pytest.raises(IntegrityError), transaction.atomic():
        ratings_record_bulk(rows=rows)
        connection.check_constraints()
    assert not Assignment.objects.exists()


def test_every_foreign_key_column_is_checked():
    assert pgcopy.foreign_keys(Assignment) == {
        "study_id": "annotation_study",
        "item_id": "annotation_item",
        "rater_id": "annotation_rater",
        "repeat_of_id": "annotation_assignment",
    }


def test_reserved_ids_are_the_writers_own_even_when_not_consecutive(db):
    """One run of ids comes back as a range; ids another writer interleaved are left out (here
    the sequence steps by 2, as if someone took every other id)."""
    run = pgcopy.reserve_ids(Rater._meta.db_table, 4)
    assert isinstance(run, range) and len(run) == 4
    with connection.cursor() as cur:
        cur.execute("SELECT pg_get_serial_sequence('annotation_rater', 'id')")
        cur.execute(f"ALTER SEQUENCE {cur.fetchone()[0]} INCREMENT BY 2")
    gappy = pgcopy.reserve_ids(Rater._meta.db_table, 4)
    assert list(gappy) == [run[-1] + 2 * k for k in range(1, 5)]


def _index_names(*models) -> set[str]:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = ANY(%s)",
            [[m._meta.db_table for m in models]],
        )
        return {row[0] for row in cur.fetchall()}


@pytest.fixture
def rebuild_always(monkeypatch):
    """Every bulk write into empty tables, however small, rebuilds their indexes."""
    monkeypatch.setattr(pgcopy, "REBUILD_MIN", 1)


def test_a_write_into_empty_tables_builds_their_indexes_again(rebuild_always, star_rows):
    before = _index_names(Assignment, Rating, Score)
    rows = star_rows()
    with CaptureQueriesContext(connection) as queries:
        ratings_record_bulk(rows=rows)
    assert any(q["sql"].startswith("DROP INDEX") for q in queries.captured_queries)
    assert _index_names(Assignment, Rating, Score) == before
    assert Assignment.objects.count() == Score.objects.count() == len(rows) > 1


def test_a_rebuilt_unique_index_still_refuses_a_duplicate(rebuild_always, star_rows):
    rows = star_rows()
    twice = [*rows, NewRating(study_id=rows[0].study_id, item_id=rows[0].item_id,
                              rater_id=rows[0].rater_id, scores=rows[0].scores)]  # fmt: skip
    with pytest.raises(IntegrityError), transaction.atomic():
        ratings_record_bulk(rows=twice)
    assert not Assignment.objects.exists()
    assert "assignment_one_first_exposure" in _index_names(Assignment)


def test_tables_with_rows_keep_their_indexes(rebuild_always, star_rows):
    ratings_record_bulk(rows=star_rows()[:1])
    with CaptureQueriesContext(connection) as queries:
        ratings_record_bulk(rows=star_rows()[1:])
    assert not any("INDEX" in q["sql"] or "LOCK" in q["sql"] for q in queries.captured_queries)


def _constraints(*models) -> set[tuple[str, str]]:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = ANY(%s::regclass[])",
            [[m._meta.db_table for m in models]],
        )
        return set(cur.fetchall())


def test_unique_constraints_are_built_again_with_their_definition(rebuild_always, star_rows):
    """Unique constraints no foreign key needs (a rating's assignment, an assignment's public
    id, one score per criterion) are dropped for the write and added again as they were."""
    before = _constraints(Assignment, Rating, Score)
    with CaptureQueriesContext(connection) as queries:
        ratings_record_bulk(rows=star_rows())
    dropped = [q["sql"] for q in queries.captured_queries if "DROP CONSTRAINT" in q["sql"]]
    assert any("annotation_rating_assignment_id_key" in sql for sql in dropped)
    assert not any("pkey" in sql for sql in dropped)  # primary keys stay
    assert _constraints(Assignment, Rating, Score) == before


def test_a_rebuilt_unique_constraint_still_refuses_a_duplicate(rebuild_always, star_rows):
    rows = star_rows()
    ratings_record_bulk(rows=rows)
    Score.objects.all().delete()
    twice = [(rows[0].rating_id, next(iter(rows[0].scores)), 1, False)] * 2
    columns = ("rating_id", "criterion_id", "value", "out_of_range")
    with (
        pytest.raises(IntegrityError),
        transaction.atomic(),
        pgcopy.indexes_rebuilt((Score,), len(twice)) as rebuilt,
    ):
        assert rebuilt
        pgcopy.copy_rows(Score, columns, twice)
    assert not Score.objects.exists()
    assert "score_one_per_criterion" in {name for name, _ in _constraints(Score)}
