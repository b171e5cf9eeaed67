"""Known answers, end to end through the database: the selectors' frames fed to the statistics.

A synthetic study with known truth, built through the ORM: a few deterministic statistics are
recomputed here naively (plain loops, no pandas, no code shared with ranking.stats) and must agree
to 1e-6. The real LLMEval-2 release against the seed paper's Tables 4 and 5 and the upstream
README: tests/data/test_published_readme.py (one import of the release for all published figures).
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
import random
from collections import Counter, defaultdict

import pytest

from annotation.models import LLM, Dataset, Question, Rater, Response, Rubric, Study
from annotation.services import study_create
from ranking.services import ReportFilters, report_build
from tests.published import one_row

from .conftest import rate

# database_independent: figures from the report frames, which tests/ranking/test_frames_copy.py checks cell for cell on PostgreSQL.
pytestmark = [pytest.mark.django_db, pytest.mark.database_independent]

T0 = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
STRENGTH = {"m-a": 2.6, "m-b": 2.1, "m-c": 1.6, "m-d": 1.2}  # on the 1-3 star scale
# Every figure checked here is a point estimate: no Elo shuffles, no bootstrap intervals.
POINT_ESTIMATES = ReportFilters.build(n_shuffles=0, n_bootstrap=0)
LLMEVAL1 = ("accuracy", "informativeness", "fluency", "logicality", "harmlessness")


@pytest.fixture
def synthetic(organizer):
    """4 models x 8 questions; star: 3 onsite annotators and a judge on the five LLMEval-1
    criteria, with repeats; pairwise: all pairs rated by 2 crowd workers and a judge who prefers
    longer answers, with side-swapped repeats. Seeded."""
    rng = random.Random(20240501)
    ds = Dataset.objects.create(name="synthetic-known")
    llms = {name: LLM.objects.create(name=name) for name in STRENGTH}
    for q in range(8):
        question = Question.objects.create(
            dataset=ds, external_id=f"S{q}", text="?", task_type="TA" if q < 4 else "TB"
        )
        for i, llm in enumerate(llms.values()):
            Response.objects.create(question=question, llm=llm, text="字" * (80 + 170 * i + 7 * q))

    def study(name: str, mode: str, rubric: str) -> Study:
        rubric_obj = Rubric.objects.get(key=rubric)
        return study_create(name=name, dataset=ds, mode=mode, rubric=rubric_obj, owner=organizer)

    star = study("Known star", "star", "llmeval1")
    pair = study("Known pairs", "pairwise", "pairwise")
    humans = [Rater.objects.create(kind="human", pool="onsite", name=f"k-on-{i}") for i in range(3)]
    crowd = [Rater.objects.create(kind="human", pool="crowd", name=f"k-cr-{i}") for i in range(2)]
    judge = Rater.objects.create(kind="judge", pool="judge", name="k-judge")
    clock = itertools.count(1)

    def at():
        return T0 + dt.timedelta(minutes=next(clock))

    items = list(star.items.select_related("response_a__llm").order_by("id"))
    for rater, noise in [*((h, 0.5) for h in humans), (judge, 0.3)]:
        firsts = []
        for item in items:
            s = STRENGTH[item.response_a.llm.name]
            scores = {c: min(3, max(1, round(s + rng.gauss(0, noise)))) for c in LLMEVAL1}
            firsts.append(rate(star, item, rater, at=at(), scores=scores))
        for r in rng.sample(firsts, 3):
            scores = {
                c: min(3, max(1, round(STRENGTH[r.item.response_a.llm.name] + rng.gauss(0, noise))))
                for c in LLMEVAL1
            }
            rate(star, r.item, rater, at=at(), scores=scores, repeat_of=r.assignment)

    pairs = list(pair.items.select_related("response_a__llm", "response_b__llm").order_by("id"))
    for rater in [*crowd, judge]:
        firsts = []
        for item in pairs:
            a, b = item.response_a, item.response_b
            z = STRENGTH[a.llm.name] - STRENGTH[b.llm.name] + rng.gauss(0, 0.6)
            if rater is judge:
                z += 0.8 if a.length > b.length else -0.8
            choice = "A" if z > 0.25 else "B" if z < -0.25 else rng.choice(["tie", "both_bad"])
            firsts.append(
                rate(pair, item, rater, at=at(), choice=choice, left_is_a=rng.random() < 0.5)
            )
        for r in rng.sample(firsts, 4):
            rate(
                pair,
                r.item,
                rater,
                at=at(),
                choice=rng.choice(["A", r.choice]),
                repeat_of=r.assignment,
                left_is_a=not r.assignment.left_is_a,
            )
    return star, pair


def _rows(study):
    """Plain dicts of every submitted rating of a study, read straight from the ORM."""
    from annotation.models import Rating

    out = []
    for r in (
        Rating.objects.filter(assignment__study=study)
        .select_related("assignment", "rater", "item__response_a__llm", "item__response_b__llm")
        .prefetch_related("scores__criterion")
    ):
        out.append(
            {
                "id": r.id,
                "rater": r.rater.pseudonym,
                "kind": r.rater.kind,
                "item": r.item_id,
                "a": r.item.response_a.llm.name,
                "b": r.item.response_b.llm.name if r.item.response_b_id else None,
                "len_a": r.item.response_a.length,
                "len_b": r.item.response_b.length if r.item.response_b_id else None,
                "choice": r.choice,
                "repeat": r.assignment.is_repeat,
                "at": r.assignment.submitted_at,
                "scores": {s.criterion.key: s.value for s in r.scores.all()},
            }
        )
    return out


def test_star_statistics_agree_with_a_naive_recomputation(synthetic):
    star, _ = synthetic
    report = report_build(study=star, filters=POINT_ESTIMATES, use_cache=False)
    rows = _rows(star)

    # Star means per (kind, model, criterion); overall = mean of the criterion means. Repeats
    # count (docs/statistics.md).
    sums = defaultdict(list)
    for r in rows:
        for c, v in r["scores"].items():
            sums[(r["kind"], r["a"], c)].append(v)
    lb = report.table("leaderboard_star")
    for (kind, model, crit), vals in sums.items():
        got = one_row(lb, rater_kind=kind, model=model, criterion=crit)["mean"]
        assert abs(got - sum(vals) / len(vals)) < 1e-6
    for kind in ("human", "judge"):
        for model in STRENGTH:
            means = [sum(v) / len(v) for (k, m, _c), v in sums.items() if k == kind and m == model]
            got = one_row(lb, rater_kind=kind, model=model, criterion="overall")["mean"]
            assert abs(got - sum(means) / len(means)) < 1e-6
    # Known truth: both humans and the judge put the strongest model first.
    for kind in ("human", "judge"):
        assert one_row(lb, rater_kind=kind, model="m-a", criterion="overall")["rank"] == 1

    # Accuracy: gt = mean of every rater's first rating of (item, criterion), sigma = population
    # standard deviation; accurate when |score - gt| < sigma (score == gt when sigma is 0).
    firsts = [r for r in rows if not r["repeat"]]
    unit = defaultdict(list)
    for r in firsts:
        for c, v in r["scores"].items():
            unit[(r["item"], c)].append(v)
    hits = defaultdict(lambda: [0, 0])
    for r in firsts:
        for c, v in r["scores"].items():
            vals = unit[(r["item"], c)]
            gt = sum(vals) / len(vals)
            sigma = math.sqrt(sum((x - gt) ** 2 for x in vals) / len(vals))
            ok = abs(v - gt) <= 1e-9 if sigma == 0 else abs(v - gt) < sigma
            hits[r["rater"]][0] += ok
            hits[r["rater"]][1] += 1
    acc = report.table("accuracy_by_rater")
    assert len(acc) == 4
    for rater, (ok, n) in hits.items():
        row = one_row(acc, rater_id=rater, mode="star")
        assert row["n_judgements"] == n
        assert abs(row["accuracy"] - ok / n) < 1e-6

    # Consistency: per (item, criterion) rated more than once, the ratings equal to the most
    # frequent one, pooled per rater.
    per = defaultdict(list)
    for r in rows:
        for c, v in r["scores"].items():
            per[(r["rater"], r["item"], c)].append(v)
    cons = defaultdict(lambda: [0, 0])
    for (rater, _i, _c), vals in per.items():
        if len(vals) > 1:
            cons[rater][0] += Counter(vals).most_common(1)[0][1]
            cons[rater][1] += len(vals)
    table = report.table("consistency_by_rater")
    for rater, (same, n) in cons.items():
        assert abs(one_row(table, rater_id=rater, mode="star")["consistency"] - same / n) < 1e-6

    # Human vs judge gaps: per item, |mean human first rating - judge first rating| >= k.
    gaps = report.table("gaps")
    for crit in LLMEVAL1:
        human, judge = defaultdict(list), {}
        for r in firsts:
            if r["kind"] == "human":
                human[r["item"]].append(r["scores"][crit])
            else:
                judge[r["item"]] = r["scores"][crit]
        diffs = [abs(sum(human[i]) / len(human[i]) - judge[i]) for i in judge]
        for k in (1.0, 2.0):
            row = one_row(gaps, criterion=crit, k=str(k))
            assert abs(row["share"] - sum(d >= k - 1e-9 for d in diffs) / len(diffs)) < 1e-6


def test_pairwise_statistics_agree_with_a_naive_recomputation(synthetic):
    _, pair = synthetic
    report = report_build(study=pair, filters=POINT_ESTIMATES, use_cache=False)
    rows = sorted(_rows(pair), key=lambda r: (r["at"], r["id"]))
    score_a = {"A": 1.0, "B": 0.0, "tie": 0.5, "both_bad": 0.5}

    # Points: win 1, draw 0.5 (tie and both bad), loss 0; score = points / games.
    for kind in ("all", "human", "judge"):
        pts, games = Counter(), Counter()
        for r in rows:
            if kind != "all" and r["kind"] != kind:
                continue
            s = score_a[r["choice"]]
            pts[r["a"]] += s
            pts[r["b"]] += 1 - s
            games[r["a"]] += 1
            games[r["b"]] += 1
        lb = report.table("leaderboard_points")
        for model in STRENGTH:
            got = one_row(lb, rater_kind=kind, model=model)
            assert got["games"] == games[model]
            assert abs(got["score"] - pts[model] / games[model]) < 1e-6

    # Elo: K = 32, start 1500, matches in time order.
    for kind in ("all", "judge"):
        elo = dict.fromkeys(STRENGTH, 1500.0)
        for r in rows:
            if kind != "all" and r["kind"] != kind:
                continue
            ea = 1 / (1 + 10 ** ((elo[r["b"]] - elo[r["a"]]) / 400))
            s = score_a[r["choice"]]
            elo[r["a"]], elo[r["b"]] = elo[r["a"]] + 32 * (s - ea), elo[r["b"]] - 32 * (s - ea)
        lb = report.table("leaderboard_elo")
        for model, value in elo.items():
            assert abs(one_row(lb, rater_kind=kind, model=model)["elo"] - value) < 1e-6

    # Length bias for the judge at >= 100 characters: share of wins of the longer answer.
    outcomes = Counter()
    for r in rows:
        if r["kind"] != "judge" or abs(r["len_a"] - r["len_b"]) < 100:
            continue
        s = score_a[r["choice"]]
        longer = s if r["len_a"] > r["len_b"] else 1 - s
        outcomes["win" if longer == 1 else "loss" if longer == 0 else "draw"] += 1
    row = one_row(
        report.table("length_bias"), group_by="rater_kind", group="judge", min_delta="100"
    )
    n = sum(outcomes.values())
    assert row["n"] == n
    assert abs(row["win_share"] - outcomes["win"] / n) < 1e-6
    assert abs(row["loss_share"] - outcomes["loss"] / n) < 1e-6
    # The judge was built to like longer answers (here the longer answers are the weaker ones).
    humans = one_row(
        report.table("length_bias"), group_by="rater_kind", group="human", min_delta="100"
    )
    assert row["win_share"] > humans["win_share"]

    # Filters act before the statistics: the crowd alone gives the crowd's Points.
    crowd = report_build(study=pair, filters=ReportFilters.build(pools=["crowd"]), use_cache=False)
    assert set(crowd.table("leaderboard_points")["rater_kind"].astype(str)) == {"all", "human"}
