"""Small rated studies built with the shared factories (tests/factories.py), with known ratings: star (three human pools and a
judge, repeats, a hidden hint) and pairwise (humans and a judge, both sides, a swapped repeat)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

import pytest
from django.urls import reverse

from annotation.models import Item, Rater, Rating, Study

# Test modules import these factories from here.
from tests.factories import make_raters, rate, study_over

__all__ = ["T0", "Built", "make_raters", "new_rating", "rate"]

T0 = dt.datetime(2024, 3, 1, 9, 0, tzinfo=dt.UTC)


@dataclass
class Built:
    study: Study
    raters: dict[str, Rater]
    items: list[Item]
    ratings: list[Rating] = field(default_factory=list)


def new_rating(built: Built) -> Rating:
    """One more rating on the star study: the crowd rater repeats model-y's objective answer
    days later, as a rating arriving after a report was built."""
    return rate(
        built.study,
        built.items[1],
        built.raters["crowd"],
        at=T0.replace(day=5),
        scores={"correctness": 1, "explanation_correctness": 1},
        repeat_of=built.ratings[7].assignment,
    )


# Star scores per rater, one row per model x, y, z: on the objective question Q1 (correctness 1-3,
# explanation 1-2) and on the subjective Q2 (accuracy 1-5, informativeness, fluency, logicality
# 1-3). The judge is generous on model-z.
STAR_SCORES = {
    "onsite": [(3, 2), (2, 1), (1, 1)],
    "crowd": [(3, 2), (2, 2), (1, 1)],
    "public": [(2, 1), (3, 2), (2, 1)],
    "judge": [(3, 2), (2, 1), (3, 2)],
}
SUBJECTIVE_SCORES = {
    "onsite": [(5, 3, 3, 3), (3, 2, 3, 2), (2, 1, 2, 1)],
    "crowd": [(4, 3, 3, 3), (3, 2, 2, 2), (1, 1, 2, 1)],
    "public": [(2, 1, 1, 2), (5, 3, 3, 3), (3, 2, 3, 2)],
    "judge": [(5, 3, 3, 3), (4, 2, 3, 3), (5, 3, 3, 3)],
}
OBJECTIVE = ("correctness", "explanation_correctness")
SUBJECTIVE = ("accuracy", "informativeness", "fluency", "logicality")


@pytest.fixture
def star_study(organizer, small_dataset, star_rubric) -> Built:
    """Both questions: 6 items (3 models x 2 questions) x 4 raters (onsite, crowd, public, the
    judge), plus the onsite rater's repeat of model-x's objective answer (a different
    correctness). Hints are randomised; the public rater never saw one."""
    study = study_over(
        small_dataset,
        star_rubric,
        owner=organizer,
        name="Star study",
        hint_policy=Study.HintPolicy.RANDOM,
    )
    items = list(study.items.order_by("question__external_id", "response_a__llm__name"))
    raters = make_raters()
    built = Built(study, raters, items)
    minute = 0
    for pool in STAR_SCORES:
        rows = [dict(zip(OBJECTIVE, r, strict=True)) for r in STAR_SCORES[pool]]
        rows += [dict(zip(SUBJECTIVE, r, strict=True)) for r in SUBJECTIVE_SCORES[pool]]
        for item, scores in zip(items, rows, strict=True):
            minute += 1
            built.ratings.append(
                rate(
                    study,
                    item,
                    raters[pool],
                    at=T0 + dt.timedelta(minutes=minute),
                    scores=scores,
                    hint_shown=pool != "public",
                )
            )
    first = built.ratings[0].assignment
    built.ratings.append(
        rate(
            study,
            items[0],
            raters["onsite"],
            at=T0 + dt.timedelta(days=2),
            scores={"correctness": 2, "explanation_correctness": 2},
            repeat_of=first,
            hint_shown=True,
        )
    )
    return built


# (pair index, rater, choice, left_is_a); pairs are (x, y), (x, z), (y, z) by model name.
PAIR_CHOICES = [
    (0, "crowd", "A", True),
    (1, "crowd", "A", False),
    (2, "crowd", "tie", True),
    (0, "public", "B", False),
    (1, "public", "A", True),
    (2, "public", "both_bad", True),
    (0, "judge", "A", True),
    (1, "judge", "B", True),
    (2, "judge", "B", True),
]


@pytest.fixture
def pair_study(organizer, small_dataset, pairwise_rubric) -> Built:
    """Pairwise, objective question: the three pairs rated by crowd, public and the judge, in
    time order, plus the judge's repeat of the first pair with the sides swapped."""
    study = study_over(
        small_dataset,
        pairwise_rubric,
        owner=organizer,
        name="Pair study",
        selection={"kinds": ["objective"]},
    )
    items = sorted(
        study.items.select_related("response_a__llm", "response_b__llm"),
        key=lambda i: (i.response_a.llm.name, i.response_b.llm.name),
    )
    raters = make_raters("p-")
    built = Built(study, raters, items)
    for minute, (idx, pool, choice, left) in enumerate(PAIR_CHOICES, start=1):
        built.ratings.append(
            rate(
                study,
                items[idx],
                raters[pool],
                at=T0 + dt.timedelta(minutes=minute),
                choice=choice,
                left_is_a=left,
            )
        )
    judge_first = built.ratings[6].assignment
    built.ratings.append(
        rate(
            study,
            items[0],
            raters["judge"],
            at=T0 + dt.timedelta(hours=5),
            choice="A",
            repeat_of=judge_first,
            left_is_a=False,
        )
    )
    return built


def page_charts(client, study, query: dict | None = None, lang: str | None = None) -> dict:
    """The report page's charts as the page gets them: its htmx request to ranking:report-charts
    under the same filters, read back from the out-of-band swaps; {group id: [(data URI, alt)]}."""
    headers = {"HX-Request": "true"}
    if lang:
        headers["Accept-Language"] = lang
    response = client.get(
        reverse("ranking:report-charts", args=[study.pk]), query or {}, headers=headers
    )
    assert response.status_code == 200, response.content[:300]
    html = response.content.decode()
    groups = re.findall(
        r'<div class="charts" id="charts-([\w-]+)" hx-swap-oob="true">(.*?)</div>', html, re.S
    )
    return {
        gid: re.findall(r'<figure><img src="([^"]+)" alt="([^"]*)"></figure>', body)
        for gid, body in groups
    }
