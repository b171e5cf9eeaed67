"""The report's quality tables (annotator reliability, gold accuracy per pool, data quality)
follow the report's filters (pool, time range, task type, criteria), as every other table does."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db.models import Max

from annotation.models import ParseStatus, Rating, Score
from ranking.services import ReportFilters, report_build
from tests.quality.conftest import T0 as CROWD_T0
from tests.quality.conftest import crowd  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db


def _report(study, **filters):
    return report_build(study=study, filters=ReportFilters.build(**filters), use_cache=False)


def _out_of_range(report) -> int:
    table = report.table("data_quality")
    return int(table.loc[table["criterion"] == "all", "n"].iloc[0])


def _unparsed(report) -> int:
    table = report.table("data_quality")
    return int(table.loc[table["issue"] == "unparsed judge output", "n"].iloc[0])


def test_gold_and_reliability_follow_the_time_range(crowd):  # noqa: F811
    everyone = _report(crowd.study)
    assert everyone.table("gold_by_pool").set_index("check_kind").loc["gold", "n_ratings"] == 15
    # The raters rate one after another: this range holds the first two raters' work only.
    last = Rating.objects.filter(rater=crowd.raters["good2"]).aggregate(
        t=Max("assignment__submitted_at")
    )
    end = last["t"] + dt.timedelta(seconds=1)
    assert end > CROWD_T0
    early = _report(crowd.study, end=end)
    gold = early.table("gold_by_pool").set_index("check_kind")
    assert gold.loc["gold", "n_ratings"] == 6 and gold.loc["gold", "n_passed"] == 6
    assert gold.loc["attention", "n_ratings"] == 2
    first_two = {crowd.raters[n].pseudonym for n in ("good1", "good2")}
    assert set(early.table("annotator_reliability")["rater_id"]) == first_two
    assert len(set(everyone.table("annotator_reliability")["rater_id"])) == 5


def test_gold_and_reliability_follow_the_pool_filter(crowd):  # noqa: F811
    other_pool = _report(crowd.study, pools=["onsite"])
    assert other_pool.table("gold_by_pool").empty
    assert other_pool.table("annotator_reliability").empty
    same_pool = _report(crowd.study, pools=["crowd"])
    assert same_pool.table("gold_by_pool").set_index("check_kind").loc["gold", "n_ratings"] == 15


def test_data_quality_counts_follow_pool_criteria_and_time(star_study):
    onsite = star_study.raters["onsite"]
    scores = Score.objects.filter(rating__rater=onsite, rating__assignment__is_repeat=False)
    n_onsite = scores.update(out_of_range=True)
    assert n_onsite > 0
    public = Rating.objects.filter(rater=star_study.raters["public"]).order_by("id")
    Rating.objects.filter(pk=public[0].pk).update(parse_status=ParseStatus.UNPARSED)

    everything = _report(star_study.study)
    assert _out_of_range(everything) == n_onsite
    assert _unparsed(everything) == 1
    crowd_only = _report(star_study.study, pools=["crowd"])
    assert _out_of_range(crowd_only) == 0 and _unparsed(crowd_only) == 0
    assert _out_of_range(_report(star_study.study, pools=["onsite"])) == n_onsite
    n_fluency = scores.filter(criterion__key="fluency").count()
    assert 0 < n_fluency < n_onsite
    assert _out_of_range(_report(star_study.study, criteria=["fluency"])) == n_fluency
    # The onsite rater rated first (minutes 1-6): a range after that holds none of its scores.
    later = _report(star_study.study, start=star_study.ratings[6].assignment.submitted_at)
    assert _out_of_range(later) == 0 and _unparsed(later) == 1
