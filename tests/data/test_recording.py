"""The pieces of an import, each alone: the in-memory bundle's checks (no database) and the
shared ratings_record_bulk service."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import IntegrityError, connection, transaction

from annotation import recording
from annotation.importers.bundle import Bundle, ImportRefused, RaterSpec, RatingSpec, StudySpec
from annotation.importers.reading import check_score
from annotation.models import Assignment, Criterion, Rater, Rating, Score
from annotation.recording import NewRating, ratings_record_bulk

T0 = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)


def _bundle(*ratings: RatingSpec) -> Bundle:
    b = Bundle(dataset="d")
    b.studies["s"] = StudySpec(name="s", mode="star", rubric="llmeval2")
    b.studies["p"] = StudySpec(name="p", mode="pairwise", rubric="pairwise")
    b.raters["r"] = RaterSpec("r", "judge", "judge")
    b.ratings.extend(ratings)
    return b


def _spec(**fields) -> RatingSpec:
    """A rating of answer m to question q by rater r in the star study s, but for `fields`."""
    return RatingSpec(**({"study": "s", "rater": "r", "question": "q", "llm": "m"} | fields))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (_spec(), "without any score"),
        (_spec(study="x", scores={"a": 1}), "unknown study"),
        (_spec(scores={"a": 1}, parse_status="unparsed"), "carries no score"),
        (_spec(scores={"a": 1}, out_of_range={"b"}), "without a score"),
        (_spec(study="p", other_llm="n", choice="left"), "unknown pairwise choice"),
        (
            _spec(scores={"a": 1}, served_at=T0, submitted_at=T0 - dt.timedelta(seconds=1)),
            "served_at is after submitted_at",
        ),
    ],
)
def test_a_bundle_refuses_inconsistent_ratings_before_any_database_work(spec, message):
    with pytest.raises(ImportRefused, match=message):
        _bundle(spec).validate()


def test_an_unparsed_judge_output_is_a_valid_rating_without_scores():
    _bundle(_spec(parse_status="unparsed", raw_output="?")).validate()


@pytest.mark.parametrize("value", ["²", "٣", "1.5", True, 10**7, "9" * 5000, None, "\x00"])
def test_check_score_refuses_what_is_not_a_plain_whole_number(value):
    with pytest.raises(ImportRefused, match="not a whole number"):
        check_score(value, lo=1, hi=3, criterion="c", file="f.json", record="record 1")


def test_check_score_keeps_a_published_value_out_of_range_only_when_asked():
    assert (
        check_score("0", lo=1, hi=3, criterion="c", file="f", record="1", keep_out_of_range=True)
        == 0
    )
    with pytest.raises(ImportRefused, match="outside the rubric's range 1-3"):
        check_score(0, lo=1, hi=3, criterion="c", file="f", record="1")
    with pytest.raises(ImportRefused, match="outside"):
        check_score(101, lo=1, hi=3, criterion="c", file="f", record="1", keep_out_of_range=True)


def _repeat_of(first: NewRating, crit: Criterion) -> NewRating:
    """A repeat exposure of `first`, scored out of the rubric's range (kept as given)."""
    return NewRating(
        study_id=first.study_id,
        item_id=first.item_id,
        rater_id=first.rater_id,
        scores={crit.id: 0},
        out_of_range=frozenset({crit.id}),
        is_repeat=True,
        repeat_of=first,
    )


def test_ratings_record_bulk_writes_origins_before_their_repeats(star_items, star_rubric):
    study, items = star_items
    rater = Rater.objects.create(kind="human", pool="onsite", name="ann")
    crit = Criterion.objects.get(rubric=star_rubric, key="correctness")
    first = NewRating(
        study_id=study.id,
        item_id=items[0].id,
        rater_id=rater.id,
        scores={crit.id: 2},
        submitted_at=T0,
    )
    repeat = _repeat_of(first, crit)
    # The repeat comes first in the list: the service still writes its origin first.
    counts = ratings_record_bulk(rows=[repeat, first], batch=1)
    assert counts == {"assignments": 2, "ratings": 2, "scores": 2}
    a = Assignment.objects.get(is_repeat=True)
    assert a.repeat_of_id == first.assignment.pk and a.pk == repeat.assignment.pk
    assert first.assignment.submitted_at == T0 == first.assignment.served_at
    assert Rating.objects.get(pk=first.rating.pk).created_at == T0
    assert list(Score.objects.order_by("value").values_list("value", "out_of_range")) == [
        (0, True),
        (2, False),
    ]


def test_ratings_record_bulk_refuses_a_repeat_whose_origin_is_missing(star_items):
    study, items = star_items
    rater = Rater.objects.create(kind="human", pool="onsite", name="ann")
    orphan = NewRating(study_id=study.id, item_id=items[0].id, rater_id=rater.id)
    repeat = NewRating(
        study_id=study.id, item_id=items[0].id, rater_id=rater.id, is_repeat=True, repeat_of=orphan
    )
    with pytest.raises(ValueError, match="origin"):
        ratings_record_bulk(rows=[repeat])
    assert not Assignment.objects.exists()


@pytest.mark.parametrize(
    ("model", "columns"),
    [
        (Assignment, "ASSIGNMENT_COLUMNS"),
        (Rating, "RATING_COLUMNS"),
        (Score, "SCORE_COLUMNS"),
    ],
)
def test_the_copy_path_writes_every_column_the_database_cannot_fill_itself(model, columns):
    """PostgreSQL's COPY path names its columns; a new NOT NULL field without a database default
    must be added there too, or imports on PostgreSQL would fail."""
    import annotation.recording as recording

    named = set(getattr(recording, columns))
    needed = {
        f.column
        for f in model._meta.concrete_fields
        if not f.null and not f.has_db_default() and not (f.primary_key and model is Score)
    }
    assert needed <= named, needed - named


def test_the_copy_path_gives_each_assignment_an_ordered_version_7_uuid():
    import time
    import uuid

    from annotation.recording import _uuids

    before = time.time_ns() // 1_000_000
    ids = [uuid.UUID(bytes=b) for b in _uuids(500)]
    assert len(set(ids)) == 500 and ids == sorted(ids)
    assert {u.version for u in ids} == {7} and {u.variant for u in ids} == {uuid.RFC_4122}
    # The first 48 bits are the time in milliseconds; the rest of each id is random.
    assert {u.int >> 80 for u in ids} <= set(range(before, time.time_ns() // 1_000_000 + 1))
    assert len({u.int & ((1 << 62) - 1) for u in ids}) == 500


def _two_ratings(study, items, rater, crit) -> list[NewRating]:
    first = NewRating(
        study_id=study.id,
        item_id=items[0].id,
        rater_id=rater.id,
        choice="A",
        scores={crit.id: 2},
        left_is_a=False,
        hint_shown=True,
        seq=7,
        served_at=T0 - dt.timedelta(seconds=3),
        submitted_at=T0 + dt.timedelta(microseconds=123456),
        active_ms=1234,
        comment="ok",
        parse_status="ok",
        raw_output="Correctness: 2 ★★",
    )
    repeat = _repeat_of(first, crit)
    return [first, repeat]


def _as_stored(rater) -> list[tuple]:
    """The rater's assignments, ratings and scores as read back, without ids (public ids are
    random: version 4 from the model's default, 7 from the bulk paths)."""
    ids = {"id", "public_id", "rater", "assignment", "repeat_of"}
    out = []
    for a in Assignment.objects.filter(rater=rater).order_by("id"):
        r = Rating.objects.get(assignment=a)
        fields = [(a, f) for f in a._meta.concrete_fields] + [
            (r, f) for f in r._meta.concrete_fields
        ]
        out.append(
            (
                [(f.name, getattr(obj, f.attname)) for obj, f in fields if f.name not in ids],
                a.repeat_of_id is not None,
                list(r.scores.values_list("criterion_id", "value", "out_of_range")),
            )
        )
    return out


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's prepared-INSERT path")
def test_the_sqlite_path_stores_what_bulk_create_stores(star_items, star_rubric):
    study, items = star_items
    crit = Criterion.objects.get(rubric=star_rubric, key="correctness")
    fast, slow = (Rater.objects.create(kind="human", pool="onsite", name=n) for n in "fs")
    now = T0 + dt.timedelta(minutes=1)
    rows = _two_ratings(study, items, fast, crit)
    for row in rows:  # origin first, then its repeat (as ratings_record_bulk orders them)
        recording._write_sqlite([row], now)
    others = _two_ratings(study, items, slow, crit)
    for row in others:
        recording._write([row], now, 100)
    stored = _as_stored(fast)
    assert len(stored) == 2 and stored == _as_stored(slow)
    assert stored[1][1]  # the repeat points at its origin
    # The ids handed back are those of the stored rows.
    assert [r.rating_id for r in rows] == [
        Rating.objects.get(assignment_id=r.assignment_id).pk for r in rows
    ]
    assert rows[0].rating.created_at == T0 + dt.timedelta(microseconds=123456)


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's prepared-INSERT path")
def test_the_sqlite_path_raises_djangos_integrity_error(star_items):
    study, items = star_items
    rater = Rater.objects.create(kind="human", pool="onsite", name="ann")
    recording._write_sqlite(
        [NewRating(study_id=study.id, item_id=items[0].id, rater_id=rater.id)], T0
    )
    # A second first exposure of the item to the same rater breaks a unique constraint.
    with pytest.raises(IntegrityError), transaction.atomic():
        recording._write_sqlite(
            [NewRating(study_id=study.id, item_id=items[0].id, rater_id=rater.id)], T0
        )
    assert Assignment.objects.filter(rater=rater).count() == 1
