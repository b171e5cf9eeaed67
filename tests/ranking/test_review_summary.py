"""The summary's rank-agreement sentence when the coefficient is undefined (found by importing a
two-model pairwise study: it read "Spearman ρ , Kendall τ-b  over 2 models.")."""

from __future__ import annotations

import pandas as pd
import pytest

from ranking.services import report_build
from ranking.summary import report_summary

pytestmark = pytest.mark.django_db


def test_an_undefined_rank_correlation_gives_no_sentence_with_blanks(pair_study):
    report = report_build(study=pair_study.study)
    report.tables["ranking_agreement"] = pd.DataFrame()
    report.tables["correlations"] = pd.DataFrame(
        {
            "ranking_a": ["bt/human", "points/human"],
            "ranking_b": ["bt/judge", "points/judge"],
            "spearman_rho": [float("nan"), 0.5],
            "kendall_tau_b": [float("nan"), 0.4],
            "n_models": [2, 3],
        }
    )
    lines = [line for line in report_summary(report).agreement if "rankings" in line]
    assert lines == [
        "Human and judge rankings (Points): Spearman ρ 0.5, Kendall τ-b 0.4 over 3 models."
    ]
    report.tables["correlations"] = report.tables["correlations"].iloc[:1]
    assert not [line for line in report_summary(report).agreement if "rankings" in line]
