"""Fixtures for the judge tests: a real OpenAI-compatible server on 127.0.0.1 (one per session,
reset per test), studies whose question texts carry the server's fault markers, and judges."""

from __future__ import annotations

import io
from decimal import Decimal

import pytest
from django.core.management import call_command

from annotation.models import Study
from evaluation.services import judge_config_create
from evaluation.testing.fake_openai import FakeOpenAI
from tests.factories import make_dataset
from tests.factories import make_study as _make_study

KEY_ENV = "LLMEVAL_TEST_JUDGE_KEY"


@pytest.fixture(autouse=True)
def _judge_rules(settings):
    """As an operator would set them: the tests' key variable approved, the local test server
    allowed (nothing else private)."""
    settings.JUDGE_API_KEY_ENVS = ["OPENAI_API_KEY", KEY_ENV]
    settings.JUDGE_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.JUDGE_ALLOW_PUBLIC_HOSTS = True


@pytest.fixture
def immediate_tasks(settings):
    """Jobs run in the caller (TASK_BACKEND=immediate: Django's ImmediateBackend)."""
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.immediate.ImmediateBackend"}}


@pytest.fixture
def held_tasks(settings):
    """Jobs are recorded and not run (Django's DummyBackend); `.results` lists what was queued."""
    from django.tasks import task_backends

    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}}
    return task_backends["default"]


@pytest.fixture(scope="session")
def _fake_server():
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def fake(_fake_server, monkeypatch):
    """The fake server, with a clean log, no latency, JSON mode on, and the key variable set."""
    _fake_server.reset()
    _fake_server.latency = 0.0
    _fake_server.json_supported = True
    _fake_server.paused = False
    _fake_server.models = ["gpt-4-0613", "fake-judge"]
    _fake_server.rpm_limit = _fake_server.tpm_limit = None
    _fake_server.limit_window = 60.0
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key")
    return _fake_server


@pytest.fixture
def make_study(organizer):
    """A draft study, one question per text given (the texts carry the fake server's fault
    markers), answered by n LLMs; dataset keywords: kind, reference, answer_type."""

    def factory(questions, *, mode="star", rubric="llmeval2", n_llms=2, owner=None, **kw):
        ds_kw = {"reference": "the reference", "task_type": "Physics"}
        ds_kw |= {k: kw.pop(k) for k in ("kind", "reference", "answer_type") if k in kw}
        kw.setdefault("repeat_rate", Study._meta.get_field("repeat_rate").get_default())
        dataset = make_dataset(n_llms=n_llms, questions=questions, **ds_kw)
        return _make_study(
            owner=owner or organizer,
            mode=mode,
            rubric=rubric,
            dataset=dataset,
            status=Study.Status.DRAFT,
            **kw,
        )

    return factory


@pytest.fixture
def make_judge(organizer, fake):
    counter = {"n": 0}

    def factory(**kw):
        counter["n"] += 1
        name = kw.pop("name", f"judge-{counter['n']}")
        owner = kw.pop("owner", organizer)
        fields = {
            "base_url": fake.base_url,
            "api_key_env": KEY_ENV,
            "concurrency": 4,
            "price_in_per_1k": Decimal("0.03"),
            "price_out_per_1k": Decimal("0.06"),
            "max_attempts": 4,
            "timeout_s": 5.0,
            **kw,
        }
        return judge_config_create(name=name, owner=owner, **fields)

    return factory


def judge_command(study: str, judge: str, *flags: str, stderr=None) -> str:
    """`manage.py judge --study S --judge J` (each by name or id) with these flags; what it
    printed."""
    out = io.StringIO()
    ids = ["--study", study, "--judge", judge]
    call_command("judge", *ids, *flags, stdout=out, stderr=stderr or io.StringIO())
    return out.getvalue()
