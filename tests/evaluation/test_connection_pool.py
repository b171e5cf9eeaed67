"""The judge runner keeps `concurrency` calls in flight over kept-alive connections, and pays
for each call once: a pool smaller than the concurrency, or a connection per call, fails here."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest

from evaluation import client as http
from evaluation.runner import execute_run
from evaluation.services import judge_run_create


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_every_call_in_flight_has_a_connection_and_connections_are_reused(
    make_study, make_judge, fake, monkeypatch, transport
):
    monkeypatch.setenv("JUDGE_HTTP_TRANSPORT", transport)
    # Long enough that the twelfth call starts before the first answers even on a loaded
    # machine (at 0.05 s a CI run under load once saw 11 in flight).
    fake.latency = 0.3
    concurrency = 12
    study = make_study([f"Question {i}?" for i in range(36)], n_llms=2)  # 72 calls
    run = judge_run_create(study=study, judge=make_judge(concurrency=concurrency), repeat_rate=0)
    done = execute_run(run.pk, backoff=0.01)
    assert done is not None and done.status == "done" and done.n_done == 72
    stats = fake.stats()
    assert stats["paid"] == 72 and fake.duplicates() == 0
    assert stats["max_in_flight"] == concurrency  # the pool never held calls back
    # Six calls per connection on average: kept alive, not one connection per call.
    assert concurrency <= stats["connections"] <= concurrency + 2


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_the_pool_is_never_smaller_than_the_largest_concurrency(monkeypatch, transport):
    monkeypatch.setenv("JUDGE_HTTP_TRANSPORT", transport)

    async def limits(concurrency: int) -> tuple[int, int]:
        client = http.make_client(
            "http://127.0.0.1:9/v1", "sk-test", timeout=1.0, concurrency=concurrency
        )
        try:
            return http.pool_limits(client)
        finally:
            await client.close()

    for concurrency in (1, 64, 512):  # 512: the most a judge may be given
        # On a thread of its own: a browser test earlier in the same worker may have left
        # Playwright's event loop running on this one.
        with ThreadPoolExecutor(1) as pool:
            connections, kept_alive = pool.submit(asyncio.run, limits(concurrency)).result()
        assert connections >= concurrency and kept_alive >= concurrency
