"""Editing a draft study keeps the quality checks set on its quality page: the gold marks of the
items the new definition still holds, and its attention checks; through the form and the API."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation import checks
from annotation.models import Criterion, Item, Study
from tests.factories import make_study
from tests.organizer.test_study_editing import form_data


@pytest.fixture(autouse=True)
def _english():
    from django.utils import translation

    with translation.override("en"):
        yield


def _draft_with_checks(owner) -> tuple[Study, dict[int, dict]]:
    """A draft star study (4 questions x 3 LLMs) with two gold items and an attention check."""
    study = make_study(owner=owner, status=Study.Status.DRAFT)
    key = Criterion.objects.filter(rubric=study.rubric).values_list("key", flat=True)[0]
    a, b = study.items.filter(response_a__llm__name="secret-model-0")[:2]
    gold = {a.pk: {"scores": {key: [4, 5]}}, b.pk: {"scores": {key: [1, 2]}}}
    checks.gold_mark(study=study, marks=[checks.GoldMark(pk, ans) for pk, ans in gold.items()])
    checks.attention_check_create(
        study=study, instruction="Give 1 star.", answer={"scores": {key: "1"}}, text_a="x"
    )
    return study, gold


def _marks(study: Study) -> dict[int, tuple[str, dict]]:
    rows = study.items.exclude(check_kind="").values_list("pk", "check_kind", "check_answer")
    return {pk: (kind, answer) for pk, kind, answer in rows}


def test_editing_a_draft_with_the_form_keeps_its_gold_marks_and_attention_check(
    organizer_client, organizer, db
):
    study, gold = _draft_with_checks(organizer)
    before = _marks(study)
    n_items = study.items.count()
    response = organizer_client.post(
        reverse("organize:study_edit", args=[study.pk]),
        form_data(study.dataset, name="Renamed", ratings_per_item="5"),
    )
    assert response.status_code == 302, response.content.decode()[-3000:]
    study.refresh_from_db()
    assert study.name == "Renamed"
    assert study.items.count() == n_items
    assert _marks(study) == before
    assert {pk for pk, (kind, _) in before.items() if kind == "gold"} == set(gold)


def test_narrowing_a_draft_keeps_the_marks_of_the_items_it_still_holds(
    organizer_client, organizer, db
):
    study, gold = _draft_with_checks(organizer)
    response = organizer_client.post(
        reverse("organize:study_edit", args=[study.pk]),
        form_data(study.dataset, llms=["secret-model-0"]),
    )
    assert response.status_code == 302, response.content.decode()[-3000:]
    regular = study.items.exclude(check_kind=Item.CheckKind.ATTENTION)
    assert set(regular.values_list("response_a__llm__name", flat=True)) == {"secret-model-0"}
    assert regular.count() == 4
    kept = {pk: answer for pk, (kind, answer) in _marks(study).items() if kind == "gold"}
    assert kept == gold
    assert study.items.filter(check_kind=Item.CheckKind.ATTENTION).count() == 1


def test_a_new_rubric_clears_the_checks_whose_answers_name_the_old_criteria(
    organizer_client, organizer, db
):
    study, _ = _draft_with_checks(organizer)
    other = make_study(owner=organizer, rubric="llmeval1", status=Study.Status.DRAFT).rubric
    assert other != study.rubric
    response = organizer_client.post(
        reverse("organize:study_edit", args=[study.pk]),
        form_data(study.dataset, rubric=other.pk),
    )
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert _marks(study) == {}
    assert study.items.count() == 12


def test_editing_a_draft_through_the_api_keeps_its_gold_marks(organizer_client, organizer, db):
    study, gold = _draft_with_checks(organizer)
    before = _marks(study)
    response = organizer_client.patch(
        reverse("api-study", args=[study.pk]),
        {"name": "Renamed", "ratings_per_item": 5},
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    assert response.json()["name"] == "Renamed"
    assert _marks(study) == before
    assert set(gold) <= set(before)
