from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation.models import Assignment
from ranking.selectors import criterion_max, criterion_min, study_filter_choices, study_frames
from ranking.stats.schema import PAIR_COLUMNS, STAR_COLUMNS, coerce_pair, coerce_star

from .conftest import OBJECTIVE, PAIR_CHOICES, STAR_SCORES, SUBJECTIVE, T0

pytestmark = pytest.mark.django_db


def test_star_frame_has_exactly_the_contract_columns_and_dtypes(star_study):
    star = study_frames(star_study.study).star_df
    assert tuple(star.columns) == STAR_COLUMNS
    assert star["rating_id"].dtype == np.int64
    assert star["item_id"].dtype == np.int64
    assert star["score"].dtype == np.float64
    assert star["length"].dtype == np.int64
    assert star["is_repeat"].dtype == bool
    assert str(star["submitted_at"].dtype) == "datetime64[ns, UTC]" or str(
        star["submitted_at"].dtype
    ).endswith(", UTC]")
    assert str(star["hint_shown"].dtype) == "boolean"
    assert star["duration_s"].dtype == np.float64
    # The statistics accept it as it is.
    coerce_star(star)


def test_star_frame_has_one_row_per_rating_and_criterion_with_pseudonyms_and_models(star_study):
    star = study_frames(star_study.study).star_df
    # 4 raters x (3 objective items x 2 criteria + 3 subjective items x 4 criteria), and the
    # repeat of an objective item.
    assert len(star) == 4 * (3 * 2 + 3 * 4) + 2
    assert set(star["criterion"]) == {*OBJECTIVE, *SUBJECTIVE}
    pseudonyms = {r.pseudonym for r in star_study.raters.values()}
    assert set(star["rater_id"]) == pseudonyms
    assert not set(star["rater_id"]) & {r.name for r in star_study.raters.values()}
    assert set(star["model"]) == {"model-x", "model-y", "model-z"}
    assert set(star["rater_kind"]) == {"human", "judge"}
    assert set(star["pool"]) == {"onsite", "crowd", "public", "judge"}
    assert set(star["task_type"]) == {"Math", "Law"}
    assert set(star["question_id"]) == {"Q1", "Q2"}
    onsite = star_study.raters["onsite"].pseudonym
    got = star[(star["rater_id"] == onsite) & ~star["is_repeat"] & (star["question_id"] == "Q1")]
    got = got.pivot_table(index="model", columns="criterion", values="score")
    expected = [list(r) for r in STAR_SCORES["onsite"]]
    assert got[["correctness", "explanation_correctness"]].to_numpy().tolist() == expected
    repeat = star[star["is_repeat"]]
    assert set(repeat["rater_id"]) == {onsite}
    assert set(repeat["model"]) == {"model-x"}
    assert repeat["submitted_at"].iloc[0] == pd.Timestamp(T0 + dt.timedelta(days=2))
    # Length is the answer's length in characters; duration is submit minus serve.
    lengths = star.groupby("model")["length"].first().to_dict()
    assert lengths == {"model-x": 70, "model-y": 140, "model-z": 210}
    assert set(star["duration_s"]) == {30.0}
    public = star_study.raters["public"].pseudonym
    assert not star.loc[star["rater_id"] == public, "hint_shown"].any()
    assert star.loc[star["rater_id"] == onsite, "hint_shown"].all()


def test_pair_frame_has_exactly_the_contract_columns_and_canonical_choices(pair_study):
    pair = study_frames(pair_study.study).pair_df
    assert tuple(pair.columns) == PAIR_COLUMNS
    assert pair["len_a"].dtype == np.int64 and pair["len_b"].dtype == np.int64
    assert pair["left_is_a"].dtype == bool
    coerce_pair(pair)
    assert len(pair) == 10
    assert list(pair["choice"]) == [c for _, _, c, _ in PAIR_CHOICES] + ["A"]
    assert list(zip(pair["model_a"], pair["model_b"], strict=True))[:3] == [
        ("model-x", "model-y"),
        ("model-x", "model-z"),
        ("model-y", "model-z"),
    ]
    assert list(pair["len_a"])[:3] == [70, 70, 140]
    assert list(pair["len_b"])[:3] == [140, 210, 210]
    repeat = pair[pair["is_repeat"]].iloc[0]
    assert repeat["rater_kind"] == "judge" and not repeat["left_is_a"]
    # A star frame of a pairwise study is empty but still has its columns.
    star = study_frames(pair_study.study).star_df
    assert star.empty and tuple(star.columns) == STAR_COLUMNS


def test_frames_leave_out_unsubmitted_assignments(star_study):
    item = star_study.items[0]
    Assignment.objects.create(
        study=star_study.study,
        item=item,
        rater=star_study.raters["judge"],
        is_repeat=True,
        repeat_of=star_study.ratings[0].assignment,
    )
    assert len(study_frames(star_study.study).star_df) == 4 * 18 + 2


def test_frames_are_read_with_a_constant_number_of_queries(star_study, pair_study):
    with CaptureQueriesContext(connection) as small:
        study_frames(star_study.study)
    with CaptureQueriesContext(connection) as other:
        study_frames(pair_study.study)
    assert len(small) <= 6
    assert len(other) <= 6


def test_an_empty_study_gives_empty_frames_with_the_contract_columns(
    organizer, small_dataset, star_rubric
):
    from annotation.services import study_create

    study = study_create(name="Empty", dataset=small_dataset, mode="star", rubric=star_rubric)
    frames = study_frames(study)
    assert frames.star_df.empty and tuple(frames.star_df.columns) == STAR_COLUMNS
    assert frames.pair_df.empty and tuple(frames.pair_df.columns) == PAIR_COLUMNS


def test_filter_choices_and_full_marks_come_from_the_study(star_study):
    choices = study_filter_choices(star_study.study)
    assert [p for p, _ in choices["pools"]] == ["crowd", "judge", "onsite", "public"]
    assert [t for t, _ in choices["task_types"]] == ["Law", "Math"]
    assert "correctness" in dict(choices["criteria"])
    full = criterion_max(star_study.study)
    assert full["correctness"] == 3.0 and full["explanation_correctness"] == 2.0
    assert full["accuracy"] == 5.0
    assert set(criterion_min(star_study.study).values()) == {1.0}


def test_the_report_cuts_star_intervals_to_the_rubric_of_the_study(star_study):
    from ranking.services import report_build

    report = report_build(study=star_study.study, use_cache=False)
    meta = report.tables["meta"]
    assert meta["criterion_min"] == criterion_min(star_study.study)
    star = report.table("leaderboard_star")
    top = star["criterion"].map(criterion_max(star_study.study))
    inside = star["criterion"] == "overall"
    inside |= (star["ci_low"] >= 1) & (star["ci_high"] <= top) | star["ci_low"].isna()
    assert inside.all()
    assert meta["star_ci_clipped"] > 0


def test_label_columns_are_categoricals_of_the_names_used_sorted(star_study, pair_study):
    for frames in (study_frames(star_study.study), study_frames(pair_study.study)):
        for df in (frames.star_df, frames.pair_df):
            if df.empty:
                continue
            for col in ("rater_id", "rater_kind", "pool", "question_id", "task_type"):
                cats = list(df[col].cat.categories)
                assert cats == sorted(set(df[col].astype(str))), col
    pair = study_frames(pair_study.study).pair_df
    models = sorted({*pair["model_a"].astype(str), *pair["model_b"].astype(str)})
    assert list(pair["model_a"].cat.categories) == models
    assert list(pair["model_b"].cat.categories) == models


def test_the_report_of_the_frames_is_the_report_of_the_same_names_as_strings(star_study):
    from ranking.stats import build_report, report_to_jsonable

    frames = study_frames(star_study.study)
    as_text = dict.fromkeys(("rater_id", "rater_kind", "pool", "question_id", "task_type"), str)
    star_text = frames.star_df.astype({**as_text, "model": str, "criterion": str})

    def report(star: pd.DataFrame) -> dict:
        out = report_to_jsonable(build_report(star, None, n_bootstrap=50, n_shuffles=5))
        for key in ("seconds", "timings", "cpu_timings"):
            out["meta"].pop(key)
        return out

    assert report(frames.star_df) == report(star_text)
