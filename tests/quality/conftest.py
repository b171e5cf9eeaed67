"""A pairwise crowd study with constructed annotators: two careful ones, a straight-liner who
always picks the left side, a speeder, and a gold-failer; gold items and an attention check."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pytest

from annotation import checks
from annotation.models import LLM, Dataset, Item, Question, Rater, Response, Study
from tests.factories import study_over
from tests.ranking.conftest import rate

T0 = dt.datetime(2024, 5, 1, 9, 0, tzinfo=dt.UTC)
N_QUESTIONS = 6  # x 3 pairs = 18 regular items


@dataclass
class Crowd:
    study: Study
    raters: dict[str, Rater]
    items: list[Item]
    gold: list[Item]
    attention: Item


def _dataset() -> Dataset:
    dataset = Dataset.objects.create(name="crowd-quality")
    llms = [LLM.objects.get_or_create(name=n)[0] for n in ("m-good", "m-mid", "m-bad")]
    for i in range(N_QUESTIONS + 2):
        q = Question.objects.create(dataset=dataset, external_id=f"q{i}", text=f"Question {i}?")
        for j, llm in enumerate(llms):
            Response.objects.create(question=q, llm=llm, text="word " * (20 * (3 - j)))
    return dataset


def _truth(item: Item) -> str:
    """The better model wins (m-good > m-mid > m-bad); A is the lower response id."""
    order = {"m-good": 0, "m-mid": 1, "m-bad": 2}
    a, b = item.response_a.llm.name, item.response_b.llm.name
    return "A" if order[a] < order[b] else "B"


def _answer(who: str, item: Item, k: int) -> tuple[str, bool, float]:
    """(choice, left_is_a, seconds) of each constructed annotator."""
    truth, left = _truth(item), k % 2 == 0
    if who == "lefty":  # always the left side, whatever is there
        return ("A" if left else "B"), left, 40.0
    if who == "speeder":
        return truth, left, 0.5
    if who == "goldfail":
        return truth, left, 35.0
    return truth, left, 30.0 + k


@pytest.fixture
def crowd(organizer, pairwise_rubric) -> Crowd:
    dataset = _dataset()
    study = study_over(
        dataset,
        pairwise_rubric,
        owner=organizer,
        name="Crowd quality",
        selection={"question_ids": [f"q{i}" for i in range(N_QUESTIONS + 2)]},
        admit_crowd=True,
        check_rate=0.1,
    )
    items = list(study.items.select_related("response_a__llm", "response_b__llm").order_by("id"))
    gold, regular = items[-3:], items[:-3]
    records = [{"item_id": g.pk, "choices": [_truth(g)]} for g in gold]
    checks.gold_mark(study=study, marks=checks.marks_resolve(study, records))
    attention = checks.attention_check_create(
        study=study,
        instruction="Choose answer A as better.",
        text_a="Pick me",
        text_b="Not me",
        answer={"choices": ["A"]},
    )
    names = ("good1", "good2", "lefty", "speeder", "goldfail")
    raters = {
        n: Rater.objects.create(
            kind="human", pool="crowd", platform="prolific", external_id=f"PID-{n}"
        )
        for n in names
    }
    minute = 0
    for who, rater in raters.items():
        for k, item in enumerate(regular):
            minute += 1
            choice, left, secs = _answer(who, item, k)
            at = T0 + dt.timedelta(minutes=minute)
            rate(study, item, rater, at=at, choice=choice, left_is_a=left, seconds=secs)
        for item in gold:
            minute += 1
            wrong = {"A": "B", "B": "A"}[_truth(item)]
            choice = wrong if who == "goldfail" else _truth(item)
            rate(study, item, rater, at=T0 + dt.timedelta(minutes=minute), choice=choice)
        minute += 1
        att_choice = "B" if who == "lefty" else "A"
        rate(study, attention, rater, at=T0 + dt.timedelta(minutes=minute), choice=att_choice)
    return Crowd(study, raters, regular, gold, attention)
