"""A judge end to end in a real browser (Chromium): the organizer creates a judge against the
local OpenAI-compatible test server, sees whether its key variable is set and the cost estimate,
starts a run and watches the page refresh itself until the run is done."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

# The judge fixtures: the test server, the operator's rules (autouse), a study factory.
from tests.evaluation.conftest import (  # noqa: F401
    KEY_ENV,
    _fake_server,
    _judge_rules,
    fake,
    make_study,
)

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_an_organizer_creates_a_judge_sees_key_and_estimate_and_watches_a_run_finish(
    page,
    login,
    organizer,
    make_study,  # noqa: F811
    fake,  # noqa: F811
    settings,
    monkeypatch,
):
    settings.TASK_BACKEND = "embedded"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake.latency = 0.2  # slow enough to see the run in progress
    study = make_study([f"Question {i}?" for i in range(4)], n_llms=2)
    login("alice", "alice-pass-123")

    page.goto("/judges/new/")
    keys = page.locator("#key-variables")
    expect(keys.locator("li", has_text=KEY_ENV)).to_contain_text("set")
    expect(keys.locator("li", has_text="OPENAI_API_KEY")).to_contain_text("not set")
    expect(page.locator("#id_api_key_env")).to_contain_text(f"{KEY_ENV} — set")
    page.fill("#id_name", "local judge")
    page.fill("#id_model", "fake-judge")
    page.fill("#id_base_url", fake.base_url)
    page.select_option("#id_api_key_env", KEY_ENV)
    page.fill("#id_concurrency", "2")
    page.get_by_role("button", name="Create").click()
    expect(page).to_have_url(re.compile(r"/judges/$"))
    expect(page.locator("tr", has_text="local judge")).to_contain_text("set")

    page.goto(f"/judges/studies/{study.pk}/run/")
    page.select_option("#id_judge", label=f"local judge (fake-judge; {KEY_ENV} set)")
    page.fill("#id_repeat_rate", "0")
    page.get_by_role("button", name="Check and estimate the cost").click()
    expect(page.locator("#key-status")).to_have_text("set")
    expect(page.locator("#estimate")).to_contain_text("listed by the server")
    expect(page.locator("#estimate-total")).to_have_text(re.compile(r"^\d+\.\d{4}$"))
    assert fake.paid() == []  # nothing spent before the organizer confirms

    page.get_by_role("button", name="Start run").click()
    expect(page).to_have_url(re.compile(r"/judges/runs/\d+/$"))
    # The progress fragment refreshes itself (htmx) until the run is done.
    expect(page.locator("#run-progress .status")).to_have_text("done", timeout=30_000)
    expect(page.locator("#n-done")).to_have_text("8 / 8 (100%)")
    expect(page.locator("#cost-estimate")).to_be_visible()
    assert len(fake.paid()) == 8
