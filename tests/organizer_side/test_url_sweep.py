"""Every URL, as organizer Bob, against organizer Alice's objects: never Alice's data.

The routes come from the URL resolver, so a new URL is swept without being listed here:

- a route whose path names an object (study, dataset, run, rater, item, assignment, ...) is
  opened with Alice's object, by GET and by POST: each answer is a 404 (or a 405 for a method the
  route does not take), at least one is a 404, and nothing of Alice's is in the body or changed;
- a route without an object (lists, forms, schema) is opened by GET, also with Alice's ids in the
  query where it takes some: no answer holds anything of Alice's;
- every GET is made twice, plain and as htmx (pages answer htmx with a partial template);
- a route whose path holds something this file does not know how to fill fails
  `test_every_route_is_swept` until it is added to KWARGS (or, if it is a public or annotator link,
  to OPEN with the reason it cannot reach an organizer's objects).

The admin has its own sweep (test_admin_scoping.py). Everything of Alice's is named with the
marker alice-secret, which Bob's own pages never contain.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from annotation.models import (
    LLM,
    Assignment,
    Criterion,
    Dataset,
    ImportRecord,
    Rater,
    Response,
    Rubric,
    Study,
)
from evaluation.models import JudgeRun
from evaluation.services import judge_config_create, prompt_template_create, template_for_study
from tests.factories import make_dataset, make_study

pytestmark = pytest.mark.django_db

SECRET = "alice-secret"

# Routes whose path names no organizer object: annotator links whose ids are unguessable public
# ids handed out by the organizer (the annotator tests cover who may use them). Routes without a
# path argument (the start page, sign-in, the API docs) are all swept as pages below.
OPEN = {
    "annotate:invite": "a signed, expiring invitation token",
    "annotate:study": "a study's public link (onsite studies need an invited account)",
    "annotate:next": "a study's public link",
    "annotate:done": "a study's public link",
    "annotate:previous_latest": "a study's public link",
    "annotate:crowd": "a study's crowd link, given to the platform",
    "annotate:join": "a study's public sign-up link",
}


@dataclass
class Route:
    name: str  # namespace:name
    pattern: str
    kwargs: tuple[str, ...]


def _routes(patterns: list, ns: str = "", prefix: str = "") -> Iterator[Route]:
    for p in patterns:
        if isinstance(p, URLResolver):
            if p.namespace == "admin":
                continue  # tests/organizer_side/test_admin_scoping.py
            inner = ns + (f"{p.namespace}:" if p.namespace else "")
            yield from _routes(p.url_patterns, inner, prefix + str(p.pattern))
        elif isinstance(p, URLPattern) and p.name:
            yield Route(ns + p.name, prefix + str(p.pattern), tuple(p.pattern.regex.groupindex))


ROUTES = [r for r in _routes(get_resolver().url_patterns) if r.name not in OPEN]
OBJECT_ROUTES = [r for r in ROUTES if r.kwargs]
LIST_ROUTES = [r for r in ROUTES if not r.kwargs]

# How to fill each path argument with Alice's objects (a name -> attribute of AliceObjects), or
# with a fixed valid value, so that only ownership can make the route refuse.
KWARGS: dict[str, Any] = {
    "study_id": "study",
    "dataset_id": "dataset",
    "run_id": "run",
    "judge_id": "judge",
    "rater_id": "rater",
    "item_id": "item",
    "rubric_id": "rubric",
    "assignment_pid": "assignment_pid",
    "what": "ratings",
    "platform": "prolific",
    "table": "leaderboard",
}
# `pk`, `fmt` and `action` differ per route; `key` (a rubric) too.
PER_ROUTE: dict[str, dict[str, Any]] = {
    "api-rubric": {"key": "rubric_key"},
    "api-dataset": {"pk": "dataset"},
    "api-question": {"pk": "question"},
    "api-response": {"pk": "response"},
    "api-study": {"pk": "study"},
    "api-study-export": {"pk": "study"},
    "organize:study_download": {"fmt": "csv"},
    "ranking:report-download": {"fmt": "xlsx"},
    "organize:study_status": {"action": "close"},
    "organize:study_exclusion": {"action": "exclude"},
}
# Objects every organizer reads, swept as list pages (none today: rubrics have an owner, and only
# the built-in ones are shared, docs/decisions/data.md).
SHARED: dict[str, dict[str, Any]] = {}

# Query strings naming Alice's objects, for routes that read ids from the query.
QUERIES: dict[str, list[dict[str, str]]] = {
    "api-questions": [{"dataset": "{dataset}"}, {"dataset": "{dataset_name}"}],
    "api-responses": [{"dataset": "{dataset}"}, {"question": "{question}"}],
    "organize:study_new": [{"dataset": "{dataset}"}, {"rubric": "{rubric}"}],
    "organize:rubrics": [{"copy": "{rubric}"}],
    "ranking:compare": [{"s1-study": "{study}", "s2-study": "{study}"}],
    "ranking:api-compare": [{"s1-study": "{study}", "s2-study": "{study}"}],
}


# Pages answer an htmx request with a fragment (a partial template): swept too.
HTMX = {"HX-Request": "true"}


@dataclass
class AliceObjects:
    study: int
    dataset: int
    dataset_name: str
    question: int
    response: int
    item: int
    rater: int
    assignment_pid: str
    run: int
    judge: int
    rubric: int
    rubric_key: str


@pytest.fixture
def alice_objects(organizer) -> AliceObjects:
    dataset = make_dataset(2, 2, questions=[f"{SECRET} question 1", f"{SECRET} question 2"])
    Dataset.objects.filter(pk=dataset.pk).update(name=f"{SECRET} dataset", owner=organizer)
    dataset.refresh_from_db()
    study = make_study(owner=organizer, dataset=dataset, ratings_per_item=1)
    Study.objects.filter(pk=study.pk).update(name=f"{SECRET} study")
    annotator = User.objects.create_user(f"{SECRET}-annotator", password="x-pass-123456")
    rater = Rater.objects.create(kind="human", pool="onsite", user=annotator, invited_by=organizer)
    item = study.items.order_by("pk")[0]
    assignment = Assignment.objects.create(study=study, item=item, rater=rater, seq=1)
    judge = judge_config_create(name=f"{SECRET} judge", owner=organizer)
    prompt_template_create(
        key=f"{SECRET}-tpl", name=f"{SECRET} template", kind="star", parser="stars",
        user="Question: {question}\nAnswer: {answer}\nRate it.", owner=organizer,
    )  # fmt: skip
    run = JudgeRun.objects.create(
        study=study, judge=judge, template=template_for_study(judge=judge, study=study),
        price_in_per_1k=judge.price_in_per_1k, price_out_per_1k=judge.price_out_per_1k,
    )  # fmt: skip
    ImportRecord.objects.create(format="jsonl", user=organizer, paths=[f"{SECRET}.jsonl"],
                                message=f"{SECRET} import")  # fmt: skip
    question = dataset.questions.order_by("pk")[0]
    own_llm = LLM.objects.create(name=f"{SECRET}-model")  # an LLM only Alice's dataset has
    Response.objects.create(question=question, llm=own_llm, text=f"{SECRET} answer")
    rubric = Rubric.objects.create(key=f"{SECRET}-rubric", name_en=f"{SECRET} rubric",
                                   mode="star", owner=organizer)  # fmt: skip
    Criterion.objects.create(rubric=rubric, key="secret", label_en=f"{SECRET} criterion")
    return AliceObjects(
        study=study.pk, dataset=dataset.pk, dataset_name=dataset.name, question=question.pk,
        response=question.responses.order_by("pk")[0].pk, item=item.pk, rater=rater.pk,
        assignment_pid=str(assignment.public_id), run=run.pk, judge=judge.pk,
        rubric=rubric.pk, rubric_key=rubric.key,
    )  # fmt: skip


@pytest.fixture
def bob(other_organizer) -> Client:
    client = Client()
    client.force_login(other_organizer)
    return client


def _fill(route: Route, alice: AliceObjects) -> dict[str, Any]:
    spec = {**KWARGS, **PER_ROUTE.get(route.name, {}), **SHARED.get(route.name, {})}
    return {k: getattr(alice, spec[k], spec[k]) for k in route.kwargs}


def _state(alice: AliceObjects) -> tuple:
    """What a successful request of Bob's would change."""
    study = Study.objects.get(pk=alice.study)
    rubric = Rubric.objects.filter(pk=alice.rubric).values_list("key", "name_en").first()
    return (
        rubric,
        Criterion.objects.filter(rubric_id=alice.rubric).count(),
        study.status,
        study.name,
        User.objects.get(rater__pk=alice.rater).is_active,
        JudgeRun.objects.get(pk=alice.run).status,
        study.items.count(),
        Assignment.objects.filter(study_id=alice.study).count(),
    )


def test_every_route_is_swept():
    """A route with a path argument this sweep cannot fill fails here: add it to KWARGS /
    PER_ROUTE, or to OPEN with the reason it cannot reach an organizer's objects."""
    unknown = {
        r.name: [k for k in r.kwargs if k not in {**KWARGS, **PER_ROUTE.get(r.name, {}),
                                                   **SHARED.get(r.name, {})}]
        for r in OBJECT_ROUTES
    }  # fmt: skip
    assert {name: ks for name, ks in unknown.items() if ks} == {}
    assert len(OBJECT_ROUTES) > 40 and len(LIST_ROUTES) > 15  # the resolver was read


@pytest.mark.parametrize(
    "route", [r for r in OBJECT_ROUTES if r.name not in SHARED], ids=lambda r: r.name
)
def test_another_organizers_object_is_not_found(route, bob, alice_objects):
    url = reverse(route.name, kwargs=_fill(route, alice_objects))
    before = _state(alice_objects)
    answers = {
        "GET": bob.get(url),
        "GET htmx": bob.get(url, headers=HTMX),
        "POST": bob.post(url, {"confirm": "merge", "active": "0"}),
    }
    for method, response in answers.items():
        assert response.status_code in (404, 405), (method, url, response.status_code)
        assert SECRET not in _body(response), (method, url)
    assert 404 in {r.status_code for r in answers.values()}
    assert _state(alice_objects) == before


def _body(response) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode(errors="replace").lower()
    return response.content.decode(errors="replace").lower()


def _queries(route: Route, alice: AliceObjects) -> list[dict[str, str]]:
    values = {k: str(v) for k, v in vars(alice).items()}
    return [{}] + [
        {k: v.format(**values) for k, v in q.items()} for q in QUERIES.get(route.name, [])
    ]


@pytest.mark.parametrize(
    "route", LIST_ROUTES + [r for r in OBJECT_ROUTES if r.name in SHARED], ids=lambda r: r.name
)
def test_pages_without_an_object_show_nothing_of_another_organizer(route, bob, alice_objects):
    url = reverse(route.name, kwargs=_fill(route, alice_objects))
    for query in _queries(route, alice_objects):
        for headers in ({}, HTMX):
            response = bob.get(url, query, headers=headers)
            assert response.status_code < 500, (url, query)
            assert SECRET not in _body(response), (url, query, headers, response.status_code)


def test_alice_sees_her_own(organizer, alice_objects):
    """The marker is reachable: the sweep would see it if a route leaked it."""
    client = Client()
    client.force_login(organizer)
    names = ("organize:studies", "judges:list", "api-datasets", "api-imports", "organize:rubrics")
    for name in names:
        assert SECRET in _body(client.get(reverse(name))), name
    assert SECRET in _body(client.get(reverse("organize:study", args=[alice_objects.study])))
