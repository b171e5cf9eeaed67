"""Known answers on the released LLMEval data (read from ../shared/data; skipped when absent).

Where a printed table and the data disagree, the test asserts what the data gives and says how
the printed figure differs; the formulas are not bent to match print.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from ranking.stats.bias import gaps
from ranking.stats.rankings import rank_correlation, star_means, total_score
from ranking.stats.report import build_report
from ranking.stats.schema import coerce_star

# The published figures (upstream README totals, seed Table 6 with GPT-4 as judge, and the three
# Table 6 cells the data gives rounded another way) are the ones the end-to-end tests check.
from tests.published import README, T6_COLUMNS, assert_table6_gpt4, judge_star_means

from . import realdata as rd

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def llmeval2() -> pd.DataFrame:
    return coerce_star(rd.llmeval2_star_df())


@pytest.fixture(scope="module")
def llmeval1_gpt4() -> pd.DataFrame:
    return coerce_star(rd.llmeval1_gpt4_star_df())


def _share(g: pd.DataFrame, criterion: str, k: float) -> float:
    row = g[(g["criterion"] == criterion) & (g["k"] == k)]
    assert len(row) == 1, (criterion, k)
    return float(row["share"].iloc[0]) * 100


def test_llmeval2_gaps_reproduce_table_4(llmeval2):
    # Seed Table 4 (subjective questions): 37.05 %, 6.99 %, 3.49 %, 7.87 %, 9.97 %.
    g = gaps(llmeval2, ks=[1, 2, 3, 4])
    assert _share(g, "Accuracy", 2) == pytest.approx(37.05, abs=0.005)
    assert _share(g, "Accuracy", 4) == pytest.approx(6.99, abs=0.005)
    assert _share(g, "Fluency", 2) == pytest.approx(3.49, abs=0.005)
    assert _share(g, "Logicality", 2) == pytest.approx(7.87, abs=0.005)
    assert _share(g, "Informativeness", 2) == pytest.approx(9.97, abs=0.005)
    assert g.loc[g["criterion"] == "Accuracy", "n_items"].iloc[0] == 3520


def test_llmeval2_gaps_reproduce_table_5(llmeval2):
    g = gaps(llmeval2, ks=[1, 2, 3])
    # Printed "ΔCorrectness >= 3: 12.98 %". Correctness takes the values 1 and 3 (and a few 0 / 2
    # in the human file), so a gap of 3 needs a human 0 against a GPT-4 3: the data gives 0.00 %
    # at >= 3 and exactly 12.98 % at >= 2. The printed threshold is off by one; the share matches.
    assert _share(g, "Correctness", 2) == pytest.approx(12.98, abs=0.005)
    assert _share(g, "Correctness", 3) == 0.0
    assert _share(g, "Explanation Correctness", 1) == pytest.approx(24.98, abs=0.005)
    assert g.loc[g["criterion"] == "Correctness", "n_items"].iloc[0] == 6080


def test_llmeval2_total_score_reproduces_readme_gpt4_column(llmeval2):
    t = total_score(llmeval2, rd.LLMEVAL2_MAX)
    judge = t[t["rater_kind"] == "judge"].set_index("model")["total"]
    assert len(judge) == 20
    for model, (_, published) in README.items():
        # All 20 GPT-4 totals agree with the README to its two decimals (82.6350 prints 82.63).
        assert judge[model] == pytest.approx(published, abs=0.0051), model
    assert judge["GPT4"] == pytest.approx(89.5448, abs=1e-4)


def test_llmeval2_total_score_human_column_is_close_to_readme(llmeval2):
    t = total_score(llmeval2, rd.LLMEVAL2_MAX)
    human = t[t["rater_kind"] == "human"].set_index("model")["total"]
    published = pd.Series({m: v[0] for m, v in README.items()})
    # The released human scores do not reproduce the README's human totals exactly: GPT-4 gets
    # 86.98 from the data against 86.72 printed, and the largest gap is 0.35 (Tiangong 74.50 vs
    # 74.36 / Vicuna 66.18 vs 66.53). The release's human file also holds a few scores outside
    # the rubric (Correctness 0 and 2); no variant we tried (dropping them, recoding them,
    # pooling subjects) gets closer, so the published human totals were presumably computed on
    # an earlier state of the human data. We assert what the data gives.
    assert human["GPT4"] == pytest.approx(86.9786, abs=1e-4)
    assert (human - published).abs().max() < 0.36
    rho = rank_correlation(human, published)["spearman_rho"]
    assert rho > 0.99


def test_llmeval2_table_9_gpt4_row(llmeval2):
    m = star_means(llmeval2)
    judge = m[(m["rater_kind"] == "judge") & (m["model"] == "GPT4")].set_index("criterion")["mean"]
    # Seed Table 9/10, GPT-4's own row, values in brackets (GPT-4 as judge): all reproduced.
    assert judge["Correctness"] == pytest.approx(2.395, abs=5e-4)
    assert judge["Explanation Correctness"] == pytest.approx(1.595, abs=5e-4)
    assert judge["Fluency"] == pytest.approx(2.989, abs=5e-4)
    assert judge["Accuracy"] == pytest.approx(4.545, abs=5e-4)
    assert judge["Logicality"] == pytest.approx(2.903, abs=5e-4)
    assert judge["Informativeness"] == pytest.approx(2.886, abs=5e-4)


def test_llmeval1_gpt4_star_reproduces_table_6(llmeval1_gpt4):
    assert_table6_gpt4(judge_star_means(star_means(llmeval1_gpt4)))


def test_llmeval1_gpt4_star_matches_results_csv(llmeval1_gpt4):
    pub = rd.llmeval1_results("分项测评_gpt4").rename(
        index={"Chat-Baichuan-7B": "Baichuan-7B-Align"}
    )
    judge = judge_star_means(star_means(llmeval1_gpt4))
    diff = (judge[list(T6_COLUMNS)] - pub[list(T6_COLUMNS)]).abs()
    assert diff.max().max() < 0.0011  # the three rounding quirks above; all else within 0.0005
    assert int((diff > 0.0005).sum().sum()) == 3


def test_llmeval1_gpt4_duplicates_are_repeats(llmeval1_gpt4):
    # 51 answers appear twice in the released file (255 rows); the second judgement is a repeat.
    # Counting every row is what reproduces the published table above; without the repeats the
    # means move by up to 0.01.
    assert int(llmeval1_gpt4["is_repeat"].sum()) == 255
    report = build_report(llmeval1_gpt4, None, n_shuffles=0, n_bootstrap=0)
    cons = report["consistency_by_rater"]
    assert len(cons) == 1
    assert cons["n_items_repeated"].iloc[0] == 51


# Seed Table 2 (LLMEval-1), rho and tau. The data (results/*.csv) gives each coefficient with more
# digits; every printed value is the data's value truncated (not rounded) to three decimals,
# e.g. manual star vs pairwise rho = 0.93871 printed 0.938 and tau = 0.83972 printed 0.839.
TABLE2 = {
    "manual star vs pairwise": (
        "分项测评_manual_denoised",
        "overall",
        "对比测评_manual_denoised",
        "pairwise",
        0.938,
        0.839,
        0.938705,
        0.839719,
    ),
    "GPT-4 star vs pairwise": (
        "分项测评_gpt4",
        "overall",
        "对比测评_gpt4",
        "pairwise",
        0.965,
        0.878,
        0.965035,
        0.878788,
    ),
    "star manual vs GPT-4": (
        "分项测评_manual_denoised",
        "overall",
        "分项测评_gpt4",
        "overall",
        0.949,
        0.839,
        0.949213,
        0.839719,
    ),
    "pairwise manual vs GPT-4": (
        "对比测评_manual_denoised",
        "pairwise",
        "对比测评_gpt4",
        "pairwise",
        0.902,
        0.787,
        0.902098,
        0.787879,
    ),
}


@pytest.mark.parametrize("setting", list(TABLE2))
def test_published_tables_reproduce_table_2(setting):
    fa, ca, fb, cb, rho_p, tau_p, rho_d, tau_d = TABLE2[setting]
    r = rank_correlation(rd.llmeval1_results(fa)[ca], rd.llmeval1_results(fb)[cb])
    assert r["n_models"] == 12
    assert r["spearman_rho"] == pytest.approx(rho_d, abs=1e-6)
    assert r["kendall_tau_b"] == pytest.approx(tau_d, abs=1e-6)
    assert math.floor(r["spearman_rho"] * 1000) / 1000 == pytest.approx(rho_p)
    assert math.floor(r["kendall_tau_b"] * 1000) / 1000 == pytest.approx(tau_p)
    assert r["spearman_p"] < 1e-3


def test_llmeval2_full_report_runs(llmeval2):
    report = build_report(
        llmeval2, None, criterion_max=rd.LLMEVAL2_MAX, n_shuffles=0, n_bootstrap=0
    )
    corr = report["correlations"]
    row = corr[(corr["ranking_a"] == "star/human") & (corr["ranking_b"] == "star/judge")]
    assert len(row) == 1
    # Two raters per answer: a rater is accurate iff the two agree exactly (sigma = half the gap).
    acc = report["accuracy_by_rater"].set_index("rater_id")["accuracy"]
    assert acc[rd.HUMAN_PANEL] == pytest.approx(acc[rd.GPT4_L2])
