"""Flags on constructed annotators, exclusions that change the report and are listed in it, and
check ratings kept out of the model statistics but in the exports."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from annotation import quality
from annotation.models import Exclusion, Rating
from ranking.selectors import study_frames
from ranking.services import report_build

pytestmark = pytest.mark.django_db


def _flags(crowd) -> dict[str, str]:
    table = quality.study_quality(crowd.study)
    names = {r.pseudonym: n for n, r in crowd.raters.items()}
    return {names[row.rater_id]: row.flags for row in table.itertuples()}


def test_flags_name_the_straight_liner_the_speeder_and_the_gold_failer(crowd):
    flags = _flags(crowd)
    assert "straight_lining" in flags["lefty"]
    assert "attention" in flags["lefty"]
    assert flags["speeder"].split() == ["too_fast"]
    assert flags["goldfail"].split() == ["gold"]
    assert flags["good1"] == flags["good2"] == ""


def test_a_speeder_claiming_a_long_active_time_is_still_too_fast(crowd):
    # The page's active time is the client's word: 10 minutes claimed on items shown 0.5 s.
    from annotation.models import Assignment

    lied = Assignment.objects.filter(rater=crowd.raters["speeder"]).update(active_ms=600_000)
    assert lied > 10
    assert _flags(crowd)["speeder"].split() == ["too_fast"]
    Assignment.objects.filter(rater=crowd.raters["good1"]).update(active_ms=600_000)
    assert _flags(crowd)["good1"] == ""  # an honest long time stays long (capped at 30 s+)


def test_check_ratings_stay_out_of_model_statistics(crowd):
    frames = study_frames(crowd.study)
    check_ids = {g.pk for g in crowd.gold} | {crowd.attention.pk}
    assert not set(frames.pair_df["item_id"]) & check_ids
    assert len(frames.pair_df) == 5 * len(crowd.items)
    report = report_build(study=crowd.study, use_cache=False)
    models = set(report.table("leaderboard_points")["model"])
    assert models == {"m-good", "m-mid", "m-bad"}  # no "[attention check]" model


def test_exports_keep_check_ratings_marked_with_check_kind(crowd, organizer_client):
    url = reverse("organize:study_download", args=[crowd.study.pk, "ratings", "jsonl"])
    rows = [
        json.loads(line)
        for line in b"".join(organizer_client.get(url).streaming_content).splitlines()
    ]
    kinds = [r["check_kind"] for r in rows]
    assert len(rows) == Rating.objects.filter(item__study=crowd.study).count()
    assert kinds.count("gold") == 5 * 3 and kinds.count("attention") == 5


def test_exclusion_drops_ratings_from_the_report_and_is_listed(crowd, organizer, organizer_client):
    before = report_build(study=crowd.study)
    lefty = crowd.raters["lefty"]
    url = reverse("organize:study_exclusion", args=[crowd.study.pk, "exclude"])
    response = organizer_client.post(url, {"rater": lefty.pseudonym, "reason": "straight_lining"})
    assert response.status_code == 302
    exclusion = Exclusion.objects.get(study=crowd.study)
    assert (exclusion.rater, exclusion.created_by) == (lefty, organizer)
    # Nothing deleted: the raw ratings are all still there.
    assert Rating.objects.filter(rater=lefty).count() == len(crowd.items) + 4

    after = report_build(study=crowd.study)  # the cache must not serve the old snapshot
    assert after.meta["n_pair_ratings"] == before.meta["n_pair_ratings"] - len(crowd.items)
    listed = after.table("exclusions")
    assert listed.to_dict("records")[0] | {"created_at": None} == {
        "rater_id": lefty.pseudonym, "pool": "crowd", "reason": "straight_lining",
        "n_ratings": len(crowd.items) + 4, "created_at": None,
    }  # fmt: skip
    page = organizer_client.get(reverse("ranking:report", args=[crowd.study.pk]))
    assert lefty.pseudonym in page.content.decode() and "straight_lining" in page.content.decode()
    doc = organizer_client.get(reverse("ranking:report-download", args=[crowd.study.pk, "json"]))
    assert json.loads(doc.content)["tables"]["exclusions"][0]["rater_id"] == lefty.pseudonym

    lift = reverse("organize:study_exclusion", args=[crowd.study.pk, "lift"])
    assert organizer_client.post(lift, {"rater": lefty.pseudonym}).status_code == 302
    again = report_build(study=crowd.study)
    assert again.meta["n_pair_ratings"] == before.meta["n_pair_ratings"]
    assert again.table("exclusions").empty


def test_report_has_reliability_per_annotator_and_gold_accuracy_per_pool(crowd):
    report = report_build(study=crowd.study, use_cache=False)
    rel = report.table("annotator_reliability").set_index("rater_id")["reliability"]
    assert rel[crowd.raters["lefty"].pseudonym] == rel.min()
    gold = report.table("gold_by_pool").set_index("check_kind")
    assert gold.loc["gold", "n_ratings"] == 15 and gold.loc["gold", "n_passed"] == 12
    assert gold.loc["attention", "accuracy"] == pytest.approx(4 / 5)


def test_quality_page_lists_annotators_by_pseudonym_with_flags(crowd, organizer_client):
    page = organizer_client.get(reverse("organize:study_quality", args=[crowd.study.pk]))
    body = page.content.decode()
    assert page.status_code == 200
    for rater in crowd.raters.values():
        assert rater.pseudonym in body and rater.external_id not in body
    assert "straight_lining" in body and "too_fast" in body


def test_quality_and_study_pages_name_pools_and_flags_in_the_pages_language(
    crowd, organizer_client
):
    organizer_client.cookies["django_language"] = "zh-hans"
    url = reverse("organize:study_quality", args=[crowd.study.pk])
    body = organizer_client.get(url).content.decode()
    speeder = crowd.raters["speeder"].pseudonym
    row = re.search(rf'data-rater="{re.escape(speeder)}".*?</tr>', body, re.S).group(0)
    assert "<td>众包</td>" in row and "<td>crowd</td>" not in row
    # The flag in words, its code kept as the cell's title (and as the exclusion's reason).
    assert '<td class="flags" title="too_fast">过快</td>' in row
    study_page = organizer_client.get(reverse("organize:study", args=[crowd.study.pk]))
    progress = study_page.content.decode()
    assert f"<td><code>{speeder}</code></td><td>众包</td>" in progress


@pytest.mark.parametrize(
    "data",
    [
        {"rater": "nobody", "reason": "x"},
        {"rater": "PSEUDO", "reason": ""},
        {"rater": "PSEUDO", "reason": "x" * 501},
        {"rater": "PSEUDO", "reason": "a\x00b"},
    ],
)
def test_bad_exclusions_are_refused_and_write_nothing(crowd, organizer_client, data):
    data = {k: v.replace("PSEUDO", crowd.raters["good1"].pseudonym) for k, v in data.items()}
    url = reverse("organize:study_exclusion", args=[crowd.study.pk, "exclude"])
    assert organizer_client.post(url, data).status_code == 400
    assert not Exclusion.objects.exists()


def test_other_organizers_and_anonymous_cannot_see_or_exclude(crowd, client, other_organizer):
    url = reverse("organize:study_quality", args=[crowd.study.pk])
    assert client.get(url).status_code == 302  # to the login page
    client.force_login(other_organizer)
    assert client.get(url).status_code == 404
    ex = reverse("organize:study_exclusion", args=[crowd.study.pk, "exclude"])
    assert (
        client.post(ex, {"rater": crowd.raters["lefty"].pseudonym, "reason": "x"}).status_code
        == 404
    )
    api = reverse("api-study-quality", args=[crowd.study.pk])
    assert client.get(api).status_code == 404
    assert not Exclusion.objects.exists()


def test_api_lists_quality_and_excludes(crowd, organizer_client):
    rows = organizer_client.get(reverse("api-study-quality", args=[crowd.study.pk])).json()
    assert {r["rater_id"] for r in rows} == {r.pseudonym for r in crowd.raters.values()}
    url = reverse("api-study-exclusions", args=[crowd.study.pk])
    who = crowd.raters["speeder"].pseudonym
    body = {"rater": who, "reason": "too_fast"}
    assert organizer_client.post(url, body, content_type="application/json").status_code == 201
    assert organizer_client.post(url, body, content_type="application/json").status_code == 400
    assert (
        organizer_client.delete(url, {"rater": who}, content_type="application/json").status_code
        == 204
    )
    assert not Exclusion.objects.exists()
