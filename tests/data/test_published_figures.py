"""Published figures, reproduced the way a user would: the released data in ../shared/data goes in
through `manage.py import_dataset` (call_command) and the figures come out of the report's own
service (`ranking.services.report_build`). Skipped when ../shared/data is absent.

Where the data cannot reproduce a printed figure, the test pins what the data gives and
docs/statistics.md ("Published figures") explains why, with the arithmetic.
"""

from __future__ import annotations

import csv
import math

import pandas as pd
import pytest
from django.db import transaction

from ranking.stats.rankings import rank_correlation
from tests.data.conftest import SHARED, published_import, published_report, require
from tests.published import (
    README_TOTALS,
    TABLE6_GPT4_RANK,
    assert_table6_gpt4,
    judge_star_means,
)

# django_db: the module fixtures need the test database set up (pytest-django sets it up for
# marked tests only); they import inside their own transaction and roll it back. The figures are
# the same on any database: the PostgreSQL pass checks the full import (test_full_llmeval2) and
# the report frames read through COPY (tests/ranking/test_frames_copy.py), not these again.
# xdist_group: every test here and in test_published_readme.py in one worker (bin/test's --dist
# loadgroup), so each data set is imported once per run rather than once per worker or module
# (the LLMEval-2 fixture is session-scoped, in tests/data/conftest.py).
L1 = SHARED / "llmeval-1"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db,
    pytest.mark.database_independent,
    pytest.mark.xdist_group("published-figures"),
]


@pytest.fixture(scope="module")
def llmeval1(django_db_setup, django_db_blocker):
    require(L1)
    with django_db_blocker.unblock(), transaction.atomic():
        published_import("llmeval1-scores", L1 / "data" / "分项测评_gpt4.csv")
        tables = published_report("LLMEval-1 (imported scores)")
        transaction.set_rollback(True)
    return tables


def _gap(tables: dict, criterion: str, k: int) -> float:
    g = tables["gaps"]
    row = g[(g["criterion"] == criterion) & (g["k"] == k)]
    assert len(row) == 1, (criterion, k)
    return float(row["share"].iloc[0]) * 100


# --- LLMEval-2 ---------------------------------------------------------------------------------


def test_llmeval2_keeps_the_eleven_zero_scores_as_given_and_says_so(llmeval2):
    assert llmeval2["flagged"] == [("correctness", 0)] * 11 + [("explanation_correctness", 0)] * 11
    dq = llmeval2["tables"]["data_quality"].set_index(["issue", "criterion"])["n"]
    assert dq[("score outside the rubric's range", "all")] == 22
    assert dq[("score outside the rubric's range", "correctness")] == 11
    assert dq[("unparsed judge output", "")] == 0


def test_llmeval2_gaps_reproduce_table_4(llmeval2):
    # Seed table 4 (subjective questions, |human - GPT-4| >= 2, accuracy also >= 4).
    t = llmeval2["tables"]
    assert _gap(t, "accuracy", 2) == pytest.approx(37.05, abs=0.005)
    assert _gap(t, "accuracy", 4) == pytest.approx(6.99, abs=0.005)
    assert _gap(t, "fluency", 2) == pytest.approx(3.49, abs=0.005)
    assert _gap(t, "logicality", 2) == pytest.approx(7.87, abs=0.005)
    assert _gap(t, "informativeness", 2) == pytest.approx(9.97, abs=0.005)


def test_llmeval2_gaps_reproduce_table_5(llmeval2):
    t = llmeval2["tables"]
    # The paper's 24.98 % needs the human zeros as published (raised to 1 it was 24.80 %).
    assert _gap(t, "explanation_correctness", 1) == pytest.approx(24.98, abs=0.005)
    # Printed as ">= 3"; Correctness is 1-3, so a gap of 3 needs a human 0 against a GPT-4 3:
    # the share printed is the data's share at >= 2 (docs/statistics.md, threshold reading).
    assert _gap(t, "correctness", 2) == pytest.approx(12.98, abs=0.005)
    assert _gap(t, "correctness", 3) == 0.0


# Upstream README leaderboard, "Scores": (human, GPT-4), keyed by the data's llm_name, in the
# README's order (its human rank): README_TOTALS, which the statistics tests check from the files.
README = README_TOTALS
# What the released human file gives (zeros kept as published), where it is not the README's
# figure; docs/statistics.md explains the gaps. Keeping the zeros instead of raising them to 1
# moves nine totals (claude 75.5540 -> 75.4571, ...) but lands none of them on the README.
HUMAN_DATA = {
    "GPT4": 86.9786,
    "GPT3.5": 80.7350,
    "xunfei": 78.0555,
    "minimax-abab5": 77.3211,
    "newbing": 77.3111,
    "claude": 75.4571,
    "moss-mars": 74.1538,
    "tiangong": 74.4968,
    "ziya-llama-13b-v1": 69.2520,
    "tongyiqianwen": 67.8753,
    "360": 67.6622,
    "zhigong": 67.0721,
    "chatglm2-6b": 66.9304,
    "Vicuna-33B": 66.1776,
    "chatglm": 66.0740,
    "tigerbot-180b": 65.8288,
    "AquilaChat-7b": 64.6040,
    "belle-7b-2m": 62.8432,
}


def _totals(llmeval2: dict, kind: str):
    t = llmeval2["tables"]["leaderboard_total"]
    return t[t["rater_kind"] == kind].set_index("model")


def test_llmeval2_gpt4_totals_and_ranks_reproduce_the_readme(llmeval2):
    judge = _totals(llmeval2, "judge")
    assert len(judge) == 20
    for model, (_, published) in README.items():
        assert round(judge.loc[model, "total"], 2) == pytest.approx(published, abs=0.0051), model
    published_rank = pd.Series({m: v[1] for m, v in README.items()}).rank(ascending=False)
    assert judge["rank"].to_dict() == published_rank.astype(int).to_dict()


def test_llmeval2_human_totals_match_the_readme_where_the_data_allows(llmeval2):
    human = _totals(llmeval2, "human")
    assert len(human) == 20
    for model, (published, _) in README.items():
        got = human.loc[model, "total"]
        if model in HUMAN_DATA:
            assert got == pytest.approx(HUMAN_DATA[model], abs=1e-4), model
            assert round(got, 2) != published
        else:  # baichuan-13b-chat and internlm-7b: the README's figure, to its two decimals
            assert round(got, 2) == published, model
    # Ranks: the README's order except two neighbouring pairs, each within 0.35 points.
    readme_order = list(README)
    ours = list(human.sort_values("rank").index)
    swapped = [(a, b) for a, b in zip(readme_order, ours, strict=True) if a != b]
    assert swapped == [
        ("moss-mars", "tiangong"),
        ("tiangong", "moss-mars"),
        ("Vicuna-33B", "internlm-7b"),
        ("internlm-7b", "Vicuna-33B"),
    ]


# --- LLMEval-1 ---------------------------------------------------------------------------------

# Seed table 6, GPT-4 column, and the three cells the data rounds another way
# (docs/statistics.md): the same published figures the statistics tests check from the files.


def _gpt4_star(llmeval1: dict) -> pd.DataFrame:
    return judge_star_means(llmeval1["leaderboard_star"])


def test_llmeval1_gpt4_column_reproduces_table_6(llmeval1):
    assert_table6_gpt4(_gpt4_star(llmeval1))


def test_llmeval1_gpt4_ranks_reproduce_table_6(llmeval1):
    # The bracketed rank column: the report's rank of the GPT-4 overall star mean.
    t = llmeval1["leaderboard_star"]
    judge = t[(t["rater_kind"] == "judge") & (t["criterion"] == "overall")]
    assert judge.set_index("model")["rank"].astype(int).to_dict() == TABLE6_GPT4_RANK


def test_llmeval1_gpt4_self_consistency_is_what_the_twice_scored_dialogs_give(llmeval1):
    # 51 dialogs were scored twice (docs/import-formats.md, defect 6): 255 (dialog, metric) units
    # with two scores each, 33 of them different. Consistency = (222 x 2 + 33 x 1) / 510.
    c = llmeval1["consistency_by_rater"]
    assert len(c) == 1
    row = c.iloc[0]
    assert (row["n_items_repeated"], row["n_repeated"], row["n_consistent"]) == (51, 510, 477)
    assert row["consistency"] == pytest.approx(477 / 510)


def _published(name: str) -> pd.Series:
    """A column of the published per-model tables (results/*.csv), keyed as the data names the
    models (the tables say Chat-Baichuan-7B for the data's Baichuan-7B-Align)."""
    with open(L1 / "results" / f"{name}.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    column = "pairwise" if "对比" in name else "overall"
    names = {"Chat-Baichuan-7B": "Baichuan-7B-Align"}
    return pd.Series({names.get(r["llm_name"], r["llm_name"]): float(r[column]) for r in rows})


@pytest.mark.parametrize(
    ("other", "rho", "tau"),
    [
        # Table 2: GPT-4 star vs GPT-4 pairwise 0.965 / 0.878; star manual vs GPT-4 0.949 / 0.839.
        ("对比测评_gpt4", 0.965, 0.878),
        ("分项测评_manual_denoised", 0.949, 0.839),
    ],
)
def test_llmeval1_gpt4_star_ranking_reproduces_table_2(llmeval1, other, rho, tau):
    # Only the GPT-4 star scores were released as ratings; the other side of each pair is the
    # published per-model table. The paper prints each coefficient truncated to three decimals.
    ours = _gpt4_star(llmeval1)["overall"]
    r = rank_correlation(ours, _published(other))
    assert r["n_models"] == 12
    assert math.floor(r["spearman_rho"] * 1000) / 1000 == pytest.approx(rho)
    assert math.floor(r["kendall_tau_b"] * 1000) / 1000 == pytest.approx(tau)


def _readme_totals() -> dict[str, tuple[float, int, float, int, float, int]]:
    """README.md's LLMEval-2 table: model -> (published human, rank, ours, rank, GPT-4, rank)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    table = text.split("<!-- llmeval2-totals -->")[1].split("<!-- /llmeval2-totals -->")[0]
    out = {}
    for line in table.strip().splitlines()[2:]:
        model, *cells = (c.strip() for c in line.strip("|").split("|"))
        nums = [part.strip("()") for cell in cells for part in cell.split()]
        out[model] = tuple(float(n) if "." in n else int(n) for n in nums)
    return out


def test_the_project_readme_totals_are_what_the_import_and_report_give(llmeval2):
    rows = _readme_totals()
    assert list(rows) == list(README)
    human, judge = _totals(llmeval2, "human"), _totals(llmeval2, "judge")
    for model, (published, _, ours, ours_rank, gpt4, gpt4_rank) in rows.items():
        assert published == README[model][0] and gpt4 == README[model][1], model
        assert f"{human.loc[model, 'total']:.2f}" == f"{ours:.2f}", model
        assert int(human.loc[model, "rank"]) == ours_rank, model
        assert f"{judge.loc[model, 'total']:.2f}" == f"{gpt4:.2f}", model
        assert int(judge.loc[model, "rank"]) == gpt4_rank, model
