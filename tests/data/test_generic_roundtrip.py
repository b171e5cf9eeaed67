"""The generic JSONL/CSV format carries everything a rating has, and round-trips: export ->
import (under a new dataset and study) -> export gives the same file, byte for byte."""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotation import models as am
from annotation.importers import ImportRefused, dataset_import, dataset_preview
from annotation.recording import NewRating, ratings_record_bulk
from ranking.selectors import study_frames
from ranking.services import ReportFilters, report_build
from tests.data.conftest import table_counts
from tests.factories import generic_export, generic_round_trip, import_refused

T0 = dt.datetime(2024, 3, 1, 9, 0, 0, 123456, tzinfo=dt.UTC)
MINUTE = dt.timedelta(minutes=1)


def _study(dataset, rubric, *, mode: str, name: str) -> am.Study:
    return am.Study.objects.create(
        name=name, dataset=dataset, mode=mode, rubric=rubric, status=am.Study.Status.CLOSED
    )


def _raters() -> dict[str, am.Rater]:
    user = get_user_model().objects.create_user("ann", password="x")
    return {
        "onsite": am.Rater.objects.create(kind="human", pool="onsite", user=user),
        "crowd": am.Rater.objects.create(
            kind="human", pool="crowd", platform="prolific", external_id="PID123"
        ),
        "judge": am.Rater.objects.create(kind="judge", pool="judge", name="gpt-4o judge"),
    }


def _row(study: am.Study, item: am.Item, rater: am.Rater, **fields) -> NewRating:
    return NewRating(study_id=study.id, item_id=item.id, rater_id=rater.id, **fields)


def _unparsed(study: am.Study, item: am.Item, judge: am.Rater, *, raw_output: str, at) -> NewRating:
    """A judge output that could not be parsed: kept as given, with no score and no choice."""
    return _row(study, item, judge, parse_status="unparsed", raw_output=raw_output, submitted_at=at)


@pytest.fixture
def rich_star(small_dataset, star_rubric):
    """A star study with everything a rating can have: two human pools, a judge, a hidden
    repeat, hints, active times, an empty answer, a published score out of range and a judge
    output that could not be parsed."""
    q1 = am.Question.objects.get(dataset=small_dataset, external_id="Q1")
    empty = am.Response.objects.get(question=q1, llm__name="model-z")
    empty.text = ""
    empty.save()
    study = _study(small_dataset, star_rubric, mode="star", name="rich star")
    crit = {c.key: c.id for c in am.Criterion.objects.filter(rubric=star_rubric)}
    items = []
    for r in am.Response.objects.filter(question=q1).order_by("llm__name"):
        items.append(am.Item.objects.create(study=study, question=q1, response_a=r))
    raters = _raters()
    rows, t = [], T0
    for n, item in enumerate(items):
        for who in ("onsite", "crowd"):
            t += dt.timedelta(seconds=37, microseconds=n)
            rows.append(
                _row(
                    study,
                    item,
                    raters[who],
                    scores={crit["correctness"]: 1 + n, crit["explanation_correctness"]: 1 + n % 2},
                    hint_shown=bool(n % 2),
                    served_at=t - dt.timedelta(seconds=30),
                    submitted_at=t,
                    active_ms=25_000 + n,
                    comment='ok, "quoted"\nnew line' if n == 0 else "",
                )
            )
    rows[0].scores[crit["correctness"]] = 0  # as published, outside 1-3
    rows[0].out_of_range = frozenset({crit["correctness"]})
    rows.append(
        _row(
            study,
            items[0],
            raters["onsite"],
            is_repeat=True,
            repeat_of=rows[0],
            scores={crit["correctness"]: 2, crit["explanation_correctness"]: 1},
            served_at=t + dt.timedelta(minutes=5),
            submitted_at=t + dt.timedelta(minutes=6),
        )
    )
    judge_output = "Correctness: three-ish =SUM(A1)"
    rows.append(
        _unparsed(study, items[1], raters["judge"], raw_output=judge_output, at=t + MINUTE * 7)
    )
    ratings_record_bulk(rows=rows)
    return study


@pytest.fixture
def rich_pairwise(small_dataset, pairwise_rubric):
    study = _study(small_dataset, pairwise_rubric, mode="pairwise", name="rich pairwise")
    q2 = am.Question.objects.get(dataset=small_dataset, external_id="Q2")
    x, y, z = am.Response.objects.filter(question=q2).order_by("llm__name")
    items = [
        am.Item.objects.create(study=study, question=q2, response_a=a, response_b=b)
        for a, b in ((x, y), (x, z), (y, z))
    ]
    raters = _raters()
    rows = []
    for n, (item, choice) in enumerate(zip(items, ("A", "B", "tie"), strict=True)):
        rows.append(
            _row(
                study,
                item,
                raters["crowd"],
                choice=choice,
                left_is_a=bool(n % 2),
                submitted_at=T0 - dt.timedelta(hours=n),  # newest first in id order
                active_ms=9_000,
            )
        )
    rows.append(
        _row(
            study,
            items[0],
            raters["crowd"],
            choice="B",
            left_is_a=False,  # a pairwise repeat shows the sides swapped
            is_repeat=True,
            repeat_of=rows[0],
            submitted_at=T0 + dt.timedelta(hours=1),
        )
    )
    rows.append(_unparsed(study, items[2], raters["judge"], raw_output="I cannot decide.", at=T0))
    ratings_record_bulk(rows=rows)
    return study


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_star_study_round_trips_byte_for_byte(rich_star, fmt, tmp_path):
    first = generic_export(rich_star, fmt)
    copy = generic_round_trip(rich_star, fmt, tmp_path, rubric="llmeval2")
    assert generic_export(copy, fmt) == first
    again = generic_round_trip(copy, fmt, tmp_path, rubric="llmeval2", n=2)
    assert generic_export(again, fmt) == first


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_pairwise_study_round_trips_byte_for_byte(rich_pairwise, fmt, tmp_path):
    first = generic_export(rich_pairwise, fmt)
    copy = generic_round_trip(rich_pairwise, fmt, tmp_path, rubric=None)
    assert copy.name == f"copy 1 of {rich_pairwise.name} (pairwise)"
    assert generic_export(copy, fmt) == first


def test_the_copy_keeps_every_field_of_every_rating(rich_star, tmp_path):
    copy = generic_round_trip(rich_star, "jsonl", tmp_path, rubric="llmeval2")

    def fields(study):
        rows = am.Rating.objects.filter(item__study=study).values_list(
            "assignment__submitted_at",
            "assignment__served_at",
            "assignment__active_ms",
            "assignment__hint_shown",
            "assignment__is_repeat",
            "assignment__repeat_of__submitted_at",
            "rater__pool",
            "rater__platform",
            "parse_status",
            "raw_output",
            "comment",
            "item__response_a__length",
        )
        return sorted(rows, key=str)

    assert fields(copy) == fields(rich_star)
    flagged = am.Score.objects.filter(rating__item__study=copy, out_of_range=True)
    assert list(flagged.values_list("criterion__key", "value")) == [("correctness", 0)]
    unparsed = am.Rating.objects.get(item__study=copy, parse_status="unparsed")
    assert unparsed.raw_output == "Correctness: three-ish =SUM(A1)" and not unparsed.scores.exists()
    repeat = am.Assignment.objects.get(study=copy, is_repeat=True)
    assert (
        repeat.repeat_of.rater_id == repeat.rater_id and repeat.repeat_of.item_id == repeat.item_id
    )


def test_the_export_names_annotators_by_pseudonym_only(rich_star):
    text = generic_export(rich_star, "jsonl").decode()
    assert "PID123" not in text and '"ann"' not in text
    onsite = am.Rater.objects.get(pool="onsite")
    assert onsite.pseudonym in text
    assert "gpt-4o judge" in text


def test_the_report_counts_what_is_kept_as_given(rich_star):
    dq = report_build(study=rich_star, filters=ReportFilters.build(n_shuffles=0, n_bootstrap=0))
    n = dq.table("data_quality").set_index(["issue", "criterion"])["n"]
    assert n[("score outside the rubric's range", "correctness")] == 1
    assert n[("empty answer", "")] == 1
    assert n[("unparsed judge output", "")] == 1
    # The unparsed output counts for nothing: GPT-4 has no star row in the statistics.
    frames = study_frames(rich_star)
    assert set(frames.star_df["rater_kind"]) == {"human"}
    assert len(frames.star_df) == 2 * 7  # 7 parsed ratings of two criteria each


def _pair_lines(order: list[int]) -> str:
    """Six pairwise judgements, one per hour, written in the given line order."""
    outcomes = [("model-x", "a"), ("model-y", "b"), ("model-x", "a")] * 2
    lines = []
    for i in order:
        winner, choice = outcomes[i]
        lines.append(
            json.dumps(
                {
                    "type": "pairwise",
                    "question_id": "Q2",
                    "llm_a": "model-x",
                    "llm_b": "model-y" if i % 2 else "model-z",
                    "rater": f"r{i}",
                    "choice": choice,
                    "submitted_at": (T0 + dt.timedelta(hours=i)).isoformat(),
                }
            )
        )
    return "\n".join(lines) + "\n"


def test_elo_follows_the_rating_times_not_the_file_order(small_dataset, tmp_path):
    elo = []
    for name, order in (("forward", [0, 1, 2, 3, 4, 5]), ("shuffled", [5, 2, 0, 4, 1, 3])):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(_pair_lines(order), encoding="utf-8")
        result = dataset_import(
            format="jsonl", paths=[path], dataset="tiny", study=name, progress=False
        )
        study = am.Study.objects.get(pk=result.study_ids[0])
        report = report_build(study=study, filters=ReportFilters.build(n_shuffles=0, n_bootstrap=0))
        table = report.table("leaderboard_elo")
        elo.append(table.set_index(["rater_kind", "model"])["elo"].round(9).to_dict())
    assert elo[0] == elo[1]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"submitted_at": "yesterday"}, "submitted_at must be an ISO 8601 time"),
        ({"active_ms": "²"}, "active_ms must be a whole number"),
        ({"active_ms": "9" * 5000}, "active_ms must be a whole number"),
        ({"hint_shown": "maybe"}, "hint_shown must be true or false"),
        ({"rater_platform": "fiverr"}, "rater_platform must be prolific, mturk or empty"),
        ({"parse_status": "unparsed"}, "parse_status unparsed is for judge outputs"),
        ({"scores": {"correctness": "٣", "explanation_correctness": 1}}, "not a whole number"),
        (
            {"scores": {"correctness": 0, "explanation_correctness": 1}},
            "outside the rubric's range",
        ),
        ({"out_of_range": ["correctness"]}, "whose score 2 is in range"),
        ({"is_repeat": True}, "no first rating to repeat"),
        ({"text": "\x00"}, None),
    ],
)
def test_bad_rating_fields_are_refused_and_nothing_is_written(
    small_dataset, tmp_path, change, message
):
    rec = {
        "type": "rating",
        "question_id": "Q1",
        "llm": "model-x",
        "rater": "ann-01",
        "scores": {"correctness": 2, "explanation_correctness": 1},
    } | change
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(rec) + "\n", encoding="utf-8")
    before = table_counts()
    if message is None:  # an unknown field is ignored and counted, never stored
        result = dataset_import(
            format="jsonl", paths=[path], dataset="tiny", rubric="llmeval2", progress=False
        )
        assert any("unknown field 'text'" in r.what for r in result.repairs)
        return
    with pytest.raises(ImportRefused, match=message):
        dataset_import(
            format="jsonl", paths=[path], dataset="tiny", rubric="llmeval2", progress=False
        )
    assert table_counts() == before


@pytest.mark.parametrize(
    ("stored", "given"),
    [
        ([], ["first", "first"]),
        (["first"], ["first", "first"]),
        ([], ["first", "repeat", "repeat"]),
        (["first", "repeat"], ["repeat", "repeat"]),
    ],
)
def test_a_rating_given_twice_is_refused_whether_or_not_it_is_stored(
    small_dataset, tmp_path, stored, given
):
    """The writer's own check (the bundle cannot know what is stored): the same rater's first
    rating, or repeat, of an item twice in one import writes nothing."""
    rec = {"type": "pairwise", "question_id": "Q1", "llm_a": "model-x", "llm_b": "model-y",
           "rater": "ann-01", "choice": "a"}  # fmt: skip

    def run(kinds: list[str], name: str) -> None:
        path = tmp_path / name
        lines = [json.dumps(rec | {"is_repeat": kind == "repeat"}) for kind in kinds]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        dataset_import(format="jsonl", paths=[path], dataset="tiny", study="twice", progress=False)

    if stored:
        run(stored, "stored.jsonl")
    before = table_counts()
    with pytest.raises(ImportRefused, match="rates this item twice in the same import"):
        run(given, "given.jsonl")
    assert table_counts() == before


def test_a_rating_of_an_unknown_question_is_refused_naming_the_first_such_line(
    small_dataset, tmp_path
):
    pair = {"type": "pairwise", "llm_a": "model-x", "llm_b": "model-y", "rater": "ann-01",
            "choice": "a"}  # fmt: skip
    path = tmp_path / "unknown.jsonl"
    lines = [pair | {"question_id": q} for q in ("Q1", "Q9", "Q8", "Q9")]
    path.write_text("\n".join(map(json.dumps, lines)) + "\n", encoding="utf-8")
    before = table_counts()
    with pytest.raises(ImportRefused) as refused:
        dataset_import(format="jsonl", paths=[path], dataset="tiny", progress=False)
    assert str(refused.value) == (
        "unknown.jsonl, line 2: question 'Q9' is neither in the file nor in dataset 'tiny'"
    )
    assert table_counts() == before


def test_every_bad_line_is_listed_for_a_preview(small_dataset, tmp_path):
    good = {"type": "response", "question_id": "Q1", "llm": "model-w", "text": ""}
    lines = [good, {"type": "nope", "question_id": "Q1"}, good | {"question_id": ""}]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in lines) + "\n", encoding="utf-8")
    with pytest.raises(ImportRefused) as info:
        dataset_import(format="jsonl", paths=[path], dataset="tiny", dry_run=True, progress=False)
    assert info.value.errors == [
        "mixed.jsonl, line 2: type must be one of question, response, rating, pairwise, not 'nope'",
        "mixed.jsonl, line 3: question_id is missing",
    ]


def test_an_empty_answer_is_imported_not_refused(small_dataset, tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("type,question_id,llm,text\nresponse,Q1,model-w,\n", encoding="utf-8")
    dataset_import(format="csv", paths=[path], dataset="tiny", progress=False)
    assert am.Response.objects.get(llm__name="model-w").length == 0


def test_export_data_writes_the_generic_format(rich_star, tmp_path):
    out = tmp_path / "s.jsonl"
    call_command(
        "export_data",
        study=str(rich_star.pk),
        what="generic",
        format="jsonl",
        out=str(out),
        stderr=io.StringIO(),
    )
    types = [json.loads(line)["type"] for line in out.read_text("utf-8").splitlines()]
    assert types.count("question") == 1 and types.count("response") == 3
    assert types.count("rating") == 8


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"type": "question", "question_id": "Q9", "text": "a\x00b"}, "text contains a NUL"),
        ({"type": "question", "question_id": "Q" * 201, "text": "t"}, "question id is longer"),
        ({"type": "response", "question_id": "Q1", "llm": "m" * 201, "text": "t"}, "LLM name"),
        (
            {"type": "question", "question_id": "Q9", "text": "t", "task_type": "x" * 101},
            "task type is longer than 100",
        ),
        (
            {
                "type": "pairwise",
                "question_id": "Q2",
                "llm_a": "model-x",
                "llm_b": "model-y",
                "rater": "gpt",
                "rater_kind": "judge",
                "parse_status": "unparsed",
                "raw_output": "\x00",
            },
            "raw_output contains a NUL",
        ),
    ],
)
def test_values_the_database_cannot_hold_are_refused_cleanly(
    small_dataset, tmp_path, record, message
):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    before = table_counts()
    with pytest.raises(ImportRefused, match=message):
        dataset_import(format="jsonl", paths=[path], dataset="tiny", progress=False)
    assert table_counts() == before


def test_the_api_serves_the_generic_export_to_the_owner_only(
    l2_scores_imported, organizer_client, organizer, client, other_organizer
):
    study = am.Study.objects.get(name="LLMEval-2 (imported scores)")
    study.owner = organizer
    study.save()
    url = f"/api/studies/{study.pk}/export/"
    r = organizer_client.get(url, {"what": "generic", "file_format": "jsonl"})
    assert r.status_code == 200
    assert b"".join(r.streaming_content) == generic_export(study, "jsonl")
    client.force_login(other_organizer)
    assert client.get(url, {"what": "generic", "file_format": "jsonl"}).status_code == 404


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_imported_llmeval2_scores_round_trip_with_their_flagged_zeros(
    l2_scores_imported, fmt, tmp_path
):
    study = am.Study.objects.get(name="LLMEval-2 (imported scores)")
    first = generic_export(study, fmt)
    assert b'"out_of_range": ["correctness", "explanation_correctness"]' in first or fmt == "csv"
    copy = generic_round_trip(study, fmt, tmp_path, rubric="llmeval2")
    assert generic_export(copy, fmt) == first
    assert am.Score.objects.filter(rating__item__study=copy, out_of_range=True).count() == (
        am.Score.objects.filter(rating__item__study=study, out_of_range=True).count()
    )


def test_the_report_api_serves_the_data_quality_table(rich_star, organizer):
    rich_star.owner = organizer
    rich_star.save()
    api = APIClient()
    api.force_authenticate(organizer)
    url = reverse("ranking:api-report-table", args=[rich_star.pk, "data_quality"])
    body = api.get(url).json()
    assert body["columns"] == ["issue", "criterion", "n", "treatment"]
    rows = {(r["issue"], r["criterion"]): r["n"] for r in body["rows"]}
    assert rows[("score outside the rubric's range", "all")] == 1
    assert rows[("unparsed judge output", "")] == 1


def test_the_rows_of_one_csv_rating_must_agree_on_its_exposure(small_dataset, tmp_path):
    import_refused(
        tmp_path / "r.csv",
        "type,question_id,llm,rater,criterion,score,submitted_at\n"
        "rating,Q1,model-x,ann,correctness,2,2024-01-01T10:00:00+00:00\n"
        "rating,Q1,model-x,ann,explanation_correctness,1,2024-01-01T11:00:00+00:00\n",
        match=r"r.csv, line 3: submitted_at differ from .* line 2",
        dataset="tiny",
    )


def test_a_preview_counts_what_would_be_added_and_lists_bad_lines(small_dataset, tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text(
        json.dumps({"type": "response", "question_id": "Q1", "llm": "model-w", "text": ""}) + "\n",
        encoding="utf-8",
    )
    before = table_counts()
    preview = dataset_preview(format="jsonl", paths=[good], dataset="tiny", progress=False)
    assert preview["ok"] and preview["added"]["responses"] == 1 and preview["added"]["llms"] == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "question"}\nnot json\n', encoding="utf-8")
    preview = dataset_preview(format="jsonl", paths=[bad], dataset="tiny", progress=False)
    assert preview == {
        "ok": False,
        "added": {},
        "skipped": {},
        "repairs": [],
        "errors": ["bad.jsonl, line 2: not valid JSON (Expecting value, column 1)"],
    }
    assert table_counts() == before
