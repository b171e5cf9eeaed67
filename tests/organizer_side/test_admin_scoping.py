"""The admin, as an organizer who is not a superuser: only their own objects, everywhere.

Alice and Bob are staff organizers with every model permission (what load_demo grants and more);
Bob should have no access to Alice's raters, datasets, judges or results.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from django.urls import reverse

from annotation.models import (
    LLM,
    Assignment,
    Criterion,
    Dataset,
    ImportRecord,
    Question,
    Rater,
    Rubric,
)
from annotation.permissions import ORGANIZERS_GROUP
from evaluation.models import JudgeConfig, JudgeRun, PromptTemplate
from evaluation.services import judge_config_create, prompt_template_create
from tests.engine.conftest import make_rater, make_study

pytestmark = pytest.mark.django_db


def _staff_organizer(name: str) -> User:
    user = User.objects.create_user(name, password=f"{name}-pass-123", is_staff=True)
    group, _ = Group.objects.get_or_create(name=ORGANIZERS_GROUP)
    group.permissions.set(
        Permission.objects.filter(content_type__app_label__in=["annotation", "evaluation"])
    )
    user.groups.add(group)
    return user


@pytest.fixture
def alice():
    return _staff_organizer("alice-admin")


@pytest.fixture
def bob():
    return _staff_organizer("bob-admin")


@pytest.fixture
def bob_client(client, bob):
    client.force_login(bob)
    return client


def _owned_study(owner):
    study = make_study(owner=owner)
    Dataset.objects.filter(pk=study.dataset_id).update(owner=owner)
    return study


def _works_on(rater, study, seq=1):
    return Assignment.objects.create(study=study, item=study.items.first(), rater=rater, seq=seq)


STAR_PROMPT = "Question: {question}\nAnswer: {answer}\nRate it."

RATER_FORM = {
    "kind": "human",
    "pool": "public",
    "name": "",
    "nickname": "",
    "meta": "{}",
    "consented_at_0": "",
    "consented_at_1": "",
}


def _url(name, *args):
    return reverse(f"admin:{name}", args=args)


def test_bob_does_not_see_alices_raters(bob_client, alice, bob):
    crowd = make_rater(Rater.Pool.CROWD)
    _works_on(crowd, _owned_study(alice))
    page = bob_client.get(_url("annotation_rater_changelist"))
    assert page.status_code == 200
    assert crowd.pseudonym.encode() not in page.content
    assert bob_client.get(_url("annotation_rater_change", crowd.pk)).status_code == 404


def test_bob_cannot_change_alices_crowd_rater_to_public(bob_client, alice):
    crowd = make_rater(Rater.Pool.CROWD)
    _works_on(crowd, _owned_study(alice))
    r = bob_client.post(_url("annotation_rater_change", crowd.pk), RATER_FORM)
    assert r.status_code == 404
    crowd.refresh_from_db()
    assert crowd.pool == Rater.Pool.CROWD
    r = bob_client.post(_url("annotation_rater_delete", crowd.pk), {"post": "yes"})
    assert r.status_code == 404
    assert Rater.objects.filter(pk=crowd.pk).exists()


def test_a_rater_shared_with_another_organizers_study_is_read_only(bob_client, alice, bob):
    crowd = make_rater(Rater.Pool.CROWD)
    _works_on(crowd, _owned_study(alice))
    _works_on(crowd, _owned_study(bob))
    assert bob_client.get(_url("annotation_rater_change", crowd.pk)).status_code == 200
    r = bob_client.post(_url("annotation_rater_change", crowd.pk), RATER_FORM)
    assert r.status_code == 403
    crowd.refresh_from_db()
    assert crowd.pool == Rater.Pool.CROWD


def test_bulk_delete_refuses_criteria_of_a_rubric_alices_study_uses(bob_client, alice, bob):
    # The "delete selected" action asks has_delete_permission without an object. Bob's own
    # study uses Alice's rubric (made before rubrics had owners): he reads it, changes nothing.
    study = _owned_study(alice)
    rubric = Rubric.objects.create(key="alices-bulk", name_en="Alice's", mode="star", owner=alice)
    criterion = Criterion.objects.create(rubric=rubric, key="c1", label_en="c1", order=1)
    type(study).objects.filter(pk=study.pk).update(rubric=rubric)
    bobs = _owned_study(bob)
    type(bobs).objects.filter(pk=bobs.pk).update(rubric=rubric)
    r = bob_client.post(
        _url("annotation_criterion_changelist"),
        {"action": "delete_selected", "_selected_action": [criterion.pk], "post": "yes"},
    )
    assert r.status_code == 403
    assert Criterion.objects.filter(pk=criterion.pk).exists()


def test_bob_can_change_a_rater_only_his_studies_use(bob_client, bob):
    crowd = make_rater(Rater.Pool.CROWD)
    _works_on(crowd, _owned_study(bob))
    r = bob_client.post(_url("annotation_rater_change", crowd.pk), RATER_FORM)
    assert r.status_code == 302, r.content[:2000]
    crowd.refresh_from_db()
    assert crowd.pool == Rater.Pool.PUBLIC


def test_a_rater_bob_adds_is_his_and_cannot_be_pinned_on_someone_else(bob_client, bob, alice):
    form = {**RATER_FORM, "nickname": "walk-in", "invited_by": str(alice.pk)}
    r = bob_client.post(_url("annotation_rater_add"), form)
    assert r.status_code == 302
    assert Rater.objects.get(nickname="walk-in").invited_by == bob


def test_bob_does_not_see_alices_dataset_questions_or_responses(bob_client, alice):
    study = _owned_study(alice)
    question = study.dataset.questions.first()
    response = question.responses.first()
    assert bob_client.get(_url("annotation_dataset_change", study.dataset_id)).status_code == 404
    assert bob_client.get(_url("annotation_question_change", question.pk)).status_code == 404
    assert bob_client.get(_url("annotation_response_change", response.pk)).status_code == 404
    page = bob_client.get(_url("annotation_dataset_changelist"))
    assert study.dataset.name.encode() not in page.content


def test_bob_cannot_add_a_question_to_alices_dataset(bob_client, alice):
    study = _owned_study(alice)
    before = Question.objects.count()
    form = {
        "dataset": str(study.dataset_id),
        "external_id": "X",
        "text": "sneaky",
        "kind": "subjective",
    }
    r = bob_client.post(_url("annotation_question_add"), form)
    assert r.status_code == 200  # the form again, with an error on the dataset
    assert "dataset" in r.context["adminform"].form.errors
    assert Question.objects.count() == before


def test_a_dataset_bob_studies_but_alice_owns_is_read_only_to_bob(bob_client, alice, bob):
    alices = _owned_study(alice)
    from annotation.services import study_create

    study_create(
        name="bob on alice's data",
        dataset=alices.dataset,
        mode="star",
        rubric=alices.rubric,
        owner=bob,
    )
    dataset = alices.dataset
    assert bob_client.get(_url("annotation_dataset_change", dataset.pk)).status_code == 200
    r = bob_client.post(_url("annotation_dataset_change", dataset.pk), {"name": "mine now"})
    assert r.status_code == 403
    r = bob_client.post(
        _url("annotation_dataset_changelist"),
        {"action": "delete_selected", "_selected_action": [dataset.pk], "post": "yes"},
    )
    assert Dataset.objects.filter(pk=dataset.pk).exists()
    dataset.refresh_from_db()
    assert dataset.name != "mine now"
    response = dataset.questions.first().responses.first()
    r = bob_client.post(_url("annotation_response_change", response.pk), {"text": "x"})
    assert r.status_code == 403


def test_bob_cannot_rename_a_model_in_alices_data(bob_client, alice):
    study = _owned_study(alice)
    llm = LLM.objects.filter(responses__question__dataset=study.dataset).first()
    r = bob_client.post(_url("annotation_llm_change", llm.pk), {"name": "renamed"})
    assert r.status_code in (403, 404)
    llm.refresh_from_db()
    assert llm.name != "renamed"


def test_bob_cannot_see_or_edit_alices_rubric(bob_client, alice):
    study = _owned_study(alice)
    rubric = Rubric.objects.create(key="alices", name_en="Alice's", mode="star", owner=alice)
    criterion = Criterion.objects.create(rubric=rubric, key="c1", label_en="c1", order=1)
    assert bob_client.get(_url("annotation_rubric_change", rubric.pk)).status_code == 404
    assert bob_client.get(_url("annotation_criterion_change", criterion.pk)).status_code == 404
    listing = bob_client.get(_url("annotation_rubric_changelist")).content.decode()
    assert "alices" not in listing and "llmeval2" in listing
    # Nor in the criteria's or the scores' filters (a plain list filter names every rubric).
    for page in ("annotation_criterion_changelist", "annotation_score_changelist"):
        body = bob_client.get(_url(page)).content.decode()
        assert "alices" not in body and "Alice&#x27;s" not in body, page
    type(study).objects.filter(pk=study.pk).update(rubric=rubric)
    r = bob_client.post(_url("annotation_rubric_change", rubric.pk), {"key": "x", "name_en": "x"})
    assert r.status_code == 404
    rubric.refresh_from_db()
    assert rubric.name_en == "Alice's"


def test_alice_edits_her_rubric_in_the_admin_only_while_no_study_uses_it(alice):
    client = Client()
    client.force_login(alice)
    rubric = Rubric.objects.create(key="alices", name_en="Alice's", mode="star", owner=alice)
    url = _url("annotation_rubric_change", rubric.pk)
    form = {"key": "alices", "name_en": "Renamed", "mode": "star",
            "criteria-TOTAL_FORMS": "0", "criteria-INITIAL_FORMS": "0"}  # fmt: skip
    assert client.post(url, form).status_code == 302
    rubric.refresh_from_db()
    assert rubric.name_en == "Renamed" and rubric.owner == alice
    study = _owned_study(alice)
    type(study).objects.filter(pk=study.pk).update(rubric=rubric)
    assert client.post(url, form | {"name_en": "Again"}).status_code == 403
    rubric.refresh_from_db()
    assert rubric.name_en == "Renamed"


def test_alices_results_are_404_for_bob(bob_client, alice):
    study = _owned_study(alice)
    rater = make_rater(Rater.Pool.CROWD)
    assignment = _works_on(rater, study)
    assert bob_client.get(_url("annotation_study_change", study.pk)).status_code == 404
    assert bob_client.get(_url("annotation_item_change", study.items.first().pk)).status_code == 404
    assert bob_client.get(_url("annotation_assignment_change", assignment.pk)).status_code == 404


def test_bob_does_not_see_alices_import_records(bob_client, alice):
    ImportRecord.objects.create(format="jsonl", user=alice, message="alice's secret file")
    page = bob_client.get(_url("annotation_importrecord_changelist"))
    assert page.context["cl"].result_count == 0


def test_bob_cannot_see_or_change_alices_judge(bob_client, alice):
    judge = judge_config_create(name="alice-judge", owner=alice)
    r = bob_client.get(_url("evaluation_judgeconfig_change", judge.pk))
    assert r.status_code == 404
    r = bob_client.post(
        _url("evaluation_judgeconfig_change", judge.pk), {"name": "x", "api_key_env": "HOME"}
    )
    assert r.status_code == 404
    judge.refresh_from_db()
    assert judge.api_key_env == "OPENAI_API_KEY"
    page = bob_client.get(_url("evaluation_judgeconfig_changelist"))
    assert b"alice-judge" not in page.content
    # Nor pick Alice's template for his own judge.
    template = prompt_template_create(
        key="alices-tpl", name="t", kind="star", parser="stars", user=STAR_PROMPT, owner=alice
    )
    assert bob_client.get(_url("evaluation_prompttemplate_change", template.pk)).status_code == 404


def test_bob_does_not_see_runs_of_alices_studies(bob_client, alice):
    study = _owned_study(alice)
    judge = judge_config_create(name="alice-judge-2", owner=alice)
    from evaluation.services import template_for_study

    run = JudgeRun.objects.create(
        study=study,
        judge=judge,
        template=template_for_study(judge=judge, study=study),
        price_in_per_1k=judge.price_in_per_1k,
        price_out_per_1k=judge.price_out_per_1k,
    )
    assert bob_client.get(_url("evaluation_judgerun_change", run.pk)).status_code == 404
    page = bob_client.get(_url("evaluation_judgerun_changelist"))
    assert page.context["cl"].result_count == 0


def test_builtin_templates_are_visible_but_read_only(bob_client):
    from evaluation.prompts import ensure_builtin_templates

    ensure_builtin_templates()
    builtin = PromptTemplate.objects.filter(builtin=True).first()
    assert bob_client.get(_url("evaluation_prompttemplate_change", builtin.pk)).status_code == 200
    r = bob_client.post(_url("evaluation_prompttemplate_change", builtin.pk), {"name": "x"})
    assert r.status_code == 403


def test_superusers_still_see_everything(client, alice):
    admin_user = User.objects.create_superuser("root", password="root-pass-123")
    client.force_login(admin_user)
    crowd = make_rater(Rater.Pool.CROWD)
    _works_on(crowd, _owned_study(alice))
    assert client.get(_url("annotation_rater_change", crowd.pk)).status_code == 200
    judge = judge_config_create(name="alice-judge-3", owner=alice)
    assert client.get(_url("evaluation_judgeconfig_change", judge.pk)).status_code == 200
    assert JudgeConfig.objects.count() == 1


@pytest.mark.parametrize("model", ["evaluation_judgerun", "evaluation_judgecall"])
def test_judge_runs_and_calls_are_not_added_by_hand(client, model):
    # A run is started with its pre-flight and plan; a call is the runner's record. An empty
    # row saved from the admin's add form was a NOT NULL error (a 409 about a conflict).
    client.force_login(User.objects.create_superuser("root", password="root-pass-123"))
    assert client.get(_url(f"{model}_add")).status_code == 403
    assert client.post(_url(f"{model}_add"), {}).status_code == 403
    assert not JudgeRun.objects.exists()
