"""The annotator hot path's SQL shortcuts: the precompiled joined read gives what the ORM gives,
submit-and-next is one all-or-nothing transaction, the crowd lands on its first item at once."""

from __future__ import annotations

import random
import re

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from annotation import engine
from annotation.exposure_reads import EXPOSURE as _EXPOSURE
from annotation.exposure_reads import EXPOSURE_LIGHT as _EXPOSURE_LIGHT
from annotation.models import Assignment, Item, Rating, Study

from .conftest import crowd_enter, make_rater, make_study

RELATED = ("rater", "study__rubric", "item__question", "item__response_a", "item__response_b")


def field_values(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}


@pytest.mark.parametrize("mode", ["pairwise", "star"])
def test_the_joined_read_gives_the_same_instances_as_select_related(
    db, mode, django_assert_num_queries
):
    study = make_study(mode=mode, hint_policy=Study.HintPolicy.RANDOM)
    rater = make_rater(meta={"source": "test", "n": 1})
    served = engine.assignment_next(study=study, rater=rater)
    orm = Assignment.objects.select_related(*RELATED).get(pk=served.pk)

    got = _EXPOSURE.get(served.public_id)

    assert field_values(got) == field_values(orm)  # UUIDs, aware datetimes, booleans converted
    for path in ("rater", "study", "study.rubric", "item", "item.question", "item.response_a"):
        mine, theirs = got, orm
        for name in path.split("."):
            mine, theirs = getattr(mine, name), getattr(theirs, name)
        assert field_values(mine) == field_values(theirs), path
    assert got.rater.meta == {"source": "test", "n": 1}  # JSON decoded as the ORM decodes it
    if mode == "pairwise":
        assert got.item.response_b.text == orm.item.response_b.text
    else:
        assert got.item.response_b is None  # the empty outer join of a single-answer item
    # Everything is attached: using the relations runs no further query.
    with django_assert_num_queries(0):
        _ = (got.study.rubric.key, got.item.question.text, got.item.response_a.text)
        _ = got.rater.pool


def test_the_light_joined_read_and_an_unknown_id(db):
    study = make_study(mode="pairwise")
    rater = make_rater()
    served = engine.assignment_next(study=study, rater=rater)
    light = _EXPOSURE_LIGHT.get(served.public_id)
    assert (light.pk, light.study.pk, light.rater.pk) == (served.pk, study.pk, rater.pk)
    assert not Assignment.item.is_cached(light)
    assert _EXPOSURE.get(Assignment._meta.get_field("public_id").default()) is None


def test_submit_and_next_records_the_rating_and_reserves_the_next_item(db):
    study = make_study(mode="pairwise", ratings_per_item=1)
    rater = make_rater()
    first = engine.assignment_next(study=study, rater=rater, rng=random.Random(3))
    rating, following = engine.assignment_submit_and_next(
        assignment=first, rater=rater, choice="left", active_ms=900, rng=random.Random(4)
    )
    first.refresh_from_db()
    assert first.status == Assignment.Status.SUBMITTED and first.active_ms == 900
    assert Rating.objects.get(pk=rating.pk).assignment_id == first.pk
    item = Item.objects.get(pk=first.item_id)
    assert (item.n_ratings, item.n_reserved) == (1, 0)
    assert following is not None and following.seq == first.seq + 1
    assert following.status == Assignment.Status.SERVED
    assert Assignment.objects.get(pk=following.pk).public_id == following.public_id
    assert Item.objects.get(pk=following.item_id).n_reserved == 1


def test_submit_and_next_writes_nothing_when_the_answer_is_invalid(db):
    study = make_study(mode="star")
    rater = make_rater()
    first = engine.assignment_next(study=study, rater=rater)
    before = (Assignment.objects.count(), Rating.objects.count())
    with pytest.raises(ValidationError):
        engine.assignment_submit_and_next(assignment=first, rater=rater, scores={})
    assert (Assignment.objects.count(), Rating.objects.count()) == before
    assert Item.objects.get(pk=first.item_id).n_reserved == 1


def test_submit_and_next_refuses_a_study_that_stopped_admitting_the_pool(db):
    study = make_study(mode="pairwise", admit_crowd=True)
    rater = make_rater(pool="crowd")
    first = engine.assignment_next(study=study, rater=rater)
    Study.objects.filter(pk=study.pk).update(admit_crowd=False)
    first.study.refresh_from_db()
    with pytest.raises(engine.NotAdmitted):
        engine.assignment_submit_and_next(assignment=first, rater=rater, choice="tie")
    assert not Rating.objects.exists()


def test_a_crowd_worker_lands_on_the_first_item_straight_from_the_consent_page(client, db):
    study = make_study(mode="pairwise", admit_crowd=True)
    response = crowd_enter(
        client, study, {"PROLIFIC_PID": "p-9", "STUDY_ID": "s", "SESSION_ID": "x"}
    )
    assert response.status_code == 302
    pid = re.fullmatch(r"/a/([0-9a-f-]{36})/", response["Location"]).group(1)
    assert Assignment.objects.get(public_id=pid).rater.external_id == "p-9"
    assert client.get(response["Location"]).status_code == 200


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements: PostgreSQL")
def test_postgres_connections_prepare_repeated_statements(db):
    connection.ensure_connection()
    assert connection.connection.prepare_threshold == 5


def test_the_wsgi_entry_point_loads_every_view_and_warms_the_templates(db):
    import importlib

    from django.core.handlers.wsgi import WSGIHandler

    import config.wsgi

    # Reloading runs the URLconf load and warm_up() again: a missing template or a view module
    # that fails to import breaks the server's start-up, and this test.
    module = importlib.reload(config.wsgi)
    assert isinstance(module.application, WSGIHandler)


def test_the_page_read_counts_the_raters_submitted_ratings(db):
    study = make_study(mode="pairwise", ratings_per_item=1)
    rater = make_rater()
    a = engine.assignment_next(study=study, rater=rater, rng=random.Random(1))
    assert _EXPOSURE.get(a.public_id).rater_submitted == 0
    _, following = engine.assignment_submit_and_next(
        assignment=a, rater=rater, choice="left", rng=random.Random(2)
    )
    other = make_rater()  # another rater's rating does not count
    b = engine.assignment_next(study=study, rater=other, rng=random.Random(3))
    engine.assignment_submit(assignment=b, rater=other, choice="tie")
    assert _EXPOSURE.get(following.public_id).rater_submitted == 1
    assert _EXPOSURE.get(a.public_id).rater_submitted == 1


@pytest.mark.parametrize("mode", ["pairwise", "star"])
def test_the_next_exposure_comes_with_its_item_as_the_joined_read_gives_it(
    db, mode, django_assert_num_queries
):
    """On PostgreSQL the pick's statement returns the item, question and answers of the new
    exposure (the next screen needs no read of its own): the same values the read gives, the
    item's counters as they are after the reservation."""
    study = make_study(mode=mode, ratings_per_item=2)
    rater = make_rater()
    a = engine.assignment_next(study=study, rater=rater, rng=random.Random(5))
    if connection.vendor != "postgresql":
        assert not Assignment.item.is_cached(a)  # SQLite: the view reads it
        return
    with django_assert_num_queries(0):
        item = a.item
        shown = (item.question.text, item.response_a.text, getattr(item.response_b, "text", ""))
    fresh = Item.objects.select_related("question", "response_a", "response_b").get(pk=a.item_id)
    assert field_values(item) == field_values(fresh)
    assert (item.n_reserved, item.n_ratings) == (1, 0)
    for name in ("question", "response_a"):
        assert field_values(getattr(item, name)) == field_values(getattr(fresh, name))
    assert shown[2] == (fresh.response_b.text if fresh.response_b else "")
