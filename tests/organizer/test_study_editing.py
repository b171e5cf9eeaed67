"""Creating and editing studies from the organizer pages: pickers list what the dataset has,
errors name the bad value, a draft can be edited (and only a draft), closing asks first."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from annotation import engine
from annotation.models import LLM, Dataset, Question, Response, Rubric, Study
from annotation.services import study_update
from tests.engine.conftest import make_dataset, make_rater, make_study


@pytest.fixture(autouse=True)
def _english():
    from django.utils import translation

    with translation.override("en"):
        yield


def form_data(dataset, **overrides) -> dict:
    data = {
        "name": "My study",
        "dataset": dataset.pk,
        "mode": "star",
        "rubric": Rubric.objects.get(key="llmeval2").pk,
        "pair_design": "all",
        "ratings_per_item": "3",
        "repeat_rate": "0.02",
        "hint_policy": "hidden",
        "admit_onsite": "on",
        "reservation_timeout": "600",
    }
    data.update(overrides)
    return data


def typed_dataset() -> Dataset:
    """Task types Math / Law; answers by GPT4, GPT4.0 (near-duplicates) and claude."""
    dataset = Dataset.objects.create(name="typed")
    llms = [LLM.objects.get_or_create(name=n)[0] for n in ("GPT4", "GPT4.0", "claude")]
    for i, task in enumerate(["Math", "Math", "Law"]):
        q = Question.objects.create(dataset=dataset, external_id=f"q{i}", text="?", task_type=task)
        for llm in llms[:2] if i == 0 else llms[1:]:
            Response.objects.create(question=q, llm=llm, text=f"answer {i} {llm.name}")
    return dataset


def test_the_new_study_page_lists_the_datasets_task_types_and_llms(organizer_client, db):
    dataset = typed_dataset()
    html = organizer_client.get(reverse("organize:study_new") + f"?dataset={dataset.pk}")
    html = html.content.decode()
    assert 'value="Math"' in html and "Math (2 questions)" in html
    assert 'value="Law"' in html and "claude (2 answers)" in html
    assert "Law (1 question)" in html and "GPT4 (1 answer)" in html  # not "1 questions"
    # GPT4 and GPT4.0 are flagged as one model under two names, with a way to merge them.
    assert "data-duplicates" in html
    assert reverse("organize:dataset_llms", args=[dataset.pk]) in html


def test_without_a_dataset_the_new_study_page_points_to_the_import(
    organizer_client, other_organizer
):
    """A new organizer's first visit: no dataset to pick (another organizer's is not theirs),
    so the page says where datasets come from instead of offering an empty list."""
    Dataset.objects.create(name="not yours", owner=other_organizer)
    html = organizer_client.get(reverse("organize:study_new")).content.decode()
    assert 'id="no-dataset"' in html and reverse("organize:import") in html
    typed_dataset()  # the shared catalogue is everyone's
    html = organizer_client.get(reverse("organize:study_new")).content.decode()
    assert 'id="no-dataset"' not in html


@pytest.mark.parametrize(
    "language, words",
    [
        ("en", ["Each item gets exactly N ratings", "Pairwise only, with the baseline or k",
                "served again to the same annotator", "gold items and attention checks",
                "repeats included; blank: no limit", "the code you set on Prolific or MTurk",
                "submissions/complete?cc=CODE", "The first N questions of the selection"]),
        ("zh-hans", ["每个条目恰好获得 N 条", "仅用于两两比较", "不加标记地再次分给同一标注者",
                     "黄金条目和注意力检查", "含重复", "Prolific 或 MTurk 上设置的代码"]),
    ],
)  # fmt: skip
def test_the_new_study_form_says_what_its_less_obvious_fields_do(
    organizer_client, db, language, words
):
    """A newcomer met "Max questions", "k pairs", three quotas, "Hidden repeat rate" and the
    completion code and URL with no word on what they do (docs/annotators.md had them)."""
    organizer_client.cookies["django_language"] = language
    html = organizer_client.get(reverse("organize:study_new")).content.decode()
    for text in words:
        assert text in html
    assert html.count('<span class="helptext">') >= 12


def test_the_pickers_fragment_follows_the_chosen_dataset_for_htmx(organizer_client, db):
    dataset = typed_dataset()
    other = make_dataset(1, 2)
    response = organizer_client.get(
        reverse("organize:study_new") + f"?dataset={other.pk}", HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    assert "<html" not in html and 'id="pickers"' in html
    assert "secret-model-0" in html and "GPT4" not in html
    assert dataset.name not in html


def test_refresh_redraws_the_form_for_another_dataset_without_creating(organizer_client, db):
    dataset = typed_dataset()
    response = organizer_client.post(
        reverse("organize:study_new"), {**form_data(dataset), "refresh": "1"}
    )
    assert response.status_code == 200
    assert "claude (2 answers)" in response.content.decode()
    assert "This field is required" not in response.content.decode()
    assert not Study.objects.exists()


def test_a_study_from_ticked_task_types_and_llms(organizer_client, organizer, db):
    dataset = typed_dataset()
    response = organizer_client.post(
        reverse("organize:study_new"),
        form_data(dataset, task_types=["Math"], llms=["GPT4.0", "claude"]),
    )
    assert response.status_code == 302, response.content.decode()[-3000:]
    study = Study.objects.get(name="My study")
    assert study.selection == {"task_types": ["Math"], "llms": ["GPT4.0", "claude"]}
    names = {i.response_a.llm.name for i in study.items.select_related("response_a__llm")}
    assert names == {"GPT4.0", "claude"}
    assert study.items.count() == 3  # q0: GPT4.0; q1: GPT4.0 and claude


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("task_types", ["Mth"], "Mth is not a task type of this dataset"),
        ("llms", ["gpt-5"], "gpt-5 is not an LLM of this dataset"),
        ("ratings_per_item", "٣", "٣ is not a number written with the digits 0-9"),
        ("ratings_per_item", "²", "² is not a number written with the digits 0-9"),
        ("ratings_per_item", "51", "Must be at most 50; got 51"),
        ("repeat_rate", "0.9", "Must be at most 0.5; got 0.9"),
        ("repeat_rate", "nan", "nan is not a number"),
        ("reservation_timeout", "9" * 5000, "999999999999… has too many digits"),
        ("quota_crowd", "0", "Must be at least 1; got 0"),
        ("name", "bad\x00name", "Null characters are not allowed"),
    ],
)
def test_study_form_errors_name_the_bad_value(organizer_client, db, field, value, message):
    dataset = typed_dataset()
    response = organizer_client.post(
        reverse("organize:study_new"), form_data(dataset, **{field: value})
    )
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not Study.objects.exists()


def test_the_rubric_error_names_the_rubric_and_the_modes(organizer_client, db):
    dataset = typed_dataset()
    response = organizer_client.post(
        reverse("organize:study_new"),
        form_data(dataset, rubric=Rubric.objects.get(key="pairwise").pk),
    )
    assert "Rubric pairwise is for pairwise studies, not star." in response.content.decode()


def test_the_service_names_unknown_selection_values_for_every_caller(organizer, db):
    from annotation.services import study_create

    dataset = typed_dataset()
    with pytest.raises(ValidationError) as err:
        study_create(
            name="api",
            dataset=dataset,
            mode="star",
            rubric=Rubric.objects.get(key="llmeval2"),
            selection={"task_types": ["Math", "Poetry"], "llms": ["nobody"]},
        )
    messages = err.value.message_dict
    assert "'Poetry': not a task type of dataset 'typed' (it has: Law, Math)" in str(messages)
    assert "'nobody': not an LLM" in str(messages)
    assert not Study.objects.filter(name="api").exists()


def test_a_draft_is_edited_with_the_same_form_and_its_items_rebuilt(
    organizer_client, organizer, db
):
    study = make_study(owner=organizer, status=Study.Status.DRAFT)
    page = organizer_client.get(reverse("organize:study_edit", args=[study.pk]))
    assert f'value="{study.name}"' in page.content.decode()
    response = organizer_client.post(
        reverse("organize:study_edit", args=[study.pk]),
        form_data(study.dataset, name="Renamed", llms=["secret-model-0"], ratings_per_item="5"),
    )
    assert response.status_code == 302, response.content.decode()[-3000:]
    study.refresh_from_db()
    assert (study.name, study.ratings_per_item) == ("Renamed", 5)
    assert study.items.count() == 4  # 4 questions x 1 chosen LLM
    assert set(study.items.values_list("response_a__llm__name", flat=True)) == {"secret-model-0"}


@pytest.mark.parametrize("status", [Study.Status.LIVE, Study.Status.PAUSED, Study.Status.CLOSED])
def test_a_launched_study_cannot_be_edited(organizer_client, organizer, db, status):
    study = make_study(owner=organizer, status=status)
    n_items = study.items.count()
    response = organizer_client.post(
        reverse("organize:study_edit", args=[study.pk]),
        form_data(study.dataset, name="Changed", llms=["secret-model-0"]),
    )
    assert response.status_code == 302
    study.refresh_from_db()
    assert study.name != "Changed" and study.items.count() == n_items
    page = organizer_client.get(reverse("organize:study", args=[study.pk])).content.decode()
    assert reverse("organize:study_edit", args=[study.pk]) not in page


def test_the_service_refuses_to_edit_a_study_with_assignments(organizer, db):
    study = make_study(owner=organizer, status=Study.Status.LIVE)
    engine.assignment_next(study=study, rater=make_rater())
    Study.objects.filter(pk=study.pk).update(status=Study.Status.DRAFT)  # forced back
    with pytest.raises(ValidationError, match="Only a draft study can be edited"):
        study_update(study=study, name="x", dataset=study.dataset, mode="star", rubric=study.rubric)


def test_another_organizer_cannot_edit_alices_draft(client, organizer, other_organizer, db):
    study = make_study(owner=organizer, status=Study.Status.DRAFT)
    client.force_login(other_organizer)
    assert client.get(reverse("organize:study_edit", args=[study.pk])).status_code == 404
    response = client.post(
        reverse("organize:study_edit", args=[study.pk]), form_data(study.dataset, name="Mine")
    )
    assert response.status_code == 404
    study.refresh_from_db()
    assert study.name != "Mine"


def test_close_asks_for_confirmation_before_closing(organizer_client, organizer, db):
    study = make_study(owner=organizer)
    url = reverse("organize:study_status", args=[study.pk, "close"])
    page = organizer_client.get(url)
    assert page.status_code == 200 and "cannot be undone" in page.content.decode()
    # A POST without the confirmation field only shows the question again.
    again = organizer_client.post(url)
    assert again.status_code == 200 and "Yes, close the study" in again.content.decode()
    study.refresh_from_db()
    assert study.status == Study.Status.LIVE
    organizer_client.post(url, {"confirm": "close"})
    study.refresh_from_db()
    assert study.status == Study.Status.CLOSED


def test_close_confirmation_is_owner_only(client, organizer, other_organizer, annotator_user):
    study = make_study(owner=organizer)
    url = reverse("organize:study_status", args=[study.pk, "close"])
    client.force_login(other_organizer)
    assert client.get(url).status_code == 404
    assert client.post(url, {"confirm": "close"}).status_code == 404
    client.force_login(annotator_user)
    assert client.post(url, {"confirm": "close"}).status_code == 403
    study.refresh_from_db()
    assert study.status == Study.Status.LIVE


@pytest.mark.parametrize("value", ["9" * 5000, "9" * 25, "٣", "-1", "1\x00", "abc"])
def test_a_hostile_dataset_value_is_a_form_error_not_a_500(organizer_client, db, value):
    real = typed_dataset()
    page = organizer_client.get(reverse("organize:study_new"), {"dataset": value})
    assert page.status_code == 200
    response = organizer_client.post(
        reverse("organize:study_new"), {**form_data(real), "dataset": value}
    )
    assert response.status_code == 200
    assert "Dataset:" in response.content.decode()
    assert "errorlist" in response.content.decode()
    assert not Study.objects.exists()


def test_questions_no_criterion_applies_to_are_named_after_saving_and_on_the_study_page(
    organizer_client, db
):
    # LLMEval-2's criteria are for objective or subjective questions; a question without a kind
    # (valid in the generic formats) got a form without stars and empty ratings counted to N.
    dataset = typed_dataset()
    Question.objects.filter(dataset=dataset, external_id="q2").update(kind="subjective")
    response = organizer_client.post(reverse("organize:study_new"), form_data(dataset), follow=True)
    html = response.content.decode()
    assert html.count("2 questions (first: q0, q1) have no criterion in the rubric") == 1
    study = Study.objects.get(name="My study")
    page = organizer_client.get(reverse("organize:study", args=[study.pk])).content.decode()
    assert "2 questions (first: q0, q1) have no criterion" in page
    # A rubric whose criteria apply to every question, or questions that all have a kind: no word.
    llmeval1 = Rubric.objects.get(key="llmeval1")
    Study.objects.filter(pk=study.pk).update(rubric=llmeval1)
    page = organizer_client.get(reverse("organize:study", args=[study.pk])).content.decode()
    assert "have no criterion" not in page
    Question.objects.filter(dataset=dataset).update(kind="objective")
    Study.objects.filter(pk=study.pk).update(rubric=Rubric.objects.get(key="llmeval2"))
    page = organizer_client.get(reverse("organize:study", args=[study.pk])).content.decode()
    assert "have no criterion" not in page


def test_the_new_study_menus_blank_choice_is_chinese_on_a_chinese_page(organizer_client, db):
    """Django 6.1's "- Select an option -" has no zh_Hans translation of Django's own: the
    project's catalogue carries it, so no menu of the form is English on a Chinese page."""
    url = reverse("organize:study_new")
    english = organizer_client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "- Select an option -" in english  # the dataset and rubric menus have a blank choice
    chinese = organizer_client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "- Select an option -" not in chinese and "请选择" in chinese


def test_the_study_page_says_one_rating_per_item_in_the_singular(organizer_client, organizer):
    study = make_study(owner=organizer, ratings_per_item=1)
    html = organizer_client.get(reverse("organize:study", args=[study.pk])).content.decode()
    assert "1 rating per item" in html and "1 ratings per item" not in html
