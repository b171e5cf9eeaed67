"""An attention check can carry a reference answer, so that it is not the one item without one.

In a study that shows hints, every regular item whose question has a reference answer shows it
beside the answer. An attention check's question had no reference, so where the study's
questions all have one, the item without a "Reference answer" card was the attention check:
a worker (or a script) could answer exactly those carefully and click through the rest. The
organizer can now give the check a reference on the quality page and in the API; the item page
shows it on the same terms as any item's."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Assignment, Item, Rater, Study
from annotation.services import study_create
from annotation.views.annotator_item import item_context

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair(organizer, small_dataset, pairwise_rubric):
    return study_create(
        name="Pairs", dataset=small_dataset, mode="pairwise", rubric=pairwise_rubric,
        owner=organizer, hint_policy=Study.HintPolicy.SHOWN,
    )  # fmt: skip


BODY = {"instruction": "Pick B", "text_a": "a", "text_b": "b", "answer": {"choices": ["B"]}}


def test_the_api_stores_the_reference_of_an_attention_check(pair, organizer_client):
    url = reverse("api-checks-attention", args=[pair.pk])
    body = {**BODY, "reference": "The reference for the check"}
    created = organizer_client.post(url, body, content_type="application/json")
    assert created.status_code == 201, created.content
    item = Item.objects.get(study=pair, check_kind="attention")
    assert item.question.reference == "The reference for the check"


def test_the_quality_page_stores_it_too(pair, organizer_client):
    url = reverse("organize:study_attention_create", args=[pair.pk])
    data = {"instruction": "Pick A", "text_a": "a", "text_b": "b", "choices": ["A"]}
    response = organizer_client.post(url, {**data, "reference": "Page reference"})
    assert response.status_code == 302
    item = Item.objects.get(study=pair, check_kind="attention")
    assert item.question.reference == "Page reference"


def test_a_check_shown_with_hints_shows_its_reference_like_any_item(pair, organizer_client):
    url = reverse("api-checks-attention", args=[pair.pk])
    organizer_client.post(url, {**BODY, "reference": "R-text"}, content_type="application/json")
    check = Item.objects.get(study=pair, check_kind="attention")
    rater = Rater.objects.create(kind=Rater.Kind.HUMAN, pool=Rater.Pool.PUBLIC)
    exposure = Assignment.objects.create(
        study=pair, item=check, rater=rater, seq=1, hint_shown=True, left_is_a=True
    )
    assert item_context(exposure, rater)["reference"] == "R-text"


@pytest.mark.parametrize("reference", ["x" * 20_001, "a\x00b", ["a list"]])
def test_a_bad_reference_is_a_400_and_writes_nothing(pair, organizer_client, reference):
    url = reverse("api-checks-attention", args=[pair.pk])
    body = {**BODY, "reference": reference}
    response = organizer_client.post(url, body, content_type="application/json")
    assert response.status_code == 400
    assert not Item.objects.filter(study=pair, check_kind="attention").exists()
