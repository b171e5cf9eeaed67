"""Before any money is spent (issue 11 item 8, issue 13 item 5): the pre-flight refuses with a
clear message and writes nothing; the estimate comes from the run's real prompts; a budget stops
the run cleanly; Resume keeps the run page refreshing; the judge forms say whether the key is set."""

from __future__ import annotations

import io
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.urls import reverse

from evaluation import launch
from evaluation.launch import judge_run_preflight, judge_run_start
from evaluation.models import JudgeRun
from evaluation.planning import estimate_tokens
from evaluation.runner import execute_run
from evaluation.services import judge_run_create

from .conftest import KEY_ENV
from .listener import Listener


def _start_everywhere(client, study, judge) -> list[str]:
    """Start a run through the service, the page, the API and the command; every refusal."""
    messages = []
    with pytest.raises(ValidationError) as e:
        judge_run_start(study=study, judge=judge, enqueue=False)
    messages.append(" ".join(e.value.messages))
    form = {"judge": judge.pk, "repeat_rate": "0", "seed": "0", "confirmed": "on"}
    r = client.post(reverse("judges:run_start", args=[study.pk]), form)
    assert r.status_code == 200
    messages.append(r.content.decode())
    r = client.post(
        reverse("judges_api:run_start"),
        {"study": study.pk, "judge": judge.pk},
        content_type="application/json",
    )
    assert r.status_code == 400
    messages.append(str(r.json()))
    with pytest.raises(CommandError) as e:
        call_command(
            "judge", "--study", str(study.pk), "--judge", str(judge.pk), stdout=io.StringIO()
        )
    messages.append(str(e.value))
    return messages


def test_an_empty_study_is_refused_before_a_run_row_exists(
    organizer_client, make_study, make_judge, fake
):
    study = make_study(["Q?"], n_llms=1)
    study.items.all().delete()
    for text in _start_everywhere(organizer_client, study, make_judge()):
        assert "The study has no items to judge." in text
    assert not JudgeRun.objects.exists() and fake.log == []
    with pytest.raises(ValidationError, match="no items"):
        judge_run_create(study=study, judge=make_judge(name="direct"))


def test_an_unset_key_variable_is_refused_before_a_run_row_exists(
    organizer_client, make_study, make_judge, fake, monkeypatch
):
    study = make_study(["Q?"], n_llms=1)
    judge = make_judge()
    monkeypatch.delenv(KEY_ENV)
    for text in _start_everywhere(organizer_client, study, judge):
        assert f"The environment variable {KEY_ENV}" in text and "is not set" in text
    assert not JudgeRun.objects.exists() and fake.log == []


def test_a_model_the_server_does_not_list_is_refused_and_nothing_is_paid(
    organizer_client, make_study, make_judge, fake
):
    study = make_study(["Q?"], n_llms=1)
    judge = make_judge(model="gpt-9-imaginary")
    for text in _start_everywhere(organizer_client, study, judge):
        assert "does not offer the model gpt-9-imaginary" in text and "fake-judge" in text
    assert not JudgeRun.objects.exists() and fake.paid() == []


def test_a_server_without_a_model_list_is_tolerated(make_study, make_judge, fake):
    fake.models = None  # /v1/models answers 404
    study = make_study(["Q?"], n_llms=1)
    run, estimate = judge_run_start(
        study=study, judge=make_judge(model="anything"), repeat_rate=0, enqueue=False
    )
    assert estimate.model_listed is None and run.status == "queued"
    assert execute_run(run.pk, backoff=0.01).status == "done"


def test_a_server_that_refuses_the_key_is_named_in_the_refusal(make_study, make_judge, fake):
    key = "sk-test-not-a-real-key"
    with Listener() as server:
        server.models_reply = (401, {"error": {"message": f"bad key {key}"}}, {})
        judge = make_judge(base_url=server.base_url)
        with pytest.raises(ValidationError, match=f"The server refused the key in {KEY_ENV}"):
            judge_run_start(study=make_study(["Q?"], n_llms=1), judge=judge, enqueue=False)
        server.models_reply = (500, {"error": {"message": f"oops, key {key} " + "y" * 900}}, {})
        with pytest.raises(ValidationError) as e:
            judge_run_start(study=make_study(["Q?"], n_llms=1), judge=judge, enqueue=False)
        assert len(server.requests) == 2
    text = " ".join(e.value.messages)
    assert "HTTP 500" in text and key not in text and len(text) < 400
    assert not JudgeRun.objects.exists()


def test_the_estimate_is_computed_from_the_prompts_the_run_really_sends(
    make_study, make_judge, fake
):
    study = make_study(["第一题：为什么天空是蓝色的？", "Q2 in English, a bit longer."], n_llms=2)
    judge = make_judge(
        price_in_per_1k=Decimal("0.5"), price_out_per_1k=Decimal("2"), max_tokens=100
    )
    run, estimate = judge_run_start(study=study, judge=judge, repeat_rate=0, enqueue=False)
    run = execute_run(run.pk, backoff=0.01)
    sent = [c.request["messages"] for c in run.calls.all()]
    tokens = sum(estimate_tokens(m["content"]) + 4 for messages in sent for m in messages)
    assert estimate.items == 4 and estimate.calls == run.n_planned == 4
    assert estimate.tokens_in == tokens
    assert estimate.cost_in == Decimal(tokens) / 1000 * Decimal("0.5")
    assert estimate.cost_out_max == Decimal(4 * 100) / 1000 * Decimal(2)
    assert run.cost_estimate == estimate.total_max


def test_the_estimate_of_a_large_study_scales_a_sample(make_study, make_judge, fake, monkeypatch):
    study = make_study([f"Question {i}?" for i in range(6)], n_llms=1)
    judge = make_judge()
    full = judge_run_preflight(study=study, judge=judge, repeat_rate=0)
    monkeypatch.setattr(launch, "ESTIMATE_SAMPLE", 2)
    sampled = judge_run_preflight(study=study, judge=judge, repeat_rate=0)
    assert sampled.calls == full.calls == 6
    assert abs(sampled.tokens_in - full.tokens_in) <= full.tokens_in * 0.05
    limited = judge_run_preflight(study=study, judge=judge, repeat_rate=0, limit=3)
    assert limited.items == 3 and limited.calls == 3


def test_token_estimates_count_chinese_characters_one_each():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    assert estimate_tokens("天空是蓝色的") == 6


def test_a_budget_stops_the_run_and_pays_past_it_by_at_most_the_calls_in_flight(
    make_study, make_judge, fake
):
    study = make_study([f"Question {i}?" for i in range(12)], n_llms=1)
    judge = make_judge(concurrency=1, price_in_per_1k=Decimal(1), price_out_per_1k=Decimal(1))
    budget = Decimal("0.5")
    run = judge_run_create(study=study, judge=judge, repeat_rate=0, budget=budget)
    run = execute_run(run.pk, backoff=0.01)
    costs = [c.cost for c in run.calls.order_by("finished_at", "id")]
    assert run.status == "stopped" and run.error.startswith("stopped: budget reached")
    assert 0 < len(costs) < 12 and run.n_done == len(costs) == len(fake.paid())
    # Each call started while the spending was below the budget: only the last one passed it.
    assert sum(costs[:-1]) < budget <= sum(costs) == run.cost
    # A stopped run is finished: a new run (with more budget) judges what is left.
    with pytest.raises(ValidationError, match="budget"):
        launch.judge_run_resume(run=run)
    more = judge_run_create(study=study, judge=judge, repeat_rate=0, budget=Decimal(100))
    assert execute_run(more.pk, backoff=0.01).n_done == 12 - len(costs)


def test_a_budget_with_more_calls_in_flight_is_passed_by_at_most_those_calls(
    make_study, make_judge, fake
):
    fake.latency = 0.05
    study = make_study([f"Question {i}?" for i in range(24)], n_llms=1)
    judge = make_judge(concurrency=4, price_in_per_1k=Decimal(1), price_out_per_1k=Decimal(1))
    budget = Decimal("0.5")
    run = execute_run(
        judge_run_create(study=study, judge=judge, repeat_rate=0, budget=budget).pk, backoff=0.01
    )
    costs = [c.cost for c in run.calls.order_by("finished_at", "id")]
    reached = next(i for i in range(len(costs)) if sum(costs[: i + 1]) >= budget)
    assert run.status == "stopped" and len(costs) <= reached + 1 + 3
    assert len(fake.paid()) == len(costs) < 24


def test_a_budget_that_is_not_reached_changes_nothing(make_study, make_judge, fake):
    study = make_study(["Q1?", "Q2?"], n_llms=1)
    run = judge_run_create(study=study, judge=make_judge(), repeat_rate=0, budget=Decimal(1000))
    assert execute_run(run.pk, backoff=0.01).status == "done"


@pytest.mark.parametrize("budget", ["NaN", "Infinity", "-1", "1e20", "²", "\x00"])
def test_bad_budgets_are_refused_by_the_api_and_the_page(
    organizer_client, make_study, make_judge, fake, budget
):
    study = make_study(["Q?"], n_llms=1)
    judge = make_judge()
    r = organizer_client.post(
        reverse("judges_api:run_start"),
        {"study": study.pk, "judge": judge.pk, "budget": budget},
        content_type="application/json",
    )
    assert r.status_code == 400 and "budget" in r.json()
    form = {"judge": judge.pk, "repeat_rate": "0", "seed": "0", "budget": budget, "confirmed": "on"}
    r = organizer_client.post(reverse("judges:run_start", args=[study.pk]), form)
    assert r.status_code == 200 and 'id="id_budget"' in r.content.decode()
    with pytest.raises(CommandError):
        call_command(
            "judge", "--study", str(study.pk), "--judge", str(judge.pk), "--budget", budget
        )
    assert not JudgeRun.objects.exists()


def test_the_api_dry_run_estimates_and_starts_nothing_then_starts_with_a_budget(
    organizer_client, immediate_tasks, make_study, make_judge, fake
):
    study = make_study(["Q?"], n_llms=2)
    judge = make_judge()
    body = {"study": study.pk, "judge": judge.pk, "repeat_rate": 0}
    r = organizer_client.post(
        reverse("judges_api:run_start"), {**body, "dry_run": True}, content_type="application/json"
    )
    data = r.json()
    assert r.status_code == 200 and data["calls"] == 2 and data["key_set"] is True
    assert data["model_listed"] is True and Decimal(data["total_max"]) > 0
    assert not JudgeRun.objects.exists() and fake.paid() == []
    r = organizer_client.post(
        reverse("judges_api:run_start"), {**body, "budget": "5"}, content_type="application/json"
    )
    assert r.status_code == 201 and r.json()["budget"] == "5.000000"
    assert Decimal(r.json()["cost_estimate"]) == Decimal(data["total_max"]).quantize(
        Decimal("1e-6")
    )


def test_the_command_dry_run_prints_the_estimate_and_starts_nothing(make_study, make_judge, fake):
    study = make_study(["Q?"], n_llms=2)
    out = io.StringIO()
    call_command(
        "judge",
        "--study",
        str(study.pk),
        "--judge",
        str(make_judge().pk),
        "--repeat-rate",
        "0",  # a repeat is drawn per item id, which differs between databases
        "--dry-run",
        stdout=out,
    )
    assert "Pre-flight passed" in out.getvalue() and "2 items, 2 calls" in out.getvalue()
    assert not JudgeRun.objects.exists() and fake.paid() == []


def test_resume_queues_a_failed_run_so_its_page_keeps_refreshing(
    organizer_client, make_study, make_judge, fake, monkeypatch, held_tasks
):
    study = make_study(["Q?"], n_llms=1)
    run = judge_run_create(study=study, judge=make_judge(), repeat_rate=0)
    monkeypatch.delenv(KEY_ENV)
    assert execute_run(run.pk, backoff=0.01).status == "failed"
    page = organizer_client.get(reverse("judges:run", args=[run.pk])).content.decode()
    assert 'hx-trigger="every 2s"' not in page
    # Resume with the key still unset: refused with the reason, nothing queued.
    r = organizer_client.post(reverse("judges:run_resume", args=[run.pk]), follow=True)
    assert "is not set" in r.content.decode() and held_tasks.results == []
    monkeypatch.setenv(KEY_ENV, "sk-again")
    r = organizer_client.post(reverse("judges:run_resume", args=[run.pk]), follow=True)
    run.refresh_from_db()
    page = r.content.decode()
    queued = [(r.task.module_path, r.args) for r in held_tasks.results]
    assert run.status == "queued" and queued == [("evaluation.tasks.judge_run_execute", [run.pk])]
    assert 'hx-trigger="every 2s"' in page
    # The polled fragment carries the trigger while the run is active, and drops it when done.
    part = reverse("judges:run", args=[run.pk]) + "?part=progress"
    fragment = organizer_client.get(part, headers={"HX-Request": "true"}).content.decode()
    assert 'hx-trigger="every 2s"' in fragment
    assert execute_run(run.pk, backoff=0.01).status == "done"
    fragment = organizer_client.get(part, headers={"HX-Request": "true"}).content.decode()
    assert "hx-trigger" not in fragment


def test_the_new_judge_form_says_which_key_variables_are_set_never_their_values(
    organizer_client, fake, monkeypatch
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    page = organizer_client.get(reverse("judges:new")).content.decode()
    assert f'<code>{KEY_ENV}</code>: <span class="status done">set</span>' in page
    assert '<code>OPENAI_API_KEY</code>: <span class="status failed">not set</span>' in page
    assert f"{KEY_ENV} — set" in page and "OPENAI_API_KEY — not set" in page
    assert "sk-test-not-a-real-key" not in page


def test_the_start_page_shows_the_key_status_and_the_estimate_before_starting(
    organizer_client, make_study, make_judge, fake
):
    study = make_study(["Q?"], n_llms=2)
    judge = make_judge(name="gpt")
    url = reverse("judges:run_start", args=[study.pk])
    page = organizer_client.get(url).content.decode()
    assert f"gpt (gpt-4-0613; {KEY_ENV} set)" in page and 'id="check-run"' in page
    r = organizer_client.post(url, {"judge": judge.pk, "repeat_rate": "0", "seed": "0"})
    page = r.content.decode()
    assert 'id="estimate-total"' in page and 'id="start-run"' in page
    assert "listed by the server" in page and not JudgeRun.objects.exists()


def test_the_largest_estimate_the_limits_allow_is_served_and_stored(
    organizer_client, immediate_tasks, make_study, make_judge, fake
):
    with pytest.raises(ValidationError, match="max_tokens"):
        make_judge(name="too-long", max_tokens=1_000_001)
    judge = make_judge(
        max_tokens=1_000_000, price_in_per_1k=Decimal(1000), price_out_per_1k=Decimal(1000)
    )
    study = make_study(["Q1?", "Q2?"], n_llms=2)
    body = {"study": study.pk, "judge": judge.pk, "repeat_rate": 0, "limit": 10_000_000}
    r = organizer_client.post(
        reverse("judges_api:run_start"), {**body, "dry_run": True}, content_type="application/json"
    )
    assert r.status_code == 200 and Decimal(r.json()["cost_out_max"]) == 4 * 1_000_000
    run, estimate = judge_run_start(study=study, judge=judge, repeat_rate=0, enqueue=False)
    run.refresh_from_db()
    assert run.cost_estimate == estimate.total_max


def test_the_estimate_leaves_out_hidden_checks_and_says_when_nothing_is_left(
    make_study, make_judge, fake, organizer_client
):
    # The page said "31 items / 0 calls" for a study of 30 answers and one attention check,
    # already judged: the check counted, and nothing said why there was no call to make.
    from django.urls import reverse

    from annotation import checks

    study = make_study(["Q1?", "Q2?"], n_llms=1)
    checks.attention_check_create(
        study=study, instruction="Top stars.", text_a="a",
        answer={"scores": {"accuracy": [5, 5]}},
    )  # fmt: skip
    judge = make_judge()
    estimate = judge_run_preflight(study=study, judge=judge, repeat_rate=0)
    assert estimate.items == 2 and estimate.calls == 2
    run, _estimate = judge_run_start(study=study, judge=judge, repeat_rate=0, enqueue=False)
    execute_run(run.pk, backoff=0.01)
    form = {"judge": judge.pk, "repeat_rate": "0", "seed": "0"}
    page = organizer_client.post(reverse("judges:run_start", args=[study.pk]), form)
    html = page.content.decode()
    assert 'id="estimate-total"' in html and 'id="nothing-to-judge"' in html


def test_at_most_n_items_takes_n_items_the_judge_has_not_judged_yet(make_study, make_judge, fake):
    study = make_study([f"Question {i}?" for i in range(6)], n_llms=1)
    judge = make_judge()
    run1 = judge_run_create(study=study, judge=judge, repeat_rate=0, limit=2)
    execute_run(run1.pk, backoff=0.01)
    first = set(run1.calls.values_list("item_id", flat=True))
    # The estimate counts what is left for this judge, at most the limit.
    assert judge_run_preflight(study=study, judge=judge, repeat_rate=0, limit=3).items == 3
    assert judge_run_preflight(study=study, judge=judge, repeat_rate=0).items == 4
    run2 = judge_run_create(study=study, judge=judge, repeat_rate=0, limit=3)
    execute_run(run2.pk, backoff=0.01)
    second = set(run2.calls.values_list("item_id", flat=True))
    assert len(first) == 2 and len(second) == 3 and not first & second
    assert len(fake.log) == 5
    last = judge_run_preflight(study=study, judge=judge, repeat_rate=0, limit=3)
    assert (last.items, last.calls) == (1, 1)
