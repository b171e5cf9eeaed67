"""Judges keep inside rate limits: the judge's own requests/tokens per minute and what the server
announces in its x-ratelimit-* headers (a run against a limited server gets no 429 storm)."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.urls import reverse

from evaluation import client as http
from evaluation.models import JudgeConfig
from evaluation.ratelimit import RateLimiter, estimate_tokens, reset_seconds
from evaluation.runner import execute_run
from evaluation.services import judge_run_create

from .conftest import KEY_ENV


def _run(coroutine):
    """asyncio.run in a thread of its own (other tests may leave a loop running in this one)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


@pytest.mark.parametrize(
    "value, seconds",
    [
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("1h2m3.5s", 600.0),  # capped: a server may not park a run for an hour
        ("0.5", 0.5),
        ("0.250s", 0.25),
    ],
)
def test_reset_durations_read_as_openai_writes_them(value, seconds):
    assert reset_seconds(value) == pytest.approx(seconds)


@pytest.mark.parametrize("value", [None, "", "soon", "1x", "٣s", "-5s", "1s junk", "\x00"])
def test_unreadable_reset_durations_are_ignored(value):
    assert reset_seconds(value) is None or reset_seconds(value) == 0.0


def test_a_server_announcing_nothing_left_holds_the_next_call_until_its_reset():
    async def scenario() -> float:
        limiter = RateLimiter()
        limiter.observe(
            {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "300ms"}
        )
        t0 = time.monotonic()
        await limiter.acquire({"messages": [], "max_tokens": 1})
        return time.monotonic() - t0

    assert 0.25 <= _run(scenario()) < 2


def test_unicode_digits_in_the_remaining_header_are_not_a_count():
    limiter = RateLimiter()
    limiter.observe({"x-ratelimit-remaining-requests": "٣", "x-ratelimit-reset-requests": "9s"})
    assert limiter.server_requests.left is None


def test_the_tokens_per_minute_bucket_spaces_large_requests():
    # 6,000 tokens a minute = 100 a second, holding one second's worth: two requests of 50
    # tokens go at once, the next two wait for 100 more tokens, about a second.
    async def scenario() -> float:
        limiter = RateLimiter(tpm=6000)
        body = {"messages": [], "max_tokens": 50}
        t0 = time.monotonic()
        for _ in range(4):
            await limiter.acquire(body)
        return time.monotonic() - t0

    assert 0.9 <= _run(scenario()) < 3


def test_token_estimate_counts_the_prompt_high_and_adds_max_tokens():
    english = {"messages": [{"content": "a" * 400}], "max_tokens": 10}
    chinese = {"messages": [{"content": "好" * 100}], "max_tokens": 10}
    assert estimate_tokens(english) == 100 + 10
    assert estimate_tokens(chinese) == 100 + 10


def test_a_run_against_a_limited_server_waits_for_the_reset_instead_of_hitting_429s(
    make_study, make_judge, fake
):
    fake.rpm_limit, fake.limit_window = 10, 0.6
    study = make_study([f"Q{i}?" for i in range(15)])  # 30 items
    run = judge_run_create(study=study, judge=make_judge(concurrency=8), repeat_rate=0)
    done = execute_run(run.pk, backoff=0.05)
    assert done.status == "done" and done.n_done == 30 and done.n_call_failed == 0
    statuses = fake.stats()["statuses"]
    assert statuses.get("429", 0) <= 1, statuses
    assert len(fake.paid()) == 30 and fake.duplicates() == 0


def test_without_the_limiter_the_same_server_refuses_calls(make_study, make_judge, fake):
    """The limited server does refuse a burst: what the test above avoids is real."""
    fake.rpm_limit, fake.limit_window = 10, 60
    study = make_study([f"Q{i}?" for i in range(8)])
    run = judge_run_create(
        study=study, judge=make_judge(concurrency=16, max_attempts=1), repeat_rate=0
    )
    done = execute_run(run.pk, backoff=0.01)
    assert fake.stats()["statuses"].get("429", 0) == 6
    assert done.n_call_failed == 6 and "429" in done.calls.filter(status="failed")[0].error


def test_the_judges_requests_per_minute_caps_the_rate(make_study, make_judge, fake, monkeypatch):
    # 600 a minute = 10 a second, one second's worth at once: 25 calls take about 1.5 s (less
    # what refills while the first ten go out); unlimited, they take a tenth of that. Timed as
    # the runner sends them (on a loaded machine the server may read several at once).
    sent: list[float] = []
    post_chat = http.post_chat

    async def timed_post_chat(*args, **kw):
        sent.append(time.monotonic())
        return await post_chat(*args, **kw)

    monkeypatch.setattr(http, "post_chat", timed_post_chat)
    study = make_study([f"Q{i}?" for i in range(13)])
    run = judge_run_create(
        study=study, judge=make_judge(concurrency=8, rpm_limit=600), repeat_rate=0, limit=25
    )
    done = execute_run(run.pk, backoff=0.01)
    assert done.status == "done" and done.n_done == 25 and len(fake.paid()) == 25
    times = sorted(sent)
    assert len(times) == 25 and times[-1] - times[0] >= 1.3
    # Never more than the burst plus the refill in any one-second window.
    assert max(sum(1 for u in times if t <= u < t + 1) for t in times) <= 21


def _judge_body(fake, **kw) -> dict:
    return {
        "name": "limited",
        "model": "fake-judge",
        "base_url": fake.base_url,
        "api_key_env": KEY_ENV,
        "price_in_per_1k": "0.01",
        "price_out_per_1k": "0.01",
        "temperature": "0",
        "max_tokens": "10",
        "seed": "0",
        "json_mode": "auto",
        "concurrency": "1",
        "timeout_s": "5",
        "max_attempts": "1",
        **kw,
    }


def test_rate_limit_settings_are_stored_through_the_api_and_the_page(organizer_client, fake):
    r = organizer_client.post(
        reverse("judges_api:judge_create"),
        _judge_body(fake, rpm_limit=500, tpm_limit=90000),
        content_type="application/json",
    )
    assert r.status_code == 201, r.content
    assert (r.json()["rpm_limit"], r.json()["tpm_limit"]) == (500, 90000)
    page = organizer_client.post(
        reverse("judges:new"), _judge_body(fake, name="paged", rpm_limit="60", tpm_limit="")
    )
    assert page.status_code == 302
    judge = JudgeConfig.objects.get(name="paged")
    assert (judge.rpm_limit, judge.tpm_limit) == (60, None)


@pytest.mark.parametrize(
    "field, value",
    [
        ("rpm_limit", 0),
        ("rpm_limit", -1),
        ("rpm_limit", 10**7),
        ("rpm_limit", "٣"),
        ("rpm_limit", "1\x00"),
        ("tpm_limit", 10**10),
        ("tpm_limit", 2**70),
        ("tpm_limit", "lots"),
    ],
)
def test_out_of_bounds_rate_limits_are_refused_and_nothing_is_written(
    organizer_client, fake, field, value
):
    r = organizer_client.post(
        reverse("judges_api:judge_create"),
        _judge_body(fake, **{field: value}),
        content_type="application/json",
    )
    assert r.status_code == 400 and field in r.json()
    page = organizer_client.post(reverse("judges:new"), _judge_body(fake, **{field: value}))
    assert page.status_code == 200
    assert not JudgeConfig.objects.exists()
