"""Judge runs through the Batch API against the local server: half price, every line recorded
once, expired lines sent again, failed lines reported, and no second batch or paid line when a
worker restarts or polls again."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from annotation.models import Response
from evaluation import batch, launch, planning, services
from evaluation.models import JudgeRun
from evaluation.runner import execute_run
from evaluation.services import judge_run_create

from .conftest import judge_command


@pytest.fixture(autouse=True)
def _fast_polls(monkeypatch):
    monkeypatch.setenv("JUDGE_BATCH_POLL", "0.01")


def _batch_run(make_study, make_judge, questions, **judge):
    study = make_study(questions)
    return judge_run_create(study=study, judge=make_judge(**judge), repeat_rate=0, mode="batch")


def test_a_batch_run_records_every_line_at_half_the_price(make_study, make_judge, fake):
    run = _batch_run(make_study, make_judge, [f"Q{i}?" for i in range(4)])  # 8 items
    assert (run.price_in_per_1k, run.price_out_per_1k) == (Decimal("0.015"), Decimal("0.03"))
    done = execute_run(run.pk)
    assert done.status == "done" and done.n_done == 8 and done.n_ok == 8, done.error
    assert len(fake.batch.batches) == 1 and all(r.get("batch") for r in fake.log)
    assert len(fake.paid()) == 8 and fake.duplicates() == 0
    half = Decimal(done.tokens_in) / 1000 * Decimal("0.015") + Decimal(
        done.tokens_out
    ) / 1000 * Decimal("0.03")
    assert done.cost == half and done.batch_id == ""


def test_lines_an_expired_batch_never_answered_go_in_the_next_batch(make_study, make_judge, fake):
    fake.batch.expire = 1  # the first batch answers half its lines, then expires
    run = _batch_run(make_study, make_judge, [f"Q{i}?" for i in range(4)])
    done = execute_run(run.pk)
    assert done.status == "done" and done.n_ok == 8
    assert [b["status"] for b in fake.batch.batches.values()] == ["expired", "completed"]
    assert len(fake.paid()) == 8 and fake.duplicates() == 0


def test_a_run_gives_up_after_max_attempts_batches_and_says_how_many_are_left(
    make_study, make_judge, fake
):
    fake.batch.expire = 99
    run = _batch_run(make_study, make_judge, [f"Q{i}?" for i in range(4)], max_attempts=2)
    done = execute_run(run.pk)
    assert done.status == "failed" and "2 calls not answered after 2 batches" in done.error
    assert done.n_done == 6 and fake.duplicates() == 0


def test_failed_lines_are_recorded_as_failed_calls_with_the_reason(make_study, make_judge, fake):
    run = _batch_run(make_study, make_judge, ["Fine?", "Broken <<fake:batchfail>>"])
    done = execute_run(run.pk)
    assert done.status == "done" and done.n_ok == 2 and done.n_call_failed == 2
    failed = done.calls.filter(status="failed")
    assert all("batch line failed: The line failed" in c.error for c in failed)


def test_a_restarted_worker_finds_its_batch_instead_of_paying_for_a_second(
    make_study, make_judge, fake
):
    run = _batch_run(make_study, make_judge, [f"Q{i}?" for i in range(3)])
    plan = planning.judge_run_plan(run=run)
    client = batch.client_for(run.params, "sk-test-not-a-real-key")
    batch.submit(client, run, plan.pending, plan.json_first)
    # The worker died after creating the batch and before its id was saved.
    JudgeRun.objects.filter(pk=run.pk).update(batch_id="")
    done = execute_run(run.pk)
    assert done.status == "done" and done.n_ok == 6
    assert len(fake.batch.batches) == 1 and len(fake.paid()) == 6


def test_a_resumed_run_sends_nothing_already_in_a_pending_batch(make_study, make_judge, fake):
    run = _batch_run(make_study, make_judge, [f"Q{i}?" for i in range(3)])
    plan = planning.judge_run_plan(run=run)
    client = batch.client_for(run.params, "sk-test-not-a-real-key")
    batch.submit(client, run, plan.pending[:2], plan.json_first)
    # The worker died after sending part of the work and before saving the batch's id.
    JudgeRun.objects.filter(pk=run.pk).update(batch_id="")
    done = execute_run(run.pk)
    assert done.status == "done" and done.n_ok == 6, done.error
    received = fake.batch.lines_received()
    assert len(received) == 6 == len(set(received)) == len(fake.paid())
    assert len(fake.batch.batches) == 2 and fake.duplicates() == 0


def test_the_same_request_twice_in_a_run_is_paid_for_once(make_study, make_judge, fake):
    study = make_study(["Same question?"] * 3)
    Response.objects.filter(question__dataset=study.dataset).update(text="The same answer.")
    run = judge_run_create(study=study, judge=make_judge(), repeat_rate=0, mode="batch")
    done = execute_run(run.pk)
    assert done.status == "done" and done.n_ok == 6, done.error
    distinct = set(done.calls.values_list("request_hash", flat=True))
    assert len(distinct) < 6  # identical items: the prompts coincide
    assert len(fake.batch.lines_received()) == len(distinct) == len(fake.paid())
    assert done.n_cached == 6 - len(distinct) and fake.duplicates() == 0


def _worst_case(run: JudgeRun, jobs) -> Decimal:
    """What these jobs may cost at most: their prompt and max_tokens out, at the run's prices."""
    tokens_in = sum(planning.prompt_tokens(j, True) for j in jobs)
    max_out = len(jobs) * run.params["max_tokens"]
    return services.cost_of(tokens_in, max_out, run.price_in_per_1k, run.price_out_per_1k)


@pytest.mark.parametrize("fit", [0, 3])
def test_a_batch_run_sends_only_what_fits_its_budget(make_study, make_judge, fake, fit):
    run = _batch_run(make_study, make_judge, [f"Q{i}?" for i in range(4)], max_tokens=50)
    pending = planning.judge_run_plan(run=run).pending
    run.budget = _worst_case(run, pending[:fit]) + Decimal("0.000001")
    run.save(update_fields=["budget"])
    done = execute_run(run.pk)
    assert done.status == "stopped" and "budget reached" in done.error
    assert f"{8 - fit} calls not sent" in done.error
    assert len(fake.batch.lines_received()) == fit == len(fake.paid()) == done.n_done
    assert len(fake.batch.batches) == (1 if fit else 0) and done.cost <= done.budget


def test_polling_a_finished_batch_again_records_nothing_twice(make_study, make_judge, fake):
    run = _batch_run(make_study, make_judge, [f"Q{i}?" for i in range(3)])
    done = execute_run(run.pk)
    first_batch = next(iter(fake.batch.batches))
    # As if a worker died after recording but before the run was marked finished.
    JudgeRun.objects.filter(pk=run.pk).update(status="running", batch_id=first_batch)
    again = execute_run(run.pk, force=True)
    assert again.status == "done" and again.calls.count() == 6 == done.n_done
    assert len(fake.batch.batches) == 1 and len(fake.paid()) == 6


def test_the_preflight_halves_the_estimate_and_refuses_servers_without_batches(
    make_study, make_judge, fake
):
    study, judge = make_study(["Q?"]), make_judge()
    live = launch.judge_run_preflight(study=study, judge=judge, repeat_rate=0)
    half = launch.judge_run_preflight(study=study, judge=judge, repeat_rate=0, mode="batch")
    assert half.total_max * 2 == live.total_max
    fake.batch.supported = False
    with pytest.raises(ValidationError) as e:
        launch.judge_run_preflight(study=study, judge=judge, repeat_rate=0, mode="batch")
    assert "mode" in e.value.message_dict
    assert not JudgeRun.objects.exists()


@pytest.mark.parametrize("mode", ["turbo", "", "\x00", "٣", "b" * 5000, 7])
def test_unknown_run_modes_are_refused_by_the_api(
    organizer_client, make_study, make_judge, fake, mode
):
    study, judge = make_study(["Q?"]), make_judge()
    r = organizer_client.post(
        reverse("judges_api:run_start"),
        {"study": study.pk, "judge": judge.pk, "mode": mode},
        content_type="application/json",
    )
    assert r.status_code == 400 and "mode" in r.json()
    assert not JudgeRun.objects.exists() and fake.paid() == []


def test_a_batch_run_started_through_the_api_runs_at_half_price(
    organizer_client, make_study, make_judge, fake
):
    study, judge = make_study(["Q?"]), make_judge()
    body = {"study": study.pk, "judge": judge.pk, "repeat_rate": 0, "mode": "batch"}
    url = reverse("judges_api:run_start")
    estimate = organizer_client.post(
        url, {**body, "dry_run": True}, content_type="application/json"
    )
    live = organizer_client.post(
        url, {**body, "mode": "live", "dry_run": True}, content_type="application/json"
    )
    assert Decimal(estimate.json()["total_max"]) * 2 == Decimal(live.json()["total_max"])
    r = organizer_client.post(url, body, content_type="application/json")
    assert r.status_code == 201 and r.json()["mode"] == "batch"
    assert JudgeRun.objects.get().price_in_per_1k == judge.price_in_per_1k / 2


def test_the_judge_command_runs_a_study_through_the_batch_api(make_study, make_judge, fake):
    study, judge = make_study(["Q1?", "Q2?"]), make_judge()
    out = judge_command(study.name, judge.name, "--batch", "--repeat-rate", "0", "--no-progress")
    run = JudgeRun.objects.get(study=study)
    assert run.mode == "batch" and run.status == "done" and run.n_ok == 4
    assert f"Run {run.pk} done: 4/4 calls" in out
    assert len(fake.batch.batches) == 1 and all(r.get("batch") for r in fake.log)
