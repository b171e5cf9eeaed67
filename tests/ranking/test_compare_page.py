from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def url():
    return reverse("ranking:compare")


def two_settings(a, b, **extra):
    return {
        "s1-study": a.pk,
        "s1-ranking": "star",
        "s1-kind": "human",
        "s2-study": b.pk,
        "s2-ranking": "points",
        "s2-kind": "all",
        **extra,
    }


def test_the_empty_form_lists_only_my_studies(organizer_client, star_study, other_organizer):
    from annotation.services import study_create

    study_create(
        name="Bob's secret study",
        dataset=star_study.study.dataset,
        mode="star",
        rubric=star_study.study.rubric,
        owner=other_organizer,
    )
    response = organizer_client.get(url())
    assert response.status_code == 200
    html = response.content.decode()
    assert "Star study" in html
    assert "Bob&#x27;s secret study" not in html and "Bob's secret study" not in html


def test_a_star_study_and_a_pairwise_study_side_by_side(organizer_client, star_study, pair_study):
    response = organizer_client.get(url(), two_settings(star_study.study, pair_study.study))
    assert response.status_code == 200
    table = response.context["table"]
    assert table.columns[0] == "model"
    assert len(table.columns) == 3
    assert {row[0] for row in table.rows} == {"model-x", "model-y", "model-z"}
    result = response.context["result"]
    points = {r["model"]: r["value"] for r in result["settings"][1]["rows"]}
    # Points over every rating (repeats count; tie and both bad are draws), by hand from
    # PAIR_CHOICES: x wins 5 of its 7 games, y scores 2 of 7, z 3 of 6.
    assert points == pytest.approx({"model-x": 5 / 7, "model-y": 2 / 7, "model-z": 3 / 6})
    assert len(result["correlations"]) == 1


def test_htmx_gets_only_the_comparison_body(organizer_client, star_study, pair_study):
    response = organizer_client.get(
        url(), two_settings(star_study.study, pair_study.study), headers={"HX-Request": "true"}
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="compare-body">')


def test_one_setting_is_not_enough(organizer_client, star_study):
    response = organizer_client.get(url(), {"s1-study": star_study.study.pk})
    assert response.status_code == 400
    assert "at least two" in response.content.decode()


def test_anonymous_visitors_are_sent_to_log_in(client, star_study):
    response = client.get(url(), two_settings(star_study.study, star_study.study))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_annotators_are_forbidden(annotator_client, star_study):
    assert annotator_client.get(url()).status_code == 403


def test_someone_elses_study_is_404(client, other_organizer, star_study, pair_study):
    client.force_login(other_organizer)
    assert client.get(url(), two_settings(star_study.study, pair_study.study)).status_code == 404
    assert client.get(url(), {"s1-study": "not-a-number"}).status_code == 404
