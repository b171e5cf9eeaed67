"""A live judge output that could not be parsed is kept as a call, not as a rating; the report's
data-quality table counts it and the generic export writes it as an unparsed rating, as it does
for an imported one, so export -> import -> export still gives the same file."""

from __future__ import annotations

import json

import pytest

from annotation.models import Rating
from evaluation.models import JudgeCall
from evaluation.runner import execute_run
from evaluation.selectors import unparsed_judge_outputs
from evaluation.services import judge_run_create
from ranking.quality import UNPARSED, data_quality
from tests.factories import generic_export, generic_round_trip

RUBRIC = {"star": "llmeval2", "pairwise": "pairwise"}
N_LLMS = {"star": 1, "pairwise": 2}


def _run(study, judge):
    run = judge_run_create(study=study, judge=judge, repeat_rate=0)
    return execute_run(run.pk, backoff=0.01)


def _unparsed_records(data: bytes) -> list[dict]:
    records = [json.loads(line) for line in data.decode().splitlines()]
    return [r for r in records if r.get("parse_status") == "unparsed"]


def _n_unparsed(study) -> int:
    return int(data_quality(study).set_index("issue").loc[UNPARSED, "n"])


@pytest.mark.parametrize("mode", ["star", "pairwise"])
def test_an_unparsed_live_output_is_counted_and_exported(make_study, make_judge, fake, mode):
    study = make_study(
        ["Fine?", "Garbage <<fake:malformed>> =cmd"],
        mode=mode,
        rubric=RUBRIC[mode],
        n_llms=N_LLMS[mode],
        repeat_rate=0,
    )
    judge = make_judge(name="live judge")
    run = _run(study, judge)
    failed = JudgeCall.objects.filter(run=run).get(parse_status=JudgeCall.Parse.FAILED)
    assert failed.rating is None and failed.raw_output

    assert _n_unparsed(study) == 1
    records = _unparsed_records(generic_export(study))
    assert len(records) == 1
    rec = records[0]
    assert rec["rater"] == "live judge" and rec["rater_kind"] == "judge"
    assert rec["raw_output"] == failed.raw_output
    assert rec["question_id"] == failed.item.question.external_id
    assert rec["is_repeat"] is False and rec["active_ms"] == failed.latency_ms
    if mode == "star":
        assert rec["scores"] == {}
    else:
        assert rec["choice"] == ""


def test_the_export_with_live_unparsed_outputs_round_trips(make_study, make_judge, fake, tmp_path):
    study = make_study(["Fine?", "Garbage <<fake:malformed>>"], n_llms=1, repeat_rate=0)
    _run(study, make_judge(name="live judge"))
    first = generic_export(study)
    copy = generic_round_trip(study, "jsonl", tmp_path, rubric="llmeval2")
    # In the copy the output is an imported unparsed rating: counted once, exported the same.
    assert Rating.objects.filter(item__study=copy, parse_status="unparsed").count() == 1
    assert _n_unparsed(copy) == 1
    assert generic_export(copy) == first


def test_a_failure_repeated_in_a_second_run_counts_once(make_study, make_judge, fake):
    study = make_study(["Fine?", "Garbage <<fake:malformed>>"], n_llms=1, repeat_rate=0)
    judge = make_judge()
    _run(study, judge)
    _run(study, judge)
    assert JudgeCall.objects.filter(run__study=study, parse_status="failed").count() == 2
    assert len(unparsed_judge_outputs(study)) == 1
    assert _n_unparsed(study) == 1


def test_an_output_the_judge_has_a_rating_for_is_not_unparsed(make_study, make_judge, fake):
    study = make_study(["Fine?", "Garbage <<fake:malformed>>"], n_llms=1, repeat_rate=0)
    run = _run(study, make_judge())
    failed = JudgeCall.objects.filter(run=run).get(parse_status=JudgeCall.Parse.FAILED)
    good = JudgeCall.objects.filter(run=run).get(parse_status=JudgeCall.Parse.OK)
    # As if a later run had read the failed item: the judge now has a first rating of it.
    Rating.objects.filter(pk=good.rating_id).update(item=failed.item)
    assert unparsed_judge_outputs(study) == []
    assert _n_unparsed(study) == 0


def test_swap_and_other_studies_outputs_are_not_counted(make_study, make_judge, fake):
    study = make_study(
        ["Garbage <<fake:malformed>>"], mode="pairwise", rubric="pairwise", repeat_rate=0
    )
    other = make_study(["Fine?"], mode="pairwise", rubric="pairwise", repeat_rate=0)
    judge = make_judge()
    run = judge_run_create(study=study, judge=judge, repeat_rate=0, both_orders=True)
    run = execute_run(run.pk, backoff=0.01)
    assert run.calls.filter(parse_status="failed", purpose="swap").exists()
    assert len(unparsed_judge_outputs(study)) == 1
    assert unparsed_judge_outputs(other) == [] and _n_unparsed(other) == 0


def test_a_run_whose_outputs_all_fail_changes_the_report_stamp(make_study, make_judge, fake):
    from ranking.selectors import study_rating_stamp

    study = make_study(["Garbage <<fake:malformed>>"], n_llms=1, repeat_rate=0)
    before = study_rating_stamp(study)
    _run(study, make_judge())
    assert Rating.objects.filter(item__study=study).count() == 0
    assert study_rating_stamp(study) != before


@pytest.mark.parametrize("mode", ["live", "batch"])
@pytest.mark.parametrize("marker", ["nested", "nul", "surrogate"])
def test_a_hostile_output_is_kept_as_an_unparsed_call_and_the_run_finishes(
    make_study, make_judge, fake, marker, mode, monkeypatch
):
    # A judge server (or a model talked into it) answers with JSON nested 20,000 deep, or a
    # good answer followed by a NUL or a lone surrogate (which no database text holds): the paid
    # call is stored (unparsed when nothing can be read from it) and the run finishes.
    monkeypatch.setenv("JUDGE_BATCH_POLL", "0.01")
    study = make_study(["Fine?", f"Hostile <<fake:{marker}>>"], n_llms=1, repeat_rate=0)
    run = judge_run_create(study=study, judge=make_judge(), repeat_rate=0, mode=mode)
    run = execute_run(run.pk, backoff=0.01)
    assert run.status == "done", (run.status, run.error)
    calls = JudgeCall.objects.filter(run=run)
    assert calls.count() == 2 and not calls.exclude(status=JudgeCall.Status.OK).exists()
    hostile = calls.get(item__question__text__contains="Hostile")
    assert "\x00" not in hostile.raw_output and "\ud800" not in hostile.raw_output
    if marker == "nested":
        assert hostile.parse_status == JudgeCall.Parse.FAILED and hostile.rating is None
    else:  # the answer before the stray character is read as usual
        assert hostile.parse_status == JudgeCall.Parse.OK and hostile.rating is not None
