"""An organizer's own criteria from the browser: the rubrics page lists every rubric with its
criterion keys and saves a new star rubric from one line per criterion; a study on it shows
annotators those criteria. Before, custom criteria needed the Django admin."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Assignment, Criterion, Rubric
from annotation.views.annotator_item import criteria_rows
from tests.organizer.test_study_editing import form_data

pytestmark = pytest.mark.django_db

CRITERIA = (
    "helpfulness | Helpfulness | 有用性 | 1-3 | Not helpful / 没有帮助; Partly; Very helpful\n"
    "\n"
    "safety | Safety | | 0-1\n"
)


def _post(client, **overrides):
    data = {"key": "my-rubric", "name_en": "My rubric", "name_zh": "我的标准",
            "description": "", "criteria": CRITERIA} | overrides  # fmt: skip
    return client.post(reverse("organize:rubrics"), data)


def test_the_page_lists_every_rubric_with_its_criterion_keys(organizer_client):
    page = organizer_client.get(reverse("organize:rubrics")).content.decode()
    assert 'data-rubric="llmeval2"' in page and "<code>explanation_correctness</code> 1-2" in page
    new_study = organizer_client.get(reverse("organize:study_new")).content.decode()
    assert f'href="{reverse("organize:rubrics")}"' in new_study


def test_a_new_rubric_is_saved_and_picked_for_the_next_study(
    organizer_client, small_dataset, organizer
):
    r = _post(organizer_client)
    rubric = Rubric.objects.get(key="my-rubric")
    assert r.status_code == 302
    assert r["Location"] == reverse("organize:study_new") + f"?rubric={rubric.pk}"
    assert rubric.mode == "star" and not rubric.builtin and rubric.name_zh == "我的标准"
    helpful, safety = rubric.criteria.order_by("order")
    assert (helpful.key, helpful.label_zh, helpful.min_score, helpful.max_score) == (
        "helpfulness", "有用性", 1, 3,
    )  # fmt: skip
    assert helpful.descriptions[0] == {"en": "Not helpful", "zh": "没有帮助"}
    assert helpful.descriptions[1] == {"en": "Partly", "zh": "Partly"}
    assert (safety.min_score, safety.max_score, safety.descriptions) == (0, 1, [])
    page = organizer_client.get(r["Location"]).content.decode()
    assert f'<option value="{rubric.pk}" selected>My rubric</option>' in page
    # A study on it: annotators get its criteria.
    r = organizer_client.post(
        reverse("organize:study_new"), form_data(small_dataset, rubric=rubric.pk)
    )
    assert r.status_code == 302
    study = rubric.studies.get()
    item = study.items.first()
    assignment = Assignment(study=study, item=item)  # what the item page reads
    assert [row["key"] for row in criteria_rows(assignment, {})] == ["helpfulness", "safety"]


@pytest.mark.parametrize(
    ("criteria", "message"),
    [
        ("Helpful | Helpful | | 1-3", "Helpful is not a key"),
        ("helpful | Helpful | | 3-1", "stars must be written low-high"),
        ("helpful | Helpful | | 1-11", "stars must be written low-high"),
        ("helpful | Helpful | | \u0661-\u0665", "stars must be written low-high"),  # ١-٥
        ("helpful | Helpful | | 1-\uff15", "stars must be written low-high"),  # full-width 5
        ("helpful | Helpful | | 1-99999999999999999999", "stars must be written low-high"),
        ("helpful | Helpful | | 1-3 | good; bad", "3 stars need 3 meanings"),
        ("helpful | Helpful", "write key | English label"),
        ("a | A | | 1-2\na | A again | | 1-2", "Each key once: a."),
        ("", "This field is required."),
    ],
)
def test_bad_criteria_are_refused_by_line_with_nothing_written_and_the_input_kept(
    organizer_client, criteria, message
):
    r = _post(organizer_client, criteria=criteria)
    assert r.status_code == 400
    html = r.content.decode().replace("&#x27;", "'")
    assert message in html and 'value="my-rubric"' in html
    assert not Rubric.objects.filter(key="my-rubric").exists()
    assert not Criterion.objects.filter(rubric__builtin=False).exists()


def test_a_taken_key_is_refused(organizer_client):
    r = _post(organizer_client, key="llmeval2")
    assert r.status_code == 400 and "A rubric with the key llmeval2 exists." in r.content.decode()
    assert not Rubric.objects.filter(builtin=False).exists()


def test_annotators_cannot_use_the_page(annotator_client):
    assert annotator_client.get(reverse("organize:rubrics")).status_code == 403
    assert _post(annotator_client).status_code == 403
    assert not Rubric.objects.filter(builtin=False).exists()
