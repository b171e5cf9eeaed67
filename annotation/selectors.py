"""Reads shared by organizer pages, the API and the export command."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db.models import Count, F, Q, QuerySet

from annotation.limits import parse_id
from annotation.models import LLM, Dataset, Item, Question, Rating, Response, Rubric, Score, Study
from annotation.permissions import studies_for


def dataset_list() -> QuerySet[Dataset]:
    return Dataset.objects.annotate(n_questions=Count("questions", distinct=True)).order_by("name")


def _in_dataset(qs: QuerySet, dataset: int | str, *, path: str) -> QuerySet:
    """Filter by a dataset given as its id or its name."""
    if (pk := parse_id(dataset)) is not None:
        return qs.filter(**{f"{path}_id": pk})
    return qs.filter(**{f"{path}__name": dataset})


def question_list(
    *,
    dataset: int | str | None = None,
    task_type: str | None = None,
    kind: str | None = None,
    search: str | None = None,
) -> QuerySet[Question]:
    qs = Question.objects.select_related("dataset").annotate(n_responses=Count("responses"))
    if dataset:
        qs = _in_dataset(qs, dataset, path="dataset")
    if task_type:
        qs = qs.filter(task_type=task_type)
    if kind:
        qs = qs.filter(kind=kind)
    if search:
        qs = qs.filter(Q(text__icontains=search) | Q(external_id__icontains=search))
    return qs.order_by("dataset_id", "id")


def response_list(
    *,
    dataset: int | str | None = None,
    question: int | None = None,
    llm: str | None = None,
    task_type: str | None = None,
) -> QuerySet[Response]:
    qs = Response.objects.select_related("question__dataset", "llm")
    if dataset:
        qs = _in_dataset(qs, dataset, path="question__dataset")
    if question:
        qs = qs.filter(question_id=question)
    if llm:
        qs = qs.filter(llm__name=llm)
    if task_type:
        qs = qs.filter(question__task_type=task_type)
    return qs.order_by("question_id", "llm__name")


def llm_list() -> QuerySet[LLM]:
    return LLM.objects.annotate(n_responses=Count("responses")).order_by("name")


def rubric_list() -> QuerySet[Rubric]:
    return Rubric.objects.prefetch_related("criteria").order_by("key")


def study_list_for(user) -> QuerySet[Study]:
    return (
        studies_for(user)
        .select_related("dataset", "rubric", "owner", "baseline_llm")
        .annotate(n_items=Count("items", distinct=True))
    )


def study_find_for(user, ref: str | int) -> Study | None:
    """A study by id or exact name, among those the user may see."""
    qs = studies_for(user)
    ref = str(ref)
    pk = parse_id(ref)
    found = qs.filter(pk=pk).first() if pk is not None else None
    return found or qs.filter(name=ref).first()


# --- exports ----------------------------------------------------------------------------------

COMMON = [
    "study",
    "item",
    "assignment",
    "rater",
    "rater_kind",
    "rater_pool",
    "question_id",
    "task_type",
    "question_kind",
]
TIMES = [
    "hint_shown",
    "is_repeat",
    "served_at",
    "submitted_at",
    "duration_s",
    "active_ms",
    "comment",
]
STAR_COLUMNS = [*COMMON, "model", "response_id", "criterion", "score", *TIMES]
PAIR_COLUMNS = [
    *COMMON,
    "model_a",
    "model_b",
    "choice",
    "left_model",
    "right_model",
    "choice_shown",
    "winner",
    *TIMES,
]
RESPONSE_COLUMNS = [
    "dataset",
    "question_id",
    "task_type",
    "subcategory",
    "question_kind",
    "answer_type",
    "question",
    "reference",
    "model",
    "response_id",
    "response",
    "length",
]


def rating_columns(study: Study) -> list[str]:
    return PAIR_COLUMNS if study.mode == Rubric.Mode.PAIRWISE else STAR_COLUMNS


def _times(a: dict[str, Any]) -> dict[str, Any]:
    served, submitted = a["served_at"], a["submitted_at"]
    return {
        "hint_shown": a["hint_shown"],
        "is_repeat": a["is_repeat"],
        "served_at": served,
        "submitted_at": submitted,
        "duration_s": (submitted - served).total_seconds() if served and submitted else None,
        "active_ms": a["active_ms"],
        "comment": a["comment"],
    }


_SHOWN = {  # canonical choice -> what the rater clicked, given whether A was on the left
    (True, "A"): "left",
    (True, "B"): "right",
    (False, "A"): "right",
    (False, "B"): "left",
}


def rating_export_rows(study: Study) -> Iterator[dict[str, Any]]:
    """One row per rating x criterion (star) or per rating (pairwise); raters by pseudonym only."""
    if study.mode == Rubric.Mode.PAIRWISE:
        rows = (
            Rating.objects.filter(item__study=study)
            .order_by("id")
            .values(
                "id",
                "choice",
                "comment",
                "item_id",
                rater_pseudonym=F("rater__pseudonym"),
                rater_kind=F("rater__kind"),
                rater_pool=F("rater__pool"),
                assignment_public_id=F("assignment__public_id"),
                hint_shown=F("assignment__hint_shown"),
                is_repeat=F("assignment__is_repeat"),
                left_is_a=F("assignment__left_is_a"),
                served_at=F("assignment__served_at"),
                submitted_at=F("assignment__submitted_at"),
                active_ms=F("assignment__active_ms"),
                question_id=F("item__question__external_id"),
                task_type=F("item__question__task_type"),
                question_kind=F("item__question__kind"),
                model_a=F("item__response_a__llm__name"),
                model_b=F("item__response_b__llm__name"),
            )
        )
        for r in rows.iterator(chunk_size=2000):
            left, right = (
                (r["model_a"], r["model_b"]) if r["left_is_a"] else (r["model_b"], r["model_a"])
            )
            choice = r["choice"]
            winner = {"A": r["model_a"], "B": r["model_b"]}.get(choice, "")
            yield {
                "study": study.name,
                "item": r["item_id"],
                "assignment": str(r["assignment_public_id"]),
                "rater": r["rater_pseudonym"],
                "rater_kind": r["rater_kind"],
                "rater_pool": r["rater_pool"],
                "question_id": r["question_id"],
                "task_type": r["task_type"],
                "question_kind": r["question_kind"],
                "model_a": r["model_a"],
                "model_b": r["model_b"],
                "choice": choice,
                "left_model": left,
                "right_model": right,
                "choice_shown": _SHOWN.get((r["left_is_a"], choice), choice),
                "winner": winner,
                **_times(r),
            }
        return
    rows = (
        Score.objects.filter(rating__item__study=study)
        .order_by("rating_id", "criterion__order", "criterion_id")
        .values(
            "value",
            criterion_key=F("criterion__key"),
            comment=F("rating__comment"),
            item_id=F("rating__item_id"),
            rater_pseudonym=F("rating__rater__pseudonym"),
            rater_kind=F("rating__rater__kind"),
            rater_pool=F("rating__rater__pool"),
            assignment_public_id=F("rating__assignment__public_id"),
            hint_shown=F("rating__assignment__hint_shown"),
            is_repeat=F("rating__assignment__is_repeat"),
            served_at=F("rating__assignment__served_at"),
            submitted_at=F("rating__assignment__submitted_at"),
            active_ms=F("rating__assignment__active_ms"),
            question_id=F("rating__item__question__external_id"),
            task_type=F("rating__item__question__task_type"),
            question_kind=F("rating__item__question__kind"),
            model=F("rating__item__response_a__llm__name"),
            response_pk=F("rating__item__response_a_id"),
            response_external_id=F("rating__item__response_a__external_id"),
        )
    )
    for r in rows.iterator(chunk_size=4000):
        yield {
            "study": study.name,
            "item": r["item_id"],
            "assignment": str(r["assignment_public_id"]),
            "rater": r["rater_pseudonym"],
            "rater_kind": r["rater_kind"],
            "rater_pool": r["rater_pool"],
            "question_id": r["question_id"],
            "task_type": r["task_type"],
            "question_kind": r["question_kind"],
            "model": r["model"],
            "response_id": r["response_external_id"] or str(r["response_pk"]),
            "criterion": r["criterion_key"],
            "score": r["value"],
            **_times(r),
        }


def response_export_rows(study: Study) -> Iterator[dict[str, Any]]:
    """Every response that appears in the study's items, once."""
    ids = set(Item.objects.filter(study=study).values_list("response_a_id", flat=True))
    ids |= set(
        Item.objects.filter(study=study, response_b__isnull=False).values_list(
            "response_b_id", flat=True
        )
    )
    rows = (
        Response.objects.filter(id__in=ids)
        .order_by("question_id", "llm__name")
        .values(
            "id",
            "external_id",
            "text",
            "length",
            dataset=F("question__dataset__name"),
            question_ext=F("question__external_id"),
            task_type=F("question__task_type"),
            subcategory=F("question__subcategory"),
            question_kind=F("question__kind"),
            answer_type=F("question__answer_type"),
            question_text=F("question__text"),
            reference=F("question__reference"),
            model=F("llm__name"),
        )
    )
    for r in rows.iterator(chunk_size=2000):
        yield {
            "dataset": r["dataset"],
            "question_id": r["question_ext"],
            "task_type": r["task_type"],
            "subcategory": r["subcategory"],
            "question_kind": r["question_kind"],
            "answer_type": r["answer_type"],
            "question": r["question_text"],
            "reference": r["reference"],
            "model": r["model"],
            "response_id": r["external_id"] or str(r["id"]),
            "response": r["text"],
            "length": r["length"],
        }
