"""`manage.py judge`: run with a progress bar and summary, re-parse, resume, clear errors."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from evaluation.models import JudgeRun

from .conftest import judge_command


def test_the_command_runs_a_study_with_a_progress_bar_and_prints_the_summary(
    make_study, make_judge, fake
):
    study = make_study(["Q1?", "Q2? <<fake:malformed>>"], mode="pairwise", rubric="pairwise")
    judge = make_judge()
    err = io.StringIO()
    summary = judge_command(
        study.name, judge.name, "--both-orders", "--repeat-rate", "0", stderr=err
    )
    run = JudgeRun.objects.get(study=study)
    assert run.status == "done" and run.n_done == 4 and run.n_parse_failed == 2  # both orders
    assert f"Run {run.pk} done: 4/4 calls, 2 parsed, 2 parse failures, 0 failed calls" in summary
    assert "Position consistency: " in summary and " over 1 pairs" in summary
    bar = err.getvalue()
    assert "4/4" in bar and "unparsed=2" in bar and "cost=" in bar and "call/s" in bar


def test_reparse_from_the_command_calls_nothing(make_study, make_judge, fake):
    study = make_study(["Q?"], n_llms=1)
    judge = make_judge()
    judge_command(str(study.pk), str(judge.pk), "--no-progress")
    calls = len(fake.log)
    out = judge_command(str(study.pk), str(judge.pk), "--reparse")
    assert "0 changed, 1 parsed, 0 parse failures" in out and len(fake.log) == calls


def test_resuming_a_finished_run_is_refused_clearly(make_study, make_judge, fake):
    study = make_study(["Q?"], n_llms=1)
    judge = make_judge()
    judge_command(str(study.pk), str(judge.pk), "--no-progress")
    run = JudgeRun.objects.get(study=study)
    with pytest.raises(CommandError, match="finished or held"):
        call_command("judge", "--resume", str(run.pk), "--no-progress", stdout=io.StringIO())


def test_unknown_studies_and_judges_are_named_in_the_error(make_study, make_judge, fake):
    with pytest.raises(CommandError, match="No study 'nope'"):
        call_command("judge", "--study", "nope", "--judge", "x")
    with pytest.raises(CommandError, match="--study and --judge"):
        call_command("judge")


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--limit", str(10**23), "The limit must be at most 10000000 items."),
        ("--limit", "10000001", "The limit must be at most 10000000 items."),
        ("--seed", str(2**63), "The seed must be between -2147483648 and 2147483647."),
        ("--seed", str(-(2**31) - 1), "The seed must be between -2147483648 and 2147483647."),
    ],
)
def test_out_of_range_limits_and_seeds_are_refused_with_no_run(
    make_study, make_judge, fake, flag, value, said
):
    """The page and the API bound them in their forms; the command line has none, and the
    database cannot hold them (an OverflowError, a traceback). The service refuses them."""
    study, judge = make_study(["Q1?"]), make_judge()
    with pytest.raises(CommandError, match=said):
        judge_command(study.name, judge.name, flag, value)
    assert not JudgeRun.objects.exists() and not fake.log


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--limit", "10000001"], "The limit must be at most 10000000 items."),
        (["--limit", "0"], "The limit must be at least 1."),
        (["--seed", str(2**31)], "The seed must be between -2147483648 and 2147483647."),
        (["--repeat-rate", "0.9"], "The repeat rate must be between 0 and 0.5."),
        (["--budget", str(10**9)], "The budget must be between 0 and 99999999."),
    ],
)
@pytest.mark.parametrize("dry_run", [True, False])
def test_bad_options_are_refused_before_any_estimate(
    make_study, make_judge, fake, flags, said, dry_run
):
    """Validate first, then estimate: a refused option prints no cost estimate (also with
    --dry-run, which used to estimate a run of 10,000,001 items) and asks the server nothing."""
    study, judge = make_study(["Q1?"]), make_judge()
    out = io.StringIO()
    ids = ["--study", study.name, "--judge", judge.name]
    with pytest.raises(CommandError, match=said):
        call_command("judge", *ids, *flags, *(["--dry-run"] if dry_run else []), stdout=out)
    assert out.getvalue() == "" and not JudgeRun.objects.exists() and not fake.log
