"""Edge cases a reviewer probes, through the path a user takes: a generic JSONL file through
`manage.py import_dataset`, the report through the API, the pages and the downloads, each
figure against an independent computation."""

from __future__ import annotations

import io
import json
import random

import pytest
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Study

pytestmark = pytest.mark.django_db


def _question(qid: str, kind: str = "subjective", task: str = "") -> dict:
    return {"type": "question", "question_id": qid, "text": f"question {qid}", "kind": kind,
            "task_type": task}  # fmt: skip


def _answer(qid: str, llm: str) -> dict:
    return {"type": "response", "question_id": qid, "llm": llm, "text": f"{llm} on {qid}"}


def _stars(qid: str, llm: str, rater: str, scores: dict, kind: str = "human") -> dict:
    pool = "judge" if kind == "judge" else "onsite"
    return {"type": "rating", "question_id": qid, "llm": llm, "rater": rater, "rater_kind": kind,
            "rater_pool": pool, "scores": scores}  # fmt: skip


def _import(tmp_path, user, recs: list[dict], dataset: str, rubric: str = "llmeval1") -> None:
    path = tmp_path / f"{dataset}.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in recs), encoding="utf-8")
    call_command("import_dataset", str(path), format="jsonl", dataset=dataset, rubric=rubric,
                 no_progress=True, user=user.username, stdout=io.StringIO())  # fmt: skip


def _api(user, study: Study, **params) -> dict:
    api = APIClient()
    api.force_authenticate(user)
    response = api.get(reverse("ranking:api-report", args=[study.pk]), params)
    assert response.status_code == 200
    return response.json()


# --------------------------------------------------------------------------- page rounding


@pytest.fixture
def llmeval2_study(tmp_path, organizer) -> Study:
    """Subjective LLMEval-2 stars of three models by two humans and a judge: totals out of 100
    with two decimals that three significant digits would round away."""
    rng = random.Random(5)
    recs: list[dict] = []
    for i in range(7):
        recs.append(_question(f"q{i}", task=f"subject-{i % 3}"))
        for m in ("m-a", "m-b", "m-c"):
            recs.append(_answer(f"q{i}", m))
            for rater, kind in (("h1", "human"), ("h2", "human"), ("J", "judge")):
                scores = {"accuracy": rng.randint(1, 5), "informativeness": rng.randint(1, 3),
                          "fluency": rng.randint(1, 3), "logicality": rng.randint(1, 3)}  # fmt: skip
                recs.append(_stars(f"q{i}", m, rater, scores, kind))
    _import(tmp_path, organizer, recs, "Totals", rubric="llmeval2")
    return Study.objects.get(name="Totals (imported ratings)")


def test_the_total_out_of_100_reads_to_two_decimals_on_every_page(
    organizer, organizer_client, llmeval2_study
):
    totals = _api(organizer, llmeval2_study)["tables"]["leaderboard_total"]
    shown = {f"{row['total']:.2f}": row["rater_kind"] for row in totals}
    assert any(not text.endswith("0") for text in shown)  # a case three digits would round
    for language in ("en", "zh-hans"):
        page = organizer_client.get(
            reverse("ranking:report", args=[llmeval2_study.pk]), HTTP_ACCEPT_LANGUAGE=language
        ).content.decode()
        for text, kind in shown.items():
            # The leaderboards side by side, and the summary per rater kind: "86.98", not "87".
            assert f">{text} (" in page, (language, text)
            assert kind == "all" or f">{text}<" in page, (language, text)
    compare = organizer_client.get(
        reverse("ranking:compare"),
        {
            "s1-study": llmeval2_study.pk,
            "s1-ranking": "total",
            "s1-kind": "human",
            "s2-study": llmeval2_study.pk,
            "s2-ranking": "points",
            "s2-kind": "all",
        },  # fmt: skip
    )
    human = {f"{r['total']:.2f}" for r in totals if r["rater_kind"] == "human"}
    assert all(f"{text} (" in compare.content.decode() for text in human)


# --------------------------------------------------------------------------- no variance


@pytest.fixture
def constant_study(tmp_path, organizer) -> Study:
    """Two models, eight questions, three humans and a judge who all give accuracy 2 and
    fluency 3; the judge's informativeness is 1 on m1 and 2 on m2, the humans' 2 throughout."""
    recs: list[dict] = []
    for i in range(8):
        recs.append(_question(f"q{i}"))
        for m in ("m1", "m2"):
            recs.append(_answer(f"q{i}", m))
            for rater in ("h1", "h2", "h3"):
                recs.append(_stars(f"q{i}", m, rater, {"accuracy": 2, "fluency": 3,
                                                       "informativeness": 2}))  # fmt: skip
            judge = {"accuracy": 2, "fluency": 3, "informativeness": 1 if m == "m1" else 2}
            recs.append(_stars(f"q{i}", m, "J", judge, kind="judge"))
    _import(tmp_path, organizer, recs, "Flat")
    return Study.objects.get(name="Flat (imported ratings)")


def test_a_criterion_without_variance_keeps_its_gap_rows(organizer, constant_study):
    """Every human and the judge agree on accuracy and fluency: every gap is 0, so the share
    of items with a gap of at least 1 or 2 stars (the rubric's range is 1-3) is 0, a figure,
    not a missing row. Informativeness differs by exactly 1 on m1's 8 of the 16 answers."""
    rows = _api(organizer, constant_study)["tables"]["gaps"]
    got = {(r["criterion"], r["k"]): (r["n_items"], r["n_at_least_k"]) for r in rows}
    assert got == {
        ("accuracy", 1.0): (16, 0),
        ("accuracy", 2.0): (16, 0),
        ("fluency", 1.0): (16, 0),
        ("fluency", 2.0): (16, 0),
        ("informativeness", 1.0): (16, 8),
        ("informativeness", 2.0): (16, 0),
    }


def test_models_that_tie_are_not_one_model_both_best_and_worst(organizer, constant_study):
    rows = _api(organizer, constant_study)["tables"]["discrimination"]
    accuracy = [r for r in rows if r["dimension"] == "criterion" and r["value"] == "accuracy"]
    assert len(accuracy) == 3  # all raters, humans, the judge
    for r in accuracy:
        assert (r["best_model"], r["worst_model"], r["spread"]) == ("m1", "m2", 0.0)
    # The judge's informativeness: m2 (2) is better than m1 (1).
    judge = next(r for r in rows if r["rater_kind"] == "judge" and r["value"] == "informativeness")
    assert (judge["best_model"], judge["worst_model"], judge["spread"]) == ("m2", "m1", 1.0)


def test_one_model_has_no_spread(tmp_path, organizer, organizer_client):
    recs: list[dict] = []
    for i in range(6):
        recs += [_question(f"q{i}"), _answer(f"q{i}", "solo")]
        recs += [_stars(f"q{i}", "solo", r, {"accuracy": 1 + (i + n) % 3}) for n, r in
                 enumerate(("h1", "h2"))]  # fmt: skip
    _import(tmp_path, organizer, recs, "Solo")
    study = Study.objects.get(name="Solo (imported ratings)")
    rows = _api(organizer, study)["tables"]["discrimination"]
    assert rows and all(r["n_models"] == 1 for r in rows)
    assert all(r["spread"] is None and r["worst_model"] == "" for r in rows)
    assert {r["best_model"] for r in rows} == {"solo"}
    page = organizer_client.get(reverse("ranking:report", args=[study.pk]))
    assert page.status_code == 200 and 'class="num undefined"' in page.content.decode()


# --------------------------------------------------------------------------- filters


@pytest.fixture
def judged_study(tmp_path, organizer) -> Study:
    """Onsite humans on 1 March; an imported judge on 1 March (6 outputs, 2 unparsed) and on
    2 March (6 outputs, all parsed)."""
    recs: list[dict] = []
    for i in range(6):
        recs += [_question(f"q{i}"), _answer(f"q{i}", "m1"), _answer(f"q{i}", "m2")]
        for j, m in enumerate(("m1", "m2")):
            day = "2024-03-01" if j == 0 else "2024-03-02"
            for rater in ("h1", "h2"):
                rec = _stars(f"q{i}", m, rater, {"accuracy": 1 + (i + j) % 3})
                recs.append({**rec, "submitted_at": "2024-03-01T09:00:00+00:00"})
            judge = _stars(f"q{i}", m, "J", {"accuracy": 1 + i % 3}, kind="judge")
            judge["submitted_at"] = f"{day}T10:00:00+00:00"
            if j == 0 and i < 2:
                judge.update(scores={}, parse_status="unparsed", raw_output="no verdict")
            recs.append(judge)
    _import(tmp_path, organizer, recs, "Judged")
    return Study.objects.get(name="Judged (imported ratings)")


def _parsed(tables: dict) -> tuple[list[tuple], int]:
    judges = [
        (r["n_calls"], r["share_parsed"]) for r in tables["judge_bias"] if r["group_by"] == "judge"
    ]
    dq = next(r["n"] for r in tables["data_quality"] if r["issue"] == "unparsed judge output")
    return judges, dq


def test_the_judges_share_parsed_follows_the_filters_as_the_data_quality_count_does(
    organizer, judged_study
):
    assert _parsed(_api(organizer, judged_study)["tables"]) == ([(12, 10 / 12)], 2)
    # 1 March only: the judge's 6 outputs of that day, 2 of them unparsed.
    day_one = _api(organizer, judged_study, start="2024-03-01", end="2024-03-01")["tables"]
    assert _parsed(day_one) == ([(6, 4 / 6)], 2)
    # 2 March only: 6 outputs, all parsed.
    day_two = _api(organizer, judged_study, start="2024-03-02", end="2024-03-02")["tables"]
    assert _parsed(day_two) == ([(6, 1.0)], 0)
    # Onsite humans only: no judge in the report, so no judge row either.
    assert _parsed(_api(organizer, judged_study, pool="onsite")["tables"]) == ([], 0)


# --------------------------------------------------------------------------- low-volume raters


def test_the_papers_accuracy_variant_leaves_out_raters_below_min_ratings_as_the_pool_table_does(
    tmp_path, organizer
):
    """Two onsite humans and a judge rate all 8 answers; eight crowd workers rate one answer
    each. The crowd workers count in everyone's truth but are not scored (fewer than 5
    ratings, the paper's rule): the `paper` variant per pool is accuracy_by_pool's figure."""
    rng = random.Random(11)
    recs: list[dict] = []
    for i in range(8):
        recs += [_question(f"q{i}"), _answer(f"q{i}", "m1")]
        raters = [("h1", "onsite", "human"), ("h2", "onsite", "human"), ("J", "judge", "judge")]
        for name, pool, kind in [*raters, (f"crowd{i}", "crowd", "human")]:
            rec = _stars(f"q{i}", "m1", name, {"accuracy": rng.randint(1, 3)}, kind)
            recs.append({**rec, "rater_pool": pool})
    _import(tmp_path, organizer, recs, "Mixed")
    tables = _api(organizer, Study.objects.get(name="Mixed (imported ratings)"))["tables"]
    pools = {r["pool"]: r for r in tables["accuracy_by_pool"]}
    paper = {
        r["group"]: r
        for r in tables["accuracy_variants"]
        if r["variant"] == "paper" and r["group_by"] == "pool"
    }
    assert set(pools) == {"onsite", "judge"} and set(paper) == {"onsite"}
    assert paper["onsite"]["accuracy"] == pytest.approx(pools["onsite"]["pooled"])
    assert (paper["onsite"]["n_raters"], paper["onsite"]["n_judgements"]) == (2, 16)
    # By hand: every item's truth is its four ratings (population sigma).
    by_item: dict[str, dict[str, int]] = {}
    for r in recs:
        if r["type"] == "rating":
            by_item.setdefault(r["question_id"], {})[r["rater"]] = r["scores"]["accuracy"]
    hits = 0
    for scores in by_item.values():
        values = list(scores.values())
        gt = sum(values) / len(values)
        sigma = (sum((v - gt) ** 2 for v in values) / len(values)) ** 0.5
        for h in ("h1", "h2"):
            hits += abs(scores[h] - gt) < sigma if sigma > 0 else scores[h] == gt
    assert paper["onsite"]["n_accurate"] == hits
    assert all(r["group"] != "crowd" for r in tables["accuracy_variants"])


# --------------------------------------------------------------------------- reliability


@pytest.fixture
def solo_and_shared(tmp_path, organizer) -> Study:
    """Pairwise: "solo" alone rates 12 questions nobody else sees; "p1", "p2" and "p3" rate 12
    other questions together."""
    rng = random.Random(4)
    recs: list[dict] = []
    for i in range(24):
        recs += [_question(f"q{i}"), _answer(f"q{i}", "m1"), _answer(f"q{i}", "m2")]
        raters = ("solo",) if i < 12 else ("p1", "p2", "p3")
        for name in raters:
            choice = rng.choice(["a", "b", "tie"])
            recs.append({"type": "pairwise", "question_id": f"q{i}", "llm_a": "m1", "llm_b": "m2",
                         "rater": name, "choice": choice})  # fmt: skip
    _import(tmp_path, organizer, recs, "Solo pairs")
    return Study.objects.get(name="Solo pairs (imported pairwise ratings)")


def test_an_annotator_who_shares_no_item_has_no_reliability_and_no_disagrees_flag(
    organizer, organizer_client, solo_and_shared
):
    """Nobody else rated the solo annotator's items: nothing measures their errors, so the
    reliability is empty, not a figure the model's prior made up, and they are not flagged."""
    from annotation.models import Rater
    from annotation.quality import study_quality

    solo = Rater.objects.get(name="solo").pseudonym
    rows = {
        r["rater_id"]: r
        for r in _api(organizer, solo_and_shared)["tables"]["annotator_reliability"]
    }
    assert rows[solo]["n_ratings"] == 12
    assert rows[solo]["reliability"] is None and rows[solo]["agrees_with_ds"] is None
    others = [r for r in rows.values() if r["rater_id"] != solo]
    assert len(others) == 3 and all(0 < r["reliability"] <= 1 for r in others)
    flags = study_quality(solo_and_shared).set_index("rater_id")["flags"]
    assert "disagrees" not in flags[solo]
    for name in ("ranking:report", "ranking:report-charts", "organize:study_quality"):
        assert organizer_client.get(reverse(name, args=[solo_and_shared.pk])).status_code == 200


def test_a_star_annotator_who_shares_no_item_has_no_bias_or_noise(tmp_path, organizer):
    recs: list[dict] = []
    for i in range(8):
        recs += [_question(f"q{i}"), _answer(f"q{i}", "m1")]
        for name in ("solo",) if i < 4 else ("s1", "s2"):
            recs.append(_stars(f"q{i}", "m1", name, {"accuracy": 1 + (i + len(name)) % 3}))
    _import(tmp_path, organizer, recs, "Solo stars")
    study = Study.objects.get(name="Solo stars (imported ratings)")
    rows = _api(organizer, study)["tables"]["annotator_reliability"]
    by_rater = {r["rater_id"]: r for r in rows}
    from annotation.models import Rater

    solo = by_rater[Rater.objects.get(name="solo").pseudonym]
    assert (solo["star_bias"], solo["star_sigma"], solo["reliability"]) == (None, None, None)
    assert all(r["star_sigma"] is not None for r in rows if r is not solo)


def test_a_misspelt_filter_is_refused_rather_than_ignored(organizer, judged_study):
    """?pools=onsite (the page's field is "pool") gave the whole study's figures with a 200."""
    api = APIClient()
    api.force_authenticate(organizer)
    for name in ("ranking:api-report", "ranking:api-report-table"):
        args = [judged_study.pk] if name == "ranking:api-report" else [judged_study.pk, "gaps"]
        response = api.get(reverse(name, args=args), {"pools": "onsite"})
        assert response.status_code == 400
        (message,) = response.json()["unknown_parameters"]
        assert message.startswith("Not a report filter: pools. The filters are: pool, criterion")
    chinese = api.get(
        reverse("ranking:api-report", args=[judged_study.pk]),
        {"pools": "onsite"},
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )
    assert chinese.json()["unknown_parameters"][0].startswith("不是报告的筛选条件：pools")
    assert (
        api.get(
            reverse("ranking:api-report", args=[judged_study.pk]), {"format": "json"}
        ).status_code
        == 200
    )


def test_an_undefined_rank_correlation_is_marked_in_the_matrix_too(
    organizer_client, constant_study
):
    """Every model ties: no ranking has an order, so every ρ and τ is undefined. The matrix
    (the first correlation table on the page) marks and explains them as the pair table does."""
    page = organizer_client.get(reverse("ranking:report", args=[constant_study.pk]))
    html = page.content.decode()
    start = html.index("Spearman ρ above the diagonal")
    matrix = html[start : html.index("</table>", start)]
    assert "<td></td>" not in matrix
    assert matrix.count('class="num undefined"') == 6 * 5  # 6 rankings, off the diagonal


def test_a_judge_whose_every_output_is_unparsed_is_named_in_the_summary(
    tmp_path, organizer, organizer_client
):
    recs: list[dict] = []
    for i in range(5):
        recs += [_question(f"q{i}"), _answer(f"q{i}", "m1")]
        recs += [_stars(f"q{i}", "m1", h, {"accuracy": 1 + i % 3}) for h in ("h1", "h2")]
        judge = _stars(f"q{i}", "m1", "gpt-x", {}, kind="judge")
        recs.append({**judge, "parse_status": "unparsed", "raw_output": "I cannot rate this."})
    _import(tmp_path, organizer, recs, "Unread")
    study = Study.objects.get(name="Unread (imported ratings)")
    url = reverse("ranking:report", args=[study.pk])
    page = organizer_client.get(url).content.decode()
    assert "none of its 5 outputs could be read (unparsed)" in page
    assert "No items rated by both humans and an LLM judge" not in page
    chinese = organizer_client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "它的 5 条输出都无法解析" in chinese


def test_a_value_without_spread_draws_no_bar():
    import pandas as pd

    from ranking import charts_sections

    df = pd.DataFrame(
        {
            "rater_kind": ["all", "all"],
            "dimension": ["task_type", "task_type"],
            "value": ["law-two-models", "poetry-one-model"],
            "spread": [0.5, float("nan")],
        }
    )
    svg = charts_sections.discrimination(df)
    assert svg is not None and "law-two-models" in svg and "poetry-one-model" not in svg
