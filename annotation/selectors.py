"""Reads shared by organizer pages, the API and the export command."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet
from django.utils.translation import gettext as _

from annotation.limits import parse_id
from annotation.models import (
    LLM,
    Dataset,
    Item,
    PairChoice,
    Question,
    Rating,
    Response,
    Rubric,
    Score,
    Study,
)
from annotation.permissions import datasets_visible, llms_visible, rubrics_visible, studies_for


def dataset_list(user) -> QuerySet[Dataset]:
    """The datasets `user` may read (annotation.permissions.datasets_visible)."""
    qs = datasets_visible(user).annotate(n_questions=Count("questions", distinct=True))
    return qs.order_by("name")


def _in_dataset(qs: QuerySet, dataset: int | str, *, path: str) -> QuerySet:
    """Filter by a dataset given as its id or its name."""
    if (pk := parse_id(dataset)) is not None:
        return qs.filter(**{f"{path}_id": pk})
    return qs.filter(**{f"{path}__name": dataset})


def _given(**lookups: Any) -> dict[str, Any]:
    """The lookups whose value was given: a filter left out or empty filters nothing."""
    return {lookup: value for lookup, value in lookups.items() if value}


MAX_SEARCH = 1000


def question_list(user, query: Mapping[str, str] | None = None) -> QuerySet[Question]:
    """Questions of the datasets `user` may read, with their number of responses. `query` (the
    data API's query string) filters by dataset (id or name), task_type, kind and search (in the
    text and the external id); another organizer's dataset filters to nothing, like a missing one."""
    q = query or {}
    qs = Question.objects.filter(dataset__in=datasets_visible(user))
    qs = qs.select_related("dataset").annotate(n_responses=Count("responses"))
    if q.get("dataset"):
        qs = _in_dataset(qs, q["dataset"], path="dataset")
    qs = qs.filter(**_given(task_type=q.get("task_type"), kind=q.get("kind")))
    if search := q.get("search"):
        if len(search) > MAX_SEARCH:  # SQLite refuses a LIKE pattern over 50,000 bytes
            said = _("Search for at most %(n)d characters.") % {"n": MAX_SEARCH}
            raise ValidationError({"search": said})
        qs = qs.filter(Q(text__icontains=search) | Q(external_id__icontains=search))
    return qs.order_by("dataset_id", "id")


def response_list(user, query: Mapping[str, str] | None = None) -> QuerySet[Response]:
    """Responses in the datasets `user` may read, with their question and LLM. `query` (the data
    API's query string) filters by dataset (id or name), question (id), llm (name) and task_type."""
    q = query or {}
    qs = Response.objects.filter(question__dataset__in=datasets_visible(user))
    qs = qs.select_related("question__dataset", "llm")
    if q.get("dataset"):
        qs = _in_dataset(qs, q["dataset"], path="question__dataset")
    qs = qs.filter(
        **_given(
            question_id=parse_id(q.get("question", "")),
            llm__name=q.get("llm"),
            question__task_type=q.get("task_type"),
        )
    )
    return qs.order_by("question_id", "llm__name")


def llm_list(user) -> QuerySet[LLM]:
    """The LLMs with answers in the datasets `user` may read, and how many answers they have
    there (superusers: every LLM and all its answers)."""
    if user.is_superuser:
        return llms_visible(user).annotate(n_responses=Count("responses")).order_by("name")
    seen = Q(responses__question__dataset__in=datasets_visible(user))
    return llms_visible(user).annotate(n_responses=Count("responses", filter=seen)).order_by("name")


def rubric_list(user) -> QuerySet[Rubric]:
    """The rubrics `user` may read (annotation.permissions.rubrics_visible), with their criteria
    and whether a study uses them (`in_use`: not how many, nor whose)."""
    qs = rubrics_visible(user).annotate(in_use=Exists(Study.objects.filter(rubric=OuterRef("pk"))))
    return qs.prefetch_related("criteria").order_by("-builtin", "key", "pk")


def study_list_for(user) -> QuerySet[Study]:
    return (
        studies_for(user)
        .select_related("dataset", "rubric", "owner", "baseline_llm")
        .annotate(n_items=Count("items", distinct=True))
    )


def study_questions_without_criteria(study: Study) -> tuple[int, list[str]]:
    """How many of a star study's questions no criterion of its rubric applies to, and the first
    few of their ids. Criteria apply by question kind or answer type (LLMEval-2's to objective or
    subjective questions), so a question without a kind falls through such a rubric: annotators
    would see no stars (an empty rating still counts towards N) and a judge cannot score it."""
    criteria = list(study.rubric.criteria.all())
    if study.mode != Rubric.Mode.STAR or not any(c.applies_to for c in criteria):
        return 0, []
    questions = Question.objects.filter(items__study=study).distinct()
    combos = questions.values_list("kind", "answer_type").distinct()
    missing = [
        Q(kind=kind, answer_type=answer_type)
        for kind, answer_type in combos
        if not any(c.applies(Question(kind=kind, answer_type=answer_type)) for c in criteria)
    ]
    if not missing:
        return 0, []
    any_missing = Q()
    for condition in missing:
        any_missing |= condition
    uncovered = questions.filter(any_missing).order_by("external_id")
    return uncovered.count(), list(uncovered.values_list("external_id", flat=True)[:3])


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
STAR_COLUMNS = [*COMMON, "model", "response_id", "criterion", "score", *TIMES, "check_kind"]
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
    "check_kind",
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


def _common(study: Study, r: Mapping[str, Any]) -> dict[str, Any]:
    """The columns every exported rating row has, star or pairwise, from a `_values` row."""
    served, submitted = r["served_at"], r["submitted_at"]
    return {
        "study": study.name,
        "item": r["item_id"],
        "assignment": str(r["assignment_public_id"]),
        "rater": r["rater_pseudonym"],
        "rater_kind": r["rater_kind"],
        "rater_pool": r["rater_pool"],
        "question_id": r["question_id"],
        "task_type": r["task_type"],
        "question_kind": r["question_kind"],
        "hint_shown": r["hint_shown"],
        "is_repeat": r["is_repeat"],
        "served_at": served,
        "submitted_at": submitted,
        "duration_s": (submitted - served).total_seconds() if served and submitted else None,
        "active_ms": r["active_ms"],
        "comment": r["comment"],
        "check_kind": r["check_kind"],
    }


def _value_rows(
    qs: QuerySet[Any], *, rating: str = "", chunk: int = 2000, **extra: str
) -> Iterator[dict[str, Any]]:
    """`qs.values()` rows with the common columns and `extra` (column=path from qs); `rating` is
    the path from qs to the rating (none: qs are ratings)."""
    to = f"{rating}__" if rating else ""
    common = {
        "comment": "comment",
        "item_id": "item_id",
        "rater_pseudonym": "rater__pseudonym",
        "rater_kind": "rater__kind",
        "rater_pool": "rater__pool",
        "assignment_public_id": "assignment__public_id",
        "hint_shown": "assignment__hint_shown",
        "is_repeat": "assignment__is_repeat",
        "served_at": "assignment__served_at",
        "submitted_at": "assignment__submitted_at",
        "active_ms": "assignment__active_ms",
        "question_id": "item__question__external_id",
        "task_type": "item__question__task_type",
        "question_kind": "item__question__kind",
        "check_kind": "item__check_kind",
    }
    fields = {name: to + path for name, path in common.items()} | extra
    # A column named as the field it reads is a plain name: values() refuses an alias for it.
    names = [name for name, path in fields.items() if path == name]
    aliases = {name: F(path) for name, path in fields.items() if path != name}
    return qs.values(*names, **aliases).iterator(chunk_size=chunk)


def _pairwise_export_rows(study: Study) -> Iterator[dict[str, Any]]:
    rows = _value_rows(
        Rating.objects.filter(item__study=study).order_by("id"),
        choice="choice",
        left_is_a="assignment__left_is_a",
        model_a="item__response_a__llm__name",
        model_b="item__response_b__llm__name",
    )
    for r in rows:
        a, b, choice = r["model_a"], r["model_b"], r["choice"]
        left, right = (a, b) if r["left_is_a"] else (b, a)
        yield _common(study, r) | {
            "model_a": a,
            "model_b": b,
            "choice": choice,
            "left_model": left,
            "right_model": right,
            "choice_shown": (
                PairChoice(choice).shown(left_is_a=r["left_is_a"])
                if choice in PairChoice.values
                else choice
            ),
            "winner": {"A": a, "B": b}.get(choice, ""),
        }


def _star_export_rows(study: Study) -> Iterator[dict[str, Any]]:
    rows = _value_rows(
        Score.objects.filter(rating__item__study=study).order_by(
            "rating_id", "criterion__order", "criterion_id"
        ),
        rating="rating",
        chunk=4000,
        score="value",
        criterion_key="criterion__key",
        model="rating__item__response_a__llm__name",
        response_pk="rating__item__response_a_id",
        response_external_id="rating__item__response_a__external_id",
    )
    for r in rows:
        yield _common(study, r) | {
            "model": r["model"],
            "response_id": r["response_external_id"] or str(r["response_pk"]),
            "criterion": r["criterion_key"],
            "score": r["score"],
        }


def rating_export_rows(study: Study) -> Iterator[dict[str, Any]]:
    """One row per rating x criterion (star) or per rating (pairwise); raters by pseudonym only.
    The keys are the export's columns (`rating_columns`), which fix their order."""
    if study.mode == Rubric.Mode.PAIRWISE:
        return _pairwise_export_rows(study)
    return _star_export_rows(study)


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
