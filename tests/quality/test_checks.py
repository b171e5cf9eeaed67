"""Creating quality checks on the page and through the API: gold uploads (CSV, JSON, records),
attention checks, removal, and hostile input that must be a clear 4xx with nothing written."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation import checks
from annotation.models import Item, Question, Response
from annotation.services import study_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair(organizer, small_dataset, pairwise_rubric):
    return study_create(
        name="Pairs", dataset=small_dataset, mode="pairwise", rubric=pairwise_rubric,
        owner=organizer,
    )  # fmt: skip


@pytest.fixture
def star(organizer, small_dataset, star_rubric):
    return study_create(
        name="Stars", dataset=small_dataset, mode="star", rubric=star_rubric, owner=organizer,
        selection={"kinds": ["subjective"]},
    )  # fmt: skip


def _item(study, q, a, b=None):
    qs = Item.objects.filter(study=study, question__external_id=q, response_a__llm__name__in=[a, b])
    return qs.get(response_b__llm__name__in=[a, b]) if b else qs.get(response_b=None)


def _gold(study):
    return {i.pk: i.check_answer for i in Item.objects.filter(study=study, check_kind="gold")}


def test_csv_upload_marks_gold_items_and_swaps_a_and_b_to_the_stored_orientation(
    pair, organizer_client
):
    item = _item(pair, "Q1", "model-x", "model-y")
    assert item.response_a.llm.name == "model-x"  # stored A is model-x
    text = "question_id,model_a,model_b,choices\nQ1,model-y,model-x,A|tie\nQ2,model-x,model-z,B\n"
    url = reverse("organize:study_gold_upload", args=[pair.pk])
    response = organizer_client.post(url, {"format": "csv", "text": text})
    assert response.status_code == 302
    gold = _gold(pair)
    # model-y was named A, so the accepted "A" is the stored B.
    assert gold[item.pk] == {"choices": ["B", "tie"]}
    assert gold[_item(pair, "Q2", "model-x", "model-z").pk] == {"choices": ["B"]}


def test_json_file_upload_for_star_ranges(star, organizer_client):
    item = _item(star, "Q2", "model-y")
    body = f'[{{"item_id": {item.pk}, "scores": {{"accuracy": [4, 5], "fluency": 3}}}}]'
    upload = SimpleUploadedFile("gold.json", body.encode(), content_type="application/json")
    url = reverse("organize:study_gold_upload", args=[star.pk])
    assert organizer_client.post(url, {"format": "json", "file": upload}).status_code == 302
    assert _gold(star) == {item.pk: {"scores": {"accuracy": [4, 5], "fluency": [3, 3]}}}


@pytest.mark.parametrize(
    "text",
    [
        "item_id,choices\n٣,A\n",  # a Unicode digit
        "item_id,choices\n99999999999999999999,A\n",  # a huge number
        "question_id,model_a,model_b,choices\nQ1,model-x,model-y,better\n",  # not a choice
        "question_id,model_a,model_b,choices\nQ1,model-x,model-y,\n",  # no answer
        "question_id,model_a,model_b,choices\nQ9,model-x,model-y,A\n",  # no such item
        "question_id,model_a,model_b,choices\nQ1,model-x,model-y,A\nQ1,model-x,nobody,A\n",
        "question_id,model_a,model_b,choices\nQ1\x00,model-x,model-y,A\n",
        "question_id,model_a,model_b,choices\n" + "Q" * 600 + ",model-x,model-y,A\n",
        "",
    ],
)
def test_bad_gold_uploads_are_refused_whole(pair, organizer_client, text):
    url = reverse("organize:study_gold_upload", args=[pair.pk])
    response = organizer_client.post(url, {"format": "csv", "text": text})
    assert response.status_code == 400
    assert _gold(pair) == {}  # nothing partial: the good first line of a bad file is not kept


@pytest.mark.parametrize(
    "scores",
    [{"accuracy": [0, 5]}, {"accuracy": [5, 4]}, {"accuracy": [4, 9]}, {"nope": 3}, {}],
)
def test_star_ranges_must_lie_within_the_criterion_scale(star, scores):
    item = _item(star, "Q2", "model-y")
    with pytest.raises(checks.ValidationError):
        checks.marks_resolve(star, [{"item_id": item.pk, "scores": scores}])


def test_attention_check_on_the_page_creates_a_hidden_item_under_reserved_names(
    pair, organizer_client, small_dataset, organizer, pairwise_rubric
):
    url = reverse("organize:study_attention_create", args=[pair.pk])
    data = {
        "instruction": "<script>x</script>A",
        "text_a": "<b>A</b>",
        "text_b": "B",
        "choices": ["A"],
    }
    assert organizer_client.post(url, data).status_code == 302
    item = Item.objects.get(study=pair, check_kind="attention")
    assert item.check_answer == {"choices": ["A"]}
    assert item.response_a.text == "<b>A</b>" and item.response_a.llm.name in checks.ATTENTION_LLMS
    assert item.response_a_id < item.response_b_id
    page = organizer_client.get(reverse("organize:study_quality", args=[pair.pk]))
    assert "<script>x</script>" not in page.content.decode()  # escaped, never HTML
    assert "&lt;script&gt;x&lt;/script&gt;A" in page.content.decode()
    # A later study on the same dataset does not pick the check up as a regular item.
    other = study_create(
        name="Later", dataset=small_dataset, mode="pairwise", rubric=pairwise_rubric,
        owner=organizer,
    )  # fmt: skip
    assert not other.items.filter(response_a__llm__name__in=checks.ATTENTION_LLMS).exists()
    assert other.items.count() == pair.items.count() - 1


def test_a_star_studys_quality_page_names_its_criterion_keys_and_only_its_modes_fields(
    star, organizer_client
):
    # A newcomer could not know the keys: the example said "relevance=4-5", a key of no rubric,
    # and the refusal did not say which keys exist.
    page = organizer_client.get(reverse("organize:study_quality", args=[star.pk])).content.decode()
    keys = list(star.rubric.criteria.values_list("key", flat=True))
    assert keys and 'id="criterion-keys"' in page
    assert all(f"<code>{key}</code>" in page for key in keys)
    assert 'name="text_b"' not in page and 'name="choices"' not in page
    url = reverse("organize:study_attention_create", args=[star.pk])
    data = {"instruction": "Give top stars.", "text_a": "a", "stars": "relevance=4-5"}
    r = organizer_client.post(url, data)
    assert r.status_code == 400
    assert f"This study&#x27;s criteria: {', '.join(keys)}." in r.content.decode()
    assert r.content.decode().count("Give top stars.") == 1  # the input is kept
    top = ", ".join(f"{c.key}={c.max_score}" for c in star.rubric.criteria.all())
    assert organizer_client.post(url, {**data, "stars": top}).status_code == 302
    assert Item.objects.filter(study=star, check_kind="attention").exists()
    page = organizer_client.get(reverse("organize:study_quality", args=[star.pk])).content.decode()
    assert "Gold items: 0, attention checks: 1;" in page  # was "1 attention checks"


def test_attention_check_needs_a_valid_answer_and_writes_nothing_otherwise(pair, organizer_client):
    url = reverse("organize:study_attention_create", args=[pair.pk])
    for data in (
        {"instruction": "Choose A.", "text_a": "a", "text_b": "b", "choices": []},
        {"instruction": "Choose A.", "text_a": "a", "text_b": "", "choices": ["A"]},
        {"instruction": "x\x00", "text_a": "a", "text_b": "b", "choices": ["A"]},
        {"instruction": "x" * 20001, "text_a": "a", "text_b": "b", "choices": ["A"]},
    ):
        assert organizer_client.post(url, data).status_code == 400
    assert not Question.objects.filter(external_id__startswith="attention-check").exists()
    assert not Response.objects.filter(llm__name__in=checks.ATTENTION_LLMS).exists()


def test_remove_unmarks_gold_and_deletes_an_unserved_attention_check(pair, organizer_client):
    item = _item(pair, "Q1", "model-x", "model-y")
    checks.gold_mark(study=pair, marks=[checks.GoldMark(item.pk, {"choices": ["A"]})])
    att = checks.attention_check_create(
        study=pair, instruction="Pick A", text_a="a", text_b="b", answer={"choices": ["A"]}
    )
    for pk in (item.pk, att.pk):
        url = reverse("organize:study_check_remove", args=[pair.pk, pk])
        assert organizer_client.post(url).status_code == 302
    item.refresh_from_db()
    assert (item.check_kind, item.check_answer) == ("", {})
    assert not Item.objects.filter(pk=att.pk).exists()


def test_api_marks_gold_from_records_and_content_and_adds_attention(pair, organizer_client):
    item = _item(pair, "Q1", "model-x", "model-z")
    url = reverse("api-checks-gold", args=[pair.pk])
    records = {"records": [{"item_id": item.pk, "choices": ["A", "tie"]}]}
    response = organizer_client.post(url, records, content_type="application/json")
    assert response.status_code == 200 and response.json() == {"marked": 1}
    content = {"format": "json", "content": f'[{{"item_id": {item.pk}, "choices": "B"}}]'}
    assert organizer_client.post(url, content, content_type="application/json").json() == {
        "marked": 1
    }
    assert _gold(pair) == {item.pk: {"choices": ["B"]}}
    att = reverse("api-checks-attention", args=[pair.pk])
    body = {"instruction": "Pick B", "text_a": "a", "text_b": "b", "answer": {"choices": ["B"]}}
    created = organizer_client.post(att, body, content_type="application/json")
    assert created.status_code == 201 and created.json()["check_kind"] == "attention"
    listed = organizer_client.get(reverse("api-checks", args=[pair.pk])).json()
    assert [c["check_kind"] for c in listed] == ["attention", "gold"]


@pytest.mark.parametrize(
    "body",
    [
        {"records": [{"item_id": "٣", "choices": ["A"]}]},
        {"records": [{"item_id": 10**30, "choices": ["A"]}]},
        {"records": [{"item_id": True, "choices": ["A"]}]},
        {
            "records": [
                {"question_id": "Q1", "model_a": "model-x", "model_b": "model-y", "choices": ["X"]}
            ]
        },
        {"content": "item_id\n1\n"},  # no format
        {"format": "json", "content": "{not json"},
        {"format": "json", "content": '"\\u0000"'},
        {},
    ],
)
def test_api_refuses_hostile_gold_input_with_a_400(pair, organizer_client, body):
    url = reverse("api-checks-gold", args=[pair.pk])
    assert organizer_client.post(url, body, content_type="application/json").status_code == 400
    assert _gold(pair) == {}


def test_other_organizers_study_is_a_404_and_anonymous_is_refused(pair, client, other_organizer):
    item = _item(pair, "Q1", "model-x", "model-y")
    records = {"records": [{"item_id": item.pk, "choices": ["A"]}]}
    url = reverse("api-checks-gold", args=[pair.pk])
    assert client.post(url, records, content_type="application/json").status_code in (401, 403)
    page = reverse("organize:study_gold_upload", args=[pair.pk])
    assert client.post(page, {"format": "csv", "text": "x"}).status_code == 302  # login
    client.force_login(other_organizer)
    assert client.post(url, records, content_type="application/json").status_code == 404
    assert client.post(page, {"format": "csv", "text": "x"}).status_code == 404
    att = reverse("organize:study_attention_create", args=[pair.pk])
    assert (
        client.post(
            att, {"instruction": "x", "text_a": "a", "text_b": "b", "choices": ["A"]}
        ).status_code
        == 404
    )
    assert _gold(pair) == {} and not Item.objects.filter(check_kind="attention").exists()


def test_a_gold_mark_cannot_reach_another_studys_item(pair, star, organizer_client):
    foreign = star.items.first()
    url = reverse("api-checks-gold", args=[pair.pk])
    body = {"records": [{"item_id": foreign.pk, "choices": ["A"]}]}
    assert organizer_client.post(url, body, content_type="application/json").status_code == 400
    foreign.refresh_from_db()
    assert foreign.check_kind == ""


def test_the_attention_forms_example_uses_the_studys_own_criteria(
    organizer, organizer_client, small_dataset
):
    """The example stars were "accuracy=4-5, fluency=3" whatever the rubric; a study scoring
    clarity 1-5 and tone 1-3 shows (and, on a malformed entry, repeats) its own keys."""
    from annotation.rubric_services import CriterionSpec, rubric_create

    specs = [
        CriterionSpec("clarity", "Clarity", "", 1, 5, []),
        CriterionSpec("tone", "Tone", "", 1, 3, []),
    ]
    data = {"key": "own", "name_en": "Own", "name_zh": "", "description": "", "criteria": specs}
    rubric = rubric_create(data, owner=organizer)
    study = study_create(
        name="Own", dataset=small_dataset, mode="star", rubric=rubric, owner=organizer
    )
    page = organizer_client.get(reverse("organize:study_quality", args=[study.pk])).content.decode()
    assert "Accepted stars (e.g. clarity=4-5, tone=3)" in page
    assert "accuracy=" not in page and "fluency=" not in page
    url = reverse("organize:study_attention_create", args=[study.pk])
    r = organizer_client.post(url, {"instruction": "i", "text_a": "a", "stars": "clarity 5"})
    assert r.status_code == 400
    assert "e.g. clarity=4-5, tone=3." in r.content.decode()
    assert "accuracy=" not in r.content.decode()
