"""`manage.py judge_reparse`: stored outputs re-read with today's parsers, no API call."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import Assignment
from evaluation import services
from evaluation.models import JudgeCall, JudgeRun

# What the parser before issue #10 stored for the paper's own line format when the two scores
# differ: "Correctness" matched inside "Explanation Correctness".
OLD_AMBIGUOUS = "correctness: \"ambiguous ['1', '3']\" is not a whole number"


def _finished_run(make_study, make_judge, questions) -> JudgeRun:
    study = make_study(questions, n_llms=1, kind="objective", repeat_rate=0.0)
    judge = make_judge()
    call_command(
        "judge", "--study", str(study.pk), "--judge", str(judge.pk), "--repeat-rate", "0",
        "--no-progress", stdout=io.StringIO(),
    )  # fmt: skip
    return JudgeRun.objects.get(study=study)


def _as_the_old_parser_left_it(call: JudgeCall) -> None:
    Assignment.objects.filter(rating__pk=call.rating_id).delete()
    JudgeCall.objects.filter(pk=call.pk).update(
        raw_output="Correctness: 3\nExplanation Correctness: 1",
        parse_status=JudgeCall.Parse.FAILED,
        parse_error=OLD_AMBIGUOUS,
        parsed=None,
        rating=None,
    )
    run = call.run
    services.judge_run_recount(run=run)
    run.save()


def _reparse(*args: str) -> str:
    out = io.StringIO()
    call_command("judge_reparse", *args, stdout=out)
    return out.getvalue()


def test_a_verdict_stored_as_ambiguous_becomes_a_rating_after_reparse(make_study, make_judge, fake):
    run = _finished_run(make_study, make_judge, ["Q1?", "Q2?"])
    stale, fine = list(run.calls.order_by("id"))
    _as_the_old_parser_left_it(stale)
    run.refresh_from_db()
    assert (run.n_ok, run.n_parse_failed) == (1, 1)
    paid = len(fake.log)

    out = _reparse("--run", str(run.pk))

    assert len(fake.log) == paid  # offline: the server saw nothing
    assert f"Run {run.pk}: 1 changed; parsed 1 -> 2, parse failures 1 -> 0." in out
    assert "Re-parsed 1 run(s): 1 call(s) changed, 0 skipped." in out
    stale.refresh_from_db()
    assert stale.parse_status == JudgeCall.Parse.OK and stale.parse_error == ""
    assert stale.parsed == {"scores": {"correctness": 3, "explanation_correctness": 1}}
    assert stale.rating.scores_dict() == {"correctness": 3, "explanation_correctness": 1}
    assert stale.rating.assignment.rater_id == run.judge.rater_id
    fine_rating = fine.rating_id
    fine.refresh_from_db()
    assert fine.rating_id == fine_rating  # untouched verdicts keep their rating


def test_reparse_all_skips_runs_that_are_still_executing(make_study, make_judge, fake):
    done = _finished_run(make_study, make_judge, ["Q?"])
    busy = _finished_run(make_study, make_judge, ["R?"])
    stale = busy.calls.get()
    _as_the_old_parser_left_it(stale)
    JudgeRun.objects.filter(pk=busy.pk).update(status=JudgeRun.Status.RUNNING)

    out = _reparse("--all")

    assert f"Run {done.pk}: 0 changed" in out
    assert f"Run {busy.pk}: skipped, it is running." in out
    stale.refresh_from_db()
    assert stale.parse_status == JudgeCall.Parse.FAILED and stale.rating is None


def test_reparse_all_of_one_study_leaves_other_studies_alone(make_study, make_judge, fake):
    mine = _finished_run(make_study, make_judge, ["Q?"])
    other = _finished_run(make_study, make_judge, ["R?"])
    _as_the_old_parser_left_it(other.calls.get())
    out = _reparse("--all", "--study", str(mine.study_id))
    assert f"Run {mine.pk}:" in out and f"Run {other.pk}:" not in out
    assert other.calls.get().parse_status == JudgeCall.Parse.FAILED


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--run", "999999"], "No run 999999."),
        ([], "one of the arguments --run --all is required"),
        (["--run", "1", "--all"], "not allowed with argument"),
        # int() took '١٢' as 12, and a 30-digit id was an OverflowError at the query.
        (["--run", "9" * 30], "is not a row id"),
        (["--all", "--study", "١٢"], "is not a row id"),
        (["--run", "1_0"], "is not a row id"),
    ],
)
def test_bad_arguments_are_refused_clearly(db, args, message):
    with pytest.raises(CommandError, match=message):
        _reparse(*args)
