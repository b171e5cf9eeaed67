"""Fixtures for the judge tests: a real OpenAI-compatible server on 127.0.0.1 (one per session,
reset per test), studies whose question texts carry the server's fault markers, and judges."""

from __future__ import annotations

from decimal import Decimal

import pytest

from annotation.models import LLM, Dataset, Question, Response, Rubric
from annotation.services import study_create
from evaluation.services import judge_config_create
from evaluation.testing.fake_openai import FakeOpenAI

KEY_ENV = "LLMEVAL_TEST_JUDGE_KEY"


@pytest.fixture(autouse=True)
def _judge_rules(settings):
    """As an operator would set them: the tests' key variable approved, the local test server
    allowed (nothing else private)."""
    settings.JUDGE_API_KEY_ENVS = ["OPENAI_API_KEY", KEY_ENV]
    settings.JUDGE_ALLOWED_HOSTS = ["127.0.0.1"]
    settings.JUDGE_ALLOW_PUBLIC_HOSTS = True


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
    monkeypatch.setenv(KEY_ENV, "sk-test-not-a-real-key")
    return _fake_server


def make_dataset(
    name: str,
    questions: list[str],
    *,
    n_llms: int = 2,
    kind: str = "subjective",
    reference: str = "the reference",
    answer_type: str = "",
) -> Dataset:
    dataset = Dataset.objects.create(name=name)
    llms = [LLM.objects.get_or_create(name=f"llm-{i}")[0] for i in range(n_llms)]
    for qi, text in enumerate(questions):
        q = Question.objects.create(
            dataset=dataset,
            external_id=f"{name}-{qi}",
            text=text,
            kind=kind,
            reference=reference,
            answer_type=answer_type,
            task_type="Physics",
        )
        for li, llm in enumerate(llms):
            Response.objects.create(question=q, llm=llm, text=f"answer {li} to question {qi}")
    return dataset


@pytest.fixture
def make_study(organizer):
    counter = {"n": 0}

    def factory(questions, *, mode="star", rubric="llmeval2", n_llms=2, owner=None, **kw):
        counter["n"] += 1
        ds_kw = {k: kw.pop(k) for k in ("kind", "reference", "answer_type") if k in kw}
        ds = make_dataset(f"ds{counter['n']}", questions, n_llms=n_llms, **ds_kw)
        return study_create(
            name=f"study {counter['n']}",
            dataset=ds,
            mode=mode,
            rubric=Rubric.objects.get(key=rubric),
            owner=owner or organizer,
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
