"""The runner against a real OpenAI-compatible HTTP server (evaluation.testing.fake_openai) with
the real openai client: ratings, retries, failures, cache, cost, orders, repeats, re-parse."""

from __future__ import annotations

import json
import time
from decimal import Decimal

import pytest

from annotation.models import Assignment, Item, Rating, Score
from evaluation import selectors
from evaluation.models import JudgeCall, JudgeRun
from evaluation.parsers import parse
from evaluation.recording import judge_run_reparse
from evaluation.runner import execute_run, retry_after_seconds
from evaluation.services import judge_run_cancel, judge_run_create
from evaluation.testing.fake_answers import answer_for


def run_judge(study, judge, **kw) -> JudgeRun:
    run = judge_run_create(study=study, judge=judge, **kw)
    result = execute_run(run.pk, backoff=0.01)
    assert result is not None
    return result


def test_a_star_run_lands_as_ratings_of_the_judge_rater_with_one_score_per_criterion(
    make_study, make_judge, fake
):
    study = make_study(["Q one?", "Q two?"], kind="subjective", repeat_rate=0.0)
    judge = make_judge(json_mode="off")
    run = run_judge(study, judge, repeat_rate=0)

    assert run.status == JudgeRun.Status.DONE
    assert (run.n_planned, run.n_done, run.n_ok) == (4, 4, 4)
    ratings = Rating.objects.filter(rater=judge.rater)
    assert ratings.count() == 4
    for call in run.calls.select_related("rating__assignment"):
        a = call.rating.assignment
        assert (a.status, a.rater_id, a.is_repeat, a.study_id) == (
            "submitted",
            judge.rater_id,
            False,
            study.pk,
        )
        assert a.submitted_at is not None
        # The stored scores are the ones the server answered for this very prompt.
        expected = answer_for(call.request["messages"])
        keys = {
            "Accuracy": "accuracy",
            "Informativeness": "informativeness",
            "Fluency": "fluency",
            "Logicity": "logicality",  # figure 12's label (issue #10)
        }
        want = {keys[k]: v for k, v in json.loads(expected).items()}
        assert call.rating.scores_dict() == want
    assert Score.objects.filter(rating__rater=judge.rater).count() == 4 * 4
    # The key lives in the environment only: not in the run, the calls or the judge.
    stored = json.dumps([run.params, list(run.calls.values_list("request", flat=True))])
    assert "sk-test-not-a-real-key" not in stored and judge.api_key_env == "LLMEVAL_TEST_JUDGE_KEY"
    assert (
        judge.rater.kind == "judge"
        and judge.rater.pool == "judge"
        and judge.rater.name == judge.name
    )


def test_judge_runs_leave_the_human_engine_counters_alone(make_study, make_judge, fake):
    study = make_study(["Q?"], repeat_rate=0.0)
    run_judge(study, make_judge(), repeat_rate=0)
    assert (
        list(Item.objects.filter(study=study).values_list("n_ratings", "n_reserved"))
        == [(0, 0)] * 2
    )


def test_pairwise_choices_are_stored_canonically_with_the_order_presented(
    make_study, make_judge, fake
):
    # 32 items: the order is drawn per item from the run's seed and the item's id, which depend
    # on what the database made before (PostgreSQL does not reuse ids), so with 8 items one order
    # for all came up about once in 128 runs; with 32 it is about once in 2 billion.
    study = make_study([f"Q{i}?" for i in range(32)], mode="pairwise", rubric="pairwise", n_llms=2)
    run = run_judge(study, make_judge(), repeat_rate=0)
    orders = set()
    for call in run.calls.select_related("rating__assignment", "item"):
        shown = parse("choice", answer_for(call.request["messages"], json_mode=True))["shown"]
        expected = {
            "left": "A" if call.left_is_a else "B",
            "right": "B" if call.left_is_a else "A",
        }.get(shown, shown)
        assert call.rating.choice == expected
        assert call.rating.assignment.left_is_a == call.left_is_a
        first = call.request["messages"][-1]["content"].split(
            "[The Start of Assistant 1's Answer]\n"
        )[1]
        answer_a = call.item.response_a.text
        assert first.startswith(answer_a) == call.left_is_a
        orders.add(call.left_is_a)
    assert orders == {True, False}  # randomised per item (seeded)


def test_the_order_is_seeded_so_a_new_plan_gives_the_same_orders(make_study, make_judge, fake):
    from evaluation.planning import judge_run_plan

    study = make_study([f"Q{i}?" for i in range(6)], mode="pairwise", rubric="pairwise")
    judge = make_judge()
    run = judge_run_create(study=study, judge=judge, seed=7)
    a = [(j.item_id, j.left_is_a) for j in judge_run_plan(run=run).pending]
    b = [(j.item_id, j.left_is_a) for j in judge_run_plan(run=run).pending]
    assert a == b


def test_429_waits_at_least_retry_after_then_succeeds(make_study, make_judge, fake):
    study = make_study(["Slow down <<fake:429:1>> <<fake:retry-after:1.2>>"], n_llms=1)
    t0 = time.monotonic()
    run = run_judge(study, make_judge(), repeat_rate=0)
    elapsed = time.monotonic() - t0
    call = run.calls.get()
    assert call.status == "ok" and call.attempts == 2 and call.parse_status == "ok"
    assert elapsed >= 1.2
    statuses = [r["status"] for r in fake.log]
    assert statuses == [429, 200]
    gap = fake.log[1]["t"] - fake.log[0]["t"]
    assert gap >= 1.2


def test_retry_after_given_as_an_http_date_is_honoured(make_study, make_judge, fake):
    study = make_study(["Slow <<fake:429:1>> <<fake:retry-after:2>> <<fake:retry-date>>"], n_llms=1)
    run = run_judge(study, make_judge(), repeat_rate=0)
    assert run.calls.get().attempts == 2
    assert fake.log[1]["t"] - fake.log[0]["t"] >= 1.0  # HTTP dates have one-second resolution


def test_retry_after_parsing():
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after_seconds({}) is None


def test_server_errors_are_retried_until_they_succeed(make_study, make_judge, fake):
    study = make_study(["Flaky <<fake:500:2>>"], n_llms=1)
    run = run_judge(study, make_judge(max_attempts=4), repeat_rate=0)
    call = run.calls.get()
    assert (call.status, call.attempts, call.parse_status) == ("ok", 3, "ok")
    assert [r["status"] for r in fake.log] == [500, 500, 200]


def test_a_permanent_failure_is_recorded_with_its_reason_and_no_rating(
    make_study, make_judge, fake
):
    study = make_study(["Broken <<fake:fail>>", "Fine?"], n_llms=1)
    run = run_judge(study, make_judge(max_attempts=3), repeat_rate=0)
    failed = run.calls.get(status="failed")
    assert failed.attempts == 3 and failed.http_status == 500
    assert "gave up after 3 attempts" in failed.error and "HTTP 500" in failed.error
    assert failed.rating is None and failed.raw_output == ""
    assert (run.n_call_failed, run.n_ok, run.status) == (1, 1, "done")
    assert not Assignment.objects.filter(item=failed.item, rater=run.judge.rater).exists()


def test_timeouts_are_retried_and_recorded_when_they_persist(make_study, make_judge, fake):
    study = make_study(["Hangs once <<fake:hang:1>>", "Hangs always <<fake:hang:9>>"], n_llms=1)
    run = run_judge(study, make_judge(timeout_s=0.3, max_attempts=2), repeat_rate=0)
    once = run.calls.get(item__question__text__contains="once")
    always = run.calls.get(item__question__text__contains="always")
    assert (once.status, once.attempts) == ("ok", 2)
    assert always.status == "failed" and "timeout" in always.error


def test_client_errors_are_not_retried(make_study, make_judge, fake):
    study = make_study(["Q?"], n_llms=1)
    judge = make_judge(base_url=fake.base_url.replace("/v1", "/nowhere"))
    run = run_judge(study, judge, repeat_rate=0)
    call = run.calls.get()
    assert call.status == "failed" and call.attempts == 1 and call.http_status == 404


def test_a_missing_api_key_variable_fails_the_run_with_a_clear_reason(
    make_study, make_judge, fake, monkeypatch, settings
):
    settings.JUDGE_API_KEY_ENVS = [*settings.JUDGE_API_KEY_ENVS, "NO_SUCH_KEY_VAR_X"]
    study, judge = make_study(["Q?"], n_llms=1), make_judge(api_key_env="NO_SUCH_KEY_VAR_X")
    monkeypatch.delenv("NO_SUCH_KEY_VAR_X", raising=False)
    run = run_judge(study, judge)
    assert run.status == "failed" and "NO_SUCH_KEY_VAR_X" in run.error
    assert fake.log == []


def test_parse_failures_are_stored_counted_and_never_scored(make_study, make_judge, fake):
    study = make_study(
        [
            "Garbage <<fake:malformed>>",
            "Wrong <<fake:wrongkeys>>",
            "Big <<fake:outofrange>>",
            "Cut <<fake:truncated>>",
            "Good?",
        ],
        n_llms=1,
    )
    run = run_judge(study, make_judge(), repeat_rate=0)
    assert (run.n_done, run.n_ok, run.n_parse_failed) == (5, 1, 4)
    reasons = dict(
        run.calls.filter(parse_status="failed").values_list("item__question__text", "parse_error")
    )
    assert "no scores found" in reasons["Garbage <<fake:malformed>>"]
    assert "no scores found" in reasons["Wrong <<fake:wrongkeys>>"]
    assert "is outside 1-" in reasons["Big <<fake:outofrange>>"]
    assert reasons["Cut <<fake:truncated>>"].startswith("truncated output (finish_reason=length)")
    for call in run.calls.filter(parse_status="failed"):
        assert call.raw_output and call.parsed is None and call.rating is None
    assert Rating.objects.filter(rater=run.judge.rater).count() == 1
    assert selectors.run_failures(run).count() == 4


def test_cost_is_tokens_times_prices_per_call_and_per_run(make_study, make_judge, fake):
    study = make_study(["A?", "B?", "C?"])
    run = run_judge(
        study, make_judge(price_in_per_1k=Decimal("0.0125"), price_out_per_1k=Decimal("0.05"))
    )
    for call in run.calls.all():
        assert call.cost == Decimal(call.tokens_in) / 1000 * Decimal("0.0125") + Decimal(
            call.tokens_out
        ) / 1000 * Decimal("0.05")
    assert run.cost == Decimal(run.tokens_in) / 1000 * Decimal("0.0125") + Decimal(
        run.tokens_out
    ) / 1000 * Decimal("0.05")
    stats = fake.stats()
    assert (run.tokens_in, run.tokens_out) == (stats["tokens_in"], stats["tokens_out"])
    assert run.cost > 0


def test_a_cache_hit_reuses_the_stored_output_without_calling_or_paying(
    make_study, make_judge, fake
):
    study = make_study(["A?", "B?"])
    judge = make_judge()
    first = run_judge(study, judge, repeat_rate=0)
    paid = len(fake.paid())
    # The same judge on a second study with the same items sends identical requests.
    from annotation.services import study_create

    again = study_create(
        name="again", dataset=study.dataset, mode="star", rubric=study.rubric, owner=study.owner
    )
    second = run_judge(again, judge, repeat_rate=0)
    assert len(fake.paid()) == paid  # the server was not called again
    assert second.n_cached == second.n_done == 4 and second.cost == 0 and second.tokens_in == 0
    for call in second.calls.all():
        source = call.cache_source
        assert source.run_id == first.pk and call.raw_output == source.raw_output
        assert call.request_hash == source.request_hash and call.rating is not None


def test_identical_requests_within_a_run_are_paid_once(make_study, make_judge, fake):
    from annotation.models import Question, Response

    study = make_study(["Same?"], n_llms=1)
    q = Question.objects.get(dataset=study.dataset)
    # A second question with the same text and answer: the same request.
    q2 = Question.objects.create(
        dataset=study.dataset,
        external_id="dup",
        text=q.text,
        kind=q.kind,
        reference=q.reference,
        task_type=q.task_type,
    )
    r = Response.objects.create(
        question=q2, llm=q.responses.first().llm, text=q.responses.first().text
    )
    Item.objects.create(study=study, question=q2, response_a=r)
    run = run_judge(study, make_judge(concurrency=4), repeat_rate=0)
    assert run.n_done == 2 and run.n_cached == 1 and len(fake.paid()) == 1
    assert fake.duplicates() == 0


def test_repeats_are_fresh_calls_that_bypass_the_cache(make_study, make_judge, fake):
    study = make_study([f"Q{i}?" for i in range(20)], n_llms=1)
    run = run_judge(study, make_judge(), repeat_rate=0.5)
    repeats = run.calls.filter(purpose="repeat")
    assert repeats.exists()
    primary_hashes = dict(
        run.calls.filter(purpose="primary").values_list("item_id", "request_hash")
    )
    for call in repeats.select_related("rating__assignment"):
        assert call.request_hash == primary_hashes[call.item_id]  # the very same request...
        assert not call.cached and call.tokens_in > 0  # ...sent and paid again
        a = call.rating.assignment
        assert (
            a.is_repeat
            and a.repeat_of.item_id == call.item_id
            and a.repeat_of.rater_id == a.rater_id
        )
    paid = fake.paid()
    assert len(paid) == run.n_done and fake.duplicates() == 0  # purposes differ: not duplicates
    assert selectors.self_consistency(run)["rate"] == 1.0  # the fake answers deterministically


def test_both_orders_mode_yields_position_consistency(make_study, make_judge, fake):
    study = make_study([f"Q{i}?" for i in range(10)], mode="pairwise", rubric="pairwise")
    run = run_judge(study, make_judge(), both_orders=True, repeat_rate=0)
    assert run.calls.filter(purpose="swap").count() == 10
    # Swaps are kept in the judge's calls only: one rating per item, none for the swaps.
    assert Rating.objects.filter(rater=run.judge.rater).count() == 10
    consistent = 0
    for primary in run.calls.filter(purpose="primary"):
        swap = run.calls.get(item=primary.item, purpose="swap")
        assert swap.left_is_a == (not primary.left_is_a) and swap.rating is None
        consistent += primary.parsed["choice"] == swap.parsed["choice"]
    pc = selectors.position_consistency(run)
    assert pc["pairs"] == 10 and pc["consistent"] == consistent and pc["rate"] == consistent / 10


def test_both_orders_is_refused_for_star_studies(make_study, make_judge, fake):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError):
        judge_run_create(study=make_study(["Q?"]), judge=make_judge(), both_orders=True)


def test_json_mode_auto_falls_back_to_text_when_the_server_refuses_it(make_study, make_judge, fake):
    fake.json_supported = False
    study = make_study(["A?", "B?"], n_llms=1)
    run = run_judge(study, make_judge(json_mode="auto"), repeat_rate=0)
    assert run.n_ok == 2
    for call in run.calls.all():
        assert "response_format" not in call.request
        assert call.raw_output == answer_for(call.request["messages"])


def test_reparse_rereads_stored_outputs_without_calling_the_api(make_study, make_judge, fake):
    study = make_study(["A?", "B?"], n_llms=1)
    run = run_judge(study, make_judge(), repeat_rate=0)
    calls_before = len(fake.log)
    # Damage one stored parse and one stored output, as if an older parser had got them wrong.
    good, bad = list(run.calls.order_by("id"))
    JudgeCall.objects.filter(pk=good.pk).update(
        parse_status="failed", parse_error="old bug", parsed=None
    )
    Assignment.objects.filter(rating__pk=good.rating_id).delete()
    JudgeCall.objects.filter(pk=bad.pk).update(raw_output="no scores here")
    result = judge_run_reparse(run=run)
    assert len(fake.log) == calls_before
    good.refresh_from_db()
    bad.refresh_from_db()
    assert good.parse_status == "ok" and good.rating is not None
    assert bad.parse_status == "failed" and bad.rating is None
    assert not Assignment.objects.filter(item=bad.item, rater=run.judge.rater).exists()
    assert result == {"changed": 2, "ok": 1, "parse_failed": 1}


def test_a_second_run_of_the_same_judge_only_judges_what_is_left(make_study, make_judge, fake):
    study = make_study(["Broken <<fake:500:3>>", "Fine?"], n_llms=1)
    judge = make_judge(max_attempts=2)
    first = run_judge(study, judge, repeat_rate=0)
    assert first.n_call_failed == 1
    second = run_judge(study, judge, repeat_rate=0)  # the fault clears on the 3rd attempt
    assert second.n_planned == 1 and second.n_ok == 1
    assert Assignment.objects.filter(study=study, rater=judge.rater).count() == 2


def test_cancel_stops_a_run_and_keeps_what_was_recorded(make_study, make_judge, fake):
    study = make_study([f"Q{i}?" for i in range(3)], n_llms=1)
    run = judge_run_create(study=study, judge=make_judge(), repeat_rate=0)
    judge_run_cancel(run=run)  # queued: cancelled at once
    run.refresh_from_db()
    assert run.status == "cancelled" and execute_run(run.pk) is None
    assert fake.log == []


def test_an_alignbench_run_scores_the_dimensions_of_the_answer_type_and_overall(
    make_study, make_judge, fake
):
    study = make_study(["写一首诗？"], rubric="alignbench", n_llms=1, answer_type="生成型回答")
    run = run_judge(study, make_judge(json_mode="off"), repeat_rate=0)
    call = run.calls.get()
    assert call.parse_status == "ok", call.parse_error
    keys = {
        "factuality",
        "user_satisfaction",
        "logical_coherence",
        "creativity",
        "richness",
        "overall",
    }
    assert set(call.rating.scores_dict()) == keys
    assert all(1 <= v <= 10 for v in call.rating.scores_dict().values())
    assert call.rating.assignment.hint_shown  # the reference is always part of this prompt


def test_a_chinese_alpaca_eval_run_ranks_the_pair(make_study, make_judge, fake):
    from evaluation.models import PromptTemplate

    study = make_study(["介绍一下长城。", "推荐一本书。"], mode="pairwise", rubric="pairwise")
    judge = make_judge(
        template=PromptTemplate.objects.get(key="chinese-alpaca-eval"), json_mode="off"
    )
    run = run_judge(study, judge, repeat_rate=0)
    assert run.n_ok == 2
    for call in run.calls.all():
        shown = parse("ranking", call.raw_output)["shown"]
        assert (
            call.rating.choice
            == {"left": "A" if call.left_is_a else "B", "right": "B" if call.left_is_a else "A"}[
                shown
            ]
        )


@pytest.mark.parametrize("policy", ["shown", "hidden"])
def test_the_hint_follows_the_study_hint_policy(make_study, make_judge, fake, policy):
    study = make_study(["Q?"], n_llms=1, hint_policy=policy, reference="SECRET-HINT")
    run = run_judge(study, make_judge(), repeat_rate=0)
    call = run.calls.get()
    shown = "SECRET-HINT" in call.request["messages"][-1]["content"]
    assert shown == (policy == "shown") == call.rating.assignment.hint_shown


@pytest.mark.parametrize(
    ("transport", "sdk_call"), [("httpx", "typed"), ("httpx", "post"), ("aiohttp", "typed")]
)
def test_retries_timeouts_and_failures_behave_the_same_on_every_transport(
    make_study, make_judge, fake, monkeypatch, transport, sdk_call
):
    monkeypatch.setenv("JUDGE_HTTP_TRANSPORT", transport)
    monkeypatch.setenv("JUDGE_SDK_CALL", sdk_call)
    study = make_study(
        [
            "Slow <<fake:429:1>> <<fake:retry-after:0.5>>",
            "Flaky <<fake:500:1>>",
            "Hangs <<fake:hang:1>>",
            "Dead <<fake:fail>>",
            "Cut <<fake:truncated>>",
        ],
        n_llms=1,
    )
    t0 = time.monotonic()
    run = run_judge(study, make_judge(timeout_s=0.5, max_attempts=2), repeat_rate=0)
    calls = {c.item.question.text.split()[0]: c for c in run.calls.select_related("item__question")}
    assert calls["Slow"].attempts == 2 and calls["Slow"].status == "ok"
    assert time.monotonic() - t0 >= 0.5
    assert calls["Flaky"].attempts == 2 and calls["Flaky"].status == "ok"
    assert calls["Hangs"].attempts == 2 and calls["Hangs"].status == "ok"
    assert calls["Dead"].status == "failed" and "HTTP 500" in calls["Dead"].error
    assert calls["Cut"].finish_reason == "length" and calls["Cut"].parse_status == "failed"
    assert (calls["Slow"].tokens_in, calls["Slow"].tokens_out) != (0, 0)


def test_a_traced_run_saves_each_answered_request_and_each_write(
    make_study, make_judge, fake, monkeypatch, tmp_path
):
    monkeypatch.setenv("JUDGE_TRACE", str(tmp_path / "trace.json"))
    study = make_study(["Q one?", "Q two?", "Q three? <<fake:500:1>>"], n_llms=1)
    run_judge(study, make_judge(json_mode="off"), repeat_rate=0)

    trace = json.loads((tmp_path / "trace.json").read_text())
    calls = [t for t in trace if t[0] == "call"]
    writes = [t for t in trace if t[0] == "write"]
    assert len(calls) == 3  # answered requests only: the 500 before the retry is not one
    assert all(sent <= back for _, _, sent, back in calls)
    assert sum(n for _, n, *_ in writes) == 3
    assert all(start <= end and cpu >= 0 for _, _, start, end, cpu in writes)
