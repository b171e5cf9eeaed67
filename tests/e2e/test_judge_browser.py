"""A judge end to end in a real browser (Chromium): the organizer creates a judge against the
local OpenAI-compatible test server, sees whether its key variable is set and the cost estimate,
starts a run and watches the page refresh itself until the run is done."""

from __future__ import annotations

import re

import pytest
from django.tasks.backends.dummy import DummyBackend
from playwright.sync_api import expect

# The judge fixtures: the test server, the operator's rules (autouse), a study factory.
from tests.evaluation.conftest import (  # noqa: F401
    KEY_ENV,
    _fake_server,
    _judge_rules,
    fake,
    make_judge,
    make_study,
)

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


class HeldBackend(DummyBackend):
    """Django's DummyBackend (jobs recorded, not run) with one list of run ids for every thread:
    the live server serves from a thread of its own, with backends of its own."""

    held: list[int] = []

    def _store_result(self, result):
        super()._store_result(result)
        self.held.append(result.args[0])


@pytest.fixture
def queue(settings):
    """Jobs handed to the task backend, run by the test when it says so. The live server shares
    the test's database connection (in-memory SQLite); a worker with a connection of its own
    would fight it for table locks, so the test thread runs the job while the page polls."""
    settings.TASKS = {"default": {"BACKEND": f"{__name__}.HeldBackend"}}
    HeldBackend.held.clear()
    return HeldBackend.held


def run_queued_jobs(jobs: list[int]) -> None:
    from evaluation.runner import execute_run

    while jobs:
        execute_run(jobs.pop(0), backoff=0.01)


def test_an_organizer_creates_a_judge_sees_key_and_estimate_and_watches_a_run_finish(
    page,
    login,
    organizer,
    make_study,  # noqa: F811
    fake,  # noqa: F811
    queue,
    monkeypatch,
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake.latency = 0.2  # slow enough to see the run in progress
    study = make_study([f"Question {i}?" for i in range(4)], n_llms=2)
    login("alice", "alice-pass-123")

    page.goto("/judges/new/")
    keys = page.locator("#key-variables")
    expect(keys.locator("li", has_text=KEY_ENV)).to_contain_text("set")
    expect(keys.locator("li", has_text="OPENAI_API_KEY")).to_contain_text("not set")
    expect(page.locator("#id_api_key_env")).to_contain_text(f"{KEY_ENV} — set")
    page.fill("#id_name", "local judge on the organizer's own test server")
    page.fill("#id_model", "fake-judge")
    page.fill("#id_base_url", fake.base_url)
    page.select_option("#id_api_key_env", KEY_ENV)
    page.fill("#id_concurrency", "2")
    page.get_by_role("button", name="Create").click()
    expect(page).to_have_url(re.compile(r"/judges/$"))
    expect(page.locator("tr", has_text="local judge")).to_contain_text("set")

    page.goto(f"/judges/studies/{study.pk}/run/")
    label = f"local judge on the organizer's own test server (fake-judge; {KEY_ENV} set)"
    page.select_option("#id_judge", label=label)
    # A long judge label stays inside the narrow form.
    form, select = (
        page.locator("#run-form").bounding_box(),
        page.locator("#id_judge").bounding_box(),
    )
    assert select["x"] + select["width"] <= form["x"] + form["width"]
    page.fill("#id_repeat_rate", "0")
    page.get_by_role("button", name="Check and estimate the cost").click()
    expect(page.locator("#key-status")).to_have_text("set")
    expect(page.locator("#estimate")).to_contain_text("listed by the server")
    expect(page.locator("#estimate-total")).to_have_text(re.compile(r"^\d+\.\d{4}$"))
    assert fake.paid() == []  # nothing spent before the organizer confirms

    page.get_by_role("button", name="Start run").click()
    expect(page).to_have_url(re.compile(r"/judges/runs/\d+/$"))
    expect(page.locator("#run-progress .status")).to_have_text("queued")
    page.evaluate("window.__sameDocument = true")
    run_queued_jobs(queue)
    # The progress fragment refreshes itself (htmx) until the run is done: no reload.
    expect(page.locator("#run-progress .status")).to_have_text("done", timeout=30_000)
    assert page.evaluate("window.__sameDocument === true")
    expect(page.locator("#n-done")).to_have_text("8 / 8 (100%)")
    expect(page.locator("#cost-estimate")).to_be_visible()
    assert len(fake.paid()) == 8


def test_after_resume_the_run_page_keeps_refreshing_until_the_run_is_done(
    page,
    login,
    organizer,
    make_study,  # noqa: F811
    make_judge,  # noqa: F811
    fake,  # noqa: F811
    queue,
    monkeypatch,
):
    from evaluation.runner import execute_run
    from evaluation.services import judge_run_create

    fake.latency = 0.1
    study = make_study([f"Question {i}?" for i in range(3)], n_llms=2)
    run = judge_run_create(study=study, judge=make_judge(concurrency=1), repeat_rate=0)
    monkeypatch.delenv(KEY_ENV)
    assert execute_run(run.pk, backoff=0.01).status == "failed"
    monkeypatch.setenv(KEY_ENV, "sk-set-now")

    login("alice", "alice-pass-123")
    page.goto(f"/judges/runs/{run.pk}/")
    expect(page.locator("#run-progress .status")).to_have_text("failed")
    expect(page.locator("#run-progress pre")).to_contain_text("is not set")
    page.get_by_role("button", name="Resume").click()
    # Resume queues the run at once, so the page drawn after it polls.
    expect(page.locator("#run-progress .status")).to_have_text("queued")
    expect(page.locator("#run-progress")).to_have_attribute("hx-trigger", "every 2s")
    page.evaluate("window.__sameDocument = true")
    run_queued_jobs(queue)
    # No reload from here: the fragment polls itself until the run is done.
    expect(page.locator("#run-progress .status")).to_have_text("done", timeout=30_000)
    assert page.evaluate("window.__sameDocument === true")
    expect(page.locator("#n-done")).to_have_text("6 / 6 (100%)")
