from __future__ import annotations

import io
import json
import zipfile
from collections import Counter

import pytest
from django.core.management import CommandError, call_command
from django.db.models import Count
from openpyxl import load_workbook

from annotation.models import Assignment, Criterion, Rater, Score
from ranking.selectors import study_frames
from ranking.services import ReportFilters, report_build, table_names
from ranking.simulate import simulate_ratings

pytestmark = pytest.mark.django_db


def simulated(study):
    return Assignment.objects.filter(study=study, rater__meta__simulated=True)


# --------------------------------------------------------------------------- simulation


def test_simulation_adds_labelled_raters_in_three_pools_with_valid_scores(star_study):
    study = star_study.study
    result = simulate_ratings(study=study, raters_per_pool=3, seed=1, repeat_rate=0.2)
    raters = Rater.objects.filter(meta__simulated=True)
    assert sorted(set(raters.values_list("pool", flat=True))) == ["crowd", "onsite", "public"]
    assert {r.name for r in raters} >= {"sim-onsite-01", "sim-crowd-03", "sim-public-02"}
    assert all(r.kind == "human" and r.meta["simulated"] is True for r in raters)
    # One rating per item per pool, each answered, each score within its criterion's range.
    firsts = simulated(study).filter(is_repeat=False)
    assert firsts.count() == len(star_study.items) * 3 == result.assignments - result.repeats
    per_item_pool = Counter(firsts.values_list("item_id", "rater__pool"))
    assert set(per_item_pool.values()) == {1}
    assert Score.objects.filter(rating__assignment__in=simulated(study)).count() == result.scores
    for s in Score.objects.filter(rating__assignment__in=simulated(study)).select_related(
        "criterion"
    ):
        assert s.criterion.min_score <= s.value <= s.criterion.max_score
    # The criteria follow the real ratings: objective items get the objective criteria.
    keys = set(
        Score.objects.filter(
            rating__assignment__in=simulated(study), rating__item__question__kind="objective"
        ).values_list("criterion__key", flat=True)
    )
    assert keys == {"correctness", "explanation_correctness"}
    assert all(a.status == "submitted" and a.submitted_at > a.served_at for a in firsts)


@pytest.fixture
def wide_pair_study(organizer, pairwise_rubric):
    """4 questions x 5 answers = 40 pairs: enough items per rater for spaced-out repeats."""
    from annotation.models import LLM, Dataset, Question, Response
    from annotation.services import study_create

    ds = Dataset.objects.create(name="wide")
    llms = [LLM.objects.get_or_create(name=f"w-{i}")[0] for i in range(5)]
    for q in range(4):
        question = Question.objects.create(dataset=ds, external_id=f"W{q}", text="?", task_type="T")
        for i, llm in enumerate(llms):
            Response.objects.create(question=question, llm=llm, text="x" * (50 + 200 * i))
    return study_create(
        name="Wide pairs", dataset=ds, mode="pairwise", rubric=pairwise_rubric, owner=organizer
    )


def test_pairwise_repeats_are_spaced_out_and_swap_the_sides(wide_pair_study):
    study = wide_pair_study
    result = simulate_ratings(study=study, raters_per_pool=1, seed=3, repeat_rate=0.25)
    repeats = list(simulated(study).filter(is_repeat=True).select_related("repeat_of"))
    assert result.repeats == len(repeats) > 0
    for r in repeats:
        assert r.repeat_of.rater_id == r.rater_id and r.repeat_of.item_id == r.item_id
        assert not r.repeat_of.is_repeat
        assert r.left_is_a is not r.repeat_of.left_is_a
        assert r.seq >= r.repeat_of.seq + 5
        assert r.served_at > r.repeat_of.submitted_at
    choices = set(simulated(study).values_list("rating__choice", flat=True))
    assert choices <= {"A", "B", "tie", "both_bad"} and len(choices) >= 2
    # Sides are random: both orders occur.
    assert set(simulated(study).values_list("left_is_a", flat=True)) == {True, False}


def test_simulation_is_idempotent_unless_forced_or_asked_for_more(star_study):
    study = star_study.study
    first = simulate_ratings(study=study, raters_per_pool=2, seed=5)
    n = simulated(study).count()
    again = simulate_ratings(study=study, raters_per_pool=2, seed=5)
    assert again.skipped and simulated(study).count() == n
    forced = simulate_ratings(study=study, raters_per_pool=2, seed=5, force=True)
    assert simulated(study).count() == n == forced.assignments == first.assignments
    more = simulate_ratings(study=study, raters_per_pool=2, seed=5, more=True)
    assert simulated(study).count() == n + more.assignments
    names = set(simulated(study).values_list("rater__name", flat=True))
    assert "sim-onsite-03" in names and "sim-onsite-04" in names
    # The database's own rule holds: one first exposure per item and rater.
    dup = (
        Assignment.objects.filter(study=study, is_repeat=False)
        .values("item", "rater")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
    )
    assert not dup.exists()


def test_simulation_is_seeded(star_study, django_db_blocker):
    study = star_study.study
    simulate_ratings(study=study, raters_per_pool=2, seed=11)
    a = sorted(
        Score.objects.filter(rating__assignment__in=simulated(study)).values_list(
            "rating__rater__name", "rating__item_id", "criterion__key", "value"
        )
    )
    simulate_ratings(study=study, raters_per_pool=2, seed=11, force=True)
    b = sorted(
        Score.objects.filter(rating__assignment__in=simulated(study)).values_list(
            "rating__rater__name", "rating__item_id", "criterion__key", "value"
        )
    )
    assert a == b


def test_simulated_scores_follow_the_real_human_scores(organizer, small_dataset, star_rubric):
    """The real annotator gave every answer full marks: simulated raters score near the top,
    and the noisier pools stray further from it than onsite."""
    import datetime as dt

    from annotation.services import study_create
    from tests.ranking.conftest import make_raters, rate

    study = study_create(name="Big", dataset=small_dataset, mode="star", rubric=star_rubric)
    raters = make_raters("real-")
    full = {}
    for i, item in enumerate(study.items.select_related("question")):
        criteria = study.rubric.criteria_for(item.question)
        full.update({c.key: c.max_score for c in criteria})
        # The human gives the highest marks; a judge who always gives the lowest is overruled.
        for day, who, marks in ((1, "onsite", "max_score"), (2, "judge", "min_score")):
            at = dt.datetime(2024, 1, day, tzinfo=dt.UTC) + dt.timedelta(minutes=i)
            scores = {c.key: getattr(c, marks) for c in criteria}
            rate(study, item, raters[who], at=at, scores=scores)
    # 16 raters per pool, each item rated 16 times per pool: across 60 studies (the seed mixes
    # in the study's id, which PostgreSQL never reuses) the public-minus-onsite gap was 0.15-0.40,
    # about five spreads above 0; with 4 and 4 it came within 0.01 and once fell below (CI).
    simulate_ratings(study=study, raters_per_pool=16, ratings_per_item=16, seed=2)
    frame = study_frames(study).star_df
    sim = frame[frame["rater_id"].isin(simulated(study).values_list("rater__pseudonym", flat=True))]
    gap = (sim["criterion"].map(full) - sim["score"]).groupby(sim["pool"]).mean()
    assert gap["onsite"] < 0.5
    assert gap["onsite"] < gap["public"]


def test_simulation_fills_the_pool_tables_of_the_report(star_study):
    simulate_ratings(study=star_study.study, raters_per_pool=2, seed=0)
    report = report_build(study=star_study.study, filters=ReportFilters.build(min_ratings=1))
    pools = set(report.table("accuracy_by_pool")["pool"].astype(str))
    assert {"onsite", "crowd", "public", "judge"} <= pools


def test_simulate_command_reports_and_refuses_unknown_studies(star_study):
    out = io.StringIO()
    call_command(
        "simulate_ratings",
        "--study",
        str(star_study.study.pk),
        "--raters-per-pool",
        "2",
        stdout=out,
    )
    assert "Simulated" in out.getvalue()
    out = io.StringIO()
    # Keyword form, as the demo loader calls it.
    call_command("simulate_ratings", study=star_study.study.name, stdout=out)
    assert "nothing added" in out.getvalue()
    with pytest.raises(CommandError):
        call_command("simulate_ratings", "--study", "no such study")


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--raters-per-pool", "99999999999999"),  # ran for hours making raters
        ("--raters-per-pool", "0"),
        ("--ratings-per-item", "0"),
        ("--ratings-per-item", "51"),
        ("--max-items", "-1"),
        ("--seed", "-1"),
        ("--seed", "9" * 30),
    ],
)
def test_simulate_command_refuses_options_out_of_range_and_writes_nothing(
    star_study, option, value
):
    before = Rater.objects.count()
    with pytest.raises(CommandError, match="must be between"):
        call_command("simulate_ratings", "--study", str(star_study.study.pk), option, value)
    assert Rater.objects.count() == before


@pytest.mark.parametrize("command", ["report", "export_data"])
def test_commands_say_when_they_cannot_write_their_file(star_study, tmp_path, command):
    # A traceback (FileNotFoundError, NotADirectoryError) before.
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    outs = [blocker / "out.json"]
    if command == "export_data":  # the report makes its folders; the export does not
        outs.append(tmp_path / "missing" / "out.csv")
    for out in outs:
        with pytest.raises(CommandError, match="Cannot write"):
            call_command(command, "--study", str(star_study.study.pk), "--out", str(out))


# --------------------------------------------------------------------------- report command


def test_report_command_writes_json(star_study, tmp_path):
    out = tmp_path / "r.json"
    call_command(
        "report",
        "--study",
        str(star_study.study.pk),
        "--format",
        "json",
        "--out",
        str(out),
        "--pool",
        "judge",
        stdout=io.StringIO(),
    )
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["filters"]["pools"] == ["judge"]
    assert set(doc["tables"]) == set(table_names())
    assert doc["meta"]["n_raters"] == 1


def test_report_command_writes_json_to_standard_output(star_study):
    out = io.StringIO()
    call_command("report", "--study", str(star_study.study.pk), "--out", "-", stdout=out)
    assert json.loads(out.getvalue())["study"]["name"] == "Star study"
    with pytest.raises(CommandError, match="standard output"):
        call_command("report", "--study", str(star_study.study.pk), "--format", "csv", "--out", "-")


def test_report_command_writes_xlsx_and_csv_zip_and_folder(star_study, tmp_path):
    sid = str(star_study.study.pk)
    call_command(
        "report",
        "--study",
        sid,
        "--format",
        "xlsx",
        "--out",
        str(tmp_path / "r.xlsx"),
        stdout=io.StringIO(),
    )
    wb = load_workbook(tmp_path / "r.xlsx", read_only=True)
    assert "leaderboard_star" in wb.sheetnames
    call_command(
        "report",
        "--study",
        "Star study",
        "--format",
        "csv",
        "--out",
        str(tmp_path / "r.zip"),
        stdout=io.StringIO(),
    )
    assert "gaps.csv" in zipfile.ZipFile(tmp_path / "r.zip").namelist()
    call_command(
        "report",
        "--study",
        sid,
        "--format",
        "csv",
        "--out",
        str(tmp_path / "folder"),
        "--criterion",
        "correctness",
        "--start",
        "2024-03-01",
        stdout=io.StringIO(),
    )
    text = (tmp_path / "folder" / "leaderboard_star.csv").read_text(encoding="utf-8")
    assert "explanation_correctness" not in text and "correctness" in text


def test_report_command_refuses_bad_input(star_study):
    sid = str(star_study.study.pk)
    with pytest.raises(CommandError, match="No study"):
        call_command("report", "--study", "9999999")
    with pytest.raises(CommandError, match="--criterion"):
        call_command("report", "--study", sid, "--criterion", "beauty")
    with pytest.raises(CommandError, match="between 0 and 1"):
        call_command("report", "--study", sid, "--min-accuracy", "3")
    with pytest.raises(CommandError, match="after"):
        call_command("report", "--study", sid, "--start", "2024-03-05", "--end", "2024-03-01")


def test_report_command_has_help():
    from ranking.management.commands.report import Command

    parser = Command().create_parser("manage.py", "report")
    text = parser.format_help()
    for flag in (
        "--study",
        "--format",
        "--out",
        "--pool",
        "--criterion",
        "--task-type",
        "--start",
        "--end",
        "--min-accuracy",
        "--min-consistency",
    ):
        assert flag in text


def test_criteria_of_a_simulated_star_study_fall_back_to_the_rubric(
    organizer, small_dataset, star_rubric
):
    """No real ratings at all: the rubric's applicable criteria, around the middle of the range."""
    from annotation.services import study_create

    study = study_create(name="Fresh", dataset=small_dataset, mode="star", rubric=star_rubric)
    simulate_ratings(study=study, raters_per_pool=1, seed=0)
    subj = set(
        Score.objects.filter(
            rating__assignment__study=study, rating__item__question__kind="subjective"
        ).values_list("criterion__key", flat=True)
    )
    assert subj == {
        c.key for c in Criterion.objects.filter(rubric=star_rubric, applies_to="subjective")
    }


def test_simulated_raters_can_be_left_out_of_the_report(organizer_client, star_study):
    simulate_ratings(study=star_study.study, raters_per_pool=2, seed=0)
    url = f"/studies/{star_study.study.pk}/report/"
    with_sim = organizer_client.get(url).context["report"]
    without = organizer_client.get(url, {"exclude_simulated": "on"}).context["report"]
    # Which simulated raters end up with ratings depends on the database's item order (each item
    # gets one rating per pool from a random member), so count the ones that rated.
    simulated = (
        Rater.objects.filter(meta__simulated=True, ratings__item__study=star_study.study)
        .distinct()
        .count()
    )
    assert 3 <= simulated <= 6
    assert with_sim.meta["n_raters"] == 4 + simulated
    assert without.meta["n_raters"] == 4
    frames = study_frames(star_study.study, exclude_simulated=True)
    assert set(frames.star_df["rater_id"]) == {r.pseudonym for r in star_study.raters.values()}
