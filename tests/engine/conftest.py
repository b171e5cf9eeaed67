"""Fixtures for the assignment engine and the annotator / organizer pages."""

from __future__ import annotations

import itertools

import pytest
from django.contrib.auth.models import User

from annotation.models import LLM, Dataset, Question, Rater, Response, Rubric, Study
from annotation.services import study_create, study_set_status

_names = itertools.count()


def make_dataset(n_questions: int = 4, n_llms: int = 3, *, text=None, kind="subjective"):
    dataset = Dataset.objects.create(name=f"ds-{next(_names)}")
    llms = [LLM.objects.get_or_create(name=f"secret-model-{j}")[0] for j in range(n_llms)]
    for i in range(n_questions):
        q = Question.objects.create(
            dataset=dataset,
            external_id=f"Q{i}",
            text=f"Question number {i}?",
            kind=kind,
            reference=f"Reference answer {i}",
        )
        for j, llm in enumerate(llms):
            body = text if text is not None else f"Answer {i}-{j}: " + "words " * (j + 3)
            Response.objects.create(question=q, llm=llm, external_id=f"resp-{i}-{j}", text=body)
    return dataset


def make_study(
    *,
    owner=None,
    mode="star",
    n_questions=4,
    n_llms=3,
    status=Study.Status.LIVE,
    text=None,
    **design,
) -> Study:
    dataset = make_dataset(n_questions, n_llms, text=text)
    rubric = Rubric.objects.get(key="llmeval2" if mode == "star" else "pairwise")
    design.setdefault("repeat_rate", 0.0)
    study = study_create(
        name=f"study-{next(_names)}",
        dataset=dataset,
        mode=mode,
        rubric=rubric,
        owner=owner,
        **design,
    )
    if status != Study.Status.DRAFT:
        study_set_status(study=study, status=Study.Status.LIVE)
        if status != Study.Status.LIVE:
            study_set_status(study=study, status=status)
    study.refresh_from_db()
    return study


def make_rater(pool=Rater.Pool.ONSITE, **kw) -> Rater:
    n = next(_names)
    if pool == Rater.Pool.ONSITE and "user" not in kw:
        kw["user"] = User.objects.create_user(f"annotator{n}")
    if pool == Rater.Pool.CROWD:
        kw.setdefault("platform", "prolific")
        kw.setdefault("external_id", f"worker{n}")
    return Rater.objects.create(kind=Rater.Kind.HUMAN, pool=pool, **kw)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # The default hasher takes most of a test's time when it creates a handful of users.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _english():
    # A request with a Chinese Accept-Language leaves its language active in this thread.
    from django.utils import translation

    with translation.override("en"):
        yield


@pytest.fixture
def star_study(db, organizer):
    return make_study(
        owner=organizer, admit_crowd=True, admit_public=True, completion_code="C0DE42"
    )


@pytest.fixture
def pairwise_study(db, organizer):
    return make_study(owner=organizer, mode="pairwise", admit_crowd=True, admit_public=True)


@pytest.fixture
def onsite_rater(annotator_user):
    return annotator_user.rater


def crowd_enter(client, study, params: dict, *, expect_consent: bool = True):
    """A crowd worker opens the study's link, reads the instructions and agrees: the answer to
    the consent POST (normally a redirect to their first item)."""
    from django.urls import reverse

    url = reverse("annotate:crowd", args=[study.public_id])
    page = client.get(url, params)
    if expect_consent:
        assert page.status_code == 200, page.content[:300]
        assert b'name="consent"' in page.content
    return client.post(url, {"consent": "yes"})
