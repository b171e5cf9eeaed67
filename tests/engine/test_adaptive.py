"""Adaptive assignment (issue 15 item 2): the next human exposure goes where the ranking is least
certain, through priorities refreshed away from the request path, with exact N, blinding, hidden
repeats and checks unchanged."""

from __future__ import annotations

import random

import numpy as np
from django.core.cache import cache
from django.db.models import F

from annotation import engine, engine_adaptive, engine_priority
from annotation.models import Assignment, Item, Study

from .conftest import answer, make_rater, make_study, mark_checks, run_to_the_end


def llms(item: Item) -> tuple[str, str]:
    return item.response_a.llm.name, item.response_b.llm.name


def prefer_model_0(a: Assignment, rater, flip: list[int]) -> None:
    """secret-model-0 wins every game; the other two models split theirs evenly."""
    name_a, name_b = llms(a.item)
    if "secret-model-0" in (name_a, name_b):
        winner_is_a = name_a == "secret-model-0"
    else:
        flip[0] += 1
        winner_is_a = flip[0] % 2 == 0
    left = winner_is_a == a.left_is_a
    engine.assignment_submit(assignment=a, rater=rater, choice="left" if left else "right")


def test_the_refresh_puts_the_overlapping_pair_first(db):
    study = make_study(
        mode="pairwise", n_questions=12, n_llms=3, assignment_mode="adaptive", ratings_per_item=5
    )
    raters = [make_rater() for _ in range(3)]
    rng, flip = random.Random(2), [0]
    for r in raters:
        while (a := engine.assignment_next(study=study, rater=r, rng=rng)) is not None:
            prefer_model_0(a, r, flip)
    assert engine_adaptive.study_priorities_refresh(study) > 0
    by_pair: dict[tuple[str, str], set[float]] = {}
    for item in Item.objects.filter(study=study).select_related(
        "response_a__llm", "response_b__llm"
    ):
        by_pair.setdefault(tuple(sorted(llms(item))), set()).add(item.priority)
    close = by_pair[("secret-model-1", "secret-model-2")]
    assert len(close) == 1 and close.pop() >= 0.2
    for pair, values in by_pair.items():
        if "secret-model-0" in pair:
            assert values == {0.0}, pair


def test_the_adaptive_pick_serves_the_highest_priority_first(db):
    study = make_study(n_questions=10, n_llms=2, assignment_mode="adaptive", ratings_per_item=2)
    items = list(Item.objects.filter(study=study).order_by("?"))
    for k, item in enumerate(items[:3]):
        Item.objects.filter(pk=item.pk).update(priority=0.5 - 0.1 * k)
    rater, other = make_rater(), make_rater()
    served = []
    for _ in range(3):
        a = engine.assignment_next(study=study, rater=rater)
        served.append(a.item_id)
        answer(a, rater)
    assert served == [i.pk for i in items[:3]]
    # Equal priorities: the least loaded first, so a second rater starts on fresh items too.
    b = engine.assignment_next(study=study, rater=other)
    assert b.item_id == items[0].pk  # still the top priority, and it has room for one more
    answer(b, other)
    c = engine.assignment_next(study=study, rater=other)
    assert c.item_id == items[1].pk


def test_adaptive_keeps_exact_n_blinding_repeats_and_checks(db):
    study = make_study(
        mode="pairwise",
        n_questions=20,
        n_llms=4,
        ratings_per_item=3,
        assignment_mode="adaptive",
        repeat_rate=0.05,
        check_rate=0.05,
    )
    checks = set(mark_checks(study, 8))
    raters = [make_rater() for _ in range(5)]
    flip, done = [0], [0]

    def respond(a: Assignment, r) -> None:
        prefer_model_0(a, r, flip)
        done[0] += 1
        if done[0] % 15 == 0:
            engine_adaptive.study_priorities_refresh(study)
        over = (
            Item.objects.filter(study=study)
            .alias(load=F("n_ratings") + F("n_reserved"))
            .filter(load__gt=3)
        )
        assert not over.exists()

    run_to_the_end(study, raters, random.Random(9), respond)
    regular = Item.objects.filter(study=study, check_kind="")
    assert set(regular.values_list("n_ratings", "n_reserved")) == {(3, 0)}
    exposures = Assignment.objects.filter(study=study)
    assert exposures.filter(is_repeat=True).exists()
    assert exposures.filter(item_id__in=checks).exists()
    assert set(exposures.values_list("left_is_a", flat=True)) == {True, False}
    # Complete items sink to the end of the pick's index at the next refresh.
    engine_adaptive.study_priorities_refresh(study)
    assert set(regular.values_list("priority", flat=True)) == {engine_adaptive.COMPLETE}


def test_submits_queue_a_refresh_every_k_and_uniform_studies_none(
    db, settings, django_capture_on_commit_callbacks, monkeypatch
):
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.immediate.ImmediateBackend"}}
    cache.clear()
    monkeypatch.setattr(engine_adaptive, "REFRESH_EVERY", 3)
    uniform = make_study(n_questions=4, n_llms=2)
    adaptive = make_study(mode="pairwise", n_questions=6, n_llms=3, assignment_mode="adaptive")
    rater = make_rater()
    with django_capture_on_commit_callbacks() as uniform_callbacks:
        a = engine.assignment_next(study=uniform, rater=rater)
        answer(a, rater)
    assert uniform_callbacks == []
    calls = []
    monkeypatch.setattr(
        engine_adaptive, "study_priorities_refresh", lambda study: calls.append(study.pk)
    )
    for _ in range(7):
        with django_capture_on_commit_callbacks(execute=True):
            a = engine.assignment_next(study=adaptive, rater=rater)
            answer(a, rater)
    # The first submit (nothing refreshed yet), then every third.
    assert calls == [adaptive.pk] * 3


def test_priorities_are_pure_and_rank_uncertain_pairs_higher():
    rng = np.random.default_rng(0)
    # Model 0 beats 1 and 2 always; 1 and 2 split.
    a = np.array([0] * 30 + [0] * 30 + [1] * 30)
    b = np.array([1] * 30 + [2] * 30 + [2] * 30)
    s = np.array([1.0] * 60 + [1.0, 0.0] * 15)
    u = engine_priority.pair_uncertainty(a, b, s, 3, rng=rng)
    assert u[1, 2] > 0.3 and u[0, 1] < 0.05 and u[0, 2] < 0.05
    assert np.allclose(u, u.T)
    empty = engine_priority.pair_uncertainty(a[:0], b[:0], s[:0], 3, rng=rng)
    assert np.all(empty == 0.5)
    star = engine_priority.star_uncertainty(
        np.array([0, 0, 0, 1, 1, 1, 2, 2, 2]), np.array([1, 1, 2, 5, 5, 4, 5, 4, 5.0]), 3
    )
    assert star[0] < 0.05 and star[1] > 0.2 and star[2] > 0.2


def test_a_new_study_is_uniform_by_default(db):
    assert make_study().assignment_mode == Study.AssignmentMode.UNIFORM
