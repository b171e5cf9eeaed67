"""Raw exports parse back in all three formats with one row per rating x criterion (star) or per
rating (pairwise), raters by pseudonym only."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command
from openpyxl import load_workbook

from annotation.exports import export_iter
from annotation.models import Rating, Response, Score, Study


def _read(study, what, fmt) -> list[dict]:
    data = b"".join(export_iter(study, what=what, fmt=fmt))
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(data.decode("utf-8"))))
    if fmt == "jsonl":
        return [json.loads(line) for line in data.decode("utf-8").splitlines()]
    ws = load_workbook(io.BytesIO(data), read_only=True).active
    rows = list(ws.iter_rows(values_only=True))
    return [dict(zip(rows[0], r, strict=True)) for r in rows[1:]]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "xlsx"])
def test_star_ratings_export_one_row_per_rating_and_criterion(l2_scores_imported, fmt):
    study = Study.objects.get(name="LLMEval-2 (imported scores)")
    rows = _read(study, "ratings", fmt)
    assert len(rows) == Score.objects.filter(rating__item__study=study).count()
    score = (
        Score.objects.select_related(
            "rating__rater", "rating__assignment", "rating__item__question", "criterion"
        )
        .order_by("rating_id", "criterion__order")
        .first()
    )
    row = rows[0]
    assert row["rater"] == score.rating.rater.pseudonym
    assert row["rater_kind"] == score.rating.rater.kind
    assert row["rater_pool"] == score.rating.rater.pool
    assert row["question_id"] == score.rating.item.question.external_id
    assert row["criterion"] == score.criterion.key
    assert str(row["score"]) == str(score.value)
    assert str(row["hint_shown"]) in {"True", "true"}
    assert row["assignment"] == str(score.rating.assignment.public_id)
    # Named raters appear by pseudonym only.
    assert not any("human panel" in str(r["rater"]) for r in rows)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "xlsx"])
def test_pairwise_ratings_export_one_row_per_rating_with_sides(cae_imported, fmt):
    study = Study.objects.get(name="ChineseAlpacaEval (imported judgments)")
    rows = _read(study, "ratings", fmt)
    assert len(rows) == Rating.objects.filter(item__study=study).count()
    for row in rows:
        assert row["winner"] == "gpt-4-0613"
        assert row["choice"] in {"A", "B"}
        assert row["choice_shown"] == "left"  # model_1 was listed first
        assert row["left_model"] == "gpt-4-0613"


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "xlsx"])
def test_responses_export_every_response_of_the_study_once(cae_imported, fmt):
    study = Study.objects.get(name="ChineseAlpacaEval (imported judgments)")
    rows = _read(study, "responses", fmt)
    ids = set(study.items.values_list("response_a_id", flat=True)) | set(
        study.items.values_list("response_b_id", flat=True)
    )
    assert len(rows) == len(ids)
    texts = {r.text for r in Response.objects.filter(id__in=ids)}
    assert {r["response"] for r in rows} == texts


def test_the_export_command_writes_a_file(l2_scores_imported, tmp_path):
    study = Study.objects.get(name="LLMEval-2 (imported scores)")
    out = tmp_path / "r.jsonl"
    call_command("export_data", study=str(study.pk), what="ratings", format="jsonl", out=str(out))
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) == Score.objects.filter(rating__item__study=study).count()


def test_the_export_command_refuses_an_unknown_study(db):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No study"):
        call_command("export_data", study="nope", what="ratings", format="csv")
