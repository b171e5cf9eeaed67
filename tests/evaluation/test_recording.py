"""Recording a run's answers: the journal of a killed executor, the same call recorded twice,
and a database that fails while calls are in flight."""

from __future__ import annotations

import time

from annotation.models import Rating
from evaluation.runner import execute_run
from evaluation.services import judge_run_create
from evaluation.testing.fake_answers import answer_for


def test_answers_journaled_by_a_killed_executor_are_recorded_on_resume_without_calling_again(
    make_study, make_judge, fake
):
    from evaluation.planning import judge_run_plan
    from evaluation.recording import Outcome
    from evaluation.runner import Journal

    study = make_study(["A?", "B?"], n_llms=1)
    run = judge_run_create(study=study, judge=make_judge(json_mode="off"), repeat_rate=0)
    job = judge_run_plan(run=run).pending[0]
    # What a killed executor left behind: an answer it was paid for but never committed.
    raw = answer_for(job.bodies[False]["messages"])
    journal = Journal(run.pk, run.created_at.isoformat())
    journal.append(
        Outcome(
            job=job,
            json_mode=False,
            status="ok",
            raw=raw,
            tokens_in=11,
            tokens_out=7,
            attempts=1,
            started_at=None,
            finished_at=None,
        )
    )
    journal.close(remove=False)
    run = execute_run(run.pk, backoff=0.01)
    assert len(fake.paid()) == 1  # only the other item was asked for
    recovered = run.calls.get(item_id=job.item_id)
    assert (recovered.raw_output, recovered.tokens_in, recovered.tokens_out) == (raw, 11, 7)
    assert not recovered.cached and recovered.parse_status == "ok" and recovered.rating is not None
    assert run.n_done == 2 and not __import__("os").path.exists(journal.path)


def test_recording_the_same_call_twice_keeps_one(make_study, make_judge, fake):
    from evaluation.planning import judge_run_plan
    from evaluation.recording import Outcome, judge_calls_record

    study = make_study(["Q?"], n_llms=1)
    run = judge_run_create(study=study, judge=make_judge(json_mode="off"), repeat_rate=0)
    job = judge_run_plan(run=run).pending[0]
    raw = answer_for(job.bodies[False]["messages"])
    outcome = Outcome(job=job, json_mode=False, status="ok", raw=raw, tokens_in=5, tokens_out=5)
    judge_calls_record(run_id=run.pk, parser="stars", outcomes=[outcome])
    snapshot = judge_calls_record(run_id=run.pk, parser="stars", outcomes=[outcome])
    assert snapshot["n_done"] == 1 and run.calls.count() == 1
    assert Rating.objects.filter(rater=run.judge.rater).count() == 1


def test_a_database_failure_stops_calling_and_a_resume_recovers_what_was_paid(
    make_study, make_judge, fake, monkeypatch
):
    from evaluation import recording

    fake.latency = 0.05
    study = make_study([f"Q{i}?" for i in range(10)])  # 20 items
    run = judge_run_create(study=study, judge=make_judge(concurrency=2), repeat_rate=0)
    real = recording.judge_calls_record

    def broken(**kwargs):
        if kwargs["outcomes"]:
            raise RuntimeError("disk full")
        return real(**kwargs)

    monkeypatch.setattr(recording, "judge_calls_record", broken)
    failed = execute_run(run.pk, backoff=0.01)
    assert failed.status == "failed" and "disk full" in failed.error
    paid_before = len(fake.paid())
    assert 0 < paid_before < 20  # it stopped calling once the writer died
    monkeypatch.setattr(recording, "judge_calls_record", real)
    done = execute_run(run.pk, backoff=0.01)
    assert done.status == "done" and done.n_done == 20 and done.n_ok == 20
    assert len(fake.paid()) == 20 and fake.duplicates() == 0  # the journal had the paid ones


def test_calls_start_before_the_planning_of_a_large_run_is_done(
    make_study, make_judge, fake, monkeypatch
):
    from evaluation import planning

    real = planning.plan_chunks
    planned_at: list[float] = []

    def timed(*args, **kwargs):
        # Planning a large study takes a while: each chunk after the first takes 0.3 s here.
        for chunk in real(*args, **kwargs):
            if planned_at:
                time.sleep(0.3)
            planned_at.append(time.time())
            yield chunk

    monkeypatch.setattr(planning, "plan_chunks", timed)
    fake.latency = 0.05
    study = make_study([f"Q{i}?" for i in range(60)])  # 120 items: chunks of 16, 32, 64 and 8
    run = judge_run_create(study=study, judge=make_judge(concurrency=4), repeat_rate=0)
    done = execute_run(run.pk, backoff=0.01)
    assert done.status == "done" and done.n_done == done.n_planned == 120
    first_request = min(r["t"] for r in fake.log)
    assert len(planned_at) == 4 and first_request < planned_at[1] < planned_at[2] < planned_at[3]
    assert fake.duplicates() == 0 and len(fake.paid()) == 120


def test_the_counters_added_per_batch_equal_a_recount_of_the_stored_calls(
    make_study, make_judge, fake
):
    from evaluation.models import JudgeRun
    from evaluation.planning import judge_run_plan
    from evaluation.recording import COUNTERS, Outcome, judge_calls_record
    from evaluation.services import judge_run_recount

    study = make_study(["A?", "B?", "C?"], n_llms=1)
    run = judge_run_create(study=study, judge=make_judge(json_mode="off"), repeat_rate=0)
    a, b, c = judge_run_plan(run=run).pending
    ok = Outcome(job=a, json_mode=False, status="ok", tokens_in=10, tokens_out=3)
    ok.raw = answer_for(a.bodies[False]["messages"])
    unparsed = Outcome(job=b, json_mode=False, status="ok", raw="no scores here", tokens_in=4)
    failed = Outcome(job=c, json_mode=False, status="failed", error="HTTP 500", attempts=3)
    judge_calls_record(run_id=run.pk, parser="stars", outcomes=[ok, unparsed])
    snapshot = judge_calls_record(run_id=run.pk, parser="stars", outcomes=[failed])
    stored = JudgeRun.objects.get(pk=run.pk)
    recounted = judge_run_recount(run=JudgeRun.objects.get(pk=run.pk))
    for name in COUNTERS:
        assert getattr(stored, name) == getattr(recounted, name) == snapshot[name], name
    assert (stored.n_done, stored.n_ok, stored.n_parse_failed, stored.n_call_failed) == (3, 1, 1, 1)
    assert (stored.tokens_in, stored.tokens_out) == (14, 3) and stored.cost > 0


def test_call_rows_stored_with_prepared_inserts_equal_those_of_bulk_create(make_study, make_judge):
    """SQLite's path for the call rows (annotation/sqlrows.py): JSON, decimals, times, nulls
    read back as bulk_create stores them, and each instance gets its row's id."""
    import datetime as dt
    from decimal import Decimal

    import pytest
    from django.db import connection

    from annotation import sqlrows
    from evaluation.models import JudgeCall

    if connection.vendor != "sqlite":
        pytest.skip("SQLite's prepared-INSERT path")
    study = make_study(["A?", "B?"], n_llms=1)
    run = judge_run_create(study=study, judge=make_judge(), repeat_rate=0)
    items = list(study.items.order_by("id"))
    when = dt.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC)

    def call(item) -> JudgeCall:
        return JudgeCall(
            run=run,
            item=item,
            purpose="primary",
            left_is_a=False,
            request_hash="h" * 64,
            request={"model": "m", "messages": [{"role": "user", "content": '好 "q"'}]},
            status="ok",
            http_status=200,
            attempts=2,
            raw_output="Correctness: 3",
            parse_status="ok",
            parsed={"scores": {"correctness": 3}},
            tokens_in=10,
            tokens_out=3,
            cost=Decimal("0.000123456"),
            latency_ms=None,
            started_at=when,
            finished_at=when,
        )

    fast = sqlrows.insert_objects(JudgeCall, [call(items[0])])[0]
    JudgeCall.objects.bulk_create([slow := call(items[1])])
    assert fast.pk == JudgeCall.objects.get(item=items[0]).pk and not fast._state.adding
    read = {c.item_id: c for c in JudgeCall.objects.filter(run=run)}
    skip = {"id", "item"}

    def columns(c):
        return [
            (f.name, getattr(c, f.attname)) for f in c._meta.concrete_fields if f.name not in skip
        ]

    assert columns(read[items[0].id]) == columns(read[slow.item_id])
    assert (
        read[items[0].id].cost == Decimal("0.000123456") and read[items[0].id].finished_at == when
    )


def test_prepared_insert_times_are_stored_as_the_fields_own_preparation_stores_them(db):
    """The UTC shortcut of annotation/sqlrows.py gives the text DateTimeField's preparation
    gives, for UTC times with and without microseconds; other zones and None go the field's way."""
    import datetime as dt

    import pytest
    from django.db import connection

    from annotation import sqlrows
    from evaluation.models import JudgeCall

    if connection.vendor != "sqlite":
        pytest.skip("SQLite's prepared-INSERT path")
    field = JudgeCall._meta.get_field("finished_at")
    convert = sqlrows._converter(field)
    assert convert is not None
    values = [
        dt.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC),
        dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        dt.datetime(2026, 1, 2, 11, 4, 5, 1, tzinfo=dt.timezone(dt.timedelta(hours=8))),
        dt.datetime.fromisoformat("2026-01-02T03:04:05.5+00:00"),
        None,
    ]
    assert [convert(v) for v in values] == [field.get_db_prep_save(v, connection) for v in values]
    assert convert(values[1]) == "2026-01-02 03:04:05"
    assert convert(values[2]) == "2026-01-02 03:04:05.000001"


def test_batches_sharing_a_run_context_report_what_the_database_holds(make_study, make_judge, fake):
    """The executor reads the run once (recording.RunContext); each batch's snapshot still
    comes from the database: another executor's increments and a cancel asked meanwhile show."""
    import pytest
    from django.db.models import F

    from evaluation.models import JudgeRun
    from evaluation.planning import judge_run_plan
    from evaluation.recording import Outcome, RunContext, judge_calls_record

    study = make_study(["A?", "B?"], n_llms=1)
    run = judge_run_create(study=study, judge=make_judge(json_mode="off"), repeat_rate=0)
    a, b = judge_run_plan(run=run).pending
    context = RunContext.load(run.pk)

    def outcome(job):
        raw = answer_for(job.bodies[False]["messages"])
        return Outcome(job=job, json_mode=False, status="ok", raw=raw, tokens_in=5, tokens_out=2)

    first = judge_calls_record(
        run_id=run.pk, parser="stars", outcomes=[outcome(a)], context=context
    )
    assert (first["n_done"], first["n_ok"], first["cancel"]) == (1, 1, False)
    JudgeRun.objects.filter(pk=run.pk).update(n_done=F("n_done") + 5, cancel_requested=True)
    second = judge_calls_record(
        run_id=run.pk, parser="stars", outcomes=[outcome(b)], context=context
    )
    assert (second["n_done"], second["n_ok"], second["cancel"]) == (7, 2, True)
    assert Rating.objects.filter(rater=run.judge.rater).count() == 2
    other = judge_run_create(study=make_study(["C?"], n_llms=1), judge=make_judge(), repeat_rate=0)
    with pytest.raises(ValueError):
        judge_calls_record(run_id=other.pk, parser="stars", outcomes=[], context=context)
