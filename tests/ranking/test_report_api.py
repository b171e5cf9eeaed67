from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from ranking.services import table_names

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(organizer) -> APIClient:
    c = APIClient()
    c.force_authenticate(organizer)
    return c


def report_api(study):
    return reverse("ranking:api-report", args=[study.pk])


def table_api(study, table):
    return reverse("ranking:api-report-table", args=[study.pk, table])


def compare_api():
    return reverse("ranking:api-compare")


def test_the_full_report_has_every_table_as_records(api, star_study):
    response = api.get(report_api(star_study.study))
    assert response.status_code == 200
    body = response.json()
    assert body["study"]["id"] == star_study.study.pk
    assert set(body["tables"]) == set(table_names())
    assert body["meta"]["n_star_ratings"] == 25
    gaps = body["tables"]["gaps"]
    assert {"criterion", "k", "n_items", "n_at_least_k", "share"} <= set(gaps[0])


def test_one_table_with_filters(api, star_study):
    response = api.get(
        table_api(star_study.study, "leaderboard_star"),
        {"pool": ["judge"], "criterion": "correctness"},
    )
    assert response.status_code == 200
    body = response.json()
    assert body["table"] == "leaderboard_star"
    assert body["filters"]["pools"] == ["judge"]
    assert body["columns"][:4] == ["rater_kind", "model", "criterion", "mean"]
    rows = {(r["rater_kind"], r["model"], r["criterion"]): r["mean"] for r in body["rows"]}
    assert rows[("judge", "model-z", "correctness")] == 3.0
    assert {k for k, _, _ in rows} == {"all", "judge"}
    assert {c for _, _, c in rows} == {"correctness", "overall"}


def test_several_values_of_a_filter_are_repeated_parameters(api, star_study):
    body = api.get(report_api(star_study.study), {"pool": ["onsite", "crowd"]}).json()
    assert body["meta"]["n_raters"] == 2


def test_an_unknown_table_is_404(api, star_study):
    assert api.get(table_api(star_study.study, "horoscope")).status_code == 404


def test_filters_outside_the_study_are_400(api, star_study):
    response = api.get(report_api(star_study.study), {"criterion": "beauty"})
    assert response.status_code == 400
    assert "criterion" in response.json()
    response = api.get(report_api(star_study.study), {"min_accuracy": "2"})
    assert response.status_code == 400


def test_the_report_endpoints_are_in_the_schema(client, db):
    schema = client.get("/api/schema/").content.decode()
    assert "/api/studies/{study_id}/report/" in schema
    assert "/api/studies/{study_id}/report/{table}/" in schema
    assert "/api/reports/compare/" in schema


def test_compare_two_settings_of_one_study(api, star_study):
    study = star_study.study
    response = api.get(
        compare_api(),
        {
            "s1-study": study.pk,
            "s1-ranking": "star",
            "s1-kind": "human",
            "s2-study": study.pk,
            "s2-ranking": "star",
            "s2-kind": "judge",
            "s2-label": "GPT-4",
        },
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert [s["kind"] for s in body["settings"]] == ["human", "judge"]
    assert body["settings"][1]["label"] == "GPT-4"
    assert set(body["models"]) == {"model-x", "model-y", "model-z"}
    (corr,) = body["correlations"]
    assert corr["n_models"] == 3
    assert -1 <= corr["spearman_rho"] <= 1


def test_compare_needs_two_settings(api, star_study):
    response = api.get(compare_api(), {"s1-study": star_study.study.pk})
    assert response.status_code == 400


# --------------------------------------------------------------------------- forbidden paths


def _api_url(built, which: str) -> str:
    study = built.study
    return {
        "report": report_api(study),
        "table": table_api(study, "gaps"),
        "compare": compare_api() + f"?s1-study={study.pk}&s2-study={study.pk}",
    }[which]


@pytest.mark.parametrize("which", ["report", "table", "compare"])
@pytest.mark.parametrize(
    ("who", "refusals"),
    [(None, {401, 403}), ("annotator_user", {403}), ("other_organizer", {404})],
    ids=["anonymous", "annotator", "another-organizer"],
)
def test_only_the_owner_reaches_the_report_api(request, star_study, which, who, refusals):
    """Anonymous clients are refused, annotators forbidden, another organizer told 404."""
    c = APIClient()
    if who is not None:
        c.force_authenticate(request.getfixturevalue(who))
    assert c.get(_api_url(star_study, which)).status_code in refusals
