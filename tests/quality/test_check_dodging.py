"""A crowd worker who skips the attention checks: their text says what to answer, so skipping
them is the one way to dodge them. The organizer's quality table counts such a skip as a failed
attention check (and flags it)."""

from __future__ import annotations

import random

import pytest

from annotation import engine
from annotation.models import Assignment
from annotation.quality import study_quality
from tests.engine.conftest import answer, make_rater, make_study, mark_checks

pytestmark = pytest.mark.django_db


def _rate_dodging(study, rater, *, skip_kind: str) -> int:
    """Answer every regular item and skip every check of `skip_kind`; how many were skipped."""
    rng, skipped = random.Random(5), 0
    for _ in range(200):
        a = engine.assignment_next(study=study, rater=rater, rng=rng)
        if a is None:
            break
        if a.item.check_kind == skip_kind:
            engine.assignment_skip(assignment=a, rater=rater)
            skipped += 1
        else:
            answer(a, rater)
    return skipped


def _row(study, rater) -> dict:
    table = study_quality(study)
    return table[table["rater_id"] == rater.pseudonym].iloc[0].to_dict()


def test_skipping_every_attention_check_is_flagged_as_failing_them(organizer):
    study = make_study(owner=organizer, n_questions=30, check_rate=0.5, admit_crowd=True)
    mark_checks(study, 4, kind="attention")
    dodger = make_rater(pool="crowd")
    skipped = _rate_dodging(study, dodger, skip_kind="attention")
    assert skipped >= 2
    assert Assignment.objects.filter(rater=dodger, status="skipped").count() == skipped
    row = _row(study, dodger)
    assert row["n_attention"] == skipped and row["attention_failed"] == skipped
    assert "attention" in row["flags"]


def _rate_skipping_repeats(study, rater) -> tuple[int, int]:
    """Answer every first showing and skip every hidden repeat: (answered, repeats skipped)."""
    rng, answered, skipped = random.Random(9), 0, 0
    for _ in range(400):
        a = engine.assignment_next(study=study, rater=rater, rng=rng)
        if a is None:
            break
        if a.is_repeat:
            engine.assignment_skip(assignment=a, rater=rater)
            skipped += 1
        else:
            answer(a, rater)
            answered += 1
    return answered, skipped


def test_skipping_the_hidden_repeats_is_flagged(organizer):
    """A worker who recognises repeats and skips them would never be measured for
    self-consistency: the quality table flags the skip; an annotator who rates the repeats is
    not flagged."""
    study = make_study(owner=organizer, n_questions=30, repeat_rate=0.3, admit_crowd=True)
    dodger, honest = make_rater(pool="crowd"), make_rater(pool="crowd")
    answered, skipped = _rate_skipping_repeats(study, dodger)
    assert answered >= 10 and skipped >= 1
    run_honest = random.Random(3)
    for _ in range(400):
        a = engine.assignment_next(study=study, rater=honest, rng=run_honest)
        if a is None:
            break
        answer(a, honest)
    assert Assignment.objects.filter(rater=honest, is_repeat=True, status="submitted").exists()
    assert "repeat_skipped" in _row(study, dodger)["flags"].split()
    assert "repeat_skipped" not in _row(study, honest)["flags"].split()
