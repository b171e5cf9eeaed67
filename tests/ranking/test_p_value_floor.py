"""The Monte-Carlo floor of a correlation's p (ranking/stats/rank_tests.py): beyond nine models
the p is (1 + hits) / (1 + 100,000), so two rankings in the same order give exactly 1/100,001
(9.9999e-06), the documented floor. The API and the downloads give that number exactly, the
report's meta names it (p_value_floor, with the draws), and the page writes it "<0.001" as every
p below 0.001; docs/statistics.md says the same."""

from __future__ import annotations

import datetime as dt
import io
import json
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from django.conf import settings
from django.urls import reverse

from annotation.models import Item, Rater
from annotation.rubric_services import CriterionSpec, rubric_create
from ranking.stats.rank_tests import EXACT_MAX, N_RANDOM
from tests.factories import make_dataset, rate, study_over

pytestmark = pytest.mark.django_db
FLOOR = 1 / (N_RANDOM + 1)
N_MODELS = EXACT_MAX + 1


@pytest.fixture
def agreeing(organizer):
    """Ten models on one 1-10 criterion; a human and a judge rank them in the same order."""
    spec = CriterionSpec("quality", "Quality", "质量", 1, 10, [])
    data = {"key": "ten", "name_en": "Ten", "name_zh": "", "description": "", "criteria": [spec]}
    rubric = rubric_create(data, owner=organizer)
    study = study_over(make_dataset(1, N_MODELS), rubric, owner=organizer, name="ten models")
    human = Rater.objects.create(kind="human", pool="onsite", name="h")
    judge = Rater.objects.create(kind="judge", pool="judge", name="j")
    at = dt.datetime(2024, 3, 1, 9, tzinfo=dt.UTC)
    for item in Item.objects.filter(study=study).select_related("response_a__llm"):
        stars = int(item.response_a.llm.name.rsplit("-", 1)[1]) + 1
        for rater in (human, judge):
            rate(study, item, rater, at=at, scores={"quality": stars})
    return study


def _floor_rows(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["n_models"] == N_MODELS and r["spearman_rho"] > 0.999]


def test_the_floor_is_one_over_draws_plus_one_on_api_exports_and_page(organizer_client, agreeing):
    body = organizer_client.get(reverse("ranking:api-report", args=[agreeing.pk])).json()
    meta = body["meta"]
    assert meta["p_value_floor"] == FLOOR and meta["p_value_draws"] == N_RANDOM == 100_000
    assert meta["p_value_exact_up_to"] == EXACT_MAX
    rows = _floor_rows(body["tables"]["correlations"])
    assert rows and all(r["spearman_p"] == FLOOR for r in rows)  # 1/100,001 exactly
    assert json.dumps(FLOOR) == "9.99990000099999e-06"
    download = reverse("ranking:report-download", args=[agreeing.pk, "csv"])
    archive = zipfile.ZipFile(io.BytesIO(organizer_client.get(download).content))
    table = pd.read_csv(archive.open("correlations.csv"))
    assert _floor_rows(table.to_dict("records"))
    assert all(r["spearman_p"] == FLOOR for r in _floor_rows(table.to_dict("records")))
    page = organizer_client.get(reverse("ranking:report", args=[agreeing.pk])).content.decode()
    assert "&lt;0.001" in page and "9.9999" not in page and "e-06" not in page


def test_the_statistics_doc_states_the_same_floor():
    text = (Path(settings.BASE_DIR) / "docs" / "statistics.md").read_text("utf-8")
    assert "1/100,001" in text and "p_value_floor" in text and '"<0.001"' in text
    assert "below 1e-5" not in text
