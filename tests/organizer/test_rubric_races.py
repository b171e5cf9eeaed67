"""A rubric deleted while a study (page, API, import) is being made with it, on PostgreSQL: the
delete holds the rubric's row until it commits, and the study's insert waits for it, then meets
a rubric that is gone. That is a refusal (the rubric does not exist), never a 500 or a study
without its rubric (real threads, each on its own connection)."""

from __future__ import annotations

import threading
import time

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, connections, transaction

from annotation.models import Rubric, Study
from annotation.rubric_services import CriterionSpec, rubric_create, rubric_delete
from annotation.services import study_create
from tests.factories import make_dataset


@pytest.fixture
def _needs_postgres():
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL (set DATABASE_URL=postgres://...)")


def _rubric(owner) -> Rubric:
    spec = CriterionSpec("ok", "OK", "好", 1, 3, [])
    data = {"key": "mine", "name_en": "Mine", "name_zh": "", "description": "", "criteria": [spec]}
    return rubric_create(data, owner=owner)


def _delete_slowly(rubric: Rubric, locked: threading.Event) -> None:
    """Delete the rubric, then hold the transaction open a moment before committing."""
    try:
        with transaction.atomic():
            rubric_delete(rubric)
            locked.set()
            time.sleep(1.0)
    finally:
        connections.close_all()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("_needs_postgres")
def test_a_study_made_with_a_rubric_being_deleted_is_refused(organizer):
    rubric, dataset = _rubric(organizer), make_dataset(2, 2)
    locked, outcomes = threading.Event(), []
    deleter = threading.Thread(target=_delete_slowly, args=(rubric, locked))
    deleter.start()
    assert locked.wait(5)
    try:
        study_create(owner=organizer, name="s", dataset=dataset, mode="star", rubric=rubric)
        outcomes.append("created")
    except ValidationError as e:
        outcomes.append(" ".join(e.messages))
    deleter.join()
    assert not Rubric.objects.filter(pk=rubric.pk).exists()
    assert not Study.objects.filter(name="s").exists()
    assert outcomes and "rubric" in outcomes[0].lower(), outcomes


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("_needs_postgres")
def test_an_import_with_a_rubric_being_deleted_is_refused_with_nothing_written(organizer, tmp_path):
    import json

    from annotation.importers import ImportRefused, dataset_import
    from annotation.models import Question, Rating

    rubric = _rubric(organizer)
    lines = [
        {"type": "question", "question_id": "q1", "text": "1+1?"},
        {"type": "response", "question_id": "q1", "llm": "m1", "text": "2"},
        {"type": "rating", "question_id": "q1", "llm": "m1", "rater": "ann", "scores": {"ok": 2}},
    ]
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines), encoding="utf-8")
    locked = threading.Event()
    deleter = threading.Thread(target=_delete_slowly, args=(rubric, locked))
    deleter.start()
    assert locked.wait(5)
    with pytest.raises(ImportRefused, match="rubric"):
        dataset_import(
            format="jsonl", paths=[path], user=organizer, dataset="d", rubric="mine",
            progress=False,
        )  # fmt: skip
    deleter.join()
    assert not Rubric.objects.filter(pk=rubric.pk).exists()
    assert not Study.objects.exists() and not Question.objects.exists()
    assert not Rating.objects.exists()


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("_needs_postgres")
def test_an_edit_while_a_study_is_being_made_with_the_rubric_waits_and_is_refused(organizer):
    """The study holds its rubric from the start: the edit waits for the study to commit, then
    finds it in use (409, criteria unchanged) instead of changing the criteria under it."""
    from annotation.rubric_services import RubricInUse, rubric_update

    rubric, dataset = _rubric(organizer), make_dataset(2, 2)
    made = threading.Event()

    def make_study_slowly() -> None:
        try:
            with transaction.atomic():
                study_create(owner=organizer, name="s", dataset=dataset, mode="star", rubric=rubric)
                made.set()
                time.sleep(1.0)
        finally:
            connections.close_all()

    maker = threading.Thread(target=make_study_slowly)
    maker.start()
    assert made.wait(5)
    spec = CriterionSpec("other", "Other", "", 1, 5, [])
    data = {"key": "mine", "name_en": "Changed", "name_zh": "", "description": "",
            "criteria": [spec]}  # fmt: skip
    with pytest.raises(RubricInUse):
        rubric_update(rubric, data)
    maker.join()
    rubric.refresh_from_db()
    assert rubric.name_en == "Mine" and list(rubric.criteria.values_list("key", flat=True)) == [
        "ok"
    ]
    assert Study.objects.filter(name="s", rubric=rubric).exists()
