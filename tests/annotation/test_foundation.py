from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from annotation.models import LLM, Item, Rater, Response, Rubric, Study
from annotation.services import study_create


def test_builtin_rubrics_are_installed_with_both_languages(db):
    rubric = Rubric.objects.get(key="llmeval1")
    keys = [c.key for c in rubric.criteria.all()]
    assert keys == ["accuracy", "informativeness", "fluency", "logicality", "harmlessness"]
    for c in rubric.criteria.all():
        assert c.label_zh and c.label_en
        assert len(c.descriptions) == c.max_score - c.min_score + 1


def test_llmeval2_rubric_picks_criteria_by_question_kind(small_dataset, star_rubric):
    objective = small_dataset.questions.get(kind="objective")
    subjective = small_dataset.questions.get(kind="subjective")
    assert [c.key for c in star_rubric.criteria_for(objective)] == [
        "correctness",
        "explanation_correctness",
    ]
    assert {c.key for c in star_rubric.criteria_for(subjective)} == {
        "accuracy",
        "informativeness",
        "fluency",
        "logicality",
    }


def test_study_create_star_makes_one_item_per_response(small_dataset, star_rubric):
    study = study_create(name="s", dataset=small_dataset, mode="star", rubric=star_rubric)
    assert study.items.count() == Response.objects.count() == 6
    assert not study.items.filter(response_b__isnull=False).exists()


@pytest.mark.parametrize(
    ("design", "extra", "expected"),
    [("all", {}, 6), ("baseline", {}, 4), ("sampled", {"pairs_per_question": 2}, 4)],
)
def test_study_create_pairwise_designs(small_dataset, pairwise_rubric, design, extra, expected):
    if design == "baseline":
        extra = {"baseline_llm": LLM.objects.get(name="model-x")}
    study = study_create(
        name=f"p-{design}",
        dataset=small_dataset,
        mode="pairwise",
        rubric=pairwise_rubric,
        pair_design=design,
        **extra,
    )
    items = list(study.items.all())
    assert len(items) == expected
    assert all(i.response_a_id < i.response_b_id for i in items)
    assert all(i.response_a.question_id == i.response_b.question_id for i in items)


def test_study_create_refuses_a_rubric_of_the_other_mode(small_dataset, pairwise_rubric):
    with pytest.raises(ValidationError):
        study_create(name="bad", dataset=small_dataset, mode="star", rubric=pairwise_rubric)
    assert not Study.objects.exists()


def test_database_refuses_a_pair_in_non_canonical_order(small_dataset, pairwise_rubric):
    study = study_create(name="p", dataset=small_dataset, mode="pairwise", rubric=pairwise_rubric)
    item = study.items.first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Item.objects.create(
            study=study,
            question=item.question,
            response_a=item.response_b,
            response_b=item.response_a,
        )


def test_database_refuses_a_judge_in_a_human_pool(db):
    with pytest.raises(IntegrityError), transaction.atomic():
        Rater.objects.create(kind="judge", pool="onsite", name="gpt")
