"""ratings_record_bulk fed by a generator (the import plans its ratings while the previous chunk
is copied) and the COPY thread that writes the chunks on PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from annotation import copythread, pgcopy
from annotation.models import Assignment, Criterion, Rater, Rating, Score
from annotation.recording import NewRating, ratings_record_bulk

pytestmark = pytest.mark.django_db

PG = pytest.mark.skipif(connection.vendor != "postgresql", reason="the COPY thread: PostgreSQL")


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 3 rows (and id blocks of 3): a few rows cross several chunks."""
    monkeypatch.setattr(pgcopy, "COPY_BATCH", 3)


@pytest.mark.parametrize("expected", [2, 8, 30])  # fewer, as many and more than it yields
def test_a_generator_of_rows_is_stored_as_a_list_is(small_chunks, star_items, star_rubric,
                                                     expected):  # fmt: skip
    study, items = star_items
    raters = [Rater.objects.create(kind="human", pool="onsite", name=f"r{k}") for k in range(4)]
    crit = Criterion.objects.get(rubric=star_rubric, key="correctness")
    firsts = [
        NewRating(study_id=study.id, item_id=item.id, rater_id=rater.id, scores={crit.id: 2},
                  comment=f"{item.id}/{rater.id}")
        for item in items[:2] for rater in raters
    ]  # fmt: skip
    # A repeat handed over before its origin: written in a second pass, after it.
    repeat = NewRating(study_id=study.id, item_id=items[0].id, rater_id=raters[0].id,
                       scores={crit.id: 1}, is_repeat=True, repeat_of=firsts[0])  # fmt: skip
    rows = [repeat, *firsts]
    seen: list[int] = []
    counts = ratings_record_bulk(rows=iter(rows), expected=expected, on_batch=seen.append)
    assert counts == {"assignments": 9, "ratings": 9, "scores": 9}
    assert sum(seen) == 9
    stored = {a.pk: a for a in Assignment.objects.all()}
    assert sorted(stored) == sorted(r.assignment_id for r in rows)  # each row learnt its ids
    assert stored[repeat.assignment_id].repeat_of_id == firsts[0].assignment_id
    ratings = {r.pk: r for r in Rating.objects.all()}
    for row in firsts:
        rating = ratings[row.rating_id]
        assert (rating.assignment_id, rating.item_id, rating.rater_id, rating.comment) == (
            row.assignment_id, row.item_id, row.rater_id, f"{row.item_id}/{row.rater_id}",
        )  # fmt: skip
    assert Score.objects.filter(value=1, rating_id=repeat.rating_id).count() == 1


@PG
def test_the_copy_thread_hands_a_jobs_error_to_the_caller_and_skips_the_rest():
    ran: list[int] = []

    def fails(cur):
        cur.execute("SELECT 1/0")

    with (
        pytest.raises(Exception, match="division by zero"),
        transaction.atomic(),
        copythread.CopyThread() as thread,
    ):
        thread.result(thread.submit(lambda cur: ran.append(1)))
        thread.submit(fails)
        thread.result(thread.submit(lambda cur: ran.append(2)))
    assert ran == [1]


@PG
def test_a_failure_while_rows_are_planned_writes_nothing(small_chunks, star_items):
    study, items = star_items
    rater = Rater.objects.create(kind="human", pool="onsite", name="r")

    def rows():
        for item in items:
            yield NewRating(study_id=study.id, item_id=item.id, rater_id=rater.id)
        raise RuntimeError("the plan failed after some chunks went out")

    with pytest.raises(RuntimeError, match="plan failed"):
        ratings_record_bulk(rows=rows(), expected=len(items))
    assert not Assignment.objects.exists() and not Rating.objects.exists()
