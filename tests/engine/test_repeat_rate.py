"""Hidden repeats are a documented share of exposures (issue #11 item 5), checked by simulation.

The rule (docs/annotators.md): an exposure is *eligible* for a repeat when the rater's previous
exposure was not a repeat and a submitted first rating of theirs, never repeated, lies at least
REPEAT_GAP + 1 exposures back with at least RECENT_EDITS submissions of theirs after it, and the
study still has a new item for them. Each eligible
exposure is a repeat with probability study.repeat_rate. The excess the issue measured came from
annotators who kept asking after the study had nothing new for them: the draw still served
repeats there, and only repeats, so in short sessions they made up 10% of eligible exposures.
"""

from __future__ import annotations

import random

import pytest
from scipy.stats import binom

from annotation import engine
from annotation.models import Assignment

from .conftest import answer, make_rater, make_study, run_to_the_end


def repeat_share(study) -> tuple[int, int]:
    """(repeats, eligible exposures), counted as the issue counted them, per rater in order."""
    repeats = eligible = 0
    rows = Assignment.objects.filter(study=study).order_by("rater_id", "seq")
    by_rater: dict[int, list[Assignment]] = {}
    for a in rows:
        by_rater.setdefault(a.rater_id, []).append(a)
    for exposures in by_rater.values():
        repeated: set[int] = set()
        for i, a in enumerate(exposures):
            before = exposures[:i]
            submitted = [o.seq for o in before if o.status == "submitted"]
            # Closed to its rater: RECENT_EDITS later submissions (engine_hidden.repeat_origin).
            closed = submitted[-engine.RECENT_EDITS] if len(submitted) >= engine.RECENT_EDITS else 0
            possible = (not before or not before[-1].is_repeat) and any(
                o.status == "submitted"
                and not o.is_repeat
                and o.pk not in repeated
                and o.seq < closed
                for o in before[: max(0, i - engine.REPEAT_GAP)]
            )
            if a.is_repeat:
                assert possible, "a repeat where none was allowed"
                repeated.add(a.repeat_of_id)
            if possible:
                eligible += 1
                repeats += a.is_repeat
    return repeats, eligible


def within_binomial(repeats: int, n: int, p: float, alpha: float = 0.001) -> bool:
    lo, hi = binom.interval(1 - alpha, n, p)
    return lo <= repeats <= hi


# A database-independent simulation of 1,200 ratings (the draw, not the SQL): it runs in the
# SQLite pass, as test_engine.py's 2,000-rating one does; the test below, whose excess came from
# what the study has left for a rater, runs on both.
@pytest.mark.database_independent
def test_a_long_study_serves_repeats_at_the_study_rate(db):
    study = make_study(n_questions=100, n_llms=3, ratings_per_item=4, repeat_rate=0.02)
    raters = [make_rater() for _ in range(4)]
    run_to_the_end(study, raters, random.Random(20261123))
    repeats, eligible = repeat_share(study)
    assert eligible > 1000
    assert within_binomial(repeats, eligible, 0.02), (repeats, eligible)


def test_asking_again_after_the_study_ran_out_serves_no_repeats(db):
    # Short sessions: 20 annotators share 60 items x 3 ratings, then each keeps asking for more,
    # as a crowd client polling the next page does. A high rate makes the excess unmistakable.
    study = make_study(n_questions=20, n_llms=3, ratings_per_item=3, repeat_rate=0.1)
    raters = [make_rater() for _ in range(20)]
    rng = random.Random(7)
    run_to_the_end(study, raters, rng)
    before = Assignment.objects.filter(study=study).count()
    for r in raters:
        for _ in range(30):
            a = engine.assignment_next(study=study, rater=r, rng=rng)
            if a is not None:
                answer(a, r)
    assert Assignment.objects.filter(study=study).count() == before
    repeats, eligible = repeat_share(study)
    assert within_binomial(repeats, eligible, 0.1), (repeats, eligible)
