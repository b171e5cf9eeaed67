"""On PostgreSQL the report reads ratings through COPY ... TO STDOUT; the frames must be exactly
what the ORM path (tuples into pandas) gives, whatever the names and texts contain."""

from __future__ import annotations

import pandas as pd
import pytest
from django.db import connection

from annotation.models import LLM, Assignment, Question, Rater
from ranking import selectors

pytestmark = pytest.mark.django_db

HOSTILE = 'model, "quoted"\nnew line \\N =1+1'


@pytest.fixture(autouse=True)
def _postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("COPY is the PostgreSQL path; elsewhere the ORM path is the only one")


def _both(study, monkeypatch) -> tuple[selectors.StudyFrames, selectors.StudyFrames]:
    monkeypatch.setattr(selectors, "USE_COPY", True)
    copied = selectors.study_frames(study)
    monkeypatch.setattr(selectors, "USE_COPY", False)
    return copied, selectors.study_frames(study)


def _same(a: selectors.StudyFrames, b: selectors.StudyFrames) -> None:
    pd.testing.assert_frame_equal(a.star_df, b.star_df, check_exact=True)
    pd.testing.assert_frame_equal(a.pair_df, b.pair_df, check_exact=True)


def _make_hostile(built) -> None:
    LLM.objects.filter(pk=built.items[0].response_a.llm_id).update(name=HOSTILE)
    Question.objects.filter(pk=built.items[0].question_id).update(
        external_id=selectors.COPY_NULL + "x", task_type=""
    )
    Assignment.objects.filter(study=built.study).update(active_ms=None)
    Assignment.objects.filter(pk=built.ratings[0].assignment_id).update(active_ms=1234)


def test_star_frames_are_the_same_through_copy(star_study, monkeypatch):
    _make_hostile(star_study)
    copied, orm = _both(star_study.study, monkeypatch)
    _same(copied, orm)
    assert HOSTILE in set(copied.star_df["model"])
    assert copied.star_df["duration_s"].notna().sum() > 0


def test_pairwise_frames_are_the_same_through_copy(pair_study, monkeypatch):
    _make_hostile(pair_study)
    copied, orm = _both(pair_study.study, monkeypatch)
    _same(copied, orm)
    assert HOSTILE in set(copied.pair_df["model_a"]) | set(copied.pair_df["model_b"])
    assert len(copied.pair_df) == len(pair_study.ratings)


def test_a_study_without_ratings_reads_empty_frames(star_study, monkeypatch):
    Rater.objects.all().delete()
    copied, orm = _both(star_study.study, monkeypatch)
    _same(copied, orm)
    assert copied.star_df.empty and copied.pair_df.empty
