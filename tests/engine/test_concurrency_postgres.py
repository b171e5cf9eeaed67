"""Exactly N under concurrency: real threads, each with its own PostgreSQL connection, racing
through next / submit / skip. SQLite serialises writers and is only promised one user at a time."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connection, connections
from django.db.models import Count

from annotation import engine
from annotation.models import Assignment, Item, Rating

from .conftest import make_rater, make_study

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("row locks and SKIP LOCKED need PostgreSQL (set DATABASE_URL=postgres://...)")


def race(n: int, action: Callable[[], Any]) -> list[Any]:
    """Run `action` in n threads released together, each on its own connection; what each
    returned. An exception in any thread fails the test."""
    barrier = threading.Barrier(n)
    results: list[Any] = []
    errors: list[str] = []

    def run() -> None:
        try:
            barrier.wait()
            results.append(action())
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    return results


def _work(study_id, rater_ids, seed, barrier, errors):
    from annotation.models import Rater, Study

    rng = random.Random(seed)
    try:
        study = Study.objects.get(pk=study_id)
        raters = list(Rater.objects.filter(pk__in=rater_ids))
        barrier.wait()
        active = list(raters)
        while active:
            r = rng.choice(active)
            a = engine.assignment_next(study=study, rater=r, rng=rng)
            if a is None:
                active.remove(r)
                continue
            if rng.random() < 0.1:
                engine.assignment_skip(assignment=a, rater=r)
                continue
            choice = rng.choice(["left", "right", "tie", "both_bad"])
            engine.assignment_submit(assignment=a, rater=r, choice=choice)
            if rng.random() < 0.05:  # a double submit
                engine.assignment_submit(assignment=a, rater=r, choice=choice)
    except Exception as e:  # pragma: no cover - reported below
        errors.append(repr(e))
    finally:
        connections.close_all()


def test_no_item_gets_more_or_fewer_than_n_ratings_under_concurrent_annotators():
    study = make_study(
        mode="pairwise", n_questions=12, n_llms=4, ratings_per_item=3, repeat_rate=0.05
    )
    raters = [make_rater() for _ in range(24)]
    threads = 12
    barrier = threading.Barrier(threads)
    errors: list[str] = []
    groups = [[r.pk for r in raters[i::threads]] for i in range(threads)]
    with ThreadPoolExecutor(threads) as pool:
        for i, group in enumerate(groups):
            pool.submit(_work, study.pk, group, i, barrier, errors)
    assert errors == []
    firsts = (
        Rating.objects.filter(item__study=study, assignment__is_repeat=False)
        .values("item")
        .annotate(c=Count("id"))
    )
    per_item = {row["item"]: row["c"] for row in firsts}
    assert len(per_item) == study.items.count()
    assert set(per_item.values()) == {3}
    assert not Item.objects.filter(study=study).exclude(n_ratings=3).exists()
    assert not Item.objects.filter(study=study).exclude(n_reserved=0).exists()
    # One rating per assignment even with double submits.
    assert Rating.objects.count() == Assignment.objects.filter(status="submitted").count()


def test_two_simultaneous_submits_of_one_assignment_record_one_rating():
    study = make_study(mode="pairwise", n_questions=1, n_llms=2)
    rater = make_rater()
    a = engine.assignment_next(study=study, rater=rater)
    race(4, lambda: engine.assignment_submit(assignment=a, rater=rater, choice="left"))
    assert Rating.objects.filter(assignment=a).count() == 1
    item = Item.objects.get(pk=a.item_id)
    assert (item.n_ratings, item.n_reserved) == (1, 0)


def test_one_rater_in_two_tabs_gets_one_open_assignment():
    study = make_study(n_questions=3)
    rater = make_rater()
    got = race(6, lambda: engine.assignment_next(study=study, rater=rater).pk)
    assert len(got) == 6
    assert len(set(got)) == 1
    assert Assignment.objects.filter(rater=rater).count() == 1


def test_the_submits_read_takes_the_raters_lock():
    """The item screen's submit reads the exposure and locks its rater in one statement: while
    that transaction is open, nobody else can lock the rater (every service locks it first)."""
    from django.db import OperationalError, transaction

    from annotation.exposure_reads import EXPOSURE_LOCKING_RATER

    study = make_study(mode="pairwise", n_questions=1, n_llms=2)
    rater = make_rater()
    a = engine.assignment_next(study=study, rater=rater)

    def try_lock() -> str:
        try:
            with transaction.atomic(), connection.cursor() as cur:
                cur.execute(
                    "SELECT id FROM annotation_rater WHERE id = %s FOR UPDATE NOWAIT", [rater.pk]
                )
            return "locked"
        except OperationalError:
            return "busy"

    with transaction.atomic():
        got = EXPOSURE_LOCKING_RATER.get(a.public_id)
        assert got.rater.pk == rater.pk
        assert race(1, try_lock) == ["busy"]
    assert race(1, try_lock) == ["locked"]


def test_two_simultaneous_posts_of_one_item_record_one_rating_and_serve_one_next():
    """Through the item screen (the submit's locked read): a double click sent twice at once."""
    from django.test import Client

    from .conftest import crowd_enter

    study = make_study(mode="pairwise", n_questions=2, n_llms=3, admit_crowd=True)
    first = Client()
    entered = crowd_enter(first, study, {"PROLIFIC_PID": "w-double", "STUDY_ID": "s"})
    url = entered["Location"]
    clients = [first, Client()]
    clients[1].cookies = first.cookies

    def post() -> int:
        c = clients.pop()
        return c.post(url, {"choice": "left"}, headers={"HX-Request": "true"}).status_code

    assert sorted(race(2, post)) == [200, 200]
    assert Rating.objects.count() == 1
    assert Assignment.objects.filter(status="served").count() == 1
    item = Item.objects.get(pk=Rating.objects.get().item_id)
    assert (item.n_ratings, item.n_reserved) == (1, 0)
    assert sum(Item.objects.values_list("n_reserved", flat=True)) == 1
