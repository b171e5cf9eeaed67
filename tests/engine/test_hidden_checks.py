"""Hidden quality checks (issue 15 item 3): gold items and attention checks served at the study's
check_rate like the repeats, outside the exact-N coverage, indistinguishable from regular items."""

from __future__ import annotations

import random
from datetime import timedelta

from django.urls import reverse
from django.utils import timezone
from scipy.stats import binom

from annotation import engine, outcome
from annotation.models import Assignment, Item, Rating

from .conftest import answer, make_rater, make_study, mark_checks, run_to_the_end


def test_the_regular_pick_never_serves_a_check_item(db):
    study = make_study(n_questions=6, n_llms=3, ratings_per_item=2, check_rate=0.0)
    checks = mark_checks(study, 3)
    run_to_the_end(study, [make_rater() for _ in range(3)], random.Random(1))
    assert not Assignment.objects.filter(item_id__in=checks).exists()
    assert set(Item.objects.exclude(pk__in=checks).values_list("n_ratings", flat=True)) == {2}


def test_checks_are_served_at_the_rate_once_per_rater_and_outside_coverage(db):
    study = make_study(n_questions=40, n_llms=3, ratings_per_item=3, check_rate=0.1)
    checks = set(mark_checks(study, 30, kind="attention"))
    raters = [make_rater() for _ in range(4)]
    run_to_the_end(study, raters, random.Random(20261123))

    served = Assignment.objects.filter(study=study, item_id__in=checks)
    per_rater = {}
    for rater_id, item_id in served.values_list("rater_id", "item_id"):
        assert item_id not in per_rater.setdefault(rater_id, set()), "a check twice to a rater"
        per_rater[rater_id].add(item_id)
    # Never two hidden exposures in a row.
    for r in raters:
        kinds = [a.item_id in checks for a in Assignment.objects.filter(rater=r).order_by("seq")]
        assert not any(x and y for x, y in zip(kinds, kinds[1:], strict=False))
    # About check_rate of the exposures (those after a regular one are the eligible ones).
    total = Assignment.objects.filter(study=study).count()
    lo, hi = binom.interval(0.999, total, 0.1)
    assert lo * 0.85 <= served.count() <= hi, (served.count(), total)
    # Outside exact N: regular items have exactly N, check items hold no counters.
    regular = Item.objects.filter(study=study, check_kind="")
    assert set(regular.values_list("n_ratings", "n_reserved")) == {(3, 0)}
    assert set(Item.objects.filter(pk__in=checks).values_list("n_ratings", "n_reserved")) == {
        (0, 0)
    }
    # Their answers are stored like any other.
    assert Rating.objects.filter(item_id__in=checks).count() == served.count()
    # Unseen checks are not work left: every annotator has finished.
    assert {outcome.rater_outcome(study=study, rater=r).state for r in raters} == {
        outcome.NO_MORE_WORK
    }
    progress = engine.study_progress(study=study)
    assert progress["items_total"] == regular.count()
    assert progress["items_complete"] == regular.count()
    assert progress["ratings"] == regular.count() * 3
    assert progress["percent"] == 100


def test_a_check_rate_without_check_items_changes_nothing(db):
    study = make_study(n_questions=8, n_llms=3, ratings_per_item=2, check_rate=0.5)
    run_to_the_end(study, [make_rater() for _ in range(3)], random.Random(5))
    assert set(Item.objects.filter(study=study).values_list("n_ratings", flat=True)) == {2}
    assert Assignment.objects.filter(study=study).count() == 8 * 3 * 2


def test_pairwise_checks_are_shown_both_ways(db):
    study = make_study(mode="pairwise", n_questions=4, n_llms=3, check_rate=0.5)
    checks = set(mark_checks(study, 6))
    run_to_the_end(study, [make_rater() for _ in range(8)], random.Random(7))
    sides = set(Assignment.objects.filter(item_id__in=checks).values_list("left_is_a", flat=True))
    assert sides == {True, False}
    # Stored canonically: "left" means A when A was on the left.
    for a in Assignment.objects.filter(item_id__in=checks).select_related("rating"):
        assert a.rating.choice == ("A" if a.left_is_a else "B")


def serve_a_check(study, rater, rng):
    """Answer regular items until the engine serves a check; returns that exposure."""
    for _ in range(200):
        a = engine.assignment_next(study=study, rater=rater, rng=rng)
        assert a is not None
        if a.item.check_kind:
            return a
        answer(a, rater)
    raise AssertionError("no check served")


def test_skipping_or_losing_a_check_gives_nothing_back_and_it_can_be_retaken(db):
    study = make_study(n_questions=30, n_llms=3, ratings_per_item=2, check_rate=0.5)
    mark_checks(study, 5)
    rater = make_rater()
    rng = random.Random(3)
    a = serve_a_check(study, rater, rng)
    engine.assignment_skip(assignment=a, rater=rater)
    assert Item.objects.get(pk=a.item_id).n_reserved == 0
    b = serve_a_check(study, rater, rng)
    later = timezone.now() + timedelta(seconds=study.reservation_timeout + 5)
    assert engine.assignments_expire(study=study, now=later) == 1
    assert Item.objects.get(pk=b.item_id).n_reserved == 0
    again = engine.assignment_next(study=study, rater=rater, rng=rng, now=later)
    assert again.pk == b.pk and again.status == Assignment.Status.SERVED
    answer(again, rater)
    assert Item.objects.get(pk=b.item_id).n_ratings == 0
    assert Rating.objects.filter(assignment=again).exists()


def test_a_check_looks_like_any_item_to_the_annotator(annotator_client, annotator_user, organizer):
    study = make_study(owner=organizer, n_questions=30, check_rate=0.5)
    checks = mark_checks(study, 10, kind="attention")
    Item.objects.filter(pk__in=checks).update(check_answer={"scores": {"secret-marker": [1, 1]}})
    rater = annotator_user.rater
    a = serve_a_check(study, rater, random.Random(11))
    page = annotator_client.get(reverse("annotate:assignment", args=[a.public_id]))
    assert page.status_code == 200
    body = page.content.decode().lower()
    for word in ("attention", "gold", "check_kind", "secret-marker", "quality check"):
        assert word not in body, word
