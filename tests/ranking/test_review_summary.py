"""The summary's rank-agreement sentence when the coefficient is undefined (found by importing a
two-model pairwise study: it read "Spearman ρ , Kendall τ-b  over 2 models.")."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from django.core.management import call_command

from annotation.models import Rater, Study
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
    # Only an undefined one: the sentence says why, with no blank figures.
    report.tables["correlations"] = report.tables["correlations"].iloc[:1]
    lines = [line for line in report_summary(report).agreement if "rankings" in line]
    assert len(lines) == 1 and "no rank correlation over 2 models" in lines[0]
    assert "ρ ," not in lines[0] and "τ-b " not in lines[0]


def _pairwise_jsonl(path, unparsed: int, parsed: int) -> None:
    """Two humans and an imported judge on ``unparsed + parsed`` pairs; ``unparsed`` of the
    judge's outputs could not be read."""
    lines = []
    for i in range(unparsed + parsed):
        q = f"q{i}"
        lines.append({"type": "question", "question_id": q, "text": f"question {i}"})
        for llm, text in (("m1", "a" * (10 + i)), ("m2", "b" * 5)):
            lines.append({"type": "response", "question_id": q, "llm": llm, "text": text})
        pair = {"type": "pairwise", "question_id": q, "llm_a": "m1", "llm_b": "m2"}
        for human in ("h1", "h2"):
            lines.append(pair | {"rater": human, "choice": "a"})
        judge = pair | {"rater": "imported judge", "rater_kind": "judge", "rater_pool": "judge"}
        if i < unparsed:
            judge |= {"parse_status": "unparsed", "raw_output": "no verdict"}
        else:
            judge |= {"choice": "b"}
        lines.append(judge)
    path.write_text("\n".join(json.dumps(r) for r in lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(("unparsed", "parsed"), [(6, 0), (2, 6)])
def test_an_imported_judge_gets_its_share_parsed(organizer, tmp_path, unparsed, parsed):
    # Found by importing a judge whose verdicts were all unparsed: it had no row anywhere but
    # the study-wide data-quality count. Its share parsed comes from its imported ratings (no
    # run, so no price or time).
    path = tmp_path / "judged.jsonl"
    _pairwise_jsonl(path, unparsed, parsed)
    call_command(
        "import_dataset",
        str(path),
        format="jsonl",
        dataset="judged",
        study="judged",
        user=organizer.username,
        no_progress=True,
        stdout=io.StringIO(),
    )
    study = Study.objects.get(name="judged (pairwise)")
    judge = Rater.objects.get(name="imported judge")
    bias = report_build(study=study, use_cache=False).table("judge_bias")
    row = bias[(bias["group_by"] == "judge") & (bias["group"] == judge.pseudonym)].iloc[0]
    assert row["n_calls"] == unparsed + parsed
    assert row["share_parsed"] == pytest.approx(parsed / (unparsed + parsed))
    assert pd.isna(row["cost_per_1k"]) and pd.isna(row["seconds_per_1k"])
